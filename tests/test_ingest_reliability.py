"""Reliability of ingest: a kill -9 mid-load changes nothing; fuzzed input never crashes the
parsers and never costs the good lines around it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.ingest import ingest_files
from advisor.ingest.synth import SynthConfig, generate
from advisor.store import migrate

FIX = Path(__file__).resolve().parent / "fixtures" / "ingest"
ROOT = Path(__file__).resolve().parent.parent

# The child loads FILE into DB; when the load reaches progress stage STOP it prints "at STOP"
# and blocks, so the parent's SIGKILL lands inside the open transaction, deterministically.
CHILD = r"""
import sys, time
from advisor.ingest import ingest_files
db, path, stop = sys.argv[1], sys.argv[2], int(sys.argv[3])
def progress(label, done, total):
    if done == stop:
        print(f"at {stop}", flush=True)
        time.sleep(3600)
ingest_files(db, [path], progress=progress)
print("finished", flush=True)
"""


def _snapshot(db: Path) -> tuple[object, ...]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return (
            con.execute("SELECT * FROM jobs ORDER BY cluster, job_id_raw, submit").fetchall(),
            con.execute(
                "SELECT ingest_id, source, status, inserted FROM ingests ORDER BY 1"
            ).fetchall(),
            con.execute("SELECT * FROM rejects ORDER BY ingest_id, line_no").fetchall(),
        )
    finally:
        con.close()


@pytest.fixture(scope="module")
def big_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kill") / "big.txt"
    generate(SynthConfig(records=15_000, seed=11, odd_text_share=0.002), path)
    return path


@pytest.mark.parametrize("stage", [1, 4], ids=["after-reading", "inside-the-write-transaction"])
def test_kill_9_mid_load_leaves_the_database_as_before_that_file(
    tmp_path: Path, big_file: Path, stage: int
) -> None:
    db = tmp_path / "advisor.duckdb"
    ingest_files(db, [FIX / "edge.txt"])
    before = _snapshot(db)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(db), str(big_file), str(stage)],
        stdout=subprocess.PIPE,
        env=env,
        cwd=str(ROOT),
    )
    assert child.stdout is not None
    line = child.stdout.readline().decode().strip()
    assert line == f"at {stage}"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert child.returncode == -signal.SIGKILL
    assert _snapshot(db) == before
    if stage == 4:  # and the database still works: the same file loads completely afterwards
        [s] = ingest_files(db, [big_file])
        assert s.inserted == 15_000 and s.rejected == 0


HEADER = "JobID|JobIDRaw|Cluster|State|Submit|Start|End|Elapsed|NCPUS|AllocTRES|JobName"


def _good(i: int) -> str:
    return (
        f"{i}|{i}|c|COMPLETED|2024-01-01T00:00:00|2024-01-01T00:00:01|2024-01-01T01:00:01|"
        f"01:00:00|4|cpu=4,gres/gpu:h100=1,gres/gpu=1|good{i}"
    )


_bad_line = st.one_of(
    st.builds(lambda s, n: s[:n], st.just(_good(9)), st.integers(0, 60)),  # truncated
    st.builds(lambda d: _good(9).replace("|", d), st.sampled_from([",", ";", "\t", "||"])),
    st.builds(
        lambda v: _good(9).replace("cpu=4,", f"cpu={v},"),
        st.sampled_from(["x", "-1", "1e9", "", "4.5.6", "99999999999999999999"]),
    ),
    st.builds(
        lambda k: _good(9).replace("gres/gpu=1", f"{k}=7"),
        st.text("abcz/:=._-0123456789", max_size=12),
    ),
    st.builds(
        lambda t: _good(9).replace("01:00:00|4", f"{t}|4"), st.text(":-0123456789x", max_size=10)
    ),
    st.text(max_size=80).filter(lambda t: "\n" not in t and "\r" not in t),
)


# A new draw every run; eight a run keeps the suite in minutes (each loads a file).
@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bad=st.lists(_bad_line, min_size=1, max_size=4),
    junk_bytes=st.binary(min_size=0, max_size=6),
)
def test_fuzzed_sacct_lines_never_crash_and_never_lose_the_good_lines(
    bad: list[str], junk_bytes: bytes
) -> None:
    lines = [HEADER.encode(), _good(1).encode()]
    for i, b in enumerate(bad):
        lines.append(b.encode("utf-8", errors="replace") + (junk_bytes if i == 0 else b""))
        lines.append(_good(100 + i).encode())
    lines.append(_good(2).encode())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.txt"
        path.write_bytes(b"\n".join(lines) + b"\n")
        con = duckdb.connect()
        migrate(con)
        [s] = ingest_files(con, [path])
        ids = {r[0] for r in con.execute("SELECT job_id FROM jobs").fetchall()}
        con.close()
    good = {"1", "2"} | {str(100 + i) for i in range(len(bad))}
    assert good <= ids
    assert s.inserted + s.rejected + s.unchanged + s.updated >= len(good)


@settings(max_examples=25, deadline=None)
@given(
    jobs=st.lists(
        st.dictionaries(
            st.sampled_from(
                ["job_id", "cluster", "state", "time", "tres", "array", "steps", "name"]
            ),
            st.recursive(
                st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                lambda c: (
                    st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=5), c, max_size=3)
                ),
                max_leaves=6,
            ),
        ),
        max_size=4,
    )
)
def test_fuzzed_sacct_json_jobs_are_loaded_or_rejected_never_crash(jobs: list[object]) -> None:
    good = {
        "job_id": 5,
        "cluster": "c",
        "state": {"current": ["COMPLETED"]},
        "time": {"submission": 1700000000},
        "tres": {"allocated": [{"type": "cpu", "count": 2}]},
    }
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.json"
        path.write_text(json.dumps({"jobs": [good, *jobs]}), encoding="utf-8")
        con = duckdb.connect()
        migrate(con)
        [s] = ingest_files(con, [path])
        ids = {r[0] for r in con.execute("SELECT job_id FROM jobs").fetchall()}
        con.close()
    assert "5" in ids
    assert s.rows_read >= 1


def test_a_json_job_whose_text_field_is_a_list_is_a_reject_naming_the_field(
    tmp_path: Path,
) -> None:
    """Found by the fuzz test above: {'cluster': []} once crashed the whole load."""
    good = {"job_id": 5, "cluster": "c", "time": {"submission": 1700000000}}
    odd = {"job_id": 6, "cluster": [], "time": {"submission": 1700000000}}
    path = tmp_path / "odd.json"
    path.write_text(json.dumps({"jobs": [good, odd]}), encoding="utf-8")
    con = duckdb.connect()
    migrate(con)
    [s] = ingest_files(con, [path])
    ids = [r[0] for r in con.execute("SELECT job_id FROM jobs").fetchall()]
    [(line, reason)] = con.execute("SELECT line_no, reason FROM rejects").fetchall()
    con.close()
    assert ids == ["5"] and s.rejected == 1
    assert line == 2 and "'cluster' is a list" in reason


def _load_rows(path: Path) -> tuple[list[tuple], list[tuple], tuple[int, int]]:
    con = duckdb.connect()
    migrate(con)
    try:
        [s] = ingest_files(con, [path])
        jobs = con.execute(
            "SELECT * EXCLUDE (ingest_id, updated_at) FROM jobs ORDER BY job_id_raw, submit"
        ).fetchall()
        rejects = con.execute(
            "SELECT line_no, field, raw, reason FROM rejects ORDER BY line_no"
        ).fetchall()
        return jobs, rejects, (s.inserted, s.rejected)
    finally:
        con.close()


# Each example loads two files (a few seconds): six a run, a new draw every run.
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    bad=st.lists(_bad_line, min_size=0, max_size=4),
    at=st.integers(0, 20),
    name_cr=st.booleans(),
)
def test_a_file_with_a_bare_carriage_return_loads_as_the_same_file_without_it(
    bad: list[str], at: int, name_cr: bool
) -> None:
    # DuckDB's strict reader gives up on a file with a CR that ends no line; advisor then reads
    # the lines itself. Inserting a CR-only line must change nothing else: the same rows, the
    # same rejects at their true line numbers (its lenient reader cut the extra fields off
    # a line with the delimiter in its free text, and counted the CR as a line end).
    lines = [HEADER, _good(1), _good(2) + "|with|pipes"]
    for i, b in enumerate(bad):
        lines += [b, _good(100 + i)]
    lines.append(_good(3).replace("good3", "a\rb" if name_cr else "ab"))
    # before a good record (a line after a record that does not start like one continues its
    # last field: a CR line in between would rightly change that)
    starts = [i for i in range(1, len(lines)) if lines[i].startswith(("1|", "2|", "3|"))]
    cut = starts[at % len(starts)]
    with tempfile.TemporaryDirectory() as tmp:
        plain = Path(tmp) / "plain.txt"
        with_cr = Path(tmp) / "cr.txt"
        plain.write_bytes(("\n".join(lines) + "\n").encode().replace(b"\r", b"R"))
        crlines = [*lines[:cut], "\r", *lines[cut:]]
        with_cr.write_bytes(("\n".join(crlines) + "\n").encode())
        jobs_plain, rej_plain, counts_plain = _load_rows(plain)
        jobs_cr, rej_cr, counts_cr = _load_rows(with_cr)
    assert counts_cr == counts_plain
    # the one CR inside a job name is the only difference between the files' records
    assert [tuple(str(v).replace("\r", "R") for v in r) for r in jobs_cr] == [
        tuple(str(v) for v in r) for r in jobs_plain
    ]
    shifted = [(ln + 1 if ln > cut else ln, *rest) for ln, *rest in rej_plain]
    assert [(ln, f, raw.replace("\r", "R"), why) for ln, f, raw, why in rej_cr] == shifted
    two = next(r for r in jobs_cr if r[1] == 2)  # job_id_raw 2: the pipes went to free text
    assert "with|pipes" in "|".join(str(v) for v in two)
