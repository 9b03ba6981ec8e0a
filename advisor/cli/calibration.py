"""`advisor calibration list`: the points the TTFT curve is fitted on, with their provenance."""

from __future__ import annotations

import typer

from advisor.cli._curve_options import CalibrationDirOption, _warn
from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_rows

calibration_app = typer.Typer(help="The points the TTFT model is fitted on.", no_args_is_help=True)


@calibration_app.command("list")
def calibration_list_cmd(
    calibration_dir: CalibrationDirOption = None,
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Every calibration point (published and bench) with its provenance."""
    from advisor.cli._parse import warn_missing_db
    from advisor.model.calibration import load_points, point_rows

    warn_missing_db(db, "the calibration CSVs only, no collected bench runs")

    loaded = load_points(calibration_dir, db)
    _warn(loaded.problems)
    columns = None
    if fmt is OutputFormat.table:
        columns = [
            "point_id",
            "platform",
            "model",
            "gpus",
            "load_rps",
            "cores_per_gpu",
            "metric",
            "value",
            "unit",
            "source",
        ]
    emit_rows(point_rows(loaded), fmt, columns=columns, title="calibration points")


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.add_typer(calibration_app, name="calibration")
