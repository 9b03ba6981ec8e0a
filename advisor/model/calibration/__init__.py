"""Calibration of the capacity model: points, series, the training set, the fit and its validation.

One idea per module:

- :mod:`~advisor.model.calibration.points`: the rows of the ``calibration`` table, from CSV and DB;
- :mod:`~advisor.model.calibration.series`: what makes points one series, its family and its knee;
- :mod:`~advisor.model.calibration.split`: the frozen test split;
- :mod:`~advisor.model.calibration.training`: points turned into the fit's rows and CPU data;
- :mod:`~advisor.model.calibration.curvefit`: the demand from CPU, then the TTFT scale, bootstrapped;
- :mod:`~advisor.model.calibration.decisions`: judging core counts against knees, the target ``u``;
- :mod:`~advisor.model.calibration.validation`: leave one series out, and the test split;
- :mod:`~advisor.model.calibration.fit`: ``advisor fit`` from end to end.

The names below are re-exported so that ``from advisor.model.calibration import X`` keeps working.
"""

from advisor.model.calibration.fit import FitConfig, FitReport, fit_model
from advisor.model.calibration.points import (
    CALIBRATION_DIR_ENV,
    CENSORED_METRICS,
    COLUMNS,
    NOT_FITTED_PLATFORMS,
    SERIES_METRICS,
    SPEEDUP_METRICS,
    CalibrationPoint,
    LoadedPoints,
    default_calibration_dir,
    load_points,
    parse_row,
    point_rows,
    read_csv,
    read_db,
)
from advisor.model.calibration.series import SeriesConfig, SeriesInfo, family, parse_workload
from advisor.model.calibration.training import (
    CPU_METRICS,
    PREFIX_HIT_METRIC,
    SPEEDUP_REF_CORES_PER_GPU,
    WEIGHTINGS,
    TrainingSet,
    cpu_observations,
    series_weights,
    training_set,
)
from advisor.model.calibration.validation import (
    BASELINES,
    VALIDATION_METRIC,
    VALIDATION_SCHEME,
    SeriesScore,
    score_split,
    validate,
)

__all__ = [
    "BASELINES",
    "CALIBRATION_DIR_ENV",
    "CENSORED_METRICS",
    "COLUMNS",
    "CPU_METRICS",
    "NOT_FITTED_PLATFORMS",
    "PREFIX_HIT_METRIC",
    "SERIES_METRICS",
    "SPEEDUP_METRICS",
    "SPEEDUP_REF_CORES_PER_GPU",
    "VALIDATION_METRIC",
    "VALIDATION_SCHEME",
    "WEIGHTINGS",
    "CalibrationPoint",
    "FitConfig",
    "FitReport",
    "LoadedPoints",
    "SeriesConfig",
    "SeriesInfo",
    "SeriesScore",
    "TrainingSet",
    "cpu_observations",
    "default_calibration_dir",
    "family",
    "fit_model",
    "load_points",
    "parse_row",
    "parse_workload",
    "point_rows",
    "read_csv",
    "read_db",
    "score_split",
    "series_weights",
    "training_set",
    "validate",
]
