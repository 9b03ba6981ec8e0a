"""One load of one source into the store, in one transaction.

Owns the sequence: detect -> parse into temp ``parsed`` (sacct text straight from DuckDB's
read_csv; JSON and jobcomp records through a temp ``raw``) -> keep rejects -> fold steps,
drop duplicate keys -> upsert into ``jobs`` (plain insert when no stored key can collide) ->
record the ``ingests`` row. SQL lives in ``advisor/sql/ingest/``. A crash or kill before COMMIT
leaves the database as it was.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import threading
import time
import zoneinfo
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from advisor.errors import InputError, UsageError
from advisor.gputypes import canonical_gpu_type, load_site_mapping
from advisor.ingest import archive, detect, keys, text, usage
from advisor.ingest.records import (
    CANONICAL_FIELDS,
    EVIDENCE_COLUMNS,
    JOB_COLUMN_SOURCES,
    KEY_COLUMNS,
    REQUEST_ONLY_COLUMNS,
    TRES_COLUMNS,
    IngestOptions,
    IngestSummary,
    missing_and_disabled,
)
from advisor.progress import ProgressFn, no_progress
from advisor.store import query, quote_ident

STAGES = 5
# what runs after progress(label, i, STAGES), for a display that names it (the CLI's)
STAGE_NAMES = ("reading", "parsing", "checking", "storing", "committing")
BULK = True  # try advisor.ingest.bulk for sacct text (tests switch it off to compare)


@dataclass
class Loaded:
    """What a reader put into temp table ``parsed`` (and how to find lines again)."""

    fmt: str
    present: set[str]  # canonical fields the source has
    lines_read: int
    line_rejects: list[text.LineReject]
    tails: int = 0  # allocations counted twice (a repaired record and its half read before)
    layout: detect.TextLayout | None = None
    path: Path | None = None
    compression: str | None = None


def check_options(options: IngestOptions) -> None:
    detect.check_input_format(options.input_format)
    try:
        zoneinfo.ZoneInfo(options.source_tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise UsageError(
            f"--tz {options.source_tz!r} is not a time zone name (e.g. UTC, Europe/Berlin)"
        ) from exc
    if options.delimiter is not None and not (1 <= len(options.delimiter.encode()) <= 4):
        raise UsageError("--delimiter must be 1 to 4 bytes")


MEMORY_LIMIT = "1GB"  # DuckDB spills to disk beyond it: a load of millions stays under ~2 GB RSS


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """Per-connection setup: parsing macros, a memory cap, no DuckDB progress bar on stdout."""
    con.execute("SET enable_progress_bar = false")
    con.execute("SET memory_limit = ?", [MEMORY_LIMIT])
    con.execute("SET preserve_insertion_order = true")
    con.execute(query("ingest/strict"))  # the number casts macros.sql builds on
    con.execute(query("ingest/macros"))
    usage.register(con)  # ing_jobstats: jobstats' AdminComment summary (issue 23)


class Hasher(threading.Thread):
    """sha256 of the uncompressed bytes, computed beside the load (hashlib frees the GIL),
    and whether they hold a carriage return (bulk.py leaves such files with unreadable lines to
    the careful path)."""

    def __init__(
        self,
        path: Path,
        compression: str | None,
        known: archive.ArchiveCheck | None = None,
        started_at: dt.datetime | None = None,
    ) -> None:
        super().__init__(daemon=True)
        self.path, self.compression, self.known = path, compression, known
        self.digest: str | None = None
        self.has_cr = False
        # when the load of this source began (UTC): the ingests row's started_at
        self.started_at = started_at or utc_now()

    def run(self) -> None:
        if self.known is not None:  # the archive check decompressed the bytes already
            self.digest, self.has_cr = self.known.sha256, self.known.has_cr
            return
        h = hashlib.sha256()
        try:
            with detect.open_decompressed(self.path, self.compression) as fh:
                while chunk := fh.read(4 << 20):
                    h.update(chunk)
                    self.has_cr = self.has_cr or b"\r" in chunk
            self.digest = h.hexdigest()
        except (OSError, EOFError):
            self.digest = None


def ingest_path(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    options: IngestOptions,
    progress: ProgressFn = no_progress,
    *,
    source: str | None = None,
) -> IngestSummary:
    """Load one file in one transaction and return its summary."""
    t0 = time.perf_counter()
    started_at = utc_now()
    label = source or str(path)
    compression = detect.compression_of(path)
    fmt = options.input_format or "unknown"
    try:
        # a compressed source is checked whole first (advisor.ingest.archive)
        known = archive.verify(path, compression) if compression else None
        head = detect.read_head(path, compression)
        fmt = options.input_format or detect.detect_format(head)
        if not head.strip():
            raise InputError(
                "the file is empty (nothing to load: a transfer still in progress, or a sacct"
                " run that failed?)",
                source=label,
            )
    except InputError as exc:
        record_refusal(con, label, fmt, compression, options, started_at, str(exc))
        raise
    hasher = Hasher(path, compression, known, started_at)
    hasher.start()
    try:
        try:
            summary = _load(
                con, path, compression, head, fmt, options, progress, label, hasher, True
            )
        except duckdb.InvalidInputException:
            if fmt != "sacct-text":
                raise
            # DuckDB's strict CSV reader gives up on a whole file for some bytes (a bare CR on a
            # line of its own): load the file again, its lines read in Python
            # (text.read_by_line).
            summary = _load(
                con, path, compression, head, fmt, options, progress, label, hasher, False
            )
    except (duckdb.InvalidInputException, duckdb.ConversionException) as exc:
        first = str(exc).splitlines()[0]
        err = InputError(f"cannot read as {fmt}: {first}", source=label)
        record_refusal(con, label, fmt, compression, options, started_at, str(err))
        raise err from exc
    except InputError as exc:
        record_refusal(con, label, fmt, compression, options, started_at, str(exc))
        raise
    progress(label, STAGES, STAGES)
    if summary.rejected and summary.inserted + summary.updated + summary.unchanged == 0:
        refuse_unusable(con, path, compression, fmt, summary, label)
    return IngestSummary(**{**summary.__dict__, "seconds": round(time.perf_counter() - t0, 3)})


def _load(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    compression: str | None,
    head: bytes,
    fmt: str,
    options: IngestOptions,
    progress: ProgressFn,
    label: str,
    hasher: Hasher,
    strict: bool,
) -> IngestSummary:
    """One attempt. Reading and parsing fill connection-local temp tables (never the file);
    every write to the database happens in one transaction, rolled back on any error."""
    try:
        progress(label, 0, STAGES)
        # compressed: see bulk._MAX_STEP_SHARE; not strict: the careful path alone handles it
        if fmt == "sacct-text" and BULK and compression is None and strict:
            from advisor.ingest import bulk

            done = bulk.load(con, path, compression, head, options, progress, label, hasher, strict)
            if done is not None:
                return done
        loaded = _read(con, path, compression, head, fmt, options, label, strict, hasher)
        progress(label, 1, STAGES)
        rejects = collect_rejects(con, loaded)
        allocations = count(con, "SELECT count(*) FROM parsed WHERE step IS NULL")
        keys.rekey_source(con)
        _stage(con, options)
        duplicates, differ = keys.duplicates(con, loaded)
        rejects = sorted([*rejects, *_numbered(loaded, differ)],
                         key=lambda r: (r[0] is None, r[0] or 0))  # fmt: skip
        progress(label, 2, STAGES)
        con.execute("BEGIN TRANSACTION")
        try:
            ingest_id = start_ingest(con, label, fmt, compression, options, hasher.started_at)
            store_rejects(con, ingest_id, label, rejects)
            rekeyed = keys.rekey_stored(con)
            summary = _process(
                con, ingest_id, label, compression, loaded, allocations, rejects, progress,
                duplicates=duplicates, rekeyed=rekeyed,
            )  # fmt: skip
            commit(con, ingest_id, hasher)
        except BaseException:
            con.execute("ROLLBACK")
            raise
    finally:
        for stmt in ("DROP VIEW IF EXISTS stage", "DROP TABLE IF EXISTS parsed",
                     "DROP TABLE IF EXISTS dupkeys", "DROP TABLE IF EXISTS gmap",
                     "DROP TABLE IF EXISTS raw_fix", "DROP TABLE IF EXISTS tres_names",
                     "DROP TABLE IF EXISTS tail_fix"):  # fmt: skip
            with contextlib.suppress(duckdb.Error):
                con.execute(stmt)
    return summary


def utc_now() -> dt.datetime:
    """The wall clock in UTC, naive as every stored TIMESTAMP. (DuckDB's now() is the start of
    the transaction: the ingests row's start and finish would read the same.)"""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def start_ingest(
    con: duckdb.DuckDBPyConnection,
    label: str,
    fmt: str,
    compression: str | None,
    options: IngestOptions,
    started_at: dt.datetime | None = None,
) -> int:
    """The source's ``ingests`` row (in the open transaction); returns its id. ``started_at``:
    when the load of the source began (default: now)."""
    row = con.execute(
        "INSERT INTO ingests (source, format, compression, cluster, source_tz,"
        " started_at) VALUES (?, ?, ?, ?, ?, ?) RETURNING ingest_id",
        [label, fmt, compression, options.cluster, options.source_tz,
         started_at or utc_now()],
    ).fetchone()  # fmt: skip
    assert row is not None
    return int(row[0])


def commit(con: duckdb.DuckDBPyConnection, ingest_id: int, hasher: Hasher) -> None:
    """Record the source's hash and commit the open transaction."""
    hasher.join()
    con.execute(
        "UPDATE ingests SET content_hash = ? WHERE ingest_id = ?", [hasher.digest, ingest_id]
    )
    con.execute("COMMIT")


def _stage(con: duckdb.DuckDBPyConnection, options: IngestOptions) -> None:
    """The view ``stage``: allocations of ``parsed``, steps folded, one row per key."""
    gpu_map(con, options)
    con.execute(query("ingest/superseded"))  # dupkeys
    dups = count(con, "SELECT count(*) FROM dupkeys")
    alloc = query("ingest/alloc_plain")
    if dups:
        losers = [int(r[0]) for r in con.execute(query("ingest/losers")).fetchall()]
        if len(losers) <= 100_000:  # a literal list of our own integers: no join at all
            literal = "[" + ",".join(str(x) for x in losers) + "]::BIGINT[]"
            alloc = query("ingest/alloc_except").replace("{{losers}}", literal)
        else:
            alloc = query("ingest/alloc_dedupe")
    con.execute("CREATE OR REPLACE TEMP VIEW stage AS " + fold_sql(alloc))


def fold_sql(alloc: str) -> str:
    """The rows for ``jobs`` (fold.sql) from the allocation lines ``alloc`` (SQL) and the
    steps in ``parsed``."""
    return (
        query("ingest/fold")
        .replace("{{steps}}", query("ingest/step_flags"))
        .replace("{{alloc}}", alloc)
    )


def parse_sql(src_sql: str, raw_text: str, *, misses_in_case: bool = False) -> str:
    """parse.sql over ``src_sql``: the body of a SELECT. ``misses_in_case``: ing_tres runs only
    for the TRES strings ing_tres_lookup lacks, inside a CASE (for a lookup that holds nearly
    every string of the source); else over every record, NULL for the strings it has (see
    parse.sql's head for the costs)."""
    sql = query("ingest/parse").replace("{{src}}", src_sql).replace("{{raw_text}}", raw_text)
    for side, column in (("a", "alloctres"), ("r", "reqtres")):
        if misses_in_case:
            computed, miss = "NULL", f"ing_tres({column})"
        else:
            computed = f"ing_tres(CASE WHEN {side}_hit IS NULL THEN {column} END)"
            miss = f"{side}_computed"
        sql = sql.replace("{{" + side + "_computed}}", computed)
        sql = sql.replace("{{" + side + "_miss}}", miss)
    return sql


def parse(
    con: duckdb.DuckDBPyConnection,
    src_sql: str,
    raw_text: str,
    params: dict[str, object],
    *,
    create: bool,
    where: str | None = None,
    table: str = "parsed",
) -> None:
    """Run the parser (advisor/sql/ingest/parse.sql) over ``src_sql`` into temp ``table``,
    keeping the records that meet ``where`` (SQL over the parser's columns) if given."""
    body = parse_sql(src_sql, raw_text)
    if where is not None:
        body = f"SELECT * FROM ({body}) AS p WHERE {where}"  # noqa: S608
    head = f"CREATE OR REPLACE TEMP TABLE {table} AS " if create else f"INSERT INTO {table} "
    # (the lookup join: over ing_tres_lookup, not over the records; a 1M-line careful load
    # took 8.0 s instead of 5.8 s the other way round)
    with sides_as_written(con):
        con.execute(head + body, params)


def optimizer_setting(con: duckdb.DuckDBPyConnection) -> str:
    """The connection's ``disabled_optimizers`` setting."""
    return str(con.execute("SELECT current_setting('disabled_optimizers')").fetchall()[0][0])


@contextlib.contextmanager
def sides_as_written(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inside: every join builds its hash table over its right side, as the SQL is written.
    DuckDB guesses a few dozen rows for read_csv and would build it over the records of the
    file instead of over the small table joined to them. The caller's setting comes back
    after; an aborted transaction refuses that SET, so a caller that rolls one back sets it
    again after its rollback (bulk.load)."""
    before = optimizer_setting(con)
    con.execute("SET disabled_optimizers = 'build_side_probe_side'")
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.TransactionException):
            con.execute("SET disabled_optimizers = ?", [before])


_TRES_FIELDS = ("jobid", "jobidraw", "alloctres", "reqtres")
MAX_TRES_LOOKUP = 100_000
"""TRES strings parsed once each before a load (tres_lookup.sql): a file has a few hundred;
this bounds the table for one with far more (the parser reads the rest itself)."""
TRES_SAMPLE = 200_000
"""Records whose TRES strings the careful path parses once each before a text load (the bulk
path takes every record's, from its prescan)."""


def tres_lookup(
    con: duckdb.DuckDBPyConnection, groups_sql: str, params: dict[str, object] | None = None
) -> None:
    """Fill temp ``ing_tres_lookup`` (macros.sql) from ``groups_sql``, a relation of (is_step,
    alloctres, reqtres, n): the distinct TRES strings parse.sql then looks up instead of
    splitting them per record."""
    con.execute(
        query("ingest/tres_lookup").replace("{{groups}}", groups_sql),
        {**(params or {}), "max": MAX_TRES_LOOKUP},
    )


def _read(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    compression: str | None,
    head: bytes,
    fmt: str,
    options: IngestOptions,
    label: str,
    strict: bool,
    hasher: Hasher,
) -> Loaded:
    """Read and parse the source into temp table ``parsed``."""
    base: dict[str, object] = {"cluster": options.cluster, "tz": options.source_tz}
    if fmt == "sacct-text":
        layout = detect.text_layout(head, options.delimiter, options.fields, label)
        base["atres_known"] = "alloctres" in layout.columns
        raw_text = text.raw_text_expr(layout)
        text.drop_reject_tables(con)
        by_line = not strict  # a carriage return DuckDB's reader cannot take
        if strict:
            # the TRES strings of the first records, parsed once each (a light read: archives
            # are compressed, and a full prescan would decompress the file twice)
            sample = text.csv_src_sql(layout, keep_rejects=False, only=_TRES_FIELDS)
            first_records = (
                "(SELECT ing_is_step(jobid, jobidraw) AS is_step, alloctres, reqtres, 1 AS n"  # noqa: S608
                f" FROM ({sample}) AS s LIMIT $sample)"
            )
            tres_lookup(
                con,
                first_records,
                {**text.csv_params(path, compression, layout, strict, keep_rejects=False),
                 "sample": TRES_SAMPLE},
            )  # fmt: skip
            parse(
                con,
                text.csv_src_sql(layout),
                raw_text,
                {**base, **text.csv_params(path, compression, layout, strict=strict)},
                create=True,
            )
            by_line = cr_misnumbers_rejects(con, hasher)
            if not by_line:
                accepted = count(con, "SELECT count(*) FROM parsed")
                fix = text.repair(con, path, compression, layout, accepted)
        if by_line:  # read the lines in Python

            def take(first: bool) -> None:
                parse(con, text.good_src_sql(layout), raw_text,
                      {**base, "delim": layout.delimiter}, create=first)  # fmt: skip

            text.drop_reject_tables(con)
            fix = text.read_by_line(con, path, compression, layout, take)
        if fix.rows:
            parse(
                con,
                text.fix_src_sql(layout),
                raw_text,
                {**base, "delim": layout.delimiter},
                create=False,
            )
            if fix.tails:
                con.execute(query("ingest/steps_read_twice"))
        con.execute("DROP TABLE IF EXISTS raw_fix")
        text.drop_reject_tables(con)
        present = {c for c in layout.columns if c in CANONICAL_FIELDS}
        return Loaded(
            fmt, present, fix.lines_read, fix.rejects, text.allocation_tails(layout, fix),
            layout, path, compression,
        )  # fmt: skip
    if fmt == "sacct-json":
        from advisor.ingest import jsonfmt

        with detect.open_decompressed(path, compression) as fh:
            data = fh.read()
        records, rejects, present = jsonfmt.records(data, label)
        base["atres_known"] = "alloctres" in present
        lines = len(records) + len(rejects)
    elif fmt == "jobcomp":
        from advisor.ingest import jobcomp

        with detect.open_decompressed(path, compression) as fh:
            records, rejects, present, _physical = jobcomp.records(fh)
        lines = len(records) + len(rejects)
        base["atres_known"] = "alloctres" in present
    else:
        raise InputError(f"unknown input format {fmt!r}", source=label)
    _fill_raw(con, records)
    parse(
        con,
        "SELECT line_no, FALSE AS repaired, * EXCLUDE (line_no) FROM raw",
        "_raw",
        base,
        create=True,
    )
    con.execute("DROP TABLE raw")
    return Loaded(fmt, present, lines, rejects)


def _fill_raw(con: duckdb.DuckDBPyConnection, records: list[dict[str, str | int | None]]) -> None:
    """Temp table ``raw`` from parsed records (canonical fields as text, line_no, _raw)."""
    con.execute("DROP TABLE IF EXISTS raw")
    cols = {c: pa.array([r.get(c) for r in records], pa.string()) for c in CANONICAL_FIELDS}
    cols["_raw"] = pa.array([r.get("_raw") for r in records], pa.string())
    cols["line_no"] = pa.array([r.get("line_no") for r in records], pa.int64())
    con.register("ing_records", pa.table(cols))
    con.execute("CREATE TEMP TABLE raw AS SELECT * FROM ing_records")
    con.unregister("ing_records")


def cr_misnumbers_rejects(con: duckdb.DuckDBPyConnection, hasher: Hasher) -> bool:
    """Whether DuckDB's read (its reject tables) rejected lines of a file that holds a carriage
    return: DuckDB then numbers lines differently from the file's newlines (it counts a CR
    before a newline as a line of its own), so its rejects cannot be found in the file."""
    if not count(con, f"SELECT count(*) FROM (SELECT 1 FROM {text.REJ_ERRORS} LIMIT 1)"):  # noqa: S608
        return False
    hasher.join()
    return hasher.has_cr


def gpu_map(
    con: duckdb.DuckDBPyConnection,
    options: IngestOptions,
    tables: tuple[str, ...] = ("parsed",),
) -> None:
    """Temp table ``gmap``: each raw GPU type name of the parser output ``tables`` with its
    canonical family (advisor.gputypes, with the site's mapping)."""
    sql = " UNION ".join(
        f"SELECT DISTINCT gpu_type_raw FROM {t} WHERE gpu_type_raw IS NOT NULL "  # noqa: S608
        f"UNION SELECT DISTINCT t.name FROM (SELECT unnest(typed_list) AS t FROM {t})"
        for t in tables
    )
    names = [r[0] for r in con.execute(sql).fetchall() if r[0] is not None]
    site = dict(options.gpu_types) if options.gpu_types is not None else load_site_mapping()
    table = pa.table(
        {
            "raw": pa.array(names, pa.string()),
            "canon": pa.array([canonical_gpu_type(n, site) for n in names], pa.string()),
        }
    )
    con.execute("DROP TABLE IF EXISTS gmap")
    con.register("ing_gmap", table)
    con.execute("CREATE TEMP TABLE gmap AS SELECT * FROM ing_gmap")
    con.unregister("ing_gmap")


def count(
    con: duckdb.DuckDBPyConnection, sql: str, params: list[object] | dict[str, object] | None = None
) -> int:
    row = con.execute(sql, params or []).fetchone()
    return int(row[0]) if row and row[0] is not None else 0


def _process(
    con: duckdb.DuckDBPyConnection,
    ingest_id: int,
    label: str,
    compression: str | None,
    loaded: Loaded,
    allocations: int,
    rejects: list[tuple[int | None, str | None, str, str]],
    progress: ProgressFn,
    *,
    duplicates: int = 0,
    rekeyed: list[tuple[str, int, object]] | None = None,
) -> IngestSummary:
    progress(label, 3, STAGES)
    if count(con, query("ingest/overlap")):
        staged = count(con, "SELECT count(*) FROM stage")
        row, new, old, assign = _merge_parts(
            con, loaded.present, REQUEST_ONLY_COLUMNS.get(loaded.fmt, frozenset())
        )
        replace_sql = (
            query("ingest/replace_changed")
            .replace("{{row}}", row)
            .replace("{{new}}", new)
            .replace("{{old}}", old)
            .replace("{{set}}", assign)
        )
        updated = count(con, replace_sql, {"ingest_id": ingest_id})
        inserted = count(con, query("ingest/insert_new"), {"ingest_id": ingest_id})
        # a stored task that only took its real raw id changed too
        moved = keys.settle_rekeyed(con, ingest_id, rekeyed or [])
        updated += moved
        unchanged = staged - updated - inserted
    else:  # nothing stored can collide: a plain insert
        updated, unchanged = 0, 0
        inserted = count(
            con, query("ingest/insert_all").replace("{{stage}}", "stage"), {"ingest_id": ingest_id}
        )
    supersede_stale(con, ingest_id)
    progress(label, 4, STAGES)
    return finish(
        con, ingest_id, label, compression, loaded, allocations, rejects,
        inserted=inserted, updated=updated, unchanged=unchanged, duplicates=duplicates,
    )  # fmt: skip


def finish(
    con: duckdb.DuckDBPyConnection,
    ingest_id: int,
    label: str,
    compression: str | None,
    loaded: Loaded,
    allocations: int,
    rejects: list[tuple[int | None, str | None, str, str]],
    *,
    inserted: int,
    updated: int,
    unchanged: int,
    duplicates: int = 0,
    bulk: bool = False,
) -> IngestSummary:
    """Complete the ``ingests`` row and return the summary. ``allocations`` counts the
    allocation records read (a repaired record's first half too: ``loaded.tails``)."""
    rows_read = allocations - loaded.tails + len(loaded.line_rejects)
    missing, disabled = missing_and_disabled(loaded.present)
    folded, unknown = keys.step_and_state_counts(con, rejects, ingest_id if bulk else None)
    warnings = (
        (f"{unknown} rows have a state Slurm does not print (stored as NULL, state_raw kept):"
         " `advisor jobs` shows them with no state",) if unknown else ()
    )  # fmt: skip
    con.execute(
        "UPDATE ingests SET finished_at = ?, rows_read = ?, lines_read = ?,"
        " inserted = ?, updated = ?, unchanged = ?, rejected = ?, missing_fields = ?,"
        " disabled_analyses = ?, status = 'done' WHERE ingest_id = ?",
        [utc_now(), rows_read, loaded.lines_read, inserted, updated, unchanged, len(rejects),
         list(missing), list(disabled), ingest_id],
    )  # fmt: skip
    first = tuple(
        f"line {r[0]}" + (f", field {r[1]}" if r[1] else "") + f": {r[2]}" for r in rejects[:5]
    )
    return IngestSummary(
        ingest_id=ingest_id,
        source=label,
        format=loaded.fmt,
        compression=compression,
        lines_read=loaded.lines_read,
        rows_read=rows_read,
        inserted=inserted,
        updated=updated,
        unchanged=unchanged,
        rejected=len(rejects),
        missing_fields=missing,
        disabled_analyses=disabled,
        first_reasons=first,
        duplicates=duplicates,
        steps_folded=folded,
        unknown_states=unknown,
        warnings=warnings,
    )


def _merge_parts(
    con: duckdb.DuckDBPyConnection, present: set[str], request_only: frozenset[str] = frozenset()
) -> tuple[str, str, str, str]:
    """The pieces of replace_changed.sql for a source with the fields ``present``: the row
    written (``s.*``, with stored values for the columns the source lacks, for a stored
    interactive verdict on stronger evidence, for a stored allocation where the source has
    only the request (``request_only``), and for a stored state's detail, "CANCELLED by 1001",
    where the source writes the same state barer), the compared columns, new and stored (TRES
    strings as sets), and the assignment of every column but the key from that row (``r``)."""
    cols = [str(d[0]) for d in con.execute("SELECT * FROM stage LIMIT 0").description]
    replaced: list[str] = []
    new: list[str] = []
    old: list[str] = []
    for c in cols:
        if c in KEY_COLUMNS:
            continue
        q = quote_ident(c)
        sources = JOB_COLUMN_SOURCES.get(c)
        if c in EVIDENCE_COLUMNS:
            expr = (
                "CASE WHEN ing_evidence_rank(s.interactive_evidence)"
                f" >= ing_evidence_rank(j.interactive_evidence) THEN s.{q} ELSE j.{q} END"
            )
            replaced.append(f"{expr} AS {q}")
        elif sources is not None and not any(f in present for f in sources):
            replaced.append(f"j.{q} AS {q}")
            continue  # the stored value, unchanged by definition
        elif c in request_only:
            expr = f"coalesce(j.{q}, s.{q})"
            replaced.append(f"{expr} AS {q}")
        elif c == "state_raw":
            expr = (
                "CASE WHEN s.state IS NOT DISTINCT FROM j.state"
                " AND starts_with(j.state_raw, s.state_raw) THEN j.state_raw ELSE s.state_raw END"
            )
            replaced.append(f"{expr} AS {q}")
        else:
            expr = f"s.{q}"
        if c in TRES_COLUMNS:  # the same items in another order are no change
            new_items = f"list_sort(string_split({expr}, ','))"
            old_items = f"list_sort(string_split(j.{q}, ','))"
            new.append(new_items)
            old.append(old_items)
            # and a row updated for another column keeps the stored spelling of equal TRES
            replaced = [r for r in replaced if not r.endswith(f" AS {q}")]
            replaced.append(
                f"CASE WHEN {new_items} IS NOT DISTINCT FROM {old_items} THEN j.{q}"
                f" ELSE {expr} END AS {q}"
            )
            continue
        new.append(expr)
        old.append(f"j.{q}")
    row = "s.*" + (f" REPLACE ({', '.join(replaced)})" if replaced else "")
    assign = assignments([c for c in cols if c not in KEY_COLUMNS], "r")
    return row, ", ".join(new), ", ".join(old), assign


def assignments(columns: list[str], source: str) -> str:
    """``"c" = source."c", ...``: the SET list of an UPDATE ... FROM ``source``."""
    return ", ".join(f"{quote_ident(c)} = {source}.{quote_ident(c)}" for c in columns)


def collect_rejects(
    con: duckdb.DuckDBPyConnection,
    loaded: Loaded,
    orphans: tuple[str, int] | None = None,
) -> list[tuple[int | None, str | None, str, str]]:
    """Every reject of the source as (line, field, reason, raw), sorted by line. Orphan steps
    are found by orphan_steps.sql, or for a bulk load by ``orphans`` (query, ingest id)."""
    out: list[tuple[int | None, str | None, str, str]] = [
        (r.line_no, r.field, r.reason, r.raw) for r in loaded.line_rejects
    ]
    found = con.execute(query("ingest/reject_values")).fetchall()
    if count(con, "SELECT count(*) FROM parsed WHERE step IS NOT NULL"):
        if orphans is None:
            found += con.execute(query("ingest/orphan_steps")).fetchall()
        else:
            found += con.execute(query(orphans[0]), {"ingest_id": orphans[1]}).fetchall()
    found = _orphan_lines(con, loaded, found)
    missing = [i for i, r in enumerate(found) if r[0] is None]
    if missing and loaded.path is not None and loaded.layout is not None:
        # records DuckDB read have no line number: find their text in the file (rejects only)
        lines = text.find_lines(
            loaded.path,
            loaded.compression,
            [str(found[i][3] or "") for i in missing],
            loaded.layout.has_header,
        )
        for i, ln in zip(missing, lines, strict=True):
            found[i] = (ln, *found[i][1:])
    out += [(r[0], r[1], r[2], r[3] or "") for r in found]
    out.sort(key=lambda r: (r[0] is None, r[0] or 0))
    return out


def _orphan_lines(con: duckdb.DuckDBPyConnection, loaded: Loaded, found: list[Any]) -> list[Any]:
    """Orphan steps come with their id (``123.batch``) for text: the whole line of each,
    read again by that id, so that find_lines numbers it and ``rejects`` keeps it."""
    idx = [i for i, r in enumerate(found)
           if r[0] is None and str(r[2]).startswith(keys.ORPHAN_REASON)]  # fmt: skip
    if not idx:
        return found
    texts = keys.raw_by_id(con, loaded, sorted({str(found[i][3]) for i in idx}))
    out = list(found)
    for i in idx:
        lines = texts.get(str(found[i][3]), [])
        if lines:
            out[i] = (*found[i][:3], lines.pop(0))
    return out


def _numbered(
    loaded: Loaded, rejects: list[tuple[int | None, str | None, str, str]]
) -> list[tuple[int | None, str | None, str, str]]:
    """``rejects`` with the physical line of those that lack one, found by their text."""
    missing = [i for i, r in enumerate(rejects) if r[0] is None and r[3]]
    if not missing or loaded.path is None or loaded.layout is None:
        return rejects
    lines = text.find_lines(loaded.path, loaded.compression,
                            [rejects[i][3] for i in missing], loaded.layout.has_header)  # fmt: skip
    out = list(rejects)
    for i, ln in zip(missing, lines, strict=True):
        out[i] = (ln, *rejects[i][1:])
    return out


def store_rejects(
    con: duckdb.DuckDBPyConnection,
    ingest_id: int,
    label: str,
    out: list[tuple[int | None, str | None, str, str]],
) -> None:
    if out:
        table = pa.table(
            {
                "ingest_id": pa.array([ingest_id] * len(out), pa.int64()),
                "source": pa.array([label] * len(out), pa.string()),
                "line_no": pa.array([r[0] for r in out], pa.int64()),
                "field": pa.array([r[1] for r in out], pa.string()),
                "raw": pa.array([r[3] for r in out], pa.string()),
                "reason": pa.array([r[2] for r in out], pa.string()),
            }
        )
        con.register("ing_rejects", table)
        con.execute("INSERT INTO rejects BY NAME SELECT * FROM ing_rejects")
        con.unregister("ing_rejects")


def record_refusal(
    con: duckdb.DuckDBPyConnection,
    label: str,
    fmt: str,
    compression: str | None,
    options: IngestOptions,
    started_at: dt.datetime,
    reason: str,
) -> None:
    """Keep a source refused whole (corrupt or truncated archive, unreadable, no header): an
    ``ingests`` row with status 'failed' and its reason in ``rejects`` (no line), committed on
    their own; nothing of the source is in ``jobs``."""
    con.execute("BEGIN TRANSACTION")
    try:
        ingest_id = start_ingest(con, label, fmt, compression, options, started_at)
        con.execute(
            "INSERT INTO rejects (ingest_id, source, line_no, field, raw, reason)"
            " VALUES (?, ?, NULL, NULL, '', ?)",
            [ingest_id, label, reason],
        )
        con.execute(
            "UPDATE ingests SET finished_at = ?, rejected = 1, status = 'failed'"
            " WHERE ingest_id = ?",
            [utc_now(), ingest_id],
        )
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def refuse_unusable(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    compression: str | None,
    fmt: str,
    summary: IngestSummary,
    label: str,
) -> None:
    """A committed load that stored nothing (every record rejected, or none there): mark its
    ``ingests`` row 'failed' (its rejects stay, with their reasons) and raise an InputError
    naming the likely cause (advisor.ingest.diagnose), so that a cron job notices."""
    from advisor.ingest import diagnose

    con.execute("UPDATE ingests SET status = 'failed' WHERE ingest_id = ?", [summary.ingest_id])
    raise InputError(diagnose.nothing_usable(path, compression, fmt, summary), source=label)


def supersede_stale(con: duckdb.DuckDBPyConnection, ingest_id: int) -> int:
    """Mark stored unfinished runs that a later record of the same job id supersedes
    (supersede_stale.sql: a requeue exported without ``sacct -D``); returns how many."""
    return count(con, query("ingest/supersede_stale"), {"ingest_id": ingest_id})
