"""Benchmark: ratio summaries over a 4.65M-job table (the research's data size).

Builds a real DuckDB file (the advisor schema) with 4.65M allocations drawn in DuckDB SQL at
the research's distribution (teaching H100 P25 0.25 / P50 1, teaching A100 P25 1 / P50 2,
research H100 P50 8; plus CPU-only and never-started jobs), then times each summary and prints
its median time in ms and its ratio to baselines run in the same process on the same data:
a plain ``count(*) GROUP BY gpu_type`` and DuckDB's own ``quantile_cont`` per GPU type.

    python bench/bench_ratios.py [--jobs 4650000] [--repeats 7] [--db PATH] [--threads N]

Last, the Who page's rankings from the people cubes held in memory (advisor.ratios.inmemory,
what the dashboard uses) against DuckDB's ranking of the same query as the baseline, with
their reports checked equal.

Target (DESIGN.md): under 100 ms per summary. Timings on a shared machine are noisy; the
ratios to the baselines are the steadier figure.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import duckdb  # noqa: E402

from advisor import ratios, store  # noqa: E402
from advisor.ratios import RatioQuery, TargetQuery, Weight  # noqa: E402

# (cluster, gpu_type, share of jobs), and per group the ratio categories with their shares.
_RATIOS = [0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 16.0]
_GROUPS = [
    ("teaching", "H100", 0.22, [0.08, 0.30, 0.10, 0.22, 0.10, 0.08, 0.06, 0.00, 0.06]),
    ("teaching", "A100", 0.17, [0.00, 0.05, 0.10, 0.20, 0.30, 0.20, 0.10, 0.00, 0.05]),
    ("research", "H100", 0.20, [0.00, 0.02, 0.03, 0.05, 0.08, 0.31, 0.11, 0.15, 0.25]),
    ("research", "A100", 0.07, [0.00, 0.00, 0.05, 0.10, 0.20, 0.30, 0.25, 0.00, 0.10]),
    ("research", "L40S", 0.04, [0.00, 0.00, 0.00, 0.10, 0.20, 0.30, 0.30, 0.00, 0.10]),
]
_CPU_ONLY = 0.23
_Q2 = (dt.datetime(2024, 4, 1), dt.datetime(2024, 7, 1))
_NEVER_STARTED = 0.07

_BUILD_SQL = """
WITH g AS (
    SELECT * FROM (VALUES {groups}) AS t(gi, cluster, gpu_type, lo, hi)
), c AS (
    SELECT * FROM (VALUES {cats}) AS t(gi, ratio, lo, hi)
), r AS (
    SELECT i, random() AS u_group, random() AS u_ratio, random() AS u_gpus,
           random() AS u_time, random() AS u_user, random() AS u_state
    FROM range(?) AS t(i)
)
INSERT INTO jobs (cluster, job_id_raw, submit, job_id, "user", account, "partition", state,
                  start, elapsed_s, cpus, gpus, gpu_type, is_interactive)
SELECT
    coalesce(g.cluster, CASE WHEN r.u_group < 0.5 THEN 'teaching' ELSE 'research' END),
    r.i,
    TIMESTAMP '2024-01-01' + to_seconds(CAST(r.u_time * 366 * 86400 AS BIGINT)),
    CAST(r.i AS VARCHAR),
    'u' || CAST(floor(r.u_user * 2000) AS INTEGER),
    'acct' || CAST(floor(r.u_user * 2000) % 120 AS INTEGER),
    coalesce(lower(g.gpu_type), 'cpu'),
    ['COMPLETED', 'FAILED', 'TIMEOUT', 'CANCELLED'][1 + CAST(floor(pow(r.u_state, 3) * 4) AS INTEGER)],
    CASE WHEN r.u_group >= {started_hi} THEN NULL
         ELSE TIMESTAMP '2024-01-01' + to_seconds(CAST(r.u_time * 366 * 86400 AS BIGINT) + 60)
    END,
    CASE WHEN r.u_group >= {started_hi} THEN 0 ELSE 60 + CAST(r.u_ratio * 1e6 AS BIGINT) % 172800 END,
    CASE WHEN g.gi IS NULL THEN 1 + CAST(r.u_gpus * 32 AS INTEGER)
         ELSE greatest(1, CAST(c.ratio * gp.gpus AS INTEGER)) END,
    CASE WHEN g.gi IS NULL THEN 0 ELSE gp.gpus END,
    g.gpu_type,
    r.u_state < 0.15
FROM r
LEFT JOIN g ON r.u_group >= g.lo AND r.u_group < g.hi
LEFT JOIN c ON c.gi = g.gi AND r.u_ratio >= c.lo AND r.u_ratio < c.hi
CROSS JOIN LATERAL (
    SELECT [1, 1, 1, 2, 4, 4, 8, 8][1 + CAST(floor(r.u_gpus * 8) AS INTEGER)] AS gpus
) AS gp
"""


def _values() -> tuple[str, str, float]:
    groups, cats = [], []
    acc = 0.0
    for gi, (cluster, gtype, share, shares) in enumerate(_GROUPS):
        groups.append(f"({gi}, '{cluster}', '{gtype}', {acc!r}, {acc + share!r})")
        acc += share
        cacc = 0.0
        for ratio, s in zip(_RATIOS, shares, strict=True):
            if s > 0:
                cats.append(f"({gi}, {ratio!r}, {cacc!r}, {cacc + s!r})")
                cacc += s
    started_hi = 1.0 - _NEVER_STARTED
    assert abs(acc + _CPU_ONLY + _NEVER_STARTED - 1.0) < 1e-9
    return ", ".join(groups), ", ".join(cats), started_hi


def build(db: Path, jobs: int) -> None:
    groups, cats, started_hi = _values()
    con = store.connect(db)
    try:
        con.execute("DELETE FROM jobs")
        # Only constants of this script are formatted in; the size is a bound parameter.
        sql = _BUILD_SQL.format(groups=groups, cats=cats, started_hi=started_hi)
        con.execute(sql, [jobs])
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _time(fn: Callable[[], object], repeats: int) -> float:
    fn()  # warm: first touch of the file's blocks
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=4_650_000)
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--db", type=Path, default=None, help="reuse/keep this file")
    ap.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    args = ap.parse_args()

    tmp = tempfile.TemporaryDirectory()
    db = args.db or Path(tmp.name) / "bench.duckdb"
    t = time.perf_counter()
    if args.db is None or not db.exists():
        build(db, args.jobs)
        print(f"built {args.jobs:,} jobs in {time.perf_counter() - t:.1f} s -> {db}")
    con = store.connect(db)
    if args.threads:
        con.execute(f"SET threads = {int(args.threads)}")
    n = con.execute("SELECT count(*) FROM jobs").fetchone()
    print(f"jobs table: {n[0] if n else 0:,} rows; repeats {args.repeats} (median shown)")

    def baseline_count() -> object:
        return con.execute("SELECT gpu_type, count(*) FROM jobs GROUP BY gpu_type").fetchall()

    def baseline_quantile() -> object:
        return con.execute(
            "SELECT gpu_type, quantile_cont(cpus / gpus, [0.1, 0.25, 0.5, 0.75, 0.9]) "
            "FROM jobs WHERE gpus > 0 AND cpus > 0 AND start IS NOT NULL AND elapsed_s > 0 "
            "GROUP BY gpu_type"
        ).fetchall()

    who_q2 = RatioQuery(
        by=("user", "partition", "gpu_type"), weight=Weight.gpu_hours, start=_Q2[0], end=_Q2[1]
    )
    cases: list[tuple[str, Callable[[], object]]] = [
        ("by gpu_type", lambda: ratios.ratio_summary(con, RatioQuery(by=("gpu_type",)))),
        (
            "by cluster+gpu_type+month",
            lambda: ratios.ratio_summary(con, RatioQuery(by=("cluster", "gpu_type", "month"))),
        ),
        (
            "by gpu_type, gpu-hours weighted",
            lambda: ratios.ratio_summary(
                con, RatioQuery(by=("gpu_type",), weight=Weight.gpu_hours)
            ),
        ),
        (
            "by gpu_type, filtered (Q2, COMPLETED, >=2 GPUs, teaching)",
            lambda: ratios.ratio_summary(
                con,
                RatioQuery(
                    by=("gpu_type",),
                    start=dt.datetime(2024, 4, 1),
                    end=dt.datetime(2024, 7, 1),
                    states=("COMPLETED",),
                    min_gpus=2,
                    clusters=("teaching",),
                ),
            ),
        ),
        ("by user (2,000 groups)", lambda: ratios.ratio_summary(con, RatioQuery(by=("user",)))),
        ("by account (120 groups)", lambda: ratios.ratio_summary(con, RatioQuery(by=("account",)))),
        (
            "by user, Q2",
            lambda: ratios.ratio_summary(con, RatioQuery(by=("user",), start=_Q2[0], end=_Q2[1])),
        ),
        (
            "by user, COMPLETED",
            lambda: ratios.ratio_summary(con, RatioQuery(by=("user",), states=("COMPLETED",))),
        ),
        (
            "by account, filtered (Q2, COMPLETED, >=2 GPUs, teaching)",
            lambda: ratios.ratio_summary(
                con,
                RatioQuery(
                    by=("account",),
                    start=_Q2[0],
                    end=_Q2[1],
                    states=("COMPLETED",),
                    min_gpus=2,
                    clusters=("teaching",),
                ),
            ),
        ),
        (
            "by user+partition+gpu_type, GPU-hours, Q2 (every group)",
            lambda: ratios.ratio_summary(con, who_q2),
        ),
        (
            "the same, top 15 below 8 cores/GPU (the Who page)",
            lambda: ratios.below_target(con, TargetQuery(who_q2, fixed_cores_per_gpu=8.0)),
        ),
        (
            "by account+month (1,440 groups)",
            lambda: ratios.ratio_summary(con, RatioQuery(by=("account", "month"))),
        ),
        (
            "by user+month (24,000 groups)",
            lambda: ratios.ratio_summary(con, RatioQuery(by=("user", "month"))),
        ),
        (
            "by gpu_type, mid-month range (reads jobs)",
            lambda: ratios.ratio_summary(
                con,
                RatioQuery(
                    by=("gpu_type",),
                    start=dt.datetime(2024, 4, 15),
                    end=dt.datetime(2024, 6, 15),
                ),
            ),
        ),
        (
            "by interactive+gpu_count",
            lambda: ratios.ratio_summary(con, RatioQuery(by=("interactive", "gpu_count"))),
        ),
        (
            "distribution by gpu_type (histogram + ECDF)",
            lambda: ratios.ratio_distribution(con, RatioQuery(by=("gpu_type",))),
        ),
    ]
    t = time.perf_counter()
    cube_rows = ratios.refresh_ratio_cube(con)
    print(
        f"cubes rebuilt (what every ingest pays) in {(time.perf_counter() - t) * 1000:.0f} ms "
        f"({cube_rows:,} ratio_cube rows)"
    )
    t = time.perf_counter()
    month_rows = ratios.refresh_people_months(con)
    print(
        f"per-month people cube built (on first use) in {(time.perf_counter() - t) * 1000:.0f} ms "
        f"({month_rows:,} rows)"
    )
    base = _time(baseline_count, args.repeats)
    base_q = _time(baseline_quantile, args.repeats)
    print(f"{'baseline: count(*) GROUP BY gpu_type':58s} {base:8.1f} ms   1.00x")
    print(
        f"{'baseline: DuckDB quantile_cont GROUP BY gpu_type':58s} {base_q:8.1f} ms "
        f"{base_q / base:6.2f}x"
    )
    misses = []
    for name, fn in cases:
        ms = _time(fn, args.repeats)
        if ms >= 100:
            misses.append(name)
        print(f"{name:58s} {ms:8.1f} ms {ms / base:6.2f}x  ({ms / base_q:.2f}x quantile_cont)")
    print(
        f"{len(cases) - len(misses)} of {len(cases)} summaries under the 100 ms target"
        + (f"; over it: {'; '.join(misses)}" if misses else "")
        + " (noisy shared machine)"
    )
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    # a report holds its figures as columns; RatioGroup objects are built on first use of
    # .groups, which for tens of thousands of groups costs more than the summary itself
    report = ratios.ratio_summary(con, RatioQuery(by=("user", "month")))
    ms = _time(report.table.groups, args.repeats)
    print(
        f"not a summary: {len(report.table):,} user+month groups as RatioGroup objects "
        f"(report.groups) {ms:.1f} ms {ms / base:.2f}x"
    )
    print("the same summaries computed from the jobs table (use_cube=False), for comparison:")
    for name, _fn in cases[:3]:
        q = (
            RatioQuery(by=("gpu_type",))
            if "cluster" not in name
            else RatioQuery(by=("cluster", "gpu_type", "month"))
        )
        ms = _time(lambda q=q: ratios.ratio_summary(con, q, use_cube=False), args.repeats)
        print(f"  {name:56s} {ms:8.1f} ms {ms / base:6.2f}x")
    _ranking_in_memory(con, args.repeats)
    con.close()
    tmp.cleanup()


def _ranking_in_memory(con: duckdb.DuckDBPyConnection, repeats: int) -> None:
    """The Who page's rankings (top 100 below 8 cores per GPU, by account or user with
    cluster, partition and GPU type), from the people cubes held in memory
    (advisor.ratios.inmemory, what the dashboard uses) against DuckDB's ranking, the baseline,
    in the same process; each pair of reports must be equal."""
    from advisor.ratios.inmemory import PeopleInMemory

    t = time.perf_counter()
    memory = PeopleInMemory.load(con)
    if memory is None:
        print("people cubes not loaded in memory (stale or too large)")
        return
    rows = sum(len(r.pid) for part in (memory.all_time, memory.months) for r in part)
    print(
        f"the Who page's rankings, held in memory ({rows:,} cube rows loaded in "
        f"{(time.perf_counter() - t) * 1000:.0f} ms) against DuckDB's ranking:"
    )
    for who in ("account", "user"):
        for label, (start, end) in (("all time", (None, None)), ("Q2", _Q2)):
            q = RatioQuery(
                by=(who, "cluster", "partition", "gpu_type"),
                weight=Weight.gpu_hours,
                start=start,
                end=end,
            )
            tq = TargetQuery(q, fixed_cores_per_gpu=8.0, top=100)
            if memory.below_target(tq) != ratios.below_target(con, tq):
                raise SystemExit(f"the rankings differ: {who}, {label}")
            sql = _time(lambda tq=tq: ratios.below_target(con, tq), repeats)
            mem = _time(lambda tq=tq: memory.below_target(tq), repeats)
            print(
                f"  by {who:7s}, {label:9s} DuckDB {sql:7.1f} ms, memory {mem:7.1f} ms "
                f"({mem / sql:.2f}x)"
            )


if __name__ == "__main__":
    main()
