"""The fitted TTFT model for the pages (``advisor.model.slowdown``, ``advisor.model.calibration``,
``advisor.recommend``): which model file is in use, its parameters and calibration points,
and the partition recommendations under the shared assumptions, cached by the file's mtime."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from app.assumptions import Assumptions
from app.db import DbKey
from app.loaders import cached_call


def model_file() -> str | None:
    """``$ADVISOR_MODEL`` (None: the shipped model)."""
    from advisor.model import slowdown

    return os.environ.get(slowdown.MODEL_ENV) or None


def model_key() -> tuple[str, float]:
    """The model file in use and its modification time (a refit invalidates cached answers)."""
    from advisor.model import slowdown

    path = Path(model_file() or slowdown.shipped_model_path())
    try:
        return (str(path), path.stat().st_mtime)
    except OSError:
        return (str(path), 0.0)


def model_params() -> Any:
    """The fitted TTFT model's parameters (``$ADVISOR_MODEL`` or the shipped model)."""
    from advisor.model import slowdown

    return cached_call("load_params", slowdown.load_params, model_file(), extra=model_key())


def _training_set(key: DbKey, max_slowdown: float) -> Any:
    from advisor.model import calibration

    loaded = calibration.load_points(db=key[0])
    return calibration.training_set(loaded.points, max_slowdown)


def calibration_points(key: DbKey, max_slowdown: float) -> Any:
    """The calibration points behind the model (shipped CSVs plus the database's table), as
    the fit sees them (``advisor.model.calibration.TrainingSet``)."""
    return cached_call("training_set", _training_set, key, max_slowdown, extra=model_key())


def _measured_waits(key: DbKey, load: tuple[int, int, str, int, float, float]) -> Any:
    from advisor.model import calibration
    from advisor.model.calibration.waits import measured_waits

    gpus, tp, executor, renderers, rps, tokens = load
    points = calibration.load_points(db=key[0]).points
    return measured_waits(
        points,
        gpus=gpus,
        tp=tp,
        executor=executor,
        renderer_workers=renderers,
        load_rps=rps,
        prompt_tokens=tokens,
    )


def measured_waits(key: DbKey, load: tuple[int, int, str, int, float, float]) -> Any:
    """The measured waits of the calibration series that match a load (GPUs, TP, executor,
    renderer workers, requests/s, prompt tokens), for the Recommend page's wait chart."""
    return cached_call("measured_waits", _measured_waits, key, load, extra=model_key())


def partition_recommendations(
    key: DbKey, a: Assumptions | None = None, guard: bool = True
) -> dict[tuple[str | None, str], Any]:
    """``advisor.recommend.recommend_partitions`` over every job, by (partition, GPU type),
    under the shared assumptions: the DefCpuPerGPU each partition's jobs should get (the Who
    page's target) and the GPU-hours its jobs below it lose. ``guard``: as for
    ``cached_call``."""
    from advisor import recommend

    a = a or Assumptions()
    report = cached_call(
        "recommend_partitions",
        recommend.recommend_partitions,
        recommend.PartitionQuery(
            db=key[0],
            workload=a.workload,
            tolerance=a.tolerance,
            max_wait=a.max_wait,
            model_file=model_file(),
        ),
        extra=(key, model_key()),
        guard=guard,
    )
    return {(r.partition, r.gpu_type): r for r in report.rows}
