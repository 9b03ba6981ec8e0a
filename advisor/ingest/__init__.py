"""Ingest of Slurm accounting records (sacct text, sacct JSON, jobcomp logs, live sacct) into
the ``jobs`` table: one row per allocation, steps folded, upserted, bad lines kept in ``rejects``.

Public API (other domains call these):

- :func:`ingest_each` (``advisor ingest FILE...``: every file it can, one outcome each),
  :func:`ingest_files` (stops at the first failed file) and :func:`ingest_sacct` (``--sacct``)
- :func:`list_jobs`, :func:`list_ingests`, :func:`list_rejects`
- records: :class:`IngestOptions`, :class:`IngestSummary`, :class:`FileOutcome`, :class:`JobFilter`,
  :class:`SacctWindowConfig`

The modules: ``detect`` (compression, format, delimiter, header), ``text`` (sacct -P via
DuckDB read_csv, Python repair of the rare bad lines), ``jsonfmt`` (sacct --json 21.08 to
current), ``jobcomp`` (jobcomp/filetxt), ``pipeline`` (parse/fold/upsert in one transaction),
``live`` (running sacct window by window), ``listing`` (reading back).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb

from advisor.errors import InputError, NotFoundError
from advisor.ingest.listing import list_ingests, list_jobs, list_rejects
from advisor.ingest.records import FileOutcome, IngestOptions, IngestSummary, JobFilter
from advisor.progress import ProgressFn, no_progress

__all__ = [
    "FileOutcome",
    "IngestOptions",
    "IngestSummary",
    "JobFilter",
    "SacctWindowConfig",
    "ingest_each",
    "ingest_files",
    "ingest_sacct",
    "list_ingests",
    "list_jobs",
    "list_rejects",
]

Db = str | os.PathLike[str] | duckdb.DuckDBPyConnection | None


@contextlib.contextmanager
def _loading(db: Db) -> Iterator[duckdb.DuckDBPyConnection]:
    """The connection a load runs on: opened here and closed after, or the caller's, which
    gets its memory limit back (a load may lower it)."""
    if isinstance(db, duckdb.DuckDBPyConnection):
        con, owned = db, False
    else:
        from advisor.store import connect

        con, owned = connect(db), True
    limit = con.execute("SELECT current_setting('memory_limit')").fetchone()
    try:
        yield con
    finally:
        if owned:
            con.close()
        elif limit:
            con.execute("SET memory_limit = ?", [limit[0]])


def _files(paths: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The paths to load, every one checked to exist before anything loads."""
    files = [Path(p) for p in paths]
    for f in files:
        if not f.exists():
            raise NotFoundError(f"{f}: no such file")
    return files


def ingest_files(
    db: Db,
    paths: Sequence[str | os.PathLike[str]],
    options: IngestOptions | None = None,
    progress: ProgressFn = no_progress,
) -> list[IngestSummary]:
    """Load each file in its own transaction; return one summary per file, in order. Tables
    derived from ``jobs`` are the caller's to rebuild (advisor.derived.refresh_after_load).

    ``db`` is a database path (None: ``$ADVISOR_DB`` / ``./advisor.duckdb``) or an open
    connection. A file that cannot be read at all raises (InputError / NotFoundError) after
    the files before it were committed.
    """
    from advisor.ingest import pipeline

    opts = options or IngestOptions()
    pipeline.check_options(opts)
    files = _files(paths)
    with _loading(db) as con:
        pipeline.prepare(con)
        since = pipeline.last_ingest(con)
        done = [pipeline.ingest_path(con, f, opts, progress) for f in files]
        pipeline.fold_pressure(con, since)
        return done


def ingest_each(
    db: Db,
    paths: Sequence[str | os.PathLike[str]],
    options: IngestOptions | None = None,
    progress: ProgressFn = no_progress,
) -> list[FileOutcome]:
    """Load every file that can be loaded, each in its own transaction, and return one outcome
    per file, in order: a file refused whole (InputError) is recorded as failed and the files
    after it still load, so one bad file of a month's batch costs that file only. Missing
    paths raise NotFoundError before anything loads, as for :func:`ingest_files`."""
    from advisor.ingest import pipeline

    opts = options or IngestOptions()
    pipeline.check_options(opts)
    files = _files(paths)
    outcomes: list[FileOutcome] = []
    with _loading(db) as con:
        pipeline.prepare(con)
        since = pipeline.last_ingest(con)
        for f in files:
            try:
                summary = pipeline.ingest_path(con, f, opts, progress)
            except InputError as exc:
                outcomes.append(FileOutcome(str(f), error=str(exc), exit_code=exc.exit_code))
            else:
                outcomes.append(FileOutcome(str(f), summary=summary))
        pipeline.fold_pressure(con, since)
    return outcomes


def ingest_sacct(
    db: Db,
    config: SacctWindowConfig,
    options: IngestOptions | None = None,
    progress: ProgressFn = no_progress,
) -> list[IngestSummary]:
    """Run the real ``sacct`` window by window and load each window (see advisor.ingest.live);
    derived tables are the caller's to rebuild, as for :func:`ingest_files`."""
    from advisor.ingest import live, pipeline

    with _loading(db) as con:
        since = pipeline.last_ingest(con)
        done = live.run_windows(con, config, options or IngestOptions(), progress)
        pipeline.fold_pressure(con, since)
        return done


from advisor.ingest.live import SacctWindowConfig  # noqa: E402
