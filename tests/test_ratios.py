"""Ratio analytics on a real DuckDB file: exact percentiles, exclusions, keys, filters, CLI."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import pytest

from advisor import ratios, store
from advisor.errors import StoreError, UsageError
from advisor.ratios import RatioQuery, Weight, planning

T0 = dt.datetime(2024, 1, 1)


def _insert(con: duckdb.DuckDBPyConnection, jobs: list[dict]) -> None:
    cols = [
        "cluster",
        "job_id_raw",
        "submit",
        "job_id",
        "user",
        "account",
        "partition",
        "state",
        "start",
        "elapsed_s",
        "cpus",
        "gpus",
        "gpu_type",
        "is_interactive",
    ]
    rows = []
    for i, j in enumerate(jobs):
        base = {
            "cluster": "c1",
            "job_id_raw": 1000 + i,
            "submit": T0,
            "job_id": str(1000 + i),
            "user": "alice",
            "account": "lab",
            "partition": "gpu",
            "state": "COMPLETED",
            "start": T0 + dt.timedelta(minutes=1),
            "elapsed_s": 3600,
            "cpus": 4,
            "gpus": 1,
            "gpu_type": "H100",
            "is_interactive": None,
        }
        base.update(j)
        rows.append([base[c] for c in cols])
    import pyarrow as pa

    table = pa.table({c: [r[k] for r in rows] for k, c in enumerate(cols)})
    quoted = ", ".join(store.quote_ident(c) for c in cols)
    con.register("_new_jobs", table)
    con.execute(f"INSERT INTO jobs ({quoted}) SELECT {quoted} FROM _new_jobs")
    con.unregister("_new_jobs")


@pytest.fixture
def con(db_path: Path):
    c = store.connect(db_path)
    yield c
    c.close()


def _random_jobs(seed: int, n: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    jobs = []
    for _ in range(n):
        gpus = int(rng.choice([1, 2, 4, 8]))
        jobs.append(
            {
                "gpus": gpus,
                "cpus": int(rng.choice([1, 2, 4, 8, 16, 32, 48, 64, 96, 128])),
                "elapsed_s": int(rng.integers(1, 200_000)),
                "gpu_type": str(rng.choice(["H100", "A100", "L40S"])),
                "cluster": str(rng.choice(["teaching", "research"])),
            }
        )
    return jobs


def test_job_weighted_percentiles_equal_numpy_linear_and_duckdb_quantile_cont(con):
    jobs = _random_jobs(7, 3000)
    _insert(con, jobs)
    report = ratios.ratio_summary(con, RatioQuery(by=("cluster", "gpu_type")))
    assert len(report.groups) == 6
    for g in report.groups:
        x = np.array(
            [
                j["cpus"] / j["gpus"]
                for j in jobs
                if j["cluster"] == g.keys["cluster"] and j["gpu_type"] == g.keys["gpu_type"]
            ]
        )
        expect = np.percentile(x, [10, 25, 50, 75, 90])  # numpy's default: linear
        got = [
            g.p10_cores_per_gpu,
            g.p25_cores_per_gpu,
            g.p50_cores_per_gpu,
            g.p75_cores_per_gpu,
            g.p90_cores_per_gpu,
        ]
        assert got == pytest.approx(expect, rel=1e-12, abs=1e-12)
        assert g.jobs == len(x)
        assert g.mean_cores_per_gpu == pytest.approx(x.mean(), rel=1e-12)
        row = con.execute(
            "SELECT quantile_cont(cpus / gpus, [0.1, 0.25, 0.5, 0.75, 0.9]) FROM jobs "
            "WHERE cluster = ? AND gpu_type = ?",
            [g.keys["cluster"], g.keys["gpu_type"]],
        ).fetchone()
        assert row is not None
        assert got == pytest.approx(row[0], rel=1e-12, abs=1e-12)


def test_gpu_hour_weighted_percentiles_equal_numpy_weighted_inverted_cdf(con):
    jobs = _random_jobs(11, 2000)
    _insert(con, jobs)
    report = ratios.ratio_summary(con, RatioQuery(by=("gpu_type",), weight=Weight.gpu_hours))
    for g in report.groups:
        sel = [j for j in jobs if j["gpu_type"] == g.keys["gpu_type"]]
        x = np.array([j["cpus"] / j["gpus"] for j in sel])
        w = np.array([j["gpus"] * j["elapsed_s"] for j in sel])  # GPU-seconds
        expect = np.percentile(x, [10, 25, 50, 75, 90], weights=w, method="inverted_cdf")
        got = [
            g.p10_cores_per_gpu,
            g.p25_cores_per_gpu,
            g.p50_cores_per_gpu,
            g.p75_cores_per_gpu,
            g.p90_cores_per_gpu,
        ]
        assert got == pytest.approx(expect, rel=1e-12)
        assert g.gpu_hours == pytest.approx(w.sum() / 3600)
        assert g.mean_cores_per_gpu == pytest.approx(np.average(x, weights=w), rel=1e-12)


@pytest.mark.parametrize("use_cube", [True, False])
@pytest.mark.parametrize("weight", list(Weight))
def test_every_group_of_a_many_group_summary_equals_numpy_on_its_own_jobs(con, weight, use_cube):
    """Figures are computed for all groups at once: each group must see only its own jobs, also
    groups of one or two jobs next to large ones (user+month: the people cube's numbered groups
    or, from jobs, groups numbered by name)."""
    jobs = _varied_jobs(31, 2500)
    for i, j in enumerate(jobs[:40]):  # a few users with one or two jobs in a month
        j["user"] = f"rare{i // 2}"
    for j in jobs[40:60]:  # and a GPU-hourless group
        j.update(user="zero", elapsed_s=0)
    _insert(con, jobs)
    report = ratios.ratio_summary(
        con, RatioQuery(by=("user", "month"), weight=weight), use_cube=use_cube
    )
    counted = [j for j in jobs if j["start"] is not None and j["gpus"] > 0]
    assert sum(g.jobs for g in report.groups) == len(counted)
    assert min(g.jobs for g in report.groups) == 1
    assert [tuple(g.keys.values()) for g in report.groups] == sorted(
        {(j["user"], j["start"].strftime("%Y-%m")) for j in counted}
    )
    for g in report.groups:
        sel = [
            j
            for j in counted
            if j["user"] == g.keys["user"] and j["start"].strftime("%Y-%m") == g.keys["month"]
        ]
        x = np.array([j["cpus"] / j["gpus"] for j in sel])
        w = np.array([j["gpus"] * j["elapsed_s"] for j in sel], dtype=float)
        got = [
            g.p10_cores_per_gpu,
            g.p25_cores_per_gpu,
            g.p50_cores_per_gpu,
            g.p75_cores_per_gpu,
            g.p90_cores_per_gpu,
        ]
        if weight is Weight.jobs:
            assert got == pytest.approx(np.percentile(x, [10, 25, 50, 75, 90]), rel=1e-12)
            assert g.mean_cores_per_gpu == pytest.approx(x.mean(), rel=1e-12)
        elif w.sum() > 0:
            expect = np.percentile(x, [10, 25, 50, 75, 90], weights=w, method="inverted_cdf")
            assert got == pytest.approx(expect, rel=1e-12)
            assert g.mean_cores_per_gpu == pytest.approx(np.average(x, weights=w), rel=1e-12)
        else:
            assert np.isnan(got).all() and np.isnan(g.mean_cores_per_gpu)
        assert g.jobs == len(x) and g.gpu_hours == pytest.approx(w.sum() / 3600)
        for t in (1.0, 2.0, 4.0, 8.0):
            assert g.share_jobs_below[t] == pytest.approx(np.mean(x < t))
            if w.sum() > 0:
                assert g.share_gpu_hours_below[t] == pytest.approx(w[x < t].sum() / w.sum())


def test_weighted_percentile_at_an_exact_cdf_boundary_takes_the_lower_value(con):
    # Two ratios with equal GPU-hours: the cumulative share reaches exactly 0.5 at the first.
    _insert(con, [{"cpus": 1, "gpus": 1}, {"cpus": 8, "gpus": 1}])
    g = ratios.ratio_summary(con, RatioQuery(by=(), weight=Weight.gpu_hours)).groups[0]
    assert g.p50_cores_per_gpu == 1.0
    assert np.percentile([1.0, 8.0], 50, weights=[1, 1], method="inverted_cdf") == 1.0
    # while by jobs the median interpolates between the two
    g = ratios.ratio_summary(con, RatioQuery(by=())).groups[0]
    assert g.p50_cores_per_gpu == 4.5


def test_shares_below_thresholds_are_strictly_below_by_jobs_and_by_gpu_hours(con):
    _insert(
        con,
        [
            {"cpus": 1, "gpus": 4, "elapsed_s": 100},  # 0.25
            {"cpus": 4, "gpus": 4, "elapsed_s": 100},  # 1.0: not below 1
            {"cpus": 8, "gpus": 1, "elapsed_s": 200},  # 8.0: not below 8
            {"cpus": 16, "gpus": 4, "elapsed_s": 300},  # 4.0
        ],
    )
    g = ratios.ratio_summary(con, RatioQuery(by=(), thresholds_cores_per_gpu=(8, 1))).groups[0]
    assert g.share_jobs_below == {1.0: 0.25, 8.0: 0.75}
    total = 4 * 100 + 4 * 100 + 1 * 200 + 4 * 300
    assert g.share_gpu_hours_below[1.0] == pytest.approx(400 / total)
    assert g.share_gpu_hours_below[8.0] == pytest.approx((400 + 400 + 1200) / total)
    row = g.as_row()
    assert row["share_jobs_below_1"] == 0.25 and row["share_jobs_below_8"] == 0.75
    # no thresholds: no shares, the rest unchanged
    bare = ratios.ratio_summary(con, RatioQuery(by=(), thresholds_cores_per_gpu=())).groups[0]
    assert bare.share_jobs_below == {} == bare.share_gpu_hours_below
    assert bare.p50_cores_per_gpu == g.p50_cores_per_gpu == 2.5


def test_jobs_without_an_allocation_are_counted_by_reason_never_silently(con):
    _insert(
        con,
        [
            {"cpus": 4, "gpus": 1},
            {"gpus": 0, "cpus": 8},  # CPU-only
            {"start": None, "elapsed_s": 0, "cpus": 0, "state": "CANCELLED"},  # pending-cancelled
            {"cpus": None},  # no CPU count known
            {"elapsed_s": 0, "cpus": 8},  # ended within the second it started: it counts
        ],
    )
    report = ratios.ratio_summary(con, RatioQuery(by=()))
    assert report.jobs == 2
    assert dict(report.excluded) == {"no_gpus": 1, "never_started": 1, "no_cpus": 1}
    g = report.groups[0]
    assert g.p50_cores_per_gpu == 6.0  # between 4 and 8, by jobs
    assert g.gpu_hours == 1.0  # the zero-second job adds no GPU-hours


def test_gpu_hour_figures_of_a_group_without_gpu_hours_are_not_numbers(con):
    _insert(con, [{"elapsed_s": 0}, {"elapsed_s": None}])
    g = ratios.ratio_summary(con, RatioQuery(by=(), weight=Weight.gpu_hours)).groups[0]
    assert g.jobs == 2 and g.gpu_hours == 0.0
    assert np.isnan(g.p50_cores_per_gpu) and np.isnan(g.mean_cores_per_gpu)
    assert np.isnan(g.share_gpu_hours_below[8.0])
    assert g.share_jobs_below[8.0] == 1.0


def test_a_job_belongs_to_the_month_it_started_in_whole(con):
    _insert(
        con,
        [
            # submitted in January, started in February, ran into March
            {
                "submit": dt.datetime(2024, 1, 31, 23),
                "start": dt.datetime(2024, 2, 29, 23),
                "elapsed_s": 86400 * 3,
                "cpus": 2,
            },
            {"start": dt.datetime(2024, 3, 1), "cpus": 8},
        ],
    )
    report = ratios.ratio_summary(con, RatioQuery(by=("month",)))
    assert [(g.keys["month"], g.jobs, g.p50_cores_per_gpu) for g in report.groups] == [
        ("2024-02", 1, 2.0),
        ("2024-03", 1, 8.0),
    ]
    march = ratios.ratio_summary(
        con, RatioQuery(by=(), start=dt.datetime(2024, 3, 1), end=dt.datetime(2024, 4, 1))
    )
    assert march.jobs == 1 and march.groups[0].p50_cores_per_gpu == 8.0


def test_filters_select_states_partitions_users_and_minimum_gpus(con):
    _insert(
        con,
        [
            {"state": "COMPLETED", "partition": "a", "gpus": 1, "cpus": 1, "user": "u1"},
            {"state": "FAILED", "partition": "a", "gpus": 2, "cpus": 4, "user": "u2"},
            {"state": "COMPLETED", "partition": "b", "gpus": 4, "cpus": 16, "user": "u1"},
            {"state": "TIMEOUT", "partition": "b", "gpus": 8, "cpus": 8, "user": "u2"},
        ],
    )

    def p50(**kw: object) -> list[float]:
        r = ratios.ratio_summary(con, RatioQuery(by=(), **kw))  # type: ignore[arg-type]
        return [g.jobs for g in r.groups] + [g.p50_cores_per_gpu for g in r.groups]

    assert p50(states=("completed",)) == [2, 2.5]
    assert p50(partitions=("b",)) == [2, 2.5]
    assert p50(min_gpus=4) == [2, 2.5]
    assert p50(users=("u2",), min_gpus=4) == [1, 1.0]
    assert p50(accounts=("nobody",)) == []


def test_interactive_allocations_form_their_own_group(con):
    _insert(
        con,
        [
            {"is_interactive": True, "cpus": 1},
            {"is_interactive": True, "cpus": 1},
            {"is_interactive": False, "cpus": 16},
            {"is_interactive": None, "cpus": 4},
        ],
    )
    report = ratios.ratio_summary(con, RatioQuery(by=("interactive",)))
    assert {g.keys["interactive"]: (g.jobs, g.p50_cores_per_gpu) for g in report.groups} == {
        "batch": (1, 16.0),
        "interactive": (2, 1.0),
        "unknown": (1, 4.0),
    }


def test_every_group_key_can_be_combined(con):
    _insert(con, _random_jobs(3, 200))
    report = ratios.ratio_summary(con, RatioQuery(by=ratios.GROUP_KEYS))
    assert sum(g.jobs for g in report.groups) == 200
    assert set(report.groups[0].keys) == set(ratios.GROUP_KEYS)
    assert report.groups[0].keys["gpu_count"] in (1, 2, 4, 8)


def test_fair_share_comes_from_the_node_type_and_counts_jobs_below_it(con):
    con.execute(
        "INSERT INTO nodes (cluster, node_name, cpus, cpus_effective, gpus, gpu_type, "
        "snapshot_at) VALUES ('c1', 'n1', 128, 124, 8, 'H100', now()), "
        "('c1', 'n2', 64, NULL, 4, 'A100', now())"
    )
    _insert(
        con,
        [
            {"gpu_type": "H100", "cpus": 8, "gpus": 1},  # 8 < 15.5
            {"gpu_type": "H100", "cpus": 16, "gpus": 1},  # 16 >= 15.5
            {"gpu_type": "A100", "cpus": 4, "gpus": 1},  # 4 < 16
            {"gpu_type": "L40S", "cpus": 4, "gpus": 1},  # no node type known
        ],
    )
    types = ratios.fair_share(con)
    assert [(t.gpu_type, t.cores_per_gpu) for t in types] == [("A100", 16.0), ("H100", 15.5)]
    groups = {g.keys["gpu_type"]: g for g in ratios.ratio_summary(con).groups}
    assert groups["H100"].fair_share_cores_per_gpu == 15.5
    assert groups["H100"].share_jobs_below_fair_share == 0.5
    assert groups["A100"].share_jobs_below_fair_share == 1.0
    assert groups["L40S"].fair_share_cores_per_gpu is None
    assert groups["L40S"].share_jobs_below_fair_share is None


def test_distribution_histogram_and_ecdf_add_up_to_the_summary(con):
    jobs = _random_jobs(5, 500)
    _insert(con, jobs)
    q = RatioQuery(by=("gpu_type",))
    dist = ratios.ratio_distribution(con, q, bins=(0, 1, 4, 16))
    summary = {g.keys["gpu_type"]: g for g in ratios.ratio_summary(con, q).groups}
    assert [g.keys["gpu_type"] for g in dist.groups] == sorted(summary)
    for g in dist.groups:
        s = summary[g.keys["gpu_type"]]
        assert [(b.lo_cores_per_gpu, b.hi_cores_per_gpu) for b in g.histogram] == [
            (0, 1),
            (1, 4),
            (4, 16),
            (16, None),
        ]
        assert sum(b.jobs for b in g.histogram) == s.jobs
        assert sum(b.gpu_hours for b in g.histogram) == pytest.approx(s.gpu_hours)
        below_4 = sum(b.jobs for b in g.histogram[:2]) / s.jobs
        assert below_4 == pytest.approx(s.share_jobs_below[4.0])
        assert g.ecdf[-1].share_jobs_at_or_below == pytest.approx(1.0)
        xs = [p.cores_per_gpu for p in g.ecdf]
        assert xs == sorted(set(xs))
    assert len(dist.ecdf_records()) == sum(len(g.ecdf) for g in dist.groups)


def test_bad_queries_are_usage_errors_that_name_the_fix(con):
    with pytest.raises(UsageError, match="cannot group by colour; use any of: gpu_type"):
        ratios.ratio_summary(con, RatioQuery(by=("colour",)))
    with pytest.raises(UsageError, match="threshold"):
        ratios.ratio_summary(con, RatioQuery(thresholds_cores_per_gpu=(0,)))
    with pytest.raises(UsageError, match="time range is empty"):
        ratios.ratio_summary(con, RatioQuery(start=T0, end=T0))
    with pytest.raises(UsageError, match="ascending"):
        ratios.ratio_distribution(con, RatioQuery(), bins=(4, 1))


@pytest.mark.parametrize("by", [(), ("user",), ("user", "interactive"), ("account", "month")])
def test_an_empty_database_gives_no_groups_and_no_exclusions(con, by):
    for use_cube in (None, False):
        report = ratios.ratio_summary(con, RatioQuery(by=by), use_cube=use_cube)
        assert report.groups == () and dict(report.excluded) == {} and report.jobs == 0


@pytest.mark.parametrize("by", [("user", "interactive"), ("user", "month"), ("gpu_type",)])
def test_a_selection_without_counted_jobs_still_reports_its_exclusions(con, by):
    _insert(con, [{"gpus": 0, "gpu_type": None}, {"start": None, "elapsed_s": 0}])
    for use_cube in (None, False):
        report = ratios.ratio_summary(con, RatioQuery(by=by), use_cube=use_cube)
        assert report.groups == ()
        assert list(report.excluded.items()) == [("never_started", 1), ("no_gpus", 1)]


@pytest.mark.parametrize(
    "q",
    [
        RatioQuery(by=("user", "account", "month")),
        RatioQuery(by=("user", "account", "partition"), weight=Weight.gpu_hours),
    ],
)
def test_group_numbers_past_32_bits_are_exact(con, q):
    """2,000 users x 2,000 accounts (x 600 partitions) number groups past 2^31."""
    _insert(
        con,
        [
            {
                "user": f"u{i:04d}",
                "account": f"a{i:04d}",
                "partition": f"p{i % 600:03d}",
                "cpus": 1 + i % 16,
                "elapsed_s": 1000 + i,
                "start": T0 + dt.timedelta(days=i % 90),
            }
            for i in range(2000)
        ],
    )
    got = ratios.ratio_summary(con, q)
    assert planning.people_digits(con, q) is not None  # numbered on the people cube
    want = ratios.ratio_summary(con, q, use_cube=False)
    assert len(got.groups) == len(want.groups) == 2000
    for a, b in zip(got.groups, want.groups, strict=True):
        _same(a.as_row(), b.as_row())
    # the most GPU-hours below 8 cores/GPU: the last users (longest jobs) with 1-7 CPUs
    top = ratios.below_target(con, ratios.TargetQuery(q, fixed_cores_per_gpu=8.0, top=5))
    users = [b.group.keys["user"] for b in top.groups]
    assert users == ["u1990", "u1989", "u1988", "u1987", "u1986"]
    assert [b.group.jobs for b in top.groups] == [1] * 5


# --- the CLI ---------------------------------------------------------------------------


def _db_with_jobs(db_path: Path, jobs: list[dict]) -> str:
    c = store.connect(db_path)
    _insert(c, jobs)
    c.close()
    return str(db_path)


def test_ratios_json_is_one_array_with_keys_then_the_contract_fields(cli, db_path):
    db = _db_with_jobs(db_path, [{"cpus": 1, "gpus": 4}, {"cpus": 8}, {"gpus": 0}])
    code, out, err = cli("ratios", "--db", db, "--by", "gpu_type,cluster", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert isinstance(data, list) and len(data) == 1
    keys = list(data[0])
    assert keys[:10] == [
        "gpu_type",
        "cluster",
        "jobs",
        "gpu_hours",
        "p10",
        "p25",
        "p50",
        "p75",
        "p90",
        "mean",
    ]
    assert data[0]["jobs"] == 2 and data[0]["p50"] == pytest.approx(4.125)
    assert data[0]["share_jobs_below_1"] == 0.5


def test_ratios_excluded_json_lists_reasons_without_breaking_the_array(cli, db_path):
    db = _db_with_jobs(db_path, [{"cpus": 4}, {"gpus": 0}, {"gpus": 0}, {"start": None}])
    code, out, _ = cli("ratios", "--db", db, "--excluded", "--format", "json")
    assert code == 0
    assert json.loads(out) == [
        {"reason": "never_started", "jobs": 1},
        {"reason": "no_gpus", "jobs": 2},
    ]


def test_ratios_table_reports_exclusions_on_stderr(cli, db_path, monkeypatch):
    db = _db_with_jobs(db_path, [{"cpus": 4}, {"gpus": 0}])
    monkeypatch.setenv("COLUMNS", "200")  # a wide terminal, so cells are not wrapped
    code, out, err = cli("ratios", "--db", db)
    assert code == 0
    assert "H100" in out
    assert "Excluded 1 jobs (no_gpus 1)" in err


def test_ratios_csv_weighted_by_gpu_hours_has_a_header_and_one_line_per_group(cli, db_path):
    db = _db_with_jobs(db_path, [{"gpu_type": "A100", "cpus": 2}, {"gpu_type": "H100", "cpus": 1}])
    code, out, _ = cli("ratios", "--db", db, "--weight", "gpu-hours", "--format", "csv")
    assert code == 0
    lines = out.strip().splitlines()
    assert lines[0].startswith("gpu_type,jobs,gpu_hours,p10,")
    assert [ln.split(",")[0] for ln in lines[1:]] == ["A100", "H100"]


def test_ratios_bad_options_exit_with_the_usage_code_and_a_message(cli, db_path):
    db = _db_with_jobs(db_path, [{}])
    code, _, err = cli("ratios", "--db", db, "--by", "colour")
    assert code == 2 and err.startswith("Error: cannot group by colour")
    code, _, err = cli("ratios", "--db", db, "--thresholds", "1,two")
    assert code == 2 and "'two' is not a number" in err


def test_ratios_on_a_missing_database_says_how_to_create_it(cli, tmp_path):
    code, _, err = cli("ratios", "--db", str(tmp_path / "none.duckdb"))
    assert code == 4 and "advisor ingest" in err


# --- the pre-aggregated cube ---------------------------------------------------------------

_CUBE_QUERIES = [
    RatioQuery(by=("gpu_type",)),
    RatioQuery(by=("cluster", "gpu_type", "month"), weight=Weight.gpu_hours),
    RatioQuery(by=("interactive", "gpu_count", "partition"), thresholds_cores_per_gpu=(3, 16)),
    RatioQuery(
        by=("gpu_type",),
        start=dt.datetime(2024, 2, 1),
        end=dt.datetime(2024, 3, 1),
        states=("COMPLETED", "FAILED"),
        min_gpus=2,
        clusters=("research",),
    ),
    RatioQuery(by=()),
    # answered by ratio_cube_people
    RatioQuery(by=("user",), weight=Weight.gpu_hours),
    RatioQuery(by=("account", "gpu_type"), users=("u1", "u2"), min_gpus=2),
    RatioQuery(by=("user", "gpu_count"), partitions=("gpu",), thresholds_cores_per_gpu=(3,)),
    # answered by ratio_cube_people_months
    RatioQuery(by=("user", "month"), weight=Weight.gpu_hours),
    RatioQuery(by=("account", "interactive"), states=("FAILED",)),
    RatioQuery(
        by=("user", "partition", "gpu_type"),
        weight=Weight.gpu_hours,
        start=dt.datetime(2024, 2, 1),
        end=dt.datetime(2024, 3, 1),
        clusters=("research",),
        thresholds_cores_per_gpu=(2, 8),
    ),
    RatioQuery(
        by=("account", "gpu_count"),
        start=dt.datetime(2024, 1, 1),
        states=("COMPLETED", "TIMEOUT"),
        accounts=("a1", "a2"),
        min_gpus=2,
    ),
    # keys of the cube before people keys: groups are put in key order after numbering
    RatioQuery(by=("interactive", "user", "month"), weight=Weight.gpu_hours),
    RatioQuery(by=("gpu_count", "gpu_type", "user"), states=("COMPLETED",)),
    # answered by ratio_cube_people_month_ratios (months without states, labels, GPU counts)
    RatioQuery(by=("month", "user")),
    RatioQuery(
        by=("account", "month"),
        start=dt.datetime(2024, 2, 1),
        clusters=("teaching",),
        thresholds_cores_per_gpu=(2,),
    ),
    RatioQuery(by=("cluster", "account"), end=dt.datetime(2024, 3, 1), weight=Weight.gpu_hours),
]


def _varied_jobs(seed: int, n: int) -> list[dict]:
    rng = np.random.default_rng(seed)
    jobs = _random_jobs(seed, n)
    for j in jobs:
        j["start"] = T0 + dt.timedelta(seconds=int(rng.integers(0, 90 * 86400)))
        j["state"] = str(rng.choice(["COMPLETED", "FAILED", "TIMEOUT"]))
        j["is_interactive"] = [True, False, None][int(rng.integers(0, 3))]
        j["user"] = f"u{int(rng.integers(0, 6))}"
        j["account"] = f"a{int(rng.integers(0, 3))}"
        if rng.random() < 0.1:
            j["start"], j["elapsed_s"] = None, 0
        if rng.random() < 0.1:
            j["gpus"], j["gpu_type"] = 0, None
    return jobs


@pytest.mark.parametrize("q", _CUBE_QUERIES)
def test_the_cube_and_the_jobs_table_give_the_same_report(con, q):
    # node types with different fair shares, and one GPU type with none, so that a user's or
    # account's jobs fall under several fair shares
    con.execute(
        "INSERT INTO nodes (cluster, node_name, cpus, cpus_effective, gpus, gpu_type, "
        "snapshot_at) VALUES ('teaching', 'n1', 64, NULL, 8, 'H100', now()), "
        "('research', 'n2', 128, 124, 8, 'H100', now()), "
        "('teaching', 'n3', 64, NULL, 4, 'A100', now())"
    )
    _insert(con, _varied_jobs(21, 1500))
    assert ratios.cube_answers(q) or ratios.people_cube_answers(q)
    from_jobs = ratios.ratio_summary(con, q, use_cube=False)
    from_cube = ratios.ratio_summary(con, q, use_cube=True)
    assert ratios.cube_is_fresh(con)
    assert from_jobs.groups
    assert from_jobs.excluded or q.start is not None  # never-started jobs fall before Feb
    assert from_cube.excluded == from_jobs.excluded
    assert len(from_cube.groups) == len(from_jobs.groups)
    assert any(g.jobs_with_fair_share for g in from_jobs.groups)
    for a, b in zip(from_cube.groups, from_jobs.groups, strict=True):
        _same(a.as_row(), b.as_row())
    d_jobs = ratios.ratio_distribution(con, q, use_cube=False)
    d_cube = ratios.ratio_distribution(con, q, use_cube=True)
    for a, b in zip(d_cube.histogram_records(), d_jobs.histogram_records(), strict=True):
        _same(a, b)
    for a, b in zip(d_cube.ecdf_records(), d_jobs.ecdf_records(), strict=True):
        _same(a, b)


def test_groups_numbered_past_a_bigint_are_summarised_by_name_with_the_same_result(
    con, monkeypatch
):
    """People keys whose ids would number groups past a BIGINT (hundreds of thousands of users
    times accounts, partitions...) fall back to grouping the people facts by name."""
    _insert(con, _varied_jobs(22, 600))
    ratios.refresh_ratio_cube(con)
    queries = [RatioQuery(by=("user", "month")), RatioQuery(by=("account", "partition"))]
    expected = [ratios.ratio_summary(con, q, use_cube=False) for q in queries]
    monkeypatch.setattr(planning, "_BIGINT_GROUPS", 2)
    for q, want in zip(queries, expected, strict=True):
        assert planning.people_digits(con, q) is None
        got = ratios.ratio_summary(con, q, use_cube=True)
        assert got.excluded == want.excluded
        assert len(got.groups) == len(want.groups) > 1
        for a, b in zip(got.groups, want.groups, strict=True):
            _same(a.as_row(), b.as_row())


def test_month_summaries_of_people_read_the_cube_summed_over_states(con):
    _insert(con, _varied_jobs(23, 500))
    q = RatioQuery(by=("user", "month"))
    first = ratios.ratio_summary(con, q)
    assert [type(v) for v in first.groups[0].keys.values()] == [str, str]
    assert first.groups[0].keys["month"] == "2024-01"
    # the cube holds what ratio_cube_people_months holds, states and labels summed away
    totals = "SELECT pid, month, sum(jobs), sum(gpu_seconds) FROM {} GROUP BY ALL ORDER BY ALL"
    assert (
        con.execute(totals.format("ratio_cube_people_month_ratios")).fetchall()
        == con.execute(totals.format("ratio_cube_people_months")).fetchall()
    )
    # it is what answers: doubled counts there double the report's, and nothing else changes
    con.execute("UPDATE ratio_cube_people_month_ratios SET jobs = 2 * jobs")
    doubled = ratios.ratio_summary(con, q)
    assert [g.jobs for g in doubled.groups] == [2 * g.jobs for g in first.groups]
    assert doubled.excluded == {r: 2 * n for r, n in first.excluded.items()}
    assert ratios.ratio_summary(con, RatioQuery(by=("user",), states=("COMPLETED",))).jobs > 0
    # a reason advisor does not know is an error, not jobs silently dropped
    con.execute(
        "UPDATE ratio_cube_people_month_ratios SET excluded_reason = 'odd' "
        "WHERE excluded_reason = 'no_gpus'"
    )
    with pytest.raises(StoreError, match="exclusion reason"):
        ratios.ratio_summary(con, q)


def _same(a: dict, b: dict) -> None:
    assert list(a) == list(b)
    for k in a:
        if isinstance(b[k], float):
            assert a[k] == pytest.approx(b[k], rel=1e-12, nan_ok=True), k
        else:
            assert a[k] == b[k], k


def test_each_cube_answers_only_the_queries_its_columns_allow():
    assert not ratios.cube_answers(RatioQuery(by=("user",)))
    assert not ratios.cube_answers(RatioQuery(accounts=("lab",)))
    assert not ratios.cube_answers(RatioQuery(start=dt.datetime(2024, 2, 3)))
    assert ratios.cube_answers(RatioQuery(start=dt.datetime(2024, 2, 1), end=None))
    assert ratios.people_cube_answers(RatioQuery(by=("user", "gpu_type"), accounts=("lab",)))
    assert ratios.people_cube_answers(RatioQuery(by=("user", "month", "interactive")))
    assert ratios.people_cube_answers(RatioQuery(by=("user",), states=("COMPLETED",)))
    assert ratios.people_cube_answers(RatioQuery(by=("user",), start=dt.datetime(2024, 2, 1)))
    assert not ratios.people_cube_answers(RatioQuery(by=("user",), end=dt.datetime(2024, 2, 9)))


def test_user_queries_with_a_time_range_read_the_jobs_table_and_agree_with_it(con):
    _insert(con, _varied_jobs(8, 600))
    q = RatioQuery(by=("user",), start=dt.datetime(2024, 1, 10), end=dt.datetime(2024, 2, 20))
    assert not ratios.cube_answers(q) and not ratios.people_cube_answers(q)
    users = {j["user"] for j in _varied_jobs(8, 600)}
    got = ratios.ratio_summary(con, q)
    assert {g.keys["user"] for g in got.groups} <= users
    assert got.jobs == sum(
        1
        for j in _varied_jobs(8, 600)
        if j["start"] is not None
        and dt.datetime(2024, 1, 10) <= j["start"] < dt.datetime(2024, 2, 20)
        and j["gpus"] > 0
    )


def test_the_cube_is_rebuilt_when_jobs_change_so_it_is_never_read_stale(con):
    _insert(con, [{"cpus": 1}])
    assert ratios.ratio_summary(con).groups[0].p50_cores_per_gpu == 1.0
    assert ratios.cube_is_fresh(con)
    _insert(con, [{"cpus": 9, "job_id_raw": 5}, {"cpus": 9, "job_id_raw": 6}])
    assert not ratios.cube_is_fresh(con)
    assert ratios.ratio_summary(con).groups[0].p50_cores_per_gpu == 9.0
    assert ratios.cube_is_fresh(con)
    # a later finished ingest (e.g. jobs updated in place) also makes it stale
    con.execute(
        "INSERT INTO ingests (source, format, started_at, finished_at, status) "
        "VALUES ('x', 'sacct-text', now(), now(), 'done')"
    )
    assert not ratios.cube_is_fresh(con)


def test_a_read_only_connection_never_writes_and_can_build_a_private_cube(db_path):
    c = store.connect(db_path)
    _insert(c, [{"cpus": 2}, {"cpus": 4}])
    c.close()
    ro = store.connect(db_path, read_only=True)
    assert not ratios.cube_is_fresh(ro)
    assert ratios.ratio_summary(ro).groups[0].p50_cores_per_gpu == 3.0  # read from jobs
    assert ratios.ensure_ratio_cube(ro) is True  # a TEMP cube for this connection
    assert ratios.cube_is_fresh(ro) and ratios.ensure_ratio_cube(ro) is False
    assert ratios.ratio_summary(ro).groups[0].p50_cores_per_gpu == 3.0
    ro.close()
    c = store.connect(db_path)
    # the derived tables are created by the first writable rebuild: none was stored
    stored = "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'ratio_cube_state'"
    assert c.execute(stored).fetchone() == (0,)
    c.close()


def test_ratios_cli_filters_by_time_state_and_gpu_count(cli, db_path):
    db = _db_with_jobs(
        db_path,
        [
            {"start": dt.datetime(2024, 3, 5), "state": "COMPLETED", "gpus": 4, "cpus": 4},
            {"start": dt.datetime(2024, 3, 6), "state": "FAILED", "gpus": 4, "cpus": 32},
            {"start": dt.datetime(2024, 4, 1), "state": "COMPLETED", "gpus": 4, "cpus": 64},
            {"start": dt.datetime(2024, 3, 7), "state": "COMPLETED", "gpus": 1, "cpus": 64},
        ],
    )
    code, out, err = cli(
        "ratios",
        "--db",
        db,
        "--by",
        "",
        "--start",
        "2024-03-01",
        "--end",
        "2024-04-01",
        "--state",
        "COMPLETED,failed",
        "--min-gpus",
        "2",
        "--format",
        "json",
    )
    assert code == 0, err
    data = json.loads(out)
    assert [(r["jobs"], r["p50"]) for r in data] == [(2, 4.5)]


def test_refreshing_the_cube_inside_a_transaction_joins_it(con):
    _insert(con, [{"cpus": 2}])
    con.execute("BEGIN TRANSACTION")
    ratios.refresh_ratio_cube(con, in_transaction=True)
    con.execute("ROLLBACK")
    assert not ratios.cube_is_fresh(con)  # rolled back with the caller's transaction
    assert ratios.refresh_ratio_cube(con) == 1
    assert ratios.cube_is_fresh(con)


def test_time_bounds_with_a_time_zone_are_taken_in_utc(con):
    _insert(con, [{"start": dt.datetime(2024, 3, 1, 0, 30), "cpus": 2}])
    cet = dt.timezone(dt.timedelta(hours=1))
    # 01:00 CET on 1 March is 00:00 UTC: the job (00:30 UTC) is inside [start, end)
    q = RatioQuery(by=(), start=dt.datetime(2024, 3, 1, 1, 0, tzinfo=cet))
    assert ratios.ratio_summary(con, q).jobs == 1
    q = RatioQuery(by=(), start=dt.datetime(2024, 3, 1, 2, 0, tzinfo=cet))
    assert ratios.ratio_summary(con, q).jobs == 0
    with pytest.raises(UsageError, match="time range is empty"):
        ratios.ratio_summary(con, RatioQuery(start=dt.datetime(2024, 3, 2), end=q.start))


_TARGETS = (("gpu", "H100", 8.0), ("gpu", "A100", 4.0), ("debug", "H100", 16.0))
_BELOW_TARGET_QUERIES = [
    # people cubes: all time, then months and states
    RatioQuery(by=("user", "partition", "gpu_type"), weight=Weight.gpu_hours),
    RatioQuery(
        by=("account", "partition", "gpu_type"),
        start=dt.datetime(2024, 2, 1),
        end=dt.datetime(2024, 3, 1),
        states=("COMPLETED",),
        clusters=("research",),
    ),
    RatioQuery(by=("user", "partition", "gpu_type", "cluster"), min_gpus=2, users=("u1", "u3")),
    # ratio_cube (no people), and the jobs table (bounds inside a month)
    RatioQuery(by=("partition", "gpu_type"), weight=Weight.gpu_hours),
    RatioQuery(by=("user", "partition", "gpu_type"), start=dt.datetime(2024, 1, 10)),
]


def _below_target_jobs() -> list[dict]:
    jobs = _varied_jobs(33, 1500)
    for k, j in enumerate(jobs):
        j["partition"] = ["gpu", "debug", "long"][k % 3]  # "long" has no target
    return jobs


@pytest.mark.parametrize("q", _BELOW_TARGET_QUERIES)
@pytest.mark.parametrize("fixed", [None, 6.0])
def test_below_target_ranks_groups_as_a_full_summary_of_every_group_would(con, q, fixed):
    _insert(con, _below_target_jobs())
    targets = () if fixed is not None else _TARGETS
    tq = ratios.TargetQuery(q, targets_cores_per_gpu=targets, fixed_cores_per_gpu=fixed, top=5)
    got = ratios.below_target(con, tq)
    target_of = {(p, g): t for p, g, t in _TARGETS}
    everything = sorted({t for *_, t in _TARGETS} | ({fixed} if fixed else set()))
    full = ratios.ratio_summary(
        con, replace(q, thresholds_cores_per_gpu=tuple(everything)), use_cube=False
    )
    expected = []
    for g in full.groups:
        t = fixed if fixed is not None else target_of.get((g.keys["partition"], g.keys["gpu_type"]))
        if t is None or not g.gpu_hours or not g.share_gpu_hours_below[t]:
            continue
        expected.append((g.gpu_hours * g.share_gpu_hours_below[t], t, g))
    # most GPU-hours below first; ties are not expected in this data
    expected.sort(key=lambda e: -e[0])
    expected = expected[:5]
    assert len(expected) == 5 or len(got.groups) == len(expected)
    assert got.groups_counted == len(full.groups)
    assert got.excluded == full.excluded
    assert [b.group.keys for b in got.groups] == [e[2].keys for e in expected]
    shown = replace(q, thresholds_cores_per_gpu=tuple(sorted({e[1] for e in expected})))
    exact = {
        tuple(g.keys.values()): g for g in ratios.ratio_summary(con, shown, use_cube=False).groups
    }
    for b, (w_below, t, g) in zip(got.groups, expected, strict=True):
        assert b.target_cores_per_gpu == t
        assert b.gpu_hours_below == pytest.approx(w_below, rel=1e-12)
        assert b.jobs_below == round(g.share_jobs_below[t] * g.jobs)
        _same(b.group.as_row(), exact[tuple(b.group.keys.values())].as_row())
    # the jobs table gives the very same answer
    assert ratios.below_target(con, tq, use_cube=False) == got


def test_below_target_lists_only_groups_with_gpu_hours_below_and_counts_all_groups(con):
    _insert(
        con,
        [
            {"cpus": 16, "user": "big"},
            {"cpus": 2, "user": "small"},
            {"cpus": 2, "user": "nogpu", "gpus": 0, "gpu_type": None},
        ],
    )
    q = RatioQuery(by=("user", "partition", "gpu_type"), weight=Weight.gpu_hours)
    got = ratios.below_target(con, ratios.TargetQuery(q, fixed_cores_per_gpu=8.0))
    assert [b.group.keys["user"] for b in got.groups] == ["small"]
    assert got.groups[0].gpu_hours_below == 1.0 and got.groups[0].jobs_below == 1
    assert got.groups_counted == 2 and got.excluded == {"no_gpus": 1}


def test_below_target_breaks_ties_by_the_key_values_with_missing_ones_last(con, monkeypatch):
    # four groups with the same GPU-hours below the target: ranked by user, then partition,
    # a missing user or partition last, on the people cube as on the jobs table
    _insert(
        con,
        [
            {"cpus": 2, "user": u, "partition": p}
            for u, p in (("zed", "gpu"), (None, "gpu"), ("amy", None), ("amy", "gpu"))
        ],
    )
    q = RatioQuery(by=("user", "partition", "gpu_type"))
    tq = ratios.TargetQuery(q, fixed_cores_per_gpu=8.0, top=3)
    got = ratios.below_target(con, tq)
    assert [(b.group.keys["user"], b.group.keys["partition"]) for b in got.groups] == [
        ("amy", "gpu"),
        ("amy", None),
        ("zed", "gpu"),
    ]
    assert got.groups_counted == 4
    assert ratios.below_target(con, tq, use_cube=False) == got
    # numbers too large for a BIGINT are HUGEINTs, in the same order
    monkeypatch.setattr(planning, "_BIGINT_GROUPS", 2)
    assert ratios.below_target(con, tq) == got
    # the cubes held in memory (the dashboard's) break the ties the same way
    from advisor.ratios.inmemory import PeopleInMemory

    ratios.refresh_people_months(con)
    memory = PeopleInMemory.load(con)
    assert memory is not None and memory.below_target(tq) == got


def test_below_target_needs_one_kind_of_target_and_the_keys_it_is_given_for(con):
    q = RatioQuery(by=("user",))
    with pytest.raises(UsageError, match="either"):
        ratios.below_target(con, ratios.TargetQuery(q))
    with pytest.raises(UsageError, match="partition and GPU type"):
        ratios.below_target(con, ratios.TargetQuery(q, targets_cores_per_gpu=_TARGETS))
    with pytest.raises(UsageError, match="top"):
        ratios.below_target(con, ratios.TargetQuery(q, fixed_cores_per_gpu=4.0, top=0))


def _months_rows(c: duckdb.DuckDBPyConnection) -> int:
    row = c.execute("SELECT count(*) FROM ratio_cube_people_months").fetchone()
    return int(row[0]) if row else 0


def test_the_per_month_people_cube_is_built_on_first_use_not_by_every_rebuild(con):
    _insert(con, _varied_jobs(5, 400))
    ratios.refresh_ratio_cube(con)
    assert ratios.cube_is_fresh(con) and not ratios.people_months_are_fresh(con)
    assert _months_rows(con) == 0
    ratios.ratio_summary(con, RatioQuery(by=("user", "gpu_type")))  # all time: not needed
    assert _months_rows(con) == 0
    q = RatioQuery(by=("user", "month"), states=("COMPLETED",))
    got = ratios.ratio_summary(con, q)
    assert ratios.people_months_are_fresh(con) and _months_rows(con) > 0  # stored
    for a, b in zip(got.groups, ratios.ratio_summary(con, q, use_cube=False).groups, strict=True):
        _same(a.as_row(), b.as_row())
    # new jobs make it stale again; a rebuild empties it
    _insert(con, [{"cpus": 3, "job_id_raw": 99_999}])
    assert not ratios.people_months_are_fresh(con)
    ratios.refresh_ratio_cube(con)
    assert _months_rows(con) == 0 and not ratios.people_months_are_fresh(con)


def test_a_read_only_connection_reads_jobs_or_builds_a_private_per_month_people_cube(db_path):
    c = store.connect(db_path)
    _insert(c, _varied_jobs(6, 300))
    ratios.refresh_ratio_cube(c)  # what an ingest leaves: the per-month people cube unbuilt
    c.close()
    q = RatioQuery(by=("account", "partition", "gpu_type"), start=dt.datetime(2024, 2, 1))
    ro = store.connect(db_path, read_only=True)
    from_jobs = ratios.ratio_summary(ro, q)  # read from jobs, nothing built
    assert not ratios.people_months_are_fresh(ro)
    built = ratios.ratio_summary(ro, q, use_cube=True)  # TEMP tables of this connection
    assert ratios.people_months_are_fresh(ro)
    for a, b in zip(built.groups, from_jobs.groups, strict=True):
        _same(a.as_row(), b.as_row())
    ro.close()
    c = store.connect(db_path)
    assert _months_rows(c) == 0 and not ratios.people_months_are_fresh(c)
    c.close()


def test_stored_fresh_cubes_serve_read_only_readers_without_private_copies(db_path):
    """What `advisor dashboard` does before serving: every cube stored fresh in the file, once."""
    c = store.connect(db_path)
    _insert(c, _varied_jobs(7, 300))
    c.close()
    assert ratios.store_fresh_cubes(db_path)
    ro = store.connect(db_path, read_only=True)
    assert ratios.cube_is_fresh(ro) and ratios.people_months_are_fresh(ro)
    assert _months_rows(ro) > 0
    temp = ro.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchone()
    ro.close()
    assert temp == (0,)


def test_storing_fresh_cubes_changes_nothing_when_another_process_writes(db_path, tmp_path):
    import subprocess
    import sys

    c = store.connect(db_path)
    _insert(c, _varied_jobs(8, 50))
    c.close()
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True);"
            " time.sleep(60)",
            str(db_path),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"held"
        assert ratios.store_fresh_cubes(db_path) is False
    finally:
        holder.kill()
        holder.wait()
    ro = store.connect(db_path, read_only=True)
    assert not ratios.cube_is_fresh(ro)
    ro.close()
