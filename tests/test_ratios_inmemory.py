"""advisor.ratios.inmemory on a real DuckDB file: the people cubes held in memory rank accounts
and users below a target exactly as DuckDB's ranking does (the same report, field for field),
and say None for the queries they do not hold the rows for."""

from __future__ import annotations

import datetime as dt

import pytest

from advisor import ratios, store
from advisor.ratios import RatioQuery, TargetQuery, Weight
from advisor.ratios.inmemory import PeopleInMemory
from tests.test_ratios import _insert, _varied_jobs

_TARGETS = (("gpu", "H100", 8.0), ("gpu", "A100", 4.0), ("debug", "H100", 16.0), (None, "L40S", 2))


def _jobs() -> list[dict]:
    jobs = _varied_jobs(44, 2500)
    for k, j in enumerate(jobs):
        j["partition"] = ["gpu", "debug", "long", None][k % 4]  # "long" has no target
        if k % 17 == 0:
            j["user"] = None  # a missing user ranks last among ties
    return jobs


@pytest.fixture
def loaded(db_path):
    con = store.connect(db_path)
    con.execute(
        "INSERT INTO nodes (cluster, node_name, cpus, cpus_effective, gpus, gpu_type, "
        "snapshot_at) VALUES ('teaching', 'n1', 64, NULL, 8, 'H100', now()), "
        "('research', 'n3', 64, NULL, 4, 'A100', now())"
    )
    _insert(con, _jobs())
    ratios.refresh_people_months(con)  # both cubes fresh
    con.close()
    con = store.connect(db_path, read_only=True)  # as the dashboard reads
    yield con, PeopleInMemory.load(con)
    con.close()


_QUERIES = [
    RatioQuery(by=("user", "partition", "gpu_type"), weight=Weight.gpu_hours),
    RatioQuery(by=("account", "cluster", "partition", "gpu_type")),
    RatioQuery(
        by=("user", "cluster", "partition", "gpu_type"),
        start=dt.datetime(2024, 2, 1),
        end=dt.datetime(2024, 3, 1),
        weight=Weight.gpu_hours,
    ),
    RatioQuery(by=("account", "partition", "gpu_type"), start=dt.datetime(2024, 2, 1)),
    RatioQuery(by=("user", "partition", "gpu_type"), end=dt.datetime(2024, 3, 1)),
    RatioQuery(
        by=("user", "cluster", "partition", "gpu_type"),
        clusters=("research",),
        gpu_types=("H100", "A100"),
        partitions=("gpu", "debug"),
    ),
    RatioQuery(by=("account", "user", "partition", "gpu_type"), accounts=("a1",), users=("u2",)),
    # a time range holding no job, and a filter matching nobody
    RatioQuery(by=("user", "partition", "gpu_type"), start=dt.datetime(2030, 1, 1)),
    RatioQuery(by=("user", "partition", "gpu_type"), clusters=("nowhere",)),
]


@pytest.mark.parametrize("q", _QUERIES)
@pytest.mark.parametrize("fixed", [None, 6.0])
@pytest.mark.parametrize("top", [3, 50])
def test_memory_ranks_as_duckdb_does(loaded, q, fixed, top):
    con, memory = loaded
    assert memory is not None and memory.inventory
    tq = TargetQuery(
        q, targets_cores_per_gpu=() if fixed else _TARGETS, fixed_cores_per_gpu=fixed, top=top
    )
    want = ratios.below_target(con, tq)
    got = memory.below_target(tq)
    assert got == want
    if q.clusters != ("nowhere",) and q.start != dt.datetime(2030, 1, 1):
        assert want.groups and want.groups_counted > 0  # the check compared something


@pytest.mark.parametrize(
    "q",
    [
        RatioQuery(by=("user", "partition", "gpu_type"), states=("COMPLETED",)),
        RatioQuery(by=("user", "partition", "gpu_type"), min_gpus=2),
        RatioQuery(by=("user", "partition", "gpu_type"), start=dt.datetime(2024, 1, 10)),
        RatioQuery(by=("partition", "gpu_type")),  # no person among the keys: ratio_cube's
        RatioQuery(by=("user", "month")),
    ],
)
def test_queries_the_memory_does_not_hold_get_none(loaded, q):
    _, memory = loaded
    assert memory.below_target(TargetQuery(q, fixed_cores_per_gpu=4.0)) is None


def test_stale_cubes_are_not_loaded(db_path):
    con = store.connect(db_path)
    _insert(con, _jobs()[:50])
    ratios.refresh_ratio_cube(con)  # the per-month people cube is left stale
    con.close()
    con = store.connect(db_path, read_only=True)
    try:
        assert PeopleInMemory.load(con) is None
    finally:
        con.close()


def test_a_bad_target_query_is_refused_as_duckdb_refuses_it(loaded):
    from advisor.errors import UsageError

    _, memory = loaded
    with pytest.raises(UsageError, match="either"):
        memory.below_target(TargetQuery(RatioQuery(by=("user",))))


def test_cubes_larger_than_the_limit_stay_in_duckdb(loaded):
    con, memory = loaded
    rows = sum(len(r.pid) for part in (memory.all_time, memory.months) for r in part)
    assert PeopleInMemory.load(con, max_rows=rows) is not None
    assert PeopleInMemory.load(con, max_rows=rows - 1) is None
