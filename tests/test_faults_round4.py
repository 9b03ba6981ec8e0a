"""Issue 38's faults, at the level a user meets them: the installed console script on files an
attacker or a careless admin could hand it, and a real DuckDB file afterwards.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import duckdb

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
