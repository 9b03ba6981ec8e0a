"""Ratio summaries, rankings below a target and distributions, read off the facts that
:mod:`advisor.ratios.planning` selects; the figures are computed with numpy (:func:`_table`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt

from advisor.errors import StoreError, UsageError
from advisor.filters import query_params
from advisor.quantiles import grouped_job_percentiles
from advisor.ratios.planning import (
    PEOPLE_KEYS,
    Digit,
    check_query,
    choose_source,
    distribution_sql,
    facts_for,
    facts_sql,
    grouped_sql,
    people_cube_query,
    people_digits,
    people_facts,
    people_group_number,
    people_radix,
    people_summary_cube,
)
from advisor.ratios.records import (
    DEFAULT_BIN_EDGES,
    EXCLUSION_REASONS,
    QUANTILES,
    BelowTargetGroup,
    BelowTargetReport,
    DistributionGroup,
    EcdfPoint,
    HistogramBin,
    NodeType,
    RatioDistribution,
    RatioQuery,
    RatioReport,
    RatioTable,
    TargetQuery,
    Weight,
)
from advisor.store import query, quote_ident, render


def _fetch(
    con: duckdb.DuckDBPyConnection, sql: str, params: Mapping[str, Any]
) -> list[dict[str, Any]]:
    cur = con.execute(sql, dict(params))
    cols = [d[0] for d in cur.description or ()]
    return [dict(zip(cols, row, strict=True)) for row in cur.fetchall()]


def _keys_of(row: Mapping[str, Any], by: Sequence[str]) -> dict[str, Any]:
    return {k: row[k] for k in by}


def excluded_counts(
    con: duckdb.DuckDBPyConnection, q: RatioQuery, *, use_cube: bool | None = None
) -> dict[str, int]:
    """Jobs that passed the filters but cannot count, by reason (reasons with zero omitted)."""
    check_query(q)
    sql = render("ratios/excluded", facts=facts_for(con, q, use_cube))
    rows = con.execute(sql, query_params(q)).fetchall()
    return {str(r): int(n) for r, n in rows}


def ratio_summary(
    con: duckdb.DuckDBPyConnection,
    q: RatioQuery | None = None,
    *,
    use_cube: bool | None = None,
) -> RatioReport:
    """Per group of ``q.by``: jobs, GPU-hours, P10..P90 and mean cores per GPU (weighted by
    ``q.weight``), shares of jobs and GPU-hours below each threshold, and the fair share.

    Groups are ordered by their keys (NULLs last). An empty selection gives no groups.
    ``use_cube``: None (default) reads a pre-aggregated cube (``ratio_cube``, or the people
    cubes for account/user queries) when one can answer the query and is fresh, rebuilding it
    first on a writable connection; True always uses it when it can answer (rebuilding a TEMP
    copy on a read-only connection); False never does.
    The answer is the same either way.
    """
    q = q or RatioQuery()
    check_query(q)
    table, excluded = _summarise(con, q, choose_source(con, q, use_cube))
    return RatioReport(table=table, excluded=excluded, query=q)


def _summarise(
    con: duckdb.DuckDBPyConnection, q: RatioQuery, kind: str
) -> tuple[RatioTable, dict[str, int]]:
    """The figures of every group of ``q`` from the facts of one :func:`choose_source` kind, and the
    exclusions: from a people cube on integer group numbers where they fit a BIGINT, else by
    name."""
    if kind == "people":
        digits = people_digits(con, q)
        if digits is not None:
            return _summary_people(con, q, digits)
        return _summary(con, q, people_facts(q))
    return _summary(con, q, facts_sql(kind, q))


def _summary(
    con: duckdb.DuckDBPyConnection, q: RatioQuery, facts: str
) -> tuple[RatioTable, dict[str, int]]:
    """ratios/summary over ``facts``: the figures of every group, in key order, and the
    exclusions by reason."""
    keys = q.by or ("_all",)
    sql = grouped_sql(
        "summary",
        q.by,
        facts,
        excluded_keys=", ".join(
            f"CASE WHEN excluded_reason IS NULL THEN {quote_ident(k)} END AS {quote_ident(k)}"
            for k in keys
        ),
    )
    params = {**query_params(q), "reasons": list(EXCLUSION_REASONS)}
    rows = con.execute(sql, params).fetchnumpy()
    counted, excluded = _split_excluded(rows)
    g = np.ma.getdata(rows["_g"][:counted]).astype(np.int64)
    starts = np.flatnonzero(np.diff(g, prepend=g[:1] - 1))
    names = {k: np.ma.asarray(rows[k][:counted])[starts].tolist() for k in q.by}
    return _table(q, names, starts, rows, counted), excluded


def _summary_people(
    con: duckdb.DuckDBPyConnection,
    q: RatioQuery,
    digits: Sequence[Digit],
) -> tuple[RatioTable, dict[str, int]]:
    """ratios/summary_people: the figures of every group, summed on integers from a people
    cube and named afterwards (``digits``: :func:`people_digits`)."""
    cube, conditions, ratio = people_summary_cube(q)
    inventory = con.execute("SELECT count(*) > 0 FROM ratio_fair_share").fetchone()
    fs = bool(inventory and inventory[0])
    # 32-bit arithmetic where the numbers fit: DuckDB groups and sorts them faster
    kind = "INTEGER" if math.prod(d.radix for d in digits) < 2**31 else "BIGINT"
    gid = people_group_number({d.key: d.radix for d in digits if d.key in PEOPLE_KEYS}, kind)[0]
    key = "g.gid"
    for d in digits:
        if d.key not in PEOPLE_KEYS:
            key = f"({key}) * {d.radix} + ({d.sql})::{kind}"
    sql = render(
        "ratios/summary_people",
        people_where=query("ratios/people_where"),
        cube=cube,
        conditions=conditions,
        ratio=ratio,
        key=key,
        gid=f"({gid})::{kind}",
        fs=", fair.fair_share_cores_per_gpu" if fs else "",
        fs_column=(
            ", CASE WHEN c.excluded_reason IS NULL THEN g.fair_share_cores_per_gpu END"
            " AS fair_share_cores_per_gpu"
            if fs
            else ""
        ),
    )
    params = {**query_params(q), "reasons": list(EXCLUSION_REASONS)}
    labels = next((d.labels for d in digits if d.key == "interactive"), None)
    if labels is not None:
        params["labels"] = list(labels)
    if cube == "ratio_cube_people_month_ratios":
        del params["states"], params["min_gpus"]
    rows = con.execute(sql, params).fetchnumpy()
    counted, excluded = _split_excluded(rows)
    k = np.ma.getdata(rows["k"][:counted]).astype(np.int64)
    starts = np.flatnonzero(np.diff(k, prepend=k[:1] - 1))
    # each group's digits, decoded from its number: the people keys' ids (ranks, NULL last),
    # months since year 0, GPU counts, label positions
    code = k[starts]
    part: dict[str, npt.NDArray[np.int64]] = {}
    for d in reversed(digits):
        part[d.key] = code % d.radix
        code = code // d.radix
    keys: dict[str, list[Any]] = {}
    for d in digits:
        if d.key in PEOPLE_KEYS:
            keys[d.key] = people_names(con, d.key)[part[d.key]].tolist()
        elif d.key == "month":
            months, at = np.unique(part[d.key], return_inverse=True)
            text = [f"{m // 12:04d}-{m % 12 + 1:02d}" for m in months.tolist()]
            keys[d.key] = np.array(text, dtype=object)[at].tolist()
        elif d.key == "interactive":
            keys[d.key] = np.array(d.labels, dtype=object)[part[d.key]].tolist()
        else:
            keys[d.key] = part[d.key].tolist()
    table = _table(q, {b: keys[b] for b in q.by}, starts, rows, counted)
    if [d.key for d in digits] != list(q.by):  # numbered in another key order: sort by q.by's
        table = _take(table, np.lexsort([part[b] for b in reversed(q.by)]))
    return table, excluded


def people_names(con: duckdb.DuckDBPyConnection, key: str) -> npt.NDArray[Any]:
    """The values of one people key indexed by their id (ratios/people_names)."""
    sql = render("ratios/people_names", id=f"{key}_id", key=quote_ident(key))
    rows = con.execute(sql).fetchall()
    names = np.full(max((r[0] for r in rows), default=0) + 1, None, dtype=object)
    for i, name in rows:
        names[i] = name
    return names


def _split_excluded(rows: Mapping[str, Any]) -> tuple[int, dict[str, int]]:
    """How many leading rows of a summary's result are counted rows (a ratio, cores_per_gpu > 0), and the
    jobs of the trailing ones (cores_per_gpu = minus the position of the reason in EXCLUSION_REASONS) by
    exclusion reason."""
    v = np.ma.filled(np.ma.asarray(rows["cores_per_gpu"]).astype(np.float64), np.nan)
    counted = int(np.count_nonzero(v > 0))
    codes = v[counted:]
    if np.isnan(codes).any():  # a reason missing from EXCLUSION_REASONS: never drop its jobs
        raise StoreError("a ratio cube holds an exclusion reason advisor does not know")
    n = np.ma.getdata(rows["jobs"][counted:]).tolist()
    reasons = zip([EXCLUSION_REASONS[int(-c) - 1] for c in codes.tolist()], n, strict=True)
    return counted, dict(sorted(reasons))  # by reason, as they are reported


def _table(
    q: RatioQuery,
    keys: Mapping[str, list[Any]],
    starts: npt.NDArray[np.int64],
    rows: Mapping[str, Any],
    counted: int,
) -> RatioTable:
    """The figures of groups whose rows start at ``starts`` in a summary's result (rows sorted by
    group, then ratio; see ratios/summary), all groups at once:

    - by jobs, percentiles interpolate linearly between order statistics (numpy's default
      "linear", DuckDB's quantile_cont): h = (n - 1) q, x[floor h] + (h - floor h)(x[floor h +
      1] - x[floor h]), in numpy's two-sided form for rounding;
    - by GPU-seconds, the weighted inverted CDF (numpy.percentile(method="inverted_cdf",
      weights=...)): the smallest ratio whose running GPU-second share reaches q;
    - shares below a threshold count ratios strictly below it.
    """
    thresholds = tuple(sorted({float(t) for t in q.thresholds_cores_per_gpu}))
    v = np.ma.getdata(rows["cores_per_gpu"][:counted]).astype(np.float64, copy=False)
    n = np.ma.getdata(rows["jobs"][:counted]).astype(np.int64, copy=False)
    w = np.ma.getdata(rows["gpu_seconds"][:counted]).astype(np.int64, copy=False)
    size = len(starts)  # none: every figure is an empty array
    ends = np.append(starts[1:], counted).astype(np.int64)
    jobs = np.add.reduceat(n, starts)
    gpu_s = np.add.reduceat(w, starts)
    gpu_s_f = gpu_s.astype(np.float64)
    weighed = np.where(gpu_s > 0, gpu_s_f, np.nan)  # NaN where no GPU-seconds weigh
    run_w = np.cumsum(w)  # running GPU-seconds over all rows: a group's are these less its base
    pct = np.full((size, len(QUANTILES)), np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        if q.weight is Weight.gpu_hours:
            group = np.repeat(np.arange(size), ends - starts)
            share = (run_w - (run_w[starts] - w[starts])[group]).astype(np.float64) / gpu_s_f[group]
            for j, qq in enumerate(QUANTILES):
                # rows whose running share reaches q; a group's first is the first at or after
                # its start, if before its end (else none is its own: a later group's, or the
                # last hit of all, before the start, where no later one exists)
                hit = np.flatnonzero(share >= qq)
                at = (
                    hit[np.minimum(np.searchsorted(hit, starts), len(hit) - 1)]
                    if len(hit)
                    else ends
                )
                found = (at >= starts) & (at < ends)
                pct[found, j] = v[at[found]]
            mean = np.add.reduceat(v * w, starts) / weighed
        else:
            pct = grouped_job_percentiles(v, n, starts, QUANTILES)
            mean = np.add.reduceat(v * n, starts) / jobs
        n_below = np.zeros((size, len(thresholds)), dtype=np.int64)
        w_below = np.zeros((size, len(thresholds)), dtype=np.int64)
        for j, t in enumerate(thresholds):
            n_below[:, j] = np.add.reduceat(np.where(v < t, n, 0), starts)
            w_below[:, j] = np.add.reduceat(np.where(v < t, w, 0), starts)
        if (
            "fair_share_cores_per_gpu" in rows
        ):  # the fair share, where the node inventory knows the job's node type
            fs = np.ma.asarray(rows["fair_share_cores_per_gpu"][:counted]).astype(np.float64)
            fs = np.ma.filled(fs, np.nan)
            below_fs = v < fs  # False where it is unknown
            n_fs = np.add.reduceat(np.where(np.isnan(fs), 0, n), starts)
            w_fs = np.add.reduceat(np.where(np.isnan(fs), 0, w), starts).astype(np.float64)
            fair = np.fmin.reduceat(fs, starts)
            n_below_fs = np.add.reduceat(np.where(below_fs, n, 0), starts) / np.where(
                n_fs > 0, n_fs, np.nan
            )
            w_below_fs = np.add.reduceat(np.where(below_fs, w, 0), starts) / np.where(
                w_fs > 0, w_fs, np.nan
            )
        else:  # no inventory: the summary SQL left the column out
            fair = n_below_fs = w_below_fs = np.full(size, np.nan)
            n_fs = np.zeros(size, dtype=np.int64)
        return RatioTable(
            keys=keys,
            thresholds=thresholds,
            jobs=jobs,
            gpu_hours=gpu_s_f / 3600.0,
            percentiles=pct,
            mean=mean,
            share_jobs_below=n_below / jobs[:, None],
            share_gpu_hours_below=w_below / weighed[:, None],
            fair_share=fair,
            jobs_with_fair_share=n_fs,
            share_jobs_below_fair_share=n_below_fs,
            share_gpu_hours_below_fair_share=w_below_fs,
        )


def _take(t: RatioTable, order: npt.NDArray[np.int64]) -> RatioTable:
    """``t`` with its groups in ``order``: every array field indexed by it."""
    arrays = {f.name: getattr(t, f.name)[order] for f in fields(t) if f.name not in _NOT_ARRAYS}
    keys = {k: [v[i] for i in order.tolist()] for k, v in t.keys.items()}
    return RatioTable(keys=keys, thresholds=t.thresholds, **arrays)


_NOT_ARRAYS = frozenset({"keys", "thresholds"})
"""The fields of RatioTable that are not one array entry per group."""


def check_target_query(tq: TargetQuery) -> None:
    """Refuse a :class:`TargetQuery` :func:`below_target` cannot answer, saying why."""
    q = tq.ratios
    check_query(q)
    if tq.top < 1:
        raise UsageError(f"top must be 1 or more, got {tq.top}")
    if (tq.fixed_cores_per_gpu is None) == (not tq.targets_cores_per_gpu):
        raise UsageError("give either one target per partition and GPU type, or a fixed one")
    targets = [float(t[2]) for t in tq.targets_cores_per_gpu]
    if tq.fixed_cores_per_gpu is not None:
        targets = [float(tq.fixed_cores_per_gpu)]
    for t in targets:
        if not (math.isfinite(t) and t > 0):
            raise UsageError(f"target {t!r} is not a positive number of cores per GPU")
    if tq.targets_cores_per_gpu and not {"partition", "gpu_type"} <= set(q.by):
        raise UsageError("targets per partition and GPU type need both among the group keys")


def below_target(
    con: duckdb.DuckDBPyConnection, tq: TargetQuery, *, use_cube: bool | None = None
) -> BelowTargetReport:
    """The groups of ``tq.ratios.by`` with the most GPU-hours strictly below their target (see
    :class:`TargetQuery`), each with its full summary, as :func:`ratio_summary` gives it.

    Groups are ranked first on the cube's integer counts (GPU-seconds below the target per
    group, no percentiles); percentiles are then computed for the top ``tq.top`` groups only,
    which is what keeps a ranking of 100k (user, partition, GPU type) groups fast. The answer is
    the same as ranking a full :func:`ratio_summary` (``use_cube`` as there).
    """
    check_target_query(tq)
    q = tq.ratios
    params: dict[str, Any] = {
        **query_params(q),
        "target_partitions": [t[0] for t in tq.targets_cores_per_gpu],
        "target_gpu_types": [t[1] for t in tq.targets_cores_per_gpu],
        "target_values": [float(t[2]) for t in tq.targets_cores_per_gpu],
        "fixed": tq.fixed_cores_per_gpu,
        "top": tq.top,
    }
    kind = choose_source(con, q, use_cube)
    facts = facts_sql(kind, q)
    people = kind == "people" and set(q.by) <= PEOPLE_KEYS
    if people:
        names = ", ".join(f"any_value(p.{quote_ident(k)}) AS {quote_ident(k)}" for k in q.by)
        sql = people_cube_query(
            "ratios/below_target_people",
            q,
            gid=people_group_number(people_radix(con, q.by))[0],
            names=names or "TRUE AS _all",
        )
        rows = _fetch(con, sql, params)
        inventory = con.execute("SELECT count(*) > 0 FROM ratio_fair_share").fetchone()
        return below_target_report(tq, rows, inventory=bool(inventory and inventory[0]))
    rows = _fetch(con, grouped_sql("below_target", q.by, facts), params)
    return below_target_report(tq, rows, summarise=lambda sq: _summarise(con, sq, kind)[0])


def below_target_report(
    tq: TargetQuery,
    rows: Sequence[Mapping[str, Any]],
    *,
    inventory: bool = False,
    summarise: Callable[[RatioQuery], RatioTable] | None = None,
) -> BelowTargetReport:
    """The report of ranking rows as ratios/below_target_people gives them: the top groups
    (``gid`` 1, 2, ...; their keys, ``target``, ``n_below``, ``w_below`` and their summary rows
    as ``dist_*`` lists, summarised here; ``inventory``: whether the node inventory has rows)
    and one row with ``gid`` None (``groups``, ``excluded``). ``summarise`` instead gives the
    figures of every group of a query (ratios/below_target's rows carry no ``dist_*``)."""
    q = tq.ratios
    info = next(r for r in rows if r["gid"] is None)
    top = sorted((r for r in rows if r["gid"] is not None), key=lambda r: int(r["gid"]))
    excluded = {str(e["reason"]): int(e["jobs"]) for e in info["excluded"] or ()}
    chosen: tuple[BelowTargetGroup, ...] = ()
    if top:
        sq = replace(
            q,
            thresholds_cores_per_gpu=tuple(sorted({float(r["target"]) for r in top})),
        )
        if summarise is None:  # each top group carries its rows of the summary
            groups = _top_groups_table(sq, top, inventory).groups()
        else:
            by_keys = {tuple(g.keys[k] for k in q.by): g for g in summarise(sq).groups()}
            groups = tuple(by_keys[tuple(r[k] for k in q.by)] for r in top)
        chosen = tuple(
            BelowTargetGroup(
                group=g,
                target_cores_per_gpu=float(r["target"]),
                jobs_below=int(r["n_below"]),
                gpu_hours_below=float(r["w_below"]) / 3600.0,
            )
            for g, r in zip(groups, top, strict=True)
        )
    return BelowTargetReport(
        groups=chosen, groups_counted=int(info["groups"]), excluded=excluded, query=tq
    )


def _top_groups_table(
    q: RatioQuery, top: Sequence[Mapping[str, Any]], inventory: bool
) -> RatioTable:
    """The figures of ratios/below_target_people's top groups (in their order) from the rows of
    the summary each carries (``dist_*`` lists, in ratio order), as ratios/summary_people would
    give them: the fair share only where the node inventory has any."""
    sizes = np.array([len(r["dist_ratio"]) for r in top], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)

    def column(name: str, dtype: Any) -> npt.NDArray[Any]:
        return np.array([v for r in top for v in r[name]], dtype=dtype)

    rows: dict[str, Any] = {
        "cores_per_gpu": column("dist_ratio", np.float64),
        "jobs": column("dist_jobs", np.int64),
        "gpu_seconds": column("dist_gpu_s", np.int64),
    }
    if inventory:
        rows["fair_share_cores_per_gpu"] = np.array(
            [np.nan if v is None else v for r in top for v in r["dist_fair"]], dtype=np.float64
        )
    names = {k: [r[k] for r in top] for k in q.by}
    return _table(q, names, starts, rows, int(sizes.sum()))


def ratio_distribution(
    con: duckdb.DuckDBPyConnection,
    q: RatioQuery | None = None,
    bins: Sequence[float] = DEFAULT_BIN_EDGES,
    *,
    use_cube: bool | None = None,
) -> RatioDistribution:
    """Per group of ``q.by``: a histogram of the ratio over ``bins`` (ascending lower edges in
    cores per GPU; the last bin is open; ratios below the first edge fall in the first bin) and
    the exact ECDF (one point per distinct ratio, jobs and GPU-hour shares at or below it).
    Computed in SQL; the output is small (bins x groups, distinct ratios x groups).
    ``use_cube`` as in :func:`ratio_summary`.
    """
    q = q or RatioQuery()
    check_query(q)
    edges = tuple(float(b) for b in bins)
    if not edges or any(not math.isfinite(e) for e in edges) or list(edges) != sorted(set(edges)):
        raise UsageError(f"bin edges must be finite, strictly ascending numbers, got {list(bins)}")
    params = query_params(q)
    facts = facts_for(con, q, use_cube)
    hist_sql = distribution_sql("histogram", q.by, facts)
    hist_rows = _fetch(con, hist_sql, {**params, "edges": list(edges)})
    ecdf_rows = _fetch(con, distribution_sql("ecdf", q.by, facts), params)
    hist: dict[int, list[HistogramBin]] = {}
    keys: dict[int, dict[str, Any]] = {}
    for r in hist_rows:
        gid = int(r["gid"])
        keys.setdefault(gid, _keys_of(r, q.by))
        hist.setdefault(gid, []).append(
            HistogramBin(
                lo_cores_per_gpu=float(r["lo"]),
                hi_cores_per_gpu=None if r["hi"] is None else float(r["hi"]),
                jobs=int(r["jobs"]),
                gpu_hours=float(r["gpu_s"]) / 3600.0,
            )
        )
    ecdf: dict[int, list[EcdfPoint]] = {}
    for r in ecdf_rows:
        gid = int(r["gid"])
        keys.setdefault(gid, _keys_of(r, q.by))
        ecdf.setdefault(gid, []).append(
            EcdfPoint(
                cores_per_gpu=float(r["cores_per_gpu"]),
                jobs=int(r["jobs"]),
                gpu_hours=float(r["gpu_s"] or 0) / 3600.0,
                share_jobs_at_or_below=float(r["share_jobs"]),
                share_gpu_hours_at_or_below=float(
                    r["share_gpu_s"] if r["share_gpu_s"] is not None else math.nan
                ),
            )
        )
    groups = tuple(
        DistributionGroup(
            keys=keys[gid], histogram=tuple(hist.get(gid, ())), ecdf=tuple(ecdf.get(gid, ()))
        )
        for gid in sorted(keys)
    )
    return RatioDistribution(groups=groups, query=q, bin_edges_cores_per_gpu=edges)


def fair_share(con: duckdb.DuckDBPyConnection, cluster: str | None = None) -> list[NodeType]:
    """Every GPU node type (cluster, GPU type, CPUs and GPUs per node) in the node inventory,
    with its node count and fair share of cores per GPU (usable CPUs / GPUs per node).
    ``cluster`` restricts to one cluster. Empty when no nodes were ingested.
    """
    rows = _fetch(con, query("ratios/fair_share"), {"cluster": cluster})
    return [
        NodeType(
            cluster=str(r["cluster"]),
            gpu_type=r["gpu_type"],
            cpus_per_node=int(r["cpus_per_node"]),
            gpus_per_node=int(r["gpus_per_node"]),
            nodes=int(r["nodes"]),
            cores_per_gpu=float(r["cores_per_gpu"]),
            partitions=tuple(r["partitions"] or ()),
        )
        for r in rows
    ]
