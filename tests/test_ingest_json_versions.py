"""``sacct --json`` of the newer Slurm releases: data_parser v0.0.41 (24.05) to v0.0.45 (26.05).

The fixtures (tests/fixtures/ingest/sacct-v0.0.4[1-5].json) carry every job field of each
version's ``PARSER_ARRAY(JOB)`` in SchedMD/slurm ``src/plugins/data_parser/v0.0.4x/parsers.c``
at the release tags slurm-24-05-8-1, slurm-24-11-7-1, slurm-25-05-8-1, slurm-25-11-7-1 and
slurm-26-05-3-1, with that file's value shapes: job times as plain UNIX numbers (TIMESTAMP),
``time.limit``, ``array.task_id``, ``het.job_offset`` and ``required.memory_per_*`` as
``{set, infinite, number}`` (UINT32/UINT64_NO_VAL), step times as such objects
(TIMESTAMP_NO_VAL), step ids as "123.batch", TRES as lists of ``{type, name, id, count}``.
v0.0.45 adds the job's ``sluid`` (CHANGELOG/slurm-26.05.md: "Add '.jobs[].sluid' field to
... 'sacct --json'") and the step ``submit_line`` ("Print the submit_line for steps when using
--json"). See tests/fixtures/ingest/README.md.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from advisor.ingest import ingest_files
from advisor.ingest.detect import detect_format, sacct_json_version
from advisor.ingest.jsonfmt import DATA_PARSER_RELEASES, data_parser_version, records

FIX = Path(__file__).resolve().parent / "fixtures" / "ingest"
VERSIONS = (41, 42, 43, 44, 45)
T0 = 1767225600  # 2026-01-01T00:00:00Z; each fixture's jobs are v days later


def _jobs(db: Path) -> dict[str, dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute("SELECT * FROM jobs")
        names = [d[0] for d in cur.description]
        return {r[names.index("job_id")]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    finally:
        con.close()


def _utc(epoch: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(epoch, dt.UTC).replace(tzinfo=None)


@pytest.mark.parametrize("v", VERSIONS)
def test_each_version_is_detected_as_sacct_json_with_its_data_parser(v: int) -> None:
    raw = (FIX / f"sacct-v0.0.{v}.json").read_bytes()
    assert detect_format(raw[:65536]) == "sacct-json"
    assert sacct_json_version(raw[:65536]) == f"v0.0.{v}"
    assert data_parser_version(json.loads(raw)["meta"]) == f"v0.0.{v}"
    assert (
        DATA_PARSER_RELEASES[f"v0.0.{v}"]
        == {
            41: "24.05",
            42: "24.11",
            43: "25.05",
            44: "25.11",
            45: "26.05",
        }[v]
    )


def test_older_documents_name_their_version_too() -> None:
    assert sacct_json_version((FIX / "sacct-v0.0.37.json").read_bytes()) == "v0.0.37"
    # 22.05 escapes the slash: "openapi\/dbv0.0.38"
    sample = Path(__file__).resolve().parent.parent / "data" / "sample" / "slurm" / "sacct.json"
    assert sacct_json_version(sample.read_bytes()[:4096]) == "v0.0.38"
    assert data_parser_version({"plugin": {"type": "openapi/dbv0.0.38"}}) == "v0.0.38"
    assert data_parser_version({}) is None and sacct_json_version(b'{"jobs": []}') is None


@pytest.mark.parametrize("v", VERSIONS)
def test_each_version_loads_ids_times_tres_arrays_het_and_memory(v: int, db_path: Path) -> None:
    [s] = ingest_files(db_path, [FIX / f"sacct-v0.0.{v}.json"])
    assert (s.format, s.inserted, s.rejected) == ("sacct-json", 3, 0), s.first_reasons
    jobs = _jobs(db_path)
    t0 = T0 + v * 86400
    gpu = jobs[str(4000 + v)]
    assert (gpu["cluster"], gpu["job_id_raw"], gpu["partition"], gpu["state"]) == (
        "newer",
        4000 + v,
        "h200",
        "COMPLETED",
    )
    # TRES lists: cpu, mem (MB), typed and untyped gpu gres
    assert (gpu["cpus"], gpu["gpus"], gpu["gpu_type"], gpu["mem_mb"]) == (
        16 + v,
        8,
        "H200",
        1024 * v,
    )
    assert (gpu["req_cpus"], gpu["req_gpus"], gpu["nnodes"]) == (16 + v, 8, 2)
    # job times are plain numbers; time.limit is {set, infinite, number} in minutes
    assert (gpu["submit"], gpu["eligible"], gpu["start"], gpu["end"]) == (
        _utc(t0),
        _utc(t0 + 1),
        _utc(t0 + 60),
        _utc(t0 + 3660),
    )
    assert (gpu["elapsed_s"], gpu["timelimit_s"], gpu["exit_code"]) == (3600, 180 * 60, "0:0")
    assert gpu["submit_line"] == f"sbatch --gpus=h200:8 -c {16 + v} serve.sh"
    assert gpu["is_interactive"] is False  # a batch step folded in
    base = 5000 + v * 10
    task = jobs[f"{base}_3"]
    assert (task["job_id_raw"], task["array_job_id"], task["array_task_id"]) == (base + 3, base, 3)
    assert (task["state"], task["end"], task["timelimit_s"], task["gpus"]) == (
        "RUNNING",
        None,
        None,
        1,
    )
    assert task["mem_mb"] == 8192
    het_base = 6000 + v * 10
    het = jobs[f"{het_base}+1"]
    assert (het["job_id_raw"], het["het_job_id"], het["het_job_offset"]) == (
        het_base + 1,
        het_base,
        1,
    )
    assert (het["gpus"], het["gpu_type"], het["state"], het["exit_code"]) == (
        2,
        "H200",
        "FAILED",
        "2:0",
    )


def test_v0_0_45_sluid_and_step_submit_line_do_not_disturb_the_records() -> None:
    raw = (FIX / "sacct-v0.0.45.json").read_bytes()
    doc = json.loads(raw)
    assert doc["jobs"][0]["sluid"].startswith("s") and len(doc["jobs"][0]["sluid"]) == 14
    assert doc["jobs"][0]["steps"][2]["submit_line"] == "srun python serve.py"
    recs, rejects, _ = records(raw, "v45")
    assert rejects == []
    assert [r["jobidraw"] for r in recs[:4]] == ["4045", "4045.batch", "4045.extern", "4045.0"]
    # the same job read from v0.0.44's shape gives the same canonical fields
    recs44, _, _ = records((FIX / "sacct-v0.0.44.json").read_bytes(), "v44")
    fields = ("state", "exitcode", "timelimitraw", "nnodes", "submit")
    assert [recs[0][f] for f in fields[:4]] == [recs44[0][f] for f in fields[:4]]
    assert recs[0]["submit"] == str(T0 + 45 * 86400) and recs[0]["reqcpus"] == "61"
