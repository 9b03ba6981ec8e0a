"""Real jobs on the real sandbox, loaded from what real sacct prints: files and `--sacct` live.

The session fixture ``submitted`` (conftest.py) submits the job mix of jobset.py as three Unix
users and captures sacct's outputs into a temp dir; every test here loads one of them into a
fresh DuckDB file and checks each allocation's CPUs, GPUs, GPU type, state, account, partition
and times (against ``scontrol show job``). Skipped, loudly, without the sandbox.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest

from advisor.ingest import IngestOptions, ingest_files
from tests.slurm import capture, checks, jobset
from tests.slurm.test_captured_sacct import NOHEADER_FIELDS, json_expectations

pytestmark = pytest.mark.slurm


def test_every_submitted_job_ended_in_the_state_it_was_meant_to(submitted):
    _, results = submitted
    states = {r.key: r.expected.state for r in results}
    assert states["failed"] == "FAILED"
    assert len(results) == 19
    for r in results:
        recs = {rec["JobId"]: rec for rec in jobset.scontrol_job(r.job_id_raw)}
        assert recs[str(r.job_id_raw)]["JobState"] == r.expected.state, r.key


def test_live_sacct_P_output_loads_every_job_as_submitted(submitted, tmp_path):
    out, results = submitted
    [s] = ingest_files(tmp_path / "a.duckdb", [out / capture.FILES["wide"]])
    assert (s.rows_read, s.rejected) == (19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", results)


def test_live_sacct_P_with_a_custom_delimiter_loads_every_job_as_submitted(submitted, tmp_path):
    out, results = submitted
    [s] = ingest_files(tmp_path / "a.duckdb", [out / capture.FILES["delimiter"]])
    assert (s.rows_read, s.rejected) == (19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", results)


def test_live_sacct_noheader_with_a_field_list_loads_every_job_as_submitted(submitted, tmp_path):
    out, results = submitted
    opts = IngestOptions(fields=tuple(capture.NOHEADER.split(",")))
    [s] = ingest_files(tmp_path / "a.duckdb", [out / capture.FILES["noheader"]], opts)
    assert (s.rows_read, s.rejected) == (19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", results, NOHEADER_FIELDS)


def test_live_sacct_json_loads_every_job_as_submitted(submitted, tmp_path):
    out, results = submitted
    [s] = ingest_files(tmp_path / "a.duckdb", [out / capture.FILES["json"]])
    assert (s.rows_read, s.rejected) == (19, 0)
    checks.assert_jobs_loaded(tmp_path / "a.duckdb", json_expectations(results))


def _ingest_live(submitted, tmp_path):  # type: ignore[no-untyped-def]
    _, results = submitted
    first = min(dt.datetime.fromisoformat(r.submit) for r in results)
    start = (first - dt.timedelta(minutes=1)).isoformat()
    end = (dt.datetime.now(dt.UTC).replace(tzinfo=None) + dt.timedelta(minutes=1)).isoformat()
    db = tmp_path / "live.duckdb"
    argv = [
        sys.executable,
        "-m",
        "advisor",
        "ingest",
        "--sacct",
        "--start",
        start,
        "--end",
        end,
        "--db",
        str(db),
        "--format",
        "json",
    ]
    cp = subprocess.run(
        argv, capture_output=True, text=True, env=jobset.slurm_env(), timeout=300, check=False
    )
    assert cp.returncode == 0, cp.stderr
    summaries = json.loads(cp.stdout)
    assert sum(s["rejected"] for s in summaries) == 0
    return db, results


def test_advisor_ingest_sacct_runs_the_real_sacct_and_loads_every_started_job_as_submitted(
    submitted, tmp_path
):
    db, results = _ingest_live(submitted, tmp_path)
    checks.assert_jobs_loaded(db, [r for r in results if r.expected.started])


def test_advisor_ingest_sacct_also_finds_the_job_cancelled_while_held(submitted, tmp_path):
    """Real sacct 22.05 leaves a job that was never eligible (held, then cancelled: Eligible
    Unknown) out of `sacct -S A -E B` unless a --state is given (`-s CA` lists it). A live
    ingest that runs only the windowed query never sees such jobs."""
    db, results = _ingest_live(submitted, tmp_path)
    checks.assert_jobs_loaded(db, [r for r in results if not r.expected.started])


def test_live_node_inventory_from_scontrol_has_the_four_sandbox_nodes(submitted, tmp_path):
    from tests.slurm.test_captured_nodes import SHAPES

    db = tmp_path / "n.duckdb"
    argv = [
        sys.executable,
        "-m",
        "advisor",
        "nodes",
        "ingest",
        "--live",
        "--db",
        str(db),
        "--format",
        "json",
    ]
    cp = subprocess.run(
        argv, capture_output=True, text=True, env=jobset.slurm_env(), timeout=120, check=False
    )
    assert cp.returncode == 0, cp.stderr
    doc = json.loads(cp.stdout)
    assert (doc["nodes"], doc["clusters"]) == (4, [jobset.CLUSTER])
    from advisor import store
    from advisor.ingest import nodes

    con = store.connect(db, read_only=True)
    try:
        got = {
            n.node_name: (n.cpus, n.gpus, n.gpu_type, tuple(n.partitions))
            for n in nodes.list_nodes(con, jobset.CLUSTER)
        }
    finally:
        con.close()
    assert got == {k: (v[0], v[5], v[6], v[8]) for k, v in SHAPES.items()}


def test_the_epilog_collector_recorded_every_job_that_ran_and_ingest_joins_it(submitted, tmp_path):
    """The sandbox's slurm.conf runs advisor's node collector as its Epilog (the file alone, as
    a site copies it). The sandbox has no cgroup v2 job tree (proctrack/linuxproc, v1 or no
    cgroups), so each record says pressure is unavailable; the jobs ended as meant to (the
    first test here), and ingest marks them unavailable, not measured."""
    out, results = submitted
    spool = jobset.SANDBOX / "spool" / "pressure.jsonl"
    assert spool.exists(), f"no spool file at {spool}: did the Epilog run?"
    recs = [json.loads(line) for line in spool.read_text().splitlines()]
    by_job: dict[str, list[dict]] = {}
    for rec in recs:
        by_job.setdefault(rec["job_id"], []).append(rec)
    ran = [r for r in results if r.expected.started]
    assert ran
    for r in ran:
        mine = by_job.get(str(r.job_id_raw))
        assert mine, f"{r.key}: no pressure record for job {r.job_id_raw}"
        assert {m["status"] for m in mine} == {"unavailable"}
        assert all(
            m["cluster"] == jobset.CLUSTER and m["schema"] == "advisor.pressure/1" for m in mine
        )
    db = tmp_path / "p.duckdb"
    ingest_files(str(db), [out / capture.FILES["wide"], spool])
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        got = dict(
            con.execute(
                "SELECT job_id_raw, psi_status FROM jobs WHERE job_id_raw IN "
                f"({','.join(str(r.job_id_raw) for r in ran)})"
            ).fetchall()
        )
    finally:
        con.close()
    assert set(got.values()) == {"unavailable"}
