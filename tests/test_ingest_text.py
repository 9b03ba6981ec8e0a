"""Text helpers of the ingest: text.read_lines (the physical lines the repair of rejected lines
reads back) and the submit line's command (macros.sql: ing_cmd)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor import store
from advisor.ingest import pipeline, text


def _by_line(data: bytes, want: set[int]) -> dict[int, bytes]:
    """The obvious reading: every line in Python, line end removed (a CR before it too)."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline ends the last line, it starts none
    return {n: lines[n - 1].rstrip(b"\r") for n in want if 1 <= n <= len(lines)}


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(
        st.sampled_from([b"a", b"|x", b"\n", b"\r", b"\r\n", b"\xff", b""]), max_size=60
    ),
    want=st.sets(st.integers(min_value=0, max_value=40), max_size=12),
    block=st.integers(min_value=1, max_value=9),
)
def test_read_lines_matches_reading_every_line(
    tmp_path_factory, chunks: list[bytes], want: set[int], block: int
) -> None:
    data = b"".join(chunks)
    path = tmp_path_factory.mktemp("lines") / "f.txt"
    path.write_bytes(data)
    old = text._BLOCK
    text._BLOCK = block  # tiny blocks: lines and CRLFs cut at every place
    try:
        assert text.read_lines(path, None, want) == _by_line(data, want)
    finally:
        text._BLOCK = old


@settings(max_examples=200, deadline=None)
@given(
    chunks=st.lists(
        st.sampled_from([b"a", b"|x", b"\n", b"\r", b"\r\n", b"\xff", b"", b"long" * 7]),
        max_size=60,
    ),
    want=st.sets(st.integers(min_value=0, max_value=40), max_size=12),
    step=st.integers(min_value=1, max_value=9),
    feeds=st.lists(st.integers(min_value=0, max_value=13), min_size=1, max_size=8),
)
def test_lines_read_from_a_line_index_match_reading_every_line(
    tmp_path_factory, chunks: list[bytes], want: set[int], step: int, feeds: list[int]
) -> None:
    """The index the content hash builds, fed in pieces of any size (the hash's reads), finds
    the same lines as the scan: lines and CRLFs cut at every step, lines longer than a step."""
    data = b"".join(chunks)
    path = tmp_path_factory.mktemp("indexed") / "f.txt"
    path.write_bytes(data)
    index = text.LineIndex(step)
    at, i = 0, 0
    while at < len(data):
        n = feeds[i % len(feeds)] or 1
        index.feed(data[at : at + n])
        at, i = at + n, i + 1
    assert index.size == len(data)
    assert index.newlines_before == [
        data[: k * step].count(b"\n") for k in range(len(index.newlines_before))
    ]
    assert len(index.newlines_before) == -(-len(data) // step)
    assert text._lines_by_index(path, index, want) == _by_line(data, want)


def test_a_line_index_is_used_only_where_it_reads_less_than_the_scan(tmp_path: Path) -> None:
    data = b"".join(b"%d|x\n" % n for n in range(1, 20001))  # lines 1..20000, 7-10 bytes each
    path = tmp_path / "f.txt"
    path.write_bytes(data)
    index = text.LineIndex(256)
    index.feed(data)
    assert index.worth_it(10) and not index.worth_it(len(data) // 256)
    want = {1, 2, 9999, 20000, 20001}
    got = text.read_lines(path, None, want, index)
    assert got == {1: b"1|x", 2: b"2|x", 9999: b"9999|x", 20000: b"20000|x"}
    assert got == text.read_lines(path, None, want)  # the scan, no index


def test_read_lines_reads_a_compressed_file_and_a_last_line_without_newline(
    tmp_path: Path,
) -> None:
    data = b"h|h\n1|a\r\n\n3|c\n4|d"
    packed = tmp_path / "f.txt.gz"
    packed.write_bytes(gzip.compress(data))
    assert text.read_lines(packed, "gzip", {2, 3, 4, 5, 6}) == {
        2: b"1|a",
        3: b"",
        4: b"3|c",
        5: b"4|d",
    }


@pytest.mark.parametrize(
    ("submit_line", "cmd"),
    [
        ("sbatch -p gpu run.sh", "sbatch"),
        ("  /usr/bin/SALLOC --gpus=1", "salloc"),
        ("srun --pty bash", "srun"),
        ("/opt/slurm/bin/", ""),
        ("", ""),
        (None, ""),
        ("x\\y/srun a/b", "srun"),
        ("sbatch\t-p x", "sbatch\t-p"),  # a tab is no word break: only a space ends the word
        ("salloc -N 1", "salloc"),
        ("sbatch", "sbatch"),
        ("srunner --pty bash", "srunner"),
        ("sbatchx run.sh", "sbatchx"),
        ("Sbatch run.sh", "sbatch"),
    ],
)
def test_the_command_of_a_submit_line_is_the_first_words_file_name(
    tmp_path: Path, submit_line: str | None, cmd: str
) -> None:
    con = store.connect(tmp_path / "a.duckdb")
    pipeline.prepare(con)
    assert con.execute("SELECT ing_cmd(?)", [submit_line]).fetchone() == (cmd,)
    con.close()
