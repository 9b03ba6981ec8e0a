"""advisor.fixplan over a real DuckDB file: the Overview's and the report's answer per cluster
and partition is recommend_partitions' numbers, and the settings carry its DefCpuPerGPU."""

from __future__ import annotations

import pytest

from advisor import fixplan, recommend
from tests.test_app_data import make_db


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    return str(make_db(tmp_path_factory.mktemp("fix") / "fix.duckdb", "gpu"))


def test_each_cluster_and_partition_carries_recommend_partitions_numbers(db):
    plan = fixplan.fix_plan(fixplan.FixQuery(db=db))
    assert {r.cluster for r in plan.rows} == {"teach", "research"}
    for cluster in ("teach", "research"):
        rep = recommend.recommend_partitions(recommend.PartitionQuery(db=db, clusters=(cluster,)))
        want = {(r.partition, r.gpu_type): r for r in rep.rows}
        got = {(r.partition, r.gpu_type): r for r in plan.rows if r.cluster == cluster}
        assert got.keys() == want.keys()
        for k, r in got.items():
            assert r.gpu_hours_lost_per_month == pytest.approx(want[k].gpu_hours_lost_per_month)
            assert r.fix_usd_per_month == pytest.approx(want[k].fix_usd_per_month)
            assert r.def_cpu_per_gpu == want[k].def_cpu_per_gpu
    losses = [r.gpu_hours_lost_per_month for r in plan.rows]
    assert losses == sorted(losses, reverse=True)
    assert plan.gpu_hours_lost_per_month == pytest.approx(sum(losses))
    assert plan.fix_usd_per_month == pytest.approx(sum(r.fix_usd_per_month for r in plan.rows))


def test_the_settings_of_each_cluster_set_its_partitions_def_cpu_per_gpu(db):
    plan = fixplan.fix_plan(fixplan.FixQuery(db=db))
    by_cluster = {s.cluster: s for s in plan.settings}
    assert set(by_cluster) == {"teach", "research"}
    for r in plan.rows:
        best = max(
            x.def_cpu_per_gpu
            for x in plan.rows
            if x.cluster == r.cluster and x.partition == r.partition
        )
        assert (
            f"PartitionName={r.partition} DefCpuPerGPU={best}" in by_cluster[r.cluster].slurm_conf
        )
        assert f'partition = "{r.partition}"' in by_cluster[r.cluster].lua


def test_filters_narrow_the_rows_and_an_unmatched_filter_gives_an_empty_plan(db):
    plan = fixplan.fix_plan(fixplan.FixQuery(db=db, clusters=("teach",), partitions=("debug",)))
    assert plan.rows and {(r.cluster, r.partition) for r in plan.rows} == {("teach", "debug")}
    empty = fixplan.fix_plan(fixplan.FixQuery(db=db, gpu_types=("B200",)))
    assert empty.rows == () and empty.settings == () and empty.gpu_hours_lost_per_month == 0


def test_the_assumptions_read_as_an_admin_would_say_them():
    text = fixplan.assumptions_in_words(recommend.Workload(model_params_b=70, load_rps=16), 0.2)
    assert "model of 70B parameters" in text and "16 long requests per second" in text
    assert "wait for a CPU at most 20% of the time (--max-wait)" in text
    assert "enough cores" in text and "TTFT" not in text


def test_merged_single_cluster_plans_narrowed_equal_the_narrow_query(db):
    plans = [
        fixplan.fix_plan(fixplan.FixQuery(db=db, clusters=(c,))) for c in ("research", "teach")
    ]
    merged = fixplan.merge(plans, partitions=("gpu",), gpu_types=("H100",))
    direct = fixplan.fix_plan(fixplan.FixQuery(db=db, partitions=("gpu",), gpu_types=("H100",)))
    assert [(r.cluster, r.partition, r.gpu_type) for r in merged.rows] == [
        (r.cluster, r.partition, r.gpu_type) for r in direct.rows
    ]
    for a, b in zip(merged.rows, direct.rows, strict=True):
        assert a.gpu_hours_lost_per_month == pytest.approx(b.gpu_hours_lost_per_month)
        assert a.def_cpu_per_gpu == b.def_cpu_per_gpu
    assert merged.fix_usd_per_month == pytest.approx(direct.fix_usd_per_month)
    assert [s.slurm_conf.splitlines()[3:] for s in merged.settings] == [
        s.slurm_conf.splitlines()[3:] for s in direct.settings
    ]
    assert fixplan.merge(plans, gpu_types=("B200",)).rows == ()
    # the plan of every cluster, narrowed to one, is that cluster's own plan
    every = fixplan.fix_plan(fixplan.FixQuery(db=db, clusters=("research", "teach")))
    teach = fixplan.merge([every], clusters=("teach",))

    def rules(lua: str) -> list[str]:  # the policy without its time stamp
        return [line for line in lua.splitlines() if "generated_at" not in line]

    assert teach.rows == plans[1].rows
    assert rules(teach.settings[0].lua) == rules(plans[1].settings[0].lua)


def test_a_plan_read_on_the_callers_connection_is_the_same_and_leaves_it_open(db):
    from advisor import store

    con = store.connect(db, read_only=True)
    try:
        on_con = fixplan.fix_plan(fixplan.FixQuery(db=db), con)
        assert con.execute("SELECT count(*) FROM jobs").fetchone()[0] > 0  # still open
    finally:
        con.close()
    own = fixplan.fix_plan(fixplan.FixQuery(db=db))
    assert on_con.rows == own.rows and on_con.fix_usd_per_month == own.fix_usd_per_month


def test_less_than_a_month_of_data_gives_its_totals_not_a_rate_scaled_up(tmp_path):
    one = str(make_db(tmp_path / "one.duckdb", "one_job"))  # 1 GPU, 1 CPU, 1 hour
    plan = fixplan.fix_plan(fixplan.FixQuery(db=one))
    (row,) = plan.rows
    assert row.gpu_hours == pytest.approx(1.0)
    assert 0 < plan.gpu_hours_lost_per_month <= row.gpu_hours
    assert not plan.per_month and plan.period == "in the 1 hour of data"
    merged = fixplan.merge([plan])
    assert merged.period == plan.period and merged.rows == plan.rows


@pytest.mark.parametrize(
    ("hours", "words"),
    [
        (0.5, "in the 30 minutes of data"),
        (0.001, "in the 1 minute of data"),
        (1.0, "in the 1 hour of data"),
        (30.2, "in the 30 hours of data"),
        (24.0 * 9, "in the 9 days of data"),
        (24.0 * 31, "per month"),
    ],
)
def test_the_period_names_the_span_when_it_is_shorter_than_a_month(hours, words):
    assert fixplan.period_words(hours) == words


def test_a_month_of_data_or_more_is_a_rate_per_month(db):
    plan = fixplan.fix_plan(fixplan.FixQuery(db=db))
    assert plan.per_month and plan.period == "per month"


def test_the_overview_and_the_months_report_agree_on_one_hour_of_data(tmp_path):
    from pathlib import Path

    from advisor import report, store

    one = make_db(tmp_path / "one.duckdb", "one_job")
    plan = fixplan.fix_plan(fixplan.FixQuery(db=str(one)))
    inputs = report.load_inputs(report.ReportConfig(out_dir=Path(tmp_path)), one)
    con = store.connect(one, read_only=True)
    try:
        month = report.build_report(con, report.parse_month("2024-03"), None, inputs)
    finally:
        con.close()
    assert month.gpu_hours_lost_total == pytest.approx(plan.gpu_hours_lost_per_month)
    assert month.usd_to_fix_total == pytest.approx(plan.fix_usd_per_month)
    assert month.small_sample
