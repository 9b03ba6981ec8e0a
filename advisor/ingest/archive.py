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
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

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


class _Sink:
    def __init__(self) -> None:
        self.h = hashlib.sha256()
        self.has_cr = False
        self.size = 0

    def add(self, data: bytes) -> None:
        if data:
            self.h.update(data)
            self.has_cr = self.has_cr or b"\r" in data
            self.size += len(data)


def verify(path: Path, compression: str) -> ArchiveCheck:
    """Decompress ``path`` whole (``compression``: 'gzip' or 'zstd'); raise InputError naming
    the file and the compressed byte offset if it is corrupt or truncated."""
    sink = _Sink()
    try:
        with path.open("rb") as fh:
            if compression == "gzip":
                members = _gzip(fh, sink, path)
            elif compression == "zstd":
                members = _zstd(fh, sink, path)
            else:
                raise ValueError(f"not a compression: {compression!r}")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", source=str(path)) from exc
    return ArchiveCheck(sink.h.hexdigest(), sink.has_cr, sink.size, members)


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


def _gzip(fh: BinaryIO, sink: _Sink, path: Path) -> int:
    """Every member of a gzip file (``cat a.gz b.gz`` is one valid file)."""
    d = zlib.decompressobj(wbits=31)
    members, offset = 1, 0  # offset: compressed bytes consumed before ``buf``
    buf = b""
    while True:
        if not buf:
            buf = fh.read(CHUNK_BYTES)
            if not buf:
                break
        try:
            sink.add(d.decompress(buf))
        except zlib.error as exc:
            raise _corrupt(path, "gzip", offset, len(buf), _zlib_reason(exc)) from exc
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
        if rest.startswith(b"\x00"):
            # gzip(1) skips zero padding after a member; DuckDB's reader stops at it
            raise InputError(
                f"zero bytes after the gzip member that ends at compressed byte {offset}"
                " (padding DuckDB cannot read): decompress the file (gunzip) and load the"
                " text",
                source=str(path),
            )
        members += 1
        d = zlib.decompressobj(wbits=31)
        buf = rest
    raise _truncated(path, "gzip", offset)


def _zlib_reason(exc: zlib.error) -> str:
    text = str(exc)
    if "incorrect data check" in text:
        return "CRC-32 mismatch (the uncompressed bytes are not those that were written)"
    if "incorrect length check" in text:
        return "length (ISIZE) mismatch"
    if "incorrect header check" in text or "unknown compression method" in text:
        return "not a gzip member header"
    return text.removeprefix("Error -3 while decompressing data: ")


def _zstd(fh: BinaryIO, sink: _Sink, path: Path) -> int:
    """Every frame of a zstd file (concatenated frames are one valid file)."""
    import zstandard

    dctx = zstandard.ZstdDecompressor()
    d = dctx.decompressobj()
    frames, offset = 1, 0  # offset: compressed bytes consumed before ``buf``
    buf = b""
    while True:
        if not buf:
            buf = fh.read(CHUNK_BYTES)
            if not buf:
                break
        try:
            sink.add(d.decompress(buf))
        except zstandard.ZstdError as exc:
            reason = str(exc).removeprefix("zstd decompressor error: ")
            raise _corrupt(path, "zstd", offset, len(buf), reason) from exc
        if not d.eof:
            offset += len(buf)
            buf = b""
            continue
        rest = d.unused_data
        offset += len(buf) - len(rest)
        if not rest:
            rest = fh.read(CHUNK_BYTES)
            if not rest:
                return frames
        frames += 1
        d = dctx.decompressobj()
        buf = rest
    raise _truncated(path, "zstd", offset)
