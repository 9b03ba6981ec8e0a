"""Correct on every site's export (issues 22 and 20.8): the shapes of tests/fixtures/ingest/shapes
loaded into a real DuckDB file, every line read accounted for, array tasks without JobIDRaw
kept under their own key, bad values rejected with their field and line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from advisor.ingest import IngestOptions, IngestSummary, ingest_files

SHAPES = Path(__file__).resolve().parent / "fixtures" / "ingest" / "shapes"
HEADERLESS = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "Partition",
    "State",
    "Submit",
    "Start",
    "End",
    "Elapsed",
    "AllocTRES",
)
FIXTURES: dict[str, IngestOptions] = {
    "pipe-parsable2.txt": IngestOptions(),
    "parsable-trailing.txt": IngestOptions(),
    "delimiter-multichar.txt": IngestOptions(delimiter="^|^"),
    "headerless-ranges.txt": IngestOptions(fields=HEADERLESS),
    "array-no-jobidraw.txt": IngestOptions(),
    "array-with-jobidraw.txt": IngestOptions(),
    "no-elapsed.txt": IngestOptions(),
    "bad-values.txt": IngestOptions(),
    "jobcomp.log": IngestOptions(),
    "sacct-v0.0.40.json": IngestOptions(),
}


def _rows(db: Path, sql: str, params: list[object] | None = None) -> list[tuple[Any, ...]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def _accounted(s: IngestSummary) -> int:
    return s.inserted + s.updated + s.unchanged + s.rejected + s.duplicates + s.steps_folded


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_every_line_read_is_accounted_for_in_every_fixture(name: str, db_path: Path) -> None:
    [first] = ingest_files(db_path, [SHAPES / name], FIXTURES[name])
    assert first.lines_read > 0
    assert _accounted(first) == first.lines_read, first
    [again] = ingest_files(db_path, [SHAPES / name], FIXTURES[name])
    assert _accounted(again) == again.lines_read, again
    assert (again.inserted, again.updated) == (0, 0)
    [(stored,)] = _rows(db_path, "SELECT count(*) FROM jobs")
    assert stored == first.inserted  # nothing stored twice


MINIMAL = "array-no-jobidraw.txt"
MINIMAL_ROWS = [  # job_id, array job, task, gpus, elapsed_s
    ("12345", None, None, 0, 10800),
    ("1234_5", 1234, 5, 2, 7200),
    ("123_45", 123, 45, 1, 3600),
]


def test_array_tasks_without_jobidraw_are_three_rows_not_one_invented_id(db_path: Path) -> None:
    [s] = ingest_files(db_path, [SHAPES / MINIMAL])
    assert (s.inserted, s.rejected, s.steps_folded) == (3, 0, 1)
    rows = _rows(
        db_path,
        "SELECT job_id, array_job_id, array_task_id, gpus, elapsed_s, job_id_raw"
        " FROM jobs ORDER BY job_id",
    )
    assert [r[:5] for r in rows] == MINIMAL_ROWS
    raw = {r[0]: r[5] for r in rows}
    assert raw["12345"] == 12345  # the real job 12345 is itself, not 123_45 read as 12345
    assert raw["123_45"] < 0 and raw["1234_5"] < 0 and raw["123_45"] != raw["1234_5"]


def test_installed_advisor_ingest_stores_the_minimal_array_case(tmp_path: Path) -> None:
    exe = Path(sys.executable).parent / "advisor"
    assert exe.exists(), "the console script: pip install -e . (scripts/dev-setup)"
    db = tmp_path / "a.duckdb"
    done = subprocess.run(
        [str(exe), "ingest", str(SHAPES / MINIMAL), "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [doc] = json.loads(done.stdout)
    assert (doc["rows_read"], doc["inserted"], doc["rejected"]) == (3, 3, 0)
    rows = _rows(
        db, "SELECT job_id, array_job_id, array_task_id, gpus, elapsed_s FROM jobs ORDER BY job_id"
    )
    assert rows == MINIMAL_ROWS


@pytest.mark.parametrize("order", ["without-first", "with-first"])
def test_a_task_loaded_with_and_without_jobidraw_is_one_row(order: str, db_path: Path) -> None:
    files = [SHAPES / MINIMAL, SHAPES / "array-with-jobidraw.txt"]
    if order == "with-first":
        files.reverse()
    _a, b = ingest_files(db_path, files)
    rows = _rows(db_path, "SELECT job_id, job_id_raw, gpus FROM jobs ORDER BY job_id")
    assert rows == [("12345", 12345, 0), ("1234_5", 1239, 2), ("123_45", 168, 1)]
    [(gpu_seconds,)] = _rows(db_path, "SELECT sum(gpus * elapsed_s) FROM jobs")
    assert gpu_seconds == 1 * 3600 + 2 * 7200  # counted once
    if order == "without-first":  # the two tasks took their real raw ids
        assert (b.inserted, b.updated, b.unchanged) == (0, 2, 1)
    else:  # 123_45 is updated by what its .batch step tells (not interactive), the rest kept
        assert (b.inserted, b.updated, b.unchanged) == (0, 1, 2)


def test_the_same_task_with_and_without_jobidraw_in_one_file_is_one_row(
    db_path: Path, tmp_path: Path
) -> None:
    f = tmp_path / "both.txt"
    f.write_text(
        "JobID|JobIDRaw|State|Submit|Elapsed|AllocTRES\n"
        "123_45|168|COMPLETED|2024-01-01T00:00:00|01:00:00|cpu=4,gres/gpu=1\n"
        "123_45||COMPLETED|2024-01-01T00:00:00|01:00:00|cpu=4,gres/gpu=1\n"
    )
    [s] = ingest_files(db_path, [f])
    assert (s.inserted, s.duplicates, s.rejected) == (1, 1, 0)
    assert _rows(db_path, "SELECT job_id, job_id_raw FROM jobs") == [("123_45", 168)]


BAD = {  # physical line -> field rejected
    2: "AllocTRES",  # cpu=-4
    3: "AllocTRES",  # cpu=3.5
    4: "AllocTRES",  # mem=-5G
    5: "ElapsedRaw",  # -60
    6: "End",  # before Start
    7: "AllocTRES",  # gres/gpu:=4
    8: "AllocTRES",  # gres/gpu twice
    9: "Submit",  # epoch -5
    10: "Start",  # 0x20
    11: "JobIDRaw",  # 0x20
    12: "ElapsedRaw",  # 1e3
    14: None,  # a binary line: not glued into line 13's JobName
}


def test_bad_values_are_rejected_naming_field_and_line(db_path: Path) -> None:
    [s] = ingest_files(db_path, [SHAPES / "bad-values.txt"])
    got = dict(_rows(db_path, "SELECT line_no, field FROM rejects ORDER BY line_no"))
    assert got == BAD
    assert s.rejected == len(BAD)
    jobs = dict(_rows(db_path, "SELECT job_id, job_name FROM jobs"))
    assert jobs == {"9112": "good", "9113": "after-binary"}
    [(reason,)] = _rows(db_path, "SELECT reason FROM rejects WHERE line_no = 6")
    assert reason == "before Start"


@pytest.mark.parametrize("text", ["2353407_3", "+5", "-5", "0x20", "1e3", " 12", "1_000", "3.5"])
def test_only_plain_digits_cast_to_a_number(text: str, db_path: Path) -> None:
    """Each ingest SQL macro for ids, counts and epochs refuses DuckDB's lenient forms."""
    from advisor.ingest import pipeline

    con = duckdb.connect(str(db_path))
    try:
        pipeline.prepare(con)
        row = con.execute(
            "SELECT ing_uint(?), ing_count(?), ing_ts_epoch(?), ing_dur_s(?)",
            [text, text, text, text],
        ).fetchone()
    finally:
        con.close()
    assert row == (None, None, None, None)


def test_duplicates_are_counted_and_a_differing_one_is_rejected_with_its_line(
    db_path: Path,
) -> None:
    [s] = ingest_files(
        db_path, [SHAPES / "headerless-ranges.txt"], IngestOptions(fields=HEADERLESS)
    )
    assert (s.lines_read, s.inserted, s.duplicates, s.rejected) == (6, 3, 1, 2)
    rejects = _rows(db_path, "SELECT line_no, raw FROM rejects ORDER BY line_no")
    # 8100's pending range is stored once (the later of two snapshots is not knowable:
    # the first line read is kept); 8200 RUNNING loses to its COMPLETED line
    assert [r[0] for r in rejects] == [2, 5]
    assert rejects[1][1].startswith("8200|8200|c2|gpu|RUNNING|")
    states = dict(_rows(db_path, "SELECT job_id, state FROM jobs"))
    assert states == {"8100_[9-11,20]": "PENDING", "8100_1": "COMPLETED", "8200": "COMPLETED"}


def test_an_orphan_step_reject_keeps_its_physical_line_and_text(db_path: Path) -> None:
    [s] = ingest_files(db_path, [SHAPES / "no-elapsed.txt"])
    [(line, raw)] = _rows(db_path, "SELECT line_no, raw FROM rejects")
    assert line == 4 and raw.startswith("9003.batch|9003.batch|COMPLETED|")
    assert all("line None" not in r for r in s.first_reasons)


def test_elapsed_comes_from_start_and_end_and_an_unknown_state_is_null_and_counted(
    db_path: Path,
) -> None:
    [s] = ingest_files(db_path, [SHAPES / "no-elapsed.txt"])
    rows = dict(
        (r[0], r[1:])
        for r in _rows(db_path, "SELECT job_id, elapsed_s, state, state_raw FROM jobs")
    )
    assert rows == {"9001": (7200, "COMPLETED", "COMPLETED"), "9002": (600, None, "FOO")}
    assert s.unknown_states == 1 and "state" in s.warnings[0]


def test_none_assigned_is_no_node_list_and_delimiters_give_the_same_rows(db_path: Path) -> None:
    out = {}
    for name in ("pipe-parsable2.txt", "parsable-trailing.txt", "delimiter-multichar.txt"):
        db = db_path.with_name(name + ".duckdb")
        ingest_files(db, [SHAPES / name], FIXTURES[name])
        out[name] = _rows(db, "SELECT * EXCLUDE (ingest_id, updated_at) FROM jobs ORDER BY job_id")
    assert (
        out["pipe-parsable2.txt"] == out["parsable-trailing.txt"] == out["delimiter-multichar.txt"]
    )
    nodes = dict(_rows(db, "SELECT job_id, node_list FROM jobs"))
    assert nodes["7010_[3-5]"] is None and nodes["7020"] is None and nodes["7001"] == "g01"


def test_sacct_json_fills_requested_memory_and_keeps_required_cpus(db_path: Path) -> None:
    ingest_files(db_path, [SHAPES / "sacct-v0.0.40.json"])
    rows = {
        r[0]: r[1:] for r in _rows(db_path, "SELECT job_id, req_mem_mb, req_cpus, cpus FROM jobs")
    }
    # required.memory_per_node x 1 node; required.CPUs (2) wins over tres.requested cpu (8)
    assert rows["5001"] == (65536, 2, 8)
    assert rows["5002_1"] == (16384, 4, 4)
