"""One load of one source into the store, in one transaction.

Owns the sequence around either way of writing it: detect (compression, format, an empty
file), a source refused whole kept as a failed ``ingests`` row, the hash computed beside the
load, then the strategies in turn (:func:`strategies`: the bulk way, advisor.ingest.bulk, where
``IngestOptions.strategy`` allows it, then the careful way, advisor.ingest.careful, which loads
every source), and a second attempt, read line by line, at sacct text DuckDB's strict reader
gives up on. A crash or kill before COMMIT leaves the database as it was.
"""

from __future__ import annotations

import dataclasses
import time
import zoneinfo
from pathlib import Path

import duckdb

from advisor.errors import InputError, UsageError
from advisor.ingest import archive, bookkeeping, detect, stages
from advisor.ingest.bulk import MAX_STEP_SHARE, Bulk
from advisor.ingest.careful import Careful
from advisor.ingest.records import STRATEGIES, IngestOptions, IngestSummary, Source
from advisor.ingest.stages import STAGE_NAMES, STAGES, Attempt, Hasher, Strategy, prepare
from advisor.progress import ProgressFn, no_progress
from advisor.store import query

__all__ = ["STAGES", "STAGE_NAMES", "check_options", "ingest_path", "prepare", "strategies"]


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
    if options.strategy not in STRATEGIES:
        raise UsageError(f"strategy {options.strategy!r}: use {', '.join(STRATEGIES)}")


def strategies(attempt: Attempt) -> list[Strategy]:
    """The strategies to try on ``attempt``, in order; the last one loads every source.

    The bulk way is for sacct text read by DuckDB's strict reader, uncompressed (each of its
    reads would decompress the file again); "auto" also leaves a file of many step lines to the
    careful way (one read beats several there), "bulk" does not, "careful" never takes it.
    """
    source, wanted = attempt.source, attempt.options.strategy
    if (
        wanted == "careful"
        or source.fmt != "sacct-text"
        or source.compression is not None
        or not attempt.strict
    ):
        return [Careful()]
    return [Bulk(max_step_share=1.0 if wanted == "bulk" else MAX_STEP_SHARE), Careful()]


def fold_pressure(con: duckdb.DuckDBPyConnection, since: int | None = None) -> int:
    """After a batch of loads: jobs loaded after their pressure records (or replaced by a later
    state) get the records' figures again (advisor.ingest.pressure.fold), in one transaction.
    ``since``: the latest ingest id before the batch (:func:`last_ingest`), so that only the
    batch's jobs are folded; None folds every job."""
    from advisor.ingest import pressure

    con.execute("BEGIN TRANSACTION")
    try:
        changed = pressure.fold(con, since)
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
    return changed


def last_ingest(con: duckdb.DuckDBPyConnection) -> int:
    """The latest ingest id so far (0 before the first): a batch of loads passes it to
    :func:`fold_pressure`."""
    return stages.count(con, query("ingest/last_ingest"))


def ingest_path(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    options: IngestOptions,
    progress: ProgressFn = no_progress,
    *,
    source: str | None = None,
) -> IngestSummary:
    """Load one file in one transaction and return its summary (``source``: how to name it,
    default its path)."""
    t0 = time.perf_counter()
    started_at = bookkeeping.utc_now()
    label = source or str(path)
    compression = detect.compression_of(path)
    fmt = options.input_format or "unknown"

    def refuse(reason: str) -> None:
        unread = Source(path, label, fmt, compression, b"", started_at)
        bookkeeping.record_refusal(con, stages.ingest_row(unread, options), reason)

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
        refuse(str(exc))
        raise
    src = Source(path, label, fmt, compression, head, started_at)
    if fmt == "pressure":
        from advisor.ingest import pressure

        try:
            summary = pressure.load(con, src, options)
        except InputError as exc:
            refuse(str(exc))
            raise
        return dataclasses.replace(summary, seconds=round(time.perf_counter() - t0, 3))
    hasher = Hasher(path, compression, known)
    hasher.start()
    try:
        try:
            summary = _attempt(Attempt(con, src, options, progress, hasher))
        except duckdb.InvalidInputException as exc:
            if fmt != "sacct-text" or not _reader_gave_up(exc):
                raise
            # DuckDB's strict CSV reader gives up on a whole file for some bytes (a bare CR on a
            # line of its own): load the file again, its lines read in Python
            # (text.read_by_line).
            summary = _attempt(Attempt(con, src, options, progress, hasher, strict=False))
    except (duckdb.InvalidInputException, duckdb.ConversionException) as exc:
        first = str(exc).splitlines()[0]
        err = InputError(f"cannot read as {fmt}: {first}", source=label)
        refuse(str(err))
        raise err from exc
    except InputError as exc:
        refuse(str(exc))
        raise
    progress(label, STAGES, STAGES)
    if summary.rejected and summary.inserted + summary.updated + summary.unchanged == 0:
        _refuse_unusable(con, src, summary)
    return dataclasses.replace(summary, seconds=round(time.perf_counter() - t0, 3))


def _reader_gave_up(exc: duckdb.InvalidInputException) -> bool:
    """Whether DuckDB's CSV reader refused the file (its message names the CSV parser and the
    file's read options) or may have dropped a line (stages.LineTooLong), not the load's own
    SQL: a failure of the latter loaded the file again line by line, silently and many times
    slower, instead of showing it."""
    return isinstance(exc, stages.LineTooLong) or "CSV" in str(exc)


def _attempt(attempt: Attempt) -> IngestSummary:
    """One attempt: each strategy in turn until one loads the source. Reading and parsing fill
    connection-local temp tables (never the file); every write to the database happens in one
    transaction, rolled back on any error."""
    try:
        attempt.stage(0)
        source, options = attempt.source, attempt.options
        if source.fmt == "sacct-text":
            layout = detect.text_layout(
                source.head, options.delimiter, options.fields, source.label
            )
            attempt.source = dataclasses.replace(source, layout=layout)
        for strategy in strategies(attempt):
            summary = strategy.load(attempt)
            if summary is not None:
                return summary
        raise AssertionError("the careful strategy loads every source")  # pragma: no cover
    finally:
        stages.drop_temp(attempt.con)
        stages.reset_memory_limit(attempt.con)


def _refuse_unusable(
    con: duckdb.DuckDBPyConnection, source: Source, summary: IngestSummary
) -> None:
    """A committed load that stored nothing (every record rejected, or none there): mark its
    ``ingests`` row 'failed' (its rejects stay, with their reasons) and raise an InputError
    naming the likely cause (advisor.ingest.diagnose), so that a cron job notices."""
    from advisor.ingest import diagnose

    bookkeeping.mark_failed(con, summary.ingest_id)
    raise InputError(
        diagnose.nothing_usable(source.path, source.compression, source.fmt, summary),
        source=source.label,
    )
