"""One phase against a live engine and the run record it leaves: the record's fields (platform,
engine, load, series identity), the load sent with common random numbers, what the engine's
processes, the GPU and vLLM's counters say afterwards, and the run's flags; plus the engine's
command line and the victims-alone (no-load) phase every start measures.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.harness.config import BenchConfig, Point, RunRow, llama_params_b, model_label
from advisor.harness.load.loadgen import Target, plan_phase, run_phase
from advisor.harness.load.prompts import PromptFactory
from advisor.harness.metrics import (
    bootstrap_ci,
    cpu_percent,
    parse_prometheus,
    run_flags,
    server_ttft_mean_ms,
    summarise,
    vllm_deltas,
)
from advisor.harness.records import SCHEMA, LoadSpec, Platform, RequestRecord, RunResult
from advisor.harness.serve import engine as eng
from advisor.harness.serve.pinning import (
    CoreSplit,
    PinningReport,
    check_pinning,
    format_cpu_list,
)
from advisor.harness.serve.procs import cpu_by_pid, per_process_cpu, role_cores

# Engines that take vLLM's sampling extensions (fixed output length through ignore_eos).
IGNORE_EOS_ENGINES = ("vllm", "sglang")


ENV_KNOBS = (
    "TOKENIZERS_PARALLELISM",
    "RAYON_NUM_THREADS",
    "OMP_NUM_THREADS",
    "MKL_NUM_THREADS",
    "CUDA_VISIBLE_DEVICES",
    "HF_HUB_OFFLINE",
)


def now_utc() -> str:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def write_result(path: Path, result: RunResult) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result.to_json(), indent=1))
    os.replace(tmp, path)


@dataclass
class StartState:
    """What is known about one engine start, copied into each of its runs."""

    cores: tuple[int, ...]
    client: tuple[int, ...]
    client_shares: bool
    argv: tuple[str, ...]
    env: dict[str, str]
    ready_status: str = "not-started"
    ready_s: float | None = None
    exit_code: int | None = None
    log_tail: str = ""
    warmup_ttft_ms: list[float | None] = field(default_factory=list)
    tokenize: list[dict[str, Any]] = field(default_factory=list)
    pinning: dict[str, Any] = field(default_factory=dict)
    survivors: list[int] = field(default_factory=list)
    start_no: int = 1
    noload: dict[str, Any] = field(default_factory=dict)
    most_cores: int = 0
    session: str = ""  # one ``bench run`` invocation (its engine starts are its blocks)


def base_run(cfg: BenchConfig, plat: Platform, pt: Point, st: StartState) -> dict[str, Any]:
    load = pt.load
    gpus = cfg.tp if plat.gpu_count else 0
    env = {k: os.environ[k] for k in ENV_KNOBS if k in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("VLLM_")})
    env.update(st.env)
    ident = cfg.identity(env)
    return {
        "run_id": pt.run_id,
        "started_at": now_utc(),
        # where it ran, when inside a Slurm allocation (the dashboard filters on both)
        "cluster": os.environ.get("SLURM_CLUSTER_NAME") or None,
        "partition": os.environ.get("SLURM_JOB_PARTITION") or None,
        "finished_at": None,
        "status": "failed",
        "engine": cfg.engine,
        "engine_version": plat.engine_version,
        "model": model_label(cfg.model),
        "model_params_b": llama_params_b(cfg.model),
        "platform": plat.platform,
        "gpu_name": plat.gpu_name,
        "cpu_model": plat.cpu_model,
        "gpus": gpus,
        "tp": cfg.tp,
        "cores": pt.cores,
        "cores_per_gpu": pt.cores / gpus if gpus else None,
        "core_list": format_cpu_list(st.cores),
        "workload": load.workload,
        "attacker_rps": load.attacker_rps,
        "attacker_tokens_min": load.attacker_tokens_min,
        "attacker_tokens_max": load.attacker_tokens_max,
        "victim_rps": load.victim_rps,
        "duration_s": load.duration_s,
        "repeat": pt.repeat,
        "timeout_s": load.timeout_s,
        "victim_ttft_p50_ms": None,
        "victim_ttft_p90_ms": None,
        "attacker_ttft_p50_ms": None,
        "requests_ok": 0,
        "requests_failed": 0,
        "requests_timed_out": 0,
        "engine_cpu_percent": None,
        "gpu_util_percent": None,
        "tokenize_share": None,
        "env": env,
        "metrics_before": {},
        "metrics_after": {},
        "extra": {
            "schema": SCHEMA,
            "hostname": plat.hostname,
            "gpu_count_visible": plat.gpu_count,
            "cpu_count": plat.cpu_count,
            "client_core_list": format_cpu_list(st.client),
            "client_shares_engine_cores": st.client_shares,
            "engine_argv": list(st.argv),
            "engine_ready_status": st.ready_status,
            "engine_ready_s": st.ready_s,
            "engine_exit_code": st.exit_code,
            "engine_log_tail": st.log_tail[-3000:] if st.log_tail else "",
            "warmup_ttft_ms": st.warmup_ttft_ms,
            "tokenization": st.tokenize,
            "pinning": st.pinning,
            "load": asdict(load),
            "engine_start": st.start_no,
            "session": st.session or None,
            "pinning_mode": "repin" if cfg.repin else "start",
            "noload": st.noload,
            # what makes this run's curve its own (harness.series): TP, executor, renderer
            # workers, other CPU-relevant engine arguments and environment variables
            "series": ident,
            "executor": ident["executor"],
            "renderer_workers": ident["renderer_workers"],
            "level": load.level or None,
            "crn": {"seed": pt.load.seed + pt.repeat * 1000, "salt": phase_salt(pt.run_id)},
        },
    }


def tokenize_share(
    st: StartState, victim_p50: float | None, attacker_p50: float | None
) -> tuple[float | None, dict[str, Any]]:
    base = next((t for t in st.tokenize if t.get("setting") == "parallelism-on"), None)
    if not base:
        return None, {}
    v, a = base.get("victim_encode_ms"), base.get("attacker_encode_ms")
    share_v = v / victim_p50 if v is not None and victim_p50 else None
    share_a = a / attacker_p50 if a is not None and attacker_p50 else None
    return share_v, {"victim_tokenize_share": share_v, "attacker_tokenize_share": share_a}


def pinning_dict(report: PinningReport) -> dict[str, Any]:
    return {
        "ok": report.ok,
        "processes": report.processes,
        "threads": report.threads,
        "violations": [asdict(v) for v in report.violations[:20]],
    }


def engine_spec(
    cfg: BenchConfig,
    template: Any,
    engine_env: dict[str, str],
    cores: tuple[int, ...],
    log_name: str,
) -> eng.EngineSpec:
    """The engine's command, pinned to ``cores``, on ``cfg.port`` or a free one."""
    return eng.spec_from(
        template,
        model=cfg.model,
        tp=cfg.tp,
        cores=cores,
        host=cfg.host,
        port=cfg.port or eng.free_port(cfg.host),
        extra_args=cfg.all_engine_args(),
        env=engine_env,
        ready_path=cfg.ready_path,
        log_path=Path(cfg.out_dir) / log_name,
        cgroup_parent=eng.default_cgroup_parent(),
    )


def target_of(cfg: BenchConfig, spec: eng.EngineSpec) -> Target:
    """Where the load goes: the started engine, under the model name requests carry."""
    return Target(
        spec.host,
        spec.port,
        cfg.model_name or cfg.model,
        ignore_eos=cfg.engine in IGNORE_EOS_ENGINES,
    )


def row_of_run(p: Point, run: dict[str, Any]) -> RunRow:
    """The CLI's row of a run just written (from the run itself, not read back from disk)."""
    return RunRow(
        p.run_id,
        p.cores,
        p.load.workload,
        p.load.attacker_rps,
        p.repeat,
        run["status"],
        run["victim_ttft_p50_ms"],
        run["attacker_ttft_p50_ms"],
        run["requests_timed_out"],
        str(p.path),
    )


def row_from_file(p: Point, status: str) -> RunRow:
    try:
        run = json.loads(p.path.read_text())["run"]
    except (OSError, ValueError, KeyError) as exc:
        raise InputError(
            f"unreadable result ({exc}); delete it to rerun", source=str(p.path)
        ) from exc
    return RunRow(
        p.run_id,
        p.cores,
        p.load.workload,
        p.load.attacker_rps,
        p.repeat,
        status,
        run.get("victim_ttft_p50_ms"),
        run.get("attacker_ttft_p50_ms"),
        run.get("requests_timed_out"),
        str(p.path),
    )


def engine_down(run: dict[str, Any], ready: eng.ReadyResult, engine: eng.EngineProcess) -> bool:
    """Whether the engine cannot serve the phase (it never became ready, or has died since); if
    so, ``run`` records why, with the engine's exit code and the tail of its log."""
    if ready.status == "ok" and engine.alive():
        return False
    run["status"] = ready.status if ready.status != "ok" else "crashed"
    run["extra"]["engine_exit_code"] = engine.exit_code()
    run["extra"]["engine_log_tail"] = engine.log_tail()
    return True


def measure_phase(
    cfg: BenchConfig,
    pt: Point,
    target: Target,
    factory: PromptFactory,
    engine: eng.EngineProcess,
    split: CoreSplit,
    run: dict[str, Any],
    st: StartState,
) -> list[RequestRecord]:
    from advisor.harness.serve.platform import GpuSampler
    from advisor.harness.serve.waits import WaitSampler, engine_cgroup

    load: LoadSpec = pt.load
    # Common random numbers: the seed depends on the repeat (the phase slot), not on the cores,
    # so every core count of a repeat gets the same arrivals and prompts; the salt (from the run
    # id) only changes each request's leading marker, so the prefix cache cannot serve them.
    planned = plan_phase(
        replace(load, seed=load.seed + pt.repeat * 1000, salt=phase_salt(pt.run_id)),
        target,
        factory,
    )
    before_text = eng.http_get_text(target.host, target.port, "/metrics")
    before = parse_prometheus(before_text)
    cpu_before = cpu_by_pid(engine.pids())
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(split.client))
    t0 = time.monotonic()
    try:
        with (
            GpuSampler() as gpu,
            WaitSampler(
                engine.pids,
                root_pid=engine.pid,
                cgroup=getattr(engine, "cgroup", None) or engine_cgroup(engine.pid),
            ) as waits,
        ):
            phase = run_phase(planned, target, load.timeout_s)
            records, lag_p99_ms = phase.records, phase.send_lag_p99_ms
    finally:
        os.sched_setaffinity(0, own)
    wall = time.monotonic() - t0
    cpu_after = cpu_by_pid(engine.pids())
    cpu0 = sum(c for _, c in cpu_before.values())
    cpu1 = sum(c for _, c in cpu_after.values())
    after = parse_prometheus(eng.http_get_text(target.host, target.port, "/metrics"))
    vic, att = summarise(records, "victim"), summarise(records, "attacker")
    alive = engine.alive()
    sent = len(records)
    ok = sum(r.status == "ok" for r in records)
    timeouts = sum(r.status == "timeout" for r in records)
    if not alive:
        status = "crashed"
    elif sent and ok == 0 and timeouts == sent:
        status = "hung"
    elif sent and ok == 0:
        status = "failed"
    else:
        status = "ok"
    share, shares = tokenize_share(st, vic.ttft_p50_ms, att.ttft_p50_ms)
    pin = check_pinning(engine.pids(), split.engine) if alive else None
    run.update(
        status=status,
        victim_ttft_p50_ms=vic.ttft_p50_ms,
        victim_ttft_p90_ms=vic.ttft_p90_ms,
        attacker_ttft_p50_ms=att.ttft_p50_ms,
        requests_ok=ok,
        requests_failed=sum(r.status == "error" for r in records),
        requests_timed_out=timeouts,
        engine_cpu_percent=cpu_percent(cpu0, cpu1, wall),
        gpu_util_percent=gpu.mean_percent,
        tokenize_share=share,
        metrics_before=before,
        metrics_after=after,
    )
    all_ttft = [r.ttft_ms for r in records if r.status == "ok" and r.ttft_ms is not None]
    run["extra"].update(
        shares,
        victim=asdict(vic),
        attacker=asdict(att),
        phase_wall_s=wall,
        client_send_lag_p99_ms=lag_p99_ms,
        server_ttft_mean_ms=server_ttft_mean_ms(before, after),
        client_ttft_mean_ms=sum(all_ttft) / len(all_ttft) if all_ttft else None,
        engine_exit_code=engine.exit_code(),
        engine_log_tail=engine.log_tail() if status != "ok" else "",
        pinning_after=pinning_dict(pin) if pin is not None else None,
        engine_cpu_by_process=per_process_cpu(cpu_before, cpu_after, wall, engine.pid),
        wait=waits.result,
    )
    victim_ttft = [
        r.ttft_ms for r in records if r.kind == "victim" and r.status == "ok" and r.ttft_ms
    ]
    deltas = vllm_deltas(before, after)
    noload_p50 = st.noload.get("victim_ttft_p50_ms")
    run["extra"].update(
        victim_ttft_p50_ci_ms=bootstrap_ci(victim_ttft, 50, seed=pt.repeat),
        victim_ttft_p90_ci_ms=bootstrap_ci(victim_ttft, 90, seed=pt.repeat),
        vllm_deltas=deltas,
        noload_victim_ttft_p50_ms=noload_p50,
        flags=run_flags(
            sent=sent,
            failed=sum(r.status == "error" for r in records),
            timed_out=timeouts,
            workload=load.workload,
            prefix_hit_rate=deltas.get("prefix_hit_rate"),
            victim_p50_ms=vic.ttft_p50_ms,
            noload_p50_ms=noload_p50,
            at_most_cores=pt.cores == st.most_cores,
            checks=cfg.checks,
            api_server_cores=role_cores(run["extra"]["engine_cpu_by_process"], "api_server"),
            renderer_workers=run["extra"]["renderer_workers"],
        ),
    )
    return records


def new_session() -> str:
    """An id of this invocation: its UTC start and a random suffix."""
    import secrets

    return f"{now_utc()}-{secrets.token_hex(3)}"


def phase_salt(run_id: str) -> str:
    """Eight hex digits that differ between phases (the prefix cache's view of a phase)."""
    import hashlib

    return hashlib.sha256(run_id.encode()).hexdigest()[:8]


def noload_phase(
    cfg: BenchConfig, load: LoadSpec, target: Target, factory: PromptFactory, split: CoreSplit
) -> dict[str, Any]:
    """Victims alone, no attackers: the TTFT the engine gives when nothing competes."""
    if cfg.noload_s <= 0:
        return {}
    spec = replace(load, attacker_rps=0.0, duration_s=cfg.noload_s, seed=load.seed + 7)
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(split.client))
    try:
        phase = run_phase(plan_phase(spec, target, factory), target, min(load.timeout_s, 60.0))
    finally:
        os.sched_setaffinity(0, own)
    vic = summarise(phase.records, "victim")
    return {
        "victim_ttft_p50_ms": vic.ttft_p50_ms,
        "victim_ttft_p90_ms": vic.ttft_p90_ms,
        "victims": vic.sent,
        "victims_ok": vic.ok,
        "cores": len(split.engine),
        "duration_s": cfg.noload_s,
    }
