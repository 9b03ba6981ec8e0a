"""The derived table ``usage_months``: per-month usage sums of every GPU job, rebuilt with the
ratio cubes (:func:`advisor.derived.cube.refresh_ratio_cube`, inside its transaction).

Owns :class:`UsageThresholds` (when a job's usage reads as starved or over-provisioned; the
table holds the verdicts of the defaults), :func:`facts_params` (the bound parameters of
``usage/facts.sql``) and the table's builder. :mod:`advisor.usage` reads the table and shares
the records; this module imports no analytics, so the cube rebuild can call it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import duckdb

from advisor.errors import UsageError
from advisor.filters import JobFilters, jobs_where, query_params
from advisor.model.psilink import STARVED_PSI_DEFAULT
from advisor.store import render


@dataclass(frozen=True)
class UsageThresholds:
    """When a job's usage reads as starved or over-provisioned (docs/usage.md says why).

    ``starved_cpu_eff``: CPU efficiency (0..1) at or above which its cores were saturated;
    ``starved_gpu_util_pct``: mean GPU utilisation (percent) at or below which its GPUs were
    mostly idle; ``idle_cores_per_gpu``: idle cores per GPU (cores per GPU x (1 - efficiency))
    at or above which it was over-provisioned; ``min_elapsed_s``: shorter jobs get no verdict;
    ``trust_coverage``: share of GPU-hours with CPU and GPU usage from which the usage-based
    estimate is the one to trust. The derived table ``usage_months`` holds the verdicts of
    these defaults: changing one needs a new ``advisor.derived.cube.CUBE_RULES_VERSION``.
    """

    starved_cpu_eff: float = 0.9
    starved_gpu_util_pct: float = 50.0
    idle_cores_per_gpu: float = 8.0
    min_elapsed_s: int = 600
    trust_coverage: float = 0.5
    # share of a job's time its tasks stalled for a CPU (cgroup PSI some) from which a job with
    # measured pressure is starved: --max-wait's default through the measured link
    starved_psi_some: float = STARVED_PSI_DEFAULT

    def check(self) -> None:
        if not 0 < self.starved_cpu_eff <= 1:
            raise UsageError("--starved-cpu-eff must be in (0, 1] (e.g. 0.9)")
        if not 0 <= self.starved_gpu_util_pct <= 100:
            raise UsageError("--starved-gpu-util must be a percent in [0, 100] (e.g. 50)")
        if self.idle_cores_per_gpu <= 0:
            raise UsageError("--idle-cores-per-gpu must be positive (e.g. 8)")
        if self.min_elapsed_s < 0:
            raise UsageError("--min-elapsed must be 0 or more seconds")
        if not 0 < self.starved_psi_some <= 1:
            raise UsageError("--starved-psi must be a share of time in (0, 1] (e.g. 0.075)")
        if not 0 < self.trust_coverage <= 1:
            raise UsageError("trust coverage must be in (0, 1]")


def facts_params(filters: JobFilters, t: UsageThresholds) -> dict[str, Any]:
    """The bound parameters of ``usage/facts.sql``: the job filters and the verdict thresholds."""
    return {
        **query_params(filters),
        "starved_cpu_eff": t.starved_cpu_eff,
        "starved_gpu_util_pct": t.starved_gpu_util_pct,
        "idle_cores_per_gpu": t.idle_cores_per_gpu,
        "starved_psi_some": t.starved_psi_some,
        "min_elapsed_s": t.min_elapsed_s,
    }


def facts_sql(source: str = "jobs") -> str:
    """``usage/facts.sql`` over ``source``: the table ``jobs``, or the view of the jobs in the
    slices a rebuild replaces (a fixed name chosen by advisor.derived.cube, never user input)."""
    return render("usage/facts", source=source, where=jobs_where("j.start"))


def refresh_usage_months(con: duckdb.DuckDBPyConnection, source: str = "jobs") -> None:
    """Fill the emptied slices of ``usage_months``, ``usage_people_months`` (its sums by account
    and user) and ``usage_starved_months`` (the starved jobs' shapes) from the jobs of
    ``source`` (every job, or the changed slices' view) under the default thresholds (the cube
    rebuild calls this inside its transaction; advisor.derived.cube owns the tables)."""
    params = facts_params(JobFilters(), UsageThresholds())
    facts = facts_sql(source)
    counts = (
        ",\n    histogram(round(cpu_efficiency, 2)) FILTER (WHERE has_cpu_usage) AS cpu_eff_counts"
    )
    for table, keys, extra in (
        ("usage_months", "gpu_count, cores_per_gpu_bin,", counts),
        ("usage_people_months", 'account, "user",', ""),
    ):
        sql = render("usage/months_refresh", facts=facts, table=table, keys=keys, counts=extra)
        con.execute(sql, params)
    month = "CAST(date_trunc('month', start) AS DATE) AS month, "
    rows = render("usage/starved_mix", facts=facts, month=month)
    con.execute(render("usage/starved_months_refresh", rows=rows), params)
