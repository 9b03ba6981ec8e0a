"""Reading back what was loaded: allocation rows, the ingest log, the rejects.

Owns :func:`list_jobs` (``advisor jobs``), :func:`list_ingests` and :func:`list_rejects` (the
dashboard's Data page and the monthly report's data-quality section). Times come back as ISO
8601 strings in UTC (``2024-03-01T12:00:00Z``).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb

from advisor.errors import UsageError
from advisor.ingest.records import JOB_COLUMNS, JobFilter
from advisor.store import query, quote_ident, render

_ALL_JOB_COLUMNS = (
    "cluster",
    "job_id",
    "job_id_raw",
    "array_job_id",
    "array_task_id",
    "het_job_id",
    "het_job_offset",
    "user",
    "uid",
    "group",
    "account",
    "partition",
    "qos",
    "job_name",
    "state",
    "state_raw",
    "exit_code",
    "submit",
    "eligible",
    "start",
    "end",
    "elapsed_s",
    "timelimit_s",
    "nnodes",
    "cpus",
    "gpus",
    "gpu_type",
    "gpu_type_raw",
    "gpu_types",
    "mem_mb",
    "billing",
    "node_list",
    "req_cpus",
    "req_gpus",
    "req_mem_mb",
    "alloc_tres",
    "req_tres",
    "submit_line",
    "work_dir",
    "is_interactive",
    "interactive_evidence",
    "exclusive",
    "ingest_id",
    "updated_at",
    "cpu_used_s",
    "cpu_time_alloc_s",
    "mem_used_max_mb",
    "gpu_util_mean_pct",
    "gpu_util_max_pct",
    "gpu_mem_max_mb",
    "usage_source",
    "cpu_efficiency",
)


def _iso(value: Any) -> Any:
    if isinstance(value, dt.datetime):
        return value.replace(tzinfo=None).isoformat(timespec="seconds") + "Z"
    return value


def _rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description or []]
    return [{n: _iso(v) for n, v in zip(names, row, strict=True)} for row in cur.fetchall()]


def list_jobs(con: duckdb.DuckDBPyConnection, flt: JobFilter) -> list[dict[str, Any]]:
    """Allocation rows matching ``flt``, newest submit first, as dicts of JOB_COLUMNS."""
    cols = flt.columns or JOB_COLUMNS
    unknown = [c for c in cols if c not in _ALL_JOB_COLUMNS]
    if unknown:
        raise UsageError(f"unknown job column(s): {', '.join(unknown)}")
    if flt.limit is not None and flt.limit < 0:
        raise UsageError("--limit must be 0 or more")
    select = ", ".join(quote_ident(c) for c in cols)
    params = {
        "cluster": flt.cluster,
        "since": flt.since,
        "until": flt.until,
        "state": flt.state.upper() if flt.state else None,
        "gpu_type": flt.gpu_type,
        "account": flt.account,
        "user": flt.user,
        "lim": flt.limit,
    }
    return _rows(con.execute(render("ingest/list_jobs", columns=select), params))


def list_ingests(con: duckdb.DuckDBPyConnection, limit: int = 100) -> list[dict[str, Any]]:
    """The newest loads first: source, format, counts, missing fields, status, times."""
    return _rows(con.execute(query("ingest/list_ingests"), {"lim": limit}))


def list_rejects(
    con: duckdb.DuckDBPyConnection, ingest_id: int | None = None, limit: int = 100
) -> list[dict[str, Any]]:
    """Rejected lines (of one ingest, or all), in file order: source, line, field, reason, raw."""
    return _rows(con.execute(query("ingest/list_rejects"), {"ingest_id": ingest_id, "lim": limit}))
