"""Derived tables (advisor.derived): ingest only ingests, and its callers rebuild the summaries.

Through the installed ``advisor`` console script: ``advisor ingest`` leaves the ratio cube
fresh, so that ``advisor ratios`` (and the read-only dashboard) show the new jobs; ``advisor db
refresh`` rebuilds every derived table of a file loaded through the library, which does not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb

from advisor import ratios
from advisor.derived import refresh_after_load
from advisor.ingest import ingest_files
from advisor.ratios import RatioQuery

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "ingest"
ADVISOR = shutil.which("advisor") or str(Path(sys.executable).parent / "advisor")


def _advisor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "ADVISOR_DB"}
    return subprocess.run(
        [ADVISOR, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def _one_more_job(tmp_path: Path) -> Path:
    """edge.txt's first record again under a new job id (9100)."""
    lines = (FIX / "edge.txt").read_text(encoding="utf-8", errors="replace").splitlines()
    extra = tmp_path / "one.txt"
    extra.write_text(
        lines[0] + "\n" + lines[1].replace("100|100|", "9100|9100|", 1) + "\n", encoding="utf-8"
    )
    return extra


def _jobs_in_ratios(db: Path) -> int:
    done = _advisor("ratios", "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    return sum(int(g["jobs"]) for g in json.loads(done.stdout))


def test_the_library_ingest_leaves_derived_tables_to_its_caller(tmp_path: Path) -> None:
    db = tmp_path / "advisor.duckdb"
    ingest_files(db, [FIX / "edge.txt"])
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert not ratios.cube_is_fresh(con)
    finally:
        con.close()
    assert refresh_after_load(db) > 0
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert ratios.cube_is_fresh(con)
        q = RatioQuery(by=("cluster", "gpu_type"))
        assert ratios.ratio_summary(con, q, use_cube=True) == ratios.ratio_summary(
            con, q, use_cube=False
        )
    finally:
        con.close()


def test_advisor_ingest_then_advisor_ratios_shows_the_new_jobs(tmp_path: Path) -> None:
    db = tmp_path / "advisor.duckdb"
    done = _advisor("ingest", str(FIX / "edge.txt"), "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    before = _jobs_in_ratios(db)
    assert before > 0
    done = _advisor("ingest", str(_one_more_job(tmp_path)), "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["inserted"] == 1
    con = duckdb.connect(str(db), read_only=True)  # as the dashboard reads it
    try:
        assert ratios.cube_is_fresh(con)
    finally:
        con.close()
    assert _jobs_in_ratios(db) == before + 1


def test_advisor_db_refresh_rebuilds_every_derived_table(tmp_path: Path) -> None:
    db = tmp_path / "advisor.duckdb"
    ingest_files(db, [FIX / "edge.txt"])  # through the library: nothing derived is rebuilt
    done = _advisor("db", "refresh", "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    [row] = json.loads(done.stdout)
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert ratios.cube_is_fresh(con) and ratios.people_months_are_fresh(con)
        cube = con.execute("SELECT count(*) FROM ratio_cube").fetchone()
        months = con.execute("SELECT count(*) FROM ratio_cube_people_months").fetchone()
    finally:
        con.close()
    assert row["db"] == str(db)
    assert (row["ratio_cube_rows"], row["people_months_rows"]) == (cube[0], months[0])
    assert cube[0] > 0 and months[0] > 0 and row["seconds"] >= 0


def test_advisor_db_refresh_of_a_missing_file_says_so_and_creates_nothing(
    tmp_path: Path,
) -> None:
    db = tmp_path / "nope.duckdb"
    done = _advisor("db", "refresh", "--db", str(db))
    assert done.returncode == 4
    assert done.stderr.startswith("Error: ") and str(db) in done.stderr
    assert "Traceback" not in done.stderr
    assert not db.exists()


def test_advisor_db_refresh_rebuilds_every_slice_even_where_no_job_changed(
    tmp_path: Path,
) -> None:
    """A damaged derived table (rows lost by hand) is no job change a slice rebuild would see:
    `advisor db refresh`, the escape hatch, rebuilds every slice and restores it."""
    db = tmp_path / "advisor.duckdb"
    done = _advisor("ingest", str(FIX / "edge.txt"), "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(db))
    whole = sorted(con.execute("SELECT * FROM ratio_cube").fetchall(), key=repr)
    con.execute("DELETE FROM ratio_cube WHERE cluster IN (SELECT min(cluster) FROM ratio_cube)")
    assert len(con.execute("SELECT * FROM ratio_cube").fetchall()) < len(whole)
    con.close()
    done = _advisor("db", "refresh", "--db", str(db), "--format", "json")
    assert done.returncode == 0, done.stderr
    con = duckdb.connect(str(db), read_only=True)
    try:
        assert sorted(con.execute("SELECT * FROM ratio_cube").fetchall(), key=repr) == whole
    finally:
        con.close()
