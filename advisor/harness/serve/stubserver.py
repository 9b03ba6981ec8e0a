"""A stub OpenAI-compatible completion server: a real process, scripted behaviour, no model.

Run as ``python -m advisor.harness.serve.stubserver --port N [...]``. It answers ``GET /health``,
``GET /metrics`` (Prometheus text) and streamed ``POST /v1/completions`` with chunked
server-sent events, after a configurable delay before the first token and between tokens.
It can also misbehave on purpose: never become ready, crash at start, hang (stop answering)
or die after some requests. Each request's own timestamps (``time.monotonic_ns()``, one clock
for every process of the host) go to ``--log`` as JSON lines, so a test can check the load
generator's TTFT against the server's. It is what the tests use for cases a real engine
cannot be made to show on demand, and what ``bench/bench_loadgen_overhead.py`` measures the
client against; anyone can point ``--engine-cmd`` at it to try the harness without a GPU.
Standard library only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import time


class Stub:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.requests = 0
        self.log = open(args.log, "a", buffering=1) if args.log else None  # noqa: SIM115
        self.hung = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await reader.readline()
            received = time.monotonic_ns()
            if not line:
                return
            method, path, _ = line.decode("latin-1").split(" ", 2)
            length = 0
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                if k.strip().lower() == "content-length":
                    length = int(v.strip())
            body = await reader.readexactly(length) if length else b""
            if path == "/health":
                await self._plain(writer, 200, b"ok")
            elif path == "/metrics":
                text = (
                    f"# TYPE stub_requests_total counter\nstub_requests_total {self.requests}\n"
                ).encode()
                await self._plain(writer, 200, text)
            elif method == "POST" and path == "/v1/completions":
                await self._complete(writer, body, received)
            else:
                await self._plain(writer, 404, b"not found")
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            writer.close()

    async def _plain(self, writer: asyncio.StreamWriter, status: int, body: bytes) -> None:
        writer.write(
            f"HTTP/1.1 {status} X\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n".encode()
            + body
        )
        await writer.drain()

    async def _complete(self, writer: asyncio.StreamWriter, body: bytes, received: int) -> None:
        a = self.args
        self.requests += 1
        n = self.requests
        if a.die_after is not None and n > a.die_after:
            os._exit(9)
        if a.hang_after is not None and n > a.hang_after:
            await asyncio.Event().wait()  # never answers
        req = json.loads(body or b"{}")
        max_tokens = int(req.get("max_tokens") or 1)
        prompt = str(req.get("prompt", ""))
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        await writer.drain()
        if a.first_token_ms:
            await asyncio.sleep(a.first_token_ms / 1000.0)
        if a.busy_ms:
            spin_cpu(a.busy_ms / 1000.0)
        first_sent = 0
        for i in range(max_tokens):
            if i and a.itl_ms:
                await asyncio.sleep(a.itl_ms / 1000.0)
            event = {
                "id": f"stub-{n}",
                "object": "text_completion",
                "choices": [{"index": 0, "text": " tok", "finish_reason": None}],
            }
            if i == 0:
                first_sent = time.monotonic_ns()  # before the write: the client sees it after
            self._chunk(writer, b"data: " + json.dumps(event).encode() + b"\n\n")
            await writer.drain()
        # Logged before the closing chunks: once the client has the whole answer, a test may
        # stop this server at once, and the record must already be on disk (line-buffered).
        if self.log:
            self.log.write(
                json.dumps(
                    {
                        "request": n,
                        "received_ns": received,
                        "first_token_sent_ns": first_sent,
                        "prompt_chars": len(prompt),
                    }
                )
                + "\n"
            )
        usage = {
            "id": f"stub-{n}",
            "choices": [],
            "usage": {"prompt_tokens": len(prompt.split()), "completion_tokens": max_tokens},
        }
        self._chunk(writer, b"data: " + json.dumps(usage).encode() + b"\n\n")
        self._chunk(writer, b"data: [DONE]\n\n")
        writer.write(b"0\r\n\r\n")
        await writer.drain()

    @staticmethod
    def _chunk(writer: asyncio.StreamWriter, data: bytes) -> None:
        writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")


async def main_async(args: argparse.Namespace) -> None:
    if args.start_delay_s:
        await asyncio.sleep(args.start_delay_s)
    if args.crash_on_start:
        sys.stderr.write("stub: crashing at start as asked\n")
        sys.exit(3)
    if args.never_ready:
        await asyncio.Event().wait()
    stub = Stub(args)
    server = await asyncio.start_server(stub.handle, args.host, args.port, backlog=1024)
    async with server:
        await server.serve_forever()


def spin_cpu(seconds: float) -> None:
    """Burn ``seconds`` of this thread's CPU time (not wall time), as a tokenizer would."""
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--first-token-ms", type=float, default=0.0)
    p.add_argument("--itl-ms", type=float, default=0.0)
    p.add_argument("--start-delay-s", type=float, default=0.0)
    p.add_argument(
        "--busy-ms", type=float, default=0.0, help="CPU time to burn before each first token"
    )
    p.add_argument("--crash-on-start", action="store_true")
    p.add_argument("--never-ready", action="store_true")
    p.add_argument("--hang-after", type=int, default=None, help="stop answering after N requests")
    p.add_argument("--die-after", type=int, default=None, help="exit after N requests")
    p.add_argument("--log", default=None)
    p.add_argument("--model", default=None, help="accepted and ignored")
    args = p.parse_args(argv)
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
