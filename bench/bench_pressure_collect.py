"""How long the node collector takes per job cgroup: a cgroup-shaped tree of N jobs (each with
its batch and one step, real files on this machine's disk) walked and read by
advisor/pressure/collector.py, against a baseline of the same files read with no parsing, in
the same process.

    python bench/bench_pressure_collect.py --jobs 8 --repeats 50
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from advisor.pressure.collector import collect

PSI = "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500000\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n"
STAT = "usage_usec 9000000\nuser_usec 8000000\nsystem_usec 1000000\nnr_periods 0\nnr_throttled 0\nthrottled_usec 0\n"


def make_tree(root: Path, jobs: int) -> None:
    (root / "cgroup.controllers").write_text("cpuset cpu\n")
    scope = root / "system.slice" / "slurmstepd.scope"
    for j in range(jobs):
        for sub in ("", "step_batch", "step_0"):
            d = scope / f"job_{1000 + j}" / sub
            d.mkdir(parents=True, exist_ok=True)
            (d / "cpu.pressure").write_text(PSI)
            (d / "cpu.stat").write_text(STAT)
            (d / "cpuset.cpus.effective").write_text("0-7\n")


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--jobs", type=int, default=8)
    p.add_argument("--repeats", type=int, default=50)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_tree(root, a.jobs)
        files = sorted(root.rglob("cpu*"))
        base, walk = [], []
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            for f in files:
                f.read_text()
            base.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            recs, _ = collect(root, host="h", cluster="c", max_ms=10_000)
            walk.append(time.perf_counter() - t0)
        n = len(recs)
        b, w = statistics.median(base), statistics.median(walk)
        print(f"cgroups {n} (jobs {a.jobs}, each with 2 steps), repeats {a.repeats}")
        print(f"baseline: read the {len(files)} files raw  {b * 1e3:8.3f} ms")
        print(f"collector: walk, read, parse, records  {w * 1e3:8.3f} ms  ({w / b:.2f}x baseline)")
        print(f"per cgroup: {w / n * 1e6:.1f} us; record size {len(str(recs[0]))} bytes")


if __name__ == "__main__":
    main()
