"""What a recommendation is asked, and the job's features built once from it.

:class:`Workload` and :class:`JobQuery` are what callers give (the CLI, the dashboard, the
policy); :func:`job_features` checks them and builds the one frozen record the rest of the
advice path reads (:class:`JobFeatures`): every default resolved, the executor, the design-matrix
row of the curve. Nothing downstream goes back to the query piece by piece.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.errors import InputError, UsageError
from advisor.model.load import (  # re-exported: what a recommendation is asked is a load
    MAX_CORES_PER_GPU,
    MAX_GPUS,
    JobFeatures,
    Workload,
    canonical_platform,
    features_of,
)
from advisor.model.waitknee import check_max_wait

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
    # spend runnable but not running (advisor.model.waitknee.DEFAULT_MAX_WAIT)
    max_wait: float = 0.15


def job_features(q: JobQuery) -> JobFeatures:
    """Check the query (UsageError / InputError naming the option) and build its features."""
    if not 1 <= q.gpus <= MAX_GPUS:
        raise UsageError(f"--gpus must be 1 to {MAX_GPUS:,} (the model's range), got {q.gpus}")
    if q.tp is not None and not 1 <= q.tp <= q.gpus:
        raise UsageError(f"--tp must be between 1 and --gpus ({q.gpus}), got {q.tp}")
    check_tolerance(q.tolerance)
    check_max_wait(q.max_wait)
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
