"""Benchmark: what measurement deciding costs (issue 49, item 6). The partition recommendation
over every job, without pressure records and with a share of the jobs measured (the curve,
the measured decision and the loss split on top), and the measured curve alone.

Writes N synthetic allocations (``advisor synth``), loads them, copies the database, and gives
SHARE of the started GPU jobs of the copy a pressure record (one host, the totals at the job's
end, a stall share that falls with cores per GPU: the sample generator's mechanism is too slow
to draw millions, and the cost does not depend on the values). Then, alternating the two
databases in one process, it times ``recommend_by_cluster`` (what ``advisor recommend
--partition '*'`` runs) and ``curve_of`` (``advisor pressure curve``).

    python bench/bench_measured.py                   # 1M allocations, 10% of GPU jobs measured
    python bench/bench_measured.py --records 4650000

Timings on a shared machine are noisy: the ratio of the two, measured in one process, is the
figure to compare.
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

from advisor import store  # noqa: E402
from advisor.ingest import ingest_files  # noqa: E402
from advisor.ingest.synth import SynthConfig, generate  # noqa: E402

_SPOOL = """
COPY (
    SELECT 'advisor.pressure/1' AS schema, cluster, CAST(job_id_raw AS VARCHAR) AS job_id,
        '' AS step, 'node-' || CAST(job_id_raw % 512 AS VARCHAR) AS host,
        strftime(start + to_seconds(CAST(elapsed_s AS BIGINT)), '%Y-%m-%dT%H:%M:%SZ')
            AS collected_at,
        'ok' AS status,
        elapsed_s * least(0.5, 0.45 * pow(0.3, greatest(cpus / gpus - 1, 0))) AS some_s,
        elapsed_s * least(0.5, 0.45 * pow(0.3, greatest(cpus / gpus - 1, 0))) / 5 AS full_s,
        0.5 * elapsed_s AS usage_s, 0.0 AS throttled_s, 0 AS nr_throttled
    FROM jobs WHERE start IS NOT NULL AND elapsed_s > 0 AND gpus > 0 AND cpus > 0
      AND hash(job_id_raw) % 1000 < {permille}
) TO '{path}' (FORMAT JSON)
"""


def _timed(fn) -> float:  # type: ignore[no-untyped-def]
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--share", type=float, default=0.10, help="share of GPU jobs measured")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=2024)
    args = ap.parse_args()
    from advisor.pressure.curve import CurveQuery, curve_of
    from advisor.recommend import RecommendContext
    from advisor.recommend.partitions import PartitionQuery, recommend_by_cluster

    with tempfile.TemporaryDirectory(prefix="bench-measured-") as tmpdir:
        tmp = Path(tmpdir)
        sacct = tmp / "sacct.txt"
        generate(SynthConfig(records=args.records, seed=args.seed), sacct)
        plain = tmp / "plain.duckdb"
        ingest_files(plain, [sacct])
        measured = tmp / "measured.duckdb"
        shutil.copy(plain, measured)
        spool = tmp / "pressure.jsonl"
        con = store.connect(measured)
        try:
            con.execute(_SPOOL.format(path=spool, permille=int(args.share * 1000)))
            [(jobs,)] = con.execute("SELECT count(*) FROM jobs WHERE gpus > 0").fetchall()
        finally:
            con.close()
        [loaded] = ingest_files(measured, [spool])
        print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
        print(f"{jobs:,} GPU jobs; {loaded.inserted:,} measured ({args.share:.0%} asked)")
        times: dict[str, list[float]] = {"plain": [], "measured": [], "curve": []}
        for _ in range(args.repeats):
            for name, db in (("plain", plain), ("measured", measured)):
                with RecommendContext.open(db=str(db)) as ctx:
                    q = PartitionQuery(db=str(db))
                    times[name].append(
                        _timed(lambda q=q, ctx=ctx: recommend_by_cluster(q, ctx=ctx))
                    )
            con = store.connect(measured, read_only=True)
            try:
                times["curve"].append(_timed(lambda con=con: curve_of(con, CurveQuery())))
            finally:
                con.close()
        best = {k: min(v) for k, v in times.items()}
        print(
            f"recommend --partition '*': no pressure {best['plain']:.2f} s, with "
            f"{args.share:.0%} measured {best['measured']:.2f} s = "
            f"{best['measured'] / best['plain']:.2f}x (best of {args.repeats} each)"
        )
        print(f"pressure curve (every group): {best['curve']:.2f} s")


if __name__ == "__main__":
    main()
