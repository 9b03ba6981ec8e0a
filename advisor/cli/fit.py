"""`advisor fit`: fit the TTFT-vs-cores curve on the calibration points and print its validation."""

from __future__ import annotations

from typing import Annotated

import typer

from advisor.cli._curve_options import CalibrationDirOption, _warn
from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_json, emit_rows


def fit_cmd(
    calibration_dir: CalibrationDirOption = None,
    db: DbOption = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the "
            "fitted model JSON here (recommend reads it with --fit-file or "
            "$ADVISOR_MODEL).",
        ),
    ] = None,
    bootstrap: Annotated[
        int,
        typer.Option(
            "--bootstrap",
            metavar="N",
            help="Bootstrap refits of resampled series for the intervals.",
        ),
    ] = 50,
    alpha: Annotated[
        float,
        typer.Option(
            "--alpha",
            metavar="NUMBER",
            help="Ridge penalty pulling the mechanism's parameters towards their prior (2 + N).",
        ),
    ] = 0.1,
    seed: Annotated[
        int, typer.Option("--seed", metavar="N", help="Random seed of the bootstrap.")
    ] = 0,
    pole_exponent: Annotated[
        float,
        typer.Option(
            "--pole-exponent", metavar="NUMBER", help="q in 1 + k W**q (1: the queue's own wait)."
        ),
    ] = 1.0,
    tolerance: Annotated[
        float,
        typer.Option(
            "--tolerance",
            metavar="FRACTION",
            help="The decision score's knee: TTFT within this of ample cores.",
        ),
    ] = 0.10,
    weighting: Annotated[
        str,
        typer.Option(
            "--weighting",
            metavar="[series|repeat|ratio|none]",
            help="Sample weights: series (each measured series or published point "
            "weighs 1 in total), repeat, ratio, none.",
        ),
    ] = "series",
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Fit the TTFT-vs-cores model on the published and bench points; validate it by leaving
    whole series out, against baselines."""
    from advisor.calibration import FitConfig, fit_model
    from advisor.cli._output import RichProgress

    cfg = FitConfig(
        calibration_dir=calibration_dir,
        db=db,
        output=output,
        n_bootstrap=bootstrap,
        alpha=alpha,
        random_state=seed,
        pole_exponent=pole_exponent,
        tolerance=tolerance,
        weighting=weighting,
    )
    with RichProgress() as progress:
        report = fit_model(cfg, progress)
    _warn(report.warnings)
    if fmt is OutputFormat.json:
        emit_json(report)
        return
    v = report.validation
    emit_rows(
        [
            {
                "points_fitted": report.points_fitted,
                "censored": report.points_censored,
                "cpu_points": report.cpu_points_fitted,
                "series": report.series_fitted,
                **report.parameters,
                "sigma_log": report.sigma_log,
                "saved_to": report.model_path,
            }
        ],
        fmt,
        title="fit",
    )
    emit_rows(
        [{"predictor": "model", "held_out_error": v["model"]}]
        + [{"predictor": b, "held_out_error": e} for b, e in v["baselines"].items()],
        fmt,
        title=f"{v['scheme']}: {v['metric']}",
    )
    if "decision" in v:
        d = v["decision"]
        emit_rows(
            [{"predictor": k, **d[k]} for k in ("model", "2 + N rule")],
            fmt,
            title=f"decision on {d['series']} series with a measured knee "
            f"(within {d['tolerance']:.0%} of ample)",
        )


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("fit")(fit_cmd)
