"""Pure functions over benchmark measurements: percentiles, per-class summaries, Prometheus
text, engine CPU use, and the server-side TTFT that vLLM's own histogram reports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from advisor.bench.records import RequestRecord


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0-100), linear interpolation; None for no values."""
    xs = sorted(v for v in values if v is not None and not math.isnan(v))
    if not xs:
        return None
    if len(xs) == 1:
        return xs[0]
    pos = (len(xs) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


@dataclass(frozen=True)
class ClassSummary:
    kind: str
    sent: int
    ok: int
    errors: int
    timeouts: int
    ttft_p50_ms: float | None
    ttft_p90_ms: float | None
    ttft_p99_ms: float | None
    ttft_mean_ms: float | None
    e2e_p50_ms: float | None


def summarise(records: Iterable[RequestRecord], kind: str) -> ClassSummary:
    rs = [r for r in records if r.kind == kind]
    ttft = [r.ttft_ms for r in rs if r.status == "ok" and r.ttft_ms is not None]
    e2e = [r.e2e_ms for r in rs if r.status == "ok" and r.e2e_ms is not None]
    return ClassSummary(
        kind=kind,
        sent=len(rs),
        ok=sum(r.status == "ok" for r in rs),
        errors=sum(r.status == "error" for r in rs),
        timeouts=sum(r.status == "timeout" for r in rs),
        ttft_p50_ms=percentile(ttft, 50),
        ttft_p90_ms=percentile(ttft, 90),
        ttft_p99_ms=percentile(ttft, 99),
        ttft_mean_ms=sum(ttft) / len(ttft) if ttft else None,
        e2e_p50_ms=percentile(e2e, 50),
    )


_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)")


def parse_prometheus(text: str | None, prefixes: Sequence[str] = ("vllm:",)) -> dict[str, float]:
    """Samples of a Prometheus text page whose names start with one of ``prefixes``
    (all when ``prefixes`` is empty), keyed ``name{labels}``. Comments and bad lines are skipped."""
    out: dict[str, float] = {}
    if not text:
        return out
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line)
        if not m:
            continue
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        if prefixes and not name.startswith(tuple(prefixes)):
            continue
        if name.endswith("_bucket"):
            continue  # the buckets make the JSON large; sums and counts are enough here
        try:
            out[name + labels] = float(value)
        except ValueError:
            continue
    return out


def metric_sum(samples: Mapping[str, float], name: str) -> float | None:
    """Sum of a metric over all its label sets; None when absent."""
    vals = [v for k, v in samples.items() if k == name or k.startswith(name + "{")]
    return sum(vals) if vals else None


def server_ttft_mean_ms(before: Mapping[str, float], after: Mapping[str, float]) -> float | None:
    """Mean TTFT over the phase from vLLM's own histogram (sum and count deltas), in ms."""
    name = "vllm:time_to_first_token_seconds"
    s0, s1 = metric_sum(before, name + "_sum"), metric_sum(after, name + "_sum")
    c0, c1 = metric_sum(before, name + "_count"), metric_sum(after, name + "_count")
    if None in (s0, s1, c0, c1):
        return None
    assert s0 is not None and s1 is not None and c0 is not None and c1 is not None
    if c1 - c0 <= 0:
        return None
    return (s1 - s0) / (c1 - c0) * 1000.0


def cpu_percent(cpu_s_before: float, cpu_s_after: float, wall_s: float) -> float | None:
    """CPU time over wall time, in percent of one core (400 = four cores busy)."""
    if wall_s <= 0:
        return None
    return max(0.0, cpu_s_after - cpu_s_before) / wall_s * 100.0
