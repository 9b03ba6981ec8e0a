"""Recommendations of cores per GPU: for one job (the job-submit path) and for a partition's
observed job mix, each with the predicted TTFT gain and the cost of the extra cores.

For a job (:func:`recommend_job`): the total cores ``max(knee, 2 + N, measured knee)`` as
whole cores per GPU (:func:`sufficient_cores`): the model's knee (fewest cores whose predicted
TTFT is within ``tolerance`` of ample cores), vLLM's floor of 2 + N cores for N GPUs, and the
knee measured in a series of the same configuration when there is one; capped by what the
node type can give (the ``nodes`` table when a database is there, else the reference cloud
instance's vCPUs per GPU). With it: the regime, the evidence (nearest measured series) and,
where the current cores are pathological, words and a measured range instead of a number.
It needs no database, and imports numpy but not scikit-learn or DuckDB unless a database file
exists: the model's parameters come from JSON (:mod:`advisor.slowdown`).

For a partition (:func:`recommend_partitions`): from the jobs in the database, per (partition,
GPU family), the recommended ``DefCpuPerGPU``, the jobs and GPU-hours below it, the GPU time
estimated lost to CPU starvation, and what fixing it costs per month. Distribution figures
(jobs, GPU-hours, P25/P50, shares below) are computed from one pass over the jobs
(``sql/recommend/job_mix.sql``, the job mix by partition, GPU family, CPUs and GPUs) with the
definitions of :mod:`advisor.ratios` (the same eligible jobs, job-weighted percentiles with
linear interpolation); a test checks they equal :func:`advisor.ratios.ratio_summary`'s. Calling
that too would read every job a second time.

The curve, the price book and the database connection come once per run through a
:class:`RecommendContext`; the lost GPU time of jobs below a recommendation is
:func:`starvation`, shared with the monthly report.

Assumptions (also returned with every answer):

- the model predicts the slowdown of TTFT of an LLM server (vLLM-like, attacker/victim load);
  a job's GPU time lost is its GPU-hours x (1 - slowdown(recommended) / slowdown(its cores)):
  as if every GPU job were such a server, which overstates it for training and batch jobs;
- Slurm's default for a job that asks for none is one CPU per task, i.e. 1/GPUs per GPU for a
  single-task job;
- costs: extra vCPU-hours x the per-vCPU price, against the job's GPU share of the reference
  instance (see :mod:`advisor.pricing`).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor import slowdown
from advisor.dbpath import resolve_db_path
from advisor.errors import UsageError
from advisor.pricing import CostDelta, PriceBook, cost_delta, load_pricing
from advisor.progress import ProgressFn, no_progress
from advisor.quantiles import job_percentiles_by_group

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

DEFAULT_MAX_CPUS_PER_GPU = 64
DAYS_PER_MONTH = 30.4375


def parse_model_size(text: str | float | None) -> float | None:
    """Model size in billions of parameters from ``8b``, ``70B``, ``14.7`` or ``1.5t``."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        s = text.strip().lower()
        mult = 1.0
        if s.endswith("b"):
            s = s[:-1]
        elif s.endswith("t"):
            s, mult = s[:-1], 1000.0
        elif s.endswith("m"):
            s, mult = s[:-1], 0.001
        try:
            value = float(s) * mult
        except ValueError:
            raise UsageError(
                f"model size {text!r} is not a size like 8b, 70b or 14.7 (billions of parameters)"
            ) from None
    if not math.isfinite(value) or value <= 0:
        raise UsageError(f"model size must be positive, got {text!r}")
    return value


@dataclass(frozen=True)
class Workload:
    """The serving load a recommendation assumes (None: the model's reference).

    ``prefix_hit`` (0..1) is the share of prompt tokens served from the prefix cache; without
    it, the named ``workload`` (``tokenize-heavy``, ``unique``, ``shared-prefix``) gives it, else
    0 (unique prompts). ``renderer_workers`` are the API server's tokenizer threads (vLLM's
    default: 1).
    """

    model_params_b: float | None = None
    load_rps: float | None = None
    prompt_tokens: int | None = None
    prefix_hit: float | None = None
    workload: str | None = None
    renderer_workers: int | None = None
    engine_version: str | None = None

    def hit(self) -> float:
        return slowdown.prefix_hit_of(self.workload, self.prefix_hit)

    def renderers(self) -> float | None:
        """Renderer workers: given, else from a bench workload name (``.../rw4``), else None."""
        if self.renderer_workers is not None:
            return float(self.renderer_workers)
        return slowdown.renderer_workers_of(self.workload)

    def check(self) -> None:
        """Raise UsageError for a value no server can have."""
        if self.prefix_hit is not None and not 0.0 <= self.prefix_hit <= 1.0:
            raise UsageError(f"--prefix-hit must be between 0 and 1, got {self.prefix_hit}")
        if (
            self.workload is not None
            and self.workload.split("/")[0] not in slowdown.WORKLOAD_PREFIX_HIT
        ):
            raise UsageError(
                f"--workload {self.workload!r}: choose one of "
                f"{', '.join(slowdown.WORKLOAD_PREFIX_HIT)} (or give --prefix-hit)"
            )
        if self.renderer_workers is not None and self.renderer_workers < 1:
            raise UsageError(f"--renderer-workers must be at least 1, got {self.renderer_workers}")
        for name, v in (("--rps", self.load_rps), ("--prompt-tokens", self.prompt_tokens)):
            if v is not None and v <= 0:
                raise UsageError(f"{name} must be positive, got {v}")


@dataclass(frozen=True)
class JobQuery:
    """What to recommend for: a job's GPUs, its workload, what it has now, and the sources."""

    gpu_type: str
    gpus: int
    workload: Workload = Workload()
    current_cpus_per_gpu: float | None = None  # None: Slurm's default, one CPU per task
    tolerance: float = 0.10
    ample_ttft_ms: float | None = None  # TTFT with ample cores, to report absolute TTFTs
    max_cpus_per_gpu: int | None = None  # a cap given by hand (beats the node inventory)
    partition: str | None = None  # restricts the node inventory used for the cap
    db: str | None = None
    pricing_file: str | None = None
    model_file: str | None = None
    tp: int | None = None  # tensor-parallel size (None: every GPU of the job)


@dataclass(frozen=True)
class JobRecommendation:
    """A ``--cpus-per-gpu`` recommendation with its predicted gain and cost.

    Slowdowns are TTFT over TTFT with ample cores; the speedup is TTFT now over TTFT with the
    recommendation. Where the current cores are pathological (CPU demand above them), no
    slowdown is predicted (``slowdown_now`` is None): ``pathological_note`` says so in words
    with the measured range, and ``predicted_speedup`` is the measured lower bound
    (``speedup_is_lower_bound``). Interval upper ends are None (JSON null) when unbounded.
    """

    gpu_type: str
    gpus: int
    tp: int
    cpus_per_gpu: int
    cores_total: int
    knee_cores: int | None  # fewest total cores within the tolerance of ample (model)
    measured_knee_cores: int | None  # of the measured series of this configuration, if any
    knee_source: str  # what set cores_total: model, 2 + N floor, or measured: <series>
    knee_cores_interval: tuple[int | None, int | None]  # over the bootstrap refits
    floor_cores: int  # vLLM's 2 + N
    regime: str  # at the current allocation: pathological (CPU-bound past saturation),
    # cpu-bound (TTFT more than the tolerance above ample cores) or gpu-bound
    load_regime: str  # gpu-bound when the floor suffices, else cpu-bound
    demand_cores: float
    demand_parts: dict[str, float]
    pathological_below_cores: int | None  # None: no core count helps (tokenizer saturated)
    pathological_note: str | None
    slurm_option: str
    current_cpus_per_gpu: float
    current_cores_total: float
    max_cpus_per_gpu: int
    max_cpus_per_gpu_source: str
    tolerance: float
    slowdown_now: float | None
    slowdown_now_interval: tuple[float | None, float]
    slowdown_recommended: float | None
    slowdown_recommended_interval: tuple[float | None, float]
    pathological_now: bool
    ttft_ms_now: float | None
    ttft_ms_recommended: float | None
    predicted_speedup: float
    speedup_interval: tuple[float, float]
    speedup_is_lower_bound: bool
    extra_vcpus: float
    usd_per_vcpu_hour: float
    usd_per_hour_delta: float
    gpu_share_usd_per_hour: float
    cost_delta_pct: float
    cost_delta_pct_band: tuple[float, float]  # over every per-vCPU price in the price book
    instance: str
    evidence: tuple[dict[str, Any], ...]
    validation: dict[str, Any]
    warnings: tuple[str, ...]
    assumptions: dict[str, Any] = field(default_factory=dict)


class RecommendContext:
    """What every recommendation of one run reads, loaded once: the fitted curve, the price
    book and the database (opened read-only on first use, so that the job-submit path imports
    DuckDB only when there is a database).

    Use as a context manager (``with RecommendContext.open(db=...) as ctx:``) or call
    :meth:`close`; a :class:`JobQuery`'s or :class:`PartitionQuery`'s own ``db``,
    ``pricing_file`` and ``model_file`` are not read when a context is given.
    """

    def __init__(
        self,
        params: slowdown.CurveParams,
        book: PriceBook,
        db_path: Path,
        model_file: str | None = None,
    ) -> None:
        self.params = params
        self.book = book
        self.db_path = db_path  # resolved; it may not exist
        self.model_file = model_file
        self._con: Any = None
        self._own_con = True  # False: the caller's connection, left open
        self._sufficient: dict[tuple[Any, ...], tuple[int, bool]] = {}

    @classmethod
    def open(
        cls,
        *,
        db: str | os.PathLike[str] | None = None,
        fit_file: str | None = None,
        pricing_file: str | None = None,
        con: Any = None,
    ) -> RecommendContext:
        """Load the curve (``fit_file``, else ``$ADVISOR_MODEL``, else the shipped one) and
        the prices (``pricing_file`` over the built-in ones) for the database ``db``; ``con``,
        an open connection to it, is used instead of opening one (and left open)."""
        ctx = cls(
            slowdown.load_params(fit_file),
            load_pricing(pricing_file),
            resolve_db_path(db),
            fit_file,
        )
        ctx._con, ctx._own_con = con, con is None
        return ctx

    @property
    def has_db(self) -> bool:
        return self.db_path.exists()

    def connection(self) -> Any:
        """The read-only connection to the database (opened once), or None without one."""
        if self._con is None and self.has_db:
            from advisor.store import connect

            self._con = connect(self.db_path, read_only=True)
        return self._con

    def smallest_sufficient(
        self, *, gpus: int, platform: str | None, workload: Workload, tolerance: float, cap: int
    ) -> tuple[int, bool]:
        """:func:`smallest_sufficient` on this context's curve, each distinct question asked
        once: partitions and clusters share GPU types, typical GPU counts and caps, and the
        answer depends on nothing else."""
        k = (gpus, platform, workload, tolerance, cap)
        if k not in self._sufficient:
            self._sufficient[k] = smallest_sufficient(
                self.params,
                gpus=gpus,
                platform=platform,
                workload=workload,
                tolerance=tolerance,
                cap=cap,
            )
        return self._sufficient[k]

    def close(self) -> None:
        if self._con is not None and self._own_con:
            self._con.close()
        self._con = None

    def __enter__(self) -> RecommendContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def node_cap(ctx: RecommendContext, gpu_type: str, partition: str | None) -> tuple[int, int] | None:
    """(cores per GPU every node of the type can give, nodes) from the inventory, or None."""
    con = ctx.connection()
    if con is None:
        return None
    from advisor.store import query

    row = con.execute(
        query("recommend/node_cap"), {"gpu_type": gpu_type, "partition": partition}
    ).fetchone()
    if not row or row[0] is None or int(row[1]) == 0:
        return None
    return int(row[0]), int(row[1])


def _template(gpus: float, platform: str | None, w: Workload, tp: int | None = None) -> list[float]:
    return slowdown.feature_row(
        1.0,
        gpus=gpus,
        model_params_b=w.model_params_b,
        load_rps=w.load_rps,
        prompt_tokens=w.prompt_tokens,
        platform=platform,
        tp=tp,
        prefix_hit=w.hit(),
        renderer_workers=w.renderers(),
    )


def _rows(
    params: slowdown.CurveParams,
    cores: Sequence[float],
    gpus: float,
    platform: str | None,
    w: Workload,
    tp: int | None = None,
) -> np.ndarray:
    t = _template(gpus, platform, w, tp)
    return np.array([[float(c), *t[1:]] for c in cores])


def floor_cores(gpus: int) -> int:
    """vLLM's guidance: at least 2 + N physical cores for N GPUs (API server, engine core, one
    per GPU worker)."""
    return 2 + int(gpus)


@dataclass(frozen=True)
class Sufficient:
    """The cores one configuration needs: the model's knee, the floor, what to ask for."""

    cpus_per_gpu: int
    knee_total: int | None  # None: not reached within the cap
    reached: bool
    measured_knee_total: int | None = None  # of a measured series of this configuration
    measured_series: str | None = None


def sufficient_cores(
    params: slowdown.CurveParams,
    *,
    gpus: int,
    platform: str | None,
    workload: Workload,
    tolerance: float,
    cap: int,
    tp: int | None = None,
) -> Sufficient:
    """Whole cores per GPU to ask for: the knee (fewest total cores within ``tolerance`` of
    ample cores), never below the 2 + N floor nor below the knee measured in a series of the
    same configuration (within :data:`NEAR_DISTANCE`), at most ``cap`` per GPU. The one
    function behind a job's ``--cpus-per-gpu``, a partition's ``DefCpuPerGPU`` and the
    policy's rules."""
    cap = max(int(cap), 1)
    knee = slowdown.knee_total_cores(
        params, _template(gpus, platform, workload, tp), tolerance, max_total=cap * gpus
    )
    near = measured_knee_near(evidence_for(params, platform=platform, gpus=gpus, workload=workload))
    total = max(knee if knee is not None else cap * gpus, floor_cores(gpus), near[0] if near else 0)
    per_gpu = min(math.ceil(total / gpus), cap)
    return Sufficient(
        per_gpu, knee, knee is not None, near[0] if near else None, near[1] if near else None
    )


def smallest_sufficient(
    params: slowdown.CurveParams,
    *,
    gpus: float,
    platform: str | None,
    workload: Workload,
    tolerance: float,
    cap: int,
) -> tuple[int, bool]:
    """(cores per GPU, reached) of :func:`sufficient_cores` (``reached`` is False when even
    ``cap`` is not enough)."""
    s = sufficient_cores(
        params,
        gpus=max(int(round(gpus)), 1),
        platform=platform,
        workload=workload,
        tolerance=tolerance,
        cap=cap,
    )
    return s.cpus_per_gpu, s.reached


def _canonical(gpu_type: str) -> str:
    from advisor.gputypes import canonical_gpu_type

    return canonical_gpu_type(gpu_type) or gpu_type


def evidence_for(
    params: slowdown.CurveParams,
    *,
    platform: str | None,
    gpus: int,
    workload: Workload,
    top: int = 3,
) -> list[dict[str, Any]]:
    """The measured series nearest to the request (from the fitted model's record of them),
    each with its ``distance``: the sum of |log2| ratios of GPUs, model size, load, prompt
    tokens and renderer workers, twice the prefix-hit difference, 1 for another platform and
    0.5 for another engine version (0: the same configuration)."""

    def l2(a: float | None, b: float | None, ref: float) -> float:
        return abs(math.log2((a or ref) / (b or ref)))

    out = []
    for s in params.meta.get("series") or []:
        if len(s.get("cores") or []) < 2 and s.get("source_kind") != "paper":
            continue
        d = (
            l2(s.get("gpus"), gpus, slowdown.REF_GPUS)
            + l2(s.get("model_params_b"), workload.model_params_b, slowdown.REF_MODEL_PARAMS_B)
            + l2(s.get("load_rps"), workload.load_rps, slowdown.REF_LOAD_RPS)
            + l2(s.get("prompt_tokens"), workload.prompt_tokens, slowdown.REF_PROMPT_TOKENS)
            + 2.0 * abs(float(s.get("prefix_hit") or 0.0) - workload.hit())
            + l2(slowdown.renderer_workers_of(s.get("workload")), workload.renderers(), 1.0)
            + (0.0 if s.get("platform") == platform else 1.0)
            + (
                0.5
                if workload.engine_version
                and s.get("engine_version")
                and s.get("engine_version") != workload.engine_version
                else 0.0
            )
        )
        out.append({**s, "distance": round(d, 3)})
    out.sort(key=lambda e: e["distance"])
    return out[:top]


NEAR_DISTANCE = 0.5  # evidence this close is the same configuration, give or take noise


def measured_knee_near(evidence: Sequence[dict[str, Any]]) -> tuple[int, str] | None:
    """(measured knee in total cores, series) of the nearest series within
    :data:`NEAR_DISTANCE` that measured a knee, or None."""
    for e in evidence:
        if e.get("distance", math.inf) <= NEAR_DISTANCE and e.get("measured_knee_cores"):
            return int(math.ceil(float(e["measured_knee_cores"]))), str(e["series"])
    return None


def _measured_below(evidence: Sequence[dict[str, Any]]) -> tuple[float, float, str] | None:
    """(low, high, series) of the slowdowns measured below the knee of the nearest series
    that measured any (a published speedup: its fewest-cores value)."""
    for e in evidence:
        cores, slows = e.get("cores") or [], e.get("slowdowns") or []
        knee = e.get("measured_knee_cores") or (max(cores) if cores else 0)
        vals = [s for c, s in zip(cores, slows, strict=False) if c < knee and s > 1.0]
        if vals:
            return min(vals), max(vals), str(e["series"])
    return None


def recommend_job(q: JobQuery, ctx: RecommendContext | None = None) -> JobRecommendation:
    """The ``--cpus-per-gpu`` for one job: the knee, never below the floor (see the module
    doc). Without ``ctx``, the query's own files are loaded for this one call."""
    if q.gpus < 1:
        raise UsageError(f"--gpus must be at least 1, got {q.gpus}")
    if q.tp is not None and not 1 <= q.tp <= q.gpus:
        raise UsageError(f"--tp must be between 1 and --gpus ({q.gpus}), got {q.tp}")
    if not 0 < q.tolerance < 10:
        raise UsageError(f"--tolerance must be in (0, 10), got {q.tolerance}")
    if q.current_cpus_per_gpu is not None and q.current_cpus_per_gpu <= 0:
        raise UsageError(f"--current-cpus-per-gpu must be positive, got {q.current_cpus_per_gpu}")
    q.workload.check()
    if ctx is None:
        with RecommendContext.open(
            db=q.db, fit_file=q.model_file, pricing_file=q.pricing_file
        ) as own:
            return recommend_job(q, own)
    params, book = ctx.params, ctx.book
    platform = _canonical(q.gpu_type)
    instance = book.instance_for(platform)
    warnings = slowdown.coverage_warnings(params, platform=platform, gpus=q.gpus)
    tp = q.tp or q.gpus

    if q.max_cpus_per_gpu is not None:
        if q.max_cpus_per_gpu < 1:
            raise UsageError(f"--max-cpus-per-gpu must be at least 1, got {q.max_cpus_per_gpu}")
        cap, cap_source = q.max_cpus_per_gpu, "--max-cpus-per-gpu"
    else:
        inv = node_cap(ctx, platform, q.partition)
        if inv is not None:
            cap, n = inv
            cap_source = f"node inventory: {n} {platform} node(s)" + (
                f" in partition {q.partition}" if q.partition else ""
            )
        else:
            cap = int(instance.vcpus_per_gpu)
            cap_source = (
                f"no node inventory; {instance.name} gives {instance.vcpus_per_gpu:g} vCPUs per GPU"
            )
    cap = max(int(cap), 1)

    current = q.current_cpus_per_gpu if q.current_cpus_per_gpu is not None else 1.0 / q.gpus
    suff = sufficient_cores(
        params,
        gpus=q.gpus,
        platform=platform,
        workload=q.workload,
        tolerance=q.tolerance,
        cap=cap,
        tp=tp,
    )
    rec = suff.cpus_per_gpu
    floor = floor_cores(q.gpus)
    total_wanted = max(suff.knee_total or 0, floor, suff.measured_knee_total or 0)
    knee_source = (
        "measured: " + str(suff.measured_series)
        if suff.measured_knee_total
        and suff.measured_knee_total == total_wanted
        and suff.measured_knee_total > (suff.knee_total or 0)
        else "2 + N floor"
        if floor == total_wanted and floor > (suff.knee_total or 0)
        else "model"
    )
    template = _template(q.gpus, platform, q.workload, tp)
    knees = slowdown.knees_total_cores(
        params, template, q.tolerance, cap * q.gpus, params.bootstrap_values
    )
    if knees:
        ks = np.array([math.inf if k is None else k for k in knees], dtype=float)
        lo_k, hi_k = np.quantile(ks, 0.05, method="lower"), np.quantile(ks, 0.95, method="higher")
        knee_interval: tuple[int | None, int | None] = (
            None if math.isinf(lo_k) else int(lo_k),
            None if math.isinf(hi_k) else int(hi_k),
        )
    else:
        knee_interval = (suff.knee_total, suff.knee_total)
    if not suff.reached:
        warnings.append(
            f"even {cap} cores per GPU (the most the node type gives) are predicted "
            f"more than {q.tolerance:.0%} slower than ample cores"
        )
    if floor > cap * q.gpus:
        warnings.append(
            f"the node type gives {cap} cores per GPU, below vLLM's 2 + N floor "
            f"({floor} cores for {q.gpus} GPUs)"
        )
    X = _rows(params, [current, rec], q.gpus, platform, q.workload, tp)
    mech = slowdown.mechanism(params.values, X, params.pole_exponent)
    pred = slowdown.predict(params, X)
    ratio_boot = slowdown.bootstrap_curves(params, X)
    demand = float(mech.demand_cores[0])
    parts = {
        "api_server": float(mech.api_server_cores[0]),
        "engine_core": float(mech.engine_core_cores[0]),
        "gpu_workers": float(mech.worker_cores[0]) * q.gpus,
    }
    tokenizer = float(mech.tokenizer_utilisation[0])
    evidence = evidence_for(params, platform=platform, gpus=q.gpus, workload=q.workload)
    patho_now = bool(mech.pathological[0])
    patho_below: int | None = int(math.floor(demand)) + 1
    note = None
    renderers = int(q.workload.renderers() or 1)
    if tokenizer >= 1.0:
        patho_below = None
        warnings.append(
            f"the API server's tokenizer is saturated ({tokenizer:.2f} of {renderers} renderer "
            "worker(s) busy): no number of cores helps; run more renderer workers (vLLM's "
            "renderer_num_workers) or fewer tokens per second"
        )
    elif tokenizer >= 0.7:
        warnings.append(
            f"the API server's tokenizer is {tokenizer:.0%} busy ({renderers} renderer "
            "worker(s)): its queue, not the cores, sets TTFT near this load; more renderer "
            "workers (vLLM's renderer_num_workers) lift it"
        )
    if patho_now:
        measured = _measured_below(evidence)
        where = f"below {patho_below} cores" if patho_below is not None else "at any core count"
        note = (
            f"pathological {where}: the CPU demand (about {demand:.1f} cores: API server "
            f"{parts['api_server']:.1f}, engine core {parts['engine_core']:.1f}, GPU workers "
            f"{parts['gpu_workers']:.1f}) exceeds the {current * q.gpus:g} given; queues "
            "grow without bound and requests time out"
        )
        if measured is not None:
            note += (
                f"; the nearest measured series ({measured[2]}) was {measured[0]:.2f}x to "
                f"{measured[1]:.2f}x slower than with ample cores below its knee"
            )
        warnings.append(note)
    slow_now = None if patho_now else float(mech.slowdown[0])
    slow_rec = None if mech.pathological[1] else float(mech.slowdown[1])
    if patho_now:
        measured = _measured_below(evidence)
        speed = measured[0] if measured is not None else 1.0
        s_lo, s_hi, lower_bound = speed, math.inf, True
    else:
        speed = float(mech.slowdown[0] / mech.slowdown[1])
        if ratio_boot.shape[0]:
            with np.errstate(invalid="ignore"):
                r = np.nan_to_num(ratio_boot[:, 0] / ratio_boot[:, 1], nan=np.inf, posinf=1e300)
            s_lo = float(min(np.quantile(r, 0.05), speed))
            s_hi = float(max(np.quantile(r, 0.95), speed))
            s_hi = math.inf if s_hi >= 1e299 else s_hi
        else:
            s_lo = s_hi = speed
        s_lo = max(s_lo, min(1.0, speed))
        lower_bound = False
    bound = 1.0 + q.tolerance
    regime = (
        "pathological" if patho_now else "cpu-bound" if (slow_now or 1.0) > bound else "gpu-bound"
    )
    load_regime = "gpu-bound" if total_wanted <= floor else "cpu-bound"
    if current >= rec:
        warnings.append(f"the current {current:g} cores per GPU already suffice")
    extra = max(0.0, (rec - current) * q.gpus)
    vcpu = book.vcpu
    cost: CostDelta = cost_delta(extra, q.gpus, instance, vcpu.usd_per_vcpu_hour)
    pcts = [
        cost_delta(extra, q.gpus, instance, v.usd_per_vcpu_hour).cost_delta_pct
        for v in book.vcpu_prices
    ]
    ttft_now = ttft_rec = None
    if q.ample_ttft_ms is not None:
        ttft_now = None if slow_now is None else q.ample_ttft_ms * slow_now
        ttft_rec = None if slow_rec is None else q.ample_ttft_ms * slow_rec
    validation = dict(params.meta.get("validation") or {})
    if q.workload.engine_version:
        versions = {s.get("engine_version") for s in params.meta.get("series") or []}
        if q.workload.engine_version not in versions:
            warnings.append(
                f"extrapolation: no calibration series of engine version "
                f"{q.workload.engine_version} (measured: "
                f"{', '.join(sorted(v for v in versions if v))})"
            )
    hit_source = (
        "given"
        if q.workload.prefix_hit is not None
        else f"workload {q.workload.workload}"
        if q.workload.workload
        else "default: unique prompts"
    )
    assumptions = {
        "current_cpus_per_gpu": (
            "given"
            if q.current_cpus_per_gpu is not None
            else "Slurm's default: 1 CPU per task, one task, so 1/GPUs per GPU"
        ),
        "workload": {
            "model_params_b": q.workload.model_params_b or slowdown.REF_MODEL_PARAMS_B,
            "load_rps": q.workload.load_rps
            if q.workload.load_rps is not None
            else slowdown.REF_LOAD_RPS,
            "prompt_tokens": q.workload.prompt_tokens or int(slowdown.REF_PROMPT_TOKENS),
            "prefix_hit": q.workload.hit(),
            "prefix_hit_source": hit_source,
            "renderer_workers": renderers,
            "tp": tp,
            "engine_version": q.workload.engine_version,
            "defaults": "unset values take the model's reference (8B, 8 requests/s, 16k tokens, "
            "unique prompts, 1 renderer worker, TP = GPUs)",
        },
        "target": f"TTFT within {q.tolerance:.0%} of TTFT with ample cores, and at least "
        f"vLLM's 2 + N cores ({floor})",
        "model": {
            "file": str(
                ctx.model_file
                or os.environ.get(slowdown.MODEL_ENV)
                or slowdown.shipped_model_path().name
            ),
            "fitted_at": params.meta.get("fitted_at"),
            "validation_error": validation.get("model"),
            "validation_metric": validation.get("metric"),
            "interval": params.interval,
            "parameters": params.named(),
        },
        "platform": platform,
        "cap": cap_source,
        "price": {
            "instance": instance.name,
            "instance_usd_per_hour": instance.usd_per_hour,
            "instance_gpus": instance.gpus,
            "instance_as_of": instance.as_of.isoformat(),
            "instance_source": instance.source,
            "vcpu_basis": vcpu.basis,
            "usd_per_vcpu_hour": vcpu.usd_per_vcpu_hour,
            "vcpu_as_of": vcpu.as_of.isoformat(),
            "vcpu_source": vcpu.source,
            "rule": "extra vCPUs x per-vCPU price against instance price x GPUs / instance GPUs",
            "band": "cost_delta_pct_band: the same with each per-vCPU price of the price book "
            "(c7i compute to the g6e in-family marginal vCPU, RAM included)",
        },
    }
    return JobRecommendation(
        gpu_type=q.gpu_type,
        gpus=q.gpus,
        tp=tp,
        cpus_per_gpu=rec,
        cores_total=rec * q.gpus,
        knee_cores=suff.knee_total,
        measured_knee_cores=suff.measured_knee_total,
        knee_source=knee_source,
        knee_cores_interval=knee_interval,
        floor_cores=floor,
        regime=regime,
        load_regime=load_regime,
        demand_cores=demand,
        demand_parts=parts,
        pathological_below_cores=patho_below,
        pathological_note=note,
        slurm_option=f"--cpus-per-gpu={rec}",
        current_cpus_per_gpu=current,
        current_cores_total=current * q.gpus,
        max_cpus_per_gpu=cap,
        max_cpus_per_gpu_source=cap_source,
        tolerance=q.tolerance,
        slowdown_now=slow_now,
        slowdown_now_interval=(None if patho_now else float(pred.low[0]), float(pred.high[0])),
        slowdown_recommended=slow_rec,
        slowdown_recommended_interval=(
            None if slow_rec is None else float(pred.low[1]),
            float(pred.high[1]),
        ),
        pathological_now=patho_now,
        ttft_ms_now=ttft_now,
        ttft_ms_recommended=ttft_rec,
        predicted_speedup=float(speed),
        speedup_interval=(float(s_lo), float(s_hi)),
        speedup_is_lower_bound=lower_bound,
        extra_vcpus=extra,
        usd_per_vcpu_hour=cost.usd_per_vcpu_hour,
        usd_per_hour_delta=cost.usd_per_hour_delta,
        gpu_share_usd_per_hour=cost.gpu_share_usd_per_hour,
        cost_delta_pct=cost.cost_delta_pct,
        cost_delta_pct_band=(min(pcts), max(pcts)),
        instance=instance.name,
        evidence=tuple(evidence),
        validation=validation,
        warnings=tuple(warnings),
        assumptions=assumptions,
    )


# --------------------------------------------------------------------------- partitions


@dataclass(frozen=True)
class PartitionQuery:
    """Which partitions / GPU families to recommend for, under which workload and targets."""

    db: str | None = None
    partition: str | None = None  # None: every partition
    gpu_type: str | None = None  # canonical family; None: every one
    clusters: tuple[str, ...] = ()  # empty: every cluster
    start: dt.datetime | None = None  # jobs started at or after (UTC); None: no bound
    end: dt.datetime | None = None  # jobs started before (UTC); None: no bound
    workload: Workload = Workload()
    tolerance: float = 0.10  # the default cores per GPU: within this of ample cores
    min_tolerance: float = 0.50  # the minimum cores per GPU: within this of ample cores
    pricing_file: str | None = None
    model_file: str | None = None


@dataclass(frozen=True)
class PartitionRecommendation:
    """The recommended DefCpuPerGPU of one (partition, GPU family) and what it changes."""

    partition: str | None
    gpu_type: str
    gres_type: str | None  # the GRES type users ask for (lower case), for the Lua policy
    jobs: int
    gpu_hours: float
    p25_cores_per_gpu: float
    p50_cores_per_gpu: float
    typical_gpus: int  # GPU-hour weighted median GPUs per job, used for the prediction
    node_max_cpus_per_gpu: int | None
    def_cpu_per_gpu: int
    min_cpus_per_gpu: int
    jobs_below: int
    share_jobs_below: float
    gpu_hours_below: float
    share_gpu_hours_below: float
    gpu_hours_lost: float
    months_observed: float
    gpu_hours_lost_per_month: float
    lost_usd_per_month: float | None
    fix_vcpu_hours_per_month: float
    fix_usd_per_month: float
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class PartitionReport:
    rows: tuple[PartitionRecommendation, ...]
    assumptions: dict[str, Any]


def _weighted_median(values: Sequence[float], weights: Sequence[float]) -> float:
    order = np.argsort(values)
    v = np.asarray(values, dtype=float)[order]
    w = np.asarray(weights, dtype=float)[order]
    cum = np.cumsum(w)
    return float(v[int(np.searchsorted(cum, 0.5 * cum[-1]))])


@dataclass(frozen=True)
class Starvation:
    """What a group of jobs loses to too few cores per GPU against a recommendation."""

    below: np.ndarray  # per job row: its cores per GPU are under the recommendation
    lost_rows: np.ndarray  # per job row: the GPU-hours it loses
    fix_rows: np.ndarray  # per job row: the vCPU-hours that would lift it to the recommendation

    @property
    def gpu_hours_lost(self) -> float:
        return float(np.sum(self.lost_rows))

    @property
    def fix_vcpu_hours(self) -> float:  # the missing cores x elapsed hours of the rows below
        return float(np.sum(self.fix_rows))


def starvation(
    params: slowdown.CurveParams,
    *,
    cpus: ArrayLike,
    gpus: ArrayLike,
    gpu_hours: ArrayLike,
    elapsed_s: ArrayLike,
    recommended_cores_per_gpu: ArrayLike,
    platform: str | None | Sequence[str | None],
    workload: Workload = Workload(),
) -> Starvation:
    """The GPU time lost to CPU starvation by job rows (CPUs, GPUs, GPU-hours, elapsed
    seconds each), the one formula behind a partition's recommendation and the report.

    A row below the recommendation loses GPU-hours x (1 - slowdown(recommended) /
    slowdown(its own cores per GPU)), from the curve at its own GPU count; the fix is
    (recommended x GPUs - CPUs) x its elapsed hours. Rows at or above it lose nothing.
    ``recommended_cores_per_gpu`` and ``platform`` are one for every row or one per row, so
    that many groups are judged in one evaluation of the curve.
    """
    cpus_a = np.asarray(cpus, dtype=float)
    gpus_a = np.asarray(gpus, dtype=float)
    cores = cpus_a / gpus_a
    rec = np.broadcast_to(np.asarray(recommended_cores_per_gpu, dtype=float), cores.shape)
    platforms = (
        [platform] * len(cores) if platform is None or isinstance(platform, str) else platform
    )
    # only the first feature (cores per GPU) differs between rows of one GPU count and platform:
    # one row per such pair, repeated, then the cores filled in
    pairs = list(zip(gpus_a.tolist(), platforms, strict=True))
    index = {k: i for i, k in enumerate(dict.fromkeys(pairs))}
    templates = np.array([_template(g, p, workload) for g, p in index]).reshape(
        len(index), len(slowdown.FEATURES)
    )
    X_job = templates[[index[k] for k in pairs]]
    X_job[:, 0] = cores
    X_rec = X_job.copy()
    X_rec[:, 0] = rec
    # the job rows and the same rows at the recommendation, in one evaluation of the curve
    s, _ = slowdown.evaluate(params, np.vstack([X_job, X_rec]))
    s_job, s_rec = s[: len(cores)], s[len(cores) :]
    below = cores < rec
    lost_frac = np.where(below, np.clip(1.0 - s_rec / s_job, 0.0, 1.0), 0.0)
    deficit = rec * gpus_a - cpus_a
    elapsed_h = np.asarray(elapsed_s, dtype=float) / 3600.0
    return Starvation(
        below=below,
        lost_rows=np.asarray(gpu_hours, dtype=float) * lost_frac,
        fix_rows=np.where(below, deficit * elapsed_h, 0.0),
    )


def _job_mix(con: Any, q: PartitionQuery) -> list[tuple[Any, ...]]:
    """The observed jobs grouped by partition, GPU family, GRES, CPUs and GPUs (with jobs,
    elapsed seconds, GPU-hours, first start and last end) under the query's filters."""
    from advisor.ratios.cube import job_mix
    from advisor.ratios.planning import utc_naive

    return job_mix(
        con,
        {
            "partition": q.partition,
            "gpu_type": q.gpu_type,
            "clusters": list(q.clusters),
            "start": utc_naive(q.start),
            "end": utc_naive(q.end),
        },
    )


def recommend_partitions(
    q: PartitionQuery,
    progress: ProgressFn = no_progress,
    ctx: RecommendContext | None = None,
) -> PartitionReport:
    """Per (partition, GPU family) of the observed jobs: DefCpuPerGPU and its effect. Without
    ``ctx``, the query's own files are loaded for this one call."""
    from advisor.errors import NotFoundError
    from advisor.store import query

    if ctx is None:
        path = resolve_db_path(q.db)
        if not path.exists():  # before loading the curve, as the message is about the jobs
            raise NotFoundError(
                f"{path}: no such database; a partition recommendation needs "
                f"the observed jobs: load them first with `advisor ingest FILE "
                f"--db {path}`"
            )
        with RecommendContext.open(
            db=q.db, fit_file=q.model_file, pricing_file=q.pricing_file
        ) as own:
            return recommend_partitions(q, progress, own)
    path = ctx.db_path
    con = ctx.connection()
    if con is None:
        raise NotFoundError(
            f"{path}: no such database; a partition recommendation needs the "
            f"observed jobs: load them first with `advisor ingest FILE --db {path}`"
        )
    params, book = ctx.params, ctx.book
    mix = _job_mix(con, q)
    caps = {
        (r[0], r[1]): (int(r[2]), int(r[3]))
        for r in con.execute(query("recommend/partition_caps")).fetchall()
    }
    buckets: dict[tuple[str | None, str], list[tuple[Any, ...]]] = defaultdict(list)
    for r in mix:
        buckets[(r[0], r[1])].append(r)

    # The recommendation of each group (at its typical GPU count), then what it changes.
    def sufficient(gpus: int, platform: str | None, tolerance: float, cap: int) -> tuple[int, bool]:
        return ctx.smallest_sufficient(
            gpus=gpus, platform=platform, workload=q.workload, tolerance=tolerance, cap=cap
        )

    plans = {}
    for n, (key, rows) in enumerate(buckets.items()):
        partition, gpu_type = key
        gpus_typ = int(_weighted_median([r[4] for r in rows], [r[7] for r in rows]))
        cap_row = caps.get((partition, gpu_type))
        cap = cap_row[0] if cap_row else DEFAULT_MAX_CPUS_PER_GPU
        platform = None if gpu_type == "(untyped)" else _canonical(gpu_type)
        dflt, reached = sufficient(gpus_typ, platform, q.tolerance, max(cap, 1))
        mn, _ = sufficient(gpus_typ, platform, q.min_tolerance, max(cap, 1))
        plans[key] = (gpus_typ, cap_row, platform, dflt, min(mn, dflt), reached)
        progress("partitions", n + 1, len(buckets))

    # every group's rows against its recommendation, in one evaluation of the curve
    every = [(r, plans[key][3], plans[key][2]) for key, rows in buckets.items() for r in rows]
    starved_all = starvation(
        params,
        cpus=[r[3] for r, _, _ in every],
        gpus=[r[4] for r, _, _ in every],
        gpu_hours=[float(r[7]) for r, _, _ in every],
        elapsed_s=[r[6] for r, _, _ in every],
        recommended_cores_per_gpu=[d for _, d, _ in every],
        platform=[p for _, _, p in every],
        workload=q.workload,
    )
    # every group's P25 and P50 cores per GPU (job-weighted), in one pass
    pct = job_percentiles_by_group(
        [r[3] / r[4] for r, _, _ in every],
        [int(r[5]) for r, _, _ in every],
        np.repeat(np.arange(len(buckets)), [len(rows) for rows in buckets.values()]),
        (0.25, 0.50),
    )
    out = []
    first_row = 0
    for n, (key, rows) in enumerate(buckets.items()):
        partition, gpu_type = key
        gpus_typ, cap_row, platform, dflt, mn, reached = plans[key]
        part = slice(first_row, first_row + len(rows))
        first_row += len(rows)
        warnings = slowdown.coverage_warnings(params, platform=platform, gpus=gpus_typ)
        if not reached:
            warnings.append(
                f"even {dflt} cores per GPU (the node maximum) are predicted more "
                f"than {q.tolerance:.0%} slower than ample cores"
            )
        if cap_row is None:
            warnings.append(
                "no node inventory for this partition and GPU type; "
                f"capped at {DEFAULT_MAX_CPUS_PER_GPU} cores per GPU"
            )
        gpu_h = np.array([float(r[7]) for r in rows])
        below = starved_all.below[part]
        lost = float(np.sum(starved_all.lost_rows[part]))
        fix_vcpu_h = float(np.sum(starved_all.fix_rows[part]))
        first = min(r[8] for r in rows)
        last = max(r[9] for r in rows)
        days = max((last - first).total_seconds() / 86400.0, 1.0)
        months = days / DAYS_PER_MONTH
        try:
            usd_gpu_h: float | None = book.instance_for(platform or "").usd_per_gpu_hour
        except Exception:
            usd_gpu_h = None
            warnings.append(f"no instance price for {gpu_type}: lost GPU time not priced")
        jobs = sum(int(r[5]) for r in rows)
        gpu_hours = float(gpu_h.sum())
        jobs_below = sum(int(r[5]) for r, b in zip(rows, below, strict=True) if b)
        gh_below = float(gpu_h[below].sum())
        out.append(
            PartitionRecommendation(
                partition=partition,
                gpu_type=gpu_type,
                gres_type=next((r[2] for r in rows if r[2]), None),
                jobs=jobs,
                gpu_hours=gpu_hours,
                p25_cores_per_gpu=float(pct[n, 0]),
                p50_cores_per_gpu=float(pct[n, 1]),
                typical_gpus=gpus_typ,
                node_max_cpus_per_gpu=cap_row[0] if cap_row else None,
                def_cpu_per_gpu=dflt,
                min_cpus_per_gpu=mn,
                jobs_below=jobs_below,
                share_jobs_below=jobs_below / jobs,
                gpu_hours_below=gh_below,
                share_gpu_hours_below=gh_below / gpu_hours if gpu_hours else 0.0,
                gpu_hours_lost=lost,
                months_observed=months,
                gpu_hours_lost_per_month=lost / months,
                lost_usd_per_month=(lost / months * usd_gpu_h) if usd_gpu_h is not None else None,
                fix_vcpu_hours_per_month=fix_vcpu_h / months,
                fix_usd_per_month=fix_vcpu_h / months * book.vcpu.usd_per_vcpu_hour,
                warnings=tuple(warnings),
            )
        )
    vcpu = book.vcpu
    assumptions = {
        "default_cpus_per_gpu": f"TTFT within {q.tolerance:.0%} of ample cores",
        "min_cpus_per_gpu": f"TTFT within {q.min_tolerance:.0%} of ample cores",
        "prediction_gpus": "GPU-hour weighted median GPUs per job of the group",
        "gpu_time_lost": "GPU-hours x (1 - slowdown(recommended) / slowdown(job's cores)) for "
        "jobs below the recommendation, as if every GPU job were an LLM server "
        "bound by TTFT (an upper bound for training and batch jobs)",
        "fix_cost": "(recommended x GPUs - CPUs) x elapsed hours of the jobs below, x "
        f"{vcpu.usd_per_vcpu_hour} $/vCPU-hour ({vcpu.basis}, {vcpu.as_of})",
        "lost_usd": "lost GPU-hours x the reference instance's $/GPU-hour",
        "per_month": f"totals over the observed span (first start to last end) / "
        f"{DAYS_PER_MONTH} days",
        "workload": {
            "model_params_b": q.workload.model_params_b or slowdown.REF_MODEL_PARAMS_B,
            "load_rps": q.workload.load_rps or slowdown.REF_LOAD_RPS,
            "prompt_tokens": q.workload.prompt_tokens or int(slowdown.REF_PROMPT_TOKENS),
        },
        "model_fitted_at": params.meta.get("fitted_at"),
    }
    return PartitionReport(tuple(out), assumptions)
