"""Issue 38's faults, at the level a user meets them: the installed console script on files an
attacker or a careless admin could hand it, and a real DuckDB file afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|"
    "WorkDir|JobName|SubmitLine"
)


def _row(job: int, gpus: int) -> str:
    return (
        f"{job}|{job}|c|gpu|normal|lab|lab|alice|1001|2024-01-01T01:00:00|2024-01-01T01:00:00|"
        "2024-01-01T01:00:10|2024-01-01T02:00:10|01:00:00|0:0|COMPLETED|1|8|8|32G|"
        f"billing=8,cpu=8,gres/gpu={gpus},mem=32G,node=1|"
        f"billing=8,cpu=8,gres/gpu={gpus},mem=32G,node=1|1-00:00:00|n1|/home/a|run|sbatch x"
    )


def _advisor(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args, "--db", str(db)], capture_output=True, text=True
    )


def _jobs(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute('SELECT job_id_raw, "user", uid, gpus FROM jobs ORDER BY 1').fetchall()
    finally:
        con.close()


JOBCOMP_TAIL = (
    " JobState=COMPLETED Partition=gpu TimeLimit=60 StartTime=2024-01-01T00:00:00 "
    "EndTime=2024-01-01T01:00:00 NodeList=n1 NodeCnt=1 ProcCnt=4 WorkDir=/tmp "
    "ReservationName= Tres=cpu=4,gres/gpu=1 Account=a QOS=normal WcKey= Cluster=c "
    "SubmitTime=2024-01-01T00:00:00 EligibleTime=2024-01-01T00:00:00"
)


@pytest.mark.fault("forged records", cases=2)
def test_a_job_name_holding_slurms_keys_cannot_forge_another_users_job_in_jobcomp(tmp_path):
    log = tmp_path / "jobcomp.log"
    log.write_text(
        "JobId=3 UserId=alice(1001) GroupId=g(100) Name=a UserId=mallory(6666) JobId=31337"
        + JOBCOMP_TAIL
        + "\n"
        + "JobId=4 UserId=bob(1002) GroupId=g(100) Name=a name with spaces"
        + JOBCOMP_TAIL
        + "\n"
    )
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(log), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (1, 1)
    assert "line 1, field UserId: the key UserId appears twice" in s["first_reasons"][0]
    # nothing of mallory's, nothing of job 31337; bob's job and its name kept whole
    assert [(j, u, uid) for j, u, uid, _ in _jobs(db)] == [(4, "bob", 1002)]


@pytest.mark.fault("absurd counts", cases=2)
def test_one_record_of_absurdly_many_gpus_is_rejected_naming_alloctres_and_the_rest_load(
    tmp_path,
):
    text = tmp_path / "sacct.txt"
    rows = [HEADER, _row(1, 4), _row(2, 21_474_837), _row(3, 2), _row(4, 2**31 - 1)]
    text.write_text("\n".join(rows) + "\n")
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(text), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (2, 2)
    assert s["first_reasons"][0].startswith("line 3, field AllocTRES: ")
    assert "at most 2^20 GPUs" in s["first_reasons"][0]
    assert {j: g for j, _, _, g in _jobs(db)} == {1: 4, 3: 2}


@pytest.mark.fault("NUL in text fields", cases=3)
def test_a_nul_byte_in_user_account_or_partition_rejects_the_record_naming_the_field(tmp_path):
    rows = [HEADER, _row(1, 1)]
    for job, (col, value) in enumerate([(7, "al\x00ice"), (5, "la\x00b"), (3, "gp\x00u")], start=2):
        cells = _row(job, 1).split("|")
        cells[col] = value
        rows.append("|".join(cells))
    text = tmp_path / "sacct.txt"
    text.write_bytes(("\n".join(rows) + "\n").encode())
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(text), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (1, 3)
    fields = [r.split("field ", 1)[1].split(":", 1)[0] for r in s["first_reasons"]]
    assert fields == ["User", "Account", "Partition"]
    assert all("holds a NUL byte" in r for r in s["first_reasons"])
    assert [j for j, *_ in _jobs(db)] == [1]


def test_recommend_puts_its_answer_whole_on_the_first_line_of_an_80_column_terminal(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "advisor", "recommend", "--gpu-type", "H100", "--gpus", "4"],
        capture_output=True, text=True, env={**__import__("os").environ, "COLUMNS": "80"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith("--cpus-per-gpu=") and len(first) <= 80
    assert "cores for 4 GPUs" in first


BENCH_RUN = sorted(
    (Path(__file__).parent.parent / "data/bench/h200-2026-11-29/h200x2-tp2").glob(
        "*unique*.json.gz"
    )
)[0]

# issue 38 items 3 and 4: file name -> (what is done to a good run, the field its error names)
BAD_RUNS = {
    "extra-str": (lambda d: d["run"].update(extra="x"), "run.extra"),
    "workload-list": (lambda d: d["run"].update(workload=[1, 2]), "run.workload"),
    "ttft-str": (lambda d: d["requests"][0].update(ttft_ms="fast"), "requests[0].ttft_ms"),
    "ttft-nan": (
        lambda d: [r.update(ttft_ms=float("nan")) for r in d["requests"]],
        "requests[0].ttft_ms",
    ),
    "ttft-inf": (lambda d: d["requests"][3].update(ttft_ms=float("inf")), "requests[3].ttft_ms"),
    "ttft-negative": (lambda d: d["requests"][0].update(ttft_ms=-25), "requests[0].ttft_ms"),
    "ttft-1e308": (lambda d: d["run"].update(victim_ttft_p50_ms=1e308), "run.victim_ttft_p50_ms"),
    "cores-0": (lambda d: d["run"].update(cores=0), "run.cores"),
    "cores-negative": (lambda d: d["run"].update(cores=-4), "run.cores"),
    "cores-true": (lambda d: d["run"].update(cores=True), "run.cores"),
    "gpus-0": (lambda d: d["run"].update(gpus=0), "run.gpus"),
    "gpus-negative": (lambda d: d["run"].update(gpus=-1), "run.gpus"),
    "duration-nan": (lambda d: d["run"].update(duration_s=float("nan")), "run.duration_s"),
    "cpu-negative": (
        lambda d: d["run"].update(engine_cpu_percent=-1e308),
        "run.engine_cpu_percent",
    ),
    "run-id-nul": (lambda d: d["run"].update(run_id="a\x00b"), "run.run_id"),
    "started-at": (lambda d: d["run"].update(started_at="yesterday"), "run.started_at"),
}


@pytest.mark.fault("bench run files", cases=len(BAD_RUNS) + 2)
def test_bench_collect_refuses_each_implausible_run_by_file_and_field_and_loads_the_rest(
    tmp_path: Path,
):
    import copy
    import gzip

    good = json.loads(gzip.decompress(BENCH_RUN.read_bytes()))
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "good.json").write_text(json.dumps(good))
    for name, (spoil, _) in BAD_RUNS.items():
        d = copy.deepcopy(good)
        d["run"]["run_id"] += f"-{name}"
        spoil(d)
        (runs / f"{name}.json").write_text(json.dumps(d))
    # extra: null reads as no extra (it loads); 100,000 nested arrays are refused, not a crash
    d = copy.deepcopy(good)
    d["run"].update(run_id="extra-null", extra=None)
    (runs / "extra-null.json").write_text(json.dumps(d))
    (runs / "nested.json").write_text("[" * 100_000 + "]" * 100_000)
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "bench", "collect", str(runs), "--format", "json")
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)[0]["runs_loaded"] == 2
    lines = done.stderr.splitlines()
    assert lines[0] == f"Error: {len(BAD_RUNS) + 1} file(s) not loaded (the others were):"
    for name, (_, fieldname) in BAD_RUNS.items():
        (line,) = [x for x in lines if f"/{name}.json" in x]
        assert f", field {fieldname}" in line, line
    assert any("nested.json: not a readable run JSON (nested too deep)" in x for x in lines)
    con = duckdb.connect(str(db), read_only=True)
    try:
        ids = {r[0] for r in con.execute("SELECT run_id FROM bench_runs").fetchall()}
        bad_points = con.execute(
            "SELECT count(*) FROM calibration WHERE NOT isfinite(value) OR value <= 0"
        ).fetchone()[0]
    finally:
        con.close()
    assert ids == {good["run"]["run_id"], "extra-null"} and bad_points == 0


@pytest.mark.fault("silent or unbounded", cases=1)
def test_a_run_file_past_the_size_cap_is_refused_before_it_is_parsed(tmp_path: Path):
    import gzip

    from advisor.harness.results import validate

    bomb = tmp_path / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=1) as fh:
        chunk = b" " * 2**20
        for _ in range(validate.MAX_RUN_BYTES // 2**20 + 1):
            fh.write(chunk)
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "bench", "collect", str(bomb))
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert "bomb.json.gz: not a readable run JSON (over 64 MiB once decompressed)" in done.stderr


@pytest.mark.fault("implausible bench values", cases=2)
def test_bench_import_refuses_an_absurd_ttft_and_a_boolean_core_count_and_imports_the_rest(
    tmp_path: Path,
):
    fix = Path(__file__).parent / "fixtures" / "bench"
    doc = json.loads((fix / "vllm-bench-serve-c8.json").read_text())
    files = []
    for name, change in (("huge", {"median_ttft_ms": 1e308}), ("true", {"cores": True})):
        files.append(tmp_path / f"{name}.json")
        files[-1].write_text(json.dumps({**doc, **change}))
    db = tmp_path / "a.duckdb"
    good = str(fix / "vllm-bench-serve-c32.json")
    done = _advisor(db, "bench", "import", good, *map(str, files), "--format", "json")
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert {p["source_ref"] for p in json.loads(done.stdout)} == {"vllm-bench-serve-c32.json"}
    assert "huge.json, field value: 1e+308 ms is over a week: not a ttft_p50_ms" in done.stderr
    assert "true.json, field cores: True is not a whole number" in done.stderr


USAGE_HEADER = HEADER + "|TotalCPU|TRESUsageInTot|TRESUsageInMax"


def _usage_row(job: int, **fields: str) -> str:
    """A 4-GPU, 8-CPU, one-hour job with a plausible usage, ``fields`` overriding cells (billing
    and cpu rewrite their AllocTRES key)."""
    names = USAGE_HEADER.split("|")
    cells = (_row(job, 4) + "|01:00:00|gres/gpuutil=200|gres/gpuutil=90").split("|")
    for name, value in fields.items():
        i = names.index("AllocTRES")
        if name in ("billing", "cpu"):
            cells[i] = cells[i].replace(f"{name}=8", f"{name}={value}", 1)
        else:
            cells[names.index(name)] = value
    return "|".join(cells)


@pytest.mark.fault("implausible record values", cases=11)
def test_implausible_usage_and_identity_values_are_refused_by_field_the_same_in_every_field(
    tmp_path: Path,
):
    """Issue 38 items 6 and 7: each was stored, exit 0, no word. A usage or exit code fault keeps
    the job with that value NULL; an identity or allocation fault rejects the record."""
    rows = [
        _usage_row(1),
        _usage_row(2, TotalCPU="1157407407407407-00:00:00"),  # 1e20 s
        _usage_row(3, TotalCPU="100-00:00:00"),  # 100 days from 8 CPUs in an hour
        _usage_row(4, billing="1e20"),
        _usage_row(5, TRESUsageInTot="gres/gpuutil=5000"),  # a mean of 1250% on 4 GPUs
        _usage_row(6, TRESUsageInMax="gres/gpuutil=5000"),
        _usage_row(7, UID=str(2**63 - 1)),
        _usage_row(8, cpu=str(2**31 - 1)),
        _usage_row(9, NNodes=str(2**31 - 1)),
        _usage_row(10, ExitCode="abc:-9"),
        _usage_row(11, Submit="Unknown"),
        _usage_row(12, Submit="None"),
    ]
    text = tmp_path / "sacct.txt"
    text.write_text("\n".join([USAGE_HEADER, *rows]) + "\n")
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(text), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    assert (s["inserted"], s["rejected"]) == (6, 6)
    con = duckdb.connect(str(db), read_only=True)
    try:
        jobs = {
            r[0]: r[1:]
            for r in con.execute(
                "SELECT job_id_raw, cpu_used_s, gpu_util_mean_pct, gpu_util_max_pct, exit_code "
                "FROM jobs"
            ).fetchall()
        }
        rejects = dict(
            con.execute("SELECT line_no, field || ': ' || reason FROM rejects").fetchall()
        )
    finally:
        con.close()
    assert jobs == {
        1: (3600.0, 50.0, 90.0, "0:0"),
        2: (None, 50.0, 90.0, "0:0"),
        3: (None, 50.0, 90.0, "0:0"),
        5: (3600.0, None, 90.0, "0:0"),
        6: (3600.0, 50.0, None, "0:0"),
        10: (3600.0, 50.0, 90.0, None),
    }
    expected = {
        3: "TotalCPU: not a plausible usage: TotalCPU 1157407407407407-00:00:00 is more than",
        4: "TotalCPU: not a plausible usage: TotalCPU 100-00:00:00 is more than its CPUs",
        5: "AllocTRES: not a TRES list",
        6: "TRESUsageInTot: not a plausible usage: gres/gpuutil 5000 is not a percent of at most",
        7: "TRESUsageInMax: not a plausible usage: gres/gpuutil 5000 is not a percent of at most",
        8: "UID: not a user id",
        9: "AllocTRES: not a TRES list",
        10: "NNodes: not a whole number of nodes",
        11: "ExitCode: not an exit code RC:SIGNAL",
        12: "Submit: not a known time",
        13: "Submit: not a known time",
    }
    assert set(rejects) == set(expected)
    for line, start in expected.items():
        assert rejects[line].startswith(start), (line, rejects[line])


@pytest.mark.fault("unknown submit time", cases=2)
def test_a_sacct_json_job_without_a_submit_time_is_rejected_naming_submit(tmp_path: Path):
    doc = json.loads((Path(__file__).parent / "fixtures/ingest/sacct-v0.0.41.json").read_text())
    first = doc["jobs"][0]
    gone, zero = json.loads(json.dumps(first)), json.loads(json.dumps(first))
    gone.pop("time")
    zero["time"]["submission"] = 0
    gone["job_id"], zero["job_id"] = 900001, 900002
    doc["jobs"] += [gone, zero]
    path = tmp_path / "sacct.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(path), "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    assert s["rejected"] == 2 and s["inserted"] == len(doc["jobs"]) - 2
    assert all("field Submit: not a known time" in r for r in s["first_reasons"])
    con = duckdb.connect(str(db), read_only=True)
    try:
        old = con.execute("SELECT count(*) FROM jobs WHERE submit < '2000-01-01'").fetchone()[0]
    finally:
        con.close()
    assert old == 0


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True, text=True)


@pytest.mark.fault("exit codes", cases=4)
def test_bad_option_values_are_usage_errors_not_tracebacks_or_empty_answers(tmp_path: Path):
    """Issue 38 items 8 and 9: each exited 0 with an empty table, 3, or a traceback."""
    cases = [
        ("bench", "runs", "--status", "bogus", "--db", str(tmp_path / "a.duckdb")),
        ("bench", "curve", str(tmp_path), "--tolerance", "-1"),
        ("bench", "replicate", str(tmp_path), str(tmp_path), "--tolerance", "-1"),
        ("bench", "import", str(tmp_path / "x.json"), "--cores", "0"),
    ]
    for args in cases:
        done = _run(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "Invalid value for '--" in done.stderr, (args, done.stderr)


@pytest.mark.fault("exit codes", cases=2)
def test_an_unusable_database_file_is_bad_input_as_the_docs_say(tmp_path: Path):
    folder = tmp_path / "folder.duckdb"
    folder.mkdir()
    other = tmp_path / "other.duckdb"
    other.write_text("not a database\n")
    for db in (folder, other):
        for args in (("ratios",), ("ingest", str(tmp_path / "none.txt"))):
            done = _run(*args, "--db", str(db))
            assert done.returncode in (3, 4) and "Traceback" not in done.stderr, done.stderr
        done = _run("ratios", "--db", str(db))
        assert done.returncode == 3
        assert done.stderr.startswith(f"Error: {db}: cannot open read-only: ")


@pytest.mark.fault("tracebacks on values", cases=1)
def test_a_pricing_file_that_is_not_utf8_is_named_with_its_line(tmp_path: Path):
    bad = tmp_path / "prices.csv"
    bad.write_bytes(b"kind,name\n\xff\xfeH100,1\n")
    done = _run("recommend", "--gpu-type", "H100", "--gpus", "4", "--pricing", str(bad))
    assert done.returncode == 3 and "Traceback" not in done.stderr
    assert (
        done.stderr.strip() == f"Error: {bad}:2: not UTF-8 text (byte 0xff); save the file as UTF-8"
    )


@pytest.mark.fault("tracebacks on values", cases=1)
def test_a_cluster_name_too_long_for_a_folder_is_refused_and_nothing_is_exported(tmp_path):
    cells = _row(1, 2).split("|")
    cells[2] = "c" * 300
    text = tmp_path / "sacct.txt"
    text.write_text(f"{HEADER}\n{'|'.join(cells)}\n{_row(2, 1)}\n")
    db = tmp_path / "a.duckdb"
    assert _advisor(db, "ingest", str(text)).returncode == 0
    out = tmp_path / "dataset"
    done = _advisor(db, "export", "parquet", str(out))
    assert done.returncode == 3 and "Traceback" not in done.stderr, done.stderr
    assert "is 300 bytes long: its Parquet folder (cluster=NAME) would pass" in done.stderr
    assert not list(out.rglob("*.parquet"))


@pytest.mark.fault("exit codes", cases=1)
def test_metrics_serve_ends_on_ctrl_c_with_the_documented_130(tmp_path: Path):
    import signal
    import socket
    import time
    import urllib.error
    import urllib.request

    text = tmp_path / "sacct.txt"
    text.write_text(f"{HEADER}\n{_row(1, 2)}\n")
    db = tmp_path / "a.duckdb"
    assert _advisor(db, "ingest", str(text)).returncode == 0
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "advisor", "metrics", "--db", str(db), "--serve", str(port)],
        stderr=subprocess.PIPE,
        text=True,
        # as a terminal's foreground command gets it: a shell's background job (a CI script
        # run with `&`) ignores SIGINT, and so would every process it starts
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        deadline = time.monotonic() + 120
        answered = False
        while not answered and time.monotonic() < deadline:
            try:  # refused until the server listens
                urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=120).close()
                answered = True
            except urllib.error.URLError as exc:
                if not isinstance(exc.reason, ConnectionRefusedError):
                    raise
                time.sleep(0.2)
        assert answered, "the server never answered a scrape"
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=30)
    finally:
        server.kill()
    assert server.returncode == 130, err
    assert err.rstrip().endswith("Interrupted") and "Traceback" not in err


@pytest.mark.fault("silent or unbounded", cases=2)
def test_a_line_past_duckdbs_limit_is_rejected_by_line_not_dropped_in_silence(tmp_path: Path):
    """Issue 38 item 10: past about 64 MB DuckDB's reader dropped such a line with no reject
    (a gzip of a header and 300 MB of NUL loaded nothing, exit 0, no word)."""
    import gzip

    nul = tmp_path / "nul.txt.gz"
    with gzip.open(nul, "wb", compresslevel=1) as fh:
        fh.write(f"{HEADER}\n{_row(1, 1)}\n".encode())
        for _ in range(65):
            fh.write(b"\0" * 2**20)
        fh.write(f"\n{_row(2, 1)}\n".encode())
    long = tmp_path / "long.txt"
    with long.open("wb") as fh:
        fh.write(f"{HEADER}\n{_row(3, 1)}\n".encode())
        for _ in range(65):
            fh.write(b"x" * 2**20)
        fh.write(f"\n{_row(4, 1)}\n".encode())
    db = tmp_path / "a.duckdb"
    for path in (nul, long):
        done = _advisor(db, "ingest", str(path), "--format", "json")
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        (s,) = json.loads(done.stdout)
        assert (s["lines_read"], s["inserted"], s["rejected"]) == (3, 2, 1)
        assert s["first_reasons"][0].startswith("line 3: longer than 4 MiB")
    assert [j for j, *_ in _jobs(db)] == [1, 2, 3, 4]


@pytest.mark.fault("silent or unbounded", cases=1)
def test_local_times_around_a_clock_change_are_stored_with_a_warning_that_says_so(tmp_path):
    """Issue 38 item 10: --tz Europe/Berlin mapped the ambiguous and the skipped 02:30 to one
    UTC time each without a word."""
    rows = [HEADER]
    for job, day in ((1, "2024-03-31"), (2, "2024-10-27"), (3, "2024-06-01")):
        cells = _row(job, 1).split("|")
        cells[9:12] = [f"{day}T02:30:00"] * 3  # Submit, Eligible, Start
        cells[12] = f"{day}T05:00:00"  # End
        cells[13] = "02:30:00"
        rows.append("|".join(cells))
    text = tmp_path / "sacct.txt"
    text.write_text("\n".join(rows) + "\n")
    db = tmp_path / "a.duckdb"
    done = _advisor(db, "ingest", str(text), "--tz", "Europe/Berlin", "--format", "json")
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    (s,) = json.loads(done.stdout)
    assert s["inserted"] == 3
    (warning,) = [w for w in s["warnings"] if "clock change" in w]
    assert warning.startswith(
        "2 jobs have a time in the hour around a clock change of Europe/Berlin"
    )
    # the same file read as UTC has no clock changes to warn of
    done = _advisor(tmp_path / "b.duckdb", "ingest", str(text), "--format", "json")
    assert not [w for w in json.loads(done.stdout)[0]["warnings"] if "clock change" in w]
