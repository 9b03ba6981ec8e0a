"""Fault injection into ingest: corrupt and truncated archives of each compression, unreadable
paths, files from which nothing usable can be read. Every case goes through the installed
``advisor`` console script into a real DuckDB file and must be refused fast (a pytest-timeout
per test: DuckDB's own gzip reader once looped forever on such a stream), exit 3 with an
``Error:`` line naming the file, commit nothing from the file, and keep the reason in the
database. The matrix prints its tally (tried, refused as promised, loaded anyway, crashed) at
the end of the module, so the figures can be re-measured:
``pytest -q -rA tests/test_faults_ingest.py``."""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
import zstandard

from advisor.ingest.synth import SynthConfig, generate

pytestmark = pytest.mark.fault("ingest faults (round 3)")

ROOT = Path(__file__).resolve().parent.parent
ADVISOR = shutil.which("advisor") or str(Path(sys.executable).parent / "advisor")

# (what is done to the archive, where: a fraction of its compressed length)
DAMAGE = [
    *[("corrupt", f) for f in (0.2, 0.5, 0.8)],
    *[("truncate", f) for f in (0.1, 0.5, 0.9, 0.999)],
]
COMPRESSIONS = ("gzip", "zstd")

_TALLY: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def _print_tally(request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    line = "fault matrix (ingest): " + ", ".join(
        f"{k} {_TALLY[k]}" for k in ("tried", "refused", "loaded", "crashed", "wrong")
    )
    if reporter is not None:
        reporter.write_line(line)
    else:  # pragma: no cover - without the terminal plugin
        print(line)


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("faults") / "jobs.txt"
    generate(SynthConfig(records=1500, seed=3), path)
    return path


@pytest.fixture(scope="module")
def archives(plain: Path) -> dict[str, bytes]:
    data = plain.read_bytes()
    return {
        "gzip": gzip.compress(data, mtime=0),
        # checksum on, as the zstd command line writes it
        "zstd": zstandard.ZstdCompressor(write_checksum=True).compress(data),
    }


@pytest.fixture
def loaded_db(tmp_path: Path) -> Path:
    """A database already holding another file's jobs: a refused file must leave them as they
    were and add none."""
    other = tmp_path / "other.txt"
    generate(SynthConfig(records=200, seed=29), other)
    db = tmp_path / "faults.duckdb"
    proc = _advisor("ingest", str(other), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    return db


def _advisor(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [ADVISOR, *args], capture_output=True, text=True, env=env, check=False, timeout=120
    )


def _state(db: Path) -> tuple[int, int, list[tuple[str, str]]]:
    """(jobs, rejects, [(status, source) of each load])."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        [(jobs,)] = con.execute("SELECT count(*) FROM jobs").fetchall()
        [(rejects,)] = con.execute("SELECT count(*) FROM rejects").fetchall()
        loads = con.execute("SELECT status, source FROM ingests ORDER BY ingest_id").fetchall()
        return int(jobs), int(rejects), [(str(a), str(b)) for a, b in loads]
    finally:
        con.close()


def _reason(db: Path, source: Path) -> str:
    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = con.execute(
            "SELECT r.reason FROM rejects r JOIN ingests i USING (ingest_id)"
            " WHERE i.source = ? AND i.status = 'failed'",
            [str(source)],
        ).fetchall()
        return " | ".join(str(r[0]) for r in rows)
    finally:
        con.close()


def _damage(data: bytes, how: str, at: float) -> bytes:
    cut = max(1, int(len(data) * at))
    if how == "truncate":
        return data[: min(cut, len(data) - 1)]
    out = bytearray(data)
    # 64 bytes of a fixed pattern unlike compressed data (reproducible, never the original)
    out[cut : cut + 64] = bytes((i * 37 + 11) % 256 for i in range(64))
    assert bytes(out) != data
    return bytes(out)


def _expect_refused(
    db: Path,
    path: Path,
    before: tuple[int, int, list[tuple[str, str]]],
    proc: subprocess.CompletedProcess[str],
    *needles: str,
) -> None:
    """Exit 3, one Error line naming the file, nothing of it in jobs, the reason stored."""
    _TALLY["tried"] += 1
    after = _state(db)
    if "Traceback" in proc.stderr or proc.returncode not in (0, 3):
        _TALLY["crashed"] += 1
    elif proc.returncode == 0 or after[0] != before[0]:
        _TALLY["loaded"] += 1
    elif not all(n in proc.stderr for n in needles) or not _reason(db, path):
        _TALLY["wrong"] += 1
    else:
        _TALLY["refused"] += 1
    assert "Traceback" not in proc.stderr
    assert proc.returncode == 3, proc.stderr
    assert proc.stderr.startswith(f"Error: {path}"), proc.stderr
    for needle in needles:
        assert needle in proc.stderr
    assert after[0] == before[0]  # not one job of the file
    assert after[2] == [*before[2], ("failed", str(path))]
    reason = _reason(db, path)
    assert reason and all(n in reason for n in needles), reason


@pytest.mark.timeout(120)
@pytest.mark.parametrize("compression", COMPRESSIONS)
@pytest.mark.parametrize(("how", "at"), DAMAGE)
def test_a_damaged_archive_is_refused_whole_with_its_offset(
    compression: str,
    how: str,
    at: float,
    archives: dict[str, bytes],
    loaded_db: Path,
    tmp_path: Path,
) -> None:
    bad = tmp_path / f"jobs-{how}-{at}.txt.{'gz' if compression == 'gzip' else 'zst'}"
    bad.write_bytes(_damage(archives[compression], how, at))
    before = _state(loaded_db)
    proc = _advisor("ingest", str(bad), "--db", str(loaded_db))
    word = "truncated" if how == "truncate" else "corrupt"
    _expect_refused(loaded_db, bad, before, proc, f"{word} {compression}", "compressed byte")


@pytest.fixture(scope="module")
def issue_gzip(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    """The issue's reproduction: `advisor synth --records 5000 --seed 3`, gzipped."""
    path = tmp_path_factory.mktemp("issue") / "x.txt"
    proc = _advisor("synth", "--records", "5000", "--seed", "3", "--out", str(path))
    assert proc.returncode == 0, proc.stderr
    return gzip.compress(path.read_bytes(), mtime=0)


# 64 bytes written over the middle of that archive: before the archive check, the first made
# DuckDB's read_csv loop for ever at 100% CPU, the other two ended in a Python traceback
ISSUE_PATTERNS = {
    "loop": bytes((i * 37 + 11) % 256 for i in range(64)),
    "zeros": bytes(64),
    "ones": b"\xff" * 64,
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("pattern", ISSUE_PATTERNS)
def test_the_issues_corrupt_gzip_is_refused_instead_of_hanging(
    pattern: str, issue_gzip: bytes, loaded_db: Path, tmp_path: Path
) -> None:
    data = bytearray(issue_gzip)
    mid = len(data) // 2
    data[mid : mid + 64] = ISSUE_PATTERNS[pattern]
    bad = tmp_path / "x.txt.gz"
    bad.write_bytes(bytes(data))
    before = _state(loaded_db)
    proc = _advisor("ingest", str(bad), "--db", str(loaded_db))
    _expect_refused(loaded_db, bad, before, proc, "corrupt gzip", "compressed byte")


@pytest.mark.timeout(120)
@pytest.mark.parametrize("compression", COMPRESSIONS)
def test_an_intact_archive_of_the_same_jobs_loads(
    compression: str, archives: dict[str, bytes], plain: Path, tmp_path: Path
) -> None:
    """The control of the matrix: the undamaged archive loads every job the plain file has."""
    db = tmp_path / "ok.duckdb"
    good = tmp_path / f"jobs.txt.{'gz' if compression == 'gzip' else 'zst'}"
    good.write_bytes(archives[compression])
    assert _advisor("ingest", str(plain), "--db", str(tmp_path / "plain.duckdb")).returncode == 0
    proc = _advisor("ingest", str(good), "--db", str(db))
    assert proc.returncode == 0, proc.stderr
    assert _state(db)[0] == _state(tmp_path / "plain.duckdb")[0] > 1000


@pytest.mark.timeout(120)
def test_a_gzip_whose_crc_alone_is_wrong_is_refused(
    archives: dict[str, bytes], loaded_db: Path, tmp_path: Path
) -> None:
    data = bytearray(archives["gzip"])
    data[-8] ^= 0xFF  # the CRC-32 of the trailer: every deflate block still decodes
    bad = tmp_path / "crc.txt.gz"
    bad.write_bytes(bytes(data))
    before = _state(loaded_db)
    proc = _advisor("ingest", str(bad), "--db", str(loaded_db))
    _expect_refused(loaded_db, bad, before, proc, "corrupt gzip", "CRC-32 mismatch")


@pytest.mark.timeout(120)
def test_a_zstd_file_with_a_junk_header_is_refused(loaded_db: Path, tmp_path: Path) -> None:
    bad = tmp_path / "c.zst"
    bad.write_bytes(b"\x28\xb5\x2f\xfdjunk")
    before = _state(loaded_db)
    proc = _advisor("ingest", str(bad), "--db", str(loaded_db))
    _expect_refused(loaded_db, bad, before, proc, "zstd", "compressed byte")


@pytest.mark.timeout(120)
def test_concatenated_gzip_members_load_and_zero_padding_is_refused_by_name(
    plain: Path, loaded_db: Path, tmp_path: Path
) -> None:
    """Damage checks must not refuse a valid archive (`cat a.gz b.gz`); zero padding after the
    last member, which gzip(1) skips but DuckDB's reader cannot read, is refused naming it."""
    lines = plain.read_bytes().splitlines(keepends=True)
    half = len(lines) // 2
    two = gzip.compress(b"".join(lines[:half]), mtime=0) + gzip.compress(
        lines[0] + b"".join(lines[half:]), mtime=0
    )
    good = tmp_path / "two.txt.gz"
    good.write_bytes(two)
    db = tmp_path / "two.duckdb"
    proc = _advisor("ingest", str(good), "--db", str(db), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    # the second member's header line is the one reject
    assert _state(db)[0] > 1000 and '"rejected": 1' in proc.stdout
    padded = tmp_path / "padded.txt.gz"
    padded.write_bytes(two + b"\x00" * 512)
    before = _state(loaded_db)
    proc = _advisor("ingest", str(padded), "--db", str(loaded_db))
    _expect_refused(loaded_db, padded, before, proc, "zero bytes after the gzip member")


@pytest.mark.timeout(120)
def test_an_unreadable_path_exits_3_without_a_traceback(loaded_db: Path, tmp_path: Path) -> None:
    """Tests run as root, so chmod 000 reads fine; /proc/self/mem is a file that even root
    cannot read from offset 0 (EIO), and a directory given as a file cannot be read either."""
    for path in (Path("/proc/self/mem"), tmp_path):
        proc = _advisor("ingest", str(path), "--db", str(loaded_db))
        assert "Traceback" not in proc.stderr
        assert proc.returncode == 3, proc.stderr
        assert proc.stderr.startswith(f"Error: {path}"), proc.stderr


@pytest.mark.timeout(120)
def test_an_empty_file_exits_3_and_says_it_is_empty(loaded_db: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    before = _state(loaded_db)
    proc = _advisor("ingest", str(empty), "--db", str(loaded_db))
    _expect_refused(loaded_db, empty, before, proc, "the file is empty")


@pytest.mark.timeout(120)
def test_scontrol_show_job_output_is_named_as_such(loaded_db: Path, tmp_path: Path) -> None:
    out = tmp_path / "scontrol.txt"
    out.write_text(
        "JobId=101 JobName=train\n   UserId=alice(1001) GroupId=alice(1001) MCS_label=N/A\n"
        "   JobState=RUNNING Reason=None Dependency=(null)\n"
        "JobId=102 JobName=eval\n   UserId=bob(1002) GroupId=bob(1002) MCS_label=N/A\n"
        "   JobState=PENDING Reason=None Dependency=(null)\n",
        encoding="utf-8",
    )
    before = _state(loaded_db)
    proc = _advisor("ingest", str(out), "--db", str(loaded_db))
    # every line is kept as a reject, and the load is marked failed
    _TALLY["tried"] += 1
    assert proc.returncode == 3, proc.stderr
    assert "scontrol show job" in proc.stderr and "every record was rejected" in proc.stderr
    after = _state(loaded_db)
    assert after[0] == before[0] and after[1] == before[1] + 6
    assert after[2] == [*before[2], ("failed", str(out))]
    _TALLY["refused"] += 1


@pytest.mark.timeout(120)
@pytest.mark.parametrize("delimiter", [" | ", "<>"])
def test_a_multi_character_delimiter_is_named_with_the_flag_to_give(
    delimiter: str, plain: Path, loaded_db: Path, tmp_path: Path
) -> None:
    lines = plain.read_text(encoding="utf-8", errors="replace").splitlines()[:60]
    md = tmp_path / "md.txt"
    md.write_text("\n".join(ln.replace("|", delimiter) for ln in lines) + "\n", encoding="utf-8")
    before = _state(loaded_db)
    proc = _advisor("ingest", str(md), "--db", str(loaded_db))
    assert proc.returncode == 3, proc.stderr
    assert f"--delimiter {delimiter!r}" in proc.stderr
    assert _state(loaded_db)[0] == before[0]
    ok = _advisor("ingest", str(md), "--db", str(loaded_db), "--delimiter", delimiter)
    assert ok.returncode == 0, ok.stderr
    assert _state(loaded_db)[0] > before[0]
