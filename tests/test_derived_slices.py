"""A rebuild of the derived tables replaces only the slices (cluster, month) whose jobs changed,
and leaves every derived table exactly as a whole rebuild from ``jobs`` would (sums of floating
values to their last digits, which the order of summing moves).

Real loads of synthetic sacct text into real DuckDB files; the changes a load cannot make (a
deleted job, a job moved to another month) are made with SQL, as any other writer could.
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from advisor import store
from advisor.derived import cube
from advisor.ingest import ingest_files, synth

DERIVED = (
    "ratio_cube",
    "job_mix_months",
    "usage_months",
    "derived_slices",
    "ratio_people",
    "ratio_cube_people",
    "ratio_cube_people_months",
    "ratio_cube_people_month_ratios",
)

MONTHS = (
    "SELECT DISTINCT date_trunc('month', start) AS m FROM jobs WHERE start IS NOT NULL ORDER BY m"
)


def _cell(v: Any) -> Any:
    return float(f"{v:.9g}") if isinstance(v, float) and math.isfinite(v) else v


def _tables(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Every derived table's rows, sorted, floats to 9 significant digits."""
    out = {}
    for table in DERIVED:
        rows = con.execute(f"SELECT * FROM {table}").fetchall()  # noqa: S608 - fixed names
        out[table] = sorted((tuple(_cell(v) for v in r) for r in rows), key=repr)
    return out


def _whole(db: Path, tmp_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """The derived tables of a copy of ``db`` rebuilt whole, the per-month people cube too."""
    copy = tmp_path / f"whole-{db.name}"
    shutil.copy(db, copy)
    con = store.connect(copy)
    try:
        assert cube.rebuild_cubes(con, whole=True).whole
        cube.refresh_people_months(con)
        return _tables(con)
    finally:
        con.close()


def _slices(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, Any], int]:
    rows = con.execute("SELECT cluster, month, jobs FROM derived_slices").fetchall()
    return {(c, m): n for c, m, n in rows}


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A synthetic export cut in two by line: the first 80% of its records, then the rest
    (later submits, a month or two past the first file's end, with the odd overlap)."""
    tmp = tmp_path_factory.mktemp("halves")
    full = tmp / "sacct.txt"
    synth.generate(synth.SynthConfig(records=4_000, seed=11, step_share=0.0), full)
    header, *lines = full.read_bytes().splitlines(keepends=True)  # synth writes odd bytes too
    cut = int(len(lines) * 0.8)
    first, second = tmp / "first.txt", tmp / "second.txt"
    first.write_bytes(header + b"".join(lines[:cut]))
    second.write_bytes(header + b"".join(lines[cut:]))
    return first, second


@pytest.fixture(scope="module")
def first_loaded(halves: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database holding the first file, its derived tables built, the per-month cube too."""
    db = tmp_path_factory.mktemp("first") / "advisor.duckdb"
    con = store.connect(db)
    try:
        ingest_files(con, [halves[0]])
        assert cube.rebuild_cubes(con).whole  # the first build is whole
        cube.refresh_people_months(con)
    finally:
        con.close()
    return db


@pytest.fixture
def loaded(first_loaded: Path, tmp_path: Path) -> Path:
    """A test's own copy of ``first_loaded``."""
    return Path(shutil.copy(first_loaded, tmp_path / "advisor.duckdb"))


def test_a_load_of_later_jobs_rebuilds_only_their_slices_as_a_whole_rebuild_would(
    loaded: Path, halves: tuple[Path, Path], tmp_path: Path
) -> None:
    con = store.connect(loaded)
    try:
        before = _slices(con)
        ingest_files(con, [halves[1]])
        done = cube.rebuild_cubes(con)
        after = _slices(con)
        assert not done.whole
        changed = {k for k in after.keys() | before.keys() if after.get(k) != before.get(k)}
        assert changed  # the second file adds jobs, in its months only
        assert done.slices_rebuilt == len(changed) < done.slices_total == len(after)
        assert done.jobs_in_rebuilt_slices == sum(after[k] for k in changed)
        assert cube.cube_is_fresh(con)
        got = _tables(con)
        months_fresh = cube.people_months_are_fresh(con)
    finally:
        con.close()
    want = _whole(loaded, tmp_path)
    if not months_fresh:  # new people: renumbered, the per-month cube waits for its first use
        assert got["ratio_cube_people_months"] == []
        got = {**got, **{t: want[t] for t in DERIVED[-2:]}}
    assert got == want


def test_a_deleted_job_and_a_job_moved_to_another_month_rebuild_the_slices_they_left_and_joined(
    loaded: Path, tmp_path: Path
) -> None:
    con = store.connect(loaded)
    try:
        months = [r[0] for r in con.execute(MONTHS).fetchall()]
        assert len(months) >= 3
        gone = con.execute(  # a job whose person has others: the people stay the same
            "SELECT job_id_raw FROM jobs AS j WHERE date_trunc('month', start) = ? AND "
            "(SELECT count(*) FROM jobs AS k WHERE k.cluster = j.cluster AND k.account = j.account "
            'AND k."user" = j."user" AND k."partition" = j."partition" '
            "AND coalesce(k.gpu_type, '') = coalesce(j.gpu_type, '')) > 1 LIMIT 1",
            [months[0]],
        ).fetchone()
        moved = con.execute(
            "SELECT job_id_raw, cluster FROM jobs WHERE date_trunc('month', start) = ? "
            "AND gpus > 0 LIMIT 1",
            [months[1]],
        ).fetchone()
        assert gone and moved
        con.execute("DELETE FROM jobs WHERE job_id_raw = ?", [gone[0]])
        con.execute(
            "UPDATE jobs SET start = start + INTERVAL 40 DAY, submit = submit + INTERVAL 40 DAY, "
            '"end" = "end" + INTERVAL 40 DAY WHERE job_id_raw = ?',
            [moved[0]],
        )
        done = cube.rebuild_cubes(con)
        assert not done.whole
        # the deleted job's slice, and the slices the moved job left and joined
        assert done.slices_rebuilt == 3
        assert done.people_months_kept  # nobody new: every pid holds
        assert cube.people_months_are_fresh(con)
        got = _tables(con)
    finally:
        con.close()
    assert got == _whole(loaded, tmp_path)


def test_a_new_person_renumbers_the_people_and_leaves_the_per_month_cube_for_its_first_use(
    loaded: Path, tmp_path: Path
) -> None:
    con = store.connect(loaded)
    try:
        con.execute(
            "UPDATE jobs SET \"user\" = 'zz-newcomer' WHERE job_id_raw = "
            "(SELECT min(job_id_raw) FROM jobs WHERE gpus > 0)"
        )
        done = cube.rebuild_cubes(con)
        assert not done.whole and done.slices_rebuilt == 1
        assert not done.people_months_kept
        assert not cube.people_months_are_fresh(con)
        assert con.execute("SELECT count(*) FROM ratio_cube_people_months").fetchone() == (0,)
        assert con.execute(
            "SELECT count(*) FROM ratio_people WHERE \"user\" = 'zz-newcomer'"
        ).fetchone() == (1,)
        cube.refresh_people_months(con)  # what the first query that needs it does
        got = _tables(con)
    finally:
        con.close()
    assert got == _whole(loaded, tmp_path)


def test_a_rebuild_with_no_job_changed_rebuilds_no_slice(loaded: Path) -> None:
    con = store.connect(loaded)
    try:
        before = _tables(con)
        done = cube.rebuild_cubes(con)
        assert (done.whole, done.slices_rebuilt, done.jobs_in_rebuilt_slices) == (False, 0, 0)
        assert done.people_months_kept and cube.people_months_are_fresh(con)
        assert _tables(con) == before
    finally:
        con.close()


def test_changed_slices_holding_most_of_the_jobs_rebuild_everything(loaded: Path) -> None:
    con = store.connect(loaded)
    try:
        con.execute("UPDATE jobs SET elapsed_s = elapsed_s + 1")
        done = cube.rebuild_cubes(con)
        assert done.whole and done.slices_rebuilt == done.slices_total
        assert done.jobs_in_rebuilt_slices > cube.WHOLE_SHARE * sum(_slices(con).values()) - 1
    finally:
        con.close()


def test_a_read_only_connection_builds_its_own_copy_whole_and_leaves_the_file_alone(
    loaded: Path,
) -> None:
    con = store.connect(loaded)
    try:
        con.execute("DELETE FROM jobs WHERE job_id_raw % 7 = 0")  # the fingerprint counts rows
        stored = _tables(con)
    finally:
        con.close()
    ro = duckdb.connect(str(loaded), read_only=True)
    try:
        assert not cube.cube_is_fresh(ro)
        done = cube.rebuild_cubes(ro, temporary=True)
        assert done.whole and cube.cube_is_fresh(ro)
    finally:
        ro.close()
    con = store.connect(loaded)
    try:
        assert _tables(con) == stored  # the file's own tables are as they were: still stale
        assert not cube.cube_is_fresh(con)
    finally:
        con.close()


def test_a_person_whose_every_job_is_deleted_is_numbered_out(loaded: Path, tmp_path: Path) -> None:
    con = store.connect(loaded)
    try:
        person = con.execute(
            'SELECT cluster, account, "user", "partition", gpu_type FROM jobs WHERE gpus > 0 '
            "GROUP BY ALL HAVING count(*) >= 2 ORDER BY count(*), 1, 2, 3, 4, 5 LIMIT 1"
        ).fetchone()
        assert person is not None
        con.execute(
            'DELETE FROM jobs WHERE cluster = ? AND account = ? AND "user" = ? AND "partition" = ? '
            "AND gpu_type IS NOT DISTINCT FROM ?",
            list(person),
        )
        done = cube.rebuild_cubes(con)
        assert not done.whole and not done.people_months_kept
        assert not con.execute(
            'SELECT * FROM ratio_people WHERE cluster = ? AND account = ? AND "user" = ? '
            'AND "partition" = ?',
            list(person[:4]),
        ).fetchall()
        cube.refresh_people_months(con)
        got = _tables(con)
    finally:
        con.close()
    assert got == _whole(loaded, tmp_path)


def test_jobs_given_other_cores_move_between_keys_of_the_same_people(
    loaded: Path, tmp_path: Path
) -> None:
    """Every job of one month on a new core count: the all-time people cube, kept by
    difference, loses the old (GPUs, CPUs) keys and gains the new ones."""
    con = store.connect(loaded)
    try:
        [month] = con.execute(MONTHS + " LIMIT 1 OFFSET 1").fetchone() or [None]
        con.execute(
            "UPDATE jobs SET cpus = 7 * gpus WHERE gpus > 0 AND date_trunc('month', start) = ?",
            [month],
        )
        done = cube.rebuild_cubes(con)
        assert not done.whole and done.people_months_kept
        assert done.slices_rebuilt >= 1
        got = _tables(con)
    finally:
        con.close()
    assert got == _whole(loaded, tmp_path)
