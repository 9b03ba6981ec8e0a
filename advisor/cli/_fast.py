"""The job-submit path: ``advisor recommend --gpu-type T --gpus N ... --format json``.

:func:`fast_recommend` answers it without importing typer, rich or the other commands (their
import is most of the start-up time a submit host waits for: docs/performance.md). The same
core call, the same JSON, the same errors; anything else (help, table output, a partition, an
option it does not know, a value it cannot convert) is left to the typer app.
"""

from __future__ import annotations

import sys
from typing import Any

from advisor.cli._json import emit_json


def _finite(text: str) -> float:
    """A float the fast path takes; anything else (nan, inf) goes to typer's usage error."""
    from advisor.cli._parse import finite_float
    from advisor.errors import UsageError

    try:
        return finite_float(text, "")
    except UsageError:
        raise ValueError(text) from None


_FAST_OPTIONS: dict[str, Any] = {
    "--gpu-type": str,
    "--gpus": int,
    "--model-size": str,
    "--rps": _finite,
    "--prompt-tokens": int,
    "--current-cpus-per-gpu": _finite,
    "--tolerance": _finite,
    "--ample-ttft-ms": _finite,
    "--max-cpus-per-gpu": int,
    "--partition": str,
    "--db": str,
    "--pricing": str,
    "--fit-file": str,
    "--format": str,
    "-f": str,
    "--tp": int,
    "--prefix-hit": _finite,
    "--workload": str,
    "--renderer-workers": int,
    "--engine-version": str,
    "--executor": str,
    "--gpu-busy": _finite,
}


def fast_recommend(argv: list[str]) -> int | None:
    """Exit code of ``recommend ... --format json`` for one job, or None to let typer run it."""
    if not argv or argv[0] != "recommend":
        return None
    opts: dict[str, Any] = {}
    rest = iter(argv[1:])
    for token in rest:
        name, eq, value = token.partition("=")
        kind = _FAST_OPTIONS.get(name)
        if kind is None or name in opts:
            return None
        if not eq:
            nxt = next(rest, None)
            if nxt is None:
                return None
            value = nxt
        try:
            opts[name] = kind(value)
        except ValueError:
            return None
    if opts.pop("--format", opts.pop("-f", None)) != "json":
        return None
    if "--gpus" not in opts or "--gpu-type" not in opts:
        return None
    from advisor.cli._parse import (
        NO_INVENTORY,
        warn_missing_db,
        warn_tolerance,
        warn_unknown_gpu_type,
    )
    from advisor.errors import AdvisorError, describe_os_error
    from advisor.recommend import JobQuery, Workload, recommend_job

    warn_missing_db(opts.get("--db"), NO_INVENTORY)
    warn_unknown_gpu_type(opts["--gpu-type"])

    try:
        from advisor.recommend import parse_model_size

        partition = opts.get("--partition")
        rec = recommend_job(
            JobQuery(
                gpu_type=opts["--gpu-type"],
                gpus=opts["--gpus"],
                workload=Workload(
                    parse_model_size(opts.get("--model-size")),
                    opts.get("--rps"),
                    opts.get("--prompt-tokens"),
                    opts.get("--prefix-hit"),
                    opts.get("--workload"),
                    opts.get("--renderer-workers"),
                    opts.get("--engine-version"),
                    opts.get("--executor"),
                    opts.get("--gpu-busy"),
                ),
                current_cpus_per_gpu=opts.get("--current-cpus-per-gpu"),
                tolerance=warn_tolerance(opts.get("--tolerance")),
                ample_ttft_ms=opts.get("--ample-ttft-ms"),
                max_cpus_per_gpu=opts.get("--max-cpus-per-gpu"),
                partition=None if partition == "*" else partition,
                db=opts.get("--db"),
                pricing_file=opts.get("--pricing"),
                model_file=opts.get("--fit-file"),
                tp=opts.get("--tp"),
            )
        )
    except AdvisorError as exc:
        sys.stderr.write(f"Error: {exc}\n")
        return int(exc.exit_code)
    except OSError as exc:  # the same net as run_guarded's
        message, code = describe_os_error(exc)
        sys.stderr.write(f"Error: {message}\n")
        return int(code)
    except KeyboardInterrupt:
        sys.stderr.write("Interrupted\n")
        return 130
    emit_json(rec)
    return 0
