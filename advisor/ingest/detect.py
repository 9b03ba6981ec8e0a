"""Recognising a source: its compression (by magic bytes), its format, its delimiter and header.

gzip starts with ``1f 8b``, zstd with ``28 b5 2f fd``; the name's suffix is never trusted.
A JSON document (``sacct --json`` / slurmrestd) has a ``{`` before anything else that is not
a login banner; jobcomp/filetxt lines start with ``JobId=``; anything else is sacct text.
"""

from __future__ import annotations

import gzip
import io
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO, cast

from advisor.errors import InputError, NotFoundError
from advisor.ingest.records import CANONICAL_FIELDS, INPUT_FORMATS, TextLayout

GZIP_MAGIC = b"\x1f\x8b"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
UTF8_BOM = b"\xef\xbb\xbf"
_DELIMITER_CANDIDATES = ("|", "\x1f", "\t", ";", ",", "!", "^", "#", "~")
_FIELD_ALIASES = {"jobid": "jobid", "job_id": "jobid", "id": "jobid"}


def compression_of(path: Path) -> str | None:
    """'gzip', 'zstd' or None, from the first bytes of the file."""
    try:
        with path.open("rb") as fh:
            head = fh.read(4)
    except FileNotFoundError as exc:
        raise NotFoundError(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise InputError("is a directory, not a file", source=str(path)) from exc
    except OSError as exc:  # no permission, an I/O error, a special file
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from exc
    if head.startswith(GZIP_MAGIC):
        return "gzip"
    if head.startswith(ZSTD_MAGIC):
        return "zstd"
    return None


@contextmanager
def open_decompressed(path: Path, compression: str | None) -> Iterator[BinaryIO]:
    """The file's uncompressed bytes as a binary stream."""
    if compression == "gzip":
        with gzip.open(path, "rb") as gz:
            yield cast(BinaryIO, gz)
    elif compression == "zstd":
        import zstandard

        with path.open("rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as zr:
            yield cast(BinaryIO, io.BufferedReader(zr))
    else:
        with path.open("rb") as fh:
            yield fh


def read_head(path: Path, compression: str | None, size: int = 65536) -> bytes:
    """The first ``size`` uncompressed bytes."""
    with open_decompressed(path, compression) as fh:
        try:
            return fh.read(size)
        except (OSError, EOFError) as exc:
            raise InputError(f"cannot decompress ({compression}): {exc}", source=str(path)) from exc


def detect_format(head: bytes) -> str:
    """sacct-json, jobcomp, pressure (JSON lines of CPU pressure records) or sacct-text, from the first bytes (a UTF-8 byte order mark, which
    some editors and Windows tools write first, is no content)."""
    text = head.removeprefix(UTF8_BOM).lstrip().decode("utf-8", errors="replace")
    first_line = text.split("\n", 1)[0]
    if (
        first_line.startswith("{")
        and '"schema"' in first_line
        and "advisor.pressure/" in first_line
    ):
        return "pressure"  # CPU pressure records, JSON lines (advisor.ingest.pressure)
    if text.startswith("{") or text.startswith("["):
        return "sacct-json"
    first = text.split("\n", 1)[0]
    if re.match(r"^JobId=\S*\s+\S+=", first):
        return "jobcomp"
    # a banner before a JSON document (SARC strips to the first '{')
    brace = text.find("\n{")
    if brace >= 0 and "JobID" not in text[:brace]:
        return "sacct-json"
    return "sacct-text"


# meta.plugin of sacct --json: "data_parser/v0.0.42" (23.02+), "openapi/dbv0.0.38" before; the
# slash is escaped ("\\/") by 22.05's JSON writer. meta comes first in sacct's output.
_JSON_VERSION_RE = re.compile(rb'"(?:data_parser|openapi\\?/db)\\?/?(v0\.0\.\d+)"')


def sacct_json_version(head: bytes) -> str | None:
    """The data_parser version (``v0.0.42``) named in the first bytes of a sacct --json
    document, or None when its meta does not say (a hand-made document)."""
    m = _JSON_VERSION_RE.search(head)
    return m.group(1).decode("ascii") if m else None


def check_input_format(name: str | None) -> str | None:
    if name is None or name in INPUT_FORMATS:
        return name
    raise InputError(f"unknown input format {name!r}; use one of {', '.join(INPUT_FORMATS)}")


def canonical_field(name: str) -> str:
    """A header name (JobID, jobidraw, AllocTRES) as the parsers' lower-case name."""
    low = name.strip().lower()
    return _FIELD_ALIASES.get(low, low)


def _known(names: list[str]) -> int:
    return sum(1 for n in names if canonical_field(n) in CANONICAL_FIELDS)


def text_layout(
    head: bytes, delimiter: str | None, fields: tuple[str, ...] | None, source: str
) -> TextLayout:
    """Find the delimiter and the columns of sacct text from its first line (or ``fields``)."""
    first_bytes = head.split(b"\n", 1)[0].rstrip(b"\r")
    if b"\r" in first_bytes:
        # lines ended by a carriage return alone (classic Mac OS, some converters): read as one
        # line, such a file once loaded nothing, or held the whole file as its header
        raise InputError(
            "its lines end in a carriage return alone (CR), not a newline: convert them first,"
            " e.g. tr '\\r' '\\n' < FILE > FILE.txt",
            source=source,
            line=1,
        )
    first = first_bytes.decode("utf-8", errors="replace")
    candidates = (delimiter,) if delimiter else _DELIMITER_CANDIDATES
    best: tuple[int, str] | None = None
    for cand in candidates:
        names = first.split(cand)
        score = _known(names)
        if len(names) >= 2 and score >= 2 and (best is None or score > best[0]):
            best = (score, cand)
    if best is not None and (fields is None or _known(first.split(best[1])) >= 2):
        delim = best[1]
        names = first.split(delim)
        return TextLayout(delim, _columns(names), tuple(names), True)
    sep = header_separator(first) if delimiter is None else None
    if sep is not None and fields is None:
        raise InputError(
            f"the header's fields are separated by {sep!r}, more than one character: give "
            f"--delimiter {sep!r}",
            source=source,
            line=1,
        )
    if fields is None:
        raise InputError(
            "no sacct header line found (a line like JobID|JobIDRaw|...|AllocTRES); for a file "
            "written with sacct -n, give the field list: --fields JobID,JobIDRaw,...",
            source=source,
            line=1,
        )
    names = [f for f in fields]
    if delimiter is None:
        # header-less: pick the candidate that splits the first line into len(fields) parts
        counts = {c: len(first.split(c)) for c in _DELIMITER_CANDIDATES}
        exact = [c for c, n in counts.items() if n in (len(names), len(names) + 1)]
        if not exact:
            raise InputError(
                f"cannot find the delimiter: no candidate splits the first line into "
                f"{len(names)} fields; give --delimiter",
                source=source,
                line=1,
            )
        delimiter = exact[0]
    if len(first.split(delimiter)) == len(names) + 1 and first.endswith(delimiter):
        names = [*names, ""]  # sacct -p: a trailing delimiter
    if _known(list(names)) == 0:
        raise InputError(f"--fields names no sacct field: {', '.join(fields)}", source=source)
    return TextLayout(delimiter, _columns(list(names)), tuple(names), False)


def _columns(names: list[str]) -> tuple[str, ...]:
    out: list[str] = []
    seen: set[str] = set()
    for i, n in enumerate(names):
        c = canonical_field(n)
        if c not in CANONICAL_FIELDS or c in seen:
            c = f"_col{i}"
        seen.add(c)
        out.append(c)
    if "jobid" not in seen and "jobidraw" not in seen:
        raise InputError(
            "the header has neither JobID nor JobIDRaw: add one to sacct --format "
            f"(found: {', '.join(n for n in names if n)})"
        )
    return tuple(out)


def header_separator(line: str) -> str | None:
    """The text between the first two known sacct field names of a header line when it is
    longer than one character (``JobID<>JobIDRaw`` gives ``<>``), else None."""
    names = [
        m
        for m in re.finditer(r"[A-Za-z][A-Za-z0-9_]*", line)
        if canonical_field(m.group(0)) in CANONICAL_FIELDS
    ]
    for a, b in zip(names, names[1:], strict=False):
        sep = line[a.end() : b.start()]
        if not sep:
            continue
        plausible = (
            1 < len(sep.encode()) <= 4
            and len(set(sep)) > 1
            and not any(ch.isalnum() or ch in "=()" for ch in sep)
        )
        return sep if plausible and _known(line.split(sep)) >= 3 else None
    return None
