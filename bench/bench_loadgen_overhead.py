"""How much the load generator adds to the TTFT it reports, at 16 requests/s.

Against a local stub server that answers at once (advisor.harness.serve.stubserver, a real process),
three clients send the same streamed completion request and time the first token:

- baseline: a minimal blocking socket client, one request at a time (the floor: kernel,
  loopback and the server's own work);
- loadgen: advisor's asyncio load generator, Poisson arrivals at 16 requests/s;
- httpx: httpx.AsyncClient streaming at the same schedule (the well-known alternative).

Added overhead = median TTFT of a client minus the baseline's median, in ms (goal: < 1 ms for
loadgen). Server and client are pinned to different cores when there are two or more.
Run: python bench/bench_loadgen_overhead.py [--seconds 15] [--rps 16]
The machine is shared and noisy: compare the figures of one run with each other only.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import socket
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from advisor.harness.load.httpclient import build_request  # noqa: E402
from advisor.harness.load.loadgen import (  # noqa: E402
    PlannedRequest,
    Target,
    arrival_times,
    completion_payload,
    run_phase,
)
from advisor.harness.serve import engine as eng  # noqa: E402


def baseline_ttft_ms(host: str, port: int, request: bytes, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        s = socket.create_connection((host, port))
        s.sendall(request)
        buf = b""
        while b"data:" not in buf:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        out.append((time.perf_counter() - t) * 1000.0)
        while s.recv(65536):
            pass
        s.close()
        time.sleep(0.01)
    return out


async def httpx_ttft_ms(url: str, payload: dict, times: list[float]) -> list[float]:
    import httpx

    out: list[float] = []
    async with httpx.AsyncClient(timeout=30) as client:

        async def one(at: float, t0: float) -> None:
            await asyncio.sleep(max(0.0, t0 + at - time.perf_counter()))
            t = time.perf_counter()
            first = None
            async with client.stream("POST", url, json=payload) as r:
                async for line in r.aiter_lines():
                    if first is None and line.startswith("data:"):
                        first = (time.perf_counter() - t) * 1000.0
            if first is not None:
                out.append(first)

        t0 = time.perf_counter()
        await asyncio.gather(*(one(at, t0) for at in times))
    return out


def _fmt(xs: list[float]) -> str:
    xs = sorted(xs)
    return (
        f"median {statistics.median(xs):7.3f} ms  p90 {xs[int(0.9 * (len(xs) - 1))]:7.3f} ms"
        f"  n={len(xs)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=15.0)
    ap.add_argument("--rps", type=float, default=16.0)
    args = ap.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server_cores = (cpus[0],)
    client_cores = set(cpus[1:]) or set(cpus)
    port = eng.free_port()
    spec = eng.spec_from(
        "{python} -m advisor.harness.serve.stubserver --host {host} --port {port}",
        model="m",
        tp=1,
        cores=server_cores,
        host="127.0.0.1",
        port=port,
        env={"PYTHONPATH": str(ROOT)},
    )
    target = Target("127.0.0.1", port, "m", ignore_eos=False)
    payload = completion_payload(target, "the same short prompt for every client", 4)
    request = build_request(target.host, port, target.path, payload)
    with eng.EngineProcess(spec) as stub:
        if stub.wait_ready(30).status != "ok":
            raise SystemExit("stub server did not start")
        os.sched_setaffinity(0, client_cores)
        baseline_ttft_ms(target.host, port, request, 20)  # warm up
        base = baseline_ttft_ms(target.host, port, request, 200)
        times = arrival_times(args.rps, args.seconds, random.Random(0))
        planned = [PlannedRequest(i, "victim", t, 8, 4, request) for i, t in enumerate(times)]
        phase = run_phase(planned, target, timeout_s=30)
        lg = [r.ttft_ms for r in phase.records if r.ttft_ms is not None]
        try:
            hx = asyncio.run(
                httpx_ttft_ms(f"http://{target.host}:{port}{target.path}", payload, times)
            )
        except ImportError:
            hx = []
    b = statistics.median(base)
    print(
        f"server cores {server_cores}, client cores {sorted(client_cores)}; "
        f"{args.rps:g} requests/s for {args.seconds:g} s"
    )
    print(f"baseline (blocking socket, sequential): {_fmt(base)}")
    print(f"loadgen  (advisor, {args.rps:g}/s Poisson):       {_fmt(lg)}")
    print(
        f"  added to TTFT: {statistics.median(lg) - b:+.3f} ms (goal < 1 ms); "
        f"ratio to baseline {statistics.median(lg) / b:.2f}x; "
        f"send lag p99 {phase.send_lag_p99_ms:.3f} ms; failed "
        f"{sum(r.status != 'ok' for r in phase.records)}"
    )
    if hx:
        print(f"httpx    (AsyncClient, same schedule):    {_fmt(hx)}")
        print(
            f"  added to TTFT: {statistics.median(hx) - b:+.3f} ms; "
            f"ratio to baseline {statistics.median(hx) / b:.2f}x"
        )


if __name__ == "__main__":
    main()
