"""``advisor bench run``: check the request, then either re-pin live engines across core counts
(:mod:`advisor.harness.repinned`) or, for each core count, start the engine pinned to that many
cores, wait until it is ready, warm it up, run every load phase (workloads x attacker rates x
repeats) against that one start, write one self-describing JSON per phase, and stop the
engine's whole process group. Points whose JSON already exists are skipped, so a rerun
continues where an interrupted one stopped (``retry_failed`` also reruns points that did not
end ``ok``).

A start that crashes or never becomes ready, an engine that dies during a phase (``crashed``)
and one that stops answering (``hung``: alive, yet every request of the phase timed out) are
recorded as such, with the end of the engine's log; they are results, not exceptions.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path

from advisor.errors import InputError
from advisor.harness.config import BenchConfig, Point, RunRow, check_context, is_done, plan_points
from advisor.harness.load.loadgen import warmup
from advisor.harness.load.prompts import PromptFactory
from advisor.harness.phase import (
    StartState,
    base_run,
    engine_down,
    engine_spec,
    measure_phase,
    noload_phase,
    now_utc,
    pinning_dict,
    row_from_file,
    row_of_run,
    target_of,
    write_result,
)
from advisor.harness.records import Platform, RequestRecord, RunResult
from advisor.harness.repinned import run_repinned
from advisor.harness.serve import engine as eng
from advisor.harness.serve.pinning import (
    CoreSplit,
    available_cpus,
    check_pinning,
    choose_cores,
    format_cpu_list,
    gpu_numa_cpus,
)
from advisor.progress import ProgressFn, no_progress


def run_bench(cfg: BenchConfig, progress: ProgressFn = no_progress) -> list[RunRow]:
    """Run (or with ``dry_run`` only plan) every point; return one row per point."""
    from advisor.harness.serve.platform import detect_platform

    engine_env = dict(cfg.engine_env)
    template = eng.engine_template(cfg.engine, cfg.engine_cmd)
    plat, gpus = detect_platform(cfg.engine, engine_env)
    points = plan_points(cfg, plat.platform)
    avail = available_cpus()
    preferred = gpu_numa_cpus(gpus.pci_bus_ids[: cfg.tp]) if gpus.pci_bus_ids else ()
    if not cfg.dry_run and not (Path(cfg.model) / "tokenizer.json").is_file():
        raise InputError(
            "no tokenizer.json: the benchmark builds its prompts with the model's tokenizer; "
            "give a model directory (make one with `advisor bench make-model`)",
            source=str(Path(cfg.model) / "tokenizer.json"),
        )
    if not cfg.dry_run:
        check_context(cfg)
    if cfg.repin and not cfg.dry_run:
        return run_repinned(cfg, plat, template, engine_env, avail, preferred, progress)
    rows: list[RunRow] = []
    by_cores: dict[int, list[Point]] = {}
    for p in _ordered(points, cfg):
        by_cores.setdefault(p.cores, []).append(p)

    for n_cores, pts in by_cores.items():
        split = choose_cores(n_cores, cfg.client_cores, avail, preferred)
        spec = engine_spec(cfg, template, engine_env, split.engine, f"engine-c{n_cores}.log")
        todo = [p for p in pts if not is_done(p.path, cfg.retry_failed)]
        for p in pts:
            if p not in todo:
                rows.append(row_from_file(p, "skipped"))
        if cfg.dry_run:
            cmd = " ".join(spec.argv)
            rows.extend(
                RunRow(
                    p.run_id,
                    p.cores,
                    p.load.workload,
                    p.load.attacker_rps,
                    p.repeat,
                    "planned",
                    None,
                    None,
                    None,
                    str(p.path),
                    f"taskset -c {format_cpu_list(split.engine)} {cmd}",
                )
                for p in todo
            )
            continue
        if not todo:
            continue
        Path(cfg.out_dir).mkdir(parents=True, exist_ok=True)
        rows.extend(_run_one_start(cfg, plat, spec, split, todo, progress))
    return rows


def _ordered(points: list[Point], cfg: BenchConfig, salt: int = 0) -> list[Point]:
    """The points in the order they run: core counts shuffled (seeded) unless ``given``, so that
    a drift over time (heat, caches, a neighbour) does not masquerade as a core effect."""
    if cfg.order != "random":
        return list(points)
    import random

    counts = sorted({p.cores for p in points})
    random.Random(cfg.order_seed * 1009 + salt).shuffle(counts)
    rank = {c: i for i, c in enumerate(counts)}
    return sorted(points, key=lambda p: rank[p.cores])


def _run_one_start(
    cfg: BenchConfig,
    plat: Platform,
    spec: eng.EngineSpec,
    split: CoreSplit,
    todo: list[Point],
    progress: ProgressFn,
) -> list[RunRow]:
    label = f"{len(spec.cores)} cores"
    total = len(todo)
    progress(label, 0, total)
    st = StartState(
        split.engine, split.client, split.client_shares_engine_cores, spec.argv, dict(spec.env)
    )
    st.most_cores = max(cfg.cores)
    model_dir = Path(cfg.model)
    factory = PromptFactory(model_dir, seed=todo[0].load.seed)
    first = todo[0].load
    if cfg.tokenize_probe:
        from advisor.harness.load.tokenize_probe import measure_tokenization

        victims = [factory.unique(first.victim_tokens, f"tok-v{i}").text for i in range(16)]
        attackers = [
            factory.unique(n, f"tok-a{i}").text
            for i, n in enumerate(
                [
                    first.attacker_tokens_min,
                    (first.attacker_tokens_min + first.attacker_tokens_max) // 2,
                    first.attacker_tokens_max,
                ]
                * 2
            )
        ]
        st.tokenize = [
            asdict(t)
            for t in measure_tokenization(
                model_dir / "tokenizer.json",
                victims,
                attackers,
                split.engine,
                concurrency=max(2, min(16, int(round(first.attacker_rps)))),
            )
        ]
    target = target_of(cfg, spec)
    rows: list[RunRow] = []
    own_affinity = os.sched_getaffinity(0)
    with eng.EngineProcess(spec) as engine:
        ready = engine.wait_ready(cfg.start_timeout_s)
        st.ready_status, st.ready_s = ready.status, ready.seconds
        st.exit_code, st.log_tail = ready.exit_code, ready.log_tail
        if ready.status == "ok" and cfg.warmup_requests:
            sizes = [first.victim_tokens] * max(1, cfg.warmup_requests - 1) + [
                first.attacker_tokens_min
            ]
            wrecs = warmup(target, factory, sizes, first.timeout_s)
            st.warmup_ttft_ms = [r.ttft_ms for r in wrecs]
        if ready.status == "ok":
            st.pinning = pinning_dict(check_pinning(engine.pids(), split.engine))
            st.noload = noload_phase(cfg, first, target, factory, split)
        for i, pt in enumerate(todo):
            run = base_run(cfg, plat, pt, st)
            records: list[RequestRecord] = []
            if not engine_down(run, ready, engine):
                records = measure_phase(cfg, pt, target, factory, engine, split, run, st)
            run["finished_at"] = now_utc()
            write_result(pt.path, RunResult(run, tuple(records)))
            rows.append(row_of_run(pt, run))
            progress(label, i + 1, total)
        st.survivors = engine.stop()
    os.sched_setaffinity(0, own_affinity)
    if st.survivors:
        # Recorded in the last run of this start: the process group did not end.
        last = todo[-1].path
        data = json.loads(last.read_text())
        data["run"]["extra"]["stop_survivors"] = st.survivors
        last.write_text(json.dumps(data, indent=1))
    return rows
