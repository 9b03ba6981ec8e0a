"""Comparing the ``jobs`` table of a real DuckDB file with what the submitted jobs must be.

Owns one assertion, :func:`assert_jobs_loaded`, that reads every loaded row of the given jobs
and reports all differences at once (job, field, loaded, expected), so a failing test says
exactly which parser got which real value wrong.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from pathlib import Path

import duckdb

from tests.slurm.jobset import CLUSTER, JobResult

# Every field the full formats (sacct -P wide, --json) carry.
ALL_FIELDS = (
    "cluster",
    "job_id",
    "user",
    "account",
    "partition",
    "state",
    "exit_code",
    "cpus",
    "gpus",
    "gpu_type",
    "gpu_type_raw",
    "nnodes",
    "req_cpus",
    "submit",
    "start",
    "end",
)

# A job cancelled while pending was allocated nothing: its cpus and nnodes may be NULL or 0,
# never the requested counts that sacct's NCPUS / NNodes show for it.
NO_ALLOCATION_FIELDS = frozenset({"cpus", "nnodes"})

# Its start: scontrol always says the cancel time, but what slurmdbd keeps depends on timing.
# Seen on the same 22.05 sandbox: sacct printed Start = the cancel time in some runs and
# Start "None" (JSON start 0) in others for the same held-then-cancelled job, so a loaded start
# must be NULL or exactly the cancel time, never anything else.
MAY_BE_UNSET_WHEN_NEVER_STARTED = frozenset({"start"})


def _expected_value(r: JobResult, name: str) -> object:
    e = r.expected
    values: dict[str, object] = {
        "cluster": CLUSTER,
        "job_id": r.job_id,
        "user": r.user,
        "account": e.account,
        "partition": e.partition,
        "state": e.state,
        "exit_code": e.exit_code,
        "cpus": e.cpus,
        "gpus": e.gpus,
        "gpu_type": e.gpu_type,
        "gpu_type_raw": e.gpu_type_raw,
        "nnodes": e.nnodes,
        "req_cpus": e.req_cpus,
        "submit": dt.datetime.fromisoformat(r.submit),
        "start": dt.datetime.fromisoformat(r.start) if r.start else None,
        "end": dt.datetime.fromisoformat(r.end) if r.end else None,
    }
    return values[name]


def differences(
    db: Path, results: Sequence[JobResult], fields: Iterable[str] = ALL_FIELDS
) -> list[str]:
    """Every (job, field) whose loaded value differs from the expected one, as readable lines."""
    fields = tuple(fields)
    cols = ", ".join(f'"{f}"' for f in fields)
    con = duckdb.connect(str(db), read_only=True)
    try:
        problems = []
        for r in results:
            rows = con.execute(
                f"SELECT {cols} FROM jobs WHERE cluster = ? AND job_id_raw = ?",  # noqa: S608
                [CLUSTER, r.job_id_raw],
            ).fetchall()
            if len(rows) != 1:
                problems.append(f"{r.job_id} ({r.key}): {len(rows)} rows loaded, expected 1")
                continue
            for name, got in zip(fields, rows[0], strict=True):
                want = _expected_value(r, name)
                if not r.expected.started and name in NO_ALLOCATION_FIELDS and got in (None, 0):
                    continue  # nothing was allocated: NULL and 0 both say so
                if (
                    not r.expected.started
                    and name in MAY_BE_UNSET_WHEN_NEVER_STARTED
                    and got is None
                ):
                    continue  # slurmdbd kept no start for it (see above)
                if got != want:
                    problems.append(
                        f"{r.job_id} ({r.key}) {name}: loaded {got!r}, expected {want!r}"
                    )
        return problems
    finally:
        con.close()


def assert_jobs_loaded(
    db: Path, results: Sequence[JobResult], fields: Iterable[str] = ALL_FIELDS
) -> None:
    problems = differences(db, results, fields)
    assert not problems, "loaded jobs differ from what was submitted:\n  " + "\n  ".join(problems)
