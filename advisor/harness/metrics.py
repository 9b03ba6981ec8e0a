"""Pure functions over benchmark measurements: percentiles, per-class summaries, Prometheus
text, engine CPU use, and the server-side TTFT that vLLM's own histogram reports.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from advisor.harness.records import RequestRecord


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
    # inter-token latency: (last token - first token) / (output tokens - 1), per request
    itl_p50_ms: float | None = None


def itl_ms(r: RequestRecord) -> float | None:
    """One request's mean inter-token latency in ms (None with fewer than two output tokens)."""
    if r.status != "ok" or r.first_token_s is None or r.finished_s is None:
        return None
    if not r.output_tokens or r.output_tokens < 2:
        return None
    return (r.finished_s - r.first_token_s) * 1000.0 / (r.output_tokens - 1)


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
        itl_p50_ms=percentile([x for r in rs if (x := itl_ms(r)) is not None], 50),
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


def bootstrap_ci(
    values: Sequence[float], q: float, n_boot: int = 1000, level: float = 0.9, seed: int = 0
) -> tuple[float, float] | None:
    """A percentile bootstrap interval (``level``, two-sided) of the q-th percentile of
    ``values``, resampling requests; None for fewer than 5 values (no interval worth showing)."""
    import random

    xs = [v for v in values if v is not None and not math.isnan(v)]
    if len(xs) < 5:
        return None
    rng = random.Random(seed)
    stats = sorted(
        percentile([xs[rng.randrange(len(xs))] for _ in xs], q) or 0.0 for _ in range(n_boot)
    )
    tail = (1.0 - level) / 2.0
    return stats[int(tail * (n_boot - 1))], stats[int((1.0 - tail) * (n_boot - 1))]


def _delta(before: Mapping[str, float], after: Mapping[str, float], name: str) -> float | None:
    b, a = metric_sum(before, name), metric_sum(after, name)
    return None if a is None else a - (b or 0.0)


def vllm_deltas(before: Mapping[str, float], after: Mapping[str, float]) -> dict[str, float | None]:
    """What vLLM's own counters say happened during a phase: prefix-cache queries and hits (in
    tokens), the hit rate, prompt tokens, preemptions and the mean time requests waited in its
    queue (ms). Names absent from the engine's page give None."""
    queries = _delta(before, after, "vllm:prefix_cache_queries_total")
    hits = _delta(before, after, "vllm:prefix_cache_hits_total")
    q_sum = _delta(before, after, "vllm:request_queue_time_seconds_sum")
    q_n = _delta(before, after, "vllm:request_queue_time_seconds_count")
    return {
        "prefix_cache_queries": queries,
        "prefix_cache_hits": hits,
        "prefix_hit_rate": hits / queries if hits is not None and queries else None,
        "prompt_tokens": _delta(before, after, "vllm:prompt_tokens_total"),
        "preemptions": _delta(before, after, "vllm:num_preemptions_total"),
        "queue_time_mean_ms": q_sum / q_n * 1000.0 if q_sum is not None and q_n else None,
    }


@dataclass(frozen=True)
class RunChecks:
    """The thresholds a run must meet to be fitted (see :func:`run_flags`)."""

    max_failed_share: float = 0.01
    gpu_bound_factor: float = 4.0  # victim TTFT p50 at the most cores over its no-load value
    # API server cores per renderer worker at which its tokenizer thread counts as saturated
    tokenizer_limit_cores: float = 0.9


def run_flags(
    *,
    sent: int,
    failed: int,
    timed_out: int,
    workload: str,
    prefix_hit_rate: float | None,
    victim_p50_ms: float | None,
    noload_p50_ms: float | None,
    at_most_cores: bool,
    checks: RunChecks = RunChecks(),
    api_server_cores: float | None = None,
    renderer_workers: int = 1,
) -> list[dict[str, str]]:
    """Why a run must not be fitted, as ``{"flag": ..., "reason": ...}`` items (none: fit it).

    - ``failed-requests``: more than ``max_failed_share`` of the requests failed (an HTTP error:
      the percentiles would describe the survivors only, so the run is never fitted);
    - ``timeouts``: as many timed out: the engine is pathologically slow at this core count;
      the run is fitted only as a censored point (slower than its timeout);
    - ``prefix-hit``: vLLM's measured prefix-cache hit rate is outside what the workload is
      built to give (the run did not measure the regime it claims);
    - ``gpu-bound``: at the largest core count the victims' median TTFT is more than
      ``gpu_bound_factor`` times its no-load value: the engine is saturated by GPU work, so no
      core count can show the CPU effect;
    - ``tokenizer-saturated``: the API server used ``tokenizer_limit_cores`` or more per renderer
      worker: its tokenizer thread, not the core count, sets the TTFT (more
      ``--renderer-num-workers`` help, more cores do not). Kept as context: the run is fitted.
    """
    from advisor.harness.records import EXPECTED_PREFIX_HIT

    flags = []
    if sent and failed / sent > checks.max_failed_share:
        flags.append(
            {
                "flag": "failed-requests",
                "reason": f"{failed} of {sent} requests failed "
                f"({failed / sent:.1%} > {checks.max_failed_share:.0%})",
            }
        )
    if sent and timed_out / sent > checks.max_failed_share:
        flags.append(
            {
                "flag": "timeouts",
                "reason": f"{timed_out} of {sent} requests timed out "
                f"({timed_out / sent:.1%}): the median is a lower bound (censored)",
            }
        )
    expected = EXPECTED_PREFIX_HIT.get(workload)
    if expected is not None and prefix_hit_rate is not None:
        lo, hi = expected
        if not lo <= prefix_hit_rate <= hi:
            flags.append(
                {
                    "flag": "prefix-hit",
                    "reason": f"prefix-cache hit rate {prefix_hit_rate:.2f} outside "
                    f"{lo:.2f}-{hi:.2f}, what {workload} is built to give",
                }
            )
    if at_most_cores and victim_p50_ms is not None and noload_p50_ms:
        ratio = victim_p50_ms / noload_p50_ms
        if ratio > checks.gpu_bound_factor:
            flags.append(
                {
                    "flag": "gpu-bound",
                    "reason": f"at the most cores victim TTFT p50 {victim_p50_ms:.0f} ms is "
                    f"{ratio:.1f}x its no-load {noload_p50_ms:.0f} ms "
                    f"(> {checks.gpu_bound_factor:g}x)",
                }
            )
    limit = checks.tokenizer_limit_cores * max(1, renderer_workers)
    if api_server_cores is not None and api_server_cores >= limit:
        flags.append(
            {
                "flag": "tokenizer-saturated",
                "reason": f"the API server used {api_server_cores:.2f} cores "
                f"(>= {limit:.2f} for {max(1, renderer_workers)} renderer worker(s)): its "
                "tokenizer thread is at its limit",
            }
        )
    return flags
