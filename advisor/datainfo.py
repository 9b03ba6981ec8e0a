"""What is in the database, as the dashboard's Data page and ``advisor data status`` show it.

Owns: the ingest log, rejected records grouped by reason, data freshness per cluster, the
values the dashboard's filters offer, GPU types that no built-in or site pattern recognises,
user-name pseudonyms (the dashboard's privacy setting), and the command line that starts the
dashboard. Everything is read from the DuckDB file through the named queries in
``advisor/sql/datainfo/``; nothing here writes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import hashlib
import os
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from advisor.errors import NotFoundError, UsageError
from advisor.gputypes import known_families
from advisor.resources import dashboard_dir
from advisor.store import query
from advisor.usage import ClusterUsage, usage_coverage
from advisor.wording import age_words

HASH_USERS_ENV = "ADVISOR_HASH_USERS"
HASH_SALT_ENV = "ADVISOR_HASH_SALT"


@dataclass(frozen=True)
class IngestRecord:
    """One load of one source, from the ``ingests`` table."""

    ingest_id: int
    source: str
    format: str
    compression: str | None
    cluster: str | None
    started_at: dt.datetime | None
    finished_at: dt.datetime | None
    duration_s: float | None
    status: str
    rows_read: int
    lines_read: int
    inserted: int
    updated: int
    unchanged: int
    rejected: int
    missing_fields: str
    disabled_analyses: str


@dataclass(frozen=True)
class RejectReason:
    """Rejected records that share a reason and a field, with one example location."""

    reason: str
    field: str
    records: int
    ingests: int
    example_source: str | None
    example_line_no: int | None


@dataclass(frozen=True)
class RejectRecord:
    """One rejected record: where it was, which field, why, and the start of its text."""

    ingest_id: int
    source: str
    line_no: int | None
    field: str
    reason: str
    raw: str


@dataclass(frozen=True)
class ClusterFreshness:
    """How recent one cluster's data is (all times UTC)."""

    cluster: str
    jobs: int
    gpu_jobs: int
    first_submit: dt.datetime | None
    last_submit: dt.datetime | None
    last_end: dt.datetime | None
    last_ingest: dt.datetime | None
    age_days: float | None  # days from the newest submit or end to ``now``


@dataclass(frozen=True)
class GpuTypeCount:
    """GPU jobs of one GPU type, and whether a built-in family or site mapping knows it."""

    gpu_type: str | None
    jobs: int
    gpu_hours: float
    example_raw: str | None
    known: bool


@dataclass(frozen=True)
class FilterOptions:
    """What the dashboard's filters can offer: values present in ``jobs`` and the time span
    (start time, else submit time, UTC: what ``advisor.ratios`` filters on)."""

    clusters: tuple[str, ...]
    partitions: tuple[str, ...]
    gpu_types: tuple[str, ...]
    first_time: dt.datetime | None
    last_time: dt.datetime | None
    jobs: int
    gpu_jobs: int


@dataclass(frozen=True)
class DataStatus:
    """Everything ``advisor data status`` reports."""

    jobs: int
    gpu_jobs: int
    clusters: tuple[ClusterFreshness, ...]
    gpu_types: tuple[GpuTypeCount, ...]
    unknown_gpu_types: tuple[str, ...]
    ingests: tuple[IngestRecord, ...]
    reject_reasons: tuple[RejectReason, ...]
    rejected_records: int
    # per cluster: which GPU jobs carry usage (TotalCPU, GPU utilisation), from when (issue 23)
    usage: tuple[ClusterUsage, ...] = ()
    # clusters whose accounting records no gres/gpu while jobs asked for GPUs: (cluster, jobs
    # asking), their GPU jobs stored with 0 GPUs (issue 30 A6)
    gpus_unrecorded: tuple[tuple[str, int], ...] = ()


def _rows(con: duckdb.DuckDBPyConnection, name: str, params: Sequence[object] = ()) -> list[tuple]:
    return con.execute(query(f"datainfo/{name}"), list(params)).fetchall()


def ingest_log(con: duckdb.DuckDBPyConnection, limit: int = 100) -> list[IngestRecord]:
    """The latest ``limit`` loads, newest first."""
    return [IngestRecord(*r) for r in _rows(con, "ingests", [limit])]


def reject_reasons(con: duckdb.DuckDBPyConnection, limit: int = 100) -> list[RejectReason]:
    """Rejected records grouped by (reason, field), most frequent first."""
    return [RejectReason(*r) for r in _rows(con, "reject_reasons", [limit])]


def recent_rejects(con: duckdb.DuckDBPyConnection, limit: int = 200) -> list[RejectRecord]:
    """The latest rejected records (raw text cut to 300 characters)."""
    return [RejectRecord(*r) for r in _rows(con, "rejects", [limit])]


def freshness(
    con: duckdb.DuckDBPyConnection, now: dt.datetime | None = None
) -> list[ClusterFreshness]:
    """Per cluster: job counts, newest submit/end, last finished ingest, and age in days."""
    now = now or dt.datetime.now(dt.UTC).replace(tzinfo=None)
    out = []
    for cluster, jobs, gpu_jobs, first, last_submit, last_end, last_ingest in _rows(
        con, "freshness"
    ):
        newest = max((t for t in (last_submit, last_end) if t is not None), default=None)
        age = (now - newest).total_seconds() / 86400.0 if newest is not None else None
        out.append(
            ClusterFreshness(
                cluster, int(jobs), int(gpu_jobs), first, last_submit, last_end, last_ingest, age
            )
        )
    return out


STALE_DAYS = 2.0
"""Days since a cluster's newest record past which every surface warns that its figures are
that old (the dashboard's pages, the report, the CLI)."""


def stale_sentences(
    con: duckdb.DuckDBPyConnection, now: dt.datetime | None = None, days: float = STALE_DAYS
) -> list[str]:
    """One sentence per cluster whose newest record is more than ``days`` old: its age in whole
    days from now to its newest record (submit or end), and the ingest that brings it up to
    date. The dashboard and the CLI say the same words."""
    out = []
    for f in freshness(con, now):
        if f.age_days is None or f.age_days <= days:
            continue
        since = (f.last_end or f.last_submit or dt.datetime(1970, 1, 1)).date().isoformat()
        out.append(
            f"{f.cluster}: the newest record is {age_words(f.age_days)} (last job ended "
            f"{since}); every number here is that old. Load what came since with "
            f"`advisor ingest --sacct --start {since}` on the cluster"
        )
    return out


def gpu_type_counts(
    con: duckdb.DuckDBPyConnection, extra_known: Iterable[str] = ()
) -> list[GpuTypeCount]:
    """GPU jobs per GPU type; ``known`` is False for names no family pattern recognised.

    ``extra_known`` adds the families of a site mapping (its values) to the built-in ones.
    """
    families = {f.lower() for f in (*known_families(), *extra_known)}
    out = []
    for gpu_type, jobs, gpu_hours, example in _rows(con, "gpu_types"):
        known = gpu_type is not None and gpu_type.lower() in families
        out.append(GpuTypeCount(gpu_type, int(jobs), float(gpu_hours), example, known))
    return out


def filter_options(con: duckdb.DuckDBPyConnection) -> FilterOptions:
    """The clusters, partitions and GPU types present, and the time span of the jobs."""
    rows = _rows(con, "filter_options")
    clusters = sorted({r[0] for r in rows if r[0] is not None})
    partitions = sorted({r[1] for r in rows if r[1] is not None})
    gpu_types = sorted({r[2] for r in rows if r[2] is not None})
    firsts = [r[4] for r in rows if r[4] is not None]
    lasts = [r[5] for r in rows if r[5] is not None]
    return FilterOptions(
        clusters=tuple(clusters),
        partitions=tuple(partitions),
        gpu_types=tuple(gpu_types),
        first_time=min(firsts) if firsts else None,
        last_time=max(lasts) if lasts else None,
        jobs=sum(int(r[3]) for r in rows),
        gpu_jobs=sum(int(r[3]) for r in rows if r[2] is not None),
    )


@dataclass(frozen=True)
class BenchRun:
    """One stored benchmark run (a row of ``bench_runs``), as the Benchmarks page lists it."""

    run_id: str
    started_at: dt.datetime | None
    status: str
    engine: str
    engine_version: str | None
    model: str | None
    model_params_b: float | None
    platform: str | None
    gpus: int | None
    tp: int | None
    cores: int | None
    cores_per_gpu: float | None
    workload: str | None
    attacker_rps: float | None
    attacker_tokens_min: int | None
    attacker_tokens_max: int | None
    victim_rps: float | None
    repeat: int | None
    victim_ttft_p50_ms: float | None
    victim_ttft_p90_ms: float | None
    attacker_ttft_p50_ms: float | None
    requests_ok: int | None
    requests_failed: int | None
    requests_timed_out: int | None
    engine_cpu_percent: float | None
    gpu_util_percent: float | None
    tokenize_share: float | None
    cluster: str | None  # the Slurm cluster and partition it ran in; None outside Slurm
    partition: str | None
    flags: str | None = None  # why the run is not fitted (bench.metrics.run_flags), comma-separated
    flag_reasons: str | None = None
    wait_engine_core: float | None = None  # share of the phase the process waited for a CPU
    wait_api_server: float | None = None


def bench_runs(
    con: duckdb.DuckDBPyConnection,
    *,
    platforms: Sequence[str] = (),
    clusters: Sequence[str] = (),
    partitions: Sequence[str] = (),
    start: dt.datetime | None = None,
    end: dt.datetime | None = None,
) -> list[BenchRun]:
    """The stored benchmark runs, ordered by series then cores, of the given platforms (GPU
    types), Slurm clusters and partitions, started in ``[start, end)`` (UTC); an empty filter
    keeps every run. A run with no recorded cluster or partition (made outside Slurm) matches
    no cluster or partition filter."""
    rows = con.execute(
        query("datainfo/bench_runs"),
        {
            "platforms": list(platforms),
            "clusters": list(clusters),
            "partitions": list(partitions),
            "start": start,
            "end": end,
        },
    ).fetchall()
    return [BenchRun(*r) for r in rows]


def data_status(con: duckdb.DuckDBPyConnection, limit: int = 20) -> DataStatus:
    """Freshness, GPU types (unknown ones named), the ingest log and reject reasons."""
    clusters = freshness(con)
    types = gpu_type_counts(con)
    reasons = reject_reasons(con, limit)
    total_rejects = con.execute(query("datainfo/rejected_records")).fetchone()
    return DataStatus(
        jobs=sum(c.jobs for c in clusters),
        gpu_jobs=sum(c.gpu_jobs for c in clusters),
        clusters=tuple(clusters),
        gpu_types=tuple(types),
        unknown_gpu_types=tuple(t.gpu_type or "(untyped)" for t in types if not t.known),
        ingests=tuple(ingest_log(con, limit)),
        reject_reasons=tuple(reasons),
        rejected_records=int(total_rejects[0]) if total_rejects else 0,
        usage=tuple(usage_coverage(con)),
        gpus_unrecorded=tuple((str(c), int(n)) for c, n in _rows(con, "gpus_unrecorded")),
    )


def pseudonym(name: str | None, salt: str = "") -> str | None:
    """A stable short pseudonym for a user or account name: ``u-`` and 10 hex digits.

    The same name and salt always give the same pseudonym, so charts stay comparable between
    runs; set ``$ADVISOR_HASH_SALT`` so that pseudonyms cannot be reversed by hashing guesses.
    """
    if name is None:
        return None
    digest = hashlib.sha256(f"{salt}\x00{name}".encode()).hexdigest()
    return f"u-{digest[:10]}"


# Rejected-record fields that hold a user's or an account's name (or number): what the privacy
# setting hides; names are compared lower-case, sacct's (User) and the JSON's (user) alike.
NAME_FIELDS = frozenset({"user", "account", "group", "uid", "gid", "wckey", "association"})
RAW_WITHHELD = "(withheld: user and account names are hidden; the file and line say where)"
# A value as a reason quotes it (Python's repr: 'alice', or "o'brien" when it holds a quote).
_QUOTED = re.compile(r"'((?:[^'\\]|\\.)*)'|\"((?:[^\"\\]|\\.)*)\"")


def _private_reason(reason: str, field: str, salt: str) -> str:
    """``reason`` with each quoted value a pseudonym when it is about a name field (or about no
    field in particular, where it may quote anything of the line)."""
    if field and field.lower() not in NAME_FIELDS:
        return reason
    return _QUOTED.sub(lambda m: repr(pseudonym(m.group(1) or m.group(2) or "", salt)), reason)


def private_rejects(records: Iterable[RejectRecord], salt: str = "") -> list[RejectRecord]:
    """Rejected records as the privacy setting shows them: the raw text withheld (a line holds
    user and account names in positions only its format knows) and the names a reason quotes
    replaced by their pseudonyms (:func:`pseudonym`, the same as everywhere else)."""
    return [
        dataclasses.replace(
            r, raw=RAW_WITHHELD if r.raw else r.raw, reason=_private_reason(r.reason, r.field, salt)
        )
        for r in records
    ]


def private_reasons(reasons: Iterable[RejectReason], salt: str = "") -> list[RejectReason]:
    """Reject reasons as the privacy setting shows them (see :func:`private_rejects`)."""
    return [
        dataclasses.replace(r, reason=_private_reason(r.reason, r.field, salt)) for r in reasons
    ]


def hash_users_setting(env: dict[str, str] | None = None) -> bool:
    """Whether ``$ADVISOR_HASH_USERS`` asks for user names to be hidden (1/true/yes/on)."""
    value = (env if env is not None else os.environ).get(HASH_USERS_ENV, "")
    return value.strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class DashboardConfig:
    """How to start the dashboard: the database, the port, and the privacy setting."""

    db_path: Path
    port: int = 8501
    address: str = "localhost"
    hash_users: bool = False
    headless: bool = True
    extra_args: tuple[str, ...] = field(default_factory=tuple)


def app_script() -> Path:
    """The Streamlit entry point ``app/streamlit_app.py`` (checkout or wheel, advisor.resources)."""
    script = dashboard_dir() / "streamlit_app.py"
    if not script.is_file():
        raise NotFoundError(
            f"{script}: the dashboard app is missing from this install; reinstall advisor "
            "(pip install advisor, or pip install -e . in a checkout)"
        )
    return script


# What .streamlit/config.toml sets, passed on the command line too (a test checks they agree).
STREAMLIT_SETTINGS: tuple[tuple[str, str], ...] = (
    ("server.runOnSave", "false"),
    ("server.fileWatcherType", "none"),
    ("client.toolbarMode", "minimal"),
    ("client.showErrorDetails", "type"),
    ("theme.base", "light"),
)


def dashboard_command(config: DashboardConfig) -> tuple[list[str], dict[str, str]]:
    """The ``streamlit run`` command line and environment that serve the dashboard.

    The database must exist (the dashboard opens it read-only); the port must be 1-65535.
    """
    if not 0 < config.port < 65536:
        raise UsageError(f"--port {config.port}: must be between 1 and 65535")
    db = config.db_path.resolve()
    if not db.exists():
        raise NotFoundError(
            f"{config.db_path}: no such database; load data first with "
            f"`advisor ingest FILE --db {config.db_path}`"
        )
    argv = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app_script()),
        "--server.port",
        str(config.port),
        "--server.address",
        config.address,
        "--server.headless",
        "true" if config.headless else "false",
        "--browser.gatherUsageStats",
        "false",
        # .streamlit/config.toml's settings: an installed wheel does not carry that file, and
        # streamlit reads it only from the working directory (no Deploy button, no watcher)
        *(arg for name, value in STREAMLIT_SETTINGS for arg in (f"--{name}", value)),
        *config.extra_args,
        "--",
        "--db",
        str(db),
    ]
    env = dict(os.environ)
    env["ADVISOR_DB"] = str(db)
    if config.hash_users:
        env[HASH_USERS_ENV] = "1"
    return argv, env


def run_dashboard(
    config: DashboardConfig, before_serving: Callable[[Path], object] | None = None
) -> int:
    """Serve the dashboard until interrupted; return ``streamlit``'s exit status.
    ``before_serving(db_path)`` runs once the command is known to be valid, before streamlit
    starts: the caller's rebuild of stale summary tables (advisor.derived.store_fresh), done
    once in the file rather than privately by every session."""
    from advisor.serving.supervise import run_supervised

    argv, env = dashboard_command(config)
    if before_serving is not None:
        before_serving(config.db_path)
    return run_supervised(argv, env)  # stopping `advisor dashboard` stops streamlit too


def status_of_db(db: str | os.PathLike[str] | None = None, limit: int = 20) -> DataStatus:
    """:func:`data_status` of the database file ``db`` (see ``advisor.store.resolve_db_path``)."""
    from advisor.store import connect

    con = connect(db, read_only=True)
    try:
        return data_status(con, limit)
    finally:
        con.close()
