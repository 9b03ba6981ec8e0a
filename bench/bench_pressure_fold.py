"""Benchmark: folding CPU pressure onto jobs after a month's load, the batch's jobs alone
against every job of the history (what each load did before issue 40's fix).

Writes N synthetic allocations (``advisor synth``), loads all but the last SHARE of them, gives
every started job of that history a pressure record (one host, its cgroup's totals at its end:
a centre whose collector runs on every node), loads those, then loads the last SHARE (the next
month's sacct file) into two copies of that database and times the fold after it in each: the
batch's jobs only (``pipeline.fold_pressure(con, since)``, what ``advisor ingest`` runs now)
and every job (``since=None``). The two copies must end with the same pressure figures.

    python bench/bench_pressure_fold.py                      # 1M allocations, the last 2%
    python bench/bench_pressure_fold.py --records 4650000

Timings on a shared machine are noisy: the ratio of the two folds, measured in one process
on copies of one database, is the figure to compare.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_ingest import split_at_allocation  # noqa: E402

from advisor import store  # noqa: E402
from advisor.ingest import IngestOptions, ingest_files, pipeline  # noqa: E402
from advisor.ingest.synth import SynthConfig, generate  # noqa: E402

# One record per started job: its cgroup's totals read at its end (the node agent's epilog).
_SPOOL = """
COPY (
    SELECT 'advisor.pressure/1' AS schema, cluster, CAST(job_id_raw AS VARCHAR) AS job_id,
        '' AS step, 'node-' || CAST(job_id_raw % 512 AS VARCHAR) AS host,
        strftime(start + to_seconds(CAST(elapsed_s AS BIGINT)), '%Y-%m-%dT%H:%M:%SZ')
            AS collected_at,
        'ok' AS status, 0.1 * elapsed_s AS some_s, 0.02 * elapsed_s AS full_s,
        0.5 * elapsed_s AS usage_s, 0.0 AS throttled_s, 0 AS nr_throttled,
        '0-3' AS cpus, 4 AS cpu_count
    FROM jobs WHERE start IS NOT NULL AND elapsed_s > 0
) TO '{path}' (FORMAT JSON)
"""
_FIGURES = (
    "SELECT cluster, job_id_raw, submit, psi_status, psi_some_s, psi_full_s, psi_covered_s,"
    " psi_hosts FROM jobs ORDER BY ALL"
)


def _timed_load(db: Path, inc: Path, every_job: bool) -> tuple[float, float, int]:
    """Load ``inc`` into ``db`` and fold after it: (load s, fold s, jobs the fold changed)."""
    con = store.connect(db)
    try:
        pipeline.prepare(con)
        since = pipeline.last_ingest(con)
        t0 = time.perf_counter()
        pipeline.ingest_path(con, inc, IngestOptions())
        t1 = time.perf_counter()
        changed = pipeline.fold_pressure(con, None if every_job else since)
        return t1 - t0, time.perf_counter() - t1, changed
    finally:
        con.close()


def _figures(db: Path) -> list[tuple[object, ...]]:
    con = store.connect(db, read_only=True)
    try:
        return con.execute(_FIGURES).fetchall()
    finally:
        con.close()


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--share", type=float, default=0.02, help="the later month's share of lines")
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-pressure-") as tmpdir:
        tmp = Path(tmpdir)
        sacct = tmp / "sacct.txt"
        generate(SynthConfig(records=args.records, seed=args.seed), sacct)
        base, inc = split_at_allocation(sacct, args.share, tmp)
        db = tmp / "history.duckdb"
        ingest_files(db, [base])
        spool = tmp / "pressure.jsonl"
        con = store.connect(db)
        try:
            con.execute(_SPOOL.format(path=spool))
            [(jobs,)] = con.execute("SELECT count(*) FROM jobs").fetchall()
        finally:
            con.close()
        t0 = time.perf_counter()
        [records] = ingest_files(db, [spool])
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(
            f"history: {jobs:,} jobs; {records.inserted:,} pressure records loaded and folded"
            f" in {time.perf_counter() - t0:.1f} s"
        )
        runs: dict[bool, list[float]] = {True: [], False: []}
        for repeat in range(2):
            for every_job in (True, False):
                copy = tmp / f"copy-{every_job}.duckdb"
                shutil.copy(db, copy)
                load_s, fold_s, changed = _timed_load(copy, inc, every_job)
                runs[every_job].append(fold_s)
                way = "every job" if every_job else "the batch's jobs"
                print(
                    f"  the month's load {load_s:6.2f} s, then the fold over {way:16s}"
                    f" {fold_s:6.2f} s ({changed:,} jobs changed)"
                )
            if repeat == 0:
                same = _figures(tmp / "copy-True.duckdb") == _figures(tmp / "copy-False.duckdb")
                print(f"  the same pressure figures both ways: {same}")
                if not same:
                    raise SystemExit("the two folds disagree")
        best_all, best_batch = min(runs[True]), min(runs[False])
        print(
            f"fold after a {args.share:.0%} month: every job {best_all:.2f} s, the batch's jobs"
            f" {best_batch:.2f} s = {best_batch / best_all:.1%} of it (best of 2 each)"
        )


if __name__ == "__main__":
    main()
