"""A small real DuckDB for the report tests: two clusters, two months, known ratios and gaps.

Rows go in through the store's own schema (migrations applied by ``store.connect``); nothing is
mocked. The values are chosen so that the expected percentiles, gaps and reject counts can be
worked out by hand (see the test modules).
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path

from advisor import store

# 2024-09, cluster c1, H100, 4 GPUs each: CPUs per job -> cores per GPU 0.25 .. 8
SEPT_H100_CPUS = (1, 1, 2, 4, 4, 8, 8, 16, 32, 32)
# 2024-10, cluster c1: (account, partition, gpu_type, gpus, cpus) repeated on several days
OCT_JOBS = (
    ("teach", "gpu", "H100", 4, 1),
    ("teach", "gpu", "H100", 4, 2),
    ("teach", "gpu", "H100", 8, 2),
    ("research", "gpu-long", "H100", 4, 32),
    ("research", "gpu-long", "H100", 4, 16),
    ("bio", "gpu", "A100", 2, 2),
    ("bio", "gpu", "A100", 1, 4),
)
# October days on which jobs start; 10..12 left empty on purpose (a 3-day gap)
OCT_DAYS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 14, 15, 20, 21, 22, 28)
GAP = (dt.date(2024, 10, 10), dt.date(2024, 10, 12))  # and 16..19, 23..27 also empty


def build_db(path: Path) -> Path:
    """Create the database at ``path`` and fill it; return the path."""
    con = store.connect(path)
    con.execute(
        "INSERT INTO ingests (ingest_id, source, format, started_at, finished_at, rows_read,"
        " inserted, rejected, status) VALUES"
        " (1, 'sept.txt', 'sacct-text', TIMESTAMP '2024-10-01', TIMESTAMP '2024-10-01', 10, 10, 0, 'done'),"
        " (2, 'oct.txt', 'sacct-text', TIMESTAMP '2024-11-01', TIMESTAMP '2024-11-01', 115, 112, 3, 'done')"
    )
    # the ids above were given, not drawn: draw them so that a later load gets the next one
    con.execute("SELECT nextval('ingest_id_seq') FROM range(2)").fetchall()
    con.executemany(
        "INSERT INTO rejects (ingest_id, source, line_no, field, raw, reason) VALUES (?, ?, ?, ?, ?, ?)",
        [
            (2, "oct.txt", 17, "AllocTRES", "17|x|gres/gpu=zz", "unparsable TRES"),
            (2, "oct.txt", 40, "AllocTRES", "40|x|gres/gpu=?", "unparsable TRES"),
            (2, "oct.txt", 99, "Start", "99|x|2024-13-01", "bad timestamp"),
        ],
    )
    rows = []
    job = 1000
    for i, cpus in enumerate(SEPT_H100_CPUS):
        start = dt.datetime(2024, 9, 1 + 2 * i, 8, 0)
        rows.append(("c1", job, start, "teach", "gpu", "H100", 4, cpus, 3600, 1))
        job += 1
    for day in OCT_DAYS:
        for k, (account, partition, gpu_type, gpus, cpus) in enumerate(OCT_JOBS):
            start = dt.datetime(2024, 10, day, 6 + k, 30)
            rows.append(("c1", job, start, account, partition, gpu_type, gpus, cpus, 7200, 2))
            job += 1
    # a second cluster in October only, and a CPU-only job that never counts as a GPU job
    rows.append(("c2", 1, dt.datetime(2024, 10, 3, 12), "teach", "gpu", "H100", 8, 64, 1800, 2))
    rows.append(("c1", job, dt.datetime(2024, 10, 5, 1), "teach", "cpu", None, 0, 16, 600, 2))
    con.executemany(
        'INSERT INTO jobs (cluster, job_id_raw, submit, job_id, start, "end", elapsed_s,'
        ' account, "partition", "user", state, gpu_type, gpu_type_raw, gpus, cpus, ingest_id)'
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'COMPLETED', ?, lower(?), ?, ?, ?)",
        [
            (
                c,
                j,
                s - dt.timedelta(minutes=5),
                str(j),
                s,
                s + dt.timedelta(seconds=el),
                el,
                acct,
                part,
                f"u{j % 7}",
                gt,
                gt,
                g,
                cpus,
                ing,
            )
            for c, j, s, acct, part, gt, g, cpus, el, ing in rows
        ],
    )
    con.close()
    return path


def test_the_fixture_database_holds_what_the_report_tests_assume(tmp_path):
    con = store.connect(build_db(tmp_path / "f.duckdb"), read_only=True)
    counts = dict(
        con.execute(
            "SELECT strftime(start, '%Y-%m'), count(*) FROM jobs WHERE gpus > 0 GROUP BY 1"
        ).fetchall()
    )
    con.close()
    assert counts == {"2024-09": len(SEPT_H100_CPUS), "2024-10": len(OCT_JOBS) * len(OCT_DAYS) + 1}
