"""CPU-per-GPU ratio analytics over ``jobs``: summaries, distributions and fair shares.

This module owns the questions "how many cores per GPU do jobs get?" and "how many could they
have had?". Jobs are filtered and summed in DuckDB (the SQL under ``advisor/sql/ratios/``); a
summary's percentiles, means and shares are then read off the summed rows with numpy, for all
groups at once (:func:`_table`). Python also validates the query and builds the dataclasses.

Definitions (see docs/ratios.md):

- The ratio of a job is its allocated Slurm CPUs divided by its allocated GPUs
  (``cores_per_gpu``; Slurm CPUs are logical CPUs, i.e. hardware threads where SMT is on).
- A job counts when it got an allocation: a start time, GPUs > 0 and CPUs > 0 (allocated, so a
  job cancelled while pending has none). Every other job that passes the filters is counted in
  ``excluded`` under the first of these it fails (``never_started``, ``no_gpus``,
  ``no_cpus``), never silently. A job that started and ended within the same second counts,
  with zero GPU-hours (it weighs nothing in GPU-hour-weighted figures).
- A job belongs to the month (UTC) it started in, whole, even if it ran across months; time
  filters select on the start time too (the submit time for jobs never started).
- Percentiles weighted by jobs use linear interpolation (numpy's default, DuckDB's
  ``quantile_cont``). Percentiles weighted by GPU-hours use the weighted inverted CDF
  (``numpy.percentile(x, q, weights=gpu_seconds, method="inverted_cdf")``): the smallest ratio
  whose cumulative share of GPU-hours reaches q.
- The fair share of a job is the cores per GPU of its node type (usable node CPUs / node GPUs,
  from ``nodes``), matched on (cluster, GPU type); when a cluster has several node shapes of one
  GPU type, the smallest (a job below it is below on every node of that type).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from functools import cached_property
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt

from advisor.errors import StoreError, UsageError
from advisor.store import query, quote_ident

GROUP_KEYS: tuple[str, ...] = (
    "gpu_type",
    "cluster",
    "partition",
    "account",
    "user",
    "month",
    "gpu_count",
    "interactive",
)
"""Names a report can be grouped by (``RatioQuery.by``)."""

DEFAULT_THRESHOLDS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
QUANTILES: tuple[float, ...] = (0.10, 0.25, 0.50, 0.75, 0.90)
DEFAULT_BIN_EDGES: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
EXCLUSION_REASONS: tuple[str, ...] = ("never_started", "no_gpus", "no_cpus")
CUBE_RULES_VERSION = 5
"""Bumped whenever the rules the cubes are built with change, so an old cube reads stale (5:
ratio_cube_people_month_ratios, which an older advisor's rebuild would leave behind)."""


class Weight(StrEnum):
    """What a percentile counts: every job once, or every GPU-hour once."""

    jobs = "jobs"
    gpu_hours = "gpu-hours"


@dataclass(frozen=True)
class RatioQuery:
    """What to summarise: grouping, weighting, thresholds and filters.

    Empty tuples and ``None`` mean "no filter". ``start``/``end`` select jobs whose start time
    (UTC; naive datetimes are taken as UTC) lies in ``[start, end)``.
    """

    by: tuple[str, ...] = ("gpu_type",)
    weight: Weight = Weight.jobs
    thresholds_cores_per_gpu: tuple[float, ...] = DEFAULT_THRESHOLDS
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    states: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    gpu_types: tuple[str, ...] = ()
    accounts: tuple[str, ...] = ()
    users: tuple[str, ...] = ()
    min_gpus: int | None = None


@dataclass(frozen=True)
class RatioGroup:
    """One group of a ratio report. Ratios are cores (Slurm CPUs) per GPU.

    Percentiles and the mean follow the report's weight. ``share_jobs_below`` and
    ``share_gpu_hours_below`` map each threshold (cores per GPU) to the fraction (0..1) of jobs
    and of GPU-hours whose ratio is strictly below it. The fair-share fields are ``None`` when no
    node inventory covers the group's jobs; the shares below fair share count only the jobs whose
    node type is known.
    """

    keys: Mapping[str, Any]
    jobs: int
    gpu_hours: float
    p10_cores_per_gpu: float
    p25_cores_per_gpu: float
    p50_cores_per_gpu: float
    p75_cores_per_gpu: float
    p90_cores_per_gpu: float
    mean_cores_per_gpu: float
    share_jobs_below: Mapping[float, float]
    share_gpu_hours_below: Mapping[float, float]
    fair_share_cores_per_gpu: float | None = None
    jobs_with_fair_share: int = 0
    share_jobs_below_fair_share: float | None = None
    share_gpu_hours_below_fair_share: float | None = None

    def as_row(self) -> dict[str, Any]:
        """The group as one flat record, the JSON contract of ``advisor ratios``.

        The group's keys by their ``by`` names, then ``jobs``, ``gpu_hours``, ``p10`` ..
        ``p90``, ``mean`` (cores per GPU), ``share_jobs_below_<t>``,
        ``share_gpu_hours_below_<t>`` per threshold, then the fair-share fields.
        """
        row: dict[str, Any] = dict(self.keys)
        row.update(
            jobs=self.jobs,
            gpu_hours=self.gpu_hours,
            p10=self.p10_cores_per_gpu,
            p25=self.p25_cores_per_gpu,
            p50=self.p50_cores_per_gpu,
            p75=self.p75_cores_per_gpu,
            p90=self.p90_cores_per_gpu,
            mean=self.mean_cores_per_gpu,
        )
        for t, share in self.share_jobs_below.items():
            row[f"share_jobs_below_{_fmt_threshold(t)}"] = share
        for t, share in self.share_gpu_hours_below.items():
            row[f"share_gpu_hours_below_{_fmt_threshold(t)}"] = share
        row["fair_share_cores_per_gpu"] = self.fair_share_cores_per_gpu
        row["share_jobs_below_fair_share"] = self.share_jobs_below_fair_share
        row["share_gpu_hours_below_fair_share"] = self.share_gpu_hours_below_fair_share
        return row


@dataclass(frozen=True, eq=False)
class RatioTable:
    """A summary's figures as columns, one entry per group, groups in key order: what
    :func:`ratio_summary` computes (``RatioReport.groups`` turns it into one
    :class:`RatioGroup` per group, on first use).

    ``keys`` maps each group key to its values; ``percentiles`` has one column per
    ``QUANTILES`` entry, ``share_*_below`` one per ``thresholds`` entry. Where a RatioGroup has
    ``None`` (no node inventory covers the group), these arrays hold NaN.
    """

    keys: Mapping[str, Sequence[Any]]
    thresholds: tuple[float, ...]
    jobs: npt.NDArray[np.int64]
    gpu_hours: npt.NDArray[np.float64]
    percentiles: npt.NDArray[np.float64]
    mean: npt.NDArray[np.float64]
    share_jobs_below: npt.NDArray[np.float64]
    share_gpu_hours_below: npt.NDArray[np.float64]
    fair_share: npt.NDArray[np.float64]
    jobs_with_fair_share: npt.NDArray[np.int64]
    share_jobs_below_fair_share: npt.NDArray[np.float64]
    share_gpu_hours_below_fair_share: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.jobs)

    def groups(self) -> tuple[RatioGroup, ...]:
        """One RatioGroup per group, in order."""
        keys = {k: list(v) for k, v in self.keys.items()}
        t = self.thresholds
        pct = self.percentiles.tolist()
        nb = self.share_jobs_below.tolist()
        wb = self.share_gpu_hours_below.tolist()
        cols = zip(
            self.jobs.tolist(),
            self.gpu_hours.tolist(),
            self.mean.tolist(),
            self.fair_share.tolist(),
            self.jobs_with_fair_share.tolist(),
            self.share_jobs_below_fair_share.tolist(),
            self.share_gpu_hours_below_fair_share.tolist(),
            strict=True,
        )
        return tuple(
            RatioGroup(
                keys={k: v[i] for k, v in keys.items()},
                jobs=jobs,
                gpu_hours=gpu_hours,
                p10_cores_per_gpu=pct[i][0],
                p25_cores_per_gpu=pct[i][1],
                p50_cores_per_gpu=pct[i][2],
                p75_cores_per_gpu=pct[i][3],
                p90_cores_per_gpu=pct[i][4],
                mean_cores_per_gpu=mean,
                share_jobs_below=dict(zip(t, nb[i], strict=True)),
                share_gpu_hours_below=dict(zip(t, wb[i], strict=True)),
                fair_share_cores_per_gpu=None if math.isnan(fair) else fair,
                jobs_with_fair_share=n_fs,
                share_jobs_below_fair_share=None if math.isnan(s_n) else s_n,
                share_gpu_hours_below_fair_share=None if math.isnan(s_w) else s_w,
            )
            for i, (jobs, gpu_hours, mean, fair, n_fs, s_n, s_w) in enumerate(cols)
        )


@dataclass(frozen=True, eq=False)
class RatioReport:
    """A summary: its figures (``table``: columns, groups ordered by their keys), what was
    excluded and why, the query. ``groups`` gives one RatioGroup per group."""

    table: RatioTable
    excluded: Mapping[str, int]
    query: RatioQuery

    @cached_property
    def groups(self) -> tuple[RatioGroup, ...]:
        """The groups in key order (built from ``table`` on first use: for tens of thousands of
        groups, building the objects costs more than computing the figures)."""
        return self.table.groups()

    @property
    def jobs(self) -> int:
        """Jobs counted in the report (all groups)."""
        return int(self.table.jobs.sum())

    @property
    def excluded_jobs(self) -> int:
        return sum(self.excluded.values())

    def rows(self) -> list[dict[str, Any]]:
        """Every group as :meth:`RatioGroup.as_row`."""
        return [g.as_row() for g in self.groups]

    def __eq__(self, other: object) -> bool:
        """Reports are equal when their groups, exclusions and queries are."""
        if not isinstance(other, RatioReport):
            return NotImplemented
        return (self.groups, self.excluded, self.query) == (
            other.groups,
            other.excluded,
            other.query,
        )


@dataclass(frozen=True)
class HistogramBin:
    """Jobs and GPU-hours whose ratio lies in ``[lo_cores_per_gpu, hi_cores_per_gpu)``;
    ``hi_cores_per_gpu`` is ``None`` for the last, open bin."""

    lo_cores_per_gpu: float
    hi_cores_per_gpu: float | None
    jobs: int
    gpu_hours: float


@dataclass(frozen=True)
class EcdfPoint:
    """A distinct ratio, and the share (0..1) of jobs and of GPU-hours at or below it."""

    cores_per_gpu: float
    jobs: int
    gpu_hours: float
    share_jobs_at_or_below: float
    share_gpu_hours_at_or_below: float


@dataclass(frozen=True)
class DistributionGroup:
    keys: Mapping[str, Any]
    histogram: tuple[HistogramBin, ...]
    ecdf: tuple[EcdfPoint, ...]


@dataclass(frozen=True)
class RatioDistribution:
    """What charts need, per group: a histogram over fixed bins and the exact ECDF."""

    groups: tuple[DistributionGroup, ...]
    query: RatioQuery
    bin_edges_cores_per_gpu: tuple[float, ...] = field(default=DEFAULT_BIN_EDGES)

    def histogram_records(self) -> list[dict[str, Any]]:
        """Flat records (keys + bin fields) for a chart library."""
        return [
            {
                **g.keys,
                "lo_cores_per_gpu": b.lo_cores_per_gpu,
                "hi_cores_per_gpu": b.hi_cores_per_gpu,
                "jobs": b.jobs,
                "gpu_hours": b.gpu_hours,
            }
            for g in self.groups
            for b in g.histogram
        ]

    def ecdf_records(self) -> list[dict[str, Any]]:
        """Flat records (keys + ECDF point fields) for a chart library."""
        return [
            {
                **g.keys,
                "cores_per_gpu": p.cores_per_gpu,
                "jobs": p.jobs,
                "gpu_hours": p.gpu_hours,
                "share_jobs_at_or_below": p.share_jobs_at_or_below,
                "share_gpu_hours_at_or_below": p.share_gpu_hours_at_or_below,
            }
            for g in self.groups
            for p in g.ecdf
        ]


@dataclass(frozen=True)
class NodeType:
    """A node shape of a cluster and the cores per GPU a job could have had on it."""

    cluster: str
    gpu_type: str | None
    cpus_per_node: int
    gpus_per_node: int
    nodes: int
    cores_per_gpu: float
    partitions: tuple[str, ...]


def _fmt_threshold(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else repr(float(t))


def _check(q: RatioQuery) -> None:
    unknown = [k for k in q.by if k not in GROUP_KEYS]
    if unknown:
        raise UsageError(
            f"cannot group by {', '.join(unknown)}; use any of: {', '.join(GROUP_KEYS)}"
        )
    if len(set(q.by)) != len(q.by):
        raise UsageError(f"a group key is repeated in --by {','.join(q.by)}")
    if not isinstance(q.weight, Weight):
        raise UsageError(f"weight must be one of: {', '.join(w.value for w in Weight)}")
    for t in q.thresholds_cores_per_gpu:
        if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0):
            raise UsageError(f"threshold {t!r} is not a positive number of cores per GPU")
    if q.min_gpus is not None and q.min_gpus < 0:
        raise UsageError(f"min_gpus must be 0 or more, got {q.min_gpus}")
    start, end = _utc_naive(q.start), _utc_naive(q.end)
    if start is not None and end is not None and start >= end:
        raise UsageError(f"the time range is empty: start {q.start} is not before end {q.end}")


def _utc_naive(t: dt.datetime | None) -> dt.datetime | None:
    if t is None or t.tzinfo is None:
        return t
    return t.astimezone(dt.UTC).replace(tzinfo=None)


def _params(q: RatioQuery) -> dict[str, Any]:
    return {
        "start": _utc_naive(q.start),
        "end": _utc_naive(q.end),
        "states": [s.upper() for s in q.states],
        "partitions": list(q.partitions),
        "clusters": list(q.clusters),
        "gpu_types": list(q.gpu_types),
        "accounts": list(q.accounts),
        "users": list(q.users),
        "min_gpus": q.min_gpus,
    }


def _keys_sql(by: Sequence[str]) -> str:
    return ", ".join(quote_ident(k) for k in (by or ("_all",)))


def _month_start(t: dt.datetime | None) -> bool:
    t = _utc_naive(t)
    return t is None or (t.day == 1 and t.time() == dt.time(0))


def cube_answers(q: RatioQuery) -> bool:
    """Whether ``ratio_cube`` can answer ``q``: no user/account key or filter, and time bounds
    that are open or fall on the first instant of a month (UTC)."""
    return (
        not ({"user", "account"} & set(q.by))
        and not q.users
        and not q.accounts
        and _month_start(q.start)
        and _month_start(q.end)
    )


def people_cube_answers(q: RatioQuery) -> bool:
    """Whether the account/user cubes (``ratio_cube_people``, or ``ratio_cube_people_months``
    for month/interactive keys, state filters and time bounds) can answer ``q``: any keys and
    filters, with time bounds that are open or fall on the first instant of a month (UTC)."""
    return _month_start(q.start) and _month_start(q.end)


def _people_over_time(q: RatioQuery) -> bool:
    """Whether a people-cube query needs the per-month table (the all-time one lacks months,
    states and the interactive label)."""
    return bool(
        {"month", "interactive"} & set(q.by) or q.states or q.start is not None or q.end is not None
    )


_CUBE_TABLES: tuple[str, ...] = (
    "ratio_cube",
    "ratio_people",
    "ratio_cube_people",
    "ratio_cube_people_months",
    "ratio_cube_people_month_ratios",
    "ratio_cube_people_months_state",
    "ratio_cube_state",
)
"""The derived tables a cube rebuild replaces (the state last). The per-month people cube is
only emptied: it is built on first use (:func:`refresh_people_months`)."""

_MONTHS_TABLES: tuple[str, ...] = (
    "ratio_cube_people_months",
    "ratio_cube_people_month_ratios",
    "ratio_cube_people_months_state",
)


def _fingerprint(con: duckdb.DuckDBPyConnection) -> tuple[Any, ...]:
    row = con.execute(query("ratios/cube_fingerprint")).fetchone()
    assert row is not None
    return (int(row[0]), int(row[1]), row[2], CUBE_RULES_VERSION)


def _cube_state(con: duckdb.DuckDBPyConnection, table: str = "ratio_cube_state") -> Any:
    row = con.execute(
        f"SELECT jobs_rows, ingest_id, finished_at, rules_version FROM {table} LIMIT 1"  # noqa: S608 - fixed names
    ).fetchone()
    return None if row is None else (int(row[0]), int(row[1]), row[2], int(row[3] or 0))


def cube_is_fresh(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``ratio_cube`` was built from the jobs as they are now (see refresh_ratio_cube)."""
    return _cube_state(con) == _fingerprint(con)


def people_months_are_fresh(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``ratio_cube_people_months`` was built from the jobs as they are now, on the
    current ``ratio_people`` (see :func:`refresh_people_months`)."""
    fp = _fingerprint(con)
    return _cube_state(con) == fp and _cube_state(con, "ratio_cube_people_months_state") == fp


def _read_only(con: duckdb.DuckDBPyConnection) -> bool:
    row = con.execute("SELECT current_setting('access_mode')").fetchone()
    return row is not None and str(row[0]) == "read_only"


def _write_state(con: duckdb.DuckDBPyConnection, table: str, fp: tuple[Any, ...]) -> None:
    con.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
    con.execute(
        f"INSERT INTO {table} (jobs_rows, ingest_id, finished_at, rules_version, "  # noqa: S608
        "built_at) VALUES (?, ?, ?, ?, now() AT TIME ZONE 'UTC')",
        list(fp),
    )


def _temp_copies(con: duckdb.DuckDBPyConnection, tables: Sequence[str]) -> None:
    for table in tables:
        con.execute(
            f"CREATE OR REPLACE TEMP TABLE {table} AS "  # noqa: S608 - fixed names
            f"SELECT * FROM main.{table} LIMIT 0"
        )


def refresh_ratio_cube(
    con: duckdb.DuckDBPyConnection, *, temporary: bool = False, in_transaction: bool = False
) -> int:
    """Rebuild the ratio cubes (``ratio_cube``, and ``ratio_people``, ``ratio_cube_people`` for
    accounts and users) from ``jobs`` in one pass over it and one transaction; return the row
    count of ``ratio_cube``. ``ratio_cube_people_months`` is emptied and left stale: the first
    query that needs it builds it (:func:`refresh_people_months`), so that every ingest does not
    pay for the largest cube.

    Ingest should call this after a load has committed (it is also rebuilt on demand by the
    first summary on a writable connection that finds it stale). ``in_transaction=True`` when
    the caller has a transaction open: the rebuild then joins it instead of opening its own.
    ``temporary`` builds a TEMP copy that shadows the stored one for this connection only: what
    a long-lived read-only connection (the dashboard) uses, see :func:`ensure_ratio_cube`.
    """
    fp = _fingerprint(con)
    if temporary:
        _temp_copies(con, _CUBE_TABLES)
    own = not in_transaction
    if own:
        con.execute("BEGIN TRANSACTION")
    try:
        jobs = query("ratios/cube_jobs")
        con.execute(query("ratios/cube_fine").replace("{{jobs}}", jobs))  # TEMP _ratio_fine
        for table in _CUBE_TABLES[:-1]:
            con.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
        con.execute(query("ratios/cube_refresh"))
        con.execute(query("ratios/cube_people_refresh"))
        con.execute("DROP TABLE _ratio_fine")
        _write_state(con, "ratio_cube_state", fp)
        if own:
            con.execute("COMMIT")
    except Exception:
        if own:
            con.execute("ROLLBACK")
        raise
    row = con.execute("SELECT count(*) FROM ratio_cube").fetchone()
    return int(row[0]) if row else 0


def refresh_people_months(con: duckdb.DuckDBPyConnection, *, temporary: bool = False) -> int:
    """Build ``ratio_cube_people_months`` (per pid, month, state and interactive label) from
    ``jobs`` on the current ``ratio_people``, and from it ``ratio_cube_people_month_ratios``
    (per pid, month and ratio), rebuilding the other cubes first when they are stale; return
    the first one's row count. ``temporary`` as in :func:`refresh_ratio_cube`.

    Called by the first account/user query with a month or interactive key, a state filter or
    month bounds (a stale one is never read), not by every ingest: for 4.65M synthetic jobs it
    holds 1.7M rows and takes longer to build than all the other cubes together.
    """
    if not cube_is_fresh(con):
        refresh_ratio_cube(con, temporary=temporary)
    fp = _fingerprint(con)
    if temporary:
        _temp_copies(con, _MONTHS_TABLES)
    con.execute("BEGIN TRANSACTION")
    try:
        for table in _MONTHS_TABLES[:-1]:
            con.execute(f"DELETE FROM {table}")  # noqa: S608 - fixed names
        con.execute(
            query("ratios/cube_people_months_refresh").replace("{{jobs}}", query("ratios/cube_jobs"))
        )
        con.execute(query("ratios/cube_people_month_ratios_refresh"))
        _write_state(con, "ratio_cube_people_months_state", fp)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    row = con.execute("SELECT count(*) FROM ratio_cube_people_months").fetchone()
    return int(row[0]) if row else 0


def store_fresh_cubes(db: str | os.PathLike[str]) -> bool:
    """Bring every stored cube of the database file ``db`` up to date (the per-month people
    cube included), so that read-only readers such as the dashboard's sessions find them fresh
    instead of each building a private copy (seconds per session on millions of jobs). Returns
    False, changing nothing, when the file cannot be opened for writing at once (another process
    holds it, or it is read-only) or its schema is older than this code (it is never migrated
    here: the readers report that with the command that upgrades it)."""
    from advisor.store import connect

    try:
        con = connect(db, migrate_schema=False, wait_s=0)
    except (StoreError, duckdb.Error, OSError):
        return False
    try:
        if not cube_is_fresh(con):
            refresh_ratio_cube(con)
        if not people_months_are_fresh(con):
            refresh_people_months(con)
        return True
    finally:
        con.close()


def ensure_ratio_cube(con: duckdb.DuckDBPyConnection) -> bool:
    """Make ``ratio_cube`` fresh for this connection: rebuild it in the file when writable, or
    as a TEMP table on a read-only connection. Returns True when it had to be rebuilt."""
    if cube_is_fresh(con):
        return False
    refresh_ratio_cube(con, temporary=_read_only(con))
    return True


def _source(con: duckdb.DuckDBPyConnection, q: RatioQuery, use_cube: bool | None) -> str:
    """Which facts answer ``q``: "cube" (``ratio_cube``) or "people" (the people cubes) when one
    can answer and it is fresh (rebuilt first on a writable connection, or as TEMP tables with
    ``use_cube=True`` on a read-only one), else "jobs" (the jobs table itself)."""
    if use_cube is False:
        return "jobs"
    months = False
    if cube_answers(q):
        kind = "cube"
    elif people_cube_answers(q):
        kind = "people"
        months = _people_over_time(q)
    else:
        return "jobs"
    fresh = people_months_are_fresh(con) if months else cube_is_fresh(con)
    if not fresh:
        read_only = _read_only(con)
        if use_cube is None and read_only:
            return "jobs"
        if months:
            refresh_people_months(con, temporary=read_only)
        else:
            refresh_ratio_cube(con, temporary=read_only)
    return kind


def _facts(con: duckdb.DuckDBPyConnection, q: RatioQuery, use_cube: bool | None) -> str:
    """The facts relation's SQL for ``q`` (see :func:`_source`)."""
    return _facts_sql(_source(con, q, use_cube), q)


def _facts_sql(kind: str, q: RatioQuery) -> str:
    """The SQL of the facts of one :func:`_source` kind for ``q``."""
    if kind == "cube":
        return query("ratios/cube_facts")
    return _people_facts(q) if kind == "people" else query("ratios/jobs_facts")


def _people_facts(q: RatioQuery, *, only_pids: bool = False) -> str:
    """The people cube's facts SQL for ``q``, keeping in its first (integer) aggregation only
    the month / GPU count / interactive columns that ``q`` groups by; ``only_pids`` keeps only
    the cube rows of the pids in the ``$pids`` parameter."""
    keep = set(q.by)
    sql = _people_cube_query("ratios/cube_people_facts", q).replace(
        "{{pids}}", "list_contains($pids::INTEGER[], p.pid)" if only_pids else "TRUE"
    )
    # Only fixed column names or typed NULLs are spliced in.
    for name, column, null in (
        *((k, f"p.{quote_ident(k)}", "NULL::VARCHAR") for k in sorted(_PEOPLE_KEYS)),
        ("month", "month", "NULL::DATE"),
        ("gpu_count", "gpus", "NULL::INTEGER"),
        ("interactive", "interactive", "NULL::VARCHAR"),
    ):
        sql = sql.replace("{{" + name + "}}", column if name in keep else null)
    return sql


def _people_query(name: str) -> str:
    """The people-cube SQL file ``name`` with the filters' conditions on ratio_people
    ({{people_where}}: ratios/people_where)."""
    return query(name).replace("{{people_where}}", query("ratios/people_where"))


def _people_cube_query(name: str, q: RatioQuery) -> str:
    """The people-cube SQL file ``name`` (:func:`_people_query`) with its people cube
    ({{cube}}: the all-time or the per-month one) and that cube's month and state conditions
    ({{over_time}}) chosen for ``q``."""
    over_time = _people_over_time(q)
    return (
        _people_query(name)
        .replace("{{cube}}", "ratio_cube_people_months" if over_time else "ratio_cube_people")
        .replace("{{over_time}}", _PEOPLE_OVER_TIME_SQL if over_time else _PEOPLE_ALL_TIME_SQL)
    )


_BIGINT_GROUPS = 2**62
"""Group numbers below this fit a BIGINT (:func:`_people_group_number`)."""


def _people_radix(con: duckdb.DuckDBPyConnection, by: Sequence[str]) -> dict[str, int]:
    """Per people key of ``by``, one more than its largest id: the radix of its digit in a group
    number (:func:`_people_group_number`). Only fixed column names are spliced in."""
    if not by:
        return {}
    row = con.execute(
        "SELECT " + ", ".join(f"coalesce(max({k}_id), 0) + 1" for k in by) + " FROM ratio_people"  # noqa: S608 - fixed names
    ).fetchone()
    assert row is not None
    return {k: int(r) for k, r in zip(by, row, strict=True)}


def _people_group_number(radix: Mapping[str, int], kind: str | None = None) -> tuple[str, bool]:
    """A SQL expression over ratio_people ``p`` that numbers the groups of people keys (with
    their :func:`_people_radix`): the keys' per-column ids combined as digits of mixed radix, so
    that the numbers are distinct per group and sort as the key values do; and whether the
    numbers outgrow a BIGINT. The arithmetic is in ``kind`` (an integer SQL type the numbers
    fit), by default BIGINT, or HUGEINT for numbers that outgrow it. Only fixed column names and
    integers from the database are spliced in."""
    wide = math.prod(radix.values()) >= _BIGINT_GROUPS
    kind = kind or ("HUGEINT" if wide else "BIGINT")
    expr = "0"
    for k, r in radix.items():
        expr = f"({expr}) * {r} + p.{k}_id::{kind}"
    return expr, wide


def _sql(name: str, by: Sequence[str], facts: str) -> str:
    # Only fixed, validated key names (GROUP_KEYS) and our own SQL files are spliced in.
    return query(f"ratios/{name}").replace("{{facts}}", facts).replace("{{keys}}", _keys_sql(by))


def _fetch(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    cur = con.execute(sql, dict(params))
    cols = [d[0] for d in cur.description or ()]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _keys_of(row: Mapping[str, Any], by: Sequence[str]) -> dict[str, Any]:
    return {k: row[k] for k in by}


def excluded_counts(
    con: duckdb.DuckDBPyConnection, q: RatioQuery, *, use_cube: bool | None = None
) -> dict[str, int]:
    """Jobs that passed the filters but cannot count, by reason (reasons with zero omitted)."""
    _check(q)
    rows = con.execute(_sql("excluded", q.by, _facts(con, q, use_cube)), _params(q)).fetchall()
    return {str(r): int(n) for r, n in rows}


def ratio_summary(
    con: duckdb.DuckDBPyConnection,
    q: RatioQuery | None = None,
    *,
    use_cube: bool | None = None,
) -> RatioReport:
    """Per group of ``q.by``: jobs, GPU-hours, P10..P90 and mean cores per GPU (weighted by
    ``q.weight``), shares of jobs and GPU-hours below each threshold, and the fair share.

    Groups are ordered by their keys (NULLs last). An empty selection gives no groups.
    ``use_cube``: None (default) reads a pre-aggregated cube (``ratio_cube``, or the people
    cubes for account/user queries) when one can answer the query and is fresh, rebuilding it
    first on a writable connection; True always uses it when it can answer (rebuilding a TEMP
    copy on a read-only connection); False never does.
    The answer is the same either way.
    """
    q = q or RatioQuery()
    _check(q)
    table, excluded = _summarise(con, q, _source(con, q, use_cube))
    return RatioReport(table=table, excluded=excluded, query=q)


def _summarise(
    con: duckdb.DuckDBPyConnection, q: RatioQuery, kind: str, pids: Sequence[int] | None = None
) -> tuple[RatioTable, dict[str, int]]:
    """The figures of every group of ``q`` from the facts of one :func:`_source` kind, and the
    exclusions: from a people cube on integer group numbers where they fit a BIGINT, else by
    name. ``pids``: only these people-cube pids (:func:`below_target`'s top groups)."""
    extra = {} if pids is None else {"pids": list(pids)}
    if kind == "people":
        digits = _people_digits(con, q)
        if digits is not None:
            return _summary_people(con, q, digits, extra)
        return _summary(con, q, _people_facts(q, only_pids=pids is not None), extra)
    return _summary(con, q, _facts_sql(kind, q), extra)


@dataclass(frozen=True)
class _Digit:
    """One key's digit in a people summary's group number: the key, its radix, and the SQL of
    its value over the cube ``c`` (people keys have none: :func:`_people_group_number` numbers
    them)."""

    key: str
    radix: int
    sql: str = ""
    labels: tuple[str, ...] = ()  # interactive: the labels, in order (the digit is a position)


_MONTH_DIGIT = "year(c.month) * 12 + month(c.month) - 1"
"""A month as a digit: months since year 0 (the cube's months are never NULL for counted jobs)."""


def _people_digits(con: duckdb.DuckDBPyConnection, q: RatioQuery) -> list[_Digit] | None:
    """The digits of the group number ratios/summary_people gives each group of ``q``: the
    people keys of ``q.by`` in its order (their per-column ids), then the cube's own keys it
    groups by (month, GPU count, interactive label); None when the numbers would outgrow a
    BIGINT (the people facts are then summarised by name). Only fixed names and integers from
    the database go into the SQL."""
    people = [k for k in q.by if k in _PEOPLE_KEYS]
    digits = [_Digit(k, r) for k, r in _people_radix(con, people).items()]
    if "month" in q.by:
        digits.append(_Digit("month", 12 * 10_000, _MONTH_DIGIT))
    cube = _people_summary_cube(q)[0]
    if "gpu_count" in q.by:
        row = con.execute(f"SELECT coalesce(max(gpus), 0) + 1 FROM {cube}").fetchone()  # noqa: S608 - fixed names
        digits.append(_Digit("gpu_count", int(row[0]) if row else 1, "c.gpus"))
    if "interactive" in q.by:
        labels = _interactive_labels(con, cube)
        code = "list_position($labels::VARCHAR[], c.interactive) - 1"
        digits.append(_Digit("interactive", max(len(labels), 1), code, labels))
    if math.prod(d.radix for d in digits) >= _BIGINT_GROUPS:
        return None
    return digits


def _interactive_labels(con: duckdb.DuckDBPyConnection, cube: str) -> tuple[str, ...]:
    """The interactive labels of a people cube's counted jobs, in sort order."""
    rows = con.execute(
        f"SELECT DISTINCT interactive FROM {cube} WHERE excluded_reason IS NULL ORDER BY 1"  # noqa: S608 - fixed names
    ).fetchall()
    if any(r[0] is None for r in rows):  # the cube's rules label every job
        raise StoreError(f"{cube} holds a job without an interactive label: rebuild the cubes")
    return tuple(str(r[0]) for r in rows)


def _summary(
    con: duckdb.DuckDBPyConnection, q: RatioQuery, facts: str, extra: Mapping[str, Any]
) -> tuple[RatioTable, dict[str, int]]:
    """ratios/summary over ``facts`` (``extra``: parameters the facts take beyond the query's):
    the figures of every group, in key order, and the exclusions by reason."""
    keys = q.by or ("_all",)
    sql = _sql("summary", q.by, facts).replace(
        "{{excluded_keys}}",
        ", ".join(
            f"CASE WHEN excluded_reason IS NULL THEN {quote_ident(k)} END AS {quote_ident(k)}"
            for k in keys
        ),
    )
    params = {**_params(q), **extra, "reasons": list(EXCLUSION_REASONS)}
    rows = con.execute(sql, params).fetchnumpy()
    counted, excluded = _split_excluded(rows)
    g = np.ma.getdata(rows["_g"][:counted]).astype(np.int64)
    starts = np.flatnonzero(np.diff(g, prepend=g[:1] - 1))
    names = {k: np.ma.asarray(rows[k][:counted])[starts].tolist() for k in q.by}
    return _table(q, names, starts, rows, counted), excluded


def _summary_people(
    con: duckdb.DuckDBPyConnection,
    q: RatioQuery,
    digits: Sequence[_Digit],
    extra: Mapping[str, Any],
) -> tuple[RatioTable, dict[str, int]]:
    """ratios/summary_people: the figures of every group, summed on integers from a people
    cube and named afterwards (``digits``: :func:`_people_digits`; with ``extra["pids"]``, only
    those pids)."""
    cube, conditions, ratio = _people_summary_cube(q)
    inventory = con.execute("SELECT count(*) > 0 FROM ratio_fair_share").fetchone()
    fs = bool(inventory and inventory[0])
    # 32-bit arithmetic where the numbers fit: DuckDB groups and sorts them faster
    kind = "INTEGER" if math.prod(d.radix for d in digits) < 2**31 else "BIGINT"
    gid = _people_group_number({d.key: d.radix for d in digits if d.key in _PEOPLE_KEYS}, kind)[0]
    key = "g.gid"
    for d in digits:
        if d.key not in _PEOPLE_KEYS:
            key = f"({key}) * {d.radix} + ({d.sql})::{kind}"
    sql = (
        _people_query("ratios/summary_people")
        .replace("{{cube}}", cube)
        .replace("{{conditions}}", conditions)
        .replace("{{v}}", ratio)
        .replace("{{key}}", key)
        .replace("{{gid}}", f"({gid})::{kind}")
        .replace("{{pids}}", "list_contains($pids::INTEGER[], p.pid)" if "pids" in extra else "TRUE")
        .replace("{{fs}}", ", fair.fs" if fs else "")
        .replace(
            "{{fs_column}}",
            ", CASE WHEN c.excluded_reason IS NULL THEN g.fs END AS fs" if fs else "",
        )
    )
    params = {**_params(q), **extra, "reasons": list(EXCLUSION_REASONS)}
    labels = next((d.labels for d in digits if d.key == "interactive"), None)
    if labels is not None:
        params["labels"] = list(labels)
    if cube == "ratio_cube_people_month_ratios":
        del params["states"], params["min_gpus"]
    rows = con.execute(sql, params).fetchnumpy()
    counted, excluded = _split_excluded(rows)
    k = np.ma.getdata(rows["k"][:counted]).astype(np.int64)
    starts = np.flatnonzero(np.diff(k, prepend=k[:1] - 1))
    # each group's digits, decoded from its number: the people keys' ids (ranks, NULL last),
    # months since year 0, GPU counts, label positions
    code = k[starts]
    part: dict[str, npt.NDArray[np.int64]] = {}
    for d in reversed(digits):
        part[d.key] = code % d.radix
        code = code // d.radix
    keys: dict[str, list[Any]] = {}
    for d in digits:
        if d.key in _PEOPLE_KEYS:
            keys[d.key] = _people_names(con, d.key)[part[d.key]].tolist()
        elif d.key == "month":
            months, at = np.unique(part[d.key], return_inverse=True)
            text = [f"{m // 12:04d}-{m % 12 + 1:02d}" for m in months.tolist()]
            keys[d.key] = np.array(text, dtype=object)[at].tolist()
        elif d.key == "interactive":
            keys[d.key] = np.array(d.labels, dtype=object)[part[d.key]].tolist()
        else:
            keys[d.key] = part[d.key].tolist()
    table = _table(q, {b: keys[b] for b in q.by}, starts, rows, counted)
    if [d.key for d in digits] != list(q.by):  # numbered in another key order: sort by q.by's
        table = _take(table, np.lexsort([part[b] for b in reversed(q.by)]))
    return table, excluded


def _people_summary_cube(q: RatioQuery) -> tuple[str, str, str]:
    """The people cube ratios/summary_people reads for ``q``, its conditions and its ratio
    expression: ``ratio_cube_people_month_ratios`` for month keys and ranges without state,
    interactive or GPU-count keys and filters (it is several times smaller), else the one
    :func:`_people_cube_query` picks, with the minimum-GPU condition."""
    if (
        _people_over_time(q)
        and not q.states
        and q.min_gpus is None
        and not {"interactive", "gpu_count"} & set(q.by)
    ):
        return "ratio_cube_people_month_ratios", _PEOPLE_MONTHS_SQL, "c.v"
    over_time = _people_over_time(q)
    return (
        "ratio_cube_people_months" if over_time else "ratio_cube_people",
        (_PEOPLE_OVER_TIME_SQL if over_time else _PEOPLE_ALL_TIME_SQL)
        + " AND ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)",
        "c.cpus::DOUBLE / c.gpus",
    )


def _people_names(con: duckdb.DuckDBPyConnection, key: str) -> npt.NDArray[Any]:
    """The values of one people key indexed by their id (ratios/people_names)."""
    sql = (
        query("ratios/people_names")
        .replace("{{id}}", f"{key}_id")
        .replace("{{name}}", quote_ident(key))
    )
    rows = con.execute(sql).fetchall()
    names = np.full(max((r[0] for r in rows), default=0) + 1, None, dtype=object)
    for i, name in rows:
        names[i] = name
    return names


def _split_excluded(rows: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """How many leading rows of a summary's result are counted rows (a ratio, v > 0), and the
    jobs of the trailing ones (v = minus the position of the reason in EXCLUSION_REASONS) by
    exclusion reason."""
    v = np.ma.filled(np.ma.asarray(rows["v"]).astype(np.float64), np.nan)
    counted = int(np.count_nonzero(v > 0))
    codes = v[counted:]
    if np.isnan(codes).any():  # a reason missing from EXCLUSION_REASONS: never drop its jobs
        raise StoreError("a ratio cube holds an exclusion reason advisor does not know")
    n = np.ma.getdata(rows["n"][counted:]).tolist()
    reasons = zip([EXCLUSION_REASONS[int(-c) - 1] for c in codes.tolist()], n, strict=True)
    return counted, dict(sorted(reasons))  # by reason, as they are reported


def _table(
    q: RatioQuery,
    keys: Mapping[str, list[Any]],
    starts: npt.NDArray[np.int64],
    rows: Mapping[str, Any],
    counted: int,
) -> RatioTable:
    """The figures of groups whose rows start at ``starts`` in a summary's result (rows sorted by
    group, then ratio; see ratios/summary), all groups at once:

    - by jobs, percentiles interpolate linearly between order statistics (numpy's default
      "linear", DuckDB's quantile_cont): h = (n - 1) q, x[floor h] + (h - floor h)(x[floor h +
      1] - x[floor h]), in numpy's two-sided form for rounding;
    - by GPU-seconds, the weighted inverted CDF (numpy.percentile(method="inverted_cdf",
      weights=...)): the smallest ratio whose running GPU-second share reaches q;
    - shares below a threshold count ratios strictly below it.
    """
    thresholds = tuple(sorted({float(t) for t in q.thresholds_cores_per_gpu}))
    v = np.ma.getdata(rows["v"][:counted]).astype(np.float64, copy=False)
    n = np.ma.getdata(rows["n"][:counted]).astype(np.int64, copy=False)
    w = np.ma.getdata(rows["w"][:counted]).astype(np.int64, copy=False)
    size = len(starts)  # none: every figure is an empty array
    ends = np.append(starts[1:], counted).astype(np.int64)
    jobs = np.add.reduceat(n, starts)
    gpu_s = np.add.reduceat(w, starts)
    gpu_s_f = gpu_s.astype(np.float64)
    weighed = np.where(gpu_s > 0, gpu_s_f, np.nan)  # NaN where no GPU-seconds weigh
    run_n = np.cumsum(n)  # running totals over all rows: a group's are these less its base
    run_w = np.cumsum(w)
    pct = np.full((size, len(QUANTILES)), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        if q.weight is Weight.gpu_hours:
            group = np.repeat(np.arange(size), ends - starts)
            share = (run_w - (run_w[starts] - w[starts])[group]).astype(np.float64) / gpu_s_f[group]
            for j, qq in enumerate(QUANTILES):
                # rows whose running share reaches q; a group's first is the first at or after
                # its start, if before its end (else none is its own: a later group's, or the
                # last hit of all, before the start, where no later one exists)
                hit = np.flatnonzero(share >= qq)
                at = hit[np.minimum(np.searchsorted(hit, starts), len(hit) - 1)] if len(hit) else ends
                found = (at >= starts) & (at < ends)
                pct[found, j] = v[at[found]]
            mean = np.add.reduceat(v * w, starts) / weighed
        else:
            base = run_n[starts] - n[starts]
            for j, qq in enumerate(QUANTILES):
                h = (jobs - 1).astype(np.float64) * qq
                k = np.floor(h)
                target = base + k.astype(np.int64)
                # x_lo: the first ratio whose running count exceeds floor(h); x_hi: the same
                # one if its count reaches past floor(h) + 1, else the next (none past the end)
                lo_at = np.searchsorted(run_n, target, side="right")
                lo = v[lo_at]
                next_at = np.minimum(lo_at + 1, counted - 1)
                same = (run_n[lo_at] > target + 1) | (lo_at + 1 >= ends)
                hi = np.where(same, lo, v[next_at])
                frac = h - k
                pct[:, j] = np.where(
                    frac >= 0.5, hi - (hi - lo) * (1 - frac), lo + (hi - lo) * frac
                )
            mean = np.add.reduceat(v * n, starts) / jobs
        n_below = np.zeros((size, len(thresholds)), dtype=np.int64)
        w_below = np.zeros((size, len(thresholds)), dtype=np.int64)
        for j, t in enumerate(thresholds):
            n_below[:, j] = np.add.reduceat(np.where(v < t, n, 0), starts)
            w_below[:, j] = np.add.reduceat(np.where(v < t, w, 0), starts)
        if "fs" in rows:  # the fair share, where the node inventory knows the job's node type
            fs = np.ma.filled(np.ma.asarray(rows["fs"][:counted]).astype(np.float64), np.nan)
            below_fs = v < fs  # False where it is unknown
            n_fs = np.add.reduceat(np.where(np.isnan(fs), 0, n), starts)
            w_fs = np.add.reduceat(np.where(np.isnan(fs), 0, w), starts).astype(np.float64)
            fair = np.fmin.reduceat(fs, starts)
            n_below_fs = np.add.reduceat(np.where(below_fs, n, 0), starts) / np.where(
                n_fs > 0, n_fs, np.nan
            )
            w_below_fs = np.add.reduceat(np.where(below_fs, w, 0), starts) / np.where(
                w_fs > 0, w_fs, np.nan
            )
        else:  # no inventory: the summary SQL left the column out
            fair = n_below_fs = w_below_fs = np.full(size, np.nan)
            n_fs = np.zeros(size, dtype=np.int64)
        return RatioTable(
            keys=keys,
            thresholds=thresholds,
            jobs=jobs,
            gpu_hours=gpu_s_f / 3600.0,
            percentiles=pct,
            mean=mean,
            share_jobs_below=n_below / jobs[:, None],
            share_gpu_hours_below=w_below / weighed[:, None],
            fair_share=fair,
            jobs_with_fair_share=n_fs,
            share_jobs_below_fair_share=n_below_fs,
            share_gpu_hours_below_fair_share=w_below_fs,
        )


def _take(t: RatioTable, order: npt.NDArray[np.int64]) -> RatioTable:
    """``t`` with its groups in ``order``: every array field indexed by it."""
    arrays = {f.name: getattr(t, f.name)[order] for f in fields(t) if f.name not in _NOT_ARRAYS}
    keys = {k: [v[i] for i in order.tolist()] for k, v in t.keys.items()}
    return RatioTable(keys=keys, thresholds=t.thresholds, **arrays)


_NOT_ARRAYS = frozenset({"keys", "thresholds"})
"""The fields of RatioTable that are not one array entry per group."""


@dataclass(frozen=True)
class TargetQuery:
    """Which groups run furthest below a target ratio: the groups and filters of ``ratios``
    (its weight applies to the percentiles; its thresholds are ignored), and the target in
    cores per GPU, either one per (partition, GPU type) in ``targets_cores_per_gpu`` as
    ``(partition, gpu_type, cores_per_gpu)`` (``ratios.by`` must then include ``partition``
    and ``gpu_type``; groups of other partitions and GPU types have no target) or one
    ``fixed_cores_per_gpu`` for every group. ``top``: how many groups to return."""

    ratios: RatioQuery
    targets_cores_per_gpu: tuple[tuple[str | None, str | None, float], ...] = ()
    fixed_cores_per_gpu: float | None = None
    top: int = 15


@dataclass(frozen=True)
class BelowTargetGroup:
    """A group with GPU-hours below its target: its full summary (``group``; its
    ``share_*_below`` include the target), the target (cores per GPU), and the jobs and
    GPU-hours of its jobs strictly below the target."""

    group: RatioGroup
    target_cores_per_gpu: float
    jobs_below: int
    gpu_hours_below: float


@dataclass(frozen=True)
class BelowTargetReport:
    """The ``query.top`` groups with the most GPU-hours below their target, most first (ties in
    key order), only groups with some; ``groups_counted``: how many groups the filters select
    (with counted jobs, whether or not they have a target); ``excluded`` as in RatioReport."""

    groups: tuple[BelowTargetGroup, ...]
    groups_counted: int
    excluded: Mapping[str, int]
    query: TargetQuery

    @property
    def excluded_jobs(self) -> int:
        return sum(self.excluded.values())


_PEOPLE_KEYS = frozenset({"cluster", "gpu_type", "partition", "account", "user"})


def below_target(
    con: duckdb.DuckDBPyConnection, tq: TargetQuery, *, use_cube: bool | None = None
) -> BelowTargetReport:
    """The groups of ``tq.ratios.by`` with the most GPU-hours strictly below their target (see
    :class:`TargetQuery`), each with its full summary, as :func:`ratio_summary` gives it.

    Groups are ranked first on the cube's integer counts (GPU-seconds below the target per
    group, no percentiles); percentiles are then computed for the top ``tq.top`` groups only,
    which is what keeps a ranking of 100k (user, partition, GPU type) groups fast. The answer is
    the same as ranking a full :func:`ratio_summary` (``use_cube`` as there).
    """
    q = tq.ratios
    _check(q)
    if tq.top < 1:
        raise UsageError(f"top must be 1 or more, got {tq.top}")
    if (tq.fixed_cores_per_gpu is None) == (not tq.targets_cores_per_gpu):
        raise UsageError("give either one target per partition and GPU type, or a fixed one")
    targets = [float(t[2]) for t in tq.targets_cores_per_gpu]
    if tq.fixed_cores_per_gpu is not None:
        targets = [float(tq.fixed_cores_per_gpu)]
    for t in targets:
        if not (math.isfinite(t) and t > 0):
            raise UsageError(f"target {t!r} is not a positive number of cores per GPU")
    if tq.targets_cores_per_gpu and not {"partition", "gpu_type"} <= set(q.by):
        raise UsageError("targets per partition and GPU type need both among the group keys")
    params: dict[str, Any] = {
        **_params(q),
        "target_partitions": [t[0] for t in tq.targets_cores_per_gpu],
        "target_gpu_types": [t[1] for t in tq.targets_cores_per_gpu],
        "target_values": [float(t[2]) for t in tq.targets_cores_per_gpu],
        "fixed": tq.fixed_cores_per_gpu,
        "top": tq.top,
    }
    kind = _source(con, q, use_cube)
    facts = _facts_sql(kind, q)
    people = kind == "people" and set(q.by) <= _PEOPLE_KEYS
    if people:
        sql = (
            _people_cube_query("ratios/below_target_people", q)
            .replace("{{gid}}", _people_group_number(_people_radix(con, q.by))[0])
            .replace("{{names}}", ", ".join(
                f"any_value(p.{quote_ident(k)}) AS {quote_ident(k)}" for k in q.by
            ) or "TRUE AS _all")
        )
    else:
        sql = _sql("below_target", q.by, facts)
    rows = _fetch(con, sql, params)
    info = next(r for r in rows if r["gid"] is None)
    top = sorted((r for r in rows if r["gid"] is not None), key=lambda r: int(r["gid"]))
    excluded = {str(e["reason"]): int(e["jobs"]) for e in info["excluded"] or ()}
    chosen: tuple[BelowTargetGroup, ...] = ()
    if top:
        sq = replace(
            q,
            thresholds_cores_per_gpu=tuple(sorted({float(r["target"]) for r in top})),
        )
        pids = sorted(int(p) for r in top for p in r["pids"]) if people else None
        table, _ = _summarise(con, sq, kind, pids)
        by_keys = {tuple(g.keys[k] for k in q.by): g for g in table.groups()}
        chosen = tuple(
            BelowTargetGroup(
                group=by_keys[tuple(r[k] for k in q.by)],
                target_cores_per_gpu=float(r["target"]),
                jobs_below=int(r["n_below"]),
                gpu_hours_below=float(r["w_below"]) / 3600.0,
            )
            for r in top
        )
    return BelowTargetReport(
        groups=chosen, groups_counted=int(info["groups"]), excluded=excluded, query=tq
    )


_PEOPLE_MONTHS_SQL = (
    "($start::TIMESTAMP IS NULL OR c.month >= CAST($start::TIMESTAMP AS DATE))"
    " AND ($end::TIMESTAMP IS NULL OR c.month < CAST($end::TIMESTAMP AS DATE))"
)
_PEOPLE_OVER_TIME_SQL = (
    _PEOPLE_MONTHS_SQL
    + " AND (len($states::VARCHAR[]) = 0 OR list_contains($states::VARCHAR[], c.state))"
)
_PEOPLE_ALL_TIME_SQL = (
    "$start::TIMESTAMP IS NULL AND $end::TIMESTAMP IS NULL AND len($states::VARCHAR[]) = 0"
)
"""The month and state conditions of ratios/below_target_people and ratios/cube_people_facts on
the monthly people cube, and on the all-time one (which such queries never reach)."""


def ratio_distribution(
    con: duckdb.DuckDBPyConnection,
    q: RatioQuery | None = None,
    bins: Sequence[float] = DEFAULT_BIN_EDGES,
    *,
    use_cube: bool | None = None,
) -> RatioDistribution:
    """Per group of ``q.by``: a histogram of the ratio over ``bins`` (ascending lower edges in
    cores per GPU; the last bin is open; ratios below the first edge fall in the first bin) and
    the exact ECDF (one point per distinct ratio, jobs and GPU-hour shares at or below it).
    Computed in SQL; the output is small (bins x groups, distinct ratios x groups).
    ``use_cube`` as in :func:`ratio_summary`.
    """
    q = q or RatioQuery()
    _check(q)
    edges = tuple(float(b) for b in bins)
    if not edges or any(not math.isfinite(e) for e in edges) or list(edges) != sorted(set(edges)):
        raise UsageError(f"bin edges must be finite, strictly ascending numbers, got {list(bins)}")
    params = _params(q)
    facts = _facts(con, q, use_cube)
    hist_rows = _fetch(con, _sql("histogram", q.by, facts), {**params, "edges": list(edges)})
    ecdf_rows = _fetch(con, _sql("ecdf", q.by, facts), params)
    hist: dict[int, list[HistogramBin]] = {}
    keys: dict[int, dict[str, Any]] = {}
    for r in hist_rows:
        gid = int(r["gid"])
        keys.setdefault(gid, _keys_of(r, q.by))
        hist.setdefault(gid, []).append(
            HistogramBin(
                lo_cores_per_gpu=float(r["lo"]),
                hi_cores_per_gpu=None if r["hi"] is None else float(r["hi"]),
                jobs=int(r["jobs"]),
                gpu_hours=float(r["gpu_s"]) / 3600.0,
            )
        )
    ecdf: dict[int, list[EcdfPoint]] = {}
    for r in ecdf_rows:
        gid = int(r["gid"])
        keys.setdefault(gid, _keys_of(r, q.by))
        ecdf.setdefault(gid, []).append(
            EcdfPoint(
                cores_per_gpu=float(r["cores_per_gpu"]),
                jobs=int(r["jobs"]),
                gpu_hours=float(r["gpu_s"] or 0) / 3600.0,
                share_jobs_at_or_below=float(r["share_jobs"]),
                share_gpu_hours_at_or_below=float(
                    r["share_gpu_s"] if r["share_gpu_s"] is not None else math.nan
                ),
            )
        )
    groups = tuple(
        DistributionGroup(
            keys=keys[gid], histogram=tuple(hist.get(gid, ())), ecdf=tuple(ecdf.get(gid, ()))
        )
        for gid in sorted(keys)
    )
    return RatioDistribution(groups=groups, query=q, bin_edges_cores_per_gpu=edges)


def fair_share(con: duckdb.DuckDBPyConnection, cluster: str | None = None) -> list[NodeType]:
    """Every GPU node type (cluster, GPU type, CPUs and GPUs per node) in the node inventory,
    with its node count and fair share of cores per GPU (usable CPUs / GPUs per node).
    ``cluster`` restricts to one cluster. Empty when no nodes were ingested.
    """
    rows = _fetch(con, query("ratios/fair_share"), {"cluster": cluster})
    return [
        NodeType(
            cluster=str(r["cluster"]),
            gpu_type=r["gpu_type"],
            cpus_per_node=int(r["cpus_per_node"]),
            gpus_per_node=int(r["gpus_per_node"]),
            nodes=int(r["nodes"]),
            cores_per_gpu=float(r["cores_per_gpu"]),
            partitions=tuple(r["partitions"] or ()),
        )
        for r in rows
    ]
