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

Every file carries the schema version it was written with in its Parquet key-value metadata
(``advisor_schema_version``, with ``advisor_table`` and ``advisor_version``). Reading loads the
dataset's jobs and nodes into an in-memory database of the current schema, so every core
function answers over it exactly as over the DuckDB file.
"""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import duckdb

from advisor import __version__, store
from advisor.errors import ExternalToolError, InputError, NotFoundError, StoreError
from advisor.progress import ProgressFn, no_progress

SUMMARY_BY: tuple[str, ...] = ("cluster", "partition", "gpu_type", "month")
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

    Re-exporting replaces this database's files and keeps other clusters' folders as they are.
    """
    from advisor.ratios import RatioQuery, ratio_summary

    out = cfg.out_dir
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", source=str(out))
    con = store.connect(cfg.db, read_only=True)
    try:
        version = store.schema_version(con)
        out.mkdir(parents=True, exist_ok=True)
        written: list[ExportedTable] = []
        steps = 3 if cfg.summary else 2
        progress("export jobs", 0, steps)
        jobs = _rows(con, "jobs")
        if jobs == 0:
            raise NotFoundError(
                f"{store.resolve_db_path(cfg.db)}: no jobs to export; load some first with "
                "`advisor ingest FILE`"
            )
        dest = str(out / "jobs")
        con.execute(store.query("export/copy_jobs"), _params(dest, version))
        written.append(ExportedTable("jobs", dest, jobs, _count_files(con, dest), version))
        progress("export nodes", 1, steps)
        nodes = _rows(con, "nodes")
        if nodes:
            dest = str(out / "nodes")
            con.execute(store.query("export/copy_nodes"), _params(dest, version))
            written.append(ExportedTable("nodes", dest, nodes, _count_files(con, dest), version))
        if cfg.summary:
            progress("export ratios summary", 2, steps)
            rows = ratio_summary(con, RatioQuery(by=SUMMARY_BY)).rows()
            if rows:
                import pyarrow as pa

                dest = str(out / "ratios")
                con.register("export_summary", pa.Table.from_pylist(rows))
                try:
                    con.execute(store.query("export/copy_summary"), _params(dest, version))
                finally:
                    con.unregister("export_summary")
                written.append(
                    ExportedTable("ratios", dest, len(rows), _count_files(con, dest), version)
                )
        progress("export", steps, steps)
        return written
    finally:
        con.close()


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


def open_dataset(source: str) -> duckdb.DuckDBPyConnection:
    """An in-memory database of the current schema holding the dataset at ``source``."""
    con = duckdb.connect()
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
