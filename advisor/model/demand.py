"""CPU demand of a vLLM server by process, fitted from measured per-process CPU (numpy only).

The demand in cores of one server (docs/model.md, "The capacity model"):

    tokens/s    = requests/s x prompt tokens             (every prompt token is tokenized)
    API server  = api_base + api_per_100k_tok_s x tokens/s / 1e5
    engine core = engine_core (default executor) or engine_core_mp x (idle + (1 - idle) x GPU
                  busy) (multiprocess executor), once per data-parallel replica (GPUs / TP)
    GPU workers = worker_busy per GPU with the multiprocess executor (always when TP > 1): each
                  worker busy-waits on its shared-memory queue
    demand      = API server + engine cores + GPU workers

With the multiprocess executor the engine core steps while its GPU has work and blocks on its
input queue when it has none: its CPU follows the GPU's busy share (nvidia-smi utilisation;
r = 0.94 over the bench's mp phases on lent H100 and H200 hosts, where it differed by 40%
between hosts at the same tokens/s: docs/model.md, scripts/demand-drivers). ``engine_core_mp`` is its cores with the GPU always busy (how a
serving job is sized: the default), ``engine_idle_share`` the share left on an idle GPU. The
in-process engine core (which also launches the GPU's work) showed no such relation between
hosts (docs/model.md): a constant.

Its parameters come from the CPU the bench measures per process at a series' most cores (where
no process waits for a core, so what it uses is what it needs): :func:`fit_demand` averages
each series' repeats, fits the API server's line over tokens/s with every series weighing 1,
the engine core's line over the GPU's busy share, and resamples whole series (and the repeats
within them) for intervals. A parameter no series measures keeps its prior (vLLM's guidance:
an API server and an engine core of about a core, one core per busy-waiting worker: the 2 + N
rule), and says so.

The serialised tokenizer: the API server's per-token cost runs on ``renderer_workers`` threads
(vLLM's ``--renderer-num-workers``, 1 by default); its utilisation per worker is
``api_per_100k_tok_s x tokens/s / 1e5 / renderer_workers``.

This module is read on the job-submit path: numpy only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

DEMAND_PARAMS: tuple[str, ...] = (
    "api_base",
    "api_per_100k_tok_s",
    "engine_core",
    "engine_core_mp",
    "worker_busy",
    "engine_idle_share",
)
# vLLM's guidance (at least 2 + N physical cores for N GPUs: an API server and an engine core
# of about a core together, one core per busy-waiting worker) and about 300k tokens/s per core
# for a fast BPE tokenizer; an engine core whose CPU does not depend on its GPU's work (share 1).
DEMAND_PRIOR: tuple[float, ...] = (0.5, 0.33, 1.0, 1.0, 1.0, 1.0)
PROCESSES: tuple[str, ...] = ("api_server", "engine_core", "gpu_worker")
EXECUTORS: tuple[str, ...] = ("uni", "mp")
# The tokenizer thread's utilisation from which its own queue (not the cores) sets TTFT: at 50%
# an M/D/1 queue's mean wait is half a tokenization, which at 30k-token prompts is already more
# than a victim's no-load TTFT (docs/model.md).
TOKENIZER_SATURATION_SHARE = 0.5
MIN_PART_CORES = 1e-3  # a part fitted at or below zero (noise) counts as this


def family(engine: str | None, gpus: int, tp: int, executor: str) -> str:
    """The configuration family (engine, GPUs, TP, executor): a recommendation's evidence is
    the calibration series of its family (docs/model.md)."""
    return f"{(engine or 'vllm').lower()}, {gpus} GPU(s), TP {tp}, {executor} executor"


def default_executor(tp: int) -> str:
    """vLLM's executor when none is given: in-process for one GPU, multiprocess for TP > 1."""
    return "mp" if tp > 1 else "uni"


@dataclass(frozen=True)
class DemandParts:
    """The cores each process of one server needs (point values, or arrays for many)."""

    api_server_cores: float
    engine_core_cores: float  # all replicas' engine cores together
    gpu_worker_cores: float  # all busy-waiting workers together
    demand_cores: float
    tokenizer_utilisation: float  # per renderer worker (1.0: one thread fully busy)

    def as_dict(self) -> dict[str, float]:
        return {
            "api_server": self.api_server_cores,
            "engine_core": self.engine_core_cores,
            "gpu_workers": self.gpu_worker_cores,
        }


def demand_arrays(
    values: Sequence[float] | np.ndarray,
    *,
    tokens_per_s: np.ndarray | float,
    gpus: np.ndarray | float,
    tp: np.ndarray | float,
    mp: np.ndarray | bool,
    renderer_workers: np.ndarray | float = 1.0,
    gpu_busy: np.ndarray | float = 1.0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(API server, engine cores in all, one worker's spin, workers, demand, tokenizer
    utilisation per renderer worker), elementwise; ``values`` in :data:`DEMAND_PARAMS` order."""
    a0, at, e_uni, e_mp, w, idle = (float(v) for v in values)
    tok = np.asarray(tokens_per_s, dtype=float) / 1e5
    gpus_a = np.asarray(gpus, dtype=float)
    mp_a = np.asarray(mp, dtype=bool) | (np.asarray(tp, dtype=float) > 1)
    replicas = np.maximum(np.floor(gpus_a / np.maximum(np.asarray(tp, dtype=float), 1.0)), 1.0)
    api = a0 + at * tok
    busy = np.clip(np.asarray(gpu_busy, dtype=float), 0.0, 1.0)
    engine = np.where(mp_a, e_mp * engine_activity(idle, busy), e_uni) * replicas
    spin = np.where(mp_a, w, 0.0)
    workers = np.where(mp_a, gpus_a, 0.0)
    demand = api + engine + spin * workers
    tokenizer = at * tok / np.maximum(np.asarray(renderer_workers, dtype=float), 1.0)
    return api, engine, spin, workers, demand, tokenizer


def demand_of(
    values: Sequence[float],
    *,
    load_rps: float,
    prompt_tokens: float,
    gpus: int,
    tp: int,
    executor: str,
    renderer_workers: int = 1,
    gpu_busy: float = 1.0,
) -> DemandParts:
    """The demand of one server configuration (see the module docstring)."""
    api, engine, spin, workers, demand, tok = demand_arrays(
        values,
        tokens_per_s=load_rps * prompt_tokens,
        gpus=gpus,
        tp=tp,
        mp=executor == "mp",
        renderer_workers=renderer_workers,
        gpu_busy=gpu_busy,
    )
    return DemandParts(
        float(api),
        float(engine),
        float(spin * workers),
        float(demand),
        float(tok),
    )


def engine_activity(idle_share: float, gpu_busy: np.ndarray | float) -> np.ndarray:
    """The share of its busy-GPU CPU an engine core uses at a GPU busy share."""
    return idle_share + (1.0 - idle_share) * np.asarray(gpu_busy, dtype=float)


def capacity_cores(demand_cores: float, utilisation_target: float, floor_cores: int) -> int:
    """The fewest whole cores ``c`` with ``demand <= u x c``, never below ``floor_cores``."""
    if not (0.0 < utilisation_target <= 1.0):
        raise ValueError(f"utilisation target must be in (0, 1], got {utilisation_target!r}")
    need = demand_cores / utilisation_target
    # a whole number of cores that equals the need exactly is enough (the 1e-9 absorbs rounding)
    return max(int(floor_cores), int(math.ceil(need - 1e-9)))


@dataclass(frozen=True)
class CpuObservation:
    """One process's measured CPU in one phase at a series' most cores."""

    series: str
    block: str  # the phase within the series (its start and repeat)
    process: str  # one of PROCESSES
    cores: float  # CPU seconds over wall seconds (per worker for GPU workers)
    tokens_per_s: float
    gpus: int
    tp: int
    executor: str
    gpu_busy: float = 1.0  # the series' GPU busy share at its most cores (1: not measured)


@dataclass(frozen=True)
class DemandFit:
    """Fitted demand parameters, their bootstrap and where each came from."""

    values: tuple[float, ...]  # DEMAND_PARAMS order
    bootstrap_values: tuple[tuple[float, ...], ...]
    sources: tuple[str, ...]  # per parameter: "measured: N series" or "prior: no series"
    series: int

    def interval(self, q: float = 0.9) -> dict[str, tuple[float, float]]:
        """Per parameter, the central ``q`` interval of the bootstrap (the value twice without)."""
        out = {}
        for i, name in enumerate(DEMAND_PARAMS):
            b = [v[i] for v in self.bootstrap_values]
            lo, hi = (
                (float(np.quantile(b, (1 - q) / 2)), float(np.quantile(b, (1 + q) / 2)))
                if b
                else (self.values[i], self.values[i])
            )
            out[name] = (lo, hi)
        return out


def _series_means(obs: Sequence[CpuObservation]) -> dict[tuple[str, str], tuple[float, float]]:
    """Per (series, process): mean cores over its phases and the series' tokens/s."""
    acc: dict[tuple[str, str], list[CpuObservation]] = {}
    for o in obs:
        acc.setdefault((o.series, o.process), []).append(o)
    return {
        k: (float(np.mean([o.cores for o in v])), float(v[0].tokens_per_s)) for k, v in acc.items()
    }


IDLE_GRID = np.linspace(0.0, 1.0, 101)


def _engine_fit(
    e_uni: Sequence[tuple[float, float]],
    e_mp: Sequence[tuple[float, float]],
    prior: Sequence[float],
) -> tuple[float, tuple[float, float], int]:
    """The multiprocess engine core's idle share and busy-GPU cores, least squares of
    ``cores = full x (idle + (1 - idle) x busy)`` (the idle share is the prior's unless the
    series' busy shares differ), and the in-process engine core's mean."""
    measured = len({round(b, 3) for _, b in e_mp}) >= 2
    grid = IDLE_GRID if measured else np.array([float(prior[5])])
    c = np.array([v for v, _ in e_mp])
    busy = np.array([b for _, b in e_mp])

    def full_sse(idle: float) -> tuple[float, float]:
        h = engine_activity(idle, busy)
        full = float(np.sum(c * h) / max(float(np.sum(h * h)), 1e-12))
        return full, float(np.sum((c - full * h) ** 2))

    idle = float(min(grid, key=lambda i: full_sse(float(i))[1])) if e_mp else float(prior[5])
    full_mp = full_sse(idle)[0] if e_mp else float(prior[3])
    uni = float(np.mean([v for v, _ in e_uni])) if e_uni else float(prior[2])
    return idle, (uni, full_mp), len(e_mp) if measured else 0


def _fit_once(
    obs: Sequence[CpuObservation], prior: Sequence[float]
) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """Point values and how many series informed each parameter."""
    means = _series_means(obs)
    by_series = {o.series: o for o in obs}
    api = [(tok, c) for (s, p), (c, tok) in means.items() if p == "api_server"]
    a0, at = prior[0], prior[1]
    if len({round(t, 6) for t, _ in api}) >= 2:
        x = np.array([t / 1e5 for t, _ in api])
        y = np.array([c for _, c in api])
        at, a0 = (float(v) for v in np.polyfit(x, y, 1))
        if at < 0:  # more tokens never cost less CPU: a flat line through the mean
            at, a0 = 0.0, float(np.mean(y))
        elif a0 < 0:
            a0 = 0.0
            at = float(np.sum(x * y) / np.sum(x * x))
    elif api:
        # one load level: its mean, with the prior's slope through it
        t, c = api[0][0], float(np.mean([c for _, c in api]))
        a0 = max(c - at * t / 1e5, 0.0)

    def engine(mp: bool) -> list[tuple[float, float]]:
        """(cores per replica, GPU busy share) of each series of the executor."""
        out = []
        for (s, p), (c, _) in means.items():
            o = by_series[s]
            is_mp = o.executor == "mp" or o.tp > 1
            if p == "engine_core" and is_mp == mp:
                replicas = max(o.gpus // max(o.tp, 1), 1)
                out.append((c / replicas, o.gpu_busy))
        return out

    e_uni, e_mp = engine(False), engine(True)
    idle, (full_uni, full_mp), idle_n = _engine_fit(e_uni, e_mp, prior)
    spin = [c for (s, p), (c, _) in means.items() if p == "gpu_worker"]
    raw = (
        a0,
        at,
        full_uni,
        full_mp,
        float(np.mean(spin)) if spin else prior[4],
        idle,
    )
    # every part is a positive quantity (the fit works on log-parameters)
    values = tuple(max(v, MIN_PART_CORES) for v in raw)
    api_n = len(api) if len({round(t, 6) for t, _ in api}) >= 2 else min(len(api), 1)
    return values, (api_n, api_n, len(e_uni), len(e_mp), len(spin), idle_n)


def fit_demand(
    obs: Sequence[CpuObservation],
    *,
    n_bootstrap: int = 200,
    seed: int = 0,
    prior: Sequence[float] = DEMAND_PRIOR,
) -> DemandFit:
    """Fit the demand parameters on CPU observations; bootstrap whole series (and within each,
    its phases) for intervals. Deterministic given ``seed``."""
    values, counts = _fit_once(obs, prior)
    sources = tuple(
        f"measured: {n} series" if n else "prior: no series measured it" for n in counts
    )
    series = sorted({o.series for o in obs})
    rng = np.random.default_rng(seed)
    by_series: dict[str, dict[str, list[CpuObservation]]] = {}
    for o in obs:
        by_series.setdefault(o.series, {}).setdefault(o.block, []).append(o)
    boots = []
    for _ in range(int(n_bootstrap) if series else 0):
        sample: list[CpuObservation] = []
        for n, s in enumerate(rng.choice(len(series), size=len(series))):
            blocks = by_series[series[int(s)]]
            names = sorted(blocks)
            for b in rng.choice(len(names), size=len(names)):
                # a resampled series is a new series (two draws of one are two points)
                sample.extend(
                    CpuObservation(
                        f"{o.series}#{n}",
                        o.block,
                        o.process,
                        o.cores,
                        o.tokens_per_s,
                        o.gpus,
                        o.tp,
                        o.executor,
                        o.gpu_busy,
                    )
                    for o in blocks[names[int(b)]]
                )
        boots.append(_fit_once(sample, prior)[0])
    return DemandFit(values, tuple(boots), sources, len(series))
