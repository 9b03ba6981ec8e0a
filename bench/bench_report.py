"""Benchmark: the monthly report on a database of the research's size (4.65M jobs, one year).

Builds the same DuckDB file as ``bench_ratios.py`` (4.65M allocations over 2024 at the
research's distribution; ``--db`` reuses one), then times, each as the median of ``--repeats``:

- ``load_inputs``: the recommendations over every job (``recommend_partitions``), the model,
  the prices (once per ``advisor report`` run);
- ``build_report`` of one month (every section's core calls);
- ``render_html`` (template plus the inlined Vega bundle) and ``write_report`` with PNG charts;
- the whole ``run_reports --all-months`` (12 months) once.

Baselines, run in the same process on the same file: one ``ratio_summary`` by GPU type for the
month (the report makes four such calls plus data quality), and a plain
``count(*) ... GROUP BY gpu_type`` for the month.

    python bench/bench_report.py [--jobs 4650000] [--repeats 5] [--db PATH] [--month 2024-10]

Timings on a shared 2-core machine are noisy; the ratios to the baselines are the steadier
figure. No target in DESIGN.md; a monthly batch job has minutes, the point is to see where the
time goes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from bench_ratios import build  # noqa: E402  (the 4.65M-job table, shared with bench_ratios)

from advisor import report, store  # noqa: E402
from advisor.ratios import RatioQuery, ratio_summary  # noqa: E402


def _median_ms(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm: first touch of the file's blocks, template and bundle caches
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000.0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=4_650_000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--db", type=Path, default=None, help="reuse/keep this file")
    ap.add_argument("--month", default="2024-10")
    ap.add_argument(
        "--skip-all-months", action="store_true", help="not the whole run_reports --all-months"
    )
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory()
    db = args.db or Path(tmp.name) / "bench.duckdb"
    if args.db is None or not db.exists():
        t = time.perf_counter()
        build(db, args.jobs)
        print(f"built {args.jobs:,} jobs in {time.perf_counter() - t:.1f} s -> {db}")
    month = report.parse_month(args.month)
    out = Path(tmp.name) / "reports"
    cfg = report.ReportConfig(out_dir=out, month=args.month)

    t = time.perf_counter()
    inputs = report.load_inputs(cfg, db)
    inputs_ms = (time.perf_counter() - t) * 1000.0
    con = store.connect(db, read_only=True)
    row = con.execute("SELECT count(*) FROM jobs").fetchone()
    print(
        f"jobs table: {row[0] if row else 0:,} rows; month {month.label}; "
        f"repeats {args.repeats} (median shown)"
    )

    def baseline_count() -> object:
        return con.execute(
            "SELECT gpu_type, count(*) FROM jobs WHERE start >= ? AND start < ? GROUP BY 1",
            [month.start, month.end],
        ).fetchall()

    def baseline_summary() -> object:
        return ratio_summary(con, RatioQuery(by=("gpu_type",), start=month.start, end=month.end))

    built: list[report.MonthlyReport] = []

    def build_month() -> object:
        built[:] = [report.build_report(con, month, None, inputs)]
        return built[0]

    count_ms = _median_ms(baseline_count, args.repeats)
    summary_ms = _median_ms(baseline_summary, args.repeats)
    build_ms = _median_ms(build_month, args.repeats)
    render_ms = _median_ms(lambda: report.render_html(built[0]), args.repeats)
    write_ms = _median_ms(
        lambda: report.write_report(built[0], out, png=True), max(1, args.repeats // 2)
    )
    con.close()

    results: list[object] = []
    all_s = 0.0
    if not args.skip_all_months:
        t = time.perf_counter()
        results = list(report.run_reports(report.ReportConfig(out_dir=out, all_months=True), db))
        all_s = time.perf_counter() - t

    print(f"{'step':<44}{'ms':>10}{'x count':>10}{'x summary':>11}")
    for name, ms in (
        ("baseline: count(*) by GPU type, one month", count_ms),
        ("baseline: ratio_summary by GPU type, month", summary_ms),
        ("build_report (one month, every section)", build_ms),
        ("render_html (template + inlined Vega)", render_ms),
        ("write_report with PNG charts", write_ms),
        ("load_inputs (recommend_partitions, once)", inputs_ms),
    ):
        print(f"{name:<44}{ms:>10.1f}{ms / count_ms:>10.1f}{ms / summary_ms:>11.1f}")
    html = built[0]
    if results:
        print(
            f"run_reports --all-months: {len(results)} months in {all_s:.1f} s "
            f"({all_s / len(results):.2f} s per month, inputs included)"
        )
    print(f"month {html.month}: {html.quality.gpu_jobs:,} GPU jobs")


if __name__ == "__main__":
    main()
