"""``advisor bench collect`` and ``bench runs``: run JSONs into DuckDB, calibration points.

The only module of :mod:`advisor.harness` that imports duckdb (the GPU machines have none): it
reads the self-describing run files that ``bench run`` writes (plain ``.json`` or compressed
``.json.gz``), validates them, and loads each run in its own transaction into ``bench_runs``
and ``bench_requests`` (a run loaded again replaces itself, so collecting twice changes
nothing). From each run it derives the points the TTFT model is fitted on (the
``calibration`` table; see :func:`calibration_points`), and can write them as a calibration CSV
with the same columns (``data/calibration/h200-*.csv``). A bad file is reported with its name
and field; every other file still loads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.csvcells import write_csv
from advisor.errors import InputError, NotFoundError
from advisor.harness.records import RUN_STATUSES, SCHEMA
from advisor.harness.results.series import identity_of_run, notes_text
from advisor.harness.results.validate import (
    MAX_RUN_BYTES,
    check_requests,
    check_run,
    check_wait,
    read_capped,
)
from advisor.harness.serve.waits import busy_of_run, normalised_wait, psi_of_run, wait_of_run
from advisor.model.calibration import COLUMNS
from advisor.progress import ProgressFn, no_progress

# The calibration table's columns, in its order: the same tuple the CSV loader reads.
CALIBRATION_COLUMNS = COLUMNS
RUN_COLUMNS = (
    "run_id",
    "started_at",
    "finished_at",
    "status",
    "engine",
    "engine_version",
    "model",
    "model_params_b",
    "platform",
    "gpu_name",
    "cpu_model",
    "gpus",
    "tp",
    "cores",
    "cores_per_gpu",
    "core_list",
    "workload",
    "attacker_rps",
    "attacker_tokens_min",
    "attacker_tokens_max",
    "victim_rps",
    "duration_s",
    "repeat",
    "timeout_s",
    "victim_ttft_p50_ms",
    "victim_ttft_p90_ms",
    "attacker_ttft_p50_ms",
    "requests_ok",
    "requests_failed",
    "requests_timed_out",
    "engine_cpu_percent",
    "gpu_util_percent",
    "tokenize_share",
    "env",
    "metrics_before",
    "metrics_after",
    "extra",
    "cluster",
    "partition",
)
REQUEST_COLUMNS = (
    "request_no",
    "kind",
    "prompt_tokens",
    "output_tokens",
    "sent_s",
    "first_token_s",
    "finished_s",
    "ttft_ms",
    "e2e_ms",
    "status",
    "error",
)
_REQUIRED = ("run_id", "status", "engine", "cores")


@dataclass(frozen=True)
class CollectResult:
    files: int
    runs_loaded: int
    requests_loaded: int
    calibration_points: int
    problems: tuple[str, ...] = ()
    calibration_csv: str | None = None


def _is_ladder(name: str) -> bool:
    """A run folder's side records: rate and demand-level ladders, curve summaries."""
    return any(name.startswith(f"{k}-") or f"_{k}-" in name for k in ("rate", "levels", "curves"))


def result_files(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Every ``*.json`` / ``*.json.gz`` run file under the given files and folders, sorted; a
    folder's rate-ladder records (``rate-*.json``, see advisor.harness.rates.find_rate) are not
    runs and are left out."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(
                sorted(
                    q
                    for q in p.rglob("*")
                    if q.name.endswith((".json", ".json.gz")) and not _is_ladder(q.name)
                )
            )
        elif p.is_file():
            out.append(p)
        else:
            raise NotFoundError(f"{p}: no such file or folder")
    return out


def read_result(path: Path) -> dict[str, Any]:
    """Parse and validate one run file; InputError names the file and the field."""
    try:
        data = json.loads(read_capped(path, MAX_RUN_BYTES))
    except (OSError, ValueError, EOFError) as exc:
        line = getattr(exc, "lineno", None)
        raise InputError(f"not a readable run JSON ({exc})", source=str(path), line=line) from exc
    except RecursionError:
        raise InputError("not a readable run JSON (nested too deep)", source=str(path)) from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise InputError(
            f"not an advisor bench result (expected schema {SCHEMA!r})",
            source=str(path),
            field="schema",
        )
    run = data.get("run")
    if not isinstance(run, dict):
        raise InputError("missing the run object", source=str(path), field="run")
    for name in _REQUIRED:
        if run.get(name) in (None, ""):
            raise InputError("missing", source=str(path), field=f"run.{name}")
    if run["status"] not in RUN_STATUSES:
        raise InputError(
            f"{run['status']!r:.40} is not one of {', '.join(RUN_STATUSES)}",
            source=str(path),
            field="run.status",
        )
    check_run(run, str(path))
    reqs = data.get("requests", [])
    if not isinstance(reqs, list):
        raise InputError("not a list", source=str(path), field="requests")
    check_requests(reqs, str(path))
    extra = run.get("extra")
    if isinstance(extra, dict) and extra.get("wait") is not None:
        check_wait(extra["wait"], str(path))
        extra["wait"] = normalised_wait(extra["wait"])
    return data


# Flags that keep a run out of the fit (advisor.harness.metrics.run_flags); ``timeouts`` instead
# turns the run into a censored point.
NOT_FITTED = frozenset({"failed-requests", "prefix-hit", "gpu-bound"})
# Run-queue wait per role (advisor.harness.serve.waits): share of wall time runnable but not running.
WAIT_METRICS = {
    "api_server": "wait_api_server_share",
    "engine_core": "wait_engine_core_share",
    "gpu_worker": "wait_worker_share",
}
BUSY_METRICS = {
    "api_server": "busy_api_server_cores",
    "engine_core": "busy_engine_core_cores",
    "gpu_worker": "busy_worker_cores",
}
PROCESS_METRICS = {
    "api_server": "cpu_api_server_cores",
    "engine_core": "cpu_engine_core_cores",
    "gpu_worker": "cpu_worker_cores",
}


def process_cores(extra: dict[str, Any], role: str) -> float | None:
    """Cores busy in processes of ``role`` over the phase (CPU seconds over wall seconds); for
    GPU workers the mean per worker. None when the run has no per-process split."""
    procs = [p for p in extra.get("engine_cpu_by_process") or [] if p.get("role") == role]
    if not procs:
        return None
    total = sum((p.get("cpu_percent") or 0.0) for p in procs) / 100.0
    return total / len(procs) if role == "gpu_worker" else total


def renderer_workers(argv: Sequence[str]) -> int | None:
    """vLLM's ``--renderer-num-workers`` among the engine's arguments (None: the default, 1)."""
    args = list(argv)
    for i, a in enumerate(args):
        if a.startswith("--renderer-num-workers="):
            return int(a.split("=", 1)[1])
        if a == "--renderer-num-workers" and i + 1 < len(args):
            return int(args[i + 1])
    return None


def workload_label(run: dict[str, Any]) -> str | None:
    """The calibration points' workload: the run's, suffixed ``/rwN`` when the engine ran N
    tokenizer (renderer) workers instead of vLLM's one, because the fitted model still reads
    renderer workers from this label (advisor.model.slowdown.renderer_workers_of). The series'
    full identity (TP, executor, renderer workers, engine arguments) is in each point's
    ``notes`` (``series=...``, see harness.series.notes_text); runs and ``bench runs
    --by-point`` carry the plain workload and the identity beside it."""
    workload = run.get("workload")
    rw = renderer_workers((run.get("extra") or {}).get("engine_argv") or [])
    return f"{workload}/rw{rw}" if workload and rw and rw != 1 else workload


def series_key(run: dict[str, Any]) -> tuple[Any, ...]:
    """What makes runs one curve over core counts: everything but the cores and the repeat,
    the engine's identity (TP, executor, renderer workers, CPU-relevant arguments) included."""
    return (
        *(
            run.get(k)
            for k in (
                "platform",
                "engine",
                "engine_version",
                "model",
                "tp",
                "workload",
                "attacker_rps",
                "attacker_tokens_min",
                "attacker_tokens_max",
                "victim_rps",
            )
        ),
        identity_of_run(run)["id"],
    )


def propagate_series_flags(runs: Sequence[dict[str, Any]]) -> None:
    """A series whose runs at its most cores are mostly ``gpu-bound`` is GPU-bound at every core
    count (no core count can show the CPU effect there): flag all its runs, in place."""
    series: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for r in runs:
        series.setdefault(series_key(r), []).append(r)
    for members in series.values():
        most = max(int(r.get("cores") or 0) for r in members)
        top = [r for r in members if int(r.get("cores") or 0) == most]

        def flagged(r: dict[str, Any]) -> bool:
            return any(
                f.get("flag") == "gpu-bound" for f in (r.get("extra") or {}).get("flags") or []
            )

        hits = [r for r in top if flagged(r)]
        if not hits or len(hits) * 2 <= len(top):
            continue
        reason = (
            f"series GPU-bound: {len(hits)} of {len(top)} runs at its most cores ({most}) "
            "are gpu-bound"
        )
        for r in members:
            if not flagged(r):
                extra = r.setdefault("extra", {})
                extra.setdefault("flags", []).append({"flag": "gpu-bound", "reason": reason})


def _phase_measures(run: dict[str, Any]) -> Iterator[tuple[str, float | None, str, str]]:
    """What an ``ok`` phase measured besides TTFT, as (metric, value, unit, what): each engine
    process's run-queue wait and CPU, the GPUs' busy share, the machine's and the engine
    cgroup's CPU pressure. Valid whatever TTFT's flags say (a GPU-bound or prefix-hit phase
    still queues its threads or not)."""
    for role, metric in WAIT_METRICS.items():
        yield metric, wait_of_run(run, role), "fraction", f"run-queue wait share of the {role}"
        what = f"CPU of the {role} from its threads' schedstat"
        yield BUSY_METRICS[role], busy_of_run(run, role), "cores", what
    util, gpus = run.get("gpu_util_percent"), run.get("gpus") or run.get("tp") or 1
    # the engine core steps while the GPU has work: its CPU follows this (docs/model.md)
    busy = None if util is None else min(max(float(util) / (100.0 * int(gpus)), 0.0), 1.0)
    yield (
        "gpu_busy_share",
        busy,
        "fraction",
        "the GPUs' mean utilisation over the phase (nvidia-smi)",
    )
    for kind in ("some", "full"):
        what = f"machine CPU pressure ({kind}) over the phase"
        yield f"psi_cpu_{kind}_share", psi_of_run(run, "machine", kind), "fraction", what
        # the engine's own cgroup, where the bench made one: what the node collector reads
        what = f"the engine cgroup's CPU pressure ({kind}) over the phase"
        yield f"psi_cgroup_{kind}_share", psi_of_run(run, "cgroup", kind), "fraction", what


def calibration_points(
    run: dict[str, Any],
    source_ref: str | None = None,
    *,
    start: int | None = None,
    id_suffix: str = "",
) -> list[dict[str, Any]]:
    """The calibration rows one run gives (columns of the ``calibration`` table).

    ``start`` (an engine start's number, written as ``start N`` in the notes) and ``id_suffix``
    (appended to the run id in each point id) keep a rerun that reused another folder's run
    ids apart from it: its own blocks, no duplicate point ids.

    An ``ok`` run gives its victims' median TTFT (``ttft_p50_ms``: fitted as a series over core
    counts), and as context the attackers' median TTFT and tokenization's share of victim TTFT.
    A ``hung`` run or a ``start-timeout`` gives a censored ``timeout`` point at its timeout.
    A crashed or failed run gives nothing: it says nothing about speed.
    """
    rid = run["run_id"]
    tmin, tmax = run.get("attacker_tokens_min"), run.get("attacker_tokens_max")
    prompt = (tmin + tmax) // 2 if tmin is not None and tmax is not None else None
    started = str(run.get("started_at") or "")[:10] or None
    base = {
        "source": f"bench:{rid}",
        "source_ref": source_ref,
        "platform": run.get("platform"),
        "engine": run.get("engine"),
        "engine_version": run.get("engine_version"),
        "model": run.get("model"),
        "model_params_b": run.get("model_params_b"),
        "gpus": run.get("gpus") or run.get("tp"),
        "workload": workload_label(run),
        "load_rps": run.get("attacker_rps"),
        "prompt_tokens": prompt,
        "cores": run.get("cores"),
        "cores_per_gpu": run.get("cores_per_gpu"),
        "measured_on": started,
    }
    head = notes_text(identity_of_run(run))
    note = (
        f"attacker-victim: attackers {tmin}-{tmax} tokens Poisson {run.get('attacker_rps')}/s, "
        f"victims {run.get('victim_rps')}/s; {run.get('duration_s')} s phase, "
        f"{'' if start is None else f'start {start}, '}repeat "
        f"{run.get('repeat')}; cores {run.get('core_list')}; {run.get('gpu_name')}"
    )
    out = []

    def add(metric: str, value: float | None, unit: str, what: str) -> None:
        if value is None:
            return
        out.append(
            {
                **base,
                "point_id": f"bench:{rid}{id_suffix}:{metric}",
                "metric": metric,
                "value": float(value),
                "unit": unit,
                "notes": f"{head}; {what}; {note}",
            }
        )

    status = run.get("status")
    extra = run.get("extra") or {}
    flags = {f.get("flag") for f in extra.get("flags") or [] if isinstance(f, dict)}
    if status == "ok":
        for measure in _phase_measures(run):
            add(*measure)
    if flags & NOT_FITTED:
        return out  # TTFT did not measure the core effect (advisor.harness.metrics.run_flags)
    if status == "ok" and "timeouts" in flags:
        add("timeout", run.get("timeout_s"), "s", "requests timed out: censored at the timeout")
        return out
    if status == "ok":
        add("ttft_p50_ms", run.get("victim_ttft_p50_ms"), "ms", "victim TTFT median")
        add("ttft_p90_ms", run.get("victim_ttft_p90_ms"), "ms", "victim TTFT p90")
        noload = (extra.get("noload") or {}).get("victim_ttft_p50_ms")
        add("noload_ttft_ms", noload, "ms", "victim TTFT median with no attackers, this start")
        hit = (extra.get("vllm_deltas") or {}).get("prefix_hit_rate")
        add("prefix_hit_rate", hit, "fraction", "vLLM prefix-cache hits over queries (tokens)")
        for role, metric in PROCESS_METRICS.items():
            add(metric, process_cores(extra, role), "cores", f"CPU of the {role} over the phase")
        add("attacker_ttft_p50_ms", run.get("attacker_ttft_p50_ms"), "ms", "attacker TTFT median")
        add(
            "tokenize_share",
            run.get("tokenize_share"),
            "fraction",
            "victim prompt tokenization time over victim TTFT median",
        )
    elif status in ("hung", "start-timeout"):
        add("timeout", run.get("timeout_s"), "s", f"run {status}: censored at the timeout")
    return out


def _json_text(value: Any) -> str | None:
    return None if value is None else json.dumps(value)


def insert_calibration_points(con: Any, points: Sequence[dict[str, Any]]) -> None:
    """Insert ``points`` (dicts by :data:`CALIBRATION_COLUMNS`, a missing one NULL) into
    ``calibration``, inside the caller's transaction; what a run's load and an import share."""
    from advisor.store import query

    if points:
        con.executemany(
            query("bench/insert_calibration"),
            [[p.get(c) for c in CALIBRATION_COLUMNS] for p in points],
        )


_REQUEST_TYPES = {
    "request_no": "int64",
    "kind": "string",
    "prompt_tokens": "int64",
    "output_tokens": "int64",
    "status": "string",
    "error": "string",
}


def _requests_table(run_id: str, requests: Sequence[dict[str, Any]]) -> Any:
    """A run's (validated) requests as one Arrow table, typed so that a run whose requests all
    lack a field still loads."""
    import pyarrow as pa

    cols = {"run_id": pa.array([run_id] * len(requests), pa.string())}
    for c in REQUEST_COLUMNS:
        cols[c] = pa.array([r.get(c) for r in requests], _REQUEST_TYPES.get(c, "float64"))
    return pa.table(cols)


def _load_one(con: Any, data: dict[str, Any], source_file: str) -> tuple[int, int]:
    from advisor.store import query

    run = data["run"]
    params = {c: run.get(c) for c in RUN_COLUMNS}
    for c in ("env", "metrics_before", "metrics_after", "extra"):
        params[c] = _json_text(params[c])
    params["source_file"] = source_file
    reqs = _requests_table(str(run["run_id"]), data.get("requests", []))
    points = calibration_points(run, Path(source_file).name)
    con.execute("BEGIN TRANSACTION")
    try:
        for name in (
            "bench/delete_run_requests",
            "bench/delete_run_calibration",
            "bench/delete_run",
        ):
            con.execute(query(name), {"run_id": run["run_id"]})
        con.execute(query("bench/insert_run"), params)
        if reqs.num_rows:
            con.register("incoming_requests", reqs)
            try:
                con.execute(query("bench/insert_requests"))
            finally:
                con.unregister("incoming_requests")
        insert_calibration_points(con, points)
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    return reqs.num_rows, len(points)


def collect(
    paths: Sequence[str | os.PathLike[str]],
    db: str | os.PathLike[str] | None = None,
    progress: ProgressFn = no_progress,
    calibration_csv: str | os.PathLike[str] | None = None,
) -> CollectResult:
    """Load every run file under ``paths`` into the database; optionally write the calibration
    points of the runs read to ``calibration_csv``. Bad files are listed in ``problems`` (each
    with its file and field) and the others still load; the CLI reports them as errors."""
    import duckdb

    from advisor.store import connect

    files = result_files(paths)
    con = connect(db)
    runs = reqs = pts = 0
    problems: list[str] = []
    all_points: list[dict[str, Any]] = []
    datas: list[tuple[Path, dict[str, Any]]] = []
    for path in files:
        try:
            datas.append((path, read_result(path)))
        except InputError as exc:
            problems.append(str(exc))
    for _, d in datas:
        # runs made before identities existed get theirs from their command line, so that
        # ``bench runs --by-point`` can keep every engine's curve apart
        d["run"]["extra"] = d["run"].get("extra") or {}
        d["run"]["extra"]["series"] = identity_of_run(d["run"])
    propagate_series_flags([d["run"] for _, d in datas])
    first_folder: dict[str, Path] = {}  # run id -> the folder it was first read from
    try:
        for i, (path, data) in enumerate(datas):
            try:
                n_req, n_pts = _load_one(con, data, str(path))
            except InputError as exc:
                problems.append(str(exc))
                continue
            except duckdb.Error as exc:
                problems.append(f"{path}: cannot load: {exc}")
                continue
            rid = str(data["run"].get("run_id"))
            earlier = first_folder.setdefault(rid, path.parent)
            if earlier == path.parent:
                all_points.extend(calibration_points(data["run"], path.name))
            else:  # a rerun that reused the run ids of an earlier folder (bench rerun does)
                all_points.extend(
                    calibration_points(
                        data["run"],
                        path.name,
                        start=engine_starts(earlier) + 1,
                        id_suffix=f"-{path.parent.name}",
                    )
                )
            runs += 1
            reqs += n_req
            pts += n_pts
            progress("collect", i + 1, len(files))
    finally:
        con.close()
    if calibration_csv is not None:
        write_calibration_csv(all_points, Path(calibration_csv))
    return CollectResult(
        len(files),
        runs,
        reqs,
        pts,
        tuple(problems),
        str(calibration_csv) if calibration_csv else None,
    )


def engine_starts(folder: Path) -> int:
    """How many engine starts a result folder's runs came from (its ``engine-startN.log``
    files; 1 when it kept none)."""
    return max(1, len(list(folder.glob("engine-start*.log"))))


def write_calibration_csv(points: Sequence[dict[str, Any]], path: Path) -> None:
    """Calibration points as a CSV with the ``calibration`` table's columns, sorted."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = sorted(
        points,
        key=lambda p: (
            str(p.get("workload")),
            p.get("gpus") or 0,
            p.get("load_rps") or 0,
            p["metric"],
            p.get("cores") or 0,
            p["point_id"],
        ),
    )
    with open(path, "w", newline="", encoding="utf-8") as f:
        write_csv(f, CALIBRATION_COLUMNS, ([p.get(c) for c in CALIBRATION_COLUMNS] for p in rows))


def summarise_points(
    db: str | os.PathLike[str] | None = None, *, platform: str | None = None
) -> list[dict[str, Any]]:
    """Repeats folded per point: median victim TTFT with its range over repeats, and the
    speedup against the fewest cores of the series (see advisor/sql/bench/summary.sql)."""
    from advisor.store import connect, query

    con = connect(db, read_only=True)
    try:
        cur = con.execute(query("bench/summary"), {"platform": platform})
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()


def list_runs(
    db: str | os.PathLike[str] | None = None,
    *,
    platform: str | None = None,
    status: str | None = None,
) -> list[dict[str, Any]]:
    """Collected runs (see advisor/sql/bench/list_runs.sql), as dicts."""
    from advisor.store import connect, query

    con = connect(db, read_only=True)
    try:
        cur = con.execute(query("bench/list_runs"), {"platform": platform, "status": status})
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]
    finally:
        con.close()
