"""``bench run --repin``: one engine start serves every core count, re-pinned before each
phase. Rounds of (cores, load) phases in random order with common random numbers, spread over
``--starts`` engine starts; repeats added under ``--budget-minutes`` until every curve is
resolved; and the curves file that says what the data resolve and why the run stopped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.harness.config import (
    BenchConfig,
    Point,
    RunRow,
    is_done,
    kept_path,
    run_id_for,
    slug,
)
from advisor.harness.levels import leveled_loads
from advisor.harness.load.loadgen import Target, warmup
from advisor.harness.load.prompts import PromptFactory
from advisor.harness.phase import (
    StartState,
    base_run,
    engine_down,
    engine_spec,
    measure_phase,
    new_session,
    noload_phase,
    now_utc,
    pinning_dict,
    row_from_file,
    row_of_run,
    target_of,
    write_result,
)
from advisor.harness.rates import scaled_loads
from advisor.harness.records import Platform, RequestRecord, RunResult
from advisor.harness.serve import engine as eng
from advisor.harness.serve.pinning import (
    CoreSplit,
    check_pinning,
    choose_cores,
    repin,
)
from advisor.progress import ProgressFn


def run_repinned(
    cfg: BenchConfig,
    plat: Platform,
    template: Any,
    engine_env: dict[str, str],
    avail: tuple[int, ...],
    preferred: tuple[int, ...],
    progress: ProgressFn,
) -> list[RunRow]:
    """Every core count against ``cfg.starts`` engine starts, re-pinning the live engine before
    each phase. A *round* is one repeat: every (core count, load) once, in a seeded random
    order, all with the same traffic per load (common random numbers). Repeat r runs in start
    ``(r - 1) % starts``; with ``budget_minutes`` more rounds follow in each start while its
    share of the budget lasts, and in the last start only until every curve is resolved.
    The curves file (``curves_path``) says what the data resolve and why the run stopped."""
    most = max(cfg.cores)
    split = choose_cores(most, cfg.client_cores, avail, preferred)
    Path(cfg.out_dir).mkdir(parents=True, exist_ok=True)
    loads = cfg.loads
    rows: list[RunRow] = []
    t_begin = time.monotonic()
    session = new_session()
    next_repeat = cfg.repeats + 1
    stopped = "repeats done"
    written: list[Path] = []
    for s in range(cfg.starts):
        reps = [r for r in range(1, cfg.repeats + 1) if (r - 1) % cfg.starts == s]
        if not reps and not cfg.budget_minutes:
            continue
        spec = engine_spec(cfg, template, engine_env, split.engine, f"engine-start{s + 1}.log")
        st = StartState(
            split.engine, split.client, split.client_shares_engine_cores, spec.argv, dict(spec.env)
        )
        st.start_no, st.most_cores, st.session = s + 1, most, session
        first = loads[0]
        factory = PromptFactory(Path(cfg.model), seed=first.seed + s)
        target = target_of(cfg, spec)
        label = f"start {s + 1}/{cfg.starts}"
        with eng.EngineProcess(spec) as engine:
            ready = engine.wait_ready(cfg.start_timeout_s)
            st.ready_status, st.ready_s = ready.status, ready.seconds
            st.exit_code, st.log_tail = ready.exit_code, ready.log_tail
            if ready.status == "ok":
                if cfg.warmup_requests:
                    sizes = [first.victim_tokens] * max(1, cfg.warmup_requests - 1)
                    sizes.append(min(first.attacker_tokens_min, 4096))
                    wrecs = warmup(target, factory, sizes, first.timeout_s)
                    st.warmup_ttft_ms = [r.ttft_ms for r in wrecs]
                st.pinning = pinning_dict(check_pinning(engine.pids(), split.engine))
                st.noload = noload_phase(cfg, first, target, factory, split)
                if cfg.rate_fractions and cfg.rate_workloads:
                    loads = scaled_loads(cfg, loads, target, factory, split, st, s)
                if cfg.level_workloads:
                    loads = leveled_loads(cfg, loads, target, factory, split, st, engine, s)
            share_end = t_begin + cfg.budget_minutes * 60.0 * (s + 1) / cfg.starts
            last_round_s = 0.0
            while True:
                if not reps:
                    if not cfg.budget_minutes or ready.status != "ok" or not engine.alive():
                        break
                    if s == cfg.starts - 1 and all_resolved(cfg, written):
                        stopped = "resolved"
                        break
                    if time.monotonic() + last_round_s > share_end:
                        stopped = "budget spent"
                        break
                    reps = [next_repeat]
                    next_repeat += 1
                t_round = time.monotonic()
                for r in reps:
                    points = [
                        Point(
                            c,
                            load,
                            r,
                            rid := run_id_for(cfg, plat.platform, c, load, r),
                            Path(cfg.out_dir) / f"{rid}.json",
                        )
                        for c in cfg.cores
                        for load in loads
                    ]
                    todo = [
                        p
                        for p in shuffled(points, cfg, salt=r)
                        if not is_done(p.path, cfg.retry_failed)
                    ]
                    rows.extend(row_from_file(p, "skipped") for p in points if p not in todo)
                    written.extend(p.path for p in points)
                    progress(f"{label}, repeat {r}", 0, len(todo))
                    for i, pt in enumerate(todo):
                        rows.append(
                            measure_point(cfg, plat, pt, st, split, ready, engine, target, factory)
                        )
                        progress(f"{label}, repeat {r}", i + 1, len(todo))
                reps = []
                last_round_s = time.monotonic() - t_round
            st.survivors = engine.stop()
    if cfg.budget_minutes and stopped == "repeats done":
        stopped = "resolved" if all_resolved(cfg, written) else "budget spent"
    write_curves(cfg, written, stopped, time.monotonic() - t_begin)
    return rows


def measure_point(
    cfg: BenchConfig,
    plat: Platform,
    pt: Point,
    st: StartState,
    split: CoreSplit,
    ready: Any,
    engine: eng.EngineProcess,
    target: Target,
    factory: PromptFactory,
) -> RunRow:
    """One phase against the live engine re-pinned to the point's cores, written to its file."""
    cores_now = split.engine[: pt.cores]
    now = CoreSplit(cores_now, split.client, split.client_shares_engine_cores)
    st.cores = cores_now
    run = base_run(cfg, plat, pt, st)
    records: list[RequestRecord] = []
    if not engine_down(run, ready, engine):
        run["extra"]["threads_repinned"] = repin(engine.pids(), cores_now)
        records = measure_phase(cfg, pt, target, factory, engine, now, run, st)
    run["finished_at"] = now_utc()
    write_result(pt.path, RunResult(run, tuple(records)))
    return row_of_run(pt, run)


def shuffled(points: list[Point], cfg: BenchConfig, salt: int) -> list[Point]:
    """A round's (core count, load) phases in a seeded random order (``given``: as listed), so
    neither a drift over time nor the previous phase's load poses as a core effect."""
    if cfg.order != "random":
        return list(points)
    import random

    out = list(points)
    random.Random(cfg.order_seed * 1009 + salt).shuffle(out)
    return out


def curves_path(cfg: BenchConfig) -> Path:
    """``[<tag>_]curves-<executor>-<workloads>.json``: one per run of one configuration."""
    works = "-".join(sorted({slug(ld.workload) for ld in cfg.loads}))
    return kept_path(cfg, f"curves-{cfg.executor or 'default'}-{works}")


def all_resolved(cfg: BenchConfig, paths: Sequence[Path]) -> bool:
    """Whether every curve measured so far has a resolved knee or a resolved absence of one."""
    from advisor.harness.results.curves import curves, read_runs
    from advisor.model.knee import NOT_RESOLVED

    cs = curves(read_runs([p for p in paths if p.is_file()]), tolerance=cfg.tolerance)
    return bool(cs) and all(c.knee.status != NOT_RESOLVED for c in cs)


def write_curves(cfg: BenchConfig, paths: Sequence[Path], stopped: str, wall_s: float) -> None:
    """What the run's data resolve, per curve, and why the run stopped."""
    from advisor.harness.results.curves import CURVES_SCHEMA, curves, read_runs

    cs = curves(read_runs(sorted({p for p in paths if p.is_file()})), tolerance=cfg.tolerance)
    body = {
        "schema": CURVES_SCHEMA,
        "stopped": stopped,
        "budget_minutes": cfg.budget_minutes or None,
        "wall_s": round(wall_s, 1),
        "tolerance": cfg.tolerance,
        "curves": [c.to_json_dict() for c in cs],
    }
    curves_path(cfg).write_text(json.dumps(body, indent=1))
