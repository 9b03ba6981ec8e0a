"""What both ways of loading a source share: the attempt they are handed (:class:`Attempt`), the
interface they meet (:class:`Strategy`), and the stages they have in common: the parser
(parse.sql), the fold (fold.sql), the GPU type map, the rejects, the ``ingests`` row and the
summary.

``advisor.ingest.careful`` and ``advisor.ingest.bulk`` build on this module;
``advisor.ingest.pipeline`` picks between them. SQL lives in ``advisor/sql/ingest/``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

import duckdb
import pyarrow as pa

from advisor.gputypes import canonical_gpu_type, load_site_mapping
from advisor.ingest import archive, bookkeeping, detect, keys, text, usage
from advisor.ingest.records import (
    IngestOptions,
    IngestSummary,
    Reject,
    Source,
    missing_and_disabled,
)
from advisor.progress import ProgressFn
from advisor.store import query, quote_ident, render

STAGES = 5
# what runs after progress(label, i, STAGES), for a display that names it (the CLI's)
STAGE_NAMES = ("reading", "parsing", "checking", "storing", "committing")
MEMORY_LIMIT = "1GB"  # DuckDB spills to disk beyond it: a load of millions stays under ~2 GB RSS
LARGE_LOAD_STEPS = 10_000_000
"""A bulk load of a file with more step lines than this runs under LARGE_LOAD_MEMORY_GB: its
insert groups and joins the steps of millions of jobs, and under 1 GB it spilled the file's
parsed rows to disk (docs/performance.md has the figures)."""
LARGE_LOAD_MEMORY_GB = 4


def prepare(con: duckdb.DuckDBPyConnection) -> None:
    """Per-connection setup: parsing macros, a memory cap, no DuckDB progress bar on stdout."""
    con.execute("SET enable_progress_bar = false")
    con.execute("SET memory_limit = ?", [MEMORY_LIMIT])
    con.execute("SET preserve_insertion_order = true")
    con.execute(query("ingest/strict"))  # the number casts macros.sql builds on
    con.execute(query("ingest/macros"))
    usage.register(con)  # ing_jobstats: jobstats' AdminComment summary (issue 23)


def memory_limit(steps: int) -> str:
    """The memory cap of a bulk load of a file with ``steps`` step lines: MEMORY_LIMIT, or past
    LARGE_LOAD_STEPS :func:`large_memory_limit`."""
    return MEMORY_LIMIT if steps <= LARGE_LOAD_STEPS else large_memory_limit()


def large_memory_limit() -> str:
    """LARGE_LOAD_MEMORY_GB, but never more than a quarter of the machine's memory."""
    machine_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    return f"{max(1, min(LARGE_LOAD_MEMORY_GB, int(machine_gb / 4)))}GB"


def reset_memory_limit(con: duckdb.DuckDBPyConnection) -> None:
    """The load's own cap (MEMORY_LIMIT) again, after a load that raised it (memory_limit)."""
    with contextlib.suppress(duckdb.TransactionException):
        con.execute("SET memory_limit = ?", [MEMORY_LIMIT])


class Hasher(threading.Thread):
    """sha256 of the uncompressed bytes, computed beside the load (hashlib frees the GIL),
    whether they hold a carriage return (the bulk way leaves such files with unreadable lines
    to the careful way) and, for an uncompressed file, where its lines start (the repair of
    unreadable lines then reads them without a scan of the file)."""

    def __init__(
        self, path: Path, compression: str | None, known: archive.ArchiveCheck | None = None
    ) -> None:
        super().__init__(daemon=True)
        self.path, self.compression, self.known = path, compression, known
        self.digest: str | None = None
        self.has_cr = False
        self.longest_line = 0
        self._lines = text.LineIndex() if compression is None and known is None else None

    def run(self) -> None:
        if self.known is not None:  # the archive check decompressed the bytes already
            self.digest, self.has_cr = self.known.sha256, self.known.has_cr
            self.longest_line = self.known.longest_line
            return
        h = hashlib.sha256()
        lines = archive.LongestLine()
        try:
            with detect.open_decompressed(self.path, self.compression) as fh:
                while chunk := fh.read(4 << 20):
                    h.update(chunk)
                    self.has_cr = self.has_cr or b"\r" in chunk
                    lines.feed(chunk)
                    self.longest_line = lines.longest
                    if self._lines is not None:
                        self._lines.feed(chunk)
            self.digest = h.hexdigest()
        except (OSError, EOFError):
            self.digest, self._lines = None, None

    def line_index(self) -> text.LineIndex | None:
        """Where the file's lines start, once the whole file is hashed (None before, and for a
        compressed file): a repair does not wait for it."""
        return None if self.is_alive() or self.digest is None else self._lines


@dataclass
class Attempt:
    """One attempt at loading one source, as a strategy is handed it. ``strict`` False: the
    second attempt at a sacct text file DuckDB's strict reader gave up on (its lines are read
    in Python). ``ingest_id``: the source's ``ingests`` row, once opened in the transaction."""

    con: duckdb.DuckDBPyConnection
    source: Source
    options: IngestOptions
    progress: ProgressFn
    hasher: Hasher
    strict: bool = True
    ingest_id: int | None = None

    def stage(self, done: int) -> None:
        """Report ``done`` of the STAGES stages."""
        self.progress(self.source.label, done, STAGES)

    def open_ingest(self) -> int:
        """The source's ``ingests`` row (in the open transaction); returns its id."""
        self.ingest_id = bookkeeping.open_ingest(self.con, ingest_row(self.source, self.options))
        return self.ingest_id

    @property
    def id_param(self) -> dict[str, object]:
        assert self.ingest_id is not None
        return {"ingest_id": self.ingest_id}


def ingest_row(source: Source, options: IngestOptions) -> bookkeeping.IngestRow:
    """What opens the ``ingests`` row of ``source``."""
    return bookkeeping.IngestRow(
        source=source.label,
        format=source.fmt,
        cluster=options.cluster,
        started_at=source.started_at,
        compression=source.compression,
        source_tz=options.source_tz,
    )


class Strategy(Protocol):
    """A way to load a source into ``jobs`` in one transaction."""

    @property
    def name(self) -> str: ...

    def load(self, attempt: Attempt) -> IngestSummary | None:
        """Load the source and return its summary, or None, having written nothing, when
        another strategy must load it."""
        ...


@dataclass
class Loaded:
    """What a reader put into temp table ``parsed``."""

    source: Source
    present: set[str]  # canonical fields the source has
    lines_read: int
    line_rejects: list[Reject]
    tails: int = 0  # allocations counted twice (a repaired record and its half read before)


@dataclass(frozen=True)
class Written:
    """What the write into ``jobs`` did (lines of a key kept once: ``duplicates``)."""

    inserted: int
    updated: int = 0
    unchanged: int = 0
    duplicates: int = 0


class LineTooLong(duckdb.InvalidInputException):
    """A strict read of a file with a line past DuckDB's max_line_size: DuckDB may have
    dropped it without a reject, so the load is rolled back and the file read line by line
    (pipeline.py takes this as it takes DuckDB's own refusal)."""


def commit(attempt: Attempt) -> None:
    """Record the source's hash and commit the open transaction."""
    assert attempt.ingest_id is not None
    attempt.hasher.join()
    if (
        attempt.strict
        and attempt.source.fmt == "sacct-text"
        and attempt.hasher.longest_line > text.MAX_LINE_BYTES
    ):
        raise LineTooLong(f"a line of {attempt.hasher.longest_line} bytes")
    bookkeeping.set_content_hash(attempt.con, attempt.ingest_id, attempt.hasher.digest)
    attempt.con.execute("COMMIT")


def fold_sql(lines: str, steps_of: str | None = None) -> str:
    """The rows for ``jobs`` (fold.sql, with its steps from step_flags.sql) from the parsed
    allocation lines of ``lines``: a relation (``parsed``, or a parenthesised query over it or
    over the file) whose lines that parsed are kept, one per key. ``steps_of``: a relation
    of a few lines whose jobs alone need their steps (the bulk way's repaired or faulty lines:
    every step of the file would be grouped for them otherwise)."""
    return render("ingest/fold", steps=step_flags_sql(steps_of), lines=lines)


def step_flags_sql(lines: str | None = None) -> str:
    """step_flags.sql over every step line of the load (the view step_rows), or only those of
    the jobs of ``lines`` (a few: bulk.py gives the jobs of repaired step lines their verdict
    again)."""
    of_lines = "TRUE" if lines is None else render("ingest/steps_of_lines", lines=lines)
    return render("ingest/step_flags", of_lines=of_lines)


def parse_sql(src_sql: str, raw_text: str, *, misses_in_case: bool = False) -> str:
    """parse.sql over ``src_sql``: the body of a SELECT. ``misses_in_case``: ing_tres runs only
    for the strings ing_tres_lookup lacks (the bulk insert: the lookup holds every string of
    the source; the careful way's read of a file whose sample says misses are rare:
    :func:`tres_lookup`); else over every record, NULL for the strings it has (see parse.sql's
    head)."""
    parts = {}
    for side, column in (("a", "alloctres"), ("r", "reqtres")):
        if misses_in_case:
            parts[f"{side}_computed"], parts[f"{side}_miss"] = "NULL", f"ing_tres({column})"
        else:
            parts[f"{side}_computed"] = f"ing_tres(CASE WHEN {side}_hit IS NULL THEN {column} END)"
            parts[f"{side}_miss"] = f"{side}_computed"
    return render("ingest/parse", src=src_sql, raw_text=raw_text, **parts)


def parse(
    con: duckdb.DuckDBPyConnection,
    src_sql: str,
    raw_text: str,
    params: dict[str, object],
    *,
    create: bool,
    where: str = "TRUE",
    table: str = "parsed",
    misses_in_case: bool = False,
) -> None:
    """Run the parser (parse.sql) over ``src_sql`` into temp ``table`` (created, or appended
    to), keeping the records that meet ``where`` (SQL over the parser's columns).
    ``misses_in_case``: see :func:`parse_sql`."""
    name = "ingest/parse_into_new" if create else "ingest/parse_into"
    body = parse_sql(src_sql, raw_text, misses_in_case=misses_in_case)
    sql = render(name, table=quote_ident(table), parse=body, where=where)
    # the lookup join over ing_tres_lookup, not over the records (docs/ingest.md: speed)
    with sides_as_written(con):
        con.execute(sql, params)


STEP_COLUMNS = (
    "line_no",
    "repaired",
    "cluster",
    "job_id_raw",
    "job_id",
    "step",
    "bad_field",
    "cpu_used_s",
    "mem_used_max_mb",
    "gpu_util_tot_pct",
    "gpu_util_max_pct",
    "gpu_mem_max_mb",
    "js_util_mean_pct",
    "usage_source",
)
"""The parser's columns a step line keeps in temp parsed_steps (what step_flags.sql and the
step checks read)."""


def step_rows(
    con: duckdb.DuckDBPyConnection,
    src_sql: str | None = None,
    params: dict[str, object] | None = None,
) -> None:
    """Temp parsed_steps, the step lines of ``src_sql`` (parser input, parameters ``params``)
    as narrow rows (parsed_steps.sql), or none (the careful way: its steps are in ``parsed``,
    which must exist), and the view step_rows over both tables (step_rows.sql)."""
    columns = ", ".join(quote_ident(c) for c in STEP_COLUMNS)
    if src_sql is None:
        body = query("ingest/no_parsed_lines")
    else:
        body = parse_sql(src_sql, "CAST(NULL AS VARCHAR)")
    with sides_as_written(con):
        con.execute(render("ingest/parsed_steps", columns=columns, parse=body), params or {})
    con.execute(render("ingest/step_rows", columns=columns))


def optimizer_setting(con: duckdb.DuckDBPyConnection) -> str:
    """The connection's ``disabled_optimizers`` setting."""
    return str(con.execute("SELECT current_setting('disabled_optimizers')").fetchall()[0][0])


@contextlib.contextmanager
def sides_as_written(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """Inside: every join builds its hash table over its right side, as the SQL is written.
    DuckDB guesses a few dozen rows for read_csv and would build it over the records of the
    file instead of over the small table joined to them. The caller's setting comes back
    after; an aborted transaction refuses that SET, so a caller that rolls one back sets it
    again after its rollback (bulk.Bulk.load)."""
    before = optimizer_setting(con)
    con.execute("SET disabled_optimizers = 'build_side_probe_side'")
    try:
        yield
    finally:
        with contextlib.suppress(duckdb.TransactionException):
            con.execute("SET disabled_optimizers = ?", [before])


MAX_TRES_LOOKUP = 100_000
"""TRES strings parsed once each before a load (tres_lookup.sql): a file has a few hundred;
this bounds the table for one with far more (the parser reads the rest itself)."""

RARE_MISSES = 0.01
"""Below this estimated share of TRES strings missing from the lookup (:func:`tres_lookup`),
the careful path runs ing_tres for the misses alone, inside parse.sql's CASE: a miss costs
about 16 times as much there, a hit nothing, where over every record each hit costs about
1/16 of a miss (docs/ingest.md)."""


def tres_lookup(
    con: duckdb.DuckDBPyConnection, groups_sql: str, params: dict[str, object] | None = None
) -> bool:
    """Fill temp ``ing_tres_lookup`` (macros.sql) from ``groups_sql``, a relation of (is_step,
    alloctres, reqtres, n): the distinct TRES strings parse.sql then looks up instead of
    splitting them per record. Returns whether misses look rare (under RARE_MISSES of the
    strings, as tres_unseen.sql estimates from the groups)."""
    con.execute(
        render("ingest/tres_lookup", groups=groups_sql),
        {**(params or {}), "max": MAX_TRES_LOOKUP},
    )
    row = con.execute(query("ingest/tres_unseen"), {"max": MAX_TRES_LOOKUP}).fetchone()
    return row is not None and float(row[0]) < RARE_MISSES


def cr_misnumbers_rejects(con: duckdb.DuckDBPyConnection, hasher: Hasher) -> bool:
    """Whether DuckDB's read (its reject tables) rejected lines of a file that holds a carriage
    return: DuckDB then numbers lines differently from the file's newlines (it counts a CR
    before a newline as a line of its own), so its rejects cannot be found in the file."""
    if not count(con, query("ingest/any_csv_error")):
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
    names: set[str] = set()
    for t in tables:
        rows = con.execute(render("ingest/gpu_names", parsed=quote_ident(t))).fetchall()
        names.update(r[0] for r in rows if r[0] is not None)
    ordered = sorted(names)
    site = dict(options.gpu_types) if options.gpu_types is not None else load_site_mapping()
    table = pa.table(
        {
            "raw": pa.array(ordered, pa.string()),
            "canon": pa.array([canonical_gpu_type(n, site) for n in ordered], pa.string()),
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


def _near_clock_change(attempt: Attempt) -> int:
    """Jobs of this load with a local time near a clock change of ``--tz`` (text formats only:
    JSON's epoch times and times with an offset are exact; those may be counted here too, the
    warning says "may")."""
    tz = attempt.options.source_tz
    if tz == "UTC" or attempt.source.fmt not in ("sacct-text", "jobcomp"):
        return 0
    from advisor.ingest import clockchange

    first, last = attempt.con.execute(
        query("ingest/time_span"), {"ingest_id": attempt.ingest_id}
    ).fetchone() or (None, None)
    if first is None or last is None:
        return 0
    found = clockchange.windows(tz, first, last)
    if not found:
        return 0
    return count(
        attempt.con,
        query("ingest/near_clock_change"),
        {"ingest_id": attempt.ingest_id, "windows": found},
    )


def finish(
    attempt: Attempt,
    loaded: Loaded,
    allocations: int,
    rejects: list[Reject],
    written: Written,
    *,
    bulk: bool = False,
) -> IngestSummary:
    """Complete the ``ingests`` row and return the summary. ``allocations`` counts the
    allocation records read (a repaired record's first half too: ``loaded.tails``)."""
    con, ingest_id = attempt.con, attempt.ingest_id
    assert ingest_id is not None
    rows_read = allocations - loaded.tails + len(loaded.line_rejects)
    missing, disabled = missing_and_disabled(loaded.present)
    folded, unknown = keys.step_and_state_counts(con, rejects, ingest_id if bulk else None)
    faults = sum(r.kept for r in rejects)
    unrecorded = count(con, query("ingest/gpus_unrecorded"), {"ingest_id": ingest_id})
    lost = len(rejects) - faults
    near_change = _near_clock_change(attempt)
    warnings = (
        (
            (
                f"{unknown} rows have a state Slurm does not print (stored as NULL, state_raw kept):"
                " `advisor jobs` shows them with no state",
            )
            if unknown
            else ()
        )
        + (
            (
                f"{faults} jobs stored with an implausible usage field or exit code as NULL (TotalCPU,"
                " CPUTimeRAW, TRESUsageIn*, ExitCode): a rejects row names each (advisor data status)",
            )
            if faults
            else ()
        )
        + (
            (
                f"no AllocTRES of this file records gres/gpu, while {unrecorded} jobs asked for GPUs"
                " (ReqTRES, Gres or the submit line): the accounting database does not record GPUs"
                " (AccountingStorageTRES lacks gres/gpu), so GPU jobs are stored with 0 GPUs",
            )
            if unrecorded
            else ()
        )
        + (
            (
                f"{near_change} jobs have a time in the hour around a clock change of"
                f" {attempt.options.source_tz}: a local time in the hour that repeats is"
                " ambiguous and one in the hour that is skipped does not exist, so these may be"
                " stored an hour off; export with SLURM_TIME_FORMAT=%s (epoch seconds) to be exact",
            )
            if near_change
            else ()
        )
    )
    bookkeeping.finish_ingest(
        con,
        ingest_id,
        bookkeeping.IngestCounts(
            rows_read=rows_read,
            lines_read=loaded.lines_read,
            inserted=written.inserted,
            updated=written.updated,
            unchanged=written.unchanged,
            rejected=lost,
            missing_fields=missing,
            disabled_analyses=disabled,
        ),
    )
    source = loaded.source
    return IngestSummary(
        ingest_id=ingest_id,
        source=source.label,
        format=source.fmt,
        compression=source.compression,
        lines_read=loaded.lines_read,
        rows_read=rows_read,
        inserted=written.inserted,
        updated=written.updated,
        unchanged=written.unchanged,
        rejected=lost,
        missing_fields=missing,
        disabled_analyses=disabled,
        first_reasons=tuple(r.message() for r in rejects[:5]),
        duplicates=written.duplicates,
        steps_folded=folded,
        unknown_states=unknown,
        usage_faults=faults,
        warnings=warnings,
    )


def assignments(columns: list[str], source: str) -> str:
    """``"c" = source."c", ...``: the SET list of an UPDATE ... FROM ``source``."""
    return ", ".join(f"{quote_ident(c)} = {source}.{quote_ident(c)}" for c in columns)


def by_line(rejects: list[Reject]) -> list[Reject]:
    """``rejects`` in line order, those without a line last (a stable sort)."""
    return sorted(rejects, key=lambda r: (r.line_no is None, r.line_no or 0))


def collect_rejects(
    con: duckdb.DuckDBPyConnection,
    loaded: Loaded,
    orphans: tuple[str, int] | None = None,
) -> list[Reject]:
    """Every reject of the source, sorted by line. Orphan steps are found by
    orphan_steps.sql, or for a bulk load by ``orphans`` (query, ingest id)."""
    found: list[Any] = con.execute(query("ingest/reject_values")).fetchall()
    if count(con, query("ingest/any_step")):
        if orphans is None:
            found += con.execute(query("ingest/orphan_steps")).fetchall()
        else:
            found += con.execute(query(orphans[0]), {"ingest_id": orphans[1]}).fetchall()
    found = _orphan_lines(con, loaded, found)
    missing = [i for i, r in enumerate(found) if r[0] is None]
    layout = loaded.source.layout
    if missing and layout is not None:
        # records DuckDB read have no line number: find their text in the file (rejects only)
        lines = text.find_lines(
            loaded.source.path,
            loaded.source.compression,
            [str(found[i][3] or "") for i in missing],
            layout.has_header,
        )
        for i, ln in zip(missing, lines, strict=True):
            found[i] = (ln, *found[i][1:])
    out = [*loaded.line_rejects]
    out += [
        Reject(line_no=r[0], raw=r[3] or "", reason=r[2], field=r[1], kept=len(r) > 4 and r[4])
        for r in found
    ]
    return by_line(out)


def _orphan_lines(con: duckdb.DuckDBPyConnection, loaded: Loaded, found: list[Any]) -> list[Any]:
    """Orphan steps come with their id (``123.batch``) for text: the whole line of each,
    read again by that id, so that find_lines numbers it and ``rejects`` keeps it."""
    idx = [
        i for i, r in enumerate(found) if r[0] is None and str(r[2]).startswith(keys.ORPHAN_REASON)
    ]
    if not idx:
        return found
    texts = keys.raw_by_id(con, loaded.source, sorted({str(found[i][3]) for i in idx}))
    out = list(found)
    for i in idx:
        lines = texts.get(str(found[i][3]), [])
        if lines:
            out[i] = (*found[i][:3], lines.pop(0))
    return out


def numbered(source: Source, rejects: list[Reject]) -> list[Reject]:
    """``rejects`` with the physical line of those that lack one, found by their text."""
    missing = [i for i, r in enumerate(rejects) if r.line_no is None and r.raw]
    if not missing or source.layout is None:
        return rejects
    lines = text.find_lines(
        source.path, source.compression, [rejects[i].raw for i in missing], source.layout.has_header
    )
    out = list(rejects)
    for i, ln in zip(missing, lines, strict=True):
        out[i] = replace(rejects[i], line_no=ln)
    return out


def supersede_stale(con: duckdb.DuckDBPyConnection, ingest_id: int) -> int:
    """Mark stored unfinished runs that a later record of the same job id supersedes
    (supersede_stale.sql: a requeue exported without ``sacct -D``); returns how many."""
    return count(con, query("ingest/supersede_stale"), {"ingest_id": ingest_id})


TEMP_TABLES = (
    "parsed",
    "parsed_steps",
    "dupkeys",
    "gmap",
    "raw_fix",
    "tres_names",
    "tail_fix",
)


def drop_temp(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what an attempt left on the connection (the view ``stage`` and the temp tables)."""
    for view in ("stage", "step_rows"):
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP VIEW IF EXISTS {view}")
    for table in TEMP_TABLES:
        with contextlib.suppress(duckdb.Error):
            con.execute(f"DROP TABLE IF EXISTS {table}")
