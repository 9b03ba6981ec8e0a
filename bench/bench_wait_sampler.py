"""The run-queue wait sampler on a real server process: its wait beside busy loops on its core
against its wait alone on the same core (what tests/test_bench_waits.py once asserted, which a
machine busy with other work decides more than the sampler does: moved here).

Prints, for each of N tries, the stub server's API-server wait and CPU shares of wall time
while it answers 40 requests of 40 ms of CPU each, with four loops pinned to its core and
without, both on the same core, and the medians and their ratio.

    python bench/bench_wait_sampler.py [--tries 3] [--cpu N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from tests.bench_fixtures import CPUS  # noqa: E402
from tests.test_bench_waits import _load_wait  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--cpu", type=int, default=CPUS[0])
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="bench-wait-"))
    crowded, alone = [], []
    for i in range(args.tries):
        crowded.append(_load_wait(tmp, args.cpu, busy_loops=4))
        alone.append(_load_wait(tmp, args.cpu, busy_loops=0))
        print(
            f"try {i + 1}: beside 4 loops wait {crowded[-1][0]:.3f} cpu {crowded[-1][1]:.3f}; "
            f"alone wait {alone[-1][0]:.3f} cpu {alone[-1][1]:.3f}"
        )
    c = statistics.median(w for w, _ in crowded)
    a = statistics.median(w for w, _ in alone)
    print(f"median wait share: beside loops {c:.3f}, alone {a:.3f}, ratio {c / max(a, 1e-9):.2f}x")
    print(f"load average: {os.getloadavg()[0]:.2f} (the other cores' work moves both numbers)")


if __name__ == "__main__":
    main()
