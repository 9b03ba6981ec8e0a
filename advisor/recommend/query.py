"""What a recommendation is asked, and the job's features built once from it.

:class:`Workload` and :class:`JobQuery` are what callers give (the CLI, the dashboard, the
policy); :func:`job_features` checks them and builds the one frozen record the rest of the
advice path reads (:class:`JobFeatures`): every default resolved, the executor, the design-matrix
row of the curve. Nothing downstream goes back to the query piece by piece.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor import slowdown
from advisor.demand import EXECUTORS, default_executor
from advisor.errors import InputError, UsageError

# TTFT within this share of ample cores counts as enough (the --tolerance default).
DEFAULT_TOLERANCE = 0.10


def check_tolerance(value: float, flag: str = "--tolerance") -> None:
    """Raise UsageError unless ``value`` is a fraction in (0, 1]: TTFT within that share of
    its value with ample cores (0.1 = 10% slower)."""
    if not math.isfinite(float(value)):
        raise InputError(f"{value!r} is not a finite number", field=flag)
    if not 0 < value <= 1:
        raise UsageError(
            f"{flag} must be a fraction in (0, 1] (0.1 accepts TTFT 10% above ample cores), "
            f"got {value:g}"
        )


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


# What a query may ask: beyond these no server runs, and the model's arithmetic would only
# overflow or run for minutes (--gpus 1000000 did); the GPUs are the calibration's own bound.
MAX_GPUS = 4_096  # advisor.calibration.points.MAX_GPUS (not imported: the job-submit path)
MAX_RPS = 1_000.0
MAX_PROMPT_TOKENS = 10_000_000
MAX_MODEL_PARAMS_B = 100_000.0
MAX_CORES_PER_GPU = 1_024


def _num(v: float) -> str:
    """A bound or a value as a person reads it: 10,000,000 and 2,147,483,648, not 1e+07."""
    return f"{v:,.0f}" if abs(v) >= 1000 and float(v).is_integer() else f"{v:g}"


@dataclass(frozen=True)
class Workload:
    """The serving load a recommendation assumes (None: the model's reference).

    ``prefix_hit`` (0..1) is the share of prompt tokens served from the prefix cache; without
    it, the named ``workload`` (``tokenize-heavy``, ``unique``, ``shared-prefix``) gives it, else
    0 (unique prompts). ``renderer_workers`` are the API server's tokenizer threads (vLLM's
    default: 1). ``executor``: ``mp`` or ``uni`` (None: vLLM's default for the TP).
    """

    model_params_b: float | None = None
    load_rps: float | None = None
    prompt_tokens: int | None = None
    prefix_hit: float | None = None
    workload: str | None = None
    renderer_workers: int | None = None
    engine_version: str | None = None
    executor: str | None = None

    def hit(self) -> float:
        return slowdown.prefix_hit_of(self.workload, self.prefix_hit)

    def renderers(self) -> float | None:
        """Renderer workers: given, else from a bench workload name (``.../rw4``), else None."""
        if self.renderer_workers is not None:
            return float(self.renderer_workers)
        return slowdown.renderer_workers_of(self.workload)

    def check(self) -> None:
        """Raise InputError for a number that is not finite, UsageError for a value no server
        can have."""
        for name, v in (
            ("--rps", self.load_rps),
            ("--prompt-tokens", self.prompt_tokens),
            ("--prefix-hit", self.prefix_hit),
            ("--model-size", self.model_params_b),
        ):
            if v is not None and not math.isfinite(float(v)):
                raise InputError(f"{v!r} is not a finite number", field=name)
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
        for name, v, most in (
            ("--rps", self.load_rps, MAX_RPS),
            ("--prompt-tokens", self.prompt_tokens, MAX_PROMPT_TOKENS),
            ("--model-size", self.model_params_b, MAX_MODEL_PARAMS_B),
            ("--renderer-workers", self.renderer_workers, MAX_CORES_PER_GPU),
        ):
            if v is not None and not 0 < v <= most:
                raise UsageError(f"{name} must be above 0 and at most {_num(most)}, got {_num(v)}")
        if self.executor is not None and self.executor not in EXECUTORS:
            raise UsageError(
                f"--executor must be one of {', '.join(EXECUTORS)}, got {self.executor!r}"
            )


@dataclass(frozen=True)
class JobQuery:
    """What to recommend for: a job's GPUs, its workload, what it has now, and the sources."""

    gpu_type: str
    gpus: int
    workload: Workload = Workload()
    current_cpus_per_gpu: float | None = None  # None: Slurm's default, one CPU per task
    tolerance: float = DEFAULT_TOLERANCE
    ample_ttft_ms: float | None = None  # TTFT with ample cores, to report absolute TTFTs
    max_cpus_per_gpu: int | None = None  # a cap given by hand (beats the node inventory)
    partition: str | None = None  # restricts the node inventory used for the cap
    db: str | None = None
    pricing_file: str | None = None
    model_file: str | None = None
    tp: int | None = None  # tensor-parallel size (None: every GPU of the job)
    # the wait model's threshold: share of wall time the engine core and the API server may
    # spend runnable but not running (advisor.waitknee.DEFAULT_MAX_WAIT)
    max_wait: float = 0.15


@dataclass(frozen=True)
class JobFeatures:
    """Everything the advice path reads about a job, every default resolved, built once."""

    platform: str | None  # canonical GPU family (None: untyped)
    gpus: int
    tp: int
    executor: str  # "mp" or "uni"
    model_params_b: float
    load_rps: float
    prompt_tokens: float
    prefix_hit: float
    prefix_hit_source: str
    renderer_workers: int
    engine_version: str | None
    template: tuple[float, ...]  # the curve's design-matrix row at 1 core per GPU

    @property
    def floor_cores(self) -> int:
        """vLLM's guidance: at least 2 + N physical cores for N GPUs."""
        return 2 + self.gpus

    @property
    def tokens_per_s(self) -> float:
        return self.load_rps * self.prompt_tokens

    def rows(self, cores_per_gpu: list[float]) -> list[list[float]]:
        """The curve's rows of this job at each cores per GPU (against ample cores)."""
        return [[float(c), *self.template[1:]] for c in cores_per_gpu]


def features_of(platform: str | None, gpus: int, w: Workload, tp: int | None = None) -> JobFeatures:
    """The job's features from its GPUs and workload (no validation: :func:`job_features`)."""
    tp_ = min(int(tp or gpus), int(gpus))
    executor = "mp" if tp_ > 1 else (w.executor or default_executor(tp_))
    renderers = int(w.renderers() or 1)
    template = slowdown.feature_row(
        1.0,
        gpus=gpus,
        model_params_b=w.model_params_b,
        load_rps=w.load_rps,
        prompt_tokens=w.prompt_tokens,
        platform=platform,
        tp=tp_,
        prefix_hit=w.hit(),
        renderer_workers=renderers,
        executor=executor,
    )
    hit_source = (
        "given"
        if w.prefix_hit is not None
        else f"workload {w.workload}"
        if w.workload
        else "default: unique prompts"
    )
    return JobFeatures(
        platform=platform,
        gpus=int(gpus),
        tp=tp_,
        executor=executor,
        model_params_b=w.model_params_b or slowdown.REF_MODEL_PARAMS_B,
        load_rps=w.load_rps if w.load_rps is not None else slowdown.REF_LOAD_RPS,
        prompt_tokens=float(w.prompt_tokens or slowdown.REF_PROMPT_TOKENS),
        prefix_hit=w.hit(),
        prefix_hit_source=hit_source,
        renderer_workers=renderers,
        engine_version=w.engine_version,
        template=tuple(template),
    )


def canonical_platform(gpu_type: str) -> str:
    from advisor.gputypes import canonical_gpu_type

    return canonical_gpu_type(gpu_type) or gpu_type


def job_features(q: JobQuery) -> JobFeatures:
    """Check the query (UsageError / InputError naming the option) and build its features."""
    if not 1 <= q.gpus <= MAX_GPUS:
        raise UsageError(f"--gpus must be 1 to {MAX_GPUS:,} (the model's range), got {q.gpus}")
    if q.tp is not None and not 1 <= q.tp <= q.gpus:
        raise UsageError(f"--tp must be between 1 and --gpus ({q.gpus}), got {q.tp}")
    check_tolerance(q.tolerance)
    for name, v in (
        ("--current-cpus-per-gpu", q.current_cpus_per_gpu),
        ("--ample-ttft-ms", q.ample_ttft_ms),
    ):
        if v is not None and not math.isfinite(float(v)):
            raise InputError(f"{v!r} is not a finite number", field=name)
    if q.current_cpus_per_gpu is not None and not 0 < q.current_cpus_per_gpu <= MAX_CORES_PER_GPU:
        raise UsageError(
            f"--current-cpus-per-gpu must be above 0 and at most {MAX_CORES_PER_GPU}, "
            f"got {q.current_cpus_per_gpu:g}"
        )
    if q.max_cpus_per_gpu is not None and not 1 <= q.max_cpus_per_gpu <= MAX_CORES_PER_GPU:
        raise UsageError(
            f"--max-cpus-per-gpu must be 1 to {MAX_CORES_PER_GPU}, got {q.max_cpus_per_gpu}"
        )
    q.workload.check()
    if q.tp is not None and q.tp > 1 and q.workload.executor == "uni":
        raise UsageError("--executor uni runs one GPU per engine; with --tp > 1 vLLM uses mp")
    return features_of(canonical_platform(q.gpu_type), q.gpus, q.workload, q.tp)
