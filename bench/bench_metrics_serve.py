"""What ``advisor metrics --serve`` answers under a burst of scrapes, with and without a client
that sends half a request and waits (issue 30 item 19).

Starts the real server process over a database (the shipped synthetic sample, loaded into a
temporary file, unless ``--db`` is given), takes one scrape alone, then ``--clients`` scrapes at
once, then the same burst while a half-request client holds a connection; prints per phase how
many were answered, failed, and the median and slowest answer. Loopback only.

    python bench/bench_metrics_serve.py --clients 200

Timings on a shared 2-core machine are noisy; compare runs taken in the same minutes.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _scrape(port: int, timeout: float) -> float | None:
    t = time.perf_counter()
    try:
        url = f"http://127.0.0.1:{port}/metrics"
        with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback)
            resp.read()
            if resp.status != 200:
                return None
    except OSError:
        return None
    return time.perf_counter() - t


def _burst(port: int, clients: int, timeout: float) -> str:
    with ThreadPoolExecutor(max_workers=clients) as pool:
        took = list(pool.map(lambda _: _scrape(port, timeout), range(clients)))
    ok = [t for t in took if t is not None]
    if not ok:
        return f"answered 0/{clients}"
    return (
        f"answered {len(ok)}/{clients}, failed {clients - len(ok)}, "
        f"p50 {statistics.median(ok):.2f} s, max {max(ok):.2f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--db", help="database to serve (default: the synthetic sample)")
    ap.add_argument("--clients", type=int, default=200)
    ap.add_argument("--timeout", type=float, default=30.0, help="seconds a scrape may take")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            from advisor.ingest import ingest_files

            db = str(Path(tmp) / "sample.duckdb")
            ingest_files(db, [ROOT / "data" / "sample" / "sacct-synth.txt.gz"])
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        server = subprocess.Popen(
            [sys.executable, "-m", "advisor", "metrics", "--serve", str(port), "--db", db],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            deadline = time.monotonic() + 120
            while _scrape(port, 30) is None:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("the server did not answer")
                time.sleep(0.3)
            alone = [_scrape(port, 30) for _ in range(5)]
            print(f"one scrape alone: median {statistics.median(t or 0 for t in alone):.2f} s")
            print(f"{args.clients} at once: {_burst(port, args.clients, args.timeout)}")
            with socket.create_connection(("127.0.0.1", port)) as slow:
                slow.sendall(b"GET /metr")
                result = _burst(port, args.clients, args.timeout)
            print(f"{args.clients} at once beside a half-sent request: {result}")
        finally:
            os.killpg(server.pid, signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
