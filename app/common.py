"""What every dashboard page shares: the database (opened read-only per call), the sidebar filters,
the privacy setting, cached calls into the core, and the messages for data that cannot be shown.

Pages hold no business logic and no SQL: they call core functions (the same ones the CLI calls)
through the ``st.cache_data`` wrappers here, keyed by the database file's path and modification
time so that a new ingest shows up without restarting the dashboard.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

import duckdb
import streamlit as st

from advisor import datainfo, store
from advisor.errors import AdvisorError, LockedError
from advisor.recommend import Workload
from advisor.wording import cores_per_gpu_words as cores_per_gpu_words  # the pages' wording
from advisor.wording import cores_text as cores_text
from advisor.wording import count_words as count_words

T = TypeVar("T")

DbKey = tuple[str, float]  # (resolved path, modification time)


@dataclass(frozen=True)
class Filters:
    """The sidebar's choices; an empty tuple means "all". The time range is whole months
    (UTC, by job start), as ``advisor ratios`` assigns jobs to months: ``first_month`` and
    ``last_month`` (inclusive) are ``YYYY-MM`` or None for an open end."""

    clusters: tuple[str, ...] = ()
    partitions: tuple[str, ...] = ()
    gpu_types: tuple[str, ...] = ()
    first_month: str | None = None
    last_month: str | None = None

    @property
    def since_datetime(self) -> dt.datetime | None:
        """The first instant of the first month."""
        if self.first_month is None:
            return None
        return dt.datetime.strptime(self.first_month, "%Y-%m")

    @property
    def months_words(self) -> str:
        """The months chosen, for a label: "all months", "2024-03", "2024-01 to 2024-06"."""
        first, last = self.first_month, self.last_month
        if first is None and last is None:
            return "all months"
        if first == last:
            return str(first)
        if last is None:
            return f"{first} onwards"
        if first is None:
            return f"up to {last}"
        return f"{first} to {last}"

    @property
    def until_exclusive(self) -> dt.datetime | None:
        """The first instant after the last month (for half-open time ranges)."""
        if self.last_month is None:
            return None
        start = dt.datetime.strptime(self.last_month, "%Y-%m")
        return (start + dt.timedelta(days=32)).replace(day=1)


def months_between(first: dt.datetime, last: dt.datetime) -> list[str]:
    """Every month (``YYYY-MM``) from ``first``'s to ``last``'s, inclusive."""
    out = []
    year, month = first.year, first.month
    while (year, month) <= (last.year, last.month):
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


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
_FILE_LOCK = threading.RLock()
_open_runs = 0  # script runs of this process holding a connection now (under _FILE_LOCK)
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
    with _FILE_LOCK:
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
    with _FILE_LOCK:
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
        with _FILE_LOCK:
            if _anchor is not con:
                return
            if time.monotonic() >= _anchor_until or store.writer_waiting(path):
                _close_anchor()
                return


def _close_anchor() -> None:
    global _anchor
    with _FILE_LOCK:
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


def stop_error(message: str) -> NoReturn:
    st.error(message)
    st.stop()
    raise AssertionError("unreachable")  # st.stop() raises


def stop_info(message: str) -> NoReturn:
    st.info(message)
    st.stop()
    raise AssertionError("unreachable")


def guarded(fn: Callable[[], T]) -> T:
    """Run a core call; an AdvisorError becomes an error box on the page, never a traceback."""
    try:
        return fn()
    except AdvisorError as exc:
        stop_error(str(exc))


# Cached core calls ---------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=64)
def filter_options(key: DbKey) -> datainfo.FilterOptions:
    with connection(key) as con:
        return datainfo.filter_options(con)


@st.cache_data(show_spinner=False, max_entries=64)
def gpu_type_counts(key: DbKey, extra_known: tuple[str, ...] = ()) -> list[datainfo.GpuTypeCount]:
    with connection(key) as con:
        return datainfo.gpu_type_counts(con, extra_known)


@st.cache_data(show_spinner=False, max_entries=64)
def ingest_log(key: DbKey, limit: int) -> list[datainfo.IngestRecord]:
    with connection(key) as con:
        return datainfo.ingest_log(con, limit)


@st.cache_data(show_spinner=False, max_entries=64)
def reject_reasons(key: DbKey, limit: int) -> list[datainfo.RejectReason]:
    with connection(key) as con:
        return datainfo.reject_reasons(con, limit)


@st.cache_data(show_spinner=False, max_entries=64)
def recent_rejects(key: DbKey, limit: int) -> list[datainfo.RejectRecord]:
    with connection(key) as con:
        return datainfo.recent_rejects(con, limit)


@st.cache_data(show_spinner=False, max_entries=64)
def bench_runs(key: DbKey, filters: Filters | None = None) -> list[datainfo.BenchRun]:
    """The stored benchmark runs the sidebar's filters select (every run for None)."""
    f = filters or Filters()
    with connection(key) as con:
        return datainfo.bench_runs(
            con,
            platforms=f.gpu_types,
            clusters=f.clusters,
            partitions=f.partitions,
            start=f.since_datetime,
            end=f.until_exclusive,
        )


@st.cache_data(show_spinner=False, max_entries=64, ttl=600)
def freshness(key: DbKey) -> list[datainfo.ClusterFreshness]:
    with connection(key) as con:
        return datainfo.freshness(con)


def cached_core(name: str, key: DbKey, fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(con, *args)`` through ``st.cache_data`` (``name`` + ``args`` are the cache key).

    Used for core functions whose modules are written by other domains (ratios, model, bench):
    ``args`` must be hashable or picklable (frozen dataclasses are).
    """
    return _cached_core(name, key, args, _FunctionRef(fn))


class _FunctionRef:
    """Keeps the function out of Streamlit's cache hashing (its name is part of the key)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn


@st.cache_data(
    show_spinner=False,
    max_entries=512,
    hash_funcs={_FunctionRef: lambda ref: f"{ref.fn.__module__}.{ref.fn.__qualname__}"},
)
def _cached_core(name: str, key: DbKey, args: tuple[Any, ...], ref: _FunctionRef) -> Any:
    with connection(key) as con:
        return ref.fn(con, *args)


# Filters and privacy -------------------------------------------------------------------------


def current_filters() -> Filters:
    """The filters chosen in the sidebar (defaults when the sidebar has not run yet)."""
    f = st.session_state.get("_filters")
    return f if isinstance(f, Filters) else Filters()


def hash_users() -> bool:
    """Whether user and account names are shown as pseudonyms (setting or sidebar toggle)."""
    return datainfo.hash_users_setting() or bool(st.session_state.get("hash_users", False))


def display_name(name: str | None) -> str | None:
    """A user or account name as the privacy setting allows it to be shown."""
    if not hash_users():
        return name
    return datainfo.pseudonym(name, os.environ.get(datainfo.HASH_SALT_ENV, ""))


def sidebar_filters(key: DbKey) -> Filters:
    """Draw the filter widgets in the sidebar and remember the choice for every page."""
    opts = guarded(lambda: filter_options(key))
    sb = st.sidebar
    sb.header("Filters")
    clusters = sb.multiselect("Cluster", opts.clusters, key="f_clusters", placeholder="all")
    partitions = sb.multiselect("Partition", opts.partitions, key="f_partitions", placeholder="all")
    gpu_types = sb.multiselect("GPU type", opts.gpu_types, key="f_gpu_types", placeholder="all")
    first = last = None
    if opts.first_time is not None and opts.last_time is not None:
        months = months_between(opts.first_time, opts.last_time)
        if len(months) > 1:
            chosen = sb.select_slider(
                "Months (job start, UTC)",
                options=months,
                value=(months[0], months[-1]),
                key="f_months",
            )
            first, last = chosen
            if (first, last) == (months[0], months[-1]):
                first = last = None  # the whole span: no time filter at all
    forced = datainfo.hash_users_setting()
    sb.toggle(
        "Hide user and account names",
        value=forced,
        key="hash_users",
        disabled=forced,
        help="Shows stable pseudonyms instead of names (forced on by ADVISOR_HASH_USERS=1).",
    )
    sb.caption(
        f"Database: `{Path(key[0]).name}` · {count_words(opts.jobs, 'job')}, "
        f"{count_words(opts.gpu_jobs, 'GPU job')}"
    )
    filters = Filters(tuple(clusters), tuple(partitions), tuple(gpu_types), first, last)
    st.session_state["_filters"] = filters
    return filters


def require_gpu_jobs(key: DbKey) -> datainfo.FilterOptions:
    """Stop with a clear message when the database has no jobs, or no GPU jobs at all."""
    opts = guarded(lambda: filter_options(key))
    if opts.jobs == 0:
        stop_info(
            "The database has no jobs yet. Load accounting records with "
            f"`advisor ingest FILE --db {key[0]}` (sacct -P text, sacct --json or a jobcomp log)."
        )
    if opts.gpu_jobs == 0:
        stop_info(
            f"The database holds {count_words(opts.jobs, 'job')} but none of them used a GPU, so there is no "
            "CPU-per-GPU ratio to show. GPU counts come from AllocTRES `gres/gpu` (or "
            "`gres/gpu:TYPE`); load records that include that field."
        )
    return opts


# A name markdown leaves alone: words of letters and digits joined by one space, ".", "_", "+"
# or "-" ("H100", "h100_80gb", "RTX Pro 6000"); not "www." (GitHub markdown links it).
_MD_PLAIN = re.compile(r"(?!www\.)[A-Za-z0-9]+(?:[ ._+-][A-Za-z0-9]+)*", re.IGNORECASE)


def md_name(text: str) -> str:
    """``text`` from data (a GPU type, a name) for a markdown string (st.warning, a metric
    label, a caption): shown as written, on one line, never a link (GitHub markdown turns even a
    backslash-escaped URL into one), an image, emphasis or an icon. A plain name stays as is;
    any other becomes a code span whose fence is one backtick longer than any run of backticks
    in it (CommonMark), padded when it starts or ends with one."""
    flat = " ".join(text.split()) or " "
    if _MD_PLAIN.fullmatch(flat):
        return flat
    fence = "`" * (max((len(r) for r in re.findall("`+", flat)), default=0) + 1)
    pad = " " if flat[0] == "`" or flat[-1] == "`" else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def warn_unknown_gpu_types(key: DbKey) -> None:
    """Name the GPU types no family pattern recognised, and how to map them."""
    counts = guarded(lambda: gpu_type_counts(key))
    unknown = [c for c in counts if not c.known]
    if unknown:
        names = ", ".join(
            f"{md_name(c.gpu_type or '(no type)')} ({count_words(c.jobs, 'job')})"
            for c in unknown[:8]
        )
        st.warning(
            f"Unrecognised GPU types: {names}. They are shown under their raw names; map them to "
            "a family with a site mapping file (`ADVISOR_GPU_TYPES=map.json`, e.g. "
            '`{"a100l": "A100"}`) and ingest again.'
        )


def missing_feature(what: str, module: str) -> NoReturn:
    """Stop the page: a core module this page needs is not part of this build yet."""
    stop_info(f"{what} is not available: this build has no `{module}` module yet.")


# Ratio analytics (advisor.ratios) ------------------------------------------------------------


def ratio_query(
    filters: Filters,
    by: tuple[str, ...] = ("gpu_type",),
    weight: str = "jobs",
    thresholds: tuple[float, ...] | None = None,
) -> Any:
    """The sidebar's filters as an ``advisor.ratios.RatioQuery`` (time range on job start)."""
    from advisor import ratios

    kwargs: dict[str, Any] = {}
    if thresholds is not None:
        kwargs["thresholds_cores_per_gpu"] = thresholds
    return ratios.RatioQuery(
        by=by,
        weight=ratios.Weight(weight),
        start=filters.since_datetime,
        end=filters.until_exclusive,
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
        **kwargs,
    )


def ratio_summary(key: DbKey, q: Any) -> Any:
    """``advisor.ratios.ratio_summary`` through the cache (a ``RatioReport``)."""
    from advisor import ratios

    return guarded(lambda: cached_core("ratio_summary", key, ratios.ratio_summary, q))


def below_target(
    key: DbKey,
    q: Any,
    targets: tuple[tuple[str | None, str | None, float], ...],
    fixed: float | None,
    top: int,
) -> Any:
    """``advisor.ratios.below_target`` through the cache (a ``BelowTargetReport``): the ``top``
    groups of ``q`` with the most GPU-hours below their target (per (partition, GPU type) in
    ``targets``, or ``fixed`` cores per GPU)."""
    from advisor import ratios

    tq = ratios.TargetQuery(q, targets_cores_per_gpu=targets, fixed_cores_per_gpu=fixed, top=top)
    report = guarded(lambda: _below_target_in_memory(key, tq))
    if report is not None:
        return report
    return guarded(lambda: cached_core("below_target", key, ratios.below_target, tq))


@st.cache_resource(
    show_spinner="Loading the account and user tables into memory (once per database version)",
    max_entries=1,
)
def people_in_memory(key: DbKey) -> Any:
    """``advisor.ratios.inmemory.PeopleInMemory`` of this file version (None when its cubes are
    stale or too large): one copy for every session, so that ranking accounts and users on each
    click reads memory instead of scanning the cubes (docs/performance.md)."""
    from advisor.ratios.inmemory import PeopleInMemory

    with connection(key) as con:
        return PeopleInMemory.load(con)


@st.cache_data(show_spinner=False, max_entries=256)
def _below_target_in_memory(key: DbKey, tq: Any) -> Any:
    """The ranking from :func:`people_in_memory`, or None for DuckDB to answer."""
    memory = people_in_memory(key)
    return None if memory is None else memory.below_target(tq)


def ratio_distribution(key: DbKey, q: Any) -> Any:
    """``advisor.ratios.ratio_distribution`` through the cache (a ``RatioDistribution``)."""
    from advisor import ratios

    return guarded(lambda: cached_core("ratio_distribution", key, ratios.ratio_distribution, q))


def node_types(key: DbKey) -> list[Any]:
    """``advisor.ratios.fair_share``: every GPU node type and its fair share of cores per GPU."""
    from advisor import ratios

    return guarded(lambda: cached_core("fair_share", key, ratios.fair_share))


def excluded_caption(report: Any) -> None:
    """Say how many jobs the filters selected but the ratio cannot count, and why."""
    if report.excluded_jobs:
        parts = ", ".join(
            f"{n:,} {reason.replace('_', ' ')}" for reason, n in report.excluded.items()
        )
        st.caption(f"Not counted: {parts} (jobs without GPUs, never started, or without CPUs).")


# Model, recommendations and calibration (advisor.recommend, advisor.slowdown) ------------------


@st.cache_data(
    show_spinner=False,
    max_entries=256,
    hash_funcs={_FunctionRef: lambda ref: f"{ref.fn.__module__}.{ref.fn.__qualname__}"},
)
def _cached_call(name: str, args: tuple[Any, ...], ref: _FunctionRef, extra: Any) -> Any:
    with _FILE_LOCK:  # such calls open the file themselves: not while the cubes are rewritten
        return ref.fn(*args)


def cached_call(name: str, fn: Callable[..., Any], *args: Any, extra: Any = None) -> Any:
    """``fn(*args)`` through ``st.cache_data`` for core calls that open files themselves;
    ``extra`` joins the cache key only (e.g. the model file's modification time)."""
    return guarded(lambda: _cached_call(name, args, _FunctionRef(fn), extra))


def model_file() -> str | None:
    """``$ADVISOR_MODEL`` (None: the shipped model)."""
    from advisor import slowdown

    return os.environ.get(slowdown.MODEL_ENV) or None


def model_key() -> tuple[str, float]:
    """The model file in use and its modification time (a refit invalidates cached answers)."""
    from advisor import slowdown

    path = Path(model_file() or slowdown.shipped_model_path())
    try:
        return (str(path), path.stat().st_mtime)
    except OSError:
        return (str(path), 0.0)


def model_params() -> Any:
    """The fitted TTFT model's parameters (``$ADVISOR_MODEL`` or the shipped model)."""
    from advisor import slowdown

    return cached_call("load_params", slowdown.load_params, model_file(), extra=model_key())


def _training_set(key: DbKey, max_slowdown: float) -> Any:
    from advisor import calibration

    loaded = calibration.load_points(db=key[0])
    return calibration.training_set(loaded.points, max_slowdown)


def calibration_points(key: DbKey, max_slowdown: float) -> Any:
    """The calibration points behind the model (shipped CSVs plus the database's table), as
    the fit sees them (``advisor.calibration.TrainingSet``)."""
    return cached_call("training_set", _training_set, key, max_slowdown, extra=model_key())


def partition_recommendations(
    key: DbKey, a: Assumptions | None = None
) -> dict[tuple[str | None, str], Any]:
    """``advisor.recommend.recommend_partitions`` over every job, by (partition, GPU type),
    under the shared assumptions: the DefCpuPerGPU each partition's jobs should get (the Who
    page's target) and the GPU-hours its jobs below it lose."""
    from advisor import recommend

    a = a or Assumptions()
    report = cached_call(
        "recommend_partitions",
        recommend.recommend_partitions,
        recommend.PartitionQuery(
            db=key[0], workload=a.workload, tolerance=a.tolerance, model_file=model_file()
        ),
        extra=(key, model_key()),
    )
    return {(r.partition, r.gpu_type): r for r in report.rows}


# Charts ----------------------------------------------------------------------------------------


@st.cache_data(show_spinner=False, max_entries=512)
def _chart_spec(builder: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    from advisor import charts

    chart = getattr(charts, builder)(*args, **kwargs)
    # advisor's chart tests validate every builder's spec against the Vega-Lite schema; here
    # validating again would cost more than the rest of a cached re-run.
    spec: dict[str, Any] = chart.to_dict(validate=False)
    if not any(k in spec for k in ("facet", "hconcat", "vconcat", "concat", "repeat")):
        spec["width"] = "container"  # a single view takes the page's width
    return spec


def show_chart(builder: str, *args: Any, **kwargs: Any) -> None:
    """Draw ``advisor.charts.<builder>(*args, **kwargs)``; the spec is cached by its inputs
    (building an altair chart costs more than the rest of a cached page re-run)."""
    spec = _chart_spec(builder, args, kwargs)
    st.vega_lite_chart(spec, width="stretch" if spec.get("width") == "container" else "content")


# Workload assumptions shared by Overview, Who and Recommend --------------------------------------


@dataclass(frozen=True)
class Assumptions:
    """The workload every page's recommendation assumes (set on Recommend, read everywhere), so
    that two pages never answer the same question under different assumptions."""

    workload: Workload = Workload(model_params_b=8.0, load_rps=8.0, prompt_tokens=16384)
    tolerance: float = 0.10

    def in_words(self) -> str:
        from advisor import fixplan

        return fixplan.assumptions_in_words(self.workload, self.tolerance)


def assumptions() -> Assumptions:
    """The shared assumptions (defaults until the Recommend page changes them)."""
    a = st.session_state.get("_assumptions")
    return a if isinstance(a, Assumptions) else Assumptions()


def set_assumptions(a: Assumptions) -> None:
    st.session_state["_assumptions"] = a


def assumptions_caption(a: Assumptions) -> None:
    st.caption(f"Assumed: {a.in_words()}. Change this on the Recommend page; every page uses it.")


def fix_plan(key: DbKey, filters: Filters, a: Assumptions) -> Any:
    """``advisor.fixplan.fix_plan`` for the sidebar's filters and the shared assumptions.

    Raises the core's AdvisorError (a broken model file, say) so the page can show it and go on
    with what needs no model."""
    from advisor import fixplan

    # One cached plan of every cluster per month range, narrowed here to the clusters,
    # partitions and GPU types chosen: those filter changes then ask the model nothing new.
    q = fixplan.FixQuery(
        db=key[0],
        clusters=filter_options(key).clusters,
        start=filters.since_datetime,
        end=filters.until_exclusive,
        workload=a.workload,
        tolerance=a.tolerance,
        model_file=model_file(),
    )
    plan = _cached_core("fix_plan", key, (q, model_key()), _FunctionRef(_fix_plan_on))
    return fixplan.merge([plan], filters.partitions, filters.gpu_types, filters.clusters)


def headline(key: DbKey, filters: Filters, plan: Any) -> Any:
    """``advisor.fixplan.plan_headline`` of the narrowed ``plan``: its interval, share, basis,
    calibration, the data's age and the usage evidence for the sidebar's filters."""
    from advisor import fixplan

    q = fixplan.FixQuery(
        db=key[0],
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
        start=filters.since_datetime,
        end=filters.until_exclusive,
    )
    # the hour keys the cache, so that a page left open still shows the data's age rightly
    hour = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    return cached_core("headline", key, fixplan.plan_headline, plan, q, hour)


def _fix_plan_on(con: duckdb.DuckDBPyConnection, q: Any, _model_key: tuple[str, float]) -> Any:
    """``fixplan.fix_plan`` on this run's connection (``_model_key`` only keys the cache: a
    refitted model file gives new plans)."""
    from advisor import fixplan

    return fixplan.fix_plan(q, con)


# A month (or group) with fewer jobs than this is drawn faded and named: its percentiles move
# a lot with a handful of jobs.
FEW_JOBS = 30
# Data older than this (days since the newest record) gets a warning on the Data page.
STALE_DAYS = 2.0


# Tables for people ---------------------------------------------------------------------------

# column name -> (label, kind); kinds: int, num (two decimals), ratio (cores per GPU), pct
# (a 0-1 share shown as a percentage), usd, text. Every page's tables go through show_table,
# so one column reads the same everywhere.
COLUMNS: dict[str, tuple[str, str]] = {
    "cluster": ("Cluster", "text"),
    "partition": ("Partition", "text"),
    "gpu_type": ("GPU type", "text"),
    "account": ("Account", "text"),
    "user": ("User", "text"),
    "month": ("Month", "text"),
    "jobs": ("Jobs", "int"),
    "gpu_jobs": ("GPU jobs", "int"),
    "gpu_hours": ("GPU-hours", "int"),
    "gpu_hours_below": ("GPU-h below target", "int"),
    "gpu_hours_lost": ("GPU-h lost (est.)", "int"),
    "gpu_hours_lost_per_month": ("Lost GPU-h / month", "int"),
    "lost_usd_per_month": ("Lost $ / month", "usd"),
    "fix_usd_per_month": ("Fix $ / month", "usd"),
    "def_cpu_per_gpu": ("Set DefCpuPerGPU", "int"),
    "min_cpus_per_gpu": ("Minimum cores / GPU", "int"),
    "typical_gpus": ("Typical GPUs / job", "int"),
    "node_max_cpus_per_gpu": ("Node max cores / GPU", "int"),
    "p10_cores_per_gpu": ("P10 cores / GPU", "ratio"),
    "p25_cores_per_gpu": ("P25 cores / GPU", "ratio"),
    "p50_cores_per_gpu": ("P50 cores / GPU", "ratio"),
    "p75_cores_per_gpu": ("P75 cores / GPU", "ratio"),
    "p90_cores_per_gpu": ("P90 cores / GPU", "ratio"),
    "mean_cores_per_gpu": ("Mean cores / GPU", "ratio"),
    "target_cores_per_gpu": ("Target cores / GPU", "ratio"),
    "fair_cores_per_gpu": ("Fair share cores / GPU", "ratio"),
    "fair_share_cores_per_gpu": ("Fair share cores / GPU", "ratio"),
    "share_jobs_below": ("% of jobs below target", "pct"),
    "share_gpu_hours_below": ("% of GPU-h below target", "pct"),
    "share_jobs_below_fair_share": ("% of jobs below fair share", "pct"),
    "jobs_below": ("Jobs below target", "int"),
    "flag": ("Submit with", "text"),
    "months_observed": ("Months observed", "num"),
    "fix_vcpu_hours_per_month": ("Extra vCPU-hours / month", "int"),
    "p10": ("P10 cores / GPU", "ratio"),
    "p25": ("P25 cores / GPU", "ratio"),
    "p50": ("P50 cores / GPU", "ratio"),
    "p75": ("P75 cores / GPU", "ratio"),
    "p90": ("P90 cores / GPU", "ratio"),
    "mean": ("Mean cores / GPU", "ratio"),
    "share_gpu_hours_below_fair_share": ("% of GPU-h below fair share", "pct"),
    "cpus_per_node": ("CPUs per node", "int"),
    "gpus_per_node": ("GPUs per node", "int"),
    "nodes": ("Nodes", "int"),
    "cores_per_gpu": ("Cores / GPU", "ratio"),
    "partitions": ("Partitions", "text"),
    "records": ("Records", "int"),
    "ingest_id": ("Load", "text"),
    "source": ("Source", "text"),
    "status": ("Status", "text"),
    "duration_s": ("Duration (s)", "num"),
    "inserted": ("Inserted", "int"),
    "updated": ("Updated", "int"),
    "unchanged": ("Unchanged", "int"),
    "rejected": ("Rejected", "int"),
    "rows_read": ("Rows read", "int"),
    "lines_read": ("Lines read", "int"),
    "age_days": ("Days since newest record", "num"),
    "known": ("Recognised", "text"),
    "model": ("Model", "text"),
    "platform": ("Platform", "text"),
    "gpus": ("GPUs", "int"),
    "attacker_rps": ("Attacker requests/s", "num"),
    "workload": ("Workload", "text"),
    "requests_ok": ("Requests ok", "int"),
    "requests_failed": ("Failed", "int"),
    "requests_timed_out": ("Timed out", "int"),
    "engine": ("Engine", "text"),
    "engine_version": ("Engine version", "text"),
    "spread_pct": ("Spread", "pct100"),
    "runs": ("Repeats", "int"),
    "repeat": ("Repeat", "int"),
    "cores": ("Cores", "int"),
    "ttft_ms": ("TTFT, median of repeats (ms)", "int"),
    "ttft_min_ms": ("Fastest (ms)", "int"),
    "ttft_max_ms": ("Slowest (ms)", "int"),
    "victim_ttft_p50_ms": ("Victim TTFT P50 (ms)", "int"),
    "victim_ttft_p90_ms": ("Victim TTFT P90 (ms)", "int"),
    "run_id": ("Run", "text"),
    "series": ("Series", "text"),
    "flags_text": ("Flags", "text"),
    "started_at": ("Started (UTC)", "text"),
    "finished_at": ("Finished (UTC)", "text"),
    "first_submit": ("Oldest submit (UTC)", "text"),
    "last_submit": ("Newest submit (UTC)", "text"),
    "last_end": ("Newest end (UTC)", "text"),
    "last_ingest": ("Last load (UTC)", "text"),
    "format": ("Format", "text"),
    "compression": ("Compression", "text"),
    "missing_fields": ("Missing fields", "text"),
    "disabled_analyses": ("Analyses off", "text"),
    "reason": ("Reason", "text"),
    "field": ("Field", "text"),
    "example_source": ("First seen in", "text"),
    "example_line_no": ("At line", "int"),
    "example_raw": ("Example line", "text"),
    "line_no": ("Line", "int"),
    "raw": ("Line as read", "text"),
    "ingests": ("Loads", "int"),
    "gpu_type_raw": ("GPU type as recorded", "text"),
    "assumption": ("Assumption", "text"),
    "value": ("Value", "text"),
}
_SHARE_BELOW = re.compile(r"^share_(jobs|gpu_hours)_below_([0-9.]+)$")
# "pct" columns are scaled to 0-100 by show_table: Streamlit's "percent" keeps a varying number
# of decimals, and one share should read like the next.
_FORMATS = {
    "int": "%,.0f",
    "num": "%,.2f",
    "ratio": "%.3g",  # 0.125 stays 0.125, 2 stays 2 (the values are rounded to match)
    "pct": "%.1f%%",
    "usd": "$%,.0f",
    "pct100": "%.0f%%",
}


def column_kind(column: str) -> tuple[str, str]:
    """A column's label for people and its kind (see :data:`COLUMNS`)."""
    m = _SHARE_BELOW.match(column)
    if m:
        what = "jobs" if m.group(1) == "jobs" else "GPU-h"
        return f"% of {what} below {m.group(2)} cores/GPU", "pct"
    return COLUMNS.get(column, (column.replace("_", " ").capitalize(), "auto"))


def table_config(
    columns: list[str], labels: dict[str, str] | None = None, as_text: set[str] | None = None
) -> dict[str, Any]:
    """Streamlit column configs: a person's label and one number format per kind of column
    (``as_text``: numeric columns already written out as text, see :func:`show_table`)."""
    labels = labels or {}
    out: dict[str, Any] = {}
    for c in columns:
        label, kind = column_kind(c)
        label = labels.get(c, label)
        if c in (as_text or ()):
            out[c] = st.column_config.TextColumn(label)
        elif kind in _FORMATS:
            out[c] = st.column_config.NumberColumn(label, format=_FORMATS[kind])
        else:
            out[c] = st.column_config.Column(label)
    return out


def period_labels(period: str) -> dict[str, str]:
    """Labels of the ``*_per_month`` columns for figures covering ``period``
    (``advisor.fixplan.period_words``): none to change for a rate per month."""
    if period == "per month":
        return {}
    return {
        "gpu_hours_lost_per_month": f"Lost GPU-h {period}",
        "lost_usd_per_month": f"Lost $ {period}",
        "fix_usd_per_month": f"Fix $ {period}",
        "fix_vcpu_hours_per_month": f"Extra vCPU-hours {period}",
    }


# What an empty cell says: a table for people never shows a literal "None".
EMPTY_CELL = "—"


def _readable_cells(df: Any) -> tuple[Any, set[str]]:
    """Cells as a table for people reads them: ratios to three significant digits (the format
    "%.3g" then shows 0.125 whole), and no empty cell shown as "None" (a numeric column with
    one becomes text in its own format; a text column says EMPTY_CELL). Also returns the
    numeric columns made text."""
    import math

    out = {}
    as_text: set[str] = set()
    for c in df.columns:
        kind = column_kind(str(c))[1]
        col = df[c]
        if kind == "ratio":
            col = col.map(lambda v: float(f"{v:.3g}") if _is_number(v) else v)
        if not col.isna().any():
            out[c] = col
        elif kind in _FORMATS:
            as_text.add(str(c))
            fmt = _FORMATS[kind].replace(",", "")
            out[c] = col.map(
                lambda v, f=fmt, k=kind: (
                    EMPTY_CELL
                    if v is None or (isinstance(v, float) and math.isnan(v))
                    else _number_text(float(v), f, k)
                )
            )
        else:
            out[c] = col.map(lambda v: EMPTY_CELL if _is_missing(v) else v)
    return (df.assign(**out) if out else df), as_text


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def _is_missing(v: Any) -> bool:
    try:
        return v is None or bool(v != v)
    except (TypeError, ValueError):  # an array or list cell: present
        return False


def _number_text(v: float, fmt: str, kind: str) -> str:
    """One number as the column's format shows it (thousands separated, as Streamlit does)."""
    if kind == "ratio":
        return cores_text(v)
    text = fmt % v
    head, _, rest = text.partition(".")
    sign = "-" if head.lstrip("$").startswith("-") else ""
    digits = head.lstrip("$-")
    grouped = f"{int(digits):,}" if digits.isdigit() else digits
    prefix = "$" if head.startswith("$") else ""
    return f"{prefix}{sign}{grouped}" + (f".{rest}" if rest else "")


def month_label(value: Any) -> str:
    """A month as ``2024-01`` whatever it arrives as (timestamp, date or text)."""
    if hasattr(value, "strftime"):
        return str(value.strftime("%Y-%m"))
    return str(value)[:7]


def show_table(
    frame: Any,
    columns: list[str] | None = None,
    labels: dict[str, str] | None = None,
    height: int | Literal["auto", "stretch", "content"] = "auto",
) -> None:
    """A table for people: the ``columns`` given first (else all), labelled and formatted by
    :data:`COLUMNS`, months as ``2024-01``, as wide as the page (never cut off at the right)."""
    import pandas as pd

    df = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    if "month" in df.columns:
        df = df.assign(month=df["month"].map(month_label))
    pct = [c for c in df.columns if column_kind(str(c))[1] == "pct"]
    if pct:
        df = df.assign(**{c: df[c] * 100.0 for c in pct})
    df, as_text = _readable_cells(df)
    st.dataframe(
        df,
        hide_index=True,
        column_config=table_config(list(df.columns), labels, as_text),
        width="stretch",
        height=height,
    )
