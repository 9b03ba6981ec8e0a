"""Keys a source cannot give plainly, and rows that share a key: what the careful path does
before it upserts, so that every row read is accounted for.

- Array tasks without JobIDRaw are keyed by their JobID (strict.sql: ``ing_array_key``, a
  negative number). When this source or the store holds the same task with its real raw id,
  the task takes it (rekey_source.sql before the fold, rekey_stored.sql in the transaction):
  one task is one row, whichever file came first.
- Lines of one source that share a key: the kept one is chosen as before (losers.sql); each
  other one is counted as a duplicate when it says the same, else rejected with its line and
  the line kept (dup_losers.sql).
- Rejects whose records DuckDB read carry no line number and, for steps, no text: their full
  line is read again by job id (:func:`raw_by_id`) so that ``find_lines`` can number it.
"""

from __future__ import annotations

import duckdb

from advisor.ingest.records import Reject, Source
from advisor.store import query, quote_ident, render

# parsed columns that are a line's bookkeeping, not what it says about the job
_NOT_COMPARED = ("line_no", "repaired", "bad_field", "usage_fault", "usage_why", "raw_text")


def _count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    row = con.execute(sql).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def rekey_source(con: duckdb.DuckDBPyConnection) -> None:
    """Give array tasks of ``parsed`` without a raw id the real one where it is known."""
    if _count(con, query("ingest/any_array_key_parsed")):
        con.execute(query("ingest/rekey_source"))
        con.execute("DROP TABLE IF EXISTS array_rekey")


def rekey_stored(con: duckdb.DuckDBPyConnection) -> list[tuple[str, int, object]]:
    """In the load's transaction: stored tasks keyed by JobID take the raw id this source
    brings. Returns their new keys."""
    if not _count(con, query("ingest/any_array_key_stored")):
        return []
    return [
        (str(r[0]), int(r[1]), r[2]) for r in con.execute(query("ingest/rekey_stored")).fetchall()
    ]


def settle_rekeyed(
    con: duckdb.DuckDBPyConnection, ingest_id: int, keys: list[tuple[str, int, object]]
) -> int:
    """After the upsert: the rekeyed rows it left as they were did change (their key); they
    are this load's updates. Returns how many of them the upsert had counted unchanged."""
    if not keys:
        return 0
    con.execute(query("ingest/rekeyed_table"))
    con.executemany(query("ingest/rekeyed_add"), [list(k) for k in keys])
    row = con.execute(query("ingest/rekeyed_settle"), {"ingest_id": ingest_id}).fetchone()
    con.execute("DROP TABLE rekeyed")
    return int(row[0]) if row else 0


def duplicates(con: duckdb.DuckDBPyConnection, source: Source) -> tuple[int, list[Reject]]:
    """The lines of ``parsed`` that lose to another line of their key (temp ``dupkeys``):
    (how many say the same as the kept line, rejects for those that differ)."""
    if not _count(con, query("ingest/count_dupkeys")):
        return 0, []
    cols = [str(d[0]) for d in con.execute(query("ingest/parsed_columns")).description]
    compared = [quote_ident(c) for c in cols if c not in _NOT_COMPARED]
    same = (
        "("
        + ", ".join(f"l.{c}" for c in compared)
        + ") IS NOT DISTINCT FROM ("
        + ", ".join(f"w.{c}" for c in compared)
        + ")"
    )
    rows = con.execute(render("ingest/dup_losers", same=same)).fetchall()
    same_n = sum(1 for r in rows if r[6])
    differ = [r for r in rows if not r[6]]
    if not differ:
        return same_n, []
    texts = raw_by_id(con, source, sorted({str(r[2]) for r in differ}))
    out: list[Reject] = []
    for line_no, kept, job_id, state_raw, _start, _end, _same in differ:
        kept_txt = f"line {kept}" if kept is not None else "another line"
        reason = (
            f"the same job (cluster, raw id, submit) as {kept_txt}, which is kept, but"
            f" different values (state {state_raw}): a repaired record wins, then the later"
            " end, then the later start"
        )
        raw = _pick(texts.get(str(job_id), []), state_raw) if line_no is None else ""
        out.append(Reject(line_no, raw, reason, "JobID"))
    return same_n, out


def _pick(candidates: list[str], state_raw: object) -> str:
    """The first text of a job's lines that holds its state (and take it: each once)."""
    for i, t in enumerate(candidates):
        if state_raw is None or str(state_raw) in t:
            return candidates.pop(i)
    return candidates.pop(0) if candidates else ""


def raw_by_id(
    con: duckdb.DuckDBPyConnection, source: Source, ids: list[str]
) -> dict[str, list[str]]:
    """The text of every line of a sacct text source whose job id (JobID, else JobIDRaw: as
    parse.sql reads it) is in ``ids``, by id, in file order. Other sources: empty."""
    if source.layout is None or not ids:
        return {}
    from advisor.ingest import text

    layout = source.layout
    src = text.csv_src_sql(layout, keep_rejects=False)
    sql = render("ingest/lines_by_id", src=src, raw_text=text.raw_text_expr(layout))
    params = {
        **text.csv_params(source.path, source.compression, layout, keep_rejects=False),
        "ids": ids,
    }
    try:
        rows = con.execute(sql, params).fetchall()
    except duckdb.InvalidInputException:
        # a bare CR makes DuckDB's strict reader give up on the whole file: read the lines as
        # the load itself then did (text.read_by_line), not with DuckDB's lenient reader
        return _raw_by_id_by_line(source, set(ids))
    out: dict[str, list[str]] = {}
    for key, raw in rows:
        out.setdefault(str(key), []).append(str(raw))
    return out


def _raw_by_id_by_line(source: Source, ids: set[str]) -> dict[str, list[str]]:
    """:func:`raw_by_id` in Python: a line is a record when it decodes as UTF-8 and has the
    layout's field count (the rule of text.read_by_line); its id is JobID, else JobIDRaw."""
    from advisor.ingest.detect import open_decompressed

    layout = source.layout
    assert layout is not None
    cols = list(layout.columns)
    at = {c: cols.index(c) for c in ("jobid", "jobidraw") if c in cols}
    out: dict[str, list[str]] = {}
    with open_decompressed(source.path, source.compression) as fh:
        for n, line in enumerate(fh, start=1):
            if n == 1 and layout.has_header:
                continue
            try:
                record = line.rstrip(b"\n").rstrip(b"\r").decode("utf-8")
            except UnicodeDecodeError:
                continue
            fields = record.split(layout.delimiter)
            if len(fields) != len(cols):
                continue
            key = (fields[at["jobid"]] if "jobid" in at else "") or (
                fields[at["jobidraw"]] if "jobidraw" in at else ""
            )
            if key in ids:
                out.setdefault(key, []).append(record)
    return out


ORPHAN_REASON = "step line without its allocation line in the same source"


def step_and_state_counts(
    con: duckdb.DuckDBPyConnection, rejects: list[Reject], bulk_ingest: int | None = None
) -> tuple[int, int]:
    """(step lines folded into an allocation of the source, allocation rows with a state word
    Slurm does not print), from ``parsed``; a bulk load (``bulk_ingest``: its id) keeps only
    steps and repaired lines there, so its states are counted in the rows it wrote."""
    row = con.execute(query("ingest/step_and_state_counts")).fetchone()
    steps, unknown = (int(row[0]), int(row[1])) if row else (0, 0)
    if bulk_ingest is not None:
        row = con.execute(query("ingest/unknown_states"), {"ingest_id": bulk_ingest}).fetchone()
        unknown = int(row[0]) if row else 0
    orphans = sum(1 for r in rejects if r.reason.startswith(ORPHAN_REASON))
    return steps - orphans, unknown
