"""CLI of the model domain: ``fit``, ``recommend`` (a job, or a partition's job mix),
``policy export`` and ``calibration list``.

Each command parses its options, calls one core function and formats the result. Core modules
are imported inside the commands: ``advisor recommend --format json`` is on the job-submit path
and must start fast (nothing heavier than numpy is imported for it).
"""

from __future__ import annotations

import sys
from enum import StrEnum
from typing import Annotated, Any

import typer

from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_json, emit_rows

policy_app = typer.Typer(help="The CPU-per-GPU policy for Slurm's Lua plugins.",
                         no_args_is_help=True)
calibration_app = typer.Typer(help="The points the TTFT model is fitted on.",
                              no_args_is_help=True)

PricingOption = Annotated[
    str | None,
    typer.Option("--pricing", metavar="FILE", help="CSV of the site's own prices (columns: "
                 "docs/model.md); its rows win over the built-in AWS table."),
]
# Named --fit-file, not --model: in `bench run`, --model is the served model's directory.
FitFileOption = Annotated[
    str | None,
    typer.Option("--fit-file", metavar="FILE", envvar="ADVISOR_MODEL", show_envvar=False,
                 help="Fitted model JSON from `advisor fit --output` (default: $ADVISOR_MODEL, "
                 "else the shipped one)."),
]
TpOption = Annotated[
    int | None,
    typer.Option("--tp", metavar="N", help="Tensor-parallel size (default: --gpus); with TP > 1 each GPU "
                 "worker busy-waits on a core."),
]
PrefixHitOption = Annotated[
    float | None,
    typer.Option("--prefix-hit", metavar="SHARE", help="Share of prompt tokens served from the prefix cache, "
                 "0..1 (default: from --workload, else 0)."),
]
WorkloadOption = Annotated[
    str | None,
    typer.Option("--workload", metavar="NAME", help="tokenize-heavy (a shared long document: ~0.95 prefix "
                 "hits), unique (no hits: GPU-heavy) or shared-prefix (a conversation)."),
]
RendererOption = Annotated[
    int | None,
    typer.Option("--renderer-workers", metavar="N", help="The API server's tokenizer workers (vLLM "
                 "renderer_num_workers; default 1)."),
]
EngineVersionOption = Annotated[
    str | None,
    typer.Option("--engine-version", metavar="VERSION", help="Engine version, e.g. 0.26.0 (to pick the nearest "
                 "measured series)."),
]
CalibrationDirOption = Annotated[
    str | None,
    typer.Option("--calibration-dir", metavar="DIR", help="Folder of calibration CSVs "
                 "(default: $ADVISOR_CALIBRATION_DIR, else data/calibration)."),
]


def _warn(messages: Any) -> None:
    for m in messages:
        sys.stderr.write(f"Warning: {m}\n")


def fit_cmd(
    calibration_dir: CalibrationDirOption = None,
    db: DbOption = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FILE", help="Write the "
                      "fitted model JSON here (recommend reads it with --fit-file or "
                      "$ADVISOR_MODEL).")] = None,
    bootstrap: Annotated[int, typer.Option("--bootstrap", metavar="N", help="Bootstrap refits "
                         "of resampled series for the intervals.")] = 50,
    alpha: Annotated[float, typer.Option("--alpha", metavar="NUMBER", help="Ridge penalty "
                     "pulling the mechanism's parameters towards their prior (2 + N).")] = 0.1,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Random seed of the "
                    "bootstrap.")] = 0,
    pole_exponent: Annotated[float, typer.Option("--pole-exponent", metavar="NUMBER",
                             help="q in 1 + k W**q (1: the queue's own wait).")] = 1.0,
    tolerance: Annotated[float, typer.Option("--tolerance", metavar="FRACTION", help="The "
                         "decision score's knee: TTFT within this of ample cores.")] = 0.10,
    weighting: Annotated[str, typer.Option("--weighting", metavar="[series|repeat|ratio|none]",
                         help="Sample weights: series (each measured series or published point "
                         "weighs 1 in total), repeat, ratio, none.")] = "series",
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Fit the TTFT-vs-cores model on the published and bench points; validate it by leaving
    whole series out, against baselines."""
    from advisor.calibration import FitConfig, fit_model
    from advisor.cli._output import RichProgress

    cfg = FitConfig(calibration_dir=calibration_dir, db=db, output=output,
                    n_bootstrap=bootstrap, alpha=alpha, random_state=seed,
                    pole_exponent=pole_exponent, tolerance=tolerance, weighting=weighting)
    with RichProgress() as progress:
        report = fit_model(cfg, progress)
    _warn(report.warnings)
    if fmt is OutputFormat.json:
        emit_json(report)
        return
    v = report.validation
    emit_rows([{
        "points_fitted": report.points_fitted, "censored": report.points_censored,
        "cpu_points": report.cpu_points_fitted, "series": report.series_fitted,
        **report.parameters, "sigma_log": report.sigma_log, "saved_to": report.model_path,
    }], fmt, title="fit")
    emit_rows([{"predictor": "model", "held_out_error": v["model"]}]
              + [{"predictor": b, "held_out_error": e} for b, e in v["baselines"].items()],
              fmt, title=f"{v['scheme']}: {v['metric']}")
    if "decision" in v:
        d = v["decision"]
        emit_rows([{"predictor": k, **d[k]} for k in ("model", "2 + N rule")], fmt,
                  title=f"decision on {d['series']} series with a measured knee "
                  f"(within {d['tolerance']:.0%} of ample)")


def recommend_cmd(
    gpu_type: Annotated[str | None, typer.Option("--gpu-type", metavar="TYPE", help="GPU family "
                        "or GRES type, e.g. H100, h100_80gb.")] = None,
    gpus: Annotated[int | None, typer.Option("--gpus", metavar="N", help="GPUs of the job; "
                    "without it, --partition recommends for the partition's observed jobs.")
                    ] = None,
    model_size: Annotated[str | None, typer.Option("--model-size", metavar="SIZE", help="Model "
                          "size, e.g. 8b, 70b (default: the model's reference, 8b).")] = None,
    rps: Annotated[float | None, typer.Option("--rps", metavar="RATE", help="Requests per second "
                   "(default 8).")] = None,
    prompt_tokens: Annotated[int | None, typer.Option("--prompt-tokens", metavar="N",
                             help="Typical prompt length in tokens (default 16384).")] = None,
    current_cpus_per_gpu: Annotated[float | None, typer.Option(
        "--current-cpus-per-gpu", metavar="CORES", help="Cores per GPU the job has now (default: "
        "Slurm's default, 1 CPU per task, i.e. 1/GPUs).")] = None,
    tolerance: Annotated[float, typer.Option("--tolerance", metavar="FRACTION", help="Accept "
                         "TTFT within this fraction of ample cores.")] = 0.10,
    ample_ttft_ms: Annotated[float | None, typer.Option("--ample-ttft-ms", metavar="MS",
                             help="Measured TTFT with ample cores, to report TTFTs in ms.")
                             ] = None,
    max_cpus_per_gpu: Annotated[int | None, typer.Option("--max-cpus-per-gpu", metavar="CORES",
                                help="Most cores per GPU a node gives (default: node "
                                "inventory, else the cloud instance).")] = None,
    partition: Annotated[str | None, typer.Option("--partition", metavar="NAME", help="Partition "
                         "('*' for all): with --gpus it restricts the node inventory; without, "
                         "it recommends DefCpuPerGPU from the partition's jobs.")] = None,
    tp: TpOption = None,
    prefix_hit: PrefixHitOption = None,
    workload_name: WorkloadOption = None,
    renderer_workers: RendererOption = None,
    engine_version: EngineVersionOption = None,
    db: DbOption = None,
    pricing: PricingOption = None,
    fit_file: FitFileOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Recommend --cpus-per-gpu for a job (or DefCpuPerGPU for a partition): the knee of TTFT
    against cores, never below vLLM's 2 + N, with its evidence and cost delta."""
    from advisor.recommend import Workload, parse_model_size

    workload = Workload(parse_model_size(model_size), rps, prompt_tokens, prefix_hit,
                        workload_name, renderer_workers, engine_version)
    if gpus is None:
        if partition is None:
            from advisor.errors import UsageError

            raise UsageError("give --gpus N (a job) or --partition NAME|'*' (a partition's jobs)")
        from advisor.cli._output import RichProgress
        from advisor.recommend import PartitionQuery, RecommendContext, recommend_partitions

        query = PartitionQuery(db=db, partition=None if partition == "*" else partition,
                               gpu_type=gpu_type, workload=workload, tolerance=tolerance)
        with RecommendContext.open(db=db, fit_file=fit_file, pricing_file=pricing) as ctx, \
                RichProgress() as progress:
            report = recommend_partitions(query, progress, ctx)
        for row in report.rows:
            _warn(f"{row.partition}/{row.gpu_type}: {w}" for w in row.warnings)
        if fmt is OutputFormat.json:
            emit_json({"partitions": report.rows, "assumptions": report.assumptions})
            return
        emit_rows([{k: v for k, v in r.__dict__.items() if k != "warnings"} for r in report.rows],
                  fmt, title="DefCpuPerGPU by partition and GPU type")
        return
    if gpu_type is None:
        from advisor.errors import UsageError

        raise UsageError("--gpu-type is needed with --gpus (e.g. --gpu-type H100)")
    from advisor.recommend import JobQuery, recommend_job

    rec = recommend_job(JobQuery(
        gpu_type=gpu_type, gpus=gpus, workload=workload,
        current_cpus_per_gpu=current_cpus_per_gpu, tolerance=tolerance,
        ample_ttft_ms=ample_ttft_ms, max_cpus_per_gpu=max_cpus_per_gpu,
        partition=None if partition == "*" else partition, db=db, pricing_file=pricing,
        model_file=fit_file, tp=tp,
    ))
    if fmt is OutputFormat.json:
        emit_json(rec)
        return
    _warn(rec.warnings)
    emit_rows([{
        "gpu_type": rec.gpu_type, "gpus": rec.gpus, "tp": rec.tp,
        "now": rec.current_cpus_per_gpu, "regime_now": rec.regime,
        "recommended": rec.slurm_option, "cores_total": rec.cores_total,
        "knee_cores": rec.knee_cores, "floor_2_plus_n": rec.floor_cores,
        "speedup": (f">= {rec.predicted_speedup:.2f} (measured)" if rec.speedup_is_lower_bound
                    else rec.predicted_speedup),
        "extra_vcpus": rec.extra_vcpus, "usd_per_hour": rec.usd_per_hour_delta,
        "cost_pct": rec.cost_delta_pct, "cap": rec.max_cpus_per_gpu,
    }], fmt, title="cores per GPU")
    emit_rows([{k: e.get(k) for k in ("series", "distance", "platform", "gpus", "workload",
                                      "load_rps", "prompt_tokens", "measured_knee_cores")}
               for e in rec.evidence], fmt, title="nearest measured series")


class PolicyFormat(StrEnum):
    lua = "lua"
    json = "json"
    slurm_conf = "slurm.conf"


class PolicyMode(StrEnum):
    advise = "advise"
    set_default_when_unset = "set-default-when-unset"
    enforce_minimum = "enforce-minimum"


@policy_app.command("export")
def policy_export_cmd(
    fmt: Annotated[PolicyFormat, typer.Option("--format", "-f", metavar="[lua|json|slurm.conf]",
                   help="lua (for the plugins), json, or slurm.conf lines.")] = PolicyFormat.lua,
    mode: Annotated[PolicyMode, typer.Option(
        "--mode", metavar="[advise|set-default-when-unset|enforce-minimum]",
        help="What the plugins do with the rules.")] = PolicyMode.set_default_when_unset,
    tolerance: Annotated[float, typer.Option("--tolerance", metavar="FRACTION", help="Default "
                         "cores: TTFT within this of ample cores.")] = 0.10,
    min_tolerance: Annotated[float, typer.Option("--min-tolerance", metavar="FRACTION",
                             help="Minimum cores: TTFT within this of ample cores.")] = 0.50,
    model_size: Annotated[str | None, typer.Option("--model-size", metavar="SIZE",
                          help="Workload: model size.")] = None,
    rps: Annotated[float | None, typer.Option("--rps", metavar="RATE",
                   help="Workload: requests/s.")] = None,
    prompt_tokens: Annotated[int | None, typer.Option("--prompt-tokens", metavar="N",
                             help="Workload: prompt tokens.")] = None,
    prefix_hit: PrefixHitOption = None,
    workload_name: WorkloadOption = None,
    output: Annotated[str | None, typer.Option("--output", "-o", metavar="FILE", help="Write here "
                      "instead of stdout (written whole, then renamed into place).")] = None,
    db: DbOption = None,
    pricing: PricingOption = None,
    fit_file: FitFileOption = None,
) -> None:
    """Export min/default cores per GPU per partition and GPU type for the Lua plugins."""
    from advisor.cli._output import RichProgress
    from advisor.policy import Mode, PolicyConfig, build_policy, to_json, to_lua, to_slurm_conf
    from advisor.recommend import RecommendContext, Workload, parse_model_size

    config = PolicyConfig(
        mode=Mode(mode.value), tolerance=tolerance, min_tolerance=min_tolerance,
        workload=Workload(parse_model_size(model_size), rps, prompt_tokens, prefix_hit,
                          workload_name), db=db,
    )
    with RecommendContext.open(db=db, fit_file=fit_file, pricing_file=pricing) as ctx, \
            RichProgress() as progress:
        policy = build_policy(config, progress, ctx)
    render = {PolicyFormat.lua: to_lua, PolicyFormat.json: to_json,
              PolicyFormat.slurm_conf: to_slurm_conf}[fmt]
    text = render(policy)
    if fmt is PolicyFormat.slurm_conf:
        from advisor.policy import slurm_conf_unwritable

        for name in slurm_conf_unwritable(policy):  # ascii(): a name is data, not terminal codes
            sys.stderr.write(
                f"Warning: partition {ascii(name)} skipped: slurm.conf cannot carry "
                "its name (letters, digits, _ . - only; not DEFAULT)\n"
            )
    if output is None:
        sys.stdout.write(text)
        return
    import os
    from pathlib import Path

    target = Path(output)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)  # the plugins never read a half-written file
    sys.stderr.write(f"wrote {len(policy.rules)} rules to {target}\n")


@calibration_app.command("list")
def calibration_list_cmd(
    calibration_dir: CalibrationDirOption = None,
    db: DbOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Every calibration point (published and bench) with its provenance."""
    from advisor.calibration import load_points, point_rows

    loaded = load_points(calibration_dir, db)
    _warn(loaded.problems)
    columns = None
    if fmt is OutputFormat.table:
        columns = ["point_id", "platform", "model", "gpus", "load_rps", "cores_per_gpu",
                   "metric", "value", "unit", "source"]
    emit_rows(point_rows(loaded), fmt, columns=columns, title="calibration points")


# The job-submit path: `recommend --gpu-type T --gpus N ... --format json` answered without
# building the typer app (typer's pydantic adapters for the options take much of the start-up
# budget: docs/model.md). Same core call, same JSON, same errors; anything else (help, table output,
# a partition, an option it does not know, a value it cannot convert) is left to typer.
_FAST_OPTIONS: dict[str, type] = {
    "--gpu-type": str, "--gpus": int, "--model-size": str, "--rps": float,
    "--prompt-tokens": int, "--current-cpus-per-gpu": float, "--tolerance": float,
    "--ample-ttft-ms": float, "--max-cpus-per-gpu": int, "--partition": str, "--db": str,
    "--pricing": str, "--fit-file": str, "--format": str, "-f": str, "--tp": int,
    "--prefix-hit": float, "--workload": str, "--renderer-workers": int,
    "--engine-version": str,
}


def fast_recommend(argv: list[str]) -> int | None:
    """Exit code of ``recommend ... --format json`` for one job, or None to let typer run it."""
    if not argv or argv[0] != "recommend":
        return None
    opts: dict[str, Any] = {}
    rest = iter(argv[1:])
    for token in rest:
        name, eq, value = token.partition("=")
        kind = _FAST_OPTIONS.get(name)
        if kind is None or name in opts:
            return None
        if not eq:
            nxt = next(rest, None)
            if nxt is None:
                return None
            value = nxt
        try:
            opts[name] = kind(value)
        except ValueError:
            return None
    if opts.pop("--format", opts.pop("-f", None)) != "json":
        return None
    if "--gpus" not in opts or "--gpu-type" not in opts:
        return None
    from advisor.errors import AdvisorError, describe_os_error
    from advisor.recommend import JobQuery, Workload, recommend_job

    try:
        from advisor.recommend import parse_model_size

        partition = opts.get("--partition")
        rec = recommend_job(JobQuery(
            gpu_type=opts["--gpu-type"], gpus=opts["--gpus"],
            workload=Workload(parse_model_size(opts.get("--model-size")), opts.get("--rps"),
                              opts.get("--prompt-tokens"), opts.get("--prefix-hit"),
                              opts.get("--workload"), opts.get("--renderer-workers"),
                              opts.get("--engine-version")),
            current_cpus_per_gpu=opts.get("--current-cpus-per-gpu"),
            tolerance=opts.get("--tolerance", 0.10),
            ample_ttft_ms=opts.get("--ample-ttft-ms"),
            max_cpus_per_gpu=opts.get("--max-cpus-per-gpu"),
            partition=None if partition == "*" else partition,
            db=opts.get("--db"), pricing_file=opts.get("--pricing"),
            model_file=opts.get("--fit-file"), tp=opts.get("--tp"),
        ))
    except AdvisorError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return int(exc.exit_code)
    except OSError as exc:  # the same net as run_guarded's
        message, code = describe_os_error(exc)
        sys.stderr.write(f"Error: {message}\n")
        return int(code)
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        return 130
    emit_json(rec)
    return 0


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.command("fit")(fit_cmd)
    app.command("recommend")(recommend_cmd)
    app.add_typer(policy_app, name="policy")
    app.add_typer(calibration_app, name="calibration")
