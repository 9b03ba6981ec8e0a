"""Rerunning a stored series: the ``bench run`` configuration that reproduces stored runs (their
loads, core counts, repeats, starts, executor and TP), a check that the engine arguments given
now reproduce the stored engine identity, and the replication verdict of old against new.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from advisor.errors import NotFoundError, UsageError
from advisor.harness.config import BenchConfig
from advisor.harness.records import LoadSpec
from advisor.harness.results.series import EXECUTOR_FLAG, arg_value, describe, identity_of_run

LOAD_FIELDS = {f.name for f in dataclasses.fields(LoadSpec)} - {"salt"}


def stored_config(
    datas: Sequence[Mapping[str, Any]],
    *,
    model: str,
    out_dir: Path,
    series: str | None = None,
    **overrides: Any,
) -> tuple[BenchConfig, dict[str, Any]]:
    """The configuration that reruns the stored runs of one series, and that series' identity.

    ``series`` (an identity id, or a prefix of one) picks a series when the runs hold several.
    ``overrides`` set any other field (engine arguments, client cores, the engine command...).
    """
    by_id: dict[str, list[Mapping[str, Any]]] = {}
    idents: dict[str, dict[str, Any]] = {}
    for d in datas:
        ident = identity_of_run(d["run"])
        by_id.setdefault(ident["id"], []).append(d)
        idents[ident["id"]] = ident
    if not by_id:
        raise NotFoundError("no bench run files among the stored paths")
    ids = [i for i in by_id if series is None or i.startswith(series)]
    if not ids:
        raise NotFoundError(f"--series {series}: no stored runs of that series")
    if len(ids) > 1:
        choices = "; ".join(f"{i} ({describe(idents[i])})" for i in sorted(ids))
        raise UsageError(f"the stored runs hold several series; pick one with --series: {choices}")
    sid = ids[0]
    runs = [d["run"] for d in by_id[sid]]
    ident = idents[sid]
    loads: list[LoadSpec] = []
    for r in runs:
        stored = (r.get("extra") or {}).get("load") or {}
        spec = LoadSpec(**{k: v for k, v in stored.items() if k in LOAD_FIELDS})
        if spec not in loads:
            loads.append(spec)
    extra0 = runs[0].get("extra") or {}
    executor = arg_value(extra0.get("engine_argv") or [], EXECUTOR_FLAG)
    fields: dict[str, Any] = dict(
        model=model,
        cores=tuple(sorted({int(r["cores"]) for r in runs})),
        loads=tuple(sorted(loads, key=lambda ld: (ld.workload, ld.attacker_rps))),
        out_dir=out_dir,
        engine=str(runs[0].get("engine") or "vllm"),
        tp=int(runs[0].get("tp") or 1),
        repeats=max(int(r.get("repeat") or 1) for r in runs),
        starts=max(int((r.get("extra") or {}).get("engine_start") or 1) for r in runs),
        repin=extra0.get("pinning_mode") == "repin",
        executor=executor or "",
    )
    fields.update(overrides)
    if not fields["repin"]:
        fields["starts"] = 1
    return BenchConfig(**fields), ident


def check_identity(cfg: BenchConfig, stored: Mapping[str, Any], env: dict[str, str]) -> None:
    """Refuse a rerun whose engine would be another series than the stored one."""
    now = cfg.identity(env)
    if now["id"] != stored.get("id"):
        raise UsageError(
            f"the rerun's engine is series {now['id']} ({describe(now)}), the stored runs are "
            f"{stored.get('id')} ({describe(stored)}): give the same --engine-arg and "
            "--engine-env as the stored runs"
        )


def rerun_env(cfg: BenchConfig) -> dict[str, str]:
    """The environment the rerun's identity is computed from (as the runner records it)."""
    import os

    from advisor.harness.results.series import CPU_ENV

    env = {k: os.environ[k] for k in CPU_ENV if k in os.environ}
    env.update(dict(cfg.engine_env))
    return env


def rerun_series(
    old: Path,
    *,
    model: str,
    out_dir: Path,
    series: str | None = None,
    tolerance: float = 0.10,
    progress: Any = None,
    **overrides: Any,
) -> list[dict[str, Any]]:
    """Run the stored series under ``old`` again into ``out_dir`` and compare the curves
    (:func:`advisor.harness.results.curves.compare`): one row per curve in both."""
    from advisor.harness.results.curves import compare, curve_report, read_runs
    from advisor.harness.runner import run_bench
    from advisor.progress import no_progress

    if not Path(old).exists():
        raise NotFoundError(f"{old}: no such file or folder")
    cfg, ident = stored_config(
        read_runs([old]), model=model, out_dir=out_dir, series=series, **overrides
    )
    check_identity(cfg, ident, rerun_env(cfg))
    run_bench(cfg, progress or no_progress)
    return compare(
        curve_report([old], tolerance=tolerance), curve_report([out_dir], tolerance=tolerance)
    )
