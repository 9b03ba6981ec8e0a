"""Loading CPU pressure records (schema ``advisor.pressure/1``, JSON lines written by the node
collector :mod:`advisor.pressure.collector` or by ``advisor pressure import-prometheus``) into
``pressure_records``, and folding them onto the jobs they belong to (``ingest/pressure_fold``).

Each line is checked on its own: a line that is no JSON object, of another schema, or with a
field of the wrong kind or out of its range is rejected (file, line, field, reason in
``rejects``) and the other lines load. A record loaded again changes nothing.
"""

from __future__ import annotations

import datetime as dt
import io
import json
import math
import re
from collections.abc import Iterator
from typing import Any

import duckdb
import pyarrow as pa

from advisor.errors import InputError
from advisor.ingest import bookkeeping, detect, stages
from advisor.ingest.records import IngestOptions, IngestSummary, Reject, Source
from advisor.pressure import collector
from advisor.store import query

SCHEMA_PREFIX = "advisor.pressure/"
SUPPORTED = ("advisor.pressure/1",)
STATUSES = ("ok", "unavailable")
# A cgroup's totals never exceed its age; ten years of seconds bounds any real one.
MAX_SECONDS = 10 * 365 * 86400.0
CHUNK_LINES = 100_000
"""Lines checked and stored at a time (a chunk's rows as Python dicts: about 100 MB)."""
COLUMNS = (
    "cluster",
    "job_id",
    "step",
    "host",
    "collected_at",
    "status",
    "some_s",
    "full_s",
    "usage_s",
    "throttled_s",
    "nr_throttled",
    "cpus",
    "cpu_count",
)


def looks_like_pressure(head: bytes) -> bool:
    """Whether the first line of ``head`` is a pressure record (a JSON object of our schema)."""
    first = head.lstrip().split(b"\n", 1)[0]
    return first.startswith(b"{") and b'"schema"' in first and SCHEMA_PREFIX.encode() in first


class BadField(ValueError):
    def __init__(self, field: str, why: str) -> None:
        super().__init__(why)
        self.field = field


# control characters, and the stand-ins of bytes that were no UTF-8 (read as surrogates)
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


def _text(rec: dict[str, Any], key: str, *, required: bool, limit: int = 255) -> str:
    v = rec.get(key)
    if v is None:
        if required:
            raise BadField(key, "missing")
        return ""
    if not isinstance(v, str):
        raise BadField(key, f"not a string: {json.dumps(v)[:40]}")
    if len(v.encode("utf-8", "surrogateescape")) > limit:
        raise BadField(key, f"longer than {limit} bytes")
    if _UNPRINTABLE.search(v):
        raise BadField(key, "holds a control character or bytes that are not UTF-8")
    if required and not v.strip():
        raise BadField(key, "empty")
    return v


def _cpus(rec: dict[str, Any]) -> tuple[str | None, int | None]:
    """``cpus`` (a CPU list) and ``cpu_count``, which must name the same number of CPUs."""
    text = _text(rec, "cpus", required=False, limit=4096) or None
    count = _count(rec, "cpu_count", collector.MAX_CPUS)
    if text is None:
        return None, count
    named = collector.count_cpus(text)
    if named is None:
        raise BadField("cpus", f"{text[:40]!r} is not a CPU list such as 0-3,8")
    if count is not None and count != named:
        raise BadField("cpu_count", f"{count} where cpus {text[:40]!r} names {named}")
    return text, named


def _seconds(rec: dict[str, Any], key: str) -> float | None:
    v = rec.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        raise BadField(key, f"not a finite number: {json.dumps(v)[:40]}")
    if v < 0 or v > MAX_SECONDS:
        raise BadField(key, f"{v:g} s is outside 0 to {MAX_SECONDS:g}")
    return float(v)


def _count(rec: dict[str, Any], key: str, limit: int) -> int | None:
    v = rec.get(key)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= limit:
        raise BadField(key, f"not a count from 0 to {limit}: {json.dumps(v)[:40]}")
    return v


def _time(rec: dict[str, Any]) -> dt.datetime:
    v = rec.get("collected_at")
    if not isinstance(v, str):
        raise BadField("collected_at", "missing or not a string")
    try:
        t = dt.datetime.fromisoformat(v.replace("Z", "+00:00"))
    except ValueError as exc:
        raise BadField("collected_at", f"not a time: {v[:40]!r}") from exc
    if t.tzinfo is not None:
        t = t.astimezone(dt.UTC).replace(tzinfo=None)
    if (
        not dt.datetime(2000, 1, 1)
        <= t
        <= dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(days=1)
    ):
        raise BadField("collected_at", f"{v[:40]} is outside 2000-01-01 to a day after now")
    return t


def check_record(line: str) -> dict[str, Any]:
    """One line as a row of ``pressure_records``; raises :class:`BadField` naming the field."""
    if len(line) > MAX_LINE:
        raise BadField("(line)", f"longer than {MAX_LINE:,} characters: not a record")
    try:
        rec = json.loads(line)
    except (ValueError, RecursionError) as exc:
        raise BadField("(line)", f"not JSON: {str(exc)[:60]}") from exc
    if not isinstance(rec, dict):
        raise BadField("(line)", "not a JSON object")
    schema = rec.get("schema")
    if schema not in SUPPORTED:
        raise BadField("schema", f"{str(schema)[:40]!r} is not one of {', '.join(SUPPORTED)}")
    status = rec.get("status")
    if status not in STATUSES:
        raise BadField("status", f"{str(status)[:20]!r} is not ok or unavailable")
    job = _text(rec, "job_id", required=True, limit=64)
    if not collector.SLURM_JOB_ID.fullmatch(job):
        raise BadField("job_id", f"{job[:40]!r} is not a job id (digits, no leading zero)")
    cpus, cpu_count = _cpus(rec)
    row = {
        "cluster": _text(rec, "cluster", required=False),
        "job_id": job,
        "step": _text(rec, "step", required=False, limit=64),
        "host": _text(rec, "host", required=True),
        "collected_at": _time(rec),
        "status": status,
        "some_s": _seconds(rec, "some_s"),
        "full_s": _seconds(rec, "full_s"),
        "usage_s": _seconds(rec, "usage_s"),
        "throttled_s": _seconds(rec, "throttled_s"),
        "nr_throttled": _count(rec, "nr_throttled", 2**62),
        "cpus": cpus,
        "cpu_count": cpu_count,
    }
    if status == "ok" and row["some_s"] is None:
        raise BadField("some_s", "missing where status is ok")
    if row["some_s"] is not None and row["full_s"] is not None and row["full_s"] > row["some_s"]:
        raise BadField("full_s", "above some_s (all tasks stalled longer than at least one?)")
    if row["throttled_s"] is not None and row["usage_s"] is None and row["some_s"] is None:
        raise BadField("throttled_s", "without usage_s or some_s")
    return row


MAX_LINE = 64 * 1024
"""A record is about 400 bytes; a longer line than this is no record (read no further)."""
MAX_BLANK_LINES = 1_000_000
"""Blank lines a spool may hold: a collector writes none (a decompressed bomb of newlines would
otherwise be read for minutes)."""


def _lines(src: Source) -> Iterator[tuple[int, str]]:
    """(line number, text) of each non-blank line; a line over MAX_LINE comes cut to it (and is
    rejected), a byte that is no UTF-8 as a surrogate (rejected where a text field holds it), a
    byte-order mark at the start dropped."""
    blank = 0
    with detect.open_decompressed(src.path, src.compression) as fh:
        text = io.TextIOWrapper(fh, encoding="utf-8-sig", errors="surrogateescape", newline="\n")
        no = 0
        while True:
            line = text.readline(MAX_LINE + 1)
            if not line:
                return
            no += 1
            if len(line) > MAX_LINE and not line.endswith("\n"):
                while True:  # the rest of the over-long line
                    more = text.readline(MAX_LINE)
                    if not more or more.endswith("\n"):
                        break
            elif not line.strip():
                blank += 1
                if blank > MAX_BLANK_LINES:
                    raise InputError(
                        f"more than {MAX_BLANK_LINES:,} blank lines (at line {no:,}): "
                        "not a pressure spool",
                        source=src.label,
                    )
                continue
            yield no, line.rstrip("\n")


def load(con: duckdb.DuckDBPyConnection, src: Source, options: IngestOptions) -> IngestSummary:
    """Load one pressure spool file in one transaction, then fold the records onto jobs.
    The lines are checked and stored CHUNK_LINES at a time, so a spool of millions of records
    never sits in memory whole."""
    # The transaction holds its new records and their key's index in memory until the commit:
    # the larger cap (a ceiling, at most a quarter of the machine), whatever the file's size
    con.execute("SET memory_limit = ?", [stages.large_memory_limit()])
    con.execute("BEGIN TRANSACTION")
    try:
        ingest_id = bookkeeping.open_ingest(
            con,
            bookkeeping.IngestRow(
                source=src.label,
                format=src.fmt,
                cluster=options.cluster,
                started_at=src.started_at,
                compression=src.compression,
            ),
        )
        lines = good = inserted = rejected = 0
        first: list[str] = []
        for chunk_lines, rows, rejects in _chunks(src):
            lines += chunk_lines
            good += len(rows)
            rejected += len(rejects)
            first.extend(r.message() for r in rejects[: max(0, 5 - len(first))])
            inserted += _insert(con, rows, ingest_id)
            bookkeeping.store_rejects(con, ingest_id, src.label, rejects)
        if not good and rejected:
            raise InputError(
                f"no pressure record could be read (first: {first[0]})", source=src.label
            )
        bookkeeping.finish_ingest(
            con,
            ingest_id,
            bookkeeping.IngestCounts(
                rows_read=good + rejected,
                lines_read=lines,
                inserted=inserted,
                updated=0,
                unchanged=good - inserted,
                rejected=rejected,
            ),
        )
        fold(con, since=ingest_id - 1)  # the jobs this file's records name
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    finally:
        stages.reset_memory_limit(con)
    return IngestSummary(
        ingest_id=ingest_id,
        source=src.label,
        format=src.fmt,
        compression=src.compression,
        lines_read=lines,
        rows_read=good + rejected,
        inserted=inserted,
        updated=0,
        unchanged=good - inserted,
        rejected=rejected,
        first_reasons=tuple(first),
    )


def _chunks(src: Source) -> Iterator[tuple[int, list[dict[str, Any]], list[Reject]]]:
    """(lines, checked rows, rejects) of each CHUNK_LINES non-blank lines of the file."""
    rows: list[dict[str, Any]] = []
    rejects: list[Reject] = []
    for no, line in _lines(src):
        try:
            rows.append(check_record(line))
        except BadField as exc:
            raw = line[:2000].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            rejects.append(Reject(no, raw, str(exc), exc.field))
        if len(rows) + len(rejects) >= CHUNK_LINES:
            yield len(rows) + len(rejects), rows, rejects
            rows, rejects = [], []
    yield len(rows) + len(rejects), rows, rejects


def _insert(con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]], ingest_id: int) -> int:
    """Store checked rows, each record once; returns how many were new."""
    if not rows:
        return 0
    con.register("ing_pressure", pa.Table.from_pylist(rows, schema=_ARROW))
    try:
        found = con.execute(query("ingest/pressure_insert"), {"ingest_id": ingest_id}).fetchone()
    finally:
        con.unregister("ing_pressure")
    return int(found[0]) if found else 0


def fold(con: duckdb.DuckDBPyConnection, since: int | None = None) -> int:
    """Bring the jobs' pressure columns up to date with ``pressure_records`` (in the caller's
    transaction); returns the jobs changed. ``since``: an ingest id; only the jobs that the
    ingests after it wrote or gave records to are folded again (a month's load costs a month,
    not the whole history); None folds every job. Cheap where there are no records."""
    has = con.execute("SELECT count(*) FROM (SELECT 1 FROM pressure_records LIMIT 1)").fetchone()
    if not has or not has[0]:
        return 0
    found = con.execute(query("ingest/pressure_fold"), {"since": since}).fetchone()
    return int(found[0]) if found else 0


_ARROW = pa.schema(
    [
        ("cluster", pa.string()),
        ("job_id", pa.string()),
        ("step", pa.string()),
        ("host", pa.string()),
        ("collected_at", pa.timestamp("us")),
        ("status", pa.string()),
        ("some_s", pa.float64()),
        ("full_s", pa.float64()),
        ("usage_s", pa.float64()),
        ("throttled_s", pa.float64()),
        ("nr_throttled", pa.int64()),
        ("cpus", pa.string()),
        ("cpu_count", pa.int32()),
    ]
)
