"""CPU pressure of jobs: the node collector on a real cgroup v2 tree shaped as Slurm makes it
(these machines mount one at /sys/fs/cgroup/unified beside the v1 controllers), the spool file,
its ingest into a real DuckDB file (bad records rejected one by one), the fold onto jobs, the
summary by cores per GPU, and the Prometheus import against a real HTTP server serving answers
in the query API's documented shape. Nothing is mocked.
"""

from __future__ import annotations

import datetime as dt
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from advisor.pressure.collector import (
    collect,
    count_cpus,
    find_cgroups,
    parse_cpu_stat,
    parse_pressure,
)
from tests.bench_fixtures import CPUS

ROOT = Path(__file__).resolve().parent.parent
UNIFIED = Path("/sys/fs/cgroup/unified")
BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def _adv(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The advisor command line on database ``db``, as a user runs it."""
    cmd = [sys.executable, "-m", "advisor", *args, "--db", str(db)]
    return subprocess.run(cmd, capture_output=True, text=True)


def _writable_cgroup_v2() -> bool:
    return os.geteuid() == 0 and (UNIFIED / "cpu.pressure").exists() and os.access(UNIFIED, os.W_OK)


@pytest.fixture
def slurm_tree() -> Iterator[Path]:
    """A Slurm-shaped job cgroup (``system.slice/slurmstepd.scope/job_42/step_0``) in a real
    cgroup v2 hierarchy, removed afterwards."""
    if not _writable_cgroup_v2():
        pytest.skip("needs root and a writable cgroup v2 tree at /sys/fs/cgroup/unified")
    root = UNIFIED / f"advisor-test-{os.getpid()}"
    step = root / "system.slice" / "slurmstepd.scope" / "job_42" / "step_0"
    step.mkdir(parents=True)
    try:
        yield root
    finally:
        for d in sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            for pid in (d / "cgroup.procs").read_text().split():
                (UNIFIED / "cgroup.procs").write_text(pid)
            d.rmdir()
        root.rmdir()


def _in_cgroup(cg: Path, code: str) -> subprocess.Popen[bytes]:
    p = subprocess.Popen(["taskset", "-c", str(CPUS[0]), sys.executable, "-c", code])
    (cg / "cgroup.procs").write_text(str(p.pid))
    return p


@pytest.mark.xdist_group("cpu-pinned")
def test_two_busy_loops_on_one_core_in_a_job_cgroup_read_as_stalled_nearly_all_the_time(
    slurm_tree: Path,
):
    job = slurm_tree / "system.slice" / "slurmstepd.scope" / "job_42"
    before = parse_pressure((job / "cpu.pressure").read_text())
    before_usage = parse_cpu_stat((job / "cpu.stat").read_text()).get("usage_usec", 0) / 1e6
    t0 = time.monotonic()
    loops = [_in_cgroup(job / "step_0", BURN.format(s=2.0)) for _ in range(2)]
    for p in loops:
        p.wait()
    wall = time.monotonic() - t0
    recs, log = collect(slurm_tree, host="h", cluster="c", max_ms=1000)
    assert log == []
    by_step = {r["step"]: r for r in recs}
    assert set(by_step) == {None, "0"}
    job_rec = by_step[None]
    assert job_rec["job_id"] == "42" and job_rec["status"] == "ok"
    some = job_rec["some_s"] - before["some_s"]
    # one core, two runnable loops: one of them waits whenever the other runs
    assert some / wall > 0.6, (some, wall)
    # all of them are stalled together only while neither runs: at most the wall time the
    # cgroup got no CPU (other tests' processes may share the core on a busy machine)
    full = (job_rec["full_s"] or 0.0) - before.get("full_s", 0.0)
    usage = job_rec["usage_s"] - before_usage
    assert job_rec["usage_s"] is not None and usage > 0.2 * wall
    assert full <= wall - usage + 0.1 * wall, (full, wall, usage)


@pytest.mark.xdist_group("cpu-pinned")
def test_a_sleeping_job_reads_as_not_stalled(slurm_tree: Path):
    step = slurm_tree / "system.slice" / "slurmstepd.scope" / "job_42" / "step_0"
    p = subprocess.Popen(
        ["taskset", "-c", str(CPUS[0]), sys.executable, "-c",
         "import sys, time; sys.stdin.readline(); time.sleep(1.0)"],
        stdin=subprocess.PIPE,
    )  # fmt: skip
    (step / "cgroup.procs").write_text(str(p.pid))
    time.sleep(0.5)  # the interpreter's start (which may wait for a busy core) is over

    def job_some() -> float:
        recs = collect(slurm_tree, host="h", cluster=None)[0]
        (rec,) = [r for r in recs if r["step"] is None]
        return float(rec["some_s"])

    before = job_some()
    assert p.stdin is not None
    p.stdin.write(b"go\n")
    p.stdin.close()
    p.wait()
    # a second asleep: nothing of the job was runnable, so nothing waited
    assert job_some() - before < 0.05


def test_the_node_script_runs_without_the_package_appends_atomically_and_never_fails(
    tmp_path: Path,
):
    # a copy of the collector alone, run by a Python that cannot import advisor
    script = tmp_path / "collector.py"
    shutil.copy(ROOT / "advisor" / "pressure" / "collector.py", script)
    tree = tmp_path / "cg"
    job = tree / "system.slice" / "node7_slurmstepd.scope" / "job_9001"
    (job / "step_batch").mkdir(parents=True)
    (tree / "cgroup.controllers").write_text("cpuset cpu\n")
    (job / "cpu.pressure").write_text(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=2500000\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=500000\n"
    )
    (job / "cpu.stat").write_text("usage_usec 9000000\nnr_throttled 3\nthrottled_usec 1000\n")
    (job / "cpuset.cpus.effective").write_text("0-3,8\n")
    spool = tmp_path / "spool" / "pressure.jsonl"
    env = {"PATH": os.environ["PATH"], "SLURM_CLUSTER_NAME": "gpu"}
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-I", str(script), "--cgroup-root", str(tree), "--out", str(spool)],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
    lines = spool.read_text().splitlines()
    recs = [json.loads(x) for x in lines]
    assert len(recs) == 4  # the job and its batch step, twice
    job_rec = recs[0]
    assert job_rec["schema"] == "advisor.pressure/1" and job_rec["cluster"] == "gpu"
    assert (job_rec["job_id"], job_rec["step"], job_rec["node_prefix"]) == ("9001", None, "node7")
    assert (job_rec["some_s"], job_rec["full_s"], job_rec["usage_s"]) == (2.5, 0.5, 9.0)
    assert (job_rec["cpus"], job_rec["cpu_count"], job_rec["nr_throttled"]) == ("0-3,8", 5, 3)
    step = recs[1]
    assert step["step"] == "batch" and step["status"] == "unavailable"
    assert "cpu.pressure" in step["errors"][0]
    # a cgroup v1 node, a bad option, an unwritable spool: exit 0, one log line, job untouched
    for args in (
        ["--cgroup-root", str(tmp_path / "nothing"), "--out", str(spool), "--job", "5"],
        ["--bogus"],
        ["--cgroup-root", str(tree), "--out", "/proc/not-writable/x"],
    ):
        done = subprocess.run(
            [sys.executable, "-I", str(script), *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 0
        assert done.stderr.splitlines()[-1].startswith("advisor-pressure-collect: ")
        assert "Traceback" not in done.stderr
    last = json.loads(spool.read_text().splitlines()[-1])
    assert (last["job_id"], last["status"]) == ("5", "unavailable")
    assert "no cgroup v2" in last["errors"][0]


def test_job_folders_are_found_under_any_scope_and_a_sluid_layout_by_pattern(tmp_path: Path):
    import re

    for scope in ("slurmstepd.scope", "n1_slurmstepd.scope"):
        (tmp_path / "system.slice" / scope / "job_7" / "step_extern").mkdir(parents=True)
    (tmp_path / "system.slice" / "slurmstepd.scope" / "sys").mkdir()
    found = [(c.job_id, c.step, c.node) for c in find_cgroups(tmp_path)]
    assert found == [
        ("7", None, "n1"),
        ("7", "extern", "n1"),
        ("7", None, None),
        ("7", "extern", None),
    ]
    (tmp_path / "system.slice" / "slurmstepd.scope" / "sluid_abc123").mkdir()
    sluid = re.compile(r"^sluid_(?P<job>[0-9a-z]+)$")
    assert [c.job_id for c in find_cgroups(tmp_path, job_pattern=sluid, steps=False)] == ["abc123"]
    assert count_cpus("0-3,8,10-11") == 7 and count_cpus("x") is None


def _record(job: str, at: dt.datetime, some: float, full: float, host: str = "n1", **kw) -> str:
    rec = {
        "schema": "advisor.pressure/1",
        "cluster": "teaching",
        "job_id": job,
        "step": None,
        "host": host,
        "collected_at": at.isoformat() + "Z",
        "status": "ok",
        "some_s": some,
        "full_s": full,
        "usage_s": 100.0,
        "cpus": "0-3",
        "cpu_count": 4,
    }
    rec.update(kw)
    return json.dumps(rec)


@pytest.fixture(scope="module")
def sample_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("pressure") / "a.duckdb"
    done = _adv(db, "ingest", str(ROOT / "data" / "sample" / "sacct-synth.txt.gz"))
    assert done.returncode == 0, done.stderr
    return db


def _gpu_jobs(db: Path, n: int) -> list[tuple[int, dt.datetime, int, float]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT job_id_raw, start, elapsed_s, cpus::DOUBLE / gpus FROM jobs "
            "WHERE cluster = 'teaching' AND gpus > 0 AND cpus > 0 AND elapsed_s > 3600 "
            "ORDER BY job_id_raw LIMIT ?",
            [n],
        ).fetchall()
    finally:
        con.close()


def test_ingest_loads_records_rejects_bad_lines_by_field_folds_them_and_is_idempotent(
    sample_db: Path, tmp_path: Path
):
    db = tmp_path / "copy.duckdb"
    shutil.copy(sample_db, db)
    (j1, s1, e1, _), (j2, s2, e2, _) = _gpu_jobs(db, 2)
    end1 = s1 + dt.timedelta(seconds=e1)
    lines = [
        _record(str(j1), s1 + dt.timedelta(seconds=e1 / 2), 0.1 * e1, 0.0),  # earlier, superseded
        _record(str(j1), end1, 0.3 * e1, 0.1 * e1),
        _record(str(j1), end1, 0.1 * e1, 0.0, host="n2"),
        _record(
            str(j2), s2 + dt.timedelta(seconds=e2), 0.0, 0.0, status="unavailable", some_s=None
        ),
        _record(str(j2), s2, 1.0, 2.0, host="n9"),  # full above some
        _record("abc", end1, 1.0, 0.0),
        _record(str(j1), end1, float("inf"), 0.0, host="n3").replace("Infinity", "1e999"),
        "{not json",
        _record(str(j1), dt.datetime(1999, 1, 1), 1.0, 0.0, host="n4"),
        _record(str(j1), end1, 1.0, 0.0, host="n5", schema="other/1"),
        # the epilog after the job, its cgroup gone: the agent's last reading stands
        _record(str(j1), end1 + dt.timedelta(seconds=20), 0, 0, status="unavailable", some_s=None),
    ]
    spool = tmp_path / "p.jsonl"
    spool.write_text("\n".join(lines) + "\n")
    first = _adv(db, "ingest", str(spool), "--format", "json")
    assert first.returncode == 0, first.stderr
    (s,) = json.loads(first.stdout)
    assert (s["format"], s["inserted"], s["rejected"]) == ("pressure", 5, 6)
    reasons = "\n".join(s["first_reasons"])
    assert "line 5, field full_s" in reasons and "line 6, field job_id" in reasons
    assert "line 7, field some_s" in reasons and "line 8, field (line)" in reasons
    again = json.loads(_adv(db, "ingest", str(spool), "--format", "json").stdout)[0]
    assert (again["inserted"], again["unchanged"]) == (0, 5)
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = con.execute(
            "SELECT job_id_raw, psi_status, psi_some_s, psi_full_s, psi_covered_s, psi_hosts "
            "FROM jobs WHERE job_id_raw IN (?, ?) ORDER BY job_id_raw",
            [j1, j2],
        ).fetchall()
        stored = con.execute(
            "SELECT field, line_no FROM rejects WHERE ingest_id = ? ORDER BY line_no",
            [s["ingest_id"]],
        ).fetchall()
    finally:
        con.close()
    # job 1: the latest record of each host, summed; covered = elapsed on each host
    assert got[0] == (j1, "measured", pytest.approx(0.4 * e1), pytest.approx(0.1 * e1),
                      pytest.approx(2 * e1), 2)  # fmt: skip
    assert got[1] == (j2, "unavailable", None, None, None, 0)
    assert [r[1] for r in stored] == [5, 6, 7, 8, 9, 10]
    assert [r[0] for r in stored][:4] == ["full_s", "job_id", "some_s", "(line)"]
    usage = _adv(
        db, "usage", "--jobs", "--verdict", "starved", "--limit", "100000", "--format", "json"
    )
    starved = {r["job_id_raw"]: r for r in json.loads(usage.stdout) if r["basis"] == "measured"}
    assert starved[j1]["psi_some_share"] == pytest.approx(0.2)
    assert starved[j1]["psi_full_share"] == pytest.approx(0.05)


def test_a_job_loaded_after_its_pressure_gets_it_and_a_reused_id_does_not(
    tmp_path: Path, sample_db: Path
):
    ((j, start, el, _),) = _gpu_jobs(sample_db, 1)
    db = tmp_path / "late.duckdb"
    spool = tmp_path / "p.jsonl"
    end = start + dt.timedelta(seconds=el)
    spool.write_text(
        _record(str(j), end, 0.5 * el, 0.0)
        + "\n"
        # the same id a year later: another job's run, which no stored job covers
        + _record(str(j), end + dt.timedelta(days=365), 9.0, 0.0, host="n2")
        + "\n"
    )
    assert _adv(db, "ingest", str(spool)).returncode == 0
    assert _adv(db, "ingest", str(ROOT / "data" / "sample" / "sacct-synth.txt.gz")).returncode == 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute(
            "SELECT psi_some_s, psi_hosts FROM jobs WHERE job_id_raw = ? AND cluster = 'teaching'",
            [j],
        ).fetchone()
    finally:
        con.close()
    assert row == (pytest.approx(0.5 * el), 1)


def test_the_summary_shows_pressure_falling_with_cores_per_gpu_and_bounds_the_held_gpu_hours(
    tmp_path: Path, sample_db: Path
):
    from advisor.pressure.summary import PressureQuery, headline, pressure_summary

    db = tmp_path / "s.duckdb"
    shutil.copy(sample_db, db)
    jobs = _gpu_jobs(db, 400)
    lines = []
    for j, start, el, cpg in jobs:
        share = 0.4 if cpg < 2 else 0.1 if cpg < 4 else 0.01
        end = start + dt.timedelta(seconds=el)
        lines.append(_record(str(j), end, share * el, share * el / 4))
    spool = tmp_path / "p.jsonl"
    spool.write_text("\n".join(lines) + "\n")
    assert _adv(db, "ingest", str(spool)).returncode == 0
    rows = pressure_summary(db, PressureQuery(by=("cores_per_gpu_bin",), clusters=("teaching",)))
    measured = {r["cores_per_gpu_bin"]: r for r in rows if r["jobs_measured"]}
    bins = sorted(measured)
    shares = [measured[b]["some_share"] for b in bins]
    assert all(a >= b - 1e-9 for a, b in zip(shares, shares[1:], strict=False))
    assert shares[0] == pytest.approx(0.4) and shares[-1] == pytest.approx(0.01)
    one = measured[bins[0]]
    assert one["held_gpu_hours_high"] == pytest.approx(0.4 * one["gpu_hours_measured"])
    assert one["held_gpu_hours_low"] == pytest.approx(0.1 * one["gpu_hours_measured"])
    head = headline(rows)
    assert head["jobs_measured"] == len(jobs) and 0 < head["share_measured"] < 1
    out = _adv(db, "pressure", "summary", "--format", "json")
    assert out.returncode == 0 and json.loads(out.stdout)["total"]["jobs_measured"] == len(jobs)
    bad = _adv(db, "pressure", "summary", "--by", "nope")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and "--by nope" in bad.stderr


class _Prometheus(http.server.BaseHTTPRequestHandler):
    """Answers /api/v1/query as Prometheus does, from ``answers`` keyed by the metric queried."""

    answers: dict[str, object] = {}
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        from urllib.parse import parse_qs, urlparse

        q = parse_qs(urlparse(self.path).query)
        self.seen.append(q["query"][0])
        promql = q["query"][0]
        metric = promql.split("(", 1)[1].split("{", 1)[0].split("[", 1)[0]
        if "timestamp(" in promql:  # the last sample's time, answered under its own key
            metric = "timestamp(" + metric.split("(", 1)[1]
        body = json.dumps(self.answers.get(metric, {"status": "error", "error": "unknown"}))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


def test_prometheus_import_writes_records_ingest_reads(tmp_path: Path):
    from advisor.errors import ExternalToolError
    from advisor.ingest.pressure import check_record
    from advisor.pressure.prometheus import PrometheusImport, import_prometheus

    t = dt.datetime(2024, 6, 1, 12, 0, tzinfo=dt.UTC).timestamp()

    def vector(*series: tuple[dict[str, str], str]) -> dict[str, object]:
        result = [{"metric": m, "value": [t, v]} for m, v in series]
        return {"status": "success", "data": {"resultType": "vector", "result": result}}

    _Prometheus.answers = {
        "ceems_compute_unit_cpu_psi_seconds": vector(
            ({"uuid": "101", "hostname": "gpu1", "manager": "slurm"}, "120.5"),
            ({"uuid": "101", "hostname": "gpu2"}, "80"),
            ({"uuid": "pod-x", "hostname": "k8s"}, "5"),  # not a Slurm job: skipped
            ({"uuid": "102", "hostname": "gpu1"}, "NaN"),  # no number: skipped
        ),
        "psi_full": vector(({"uuid": "101", "hostname": "gpu1"}, "30")),
        # each series' last sample in the period: the jobs ended before the period's end
        "timestamp(ceems_compute_unit_cpu_psi_seconds": vector(
            ({"uuid": "101", "hostname": "gpu1"}, str(t - 3600)),
            ({"uuid": "101", "hostname": "gpu2"}, str(t - 7200)),
        ),
    }
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        imp = PrometheusImport(
            url=url,
            start=dt.datetime(2024, 6, 1),
            end=dt.datetime(2024, 6, 1, 12),
            full_metric="psi_full",
            cluster="gpu",
            selector='manager="slurm"',
        )
        out = tmp_path / "prom.jsonl"
        n, skipped = import_prometheus(imp, out)
        assert n == 2 and (skipped.not_a_job, skipped.malformed) == (1, 1)
        assert 'max_over_time(ceems_compute_unit_cpu_psi_seconds{manager="slurm"}[43200s])' in (
            _Prometheus.seen
        )
        assert (
            'max_over_time(timestamp(ceems_compute_unit_cpu_psi_seconds{manager="slurm"})'
            "[43200s:60s])" in _Prometheus.seen
        )
        recs = [check_record(x) for x in out.read_text().splitlines()]
        assert [(r["job_id"], r["host"], r["some_s"], r["full_s"]) for r in recs] == [
            ("101", "gpu1", 120.5, 30.0),
            ("101", "gpu2", 80.0, None),
        ]
        assert recs[0]["collected_at"] == dt.datetime(2024, 6, 1, 11)
        assert recs[1]["collected_at"] == dt.datetime(2024, 6, 1, 10)
        with pytest.raises(ExternalToolError, match="failed: unknown"):
            import_prometheus(
                PrometheusImport(url=url, start=imp.start, end=imp.end, some_metric="missing"),
                tmp_path / "x.jsonl",
            )
    finally:
        server.shutdown()


def test_the_shipped_synthetic_pressure_joins_the_sample_and_falls_with_cores_per_gpu(
    tmp_path: Path, sample_db: Path
):
    db = tmp_path / "sample.duckdb"
    shutil.copy(sample_db, db)
    shipped = ROOT / "data" / "sample" / "pressure-synth.jsonl.gz"
    done = _adv(db, "ingest", str(shipped), "--format", "json")
    assert done.returncode == 0, done.stderr
    (s,) = json.loads(done.stdout)
    assert s["format"] == "pressure" and s["rejected"] == 0 and s["inserted"] > 1000
    out = json.loads(_adv(db, "pressure", "summary", "--by", "cores_per_gpu_bin", "--format",
                          "json").stdout)  # fmt: skip
    total = out["total"]
    # every record found its job (one per node of about three fifths of the GPU jobs)
    assert 0.55 < total["jobs_measured"] / total["jobs"] < 0.65
    shares = {g["cores_per_gpu_bin"]: g["some_share"] for g in out["groups"]}
    # the mechanism's knee: starved at one core per GPU, at the machine's floor from 4 on
    assert shares[1] > 0.3 and shares[1] > shares[2] > max(shares[b] for b in (4, 8, 16))
    assert all(shares[b] < 0.01 for b in (4, 8, 16))
    # the generator writes the same file again from the same jobs, seed and shipped model (a
    # refit of the model changes it: regenerate the sample then)
    again = tmp_path / "again.jsonl"
    assert (
        _adv(sample_db, "pressure", "synth", "--out", str(again), "--share", "0.6").returncode == 0
    )
    import gzip

    with gzip.open(shipped, "rt") as fh:
        assert again.read_text() == fh.read()


@pytest.fixture(scope="module")
def pressure_db(tmp_path_factory: pytest.TempPathFactory, sample_db: Path) -> Path:
    """The shipped sample with its synthetic pressure records loaded."""
    db = tmp_path_factory.mktemp("pressure-sample") / "p.duckdb"
    shutil.copy(sample_db, db)
    done = _adv(db, "ingest", str(ROOT / "data" / "sample" / "pressure-synth.jsonl.gz"))
    assert done.returncode == 0, done.stderr
    return db


def test_the_dashboard_overview_shows_what_the_jobs_waited_for(monkeypatch, pressure_db):
    from streamlit.testing.v1 import AppTest

    from advisor import store
    from advisor.pressure.summary import PressureQuery, any_records, headline, pressure_summary

    monkeypatch.setenv("ADVISOR_DB", str(pressure_db))
    monkeypatch.delenv("ADVISOR_HASH_USERS", raising=False)
    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=90)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert "What the jobs waited for (CPU pressure)" in [s.value for s in at.subheader]
    metrics = {m.label: m.value for m in at.metric}
    head = headline(pressure_summary(pressure_db, PressureQuery()))
    con = store.connect(pressure_db, read_only=True)
    try:
        assert any_records(con) is True
    finally:
        con.close()
    assert metrics["Share of GPU-hours measured"] == f"{100 * head['share_measured']:.0f}%"
    held = f"{head['held_gpu_hours_low']:,.0f} to {head['held_gpu_hours_high']:,.0f}"
    assert metrics["GPU-hours held by CPU waiting"] == held
    assert any(f"{head['jobs_measured']:,} of " in c.value for c in at.caption)
    # the measured curve of the group with the most measured jobs, against the threshold, the
    # model beside it (issue 49); and the headline says how much of the loss rests on measurement
    (group,) = [s for s in at.selectbox if s.label == "Group"]
    g = group.value
    assert (
        group.options[0]
        == f"{g['cluster']} / {g['partition']} / {g['gpu_type']} / {g['gpu_count']} GPU"
        and g["jobs_measured"] > 100
    )
    assert any("through the measured link" in c.value for c in at.caption)
    assert any("ran in jobs whose CPU pressure was measured" in c.value for c in at.caption)


def test_a_database_without_pressure_records_shows_no_pressure_section(monkeypatch, sample_db):
    """The Overview asks whether any record was loaded (one cached look a file) before it scans
    every job for the pressure groups: the sample has none, the section is absent."""
    from streamlit.testing.v1 import AppTest

    from advisor import store
    from advisor.pressure.summary import any_records

    con = store.connect(sample_db, read_only=True)
    try:
        assert any_records(con) is False
    finally:
        con.close()
    monkeypatch.setenv("ADVISOR_DB", str(sample_db))
    at = AppTest.from_file(str(ROOT / "app" / "streamlit_app.py"), default_timeout=90)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    subheaders = [s.value for s in at.subheader]
    assert "What the jobs used (usage data)" in subheaders  # the block above it is there
    assert "What the jobs waited for (CPU pressure)" not in subheaders


def test_metrics_and_the_monthly_report_carry_the_measured_pressure(pressure_db, tmp_path):
    from advisor import report, store
    from advisor.pressure.summary import PressureQuery, pressure_summary

    month = "2024-12"
    out = _adv(pressure_db, "metrics", "--month", month)
    assert out.returncode == 0, out.stderr
    some = [
        ln for ln in out.stdout.splitlines() if ln.startswith("advisor_cpu_pressure_some_share{")
    ]
    assert some and all(0 < float(ln.rsplit(" ", 1)[1]) < 1 for ln in some)
    shares = [
        ln for ln in out.stdout.splitlines()
        if ln.startswith("advisor_cpu_pressure_measured_gpu_hours_share{")
    ]  # fmt: skip
    assert len(shares) >= len(some)
    inputs = report.load_inputs(report.ReportConfig(out_dir=tmp_path, month=month), pressure_db)
    con = store.connect(pressure_db, read_only=True)
    try:
        r = report.build_report(con, report.parse_month(month), None, inputs)
    finally:
        con.close()
    m = report.parse_month(month)
    expected = pressure_summary(pressure_db, PressureQuery(start=m.start, end=m.end))
    assert list(r.pressure) == expected and any(g["jobs_measured"] for g in r.pressure)
    html = report.render_html(r)
    assert 'id="pressure-table"' in html and "What they waited for" in html
    first = next(g for g in r.pressure if g["jobs_measured"])
    assert f'data-key="pressure.0.gpu_type" data-value="{first["gpu_type"]}"' in html


def test_a_load_folds_only_its_own_jobs_and_a_fold_of_every_job_then_changes_nothing(
    tmp_path: Path, pressure_db: Path
):
    """Issue 40: after a load, pressure is folded onto the jobs that load wrote or its records
    name (pipeline.last_ingest), not onto the whole history again. Records first, then the
    jobs, stores what jobs first does; a record added later reaches its job; and a fold of
    every job afterwards finds nothing left to change."""
    from advisor.ingest import pressure

    db = tmp_path / "records-first.duckdb"
    for part in ("pressure-synth.jsonl.gz", "sacct-synth.txt.gz"):
        done = _adv(db, "ingest", str(ROOT / "data" / "sample" / part))
        assert done.returncode == 0, done.stderr
    psi = (
        "SELECT cluster, job_id_raw, submit, psi_status, psi_some_s, psi_full_s,"
        " psi_covered_s, psi_hosts FROM jobs ORDER BY ALL"
    )

    def figures(path: Path) -> list[tuple[object, ...]]:
        con = duckdb.connect(str(path), read_only=True)
        try:
            return con.execute(psi).fetchall()
        finally:
            con.close()

    got = figures(db)
    assert sum(r[3] == "measured" for r in got) > 100
    assert got == figures(pressure_db)
    ((j, start, el, _),) = _gpu_jobs(db, 1)
    hosts = next(r[7] for r in got if r[1] == j and r[0] == "teaching")
    later = tmp_path / "later.jsonl"
    later.write_text(
        _record(str(j), start + dt.timedelta(seconds=el), 0.2 * el, 0.0, "n-new") + "\n"
    )
    assert _adv(db, "ingest", str(later)).returncode == 0
    after = figures(db)
    assert next(r[7] for r in after if r[1] == j and r[0] == "teaching") == (hosts or 0) + 1
    assert [r for r in after if r[1] != j] == [r for r in got if r[1] != j]
    con = duckdb.connect(str(db))
    try:
        con.execute("BEGIN TRANSACTION")
        assert pressure.fold(con) == 0  # every job, every record: nothing left out
        con.execute("ROLLBACK")
    finally:
        con.close()


def test_a_spool_loaded_a_few_lines_at_a_time_stores_what_one_chunk_stores(
    tmp_path: Path, sample_db: Path, monkeypatch: pytest.MonkeyPatch
):
    """Issue 40: a spool is checked and stored CHUNK_LINES at a time (4.3M records held as
    Python rows peaked at 5.6 GB); chunks of three lines store the same rows, rejects and
    counts as one chunk, and a file with no good line in any chunk is still refused whole."""
    from advisor.ingest import ingest_files, pressure

    ((j1, s1, e1, _), (j2, s2, e2, _)) = _gpu_jobs(sample_db, 2)
    lines = [
        _record(str(j1), s1 + dt.timedelta(seconds=e1), 0.3 * e1, 0.1 * e1),
        "{not json",
        _record(str(j1), s1 + dt.timedelta(seconds=e1), 0.1 * e1, 0.0, host="n2"),
        _record("abc", s1, 1.0, 0.0),
        "",
        _record(str(j2), s2 + dt.timedelta(seconds=e2), 0.5 * e2, 0.0),
        _record(str(j2), s2, 1.0, 2.0, host="n9"),  # full above some
        _record(str(j1), s1 + dt.timedelta(seconds=e1), 0.3 * e1, 0.1 * e1),  # again
    ]
    spool = tmp_path / "p.jsonl"
    spool.write_text("\n".join(lines) + "\n")

    def load(chunk: int, name: str) -> tuple[object, ...]:
        monkeypatch.setattr(pressure, "CHUNK_LINES", chunk)
        db = tmp_path / name
        shutil.copy(sample_db, db)
        (s,) = ingest_files(db, [spool])
        con = duckdb.connect(str(db), read_only=True)
        try:
            stored = con.execute(
                "SELECT * EXCLUDE (ingest_id) FROM pressure_records ORDER BY ALL"
            ).fetchall()
            rejects = con.execute(
                "SELECT line_no, field FROM rejects WHERE ingest_id = ? ORDER BY line_no",
                [s.ingest_id],
            ).fetchall()
            psi = con.execute(
                "SELECT job_id_raw, psi_some_s, psi_hosts FROM jobs"
                " WHERE psi_status IS NOT NULL ORDER BY ALL"
            ).fetchall()
        finally:
            con.close()
        counts = (s.lines_read, s.rows_read, s.inserted, s.unchanged, s.rejected)
        return counts, s.first_reasons, stored, rejects, psi

    whole, small = load(100_000, "whole.duckdb"), load(3, "small.duckdb")
    assert small == whole
    assert whole[0] == (7, 7, 3, 1, 3)
    assert [r[0] for r in whole[3]] == [2, 4, 7]
    assert len(whole[4]) == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text("\n".join([_record("abc", s1, 1.0, 0.0), "{not json"] * 4) + "\n")
    monkeypatch.setattr(pressure, "CHUNK_LINES", 3)
    from advisor.errors import InputError

    with pytest.raises(InputError, match="no pressure record could be read"):
        ingest_files(tmp_path / "small.duckdb", [bad])
