"""The database as a Parquet dataset: ``advisor export parquet`` writes it, ``--parquet`` reads it.

The dataset is Hive-partitioned, so Spark, Trino, DuckDB or pandas read it as it is and several
centres combine by exporting into one folder (cluster names must then differ between centres):

``DIR/jobs/cluster=<c>/month=<YYYY-MM>/data_0.parquet``
    every allocation with the columns of the ``jobs`` table (``month``: the UTC month the job
    started in, else its submit month, the month rule of advisor.ratios)
``DIR/nodes/cluster=<c>/data_0.parquet``
    the node inventory, when one is loaded
``DIR/ratios/cluster=<c>/data_0.parquet``
    a derived summary: :func:`advisor.ratios.ratio_summary` by cluster, partition, GPU type and
    month, as ``advisor ratios --format json`` prints it

``DIR/jobs``, ``DIR/nodes`` and ``DIR/ratios`` are links to ``DIR/.advisor/current/<table>``,
and ``current`` links to one version folder beside it: an export writes a new version and
swaps the link, so readers never see a half-written dataset.

Every file carries the schema version it was written with in its Parquet key-value metadata
(``advisor_schema_version``, with ``advisor_table`` and ``advisor_version``). Reading loads the
dataset's jobs and nodes into an in-memory database of the current schema, so every core
function answers over it exactly as over the DuckDB file.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import re
import secrets
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from advisor import __version__, store
from advisor.errors import ExternalToolError, InputError, NotFoundError, StoreError
from advisor.progress import ProgressFn, no_progress

SUMMARY_BY: tuple[str, ...] = ("cluster", "partition", "gpu_type", "month")
_TABLES = ("jobs", "nodes", "ratios")
_META = ".advisor"  # the dataset's versions and the writers' lock (hidden from Hive readers)
_CURRENT = "current"  # in _META: a link to the version readers see
_URL_SCHEMES = (
    "s3://",
    "s3a://",
    "s3n://",
    "gs://",
    "gcs://",
    "r2://",
    "az://",
    "azure://",
    "abfss://",
    "http://",
    "https://",
    "hf://",
)


@dataclass(frozen=True)
class ExportConfig:
    """Where from (a DuckDB file, see advisor.store.resolve_db_path) and where to."""

    out_dir: Path
    db: str | os.PathLike[str] | None = None
    summary: bool = True


@dataclass(frozen=True)
class ExportedTable:
    """One table of the dataset: its folder, rows and files written."""

    table: str
    path: str
    rows: int
    files: int
    schema_version: int


def _params(dest: str, version: int) -> dict[str, object]:
    return {"dest": dest, "schema_version": str(version), "advisor_version": __version__}


def _count_files(con: duckdb.DuckDBPyConnection, folder: str) -> int:
    row = con.execute(store.query("export/file_count"), {"files": f"{folder}/**/*.parquet"})
    found = row.fetchone()
    return int(found[0]) if found else 0


def export_parquet(cfg: ExportConfig, progress: ProgressFn = no_progress) -> list[ExportedTable]:
    """Write the database's jobs (and nodes, and the derived summary) under ``cfg.out_dir``.

    The new files are written aside, into a version folder of their own under ``DIR/.advisor/``,
    and shown by one atomic rename (see :func:`_swap`): a reader, or an export killed at any
    point, sees the dataset before or after, whole. Re-exporting replaces this database's
    clusters and keeps other clusters' folders as they are.
    """
    out = cfg.out_dir
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", source=str(out))
    con = store.connect(cfg.db, read_only=True)
    try:
        version = store.schema_version(con)
        jobs = _rows(con, "jobs")
        if jobs == 0:
            raise NotFoundError(
                f"{store.resolve_db_path(cfg.db)}: no jobs to export; load some first with "
                "`advisor ingest FILE`"
            )
        out.mkdir(parents=True, exist_ok=True)
        with _writer_lock(out):
            _remove_stale_versions(out)
            stage = out / _META / _version_name()
            stage.mkdir()
            try:
                rows = _write_tables(con, cfg, stage, version, jobs, progress)
                _carry_other_clusters(out, stage)
                _fsync_tree(stage)
            except BaseException:
                shutil.rmtree(stage, ignore_errors=True)  # never shown; nothing else changed
                raise
            old = _current_version(out)
            _swap(out, stage)
            if old is not None:
                shutil.rmtree(old, ignore_errors=True)
        return [
            ExportedTable(t, str(out / t), n, _file_count(stage / t), version)
            for t, n in rows.items()
        ]
    finally:
        con.close()


def _write_tables(
    con: duckdb.DuckDBPyConnection,
    cfg: ExportConfig,
    stage: Path,
    version: int,
    jobs: int,
    progress: ProgressFn,
) -> dict[str, int]:
    """Write this database's tables into the version folder ``stage``; rows per table."""
    from advisor.ratios import RatioQuery, ratio_summary

    steps = 3 if cfg.summary else 2
    progress("export jobs", 0, steps)
    rows = {"jobs": jobs}
    long_name = con.execute(store.query("export/too_long_cluster")).fetchone()
    if long_name:
        raise InputError(
            f"cluster {long_name[0][:40]!r}... is {long_name[1]} bytes long: its Parquet folder "
            "(cluster=NAME) would pass the 255 bytes a file name may have; nothing was exported"
        )
    con.execute(store.query("export/copy_jobs"), _params(str(stage / "jobs"), version))
    progress("export nodes", 1, steps)
    nodes = _rows(con, "nodes")
    if nodes:
        con.execute(store.query("export/copy_nodes"), _params(str(stage / "nodes"), version))
        rows["nodes"] = nodes
    if cfg.summary:
        progress("export ratios summary", 2, steps)
        summary = ratio_summary(con, RatioQuery(by=SUMMARY_BY)).rows()
        if summary:
            import pyarrow as pa

            # One declared type per column, so that every centre's files agree (a column of
            # nulls would otherwise be typed by its first value, and Spark refuses mixed types).
            schema = pa.schema(
                [
                    (
                        k,
                        pa.string()
                        if k in SUMMARY_BY
                        else pa.int64()
                        if k == "jobs"
                        else pa.float64(),
                    )
                    for k in summary[0]
                ]
            )
            con.register("export_summary", pa.Table.from_pylist(summary, schema=schema))
            try:
                con.execute(
                    store.query("export/copy_summary"), _params(str(stage / "ratios"), version)
                )
            finally:
                con.unregister("export_summary")
            rows["ratios"] = len(summary)
    progress("export", steps, steps)
    return rows


def _version_name() -> str:
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    return f"{stamp}-{os.getpid()}-{secrets.token_hex(3)}"


def _file_count(folder: Path) -> int:
    return sum(1 for _ in folder.rglob("*.parquet")) if folder.is_dir() else 0


@contextmanager
def _writer_lock(out: Path) -> Iterator[None]:
    """Hold ``DIR/.advisor/lock``: exports into one folder (several centres) take turns; the
    kernel drops the lock of a killed process."""
    meta = out / _META
    meta.mkdir(exist_ok=True)
    with open(meta / "lock", "a+b") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _current_version(out: Path) -> Path | None:
    link = out / _META / _CURRENT
    if not link.is_symlink():
        return None
    return out / _META / os.readlink(link)


def _remove_stale_versions(out: Path) -> None:
    """Remove what an export killed part-way left behind: versions not shown, links half made."""
    meta = out / _META
    current = _current_version(out)
    for entry in meta.iterdir():
        if entry.name in ("lock", _CURRENT) or entry == current:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def _shown_folder(out: Path, table: str) -> Path | None:
    """The folder readers see at ``DIR/<table>`` now (a version's, or a plain folder written by
    an advisor before versions), if any."""
    path = out / table
    return path if path.is_dir() else None


def _carry_other_clusters(out: Path, stage: Path) -> None:
    """Hard-link into ``stage`` every entry of the shown dataset that this export does not
    replace: other centres' ``cluster=`` folders (and anything else a site put there)."""
    ours = {
        entry.name
        for table in _TABLES
        if (stage / table).is_dir()
        for entry in (stage / table).iterdir()
    }
    for table in _TABLES:
        shown = _shown_folder(out, table)
        if shown is None:
            continue
        for entry in shown.iterdir():
            if entry.name in ours:
                continue
            dest = stage / table / entry.name
            dest.parent.mkdir(exist_ok=True)
            if entry.is_dir():
                shutil.copytree(entry, dest, copy_function=_link_or_copy, symlinks=True)
            else:
                _link_or_copy(str(entry), str(dest))


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # a file system without hard links: copy
        shutil.copy2(src, dst)


def _fsync_tree(root: Path) -> None:
    """Flush the version's files and folders to disk before it is shown, so that a crash after
    the swap cannot show files the disk never got."""
    for folder, _, files in os.walk(root):
        for name in files:
            fd = os.open(os.path.join(folder, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        _fsync_dir(Path(folder))


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _swap(out: Path, stage: Path) -> None:
    """Show the version ``stage``: ``DIR/<table>`` is a link to ``.advisor/current/<table>``,
    and ``.advisor/current`` a link to the version, replaced by one rename, so every table
    switches at once. A folder written before versions existed is exchanged for its link."""
    meta = out / _META
    tables = [t for t in _TABLES if (stage / t).is_dir()]
    target = {t: f"{_META}/{_CURRENT}/{t}" for t in _TABLES}
    for t in tables:  # a new table's link points nowhere until the swap: the old dataset
        path = out / t
        if not path.exists() and not path.is_symlink():
            os.symlink(target[t], path)
    pending = meta / f"{_CURRENT}.{stage.name}"
    os.symlink(stage.name, pending)
    os.replace(pending, meta / _CURRENT)  # the swap
    _fsync_dir(meta)
    for t in _TABLES:
        path = out / t
        if path.is_symlink() and os.readlink(path) == target[t]:
            if t not in tables:
                path.unlink()  # a table this version lacks (it pointed nowhere since the swap)
        elif t in tables and path.exists():
            _replace_with_link(path, target[t], meta / f"{t}.{stage.name}")
        elif path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)  # a folder from before versions, of a table this one lacks
    _fsync_dir(out)


def _replace_with_link(path: Path, target: str, aside: Path) -> None:
    """Put a link to ``target`` where the folder ``path`` is, and remove the folder: in one
    step where the kernel can exchange two names (Linux renameat2), else in two renames."""
    os.symlink(target, aside)
    if not _exchange(aside, path):
        folder = aside.with_name(aside.name + ".old")
        os.rename(path, folder)
        os.rename(aside, path)
        aside = folder
    if aside.is_symlink():
        aside.unlink()
    else:
        shutil.rmtree(aside, ignore_errors=True)


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` atomically (Linux renameat2 RENAME_EXCHANGE)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    at_fdcwd, rename_exchange = -100, 2
    return renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> int:
    row = con.execute(f"SELECT count(*) FROM {store.quote_ident(table)}").fetchone()  # noqa: S608
    return int(row[0]) if row else 0


def _is_url(source: str) -> bool:
    return source.lower().startswith(_URL_SCHEMES)


def _folder(source: str, table: str) -> str:
    if _is_url(source):
        return f"{source.rstrip('/')}/{table}"
    return str(Path(source) / table)


def _read_error(source: str, exc: duckdb.Error) -> ExternalToolError:
    text = str(exc).strip()
    missing = re.search(r"extension '(\w+)'", text) or re.search(r"INSTALL (\w+)", text)
    if missing:
        name = missing.group(1)
        return ExternalToolError(
            f"{source}: reading this URL needs DuckDB's {name} extension, which is not "
            f"installed (advisor downloads nothing itself); install it once with: "
            f"python -c \"import duckdb; duckdb.sql('INSTALL {name}')\""
        )
    first = text.splitlines()[0] if text else type(exc).__name__
    return ExternalToolError(f"{source}: cannot read: {first}")


def load_dataset(con: duckdb.DuckDBPyConnection, source: str) -> int:
    """Load the dataset at ``source`` (a folder, or an object-store URL DuckDB's httpfs reads)
    into the empty, migrated database ``con``; return the number of jobs loaded."""
    if not _is_url(source) and not Path(source).is_dir():
        raise NotFoundError(
            f"{source}: no such folder; write a dataset with `advisor export parquet {source}`"
        )
    # DuckDB would otherwise download a missing extension (httpfs for s3://) on first use;
    # nothing is downloaded at run time, so a missing one is an error that says how to add it.
    con.execute("SET autoinstall_known_extensions = false")
    current = store.schema_version(con)
    loaded = 0
    for table in ("jobs", "nodes"):
        files = f"{_folder(source, table)}/**/*.parquet"
        try:
            if _count_files(con, _folder(source, table)) == 0:
                if table == "jobs":
                    raise NotFoundError(
                        f"{source}: no jobs/**/*.parquet; is this the folder "
                        "`advisor export parquet` wrote?"
                    )
                continue
            versions = con.execute(store.query("export/schema_versions"), {"files": files})
            found = versions.fetchall()
        except duckdb.Error as exc:
            raise _read_error(source, exc) from exc
        for version, n in found:
            if not str(version).isdigit():
                raise InputError(
                    f"advisor_schema_version {version!r} is not a number", source=files
                )
            if store.renumbered(int(version)) > current:
                raise StoreError(
                    f"{files}: {n} files were written with schema version {version}, newer than "
                    f"this advisor's {current}; upgrade advisor to read them"
                )
        try:
            con.execute(store.query(f"export/load_{table}"), {"files": files})
        except duckdb.Error as exc:
            raise InputError(f"not an advisor {table} dataset: {exc}", source=files) from exc
        if table == "jobs":
            loaded = _rows(con, "jobs")
    return loaded


# What an opened dataset may hold in memory before DuckDB spills it to a temporary folder: held
# whole, 46.5M jobs passed 16 GiB and the 24 GiB machine had to kill it.
DATASET_MEMORY_LIMIT = "4GB"


def open_dataset(source: str) -> duckdb.DuckDBPyConnection:
    """An in-memory database of the current schema holding the dataset at ``source``, under
    DATASET_MEMORY_LIMIT (the rest spills to a temporary folder)."""
    import tempfile

    spill = Path(tempfile.gettempdir()) / "advisor-dataset-spill"
    con = duckdb.connect(
        config={"memory_limit": DATASET_MEMORY_LIMIT, "temp_directory": str(spill)}
    )
    try:
        store.migrate(con)
        load_dataset(con, source)
    except BaseException:
        con.close()
        raise
    return con


@contextmanager
def dataset_as_db(source: str) -> Iterator[Path]:
    """The dataset at ``source`` loaded into a temporary DuckDB file, for the functions that
    open a database by its path (the report); the file is removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="advisor-parquet-") as tmp:
        path = Path(tmp) / "dataset.duckdb"
        con = store.connect(path)
        try:
            load_dataset(con, source)
        finally:
            con.close()
        yield path
