"""Checking a compressed source whole before anything reads it.

A gzip or zstd file is decompressed once, in a streaming pass, before DuckDB or a parser sees
it: zlib checks every gzip member's CRC-32 and length (ISIZE), libzstd every frame's checksum
and content size, and a stream that stops inside a member or frame is truncated (a file still
being copied, a broken transfer). Such a file is refused whole with the compressed byte offset
where the damage was found: DuckDB's own reader can loop forever on some corrupt gzip streams,
and a truncated one would load the records before the cut. The same pass yields what the load
records about the bytes (sha256 of the uncompressed text, whether it holds a carriage return),
so they are not decompressed a second time for that.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from advisor.errors import InputError

CHUNK_BYTES = 1 << 16
"""Compressed bytes fed per step: a reported offset is exact to this window."""


@dataclass(frozen=True)
class ArchiveCheck:
    """What the checking pass learnt about the uncompressed bytes."""

    sha256: str
    has_cr: bool
    uncompressed_bytes: int
    members: int  # gzip members or zstd frames
    longest_line: int = 0  # bytes of the longest line


class LongestLine:
    """The longest line of a byte stream fed in chunks, exact for every line as long as a
    chunk or longer (the ones that matter: DuckDB's reader drops a line past its
    max_line_size from some files without a reject, seen at 300 MB); two searches per chunk,
    no per-line work."""

    def __init__(self) -> None:
        self.run = 0  # bytes since the last newline
        self.longest = 0

    def feed(self, chunk: bytes) -> None:
        first = chunk.find(b"\n")
        if first < 0:
            self.run += len(chunk)
        else:
            self.longest = max(self.longest, self.run + first)
            self.run = len(chunk) - chunk.rfind(b"\n") - 1
        self.longest = max(self.longest, self.run)


class _Sink:
    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.has_cr = False
        self.size = 0
        self.lines = LongestLine()

    def add(self, data: bytes) -> None:
        if data:
            self.h.update(data)
            self.has_cr = self.has_cr or b"\r" in data
            self.size += len(data)
            self.lines.feed(data)


def verify(path: Path, compression: str) -> ArchiveCheck:
    """Decompress ``path`` whole (``compression``: 'gzip' or 'zstd'); raise InputError naming
    the file and the compressed byte offset if it is corrupt or truncated."""
    sink = _Sink()
    try:
        codec = _codec(compression)
        with path.open("rb") as fh:
            members = _members(fh, sink, path, codec)
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from exc
    return ArchiveCheck(sink.h.hexdigest(), sink.has_cr, sink.size, members, sink.lines.longest)


def _corrupt(path: Path, kind: str, offset: int, size: int, what: str) -> InputError:
    return InputError(
        f"corrupt {kind} stream, found between compressed bytes {offset} and {offset + size}:"
        f" {what}; the file is "
        "refused whole (nothing loaded from it): fetch or copy it again",
        source=str(path),
    )


def _truncated(path: Path, kind: str, offset: int) -> InputError:
    return InputError(
        f"truncated {kind} stream: it ends at compressed byte {offset}, inside a "
        f"{'member' if kind == 'gzip' else 'frame'} (a copy still in progress or a broken "
        "transfer); the file is refused whole (nothing loaded from it)",
        source=str(path),
    )


@dataclass(frozen=True)
class _Codec:
    """One compression as the checking loop sees it: a fresh decompressor per member or frame
    (each has ``decompress``, ``eof`` and ``unused_data``), the error it raises and what that
    error means, and a check of the bytes that follow a member."""

    kind: str  # 'gzip' | 'zstd', as messages name it
    new: Callable[[], Any]
    error: type[Exception]
    reason: Callable[[Exception], str]
    after_member: Callable[[bytes, int, Path], None] = lambda rest, offset, path: None


def _codec(compression: str) -> _Codec:
    if compression == "gzip":
        return _Codec(
            "gzip", lambda: zlib.decompressobj(wbits=31), zlib.error, _zlib_reason, _no_padding
        )
    if compression == "zstd":
        import zstandard

        dctx = zstandard.ZstdDecompressor()
        return _Codec("zstd", dctx.decompressobj, zstandard.ZstdError, _zstd_reason)
    raise ValueError(f"not a compression: {compression!r}")


def _members(fh: BinaryIO, sink: _Sink, path: Path, codec: _Codec) -> int:
    """Every member (gzip) or frame (zstd) of the file, counted: ``cat a.gz b.gz`` is one valid
    gzip file, and concatenated frames one valid zstd file."""
    d = codec.new()
    members, offset = 1, 0  # offset: compressed bytes consumed before ``buf``
    buf = b""
    while True:
        if not buf:
            buf = fh.read(CHUNK_BYTES)
            if not buf:
                break
        try:
            sink.add(d.decompress(buf))
        except codec.error as exc:
            raise _corrupt(path, codec.kind, offset, len(buf), codec.reason(exc)) from exc
        if not d.eof:
            offset += len(buf)
            buf = b""
            continue
        rest = d.unused_data
        offset += len(buf) - len(rest)
        if not rest:
            rest = fh.read(CHUNK_BYTES)
            if not rest:
                return members
        codec.after_member(rest, offset, path)
        members += 1
        d = codec.new()
        buf = rest
    raise _truncated(path, codec.kind, offset)


def _no_padding(rest: bytes, offset: int, path: Path) -> None:
    if rest.startswith(b"\x00"):
        # gzip(1) skips zero padding after a member; DuckDB's reader stops at it
        raise InputError(
            f"zero bytes after the gzip member that ends at compressed byte {offset}"
            " (padding DuckDB cannot read): decompress the file (gunzip) and load the"
            " text",
            source=str(path),
        )


def _zlib_reason(exc: Exception) -> str:
    text = str(exc)
    if "incorrect data check" in text:
        return "CRC-32 mismatch (the uncompressed bytes are not those that were written)"
    if "incorrect length check" in text:
        return "length (ISIZE) mismatch"
    if "incorrect header check" in text or "unknown compression method" in text:
        return "not a gzip member header"
    return text.removeprefix("Error -3 while decompressing data: ")


def _zstd_reason(exc: Exception) -> str:
    return str(exc).removeprefix("zstd decompressor error: ")
