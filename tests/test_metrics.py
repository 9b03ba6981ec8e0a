"""``advisor metrics``: Prometheus text exposition, parsed with prometheus_client's own parser and
checked against ``advisor ratios --format json`` and the report's own functions; the ``--serve``
mode as a real HTTP server process scraped once over loopback."""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor import report, store
from tests.conftest import SAMPLE

MONTH = "2024-06"
GROUP = ("cluster", "partition", "gpu_type")


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory) -> Path:
    from advisor.ingest import ingest_files

    db = tmp_path_factory.mktemp("metrics") / "sample.duckdb"
    ingest_files(str(db), [SAMPLE / "sacct-synth.txt.gz"])
    return db


def _samples(text: str) -> dict[str, dict[tuple, float]]:
    """{metric name: {label values in GROUP order (or all labels sorted): value}}."""
    out: dict[str, dict[tuple, float]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge", family.name
        for s in family.samples:
            key = (
                tuple(s.labels.get(k, "") for k in GROUP)
                if "gpu_type" in s.labels
                else tuple(sorted(s.labels.items()))
            )
            out.setdefault(s.name, {})[key] = s.value
    return out


def _metrics(cli, *args: str) -> dict[str, dict[tuple, float]]:
    code, out, err = cli("metrics", *args)
    assert code == 0, err
    return _samples(out)


def test_percentiles_and_job_counts_match_advisor_ratios_json(cli, sample_db):
    got = _metrics(cli, "--db", str(sample_db), "--month", MONTH)
    code, out, err = cli(
        "ratios",
        "--by",
        "cluster,partition,gpu_type",
        "--start",
        "2024-06-01",
        "--end",
        "2024-07-01",
        "--db",
        str(sample_db),
        "--format",
        "json",
    )
    assert code == 0, err
    groups = json.loads(out)
    assert len(groups) == 5
    assert got["advisor_month_info"] == {(("month", MONTH),): 1.0}
    for g in groups:
        key = tuple(g[k] for k in GROUP)
        assert got["advisor_cores_per_gpu_p25"][key] == g["p25"]
        assert got["advisor_cores_per_gpu_p50"][key] == g["p50"]
        assert got["advisor_gpu_jobs"][key] == g["jobs"]
        assert got["advisor_gpu_hours"][key] == pytest.approx(g["gpu_hours"])
    teaching_h100 = ("teaching", "gpu-h100", "H100")
    assert got["advisor_cores_per_gpu_p25"][teaching_h100] == 0.25


def test_the_share_below_and_the_hours_lost_are_the_reports_numbers(cli, sample_db):
    got = _metrics(cli, "--db", str(sample_db), "--month", MONTH)
    month = report.parse_month(MONTH)
    inputs = report.load_inputs(report.ReportConfig(out_dir=Path("."), month=MONTH), sample_db)
    recs = {(r.partition, r.gpu_type): float(r.def_cpu_per_gpu) for r in inputs.recommendations}
    con = store.connect(sample_db, read_only=True)
    try:
        for cluster in ("teaching", "research"):
            estimates = report.starvation_estimates(con, month, cluster, inputs)
            assert estimates
            for e in estimates:
                key = (cluster, e.partition, e.gpu_type)
                assert got["advisor_gpu_hours_lost"][key] == pytest.approx(e.gpu_hours_lost)
                assert got["advisor_gpu_hours_lost_usd"][key] == pytest.approx(e.usd_lost)
                assert got["advisor_gpu_hours_lost"][key] > 0
                # the ends of the 90% interval, around the point, in GPU-hours and dollars
                lo, hi = e.gpu_hours_lost_interval
                assert got["advisor_gpu_hours_lost_low"][key] == pytest.approx(lo)
                assert got["advisor_gpu_hours_lost_high"][key] == pytest.approx(hi)
                assert lo <= e.gpu_hours_lost <= hi and lo < hi
                usd = got["advisor_gpu_hours_lost_usd_high"][key]
                assert usd == pytest.approx(hi * e.usd_per_gpu_hour)
    finally:
        con.close()
    # whether the curve was calibrated on each GPU type: of the sample's, H100 alone (the
    # 2026-12-06 runs)
    calibrated = got["advisor_gpu_type_calibrated"]
    assert {k[2] for k in calibrated} == {r.gpu_type for r in inputs.recommendations}
    assert {k[2] for k, v in calibrated.items() if v == 1.0} == {"H100"}
    assert {k[2] for k, v in calibrated.items() if v == 0.0} == {"A100", "L40S"}
    assert got["advisor_data_age_seconds"]  # the data's age, per cluster
    # The share below: `advisor ratios` with the recommendation as its threshold.
    for key, share in got["advisor_share_jobs_below_recommendation"].items():
        cluster, partition, gpu_type = key
        t = recs[(partition, gpu_type)]
        assert got["advisor_recommended_cores_per_gpu"][key] == t
        code, out, _ = cli(
            "ratios",
            "--by",
            "",
            "--cluster",
            cluster,
            "--partition",
            partition,
            "--gpu-type",
            gpu_type,
            "--thresholds",
            str(t),
            "--start",
            "2024-06-01",
            "--end",
            "2024-07-01",
            "--db",
            str(sample_db),
            "--format",
            "json",
        )
        (whole,) = json.loads(out)
        assert share == whole[f"share_jobs_below_{t:g}"]
    assert got["advisor_share_jobs_below_recommendation"][("teaching", "gpu-h100", "H100")] > 0.5


def test_freshness_and_rejects_come_from_the_data_status(cli, sample_db, tmp_path):
    bad = tmp_path / "bad.txt"
    lines = (SAMPLE / "slurm" / "sacct-P-wide.txt").read_text().splitlines()
    bad.write_text("\n".join([lines[0], "this|is|not|a|record", *lines[1:3]]) + "\n")
    db = tmp_path / "fresh.duckdb"
    shutil.copy2(sample_db, db)
    cli("ingest", str(bad), "--db", str(db))
    got = _metrics(cli, "--db", str(db), "--month", MONTH)
    code, out, _ = cli("data", "status", "--db", str(db), "--format", "json")
    status = json.loads(out)
    for c in status["clusters"]:
        newest = max(t for t in (c["last_submit"], c["last_end"]) if t)
        stamp = got["advisor_newest_record_timestamp_seconds"][(("cluster", c["cluster"]),)]
        assert stamp == pytest.approx(_epoch(newest))
        age = got["advisor_data_age_seconds"][(("cluster", c["cluster"]),)]
        assert 0 < time.time() - stamp - age < 600  # age is measured from the scrape's "now"
    assert got["advisor_ingest_rejects"][()] == status["rejected_records"] > 0
    assert sum(got["advisor_ingest_rejects_by_reason"].values()) == status["rejected_records"]
    assert got["advisor_last_ingest_timestamp_seconds"]


def _epoch(text: str) -> float:
    t = dt.datetime.fromisoformat(text)
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()


def test_out_writes_a_textfile_for_node_exporter_and_json_lists_the_same_samples(
    cli, sample_db, tmp_path
):
    prom = tmp_path / "advisor.prom"
    code, out, err = cli("metrics", "--db", str(sample_db), "--month", MONTH, "--out", str(prom))
    assert code == 0 and out == "", err
    from_file = _samples(prom.read_text())
    code, out, err = cli("metrics", "--db", str(sample_db), "--month", MONTH, "--format", "json")
    rows = json.loads(out)
    assert len(rows) == sum(len(v) for v in from_file.values())
    p50 = {
        (r["labels"]["cluster"], r["labels"]["partition"], r["labels"]["gpu_type"]): r["value"]
        for r in rows
        if r["name"] == "advisor_cores_per_gpu_p50"
    }
    assert p50 == from_file["advisor_cores_per_gpu_p50"]


def test_bad_arguments_are_errors_not_tracebacks(cli, sample_db, tmp_path):
    code, _, err = cli("metrics", "--db", str(tmp_path / "none.duckdb"))
    assert code == 4 and err.startswith("Error: ")
    code, _, err = cli("metrics", "--db", str(sample_db), "--out", "x.prom", "--serve", "9")
    assert code == 2 and "not both" in err
    code, _, err = cli("metrics", "--db", str(sample_db), "--out", "x.prom", "--format", "json")
    assert code == 2 and "stdout" in err and not Path("x.prom").exists()
    code, _, err = cli("metrics", "--db", str(sample_db), "--month", "June")
    assert code == 2 and "--month" in err


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def _serving(sample_db: Path, cwd: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, str]]:
    """``advisor metrics --serve`` on a free loopback port in a process group of its own, once it
    has answered a scrape (200, text/plain, within 120 s): the process, its port and that first
    answer's body. Stopped with SIGTERM on leaving."""
    port = _free_port()
    env = {**os.environ, "ADVISOR_DB": str(sample_db)}
    server = subprocess.Popen(
        [sys.executable, "-m", "advisor", "metrics", "--serve", str(port), "--month", MONTH],
        env=env,
        cwd=cwd,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        body, deadline = None, time.monotonic() + 120
        while body is None and time.monotonic() < deadline and server.poll() is None:
            try:
                url = f"http://127.0.0.1:{port}/metrics"
                with urllib.request.urlopen(url, timeout=30) as resp:  # noqa: S310 (loopback)
                    assert resp.status == 200
                    assert resp.headers["Content-Type"].startswith("text/plain")
                    body = resp.read().decode()
            except OSError:
                time.sleep(0.3)
        assert body is not None, server.stderr.read().decode() if server.poll() is not None else ""
        yield server, port, body
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)


def test_serve_answers_a_scrape_over_loopback_then_stops(sample_db, tmp_path):
    with _serving(sample_db, tmp_path) as (server, _, body):
        got = _samples(body)
    assert got["advisor_cores_per_gpu_p25"][("teaching", "gpu-h100", "H100")] == 0.25
    assert server.returncode is not None


def _scrape(port: int, timeout: float = 60) -> tuple[int, str]:
    url = f"http://127.0.0.1:{port}/metrics"
    with urllib.request.urlopen(url, timeout=timeout) as resp:  # noqa: S310 (loopback)
        return resp.status, resp.read().decode()


def test_serve_answers_a_burst_of_scrapes_while_a_client_sends_half_a_request(sample_db, tmp_path):
    from concurrent.futures import ThreadPoolExecutor

    from advisor.serving.httpserve import READ_TIMEOUT_S

    slow = socket.socket()
    with _serving(sample_db, tmp_path) as (server, port, _):
        try:
            # a client that sends half a request line and waits (the server must not wait with it)
            slow.connect(("127.0.0.1", port))
            slow.sendall(b"GET /metr")
            with ThreadPoolExecutor(max_workers=200) as pool:
                answers = list(pool.map(lambda _: _scrape(port), range(200)))
            assert [status for status, _ in answers] == [200] * 200
            assert all("advisor_cores_per_gpu_p25" in body for _, body in answers)
            # the same figures in every answer; the data's age is measured at each scrape (a scrape
            # not in flight with another computes its own), so it grows by the seconds between them
            first, last = _samples(answers[0][1]), _samples(answers[-1][1])
            age_first, age_last = (
                first.pop("advisor_data_age_seconds"),
                last.pop("advisor_data_age_seconds"),
            )
            assert last == first
            assert age_first.keys() == age_last.keys()
            assert all(abs(age_last[k] - age_first[k]) < 120 for k in age_first)
            # the half-sent request is dropped once its time is up: the server closes the socket
            slow.settimeout(READ_TIMEOUT_S + 30)
            assert slow.recv(1024) == b""
            assert server.poll() is None  # still serving
            assert _scrape(port)[0] == 200
        finally:
            slow.close()
    assert b"Traceback" not in server.stderr.read()


def test_identical_requests_in_flight_share_one_answer():
    import threading

    from advisor.serving.httpserve import shared_answers

    calls, release = [], threading.Event()

    def app(environ, start_response):
        calls.append(environ["PATH_INFO"])
        release.wait(10)
        start_response("200 OK", [("Content-Type", "text/plain")])
        return [f"n={len(calls)}".encode()]

    shared = shared_answers(app)
    got: list[tuple[str, bytes]] = []

    def request(path: str) -> None:
        status: list[str] = []
        body = b"".join(shared({"PATH_INFO": path}, lambda s, h: status.append(s)))
        got.append((status[0], body))

    threads = [threading.Thread(target=request, args=("/metrics",)) for _ in range(5)]
    other = threading.Thread(target=request, args=("/other",))
    for t in threads:
        t.start()
    other.start()
    while len(calls) < 2:  # the two distinct requests are being computed
        time.sleep(0.01)
    release.set()
    for t in [*threads, other]:
        t.join(10)
    assert sorted(calls) == ["/metrics", "/other"]
    assert len(got) == 6 and {status for status, _ in got} == {"200 OK"}
    # once answered, the next identical request computes afresh
    request("/metrics")
    assert calls.count("/metrics") == 2


def test_the_grafana_dashboard_plots_only_metrics_that_advisor_metrics_writes(cli, sample_db):
    import re

    code, out, _ = cli("metrics", "--db", str(sample_db), "--month", MONTH)
    families = {f.name: f for f in text_string_to_metric_families(out)}
    written = {name for name, f in families.items() if f.samples}
    dashboard = json.loads((Path(__file__).parent.parent / "grafana" / "advisor.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p["targets"]]
    exprs += [v["definition"] for v in dashboard["templating"]["list"] if "definition" in v]
    used = {m for e in exprs for m in re.findall(r"\badvisor_[a-z0-9_]+", e)}
    assert used - set(families) == set(), "the dashboard names metrics advisor does not write"
    plotted = {
        "advisor_cores_per_gpu_p25",
        "advisor_cores_per_gpu_p50",
        "advisor_share_jobs_below_recommendation",
        "advisor_gpu_hours_lost",
        "advisor_gpu_hours_lost_usd",
        "advisor_data_age_seconds",
        "advisor_last_ingest_timestamp_seconds",
        "advisor_ingest_rejects",
    }
    assert plotted <= used and plotted - {"advisor_ingest_rejects"} <= written
    # Every label a panel filters on is one the metrics carry.
    labels = {k for f in families.values() for s in f.samples for k in s.labels}
    for e in exprs:
        assert set(re.findall(r"(\w+)=~", e)) <= labels, e
