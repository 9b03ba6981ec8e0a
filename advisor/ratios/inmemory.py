"""The people cubes held in memory, for a long-lived reader (the dashboard) that ranks accounts
and users below a target on every click.

:func:`advisor.ratios.below_target` ranks in DuckDB: a pass over the per-pid cube joined to
its people, 100-200 ms on 4.65M jobs (docs/performance.md). A process that asks again and
again loads the cubes' rows once (:meth:`PeopleInMemory.load`, a few hundred ms and about 30
bytes a row) and ranks with numpy on integer group numbers, several times faster. It answers
the queries the people ranking answers (account/user keys among the people keys, month-aligned
bounds) without state or GPU-count filters, and gives the very same report, through the same
report builder (:func:`advisor.ratios.summaries.below_target_report`); any other query gets
None, for the caller to ask DuckDB.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import numpy.typing as npt

from advisor.derived.cube import cube_is_fresh, people_months_are_fresh
from advisor.errors import StoreError
from advisor.filters import utc_naive
from advisor.ratios.planning import PEOPLE_KEYS, cube_answers, people_cube_answers
from advisor.ratios.records import EXCLUSION_REASONS, BelowTargetReport, TargetQuery
from advisor.ratios.summaries import below_target_report, check_target_query, people_names
from advisor.store import query, render

_KEYS = ("cluster", "gpu_type", "partition", "account", "user")
MAX_ROWS = 10_000_000
"""The most cube rows :meth:`PeopleInMemory.load` holds (about 30 bytes each in memory)."""


@dataclass(frozen=True)
class _Rows:
    """One people cube's counted rows, or its excluded ones (``reason``: the position of their
    exclusion reason in EXCLUSION_REASONS, from 1); ``month`` (days since 1970) only from the
    per-month cube, in month order."""

    pid: npt.NDArray[np.int32]
    jobs: npt.NDArray[np.int64]
    gpu_seconds: npt.NDArray[np.int64]
    cores_per_gpu: npt.NDArray[np.float64]  # counted rows; empty for excluded ones
    reason: npt.NDArray[np.int8]  # excluded rows; empty for counted ones
    month: npt.NDArray[np.int32] | None = None

    def between(self, start: dt.datetime | None, end: dt.datetime | None) -> _Rows:
        """The rows whose month (a first day) is at or after the start's day and before the
        end's, as ratios/people_months_where compares them (a slice: no copy)."""
        assert self.month is not None
        lo = 0 if start is None else int(np.searchsorted(self.month, _day(start), "left"))
        hi = len(self.month) if end is None else int(np.searchsorted(self.month, _day(end)))
        part = slice(lo, hi)
        return _Rows(
            self.pid[part],
            self.jobs[part],
            self.gpu_seconds[part],
            self.cores_per_gpu[part],  # empty on excluded rows: stays empty
            self.reason[part],  # empty on counted rows: stays empty
            self.month[part],
        )


@dataclass(frozen=True)
class PeopleInMemory:
    """ratio_people (per pid: each key's id, and its values by id) and both people cubes."""

    ids: Mapping[str, npt.NDArray[np.int32]]  # per key: the id of each pid's value (index: pid)
    values: Mapping[str, npt.NDArray[Any]]  # per key: the value of each id (index: id)
    fair_share: npt.NDArray[np.float64]  # per pid: its node type's fair share, NaN: unknown
    inventory: bool  # whether the node inventory has any rows
    all_time: tuple[_Rows, _Rows]  # counted, excluded
    months: tuple[_Rows, _Rows]
    _groups_by: dict[tuple[str, ...], Any] = field(default_factory=dict, compare=False)

    @classmethod
    def load(
        cls, con: duckdb.DuckDBPyConnection, max_rows: int = MAX_ROWS
    ) -> PeopleInMemory | None:
        """The people cubes read through ``con``; None when they are not fresh (the caller
        then asks DuckDB, which rebuilds or reads the jobs) or hold more than ``max_rows``
        rows together."""
        if not (cube_is_fresh(con) and people_months_are_fresh(con)):
            return None
        sizes = con.execute(query("ratios/inmemory_size")).fetchone()
        if sizes is None or int(sizes[0]) > max_rows:
            return None
        people = con.execute(query("ratios/inmemory_people")).fetchnumpy()
        size = int(people["pid"].max()) + 1 if len(people["pid"]) else 1
        ids: dict[str, npt.NDArray[np.int32]] = {}
        values: dict[str, npt.NDArray[Any]] = {}
        for k in _KEYS:
            col = np.zeros(size, dtype=np.int32)
            col[people["pid"]] = people[f"{k}_id"]
            ids[k] = col
            values[k] = people_names(con, k)
        fair = np.full(size, np.nan)
        fair[people["pid"]] = np.ma.filled(
            np.ma.asarray(people["fair_share_cores_per_gpu"]).astype(np.float64), np.nan
        )
        inventory = con.execute("SELECT count(*) > 0 FROM ratio_fair_share").fetchone()
        return cls(
            ids=ids,
            values=values,
            fair_share=fair,
            inventory=bool(inventory and inventory[0]),
            all_time=_read_rows(con, "ratio_cube_people", months=False),
            months=_read_rows(con, "ratio_cube_people_months", months=True),
        )

    def below_target(self, tq: TargetQuery) -> BelowTargetReport | None:
        """:func:`advisor.ratios.below_target` of ``tq`` from memory, the same report; None
        for a query these rows cannot answer (state or GPU-count filters, other keys)."""
        check_target_query(tq)
        q = tq.ratios
        if (
            not q.by
            or not set(q.by) <= PEOPLE_KEYS
            or cube_answers(q)
            or not people_cube_answers(q)
            or q.states
            or q.min_gpus is not None
        ):
            return None
        keep = self._people_kept(q)  # None: every pid
        over_time = q.start is not None or q.end is not None
        counted, excluded = self.months if over_time else self.all_time
        if over_time:
            counted, excluded = counted.between(q.start, q.end), excluded.between(q.start, q.end)
        group_of, order, starts = self._groups(q.by)
        size = len(starts)
        target = self._targets(tq)
        # a group's target: the smallest of its people's (one, when targets are per partition
        # and GPU type, both among the keys); NaN where none has one
        group_target = np.fmin.reduceat(target[order], starts) if size else np.zeros(0)
        pid, jobs, gpu_s, cores = (
            counted.pid,
            counted.jobs,
            counted.gpu_seconds,
            counted.cores_per_gpu,
        )
        if keep is not None:
            mine = keep[pid]
            pid, jobs, gpu_s, cores = pid[mine], jobs[mine], gpu_s[mine], cores[mine]
        g = group_of[pid]
        below = cores < target[pid]  # False where there is no target (NaN)
        n = np.bincount(g, weights=jobs, minlength=size)
        w = np.bincount(g, weights=gpu_s, minlength=size)
        n_below = np.bincount(g, weights=np.where(below, jobs, 0), minlength=size)
        w_below = np.bincount(g, weights=np.where(below, gpu_s, 0), minlength=size)
        has_rows = np.bincount(g, minlength=size) > 0
        # most GPU-seconds below first; group numbers follow the keys' order, so ties do too
        ranked = np.flatnonzero(w_below > 0)
        ranked = ranked[np.lexsort((ranked, -w_below[ranked]))][: tq.top]
        out: list[dict[str, Any]] = []
        for rank, gi in enumerate(ranked.tolist(), start=1):
            head = int(order[starts[gi]])
            row: dict[str, Any] = {k: self.values[k][self.ids[k][head]] for k in q.by}
            row.update(
                gid=rank,
                target=float(group_target[gi]),
                jobs=int(n[gi]),
                gpu_s=float(w[gi]),
                n_below=int(n_below[gi]),
                w_below=float(w_below[gi]),
            )
            out.append(row)
        self._add_summary_rows(out, ranked, size, g, cores, pid, jobs, gpu_s)
        reason, ex_jobs = excluded.reason, excluded.jobs
        if keep is not None:
            mine = keep[excluded.pid]
            reason, ex_jobs = reason[mine], ex_jobs[mine]
        by_reason = np.bincount(reason, weights=ex_jobs, minlength=len(EXCLUSION_REASONS) + 1)
        out.append(
            {
                "gid": None,
                "groups": int(np.count_nonzero(has_rows)),
                "excluded": [
                    {"reason": name, "jobs": int(by_reason[i + 1])}
                    for i, name in sorted(enumerate(EXCLUSION_REASONS), key=lambda e: e[1])
                    if by_reason[i + 1] > 0
                ],
            }
        )
        return below_target_report(tq, out, inventory=self.inventory)

    def _people_kept(self, q: Any) -> npt.NDArray[np.bool_] | None:
        """Per pid: whether the query's people filters keep it (a missing value never matches
        a filter, as list_contains on NULL in ratios/people_where); None without filters."""
        keep: npt.NDArray[np.bool_] | None = None
        for key, wanted in (
            ("partition", q.partitions),
            ("cluster", q.clusters),
            ("gpu_type", q.gpu_types),
            ("account", q.accounts),
            ("user", q.users),
        ):
            if wanted:
                names = set(wanted)
                ok = np.array([v is not None and v in names for v in self.values[key].tolist()])
                kept = ok[self.ids[key]]
                keep = kept if keep is None else keep & kept
        return keep

    def _groups(
        self, by: Sequence[str]
    ) -> tuple[npt.NDArray[np.int32], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
        """Per pid, the number of its group of ``by`` (numbered in the order of the keys' ids,
        so in the order of the key values, missing ones last); every pid in group order, and
        where each group starts among them. Computed once per ``by``: no filter changes it."""
        key = tuple(by)
        if key not in self._groups_by:
            pids = np.flatnonzero(self.ids["cluster"] > 0)  # every pid (they count from 1)
            order = pids[np.lexsort([self.ids[k][pids] for k in reversed(by)])]
            keys = np.stack([self.ids[k][order] for k in by])
            new = np.any(np.diff(keys, axis=1, prepend=-1), axis=0)
            group_of = np.full(len(self.fair_share), -1, dtype=np.int32)
            group_of[order] = np.cumsum(new) - 1
            self._groups_by[key] = (group_of, order, np.flatnonzero(new))
        return self._groups_by[key]

    def _targets(self, tq: TargetQuery) -> npt.NDArray[np.float64]:
        """Per pid, its target (NaN: none), as ratios/below_target_people joins them."""
        size = len(self.fair_share)
        if tq.fixed_cores_per_gpu is not None:
            return np.full(size, float(tq.fixed_cores_per_gpu))
        by_pair = {(p, g): float(v) for p, g, v in tq.targets_cores_per_gpu}
        parts, gpus = self.values["partition"], self.values["gpu_type"]
        table = np.array(
            [[by_pair.get((p, g), np.nan) for g in gpus.tolist()] for p in parts.tolist()]
        ).reshape(len(parts), len(gpus))
        return table[self.ids["partition"], self.ids["gpu_type"]]

    def _add_summary_rows(
        self,
        out: list[dict[str, Any]],
        ranked: npt.NDArray[np.int64],
        size: int,
        g: npt.NDArray[np.integer[Any]],
        cores: npt.NDArray[np.float64],
        pid: npt.NDArray[np.integer[Any]],
        jobs: npt.NDArray[np.int64],
        gpu_s: npt.NDArray[np.int64],
    ) -> None:
        """Each top group's rows of ratios/summary: jobs and GPU-seconds per distinct ratio
        and fair share, in ratio order (fair shares unknown last), as ``dist_*`` lists."""
        rank_of = np.full(size, -1, dtype=np.int64)
        rank_of[ranked] = np.arange(len(ranked))
        mine = rank_of[g] >= 0
        rank = rank_of[g[mine]]
        v = cores[mine]
        fs = self.fair_share[pid[mine]]
        unknown = np.isnan(fs)
        fs_key = np.where(unknown, 0.0, fs)
        order = np.lexsort((fs_key, unknown, v, rank))
        rank, v, fs, unknown = rank[order], v[order], fs[order], unknown[order]
        fs_key = fs_key[order]
        # a new row of the summary wherever the group, the ratio or the fair share changes
        new = np.zeros(len(order), dtype=bool)
        new[:1] = True
        for a in (rank, v, unknown, fs_key):
            new[1:] |= a[1:] != a[:-1]
        starts = np.flatnonzero(new)
        sum_jobs = np.add.reduceat(jobs[mine][order], starts) if len(starts) else np.zeros(0)
        sum_gpu_s = np.add.reduceat(gpu_s[mine][order], starts) if len(starts) else np.zeros(0)
        # the summary rows are in rank order: each top group's are one run of them
        bounds = np.searchsorted(rank[starts], np.arange(len(out) + 1))
        for i, row in enumerate(out):
            mine = slice(bounds[i], bounds[i + 1])
            at = starts[mine]
            row["dist_ratio"] = v[at].tolist()
            row["dist_jobs"] = sum_jobs[mine].tolist()
            row["dist_gpu_s"] = sum_gpu_s[mine].tolist()
            row["dist_fair"] = [None if u else f for u, f in zip(unknown[at], fs[at], strict=True)]


def _day(t: dt.datetime) -> int:
    """The day of ``t`` (UTC) in days since 1970, as CAST(t AS DATE)."""
    naive = utc_naive(t)
    assert naive is not None
    return (naive.date() - dt.date(1970, 1, 1)).days


def _read_rows(con: duckdb.DuckDBPyConnection, cube: str, *, months: bool) -> tuple[_Rows, _Rows]:
    """A people cube's counted rows and its excluded rows (in month order for the per-month
    cube)."""
    sql = render(
        "ratios/inmemory_rows",
        cube=cube,
        month="(c.month - DATE '1970-01-01')::INTEGER" if months else "0",
    )
    got = {
        k: np.asarray(v)
        for k, v in con.execute(sql, {"reasons": list(EXCLUSION_REASONS)}).fetchnumpy().items()
    }
    reason = got["excluded"].astype(np.int8)
    if np.any(reason == 127):
        raise StoreError(f"{cube} holds an exclusion reason advisor does not know")
    month = got["month"].astype(np.int32) if months else None
    # stored in month order (ratios/cube_people_months_refresh); sorted here only if not
    order = None
    if month is not None and np.any(month[1:] < month[:-1]):
        order = np.argsort(month, kind="stable")
    empty = np.zeros(0)

    def part(rows: npt.NDArray[np.bool_], counted: bool) -> _Rows:
        at = np.flatnonzero(rows) if order is None else order[rows[order]]
        return _Rows(
            pid=got["pid"][at].astype(np.int32),
            jobs=got["jobs"][at].astype(np.int64),
            gpu_seconds=got["gpu_seconds"][at].astype(np.int64),
            cores_per_gpu=got["cores_per_gpu"][at].astype(np.float64) if counted else empty,
            reason=empty.astype(np.int8) if counted else reason[at],
            month=None if month is None else month[at],
        )

    return part(reason == 0, True), part(reason > 0, False)
