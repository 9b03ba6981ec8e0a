"""An HTTP server for a WSGI app that keeps answering under load: ``advisor metrics --serve``.

The standard library's ``wsgiref`` server answers one connection at a time with a listen backlog
of 5: one client that sends half a request and waits blocks every other scrape, and a burst of
scrapes is refused at the door. Here each connection gets a thread, the backlog is 128, a
connection that does not finish sending its request within ``READ_TIMEOUT_S`` is closed, and
identical requests that arrive while one is being answered share its answer (a scrape recomputes
every number, so a burst of 200 costs one computation, not 200 queued behind each other).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

READ_TIMEOUT_S = 5.0  # to send a request line and headers; a scrape's request is one packet
BACKLOG = 128

WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True  # a connection still open never keeps the process from stopping
    block_on_close = False
    request_queue_size = BACKLOG


class _Handler(WSGIRequestHandler):
    timeout = READ_TIMEOUT_S  # socketserver sets it on the connection's socket

    def handle(self) -> None:
        # a client that sent half a request and waited, or left mid-way: close, quietly
        with contextlib.suppress(TimeoutError, ConnectionError):
            super().handle()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (stdlib's name)
        pass


@dataclass
class _Flight:
    done: threading.Event = field(default_factory=threading.Event)
    status: str = "500 Internal Server Error"
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    error: BaseException | None = None


def shared_answers(app: WsgiApp) -> WsgiApp:
    """``app`` where requests identical to one being answered (method, path, query, Accept and
    Accept-Encoding) wait for that answer instead of computing their own."""
    lock = threading.Lock()
    flights: dict[tuple[str, ...], _Flight] = {}

    def answer(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        key = tuple(
            str(environ.get(k, ""))
            for k in (
                "REQUEST_METHOD",
                "PATH_INFO",
                "QUERY_STRING",
                "HTTP_ACCEPT",
                "HTTP_ACCEPT_ENCODING",
            )
        )
        with lock:
            flight = flights.get(key)
            leader = flight is None
            if flight is None:
                flight = flights[key] = _Flight()
        if leader:
            try:

                def capture(status: str, headers: list[tuple[str, str]], *_: Any) -> None:
                    flight.status, flight.headers = status, list(headers)

                flight.body = b"".join(app(environ, capture))
            except BaseException as exc:  # every waiter gets the same failure
                flight.error = exc
            finally:
                with lock:
                    del flights[key]
                flight.done.set()
        else:
            flight.done.wait()
        if flight.error is not None:
            raise flight.error
        start_response(flight.status, flight.headers)
        return [flight.body]

    return answer


def serve_forever(app: WsgiApp, address: str, port: int) -> None:
    """Serve ``app`` on ``address:port`` until interrupted, many connections at once."""
    with _Server((address, port), _Handler) as server:
        server.set_app(shared_answers(app))
        server.serve_forever()
