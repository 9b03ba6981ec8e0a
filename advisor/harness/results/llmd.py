"""``advisor bench`` runs as llm-d benchmark reports (``advisor bench export --format llm-d``).

The llm-d-benchmark project's "benchmark report" (schema version 0.1: llm-d/llm-d-benchmark
``workload/report/README.md`` and ``schema.py``) describes one load point: ``version``,
``scenario`` (host accelerators, engine, model, load) and ``metrics`` (time, requests, latency
statistics, throughput), and lets a ``metadata`` field sit on almost any object. No tool records
what this project is about, so the run's CPU side goes into those ``metadata`` fields:

- ``scenario.host.metadata``: cores, cores per GPU, the core list, the client's cores, the
  pinning check before and after the load, the CPU model;
- ``scenario.load.metadata``: the attacker/victim split (rates, prompt lengths, duration);
- ``metrics.latency.time_to_first_token`` is the victims' TTFT (what the study measures);
  ``metrics.metadata.attacker`` and ``metrics.metadata.victim`` carry each kind's TTFT
  statistics and request counts, ``metrics.metadata.tokenize_share`` the tokenization share.

Statistics are computed from the run's own request records (numpy's linear-interpolation
percentiles over the requests that succeeded). A run that did not finish ``ok`` (crashed,
hung, failed) has no latency to report and is skipped with its reason.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import InputError, UsageError
from advisor.progress import ProgressFn, no_progress

LLMD_VERSION = "0.1"
FORMATS = ("llm-d",)
# llm-d's v0.1 load.name is a closed list of harnesses (fmperf, guidellm, inference-perf,
# vllm-benchmark, nop); advisor's attacker-victim generator is none of them, so the report
# says "nop" and names the real generator in load.type and load.metadata.
LOAD_NAME = "nop"
LOAD_TYPE = "advisor-attacker-victim"
_PCTS = (("p10", 10), ("p25", 25), ("p50", 50), ("p75", 75), ("p90", 90), ("p95", 95), ("p99", 99))


@dataclass(frozen=True)
class ExportResult:
    files: int
    written: tuple[str, ...]
    skipped: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()


def statistics(values: Sequence[float], units: str) -> dict[str, Any] | None:
    """An llm-d ``Statistics`` object (units, mean, stddev, min, p10..p99, max); None if empty."""
    import numpy as np

    if not values:
        return None
    arr = np.asarray(values, dtype=float)
    out: dict[str, Any] = {
        "units": units,
        "mean": float(arr.mean()),
        "stddev": float(arr.std()),
        "min": float(arr.min()),
    }
    for name, q in _PCTS:
        out[name] = float(np.percentile(arr, q))
    out["max"] = float(arr.max())
    return out


def _epoch(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        t = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    # bench run files write naive UTC times (advisor/harness/phase.py)
    return (t if t.tzinfo else t.replace(tzinfo=dt.UTC)).timestamp()


def _engine_args(argv: Any) -> dict[str, Any]:
    """``--flag value`` pairs of the engine's command line (flags without a value: true)."""
    if not isinstance(argv, list):
        return {}
    out: dict[str, Any] = {}
    items = [str(a) for a in argv]
    for i, a in enumerate(items):
        if a.startswith("--"):
            nxt = items[i + 1] if i + 1 < len(items) else None
            out[a] = nxt if nxt is not None and not nxt.startswith("--") else True
    return out


def _host(run: dict[str, Any], extra: dict[str, Any], gpus: int) -> dict[str, Any]:
    """The report's host: the accelerators and their parallelism, the pinned cores, the CPU."""
    return {
        "type": ["replica"],
        "accelerator": [
            {
                "model": run.get("gpu_name") or run.get("platform") or "unknown",
                "count": gpus,
                "parallelism": {"dp": 1, "tp": int(run.get("tp") or 1), "pp": 1, "ep": 1},
                "metadata": {"platform": run.get("platform")},
            }
        ],
        "metadata": {
            "cores": run.get("cores"),
            "cores_per_gpu": run.get("cores_per_gpu"),
            "core_list": run.get("core_list"),
            "client_core_list": extra.get("client_core_list"),
            "client_shares_engine_cores": extra.get("client_shares_engine_cores"),
            "pinning": extra.get("pinning"),
            "pinning_after": extra.get("pinning_after"),
            "cpu_model": run.get("cpu_model"),
            "cpu_count": extra.get("cpu_count"),
            "hostname": extra.get("hostname"),
            "cluster": run.get("cluster"),
            "partition": run.get("partition"),
        },
    }


def run_report(data: dict[str, Any]) -> dict[str, Any]:
    """The llm-d v0.1 report of one ``ok`` run (a validated run JSON); ValueError otherwise."""
    run = data["run"]
    if run.get("status") != "ok":
        raise ValueError(f"status {run.get('status')!r}: no latency to report")
    extra = run.get("extra") if isinstance(run.get("extra"), dict) else {}
    reqs = [r for r in data.get("requests", []) if r.get("kind") in ("attacker", "victim")]
    ok = [r for r in reqs if r.get("status") == "ok" and r.get("ttft_ms") is not None]
    by_kind = {k: [r for r in ok if r["kind"] == k] for k in ("victim", "attacker")}
    victim_ttft = statistics([r["ttft_ms"] for r in by_kind["victim"]], "ms")
    if victim_ttft is None:
        raise ValueError("no victim request succeeded: no TTFT to report")
    in_len = statistics([r["prompt_tokens"] for r in reqs if r.get("prompt_tokens")], "count")
    out_len = statistics([r["output_tokens"] for r in ok if r.get("output_tokens")], "count")
    e2e = statistics([r["e2e_ms"] for r in ok if r.get("e2e_ms") is not None], "ms")
    start, stop = _epoch(run.get("started_at")), _epoch(run.get("finished_at"))
    duration = float(run.get("duration_s") or ((stop - start) if start and stop else 0.0))
    tokens = sum((r.get("prompt_tokens") or 0) + (r.get("output_tokens") or 0) for r in ok)
    gpus = run.get("gpus") or run.get("tp") or 1
    load = extra.get("load") if isinstance(extra.get("load"), dict) else {}

    def kind_meta(kind: str) -> dict[str, Any]:
        sent = [r for r in reqs if r["kind"] == kind]
        return {
            "requests": len(sent),
            "ok": len(by_kind[kind]),
            "errors": sum(1 for r in sent if r.get("status") == "error"),
            "timeouts": sum(1 for r in sent if r.get("status") == "timeout"),
            "time_to_first_token": statistics([r["ttft_ms"] for r in by_kind[kind]], "ms"),
        }

    report: dict[str, Any] = {
        "version": LLMD_VERSION,
        "scenario": {
            "description": (
                f"advisor bench run {run['run_id']}: {run.get('engine')} under "
                f"{run.get('cores')} pinned CPU cores, attacker-victim load"
            ),
            "host": _host(run, extra, int(gpus)),
            "platform": {
                "engine": [
                    {
                        "name": run.get("engine") or "unknown",
                        "version": run.get("engine_version"),
                        "args": _engine_args(extra.get("engine_argv")),
                        "metadata": {"env": run.get("env") or {}},
                    }
                ]
            },
            "model": {
                "name": run.get("model") or "unknown",
                "metadata": {"params_b": run.get("model_params_b")},
            },
            "load": {
                "name": LOAD_NAME,
                "type": LOAD_TYPE,
                "args": load,
                "metadata": {
                    "generator": "advisor bench run (attacker-victim, advisor/harness/load/loadgen.py)",
                    "workload": run.get("workload"),
                    "attacker_rps": run.get("attacker_rps"),
                    "attacker_tokens_min": run.get("attacker_tokens_min"),
                    "attacker_tokens_max": run.get("attacker_tokens_max"),
                    "victim_rps": run.get("victim_rps"),
                    "duration_s": run.get("duration_s"),
                    "timeout_s": run.get("timeout_s"),
                    "repeat": run.get("repeat"),
                },
            },
            "metadata": {
                "source": "advisor",
                "run_id": run["run_id"],
                "schema": data.get("schema"),
            },
        },
        "metrics": {
            "time": {"duration": duration, "start": start, "stop": stop},
            "requests": {
                "total": len(reqs),
                "failures": sum(1 for r in reqs if r.get("status") == "error"),
                "incomplete": sum(1 for r in reqs if r.get("status") == "timeout"),
                "input_length": in_len or {"units": "count", "mean": 0.0},
                "output_length": out_len or {"units": "count", "mean": 0.0},
            },
            "latency": {"time_to_first_token": victim_ttft, "request_latency": e2e},
            "throughput": {
                "total_tokens_per_sec": tokens / duration if duration else 0.0,
                "requests_per_sec": len(ok) / duration if duration else None,
            },
            "description": "latency.time_to_first_token is the victims' TTFT",
            "metadata": {
                "victim": kind_meta("victim"),
                "attacker": kind_meta("attacker"),
                "tokenize_share": run.get("tokenize_share"),
                "engine_cpu_percent": run.get("engine_cpu_percent"),
                "gpu_util_percent": run.get("gpu_util_percent"),
            },
        },
    }
    return _drop_none(report)


def _drop_none(value: Any) -> Any:
    """The report without null fields (llm-d dumps its reports with exclude_none)."""
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value]
    return value


def export_runs(
    paths: Sequence[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    fmt: str = "llm-d",
    progress: ProgressFn = no_progress,
) -> ExportResult:
    """Write one ``<run_id>.json`` llm-d report per ``ok`` run under ``paths`` into
    ``out_dir``. Unreadable files are ``problems``; runs with nothing to report are
    ``skipped``; both name the file and why."""
    from advisor.harness.results.collect import read_result, result_files

    if fmt not in FORMATS:
        raise UsageError(f"--format {fmt!r}: the export formats are {', '.join(FORMATS)}")
    files = result_files(paths)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[str] = []
    skipped: list[str] = []
    problems: list[str] = []
    for i, path in enumerate(files):
        try:
            data = read_result(path)
        except InputError as exc:
            problems.append(str(exc))
            continue
        try:
            report = run_report(data)
        except ValueError as exc:
            skipped.append(f"{path}: {exc}")
            continue
        # a run id is made by the runner, but a file can say anything: keep it a plain name
        name = re.sub(r"[^A-Za-z0-9._-]", "_", str(data["run"]["run_id"]))
        target = out / f"{name}.json"
        target.write_text(json.dumps(report, indent=1, sort_keys=False) + "\n", encoding="utf-8")
        written.append(str(target))
        progress("export", i + 1, len(files))
    return ExportResult(len(files), tuple(written), tuple(skipped), tuple(problems))
