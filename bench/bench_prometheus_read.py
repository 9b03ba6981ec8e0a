"""Benchmark: the memory a Prometheus instant-vector answer costs, read whole (``json.loads``,
how ``advisor pressure import-prometheus`` read it before issue 53) against one series at a
time (``advisor.pressure.prometheus._items``, how it reads it now), each in its own process
keeping (job, host) -> value as the import does.

    python bench/bench_prometheus_read.py                 # 1,000,000 series
    python bench/bench_prometheus_read.py --series 200000

Prints each way's peak resident memory above what building the answer's text took, and time.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _answer(n: int) -> str:
    name = "ceems_compute_unit_cpu_psi_seconds"
    items = ",".join(
        f'{{"metric":{{"uuid":"{i + 1}","hostname":"node{i % 512:03d}","__name__":"{name}"}},'
        f'"value":[1711843200,"{i}.5"]}}'
        for i in range(n)
    )
    return '{"status":"success","data":{"resultType":"vector","result":[' + items + "]}}"


def _one(way: str, n: int) -> None:
    text = _answer(n)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    if way == "whole":
        items = json.loads(text)["data"]["result"]
    else:
        from advisor.pressure.prometheus import _items

        items = _items(text, "bench")
    out = {(i["metric"]["uuid"], i["metric"]["hostname"]): float(i["value"][1]) for i in items}
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        f"{way:>6}: {len(out):,} series, {len(text) / 1e6:.0f} MB of text; peak memory "
        f"+{(peak - base) / 1024:.0f} MB above the text's {base / 1024:.0f} MB; "
        f"{time.perf_counter() - t0:.1f} s"
    )


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--series", type=int, default=1_000_000)
    ap.add_argument("--way", choices=("whole", "items"))
    args = ap.parse_args()
    if args.way:
        _one(args.way, args.series)
        return
    for way in ("whole", "items"):
        subprocess.run(
            [sys.executable, __file__, "--series", str(args.series), "--way", way], check=True
        )


if __name__ == "__main__":
    main()
