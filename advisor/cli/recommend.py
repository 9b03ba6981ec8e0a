"""`advisor recommend`: cores per GPU for one job, or for a partition's observed job mix.

``advisor recommend ... --format json`` for one job is on the job-submit path:
:func:`advisor.cli._fast.fast_recommend` answers it without importing typer, and core modules
are imported inside the command."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

import typer

from advisor.cli._curve_options import (
    EngineVersionOption,
    ExecutorOption,
    FitFileOption,
    GpuBusyOption,
    MaxWaitOption,
    ModelSizeOption,
    PrefixHitOption,
    PricingOption,
    PromptTokensOption,
    RendererOption,
    RpsOption,
    TpOption,
    WorkloadOption,
    _warn,
)
from advisor.cli._fast import fast_recommend as fast_recommend  # its old home; re-exported
from advisor.cli._output import DbOption, FormatOption, OutputFormat, emit_json, emit_rows
from advisor.model.waitknee import DEFAULT_MAX_WAIT

if TYPE_CHECKING:
    from advisor.recommend import JobRecommendation, PartitionQuery


def partition_table_row(r: Any) -> dict[str, Any]:
    """What an admin reads first of a partition's answer (csv and json carry every field):
    the answer, what decided it and what it is worth, then the evidence beside it."""
    lo, hi = r.gpu_hours_lost_per_month_interval
    per = "/mo" if r.per_month else f" in {r.span_hours / 24:.0f} d"
    measured = r.measured_def_cpu_per_gpu
    return {
        "cluster": r.cluster,
        "partition": r.partition,
        "gpu_type": r.gpu_type,
        "DefCpuPerGPU": r.def_cpu_per_gpu,
        "basis": r.basis,
        f"GPU-h lost{per}": f"{r.gpu_hours_lost_per_month:,.0f}",
        f"fix ${per}": round(r.fix_usd_per_month, 2),
        "lost, 90%": f"{lo:,.0f}-{hi:,.0f}",
        "model": r.model_def_cpu_per_gpu,
        "measured (jobs)": f"{measured if measured is not None else '-'} ({r.measured_jobs:,})",
        "model vs measured": r.model_vs_measured,
        "P50 cores/GPU": r.p50_cores_per_gpu,
        "jobs below": f"{r.jobs_below:,} of {r.jobs:,}",
    }


def recommend_cmd(
    gpu_type: Annotated[
        str | None,
        typer.Option(
            "--gpu-type", metavar="TYPE", help="GPU family or GRES type, e.g. H100, h100_80gb."
        ),
    ] = None,
    gpus: Annotated[
        int | None,
        typer.Option(
            "--gpus",
            metavar="N",
            help="GPUs of the job; "
            "without it, --partition recommends for the partition's observed jobs.",
        ),
    ] = None,
    model_size: ModelSizeOption = None,
    rps: RpsOption = None,
    prompt_tokens: PromptTokensOption = None,
    current_cpus_per_gpu: Annotated[
        float | None,
        typer.Option(
            "--current-cpus-per-gpu",
            metavar="CORES",
            help="Cores per GPU the job has now (default: "
            "Slurm's default, 1 CPU per task, i.e. 1/GPUs).",
        ),
    ] = None,
    tolerance: Annotated[
        float | None,
        typer.Option(
            "--tolerance",
            metavar="FRACTION",
            help="Deprecated, goes in the next release: the answer follows --max-wait; this "
            "only sets the band of the TTFT curve shown as evidence (default 0.10).",
        ),
    ] = None,
    max_wait: MaxWaitOption = DEFAULT_MAX_WAIT,
    ample_ttft_ms: Annotated[
        float | None,
        typer.Option(
            "--ample-ttft-ms",
            metavar="MS",
            help="Measured TTFT with ample cores, to report TTFTs in ms.",
        ),
    ] = None,
    max_cpus_per_gpu: Annotated[
        int | None,
        typer.Option(
            "--max-cpus-per-gpu",
            metavar="CORES",
            help="Most cores per GPU a node gives (default: node "
            "inventory, else the cloud instance).",
        ),
    ] = None,
    partition: Annotated[
        str | None,
        typer.Option(
            "--partition",
            metavar="NAME",
            help="Partition "
            "('*' for all): with --gpus it restricts the node inventory; without, "
            "it recommends DefCpuPerGPU from the partition's jobs.",
        ),
    ] = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            metavar="NAME",
            help="With --partition: that cluster's partitions only (default: each cluster's).",
        ),
    ] = None,
    tp: TpOption = None,
    executor: ExecutorOption = None,
    prefix_hit: PrefixHitOption = None,
    gpu_busy: GpuBusyOption = None,
    workload_name: WorkloadOption = None,
    renderer_workers: RendererOption = None,
    engine_version: EngineVersionOption = None,
    db: DbOption = None,
    pricing: PricingOption = None,
    fit_file: FitFileOption = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Recommend --cpus-per-gpu for a job (or DefCpuPerGPU for a partition): the cores the
    measured CPU demand needs, never below vLLM's 2 + N, with its basis, evidence and cost."""
    from advisor.cli._parse import warn_tolerance
    from advisor.recommend import Workload, parse_model_size

    tolerance = warn_tolerance(tolerance)

    workload = Workload(
        parse_model_size(model_size),
        rps,
        prompt_tokens,
        prefix_hit,
        workload_name,
        renderer_workers,
        engine_version,
        executor,
        gpu_busy,
    )
    if gpus is None:
        if partition is None:
            from advisor.errors import UsageError

            raise UsageError("give --gpus N (a job) or --partition NAME|'*' (a partition's jobs)")
        from advisor.recommend import PartitionQuery

        query = PartitionQuery(
            db=db,
            partition=None if partition == "*" else partition,
            clusters=(cluster,) if cluster else (),
            gpu_type=gpu_type,
            workload=workload,
            tolerance=tolerance,
            max_wait=max_wait,
        )
        _partition_answer(query, cluster, fit_file, pricing, fmt)
        return
    if gpu_type is None:
        from advisor.errors import UsageError

        raise UsageError("--gpu-type is needed with --gpus (e.g. --gpu-type H100)")
    from advisor.cli._parse import NO_INVENTORY, warn_missing_db, warn_unknown_gpu_type
    from advisor.recommend import JobQuery, recommend_job

    warn_missing_db(db, NO_INVENTORY)
    warn_unknown_gpu_type(gpu_type)
    rec = recommend_job(
        JobQuery(
            gpu_type=gpu_type,
            gpus=gpus,
            workload=workload,
            current_cpus_per_gpu=current_cpus_per_gpu,
            tolerance=tolerance,
            ample_ttft_ms=ample_ttft_ms,
            max_cpus_per_gpu=max_cpus_per_gpu,
            partition=None if partition == "*" else partition,
            db=db,
            pricing_file=pricing,
            model_file=fit_file,
            tp=tp,
            max_wait=max_wait,
        )
    )
    _job_answer(rec, fmt)


def _partition_answer(
    query: PartitionQuery,
    cluster: str | None,
    fit_file: str | None,
    pricing: str | None,
    fmt: OutputFormat,
) -> None:
    """Print each partition's DefCpuPerGPU (``recommend --partition``) in ``fmt``."""
    from advisor.cli._output import RichProgress
    from advisor.cli._parse import warn_stale_data
    from advisor.recommend import RecommendContext, recommend_by_cluster

    db = query.db
    with (
        RecommendContext.open(db=db, fit_file=fit_file, pricing_file=pricing) as ctx,
        RichProgress() as progress,
    ):
        if cluster is not None:
            from advisor.policy import check_cluster

            check_cluster(ctx, cluster)
        report = recommend_by_cluster(query, progress, ctx)
    warn_stale_data(db)  # once the answer stands: an error stays one line
    for row in report.rows:
        _warn(f"{row.cluster}/{row.partition}/{row.gpu_type}: {w}" for w in row.warnings)
    if fmt is not OutputFormat.json:
        typer.echo(f"Basis: {report.assumptions.get('basis_sentence')}", err=True)
    if fmt is OutputFormat.json:
        emit_json(
            {
                "partitions": report.rows,
                "assumptions": report.assumptions,
                "basis_sentence": report.assumptions.get("basis_sentence"),
            }
        )
        return
    if fmt is OutputFormat.table:
        rows = [partition_table_row(r) for r in report.rows]
    else:
        rows = [
            {"cluster": r.cluster, **{k: v for k, v in r.__dict__.items() if k != "warnings"}}
            for r in report.rows
        ]
    emit_rows(rows, fmt, title="DefCpuPerGPU by partition and GPU type")


def _job_answer(rec: JobRecommendation, fmt: OutputFormat) -> None:
    """Print one job's recommendation: the answer's line first, then its table and evidence."""
    from advisor.wording import count_words

    if fmt is OutputFormat.json:
        emit_json(rec)
        return
    _warn(rec.warnings)
    for n in rec.answer_notes:
        typer.echo(f"Note: {n}", err=True)
    # the answer first, whole on one line of a narrow terminal; the wide table follows
    typer.echo(
        f"{rec.slurm_option}  ({count_words(rec.cores_total, 'core')} for "
        f"{count_words(rec.gpus, 'GPU')}; {rec.decision_basis})"
    )
    typer.echo(f"Basis: {rec.basis_sentence}", err=True)  # a diagnostic: stdout is the table
    emit_rows(
        [
            {
                "gpu_type": rec.gpu_type,
                "gpus": rec.gpus,
                "tp": rec.tp,
                "now": rec.current_cpus_per_gpu,
                "regime_now": rec.regime,
                "recommended": rec.slurm_option,
                "cores_total": rec.cores_total,
                "basis": rec.decision_basis,
                "demand_cores": rec.demand_cores,
                "utilisation_target": rec.utilisation_target,
                "floor_2_plus_n": rec.floor_cores,
                "wait_knee": rec.wait_knee,
                "evidence": rec.evidence,
                "speedup": rec.predicted_speedup,
                "speedup_90pct": _interval(rec.speedup_interval),
                "slowdown_90pct": _interval(rec.slowdown_recommended_interval),
                "slowdown_bound_from_wait": _bound(rec),
                "calibration": "calibrated"
                if rec.calibrated
                else "extrapolated from " + ", ".join(rec.extrapolated_from),
                "extra_vcpus": rec.extra_vcpus,
                "usd_per_hour": rec.usd_per_hour_delta,
                "cost_pct": "unknown" if rec.cost_delta_pct is None else rec.cost_delta_pct,
                "cap": rec.max_cpus_per_gpu,
            }
        ],
        fmt,
        title="cores per GPU",
    )
    # a person's table leaves out the long series ids (csv and json keep them)
    keys: tuple[str, ...] = ("platform", "workload", "load_rps", "knee_status", "knee_cores")
    if fmt is not OutputFormat.table:
        keys = ("series", *keys[:3], "prompt_tokens", *keys[3:])
    emit_rows(
        [{k: e.get(k) for k in keys} for e in rec.evidence_series],
        fmt,
        title=f"measured series of the family {rec.evidence_family}",
    )


def _bound(rec: Any) -> str | None:
    """The most TTFT slows at the answer from its predicted wait, and at the wait's 90% end."""
    if rec.slowdown_from_wait is None:
        return None
    high = rec.slowdown_from_wait_high
    return f"{rec.slowdown_from_wait:.2f}x (90%: {'none' if high is None else f'{high:.2f}x'})"


def _interval(ends: tuple[float | None, float] | None) -> str | None:
    """A 90% interval for the table, one number when its ends round alike."""
    from advisor.wording import range_text

    if ends is None or ends[0] is None:
        return None
    return range_text(ends[0], ends[1])


def register(app: typer.Typer) -> None:
    """Add this command to the app."""
    app.command("recommend")(recommend_cmd)
