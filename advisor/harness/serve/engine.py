"""Starting, watching and stopping a serving engine: one process group pinned to a core set.

The engine command comes from a template (``{model}``, ``{port}``, ``{host}``, ``{tp}``,
``{cores}``, ``{python}`` filled in per argument, never through a shell), so any
OpenAI-compatible server can be benchmarked. The process starts in its own session (its own
process group) with its CPU affinity set before it runs anything. :meth:`EngineProcess.wait_ready`
tells a crash (the process exited: its exit code and the end of its log) from a slow or hung
start (still alive at the deadline). :meth:`EngineProcess.stop` ends the whole group: SIGTERM,
a grace period, then SIGKILL, and reports anything that survived.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.errors import UsageError

ENGINE_TEMPLATES: dict[str, str] = {
    # vLLM's CLI entry point through the interpreter, so a carried vLLM on PYTHONPATH works too.
    "vllm": "{python} -m vllm.entrypoints.cli.main serve {model} --host {host} --port {port}"
    " --tensor-parallel-size {tp}",
    # Hugging Face transformers' own server: the CPU stand-in the tests use.
    "transformers": "{python} -m transformers.cli.transformers serve {model} --host {host}"
    " --port {port} --device cpu",
    "sglang": "{python} -m sglang.launch_server --model-path {model} --host {host} --port {port}"
    " --tp {tp}",
    "stub": "{python} -m advisor.harness.serve.stubserver --host {host} --port {port}",
}


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def render_command(template: str, values: Mapping[str, object]) -> list[str]:
    """Split the template like a shell would, then fill the placeholders of each argument."""
    try:
        args = shlex.split(template)
    except ValueError as exc:
        raise UsageError(f"--engine-cmd {template!r}: {exc}") from exc
    out = []
    for a in args:
        try:
            out.append(a.format(**values))
        except (KeyError, IndexError, ValueError) as exc:
            raise UsageError(
                f"--engine-cmd: unknown placeholder in {a!r} ({exc}); "
                f"use {', '.join('{' + k + '}' for k in values)}"
            ) from exc
    if not out:
        raise UsageError("--engine-cmd is empty")
    return out


@dataclass(frozen=True)
class EngineSpec:
    argv: tuple[str, ...]
    host: str
    port: int
    cores: tuple[int, ...]
    env: Mapping[str, str] = field(default_factory=dict)  # added to the inherited environment
    ready_path: str = "/health"
    log_path: Path | None = None
    # a cgroup v2 folder under which the engine starts in a cgroup of its own (and only its
    # processes), so a phase reads that cgroup's pressure as a node reads a job's; None: none
    cgroup_parent: Path | None = None


CGROUP_ENV = "ADVISOR_ENGINE_CGROUP"


def default_cgroup_parent(mount: Path = Path("/sys/fs/cgroup")) -> Path | None:
    """Where engines get cgroups of their own: the cgroup v2 root, when this process may make
    cgroups there (root, v2 alone, as on the lent GPU machines); ``$ADVISOR_ENGINE_CGROUP``
    names another parent, or ``off``."""
    env = os.environ.get(CGROUP_ENV, "")
    if env == "off":
        return None
    parent = Path(env) if env else mount
    ok = (parent / "cgroup.procs").exists() and (parent / "cpu.pressure").exists()
    if not env:
        ok = ok and (mount / "cgroup.controllers").exists()
    return parent if ok and os.access(parent, os.W_OK) else None


_CGROUPS_MADE = 0


def _new_cgroup(parent: Path) -> Path | None:
    """A fresh cgroup under ``parent`` for one engine start, or None where it cannot be made."""
    global _CGROUPS_MADE
    _CGROUPS_MADE += 1
    path = parent / f"advisor-engine-{os.getpid()}-{_CGROUPS_MADE}"
    try:
        path.mkdir()
    except OSError:
        return None
    return path


def _enter(cgroup: Path | None, cores: set[int]) -> Callable[[], None]:
    """The child's first step before exec: its cores, then (best effort) its own cgroup, so
    that every process it starts is born inside (a running engine moved into one once failed
    to load libtorch)."""

    def run() -> None:
        os.sched_setaffinity(0, cores)
        if cgroup is not None:
            with contextlib.suppress(OSError), open(cgroup / "cgroup.procs", "w") as fh:
                fh.write("0\n")

    return run


@dataclass(frozen=True)
class ReadyResult:
    status: str  # ok | crashed | start-timeout
    seconds: float
    exit_code: int | None
    log_tail: str


def _http_ok(host: str, port: int, path: str, timeout_s: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=timeout_s) as r:
            return 200 <= r.status < 300
    except (urllib.error.URLError, OSError, ValueError):
        return False


def http_get_text(host: str, port: int, path: str, timeout_s: float = 5.0) -> str | None:
    """The body of a GET, or None if it failed."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=timeout_s) as r:
            return r.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError, ValueError):
        return None


class EngineProcess:
    """A running engine. Use as a context manager: it is stopped on exit whatever happened."""

    def __init__(self, spec: EngineSpec) -> None:
        self.spec = spec
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None
        self.started_t = 0.0
        self.cgroup: Path | None = None  # the engine's own cgroup, while it runs

    def __enter__(self) -> EngineProcess:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        spec = self.spec
        env = {**os.environ, **spec.env}
        cores = set(spec.cores)
        log_path = spec.log_path or Path(os.devnull)
        self._log = open(log_path, "ab")  # noqa: SIM115
        self.cgroup = _new_cgroup(spec.cgroup_parent) if spec.cgroup_parent else None
        try:
            self.proc = subprocess.Popen(
                list(spec.argv),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=_enter(self.cgroup, cores),  # noqa: PLW1509
            )
        except FileNotFoundError as exc:
            from advisor.errors import ExternalToolError

            raise ExternalToolError(
                f"cannot start the engine: {spec.argv[0]!r} not found ({exc}); "
                "check --engine / --engine-cmd"
            ) from exc
        self.started_t = time.monotonic()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def exit_code(self) -> int | None:
        return None if self.proc is None else self.proc.poll()

    def log_tail(self, chars: int = 3000) -> str:
        if self.spec.log_path is None:
            return ""
        try:
            with open(self.spec.log_path, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - chars))
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def wait_ready(self, timeout_s: float, poll_s: float = 0.5) -> ReadyResult:
        """Wait for ``ready_path`` to answer 200: ok, crashed (exited) or start-timeout."""
        deadline = self.started_t + timeout_s
        while True:
            if not self.alive():
                return ReadyResult(
                    "crashed", time.monotonic() - self.started_t, self.exit_code(), self.log_tail()
                )
            if _http_ok(self.spec.host, self.spec.port, self.spec.ready_path):
                return ReadyResult("ok", time.monotonic() - self.started_t, None, "")
            if time.monotonic() >= deadline:
                return ReadyResult(
                    "start-timeout", time.monotonic() - self.started_t, None, self.log_tail()
                )
            time.sleep(poll_s)

    def pids(self) -> list[int]:
        """Every live process of the engine: its process group and all descendants."""
        if self.proc is None:
            return []
        found: set[int] = set()
        try:
            import psutil

            try:
                root = psutil.Process(self.proc.pid)
                found.add(root.pid)
                found.update(c.pid for c in root.children(recursive=True))
            except psutil.NoSuchProcess:
                pass
        except ImportError:
            pass
        found.update(group_members(self.proc.pid))
        return sorted(found)

    def stop(self, grace_s: float = 20.0) -> list[int]:
        """End the whole process group (TERM, then KILL after ``grace_s``); return survivors."""
        if self.proc is None:
            return []
        pgid = self.proc.pid
        members = set(self.pids())
        _signal_group(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline:
            self.proc.poll()
            if not _any_alive(members | set(group_members(pgid))):
                break
            time.sleep(0.1)
        else:
            _signal_group(pgid, signal.SIGKILL)
            for pid in members:
                _kill(pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        time.sleep(0.05)
        if self._log is not None:
            self._log.close()
            self._log = None
        survivors = sorted(p for p in members | set(group_members(pgid)) if _pid_alive(p))
        if self.cgroup is not None and not survivors:
            with contextlib.suppress(OSError):
                self.cgroup.rmdir()  # empty now; a kernel may take a moment to see it so
            self.cgroup = None
        return survivors


def group_members(pgid: int, proc_root: str = "/proc") -> list[int]:
    """Live processes whose process group is ``pgid`` (from /proc/<pid>/stat)."""
    out = []
    for name in os.listdir(proc_root):
        if not name.isdigit():
            continue
        try:
            with open(f"{proc_root}/{name}/stat", "rb") as f:
                stat = f.read().decode("utf-8", "replace")
        except OSError:
            continue
        rest = stat.rsplit(")", 1)[-1].split()
        # fields after the name: state ppid pgrp ...
        if len(rest) > 2 and rest[2] == str(pgid) and rest[0] != "Z":
            out.append(int(name))
    return out


def _pid_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().decode("utf-8", "replace").rsplit(")", 1)[-1].split()[0]
        return state != "Z"
    except OSError:
        return False


def _any_alive(pids: set[int]) -> bool:
    return any(_pid_alive(p) for p in pids)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _kill(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def python_executable() -> str:
    return sys.executable or "python3"


def engine_template(engine: str, engine_cmd: str | None) -> str:
    """The command template for ``--engine`` (or the user's own ``--engine-cmd``)."""
    if engine_cmd:
        return engine_cmd
    try:
        return ENGINE_TEMPLATES[engine]
    except KeyError:
        raise UsageError(
            f"--engine {engine!r}: no built-in command; give --engine-cmd "
            f"(built in: {', '.join(ENGINE_TEMPLATES)})"
        ) from None


def spec_from(
    template: str,
    *,
    model: str,
    tp: int,
    cores: Sequence[int],
    host: str,
    port: int,
    extra_args: Sequence[str] = (),
    env: Mapping[str, str] | None = None,
    log_path: Path | None = None,
    ready_path: str = "/health",
    cgroup_parent: Path | None = None,
) -> EngineSpec:
    values = {
        "model": model,
        "port": port,
        "host": host,
        "tp": tp,
        "cores": len(cores),
        "python": python_executable(),
    }
    argv = render_command(template, values) + list(extra_args)
    return EngineSpec(
        tuple(argv), host, port, tuple(cores), dict(env or {}), ready_path, log_path, cgroup_parent
    )
