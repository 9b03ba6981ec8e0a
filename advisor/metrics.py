"""Prometheus metrics of the database, where admins already look (``advisor metrics``).

The numbers are the monthly report's, for one month (the newest with GPU jobs unless asked):
per cluster, partition and GPU type the P25/P50 cores per GPU and the jobs and GPU-hours behind
them (advisor.ratios.ratio_summary), the recommended cores per GPU and the share of jobs and
GPU-hours below it (advisor.recommend through advisor.report.load_inputs), and the GPU-hours lost
to CPU starvation with their dollar value and the ends of both's 90% interval
(advisor.report.starvation_estimates), and per GPU type whether the curve was calibrated on it
(advisor.headline). Per cluster: the
newest record's time, its age and the last ingest (advisor.datainfo); rejected records by reason.

Output is Prometheus' text exposition format, written by prometheus_client: a file for
node_exporter's textfile collector (written atomically), or served over HTTP, recomputed on
every scrape. ``grafana/advisor.json`` plots these series.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from advisor import store
from advisor.progress import ProgressFn, no_progress

if TYPE_CHECKING:
    import duckdb

    from advisor.report.inputs import ReportInputs
    from advisor.report.months import Month

GROUP_LABELS: tuple[str, ...] = ("cluster", "partition", "gpu_type")


@dataclass(frozen=True)
class MetricsConfig:
    """Which database (or Parquet dataset), which month, and the model and prices to use."""

    db: str | os.PathLike[str] | None = None
    parquet: str | None = None
    month: str | None = None  # YYYY-MM or 'last'; None: the newest month with GPU jobs
    model_file: Path | None = None
    pricing_file: Path | None = None


@dataclass(frozen=True)
class Sample:
    labels: Mapping[str, str]
    value: float


@dataclass(frozen=True)
class Family:
    """One metric: its name, help text, and samples (all gauges)."""

    name: str
    help: str
    samples: list[Sample] = field(default_factory=list)

    def add(self, value: float | None, **labels: Any) -> None:
        if value is not None:
            self.samples.append(
                Sample({k: "" if v is None else str(v) for k, v in labels.items()}, float(value))
            )


def _epoch(t: dt.datetime | None) -> float | None:
    if t is None:
        return None
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()


# Every family collect() writes, in the order Prometheus shows them: (name, help text).
FAMILIES: tuple[tuple[str, str], ...] = (
    ("advisor_month_info", "The month (UTC, by job start) the per-group metrics cover."),
    ("advisor_gpu_jobs", "GPU jobs of the month."),
    ("advisor_gpu_hours", "GPU-hours of the month's GPU jobs."),
    ("advisor_cores_per_gpu_p25", "25th percentile of CPU cores per GPU (job-weighted)."),
    ("advisor_cores_per_gpu_p50", "Median CPU cores per GPU (job-weighted)."),
    (
        "advisor_recommended_cores_per_gpu",
        "Recommended cores per GPU (DefCpuPerGPU) of the partition and GPU type.",
    ),
    (
        "advisor_share_jobs_below_recommendation",
        "Share (0-1) of the month's jobs below the recommended cores per GPU.",
    ),
    (
        "advisor_share_gpu_hours_below_recommendation",
        "Share (0-1) of the month's GPU-hours below the recommended cores per GPU.",
    ),
    (
        "advisor_gpu_hours_lost",
        "GPU-hours the month's jobs below the recommendation lost to CPU starvation "
        "(fitted model).",
    ),
    (
        "advisor_gpu_hours_lost_low",
        "Lower end of the lost GPU-hours' 90% interval (the fit's bootstrap refits).",
    ),
    (
        "advisor_gpu_hours_lost_high",
        "Upper end of the lost GPU-hours' 90% interval; the loss itself is an upper "
        "bound (every GPU job counted as an LLM server).",
    ),
    ("advisor_gpu_hours_lost_usd", "The lost GPU-hours priced per GPU-hour (USD)."),
    ("advisor_gpu_hours_lost_usd_low", "Lower end of the lost dollars' 90% interval."),
    ("advisor_gpu_hours_lost_usd_high", "Upper end of the lost dollars' 90% interval."),
    (
        "advisor_gpu_type_calibrated",
        "1 where the curve was fitted on the GPU type's own measurements, 0 where its "
        "figures are extrapolated from the calibrated platforms.",
    ),
    ("advisor_fix_usd", "What the missing cores would have cost (USD, per-vCPU price)."),
    (
        "advisor_cpu_pressure_measured_gpu_hours_share",
        "Share of the month's GPU-hours whose jobs' CPU pressure (PSI) was measured.",
    ),
    (
        "advisor_cpu_pressure_some_share",
        "GPU-hour weighted share of time measured jobs' tasks stalled for a CPU (PSI some).",
    ),
    (
        "advisor_cpu_pressure_full_share",
        "GPU-hour weighted share of time all of measured jobs' tasks stalled (PSI full).",
    ),
    (
        "advisor_gpu_hours_held_by_cpu_wait_low",
        "GPU-hours of measured jobs held by CPU waiting, lower bound (x PSI full).",
    ),
    (
        "advisor_gpu_hours_held_by_cpu_wait_high",
        "GPU-hours of measured jobs held by CPU waiting, upper bound (x PSI some).",
    ),
    (
        "advisor_newest_record_timestamp_seconds",
        "Newest submit or end time in the cluster's data (Unix time).",
    ),
    ("advisor_data_age_seconds", "Seconds from the newest record to now."),
    (
        "advisor_last_ingest_timestamp_seconds",
        "When an ingest last finished (Unix time), by the cluster the ingest recorded.",
    ),
    ("advisor_ingest_rejects_by_reason", "Records rejected by ingests, by reason."),
    ("advisor_ingest_rejects", "Records rejected by every ingest (all reasons)."),
)


def collect(
    db_path: str | os.PathLike[str],
    cfg: MetricsConfig,
    now: dt.datetime | None = None,
    progress: ProgressFn = no_progress,
) -> list[Family]:
    """Every metric of the database file ``db_path`` (see the module doc)."""
    from advisor.report import available_months, resolve_month

    now = now or dt.datetime.now(dt.UTC)
    f = {name: Family(name, text) for name, text in FAMILIES}
    con = store.connect(db_path, read_only=True)
    try:
        progress("freshness", 0, 3)
        clusters = _freshness(con, f, now)
        if cfg.month is not None:
            months = [resolve_month(cfg.month, now)]
        else:
            months = available_months(con)[-1:]
        if months:
            _month(con, f, db_path, cfg, months[0], clusters, progress)
        progress("metrics", 3, 3)
    finally:
        con.close()
    return list(f.values())


def _freshness(con: duckdb.DuckDBPyConnection, f: dict[str, Family], now: dt.datetime) -> list[str]:
    """Each cluster's newest record and age, each ingest's finish, the rejects by reason; the
    clusters loaded."""
    from advisor.datainfo import data_status

    status = data_status(con, limit=1000)
    for c in status.clusters:
        newest = max((t for t in (c.last_submit, c.last_end) if t is not None), default=None)
        stamp = _epoch(newest)
        f["advisor_newest_record_timestamp_seconds"].add(stamp, cluster=c.cluster)
        if stamp is not None:
            f["advisor_data_age_seconds"].add(now.timestamp() - stamp, cluster=c.cluster)
    last_ingest: dict[str, dt.datetime] = {}
    for i in status.ingests:  # the cluster as the ingest recorded it ('default' for files)
        key = i.cluster or ""
        if i.status == "done" and i.finished_at is not None:
            last_ingest[key] = max(i.finished_at, last_ingest.get(key, i.finished_at))
    for key, finished in sorted(last_ingest.items()):
        f["advisor_last_ingest_timestamp_seconds"].add(_epoch(finished), cluster=key)
    for r in status.reject_reasons:
        f["advisor_ingest_rejects_by_reason"].add(r.records, reason=r.reason, field=r.field)
    f["advisor_ingest_rejects"].add(status.rejected_records)
    return sorted({c.cluster for c in status.clusters})


def _month(
    con: duckdb.DuckDBPyConnection,
    f: dict[str, Family],
    db_path: str | os.PathLike[str],
    cfg: MetricsConfig,
    month: Month,
    clusters: list[str],
    progress: ProgressFn,
) -> None:
    """The month's per-group metrics: the recommendation and who is below it, the loss and its
    price per cluster, the measured pressure."""
    from advisor.headline import calibrations_of
    from advisor.report import ReportConfig, load_inputs

    f["advisor_month_info"].add(1, month=month.label)
    progress("recommendations", 1, 3)
    config = ReportConfig(
        out_dir=Path("."),
        month=month.label,
        model_file=cfg.model_file,
        pricing_file=cfg.pricing_file,
    )
    inputs = load_inputs(config, db_path)
    recs = {(r.partition, r.gpu_type): float(r.def_cpu_per_gpu) for r in inputs.recommendations}
    seen = (inputs.params.meta.get("platforms_seen") or ()) if inputs.params else ()
    types = sorted({r.gpu_type for r in inputs.recommendations})
    for cal in calibrations_of(types, seen):
        f["advisor_gpu_type_calibrated"].add(int(cal.calibrated), gpu_type=cal.gpu_type)
    progress("ratios", 2, 3)
    _ratios(con, f, month, recs)
    for cluster in clusters:
        _losses(con, f, month, cluster, inputs)
    _pressure(con, f, month)


def _ratios(
    con: duckdb.DuckDBPyConnection,
    f: dict[str, Family],
    month: Month,
    recs: dict[tuple[str | None, str], float],
) -> None:
    """Jobs, GPU-hours and cores per GPU per group, and the share below its recommendation."""
    from advisor.ratios import ratio_summary
    from advisor.report import ratio_query

    thresholds = tuple(sorted(set(recs.values()))) or None
    q = ratio_query(month, None, GROUP_LABELS, thresholds)
    for g in ratio_summary(con, q).groups:
        labels = {k: g.keys[k] for k in GROUP_LABELS}
        f["advisor_gpu_jobs"].add(g.jobs, **labels)
        f["advisor_gpu_hours"].add(g.gpu_hours, **labels)
        f["advisor_cores_per_gpu_p25"].add(g.p25_cores_per_gpu, **labels)
        f["advisor_cores_per_gpu_p50"].add(g.p50_cores_per_gpu, **labels)
        t = recs.get((g.keys["partition"], g.keys["gpu_type"]))
        if t is not None:
            f["advisor_recommended_cores_per_gpu"].add(t, **labels)
            f["advisor_share_jobs_below_recommendation"].add(g.share_jobs_below[t], **labels)
            f["advisor_share_gpu_hours_below_recommendation"].add(
                g.share_gpu_hours_below[t], **labels
            )


def _losses(
    con: duckdb.DuckDBPyConnection,
    f: dict[str, Family],
    month: Month,
    cluster: str,
    inputs: ReportInputs,
) -> None:
    """One cluster's lost GPU-hours and dollars per partition and GPU type, with intervals."""
    from advisor.report import starvation_estimates

    for e in starvation_estimates(con, month, cluster, inputs):
        labels = {"cluster": cluster, "partition": e.partition, "gpu_type": e.gpu_type}
        f["advisor_gpu_hours_lost"].add(e.gpu_hours_lost, **labels)
        f["advisor_gpu_hours_lost_low"].add(e.gpu_hours_lost_interval[0], **labels)
        f["advisor_gpu_hours_lost_high"].add(e.gpu_hours_lost_interval[1], **labels)
        f["advisor_gpu_hours_lost_usd"].add(e.usd_lost, **labels)
        usd = e.usd_lost_interval
        if usd is not None:
            f["advisor_gpu_hours_lost_usd_low"].add(usd[0], **labels)
            f["advisor_gpu_hours_lost_usd_high"].add(usd[1], **labels)
        f["advisor_fix_usd"].add(e.usd_to_fix, **labels)


def _pressure(con: Any, f: dict[str, Family], month: Any) -> None:
    """The month's measured CPU pressure per cluster and GPU type (docs/pressure.md): the share
    measured for every group, the rest only where a job was measured."""
    from advisor.pressure.summary import PressureQuery, pressure_groups

    q = PressureQuery(by=("cluster", "gpu_type"), start=month.start, end=month.end)
    for g in pressure_groups(con, q):
        labels = {"cluster": g["cluster"], "gpu_type": g["gpu_type"]}
        f["advisor_cpu_pressure_measured_gpu_hours_share"].add(g["share_measured"] or 0.0, **labels)
        if not g["jobs_measured"]:
            continue
        f["advisor_cpu_pressure_some_share"].add(g["some_share"], **labels)
        f["advisor_cpu_pressure_full_share"].add(g["full_share"], **labels)
        f["advisor_gpu_hours_held_by_cpu_wait_low"].add(g["held_gpu_hours_low"], **labels)
        f["advisor_gpu_hours_held_by_cpu_wait_high"].add(g["held_gpu_hours_high"], **labels)


def collect_config(cfg: MetricsConfig, progress: ProgressFn = no_progress) -> list[Family]:
    """:func:`collect` over the database of ``cfg``, or over its Parquet dataset."""
    if cfg.parquet is None:
        store.connect(cfg.db, read_only=True).close()  # the store's message for a missing file
        return collect(store.resolve_db_path(cfg.db), cfg, progress=progress)
    from advisor.export import dataset_as_db

    with dataset_as_db(cfg.parquet) as path:
        return collect(path, cfg, progress=progress)


class _Collector:
    """prometheus_client's collector protocol over :func:`collect_config`, so that a served
    endpoint recomputes on every scrape."""

    def __init__(self, cfg: MetricsConfig) -> None:
        self.cfg = cfg

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        for fam in collect_config(self.cfg):
            names = sorted({k for s in fam.samples for k in s.labels})
            gauge = GaugeMetricFamily(fam.name, fam.help, labels=names)
            for s in fam.samples:
                gauge.add_metric([s.labels.get(k, "") for k in names], s.value)
            yield gauge


def _registry(cfg: MetricsConfig) -> Any:
    from prometheus_client import CollectorRegistry

    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Collector(cfg))
    return registry


def exposition(cfg: MetricsConfig) -> str:
    """The metrics in Prometheus' text exposition format."""
    from prometheus_client import generate_latest

    return generate_latest(_registry(cfg)).decode("utf-8")


def write_textfile(cfg: MetricsConfig, path: str | os.PathLike[str]) -> None:
    """Write the metrics for node_exporter's textfile collector (``*.prom``), atomically."""
    from prometheus_client import write_to_textfile

    target = Path(path)
    if target.parent and not target.parent.is_dir():
        from advisor.errors import NotFoundError

        raise NotFoundError(f"--out {path}: no such folder {target.parent}")
    write_to_textfile(str(target), _registry(cfg))


def serve(cfg: MetricsConfig, port: int, address: str = "127.0.0.1") -> None:
    """Serve ``/metrics`` on ``address:port`` until interrupted (recomputed per scrape; many
    clients at once, see advisor.serving.httpserve)."""
    from prometheus_client import make_wsgi_app

    from advisor.errors import UsageError
    from advisor.serving.httpserve import serve_forever

    if not 0 < port < 65536:
        raise UsageError(f"--serve {port}: must be between 1 and 65535")
    collect_config(cfg)  # fail now, with the store's message, rather than on the first scrape
    serve_forever(make_wsgi_app(_registry(cfg)), address, port)


def families_as_rows(families: Sequence[Family]) -> list[dict[str, Any]]:
    """One row per sample (name, labels, value), for ``--format json``."""
    return [
        {"name": fam.name, "labels": dict(s.labels), "value": s.value}
        for fam in families
        for s in fam.samples
    ]
