"""Per-job CPU pressure read from a Prometheus server that already scrapes it (CEEMS'
``ceems_compute_unit_cpu_psi_seconds``, or a cgroup exporter's PSI counter), written as the node
collector's records (:mod:`advisor.pressure.collector`), so ``advisor ingest`` loads both alike.

Two instant queries per metric over the HTTP API (``/api/v1/query``) at the period's end: the
counter's largest value over the period (``max_over_time(METRIC[Ns])``, for a counter that only
grows its last value), and the time of the series' last sample in the period
(``max_over_time(timestamp(METRIC)[Ns:60s])``), which stamps the record: a job's counter stops
when its cgroup goes, so its record falls at its end, where the fold onto jobs looks for it.
One record per (job, host) series. Metric and label names are options, since each exporter names
them its own way. Every item of the answer is checked: a malformed one is skipped and counted,
never a traceback; the server's own error text is shown with its control characters escaped.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import ExternalToolError, InputError, UsageError
from advisor.pressure.collector import SLURM_JOB_ID, append_records, record

_HOST = re.compile(r"[A-Za-z0-9_.:-]{1,255}", re.ASCII)
_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*", re.ASCII)
# a cgroup's counter never exceeds its age: ten years of seconds bounds any real one
MAX_SECONDS = 10 * 365 * 86400.0
EARLIEST = dt.datetime(2000, 1, 1, tzinfo=dt.UTC)
STEP_S = 60  # the subquery's step for the last sample's time: within Prometheus' 5 min look-back
MAX_SERIES = 2_000_000


def printable(text: str, limit: int = 300) -> str:
    """``text`` with its control characters escaped and cut to ``limit``: a server's words
    reach the terminal, never its escape sequences."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in text[:limit])
    return out + ("..." if len(text) > limit else "")


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
        import httpx

        try:
            parsed = httpx.URL(self.url)
        except (httpx.InvalidURL, ValueError, TypeError) as exc:
            raise UsageError(f"--url {printable(self.url)!r}: not a URL ({exc})") from exc
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise UsageError(
                f"--url {printable(self.url)!r}: give http://HOST:PORT of the Prometheus server"
            )
        if self.end <= self.start:
            raise UsageError("--end must be after --start")
        for name in (self.some_metric, self.full_metric, self.job_label, self.host_label):
            if name is not None and not _NAME.fullmatch(name):
                raise UsageError(f"{printable(name)!r} is not a Prometheus metric or label name")


@dataclass
class Skipped:
    """Series of the answer that became no record, by reason."""

    not_a_job: int = 0
    malformed: int = 0
    no_time: int = 0

    def total(self) -> int:
        return self.not_a_job + self.malformed + self.no_time


def _utc(t: dt.datetime) -> dt.datetime:
    return t.replace(tzinfo=dt.UTC) if t.tzinfo is None else t.astimezone(dt.UTC)


def _query(imp: PrometheusImport, promql: str) -> Iterator[Any]:
    """The items of an instant vector, one at a time (see :func:`_items`)."""
    import httpx

    try:
        resp = httpx.get(
            imp.url.rstrip("/") + "/api/v1/query",
            params={"query": promql, "time": f"{_utc(imp.end).timestamp():.3f}"},
            timeout=imp.timeout_s,
        )
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as exc:
        raise ExternalToolError(
            f"{printable(imp.url)}: Prometheus did not answer ({printable(str(exc))})"
        ) from exc
    where = f"{printable(imp.url)}: query {promql!r}"
    try:
        text = resp.text
        streamed = _items(text, where)
        if streamed is not None:
            return streamed
        body = json.loads(text)
    except ValueError as exc:
        raise ExternalToolError(
            f"{printable(imp.url)}: HTTP {resp.status_code}, not a Prometheus JSON answer"
        ) from exc
    if not isinstance(body, dict) or body.get("status") != "success":
        err = body.get("error") if isinstance(body, dict) else None
        why = printable(str(err)) if err else f"HTTP {resp.status_code}"
        raise ExternalToolError(f"{where} failed: {why}")
    data = body.get("data")
    if (
        not isinstance(data, dict)
        or data.get("resultType") != "vector"
        or not isinstance(data.get("result"), list)
    ):
        raise InputError(f"{where}: expected an instant vector")
    if len(data["result"]) > MAX_SERIES:
        raise InputError(_too_many(where, len(data["result"])))
    return iter(data["result"])


def _too_many(where: str, n: int) -> str:
    return (
        f"{where}: {n:,} series or more, more than {MAX_SERIES:,}: import a shorter period or "
        "narrow --selector"
    )


_VECTOR_HEAD = re.compile(
    r'\s*\{\s*"status"\s*:\s*"success"\s*,\s*"data"\s*:\s*\{\s*"resultType"\s*:\s*"vector"'
    r'\s*,\s*"result"\s*:\s*\['
)


def _items(text: str, where: str) -> Iterator[Any] | None:
    """The items of a successful instant-vector answer laid out as Prometheus writes it
    (status, then data: resultType, then result), decoded one at a time: the whole answer as
    Python objects took 2.1 GB for a million series. None for any other layout (an error, a
    matrix, another server's order), which the caller reads whole."""
    head = _VECTOR_HEAD.match(text)
    if head is None:
        return None
    decoder = json.JSONDecoder()

    def gen() -> Iterator[Any]:
        pos, n = head.end(), 0
        while True:
            while pos < len(text) and text[pos] in " \t\r\n,":
                pos += 1
            if pos >= len(text):
                raise ExternalToolError(f"{where}: the answer ends inside its result")
            if text[pos] == "]":
                return
            n += 1
            if n > MAX_SERIES:
                raise InputError(_too_many(where, n))
            try:
                item, pos = decoder.raw_decode(text, pos)
            except ValueError as exc:
                raise ExternalToolError(f"{where}: not a Prometheus JSON answer ({exc})") from exc
            yield item

    return gen()


def _sample(
    item: Any, imp: PrometheusImport, skipped: Skipped, most: float
) -> tuple[str, str, float] | None:
    """(job id, host, value from 0 to ``most``) of one item of an instant vector, or None
    (counted in ``skipped``)."""
    if not isinstance(item, dict) or not isinstance(item.get("metric"), dict):
        skipped.malformed += 1
        return None
    labels = item["metric"]
    job, host = labels.get(imp.job_label), labels.get(imp.host_label, "unknown")
    # anything but a Slurm job id is another kind of unit (a pod, a VM)
    if not isinstance(job, str) or not SLURM_JOB_ID.fullmatch(job):
        skipped.not_a_job += 1
        return None
    value = item.get("value")
    if not isinstance(host, str) or not _HOST.fullmatch(host):
        skipped.malformed += 1
        return None
    if not isinstance(value, list) or len(value) != 2 or not isinstance(value[1], str):
        skipped.malformed += 1
        return None
    try:
        v = float(value[1])
    except ValueError:
        skipped.malformed += 1
        return None
    if not (math.isfinite(v) and 0 <= v <= most):
        skipped.malformed += 1
        return None
    return job, host, v


def _series(
    imp: PrometheusImport, promql: str, skipped: Skipped, most: float = MAX_SECONDS
) -> dict[tuple[str, str], float]:
    """(job id, host) -> the value of each well-formed series of a job."""
    out: dict[tuple[str, str], float] = {}
    for item in _query(imp, promql):
        got = _sample(item, imp, skipped, most)
        if got is not None:
            out[(got[0], got[1])] = got[2]
    return out


def _queries(imp: PrometheusImport, metric: str) -> tuple[str, str]:
    """The PromQL of a counter's value over the period and of its last sample's time."""
    seconds = max(1, int((imp.end - imp.start).total_seconds()))
    selected = f"{metric}{{{imp.selector}}}" if imp.selector else metric
    return (
        f"max_over_time({selected}[{seconds}s])",
        f"max_over_time(timestamp({selected})[{seconds}s:{STEP_S}s])",
    )


def import_prometheus(imp: PrometheusImport, out: Path) -> tuple[int, Skipped]:
    """Append one record per (job, host) series to ``out``; returns how many, and the series
    skipped by reason."""
    imp.check()
    skipped = Skipped()
    value_q, time_q = _queries(imp, imp.some_metric)
    some = _series(imp, value_q, skipped)
    times = _series(imp, time_q, Skipped(), most=math.inf)
    full = _series(imp, _queries(imp, imp.full_metric)[0], Skipped()) if imp.full_metric else {}
    lo, hi = max(_utc(imp.start), EARLIEST).timestamp(), _utc(imp.end).timestamp()
    records: list[dict[str, Any]] = []
    for key, value in sorted(some.items()):
        t = times.get(key)
        if t is None or not lo <= t <= hi:
            skipped.no_time += 1
            continue
        at = dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        records.append(
            record(
                host=key[1],
                cluster=imp.cluster,
                job_id=key[0],
                collected_at=at,
                some_s=value,
                full_s=min(full[key], value) if key in full else None,
                source=f"prometheus:{imp.some_metric}",
            )
        )
    try:
        append_records(out, records)
    except OSError as exc:
        raise InputError(f"cannot append to it ({exc.strerror or exc})", source=str(out)) from exc
    return len(records), skipped
