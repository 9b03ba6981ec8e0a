"""The monthly report: its numbers come from the core functions, and its files on disk."""

from __future__ import annotations

import datetime as dt
import json
import math
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from advisor import report, store
from advisor.errors import InputError, NotFoundError, UsageError
from advisor.ratios import RatioQuery, ratio_summary
from advisor.report import render
from tests.test_report_data import GAP, OCT_DAYS, SEPT_H100_CPUS, build_db

NOW = dt.datetime(2024, 11, 2, 3, 4, 5)


@pytest.fixture
def small_db(db_path: Path) -> Path:
    return build_db(db_path)


@pytest.fixture
def october(small_db: Path, tmp_path: Path) -> report.MonthlyReport:
    """October with every section filled: recommendations, model, prices and a policy."""
    policy = tmp_path / "policy.json"
    policy.write_text(POLICY)
    cfg = report.ReportConfig(out_dir=tmp_path, month="2024-10", policy_file=policy)
    inputs = report.load_inputs(cfg, small_db)
    con = store.connect(small_db, read_only=True)
    try:
        return report.build_report(con, report.parse_month("2024-10"), None, inputs, now=NOW)
    finally:
        con.close()


class _Values(HTMLParser):
    """Collects every data-key/data-value pair of a rendered report."""

    def __init__(self) -> None:
        super().__init__()
        self.values: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if "data-key" in a:
            assert a["data-key"] not in self.values, f"key {a['data-key']} written twice"
            self.values[str(a["data-key"])] = a.get("data-value") or ""


def html_values(html: str) -> dict[str, str]:
    p = _Values()
    p.feed(html)
    return p.values


def lookup(data: Any, key: str) -> Any:
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


# -- months ------------------------------------------------------------------------------------


def test_a_month_runs_from_its_first_day_to_the_next_months_first_day():
    dec = report.parse_month("2024-12")
    assert (dec.start, dec.end) == (dt.datetime(2024, 12, 1), dt.datetime(2025, 1, 1))
    assert dec.previous().label == "2024-11"
    assert report.parse_month("2025-01").previous().label == "2024-12"


@pytest.mark.parametrize("bad", ["2024-13", "2024-00", "24-10", "2024/10", "", "october"])
def test_a_malformed_month_is_a_usage_error_naming_the_flag(bad):
    with pytest.raises(UsageError, match="--month"):
        report.parse_month(bad)


def test_available_months_are_the_months_with_gpu_allocations(small_db):
    con = store.connect(small_db, read_only=True)
    assert [m.label for m in report.available_months(con)] == ["2024-09", "2024-10"]
    assert [m.label for m in report.available_months(con, "c2")] == ["2024-10"]
    assert report.available_months(con, "nope") == []
    con.close()


# -- numbers equal the core functions --------------------------------------------------------


def test_cores_per_gpu_rows_equal_ratio_summary_for_this_month_and_last(small_db, october):
    con = store.connect(small_db, read_only=True)
    this = {
        g.keys["gpu_type"]: g
        for g in ratio_summary(
            con,
            RatioQuery(
                by=("gpu_type",), start=dt.datetime(2024, 10, 1), end=dt.datetime(2024, 11, 1)
            ),
        ).groups
    }
    last = {
        g.keys["gpu_type"]: g
        for g in ratio_summary(
            con,
            RatioQuery(
                by=("gpu_type",), start=dt.datetime(2024, 9, 1), end=dt.datetime(2024, 10, 1)
            ),
        ).groups
    }
    con.close()
    assert {g.gpu_type for g in october.gpu_types} == set(this) | set(last)
    for g in october.gpu_types:
        a, b = this.get(g.gpu_type), last.get(g.gpu_type)
        assert g.jobs == (a.jobs if a else 0)
        assert g.gpu_hours == (a.gpu_hours if a else 0.0)
        assert g.p25_cores_per_gpu == (a.p25_cores_per_gpu if a else None)
        assert g.p50_cores_per_gpu == (a.p50_cores_per_gpu if a else None)
        assert g.prev_jobs == (b.jobs if b else 0)
        assert g.prev_p50_cores_per_gpu == (b.p50_cores_per_gpu if b else None)


def test_the_histogram_data_is_ratio_distributions_and_adds_up_to_the_table(small_db, october):
    from advisor.ratios import ratio_distribution

    con = store.connect(small_db, read_only=True)
    month = report.parse_month("2024-10")
    dist = ratio_distribution(con, RatioQuery(by=("gpu_type",), start=month.start, end=month.end))
    con.close()
    direct = [
        (g.keys["gpu_type"], p.cores_per_gpu, p.jobs, p.gpu_hours)
        for g in dist.groups
        for p in g.ecdf
    ]
    assert [
        (d.gpu_type, d.cores_per_gpu, d.jobs, d.gpu_hours) for d in october.distribution
    ] == direct
    for g in october.gpu_types:
        assert sum(d.jobs for d in october.distribution if d.gpu_type == g.gpu_type) == g.jobs
    # H100 in October: 0.25 (4 GPUs/1 CPU and 8/2), 0.5, 4, 8 cores per GPU, and c2's 8
    h100 = {d.cores_per_gpu: d.jobs for d in october.distribution if d.gpu_type == "H100"}
    days = len(OCT_DAYS)
    assert h100 == {0.25: 2 * days, 0.5: days, 4.0: days, 8.0: days + 1}


def test_last_months_h100_percentiles_match_numpy_on_the_raw_ratios(october):
    h100 = next(g for g in october.gpu_types if g.gpu_type == "H100")
    ratios = np.array(SEPT_H100_CPUS) / 4.0
    assert h100.prev_jobs == len(SEPT_H100_CPUS)
    assert h100.prev_p25_cores_per_gpu == pytest.approx(np.percentile(ratios, 25))
    assert h100.prev_p50_cores_per_gpu == pytest.approx(np.percentile(ratios, 50))
    assert h100.p50_change_cores_per_gpu == pytest.approx(
        h100.p50_cores_per_gpu - np.percentile(ratios, 50)
    )
    assert h100.prev_gpu_hours == pytest.approx(len(SEPT_H100_CPUS) * 4 * 1.0)


def test_one_clusters_report_counts_only_that_cluster(small_db):
    con = store.connect(small_db, read_only=True)
    r = report.build_report(con, report.parse_month("2024-10"), "c2", now=NOW)
    con.close()
    assert [(g.gpu_type, g.jobs, g.p50_cores_per_gpu) for g in r.gpu_types] == [("H100", 1, 8.0)]
    assert r.quality.gpu_jobs == 1


def test_every_number_in_the_html_equals_the_report_object(october):
    html = report.render_html(october)
    values = html_values(html)
    data = report.report_as_dict(october)
    assert len(values) > 90  # every table cell of the fixture month, not a handful
    sections = {k.split(".")[0] for k in values}
    assert {
        "gpu_types",
        "below_accounts",
        "below_partitions",
        "starvation",
        "policy",
        "quality",
    } <= sections
    for key, shown in values.items():
        expected = lookup(data, key)
        if isinstance(expected, float):
            assert float(shown) == expected, key
        elif expected is None:
            assert shown == "", key
        else:
            assert shown == str(expected), key
    # and the page shows the P50 of H100 this month, formatted, next to its exact value
    h100 = next(i for i, g in enumerate(october.gpu_types) if g.gpu_type == "H100")
    key = f"gpu_types.{h100}.p50_cores_per_gpu"
    assert (
        f'data-key="{key}" data-value="{october.gpu_types[h100].p50_cores_per_gpu!r}">0.5<' in html
    )


# -- data quality --------------------------------------------------------------------------------


def test_days_without_any_allocation_are_reported_as_gaps(october):
    q = october.quality
    assert (q.gaps[0].first_day, q.gaps[0].last_day, q.gaps[0].days) == (*GAP, 3)
    # every October day inside the data's span without a start: 31 days minus the busy ones,
    # minus the days after the last record (29-31), which may simply not be loaded yet
    last_busy = max(OCT_DAYS)
    assert q.gap_days == sum(1 for d in range(1, last_busy + 1) if d not in OCT_DAYS)
    assert len(q.daily) == 31 and sum(d.jobs for d in q.daily) == q.jobs


def test_rejected_lines_are_grouped_by_reason_with_the_first_line_that_had_it(october):
    q = october.quality
    assert q.rejected_lines == 3
    tres = next(r for r in q.rejects if r.reason == "unparsable TRES")
    assert (tres.lines, tres.field, tres.first_source, tres.first_line_no) == (
        2,
        "AllocTRES",
        "oct.txt",
        17,
    )
    assert [i.ingest_id for i in q.ingests] == [2]


def test_gpu_and_cpu_only_allocations_are_counted_apart(october):
    oct_gpu_jobs = 7 * len(OCT_DAYS) + 1  # the fixture's jobs per day, plus cluster c2's one
    assert october.quality.gpu_jobs == oct_gpu_jobs
    assert october.quality.jobs == oct_gpu_jobs + 1


# -- files on disk -----------------------------------------------------------------------------


def test_rerunning_a_month_replaces_its_folder_and_its_index_entry(small_db, tmp_path):
    out = tmp_path / "reports"
    cfg = report.ReportConfig(out_dir=out, month="2024-10")
    first = report.run_reports(cfg, small_db, now=NOW)
    folder = first[0].html_path.parent
    stale = folder / "left-over.png"
    stale.write_bytes(b"old")
    second = report.run_reports(cfg, small_db, now=NOW)
    assert second[0].html_path == first[0].html_path
    assert not stale.exists()
    assert second[0].html_sha256 == first[0].html_sha256  # same data, same page
    index = json.loads((out / "index.json").read_text())
    assert [e["month"] for e in index["reports"]] == ["2024-10"]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no temp folders left


def test_all_months_writes_one_report_per_month_and_keeps_other_entries(small_db, tmp_path):
    out = tmp_path / "reports"
    report.run_reports(
        report.ReportConfig(out_dir=out, month="2024-10", cluster="c2"), small_db, now=NOW
    )
    results = report.run_reports(
        report.ReportConfig(out_dir=out, all_months=True), small_db, now=NOW
    )
    assert [r.month for r in results] == ["2024-09", "2024-10"]
    assert all(r.html_path.is_file() for r in results)
    index = json.loads((out / "index.json").read_text())
    assert [(e["month"], e["cluster"]) for e in index["reports"]] == [
        ("2024-09", None),
        ("2024-10", None),
        ("2024-10", "c2"),
    ]
    written = json.loads((out / "2024-10" / "report.json").read_text())
    assert written["quality"]["gpu_jobs"] == results[1].gpu_jobs
    page = (out / "index.html").read_text()
    links = re.findall(r'<a href="([^"]+)">(\d{4}-\d{2})</a>', page)
    assert links == [
        ("2024-10--c2/report.html", "2024-10"),
        ("2024-10/report.html", "2024-10"),
        ("2024-09/report.html", "2024-09"),
    ]
    assert all((out / href).is_file() for href, _ in links)


def test_png_and_pdf_copies_of_every_chart_are_real_images(small_db, tmp_path):
    cfg = report.ReportConfig(out_dir=tmp_path, month="2024-10", png=True, pdf=True)
    (res,) = report.run_reports(cfg, small_db, now=NOW)
    names = sorted(p.name for p in res.image_paths)
    assert "cores-per-gpu.png" in names and "cores-per-gpu.pdf" in names
    for p in res.image_paths:
        head = p.read_bytes()[:8]
        assert head.startswith(b"\x89PNG" if p.suffix == ".png" else b"%PDF"), p


def test_the_html_carries_its_own_javascript_and_no_remote_address(october):
    html = report.render_html(october)
    assert "vegaEmbed" in html
    assert "<script src=" not in html and "cdn.jsdelivr" not in html
    assert 'rel="stylesheet"' not in html


def test_month_and_all_months_together_or_neither_is_a_usage_error(small_db, tmp_path):
    with pytest.raises(UsageError, match="--all-months"):
        report.run_reports(report.ReportConfig(out_dir=tmp_path), small_db)
    with pytest.raises(UsageError, match="exactly one"):
        report.run_reports(
            report.ReportConfig(out_dir=tmp_path, month="2024-10", all_months=True), small_db
        )


def test_an_unknown_cluster_is_named_with_the_ones_that_exist(small_db, tmp_path):
    with pytest.raises(NotFoundError, match=r"'c9'.*\['c1', 'c2'\]"):
        report.run_reports(
            report.ReportConfig(out_dir=tmp_path, month="2024-10", cluster="c9"), small_db
        )


def test_a_month_without_data_is_refused_naming_the_months_the_database_holds(small_db, tmp_path):
    """Issue 39 item 5: it wrote an empty report and exited 0, so a monthly cron job would mail
    empty reports for ever."""
    with pytest.raises(NotFoundError) as e:
        report.run_reports(report.ReportConfig(out_dir=tmp_path, month="2023-01"), small_db)
    msg = str(e.value)
    assert msg.startswith("no GPU allocations in 2023-01: the database holds ")
    assert "--all-months" in msg
    assert not list(tmp_path.rglob("*.html"))


def test_the_summary_leads_with_the_loss_the_fix_the_places_and_the_settings(small_db, tmp_path):
    (res,) = report.run_reports(
        report.ReportConfig(out_dir=tmp_path, month="2024-10"), small_db, now=NOW
    )
    data = json.loads((res.html_path.parent / "report.json").read_text())
    s = data["summary"]
    assert s["gpu_hours_lost"] == pytest.approx(data["gpu_hours_lost_total"])
    assert s["usd_to_fix"] == pytest.approx(data["usd_to_fix_total"])
    assert s["usd_lost"] == pytest.approx(sum(e["usd_lost"] or 0 for e in data["starvation"]))
    assert [e["partition"] for e in s["top_partitions"]] == [
        e["partition"] for e in data["starvation"][:3]
    ]
    assert [b["name"] for b in s["top_accounts"]] == [b["name"] for b in data["below_accounts"][:3]]
    html = res.html_path.read_text()
    # each account named with the evidence that ranks it (issue 39 item 4)
    b = s["top_accounts"][0]
    assert b["gpu_hours_lost"] > 0
    assert (
        f" GPU-hours lost, est., of {b['gpu_hours_below']:,.0f} below; {b['jobs_below']:,} of "
        f"{b['jobs']:,} jobs below, median "
    ) in html
    # the summary comes before every other section, and carries the paste-ready settings
    assert html.index('id="summary"') < html.index('id="ratios"')
    pasted = "".join(c["slurm_conf"] for c in s["settings"])
    for e in data["starvation"]:
        assert f"PartitionName={e['partition']} DefCpuPerGPU=" in pasted
    assert '<pre class="settings" id="settings-0" data-cluster="c1">' in html
    assert "Since 2024-09:" in html and s["changes"]
    # assumptions in an admin's words: no function or field names
    for a in data["starvation_assumptions"]:
        assert "advisor." not in a and "_" not in a, a


def test_the_settings_are_one_paste_per_cluster_naming_only_its_partitions(small_db, tmp_path):
    con = store.connect(small_db)
    con.execute(
        'INSERT INTO jobs (cluster, job_id_raw, submit, job_id, start, "end", elapsed_s, account,'
        ' "partition", "user", state, gpu_type, gpu_type_raw, gpus, cpus, ingest_id) VALUES'
        " ('c2', 2, TIMESTAMP '2024-10-04 12:00', '2', TIMESTAMP '2024-10-04 12:00',"
        " TIMESTAMP '2024-10-04 14:00', 7200, 'lab', 'c2long', 'u1', 'COMPLETED', 'H100', 'h100',"
        " 8, 1, 2)"
    )
    con.close()
    (res,) = report.run_reports(
        report.ReportConfig(out_dir=tmp_path, month="2024-10"), small_db, now=NOW
    )
    data = json.loads((res.html_path.parent / "report.json").read_text())
    blocks = {c["cluster"]: c["slurm_conf"] for c in data["summary"]["settings"]}
    assert set(blocks) == {"c1", "c2"}
    assert "PartitionName=c2long " in blocks["c2"] and "c2long" not in blocks["c1"]
    html = res.html_path.read_text()
    assert html.count('<pre class="settings"') == 2 and 'data-cluster="c2"' in html


def test_the_accounts_most_below_are_the_dashboards_who_ranking(small_db, inputs):
    from advisor import fixplan, ratios

    month = report.parse_month("2024-10")
    recs = {(r.partition, r.gpu_type): r for r in inputs.recommendations}
    con = store.connect(small_db, read_only=True)
    try:
        accounts, _ = report.below_recommendation(con, month, None, inputs, top_n=10)
        tq = ratios.TargetQuery(
            report.ratio_query(month, None, ("account", "partition", "gpu_type")),
            targets_cores_per_gpu=fixplan.recommended_targets(recs),
            top=fixplan.RANKING_POOL,
        )
        who = fixplan.rank_who_loses(ratios.below_target(con, tq), recs)[:10]
    finally:
        con.close()
    assert accounts
    assert [(b.name, b.partition, b.gpu_type) for b in accounts] == [
        (w.group.keys["account"], w.group.keys["partition"], w.group.keys["gpu_type"]) for w in who
    ]
    assert [b.gpu_hours_lost for b in accounts] == pytest.approx([w.gpu_hours_lost for w in who])
    lost = [b.gpu_hours_lost for b in accounts]
    assert lost == sorted(lost, reverse=True) and lost[0] > 0
    assert [b.flag for b in accounts] == [w.flag for w in who]


def test_the_report_shows_the_accounts_loss_it_ranks_by(october):
    html = render.render_html(october)
    assert "ranked as the dashboard's Who page ranks them" in html
    assert 'data-key="below_accounts.0.gpu_hours_lost"' in html
    assert "GPU-hours lost (est.)" in html


def test_a_month_with_few_jobs_carries_a_small_sample_note(small_db, tmp_path):
    (res,) = report.run_reports(
        report.ReportConfig(out_dir=tmp_path, month="2024-10"), small_db, now=NOW
    )
    data = json.loads((res.html_path.parent / "report.json").read_text())
    assert data["small_sample"] == (0 < data["quality"]["gpu_jobs"] < report.SMALL_SAMPLE_JOBS)
    notes = " ".join(data["notes"])
    assert ("Small sample" in notes) == data["small_sample"]


def test_one_number_format_per_kind():
    assert render._fmt(1234.56, "hours") == "1,235" and render._fmt(12.4, "hours") == "12"
    assert render._fmt(0.25, "cores") == "0.25" and render._fmt(8, "cores") == "8"
    assert render._fmt(0.125, "cores") == "0.125" and render._fmt(2.5, "cores") == "2.5"
    assert render._fmt(1234.5, "usd") == "$1,234" and render._fmt(3.456, "price") == "$3.46"
    assert render._fmt(None, "usd") == "–"


def test_numbers_render_readably_and_missing_ones_as_a_dash():
    assert render._num(None) == "–" and render._num(math.nan) == "–"
    assert render._num(1234.5) == "1,234"  # round half to even
    assert render._num(0.25) == "0.25" and render._num(0.0504) == "0.0504"
    assert render._num(2.0) == "2.00" and render._num(12345) == "12,345"
    assert render._num(0.5) == "0.50"


# -- recommendations, starvation, policy -------------------------------------------------------


@pytest.fixture
def inputs(small_db) -> report.ReportInputs:
    return report.load_inputs(report.ReportConfig(out_dir=Path(".")), small_db)


def test_below_recommendation_rows_are_ratio_summary_below_recommend_partitions(small_db, inputs):
    from advisor.recommend import PartitionQuery, recommend_partitions

    recs = {
        (r.partition, r.gpu_type): r
        for r in recommend_partitions(PartitionQuery(db=str(small_db))).rows
    }
    con = store.connect(small_db, read_only=True)
    month = report.parse_month("2024-10")
    accounts, partitions = report.below_recommendation(con, month, None, inputs, top_n=10)
    thresholds = tuple(sorted({float(r.def_cpu_per_gpu) for r in recs.values()}))
    direct = {
        (g.keys["partition"], g.keys["gpu_type"]): g
        for g in ratio_summary(
            con,
            RatioQuery(
                by=("partition", "gpu_type"),
                start=month.start,
                end=month.end,
                thresholds_cores_per_gpu=thresholds,
            ),
        ).groups
    }
    con.close()
    assert partitions, "the fixture's teaching jobs sit far below any recommendation"
    for b in partitions:
        assert b.partition == b.name
        rec = recs[(b.name, b.gpu_type)]
        g = direct[(b.name, b.gpu_type)]
        t = float(rec.def_cpu_per_gpu)
        assert b.recommended_cores_per_gpu == t
        # issue 39 item 8: a partition is told its slurm.conf setting, not a job flag
        assert b.flag == f"DefCpuPerGPU={rec.def_cpu_per_gpu}"
        assert b.jobs == g.jobs and b.p50_cores_per_gpu == g.p50_cores_per_gpu
        assert b.jobs_below == round(g.share_jobs_below[t] * g.jobs)
        assert b.gpu_hours_below == pytest.approx(g.share_gpu_hours_below[t] * g.gpu_hours)
    hours = [b.gpu_hours_below for b in partitions]
    assert hours == sorted(hours, reverse=True)
    # the teaching account's H100 jobs (0.25-0.5 cores per GPU) head the accounts table
    assert (accounts[0].name, accounts[0].partition, accounts[0].gpu_type) == (
        "teach",
        "gpu",
        "H100",
    )
    assert accounts[0].jobs_below == 3 * len(OCT_DAYS)


def test_top_n_limits_the_below_tables(small_db, inputs):
    con = store.connect(small_db, read_only=True)
    accounts, partitions = report.below_recommendation(
        con, report.parse_month("2024-10"), None, inputs, top_n=1
    )
    con.close()
    assert len(accounts) == 1 and len(partitions) == 1


@pytest.mark.parametrize("pole_exponent", [None, 1.0])
def test_starvation_of_a_month_holding_every_job_equals_recommend_partitions(
    small_db, tmp_path, pole_exponent
):
    import dataclasses

    from advisor.model import slowdown
    from advisor.recommend import PartitionQuery, recommend_partitions

    model = None
    if pole_exponent is not None:  # a model that is not the shipped one: every knob must pass
        model = tmp_path / "model.json"
        params = dataclasses.replace(slowdown.load_params(), pole_exponent=pole_exponent)
        slowdown.save_params(params, model)
    con = store.connect(small_db)
    con.execute("DELETE FROM jobs WHERE start < TIMESTAMP '2024-10-01'")  # October only
    con.close()
    inputs = report.load_inputs(report.ReportConfig(out_dir=Path("."), model_file=model), small_db)
    con = store.connect(small_db, read_only=True)
    estimates = report.starvation_estimates(con, report.parse_month("2024-10"), None, inputs)
    con.close()
    query = PartitionQuery(db=str(small_db), model_file=str(model) if model else None)
    recs = {(r.partition, r.gpu_type): r for r in recommend_partitions(query).rows}
    assert estimates
    for e in estimates:
        r = recs[(e.partition, e.gpu_type)]
        assert e.recommended_cores_per_gpu == r.def_cpu_per_gpu
        assert e.gpu_hours_below == pytest.approx(r.gpu_hours_below)
        assert e.gpu_hours_lost == pytest.approx(r.gpu_hours_lost)
        assert e.extra_cpu_hours == pytest.approx(r.fix_vcpu_hours)
        assert e.usd_to_fix == pytest.approx(e.extra_cpu_hours * e.usd_per_vcpu_hour)
        assert 0 < e.gpu_hours_lost <= e.gpu_hours_below
    lost = {(r.partition, r.gpu_type) for r in recs.values() if r.gpu_hours_lost > 0}
    assert {(e.partition, e.gpu_type) for e in estimates} == lost


def test_the_recommendations_warnings_are_shown_for_the_rows_they_concern(october, inputs):
    recs = {(r.partition, r.gpu_type): r for r in inputs.recommendations}
    expected = {
        f"{e.partition} / {e.gpu_type}: {w}"
        for e in october.starvation
        for w in recs[(e.partition, e.gpu_type)].warnings
    }
    assert expected, "the fixture has no node inventory, so recommend warns about the cap"
    assert set(october.starvation_warnings) == expected
    html = report.render_html(october)
    assert all(w.replace("'", "&#39;").replace('"', "&#34;") in html for w in expected)


def test_the_report_states_the_assumptions_behind_its_cost_figures(small_db, tmp_path):
    (res,) = report.run_reports(report.ReportConfig(out_dir=tmp_path, month="2024-10"), small_db)
    html = res.html_path.read_text()
    from advisor.pricing import load_pricing

    v = load_pricing().vcpu
    assert f"${v.usd_per_vcpu_hour:.3f} per vCPU-hour" in html
    assert "The estimate treats every GPU job as an LLM server" in html
    data = json.loads((res.html_path.parent / "report.json").read_text())
    assert data["gpu_hours_lost_total"] == pytest.approx(
        sum(e["gpu_hours_lost"] for e in data["starvation"])
    )


POLICY = """{
  "version": 1,
  "generated_at": "2024-11-01T00:00:00Z",
  "source": "test",
  "rules": [
    {"partition": "gpu", "gpu_type": "h100", "min_cpus_per_gpu": 2, "default_cpus_per_gpu": 4,
     "mode": "set-default-when-unset"},
    {"partition": "*", "gpu_type": "*", "min_cpus_per_gpu": 1, "default_cpus_per_gpu": 2,
     "mode": "advise"}
  ]
}
"""


def test_policy_compliance_takes_each_jobs_most_specific_rule(small_db, tmp_path):
    policy = tmp_path / "policy.json"
    policy.write_text(POLICY)
    cfg = report.ReportConfig(out_dir=tmp_path, month="2024-10", policy_file=policy)
    (res,) = report.run_reports(cfg, small_db, now=NOW)
    p = json.loads((res.html_path.parent / "report.json").read_text())["policy"]
    days = len(OCT_DAYS)
    # gpu/h100: the teaching jobs (0.25-0.5 cores/GPU) fail, cluster c2's job (8) passes;
    # everything else falls to (*, *) with minimum 1, which all of it meets
    assert [
        (r["partition"], r["gpu_type"], r["jobs"], r["jobs_compliant"]) for r in p["rules"]
    ] == [
        ("gpu", "h100", 3 * days + 1, 1),
        ("*", "*", 4 * days, 4 * days),
    ]
    assert (p["jobs"], p["jobs_compliant"]) == (7 * days + 1, 4 * days + 1)
    values = html_values(res.html_path.read_text())
    assert values["policy.jobs_compliant"] == str(4 * days + 1)


@pytest.mark.parametrize("form", ["json", "lua"])
def test_a_policy_exported_by_advisor_policy_reads_back_rule_for_rule(small_db, tmp_path, form):
    import dataclasses

    from advisor.policy import PolicyConfig, build_policy, to_json, to_lua

    exported = build_policy(PolicyConfig(db=str(small_db)))
    # a source with quotes, a backslash, a newline and non-ASCII survives the Lua escaping
    exported = dataclasses.replace(exported, source='advisor "test" \\ caf\u00e9\n')
    path = tmp_path / f"advisor-policy.{form}"
    path.write_text(to_json(exported) if form == "json" else to_lua(exported))
    back = report.read_policy(path)
    assert back.rules == exported.rules and len(back.rules) >= 3
    assert (back.version, back.generated_at, back.source) == (
        exported.version,
        exported.generated_at,
        exported.source,
    )


def test_the_lua_policy_the_plugins_load_gives_the_same_compliance_as_its_json(small_db, tmp_path):
    from advisor.policy import PolicyConfig, build_policy, to_json, to_lua

    exported = build_policy(PolicyConfig(db=str(small_db)))
    (tmp_path / "p.json").write_text(to_json(exported))
    (tmp_path / "p.lua").write_text(to_lua(exported))
    month = report.parse_month("2024-10")
    con = store.connect(small_db, read_only=True)
    got = [
        report.policy_compliance(
            con, month, None, report.ReportInputs(policy=report.read_policy(tmp_path / name))
        )
        for name in ("p.json", "p.lua")
    ]
    con.close()
    assert got[0] is not None and got[1] is not None
    assert got[0].rules == got[1].rules and got[0].jobs == 7 * len(OCT_DAYS) + 1


LUA_POLICY = """-- exported
return {
  version = 1,
  rules = {
    { partition = "gpu", gpu_type = "h100", min_cpus_per_gpu = 2, default_cpus_per_gpu = 4, mode = "advise" },
    { partition = "*", gpu_type = "*", min_cpus_per_gpu = 1, default_cpus_per_gpu = 2, mode = "advise" },
  },
}
"""


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("hello", r"p.lua:1: expected 'return', found 'hello'"),
        (LUA_POLICY.replace("  },\n}", ""), r"p.lua:6: expected '}', found 'the end of the file'"),
        ("return { version = 1 }", r"p.lua, field rules: must be a list"),
        (
            LUA_POLICY.replace('mode = "advise" },\n  },', 'mode = "shout" },\n  },'),
            r"p.lua:6, field rules\[1\].mode",
        ),
        (LUA_POLICY.replace("= 1, default", "= nil, default"), r"p.lua:6: unexpected 'nil'"),
        (
            LUA_POLICY.replace("--[[", "").replace("-- exported", "--[[ block ]]"),
            r"p.lua:1: cannot read",
        ),
    ],
)
def test_a_bad_lua_policy_names_its_line_and_field(tmp_path, text, where):
    path = tmp_path / "p.lua"
    path.write_text(text)
    with pytest.raises(InputError, match=where):
        report.read_policy(path)


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"version": 1,\n "rules": [\n', r"policy.json:3: not valid JSON"),
        ('{"version": 2, "rules": []}', r"policy.json:1, field version"),
        (
            POLICY.replace('"min_cpus_per_gpu": 1', '"min_cpus_per_gpu": "one"'),
            r"policy.json:8, field rules\[1\].min_cpus_per_gpu",
        ),
        (POLICY.replace('"advise"', '"shout"'), r"policy.json:8, field rules\[1\].mode"),
        (
            POLICY.replace(
                '"partition": "*", "gpu_type": "*"', '"partition": "gpu", "gpu_type": "H100"'
            ),
            r"policy.json:8, field rules\[1\]: a second rule",
        ),
    ],
)
def test_a_bad_policy_file_names_its_line_and_field(tmp_path, text, where):
    path = tmp_path / "policy.json"
    path.write_text(text)
    with pytest.raises(InputError, match=where):
        report.read_policy(path)


def test_a_bad_policy_stops_the_report_before_anything_is_written(small_db, tmp_path):
    path = tmp_path / "policy.json"
    path.write_text("return { version = 1, rules = {")  # a Lua export cut short
    with pytest.raises(InputError, match="policy.json:1: expected '}'"):
        report.run_reports(
            report.ReportConfig(out_dir=tmp_path / "out", month="2024-10", policy_file=path),
            small_db,
        )
    assert not (tmp_path / "out").exists()


def test_last_month_is_the_calendar_month_before_now_in_utc():
    jan = dt.datetime(2025, 1, 1, 0, 30, tzinfo=dt.UTC)
    assert report.resolve_month("last", jan).label == "2024-12"
    assert report.resolve_month("previous", dt.datetime(2024, 11, 30, 23, 59)).label == "2024-10"
    assert report.resolve_month("2024-07", jan).label == "2024-07"


def test_month_last_writes_the_month_before_now(small_db, tmp_path):
    cfg = report.ReportConfig(out_dir=tmp_path, month="last")
    (res,) = report.run_reports(cfg, small_db, now=dt.datetime(2024, 11, 3))
    assert res.month == "2024-10" and res.gpu_jobs == 7 * len(OCT_DAYS) + 1


def test_the_lua_reader_agrees_with_the_real_lua_interpreter(small_db, tmp_path):
    import shutil
    import subprocess

    from advisor.policy import PolicyConfig, build_policy, to_lua

    lua = shutil.which("lua5.1") or shutil.which("lua")
    if lua is None:
        pytest.skip("SKIPPED LOUDLY: no lua5.1 interpreter (apt-get install lua5.1)")
    path = tmp_path / "advisor-policy.lua"
    path.write_text(to_lua(build_policy(PolicyConfig(db=str(small_db)))))
    script = (
        "local p = dofile(arg[1]) print(p.version) print(p.source) "
        "for _, r in ipairs(p.rules) do print(table.concat({r.partition, r.gpu_type, "
        "r.min_cpus_per_gpu, r.default_cpus_per_gpu, r.mode}, '|')) end"
    )
    dump = tmp_path / "dump.lua"
    dump.write_text(script)
    out = subprocess.run(
        [lua, str(dump), str(path)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    ours = report.read_policy(path)
    assert out[0] == str(ours.version) and out[1] == ours.source
    assert out[2:] == [
        f"{r.partition}|{r.gpu_type}|{r.min_cpus_per_gpu}|{r.default_cpus_per_gpu}|{r.mode.value}"
        for r in ours.rules
    ]


def test_the_month_chart_colours_months_in_greys_not_in_the_gpu_types_colours(october):
    """Issue 39 item 8: the month chart reused the GPU types' colours for its two months."""
    from advisor.charts import gpu_type_colour
    from advisor.report.render import MONTH_GREYS

    chart = next(c for c in report.report_charts(october) if c.chart_id == "cores-per-gpu")
    colour = chart.spec["encoding"]["color"]
    assert colour["field"] == "month"
    assert colour["scale"] == {"domain": ["2024-09", "2024-10"], "range": MONTH_GREYS}
    types = {gpu_type_colour(g.gpu_type) for g in october.gpu_types}
    assert not types & set(MONTH_GREYS)


def test_the_report_shows_why_its_cores_per_gpu_with_the_wait_curve_recommend_decided_on(
    october, inputs
):
    """Issue 48 item 3: the report's recommendation section draws the predicted wait the answer
    comes from, the same curve and answer ``recommend --partition`` gives."""
    assert october.wait_curves, "the fixture's GPU types are measured families"
    by_group = {(r.gpu_type, r.typical_gpus): r for r in inputs.recommendations}
    for w in october.wait_curves:
        rec = by_group[(w["gpu_type"], w["gpus"])]
        assert w["curve"] == rec.wait_curve and w["max_wait"] == 0.15
        assert w["cores_per_gpu"] == rec.model_def_cpu_per_gpu
        # the answer is the fewest cores at which both processes are under the threshold
        floor = 2 + w["gpus"]
        under = [
            row["cores"]
            for row in w["curve"]
            if row["cores"] >= floor
            and all(row[r]["wait"] <= 0.15 for r in ("engine_core", "api_server"))
        ]
        assert math.ceil(min(under) / w["gpus"]) == w["cores_per_gpu"]
    charts = {c.chart_id: c for c in report.report_charts(october)}
    waits = [c for i, c in charts.items() if i.startswith("wait-")]
    assert len(waits) == len(october.wait_curves)
    layers = waits[0].spec["layer"]
    assert layers[1]["encoding"]["y"]["field"] == "wait"
    assert layers[2]["encoding"]["y"]["field"] == "max_wait"
    assert [{"max_wait": 0.15}] in waits[0].spec["datasets"].values()
    html = report.render_html(october, waits)
    assert html.count("<figcaption>") == len(waits) and "Why these cores per GPU" in html


def test_a_months_loss_rests_on_its_measured_jobs_as_recommend_partitions_does(
    small_db, tmp_path, cli
):
    """Issue 49 item 4 in the report: a measured job's loss is its own stall, the model's only
    for the rest; the headline says the measured share of the month with its period."""
    from advisor.recommend import PartitionQuery, recommend_partitions

    con = store.connect(small_db)
    con.execute("DELETE FROM jobs WHERE start < TIMESTAMP '2024-10-01'")  # October only
    con.close()
    records = tmp_path / "pressure.jsonl"
    code, _, err = cli(
        "pressure", "synth", "--db", str(small_db), "--out", str(records), "--share", "0.6"
    )
    assert code == 0, err
    code, _, err = cli("ingest", str(records), "--db", str(small_db))
    assert code == 0, err
    inputs = report.load_inputs(report.ReportConfig(out_dir=Path(".")), small_db)
    con = store.connect(small_db, read_only=True)
    try:
        october = report.build_report(con, report.parse_month("2024-10"), None, inputs, now=NOW)
        measured_hours = con.execute(
            "SELECT sum(elapsed_s * gpus) / 3600.0 FROM jobs WHERE gpus > 0 AND cpus > 0"
            " AND elapsed_s > 0 AND psi_status = 'measured' AND psi_covered_s > 0"
        ).fetchone()[0]
    finally:
        con.close()
    recs = {
        (r.partition, r.gpu_type): r
        for r in recommend_partitions(PartitionQuery(db=str(small_db))).rows
    }
    assert any(e.gpu_hours_measured > 0 for e in october.starvation)
    for e in october.starvation:
        r = recs[(e.partition, e.gpu_type)]
        assert e.gpu_hours_lost == pytest.approx(r.gpu_hours_lost)
        assert e.gpu_hours_lost_interval == pytest.approx(r.gpu_hours_lost_interval)
        assert e.gpu_hours_measured == pytest.approx(r.gpu_hours_measured)
        assert e.gpu_hours_lost_measured == pytest.approx(r.gpu_hours_lost_measured)
        assert e.loss_disagreement == r.loss_disagreement
    h = october.summary.headline
    gpu_hours = sum(g.gpu_hours for g in october.gpu_types)
    assert h.measured.share_gpu_hours_measured == pytest.approx(measured_hours / gpu_hours)
    assert h.measured.held_high == pytest.approx(
        sum(e.gpu_hours_lost_measured[1] for e in october.starvation)
    )
    html = report.render_html(october)
    assert f"{measured_hours / gpu_hours:.0%} of the GPU time in 2024-10 ran in jobs" in html


def test_a_group_whose_median_job_has_enough_is_not_told_to_submit_with_fewer_cores():
    """Issue 50 item 12: an account ranked for one big job below, its median 4 cores per GPU,
    was told to "submit with --cpus-per-gpu=2". The ranking and its advice agree: only the jobs
    below are told to ask for the recommendation; a group whose median is below is told to
    submit with it."""
    from advisor.report.records import BelowRecommendation

    def row(p50: float | None, jobs_below: int) -> BelowRecommendation:
        return BelowRecommendation(
            scope="account",
            name="lab-12",
            partition="gpu",
            gpu_type="H100",
            jobs=40,
            jobs_below=jobs_below,
            gpu_hours_below=384.0,
            p50_cores_per_gpu=p50,
            recommended_cores_per_gpu=2.0,
            flag="--cpus-per-gpu=2",
        )

    assert row(4.0, 1).advice_lead == (
        "its median job has enough; the job below should ask for at least"
    )
    assert row(2.0, 1200).advice_lead == (
        "its median job has enough; the 1,200 jobs below should ask for at least"
    )
    assert row(1.0, 30).advice_lead == "should submit with"
    assert row(None, 30).advice_lead == "should submit with"
