"""The first step of the model: a load as the features every later step reads.

:class:`Workload` is the serving load a caller describes (the CLI, the dashboard, the policy,
the fit); :func:`features_of` resolves every default of it for a GPU type and count into one
frozen record (:class:`JobFeatures`): the executor, the renderer workers, the prefix hits and
the curve's design-matrix row. The bounds say what a load may be: beyond them no server runs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.errors import InputError, UsageError
from advisor.model import slowdown
from advisor.model.demand import EXECUTORS, default_executor

# What a query may ask: beyond these no server runs, and the model's arithmetic would only
# overflow or run for minutes (--gpus 1000000 did); the GPUs are the calibration's own bound.
MAX_GPUS = 4_096  # the calibration's bound too (advisor.model.calibration.points reads it here)
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
    ``gpu_busy`` (0..1): the share of time the GPUs compute (nvidia-smi utilisation) at this
    load; the engine core's CPU follows it (None: always busy, how a serving job is sized).
    """

    model_params_b: float | None = None
    load_rps: float | None = None
    prompt_tokens: int | None = None
    prefix_hit: float | None = None
    workload: str | None = None
    renderer_workers: int | None = None
    engine_version: str | None = None
    executor: str | None = None
    gpu_busy: float | None = None

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
            ("--gpu-busy", self.gpu_busy),
        ):
            if v is not None and not math.isfinite(float(v)):
                raise InputError(f"{v!r} is not a finite number", field=name)
        if self.prefix_hit is not None and not 0.0 <= self.prefix_hit <= 1.0:
            raise UsageError(f"--prefix-hit must be between 0 and 1, got {self.prefix_hit}")
        if self.gpu_busy is not None and not 0.0 <= self.gpu_busy <= 1.0:
            raise UsageError(f"--gpu-busy must be between 0 and 1, got {self.gpu_busy}")
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
    gpu_busy: float  # 1: always busy (the sizing default)
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
        gpu_busy=w.gpu_busy,
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
        gpu_busy=1.0 if w.gpu_busy is None else float(w.gpu_busy),
        template=tuple(template),
    )


def canonical_platform(gpu_type: str) -> str:
    from advisor.gputypes import canonical_gpu_type

    return canonical_gpu_type(gpu_type) or gpu_type
