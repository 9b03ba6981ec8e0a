"""The dashboard's database file: which one (``--db``, ``$ADVISOR_DB``), and the read-only
connection each script run opens once and hands back when it ends, kept warm between runs
unless a writer waits for the file."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb

from advisor import store
from advisor.errors import AdvisorError, LockedError
from app.messages import stop_error, stop_info

DbKey = tuple[str, float]  # (resolved path, modification time)


def _argv_db() -> str | None:
    """``--db FILE`` given after ``--`` to ``streamlit run app/streamlit_app.py``."""
    argv = sys.argv
    if not argv or not argv[0].endswith("streamlit_app.py"):
        return None
    for i, arg in enumerate(argv[1:], start=1):
        if arg == "--db" and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--db="):
            return arg.split("=", 1)[1]
    return None


def db_key() -> DbKey:
    """The database file (``--db``, else ``$ADVISOR_DB``, else ./advisor.duckdb) and its mtime.

    Stops the page with the store's own message when the file does not exist.
    """
    path = store.resolve_db_path(_argv_db()).resolve()
    try:
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        stop_error(
            f"{path}: no such database; load data first with `advisor ingest FILE --db {path}`"
        )
    return (str(path), mtime)


# Opening the file costs tens of milliseconds (DuckDB loads its catalog, and a fresh instance
# has no cached blocks), so one script run (one interaction of one browser session, in its own
# thread) opens it once, on its first core call, and the router hands it back when the run ends
# (release_connection). The last one handed back is kept open for KEEP_WARM_S as the "anchor":
# while it is open, the next run's open shares its DuckDB instance (no catalog load, warm
# blocks). A writer that finds the file locked leaves a marker (store.writer_waiting); then
# the anchor is closed at once and no run keeps the file, so the writer gets it within a run.
FILE_LOCK = threading.RLock()  # loaders.cached_call holds it too, for calls that open the file
_open_runs = 0  # script runs of this process holding a connection now (under FILE_LOCK)
_run = threading.local()
KEEP_WARM_S = 10.0
ANCHOR_POLL_S = 0.1
_anchor: duckdb.DuckDBPyConnection | None = None
_anchor_until = 0.0
# How long a request waits while another process (an ingest) writes the file, before the page
# says so instead of answering; and how long a run lets a waiting writer go first.
READ_WAIT_S = 10.0
WRITER_FIRST_S = 1.0
_cubes_checked: set[DbKey] = set()


@contextmanager
def connection(key: DbKey) -> Iterator[duckdb.DuckDBPyConnection]:
    """This script run's read-only connection of the database file (opened on first use; the
    router hands it back at the end of the run with :func:`release_connection`).

    The dashboard holds DuckDB's file lock while it answers and, when no writer is waiting, for
    ``KEEP_WARM_S`` after; a writer waiting for the file gets it as soon as the running
    interactions end. While a writer holds it, a request waits up to ``READ_WAIT_S`` seconds,
    then the page says which process is writing.
    """
    con = getattr(_run, "con", None)
    if con is None or _run.key != key:
        release_connection()
        con = _open(key)
        _run.con, _run.key = con, key
    yield con


def _open(key: DbKey) -> duckdb.DuckDBPyConnection:
    global _open_runs
    with FILE_LOCK:
        if store.writer_waiting(key[0]):
            _close_anchor()
            deadline = time.monotonic() + WRITER_FIRST_S
            while not _open_runs and store.writer_waiting(key[0]) and time.monotonic() < deadline:
                time.sleep(0.05)  # nothing of ours holds the file: the writer takes it now
        _store_fresh_cubes_once(key)
        try:
            con = store.connect(key[0], read_only=True, wait_s=READ_WAIT_S)
        except LockedError as exc:
            stop_info(
                f"The database is being written by another process ({exc}). The pages show the "
                "new data once it has finished: reload the page in a moment."
            )
        except AdvisorError as exc:
            stop_error(str(exc))
        _open_runs += 1
        return con


def release_connection() -> None:
    """Hand back this script run's connection, if it opened one (the router calls this last):
    kept as the anchor for ``KEEP_WARM_S`` unless a writer is waiting or one is kept already."""
    global _open_runs, _anchor, _anchor_until
    con = getattr(_run, "con", None)
    if con is None:
        return
    path = _run.key[0]
    _run.con = None
    with FILE_LOCK:
        _open_runs -= 1
        if store.writer_waiting(path):
            con.close()
            _close_anchor()
            return
        _anchor_until = time.monotonic() + KEEP_WARM_S
        if _anchor is not None:
            con.close()
            return
        _anchor = con
        threading.Thread(target=_watch_anchor, args=(con, path), daemon=True).start()


def _watch_anchor(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """Close the anchor ``con`` once it has been idle for KEEP_WARM_S, or at once when a writer
    starts waiting for the file (a stat every ANCHOR_POLL_S while it is open)."""
    while True:
        time.sleep(ANCHOR_POLL_S)
        with FILE_LOCK:
            if _anchor is not con:
                return
            if time.monotonic() >= _anchor_until or store.writer_waiting(path):
                _close_anchor()
                return


def _close_anchor() -> None:
    global _anchor
    with FILE_LOCK:
        if _anchor is not None:
            _anchor.close()
            _anchor = None


def _store_fresh_cubes_once(key: DbKey) -> None:
    """Once per file version: when an ingest left the stored summary tables (the ratio cubes)
    stale, rebuild them in the file (``ratios.store_fresh_cubes``, what ``advisor dashboard``
    does before serving), so that per-request connections find them fresh instead of scanning
    every job. Skipped, changing nothing, when the file is busy, read-only or of an older schema
    (the read-only open then reports the schema with the command that upgrades it)."""
    if key in _cubes_checked or _open_runs:  # another session reads now: check next time
        return
    _cubes_checked.add(key)
    from advisor import ratios

    _close_anchor()  # the write below needs the file free of this process's readers too

    try:
        con = store.connect(key[0], read_only=True, wait_s=0)
    except AdvisorError:
        return
    try:
        fresh = ratios.cube_is_fresh(con) and ratios.people_months_are_fresh(con)
    finally:
        con.close()
    if not fresh:
        ratios.store_fresh_cubes(key[0])
