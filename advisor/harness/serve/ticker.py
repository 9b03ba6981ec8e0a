"""The samplers' clock: a daemon thread that calls a function every ``period_s`` until stopped
or until the function returns False (what the GPU and the wait samplers share)."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Ticker:
    """Calls ``tick`` every ``period_s`` seconds in a daemon thread, from :meth:`start` until
    :meth:`stop` (which waits up to 5 s for a tick in progress) or a tick returning False."""

    def __init__(self, period_s: float, tick: Callable[[], bool | None]) -> None:
        self.period_s = period_s
        self._tick = tick
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _loop(self) -> None:
        while not self._stop.wait(self.period_s):
            if self._tick() is False:
                return

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
