"""What a bench run file may hold: one plausibility rule per field of the run and of each request.

A run file is read from folders anyone may have written to (a device's $OUT, a colleague's tar);
a value no measurement can give (a NaN or negative TTFT, zero cores, a run id with a NUL byte)
would become a calibration point and move every fit silently, so the whole file is refused with
its field named, as ``bench import`` refuses foreign results.
"""

from __future__ import annotations

import datetime as dt
import gzip
import math
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.model.calibration.points import MAX_CORES, MAX_GPUS, MAX_MS

# The largest value any field may hold: well past every lent machine and every run made so far,
# far below what would overflow a column or a sum.
MAX_COUNT = 2**31 - 1
MAX_S = 30 * 86_400.0
MAX_RPS = 1e6

# A run file's size once decompressed: the committed runs are about 64 kB; an hour at 20 req/s
# is about 18 MB. Past this a file is refused before it is parsed (parsing is all in memory).
MAX_RUN_BYTES = 64 * 1024 * 1024

_TEXT = (
    "run_id",
    "status",
    "engine",
    "engine_version",
    "model",
    "platform",
    "gpu_name",
    "cpu_model",
    "core_list",
    "workload",
    "cluster",
    "partition",
)
_TIMES = ("started_at", "finished_at")
# field -> (least, most); ints are JSON integers, never booleans
_INTS = {
    "cores": (1, MAX_CORES),
    "gpus": (0, MAX_GPUS),
    "tp": (1, MAX_GPUS),
    "repeat": (0, MAX_COUNT),
    "attacker_tokens_min": (0, MAX_COUNT),
    "attacker_tokens_max": (0, MAX_COUNT),
    "requests_ok": (0, MAX_COUNT),
    "requests_failed": (0, MAX_COUNT),
    "requests_timed_out": (0, MAX_COUNT),
}
# field -> (least, most, whether the least itself is allowed)
_FLOATS = {
    "model_params_b": (0.0, 1e5, False),
    "cores_per_gpu": (0.0, MAX_CORES, False),
    "attacker_rps": (0.0, MAX_RPS, True),
    "victim_rps": (0.0, MAX_RPS, True),
    "duration_s": (0.0, MAX_S, False),
    "timeout_s": (0.0, MAX_S, False),
    "victim_ttft_p50_ms": (0.0, MAX_MS, True),
    "victim_ttft_p90_ms": (0.0, MAX_MS, True),
    "attacker_ttft_p50_ms": (0.0, MAX_MS, True),
    "engine_cpu_percent": (0.0, 100.0 * MAX_CORES, True),
    "gpu_util_percent": (0.0, 100.0 * MAX_GPUS, True),
    "tokenize_share": (0.0, 1.0, True),
}
_OBJECTS = ("env", "metrics_before", "metrics_after", "extra")

_REQUEST_TEXT = ("kind", "status", "error")
_REQUEST_INTS = {
    "request_no": (0, MAX_COUNT),
    "prompt_tokens": (0, MAX_COUNT),
    "output_tokens": (0, MAX_COUNT),
}
_REQUEST_FLOATS = {
    "sent_s": (0.0, MAX_S, True),
    "first_token_s": (0.0, MAX_S, True),
    "finished_s": (0.0, MAX_S, True),
    "ttft_ms": (0.0, MAX_MS, True),
    "e2e_ms": (0.0, MAX_MS, True),
}


def read_capped(path: Path, limit: int = MAX_RUN_BYTES) -> bytes:
    """A file's bytes, gunzipped when it is gzip, refusing (OSError) any that would exceed
    ``limit`` decompressed rather than holding it whole in memory."""
    with open(path, "rb") as fh:
        gz = fh.read(2) == b"\x1f\x8b"
    with gzip.open(path, "rb") if gz else open(path, "rb") as fh:
        raw = fh.read(limit + 1)
    if len(raw) > limit:
        raise OSError(f"over {limit // 2**20} MiB{' once decompressed' if gz else ''}")
    return raw


def _text(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{value!r:.40} is not a text"
    if "\x00" in value:
        return "holds a NUL byte"
    return None


def _int(value: Any, lo: int, hi: int) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return f"{value!r:.40} is not a whole number"
    if not lo <= value <= hi:
        return f"{value} is outside {lo} to {hi:,}"
    return None


def _float(value: Any, lo: float, hi: float, lo_ok: bool) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value!r:.40} is not a number"
    if not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if value < lo or (value == lo and not lo_ok) or value > hi:
        most = f"{hi:,.0f}" if hi >= 1000 else f"{hi:g}"
        if lo_ok:
            return f"{value!r} is outside {lo:g} to {most}"
        return f"{value!r} is not over {lo:g} and at most {most}"
    return None


def _time(value: Any) -> str | None:
    if not isinstance(value, str):
        return f"{value!r:.40} is not a time"
    try:
        dt.datetime.fromisoformat(value)
    except ValueError:
        return f"{value!r:.40} is not a time (ISO 8601, as 2026-11-29T22:58:28)"
    return None


def _check(
    obj: dict[str, Any],
    prefix: str,
    source: str,
    text: tuple[str, ...],
    ints: dict[str, tuple[int, int]],
    floats: dict[str, tuple[float, float, bool]],
) -> None:
    """Raise InputError naming the first field of ``obj`` that breaks its rule; absent (None)
    values pass, required ones are checked by the caller."""
    for name in text:
        v = obj.get(name)
        why = _text(v) if v is not None else None
        if why:
            raise InputError(why, source=source, field=f"{prefix}{name}")
    for name, (lo, hi) in ints.items():
        v = obj.get(name)
        why = _int(v, lo, hi) if v is not None else None
        if why:
            raise InputError(why, source=source, field=f"{prefix}{name}")
    for name, (flo, fhi, lo_ok) in floats.items():
        v = obj.get(name)
        why = _float(v, flo, fhi, lo_ok) if v is not None else None
        if why:
            raise InputError(why, source=source, field=f"{prefix}{name}")


def check_run(run: dict[str, Any], source: str) -> None:
    """Every field of a run object against its rule; InputError names the first that breaks."""
    _check(run, "run.", source, _TEXT, _INTS, _FLOATS)
    if run.get("gpus") == 0 and run.get("platform") != "CPU":
        raise InputError(
            f"0 GPUs on platform {run.get('platform')!r:.40}: only a CPU engine's run has none",
            source=source,
            field="run.gpus",
        )
    for name in _TIMES:
        v = run.get(name)
        why = _time(v) if v is not None else None
        if why:
            raise InputError(why, source=source, field=f"run.{name}")
    for name in _OBJECTS:
        v = run.get(name)
        if v is not None and not isinstance(v, dict):
            raise InputError(f"{v!r:.40} is not an object", source=source, field=f"run.{name}")


# A process's wait or CPU share sums its threads' (runnable or running seconds per wall
# second): at most its thread count, and no process of a serving engine has 4,096 threads.
MAX_PROCESS_SHARE = 4096.0
_WAIT_ROW_TEXT = ("name", "role")
_WAIT_ROW_INTS = {"pid": (0, 2**31 - 1), "threads": (0, 1 << 20), "threads_born": (0, 1 << 20),
                  "threads_gone": (0, 1 << 20)}  # fmt: skip
_WAIT_ROW_FLOATS = {
    "cpu_s": (0.0, MAX_S, True),
    "wait_s": (0.0, MAX_S, True),
    "wait_share": (0.0, MAX_PROCESS_SHARE, True),
    "cpu_share": (0.0, MAX_PROCESS_SHARE, True),
}
_WAIT_ROLE_FLOATS = {
    "wait_share": (0.0, MAX_PROCESS_SHARE, True),
    "cpu_share": (0.0, MAX_PROCESS_SHARE, True),
    "processes": (0.0, 1e6, True),
    "wait_share_per_process": (0.0, MAX_PROCESS_SHARE, True),
}
# PSI: some and full shares of the phase's wall time, at most one
_PSI_FLOATS = {
    "some_s": (0.0, MAX_S, True),
    "full_s": (0.0, MAX_S, True),
    "some_share": (0.0, 1.0, True),
    "full_share": (0.0, 1.0, True),
}


def _object(value: Any, field: str, source: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"{value!r:.40} is not an object", source=source, field=field)
    return value


def check_wait(wait: Any, source: str) -> None:
    """A run's ``extra.wait`` record (the per-process run-queue sampler's): every share a finite
    number in its range (no text, no true for 1, no NaN, no share of wall time beyond what a
    process's threads can wait), every part of the shape it is read as; InputError names the
    first field that breaks its rule."""
    top = "run.extra.wait"
    wait = _object(wait, top, source)
    _check(wait, f"{top}.", source, ("status", "reason"), {"samples": (0, 2**31 - 1)},
           {"wall_s": (0.0, MAX_S, True), "period_s": (0.0, 3600.0, True)})  # fmt: skip
    rows = wait.get("by_process") or []
    if not isinstance(rows, list):
        raise InputError(f"{rows!r:.40} is not a list", source=source, field=f"{top}.by_process")
    for i, row in enumerate(rows):
        where = f"{top}.by_process[{i}]"
        _check(_object(row, where, source), f"{where}.", source, _WAIT_ROW_TEXT, _WAIT_ROW_INTS,
               _WAIT_ROW_FLOATS)  # fmt: skip
    for role, shares in _object(wait.get("by_role") or {}, f"{top}.by_role", source).items():
        where = f"{top}.by_role.{role}"
        _check(_object(shares, where, source), f"{where}.", source, (), {}, _WAIT_ROLE_FLOATS)
    psi = _object(wait.get("psi") or {}, f"{top}.psi", source)
    for scope in ("machine", "cgroup"):
        block = psi.get(scope)
        if block is not None:
            where = f"{top}.psi.{scope}"
            _check(_object(block, where, source), f"{where}.", source, (), {}, _PSI_FLOATS)
    if psi.get("cgroup_cpu") is not None:
        where = f"{top}.psi.cgroup_cpu"
        _check(_object(psi["cgroup_cpu"], where, source), f"{where}.", source, (), {},
               {"usage_s": (0.0, MAX_S * 1024, True), "cores": (0.0, 1 << 20, True),
                "throttled_s": (0.0, MAX_S, True)})  # fmt: skip


def check_requests(requests: list[Any], source: str) -> None:
    """Every request of a run file; InputError names the request's index and field."""
    for i, r in enumerate(requests):
        where = f"requests[{i}]"
        if not isinstance(r, dict) or "request_no" not in r or "kind" not in r or "status" not in r:
            raise InputError("needs request_no, kind and status", source=source, field=where)
        _check(r, f"{where}.", source, _REQUEST_TEXT, _REQUEST_INTS, _REQUEST_FLOATS)
