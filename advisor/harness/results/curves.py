"""Measured curves from run files: runs grouped into series (one identity, one load), each
series' victim TTFT samples keyed by (engine start, repeat, cores), and its knee with paired-
bootstrap intervals (:mod:`advisor.model.knee`); the replication check of two stored curves.

Reads the run JSON files directly (no DuckDB), so the runner can judge its own curves on a GPU
machine while it measures (``--budget-minutes``).
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.errors import InputError
from advisor.harness.results.series import describe, identity_of_run
from advisor.harness.results.validate import check_wait
from advisor.harness.serve.waits import wait_of_run
from advisor.model.knee import KneeResult, measure_knee, replicates
from advisor.model.waitknee import DEFAULT_MAX_WAIT, WaitKnee, check_max_wait, measure_wait_knee

CURVES_SCHEMA = "advisor.bench.curves/1"
# Flags under which a run's TTFT does not describe the core effect (see metrics.run_flags).
EXCLUDED_FLAGS = frozenset({"failed-requests", "prefix-hit", "gpu-bound", "timeouts"})


@dataclass(frozen=True)
class Curve:
    """One series' knee: its identity and load, and what the data resolve."""

    key: str  # identity id + load, stable across runs and machines
    label: str  # human-readable: identity and load
    series: dict[str, Any]
    load: dict[str, Any]
    knee: KneeResult
    runs: int
    runs_excluded: int
    wait: WaitKnee | None = None  # None: no run of the series recorded its processes' wait
    itl: KneeResult | None = None  # victims' inter-token latency; None under two output tokens

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "series": self.series,
            "load": self.load,
            "runs": self.runs,
            "runs_excluded": self.runs_excluded,
            **self.knee.to_json_dict(),
            "wait": self.wait.to_json_dict() if self.wait is not None else None,
            "itl": self.itl.to_json_dict() if self.itl is not None else None,
        }


LOAD_FIELDS = (
    "workload",
    "attacker_rps",
    "attacker_tokens_min",
    "attacker_tokens_max",
    "victim_rps",
)


def curve_key(run: Mapping[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """(key, identity, load) of the curve a run belongs to."""
    ident = identity_of_run(run)
    load = {k: run.get(k) for k in LOAD_FIELDS}
    load["level"] = (run.get("extra") or {}).get("level")
    head = [str(run.get(k)) for k in ("platform", "model", "engine_version")]
    key = "|".join([*head, ident["id"], *(str(load[k]) for k in LOAD_FIELDS)])
    return key, ident, load


def usable(run: Mapping[str, Any]) -> bool:
    """An ``ok`` run with no flag that makes its TTFT meaningless for the core effect."""
    flags = {f.get("flag") for f in (run.get("extra") or {}).get("flags") or []}
    return run.get("status") == "ok" and not (flags & EXCLUDED_FLAGS)


def victim_ttfts(data: Mapping[str, Any]) -> list[float]:
    return [
        float(r["ttft_ms"])
        for r in data.get("requests") or []
        if r.get("kind") == "victim" and r.get("status") == "ok" and r.get("ttft_ms")
    ]


def victim_itls(data: Mapping[str, Any]) -> list[float]:
    """Each ok victim's mean inter-token latency in ms (requests of two or more output tokens)."""
    out = []
    for r in data.get("requests") or []:
        if r.get("kind") != "victim" or r.get("status") != "ok":
            continue
        first, done, n = r.get("first_token_s"), r.get("finished_s"), r.get("output_tokens")
        if first is None or done is None or not n or n < 2:
            continue
        out.append((float(done) - float(first)) * 1000.0 / (int(n) - 1))
    return out


def read_runs(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every run file (``*.json``, ``*.json.gz``) under ``paths`` with its requests; ladder and
    summary files are skipped, a run whose wait record breaks its rules is an InputError naming
    the file and field."""
    files: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            files += sorted(p.rglob("*.json")) + sorted(p.rglob("*.json.gz"))
        else:
            files.append(p)
    out = []
    for f in files:
        opener = gzip.open if f.name.endswith(".gz") else open
        with opener(f, "rt", encoding="utf-8") as fh:
            try:
                data = json.load(fh)
            except ValueError:
                continue
        if isinstance(data, dict) and str(data.get("schema", "")).startswith("advisor.bench.run/"):
            run = data.get("run")
            extra = run.get("extra") if isinstance(run, dict) else None
            if not isinstance(run, dict) or (extra is not None and not isinstance(extra, dict)):
                raise InputError("the run or its extra is not an object", source=str(f))
            if extra and extra.get("wait") is not None:
                check_wait(extra["wait"], str(f))  # a malformed record names its field
            data.setdefault("source_folder", str(f.parent))
            out.append(data)
    return out


def curves(
    datas: Sequence[Mapping[str, Any]],
    *,
    tolerance: float = 0.10,
    max_wait: float = DEFAULT_MAX_WAIT,
    seed: int = 0,
    bootstrap_resamples: int = 2000,
) -> list[Curve]:
    """The knee of every series among the runs (run files' contents, requests included), and its
    wait knee where the runs recorded their processes' wait (:mod:`advisor.model.waitknee`)."""
    groups: dict[str, list[Mapping[str, Any]]] = {}
    meta: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
    for d in datas:
        key, ident, load = curve_key(d["run"])
        groups.setdefault(key, []).append(d)
        meta[key] = (ident, load)
    out = []
    for key in sorted(groups):
        members = groups[key]
        samples: dict[tuple[Any, Any, int], list[float]] = {}
        itls: dict[tuple[Any, Any, int], list[float]] = {}
        waits: dict[tuple[Any, int], dict[str, float]] = {}
        excluded = 0
        for d in members:
            run = d["run"]
            block = run_block(d)
            if run.get("status") == "ok":
                # wait describes the core effect whatever TTFT's flags say (a GPU-bound phase
                # still shows whether the engine's processes queued for a CPU)
                shares = {r: v for r in WAIT_ROLES if (v := wait_of_run(run, r)) is not None}
                if shares:
                    waits[(block[:2], block[2])] = shares
            if not usable(run):
                excluded += 1
                continue
            samples.setdefault(block, []).extend(victim_ttfts(d))
            if its := victim_itls(d):
                itls.setdefault(block, []).extend(its)
        knee = measure_knee(
            samples, tolerance=tolerance, seed=seed, bootstrap_resamples=bootstrap_resamples
        )
        wait = (
            measure_wait_knee(
                waits, max_wait=max_wait, seed=seed, bootstrap_resamples=bootstrap_resamples
            )
            if waits
            else None
        )
        itl = (
            measure_knee(
                itls, tolerance=tolerance, seed=seed, bootstrap_resamples=bootstrap_resamples
            )
            if itls
            else None
        )
        ident, load = meta[key]
        label = f"{describe(ident)} {load['workload']} {load['attacker_rps']:g}/s"
        if load.get("level"):
            label += f" ({load['level']})"
        out.append(Curve(key, label, ident, load, knee, len(members), excluded, wait, itl))
    return out


WAIT_ROLES = ("engine_core", "api_server", "gpu_worker")


def run_block(data: Mapping[str, Any]) -> tuple[Any, Any, int]:
    """(engine start of one invocation, repeat, cores) of a run file: runs of two invocations (or
    two folders) with the same start and repeat numbers are different blocks."""
    run = data["run"]
    extra = run.get("extra") or {}
    session = extra.get("session") or data.get("source_folder") or ""
    return ((session, extra.get("engine_start") or 1), run.get("repeat"), int(run["cores"]))


def summary_rows(cs: Sequence[Curve]) -> list[dict[str, Any]]:
    """One row per curve and core count, for tables: the TTFT slowdown and its knee, and beside
    them each role's wait share with its interval and the wait knee (None without wait data)."""
    rows = []
    for c in cs:
        counts = sorted({p.cores for p in c.knee.points} | wait_counts(c))
        for cores in counts:
            p = c.knee.point(cores)
            row: dict[str, Any] = {
                "curve": c.label,
                "status": c.knee.status,
                "knee_cores": c.knee.knee_cores,
                "cores": cores,
                "ttft_p50_ms": round(p.ttft_p50_ms, 1) if p else None,
                "slowdown": round(p.slowdown, 3) if p else None,
                "slowdown_low": round(p.slowdown_low, 3) if p else None,
                "slowdown_high": round(p.slowdown_high, 3) if p else None,
                "blocks": p.blocks if p else None,
                "itl_slowdown": round(q.slowdown, 3) if (q := itl_point(c, cores)) else None,
                "itl_slowdown_low": round(q.slowdown_low, 3) if q else None,
                "itl_slowdown_high": round(q.slowdown_high, 3) if q else None,
                "wait_status": c.wait.status if c.wait else None,
                "wait_knee_cores": c.wait.knee_cores if c.wait else None,
            }
            for role, short in (
                ("engine_core", "core"),
                ("api_server", "api"),
                ("gpu_worker", "worker"),
            ):
                w = c.wait.point(cores, role) if c.wait else None
                row[f"wait_{short}"] = round(w.wait_share, 3) if w else None
                row[f"wait_{short}_low"] = _finite(w.wait_low) if w else None
                row[f"wait_{short}_high"] = _finite(w.wait_high) if w else None
            rows.append(row)
    return rows


def itl_point(c: Curve, cores: int) -> Any:
    return c.itl.point(cores) if c.itl else None


def wait_counts(c: Curve) -> set[int]:
    return {p.cores for p in c.wait.points} if c.wait else set()


def _finite(x: float) -> float | None:
    return round(x, 3) if x == x and abs(x) != float("inf") else None


def compare(old: Sequence[Curve], new: Sequence[Curve]) -> list[dict[str, Any]]:
    """For every curve in both: whether the new one agrees with the old within their intervals
    (:func:`advisor.model.knee.replicates`), with both statuses and knees."""
    by_key = {c.key: c for c in old}
    rows = []
    for c in new:
        o = by_key.get(c.key)
        if o is None:
            continue
        rep = replicates(o.knee, c.knee)
        rows.append(
            {
                "curve": c.label,
                "agree": rep.agree,
                "old_status": o.knee.status,
                "old_knee_cores": o.knee.knee_cores,
                "new_status": c.knee.status,
                "new_knee_cores": c.knee.knee_cores,
                "common_cores": list(rep.common_cores),
                "disagreeing_cores": list(rep.disagreeing_cores),
                "reason": rep.reason,
            }
        )
    return rows


def curve_report(
    paths: Sequence[str | Path], *, tolerance: float = 0.10, max_wait: float = DEFAULT_MAX_WAIT
) -> list[Curve]:
    """The curves of the run files under ``paths``; a path that does not exist is an error."""
    from advisor.errors import NotFoundError

    check_max_wait(max_wait)
    for p in map(Path, paths):
        if not p.exists():
            raise NotFoundError(f"{p}: no such file or folder")
    return curves(read_runs(paths), tolerance=tolerance, max_wait=max_wait)


def replication_report(
    old: str | Path, new: str | Path, *, tolerance: float = 0.10
) -> list[dict[str, Any]]:
    """:func:`compare` of the curves stored under ``old`` and ``new``."""
    return compare(
        curve_report([old], tolerance=tolerance), curve_report([new], tolerance=tolerance)
    )


def wait_evidence(cs: Sequence[Curve]) -> list[dict[str, Any]]:
    """What each measured core count says about how much wait costs TTFT and inter-token
    latency: the most judged wait (engine core or API server, with its interval) beside the two
    slowdowns' verdicts against the curve's tolerance (``within``: upper bound inside it,
    ``slower``: lower bound above it, ``unresolved``: neither). The default ``--max-wait`` rests
    on these rows (docs/model.md)."""
    rows = []
    for c in cs:
        if c.wait is None:
            continue
        tol = 1 + c.knee.tolerance
        for cores in sorted(wait_counts(c)):
            judged = [p for r in c.wait.roles if (p := c.wait.point(cores, r)) is not None]
            if not judged:
                continue
            top = max(judged, key=lambda p: p.wait_share)
            rows.append(
                {
                    "curve": c.label,
                    "cores": cores,
                    "role": top.role,
                    "wait": round(top.wait_share, 3),
                    "wait_low": _finite(top.wait_low),
                    "wait_high": _finite(top.wait_high),
                    "ttft": _verdict(c.knee.point(cores), tol),
                    "itl": _verdict(c.itl.point(cores) if c.itl else None, tol),
                }
            )
    return rows


def _verdict(p: Any, tol: float) -> str | None:
    if p is None:
        return None
    if p.slowdown_low > tol:
        return "slower"
    return "within" if p.slowdown_high <= tol else "unresolved"


def evidence_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The largest wait at which TTFT and ITL were both within tolerance beyond doubt, and the
    smallest at which either was slower beyond doubt (the bracket the threshold lies in)."""
    harmless = [
        r for r in rows if r["ttft"] == "within" and r["itl"] in ("within", None) and r["wait"] > 0
    ]
    harmful = [r for r in rows if "slower" in (r["ttft"], r["itl"])]
    most = max(harmless, key=lambda r: r["wait"], default=None)
    least = min(harmful, key=lambda r: r["wait"], default=None)
    return {"largest_harmless": most, "smallest_harmful": least}
