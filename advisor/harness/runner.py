"""``advisor bench run``: for each core count, start the engine pinned to that many cores, wait
until it is ready, warm it up, run every load phase (workloads x attacker rates x repeats)
against that one start, and write one self-describing JSON per phase; then stop the engine's
whole process group. Points whose JSON already exists are skipped, so a rerun continues where
an interrupted one stopped (``retry_failed`` also reruns points that did not end ``ok``).

A start that crashes or never becomes ready, an engine that dies during a phase (``crashed``)
and one that stops answering (``hung``: alive, yet every request of the phase timed out) are
recorded as such, with the end of the engine's log; they are results, not exceptions.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from advisor.errors import InputError, UsageError
from advisor.harness import engine as eng
from advisor.harness.loadgen import Target, plan_phase, run_phase, warmup
from advisor.harness.metrics import (
    RunChecks,
    bootstrap_ci,
    cpu_percent,
    parse_prometheus,
    run_flags,
    server_ttft_mean_ms,
    summarise,
    vllm_deltas,
)
from advisor.harness.pinning import (
    CoreSplit,
    PinningReport,
    available_cpus,
    check_pinning,
    choose_cores,
    format_cpu_list,
    gpu_numa_cpus,
    repin,
)
from advisor.harness.prompts import PromptFactory
from advisor.harness.records import SCHEMA, WORKLOADS, LoadSpec, Platform, RequestRecord, RunResult
from advisor.progress import ProgressFn, no_progress

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


@dataclass(frozen=True)
class BenchConfig:
    """What ``advisor bench run`` does. ``loads`` are run in order against each engine start."""

    model: str  # a model directory (or a name the engine resolves)
    cores: tuple[int, ...]
    loads: tuple[LoadSpec, ...]
    out_dir: Path
    engine: str = "vllm"
    engine_cmd: str | None = None  # template; see advisor.harness.engine
    engine_args: tuple[str, ...] = ()
    engine_env: tuple[tuple[str, str], ...] = ()
    tp: int = 1
    repeats: int = 3
    client_cores: int = 2
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port per start
    start_timeout_s: float = 900.0
    ready_path: str = "/health"
    warmup_requests: int = 3
    tokenize_probe: bool = True
    retry_failed: bool = False
    dry_run: bool = False
    tag: str = ""  # added to run ids, to tell apart series with the same settings
    model_name: str | None = None  # the name sent in requests (default: ``model``)
    # One engine start serves every core count: the live process tree is re-pinned before each
    # phase (see advisor.harness.pinning.repin); ``starts`` starts spread the repeats.
    repin: bool = False
    starts: int = 1
    order: str = "random"  # random | given: the order of core counts within a start
    order_seed: int = 0
    noload_s: float = 10.0  # victims alone after warm-up, at every start (0: skip)
    rate_fractions: tuple[float, ...] = ()  # find the rate first, then run at these shares of it
    rate_workloads: tuple[str, ...] = ()  # the workloads whose rate is found (others: as given)
    rate_ladder: tuple[float, ...] = (1, 2, 4, 6, 8, 12, 16, 24, 32)
    ladder_step_s: float = 8.0
    saturation_factor: float = 3.0  # ladder: victim p50 over no-load that counts as saturated
    checks: RunChecks = field(default_factory=RunChecks)


@dataclass(frozen=True)
class RunRow:
    """One point of a ``bench run``, as the CLI lists it."""

    run_id: str
    cores: int
    workload: str
    attacker_rps: float
    repeat: int
    status: str  # ok | crashed | hung | start-timeout | failed | skipped | planned
    victim_ttft_p50_ms: float | None
    attacker_ttft_p50_ms: float | None
    requests_timed_out: int | None
    path: str
    command: str = ""


@dataclass(frozen=True)
class Point:
    cores: int
    load: LoadSpec
    repeat: int
    run_id: str
    path: Path


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower() or "x"


def model_label(model: str) -> str:
    """The model's name in results: ``advisor-model.json``'s (make-model), else the folder's."""
    from advisor.harness.modeldir import MODEL_INFO

    try:
        name = json.loads((Path(model) / MODEL_INFO).read_text()).get("name")
        if isinstance(name, str) and name:
            return name
    except (OSError, ValueError, AttributeError):
        pass
    return Path(model.rstrip("/")).name or model


def run_id_for(cfg: BenchConfig, platform: str, cores: int, load: LoadSpec, repeat: int) -> str:
    parts = [
        cfg.engine,
        model_label(cfg.model),
        platform,
        f"tp{cfg.tp}",
        f"c{cores}",
        load.workload,
        f"a{load.attacker_rps:g}",
        f"t{load.attacker_tokens_min}-{load.attacker_tokens_max}",
        f"v{load.victim_rps:g}",
        f"d{load.duration_s:g}",
        f"r{repeat}",
    ]
    if cfg.tag:
        parts.insert(0, cfg.tag)
    return "_".join(_slug(p) for p in parts)


def plan_points(cfg: BenchConfig, platform: str) -> list[Point]:
    if not cfg.cores:
        raise UsageError("--cores: give at least one core count, e.g. --cores 2,4,8")
    if cfg.repeats < 1:
        raise UsageError(f"--repeats {cfg.repeats}: need at least 1")
    for load in cfg.loads:
        if load.workload not in WORKLOADS:
            raise UsageError(f"--workload {load.workload!r}: choose from {', '.join(WORKLOADS)}")
    pts = []
    for cores in cfg.cores:
        for load in cfg.loads:
            for rep in range(1, cfg.repeats + 1):
                rid = run_id_for(cfg, platform, cores, load, rep)
                pts.append(Point(cores, load, rep, rid, Path(cfg.out_dir) / f"{rid}.json"))
    return pts


def _is_done(path: Path, retry_failed: bool) -> bool:
    if not path.is_file():
        return False
    if not retry_failed:
        return True
    try:
        return json.loads(path.read_text())["run"]["status"] == "ok"
    except (OSError, ValueError, KeyError, TypeError):
        return False


def llama_params_b(model_dir: str) -> float | None:
    """Parameters (billions) of a Llama-style ``config.json``; None if it cannot be read."""
    try:
        c = json.loads((Path(model_dir) / "config.json").read_text())
        h, layers = int(c["hidden_size"]), int(c["num_hidden_layers"])
        heads, kv = (
            int(c["num_attention_heads"]),
            int(c.get("num_key_value_heads", c["num_attention_heads"])),
        )
        hd = int(c.get("head_dim") or h // heads)
        inter, vocab = int(c["intermediate_size"]), int(c["vocab_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    attn = h * heads * hd * 2 + 2 * h * kv * hd
    per_layer = attn + 3 * h * inter + 2 * h
    emb = vocab * h * (1 if c.get("tie_word_embeddings") else 2)
    return round((layers * per_layer + emb + h) / 1e9, 6)


def _now() -> str:
    return dt.datetime.now(dt.UTC).replace(tzinfo=None).isoformat(timespec="seconds")


def _engine_cpu_by_pid(pids: Sequence[int]) -> dict[int, tuple[str, float]]:
    """(process name, CPU seconds so far) of each live engine process."""
    out: dict[int, tuple[str, float]] = {}
    try:
        import psutil
    except ImportError:
        return out
    for pid in pids:
        try:
            proc = psutil.Process(pid)
            t = proc.cpu_times()
            out[pid] = (proc.name(), t.user + t.system)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return out


def process_role(name: str, is_root: bool) -> str:
    """What an engine process does, from its name: ``api_server`` (the first process, which
    tokenizes), ``engine_core`` (vLLM's scheduler loop; with one GPU it also drives the GPU),
    ``gpu_worker`` (one per tensor-parallel rank), else ``other``."""
    if "EngineCore" in name:
        return "engine_core"
    if "Worker" in name:
        return "gpu_worker"
    return "api_server" if is_root else "other"


def _per_process_cpu(
    before: dict[int, tuple[str, float]],
    after: dict[int, tuple[str, float]],
    wall_s: float,
    root_pid: int | None = None,
) -> list[dict[str, Any]]:
    """Each engine process's CPU use over the phase (CPU seconds, and percent of one core),
    busiest first."""
    rows = []
    for pid, (name, cpu1) in after.items():
        cpu0 = before.get(pid, (name, 0.0))[1]
        rows.append(
            {
                "pid": pid,
                "name": name,
                "role": process_role(name, pid == root_pid),
                "cpu_s": max(0.0, cpu1 - cpu0),
                "cpu_percent": cpu_percent(cpu0, cpu1, wall_s),
            }
        )
    return sorted(rows, key=lambda r: -(r["cpu_percent"] or 0.0))


def _write(path: Path, result: RunResult) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result.to_json(), indent=1))
    os.replace(tmp, path)


@dataclass
class _StartState:
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


def _base_run(cfg: BenchConfig, plat: Platform, pt: Point, st: _StartState) -> dict[str, Any]:
    load = pt.load
    gpus = cfg.tp if plat.gpu_count else 0
    env = {k: os.environ[k] for k in ENV_KNOBS if k in os.environ}
    env.update({k: v for k, v in os.environ.items() if k.startswith("VLLM_")})
    env.update(st.env)
    return {
        "run_id": pt.run_id,
        "started_at": _now(),
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
            "pinning_mode": "repin" if cfg.repin else "start",
            "noload": st.noload,
        },
    }


def _tokenize_share(
    st: _StartState, victim_p50: float | None, attacker_p50: float | None
) -> tuple[float | None, dict[str, Any]]:
    base = next((t for t in st.tokenize if t.get("setting") == "parallelism-on"), None)
    if not base:
        return None, {}
    v, a = base.get("victim_encode_ms"), base.get("attacker_encode_ms")
    share_v = v / victim_p50 if v is not None and victim_p50 else None
    share_a = a / attacker_p50 if a is not None and attacker_p50 else None
    return share_v, {"victim_tokenize_share": share_v, "attacker_tokenize_share": share_a}


def _pinning_dict(report: PinningReport) -> dict[str, Any]:
    return {
        "ok": report.ok,
        "processes": report.processes,
        "threads": report.threads,
        "violations": [asdict(v) for v in report.violations[:20]],
    }


def run_bench(cfg: BenchConfig, progress: ProgressFn = no_progress) -> list[RunRow]:
    """Run (or with ``dry_run`` only plan) every point; return one row per point."""
    from advisor.harness.platform import detect_platform

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
        return _run_repinned(cfg, plat, template, engine_env, avail, preferred, progress)
    rows: list[RunRow] = []
    by_cores: dict[int, list[Point]] = {}
    for p in _ordered(points, cfg):
        by_cores.setdefault(p.cores, []).append(p)

    for n_cores, pts in by_cores.items():
        split = choose_cores(n_cores, cfg.client_cores, avail, preferred)
        spec = _engine_spec(cfg, template, engine_env, split.engine, f"engine-c{n_cores}.log")
        todo = [p for p in pts if not _is_done(p.path, cfg.retry_failed)]
        for p in pts:
            if p not in todo:
                rows.append(_row_from_file(p, "skipped"))
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


def _engine_spec(
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
        extra_args=cfg.engine_args,
        env=engine_env,
        ready_path=cfg.ready_path,
        log_path=Path(cfg.out_dir) / log_name,
    )


def _target(cfg: BenchConfig, spec: eng.EngineSpec) -> Target:
    """Where the load goes: the started engine, under the model name requests carry."""
    return Target(
        spec.host,
        spec.port,
        cfg.model_name or cfg.model,
        ignore_eos=cfg.engine in IGNORE_EOS_ENGINES,
    )


def _row_of_run(p: Point, run: dict[str, Any]) -> RunRow:
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


def _row_from_file(p: Point, status: str) -> RunRow:
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
    st = _StartState(
        split.engine, split.client, split.client_shares_engine_cores, spec.argv, dict(spec.env)
    )
    st.most_cores = max(cfg.cores)
    model_dir = Path(cfg.model)
    factory = PromptFactory(model_dir, seed=todo[0].load.seed)
    first = todo[0].load
    if cfg.tokenize_probe:
        from advisor.harness.tokenize_probe import measure_tokenization

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
    target = _target(cfg, spec)
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
            st.pinning = _pinning_dict(check_pinning(engine.pids(), split.engine))
            st.noload = _noload(cfg, first, target, factory, split)
        for i, pt in enumerate(todo):
            run = _base_run(cfg, plat, pt, st)
            records: list[RequestRecord] = []
            if ready.status != "ok" or not engine.alive():
                run["status"] = ready.status if ready.status != "ok" else "crashed"
                run["extra"]["engine_exit_code"] = engine.exit_code()
                run["extra"]["engine_log_tail"] = engine.log_tail()
            else:
                records = _phase(cfg, pt, target, factory, engine, split, run, st)
            run["finished_at"] = _now()
            _write(pt.path, RunResult(run, tuple(records)))
            rows.append(_row_of_run(pt, run))
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


def _phase(
    cfg: BenchConfig,
    pt: Point,
    target: Target,
    factory: PromptFactory,
    engine: eng.EngineProcess,
    split: CoreSplit,
    run: dict[str, Any],
    st: _StartState,
) -> list[RequestRecord]:
    from advisor.harness.platform import GpuSampler

    load: LoadSpec = pt.load
    planned = plan_phase(
        replace(load, seed=load.seed + pt.repeat * 1000 + pt.cores), target, factory
    )
    before_text = eng.http_get_text(target.host, target.port, "/metrics")
    before = parse_prometheus(before_text)
    cpu_before = _engine_cpu_by_pid(engine.pids())
    own = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(split.client))
    t0 = time.monotonic()
    try:
        with GpuSampler() as gpu:
            phase = run_phase(planned, target, load.timeout_s)
            records, lag_p99_ms = phase.records, phase.send_lag_p99_ms
    finally:
        os.sched_setaffinity(0, own)
    wall = time.monotonic() - t0
    cpu_after = _engine_cpu_by_pid(engine.pids())
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
    share, shares = _tokenize_share(st, vic.ttft_p50_ms, att.ttft_p50_ms)
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
        pinning_after=_pinning_dict(pin) if pin is not None else None,
        engine_cpu_by_process=_per_process_cpu(cpu_before, cpu_after, wall, engine.pid),
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
        ),
    )
    return records


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


def max_model_len(cfg: BenchConfig) -> int | None:
    """The engine's context length: ``--max-model-len`` among the engine arguments, else the
    model's ``config.json`` ``max_position_embeddings``; None when neither says."""
    args = list(cfg.engine_args)
    for i, a in enumerate(args):
        if a.startswith("--max-model-len="):
            return int(a.split("=", 1)[1])
        if a == "--max-model-len" and i + 1 < len(args):
            return int(args[i + 1])
    try:
        c = json.loads((Path(cfg.model) / "config.json").read_text())
        return int(c["max_position_embeddings"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# Tokens the server adds to a prompt (BOS and the like) and our prompts' rounding.
PROMPT_MARGIN_TOKENS = 16


def check_context(cfg: BenchConfig) -> None:
    """Refuse, before any engine starts, a load whose prompt plus output cannot fit the
    engine's context: such requests fail with HTTP 400 and would thin the phase silently."""
    limit = max_model_len(cfg)
    if limit is None:
        return
    for load in cfg.loads:
        longest = max(
            load.attacker_tokens_max + load.attacker_output_tokens,
            load.victim_tokens + load.victim_output_tokens,
        )
        if longest + PROMPT_MARGIN_TOKENS > limit:
            raise UsageError(
                f"--attacker-tokens {load.attacker_tokens_min}:{load.attacker_tokens_max} with "
                f"{load.attacker_output_tokens} output tokens needs up to "
                f"{longest + PROMPT_MARGIN_TOKENS} tokens of context, but the engine's context "
                f"is {limit} (--max-model-len or config.json): lower the prompt length or "
                "raise --max-model-len"
            )


def _noload(
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


def find_rate(
    cfg: BenchConfig,
    load: LoadSpec,
    target: Target,
    factory: PromptFactory,
    split: CoreSplit,
    noload_p50_ms: float | None,
) -> dict[str, Any]:
    """Step the attacker rate up the ladder at the most cores until the engine saturates: the
    victims' median TTFT passes ``saturation_factor`` times its no-load value, the GPU is near
    full (90 %), or more than 1 % of requests fail. The highest rate below that is the knee of
    the load axis; the phases then run at stated fractions of it."""
    from advisor.harness.platform import GpuSampler

    steps: list[dict[str, Any]] = []
    best: float | None = None
    own = os.sched_getaffinity(0)
    for i, rate in enumerate(cfg.rate_ladder):
        spec = replace(load, attacker_rps=rate, duration_s=cfg.ladder_step_s, seed=load.seed + i)
        planned = plan_phase(spec, target, factory)
        os.sched_setaffinity(0, set(split.client))
        try:
            with GpuSampler() as gpu:
                phase = run_phase(planned, target, min(load.timeout_s, 30.0))
        finally:
            os.sched_setaffinity(0, own)
        vic = summarise(phase.records, "victim")
        sent = len(phase.records)
        bad = sum(r.status != "ok" for r in phase.records)
        reasons = []
        if vic.ttft_p50_ms is None or (
            noload_p50_ms and vic.ttft_p50_ms > cfg.saturation_factor * noload_p50_ms
        ):
            reasons.append("victim TTFT")
        if gpu.mean_percent is not None and gpu.mean_percent >= 90.0:
            reasons.append("GPU")
        if sent and bad / sent > cfg.checks.max_failed_share:
            reasons.append("failed requests")
        steps.append(
            {
                "attacker_rps": rate,
                "victim_ttft_p50_ms": vic.ttft_p50_ms,
                "gpu_util_percent": gpu.mean_percent,
                "requests": sent,
                "failed": bad,
                "saturated_by": reasons,
            }
        )
        if reasons:
            break
        best = rate
    base = best if best is not None else cfg.rate_ladder[0]
    return {
        "schema": "advisor.bench.rate/1",
        "workload": load.workload,
        "cores": len(split.engine),
        "noload_victim_ttft_p50_ms": noload_p50_ms,
        "saturation_factor": cfg.saturation_factor,
        "steps": steps,
        "saturation_rps": best,
        "fractions": list(cfg.rate_fractions),
        "rates": [round(f * base, 2) for f in cfg.rate_fractions],
        "saturated_below_ladder": best is None,
        "ladder_top_unsaturated": bool(steps) and not steps[-1]["saturated_by"],
    }


def _run_repinned(
    cfg: BenchConfig,
    plat: Platform,
    template: Any,
    engine_env: dict[str, str],
    avail: tuple[int, ...],
    preferred: tuple[int, ...],
    progress: ProgressFn,
) -> list[RunRow]:
    """Every core count against ``cfg.starts`` engine starts, re-pinning the live engine before
    each phase; repeat r runs in start ``(r - 1) % starts``; core counts in random order."""
    most = max(cfg.cores)
    split = choose_cores(most, cfg.client_cores, avail, preferred)
    Path(cfg.out_dir).mkdir(parents=True, exist_ok=True)
    loads = cfg.loads
    rows: list[RunRow] = []
    for s in range(cfg.starts):
        reps = [r for r in range(1, cfg.repeats + 1) if (r - 1) % cfg.starts == s]
        if not reps:
            continue
        spec = _engine_spec(cfg, template, engine_env, split.engine, f"engine-start{s + 1}.log")
        st = _StartState(
            split.engine, split.client, split.client_shares_engine_cores, spec.argv, dict(spec.env)
        )
        st.start_no, st.most_cores = s + 1, most
        first = loads[0]
        factory = PromptFactory(Path(cfg.model), seed=first.seed + s)
        target = _target(cfg, spec)
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
                st.pinning = _pinning_dict(check_pinning(engine.pids(), split.engine))
                st.noload = _noload(cfg, first, target, factory, split)
                if cfg.rate_fractions and cfg.rate_workloads:
                    loads = _scaled_loads(cfg, loads, target, factory, split, st, s)
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
                for r in reps
            ]
            todo = [
                p for p in _ordered(points, cfg, salt=s) if not _is_done(p.path, cfg.retry_failed)
            ]
            rows.extend(_row_from_file(p, "skipped") for p in points if p not in todo)
            progress(label, 0, len(todo))
            for i, pt in enumerate(todo):
                cores_now = split.engine[: pt.cores]
                now = CoreSplit(cores_now, split.client, split.client_shares_engine_cores)
                st.cores = cores_now
                run = _base_run(cfg, plat, pt, st)
                records: list[RequestRecord] = []
                if ready.status != "ok" or not engine.alive():
                    run["status"] = ready.status if ready.status != "ok" else "crashed"
                    run["extra"]["engine_exit_code"] = engine.exit_code()
                    run["extra"]["engine_log_tail"] = engine.log_tail()
                else:
                    run["extra"]["threads_repinned"] = repin(engine.pids(), cores_now)
                    records = _phase(cfg, pt, target, factory, engine, now, run, st)
                run["finished_at"] = _now()
                _write(pt.path, RunResult(run, tuple(records)))
                rows.append(_row_of_run(pt, run))
                progress(label, i + 1, len(todo))
            st.survivors = engine.stop()
    return rows


def _scaled_loads(
    cfg: BenchConfig,
    loads: tuple[LoadSpec, ...],
    target: Target,
    factory: PromptFactory,
    split: CoreSplit,
    st: _StartState,
    start: int,
) -> tuple[LoadSpec, ...]:
    """The loads at ``rate_fractions`` of the rate found at the most cores, one ladder per
    workload; the ladder is kept as ``rate-<workload>.json`` and reused by later starts and
    reruns, so every start runs the same rates."""
    out: list[LoadSpec] = [ld for ld in loads if ld.workload not in cfg.rate_workloads]
    scaled = {ld.workload: ld for ld in loads if ld.workload in cfg.rate_workloads}
    for load in scaled.values():
        prefix = f"{cfg.tag}_" if cfg.tag else ""
        path = Path(cfg.out_dir) / f"{prefix}rate-{_slug(load.workload)}.json"
        if path.is_file():
            found = json.loads(path.read_text())
        else:
            found = find_rate(
                cfg, load, target, factory, split, st.noload.get("victim_ttft_p50_ms")
            )
            found["engine_start"] = start + 1
            path.write_text(json.dumps(found, indent=1))
        out.extend(replace(load, attacker_rps=r) for r in found["rates"] if r > 0)
    return tuple(out)
