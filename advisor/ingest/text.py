"""sacct parsable text (``-P``/``-p``, any field order, any delimiter, with or without header).

Owns the ``read_csv`` call the parser reads from (one VARCHAR column per file column, no quoting:
sacct never quotes) and the lines it cannot read (wrong field count, non-UTF-8 bytes): they land
in DuckDB's reject table and only those are handled here, in Python: a free-text field that
holds the delimiter is re-joined, a record split by a newline inside free text is glued back,
invalid bytes become U+FFFD (the repaired records go to temp table ``raw_fix`` for the same
SQL parser); whatever still does not fit is returned as a reject with its physical line number.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from advisor.ingest.detect import TextLayout, open_decompressed
from advisor.ingest.records import CANONICAL_FIELDS, FREE_TEXT_FIELDS, Reject
from advisor.store import query, quote_ident, render

# DuckDB's reject tables of a read (named as such in advisor/sql/ingest/)
REJ_ERRORS = "ing_csv_errors"
# read_text.sql's max_line_size: no sacct record comes near it.
MAX_LINE_BYTES = 4 << 20
REJ_SCANS = "ing_csv_scans"


@dataclass
class TextRepair:
    """What handling the lines DuckDB could not read found."""

    lines_read: int  # job and step records read (rejected lines included), not the header
    rejects: list[Reject]
    rows: list[tuple[int, list[str]]]  # (physical line, fields) of repaired records
    # the lines of the repaired records whose first half DuckDB had already read as a record
    # (a newline in the last field): the line of that first half
    tail_lines: list[int]

    @property
    def tails(self) -> int:
        return len(self.tail_lines)


def _missing_columns(layout: TextLayout, only: tuple[str, ...] | None = None) -> str:
    """NULL columns for the canonical fields the file lacks (or that are not in ``only``), so
    every source has them all."""
    return ", ".join(
        f"CAST(NULL AS VARCHAR) AS {quote_ident(c)}"
        for c in CANONICAL_FIELDS
        if c not in layout.columns or (only is not None and c not in only)
    )


def csv_src_sql(
    layout: TextLayout, *, keep_rejects: bool = True, only: tuple[str, ...] | None = None
) -> str:
    """SQL reading the file with DuckDB (parameters: see :func:`csv_params`) as parser input.
    The lines it cannot read land in the reject tables (for :func:`repair`), or with
    ``keep_rejects`` False are skipped. With ``only``, the other fields read as NULL: DuckDB
    then checks only those columns of a line (a non-UTF-8 byte elsewhere goes unnoticed)."""
    missing = _missing_columns(layout, only)
    on_error = (
        "store_rejects = true, rejects_table = $rt, rejects_scan = $rs,"
        if keep_rejects
        else "ignore_errors = true,"
    )
    cols = (
        "*"
        if only is None
        else ", ".join(quote_ident(c) for c in layout.columns if c in only) or "1 AS _none"
    )
    # identifiers through quote_ident, every value a parameter
    return render("ingest/read_text", columns=cols + _nulls(missing), on_error=on_error)


def _nulls(missing: str) -> str:
    """``missing`` (:func:`_missing_columns`) after a column list: ", ..." or nothing."""
    return f", {missing}" if missing else ""


def csv_params(
    path: Path,
    compression: str | None,
    layout: TextLayout,
    strict: bool = True,
    *,
    keep_rejects: bool = True,
) -> dict[str, object]:
    """Parameters of :func:`csv_src_sql`. ``strict`` False lets a bare CR end a line (DuckDB's
    strict reader gives up on the whole file at one)."""
    params: dict[str, object] = {
        "strict": strict,
        "path": str(path),
        "delim": layout.delimiter,
        "header": layout.has_header,
        "columns": {c: "VARCHAR" for c in layout.columns},
        "compression": compression or "none",
    }
    if keep_rejects:
        params.update(rt=REJ_ERRORS, rs=REJ_SCANS)
    return params


def fix_src_sql(layout: TextLayout) -> str:
    """SQL reading the repaired records (temp table raw_fix) as parser input."""
    return render("ingest/fix_records", nulls=_nulls(_missing_columns(layout)))


def store_tail_fix(con: duckdb.DuckDBPyConnection, layout: TextLayout, fix: TextRepair) -> bool:
    """Temp table ``tail_fix``: for each record a newline split in its last field (its first
    half reads as a record of its own), its job id, cluster and submit texts, that first half's
    last field and the whole of it, so that :func:`with_tails_sql` reads the whole record in the
    first place. Rows that are not unique by everything but the whole are left out (their rows
    are updated later instead). Returns whether any row is there."""
    rows = _tail_rows(fix)
    columns = {
        "id_txt": [_record_id(layout, f) for f in rows],
        "cluster": [_field(layout, f, "cluster") for f in rows],
        "submit": [_field(layout, f, "submit") for f in rows],
        "head_last": [f[-1].split("\n", 1)[0] for f in rows],
        "whole_last": [f[-1] for f in rows],
    }
    _temp_table(
        con,
        "tail_fix",
        pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()}),
        "WHERE id_txt IS NOT NULL AND head_last <> ''"
        " QUALIFY count(*) OVER (PARTITION BY id_txt, cluster, submit, head_last) = 1",
    )
    [(n,)] = con.execute(query("ingest/count_tail_fix")).fetchall()
    return bool(n)


def with_tails_sql(layout: TextLayout, src: str) -> str:
    """``src`` (:func:`csv_src_sql`) with the last field of each record in temp ``tail_fix``
    (:func:`store_tail_fix`) whole: matched on its job id, cluster and submit texts and the
    first half's last field (a requeued job shares the id, not the submit time)."""
    return render("ingest/with_tails", src=src, last=quote_ident(layout.columns[-1]))


def _field(layout: TextLayout, fields: list[str], name: str) -> str:
    """A field's text in a record ('' when the layout lacks it, as read_csv's NULL)."""
    return fields[layout.columns.index(name)] if name in layout.columns else ""


def _tail_rows(fix: TextRepair) -> list[list[str]]:
    tails = set(fix.tail_lines)
    return [fields for line, fields in fix.rows if line in tails]


def _record_id(layout: TextLayout, fields: list[str]) -> str | None:
    """The job id text of a record's fields (JobID, else JobIDRaw; macros.sql: ing_id_text)."""
    return _field(layout, fields, "jobid") or _field(layout, fields, "jobidraw") or None


def allocation_tails(layout: TextLayout, fix: TextRepair) -> int:
    """The repaired records whose first half was read as a record too, allocations only (a
    step's is dropped: steps_read_twice.sql)."""
    return sum("." not in (_record_id(layout, f) or "") for f in _tail_rows(fix))


def reject_lines(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The lines in DuckDB's reject table, in order."""
    return [int(r[0]) for r in con.execute(query("ingest/reject_lines")).fetchall()]


def drop_reject_tables(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(f"DROP TABLE IF EXISTS {REJ_ERRORS}")
    con.execute(f"DROP TABLE IF EXISTS {REJ_SCANS}")


def repair(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    compression: str | None,
    layout: TextLayout,
    accepted: int,
    index: LineIndex | None = None,
) -> TextRepair:
    """Handle the lines DuckDB rejected: fill temp table ``raw_fix`` with the repaired ones
    (``index``: where the file's lines start, if known)."""
    bad_lines = reject_lines(con)
    if not bad_lines:
        return TextRepair(accepted, [], [], [])
    want = set(bad_lines) | {b - 1 for b in bad_lines}
    texts = read_lines(path, compression, want, index)
    return _store_repaired(con, layout, accepted, bad_lines, texts)


def _store_repaired(
    con: duckdb.DuckDBPyConnection,
    layout: TextLayout,
    accepted: int,
    bad_lines: list[int],
    texts: dict[int, bytes],
) -> TextRepair:
    """Repair the unreadable ``bad_lines`` (``texts``: they and the lines before them) into
    temp table ``raw_fix``; ``accepted``: the records read as they were."""
    rows, rejects, tails = _repair(layout, bad_lines, texts)
    _table(con, "raw_fix", layout, [r[1] for r in rows], [r[0] for r in rows])
    # records, not physical lines: no header, a glued record once, a repaired tail not twice
    return TextRepair(accepted + len(rows) - len(tails) + len(rejects), rejects, rows, tails)


def _table(
    con: duckdb.DuckDBPyConnection,
    name: str,
    layout: TextLayout,
    records: list[list[str]],
    line_nos: list[int | None],
) -> None:
    """Temp table ``name`` (the layout's columns as text, and line_no) holding ``records``.
    An empty field is NULL, as DuckDB's reader reads it: a record read here must parse as the
    same line read by DuckDB would (a repaired record otherwise differs from the row the bulk
    way wrote for it, and the update that replaces it makes the commit write every row twice)."""
    table = pa.table(
        {
            **{
                c: pa.array([r[i] or None for r in records], pa.string())
                for i, c in enumerate(layout.columns)
            },
            "line_no": pa.array(line_nos, pa.int64()),
        }
    )
    _temp_table(con, name, table)


def _temp_table(
    con: duckdb.DuckDBPyConnection, name: str, table: pa.Table, where: str = ""
) -> None:
    """Temp table ``name`` holding the rows of the Arrow ``table`` that pass ``where`` (fixed
    SQL after the FROM: WHERE, QUALIFY)."""
    con.register("ing_records", table)
    try:
        con.execute(render("ingest/records_table", table=name, where=where))
    finally:
        con.unregister("ing_records")


_BATCH = 250_000


def read_by_line(
    con: duckdb.DuckDBPyConnection,
    path: Path,
    compression: str | None,
    layout: TextLayout,
    take: Callable[[bool], None],
) -> TextRepair:
    """Read the file in Python, for a file DuckDB's strict reader gives up on (a carriage return
    that is not part of a line end) and its lenient one would misread (it ends lines at such a
    CR, and cuts the extra fields off a line that has the delimiter in its free text).

    Lines end at a newline only (CRLF as well); a line of the layout's field count that decodes
    as UTF-8 is a record: batches of them are put in temp table ``raw_good`` (line_no NULL, as
    DuckDB's accepted rows) and handed to ``take(first)`` (True for the first batch; called at
    least once), so that the whole file is never held as text. Every other line goes through
    the same repair as the lines DuckDB rejects, into ``raw_fix``. About twice DuckDB's time
    (a Python split per line), and only for such files."""
    n = len(layout.columns)
    delim = layout.delimiter.encode("utf-8")
    good: list[list[str]] = []
    accepted = 0
    bad_lines: list[int] = []
    texts: dict[int, bytes] = {}
    prev = b""
    first = True

    def hand_over() -> None:
        nonlocal good, first
        _table(con, "raw_good", layout, good, [None] * len(good))
        take(first)
        good, first = [], False

    with open_decompressed(path, compression) as fh:
        for no, line in enumerate(fh, start=1):
            body = line[:-1] if line.endswith(b"\n") else line
            if body.endswith(b"\r"):
                body = body[:-1]
            if no == 1 and layout.has_header:
                prev = body
                continue
            if not body:  # a blank line, skipped as DuckDB skips it
                prev = body
                continue
            parts = None
            if body.count(delim) == n - 1:
                try:
                    parts = body.decode("utf-8").split(layout.delimiter)
                except UnicodeDecodeError:
                    parts = None
            if parts is None:
                bad_lines.append(no)
                # (past the line limit no record is left to repair: its head names the line)
                texts[no] = body[: MAX_LINE_BYTES + 1]
                texts.setdefault(no - 1, prev)
            else:
                good.append(parts)
                accepted += 1
                if len(good) == _BATCH:
                    hand_over()
            prev = body
    if good or first:
        hand_over()
    con.execute("DROP TABLE raw_good")
    return _store_repaired(con, layout, accepted, bad_lines, texts)


def good_src_sql(layout: TextLayout) -> str:
    """SQL reading the records :func:`read_by_line` read as they were (temp table raw_good)."""
    return render("ingest/good_records", nulls=_nulls(_missing_columns(layout)))


_BLOCK = 1 << 24
LINE_STEP = 1 << 16  # the line index's step: a repaired line costs about one such read


class LineIndex:
    """Where an uncompressed file's lines start, coarsely: the number of newlines before every
    ``step``-th byte, counted while the file is read anyway (the content hash), so that a line is
    read from the step before it instead of scanning the file from its start."""

    def __init__(self, step: int | None = None) -> None:
        self.step = step or LINE_STEP
        self.size = 0
        self._newlines = 0
        self.newlines_before: list[int] = []  # [k]: newlines in the first k * step bytes

    def feed(self, chunk: bytes) -> None:
        """Count the next bytes of the file in."""
        base, end = self.size, self.size + len(chunk)
        done = base  # bytes counted so far
        mark = len(self.newlines_before) * self.step  # the first step not yet recorded
        while mark < end:
            self._newlines += chunk.count(b"\n", done - base, mark - base)
            self.newlines_before.append(self._newlines)
            done, mark = mark, mark + self.step
        self._newlines += chunk.count(b"\n", done - base)
        self.size = end

    def start(self, line: int) -> tuple[int, int]:
        """(byte, newlines to skip from it) that lead to the start of physical ``line``."""
        k = max(bisect.bisect_left(self.newlines_before, line - 1) - 1, 0)
        return k * self.step, line - 1 - (self.newlines_before[k] if self.newlines_before else 0)

    def worth_it(self, lines: int) -> bool:
        """Whether reading ``lines`` lines from their steps reads less than a quarter of the file."""
        return lines * self.step * 4 < self.size


def read_lines(
    path: Path, compression: str | None, want: set[int], index: LineIndex | None = None
) -> dict[int, bytes]:
    """The wanted physical lines (1-based), without their line end. With an ``index`` of the
    (uncompressed) file, each is read from the step before it; else the file is read in blocks
    whose newlines numpy finds, so that a wanted line is a slice (faster than reading line by
    line in Python: docs/ingest.md, Speed)."""
    if index is not None and compression is None and index.worth_it(len(want)):
        return _lines_by_index(path, index, want)
    todo = sorted(want)
    texts: dict[int, bytes] = {}
    i = 0
    first = 1  # the number of the line that starts `buf`
    rest = b""
    with open_decompressed(path, compression) as fh:
        while i < len(todo):
            block = fh.read(_BLOCK)
            if not block:
                break
            buf = rest + block
            ends = np.flatnonzero(np.frombuffer(buf, dtype=np.uint8) == ord("\n"))
            while i < len(todo) and todo[i] < first + len(ends):
                k = todo[i] - first  # the k-th whole line of buf
                if k >= 0:
                    start = int(ends[k - 1]) + 1 if k else 0
                    texts[todo[i]] = buf[start : int(ends[k])].rstrip(b"\r")
                i += 1
            rest = buf[int(ends[-1]) + 1 :] if len(ends) else buf
            first += len(ends)
    while i < len(todo) and todo[i] < first:
        i += 1
    if i < len(todo) and todo[i] == first and rest:  # the last line, without a newline
        texts[first] = rest.rstrip(b"\r")
    return texts


def _lines_by_index(path: Path, index: LineIndex, want: set[int]) -> dict[int, bytes]:
    """:func:`read_lines` by seeking: each wanted line from the index's step before it."""
    texts: dict[int, bytes] = {}
    with path.open("rb") as fh:
        for line in sorted(n for n in want if n >= 1):
            at, skip = index.start(line)
            fh.seek(at)
            buf = fh.read(index.step)
            pos = 0
            while skip > 0:  # the newline that ends the line before it lies in this step
                nl = buf.find(b"\n", pos)
                if nl < 0:
                    break
                pos, skip = nl + 1, skip - 1
            if skip > 0 or at + pos >= index.size:
                continue  # past the last line
            end = buf.find(b"\n", pos)
            while end < 0:  # a line longer than what was read: on to its end or the file's
                more = fh.read(index.step)
                if not more:
                    end = len(buf)
                    break
                searched, buf = len(buf), buf + more
                end = buf.find(b"\n", searched)
            texts[line] = buf[pos:end].rstrip(b"\r")
    return texts


def find_lines(
    path: Path, compression: str | None, records: list[str], has_header: bool
) -> list[int | None]:
    """The physical line of each record text (in order of appearance for repeated texts)."""
    wanted: dict[bytes, list[int]] = {}
    for i, rec in enumerate(records):
        wanted.setdefault(rec.encode("utf-8"), []).append(i)
    out: list[int | None] = [None] * len(records)
    with open_decompressed(path, compression) as fh:
        for n, line in enumerate(fh, start=1):
            if n == 1 and has_header:
                continue
            key = line.rstrip(b"\n").rstrip(b"\r")
            idx = wanted.get(key)
            if idx:
                out[idx.pop(0)] = n
    return out


def _split(text: str, delim: str, layout: TextLayout) -> list[str] | None:
    """Split a record; re-join extra parts into the free-text column that can hold them
    (advisor.ingest.freetext). None if too few, or if no one column can."""
    parts = text.split(delim)
    n = len(layout.columns)
    if len(parts) == n:
        return parts
    if len(parts) < n:
        return None
    from advisor.ingest import freetext

    return freetext.rejoin(parts, delim, layout)


_RECORD_START = re.compile(r"\d+(_\d+|_\[[^\]]*\]?|\+\d+)?(\.[A-Za-z0-9+]+)?")


def _starts_record(text: str, layout: TextLayout) -> bool:
    """Whether a line begins like a record (a job id first), so it is no continuation."""
    if layout.columns[0] not in ("jobid", "jobidraw") or layout.delimiter not in text:
        return False
    return _RECORD_START.fullmatch(text.split(layout.delimiter, 1)[0]) is not None


_CONTROL = frozenset(range(0x20)) - {0x09, 0x0A, 0x0D}


def _binary(line: bytes, delim: str) -> bool:
    """Whether a line holds NUL or other control bytes (the delimiter's own aside): binary
    junk, which is never glued into the record before it as if it were free text."""
    allowed = set(delim.encode())
    return any(b in _CONTROL and b not in allowed for b in line)


def _repair(
    layout: TextLayout, bad_lines: list[int], texts: dict[int, bytes]
) -> tuple[list[tuple[int, list[str]]], list[Reject], list[int]]:
    delim = layout.delimiter
    n = len(layout.columns)
    bad_set = set(bad_lines)
    rows: list[tuple[int, list[str]]] = []
    tails: list[int] = []  # accepted rows that were the first half of a record split by a newline
    rejects: list[Reject] = []
    used: set[int] = set()
    for ln in bad_lines:
        if ln in used:
            continue
        if len(texts.get(ln, b"")) > MAX_LINE_BYTES:  # glued to nothing, split into nothing
            what = "binary bytes (NUL or control characters)" if _binary(texts[ln], delim) else ""
            rejects.append(
                Reject(
                    ln,
                    texts[ln][:200].decode("utf-8", errors="replace"),
                    f"longer than {MAX_LINE_BYTES >> 20} MiB{': ' + what if what else ''}:"
                    " no sacct record is; not the text of a record, nor of its free text",
                )
            )
            continue
        text = texts.get(ln, b"").decode("utf-8", errors="replace")
        parts = _split(text, delim, layout)
        if parts is not None:
            rows.append((ln, parts))
            continue
        # A newline inside free text: glue the following rejected lines on while too short.
        glued, last = text, ln
        while (
            _split(glued, delim, layout) is None
            and (last + 1) in bad_set
            and not _binary(texts.get(last + 1, b""), delim)
            and not _starts_record(
                texts.get(last + 1, b"").decode("utf-8", errors="replace"), layout
            )
        ):
            last += 1
            glued += "\n" + texts.get(last, b"").decode("utf-8", errors="replace")
        parts = _split(glued, delim, layout)
        if parts is not None:
            rows.append((ln, parts))
            used.update(range(ln, last + 1))
            continue
        # The tail of a record whose first half DuckDB accepted (newline in the last field).
        prev = ln - 1
        if (
            prev not in bad_set
            and prev in texts
            and layout.columns[-1] in FREE_TEXT_FIELDS
            and not _binary(texts.get(ln, b""), delim)
            and not _starts_record(text, layout)
        ):
            head = texts[prev].decode("utf-8", errors="replace")
            head_parts = head.split(delim)
            if len(head_parts) == n:
                whole = head_parts[:-1] + [head_parts[-1] + "\n" + text]
                tails.append(prev)
                rows.append((prev, whole))
                continue
        if _binary(texts.get(ln, b""), delim):
            rejects.append(
                Reject(
                    ln,
                    text,
                    "binary bytes (NUL or control characters):"
                    " not the text of a record, nor of its free text",
                )
            )
            continue
        got = text.count(delim) + 1
        from advisor.ingest import freetext

        both = freetext.ambiguity(text, delim, layout)
        if both is not None:
            rejects.append(Reject(ln, text, both[0], both[1]))
            continue
        rejects.append(
            Reject(
                ln,
                text,
                f"expected {n} fields separated by {delim!r}, found {got}"
                " (wrong --delimiter or --fields, or a truncated line)",
            )
        )
    return rows, rejects, tails


def raw_text_expr(layout: TextLayout) -> str:
    """SQL that rebuilds a record's text from ``raw`` (for rejects of values)."""
    cols = ", ".join(f"coalesce({quote_ident(c)}, '')" for c in layout.columns)
    return f"concat_ws($delim, {cols})"
