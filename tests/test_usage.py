"""What GPU jobs used (issue 23): usage fields from sacct text, sacct --json and jobstats'
AdminComment summary, the derived figures and verdicts, summaries, advice and the model check.

Real DuckDB files in a temp dir, loaded by the real ingest. GPU utilisation cannot be produced
on this machine (no GPU): the fixtures in tests/fixtures/usage/ are written from Slurm's and
jobstats' documented formats (their README cites the sources).
"""

from __future__ import annotations

import base64
import gzip
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pytest

from advisor import store, usage
from advisor.ingest import ingest_files, list_rejects
from advisor.ingest.usage import decode_jobstats, jobstats_figures

FIX = Path(__file__).resolve().parent / "fixtures" / "usage"
INGEST_FIX = Path(__file__).resolve().parent / "fixtures" / "ingest"


def _jobs(db: Path) -> dict[str, dict[str, Any]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        cur = con.execute("SELECT * FROM jobs")
        names = [d[0] for d in cur.description]
        return {r[names.index("job_id")]: dict(zip(names, r, strict=True)) for r in cur.fetchall()}
    finally:
        con.close()


@pytest.fixture(scope="module")
def text_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("usage") / "advisor.duckdb"
    [summary] = ingest_files(db, [FIX / "sacct-usage.txt"])
    assert summary.rejected == 0, summary.first_reasons
    return db


@pytest.fixture(scope="module")
def text_jobs(text_db: Path) -> dict[str, dict[str, Any]]:
    return _jobs(text_db)


def _query(**kw: Any) -> usage.UsageQuery:
    return usage.UsageQuery(usd_per_gpu_hour={"H100": 6.0, "A100": 4.0}, **kw)


# --- ingest ------------------------------------------------------------------------------


def test_totalcpu_and_cputimeraw_are_stored_in_seconds(text_jobs) -> None:
    assert text_jobs["101"]["cpu_used_s"] == pytest.approx(7 * 3600 + 45 * 60 + 36)
    assert text_jobs["101"]["cpu_time_alloc_s"] == 28800
    assert text_jobs["102"]["cpu_used_s"] == pytest.approx(7200.0)  # '02:00:00.000'
    assert text_jobs["106"]["cpu_used_s"] == pytest.approx(0.012)  # MM:SS.mmm of a sleeper


def test_gpu_utilisation_mean_is_the_summed_gpuutil_per_gpu_capped_by_the_peak(text_jobs) -> None:
    # 101 carries its usage on the batch step only: folded into the allocation
    j = text_jobs["101"]
    assert (j["gpu_util_mean_pct"], j["gpu_util_max_pct"]) == (30.0, 35.0)
    assert j["gpu_mem_max_mb"] == 30720.0 and j["mem_used_max_mb"] == 12 * 1024
    # 103: gpuutil 170 over 2 GPUs = 85, peak 88; gpumem '70G' in MB
    j = text_jobs["103"]
    assert (j["gpu_util_mean_pct"], j["gpu_util_max_pct"], j["gpu_mem_max_mb"]) == (85, 88, 71680)
    assert j["usage_source"] == "sacct"


def test_jobstats_summary_in_admincomment_gives_per_gpu_mean_peak_and_memory(text_jobs) -> None:
    j = text_jobs["104"]
    assert j["usage_source"] == "jobstats"
    assert j["gpu_util_mean_pct"] == pytest.approx(25.0)  # (10 + 20 + 30 + 40) / 4
    assert j["gpu_util_max_pct"] == pytest.approx(40.0)
    assert j["gpu_mem_max_mb"] == pytest.approx(16 * 1024)
    assert j["cpu_used_s"] == pytest.approx(15 * 3600 + 12 * 60)  # TotalCPU wins over jobstats


def test_a_job_without_usage_fields_stores_null_not_zero(text_jobs) -> None:
    j = text_jobs["105"]  # blank TotalCPU etc. and 'JS1:Short'
    for c in ("cpu_used_s", "cpu_time_alloc_s", "gpu_util_mean_pct", "gpu_util_max_pct"):
        assert j[c] is None, c
    assert j["usage_source"] is None


def test_a_source_without_usage_columns_leaves_them_null(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    ingest_files(db, [INGEST_FIX / "edge.txt"])
    jobs = _jobs(db)
    assert jobs and all(
        j["cpu_used_s"] is None and j["gpu_util_mean_pct"] is None for j in jobs.values()
    )


def test_a_bad_totalcpu_keeps_its_job_with_no_cpu_use_and_a_reject_naming_the_field(
    tmp_path: Path,
) -> None:
    """Issue 30 A5: a bad usage-only value cost the whole job; now only the value."""
    db = tmp_path / "a.duckdb"
    [s] = ingest_files(db, [FIX / "sacct-usage-bad.txt"])
    assert (s.inserted, s.rejected, s.usage_faults) == (2, 0, 1)
    con = store.connect(db, read_only=True)
    try:
        [rej] = list_rejects(con)
    finally:
        con.close()
    assert (rej["line_no"], rej["field"]) == (2, "TotalCPU") and "soon" in rej["raw"]
    assert rej["reason"] == (
        "not a CPU time [D-][HH:]MM:SS[.mmm] (the job is stored with this usage NULL)"
    )


def test_a_narrower_reload_keeps_the_usage_a_wider_load_stored(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    ingest_files(db, [FIX / "sacct-usage.txt"])
    narrow = tmp_path / "narrow.txt"
    narrow.write_text(
        "JobID|JobIDRaw|Cluster|Submit|Start|End|ElapsedRaw|State|AllocTRES\n"
        "101|101|alpha|2026-11-02T10:00:00|2026-11-02T10:01:00|2026-11-02T11:01:00|3600|FAILED|"
        "billing=8,cpu=8,gres/gpu:h100=2,gres/gpu=2,mem=64G,node=1\n"
    )
    [s] = ingest_files(db, [narrow])
    assert s.updated == 1
    j = _jobs(db)["101"]
    assert j["state"] == "FAILED" and j["cpu_used_s"] == pytest.approx(27936.0)
    assert j["gpu_util_mean_pct"] == 30.0


def test_sacct_json_usage_from_time_total_steps_consumed_and_admin_comment(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    [s] = ingest_files(db, [FIX / "sacct-usage.json"])
    assert s.rejected == 0
    jobs = _jobs(db)
    a = jobs["4041"]  # 57 CPUs, 8 H200, an hour; consumed gpuutil 240 total, 45 max (bytes for mem)
    assert a["cpu_used_s"] == pytest.approx(194940.5)
    assert (a["gpu_util_mean_pct"], a["gpu_util_max_pct"]) == (30.0, 45.0)
    assert (a["gpu_mem_max_mb"], a["mem_used_max_mb"]) == (20480.0, 8192.0)
    b = jobs["4042"]
    assert b["usage_source"] == "jobstats"
    assert (b["gpu_util_mean_pct"], b["gpu_util_max_pct"], b["gpu_mem_max_mb"]) == (
        85.0,
        90.0,
        40960.0,
    )


def test_jobstats_decoding_of_gzip_and_zlib_and_its_markers() -> None:
    doc = {"nodes": {"n": {"total_time": 10, "gpu_utilization": {"0": 50}}}}
    body = json.dumps(doc).encode()
    gz = "JS1:" + base64.b64encode(gzip.compress(body)).decode()
    import zlib

    zl = "JS1:" + base64.b64encode(zlib.compress(body)).decode()
    assert decode_jobstats(gz) == doc == decode_jobstats(zl)
    assert jobstats_figures(gz) == [10.0, 50.0, 50.0, None]
    for text in ("JS1:Short", "JS1:None", "JS1:%%%", "a comment", ""):
        assert jobstats_figures(text) is None


# --- derived figures and verdicts --------------------------------------------------------


@pytest.fixture
def con(text_db: Path):
    c = store.connect(text_db, read_only=True)
    yield c
    c.close()


def test_cpu_efficiency_is_derived_on_read_in_advisor_jobs(con) -> None:
    from advisor.ingest.listing import list_jobs
    from advisor.ingest.records import JobFilter

    rows = {r["job_id"]: r for r in list_jobs(con, JobFilter())}
    assert rows["101"]["cpu_efficiency"] == pytest.approx(27936 / 28800)
    assert rows["102"]["cpu_efficiency"] == pytest.approx(7200 / (64 * 3600))
    assert rows["105"]["cpu_efficiency"] is None
    assert rows["104"]["gpu_util_mean_pct"] == pytest.approx(25.0)


def test_starved_and_over_provisioned_jobs_carry_their_numbers(con) -> None:
    rows = {r["job_id"]: r for r in usage.job_usage(con, _query())}
    assert rows["101"]["verdict"] == "starved"
    assert "97% of 8 cores busy" in rows["101"]["evidence"]
    assert "GPUs 30% busy on average, 35% at peak" in rows["101"]["evidence"]
    assert rows["104"]["verdict"] == "starved"
    assert rows["102"]["verdict"] == "over_provisioned"
    assert rows["102"]["idle_cores_per_gpu"] == pytest.approx(64 * (1 - 7200 / 230400))
    assert "62.0 idle cores per GPU" in rows["102"]["evidence"]
    assert rows["103"]["verdict"] == "ok"  # 4 idle cores per GPU, under 8
    assert rows["105"]["verdict"] is None and rows["105"]["evidence"] == "no CPU usage recorded"


def test_thresholds_move_the_verdicts(con) -> None:
    strict = usage.UsageThresholds(starved_gpu_util_pct=20.0, idle_cores_per_gpu=4.0)
    rows = {r["job_id"]: r for r in usage.job_usage(con, _query(thresholds=strict))}
    assert rows["101"]["verdict"] == "ok"  # GPUs at 30% are no longer "mostly idle"
    assert rows["103"]["verdict"] == "over_provisioned"
    starved = usage.job_usage(con, _query(), verdict="starved")
    assert {r["job_id"] for r in starved} == {"101", "104"}


def test_summary_shares_dollars_and_efficiency_per_gpu_type(con) -> None:
    rep = usage.usage_summary(con, _query(by=("gpu_type",)))
    g = {r["gpu_type"]: r for r in rep.rows()}
    h = g["H100"]  # 101 (2 GPU-h), 103 (2), 104 (4), 105 (1), 106 (1)
    assert h["gpu_hours"] == pytest.approx(10.0)
    assert h["share_gpu_hours_with_cpu_usage"] == pytest.approx(0.9)
    assert h["starved_gpu_hours"] == pytest.approx(6.0)
    assert h["share_gpu_hours_starved"] == pytest.approx(6.0 / 9.0)  # of GPU-hours with a verdict
    assert h["starved_usd"] == pytest.approx(6.0 * 6.0)
    used = 27936 + 28800 + 54720 + 0.012
    assert h["cpu_efficiency"] == pytest.approx(used / ((8 + 16 + 16 + 4) * 3600))
    assert h["busy_cores_per_gpu"] == pytest.approx(used / ((2 + 2 + 4 + 1) * 3600))
    assert g["A100"]["over_provisioned_jobs"] == 1 and g["A100"]["starved_usd"] == 0.0
    assert rep.advice.trust == "usage"


def test_a_starved_job_of_an_unpriced_gpu_type_leaves_the_dollars_unknown(con) -> None:
    rep = usage.usage_summary(con, usage.UsageQuery(usd_per_gpu_hour={"A100": 4.0}))
    assert {r["gpu_type"]: r["starved_usd"] for r in rep.rows()} == {"A100": 0.0, "H100": None}


def test_efficiency_against_cores_per_gpu_bins_and_where_it_saturates(con) -> None:
    rep = usage.usage_summary(con, _query(by=("cores_per_gpu_bin",)))
    bins = {r["cores_per_gpu_bin"]: r for r in rep.rows()}
    assert sorted(bins) == [4, 8, 64]
    assert bins[64]["cpu_efficiency"] == pytest.approx(7200 / 230400)
    # busy cores per GPU: 3.28 at 4, 4.0 at 8, 2.0 at 64: growth stops after 8
    assert rep.saturates_at_cores_per_gpu == 8


def test_saturation_needs_two_bins_and_reports_the_last_growing_one() -> None:
    def g(b: int, busy: float | None) -> usage.UsageGroup:
        e = usage._empty_group()
        return usage.UsageGroup(
            **{**e.__dict__, "keys": {"cores_per_gpu_bin": b}, "busy_cores_per_gpu": busy}
        )

    assert usage.saturation_cores_per_gpu([g(4, 3.0)]) is None
    assert usage.saturation_cores_per_gpu([g(1, 1.0), g(2, 2.0), g(4, 3.9), g(8, 4.0)]) == 4
    assert usage.saturation_cores_per_gpu([g(1, 1.0), g(2, 2.0)]) is None  # still growing


def test_without_usage_data_the_advice_is_the_allocation_estimate(tmp_path: Path) -> None:
    db = tmp_path / "a.duckdb"
    ingest_files(db, [INGEST_FIX / "edge.txt"])
    c = store.connect(db, read_only=True)
    try:
        rep = usage.usage_summary(c, usage.UsageQuery())
        cov = usage.usage_coverage(c)
    finally:
        c.close()
    assert rep.advice.trust == "allocation" and "no usage fields loaded" in rep.advice.reason
    assert rep.overall.cpu_efficiency is None and rep.overall.starved_jobs == 0
    assert cov and all(
        x.jobs_with_cpu_usage == 0 and x.note.startswith("no usage data") for x in cov
    )


def test_cpu_usage_without_gpu_utilisation_is_not_enough_to_trust_usage() -> None:
    e = usage._empty_group()
    only_cpu = usage.UsageGroup(
        **{**e.__dict__, "gpu_hours": 10.0, "share_gpu_hours_with_cpu_usage": 1.0}
    )
    adv = usage.advice(only_cpu, usage.UsageThresholds())
    assert adv.trust == "allocation" and "gres/gpuutil" in adv.reason


def test_coverage_per_cluster_names_sources_and_span(con) -> None:
    [c] = usage.usage_coverage(con)
    assert (c.cluster, c.gpu_jobs, c.jobs_with_cpu_usage, c.jobs_with_gpu_usage) == (
        "alpha",
        6,
        5,
        5,
    )
    assert c.sources == ("jobstats", "sacct")
    assert c.first_start_with_usage.isoformat() == "2026-11-02T10:01:00"
    assert c.share_gpu_hours_with_cpu_usage == pytest.approx(10 / 11)


# --- the model loop ------------------------------------------------------------------------


def test_model_agreement_counts_each_cell_against_measured_saturation(con) -> None:
    asked: list[tuple[str, int, float]] = []

    def model(gpu_type: str, gpus: int, cores_per_gpu: float) -> bool | None:
        asked.append((gpu_type, gpus, cores_per_gpu))
        if gpu_type == "A100":
            return None
        return cores_per_gpu <= 4  # "short of CPU" at 4 cores per GPU or fewer

    rows = {r.gpu_type: r for r in usage.model_agreement(con, _query(), model=model)}
    h = rows["H100"]  # 101 (4/GPU, saturated), 103 (8, not), 104 (4, saturated), 106 (4, not)
    assert (h.jobs, h.agree, h.both_short, h.model_only, h.measured_only) == (4, 3, 2, 1, 0)
    assert h.share_agree == pytest.approx(0.75)
    assert rows["A100"].jobs == 0 and rows["A100"].no_model_answer == 1
    assert len(asked) == len(set(asked))  # once per cell


def test_the_model_adapter_answers_none_for_what_it_cannot_judge() -> None:
    assert usage.model_needs_more_cores("H100", 0, 4.0) is None  # no job has 0 GPUs


def test_the_model_adapter_judges_a_gpu_type_without_a_price_as_any_other() -> None:
    # the cores do not depend on the GPU type or its price (docs/model.md)
    for cores in (1.0, 16.0):
        answer = usage.model_needs_more_cores("NOT-A-GPU", 1, cores)
        assert answer is not None and answer == usage.model_needs_more_cores("H100", 1, cores)


# --- CLI, as a user runs it ----------------------------------------------------------------


def _run(*args: str, db: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ADVISOR_DB": str(db)}
    return subprocess.run(
        [sys.executable, "-m", "advisor", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )


def test_cli_usage_json_jobs_json_and_data_status_show_usage(text_db: Path) -> None:
    r = _run("usage", "--by", "account", "--format", "json", db=text_db)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["advice"]["trust"] == "usage"
    assert {g["account"]: g["starved_jobs"] for g in doc["groups"]} == {
        "bio": 1,
        "chem": 1,
        "phys": 0,
    }
    r = _run("jobs", "--format", "json", db=text_db)
    assert r.returncode == 0, r.stderr
    by_id = {j["job_id"]: j for j in json.loads(r.stdout)}
    assert by_id["101"]["cpu_efficiency"] == pytest.approx(0.97)
    r = _run("data", "status", "--format", "json", db=text_db)
    assert json.loads(r.stdout)["usage"][0]["jobs_with_cpu_usage"] == 5


def test_cli_ratios_usage_adds_columns_per_group(text_db: Path) -> None:
    r = _run("ratios", "--usage", "--format", "json", db=text_db)
    assert r.returncode == 0, r.stderr
    rows = {x["gpu_type"]: x for x in json.loads(r.stdout)}
    assert rows["A100"]["cpu_efficiency"] == pytest.approx(7200 / 230400)
    assert rows["H100"]["p50"] == 4.0 and rows["H100"]["over_provisioned_jobs"] == 0


def test_cli_bad_group_and_bad_threshold_are_usage_errors(text_db: Path) -> None:
    r = _run("usage", "--by", "colour", db=text_db)
    assert (
        r.returncode == 2
        and r.stderr.startswith("Error: --by colour")
        and "Traceback" not in r.stderr
    )
    r = _run("usage", "--starved-cpu-eff", "1.5", db=text_db)
    assert r.returncode == 2 and "--starved-cpu-eff" in r.stderr
    r = _run("ratios", "--usage", "--by", "interactive", db=text_db)
    assert r.returncode == 2 and "--usage cannot group by interactive" in r.stderr


# --- the monthly report --------------------------------------------------------------------


def test_the_monthly_report_has_a_usage_section_saying_which_estimate_to_trust(con) -> None:
    from advisor import report
    from advisor.pricing import load_pricing

    inputs = report.ReportInputs(prices=load_pricing())
    rep = report.build_report(con, report.parse_month("2026-11"), inputs=inputs)
    assert rep.usage is not None and rep.usage.advice.trust == "usage"
    h100 = {g.keys["gpu_type"]: g for g in rep.usage.groups}["H100"]
    usd = usage.prices_of(inputs.prices)["H100"]
    assert h100.starved_usd == pytest.approx(6.0 * usd)
    html = report.render_html(rep, charts=())
    assert 'data-key="usage.advice.trust" data-value="usage"' in html
    assert f'data-key="usage.groups.1.starved_usd" data-value="{h100.starved_usd!r}"' in html
    empty = report.build_report(con, report.parse_month("2026-10"), inputs=inputs)
    assert empty.usage is not None and empty.usage.advice.trust == "allocation"
    assert "No usage data for this month" in report.render_html(empty, charts=())


def test_every_usage_number_in_the_report_html_equals_the_report_object(con) -> None:
    from advisor import report
    from tests.test_report import html_values, lookup

    rep = report.build_report(con, report.parse_month("2026-11"))
    values = {
        k: v
        for k, v in html_values(report.render_html(rep, charts=())).items()
        if k.startswith("usage.")
    }
    data = report.report_as_dict(rep)
    assert len(values) >= 20  # every cell of both GPU types' rows, the advice, the saturation
    for key, shown in values.items():
        expected = lookup(data, key)
        if isinstance(expected, float):
            assert float(shown) == expected, key
        elif expected is None:
            assert shown == "", key
        else:
            assert shown == str(expected), key


def test_every_option_of_advisor_usage_is_documented() -> None:
    import re

    import typer

    from advisor.cli import app

    command = typer.main.get_command(app).commands["usage"]  # type: ignore[attr-defined]
    options = {o for p in command.params for o in p.opts if o.startswith("--")}
    doc = (Path(__file__).resolve().parent.parent / "docs" / "usage.md").read_text()
    documented = set(re.findall(r"`(--[a-z][a-z-]*)", doc))
    assert options - {"--help"} <= documented, options - documented


# --- the generator's usage fields ----------------------------------------------------------


def test_synth_usage_adds_four_fields_after_nodelist_and_leaves_the_rest_byte_for_byte(
    tmp_path: Path,
) -> None:
    from advisor.ingest.synth import FIELDS, USAGE_FIELDS, SynthConfig, fields_of, generate

    plain, with_usage = tmp_path / "p.txt", tmp_path / "u.txt"
    generate(SynthConfig(records=500, seed=3, odd_text_share=0.0), plain)
    generate(SynthConfig(records=500, seed=3, odd_text_share=0.0, usage=True), with_usage)
    cfg = SynthConfig(usage=True)
    at = FIELDS.index("NodeList") + 1
    assert fields_of(cfg) == FIELDS[:at] + USAGE_FIELDS + FIELDS[at:]
    stripped = [
        "|".join(p[:at] + p[at + len(USAGE_FIELDS) :])
        for p in (ln.split("|") for ln in with_usage.read_text().splitlines())
    ]
    assert stripped == plain.read_text().splitlines()
    db = tmp_path / "a.duckdb"
    [s] = ingest_files(db, [with_usage])
    assert s.rejected == 0
    c = store.connect(db, read_only=True)
    try:
        rep = usage.usage_summary(c, usage.UsageQuery(usd_per_gpu_hour={"H100": 1.0}))
    finally:
        c.close()
    assert rep.advice.trust == "usage" and rep.overall.share_gpu_hours_with_gpu_usage == 1.0
    assert 0 < rep.overall.cpu_efficiency < 1
