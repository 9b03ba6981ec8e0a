"""Measured curves from run files: runs grouped into series (one identity, one load), each
series' victim TTFT samples keyed by (engine start, repeat, cores), and its knee with paired-
bootstrap intervals (:mod:`advisor.knee`); the replication check of two stored curves.

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

from advisor.harness.series import describe, identity_of_run
from advisor.knee import KneeResult, measure_knee, replicates

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

    def to_json_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "label": self.label,
            "series": self.series,
            "load": self.load,
            "runs": self.runs,
            "runs_excluded": self.runs_excluded,
            **self.knee.to_json_dict(),
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


def read_runs(paths: Iterable[str | Path]) -> list[dict[str, Any]]:
    """Every run file (``*.json``, ``*.json.gz``) under ``paths`` with its requests; ladder and
    summary files are skipped."""
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
            data.setdefault("source_folder", str(f.parent))
            out.append(data)
    return out


def curves(
    datas: Sequence[Mapping[str, Any]],
    *,
    tolerance: float = 0.10,
    seed: int = 0,
    bootstrap_resamples: int = 2000,
) -> list[Curve]:
    """The knee of every series among the runs (run files' contents, requests included)."""
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
        excluded = 0
        for d in members:
            run = d["run"]
            if not usable(run):
                excluded += 1
                continue
            extra = run.get("extra") or {}
            # one engine start of one invocation: runs of two invocations (or two folders) with
            # the same start and repeat numbers are different blocks
            session = extra.get("session") or d.get("source_folder") or ""
            block = (
                (session, extra.get("engine_start") or 1),
                run.get("repeat"),
                int(run["cores"]),
            )
            samples.setdefault(block, []).extend(victim_ttfts(d))
        knee = measure_knee(
            samples, tolerance=tolerance, seed=seed, bootstrap_resamples=bootstrap_resamples
        )
        ident, load = meta[key]
        label = f"{describe(ident)} {load['workload']} {load['attacker_rps']:g}/s"
        if load.get("level"):
            label += f" ({load['level']})"
        out.append(Curve(key, label, ident, load, knee, len(members), excluded))
    return out


def summary_rows(cs: Sequence[Curve]) -> list[dict[str, Any]]:
    """One row per curve and core count, for tables."""
    rows = []
    for c in cs:
        for p in c.knee.points:
            rows.append(
                {
                    "curve": c.label,
                    "status": c.knee.status,
                    "knee_cores": c.knee.knee_cores,
                    "cores": p.cores,
                    "ttft_p50_ms": round(p.ttft_p50_ms, 1),
                    "slowdown": round(p.slowdown, 3),
                    "slowdown_low": round(p.slowdown_low, 3),
                    "slowdown_high": round(p.slowdown_high, 3),
                    "blocks": p.blocks,
                }
            )
    return rows


def compare(old: Sequence[Curve], new: Sequence[Curve]) -> list[dict[str, Any]]:
    """For every curve in both: whether the new one agrees with the old within their intervals
    (:func:`advisor.knee.replicates`), with both statuses and knees."""
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


def curve_report(paths: Sequence[str | Path], *, tolerance: float = 0.10) -> list[Curve]:
    """The curves of the run files under ``paths``; a path that does not exist is an error."""
    from advisor.errors import NotFoundError

    for p in map(Path, paths):
        if not p.exists():
            raise NotFoundError(f"{p}: no such file or folder")
    return curves(read_runs(paths), tolerance=tolerance)


def replication_report(
    old: str | Path, new: str | Path, *, tolerance: float = 0.10
) -> list[dict[str, Any]]:
    """:func:`compare` of the curves stored under ``old`` and ``new``."""
    return compare(
        curve_report([old], tolerance=tolerance), curve_report([new], tolerance=tolerance)
    )
