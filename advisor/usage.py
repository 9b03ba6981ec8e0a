"""What GPU jobs used, beside what they were given: evidence of CPU starvation (issue 23).

Owns the per-job usage figures (CPU efficiency, GPU utilisation, the verdict *starved* /
*over-provisioned* with its numbers), their summaries per group (GPU type, partition, account,
month, cores-per-GPU bin, ...), the share and dollar value of GPU-hours in likely-starved jobs,
which estimate an admin should trust for a cluster (usage or allocation), per-cluster coverage
for ``advisor data status``, and the check of the model against measured efficiency.

Everything is derived on read from the usage columns of ``jobs`` (migration 012) by
``advisor/sql/usage/``; a summary's sums also come from the derived table ``usage_months``
(built by :mod:`advisor.derived.usage_months` with the ratio cubes, which also holds
:class:`UsageThresholds`, imported here) when it can answer the query (:func:`table_answers`). CPU efficiency = CPU seconds used / (elapsed x cores allocated); GPU
utilisation is a percent (mean over the job's GPUs and the peak of one). Most sites export no
usage: the figures are then None and the verdict falls back to the allocation-based estimate.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from advisor.derived.cube import cube_is_fresh
from advisor.derived.usage_months import UsageThresholds, facts_params, facts_sql
from advisor.errors import UsageError
from advisor.filters import JOB_GROUP_KEYS, JobFilters
from advisor.store import query, quote_ident, render

# Group keys a usage summary can take (columns of usage/facts.sql).
GROUP_KEYS: tuple[str, ...] = (*JOB_GROUP_KEYS, "cores_per_gpu_bin")
VERDICTS = ("starved", "over_provisioned", "ok")


@dataclass(frozen=True)
class UsageQuery(JobFilters):
    """What to summarise: grouping, thresholds, and the job filters of
    :class:`advisor.filters.JobFilters` (keywords only, as :class:`advisor.ratios.RatioQuery`'s)."""

    by: tuple[str, ...] = ("gpu_type",)
    thresholds: UsageThresholds = UsageThresholds()
    # On-demand USD per GPU-hour by GPU type; empty: from the price book (advisor.pricing,
    # with ``pricing_file`` as a site's overrides).
    usd_per_gpu_hour: Mapping[str, float] = field(default_factory=dict)
    pricing_file: str | None = None


@dataclass(frozen=True)
class UsageGroup:
    """One group: what its jobs were given and used. Shares are fractions (0..1) of GPU-hours;
    efficiency and utilisation are None where no job of the group carries usage."""

    keys: Mapping[str, Any]
    jobs: int
    gpu_hours: float
    jobs_with_usage: int  # CPU usage known
    share_gpu_hours_with_cpu_usage: float
    share_gpu_hours_with_gpu_usage: float
    mean_cores_per_gpu: float
    cpu_efficiency: float | None  # CPU seconds used / core-seconds allocated, over the group
    cpu_efficiency_p50: float | None  # the median job's
    busy_cores_per_gpu: float | None  # CPU seconds used per GPU-second
    gpu_util_mean_pct: float | None  # GPU-hour weighted
    gpu_util_peak_pct: float | None
    starved_jobs: int
    starved_gpu_hours: float
    share_gpu_hours_starved: float | None  # of the GPU-hours that have a verdict
    starved_usd: float | None  # starved GPU-hours at the GPU type's on-demand price
    over_provisioned_jobs: int
    over_provisioned_gpu_hours: float
    idle_core_hours: float

    def row(self) -> dict[str, Any]:
        d = asdict(self)
        keys = d.pop("keys")
        return {**keys, **d}


@dataclass(frozen=True)
class TrustAdvice:
    """Which estimate of starvation to trust for the data selected, and why."""

    trust: str  # 'usage' | 'allocation'
    share_gpu_hours_with_usage: float  # CPU and GPU usage both known
    reason: str


@dataclass(frozen=True)
class UsageReport:
    """A usage summary: groups, the overall group, the advice, and where efficiency saturates
    against cores per GPU (None when the data cannot say)."""

    by: tuple[str, ...]
    groups: tuple[UsageGroup, ...]
    overall: UsageGroup
    advice: TrustAdvice
    thresholds: UsageThresholds
    by_cores_per_gpu: tuple[UsageGroup, ...] = ()  # efficiency against cores per GPU
    saturates_at_cores_per_gpu: int | None = None

    def rows(self) -> list[dict[str, Any]]:
        return [g.row() for g in self.groups]

    def to_json(self) -> dict[str, Any]:
        return {
            "by": list(self.by),
            "thresholds": asdict(self.thresholds),
            "advice": asdict(self.advice),
            "overall": self.overall.row(),
            "saturates_at_cores_per_gpu": self.saturates_at_cores_per_gpu,
            "by_cores_per_gpu": [g.row() for g in self.by_cores_per_gpu],
            "groups": self.rows(),
        }


def _params(q: UsageQuery) -> dict[str, Any]:
    return facts_params(q, q.thresholds)


def _check(q: UsageQuery) -> None:
    q.thresholds.check()
    bad = [k for k in q.by if k not in GROUP_KEYS]
    if bad:
        raise UsageError(
            f"--by {', '.join(bad)}: not a group key; use one of {', '.join(GROUP_KEYS)}"
        )


def _fnum(v: Any) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def _groups(con: duckdb.DuckDBPyConnection, q: UsageQuery, by: Sequence[str]) -> list[UsageGroup]:
    """Usage per group of ``by``."""
    return _group_sets(con, q, [tuple(by)])[0]


# The group keys usage_months holds (a cell per value of each), and the filters it can apply.
TABLE_KEYS: tuple[str, ...] = (
    "gpu_type",
    "cluster",
    "partition",
    "month",
    "gpu_count",
    "cores_per_gpu_bin",
)


def table_answers(q: UsageQuery) -> bool:
    """Whether ``usage_months`` can answer ``q`` (given fresh cubes): groups of its keys, the
    default thresholds (its verdicts'), month-aligned bounds and no filter it lacks."""
    return (
        q.thresholds == UsageThresholds()
        and all(k in TABLE_KEYS for k in q.by)
        and not (q.states or q.accounts or q.users or q.min_gpus is not None)
        and all(_month_start(t) for t in (q.start, q.end))
    )


# The group keys usage_people_months holds: the people and where their jobs ran.
PEOPLE_TABLE_KEYS: tuple[str, ...] = (
    "cluster",
    "partition",
    "gpu_type",
    "month",
    "account",
    "user",
)


def people_table_answers(q: UsageQuery) -> bool:
    """Whether ``usage_people_months`` can answer ``q``'s groups (given fresh cubes): as
    :func:`table_answers`, with the keys of that table."""
    return (
        q.thresholds == UsageThresholds()
        and all(k in PEOPLE_TABLE_KEYS for k in q.by)
        and not (q.states or q.accounts or q.users or q.min_gpus is not None)
        and all(_month_start(t) for t in (q.start, q.end))
    )


def top_groups(
    con: duckdb.DuckDBPyConnection, q: UsageQuery, limit: int = 10, *, use_table: bool | None = None
) -> list[UsageGroup]:
    """The ``limit`` groups of ``q.by`` with the most GPU-hours in likely-starved jobs (then the
    most GPU-hours): the dashboard's table of who uses what. From ``usage_people_months`` when
    it answers ``q`` and the cubes are fresh (``use_table`` as in :func:`usage_summary`), where
    each figure is the jobs' own sum but the median job's efficiency is None (the table keeps
    no counts a person; :func:`usage_summary` takes it from the jobs); else every group of
    :func:`usage_summary`."""
    _check(q)
    if _reads_table(con, use_table, people_table_answers(q), "usage_people_months"):
        parts, _masks, _columns = _sets_sql([tuple(q.by)])
        sql = render("usage/summary_months", **parts, table="usage_people_months")
        params = {**_table_params(q), **_price_params(q)}
        groups = _usage_groups(_dict_rows(con.execute(sql, params)), q.by)
    else:
        groups = list(usage_summary(con, q, use_table=False).groups)
    return most_starved(groups, limit)


def most_starved(groups: Sequence[UsageGroup], limit: int = 10) -> list[UsageGroup]:
    """The ``limit`` groups with the most GPU-hours in likely-starved jobs, then GPU-hours."""
    return sorted(groups, key=lambda g: (-g.starved_gpu_hours, -g.gpu_hours))[:limit]


def _month_start(t: dt.datetime | None) -> bool:
    return t is None or (t.day == 1 and t.hour == t.minute == t.second == t.microsecond == 0)


def _sets_sql(
    sets: Sequence[tuple[str, ...]],
) -> tuple[dict[str, str], list[int], list[str]]:
    """The placeholders of usage/summary.sql for ``sets``, each set's grouping() value and the
    key columns."""
    columns = list(dict.fromkeys(k for by in sets for k in by))
    quoted = [quote_ident(k) for k in columns]
    # grouping() sets a column's bit (the first column's highest) where a row sums it away
    masks = [
        sum(1 << (len(columns) - 1 - i) for i, k in enumerate(columns) if k not in by)
        for by in sets
    ]
    parts = {
        "keys": "".join(f"{c}, " for c in quoted),
        "sets": ", ".join("(" + ", ".join(quote_ident(k) for k in by) + ")" for by in sets),
        "grouping": f"grouping({', '.join(quoted)})" if quoted else "0",
        "order": "".join(f", {c}" for c in quoted),
    }
    return parts, masks, columns


def _dict_rows(cur: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def _group_sets(
    con: duckdb.DuckDBPyConnection,
    q: UsageQuery,
    sets: Sequence[tuple[str, ...]],
    use_table: bool | None = None,
) -> list[list[UsageGroup]]:
    """Usage per group of each grouping in ``sets`` (distinct), in one pass over the facts, or
    over ``usage_months`` when it answers ``q`` and the cubes are fresh (``use_table`` None;
    True or False forces one). The table's figures are the same sums (up to the order floats
    are added in); the median job's efficiency (to the hundredth) comes from its cells' jobs
    counted by that value, only when the selection has a job with CPU usage (else it is None
    either way)."""
    parts, masks, columns = _sets_sql(sets)
    price_params = _price_params(q)
    if _reads_table(con, use_table, table_answers(q), "usage_months"):
        sql = render("usage/summary_months", **parts, table="usage_months")
        params = _table_params(q)
        rows = _dict_rows(con.execute(sql, {**params, **price_params}))
        if any(r["jobs_with_usage"] for r in rows):
            sets_eff = ", ".join(
                "(" + ", ".join([*(quote_ident(k) for k in by), "eff"]) + ")" for by in sets
            )
            medians = render(
                "usage/medians_months",
                keys=parts["keys"],
                grouping=parts["grouping"],
                order=parts["order"],
                sets_eff=sets_eff,
            )
            found = {
                (r["_set"], *(r[k] for k in columns)): r["cpu_efficiency_p50"]
                for r in _dict_rows(con.execute(medians, params))
            }
            for r in rows:
                r["cpu_efficiency_p50"] = found.get((r["_set"], *(r[k] for k in columns)))
    else:
        sql = render("usage/summary", facts=facts_sql(), **parts)
        rows = _dict_rows(con.execute(sql, {**_params(q), **price_params}))
    return [
        _usage_groups([r for r in rows if r["_set"] == mask], by)
        for by, mask in zip(sets, masks, strict=True)
    ]


_TABLE_PARAMS = ("start", "end", "partitions", "clusters", "gpu_types")


def _table_params(q: UsageQuery) -> dict[str, Any]:
    """The bound parameters a derived usage table's statements take: the filters it can apply."""
    return {k: v for k, v in _params(q).items() if k in _TABLE_PARAMS}


def _price_params(q: UsageQuery) -> dict[str, Any]:
    """$price_types / $price_usd: on-demand USD per GPU-hour by upper-case GPU type."""
    prices = {k.upper(): v for k, v in (q.usd_per_gpu_hour or _prices(q.pricing_file)).items()}
    return {"price_types": list(prices), "price_usd": list(prices.values())}


def _reads_table(
    con: duckdb.DuckDBPyConnection, use_table: bool | None, answers: bool, table: str
) -> bool:
    """Whether to read the derived ``table`` (``answers``: it can answer the query): when fresh,
    by default; forced with ``use_table``, refused where it cannot answer."""
    if use_table is None:
        return answers and cube_is_fresh(con)
    if use_table and not answers:
        raise UsageError(f"{table} answers only its keys, month bounds, default thresholds")
    return use_table


def _usage_groups(rows: Sequence[dict[str, Any]], by: Sequence[str]) -> list[UsageGroup]:
    out = []
    for r in rows:
        out.append(
            UsageGroup(
                keys={k: r[k] for k in by},
                jobs=int(r["jobs"]),
                gpu_hours=float(r["gpu_hours"] or 0.0),
                jobs_with_usage=int(r["jobs_with_usage"] or 0),
                share_gpu_hours_with_cpu_usage=float(r["share_cpu"] or 0.0),
                share_gpu_hours_with_gpu_usage=float(r["share_gpu"] or 0.0),
                mean_cores_per_gpu=float(r["mean_cores_per_gpu"] or 0.0),
                cpu_efficiency=_fnum(r["cpu_efficiency"]),
                cpu_efficiency_p50=_fnum(r["cpu_efficiency_p50"]),
                busy_cores_per_gpu=_fnum(r["busy_cores_per_gpu"]),
                gpu_util_mean_pct=_fnum(r["gpu_util_mean_pct"]),
                gpu_util_peak_pct=_fnum(r["gpu_util_peak_pct"]),
                starved_jobs=int(r["starved_jobs"] or 0),
                starved_gpu_hours=float(r["starved_gpu_hours"] or 0.0),
                share_gpu_hours_starved=_fnum(r["share_starved"]),
                starved_usd=_fnum(r["starved_usd"]) if r["all_priced"] else None,
                over_provisioned_jobs=int(r["over_jobs"] or 0),
                over_provisioned_gpu_hours=float(r["over_gpu_hours"] or 0.0),
                idle_core_hours=float(r["idle_core_hours"] or 0.0),
            )
        )
    return out


def _prices(pricing_file: str | None) -> dict[str, float]:
    """USD per GPU-hour of each GPU type's reference instance (the first of its type)."""
    from advisor.pricing import load_pricing

    return prices_of(load_pricing(pricing_file))


def prices_of(book: Any) -> dict[str, float]:
    """USD per GPU-hour by GPU type (upper case) of a :class:`advisor.pricing.PriceBook`."""
    out: dict[str, float] = {}
    for inst in book.instances:
        out.setdefault(inst.gpu_type.upper(), inst.usd_per_gpu_hour)
    return out


def _empty_group() -> UsageGroup:
    return UsageGroup(
        {}, 0, 0.0, 0, 0.0, 0.0, 0.0, None, None, None, None, None, 0, 0.0, None, None, 0, 0.0, 0.0
    )


def advice(overall: UsageGroup, thresholds: UsageThresholds) -> TrustAdvice:
    """Trust usage when CPU and GPU usage cover at least ``trust_coverage`` of the GPU-hours:
    then starvation is seen (saturated cores with idle GPUs), not inferred from cores given.
    Else the allocation-based estimate (cores per GPU against the model) is all there is."""
    both = min(overall.share_gpu_hours_with_cpu_usage, overall.share_gpu_hours_with_gpu_usage)
    need = thresholds.trust_coverage
    if overall.gpu_hours <= 0:
        return TrustAdvice("allocation", 0.0, "no GPU-hours selected")
    if both >= need:
        return TrustAdvice(
            "usage",
            both,
            f"{100 * both:.0f}% of GPU-hours carry CPU and GPU usage (at least "
            f"{100 * need:.0f}%): starvation is measured, not inferred from the allocation",
        )
    if overall.share_gpu_hours_with_cpu_usage >= need:
        why = (
            f"CPU usage covers {100 * overall.share_gpu_hours_with_cpu_usage:.0f}% of GPU-hours "
            f"but GPU utilisation only {100 * overall.share_gpu_hours_with_gpu_usage:.0f}%: "
            "saturated cores are seen, idle GPUs are not (enable gres/gpuutil in "
            "AccountingStorageTRES, or jobstats)"
        )
    elif overall.share_gpu_hours_with_cpu_usage > 0:
        why = (
            f"usage covers only {100 * both:.0f}% of GPU-hours (under {100 * need:.0f}%): "
            "too few jobs to speak for the cluster"
        )
    else:
        why = (
            "no usage fields loaded (TotalCPU, TRESUsageInTot/Max, jobstats AdminComment): "
            "only what jobs were given is known"
        )
    return TrustAdvice("allocation", both, why)


def usage_summary(
    con: duckdb.DuckDBPyConnection, q: UsageQuery, *, use_table: bool | None = None
) -> UsageReport:
    """Usage per group of ``q.by`` (and overall), with the trust advice; from the derived table
    ``usage_months`` when it can answer (``use_table`` as in :func:`_group_sets`)."""
    _check(q)
    sets = list(dict.fromkeys([tuple(q.by), (), ("cores_per_gpu_bin",)]))
    found = dict(zip(sets, _group_sets(con, q, sets, use_table), strict=True))
    groups = found[tuple(q.by)]
    overall_rows = found[()]
    overall = overall_rows[0] if overall_rows else _empty_group()
    bins = found[("cores_per_gpu_bin",)]
    return UsageReport(
        q.by,
        tuple(groups),
        overall,
        advice(overall, q.thresholds),
        q.thresholds,
        tuple(bins),
        saturation_cores_per_gpu(bins),
    )


def job_usage(
    con: duckdb.DuckDBPyConnection,
    q: UsageQuery,
    *,
    verdict: str | None = None,
    limit: int | None = 100,
) -> list[dict[str, Any]]:
    """Per job: what it was given and used, its verdict and the evidence (a sentence with the
    numbers). ``verdict`` selects one of VERDICTS; jobs with the most GPU-hours first."""
    _check(q)
    if verdict is not None and verdict not in VERDICTS:
        raise UsageError(f"--verdict {verdict!r}: use one of {', '.join(VERDICTS)}")
    if limit is not None and limit < 0:
        raise UsageError("--limit must be 0 or more")
    sql = render("usage/jobs", facts=facts_sql())
    cur = con.execute(sql, {**_params(q), "verdict": verdict, "lim": limit})
    names = [d[0] for d in cur.description or []]
    out = []
    for row in cur.fetchall():
        r = dict(zip(names, row, strict=True))
        for k in ("submit", "start"):
            if isinstance(r[k], dt.datetime):
                r[k] = r[k].isoformat(timespec="seconds") + "Z"
        r["evidence"] = evidence(r, q.thresholds)
        out.append(r)
    return out


def starved_mix(
    con: duckdb.DuckDBPyConnection, q: UsageQuery, *, use_table: bool | None = None
) -> list[dict[str, Any]]:
    """The jobs of ``q`` whose usage looks starved, one row per cluster, partition, GPU type,
    CPUs and GPUs with their GPU-hours and elapsed seconds summed (usage/starved_mix.sql): what
    the loss model needs of them, in rows a shape, not a job. From the derived table
    ``usage_starved_months`` when it answers ``q`` (``use_table`` as in :func:`usage_summary`)."""
    _check(q)
    if _reads_table(con, use_table, table_answers(q), "usage_starved_months"):
        cur = con.execute(query("usage/starved_mix_months"), _table_params(q))
    else:
        cur = con.execute(render("usage/starved_mix", facts=facts_sql(), month=""), _params(q))
    names = [d[0] for d in cur.description or []]
    return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]


def evidence(r: Mapping[str, Any], t: UsageThresholds) -> str:
    """The numbers behind a job's verdict, as one sentence."""
    eff, util = r.get("cpu_efficiency"), r.get("gpu_util_mean_pct")
    cpg = r.get("cores_per_gpu") or 0.0
    if eff is None:
        return "no CPU usage recorded"
    parts = [f"{100 * eff:.0f}% of {r.get('cpus')} cores busy ({cpg:g} per GPU)"]
    if util is not None:
        peak = r.get("gpu_util_max_pct")
        parts.append(
            f"GPUs {util:.0f}% busy on average"
            + (f", {peak:.0f}% at peak" if peak is not None else "")
        )
    else:
        parts.append("GPU utilisation not recorded")
    v = r.get("verdict")
    if v == "starved":
        parts.append(
            f"cores at or above {100 * t.starved_cpu_eff:.0f}% with GPUs at or below "
            f"{t.starved_gpu_util_pct:g}%: likely CPU-starved"
        )
    elif v == "over_provisioned":
        idle = r.get("idle_cores_per_gpu") or 0.0
        parts.append(
            f"{idle:.1f} idle cores per GPU (>= {t.idle_cores_per_gpu:g}): over-provisioned"
        )
    elif v is None and (r.get("elapsed_s") or 0) < t.min_elapsed_s:
        parts.append(f"shorter than {t.min_elapsed_s} s: no verdict")
    return "; ".join(parts)


@dataclass(frozen=True)
class ClusterUsage:
    """Which usage a cluster's GPU jobs carry, and from when (times UTC)."""

    cluster: str
    gpu_jobs: int
    jobs_with_cpu_usage: int
    jobs_with_gpu_usage: int
    share_gpu_hours_with_cpu_usage: float
    share_gpu_hours_with_gpu_usage: float
    first_start_with_usage: dt.datetime | None
    last_start_with_usage: dt.datetime | None
    sources: tuple[str, ...]
    note: str


def usage_coverage(con: duckdb.DuckDBPyConnection) -> list[ClusterUsage]:
    """Per cluster: GPU jobs with usage data, their share of GPU-hours, and the span they cover."""
    out = []
    for r in con.execute(query("usage/coverage")).fetchall():
        cluster, gpu_jobs, n_cpu, n_gpu, s_cpu, s_gpu, first, last, sources = r
        if not n_cpu and not n_gpu:
            note = "no usage data: CPU efficiency and starvation evidence unavailable (NULL)"
        elif not n_gpu:
            note = "CPU usage only: no GPU utilisation (gres/gpuutil or jobstats)"
        else:
            note = "CPU and GPU usage"
        out.append(
            ClusterUsage(
                str(cluster),
                int(gpu_jobs),
                int(n_cpu),
                int(n_gpu),
                float(s_cpu or 0.0),
                float(s_gpu or 0.0),
                first,
                last,
                tuple(sources or ()),
                note,
            )
        )
    return out


def saturation_cores_per_gpu(groups: Sequence[UsageGroup], gain: float = 0.1) -> int | None:
    """Where busy cores per GPU stop growing with cores given: the first cores-per-GPU bin
    whose next bin adds less than ``gain`` (a fraction) of busy cores per GPU. ``groups`` are
    grouped by ``cores_per_gpu_bin`` alone; None when fewer than two bins carry usage."""
    pts = sorted(
        (int(g.keys["cores_per_gpu_bin"]), g.busy_cores_per_gpu)
        for g in groups
        if g.busy_cores_per_gpu is not None and g.keys.get("cores_per_gpu_bin") is not None
    )
    if len(pts) < 2:
        return None
    for (c0, b0), (_c1, b1) in zip(pts, pts[1:], strict=False):
        if b1 < b0 * (1 + gain):
            return c0
    return None


# --- closing the loop with the model -------------------------------------------------------

ModelFn = Callable[[str, int, float], bool | None]


def model_needs_more_cores(gpu_type: str, gpus: int, cores_per_gpu: float) -> bool | None:
    """The adapter to the model: whether it predicts that a job of ``gpus`` ``gpu_type`` GPUs
    with ``cores_per_gpu`` cores is short of CPU (its recommendation is above what it has), or
    None when the model cannot say (a job it refuses, no fitted curve, a changed API)."""
    try:
        from advisor import recommend

        rec = recommend.recommend_job(
            recommend.JobQuery(gpu_type=gpu_type, gpus=gpus, current_cpus_per_gpu=cores_per_gpu)
        )
        wanted = getattr(rec, "cpus_per_gpu", None)
        if wanted is None:
            return None
        return float(wanted) > float(cores_per_gpu)
    except Exception:  # noqa: BLE001 (the model is being rewritten: no answer, not a crash)
        return None


@dataclass(frozen=True)
class ModelAgreement:
    """Per GPU type: how often the model's verdict at a job's allocation (short of CPU or not)
    matches the job's measured saturation (CPU efficiency >= the starved threshold)."""

    gpu_type: str
    jobs: int  # jobs with CPU usage and a model answer
    agree: int
    both_short: int  # model short of CPU, cores measured saturated
    model_only: int  # model short of CPU, cores not saturated
    measured_only: int  # cores saturated, model not short of CPU
    share_agree: float | None
    no_model_answer: int


def model_agreement(
    con: duckdb.DuckDBPyConnection, q: UsageQuery, model: ModelFn = model_needs_more_cores
) -> list[ModelAgreement]:
    """Compare the model with measured CPU efficiency, per GPU type, over jobs with usage.
    The model is asked once per distinct (GPU type, GPUs, cores per GPU)."""
    _check(q)
    sql = render("usage/model_cells", facts=facts_sql())
    cells = con.execute(sql, _params(q)).fetchall()
    answers: dict[tuple[str, int, float], bool | None] = {}
    acc: dict[str, list[int]] = {}
    for gpu_type, gpus, cpg, saturated, n in cells:
        key = (str(gpu_type), int(gpus), float(cpg))
        if key not in answers:
            answers[key] = model(*key)
        a = acc.setdefault(str(gpu_type), [0, 0, 0, 0, 0, 0])
        says = answers[key]
        if says is None:
            a[5] += n
            continue
        a[0] += n
        a[1] += n if says == bool(saturated) else 0
        a[2] += n if says and saturated else 0
        a[3] += n if says and not saturated else 0
        a[4] += n if saturated and not says else 0
    return [
        ModelAgreement(t, a[0], a[1], a[2], a[3], a[4], a[1] / a[0] if a[0] else None, a[5])
        for t, a in sorted(acc.items())
    ]


# Usage columns ``advisor ratios --usage`` adds to each ratio group.
RATIO_USAGE_COLUMNS: tuple[str, ...] = (
    "share_gpu_hours_with_cpu_usage",
    "cpu_efficiency",
    "busy_cores_per_gpu",
    "gpu_util_mean_pct",
    "share_gpu_hours_starved",
    "starved_usd",
    "over_provisioned_jobs",
)


def ratios_with_usage(
    con: duckdb.DuckDBPyConnection, rq: Any, thresholds: UsageThresholds = UsageThresholds()
) -> list[dict[str, Any]]:
    """The rows of :func:`advisor.ratios.ratio_summary` for ``rq`` (a RatioQuery), each with
    the usage figures of the same group (RATIO_USAGE_COLUMNS; None where no job carries usage)."""
    from advisor import ratios

    bad = [k for k in rq.by if k not in GROUP_KEYS]
    if bad:
        raise UsageError(
            f"--usage cannot group by {', '.join(bad)}; group by {', '.join(GROUP_KEYS)}"
        )
    uq = UsageQuery(by=tuple(rq.by), thresholds=thresholds, **rq.job_filters())
    _check(uq)
    by_key = {tuple(g.keys[k] for k in uq.by): g.row() for g in _groups(con, uq, uq.by)}
    out = []
    for r in ratios.ratio_summary(con, rq).rows():
        u = by_key.get(tuple(r[k] for k in uq.by), {})
        out.append({**r, **{c: u.get(c) for c in RATIO_USAGE_COLUMNS}})
    return out
