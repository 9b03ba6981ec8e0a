"""What one run of recommendations reads once: the fitted curve, the price book, the database.

:class:`RecommendContext` loads the curve and the prices once and opens the database read-only
on first use (so that the job-submit path imports DuckDB only when there is a database), and
remembers each distinct core question (partitions and clusters share GPU types, typical GPU
counts and caps). :func:`core_cap` is the most cores per GPU a job can get.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from types import TracebackType
from typing import Any

from advisor.dbpath import resolve_db_path
from advisor.model import slowdown
from advisor.pricing import InstancePrice, PriceBook, load_pricing

DEFAULT_MAX_CPUS_PER_GPU = 64


class RecommendContext:
    """The fitted curve, the price book and the database of one run of recommendations.

    Use as a context manager (``with RecommendContext.open(db=...) as ctx:``) or call
    :meth:`close`; a query's own ``db``, ``pricing_file`` and ``model_file`` are not read when a
    context is given.
    """

    def __init__(
        self,
        params: slowdown.CurveParams,
        book: PriceBook,
        db_path: Path,
        model_file: str | None = None,
    ) -> None:
        self.params = params
        self.book = book
        self.db_path = db_path  # resolved; it may not exist
        self.model_file = model_file
        self._con: Any = None
        self._own_con = True  # False: the caller's connection, left open
        self._answers: dict[tuple[Any, ...], Any] = {}

    @classmethod
    def open(
        cls,
        *,
        db: str | os.PathLike[str] | None = None,
        fit_file: str | None = None,
        pricing_file: str | None = None,
        con: Any = None,
    ) -> RecommendContext:
        """Load the curve (``fit_file``, else ``$ADVISOR_MODEL``, else the shipped one) and
        the prices (``pricing_file`` over the built-in ones) for the database ``db``; ``con``,
        an open connection to it, is used instead of opening one (and left open)."""
        ctx = cls(
            slowdown.load_params(fit_file),
            load_pricing(pricing_file),
            resolve_db_path(db),
            fit_file,
        )
        ctx._con, ctx._own_con = con, con is None
        return ctx

    @property
    def has_db(self) -> bool:
        return self.db_path.exists()

    def connection(self) -> Any:
        """The read-only connection to the database (opened once), or None without one."""
        if self._con is None and self.has_db:
            from advisor.store import connect

            self._con = connect(self.db_path, read_only=True)
        return self._con

    def remember(self, key: tuple[Any, ...], compute: Any) -> Any:
        """``compute()`` once per distinct ``key`` in this run."""
        if key not in self._answers:
            self._answers[key] = compute()
        return self._answers[key]

    def close(self) -> None:
        if self._con is not None and self._own_con:
            self._con.close()
        self._con = None

    def __enter__(self) -> RecommendContext:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


NodeGroup = tuple[str, tuple[str, ...], int, int]  # family (lower case), partitions, cap, nodes


CACHE_SUFFIX = ".nodecaps.json"
"""Beside the database: its node inventory as the job-submit path reads it, so that a call
imports no DuckDB and opens no database file (docs/performance.md)."""


def _db_stamp(db: Path) -> list[int] | None:
    """What says the database file has not changed since a cache was written: its size and
    modification time; None while a write-ahead log holds changes not yet in the file."""
    try:
        if Path(f"{db}.wal").exists():
            return None
        st = db.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def _cached_inventory(db: Path) -> tuple[NodeGroup, ...] | None:
    import json

    stamp = _db_stamp(db)
    try:
        with open(f"{db}{CACHE_SUFFIX}", encoding="utf-8") as fh:
            data = json.load(fh)
        if stamp is None or data.get("db") != stamp:
            return None
        return tuple(
            (str(fam), tuple(str(p) for p in parts), int(cap), int(n))
            for fam, parts, cap, n in data["inventory"]
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _write_cache(db: Path, stamp: list[int] | None, inventory: tuple[NodeGroup, ...]) -> None:
    """Best effort: a database folder this user may not write to just means no cache.
    ``stamp`` is the file's, taken before the inventory was read: a write in between leaves a
    cache that is never believed, never a new stamp on old rows."""
    import json
    import tempfile

    if stamp is None or _db_stamp(db) != stamp:
        return
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=db.parent, prefix=f".{db.name}.", suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump({"db": stamp, "inventory": [list(g) for g in inventory]}, fh)
        os.chmod(tmp, 0o644)
        os.replace(tmp, f"{db}{CACHE_SUFFIX}")
    except OSError:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def node_inventory(ctx: RecommendContext) -> tuple[NodeGroup, ...]:
    """The node inventory by GPU family and partition list (see ``sql/recommend/node_caps``),
    read once per run; empty without a database. Read from the cache beside the database while
    the database is unchanged since it was written, else from the database (and cached)."""

    def read() -> tuple[NodeGroup, ...]:
        if not ctx.has_db:
            return ()
        cached = _cached_inventory(ctx.db_path)
        if cached is not None:
            return cached
        stamp = _db_stamp(ctx.db_path)
        con = ctx.connection()
        from advisor.store import query

        found = tuple(
            (str(fam), tuple(parts or ()), int(cap), int(n))
            for fam, parts, cap, n in con.execute(query("recommend/node_caps")).fetchall()
        )
        _write_cache(ctx.db_path, stamp, found)
        return found

    inventory: tuple[NodeGroup, ...] = ctx.remember(("node inventory",), read)
    return inventory


def node_cap(ctx: RecommendContext, gpu_type: str, partition: str | None) -> tuple[int, int] | None:
    """(cores per GPU every node of the type can give, nodes) from the inventory, or None."""
    fam = gpu_type.lower()
    groups = [
        (cap, n)
        for f, parts, cap, n in node_inventory(ctx)
        if f == fam and (partition is None or partition in parts)
    ]
    if not groups:
        return None
    return min(cap for cap, _ in groups), sum(n for _, n in groups)


def check_partition(ctx: RecommendContext, partition: str) -> None:
    """NotFoundError unless the database knows ``partition`` (from its node inventory or its
    jobs), naming the partitions it knows; nothing to check without a database."""
    if not ctx.has_db:
        return
    from_nodes = {p for _, parts, _, _ in node_inventory(ctx) for p in parts}
    if partition in from_nodes:  # the common case on the job-submit path: no scan of the jobs
        return
    from advisor.errors import NotFoundError
    from advisor.store import query

    def read() -> tuple[str, ...]:
        rows = ctx.connection().execute(query("recommend/job_partitions")).fetchall()
        return tuple(str(r[0]) for r in rows)

    known = sorted(from_nodes | set(ctx.remember(("job partitions",), read)))
    if partition in known:
        return
    shown = ", ".join(known[:20]) + (f" and {len(known) - 20} more" if len(known) > 20 else "")
    raise NotFoundError(
        f"--partition {partition!r} is not in the database {ctx.db_path} "
        f"(known: {shown or 'none; it holds no jobs or nodes'}); "
        f"`advisor nodes list` and `advisor ratios --by partition` list them"
    )


def core_cap(
    ctx: RecommendContext,
    platform: str,
    instance: InstancePrice | None,
    given: int | None,
    partition: str | None,
) -> tuple[int, str]:
    """(most cores per GPU, where that comes from): given by hand, else the node inventory,
    else the reference instance's vCPUs per GPU, else :data:`DEFAULT_MAX_CPUS_PER_GPU`."""
    if given is not None:
        return max(int(given), 1), "--max-cpus-per-gpu"
    inv = node_cap(ctx, platform, partition)
    if inv is not None:
        cap, n = inv
        where = f" in partition {partition}" if partition else ""
        return max(cap, 1), f"node inventory: {n} {platform} node(s){where}"
    if instance is None:
        return (
            DEFAULT_MAX_CPUS_PER_GPU,
            f"no node inventory and no instance price for {platform}; "
            f"capped at {DEFAULT_MAX_CPUS_PER_GPU} cores per GPU",
        )
    return (
        max(int(instance.vcpus_per_gpu), 1),
        f"no node inventory; {instance.name} gives {instance.vcpus_per_gpu:g} vCPUs per GPU",
    )
