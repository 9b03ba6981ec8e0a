"""Run a long-lived child process in the foreground, and never leave it behind.

``advisor dashboard`` serves through a ``streamlit`` child. Python's default for SIGTERM ends
the parent at once, and ``kill -INT`` reaches only the parent, so either way the child kept
serving on its port after the command had ended. Here the child runs in a process group of its
own; SIGTERM, SIGINT (Ctrl-C) and SIGHUP received by the parent are passed to that group, the
parent waits for the child to stop (killing it after a grace period) and then returns.

A parent killed outright (``kill -9``, the out-of-memory killer) runs no handler at all, so on
Linux the child is started through ``python -m advisor.serving.supervise PARENT_PID -- ARGV``: that
asks the kernel for SIGKILL when its parent dies (``prctl(PR_SET_PDEATHSIG)``, which survives
the ``exec``), checks that the parent is still there, and then becomes ``ARGV`` (same process).
Where prctl is missing (not Linux) the child is started directly, as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from types import FrameType
from typing import NoReturn

FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
GRACE_S = 10.0  # how long a stopping child may take before it is killed
PR_SET_PDEATHSIG = 1  # linux/prctl.h


def _prctl() -> object | None:
    """libc's prctl, or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def dying_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` started so that the kernel kills it when this process dies (Linux), else as is."""
    if _prctl() is None:
        return list(argv)
    return [sys.executable, "-m", "advisor.serving.supervise", str(os.getpid()), "--", *argv]


def _exec_dying_with_parent(args: Sequence[str]) -> NoReturn:
    """``PARENT_PID -- ARGV``: ask for SIGKILL when the parent dies, then exec ARGV."""
    parent, sep, *argv = args
    prctl = _prctl()
    if sep != "--" or not argv or prctl is None:
        sys.stderr.write(
            "usage: python -m advisor.serving.supervise PARENT_PID -- PROGRAM [ARGS...]\n"
        )
        raise SystemExit(2)
    if prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:  # type: ignore[operator]
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    if os.getppid() != int(parent):  # the parent died before the request: nobody to serve
        raise SystemExit(1)
    os.execvp(argv[0], argv)


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
        dying_with_parent(argv), env=dict(env) if env is not None else None, start_new_session=True
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


if __name__ == "__main__":
    _exec_dying_with_parent(sys.argv[1:])
