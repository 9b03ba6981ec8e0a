"""Loading real Slurm 22.05 output captured from the sandbox (data/sample/slurm/), no Slurm needed.

Every allocation must come out with the CPUs, GPUs, GPU type, state and account it was
submitted with (tests/slurm/jobset.py says why each number is what it is) and with the times
``scontrol show job`` reported for it. The same checks run live in test_real_slurm.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from advisor.ingest import IngestOptions, ingest_files
from tests.slurm import capture, checks, jobset

CAPTURED = Path(__file__).resolve().parents[2] / "data" / "sample" / "slurm"

# The header-less capture has only these columns (see capture.NOHEADER).
NOHEADER_FIELDS = (
    "cluster",
    "job_id",
    "user",
    "account",
    "partition",
    "state",
    "cpus",
    "gpus",
    "gpu_type",
    "gpu_type_raw",
    "submit",
    "start",
    "end",
)


@pytest.fixture(scope="module")
def expected() -> tuple[dict[str, object], list[jobset.JobResult]]:
    return capture.load_expected(CAPTURED)


def load(db: Path, directory: Path, name: str, options: IngestOptions | None = None):  # type: ignore[no-untyped-def]
    [summary] = ingest_files(db, [directory / capture.FILES[name]], options or IngestOptions())
    return summary


def noheader_options(meta: dict[str, object]) -> IngestOptions:
    return IngestOptions(fields=tuple(str(meta["noheader_fields"]).split(",")))


def json_expectations(jobs: list[jobset.JobResult]) -> list[jobset.JobResult]:
    """Slurm 22.05's sacct --json (openapi/dbv0.0.38) prints exit_code SUCCESS/0 for a job that
    exited 3 (sacct text says 3:0 for the same job); the JSON cannot carry it."""
    return [
        jobset.with_expected(r, exit_code="0:0") if r.expected.state == "FAILED" else r
        for r in jobs
    ]


def test_the_capture_covers_the_whole_job_mix(expected):
    meta, jobs = expected
    assert meta["slurm_version"] == "slurm-wlm 22.05.8"
    keys = {r.key for r in jobs}
    assert keys == {
        "gres-h100-4",
        "gpus-2-cpg-3",
        "gpn-2x2-c4",
        "a100-cpg-8",
        "a100-c16",
        "a100-c3",
        "a100-default",
        "cpu-n4",
        "cpu-default",
        "array-h100_0",
        "array-h100_1",
        "array-h100_2",
        "failed",
        "cancel-pending",
        "cancel-running",
        "salloc-h100-c4",
        "srun-a100",
        "het-gpu-cpu+0",
        "het-gpu-cpu+1",
    }
    assert {r.user for r in jobs} == {"alice", "bob", "carol"}


def test_sacct_P_with_a_wide_field_list_loads_every_job_as_submitted(tmp_path, expected):
    _, jobs = expected
    s = load(tmp_path / "a.duckdb", CAPTURED, "wide")
    assert (s.rows_read, s.inserted, s.rejected) == (19, 19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", jobs)


def test_lines_read_counts_every_job_and_step_record_but_not_the_header(tmp_path):
    s = load(tmp_path / "a.duckdb", CAPTURED, "wide")
    lines = (CAPTURED / capture.FILES["wide"]).read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("JobID|") and len(lines) == 47
    assert s.lines_read == 46  # 19 allocations and 27 steps (ingests.lines_read: records)


def test_sacct_P_with_a_custom_delimiter_loads_every_job_as_submitted(tmp_path, expected):
    _, jobs = expected
    s = load(tmp_path / "a.duckdb", CAPTURED, "delimiter")
    assert (s.rows_read, s.inserted, s.rejected) == (19, 19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", jobs)


def test_sacct_noheader_with_its_field_list_loads_every_job_as_submitted(tmp_path, expected):
    meta, jobs = expected
    s = load(tmp_path / "a.duckdb", CAPTURED, "noheader", noheader_options(meta))
    assert (s.rows_read, s.inserted, s.rejected) == (19, 19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", jobs, NOHEADER_FIELDS)


def test_sacct_json_loads_every_job_as_submitted(tmp_path, expected):
    _, jobs = expected
    s = load(tmp_path / "a.duckdb", CAPTURED, "json")
    assert (s.rows_read, s.inserted, s.rejected) == (19, 19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", json_expectations(jobs))


def test_slurm_22_05_json_really_reports_success_for_the_job_that_exited_3(expected):
    _, jobs = expected
    failed = next(r for r in jobs if r.key == "failed")
    doc = json.loads((CAPTURED / capture.FILES["json"]).read_text(encoding="utf-8"))
    job = next(j for j in doc["jobs"] if j["job_id"] == failed.job_id_raw)
    assert job["state"]["current"] == "FAILED"
    assert job["exit_code"] == {"status": "SUCCESS", "return_code": 0}
    text = (CAPTURED / capture.FILES["wide"]).read_text(encoding="utf-8").splitlines()
    line = next(ln for ln in text if ln.startswith(f"{failed.job_id}|"))
    assert line.split("|")[10] == "3:0"  # ExitCode column of the wide capture


def test_jobcomp_log_loads_every_job_as_far_as_requested_tres_can_tell(tmp_path, expected):
    """jobcomp/filetxt writes the requested TRES: an untyped --gpus=2 has no GPU type there."""
    _, jobs = expected
    s = load(tmp_path / "a.duckdb", CAPTURED, "jobcomp")
    assert (s.rows_read, s.inserted, s.rejected) == (19, 19, 0)
    adjusted = [
        jobset.with_expected(r, gpu_type=None, gpu_type_raw=None) if r.key == "gpus-2-cpg-3" else r
        for r in jobs
    ]
    fields = [f for f in checks.ALL_FIELDS if f not in ("exit_code", "req_cpus")]
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", adjusted, fields)


def test_the_same_jobs_through_another_delimiter_change_nothing(tmp_path):
    db = tmp_path / "a.duckdb"
    load(db, CAPTURED, "wide")
    second = load(db, CAPTURED, "delimiter")
    assert (second.inserted, second.updated, second.unchanged) == (0, 0, 19)


def test_a_narrower_capture_of_the_same_jobs_keeps_what_the_wider_one_loaded(tmp_path, expected):
    """`sacct --noheader` with 13 fields after `sacct -P` with 29: same jobs, same states.
    What only the wide capture carried (job name, node list, requested TRES, exit code,
    submit line) must survive; nothing new was learnt, so nothing may be erased."""
    meta, jobs = expected
    db = tmp_path / "a.duckdb"
    load(db, CAPTURED, "wide")
    kept = ("job_name", "node_list", "req_tres", "exit_code", "submit_line", "req_cpus", "qos")
    sql = f"SELECT job_id_raw, {', '.join(kept)} FROM jobs ORDER BY job_id_raw"  # noqa: S608
    con = duckdb.connect(str(db), read_only=True)
    before = con.execute(sql).fetchall()
    con.close()
    load(db, CAPTURED, "noheader", noheader_options(meta))
    con = duckdb.connect(str(db), read_only=True)
    after = con.execute(sql).fetchall()
    con.close()
    lost = [
        f"job {b[0]}: {k} {x!r} -> {y!r}"
        for b, a in zip(before, after, strict=True)
        for k, x, y in zip(kept, b[1:], a[1:], strict=True)
        if x != y
    ]
    assert not lost, "a narrower load erased known values:\n  " + "\n  ".join(lost[:12])
    checks.assert_jobs_loaded(db, jobs)


def test_loading_the_same_real_capture_twice_changes_nothing(tmp_path, expected):
    db = tmp_path / "a.duckdb"
    load(db, CAPTURED, "wide")
    again = load(db, CAPTURED, "wide")
    assert (again.inserted, again.updated, again.unchanged) == (0, 0, 19)


def test_the_advisor_ingest_command_loads_the_header_less_capture_given_its_fields(
    cli, tmp_path, expected
):
    meta, jobs = expected
    db = tmp_path / "a.duckdb"
    code, out, err = cli(
        "ingest",
        str(CAPTURED / capture.FILES["noheader"]),
        "--fields",
        str(meta["noheader_fields"]),
        "--db",
        str(db),
        "--format",
        "json",
    )
    assert code == 0, err
    [summary] = json.loads(out)
    assert (summary["rows_read"], summary["rejected"]) == (19, 0)
    checks.assert_jobs_loaded(db, [r for r in jobs if r.expected.started], NOHEADER_FIELDS)


def test_the_advisor_ingest_command_reads_the_custom_delimiter_capture(cli, tmp_path, expected):
    _, jobs = expected
    db = tmp_path / "a.duckdb"
    code, out, err = cli(
        "ingest",
        str(CAPTURED / capture.FILES["delimiter"]),
        "--delimiter",
        "^|^",
        "--db",
        str(db),
        "--format",
        "json",
    )
    assert code == 0, err
    assert json.loads(out)[0]["inserted"] == 19
    checks.assert_jobs_loaded(db, [r for r in jobs if r.expected.started])


def test_array_tasks_and_het_components_keep_their_ids_and_salloc_is_interactive(
    tmp_path, expected
):
    _, jobs = expected
    db = tmp_path / "a.duckdb"
    load(db, CAPTURED, "wide")
    con = duckdb.connect(str(db), read_only=True)
    rows = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT job_id_raw, array_job_id, array_task_id, het_job_id, het_job_offset,"
            " is_interactive FROM jobs"
        ).fetchall()
    }
    con.close()
    for r in jobs:
        array_job, array_task, het_job, het_offset, interactive = rows[r.job_id_raw]
        if "_" in r.job_id:
            want_array = tuple(int(x) for x in r.job_id.split("_"))
            assert (array_job, array_task) == want_array, r.key
        else:
            assert (array_job, array_task) == (None, None), r.key
        if "+" in r.job_id:
            assert (het_job, het_offset) == tuple(int(x) for x in r.job_id.split("+")), r.key
        else:
            assert (het_job, het_offset) == (None, None), r.key
        if r.key == "salloc-h100-c4":
            assert interactive is True
        elif r.key != "srun-a100":  # a bare srun allocation: either reading is defensible
            assert interactive is False, r.key
