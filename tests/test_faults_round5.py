"""Issue 53's faults (round five), at the level a user meets them: the node collector as a node
runs it (the file alone, under the oldest Python on this machine, on a cgroup-shaped tree an
attacker could shape), pressure spools and Prometheus answers through the console script into a
real DuckDB file. Each test is a row of the fault matrix printed at the end of the suite.
"""

from __future__ import annotations

import datetime as dt
import gzip
import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parent.parent
COLLECTOR = ROOT / "advisor" / "pressure" / "collector.py"
PSI = "some avg10=0.00 avg60=0.00 avg300=0.00 total={some}\nfull avg10=0 avg60=0 avg300=0 total=0\n"
# the oldest Python on this machine (Debian 12's own, 3.11.2) runs the node script as a node
# would; the syntax is checked against the oldest the collector names (3.7) with vermin
NODE_PYTHON = "/usr/bin/python3" if Path("/usr/bin/python3").exists() else sys.executable


def _job(tree: Path, job: str, some_us: int, *, scope: str = "slurmstepd.scope") -> Path:
    d = tree / "system.slice" / scope / job
    d.mkdir(parents=True, exist_ok=True)
    (d / "cpu.pressure").write_text(PSI.format(some=some_us))
    (d / "cpu.stat").write_text("usage_usec 5000000\nnr_throttled 0\nthrottled_usec 0\n")
    return d


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "cg"
    tree.mkdir()
    (tree / "cgroup.controllers").write_text("cpuset cpu\n")
    return tree


def _collect(tmp_path: Path, tree: Path, *args: str) -> tuple[list[dict], str]:
    """The collector file alone, as an epilog or a node agent runs it: (records, log)."""
    spool = tmp_path / f"spool-{time.monotonic_ns()}.jsonl"
    done = subprocess.run(
        [NODE_PYTHON, "-I", str(COLLECTOR), "--cgroup-root", str(tree), "--out", str(spool), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    recs = [json.loads(x) for x in spool.read_text().splitlines()] if spool.exists() else []
    return recs, done.stderr


@pytest.mark.fault("collector on old Pythons", cases=2)
def test_the_collector_needs_nothing_newer_than_the_python_it_names(tmp_path: Path):
    vermin = Path(sys.executable).with_name("vermin")
    checked = subprocess.run(
        [str(vermin), "-t=3.7-", "--violations", "--no-tips", str(COLLECTOR)],
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "3.7" in (ROOT / "docs" / "pressure.md").read_text()
    tree = _tree(tmp_path)
    _job(tree, "job_7", 2_000_000)
    recs, log = _collect(tmp_path, tree)
    assert [(r["job_id"], r["some_s"], r["status"]) for r in recs] == [("7", 2.0, "ok")], log


@pytest.mark.fault("collector links and names", cases=5)
def test_the_collector_follows_no_link_and_reads_only_whole_ascii_job_names(tmp_path: Path):
    tree = _tree(tmp_path)
    _job(tree, "job_1", 1_000_000)
    secret = tmp_path / "secret"
    secret.write_text("0-63\n")  # a CPU list, so only the link can keep it out
    elsewhere = _job(tmp_path / "other", "job_2", 9_000_000)
    scope = tree / "system.slice" / "slurmstepd.scope"
    (scope / "job_1" / "cpuset.cpus.effective").symlink_to(secret)  # a file linked out
    (scope / "job_2").symlink_to(elsewhere)  # a job folder linked to another tree
    _job(tree, "job_3\n", 5_000_000)  # a trailing newline forging job 3
    _job(tree, "job_\u0661\u0662\u0663", 5_000_000)  # Arabic-Indic digits
    _job(tree, "job_0042", 5_000_000)  # a leading zero would fold onto job 42
    recs, log = _collect(tmp_path, tree)
    assert [r["job_id"] for r in recs] == ["1"], log
    assert recs[0]["cpus"] is None and recs[0]["cpu_count"] is None
    assert recs[0]["some_s"] == 1.0


@pytest.mark.fault("collector one bad cgroup", cases=3)
def test_one_bad_cgroup_costs_its_own_record_and_the_others_are_read(tmp_path: Path):
    tree = _tree(tmp_path)
    _job(tree, "job_1", 1_000_000)
    (_job(tree, "job_2", 0) / "cpu.pressure").write_text(PSI.format(some="9" * 400))
    _job(tree, "job_3", 3_000_000)
    bad_cpus = _job(tree, "job_4", 4_000_000)
    (bad_cpus / "cpuset.cpus.effective").write_text("99999999-0\n")
    locked = _job(tree, "job_5", 5_000_000)
    (locked / "step_0").mkdir()
    recs, log = _collect(tmp_path, tree)
    by_job = {r["job_id"]: r for r in recs if r["step"] is None}
    assert sorted(by_job) == ["1", "2", "3", "4", "5"], log
    assert by_job["2"]["status"] == "unavailable" and by_job["2"]["some_s"] is None
    assert "64-bit counter" in by_job["2"]["errors"][0]
    assert (by_job["1"]["some_s"], by_job["3"]["some_s"]) == (1.0, 3.0)
    assert by_job["4"]["cpus"] is None and by_job["4"]["cpu_count"] is None
    assert "not a CPU list" in by_job["4"]["errors"][0] and by_job["4"]["some_s"] == 4.0


@pytest.mark.fault("collector bounds", cases=4)
def test_the_collector_stays_within_its_time_bound_reads_the_epilogs_job_and_never_blocks(
    tmp_path: Path,
):
    tree = _tree(tmp_path)
    scope = tree / "system.slice" / "slurmstepd.scope"
    scope.mkdir(parents=True)
    for i in range(1, 30_001):
        (scope / f"job_{i}").mkdir()
    _job(tree, "job_30001", 7_000_000)
    t0 = time.monotonic()
    recs, log = _collect(tmp_path, tree, "--job", "30001", "--max-ms", "200")
    took = time.monotonic() - t0
    # the epilog's own job is looked up by name, never after listing every other one
    assert [(r["job_id"], r["some_s"]) for r in recs] == [("30001", 7.0)], log
    recs, log = _collect(tmp_path, tree, "--max-ms", "20", "--no-steps")
    assert "stopped after 20 ms" in log
    assert 0 < len(recs) < 30_001
    # a FIFO where a file should be: read as unavailable at once, never waited on
    fifo_job = _job(tree, "job_40000", 0)
    (fifo_job / "cpu.pressure").unlink()
    os.mkfifo(fifo_job / "cpu.pressure")
    recs, log = _collect(tmp_path, tree, "--job", "40000")
    assert recs[0]["status"] == "unavailable" and "not a regular file" in recs[0]["errors"][0]
    # a bound that is no bound is replaced by the default, said so, and the job still read
    recs, log = _collect(tmp_path, tree, "--job", "30001", "--max-ms", "nan")
    assert recs[0]["some_s"] == 7.0 and "--max-ms 'nan' is not 1 to 60000: 50 used" in log
    assert took < 60  # a sanity bound on the whole subprocess, not a speed claim


def _adv(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args, "--db", str(db)], capture_output=True, text=True
    )


HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|Submit|Start|End|Elapsed|State|NCPUS|"
    "AllocTRES|NodeList"
)


def _sacct(tmp_path: Path, jobs: list[tuple[int, int]]) -> Path:
    """A sacct -P file of 2-hour, 8-CPU jobs ``(id, gpus)`` from 2024-03-01 01:00."""
    rows = [HEADER]
    for job, gpus in jobs:
        rows.append(
            f"{job}|{job}|c|gpu|lab|alice|2024-03-01T00:59:00|2024-03-01T01:00:00|"
            f"2024-03-01T03:00:00|02:00:00|COMPLETED|8|cpu=8,gres/gpu={gpus},node=1|n1"
        )
    path = tmp_path / "sacct.txt"
    path.write_text("\n".join(rows) + "\n")
    return path


def _rec(job: str, **kw: object) -> str:
    rec: dict[str, object] = {
        "schema": "advisor.pressure/1",
        "cluster": "c",
        "job_id": job,
        "step": None,
        "host": "n1",
        "collected_at": "2024-03-01T03:00:00Z",
        "status": "ok",
        "some_s": 720.0,
        "full_s": 0.0,
        "usage_s": 3600.0,
        "cpus": "0-7",
        "cpu_count": 8,
    }
    rec.update(kw)
    return json.dumps(rec)


def _measured(db: Path) -> dict[int, tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT job_id_raw, psi_status, psi_some_s FROM jobs ORDER BY 1"
        ).fetchall()
    finally:
        con.close()
    return {r[0]: r[1:] for r in rows}


@pytest.mark.fault("impossible pressure records", cases=8)
def test_impossible_pressure_records_are_rejected_by_field_or_left_out_of_the_fold(
    tmp_path: Path,
):
    db = tmp_path / "a.duckdb"
    assert (
        _adv(db, "ingest", str(_sacct(tmp_path, [(1, 1), (2, 1), (3, 1), (53, 1)]))).returncode == 0
    )
    lines = [
        _rec("1"),  # good: 720 s of 7,200
        _rec("2", some_s=3e8, full_s=0.0),  # stalled longer than the job existed: left out
        _rec("3", usage_s=1e8),  # 8 CPUs cannot use 1e8 s in two hours: left out
        _rec("1", host="n2", cpus="99999999-0", cpu_count=0),  # no CPU list
        _rec("0000053"),  # would fold onto job 53
        _rec("1", host="n\x1b[31m3"),  # control characters into a terminal
        _rec("1", host="n4", cpus="0-7", cpu_count=9),  # count and list disagree
        _rec("1", step="b\x07"),
    ]
    spool = tmp_path / "p.jsonl"
    spool.write_bytes(
        b"\xef\xbb\xbf" + ("\n".join(lines) + "\n").encode() + b'{"host": "\xff\xfe"}\n'
    )
    done = _adv(db, "ingest", str(spool), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (3, 6), s  # the BOM line is record 1, kept
    reasons = "\n".join(s["first_reasons"])
    assert "line 4, field cpus" in reasons and "line 5, field job_id" in reasons
    assert "line 6, field host" in reasons and "line 7, field cpu_count" in reasons
    got = _measured(db)
    assert got[1] == ("measured", 720.0)
    assert got[2][0] is None and got[3][0] is None and got[53][0] is None
    summary = _adv(db, "pressure", "summary", "--by", "", "--format", "json")
    total = json.loads(summary.stdout)["total"]
    assert total["jobs_measured"] == 1
    assert total["held_gpu_hours_high"] <= total["gpu_hours_measured"]


@pytest.mark.fault("pressure spool bombs", cases=2)
def test_a_spool_of_blank_lines_or_one_endless_line_is_refused_or_rejected_quickly(
    tmp_path: Path,
):
    db = tmp_path / "a.duckdb"
    bomb = tmp_path / "bomb.jsonl.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:
        fh.write(_rec("1").encode() + b"\n")
        chunk = b"\n" * (1 << 20)
        for _ in range(2):
            fh.write(chunk)
    done = _adv(db, "ingest", str(bomb))
    assert done.returncode == 3 and "blank lines" in done.stderr and "Traceback" not in done.stderr
    long = tmp_path / "long.jsonl"
    long.write_text(_rec("1") + "\n" + '{"x": "' + "a" * 300_000 + '"}\n')
    done = _adv(db, "ingest", str(long), "--format", "json")
    assert done.returncode == 0, done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (1, 1)
    assert "longer than 65,536 characters" in s["first_reasons"][0]


class _Prometheus(http.server.BaseHTTPRequestHandler):
    """Answers /api/v1/query from ``answers``: the value query by the metric's name, the
    last-sample-time query under ``"timestamp"``; ``raw`` answers every query with those bytes."""

    answers: dict[str, object] = {}
    raw: bytes | None = None

    def do_GET(self) -> None:  # noqa: N802 - the http.server hook's name
        from urllib.parse import parse_qs, urlparse

        q = parse_qs(urlparse(self.path).query)["query"][0]
        key = (
            "timestamp" if "timestamp(" in q else q.split("(", 1)[1].split("{", 1)[0].split("[")[0]
        )
        body = self.raw or json.dumps(self.answers.get(key, {"status": "error"})).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        _Prometheus.answers, _Prometheus.raw = {}, None


def _vector(*items: object) -> dict[str, object]:
    return {"status": "success", "data": {"resultType": "vector", "result": list(items)}}


def _ts(s: str) -> float:
    return dt.datetime.fromisoformat(s).replace(tzinfo=dt.UTC).timestamp()


@pytest.mark.fault("prometheus period import", cases=1)
def test_a_months_import_stamps_each_job_at_its_last_sample_and_measures_it(
    tmp_path: Path, prometheus: str
):
    db = tmp_path / "a.duckdb"
    assert _adv(db, "ingest", str(_sacct(tmp_path, [(1, 1), (2, 2)]))).returncode == 0
    end = _ts("2024-03-31T00:00:00")
    last = _ts("2024-03-01T03:00:00")  # both jobs ended on the 1st, a month before --end
    _Prometheus.answers = {
        "ceems_compute_unit_cpu_psi_seconds": _vector(
            {"metric": {"uuid": "1", "hostname": "n1"}, "value": [end, "720"]},
            {"metric": {"uuid": "2", "hostname": "n1"}, "value": [end, "1440"]},
        ),
        "timestamp": _vector(
            {"metric": {"uuid": "1", "hostname": "n1"}, "value": [end, str(last)]},
            {"metric": {"uuid": "2", "hostname": "n1"}, "value": [end, str(last - 60)]},
        ),
    }
    out = tmp_path / "prom.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "pressure", "import-prometheus", "--url", prometheus,
         "--start", "2024-03-01", "--end", "2024-03-31", "--out", str(out), "--cluster", "c",
         "--format", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["records"] == 2
    assert _adv(db, "ingest", str(out)).returncode == 0
    got = _measured(db)
    assert got[1] == ("measured", 720.0) and got[2] == ("measured", 1440.0)


@pytest.mark.fault("prometheus answers", cases=9)
def test_malformed_prometheus_answers_are_skipped_or_refused_in_one_line(
    tmp_path: Path, prometheus: str
):
    end = _ts("2024-03-31T00:00:00")
    good = {"metric": {"uuid": "1", "hostname": "n1"}, "value": [end, "5"]}
    _Prometheus.answers = {
        "ceems_compute_unit_cpu_psi_seconds": _vector(
            good,
            None,
            [1, 2],
            {"metric": "uuid=3", "value": [end, "1"]},
            {"metric": {"uuid": "4", "hostname": "n1"}, "value": [1e308, "NaN"]},
            {"metric": {"uuid": "5", "hostname": "n\x1b]0;x\x07"}, "value": [end, "1"]},
            {"metric": {"uuid": "0006", "hostname": "n1"}, "value": [end, "1"]},
        ),
        "timestamp": _vector({"metric": {"uuid": "1", "hostname": "n1"}, "value": [end, "1e308"]}),
    }

    def imp(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "advisor", "pressure", "import-prometheus", "--start",
             "2024-03-01", "--end", "2024-03-31", "--format", "json", *args],
            capture_output=True, text=True,
        )  # fmt: skip

    out = tmp_path / "p.jsonl"
    done = imp("--url", prometheus, "--out", str(out))
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    got = json.loads(done.stdout)
    # job 1's last-sample time is out of the period; the rest are malformed or no Slurm job
    assert (got["records"], got["skipped_no_time"]) == (0, 1), got
    assert got["skipped_malformed"] == 5 and got["skipped_not_a_job"] == 1
    bad_url = imp("--url", "http://[::1", "--out", str(out))
    assert bad_url.returncode == 2 and "not a URL" in bad_url.stderr
    assert "Traceback" not in bad_url.stderr
    _Prometheus.raw = json.dumps({"status": "error", "error": "boom \x1b[2J"}).encode()
    esc = imp("--url", prometheus, "--out", str(out))
    assert esc.returncode == 5 and "\x1b" not in esc.stderr and "boom \\x1b[2J" in esc.stderr
    _Prometheus.raw = None
    _Prometheus.answers["timestamp"] = _vector(
        {"metric": {"uuid": "1", "hostname": "n1"}, "value": [end, str(end - 3600)]}
    )
    unwritable = imp("--url", prometheus, "--out", "/proc/version")
    assert unwritable.returncode == 3 and "/proc/version" in unwritable.stderr
    assert "Traceback" not in unwritable.stderr


WAIT_MUTATIONS = [
    # (path in extra.wait, value): each breaks one rule of the wait record
    (("by_process",), "not a list"),
    (("by_process", 0), None),
    (("by_process", 0, "wait_share"), "0.9"),
    (("by_process", 0, "wait_share"), True),
    (("by_process", 0, "wait_share"), -1.0),
    (("by_process", 0, "wait_share"), 221181.0),
    (("by_process", 0, "cpu_s"), 1e308),
    (("by_role",), [1, 2]),
    (("by_role", "api_server", "wait_share"), "nan"),
    (("psi", "machine", "some_share"), 1.5),
    (("psi", "machine"), "x"),
]


def _mutated(run: dict, path: tuple, value: object) -> dict:
    target = run["run"]["extra"]["wait"]
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return run


@pytest.mark.fault("bench wait records", cases=2 * len(WAIT_MUTATIONS))
def test_a_malformed_wait_record_is_named_and_every_other_run_loads(tmp_path: Path):
    from tests.bench_fixtures import unpack

    unpack(ROOT / "data" / "bench" / "h100-2026-12-06-wait" / "mp.tgz", tmp_path)
    runs = sorted((tmp_path / "mp").glob("*_vllm_*.json"))
    victim = runs[0]
    original = json.loads(victim.read_text())
    for n, (path, value) in enumerate(WAIT_MUTATIONS):
        victim.write_text(json.dumps(_mutated(json.loads(json.dumps(original)), path, value)))
        db = tmp_path / f"m{n}.duckdb"
        done = _adv(db, "bench", "collect", str(tmp_path / "mp"), "--format", "json")
        assert done.returncode == 3, (path, value, done.stderr[-400:])
        assert "Traceback" not in done.stderr and victim.name in done.stderr
        assert "run.extra.wait" in done.stderr, (path, value, done.stderr[-300:])
        assert json.loads(done.stdout)[0]["runs_loaded"] == len(runs) - 1
        curve = subprocess.run(
            [sys.executable, "-m", "advisor", "bench", "curve", str(tmp_path / "mp")],
            capture_output=True,
            text=True,
        )
        assert curve.returncode == 3 and "Traceback" not in curve.stderr, curve.stderr[-400:]
        assert "run.extra.wait" in curve.stderr


@pytest.mark.fault("recommend extremes", cases=6)
def test_recommend_answers_extreme_loads_quickly_and_refuses_impossible_ones(tmp_path: Path):
    db = tmp_path / "none.duckdb"
    refused = {
        "--gpus 4 --rps 1e9": "--rps must be above 0 and at most 1,000",
        "--gpus 4 --prompt-tokens 2147483648": "--prompt-tokens must be above 0 and at most 10,000,000",
        "--gpus 2147483648": "--gpus must be 1 to 4,096",
        "--gpus 1000000": "--gpus must be 1 to 4,096",
    }
    for args, message in refused.items():
        done = _adv(db, "recommend", "--gpu-type", "H100", *args.split(), "--format", "json")
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr
    # the largest load it accepts is answered (the wait past any cap: the most the node gives)
    done = _adv(db, "recommend", "--gpu-type", "H100", "--gpus", "4", "--rps", "1000",
                "--prompt-tokens", "10000000", "--format", "json")  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    rec = json.loads(done.stdout)
    assert rec["knee_cores"] is None and "no core count" in rec["decision_reason"]
    done = _adv(db, "recommend", "--gpu-type", "H100", "--gpus", "4096", "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["gpus"] == 4096


@pytest.mark.fault("usage errors", cases=5)
def test_out_of_range_tolerances_and_counts_are_usage_errors_not_tracebacks(tmp_path: Path):
    db = tmp_path / "a.duckdb"
    runs = str(ROOT / "data" / "bench" / "h200-2026-12-01")
    for args, says in (
        (("bench", "curve", runs, "--tolerance", "10"), "--tolerance must be a fraction in (0, 1]"),
        (("bench", "replicate", runs, runs, "--tolerance", "5"), "--tolerance must be a fraction"),
        (("fit", "--tolerance", "-1", "--db", str(db)), "--tolerance must be a fraction"),
        (("fit", "--bootstrap", "-1", "--db", str(db)), "--bootstrap"),
        (
            ("bench", "import", "x.json", "--model-params-b", "-8", "--db", str(db)),
            "--model-params-b",
        ),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "advisor", *args], capture_output=True, text=True, cwd=tmp_path
        )
        assert done.returncode == 2 and says in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


@pytest.mark.fault("bench import values", cases=3)
def test_bench_import_refuses_a_negative_ttft_a_list_model_and_overflowing_counts(tmp_path: Path):
    source = ROOT / "tests" / "fixtures" / "bench" / "vllm-bench-serve-c8.json"
    good = json.loads(source.read_text())
    cases = {
        "p99": ({**good, "p99_ttft_ms": -1}, "p99_ttft_ms"),
        "model": ({**good, "model_id": ["a", "b"]}, "model_id"),
        "cores": ({**good, "cores": 1e300}, "cores"),
    }
    for name, (doc, field) in cases.items():
        bad = tmp_path / f"{name}.json"
        bad.write_text(json.dumps(doc))
        done = _adv(tmp_path / f"{name}.duckdb", "bench", "import", str(bad))
        assert done.returncode == 3 and "Traceback" not in done.stderr, (name, done.stderr)
        assert f"field {field}" in done.stderr, (name, done.stderr)


def _ingest_json(tmp_path: Path, doc: dict) -> tuple[dict, Path]:
    path = tmp_path / "sacct.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "a.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "ingest", str(path), "--db", str(db), "--format", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    return s, db


@pytest.mark.fault("NUL through sacct JSON", cases=2)
def test_a_nul_in_a_json_gpu_type_or_submit_line_rejects_that_job_alone(tmp_path: Path):
    doc = json.loads((ROOT / "data/sample/synth-sacct-v0.0.40.json").read_text())
    gpu_jobs = [j for j in doc["jobs"] if any(t["type"] == "gres" for t in j["tres"]["allocated"])]
    bad_type, bad_line = gpu_jobs[0], gpu_jobs[1]
    for t in bad_type["tres"]["allocated"]:
        if t["type"] == "gres":
            t["name"] = "gpu:h\x00100"
    bad_line["submit_line"] = "sbatch --gpus 1\x00 x.sh"
    s, db = _ingest_json(tmp_path, doc)
    assert s["rejected"] == 2 and s["inserted"] == len(doc["jobs"]) - 2
    fields = sorted(r.split("field ", 1)[1].split(":", 1)[0] for r in s["first_reasons"])
    assert fields == ["AllocTRES", "SubmitLine"]
    assert all("holds a NUL byte" in r for r in s["first_reasons"])
    con = duckdb.connect(str(db), read_only=True)
    try:
        (nul,) = con.execute(
            "SELECT count(*) FROM jobs WHERE contains(coalesce(gpu_type_raw, ''), chr(0))"
            " OR contains(coalesce(submit_line, ''), chr(0))"
        ).fetchone()
        ids = {r[0] for r in con.execute("SELECT job_id_raw FROM jobs").fetchall()}
    finally:
        con.close()
    assert nul == 0 and bad_type["job_id"] not in ids and bad_line["job_id"] not in ids


@pytest.mark.fault("CPUTimeRAW beyond Elapsed x CPUs", cases=1)
def test_a_cputimeraw_of_2_63_keeps_the_job_without_it_and_names_the_field(tmp_path: Path):
    header = (
        "JobID|JobIDRaw|Cluster|Partition|Account|User|Submit|Start|End|Elapsed|State|NCPUS|"
        "AllocTRES|CPUTimeRAW"
    )
    row = (
        "{j}|{j}|c|gpu|lab|alice|2024-01-01T01:00:00|2024-01-01T01:00:10|2024-01-01T02:00:10|"
        "01:00:00|COMPLETED|8|billing=8,cpu=8,gres/gpu=1,mem=32G,node=1|{cpu}"
    )
    text = tmp_path / "sacct.txt"
    text.write_text(
        "\n".join([header, row.format(j=1, cpu=28800), row.format(j=2, cpu=2**63 - 1)]) + "\n"
    )
    db = tmp_path / "a.duckdb"
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "ingest", str(text), "--db", str(db), "-f", "json"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    assert s["inserted"] == 2  # the job is kept: what it held is known, what it used is not
    assert any(
        "field CPUTimeRAW: not a plausible usage: CPUTimeRAW 9223372036854775807 is more than" in r
        for r in s["first_reasons"]
    ), s["first_reasons"]
    con = duckdb.connect(str(db), read_only=True)
    try:
        got = dict(con.execute("SELECT job_id_raw, cpu_time_alloc_s FROM jobs").fetchall())
    finally:
        con.close()
    assert got == {1: 28800, 2: None}


@pytest.mark.fault("prometheus answer read whole", cases=3)
def test_a_prometheus_answer_is_read_one_series_at_a_time(monkeypatch: pytest.MonkeyPatch):
    """A million series parsed whole took 2.1 GB; read one item at a time it holds the text
    and one item (1M series, 130 MB of text: +19 MB of memory against +668 MB whole,
    docs/pressure.md). Here: the items come one by one, a broken item is named when it
    is reached, and more than MAX_SERIES are refused while counting."""
    from advisor.errors import ExternalToolError, InputError
    from advisor.pressure import prometheus

    items = [{"metric": {"uuid": str(i), "hostname": "n1"}, "value": [1.0, "2"]} for i in (1, 2)]
    text = json.dumps(_vector(*items))
    got = prometheus._items(text, "q")
    assert got is not None and list(got) == items
    # another layout (an error, a matrix, keys in another order) is read whole by the caller
    assert prometheus._items(json.dumps({"status": "error", "error": "x"}), "q") is None
    broken = text.replace('"n1"}, "value": [1.0, "2"]}]', '"n1"}, "value": [1.0, "2"}]')
    stream = prometheus._items(broken, "q")
    assert stream is not None and next(stream) == items[0]
    with pytest.raises(ExternalToolError, match="not a Prometheus JSON answer"):
        next(stream)
    monkeypatch.setattr(prometheus, "MAX_SERIES", 1)
    many = prometheus._items(text, "q")
    assert many is not None and next(many) == items[0]
    with pytest.raises(InputError, match="more than 1: import a shorter period"):
        next(many)
