"""The ``ingests`` and ``rejects`` bookkeeping of every load, of jobs (advisor.ingest) and of
node inventories (advisor.ingest.nodes): a load's row opened inside its transaction, its rejects kept
beside it, the row closed with its counts; a source refused whole is a failed load with its
reason as its one reject. SQL: ``advisor/sql/ingests/``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

import duckdb
import pyarrow as pa

from advisor.ingest.records import Reject
from advisor.store import query


def utc_now() -> dt.datetime:
    """The wall clock in UTC, naive as every stored TIMESTAMP. (DuckDB's now() is the start of
    the transaction: a row's start and finish would read the same.)"""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class IngestRow:
    """What opens a load's ``ingests`` row."""

    source: str
    format: str
    cluster: str | None
    started_at: dt.datetime
    compression: str | None = None
    source_tz: str = "UTC"
    content_hash: str | None = None  # known up front for a node inventory, else set later
    lines_read: int = 0


@dataclass(frozen=True)
class IngestCounts:
    """What closes a load's ``ingests`` row. ``missing_fields`` None: the source has no
    field catalogue (a node inventory)."""

    rows_read: int
    lines_read: int
    inserted: int
    updated: int
    unchanged: int
    rejected: int
    missing_fields: tuple[str, ...] | None = None
    disabled_analyses: tuple[str, ...] | None = None


def open_ingest(con: duckdb.DuckDBPyConnection, row: IngestRow) -> int:
    """Insert the load's ``ingests`` row (in the open transaction); returns its id."""
    found = con.execute(query("ingests/open"), row.__dict__).fetchone()
    assert found is not None
    return int(found[0])


def finish_ingest(con: duckdb.DuckDBPyConnection, ingest_id: int, counts: IngestCounts) -> None:
    """Close the load's row with its counts and status 'done'."""
    params = {**counts.__dict__, "ingest_id": ingest_id, "finished_at": utc_now()}
    for key in ("missing_fields", "disabled_analyses"):
        params[key] = None if params[key] is None else list(params[key])
    con.execute(query("ingests/finish"), params)


def set_content_hash(con: duckdb.DuckDBPyConnection, ingest_id: int, digest: str | None) -> None:
    con.execute(query("ingests/content_hash"), {"content_hash": digest, "ingest_id": ingest_id})


def store_rejects(
    con: duckdb.DuckDBPyConnection, ingest_id: int, source: str, rejects: Sequence[Reject]
) -> None:
    """Keep the load's rejects in ``rejects``, in the order given."""
    if not rejects:
        return
    table = pa.table(
        {
            "ingest_id": pa.array([ingest_id] * len(rejects), pa.int64()),
            "source": pa.array([source] * len(rejects), pa.string()),
            "line_no": pa.array([r.line_no for r in rejects], pa.int64()),
            "field": pa.array([r.field for r in rejects], pa.string()),
            "raw": pa.array([r.raw for r in rejects], pa.string()),
            "reason": pa.array([r.reason for r in rejects], pa.string()),
        }
    )
    con.register("ing_rejects", table)
    try:
        con.execute(query("ingests/insert_rejects"))
    finally:
        con.unregister("ing_rejects")


def record_refusal(con: duckdb.DuckDBPyConnection, row: IngestRow, reason: str) -> None:
    """Keep a source refused whole (corrupt or truncated archive, unreadable, no header): an
    ``ingests`` row with status 'failed' and its reason in ``rejects`` (no line), committed on
    their own; nothing of the source is in ``jobs``."""
    con.execute("BEGIN TRANSACTION")
    try:
        ingest_id = open_ingest(con, row)
        store_rejects(con, ingest_id, row.source, [Reject(None, "", reason)])
        con.execute(query("ingests/refuse"), {"finished_at": utc_now(), "ingest_id": ingest_id})
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def mark_failed(con: duckdb.DuckDBPyConnection, ingest_id: int) -> None:
    """A committed load that stored nothing: its row says 'failed' (its rejects stay)."""
    con.execute(query("ingests/mark_failed"), {"ingest_id": ingest_id})
