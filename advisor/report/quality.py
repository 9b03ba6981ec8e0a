"""What the month's numbers stand on (:class:`DataQuality`): the loads that brought its
allocations in, their rejected lines by reason, the allocations started per day and the days
with none."""

from __future__ import annotations

from collections.abc import Sequence

import duckdb

from advisor import store
from advisor.report.months import Month
from advisor.report.records import DataQuality, DayCount, MonthIngest, RejectGroup, TimeGap


def _rows(con: duckdb.DuckDBPyConnection, name: str, params: Sequence[object]) -> list[tuple]:
    return con.execute(store.query(f"report/{name}"), list(params)).fetchall()


def data_quality(
    con: duckdb.DuckDBPyConnection, month: Month, cluster: str | None = None
) -> DataQuality:
    """The month's loads, their rejected lines by reason, and the days with no data at all."""
    params = [month.start, month.end, cluster]
    daily = tuple(DayCount(d, int(j), int(g)) for d, j, g in _rows(con, "daily_starts", params))
    ingests = tuple(
        MonthIngest(
            int(r[0]),
            r[1],
            r[2],
            r[3],
            int(r[4]),
            int(r[5]),
            int(r[6]),
            int(r[7]),
            int(r[8]),
            tuple(r[9]),
            tuple(r[10]),
        )
        for r in _rows(con, "month_ingests", params)
    )
    rejects = tuple(
        RejectGroup(r[0], r[1], int(r[2]), r[3], None if r[4] is None else int(r[4]))
        for r in _rows(con, "month_rejects", params)
    )
    gaps = tuple(TimeGap(a, b, int(n)) for a, b, n in _rows(con, "gaps", params))
    return DataQuality(
        jobs=sum(d.jobs for d in daily),
        gpu_jobs=sum(d.gpu_jobs for d in daily),
        ingests=ingests,
        rejected_lines=sum(r.lines for r in rejects),
        rejects=rejects,
        gaps=gaps,
        gap_days=sum(g.days for g in gaps),
        daily=daily,
    )
