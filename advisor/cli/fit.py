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
            min=0,
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
    """Fit the capacity model (CPU demand from measured per-process CPU, the TTFT curve from
    it) and judge it: leaving training series out, against the baselines, on curve error and
    on decisions; then the frozen test split once."""
    from advisor.cli._output import RichProgress
    from advisor.cli._parse import warn_missing_db
    from advisor.model.calibration import FitConfig, fit_model
    from advisor.recommend.query import check_tolerance

    check_tolerance(tolerance)
    warn_missing_db(db, "the calibration CSVs only, no collected bench runs")
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
        rules = [k for k in d if isinstance(d[k], dict) and "within one core" in d[k]]
        emit_rows(
            [
                {"rule": k, **{n: d[k][n] for n in ("within one core", "above", "below")}}
                for k in rules
            ],
            fmt,
            title=f"decisions on {d['series']} held-out series with a resolved knee "
            f"({d['not_resolved_excluded']} not resolved, left out)",
        )
    c = report.capacity
    emit_rows(
        [
            {
                "utilisation_target": c.get("utilisation_target"),
                "chosen_on": c.get("utilisation_chosen_on"),
                "decision_basis": c.get("decision_basis"),
                "why": c.get("decision_reason"),
            }
        ],
        fmt,
        title="the capacity answer",
    )
    t = report.test
    if t:
        emit_rows(
            [{"predictor": "model", "test_error": t["model"]}]
            + [{"predictor": b, "test_error": e} for b, e in t["baselines"].items()],
            fmt,
            title=f"test split ({report.split.get('rules')}): {t['series']} series",
        )


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("fit")(fit_cmd)
