"""Run a long-lived child process in the foreground, and never leave it behind.

``advisor dashboard`` serves through a ``streamlit`` child. Python's default for SIGTERM ends
the parent at once, and ``kill -INT`` reaches only the parent, so either way the child kept
serving on its port after the command had ended. Here the child runs in a process group of its
own; SIGTERM, SIGINT (Ctrl-C) and SIGHUP received by the parent are passed to that group, the
parent waits for the child to stop (killing it after a grace period) and then returns.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from types import FrameType

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_S = 10.0  # how long a stopping child may take before it is killed


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def run_supervised(
    argv: Sequence[str], env: Mapping[str, str] | None = None, *, grace_s: float = GRACE_S
) -> int:
    """Run ``argv`` until it exits or this process is asked to stop; return its exit status,
    or 128 + the signal's number when a signal stopped it (130 for Ctrl-C, 143 for SIGTERM).

    Must be called from the main thread (it installs signal handlers, restored on return).
    """
    received: list[int] = []
    proc = subprocess.Popen(  # noqa: S603 (a fixed argv, no shell)
        list(argv), env=dict(env) if env is not None else None, start_new_session=True
    )

    def forward(signum: int, _frame: FrameType | None) -> None:
        received.append(signum)
        _signal_group(proc.pid, signum)

    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        while True:
            try:
                code = proc.wait(timeout=grace_s if received else None)
                break
            except subprocess.TimeoutExpired:  # asked to stop, and it did not: kill it
                _signal_group(proc.pid, signal.SIGKILL)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if proc.poll() is None:  # leaving on an exception: the child goes with us
            _signal_group(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
    return 128 + received[0] if received else code
