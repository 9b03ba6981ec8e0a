"""The attacker-victim load generator: two request classes at once, one record per request.

Attackers: long prompts, Poisson arrivals at ``attacker_rps``, short outputs. Victims: short
prompts at a low, steady rate; their TTFT is what the benchmark reports. Every request is
recorded with its class, prompt tokens, when it was sent, when its first token came, when it
finished and how many tokens it got, or its error; a request past ``timeout_s`` is recorded as a
timeout, never dropped. All requests are built before the phase starts, so the client spends its
time during the phase only on sending and reading (see bench/bench_loadgen_overhead.py).
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass

from advisor.errors import UsageError
from advisor.harness.load.httpclient import StreamOutcome, build_request, stream_completion
from advisor.harness.load.prompts import Conversations, PromptFactory, SharedDocument
from advisor.harness.records import WORKLOADS, LoadSpec, RequestRecord


@dataclass(frozen=True)
class PlannedRequest:
    request_no: int
    kind: str  # attacker | victim | warmup
    at_s: float  # when to send, seconds after the phase's start
    prompt_tokens: int
    max_tokens: int
    request: bytes


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    model_name: str
    path: str = "/v1/completions"
    ignore_eos: bool = True  # vLLM/SGLang extensions: fixed output length; others may reject them


def completion_payload(target: Target, prompt: str, max_tokens: int) -> dict[str, object]:
    payload: dict[str, object] = {
        "model": target.model_name,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if target.ignore_eos:
        payload.update(min_tokens=max_tokens, ignore_eos=True)
    return payload


def arrival_times(rate_rps: float, duration_s: float, rng: random.Random) -> list[float]:
    """Poisson arrivals: exponential gaps with mean 1/rate, within [0, duration)."""
    if rate_rps <= 0:
        return []
    out, t = [], rng.expovariate(rate_rps)
    while t < duration_s:
        out.append(t)
        t += rng.expovariate(rate_rps)
    return out


def steady_times(rate_rps: float, duration_s: float, offset_s: float = 0.25) -> list[float]:
    """Evenly spaced arrivals at ``rate_rps``, starting at ``offset_s``."""
    if rate_rps <= 0:
        return []
    gap = 1.0 / rate_rps
    n = int(max(0.0, duration_s - offset_s) / gap) + 1
    return [offset_s + i * gap for i in range(n) if offset_s + i * gap < duration_s]


def plan_phase(spec: LoadSpec, target: Target, factory: PromptFactory) -> list[PlannedRequest]:
    """Every request of one phase, in send order, built ahead of time."""
    if spec.workload not in WORKLOADS:
        raise UsageError(f"--workload {spec.workload!r}: choose from {', '.join(WORKLOADS)}")
    if spec.attacker_tokens_min > spec.attacker_tokens_max:
        raise UsageError(
            f"--attacker-tokens {spec.attacker_tokens_min}:{spec.attacker_tokens_max}: "
            "the minimum is above the maximum"
        )
    # Everything random in the phase (arrivals, lengths, text) comes from this one generator, so
    # phases with the same seed carry the same traffic at every core count (common random
    # numbers); ``spec.salt`` only changes each request's leading marker, so the prefix cache
    # sees each phase as new traffic.
    rng = random.Random(spec.seed)
    items: list[tuple[float, str]] = [
        (t, "attacker") for t in arrival_times(spec.attacker_rps, spec.duration_s, rng)
    ]
    items += [(t, "victim") for t in steady_times(spec.victim_rps, spec.duration_s)]
    items.sort()
    convo = (
        Conversations(
            factory,
            spec.attacker_tokens_min,
            spec.attacker_tokens_max,
            turns=spec.conversation_turns,
            rng=rng,
            salt=f"{spec.salt}-" if spec.salt else "",
        )
        if spec.workload == "shared-prefix"
        else None
    )
    doc = (
        SharedDocument(
            factory,
            spec.attacker_tokens_min,
            spec.attacker_tokens_max,
            spec.tail_tokens,
        )
        if spec.workload == "tokenize-heavy"
        else None
    )
    planned = []
    for no, (at, kind) in enumerate(items):
        tag = f"{spec.salt or spec.seed}-{no}-{rng.getrandbits(32):08x}"
        if kind == "attacker":
            if convo is not None:
                prompt = convo.prompt()
            elif doc is not None:
                prompt = doc.prompt(tag, rng)
            else:
                n = rng.randint(spec.attacker_tokens_min, spec.attacker_tokens_max)
                prompt = factory.unique(n, tag, rng)
            out_n = spec.attacker_output_tokens
        else:
            prompt = factory.unique(spec.victim_tokens, tag, rng)
            out_n = spec.victim_output_tokens
        req = build_request(
            target.host, target.port, target.path, completion_payload(target, prompt.text, out_n)
        )
        planned.append(PlannedRequest(no, kind, at, prompt.tokens, out_n, req))
    return planned


def _record(p: PlannedRequest, t0: float, sent_t: float, outcome: StreamOutcome) -> RequestRecord:
    first = outcome.first_token_t
    fin = outcome.finished_t
    if outcome.error is None:
        status = "ok"
    elif outcome.error.startswith("timeout"):
        status = "timeout"
    else:
        status = "error"
    return RequestRecord(
        request_no=p.request_no,
        kind=p.kind,
        prompt_tokens=outcome.prompt_tokens
        if outcome.prompt_tokens is not None
        else p.prompt_tokens,
        output_tokens=(
            outcome.completion_tokens
            if outcome.completion_tokens is not None
            else (outcome.output_events if outcome.first_token_t is not None else None)
        ),
        sent_s=sent_t - t0,
        first_token_s=None if first is None else first - t0,
        finished_s=None if fin is None else fin - t0,
        ttft_ms=None if first is None else (first - sent_t) * 1000.0,
        e2e_ms=None if fin is None else (fin - sent_t) * 1000.0,
        status=status,
        error=outcome.error,
    )


@dataclass(frozen=True)
class PhaseResult:
    records: list[RequestRecord]  # in request order
    send_lag_p99_ms: float  # how late the client sent requests against the schedule
    t0_s: float  # the phase's start on time.perf_counter() (CLOCK_MONOTONIC on Linux)


async def _run(planned: list[PlannedRequest], target: Target, timeout_s: float) -> PhaseResult:
    loop_t0 = time.perf_counter()
    lags: list[float] = []

    async def one(p: PlannedRequest) -> RequestRecord:
        sent_t, outcome = await stream_completion(target.host, target.port, p.request, timeout_s)
        lags.append(sent_t - (loop_t0 + p.at_s))
        return _record(p, loop_t0, sent_t, outcome)

    tasks = []
    for p in planned:
        delay = loop_t0 + p.at_s - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(p)))
    records = list(await asyncio.gather(*tasks))
    lags.sort()
    lag_p99 = lags[int(0.99 * (len(lags) - 1))] * 1000.0 if lags else 0.0
    records.sort(key=lambda r: r.request_no)
    return PhaseResult(records, lag_p99, loop_t0)


def run_phase(planned: list[PlannedRequest], target: Target, timeout_s: float) -> PhaseResult:
    """Send the planned requests on schedule (times relative to the phase's start) and record
    each one; a request past ``timeout_s`` is recorded as a timeout."""
    return asyncio.run(_run(planned, target, timeout_s))


def warmup(
    target: Target, factory: PromptFactory, prompt_tokens: list[int], timeout_s: float
) -> list[RequestRecord]:
    """A few requests one after another, so compilation and caches are out of the phase."""
    planned = [
        PlannedRequest(
            i,
            "warmup",
            0.0,
            n,
            4,
            build_request(
                target.host,
                target.port,
                target.path,
                completion_payload(target, factory.unique(n, f"warmup-{i}").text, 4),
            ),
        )
        for i, n in enumerate(prompt_tokens)
    ]
    out = []
    for p in planned:
        out.extend(run_phase([p], target, timeout_s).records)
    return out
