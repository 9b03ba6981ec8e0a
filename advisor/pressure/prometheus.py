"""Per-job CPU pressure read from a Prometheus server that already scrapes it (CEEMS'
``ceems_compute_unit_cpu_psi_seconds``, or a cgroup exporter's PSI counter), written as the node
collector's records (:mod:`advisor.pressure.collector`), so ``advisor ingest`` loads both alike.

One instant query per metric over the HTTP API (``/api/v1/query``): the counter's largest value
over the period (``max_over_time(METRIC[Ns])`` at its end), which for a counter that only grows
is its last value; one record per (job, host) series. Metric and label names are options, since
each exporter names them its own way.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import ExternalToolError, InputError, UsageError
from advisor.pressure.collector import append_records, record


@dataclass(frozen=True)
class PrometheusImport:
    """Where and what to read: server URL, the period (UTC), metric and label names."""

    url: str
    start: dt.datetime
    end: dt.datetime
    some_metric: str = "ceems_compute_unit_cpu_psi_seconds"
    full_metric: str | None = None
    job_label: str = "uuid"
    host_label: str = "hostname"
    cluster: str | None = None
    selector: str = ""  # extra label matchers, e.g. manager="slurm"
    timeout_s: float = 30.0

    def check(self) -> None:
        if not self.url.startswith(("http://", "https://")):
            raise UsageError(f"--url {self.url!r}: give http://HOST:PORT of the Prometheus server")
        if self.end <= self.start:
            raise UsageError("--end must be after --start")
        for name in (self.some_metric, self.full_metric, self.job_label, self.host_label):
            if name is not None and not name.replace("_", "a").replace(":", "a").isalnum():
                raise UsageError(f"{name!r} is not a Prometheus metric or label name")


def _query(imp: PrometheusImport, metric: str) -> list[dict[str, Any]]:
    import httpx

    seconds = max(1, int((imp.end - imp.start).total_seconds()))
    matchers = f"{{{imp.selector}}}" if imp.selector else ""
    promql = f"max_over_time({metric}{matchers}[{seconds}s])"
    end = imp.end.replace(tzinfo=dt.UTC) if imp.end.tzinfo is None else imp.end
    try:
        resp = httpx.get(
            imp.url.rstrip("/") + "/api/v1/query",
            params={"query": promql, "time": f"{end.timestamp():.3f}"},
            timeout=imp.timeout_s,
        )
    except httpx.HTTPError as exc:
        raise ExternalToolError(f"{imp.url}: Prometheus did not answer ({exc})") from exc
    try:
        body = resp.json()
    except ValueError as exc:
        raise ExternalToolError(
            f"{imp.url}: HTTP {resp.status_code}, not a Prometheus JSON answer"
        ) from exc
    if not isinstance(body, dict) or body.get("status") != "success":
        err = body.get("error") if isinstance(body, dict) else None
        raise ExternalToolError(f"{imp.url}: query {promql!r} failed: {err or resp.status_code}")
    data = body.get("data") or {}
    if data.get("resultType") != "vector" or not isinstance(data.get("result"), list):
        raise InputError(f"{imp.url}: query {promql!r}: expected an instant vector")
    return list(data["result"])


def _series(imp: PrometheusImport, metric: str) -> dict[tuple[str, str], tuple[float, float]]:
    """(job id, host) -> (sample time, value in seconds) of each series with a job label."""
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for item in _query(imp, metric):
        labels = item.get("metric") or {}
        job = str(labels.get(imp.job_label) or "")
        value = item.get("value") or []
        if not job.isdigit() or len(value) != 2:
            continue  # a series of another kind of unit (a pod, a VM), or malformed
        try:
            t, v = float(value[0]), float(value[1])
        except (TypeError, ValueError):
            continue
        if not math.isfinite(v) or v < 0:
            continue
        out[(job, str(labels.get(imp.host_label) or "unknown"))] = (t, v)
    return out


def import_prometheus(imp: PrometheusImport, out: Path) -> int:
    """Append one record per (job, host) series to ``out``; returns how many."""
    imp.check()
    some = _series(imp, imp.some_metric)
    full = _series(imp, imp.full_metric) if imp.full_metric else {}
    records: list[dict[str, Any]] = []
    for (job, host), (t, value) in sorted(some.items()):
        at = dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        records.append(
            record(
                host=host,
                cluster=imp.cluster,
                job_id=job,
                collected_at=at,
                some_s=value,
                full_s=min(full[(job, host)][1], value) if (job, host) in full else None,
                source=f"prometheus:{imp.some_metric}",
            )
        )
    append_records(out, records)
    return len(records)
