"""The dashboard through Streamlit's AppTest, against real DuckDB files (tests/test_app_data.py).

Every page is run on a database with GPU jobs, an empty one, one with only CPU jobs and one with
an unrecognised GPU type; the numbers shown are checked against the core functions the pages
call, and the sidebar filters and the privacy setting are checked to change what is shown.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor import ratios, store
from advisor.wording import cores_text
from tests.test_app_data import make_db

APP = Path(__file__).resolve().parent.parent / "app" / "streamlit_app.py"
PAGES = ("overview", "trends", "who", "recommend", "benchmarks", "data")
# Charts each page must draw on the GPU database.
CHARTS = {"overview": 2, "trends": 2, "who": 1, "recommend": 1, "benchmarks": 2, "data": 1}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("dash")
    return {
        k: make_db(root / f"{k}.duckdb", k) for k in ("gpu", "empty", "cpu_only", "unknown_gpu")
    }


def _app(monkeypatch, db: Path) -> AppTest:
    monkeypatch.setenv("ADVISOR_DB", str(db))
    monkeypatch.delenv("ADVISOR_HASH_USERS", raising=False)
    return AppTest.from_file(str(APP), default_timeout=60)


def _open(at: AppTest, page: str) -> AppTest:
    if page == "overview":
        at.switch_page("app_pages/overview.py")
    else:
        at.switch_page(f"app_pages/{page}.py")
    return at.run()


def _charts(at: AppTest) -> list:
    return list(at.get("vega_lite_chart"))


def chart_rows(chart) -> list[dict]:
    """Every data row a drawn chart carries (Streamlit ships datasets as Arrow, beside the spec)."""
    import pyarrow as pa

    rows = [r for d in json.loads(chart.proto.spec).get("datasets", {}).values() for r in d]
    for ds in chart.proto.datasets:
        rows.extend(pa.ipc.open_stream(ds.data.data).read_pandas().to_dict("records"))
    return rows


def _no_exception(at: AppTest, page: str) -> None:
    assert not at.exception, f"{page}: {[e.value for e in at.exception]}"


def test_every_page_renders_its_charts_without_an_exception_on_gpu_jobs(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    for page in PAGES:
        _open(at, page)
        _no_exception(at, page)
        assert not at.error, f"{page}: {[e.value for e in at.error]}"
        assert len(_charts(at)) >= CHARTS.get(page, 0), page
        assert at.title, page


def test_overview_shows_the_core_p50_per_gpu_type_and_one_histogram_panel_each(monkeypatch, dbs):
    con = store.connect(dbs["gpu"], read_only=True)
    expected = {g.keys["gpu_type"]: g for g in ratios.ratio_summary(con).groups}
    con.close()
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    shown = {m.label.split(":")[0]: m for m in at.metric if m.label.endswith("P50 cores/GPU")}
    assert set(shown) == set(expected) == {"H100", "A100"}
    for gpu_type, g in expected.items():
        assert shown[gpu_type].value == cores_text(g.p50_cores_per_gpu)
        assert f"{g.jobs:,} jobs" in shown[gpu_type].delta
    spec = json.loads(_charts(at)[0].proto.spec)
    assert spec["facet"]["row"]["sort"] == ["H100", "A100"]  # most jobs first


def _per_gpu_type(at: AppTest):
    """The Overview's per-GPU-type table (the answer's table comes first)."""
    return next(d.value for d in at.dataframe if "p50" in d.value.columns)


def test_overview_leads_with_the_loss_its_value_the_fix_and_the_settings(monkeypatch, dbs):
    from advisor import fixplan

    plan = fixplan.fix_plan(
        fixplan.FixQuery(db=str(dbs["gpu"]), workload=ratios_workload(), tolerance=0.10)
    )
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _no_exception(at, "overview")
    metrics = {m.label: m.value for m in at.metric}
    assert plan.per_month  # six months of jobs: a rate
    # an upper bound, said so, with an interval that brackets it and carries the fit's spread
    # and the model's held-out error (the error Recommend states), and the share of the GPU time
    assert metrics["GPU-hours lost per month"] == f"{plan.gpu_hours_lost_per_month:,.0f}"
    assert metrics["Their value per month"] == f"${plan.lost_usd_per_month:,.0f}"
    deltas = {m.label: m.proto.delta for m in at.metric}
    e = plan.model_error
    assert e is not None and 0.05 < e < 2
    lo, hi = (sum(r.gpu_hours_lost_per_month_interval[i] for r in plan.rows) for i in (0, 1))
    point = plan.gpu_hours_lost_per_month
    lo, hi = min(lo, point) * (1 - e), max(hi, point) * (1 + e)
    assert lo <= point <= hi
    share = plan.gpu_hours_lost_per_month / sum(r.gpu_hours_per_month for r in plan.rows)
    assert deltas["GPU-hours lost per month"].startswith(f"90% interval {lo:,.0f} to {hi:,.0f}")
    assert deltas["Their value per month"].startswith("90% interval $")
    shown = " ".join(m.value for m in at.markdown)
    assert f"{share:.0%} of the " in shown
    assert " GPU-h the jobs ran; an upper bound: it counts every GPU job as an LLM server" in shown
    assert f"the model's ±{e:.0%} error included" in shown
    assert ":orange-badge[:material/warning: A100: extrapolated from H100, H200 and RTX" in shown
    captions = " ".join(c.value for c in at.caption)
    assert "The fewest cores per job, never below 2 + N" in captions and "90% interval" in captions
    assert "Data up to 2024-06-28, " in captions and " days old" in captions
    assert metrics["Cost of the fix per month"] == f"${plan.fix_usd_per_month:,.0f}"
    answer = at.dataframe[0].value
    assert list(answer.columns[:4]) == ["cluster", "partition", "gpu_type", "def_cpu_per_gpu"]
    assert answer["gpu_hours_lost_per_month"].tolist() == pytest.approx(
        [r.gpu_hours_lost_per_month for r in plan.rows]
    )
    codes = [c.value for c in at.code]
    assert any(f"PartitionName={plan.rows[0].partition} DefCpuPerGPU=" in c for c in codes)
    assert any("return {" in c for c in codes)  # the Lua policy
    # a long line of the Lua policy wraps instead of running off a 1440 px window
    assert all(c.proto.wrap_lines for c in at.code)
    assert any("model of 8B parameters" in c.value for c in at.caption)


def test_overview_of_one_hour_of_data_shows_its_totals_named_so_not_a_monthly_rate(
    monkeypatch, tmp_path
):
    from advisor import fixplan

    db = make_db(tmp_path / "one.duckdb", "one_job")  # 1 GPU, 1 CPU, 1 hour
    plan = fixplan.fix_plan(fixplan.FixQuery(db=str(db), workload=ratios_workload()))
    at = _app(monkeypatch, db)
    at.run()
    _no_exception(at, "overview")
    metrics = {m.label: m.value for m in at.metric}
    assert "GPU-hours lost per month" not in metrics
    lost = float(metrics["GPU-hours lost in the 1 hour of data"])
    assert lost == pytest.approx(plan.gpu_hours_lost_per_month, abs=0.5) and lost <= 1
    assert "Cost of the fix in the 1 hour of data" in metrics
    text = " ".join(m.value for m in at.markdown) + " ".join(c.value for c in at.caption)
    assert "not a rate per month" in text and "1 CPU core per GPU" in text
    assert any("Small sample: 1 GPU job matches the" in i.value for i in at.info)
    # the Recommend page's partition table names the span too
    _open(at, "recommend")
    _no_exception(at, "recommend")
    (table,) = [d for d in at.dataframe if "partition" in d.value.columns]
    labels = {k: v.get("label") for k, v in json.loads(table.proto.columns).items()}
    assert labels["gpu_hours_lost_per_month"] == "Lost GPU-h in the 1 hour of data"


def ratios_workload():
    from app.assumptions import Assumptions

    return Assumptions().workload


def test_overview_switches_to_an_ecdf_weighted_by_gpu_hours(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    at.button_group(key="ov_view").set_value("ECDF")
    at.button_group(key="ov_weight").set_value("GPU-hours")
    at.run()
    _no_exception(at, "overview")
    spec = json.loads(_charts(at)[0].proto.spec)
    # the lines, their P25/P50 diamonds, and the answer circled on each line
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["line", "point", "point"]
    assert spec["layer"][2]["encoding"]["color"]["value"] == "#2ca02c"
    assert "GPU-hours" in spec["layer"][0]["encoding"]["y"]["title"]


def test_cluster_filter_in_the_sidebar_narrows_every_number(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    before = _per_gpu_type(at).set_index("gpu_type")["jobs"].sum()
    at.sidebar.multiselect(key="f_clusters").set_value(["teach"]).run()
    after = _per_gpu_type(at).set_index("gpu_type")["jobs"]
    assert set(at.dataframe[0].value["cluster"]) == {"teach"}
    assert before == 600 and after.sum() == 300
    con = store.connect(dbs["gpu"], read_only=True)
    teach = ratios.ratio_summary(con, ratios.RatioQuery(clusters=("teach",)))
    con.close()
    assert {g.keys["gpu_type"]: g.jobs for g in teach.groups} == after.to_dict()
    # the filter holds on the next page too
    _open(at, "who")
    assert at.dataframe[0].value["jobs"].sum() <= 300


def test_month_range_filter_keeps_only_jobs_started_in_those_months(monkeypatch, dbs):
    import datetime as dt

    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    months = at.sidebar.select_slider(key="f_months")
    assert months.options == ["2024-01", "2024-02", "2024-03", "2024-04", "2024-05", "2024-06"]
    months.set_value(("2024-02", "2024-02")).run()
    _no_exception(at, "overview")
    con = store.connect(dbs["gpu"], read_only=True)
    feb = ratios.ratio_summary(
        con, ratios.RatioQuery(start=dt.datetime(2024, 2, 1), end=dt.datetime(2024, 3, 1))
    )
    con.close()
    shown = _per_gpu_type(at).set_index("gpu_type")["jobs"].to_dict()
    assert shown == {g.keys["gpu_type"]: g.jobs for g in feb.groups}
    assert 0 < sum(shown.values()) < 600


def test_trends_split_by_partition_draws_one_line_per_partition(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "trends")
    at.button_group(key="tr_split").set_value("partition").run()
    _no_exception(at, "trends")
    spec = json.loads(_charts(at)[0].proto.spec)
    assert spec["layer"][0]["encoding"]["color"]["field"] == "partition"
    table = at.dataframe[0].value
    assert set(table["partition"]) == {"gpu", "debug"}
    assert sorted(set(table["month"])) == [f"2024-0{m}" for m in range(1, 7)]  # as 2024-01


def test_who_targets_each_partition_with_the_recommended_flag(monkeypatch, dbs):
    from advisor import recommend

    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "who")
    _no_exception(at, "who")
    recs = recommend.recommend_partitions(recommend.PartitionQuery(db=str(dbs["gpu"])))
    expected = {(r.partition, r.gpu_type): r.def_cpu_per_gpu for r in recs.rows}
    lost_share = {
        (r.partition, r.gpu_type): r.gpu_hours_lost / r.gpu_hours_below
        for r in recs.rows
        if r.gpu_hours_below
    }
    table = at.dataframe[0].value
    assert len(table) > 0
    for row in table.itertuples():
        assert row.flag == f"--cpus-per-gpu={expected[(row.partition, row.gpu_type)]}"
        assert (
            row.p50_cores_per_gpu < expected[(row.partition, row.gpu_type)]
            or row.share_jobs_below > 0
        )
        assert row.gpu_hours_lost == pytest.approx(
            row.gpu_hours_below * lost_share[(row.partition, row.gpu_type)]
        )
    # ranked by the GPU-hours lost, not merely by those below the target
    assert table["gpu_hours_lost"].is_monotonic_decreasing
    assert json.loads(_charts(at)[0].proto.spec)["encoding"]["x"]["field"] == "gpu_hours_lost"


def test_who_ranks_from_the_tables_held_in_memory_as_duckdb_would(monkeypatch, dbs):
    """The Who page ranks from advisor.ratios.inmemory (fast on every click): its table is the
    one DuckDB's ranking gives, and DuckDB is not asked."""
    import streamlit as st

    from advisor import ratios
    from advisor.ratios.inmemory import PeopleInMemory

    real_load = PeopleInMemory.load
    monkeypatch.setattr(PeopleInMemory, "load", classmethod(lambda cls, con: None))
    st.cache_resource.clear()
    st.cache_data.clear()
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "who")
    at.button_group(key="who_by").set_value("user").run()
    from_duckdb = at.dataframe[0].value
    assert len(from_duckdb) > 0

    monkeypatch.setattr(PeopleInMemory, "load", real_load)
    asked = []

    def duckdb_ranking(*args, **kwargs):
        asked.append(args)
        raise AssertionError("DuckDB was asked to rank")

    monkeypatch.setattr(ratios, "below_target", duckdb_ranking)
    st.cache_resource.clear()
    st.cache_data.clear()
    at.button_group(key="who_by").set_value("account").run()
    at.button_group(key="who_by").set_value("user").run()
    _no_exception(at, "who")
    assert not asked
    assert at.dataframe[0].value.equals(from_duckdb)


def test_who_and_overview_use_the_workload_set_on_recommend(monkeypatch, dbs):
    from advisor import recommend

    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "recommend")
    at.number_input(key="rc_model_b").set_value(70.0).run()
    _open(at, "who")
    _no_exception(at, "who")
    recs = recommend.recommend_partitions(
        recommend.PartitionQuery(
            db=str(dbs["gpu"]),
            workload=recommend.Workload(model_params_b=70.0, load_rps=8.0, prompt_tokens=16384),
        )
    )
    expected = {(r.partition, r.gpu_type): r.def_cpu_per_gpu for r in recs.rows}
    for row in at.dataframe[0].value.itertuples():
        assert row.flag == f"--cpus-per-gpu={expected[(row.partition, row.gpu_type)]}"
    assert any("model of 70B parameters" in c.value for c in at.caption)
    _open(at, "overview")
    assert any("model of 70B parameters" in c.value for c in at.caption)


def test_who_lists_gpu_hours_below_a_fixed_target_with_the_flag(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "who")
    at.button_group(key="who_mode").set_value("fixed").run()
    at.number_input(key="who_target").set_value(4.0).run()
    table = at.dataframe[0].value
    assert (table["flag"] == "--cpus-per-gpu=4").all()
    assert (table["gpu_hours_below"] > 0).all()
    assert table["gpu_hours_below"].is_monotonic_decreasing
    assert set(table["account"]) <= {"acct0", "acct1", "acct2"}


def test_privacy_toggle_replaces_user_names_with_pseudonyms(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "who")
    at.button_group(key="who_by").set_value("user").run()
    assert any(u.startswith("user") for u in at.dataframe[0].value["user"])
    at.sidebar.toggle(key="hash_users").set_value(True).run()
    users = list(at.dataframe[0].value["user"])
    assert users and all(u.startswith("u-") and "user" not in u for u in users)
    labels = [r["label"] for r in chart_rows(_charts(at)[0])]
    assert labels and all(label.startswith("u-") and "user" not in label for label in labels)


def test_privacy_setting_in_the_environment_cannot_be_switched_off(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    monkeypatch.setenv("ADVISOR_HASH_USERS", "1")
    at.run()
    toggle = at.sidebar.toggle(key="hash_users")
    assert toggle.value is True and toggle.disabled
    _open(at, "who")
    assert all(a.startswith("u-") for a in at.dataframe[0].value["account"])


def test_data_page_shows_freshness_ingests_and_rejects_by_reason(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "data")
    _no_exception(at, "data")
    assert {m.label for m in at.metric} == {"research", "teach"}
    frames = [d.value for d in at.dataframe]
    reasons = next(f for f in frames if "reason" in f.columns and "records" in f.columns)
    assert reasons["records"].sum() == 3
    assert "not a timestamp: 'notadate'" in set(reasons["reason"])
    log = next(f for f in frames if "ingest_id" in f.columns and "inserted" in f.columns)
    assert log["inserted"].tolist() == [600]


def test_hidden_names_stay_hidden_in_the_data_pages_rejected_lines(monkeypatch, tmp_path):
    from advisor.datainfo import pseudonym

    db = make_db(tmp_path / "rejects.duckdb", "gpu")
    con = store.connect(db)
    con.execute(
        "INSERT INTO rejects (ingest_id, source, line_no, field, raw, reason)"
        " VALUES (1, 'sacct-2024H1.txt', 7, 'Account', ?, ?)",
        [
            "7|7|research|gpu|normal|acct-secret|g|alice-secret|10001|notadate",
            "not an account name: 'acct-secret'",
        ],
    )
    con.close()

    def shown(at: AppTest) -> str:
        frames = " ".join(d.value.to_csv() for d in at.dataframe)
        charts = " ".join(str(chart_rows(c)) for c in _charts(at))
        return frames + charts + " ".join(str(m.value) for m in at.markdown)

    at = _app(monkeypatch, db)
    at.run()
    _open(at, "data")
    assert "alice-secret" in shown(at) and "acct-secret" in shown(at)  # names shown by default
    monkeypatch.setenv("ADVISOR_HASH_USERS", "1")
    at = AppTest.from_file(str(APP), default_timeout=60)
    at.run()
    _open(at, "data")
    _no_exception(at, "data")
    text = shown(at)
    assert "alice-secret" not in text and "acct-secret" not in text
    assert f"not an account name: '{pseudonym('acct-secret')}'" in text  # the Who page's name
    latest = next(d.value for d in at.dataframe if "raw" in d.value.columns)
    assert set(latest["raw"]) == {
        "(withheld: user and account names are hidden; the file and line say where)"
    }
    assert list(latest["line_no"]) == [7, 17, 42, 99]  # where to look is still there
    assert "not a TRES list: 'cpu=abc'" in set(latest["reason"])  # other fields' reasons kept
    assert any("withheld" in c.value for c in at.caption)


def _current_input(at: AppTest):
    return next(n for n in at.number_input if str(n.key).startswith("rc_current"))


def test_recommend_shows_the_core_recommendation_curve_interval_and_calibration(monkeypatch, dbs):
    from advisor import recommend
    from advisor.model import slowdown

    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "recommend")
    at.selectbox(key="rc_gpu_type").set_value("H100")
    at.selectbox(key="rc_gpus").set_value(8)
    at.run()
    _no_exception(at, "recommend")
    # "current" starts at the observed P50 of the H100 partition with the most GPU-hours
    observed = sorted(
        (
            r
            for r in recommend.recommend_partitions(
                recommend.PartitionQuery(db=str(dbs["gpu"]))
            ).rows
            if r.gpu_type == "H100"
        ),
        key=lambda r: -r.gpu_hours,
    )
    assert at.selectbox(key="rc_partition").value == observed[0].partition
    assert _current_input(at).value == pytest.approx(observed[0].p50_cores_per_gpu)
    expected = recommend.recommend_job(
        recommend.JobQuery(
            gpu_type="H100",
            gpus=8,
            db=str(dbs["gpu"]),
            current_cpus_per_gpu=round(observed[0].p50_cores_per_gpu, 2),
            workload=recommend.Workload(model_params_b=8.0, load_rps=8.0, prompt_tokens=16384),
        )
    )
    metrics = {m.label: m for m in at.metric}
    assert metrics["Recommended --cpus-per-gpu"].value == str(expected.cpus_per_gpu)
    assert expected.slurm_option in metrics["Recommended --cpus-per-gpu"].help
    loo = f"±{100 * slowdown.load_params().meta['loo_mape']:.0f}%"
    if expected.current_cpus_per_gpu < expected.cpus_per_gpu:
        effect = metrics["Predicted effect"]
        assert effect.value in (f"{expected.predicted_speedup:.2f}x faster TTFT", "CPU-starved now")
        assert metrics["Extra cost"].value == f"${expected.usd_per_hour_delta:,.2f}/h"
        if effect.value != "CPU-starved now":
            assert loo in effect.delta  # the validated error beside the prediction
    else:
        assert "Already enough cores" in metrics
    # first what decides: each process's predicted wait, the --max-wait rule and the answer
    (wait_chart, ttft_chart, *_) = _charts(at)
    wait_spec = json.loads(wait_chart.proto.spec)
    assert [layer["mark"]["type"] for layer in wait_spec["layer"]] == [
        "area",
        "line",
        "rule",
        "rule",
    ]
    waits = chart_rows(wait_chart)
    assert {r["max_wait"] for r in waits if "max_wait" in r} == {expected.max_wait}
    assert {r["answer"] for r in waits if "answer" in r} == {expected.cpus_per_gpu}
    at_answer = [
        r["wait"] for r in waits if r.get("cores") == expected.cpus_per_gpu * expected.gpus
    ]
    assert at_answer and max(at_answer) <= expected.max_wait  # both roles under the rule
    spec = json.loads(ttft_chart.proto.spec)
    assert [layer["mark"]["type"] for layer in spec["layer"]] == [
        "area",
        "line",
        "point",
        "rule",
        "text",
        "rule",
        "text",
    ]
    assert spec["layer"][1]["encoding"]["y"]["field"] == "slowdown"
    labels = {r["label"] for r in chart_rows(ttft_chart) if "label" in r}
    assert labels == {
        f"recommended: {expected.cpus_per_gpu}",
        f"now: {expected.current_cpus_per_gpu:g}",
    }
    assert any(loo in c.value for c in at.caption)
    # the assumptions read as a table for people: no raw JSON, no 16-digit floats
    (assumed,) = [d.value for d in at.dataframe if "assumption" in d.value.columns]
    assert "workload › model size (billion parameters)" in set(assumed["assumption"])
    assert not [v for v in assumed["value"] if re.search(r"\d\.\d{5,}", v) or v == "None"]
    assert not at.json
    # the per-partition table covers the partitions of the GPU jobs loaded
    (table,) = [d.value for d in at.dataframe if "partition" in d.value.columns]
    assert set(table["partition"]) == {"gpu", "debug"}
    assert (table["def_cpu_per_gpu"] >= 1).all()
    # the job's number and the chosen partition's are told apart in a sentence
    row = next(
        r
        for r in recommend.recommend_partitions(
            recommend.PartitionQuery(
                db=str(dbs["gpu"]),
                workload=recommend.Workload(model_params_b=8.0, load_rps=8.0, prompt_tokens=16384),
            )
        ).rows
        if r.partition == observed[0].partition and r.gpu_type == "H100"
    )
    said = [
        m.value for m in at.markdown if "DefCpuPerGPU" in m.value and "--cpus-per-gpu" in m.value
    ]
    assert len(said) == 1, [m.value for m in at.markdown]
    assert f"--cpus-per-gpu {expected.cpus_per_gpu} " in said[0]
    assert f"DefCpuPerGPU {row.def_cpu_per_gpu} " in said[0]
    assert "one job of 8 GPUs" in said[0] and f"typical job of {row.typical_gpus} GPU" in said[0]
    if row.def_cpu_per_gpu != expected.cpus_per_gpu:
        assert "They differ because" in said[0]


def test_recommend_overlays_the_matching_measured_series_on_the_wait_it_predicts(monkeypatch, dbs):
    """Issue 48 item 3: where a calibration series of the same configuration measured a load
    within 15% of the one asked (1 GPU, vLLM's executor for TP 1, 1 req/s of 32k tokens; the
    H100 and H200 series of 1/s x 30,050 tokens), its waits are drawn over the prediction and
    the caption says so."""
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "recommend")
    at.selectbox(key="rc_gpu_type").set_value("H100")
    at.selectbox(key="rc_gpus").set_value(1)
    at.number_input(key="rc_load").set_value(1.0)
    at.select_slider(key="rc_tokens").set_value(32768)
    at.run()
    _no_exception(at, "recommend")
    (wait_chart, *_) = _charts(at)
    spec = json.loads(wait_chart.proto.spec)
    assert [layer["mark"]["type"] for layer in spec["layer"]][-2:] == ["rule", "point"]
    seen = [r for r in chart_rows(wait_chart) if "series" in r]
    assert {r["series"].split()[0] for r in seen} == {"H100", "H200"}
    assert any("Diamonds: what 2 measured series" in c.value for c in at.caption)


def test_recommend_says_cpu_starved_in_words_and_never_shows_the_models_cap(monkeypatch, dbs):
    from advisor.model import slowdown

    cap = slowdown.load_params().max_slowdown
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "recommend")
    _current_input(at).set_value(0.05).run()
    _no_exception(at, "recommend")
    effect = {m.label: m for m in at.metric}["Predicted effect"]
    assert effect.value == "CPU-starved now" and "below the knee" in effect.delta
    shown = " ".join(f"{m.value} {m.delta}" for m in at.metric)
    assert f"{cap:.2f}x" not in shown and "open" not in shown


def test_recommend_above_the_recommendation_shows_the_saving_not_a_slowdown(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "recommend")
    _current_input(at).set_value(64.0).run()
    _no_exception(at, "recommend")
    metrics = {m.label: m for m in at.metric}
    assert "Already enough cores" in metrics and "Predicted effect" not in metrics
    saving = metrics["Saving if reduced"].value
    assert saving.startswith("$") and float(saving[1:-2].replace(",", "")) > 0
    assert "$0.00/h" not in " ".join(m.value for m in at.metric)


def test_recommend_draws_milliseconds_when_the_ample_ttft_is_given(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "recommend")
    at.number_input(key="rc_ample").set_value(200.0).run()
    _no_exception(at, "recommend")
    # the wait chart first (what decides), the TTFT curve after it in milliseconds
    specs = [json.loads(c.proto.spec) for c in _charts(at)]
    assert specs[0]["layer"][1]["encoding"]["y"]["field"] == "wait"
    assert specs[1]["layer"][1]["encoding"]["y"]["field"] == "ttft_ms"


def test_benchmarks_count_runs_and_draw_measured_and_fitted_curves(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "benchmarks")
    _no_exception(at, "benchmarks")
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Runs stored": "9", "Runs ok": "8", "Crashed, hung or timed out": "1"}
    spec = json.loads(_charts(at)[0].proto.spec)
    # measured medians, the repeats' range, the fit
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["line", "rule", "line"]
    assert spec["layer"][2]["mark"]["strokeDash"] == [5, 3]
    spread = at.dataframe[0].value
    assert {"ttft_min_ms", "ttft_max_ms", "spread_pct"} <= set(spread.columns)
    assert (spread["ttft_min_ms"] <= spread["ttft_ms"]).all()
    assert (spread["ttft_ms"] <= spread["ttft_max_ms"]).all()
    assert len(at.dataframe[1].value) == 9
    # the measured wait, one panel per process, with the --max-wait rule at 15%
    wait = json.loads(_charts(at)[1].proto.spec)
    assert [p["title"] for p in wait["hconcat"]] == ["engine core", "API server"]
    engine = wait["hconcat"][0]["layer"]
    assert engine[0]["encoding"]["y"]["field"] == "wait"
    assert engine[2]["encoding"]["y"]["field"] == "max_wait"
    assert any("--max-wait 15%" in c.value for c in at.caption)
    at.toggle(key="bn_fit").set_value(False).run()
    assert [layer["mark"]["type"] for layer in json.loads(_charts(at)[0].proto.spec)["layer"]] == [
        "line",
        "rule",
    ]


def test_benchmarks_follow_the_sidebar_cluster_and_partition_but_not_the_jobs_months(
    monkeypatch, dbs
):
    # the fixture's runs: five in Slurm (cluster research, partition gpu, May 2024), four
    # outside Slurm (no cluster or partition, June 2024)
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "benchmarks")
    at.sidebar.multiselect(key="f_clusters").set_value(["research"]).run()
    _no_exception(at, "benchmarks")
    assert {m.label: m.value for m in at.metric}["Runs stored"] == "5 of 9"
    runs = next(d.value for d in at.dataframe if "run_id" in d.value.columns)
    assert len(runs) == 5 and set(runs["cluster"]) == {"research"}
    assert any("5 of 9 stored runs match" in c.value for c in at.caption)
    at.sidebar.multiselect(key="f_clusters").set_value(["teach"]).run()
    assert any("None of the 9 stored benchmark runs" in i.value for i in at.info)
    assert not _charts(at)
    at.sidebar.multiselect(key="f_clusters").set_value([]).run()
    # runs measure the serving stack: a month range of the jobs hides none of them
    at.sidebar.select_slider(key="f_months").set_value(("2024-01", "2024-01")).run()
    assert {m.label: m.value for m in at.metric}["Runs stored"] == "9"


def test_benchmarks_without_runs_say_how_to_store_some(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["cpu_only"])
    at.run()
    _open(at, "benchmarks")
    _no_exception(at, "benchmarks")
    assert any("advisor bench collect" in i.value for i in at.info)


@pytest.mark.parametrize("page", PAGES)
def test_an_empty_database_gets_a_message_on_every_page(monkeypatch, dbs, page):
    at = _app(monkeypatch, dbs["empty"])
    at.run()
    _open(at, page)
    _no_exception(at, page)
    phrase = "no benchmark runs" if page == "benchmarks" else "no jobs"
    assert any(phrase in i.value.lower() for i in at.info), [i.value for i in at.info]
    # the model's wait and TTFT curves need no jobs; every chart of the jobs is absent
    assert len(_charts(at)) == (2 if page == "recommend" else 0)


@pytest.mark.parametrize("page", ("overview", "trends", "who"))
def test_a_database_of_cpu_jobs_only_says_there_is_no_ratio_to_show(monkeypatch, dbs, page):
    at = _app(monkeypatch, dbs["cpu_only"])
    at.run()
    _open(at, page)
    _no_exception(at, page)
    assert any("none of them used a GPU" in i.value for i in at.info)
    assert not _charts(at)


@pytest.mark.parametrize("page", ("overview", "trends", "who", "data"))
def test_unknown_gpu_types_are_named_with_the_fix_and_still_charted(monkeypatch, dbs, page):
    at = _app(monkeypatch, dbs["unknown_gpu"])
    at.run()
    _open(at, page)
    _no_exception(at, page)
    warning = " ".join(w.value for w in at.warning)
    assert "Zorblax9" in warning and "ADVISOR_GPU_TYPES" in warning
    assert _charts(at)


def test_a_missing_database_is_an_error_naming_the_file_and_the_fix(monkeypatch, tmp_path):
    at = _app(monkeypatch, tmp_path / "absent.duckdb")
    at.run()
    _no_exception(at, "overview")
    message = " ".join(e.value for e in at.error)
    assert "absent.duckdb" in message and "advisor ingest" in message


def test_cluster_partition_and_gpu_type_filters_combine(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    at.sidebar.multiselect(key="f_clusters").set_value(["teach"])
    at.sidebar.multiselect(key="f_gpu_types").set_value(["A100"])
    at.sidebar.multiselect(key="f_partitions").set_value(["debug"])
    at.run()
    _no_exception(at, "overview")
    # teach jobs are even-numbered, debug every 5th, A100 every 3rd: 600 / 30 = 20 remain
    assert _per_gpu_type(at)["jobs"].sum() == 20


def test_a_file_that_is_not_a_duckdb_database_is_an_error_naming_it(monkeypatch, tmp_path):
    bad = tmp_path / "notes.duckdb"
    bad.write_text("this is not a database\n")
    at = _app(monkeypatch, bad)
    at.run()
    _no_exception(at, "overview")
    message = " ".join(e.value for e in at.error)
    assert "notes.duckdb" in message and "cannot open" in message
    assert bad.read_text() == "this is not a database\n"  # read-only: left as it was


def test_a_broken_model_file_is_an_error_naming_the_file_and_line(monkeypatch, dbs, tmp_path):
    model = tmp_path / "model.json"
    model.write_text('{"format": "advisor-slowdown-model/1",\n "theta": [1, 2,,]}\n')
    monkeypatch.setenv("ADVISOR_MODEL", str(model))
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "recommend")
    _no_exception(at, "recommend")
    message = " ".join(e.value for e in at.error)
    assert f"{model}:2" in message and "not valid JSON" in message
    # the Overview names the broken file where its answer would be, and still draws the
    # distributions, which need no model
    _open(at, "overview")
    _no_exception(at, "overview")
    assert [e.value for e in at.error] == [f"No recommendation: {message}"]
    assert _charts(at)
    _open(at, "trends")
    assert not at.error and _charts(at)


def test_two_sessions_at_once_share_the_connection_and_both_get_their_own_answer(monkeypatch, dbs):
    """Streamlit runs each browser session in its own thread over one shared connection."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("ADVISOR_DB", str(dbs["gpu"]))
    monkeypatch.delenv("ADVISOR_HASH_USERS", raising=False)

    # The sessions live in two threads over the one cached connection, but their script runs
    # take turns: AppTest itself is not safe in two threads at once. CPython 3.11's compiler
    # fails on the first runs ("SystemError: AST constructor recursion depth mismatch", seen
    # in CI), and overlapping later runs lose a widget's format function now and then
    # (KeyError '$$ID-...-ov_view' in AppTest's widget state, about 1 run in 8 on a busy
    # machine). The app's own lock (app/db.py) serialises the connection's use anyway.
    turns = threading.Lock()

    def session(cluster: str) -> dict[str, int]:
        at = AppTest.from_file(str(APP), default_timeout=60)
        with turns:
            at.run()
        for months in (("2024-01", "2024-03"), ("2024-04", "2024-06"), ("2024-01", "2024-06")):
            with turns:
                at.sidebar.multiselect(key="f_clusters").set_value([cluster])
                at.sidebar.select_slider(key="f_months").set_value(months)
                at.run()
            assert not at.exception, [e.value for e in at.exception]
        return _per_gpu_type(at).set_index("gpu_type")["jobs"].to_dict()

    with ThreadPoolExecutor(2) as pool:
        teach, research = pool.map(session, ["teach", "research"])
    con = store.connect(dbs["gpu"], read_only=True)
    want = {
        c: {
            g.keys["gpu_type"]: g.jobs
            for g in ratios.ratio_summary(con, ratios.RatioQuery(clusters=(c,))).groups
        }
        for c in ("teach", "research")
    }
    con.close()
    assert teach == want["teach"] and research == want["research"]


def test_the_data_page_warns_of_stale_data_with_the_command_that_refreshes_it(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "data")
    _no_exception(at, "data")
    warnings = [w.value for w in at.warning if "days old" in w.value]
    assert sorted(w.split("**")[1] for w in warnings) == ["research", "teach"]
    assert all("advisor ingest --sacct --start 2024-0" in w for w in warnings)
    assert all(f"--db {dbs['gpu']}" in w for w in warnings)
    fresh = next(d.value for d in at.dataframe if "age_days" in d.value.columns)
    assert list(fresh.columns[:4]) == ["cluster", "jobs", "gpu_jobs", "age_days"]
    assert fresh["last_ingest"].notna().all()


def test_an_interval_whose_ends_round_alike_is_one_number():
    from app.recommend_view import range_text

    assert range_text(4.449, 4.451) == "4.45x"
    assert range_text(2.918, 4.064) == "2.92x to 4.06x"


def test_nested_assumptions_become_rows_with_short_numbers():
    from app.recommend_view import assumption_rows

    rows = assumption_rows(
        {"model": {"validation_error": 0.38008709537680085, "file": None}, "tp": 4}
    )
    assert rows == [
        {"assumption": "model › validation error", "value": "0.3801"},
        {"assumption": "model › file", "value": "not set"},
        {"assumption": "tensor parallel (TP)", "value": "4"},
    ]


@pytest.mark.parametrize("kind", ["gpu", "one_job"])
def test_every_table_labels_its_columns_for_people_and_shows_no_none(monkeypatch, tmp_path, kind):
    from app import tables

    db = make_db(tmp_path / f"{kind}.duckdb", kind)
    at = _app(monkeypatch, db)
    at.run()
    for page in PAGES:
        _open(at, page)
        _no_exception(at, page)
        for df in at.dataframe:
            frame = df.value
            unlabelled = [
                c
                for c in frame.columns
                if c not in tables.COLUMNS and not tables._SHARE_BELOW.match(str(c))
            ]
            assert not unlabelled, (page, unlabelled)
            for c in frame.columns:
                cells = frame[c].tolist()
                assert not [v for v in cells if v is None or v != v], (page, c)  # NaN != NaN
                assert "None" not in [str(v) for v in cells], (page, c)


def test_a_cell_written_out_as_text_keeps_its_columns_format():
    from app import tables

    assert tables._number_text(1234.5, "%.0f", "int") == "1,234"
    assert tables._number_text(1234.5, "$%.0f", "usd") == "$1,234"
    assert tables._number_text(0.125, "%.3g", "ratio") == "0.125"
    assert tables._number_text(12.5, "%.1f%%", "pct") == "12.5%"


def test_trends_threshold_starts_at_the_recommendation(monkeypatch, dbs):
    from advisor import fixplan

    plan = fixplan.fix_plan(fixplan.FixQuery(db=str(dbs["gpu"]), workload=ratios_workload()))
    main = max(plan.rows, key=lambda r: r.gpu_hours)
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "trends")
    _no_exception(at, "trends")
    assert at.selectbox(key="tr_threshold").value == float(main.def_cpu_per_gpu)
    assert "(recommended)" in at.selectbox(key="tr_threshold").format_func(
        float(main.def_cpu_per_gpu)
    )


def test_who_names_its_totals_as_totals_over_the_months_chosen(monkeypatch, dbs):
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _open(at, "who")
    _no_exception(at, "who")
    (table,) = at.dataframe
    config = json.loads(table.proto.columns)
    labels = {k: v.get("label") for k, v in config.items()}
    assert labels["gpu_hours_below"] == "GPU-h below target (total, all months)"
    assert labels["share_jobs_below"] == "% of jobs below target"
    assert labels["p50_cores_per_gpu"] == "P50 cores / GPU (GPU-h weighted)"


def test_overview_puts_the_accounts_that_lose_most_on_the_first_screen(monkeypatch, dbs):
    """Issue 39 item 4: the Overview showed no accounts. Its top three are the Who page's
    first three (one ranking, by GPU-hours lost), each with the evidence that ranks it."""
    at = _app(monkeypatch, dbs["gpu"])
    at.run()
    _no_exception(at, "overview")
    tables = [d.value for d in at.dataframe]
    top = next(t for t in tables if "account" in t.columns)
    assert 1 <= len(top) <= 3
    assert top["gpu_hours_lost"].is_monotonic_decreasing and top["gpu_hours_lost"].iloc[0] > 0
    for row in top.itertuples():
        below, of = (int(x.replace(",", "")) for x in row.jobs_below_of.split(" of "))
        assert 0 < below <= of
        assert row.flag.startswith("--cpus-per-gpu=")
    _open(at, "who")
    _no_exception(at, "who")
    who = at.dataframe[0].value.head(len(top))
    assert list(who["account"]) == list(top["account"])
    assert list(who["gpu_hours_lost"]) == pytest.approx(list(top["gpu_hours_lost"]))


def test_a_squeezed_table_keeps_every_cell_whole_and_lets_long_labels_wrap():
    """Issue 50 item 10: at 1400 px the Who table showed "--cpus-per-" and cut account names,
    because long labels widened columns that were then scaled down alike. Where the cells fit,
    each column gets at least its longest cell; only the labels wrap to their hover text."""
    import math

    import pandas as pd

    from app.tables import CHAR_PX, MIN_COLUMN_PX, TABLE_WIDTH_PX, fitted_widths

    frame = pd.DataFrame(
        {
            "account": ["lab-12-with-a-long-name", "a"],
            "flag": ["--cpus-per-gpu=12", "--cpus-per-gpu=2"],
            "jobs_below": [3, 40],
            "gpu_hours_lost": [1.5, 2000.25],
            **{f"n{i}": [i, i] for i in range(6)},
        }
    )
    labels = {
        "jobs_below": "Jobs below the answer (total, all months chosen)",
        "gpu_hours_lost": "Lost GPU-h in the 1 hour of data (total, all months chosen)",
    }
    widths = fitted_widths(frame, labels)
    assert widths and sum(widths.values()) <= TABLE_WIDTH_PX
    for column, longest in {"account": 23, "flag": 17, "gpu_hours_lost": 8}.items():
        assert widths[column] >= math.ceil(CHAR_PX * longest + 28), column
    assert min(widths.values()) >= MIN_COLUMN_PX
    # a table that fits as it is keeps Streamlit's own widths
    assert fitted_widths(frame[["account", "flag"]]) == {}
