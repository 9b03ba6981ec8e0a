"""How the Recommend page words a recommendation: small adapters over the core's records.

The model and its JSON are being extended (a knee, a regime, an interval, a validation table);
each adapter reads the new field when the record has it and today's field otherwise, so the page
does not change when they arrive. A value equal to the model's cap is never shown as a number:
it is the edge of what the model can say, not a measurement.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.headline import model_error_of
from advisor.wording import range_text as range_text  # its old home; re-exported


def field(record: Any, name: str, default: Any = None) -> Any:
    """``record.name`` (a dataclass or a dict), else ``default``: for fields still to come."""
    if isinstance(record, dict):
        return record.get(name, default)
    return getattr(record, name, default)


def is_capped(value: float | None, cap: float) -> bool:
    """Whether ``value`` is the model's cap (or open), i.e. not a number to show."""
    if value is None or not math.isfinite(value):
        return True
    return value >= cap * (1.0 - 1e-6)


def starved_now(rec: Any, params: Any) -> bool:
    """The current allocation sits below the knee: the model only says "CPU-starved"."""
    regime = field(rec, "regime")
    if regime is not None:
        return str(regime).lower() in ("pathological", "starved", "below_knee", "below-knee")
    cap = float(params.max_slowdown)
    return bool(rec.pathological_now) or is_capped(rec.slowdown_now, cap)


def validated_error(params: Any) -> str:
    """The model's validated error in words (the validation table's when the model has one)."""
    error = model_error_of(params.meta)
    if error is None:
        return "error not validated"
    validation = params.meta.get("validation")
    if isinstance(validation, dict) and validation.get("mape") is not None:
        n, how = validation.get("points"), validation.get("method", "held-out")
    else:
        n, how = params.meta.get("points_fitted"), "leave-one-out"
    return f"±{100 * error:.0f}% ({how} error" + (f" over {n} points)" if n else ")")


# Names of the recommendation's assumptions for people (the rest: underscores become spaces).
_ASSUMPTION_NAMES = {
    "current_cpus_per_gpu": "current cores per GPU",
    "model_params_b": "model size (billion parameters)",
    "load_rps": "load (long requests per second)",
    "prompt_tokens": "prompt tokens",
    "tp": "tensor parallel (TP)",
    "usd_per_vcpu_hour": "$ per vCPU-hour",
    "instance_usd_per_hour": "instance $ per hour",
    "vcpu_basis": "vCPU price basis",
}


def _assumption_value(value: Any) -> str:
    if value is None:
        return "not set"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_assumption_value(v) for v in value)
    return str(value)


def assumption_rows(assumptions: dict[str, Any], prefix: str = "") -> list[dict[str, str]]:
    """The recommendation's assumptions (nested) as rows of a two-column table for people: the
    assumption ("workload › model size") and its value, numbers to four significant digits."""
    rows: list[dict[str, str]] = []
    for name, value in assumptions.items():
        label = prefix + _ASSUMPTION_NAMES.get(name, name.replace("_", " "))
        if isinstance(value, dict):
            rows.extend(assumption_rows(value, f"{label} › "))
        else:
            rows.append({"assumption": label, "value": _assumption_value(value)})
    return rows


@dataclass(frozen=True)
class Headline:
    """The three metrics above the curve, as text."""

    effect_label: str
    effect_value: str
    effect_note: str  # the whole sentence (a caption)
    effect_short: str  # what fits under the metric
    cost_label: str
    cost_value: str
    cost_note: str


def headline(rec: Any, params: Any) -> Headline:
    """What the recommendation changes, in words: a speed-up when the job has too few cores (or
    "CPU-starved" below the knee), the saving when it has more than it needs."""
    error = validated_error(params)
    current, target = rec.current_cpus_per_gpu, rec.cpus_per_gpu
    if current >= target:
        spare = (current - target) * rec.gpus
        saving = spare * rec.usd_per_vcpu_hour
        at = getattr(rec, "slowdown_at_answer", None)
        bound = f"TTFT at most {at:.2f}x of ample cores ({rec.slowdown_basis})" if at else ""
        return Headline(
            "Already enough cores",
            f"{current:g} ≥ {target} per GPU",
            f"{target} cores per GPU are enough: the engine core and the API server are "
            f"predicted to wait for a CPU at most {rec.max_wait:.0%} of the time"
            f"{'; ' + bound if bound else ''} (model {error})",
            f"{target} suffice; model {error.split(' (')[0]}",
            "Saving if reduced",
            f"${saving:,.2f}/h",
            f"{spare:g} vCPUs freed for other jobs at ${rec.usd_per_vcpu_hour:.3f}/vCPU-hour",
        )
    if starved_now(rec, params):
        effect_value, effect_note, effect_short = (
            "CPU-starved now",
            f"at {current:g} cores per GPU the server is below the knee: requests queue without "
            "bound and time out; the model cannot put a number on it",
            "below the knee: timeouts",
        )
    elif rec.predicted_speedup is None:  # the model gives no finite interval: its reason
        effect_value = "No finite prediction"
        effect_note = str(field(rec, "predicted_speedup_reason", "") or "")
        effect_short = "no finite prediction"
    else:
        lo, hi = field(rec, "speedup_interval", None) or (None, None)
        cap = float(params.max_slowdown)
        interval = (
            ""
            if hi is None or lo is None or is_capped(hi, cap)
            else f", interval {range_text(lo, hi)}"
        )
        effect_value = f"{rec.predicted_speedup:.2f}x faster TTFT"
        effect_note = f"model {error}{interval}"
        effect_short = f"model {error.split(' (')[0]}"
    return Headline(
        "Predicted effect",
        effect_value,
        effect_note,
        effect_short,
        "Extra cost",
        f"${rec.usd_per_hour_delta:,.2f}/h",
        f"lost GPU time not priced: {rec.cost_reason}"
        if rec.cost_delta_pct is None
        else f"{rec.cost_delta_pct:.1f}% of the GPUs' share of {rec.instance}",
    )


@dataclass(frozen=True)
class Disagreement:
    """A measured point the curve misses by more than its interval."""

    source: str
    cores_per_gpu: float
    measured: float
    predicted: float


def disagreements(
    params: Any, training: Any, platform: str | None, gpus: int
) -> list[Disagreement]:
    """Our own benchmark points for this platform and GPU count that fall outside the model's
    interval at their own workload (the model evaluated at each point's features)."""
    from advisor.model import slowdown

    rows = [
        (x, y, p)
        for x, y, p, censored in zip(
            training.X, training.y, training.points, training.censored, strict=True
        )
        if p.source_kind == "bench"
        and not censored
        and (platform is None or p.platform == platform)
        and p.gpus == gpus
    ]
    if not rows:
        return []
    pred = slowdown.predict(params, np.array([r[0] for r in rows], dtype=float))
    out = []
    for (x, y, p), s, lo, hi in zip(rows, pred.slowdown, pred.low, pred.high, strict=True):
        if y < lo or y > hi:
            out.append(
                Disagreement(
                    f"{p.platform}, {p.gpus} GPUs, {p.model or '?'}",
                    float(x[0]),
                    float(y),
                    float(s),
                )
            )
    return out


def job_and_partition(rec: Any, row: Any) -> str:
    """One sentence on the job-level ``--cpus-per-gpu`` and the partition-level ``DefCpuPerGPU``
    shown together for one partition: which is which, and why they may differ."""
    part = row.partition or "(none)"
    gpus = f"{rec.gpus} GPU{'s' if rec.gpus != 1 else ''}"
    typical = f"{row.typical_gpus} GPU{'s' if row.typical_gpus != 1 else ''}"
    if int(row.def_cpu_per_gpu) == int(rec.cpus_per_gpu):
        return (
            f"The job's --cpus-per-gpu {rec.cpus_per_gpu} (one job of {gpus}, as chosen above) "
            f"and partition {part}'s DefCpuPerGPU {row.def_cpu_per_gpu} (its typical job of "
            f"{typical}) agree."
        )
    return (
        f"Two numbers, two questions: --cpus-per-gpu {rec.cpus_per_gpu} is for one job of "
        f"{gpus}, as chosen above; DefCpuPerGPU {row.def_cpu_per_gpu} is partition {part}'s "
        f"default, set for its typical job of {typical} (the GPU-hour weighted median of its "
        f"{row.gpu_type} jobs). They differ because the cores a server needs per GPU depend on "
        "how many GPUs it has, and the partition's nodes cap what it can get."
    )
