"""Every cost an admin meets, at a scale: generate, load, refresh, look, report, export.

At ``--records N`` (allocations; steps and usage fields on, as a real export has them, over
``--years`` years from ``--users`` users) this writes the records with ``advisor synth`` (the
last 2% of the allocations, about a month at five years, in a file of their own), then runs the
project's own benchmarks on them, each as a subprocess of its own so that its peak memory is its
own, one after the other:

1. ``bench_ingest.py``: the first load against DuckDB's raw materialise of the same file in the
   same run, peak RSS, database size, and the later load of the 2% file on top (changed slices
   on a copy against every derived table rebuilt on the kept file, which then holds it all);
2. ``bench_dashboard.py``: every page's first load and each interaction;
3. ``bench_ratios.py``: the ratio summaries;
4. ``advisor report --month`` as the monthly cron job runs it (the installed console script's
   module), and ``bench_report.py`` for where its time goes;
5. ``advisor recommend --partition '*'`` as a user runs it;
6. ``bench_export.py``: the Parquet export and Spark's read of it.

Each step's output goes to ``DIR/<step>.log`` and to the terminal; the end prints one table of
wall seconds and peak resident memory (the step's process tree, sampled every 50 ms), and writes
it to ``DIR/summary.json``. Run it at 4.65M and 46.5M and compare the two tables
(docs/performance.md does).

    python bench/bench_scale.py --records 4650000 --dir /var/tmp/scale-4.65M
    python bench/bench_scale.py --records 46500000 --years 5 --users 4000 --dir /var/tmp/scale-46.5M
    python bench/bench_scale.py --records 200000 --dir /tmp/s --only ingest,report   # a quick look

A 46.5M run needs about 60 GB of free disk (the text, the raw DuckDB copy the baseline makes,
advisor's file and its copies for the later load) and hours on a 2-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# cheapest first after the load, so that a run cut short keeps the most figures
STEPS = ("ingest", "recommend", "report", "ratios", "dashboard", "export")


class TreePeak:
    """Peak resident memory of a process and its children, sampled while it runs; past
    ``kill_at`` bytes the children are killed (a step that would swap the machine to a halt is
    a finding, not a reason to lose the machine)."""

    def __init__(self, pid: int, kill_at: int = 0) -> None:
        self.proc = psutil.Process(pid)
        self.kill_at = kill_at
        self.killed = False
        self.peak = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in procs))
                if self.kill_at and self.peak > self.kill_at and not self.killed:
                    self.killed = True
                    for p in procs:
                        p.kill()
            except psutil.Error:
                pass
            self._stop.wait(0.05)

    def stop(self) -> int:
        self._stop.set()
        self._t.join()
        return self.peak


def run_step(name: str, argv: list[str], out_dir: Path, kill_at: int) -> dict[str, object]:
    """Run one benchmark, its output teed to ``out_dir/name.log``; wall time and peak RSS."""
    log = out_dir / f"{name}.log"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "120"}
    print(f"\n=== {name}: {' '.join(argv)}", flush=True)
    t0 = time.perf_counter()
    with log.open("w") as fh:
        proc = subprocess.Popen(
            [sys.executable, *argv],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        peak = TreePeak(proc.pid, kill_at)
        assert proc.stdout is not None
        for line in proc.stdout:
            fh.write(line)
            print(line, end="", flush=True)
        rc = proc.wait()
        rss = peak.stop()
    wall = time.perf_counter() - t0
    killed = f" (killed: over {kill_at / 2**30:g} GiB)" if peak.killed else ""
    print(f"=== {name}: exit {rc}, {wall:.1f} s, peak RSS {rss / 2**20:.0f} MB{killed}", flush=True)
    return {
        "step": name,
        "rc": rc,
        "seconds": round(wall, 1),
        "peak_rss_mb": round(rss / 2**20),
        "killed_over_memory": peak.killed,
    }


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=4_650_000)
    ap.add_argument("--years", type=int, default=1)
    ap.add_argument("--users", type=int, default=1100)
    ap.add_argument("--seed", type=int, default=2024)
    ap.add_argument("--dir", type=Path, required=True, help="where the files and logs go")
    ap.add_argument("--only", default=",".join(STEPS), help=f"steps to run ({','.join(STEPS)})")
    ap.add_argument("--month", default="2024-10", help="the report's month")
    ap.add_argument(
        "--kill-at-gb",
        type=float,
        default=16.0,
        help="kill a step whose processes hold more than this (GiB; 0: never)",
    )
    args = ap.parse_args()
    only = [s for s in args.only.split(",") if s]
    unknown = set(only) - set(STEPS)
    if unknown:
        ap.error(f"--only: unknown step(s) {', '.join(sorted(unknown))}")
    out: Path = args.dir
    out.mkdir(parents=True, exist_ok=True)
    # the history as yearly exports (one file a transaction, as an admin loads it), then the
    # latest 2% (about a month at five years) as the later load
    parts = [out / f"sacct-{k + 1}.txt" for k in range(args.years)]
    text, tail, db = parts[0], out / "sacct-tail.txt", out / "advisor.duckdb"
    rows: list[dict[str, object]] = []

    if not all(p.exists() for p in [*parts, tail]):
        from advisor.ingest.synth import SynthConfig, generate_parts

        cfg = SynthConfig(
            records=args.records,
            seed=args.seed,
            step_share=0.3,
            usage=True,
            years=args.years,
            users=args.users,
        )
        peak = TreePeak(os.getpid())
        t0 = time.perf_counter()
        written = generate_parts(cfg, [*parts, tail], 0.02)
        rss = peak.stop()
        secs = time.perf_counter() - t0
        size = sum(r.bytes_written for r in written) / 1e9
        print(
            f"synth: {sum(r.allocations for r in written):,} allocations, "
            f"{sum(r.lines for r in written):,} lines, {size:.2f} GB in {len(parts)} file(s) "
            f"and a tail of {written[-1].allocations:,} allocations, in {secs:.1f} s",
            flush=True,
        )
        rows.append(
            {"step": "synth", "rc": 0, "seconds": round(secs, 1), "peak_rss_mb": rss // 2**20}
        )

    bench = ROOT / "bench"
    plan: dict[str, list[list[str]]] = {
        "ingest": [
            [str(bench / "bench_ingest.py"), "--file", str(text), "--tail", str(tail)]
            + (["--more-files", *map(str, parts[1:])] if len(parts) > 1 else [])
            + ["--skip-pandas", "--skip-raw13", "--keep-db", str(db)]
        ],
        "dashboard": [[str(bench / "bench_dashboard.py"), "--db", str(db), "--repeat", "1"]],
        "ratios": [[str(bench / "bench_ratios.py"), "--db", str(db), "--repeats", "3"]],
        "report": [
            ["-m", "advisor", "report", "--db", str(db), "--month", args.month]
            + ["--out", str(out / "reports"), "--format", "json"],
            [str(bench / "bench_report.py"), "--db", str(db), "--repeats", "1"]
            + ["--month", args.month, "--skip-all-months"],
        ],
        "recommend": [
            ["-m", "advisor", "recommend", "--db", str(db), "--partition", "*", "--format", "json"]
        ],
        "export": [[str(bench / "bench_export.py"), "--db", str(db), "--out", str(out / "pq")]],
    }
    for step in only:
        if step != "ingest" and not db.exists():
            print(f"{step}: no {db} (run the ingest step first)", file=sys.stderr)
            return 2
        for k, argv in enumerate(plan[step]):
            name = step if k == 0 else f"{step}-{k + 1}"
            rows.append(run_step(name, argv, out, int(args.kill_at_gb * 2**30)))
    if db.exists():
        rows.append({"step": "database file", "gb": round(db.stat().st_size / 1e9, 2)})

    print(f"\n{args.records:,} allocations over {args.years} year(s), {args.users} users:")
    for r in rows:
        if "seconds" in r:
            print(
                f"  {r['step']:<14} exit {r['rc']}  {r['seconds']:>8} s  {r['peak_rss_mb']:>6} MB"
            )
        else:
            print(f"  {r['step']:<14} {r['gb']} GB")
    summary = {"records": args.records, "years": args.years, "users": args.users, "steps": rows}
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return 0 if all(r.get("rc", 0) == 0 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
