"""Result files of other benchmark tools as calibration points (``advisor bench import``).

Reads ``vllm bench serve --save-result`` JSON, a GuideLLM JSON report (``benchmarks.json``) and
NVIDIA AIPerf's ``profile_export_aiperf.json``, and turns each measured load point into rows with
exactly the ``calibration`` table's columns (:data:`advisor.harness.results.collect.CALIBRATION_COLUMNS`),
so another site can calibrate the TTFT model from the tools it already runs.

None of these tools records the CPU cores the engine ran on, which is the one variable the model
is about; a point is only made when the core count is known: from ``vllm bench serve
--metadata cores=N gpus=N`` (its metadata lands as top-level keys of the result), or from the
command line (:class:`ImportContext`). A file without it is an ``InputError`` naming the file
and what to pass.

Each tool reports different statistics, and they are mapped by what they are, never relabelled:

- the median TTFT becomes ``ttft_p50_ms`` (the fitted series metric): vllm's ``median_ttft_ms``
  (numpy median of the successful requests), GuideLLM's ``time_to_first_token_ms.successful.
  median`` (its ``p50``: the first value whose cumulative share reaches 0.5), AIPerf's
  ``time_to_first_token.p50``;
- the mean becomes ``ttft_mean_ms`` and the tail percentiles ``ttft_p90_ms``/``ttft_p95_ms``/
  ``ttft_p99_ms`` (context, not fitted);
- each point's ``notes`` name the tool, the file's key and the statistic.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import InputError, NotFoundError, UsageError
from advisor.harness.results.validate import MAX_COUNT, read_capped
from advisor.progress import ProgressFn, no_progress

TOOLS = ("vllm", "guidellm", "aiperf")
SOURCE_KIND = {"vllm": "vllm-bench", "guidellm": "guidellm", "aiperf": "aiperf"}
# The tail percentiles kept as context points when a file has them.
_TAILS = ("p90", "p95", "p99")


@dataclass(frozen=True)
class ImportContext:
    """What the files may lack, given on the command line; a value here fills a point's
    column when the file has none (cores and gpus: they must agree with the file's)."""

    cores: int | None = None
    gpus: int | None = None
    platform: str | None = None
    engine: str | None = None
    engine_version: str | None = None
    model: str | None = None
    model_params_b: float | None = None
    workload: str | None = None
    prompt_tokens: int | None = None


@dataclass(frozen=True)
class ImportResult:
    """Files read, points made (rows of the calibration table), problems (one per bad file)."""

    files: int
    files_imported: int
    points: tuple[dict[str, Any], ...]
    problems: tuple[str, ...] = ()
    calibration_csv: str | None = None
    db_points: int = 0


def detect_tool(doc: Any) -> str | None:
    """``vllm``, ``guidellm``, ``aiperf`` or None, from the document's keys."""
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("benchmarks"), list):
        return "guidellm"
    ttft = doc.get("time_to_first_token")
    if isinstance(ttft, dict) and "unit" in ttft:
        return "aiperf"
    if "aiperf_version" in doc or (
        "input_config" in doc and ("request_count" in doc or "benchmark_duration" in doc)
    ):
        return "aiperf"
    if "median_ttft_ms" in doc or (
        "completed" in doc and ("backend" in doc or "endpoint_type" in doc)
    ):
        return "vllm"
    return None


def _read(path: Path) -> Any:
    try:
        return json.loads(read_capped(path))
    except (OSError, ValueError, EOFError) as exc:
        raise InputError(
            f"not a readable JSON file ({exc})", source=str(path), line=getattr(exc, "lineno", None)
        ) from exc
    except RecursionError:
        raise InputError("not a readable JSON file (nested too deep)", source=str(path)) from None


def _whole(value: Any, source: str, fieldname: str) -> int | None:
    """A positive whole number from a JSON number or a metadata string; None when absent."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InputError(f"{value!r} is not a whole number", source=source, field=fieldname)
    try:
        num = float(value)
    except (TypeError, ValueError):
        raise InputError(
            f"{value!r} is not a whole number", source=source, field=fieldname
        ) from None
    if not math.isfinite(num) or num != int(num) or not 0 < num <= MAX_COUNT:
        raise InputError(
            f"{value!r} is not a whole number from 1 to {MAX_COUNT:,}",
            source=source,
            field=fieldname,
        )
    return int(num)


def _obj(value: Any) -> dict[str, Any]:
    """The value when it is a JSON object, else an empty one (absent sections read as empty)."""
    return value if isinstance(value, dict) else {}


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        num = float(value)
    except (TypeError, ValueError):
        return None
    return num if math.isfinite(num) else None


@dataclass(frozen=True)
class _Point:
    """One load point of a file, before the context fills the gaps."""

    label: str  # unique within the file ("", or the benchmark's index)
    model: str | None
    engine: str | None
    engine_version: str | None
    platform: str | None
    cores: int | None
    gpus: int | None
    load_rps: float | None
    load_note: str
    prompt_tokens: int | None
    measured_on: dt.date | None
    stats: dict[str, tuple[float, str]]  # metric -> (value in ms, what it is in the file)
    context_note: str


def _need(
    value: int | None, from_file: int | None, what: str, flag: str, source: str, hint: str
) -> int:
    """The file's value, or the flag's; both present must agree; neither is an error."""
    if from_file is not None and value is not None and from_file != value:
        raise InputError(
            f"the file says {from_file} {what}, {flag} says {value}; drop one",
            source=source,
            field=what,
        )
    got = from_file if from_file is not None else value
    if got is None:
        raise InputError(
            f"no {what} count in this file ({hint}); pass {flag} N", source=source, field=what
        )
    return got


# ----------------------------------------------------------------------------------- vllm


def _vllm_points(doc: dict[str, Any], source: str) -> list[_Point]:
    """One point: ``vllm bench serve --save-result`` keys (vllm/benchmarks/serve.py)."""
    if _num(doc.get("median_ttft_ms")) is None:
        raise InputError(
            "no median_ttft_ms (run vllm bench serve with ttft in --percentile-metrics)",
            source=source,
            field="median_ttft_ms",
        )
    stats: dict[str, tuple[float, str]] = {
        "ttft_p50_ms": (float(doc["median_ttft_ms"]), "median_ttft_ms (numpy median)")
    }
    if _num(doc.get("mean_ttft_ms")) is not None:
        stats["ttft_mean_ms"] = (float(doc["mean_ttft_ms"]), "mean_ttft_ms")
    for p in _TAILS:
        if _num(doc.get(f"{p}_ttft_ms")) is not None:
            stats[f"ttft_{p}_ms"] = (float(doc[f"{p}_ttft_ms"]), f"{p}_ttft_ms (numpy percentile)")
    rate = doc.get("request_rate")
    rps = _num(rate)
    if rps is not None:
        load_note = f"request_rate {rps:g}/s, burstiness {doc.get('burstiness')}"
    else:
        load_note = f"request_rate {rate!r} (all at once)"
        if doc.get("max_concurrency") is not None:
            load_note += f", max_concurrency {doc.get('max_concurrency')}"
    completed = _num(doc.get("completed"))
    total_in = _num(doc.get("total_input_tokens"))
    per = total_in / completed if completed and total_in is not None else None
    prompt = round(per) if per is not None and 0 < per <= MAX_COUNT else None
    date = None
    if isinstance(doc.get("date"), str):
        try:
            date = dt.datetime.strptime(doc["date"], "%Y%m%d-%H%M%S").date()
        except ValueError:
            date = None
    backend = doc.get("backend") or doc.get("endpoint_type")
    return [
        _Point(
            label="",
            model=doc.get("model_id"),
            engine=doc.get("engine") or ("vllm" if backend == "vllm" else None),
            engine_version=doc.get("engine_version"),
            platform=doc.get("platform"),
            cores=_whole(doc.get("cores"), source, "cores"),
            gpus=_whole(doc.get("gpus"), source, "gpus"),
            load_rps=rps,
            load_note=load_note,
            prompt_tokens=prompt,
            measured_on=date,
            stats=stats,
            context_note=(
                f"vllm bench serve, backend {backend}, {doc.get('completed')} completed, "
                f"{doc.get('failed', 0)} failed of {doc.get('num_prompts')} prompts"
            ),
        )
    ]


# ------------------------------------------------------------------------------- guidellm


def _guidellm_points(doc: dict[str, Any], source: str) -> list[_Point]:
    """One point per benchmark of a GuideLLM report (GenerativeBenchmarksReport)."""
    args = _obj(doc.get("args"))
    out = []
    for i, bench in enumerate(doc["benchmarks"]):
        where = f"benchmarks[{i}]"
        if not isinstance(bench, dict):
            raise InputError("not an object", source=source, field=where)
        metrics = bench.get("metrics") or {}
        ttft = ((metrics.get("time_to_first_token_ms") or {}).get("successful")) or {}
        pct = ttft.get("percentiles") or {}
        median = _num(ttft.get("median"))
        if median is None:
            median = _num(pct.get("p50"))
        if median is None or not ttft.get("count"):
            raise InputError(
                "no successful requests' TTFT distribution",
                source=source,
                field=f"{where}.metrics.time_to_first_token_ms.successful",
            )
        stats = {"ttft_p50_ms": (median, "time_to_first_token_ms.successful.median (p50)")}
        if _num(ttft.get("mean")) is not None:
            stats["ttft_mean_ms"] = (float(ttft["mean"]), "time_to_first_token_ms.successful.mean")
        for p in _TAILS:
            if _num(pct.get(p)) is not None:
                stats[f"ttft_{p}_ms"] = (
                    float(pct[p]),
                    f"time_to_first_token_ms.successful.percentiles.{p}",
                )
        config = bench.get("config") or {}
        strategy = config.get("strategy") or {}
        kind = strategy.get("type_")
        rps = _num(strategy.get("rate")) if kind in ("constant", "poisson") else None
        load_note = f"strategy {kind}" + (f" {rps:g}/s" if rps is not None else "")
        if kind == "concurrent":
            load_note += f" {strategy.get('streams')} streams"
        prompt_dist = ((metrics.get("prompt_token_count") or {}).get("successful")) or {}
        prompt_mean = _num(prompt_dist.get("mean"))
        start = _num(bench.get("start_time")) or _num(
            (bench.get("scheduler_metrics") or {}).get("measure_start_time")
        )
        totals = metrics.get("request_totals") or {}
        backend = _obj(config.get("backend"))
        out.append(
            _Point(
                label=str(i),
                model=args.get("model") or backend.get("model"),
                engine=None,
                engine_version=None,
                platform=None,
                cores=None,
                gpus=None,
                load_rps=rps,
                load_note=load_note,
                prompt_tokens=round(prompt_mean) if prompt_mean else None,
                measured_on=(
                    dt.datetime.fromtimestamp(start, dt.UTC).date() if start and start > 0 else None
                ),
                stats=stats,
                context_note=(
                    f"GuideLLM benchmark {i}, {totals.get('successful')} successful, "
                    f"{totals.get('incomplete')} incomplete, {totals.get('errored')} errored"
                ),
            )
        )
    if not out:
        raise InputError("the report has no benchmarks", source=source, field="benchmarks")
    return out


# --------------------------------------------------------------------------------- aiperf

_TO_MS = {"ms": 1.0, "s": 1000.0, "sec": 1000.0, "us": 0.001, "ns": 1e-6}


def _aiperf_points(doc: dict[str, Any], source: str) -> list[_Point]:
    """One point: the aggregate statistics of ``profile_export_aiperf.json``."""
    ttft = doc.get("time_to_first_token")
    if not isinstance(ttft, dict):
        raise InputError(
            "no time_to_first_token statistics (profile a streaming endpoint)",
            source=source,
            field="time_to_first_token",
        )
    unit = str(ttft.get("unit", "ms"))
    if unit not in _TO_MS:
        raise InputError(f"unknown unit {unit!r}", source=source, field="time_to_first_token.unit")
    scale = _TO_MS[unit]
    p50 = _num(ttft.get("p50"))
    if p50 is None:
        raise InputError("no p50", source=source, field="time_to_first_token.p50")
    stats = {"ttft_p50_ms": (p50 * scale, "time_to_first_token.p50")}
    if _num(ttft.get("avg")) is not None:
        stats["ttft_mean_ms"] = (float(ttft["avg"]) * scale, "time_to_first_token.avg")
    for p in _TAILS:
        if _num(ttft.get(p)) is not None:
            stats[f"ttft_{p}_ms"] = (float(ttft[p]) * scale, f"time_to_first_token.{p}")
    cfg = _obj(doc.get("input_config"))
    endpoint = _obj(cfg.get("endpoint"))
    loadgen = _obj(cfg.get("loadgen"))
    names = endpoint.get("model_names")
    rps = _num(loadgen.get("request_rate"))
    load_note = f"loadgen {json.dumps(loadgen, sort_keys=True)}"
    isl = _num((doc.get("input_sequence_length") or {}).get("avg"))
    date = None
    if isinstance(doc.get("start_time"), str):
        try:
            date = dt.datetime.fromisoformat(doc["start_time"]).date()
        except ValueError:
            date = None
    gpu_names = sorted(
        {
            str(g["gpu_name"])
            for ep in ((doc.get("telemetry_data") or {}).get("endpoints") or {}).values()
            if isinstance(ep, dict)
            for g in (ep.get("gpus") or {}).values()
            if isinstance(g, dict) and g.get("gpu_name")
        }
    )
    count = (doc.get("request_count") or {}).get("avg")
    return [
        _Point(
            label="",
            model=names[0] if isinstance(names, list) and names else None,
            engine=None,
            engine_version=None,
            platform=gpu_names[0] if len(gpu_names) == 1 else None,
            cores=None,
            gpus=None,
            load_rps=rps,
            load_note=load_note,
            prompt_tokens=round(isl) if isl else None,
            measured_on=date,
            stats=stats,
            context_note=f"AIPerf {doc.get('aiperf_version', '')} profile export, {count} requests",
        )
    ]


_READERS: dict[str, Callable[[dict[str, Any], str], list[_Point]]] = {
    "vllm": _vllm_points,
    "guidellm": _guidellm_points,
    "aiperf": _aiperf_points,
}
_WHERE_CORES = {
    "vllm": "vllm bench serve records it with --metadata cores=N gpus=N",
    "guidellm": "GuideLLM reports do not record it",
    "aiperf": "AIPerf exports do not record it",
}


def file_points(path: Path, tool: str, ctx: ImportContext) -> list[dict[str, Any]]:
    """The calibration rows of one result file; InputError names the file and the field."""
    from advisor.gputypes import canonical_gpu_type
    from advisor.model.calibration import parse_row

    source = str(path)
    doc = _read(path)
    found = detect_tool(doc)
    if tool == "auto":
        if found is None:
            raise InputError(
                "not a vllm bench serve, GuideLLM or AIPerf result; give --tool if it is one",
                source=source,
            )
        tool = found
    elif found != tool:
        raise InputError(f"does not look like a {tool} result (looks like {found})", source=source)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12]
    kind = SOURCE_KIND[tool]
    rows = []
    for p in _READERS[tool](doc, source):
        hint = _WHERE_CORES[tool]
        cores = _need(ctx.cores, p.cores, "cores", "--cores", source, hint)
        gpus = _need(ctx.gpus, p.gpus, "gpus", "--gpus", source, hint)
        platform = ctx.platform or p.platform
        base = {
            "source": f"{kind}:{digest}",
            "source_ref": path.name,
            "platform": canonical_gpu_type(platform) if platform else None,
            "engine": ctx.engine or p.engine,
            "engine_version": ctx.engine_version or p.engine_version,
            "model": ctx.model or p.model,
            "model_params_b": ctx.model_params_b,
            "gpus": gpus,
            "workload": ctx.workload or kind,
            "load_rps": p.load_rps,
            "prompt_tokens": ctx.prompt_tokens or p.prompt_tokens,
            "cores": cores,
            "cores_per_gpu": cores / gpus,
            "measured_on": p.measured_on.isoformat() if p.measured_on else None,
        }
        label = f"{p.label}:" if p.label else ""
        if base["model"] is not None and not isinstance(base["model"], str):
            raise InputError(
                f"{str(base['model'])[:40]!r} is not a model name", source=source, field="model_id"
            )
        for metric, (value, what) in p.stats.items():
            if not (math.isfinite(value) and value > 0):
                raise InputError(
                    f"{value!r} ms is no time to first token (a positive, finite number)",
                    source=source,
                    field=what.split(" ")[0],
                )
            row = {
                **base,
                "point_id": f"{kind}:{digest}:{label}{metric}",
                "metric": metric,
                "value": value,
                "unit": "ms",
                "notes": (
                    f"{what}, as {tool} reports it; {p.context_note}; {p.load_note}; "
                    f"cores {'from --cores' if p.cores is None else 'from the file'}"
                ),
            }
            parse_row(row, source, None)  # the calibration table's own checks
            rows.append(row)
    return rows


def import_results(
    paths: Sequence[str | os.PathLike[str]],
    tool: str = "auto",
    ctx: ImportContext | None = None,
    *,
    db: str | os.PathLike[str] | None = None,
    to_db: bool = False,
    calibration_csv: str | os.PathLike[str] | None = None,
    progress: ProgressFn = no_progress,
) -> ImportResult:
    """Calibration rows of every file; bad files are listed in ``problems`` and the others
    still import. With ``to_db`` the rows replace their earlier import in the ``calibration``
    table; with ``calibration_csv`` they are also written as a calibration CSV."""
    if tool not in ("auto", *TOOLS):
        raise UsageError(f"--tool {tool!r}: use auto, {', '.join(TOOLS)}")
    ctx = ctx or ImportContext()
    files = [Path(p) for p in paths]
    for f in files:
        if not f.is_file():
            raise NotFoundError(f"{f}: no such file")
    points: list[dict[str, Any]] = []
    problems: list[str] = []
    ok = 0
    for i, f in enumerate(files):
        try:
            points.extend(file_points(f, tool, ctx))
            ok += 1
        except InputError as exc:
            problems.append(str(exc))
        progress("import", i + 1, len(files))
    stored = _store(points, db) if to_db and points else 0
    if calibration_csv is not None:
        from advisor.harness.results.collect import write_calibration_csv

        write_calibration_csv(points, Path(calibration_csv))
    return ImportResult(
        len(files),
        ok,
        tuple(points),
        tuple(problems),
        str(calibration_csv) if calibration_csv else None,
        stored,
    )


def _store(points: Sequence[dict[str, Any]], db: str | os.PathLike[str] | None) -> int:
    from advisor.harness.results.collect import insert_calibration_points
    from advisor.store import connect, query

    con = connect(db)
    try:
        con.execute("BEGIN TRANSACTION")
        try:
            for p in points:
                con.execute(query("bench/delete_calibration_point"), {"point_id": p["point_id"]})
            insert_calibration_points(con, points)
            con.execute("COMMIT")
        except Exception:
            con.execute("ROLLBACK")
            raise
    finally:
        con.close()
    return len(points)
