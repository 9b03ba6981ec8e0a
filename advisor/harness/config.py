"""What ``advisor bench run`` is asked to do (:class:`BenchConfig`) and the points it plans:
their run ids, the rows the CLI lists, the files it keeps beside its run records, the model's
label and size, and the check that every prompt fits the engine's context before any engine
starts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import UsageError
from advisor.harness.metrics import RunChecks
from advisor.harness.records import WORKLOADS, LoadSpec
from advisor.harness.results.series import EXECUTOR_FLAG, EXECUTORS, series_identity


@dataclass(frozen=True)
class BenchConfig:
    """What ``advisor bench run`` does. ``loads`` are run in order against each engine start."""

    model: str  # a model directory (or a name the engine resolves)
    cores: tuple[int, ...]
    loads: tuple[LoadSpec, ...]
    out_dir: Path
    engine: str = "vllm"
    engine_cmd: str | None = None  # template; see advisor.harness.serve.engine
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
    # phase (see advisor.harness.serve.pinning.repin); ``starts`` starts spread the repeats.
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
    # vLLM's --distributed-executor-backend (mp | uni); "" leaves vLLM's default (uni on one GPU)
    executor: str = ""
    # Repeats go on (after the first ``repeats``) until every curve's knee is resolved or this
    # many minutes of the run are spent; 0: exactly ``repeats``.
    budget_minutes: float = 0.0
    level_workloads: tuple[str, ...] = ()  # workloads run at light/medium/heavy demand levels
    levels: tuple[str, ...] = ("light", "medium", "heavy")
    tolerance: float = 0.10  # a core count within this of the most cores counts as enough

    def all_engine_args(self) -> tuple[str, ...]:
        """The engine's arguments with the executor option added."""
        if not self.executor:
            return self.engine_args
        return (*self.engine_args, EXECUTOR_FLAG, self.executor)

    def identity(self, env: dict[str, str]) -> dict[str, Any]:
        """The series identity every run of this configuration carries (see harness.series)."""
        return series_identity(self.engine, self.tp, self.all_engine_args(), env)


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


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-").lower() or "x"


def kept_path(cfg: BenchConfig, stem: str) -> Path:
    """``<out_dir>/[<tag>_]<stem>.json``: a file a run keeps beside its run records."""
    prefix = f"{cfg.tag}_" if cfg.tag else ""
    return Path(cfg.out_dir) / f"{prefix}{stem}.json"


def kept_ladder(
    cfg: BenchConfig, kind: str, load: LoadSpec, measure: Callable[[LoadSpec], dict[str, Any]]
) -> dict[str, Any]:
    """The ladder of ``load``'s workload kept as ``[<tag>_]<kind>-<workload>.json``; when there
    is none yet, ``measure(load)``'s, written there so that later starts and reruns run the
    same rates."""
    path = kept_path(cfg, f"{kind}-{slug(load.workload)}")
    if path.is_file():
        found: dict[str, Any] = json.loads(path.read_text())
        return found
    found = measure(load)
    path.write_text(json.dumps(found, indent=1))
    return found


def model_label(model: str) -> str:
    """The model's name in results: ``advisor-model.json``'s (make-model), else the folder's."""
    from advisor.harness.load.modeldir import MODEL_INFO

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
        *([f"x{cfg.executor}"] if cfg.executor else []),
        load.workload,
        f"a{load.attacker_rps:g}",
        f"t{load.attacker_tokens_min}-{load.attacker_tokens_max}",
        f"v{load.victim_rps:g}",
        f"d{load.duration_s:g}",
        f"r{repeat}",
    ]
    if cfg.tag:
        parts.insert(0, cfg.tag)
    return "_".join(slug(p) for p in parts)


def plan_points(cfg: BenchConfig, platform: str) -> list[Point]:
    if not cfg.cores:
        raise UsageError("--cores: give at least one core count, e.g. --cores 2,4,8")
    if cfg.repeats < 1:
        raise UsageError(f"--repeats {cfg.repeats}: need at least 1")
    if cfg.executor and cfg.executor not in EXECUTORS:
        raise UsageError(f"--executor {cfg.executor!r}: choose from {', '.join(EXECUTORS)}")
    if cfg.executor and any(a.split("=")[0] == EXECUTOR_FLAG for a in cfg.engine_args):
        raise UsageError(f"--executor and --engine-arg={EXECUTOR_FLAG}: give only one")
    if cfg.budget_minutes < 0:
        raise UsageError(f"--budget-minutes {cfg.budget_minutes:g}: need 0 or more")
    if cfg.budget_minutes and not cfg.repin:
        raise UsageError("--budget-minutes needs --repin (repeats are added to live starts)")
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


def is_done(path: Path, retry_failed: bool) -> bool:
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
