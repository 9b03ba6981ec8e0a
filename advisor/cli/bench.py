"""CLI commands of the bench domain: ``bench run``, ``bench runs``, ``bench sweep``,
``bench collect`` and ``bench make-model``. Each parses, calls one core function, formats.

Core modules are imported inside the commands: ``bench run`` must start on GPU machines that
have no DuckDB, and every command should start fast.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypeVar

import typer

from advisor.cli import bench_run_options as o
from advisor.cli._curve_options import MaxWaitOption
from advisor.cli._output import (
    DbOption,
    FormatOption,
    OutputFormat,
    RichProgress,
    emit_json,
    emit_rows,
    emit_text,
)
from advisor.cli._parse import csv_list, finite_float
from advisor.errors import UsageError
from advisor.model.waitknee import DEFAULT_MAX_WAIT

bench_app = typer.Typer(
    name="bench",
    help="Launch TTFT-vs-cores benchmarks (attacker-victim load) and collect their results.",
    no_args_is_help=True,
)

T = TypeVar("T")

RUN_COLUMNS = [
    "run_id",
    "cores",
    "workload",
    "attacker_rps",
    "repeat",
    "status",
    "victim_ttft_p50_ms",
    "attacker_ttft_p50_ms",
    "requests_timed_out",
]

# Options that several bench commands take, each spelled and explained once.
ModelDirOption = Annotated[
    str, typer.Option(help="Model directory (needs tokenizer.json), see make-model.")
]
ClientCoresOption = Annotated[
    int, typer.Option(metavar="N", help="Cores kept for the load generator.")
]
StartTimeoutOption = Annotated[
    float, typer.Option(metavar="SECONDS", help="Seconds to wait for the engine to be ready.")
]


def _above_zero(value: float) -> float:
    if not value > 0:  # (NaN too)
        raise typer.BadParameter(f"{value:g}: must be above 0")
    return value


def _a_run_status(value: str | None) -> str | None:
    from advisor.harness.records import RUN_STATUSES

    if value is not None and value not in RUN_STATUSES:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(RUN_STATUSES)}")
    return value


def _a_tolerance(value: float) -> float:
    """A fraction in (0, 1]: 10 (meaning 10%) is a usage error, never a traceback."""
    from advisor.errors import AdvisorError
    from advisor.recommend.query import check_tolerance

    try:
        check_tolerance(value)
    except AdvisorError as exc:
        raise typer.BadParameter(str(exc)) from None
    return value


ToleranceOption = Annotated[
    float,
    typer.Option(
        callback=_a_tolerance,
        help="A core count within this share of the most cores is enough.",
    ),
]


def _values(text: str, flag: str, parse: Callable[[str], T], wanted: str) -> tuple[T, ...]:
    """A comma-separated list of at least one value; ``wanted`` says what to give instead."""

    try:
        vals = tuple(parse(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise UsageError(f"{flag} {text!r}: give {wanted}") from None
    if not vals:
        raise UsageError(f"{flag}: give at least one value")
    return vals


def _ints(text: str, flag: str) -> tuple[int, ...]:
    return _values(text, flag, int, "integers separated by commas, e.g. 2,4,8")


def _floats(text: str, flag: str) -> tuple[float, ...]:
    return tuple(
        finite_float(v, flag)
        for v in _values(text, flag, float, "numbers separated by commas, e.g. 8,16")
    )


def _engine_env(items: list[str] | None) -> tuple[tuple[str, str], ...]:
    """``--engine-env`` items as (key, value) pairs."""

    env = []
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--engine-env {item!r}: give KEY=VALUE")
        env.append((key, value))
    return tuple(env)


def _range(text: str, flag: str) -> tuple[int, int]:

    lo, sep, hi = text.partition(":")
    try:
        a = int(lo)
        b = int(hi) if sep else a
    except ValueError:
        raise UsageError(f"{flag} {text!r}: give MIN:MAX tokens, e.g. 16000:64000") from None
    if a < 1 or b < a:
        raise UsageError(f"{flag} {text!r}: need 1 <= MIN <= MAX")
    return a, b


@bench_app.command("run")
def run_cmd(
    model: ModelDirOption,
    cores: o.Cores,
    out: o.Out = Path("bench-results"),
    engine: o.Engine = "vllm",
    engine_cmd: o.EngineCmd = None,
    engine_arg: o.EngineArg = None,
    engine_env: o.EngineEnv = None,
    tp: o.Tp = 1,
    client_cores: ClientCoresOption = 2,
    workload: o.Workload = "unique",
    attacker_rps: o.AttackerRps = "8",
    attacker_tokens: o.AttackerTokens = "16000:64000",
    attacker_output_tokens: o.AttackerOutputTokens = 16,
    victim_rps: o.VictimRps = 1.0,
    victim_tokens: o.VictimTokens = 64,
    victim_output_tokens: o.VictimOutputTokens = 16,
    duration: o.Duration = 60.0,
    timeout: o.Timeout = 200.0,
    repeats: o.Repeats = 3,
    start_timeout: StartTimeoutOption = 900.0,
    conversation_turns: o.ConversationTurns = 16,
    seed: o.Seed = 0,
    tag: o.Tag = "",
    model_name: o.ModelName = None,
    port: o.Port = 0,
    tokenize_probe: o.TokenizeProbe = True,
    retry_failed: o.RetryFailed = False,
    dry_run: o.DryRun = False,
    tail_tokens: o.TailTokens = 64,
    repin: o.Repin = False,
    starts: o.Starts = 1,
    order: o.Order = "random",
    noload: o.Noload = 10.0,
    find_rate: o.FindRate = "",
    rate_fractions: o.RateFractions = "0.5,0.8",
    rate_ladder: o.RateLadder = "1,2,4,6,8,12,16,24,32",
    ladder_step: o.LadderStep = 8.0,
    saturation_factor: o.SaturationFactor = 3.0,
    gpu_bound_factor: o.GpuBoundFactor = 4.0,
    max_failed: o.MaxFailed = 0.01,
    executor: o.Executor = "",
    budget_minutes: o.BudgetMinutes = 0.0,
    levels: o.Levels = "",
    level_names: o.LevelNames = "light,medium,heavy",
    tolerance: ToleranceOption = 0.10,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Start the engine pinned to each core count, run attacker-victim load, write JSON per run."""
    from dataclasses import replace

    from advisor.harness.config import BenchConfig
    from advisor.harness.metrics import RunChecks
    from advisor.harness.records import LoadSpec
    from advisor.harness.runner import run_bench

    tmin, tmax = _range(attacker_tokens, "--attacker-tokens")
    env = _engine_env(engine_env)
    loads = tuple(
        LoadSpec(
            workload=w,
            attacker_rps=rps,
            attacker_tokens_min=tmin,
            attacker_tokens_max=tmax,
            attacker_output_tokens=attacker_output_tokens,
            victim_rps=victim_rps,
            victim_tokens=victim_tokens,
            victim_output_tokens=victim_output_tokens,
            duration_s=duration,
            timeout_s=timeout,
            seed=seed,
            conversation_turns=conversation_turns,
            tail_tokens=tail_tokens,
        )
        for w in csv_list([workload])
        for rps in _floats(attacker_rps, "--attacker-rps")
    )
    cfg = BenchConfig(
        model=model,
        cores=_ints(cores, "--cores"),
        loads=loads,
        out_dir=out,
        engine=engine,
        engine_cmd=engine_cmd,
        engine_args=tuple(engine_arg or ()),
        engine_env=env,
        tp=tp,
        repeats=repeats,
        client_cores=client_cores,
        port=port,
        start_timeout_s=start_timeout,
        tokenize_probe=tokenize_probe,
        retry_failed=retry_failed,
        dry_run=dry_run,
        tag=tag,
        model_name=model_name,
        repin=repin,
        starts=starts,
        order=order,
        order_seed=seed,
        noload_s=noload,
        rate_fractions=_floats(rate_fractions, "--rate-fractions") if find_rate else (),
        rate_workloads=csv_list([find_rate]),
        rate_ladder=_floats(rate_ladder, "--rate-ladder"),
        ladder_step_s=ladder_step,
        saturation_factor=saturation_factor,
        checks=RunChecks(max_failed_share=max_failed, gpu_bound_factor=gpu_bound_factor),
    )
    from advisor.harness.levels import LEVELS

    names = csv_list([level_names])
    bad = [n for n in names if n not in LEVELS]
    if bad or not names:
        raise UsageError(f"--level-names {level_names!r}: choose from {', '.join(LEVELS)}")
    cfg = replace(
        cfg,
        executor=executor,
        budget_minutes=budget_minutes,
        level_workloads=csv_list([levels]),
        levels=names,
        tolerance=tolerance,
    )
    if order not in ("random", "given"):
        raise UsageError(f"--order {order!r}: choose random or given")
    if starts < 1:
        raise UsageError(f"--starts {starts}: need at least 1")
    with RichProgress() as progress:
        rows = run_bench(cfg, progress)
    cols = RUN_COLUMNS + (["command"] if dry_run else [])
    emit_rows(rows, fmt, columns=cols, title="bench run")


@bench_app.command("curve")
def curve_cmd(
    paths: Annotated[
        list[Path],
        typer.Argument(metavar="PATH", hidden=True, show_default=False),
    ],
    tolerance: ToleranceOption = 0.10,
    max_wait: MaxWaitOption = DEFAULT_MAX_WAIT,
    evidence: Annotated[
        bool,
        typer.Option(
            "--evidence",
            help="Instead: per core count, the most judged wait beside whether TTFT and "
            "inter-token latency were within the tolerance, and the bracket a threshold lies in.",
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Each stored series' slowdown per core count with its 90% paired-bootstrap interval, and
    its knee: resolved, no effect, or not resolved; beside it each process role's CPU wait share
    with its interval and the wait knee (runs that recorded their processes' wait).

    Each PATH is a result folder or run file (.json, .json.gz); needs no database.
    """
    from advisor.harness.results.curves import curve_report, summary_rows

    found = curve_report(paths, tolerance=tolerance, max_wait=max_wait)
    if evidence:
        from advisor.harness.results.curves import evidence_summary, wait_evidence

        rows = wait_evidence(found)
        if fmt is OutputFormat.json:
            emit_json({"rows": rows, **evidence_summary(rows)})
            return
        if fmt is OutputFormat.table:
            people = [_evidence_row_for_people(r) for r in rows]
            emit_rows(people, fmt, title="bench curve --evidence")
            emit_text(_bracket_words(evidence_summary(rows)))
        else:
            emit_rows(rows, fmt, title="bench curve --evidence")
        return
    if fmt is OutputFormat.json:
        emit_rows([c.to_json_dict() for c in found], fmt, title="bench curve")
        return
    rows = summary_rows(found)
    if fmt is OutputFormat.table:
        rows = [_curve_row_for_people(r) for r in rows]
    emit_rows(rows, fmt, title="bench curve")


def _interval_cell(row: dict[str, Any], key: str) -> str | None:
    """A value and its interval in one cell, "0.585 [0.554-0.616]"; None where not measured."""
    value = row.get(key)
    if value is None:
        return None
    low, high = row.get(f"{key}_low"), row.get(f"{key}_high")
    if low is None or high is None:
        return f"{value:g}"
    return f"{value:g} [{low:g}-{high:g}]"


def _curve_row_for_people(row: dict[str, Any]) -> dict[str, Any]:
    """A ``bench curve`` row for people, what decides first: the wait knee and each role's
    wait with its interval, then the TTFT curve as evidence (csv and json keep every column)."""
    return {
        "curve": row["curve"],
        "cores": row["cores"],
        "wait knee": row["wait_knee_cores"]
        if row["wait_knee_cores"] is not None
        else row["wait_status"],
        "engine core wait": _interval_cell(row, "wait_core"),
        "API server wait": _interval_cell(row, "wait_api"),
        "TTFT knee": row["knee_cores"] if row["knee_cores"] is not None else row["status"],
        "TTFT slowdown": _interval_cell(row, "slowdown"),
        "TTFT p50 ms": row["ttft_p50_ms"],
        "ITL slowdown": _interval_cell(row, "itl_slowdown"),
        "GPU worker wait": _interval_cell(row, "wait_worker"),
        "blocks": row["blocks"],
    }


def _evidence_row_for_people(row: dict[str, Any]) -> dict[str, Any]:
    """A ``bench curve --evidence`` row for people: the most judged wait with its interval
    beside the TTFT and ITL verdicts, then whose wait it is."""
    return {
        "curve": row["curve"],
        "cores": row["cores"],
        "most wait": _interval_cell(row, "wait"),
        "TTFT": row["ttft"],
        "ITL": row["itl"],
        "of": row["role"].replace("_", " "),
    }


def _bracket_words(summary: dict[str, Any]) -> str:
    """The bracket the threshold lies in, in words (``--format json`` has it as fields)."""

    def at(r: dict[str, Any] | None) -> str:
        if r is None:
            return "none measured"
        return f"{r['wait']:g} ({r['role'].replace('_', ' ')}, {r['curve']}, {r['cores']} cores)"

    return (
        "The wait threshold lies between the largest wait with TTFT and inter-token latency "
        f"within the tolerance beyond doubt, {at(summary['largest_harmless'])}, and the "
        f"smallest with either slower beyond doubt, {at(summary['smallest_harmful'])}."
    )


@bench_app.command("replicate")
def replicate_cmd(
    old: Annotated[Path, typer.Argument(metavar="OLD", hidden=True, show_default=False)],
    new: Annotated[Path, typer.Argument(metavar="NEW", hidden=True, show_default=False)],
    tolerance: ToleranceOption = 0.10,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Whether the curves of a rerun (NEW: a result folder or run file) agree with the stored
    ones of the same series and load (OLD) within their intervals at every common core count.

    Exit 0 when every common curve agrees, 1 when one does not, 4 when none is in common.
    """
    from advisor.harness.results.curves import replication_report

    rows = replication_report(old, new, tolerance=tolerance)
    emit_rows(rows, fmt, title="bench replicate")
    if not rows:
        from advisor.errors import NotFoundError

        raise NotFoundError(f"no series and load is in both {old} and {new}")
    if not all(r["agree"] for r in rows):
        raise typer.Exit(1)


@bench_app.command("rerun")
def rerun_cmd(
    old: Annotated[Path, typer.Argument(metavar="OLD", hidden=True, show_default=False)],
    model: ModelDirOption,
    out: Annotated[
        Path, typer.Option(metavar="DIR", help="Folder for the rerun's JSON results.")
    ] = Path("bench-rerun"),
    series: Annotated[
        str | None,
        typer.Option(metavar="ID", help="The stored series to rerun, when OLD holds several."),
    ] = None,
    engine_cmd: Annotated[
        str | None, typer.Option(metavar="TEMPLATE", help="As for bench run.")
    ] = None,
    engine_arg: Annotated[
        list[str] | None,
        typer.Option(metavar="ARG", help="Engine argument (repeatable), as the stored runs had."),
    ] = None,
    engine_env: Annotated[
        list[str] | None, typer.Option(metavar="KEY=VALUE", help="As for bench run.")
    ] = None,
    client_cores: ClientCoresOption = 2,
    start_timeout: StartTimeoutOption = 900.0,
    tolerance: ToleranceOption = 0.10,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Run a stored series again (its loads, core counts, repeats, starts, executor and TP from
    OLD's run files) and say whether the new curves agree with the stored ones.

    The engine arguments given must reproduce the stored series' identity. Exit 0 when every
    curve agrees, 1 when one does not.
    """
    from advisor.harness.rerun import rerun_series

    env = _engine_env(engine_env)
    with RichProgress() as progress:
        rows = rerun_series(
            old,
            model=model,
            out_dir=out,
            series=series,
            tolerance=tolerance,
            progress=progress,
            engine_cmd=engine_cmd,
            engine_args=tuple(engine_arg or ()),
            engine_env=env,
            client_cores=client_cores,
            start_timeout_s=start_timeout,
        )
    emit_rows(rows, fmt, title="bench rerun")
    if not all(r["agree"] for r in rows):
        raise typer.Exit(1)


@bench_app.command("make-model")
def make_model_cmd(
    out: Annotated[
        Path, typer.Option(metavar="DIR", help="Folder to write the model directory into.")
    ],
    arch: Annotated[
        str,
        typer.Option(
            metavar="[llama-3.1-8b|tiny]",
            help="llama-3.1-8b (for vLLM --load-format dummy) or tiny (CPU tests).",
        ),
    ] = "llama-3.1-8b",
    weights: Annotated[bool, typer.Option(help="Also save random weights (tiny only).")] = False,
    seed: Annotated[int, typer.Option(metavar="N", help="Seed of the random weights.")] = 0,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Write config.json, generation_config.json and a BPE tokenizer trained on local text."""
    from advisor.harness.load.modeldir import MakeModelConfig, make_model

    with RichProgress() as progress:
        made = make_model(MakeModelConfig(arch, out, weights=weights, seed=seed), progress)
    emit_rows([made], fmt, title="bench make-model")


@bench_app.command("collect")
def collect_cmd(
    paths: Annotated[
        list[Path],
        # described in the docstring: typer 0.29 prints an argument's Python type in help
        typer.Argument(metavar="PATH", hidden=True, show_default=False),
    ],
    db: DbOption = None,
    calibration_csv: Annotated[
        Path | None,
        typer.Option(metavar="FILE", help="Also write the runs' calibration points to this CSV."),
    ] = None,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Load run JSONs into the bench tables and derive calibration points.

    Each PATH is a result folder or a run's JSON file (.json, .json.gz).
    """
    from advisor.errors import InputError
    from advisor.harness.results.collect import collect

    with RichProgress() as progress:
        result = collect(paths, db, progress, calibration_csv=calibration_csv)
    emit_rows(
        [result],
        fmt,
        columns=[
            "files",
            "runs_loaded",
            "requests_loaded",
            "calibration_points",
            "calibration_csv",
        ],
        title="bench collect",
    )
    if result.problems:
        raise InputError(
            f"{len(result.problems)} file(s) not loaded (the others were):\n  "
            + "\n  ".join(result.problems)
        )


@bench_app.command("runs")
def runs_cmd(
    db: DbOption = None,
    platform: Annotated[
        str | None, typer.Option(metavar="NAME", help="Only this platform (H200, ...).")
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(
            metavar="STATUS",
            callback=_a_run_status,
            help="Only this status (ok, crashed, hung, ...).",
        ),
    ] = None,
    by_point: Annotated[
        bool, typer.Option(help="Fold repeats: median with its range, speedup vs fewest cores.")
    ] = False,
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """List collected benchmark runs (or, with --by-point, their repeats folded)."""
    from advisor.harness.results.collect import list_runs, summarise_points

    if by_point:
        emit_rows(summarise_points(db, platform=platform), fmt, title="bench points")
        return
    emit_rows(list_runs(db, platform=platform, status=status), fmt, title="bench runs")


@bench_app.command("sweep")
def sweep_cmd(
    model: Annotated[str, typer.Option(help="Model directory on the cluster's shared filesystem.")],
    cores: Annotated[
        str,
        typer.Option(metavar="N,...", help="Engine core counts, one array task each: 2,4,8,16."),
    ],
    out: Annotated[
        Path, typer.Option(metavar="DIR", help="Folder for the scripts, logs and results.")
    ] = Path("bench-sweep"),
    slurm: Annotated[
        bool, typer.Option("--slurm", help="Write an sbatch job array (the only backend).")
    ] = True,
    submit: Annotated[bool, typer.Option(help="Submit it with sbatch.")] = False,
    dry_run: Annotated[
        bool, typer.Option(help="Print the scripts; write and submit nothing.")
    ] = False,
    gpus: Annotated[
        int, typer.Option(metavar="N", help="GPUs per task (also the --tp of each run).")
    ] = 1,
    client_cores: Annotated[
        int, typer.Option(metavar="N", help="Extra cores per task for the load generator.")
    ] = 1,
    partition: Annotated[str | None, typer.Option(metavar="NAME", help="Slurm partition.")] = None,
    account: Annotated[str | None, typer.Option(metavar="NAME", help="Slurm account.")] = None,
    gpu_type: Annotated[
        str | None, typer.Option(metavar="TYPE", help="GPU type in --gpus=TYPE:N (e.g. h200).")
    ] = None,
    time_limit: Annotated[
        str, typer.Option("--time", metavar="TIME", help="Slurm time limit per task.")
    ] = "02:00:00",
    mem: Annotated[
        str | None, typer.Option(metavar="SIZE", help="Slurm --mem per task, e.g. 64G.")
    ] = None,
    run_args: Annotated[
        str,
        typer.Option(
            metavar="ARGS", help="Extra arguments for each `advisor bench run` (shell words)."
        ),
    ] = "",
    advisor_cmd: Annotated[
        str, typer.Option(metavar="COMMAND", help="How tasks call advisor on the nodes.")
    ] = "advisor",
    fmt: FormatOption = OutputFormat.table,
) -> None:
    """Write (and with --submit, submit) an sbatch job array: one task per core count."""
    from advisor.harness.sweep import SweepConfig, make_sweep

    cfg = SweepConfig(
        model=model,
        cores=_ints(cores, "--cores"),
        out_dir=out,
        gpus=gpus,
        client_cores=client_cores,
        partition=partition,
        account=account,
        gpu_type=gpu_type,
        time_limit=time_limit,
        mem=mem,
        run_args=run_args,
        advisor_cmd=advisor_cmd,
        submit=submit,
        dry_run=dry_run,
    )
    result = make_sweep(cfg)
    if dry_run:
        import sys

        sys.stdout.write(result.script)
        return
    emit_rows([result.summary()], fmt, title="bench sweep")


def register(app: typer.Typer) -> None:
    """Add this domain's commands to the app."""
    app.add_typer(bench_app, name="bench")


# ``bench import`` / ``bench export`` (other tools' formats) live in their own module.
from advisor.cli.bench_formats import add_commands as _add_format_commands  # noqa: E402

_add_format_commands(bench_app)
