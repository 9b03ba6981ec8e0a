"""A minimal asyncio HTTP/1.1 client for streamed OpenAI-compatible completions.

The standard library only (it runs on GPU machines as they are, and costs the load generator
less per request than a general-purpose client): one connection per request, the request sent in
one write, the response read as it arrives (chunked, Content-Length or until close), server-sent
events split as they come. It reports when the first token arrived, not when the body ended.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class StreamOutcome:
    """What one streamed request saw; times are ``time.perf_counter()`` seconds."""

    first_token_t: float | None
    finished_t: float | None
    output_events: int
    completion_tokens: int | None  # from the server's usage report, when it sends one
    prompt_tokens: int | None
    http_status: int | None
    error: str | None


class _StreamError(Exception):
    pass


def build_request(host: str, port: int, path: str, payload: dict[str, object]) -> bytes:
    """The whole HTTP request as bytes (built before the load phase, not during it)."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = (
        f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Type: application/json\r\n"
        f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Events:
    """Split a byte stream into server-sent events and track tokens."""

    def __init__(self) -> None:
        self.buf = b""
        self.first_token_t: float | None = None
        self.output_events = 0
        self.completion_tokens: int | None = None
        self.prompt_tokens: int | None = None
        self.done = False

    def feed(self, data: bytes, now: float) -> None:
        self.buf += data
        while True:
            cut = self.buf.find(b"\n\n")
            if cut < 0:
                return
            event, self.buf = self.buf[:cut], self.buf[cut + 2 :]
            for line in event.split(b"\n"):
                line = line.rstrip(b"\r")
                if not line.startswith(b"data:"):
                    continue
                data_part = line[5:].strip()
                if data_part == b"[DONE]":
                    self.done = True
                    continue
                self._event(data_part, now)

    def _event(self, raw: bytes, now: float) -> None:
        try:
            obj = json.loads(raw)
        except ValueError as exc:
            raise _StreamError(f"bad event: {raw[:80]!r}") from exc
        if not isinstance(obj, dict):
            return
        if obj.get("error"):
            raise _StreamError(f"server error event: {str(obj['error'])[:200]}")
        if obj.get("choices"):
            self.output_events += 1
            if self.first_token_t is None:
                self.first_token_t = now
        usage = obj.get("usage")
        if isinstance(usage, dict):
            if usage.get("completion_tokens") is not None:
                self.completion_tokens = int(usage["completion_tokens"])
            if usage.get("prompt_tokens") is not None:
                self.prompt_tokens = int(usage["prompt_tokens"])


async def _read_headers(reader: asyncio.StreamReader) -> tuple[int, dict[str, str]]:
    status_line = await reader.readline()
    if not status_line:
        raise _StreamError("connection closed before a response")
    parts = status_line.decode("latin-1").split(" ", 2)
    try:
        status = int(parts[1])
    except (IndexError, ValueError) as exc:
        raise _StreamError(f"bad status line {status_line[:80]!r}") from exc
    headers: dict[str, str] = {}
    while True:
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        key, _, value = line.decode("latin-1").partition(":")
        headers[key.strip().lower()] = value.strip()
    return status, headers


async def _body_chunks(reader: asyncio.StreamReader, headers: dict[str, str]):
    if "chunked" in headers.get("transfer-encoding", "").lower():
        while True:
            size_line = await reader.readline()
            if not size_line:
                return
            try:
                size = int(size_line.split(b";")[0].strip(), 16)
            except ValueError as exc:
                raise _StreamError(f"bad chunk size {size_line[:40]!r}") from exc
            if size == 0:
                return
            data = await reader.readexactly(size)
            await reader.readexactly(2)
            yield data
    elif "content-length" in headers:
        left = int(headers["content-length"])
        while left > 0:
            data = await reader.read(min(left, 65536))
            if not data:
                return
            left -= len(data)
            yield data
    else:
        while True:
            data = await reader.read(65536)
            if not data:
                return
            yield data


async def stream_completion(
    host: str, port: int, request: bytes, timeout_s: float
) -> tuple[float, StreamOutcome]:
    """Send ``request``; return (sent time, outcome). Never raises for server or network faults."""
    events = _Events()
    status: int | None = None
    sent_t = time.perf_counter()
    writer: asyncio.StreamWriter | None = None
    error: str | None = None
    finished_t: float | None = None
    try:
        async with asyncio.timeout(timeout_s):
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(request)
            status, headers = await _read_headers(reader)
            if status != 200:
                body = b""
                async for data in _body_chunks(reader, headers):
                    body += data
                    if len(body) > 2000:
                        break
                error = f"HTTP {status}: {body[:300].decode('utf-8', 'replace')}"
            else:
                async for data in _body_chunks(reader, headers):
                    events.feed(data, time.perf_counter())
                    if events.done:
                        break
                finished_t = time.perf_counter()
                if events.first_token_t is None:
                    error = "stream ended without a token"
    except TimeoutError:
        error = f"timeout after {timeout_s:g} s"
    except (OSError, asyncio.IncompleteReadError, _StreamError) as exc:
        error = f"{type(exc).__name__}: {exc}"
    finally:
        if writer is not None:
            writer.close()
    return sent_t, StreamOutcome(
        first_token_t=events.first_token_t,
        finished_t=finished_t if error is None else None,
        output_events=events.output_events,
        completion_tokens=events.completion_tokens,
        prompt_tokens=events.prompt_tokens,
        http_status=status,
        error=error,
    )
