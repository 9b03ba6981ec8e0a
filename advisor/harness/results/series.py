"""A series' identity: everything about an engine that changes its CPU use, so that runs of
different engines never fold into one curve (TP, executor, renderer workers, other engine
arguments and environment knobs), with a short stable id.

Written into every run (``extra.series``) by the runner and read back by ``bench collect``,
``bench runs --by-point`` and the calibration points. Runs recorded before it existed get the
same identity derived from their engine command line and environment.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

SERIES_SCHEMA = "advisor.bench.series/1"

EXECUTORS = ("mp", "uni")
EXECUTOR_FLAG = "--distributed-executor-backend"
RENDERER_FLAG = "--renderer-num-workers"

# Engine arguments that do not change how much CPU the engine's processes use: where the
# weights come from, the context limit, names and addresses. Every other argument is identity.
NEUTRAL_ARGS = frozenset(
    {
        "--load-format",
        "--max-model-len",
        "--served-model-name",
        "--host",
        "--port",
        "--seed",
        "--gpu-memory-utilization",
        "--download-dir",
        "--tensor-parallel-size",  # carried as ``tp``
        EXECUTOR_FLAG,  # carried as ``executor``
        RENDERER_FLAG,  # carried as ``renderer_workers``
    }
)
# Environment variables that change CPU use (thread pools of the tokenizer and of torch).
CPU_ENV = ("TOKENIZERS_PARALLELISM", "RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def arg_value(argv: Sequence[str], flag: str) -> str | None:
    """The value of ``flag`` among ``argv`` (``--flag V`` or ``--flag=V``); None when absent."""
    args = list(argv)
    for i, a in enumerate(args):
        if a.startswith(flag + "="):
            return a.split("=", 1)[1]
        if a == flag and i + 1 < len(args):
            return args[i + 1]
    return None


def _cpu_args(argv: Sequence[str]) -> list[str]:
    """The arguments after the model that are not neutral, as written (flag and value)."""
    out: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        a = args[i]
        if not a.startswith("--"):
            i += 1
            continue
        flag = a.split("=", 1)[0]
        takes_value = "=" not in a and i + 1 < len(args) and not args[i + 1].startswith("--")
        if flag not in NEUTRAL_ARGS:
            out.append(a if not takes_value else f"{a}={args[i + 1]}")
        i += 2 if takes_value else 1
    return sorted(out)


def series_identity(
    engine: str, tp: int, engine_args: Sequence[str], env: Mapping[str, str]
) -> dict[str, Any]:
    """The identity of a series, from the engine, its TP, its arguments and environment.

    ``executor`` is vLLM's distributed executor as it ran: the one given, else vLLM's default
    (``uni`` with one GPU, where the engine core drives the GPU; ``mp`` with more, one
    busy-waiting worker process per GPU); ``none`` for other engines. ``renderer_workers`` is
    vLLM's tokenizer (renderer) workers (1 by default).
    """
    given = arg_value(engine_args, EXECUTOR_FLAG)
    if given:
        executor = given
    elif engine == "vllm":
        executor = "uni" if int(tp) <= 1 else "mp"  # vLLM's own default
    else:
        executor = "none"
    rw = arg_value(engine_args, RENDERER_FLAG)
    ident: dict[str, Any] = {
        "schema": SERIES_SCHEMA,
        "engine": engine,
        "tp": int(tp),
        "executor": executor,
        "renderer_workers": int(rw) if rw and rw.isdigit() else 1,
        "engine_args": _cpu_args(engine_args),
        "env": {k: env[k] for k in CPU_ENV if k in env},
    }
    ident["id"] = series_id(ident)
    return ident


def series_id(ident: Mapping[str, Any]) -> str:
    """Ten hex digits that change with any part of the identity (the ``id`` field excluded)."""
    body = {k: v for k, v in ident.items() if k not in ("id", "schema")}
    text = json.dumps(body, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def identity_of_run(run: Mapping[str, Any]) -> dict[str, Any]:
    """A recorded run's identity: ``extra.series`` when the runner wrote it, else derived from
    the run's engine command line and environment (runs made before identities existed)."""
    extra = run.get("extra") or {}
    ident = extra.get("series")
    if isinstance(ident, dict) and ident.get("id"):
        return dict(ident)
    argv = [str(a) for a in extra.get("engine_argv") or []]
    env = {str(k): str(v) for k, v in (run.get("env") or {}).items()}
    return series_identity(str(run.get("engine") or ""), int(run.get("tp") or 1), argv, env)


def describe(ident: Mapping[str, Any]) -> str:
    """One line: ``tp1 mp rw1`` plus any other CPU-relevant argument or variable."""
    parts = [
        f"tp{ident.get('tp')}",
        str(ident.get("executor")),
        f"rw{ident.get('renderer_workers')}",
    ]
    parts += list(ident.get("engine_args") or [])
    parts += [f"{k}={v}" for k, v in sorted((ident.get("env") or {}).items())]
    return " ".join(parts)


def notes_text(ident: Mapping[str, Any]) -> str:
    """The identity as calibration points carry it at the start of their ``notes``:
    ``series=<id> tp=1 executor=mp renderer_workers=1`` plus ``args=`` and ``env=`` when set
    (read back with :func:`advisor.model.calibration.series.identity_of_notes`)."""
    parts = [
        f"series={ident.get('id')}",
        f"tp={ident.get('tp')}",
        f"executor={ident.get('executor')}",
        f"renderer_workers={ident.get('renderer_workers')}",
    ]
    if ident.get("engine_args"):
        parts.append("args=" + ",".join(ident["engine_args"]))
    if ident.get("env"):
        parts.append("env=" + ",".join(f"{k}={v}" for k, v in sorted(ident["env"].items())))
    return " ".join(parts)
