"""What a load may overwrite: a narrower format after sacct text, the same jobs alternately as
text and JSON, a free-text field holding the delimiter anywhere in the line, a requeued job's
stale row, and the ingest log's times. Real Slurm 22.05 exports (data/sample/slurm), a real
DuckDB file."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import duckdb
import pytest

from advisor.datainfo import freshness
from advisor.ingest import IngestOptions, ingest_files

SAMPLE = Path(__file__).resolve().parent.parent / "data" / "sample" / "slurm"
TEXT, JSON, JOBCOMP = SAMPLE / "sacct-P-wide.txt", SAMPLE / "sacct.json", SAMPLE / "jobcomp.log"
COLS = (
    "job_id_raw, submit_line, exclusive, gpus, gpu_type, mem_mb, state, state_raw, exit_code,"
    " alloc_tres, cpus"
)


def _rows(db: Path) -> dict[int, tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return {r[0]: r[1:] for r in con.execute(f"SELECT {COLS} FROM jobs").fetchall()}  # noqa: S608
    finally:
        con.close()


@pytest.mark.parametrize("narrower", [JSON, JOBCOMP], ids=["json-0.0.38", "jobcomp"])
def test_a_narrower_format_after_text_keeps_what_text_stored(db_path: Path, narrower: Path) -> None:
    ingest_files(db_path, [TEXT])
    before = _rows(db_path)
    # the sample holds what the issue describes: a 4-GPU job, a typed GPU, "CANCELLED by"
    assert before[24][2:4] == (4, "H100") and before[35][6] == "CANCELLED by 1003"
    assert all(r[0] for r in before.values())  # every job has its submit line
    [s] = ingest_files(db_path, [narrower])
    assert _rows(db_path) == before
    if narrower == JSON:
        # its time.total is CPU time used that the text export lacks: news for every job,
        # and the only column it may change (issue 23's usage fields)
        assert s.updated == 19 and _usage_filled(db_path) == 19
    else:
        assert s.updated <= 1  # jobcomp's time limit of a pending-cancelled job is news (job 35)


def _usage_filled(db: Path) -> int:
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT count(*) FROM jobs WHERE cpu_used_s IS NOT NULL").fetchone()
        return int(row[0]) if row else 0
    finally:
        con.close()


def test_the_same_jobs_alternately_as_text_and_json_count_as_unchanged(db_path: Path) -> None:
    [first] = ingest_files(db_path, [TEXT])
    assert first.inserted == 19
    [news] = ingest_files(db_path, [JSON])  # once: the CPU time used that text lacks
    assert (news.inserted, news.updated) == (0, 19)
    for source in (TEXT, JSON, TEXT, JSON):
        [s] = ingest_files(db_path, [source])
        assert (s.inserted, s.updated, s.unchanged) == (0, 0, 19), source.name


def test_json_alone_still_loads_the_allocation_and_jobcomp_alone_its_request(
    db_path: Path, tmp_path: Path
) -> None:
    """The columns a format lacks are only protected on update: a first load still fills
    them from what it has."""
    ingest_files(db_path, [JOBCOMP])
    assert _rows(db_path)[24][2:4] == (4, "H100")
    other = tmp_path / "json.duckdb"
    ingest_files(other, [JSON])
    assert _rows(other)[24][0] is None  # 22.05's JSON has no submit line


ALL_HEADER = (
    "Account|AdminComment|AllocCPUS|AllocTRES|Cluster|Comment|DerivedExitCode|Elapsed|"
    "ElapsedRaw|Eligible|End|ExitCode|JobID|JobIDRaw|JobName|NCPUS|NNodes|NodeList|Partition|"
    "ReqCPUS|ReqMem|ReqTRES|Start|State|Submit|SubmitLine|Suspended|SystemComment|Timelimit|"
    "TimelimitRaw|UID|User|WorkDir"
)


def _all_line(job: int, submit_line: str, name: str = "pipe") -> str:
    values = {
        "Account": "physics",
        "AdminComment": "",
        "AllocCPUS": "8",
        "AllocTRES": "billing=8,cpu=8,gres/gpu:h100=2,gres/gpu=2,mem=16000M,node=1",
        "Cluster": "c1",
        "Comment": "",
        "DerivedExitCode": "0:0",
        "Elapsed": "00:01:00",
        "ElapsedRaw": "60",
        "Eligible": "2026-11-29T10:00:00",
        "End": "2026-11-29T10:01:00",
        "ExitCode": "0:0",
        "JobID": str(job),
        "JobIDRaw": str(job),
        "JobName": name,
        "NCPUS": "8",
        "NNodes": "1",
        "NodeList": "hnode1",
        "Partition": "gpu",
        "ReqCPUS": "8",
        "ReqMem": "16000M",
        "ReqTRES": "billing=8,cpu=8,gres/gpu=2,mem=16000M,node=1",
        "Start": "2026-11-29T10:00:00",
        "State": "COMPLETED",
        "Submit": "2026-11-29T10:00:00",
        "SubmitLine": submit_line,
        "Suspended": "00:00:00",
        "SystemComment": "",
        "Timelimit": "01:00:00",
        "TimelimitRaw": "60",
        "UID": "1001",
        "User": "alice",
        "WorkDir": "/home/alice",
    }
    return "|".join(values[k] for k in ALL_HEADER.split("|"))


def test_format_all_rejoins_a_pipe_in_the_submit_line_wherever_it_stands(
    db_path: Path, tmp_path: Path
) -> None:
    src = tmp_path / "all.txt"
    src.write_text(
        "\n".join(
            [
                ALL_HEADER,
                _all_line(7, "sbatch --wrap sleep 1 | cat"),
                _all_line(8, "sbatch x.sh", name="a|b|c"),
                _all_line(9, "sbatch y.sh"),
            ]
        )
        + "\n",
        encoding="utf-8",
    )
    [s] = ingest_files(db_path, [src])
    assert (s.inserted, s.rejected) == (3, 0), s.first_reasons
    con = duckdb.connect(str(db_path), read_only=True)
    rows = {
        r[0]: r[1:]
        for r in con.execute("SELECT job_id_raw, submit_line, job_name FROM jobs").fetchall()
    }
    con.close()
    assert rows == {
        7: ("sbatch --wrap sleep 1 | cat", "pipe"),
        8: ("sbatch x.sh", "a|b|c"),
        9: ("sbatch y.sh", "pipe"),
    }


def test_two_adjacent_free_text_fields_that_could_each_hold_the_pipe_are_named(
    db_path: Path, tmp_path: Path
) -> None:
    src = tmp_path / "adjacent.txt"
    src.write_text(
        "JobID|JobIDRaw|Cluster|AllocTRES|Submit|State|SubmitLine|JobName\n"
        "5|5|c1|cpu=1|2026-11-29T10:00:00|COMPLETED|sbatch x.sh|a|b\n"
        "6|6|c1|cpu=1|2026-11-29T10:00:00|COMPLETED|sbatch y.sh|plain\n",
        encoding="utf-8",
    )
    [s] = ingest_files(db_path, [src])
    assert (s.inserted, s.rejected) == (1, 1)
    con = duckdb.connect(str(db_path), read_only=True)
    [(line, field, reason)] = con.execute("SELECT line_no, field, reason FROM rejects").fetchall()
    con.close()
    assert (line, field) == (2, "SubmitLine,JobName")
    assert "SubmitLine and JobName" in reason


def _requeue_file(path: Path, submit: str, state: str, end: str) -> Path:
    path.write_text(
        "JobID|JobIDRaw|Cluster|AllocTRES|Submit|Start|End|State\n"
        f"77|77|c1|cpu=4,gres/gpu=1|{submit}|{submit}|{end}|{state}\n"
        "78|78|c1|cpu=4,gres/gpu=1|2026-11-29T09:00:00|2026-11-29T09:00:00|Unknown|RUNNING\n",
        encoding="utf-8",
    )
    return path


def _states(db: Path) -> list[tuple[object, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(
            "SELECT job_id_raw, submit::VARCHAR, state, state_raw FROM jobs ORDER BY 1, 2"
        ).fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("order", ["stale first", "stale last"])
def test_a_requeued_jobs_later_record_supersedes_its_stale_running_row(
    db_path: Path, tmp_path: Path, order: str
) -> None:
    stale = _requeue_file(tmp_path / "a.txt", "2026-11-29T10:00:00", "RUNNING", "Unknown")
    later = _requeue_file(
        tmp_path / "b.txt", "2026-11-29T12:00:00", "COMPLETED", "2026-11-29T13:00:00"
    )
    ingest_files(db_path, [stale, later] if order == "stale first" else [later, stale])
    assert _states(db_path) == [
        (
            77,
            "2026-11-29 10:00:00",
            "REQUEUED",
            "RUNNING (superseded by a later record of this job id)",
        ),
        (77, "2026-11-29 12:00:00", "COMPLETED", "COMPLETED"),
        (78, "2026-11-29 09:00:00", "RUNNING", "RUNNING"),  # no later record: still running
    ]


def test_an_ingest_records_its_real_start_and_counts_for_the_file_cluster(
    db_path: Path, tmp_path: Path
) -> None:
    t0 = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    ingest_files(db_path, [TEXT], IngestOptions(cluster="default"))
    con = duckdb.connect(str(db_path), read_only=True)
    [(started, finished, cluster)] = con.execute(
        "SELECT started_at, finished_at, cluster FROM ingests"
    ).fetchall()
    [row] = freshness(con)
    con.close()
    assert t0 <= started < finished  # a real duration, not the transaction's start twice
    assert cluster == "default"
    assert (row.cluster, row.last_ingest) == ("advisor-sandbox", finished)


def test_jobcomp_after_text_keeps_the_partition_node_list_and_exit_code_text_stored(
    db_path: Path, tmp_path: Path
) -> None:
    """Issue 30 C16: jobcomp wrote its partition list, '(null)' and its exit code over sacct's."""
    text = tmp_path / "t.txt"
    header = "JobID|JobIDRaw|Cluster|Partition|State|ExitCode|Submit|Start|End|NodeList|AllocTRES"
    rows = [
        "7|7|c1|h100|FAILED|1:0|2026-11-29T10:00:00|2026-11-29T10:00:05|2026-11-29T10:01:05"
        "|hnode1|cpu=4,gres/gpu=1,node=1",
        "8|8|c1|gpu|CANCELLED by 1001|0:0|2026-11-29T10:00:00|2026-11-29T10:00:00"
        "|2026-11-29T10:00:00||cpu=4,node=1",
    ]
    text.write_text("\n".join([header, *rows]) + "\n")
    log = tmp_path / "jobcomp.log"
    common = (
        "UserId=alice(1001) GroupId=alice(1001) Name=train TimeLimit=60"
        " SubmitTime=2026-11-29T10:00:00 NodeCnt=1 ProcCnt=4 Tres=cpu=4,gres/gpu=1 Cluster=c1"
    )
    log.write_text(
        f"JobId=7 {common} JobState=FAILED Partition=h100,a100 StartTime=2026-11-29T10:00:05"
        " EndTime=2026-11-29T10:01:05 NodeList=hnode1 ExitCode=0:1\n"
        f"JobId=8 {common} JobState=CANCELLED Partition=gpu StartTime=2026-11-29T10:00:00"
        " EndTime=2026-11-29T10:00:00 NodeList=(null) ExitCode=0:0\n"
    )
    ingest_files(db_path, [text, log])
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        got = con.execute(
            'SELECT job_id_raw, "partition", node_list, exit_code FROM jobs ORDER BY 1'
        ).fetchall()
    finally:
        con.close()
    assert got == [(7, "h100", "hnode1", "1:0"), (8, "gpu", None, "0:0")]
    # a first load of jobcomp still takes what it has, and '(null)' is no node list
    [(_, _, first_nodes)] = [r for r in _jobcomp_alone(tmp_path, log) if r[0] == 8]
    assert first_nodes is None


def _jobcomp_alone(tmp_path: Path, log: Path) -> list[tuple[object, ...]]:
    db = tmp_path / "alone.duckdb"
    ingest_files(db, [log])
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute('SELECT job_id_raw, "partition", node_list FROM jobs').fetchall()
    finally:
        con.close()
