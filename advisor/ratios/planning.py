"""Which source answers a ratio query: the stored cubes or the jobs table, and the SQL of its
facts (the people cubes' group numbering included). Validation of a query lives here too."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import duckdb

from advisor.derived.cube import (
    cube_is_fresh,
    is_read_only,
    people_months_are_fresh,
    refresh_people_months,
    refresh_ratio_cube,
)
from advisor.errors import StoreError, UsageError
from advisor.filters import jobs_where, utc_naive
from advisor.ratios.records import GROUP_KEYS, RatioQuery, Weight
from advisor.store import query, quote_ident, render


def check_query(q: RatioQuery) -> None:
    unknown = [k for k in q.by if k not in GROUP_KEYS]
    if unknown:
        raise UsageError(
            f"cannot group by {', '.join(unknown)}; use any of: {', '.join(GROUP_KEYS)}"
        )
    if len(set(q.by)) != len(q.by):
        raise UsageError(f"a group key is repeated in --by {','.join(q.by)}")
    if not isinstance(q.weight, Weight):
        raise UsageError(f"weight must be one of: {', '.join(w.value for w in Weight)}")
    for t in q.thresholds_cores_per_gpu:
        if not (isinstance(t, (int, float)) and math.isfinite(t) and t > 0):
            raise UsageError(f"threshold {t!r} is not a positive number of cores per GPU")
    if q.min_gpus is not None and q.min_gpus < 0:
        raise UsageError(f"min_gpus must be 0 or more, got {q.min_gpus}")
    start, end = utc_naive(q.start), utc_naive(q.end)
    if start is not None and end is not None and start >= end:
        raise UsageError(f"the time range is empty: start {q.start} is not before end {q.end}")


def keys_sql(by: Sequence[str]) -> str:
    return ", ".join(quote_ident(k) for k in (by or ("_all",)))


def _month_start(t: dt.datetime | None) -> bool:
    t = utc_naive(t)
    return t is None or (t.day == 1 and t.time() == dt.time(0))


def cube_answers(q: RatioQuery) -> bool:
    """Whether ``ratio_cube`` can answer ``q``: no user/account key or filter, and time bounds
    that are open or fall on the first instant of a month (UTC)."""
    return (
        not ({"user", "account"} & set(q.by))
        and not q.users
        and not q.accounts
        and _month_start(q.start)
        and _month_start(q.end)
    )


def people_cube_answers(q: RatioQuery) -> bool:
    """Whether the account/user cubes (``ratio_cube_people``, or ``ratio_cube_people_months``
    for month/interactive keys, state filters and time bounds) can answer ``q``: any keys and
    filters, with time bounds that are open or fall on the first instant of a month (UTC)."""
    return _month_start(q.start) and _month_start(q.end)


def people_over_time(q: RatioQuery) -> bool:
    """Whether a people-cube query needs the per-month table (the all-time one lacks months,
    states and the interactive label)."""
    return bool(
        {"month", "interactive"} & set(q.by) or q.states or q.start is not None or q.end is not None
    )


def choose_source(con: duckdb.DuckDBPyConnection, q: RatioQuery, use_cube: bool | None) -> str:
    """Which facts answer ``q``: "cube" (``ratio_cube``) or "people" (the people cubes) when one
    can answer and it is fresh (rebuilt first on a writable connection, or as TEMP tables with
    ``use_cube=True`` on a read-only one), else "jobs" (the jobs table itself)."""
    if use_cube is False:
        return "jobs"
    months = False
    if cube_answers(q):
        kind = "cube"
    elif people_cube_answers(q):
        kind = "people"
        months = people_over_time(q)
    else:
        return "jobs"
    fresh = people_months_are_fresh(con) if months else cube_is_fresh(con)
    if not fresh:
        read_only = is_read_only(con)
        if use_cube is None and read_only:
            return "jobs"
        if months:
            refresh_people_months(con, temporary=read_only)
        else:
            refresh_ratio_cube(con, temporary=read_only)
    return kind


def facts_for(con: duckdb.DuckDBPyConnection, q: RatioQuery, use_cube: bool | None) -> str:
    """The facts relation's SQL for ``q`` (see :func:`choose_source`)."""
    return facts_sql(choose_source(con, q, use_cube), q)


def facts_sql(kind: str, q: RatioQuery) -> str:
    """The SQL of the facts of one :func:`choose_source` kind for ``q``."""
    if kind == "cube":
        return query("ratios/cube_facts")
    return (
        people_facts(q)
        if kind == "people"
        else render("ratios/jobs_facts", where=jobs_where("coalesce(j.start, j.submit)"))
    )


def people_facts(q: RatioQuery) -> str:
    """The people cube's facts SQL for ``q``, keeping in its first (integer) aggregation only
    the month / GPU count / interactive columns that ``q`` groups by."""
    keep = set(q.by)
    # Only fixed column names or typed NULLs are spliced in.
    columns = {
        name: column if name in keep else null
        for name, column, null in (
            *((k, f"p.{quote_ident(k)}", "NULL::VARCHAR") for k in sorted(PEOPLE_KEYS)),
            ("month", "month", "NULL::DATE"),
            ("gpu_count", "gpus", "NULL::INTEGER"),
            ("interactive", "interactive", "NULL::VARCHAR"),
        )
    }
    return people_cube_query("ratios/cube_people_facts", q, **columns)


def people_cube_query(name: str, q: RatioQuery, **parts: str) -> str:
    """The people-cube statement ``name`` rendered with the filters' conditions on ratio_people
    (people_where), its people cube (cube: the all-time or the per-month one), that cube's
    month and state conditions (over_time) chosen for ``q``, and ``parts``."""
    over_time = people_over_time(q)
    return render(
        name,
        people_where=query("ratios/people_where"),
        cube="ratio_cube_people_months" if over_time else "ratio_cube_people",
        over_time=query(
            "ratios/people_over_time_where" if over_time else "ratios/people_all_time_where"
        ),
        **parts,
    )


_BIGINT_GROUPS = 2**62
"""Group numbers below this fit a BIGINT (:func:`people_group_number`)."""


def people_radix(con: duckdb.DuckDBPyConnection, by: Sequence[str]) -> dict[str, int]:
    """Per people key of ``by``, one more than its largest id: the radix of its digit in a group
    number (:func:`people_group_number`). Only fixed column names are spliced in."""
    if not by:
        return {}
    row = con.execute(
        "SELECT " + ", ".join(f"coalesce(max({k}_id), 0) + 1" for k in by) + " FROM ratio_people"  # noqa: S608 - fixed names
    ).fetchone()
    assert row is not None
    return {k: int(r) for k, r in zip(by, row, strict=True)}


def people_group_number(radix: Mapping[str, int], kind: str | None = None) -> tuple[str, bool]:
    """A SQL expression over ratio_people ``p`` that numbers the groups of people keys (with
    their :func:`people_radix`): the keys' per-column ids combined as digits of mixed radix, so
    that the numbers are distinct per group and sort as the key values do; and whether the
    numbers outgrow a BIGINT. The arithmetic is in ``kind`` (an integer SQL type the numbers
    fit), by default BIGINT, or HUGEINT for numbers that outgrow it. Only fixed column names and
    integers from the database are spliced in."""
    wide = math.prod(radix.values()) >= _BIGINT_GROUPS
    kind = kind or ("HUGEINT" if wide else "BIGINT")
    expr = "0"
    for k, r in radix.items():
        expr = f"({expr}) * {r} + p.{k}_id::{kind}"
    return expr, wide


def grouped_sql(name: str, by: Sequence[str], facts: str, **parts: str) -> str:
    """The statement ``ratios/<name>`` over the facts relation ``facts``, grouped by ``by``."""
    # Only fixed, validated key names (GROUP_KEYS) and our own SQL files are spliced in.
    return render(f"ratios/{name}", facts=facts, keys=keys_sql(by), **parts)


def distribution_sql(name: str, by: Sequence[str], facts: str) -> str:
    """The statement ``ratios/<name>`` (``histogram``, ``ecdf``) over the distinct ratios of
    ``facts`` per group of ``by`` (``ratios/distribution_values``), so both read one relation."""
    values = grouped_sql("distribution_values", by, facts)
    return render(f"ratios/{name}", values=values, keys=keys_sql(by))


@dataclass(frozen=True)
class Digit:
    """One key's digit in a people summary's group number: the key, its radix, and the SQL of
    its value over the cube ``c`` (people keys have none: :func:`people_group_number` numbers
    them)."""

    key: str
    radix: int
    sql: str = ""
    labels: tuple[str, ...] = ()  # interactive: the labels, in order (the digit is a position)


_MONTH_DIGIT = "year(c.month) * 12 + month(c.month) - 1"
"""A month as a digit: months since year 0 (the cube's months are never NULL for counted jobs)."""


def people_digits(con: duckdb.DuckDBPyConnection, q: RatioQuery) -> list[Digit] | None:
    """The digits of the group number ratios/summary_people gives each group of ``q``: the
    people keys of ``q.by`` in its order (their per-column ids), then the cube's own keys it
    groups by (month, GPU count, interactive label); None when the numbers would outgrow a
    BIGINT (the people facts are then summarised by name). Only fixed names and integers from
    the database go into the SQL."""
    people = [k for k in q.by if k in PEOPLE_KEYS]
    digits = [Digit(k, r) for k, r in people_radix(con, people).items()]
    if "month" in q.by:
        digits.append(Digit("month", 12 * 10_000, _MONTH_DIGIT))
    cube = people_summary_cube(q)[0]
    if "gpu_count" in q.by:
        row = con.execute(render("ratios/gpu_radix", cube=cube)).fetchone()
        digits.append(Digit("gpu_count", int(row[0]) if row else 1, "c.gpus"))
    if "interactive" in q.by:
        labels = _interactive_labels(con, cube)
        code = "list_position($labels::VARCHAR[], c.interactive) - 1"
        digits.append(Digit("interactive", max(len(labels), 1), code, labels))
    if math.prod(d.radix for d in digits) >= _BIGINT_GROUPS:
        return None
    return digits


def _interactive_labels(con: duckdb.DuckDBPyConnection, cube: str) -> tuple[str, ...]:
    """The interactive labels of a people cube's counted jobs, in sort order."""
    rows = con.execute(render("ratios/interactive_labels", cube=cube)).fetchall()
    if any(r[0] is None for r in rows):  # the cube's rules label every job
        raise StoreError(f"{cube} holds a job without an interactive label: rebuild the cubes")
    return tuple(str(r[0]) for r in rows)


def people_summary_cube(q: RatioQuery) -> tuple[str, str, str]:
    """The people cube ratios/summary_people reads for ``q``, its conditions and its ratio
    expression: ``ratio_cube_people_month_ratios`` for month keys and ranges without state,
    interactive or GPU-count keys and filters (it is several times smaller), else the one
    :func:`people_cube_query` picks, with the minimum-GPU condition."""
    if (
        people_over_time(q)
        and not q.states
        and q.min_gpus is None
        and not {"interactive", "gpu_count"} & set(q.by)
    ):
        return (
            "ratio_cube_people_month_ratios",
            query("ratios/people_months_where"),
            "c.cores_per_gpu",
        )
    over_time = people_over_time(q)
    where = query("ratios/people_over_time_where" if over_time else "ratios/people_all_time_where")
    return (
        "ratio_cube_people_months" if over_time else "ratio_cube_people",
        where + "\nAND ($min_gpus::INTEGER IS NULL OR c.gpus >= $min_gpus::INTEGER)",
        "c.cpus::DOUBLE / c.gpus",
    )


PEOPLE_KEYS = frozenset({"cluster", "gpu_type", "partition", "account", "user"})
