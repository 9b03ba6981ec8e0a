"""Benchmark: ``advisor export parquet`` of a 4.65M-job database, and Spark's time to advisor's
summary over the dataset.

Builds (or reuses, ``--db FILE``) a DuckDB file from ``advisor synth`` records ingested as a site
would, exports it (timed; size on disk and files per table), then computes P25/P50 cores per GPU
per cluster and GPU type, by jobs and by GPU-hours, three ways, each checked equal to the first:

- advisor over the DuckDB file (``ratio_summary``, the baseline),
- advisor over the dataset (``--parquet``: loaded into memory, then the same summary),
- Spark in local mode over ``DIR/jobs``, running examples/spark_ratios.py (session start-up
  timed apart).

    python bench/bench_export.py [--jobs 4650000] [--db PATH] [--out DIR] [--master local[2]]
    python bench/bench_export.py --db PATH --out DIR --reuse --skip-parquet   # Spark alone

``--reuse`` reads the dataset already in ``--out`` (exported from ``--db`` before) instead of
exporting again; ``--skip-parquet`` leaves out advisor over the dataset (at 46.5M jobs it takes
minutes and a 4 GB memory limit, docs/performance.md).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

KEYS = ("cluster", "gpu_type", "jobs", "gpu_hours", "p25", "p50")


def build_synth(path: Path, n_jobs: int) -> None:
    from advisor.ingest import ingest_files
    from advisor.ingest.synth import SynthConfig, generate

    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "sacct.txt.zst"
        generate(SynthConfig(records=n_jobs, seed=1), src)
        ingest_files(str(path), [src])


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def _summary(con: Any, weight: str) -> list[dict[str, Any]]:
    from advisor.ratios import RatioQuery, Weight, ratio_summary

    q = RatioQuery(by=("cluster", "gpu_type"), weight=Weight(weight))
    return [{k: r[k] for k in KEYS} for r in ratio_summary(con, q).rows()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=4_650_000)
    ap.add_argument("--db", type=Path, help="DuckDB file to use (built when missing)")
    ap.add_argument("--out", type=Path, help="dataset folder (default: a temporary one)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--reuse", action="store_true", help="use the dataset in --out as it is")
    ap.add_argument("--skip-parquet", action="store_true", help="leave out advisor --parquet")
    args = ap.parse_args(argv)

    from advisor import store
    from advisor.export import ExportConfig, export_parquet, open_dataset

    tmp = tempfile.TemporaryDirectory()
    db = args.db or Path(tmp.name) / "bench.duckdb"
    if not db.exists():
        secs, _ = timed(lambda: build_synth(db, args.jobs))
        print(f"built {db} (advisor synth + ingest, {args.jobs:,} jobs) in {secs:.1f} s")
    store.migrate_db(db)
    out = args.out or Path(tmp.name) / "dataset"
    con = store.connect(db, read_only=True)
    (n_jobs,) = con.execute("SELECT count(*) FROM jobs").fetchone() or (0,)
    con.close()
    print(f"database: {n_jobs:,} jobs, {db.stat().st_size / 2**20:,.0f} MiB")

    if args.reuse:
        if args.out is None or not (out / "jobs").is_dir():
            raise SystemExit("--reuse needs --out DIR holding an exported dataset (DIR/jobs)")
        size = sum(f.stat().st_size for f in (out / "jobs").rglob("*.parquet"))
        print(f"export: reused {out} (jobs: {size / 2**20:,.1f} MiB on disk)")
    else:
        secs, tables = timed(lambda: export_parquet(ExportConfig(out_dir=out, db=db)))
        total = 0
        for t in tables:
            files = [f for f in Path(t.path).rglob("*.parquet")]
            size = sum(f.stat().st_size for f in files)
            total += size
            print(f"  {t.table}: {t.rows:,} rows, {len(files)} files, {size / 2**20:,.1f} MiB")
        print(f"export: {secs:.1f} s, {total / 2**20:,.1f} MiB on disk")

    con = store.connect(db, read_only=True)
    want, base = {}, {}
    for weight in ("jobs", "gpu-hours"):
        base[weight], want[weight] = timed(lambda weight=weight: _summary(con, weight))
        print(
            f"advisor over the DuckDB file, by {weight}: {base[weight] * 1000:,.0f} ms (baseline)"
        )
    con.close()
    if not args.skip_parquet:
        secs, mem = timed(lambda: open_dataset(str(out)))
        print(f"advisor --parquet: dataset loaded in {secs:.1f} s")
        for weight in ("jobs", "gpu-hours"):
            secs, got = timed(lambda weight=weight: _summary(mem, weight))
            assert got == want[weight], weight
            print(
                f"advisor over the dataset, by {weight}: {secs * 1000:,.0f} ms "
                f"({secs / base[weight]:.1f}x the baseline; equal)"
            )
        mem.close()

    from examples.spark_ratios import ratios, read_jobs, session

    conf = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": "3g",
    }
    secs, spark = timed(lambda: session(args.master, conf))
    spark.sparkContext.setLogLevel("ERROR")
    print(f"Spark {spark.version} ({args.master}): session started in {secs:.1f} s")
    for weight in ("jobs", "gpu-hours"):
        secs, got = timed(lambda weight=weight: (read_jobs(spark, str(out)), ratios(spark, weight)))
        assert got[1] == want[weight], weight
        print(
            f"Spark, by {weight}: {secs:.1f} s to read and summarise "
            f"({secs / base[weight]:.0f}x the baseline; equal to advisor's)"
        )
    spark.stop()
    tmp.cleanup()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
