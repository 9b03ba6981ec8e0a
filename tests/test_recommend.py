"""Recommendations: one job (no database needed), the node cap, cost deltas, partitions."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path

import pytest

from advisor.pricing import PRICING_COLUMNS
from advisor.recommend import (
    JobQuery,
    PartitionQuery,
    Workload,
    parse_model_size,
    recommend_job,
    recommend_partitions,
)
from advisor.store import connect
from tests.job_submit import job_submit_args


@pytest.fixture
def no_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory with no database, and no $ADVISOR_DB."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("ADVISOR_DB", raising=False)
    monkeypatch.delenv("ADVISOR_MODEL", raising=False)
    return tmp_path


def _add_nodes(db: Path, gpu_type: str, cpus: int, gpus: int, partitions: list[str], n: int = 2):
    con = connect(db)
    first = int(con.execute("SELECT count(*) FROM nodes").fetchone()[0])
    for i in range(first, first + n):
        con.execute(
            "INSERT INTO nodes (cluster, node_name, cpus, gpus, gpu_type, gpu_type_raw, partitions,"
            " snapshot_at) VALUES ('c1', ?, ?, ?, ?, ?, ?, TIMESTAMP '2026-11-01 00:00:00')",
            [
                f"{gpu_type.lower()}-{partitions[0]}-{i}",
                cpus,
                gpus,
                gpu_type,
                gpu_type.lower() + "_80gb",
                partitions,
            ],
        )
    con.close()


def _add_jobs(db: Path, partition: str, gpu_type: str, specs: list[tuple[int, int, int]]):
    """specs: (cpus, gpus, elapsed hours); every job runs in November 2026."""
    con = connect(db)
    start = dt.datetime(2026, 11, 1)
    base = int(con.execute("SELECT count(*) FROM jobs").fetchone()[0])
    for i, (cpus, gpus, hours) in enumerate(specs):
        s = start + dt.timedelta(days=i % 28)
        con.execute(
            'INSERT INTO jobs (cluster, job_id_raw, submit, job_id, "partition", state, start,'
            ' "end", elapsed_s, cpus, gpus, gpu_type, gpu_type_raw) VALUES'
            " ('c1', ?, ?, ?, ?, 'COMPLETED', ?, ?, ?, ?, ?, ?, ?)",
            [
                base + i,
                s,
                str(base + i),
                partition,
                s,
                s + dt.timedelta(hours=hours),
                hours * 3600,
                cpus,
                gpus,
                gpu_type,
                gpu_type.lower() + "_80gb",
            ],
        )
    con.close()


def test_json_has_the_fields_a_job_submit_plugin_reads_and_needs_no_database(cli, no_db):
    code, out, err = cli(*job_submit_args("--prompt-tokens", "32000"))
    assert code == 0, err
    rec = json.loads(out)
    for key in (
        "cpus_per_gpu",
        "predicted_speedup",
        "predicted_speedup_reason",
        "speedup_interval",
        "extra_vcpus",
        "usd_per_hour_delta",
        "cost_delta_pct",
        "assumptions",
        "decision_basis",
        "decision_reason",
        "utilisation_target",
        "executor",
        "evidence",
        "demand_cores_interval",
        "flags",
    ):
        assert key in rec
    assert not (no_db / "advisor.duckdb").exists()
    assert rec["current_cpus_per_gpu"] == 0.25  # Slurm's default: 1 CPU for the task's 4 GPUs
    assert 2 <= rec["cpus_per_gpu"] <= 8
    assert rec["executor"] == "mp"  # TP = 4 GPUs implies vLLM's multiprocess executor
    # at one core for four GPUs the demand is above the cores: no number, and why
    assert rec["predicted_speedup"] is None and rec["speedup_interval"] is None
    assert "pathological" in rec["predicted_speedup_reason"]
    low, high = rec["demand_cores_interval"]
    assert low <= rec["demand_cores"] <= high
    assert rec["extra_vcpus"] == pytest.approx((rec["cpus_per_gpu"] - 0.25) * 4)
    assert rec["assumptions"]["price"]["instance"] == "p5.48xlarge"
    assert "no node inventory" in rec["max_cpus_per_gpu_source"]


def test_the_cost_delta_reproduces_the_researchs_1_5_percent(no_db, tmp_path: Path):
    site = tmp_path / "paper.csv"
    site.write_text(
        ",".join(PRICING_COLUMNS) + "\nvcpu,paper,,,,,0.05,,2026-03-24,arXiv 2603.22774,\n"
    )
    # 8 GPUs of a p5.48xlarge; 2 more cores per GPU than the 1 given: 16 vCPUs.
    heavy = Workload(load_rps=64, prompt_tokens=100_000, renderer_workers=32)  # needs > 3
    rec = recommend_job(
        JobQuery(
            gpu_type="H100",
            gpus=8,
            current_cpus_per_gpu=1,
            workload=heavy,
            max_cpus_per_gpu=3,
            tolerance=0.01,
            pricing_file=str(site),
        )
    )
    assert rec.cpus_per_gpu == 3 and rec.extra_vcpus == 16
    assert rec.usd_per_hour_delta == pytest.approx(0.80)
    assert rec.gpu_share_usd_per_hour == pytest.approx(55.04)
    assert rec.cost_delta_pct == pytest.approx(1.45, abs=0.01)
    low, high = rec.cost_delta_pct_band  # the site's 0.05 plus the built-in 0.0446..0.0953
    assert low == pytest.approx(16 * 0.044625 / 55.04 * 100)
    assert high == pytest.approx(16 * 0.0953 / 55.04 * 100)


def test_tolerance_moves_the_curves_knee_not_the_capacity_answer(no_db):
    recs = [
        recommend_job(JobQuery(gpu_type="H200", gpus=4, tolerance=t))
        for t in (0.02, 0.05, 0.1, 0.3, 1.0)
    ]
    assert len({r.cpus_per_gpu for r in recs}) == 1
    knees = [r.knee_cores if r.knee_cores is not None else 10**6 for r in recs]
    assert knees == sorted(knees, reverse=True)


def test_starved_cores_have_no_slowdown_and_no_speedup_only_the_reason(no_db):
    rec = recommend_job(JobQuery(gpu_type="H100", gpus=4, current_cpus_per_gpu=0.25))
    assert rec.pathological_now and rec.slowdown_now is None
    assert rec.predicted_speedup is None and rec.speedup_interval is None
    assert "pathological at the current cores" in (rec.predicted_speedup_reason or "")
    assert any("pathological" in w for w in rec.warnings)


def test_a_finite_speedup_comes_with_a_finite_interval_around_it(no_db):
    rec = recommend_job(
        JobQuery(
            gpu_type="H200",
            gpus=1,
            current_cpus_per_gpu=2,
            workload=Workload(load_rps=1, prompt_tokens=16_000, workload="tokenize-heavy"),
        )
    )
    assert rec.predicted_speedup is not None and rec.predicted_speedup_reason is None
    assert rec.speedup_interval is not None
    lo, hi = rec.speedup_interval
    assert lo <= rec.predicted_speedup <= hi < float("inf")


def test_the_node_inventory_caps_the_recommendation(db_path: Path):
    _add_nodes(db_path, "H100", cpus=8, gpus=8, partitions=["gpu"])  # 1 core per GPU at most
    rec = recommend_job(JobQuery(gpu_type="H100", gpus=4, db=str(db_path)))
    assert rec.max_cpus_per_gpu == 1 and rec.cpus_per_gpu == 1
    assert "node inventory: 2 H100 node(s)" in rec.max_cpus_per_gpu_source
    assert any("the node type gives 1 cores per GPU, fewer than" in w for w in rec.warnings)


def test_unknown_platforms_and_gpu_counts_are_flagged_as_extrapolation(no_db):
    rec = recommend_job(JobQuery(gpu_type="A100", gpus=16))
    assert any("platform 'A100'" in w for w in rec.warnings)
    assert any("16 GPUs" in w for w in rec.warnings)


@pytest.mark.parametrize("gpu_type", ["V100", "A40", "Z900"])
def test_a_gpu_type_without_a_price_gets_its_cores_and_an_unknown_cost_with_the_reason(
    tmp_path, gpu_type
):
    code, out, err = _installed(
        "recommend", "--gpu-type", gpu_type, "--gpus", "2", "--format", "json", cwd=tmp_path
    )
    assert code == 0, err
    rec = json.loads(out)
    priced = json.loads(
        _installed("recommend", "--gpu-type", "H100", "--gpus", "2", "-f", "json", cwd=tmp_path)[1]
    )
    assert rec["cpus_per_gpu"] == priced["cpus_per_gpu"]  # the cores do not depend on a price
    assert rec["extra_vcpus"] == priced["extra_vcpus"]
    assert rec["usd_per_hour_delta"] == priced["usd_per_hour_delta"]  # the cores' own price
    for key in ("cost_delta_pct", "cost_delta_pct_band", "gpu_share_usd_per_hour", "instance"):
        assert rec[key] is None, key
    assert rec["cost_reason"].startswith(f"no instance price for GPU type '{gpu_type}'")
    assert "--pricing FILE" in rec["cost_reason"] and priced["cost_reason"] is None
    assert f"lost GPU time not priced: {rec['cost_reason']}" in rec["warnings"]
    assert rec["max_cpus_per_gpu"] == 64 and "no instance price" in rec["max_cpus_per_gpu_source"]
    code, out, err = _installed("recommend", "--gpu-type", gpu_type, "--gpus", "2", cwd=tmp_path)
    assert code == 0, err
    assert f"Warning: lost GPU time not priced: no instance price for GPU type '{gpu_type}'" in err
    assert "unknown" in out and "Traceback" not in err


def test_a_partition_of_gpus_without_a_price_gets_its_default_and_the_cost_reason(
    cli, db_path: Path
):
    _add_nodes(db_path, "V100", cpus=40, gpus=4, partitions=["old"])
    _add_jobs(db_path, "old", "V100", [(1, 4, 10), (40, 4, 10)])
    code, out, err = cli("recommend", "--partition", "*", "--db", str(db_path), "-f", "json")
    assert code == 0, err
    (row,) = json.loads(out)["partitions"]
    assert row["gpu_type"] == "V100" and row["def_cpu_per_gpu"] >= 2
    assert row["lost_usd_per_month"] is None
    assert row["cost_reason"].startswith("no instance price for GPU type 'V100'")
    assert "lost GPU time not priced: no instance price" in err
    code, out, err = cli("recommend", "--partition", "old", "--db", str(db_path))
    assert code == 0 and "V100" in out and "cost_reason" not in out  # said once, on stderr
    assert "Warning: c1/old/V100: lost GPU time not priced: no instance price" in err
    code, out, err = cli("policy", "export", "--db", str(db_path), "--format", "json")
    assert code == 0, err
    rules = {(r["partition"], r["gpu_type"]): r for r in json.loads(out)["rules"]}
    assert rules[("old", "v100_80gb")]["default_cpus_per_gpu"] == row["def_cpu_per_gpu"]
    assert ("*", "v100") in rules  # the inventory's family, priced or not
    assert rules[("*", "v100")]["default_cpus_per_gpu"] >= 2


@pytest.mark.parametrize(
    ("text", "value"), [("8b", 8.0), ("70B", 70.0), ("14.7", 14.7), ("1.5t", 1500.0)]
)
def test_model_sizes_parse_as_billions_of_parameters(text, value):
    assert parse_model_size(text) == pytest.approx(value)


def test_a_bad_model_size_is_a_usage_error(cli, no_db):
    code, _, err = cli("recommend", "--gpu-type", "H100", "--gpus", "4", "--model-size", "big")
    assert code == 2 and "model size 'big'" in err


def test_a_partition_recommendation_counts_jobs_below_and_prices_the_fix(db_path: Path):
    _add_nodes(db_path, "H100", cpus=96, gpus=4, partitions=["gpu"])
    starved = [(1, 4, 10)] * 6  # 0.25 cores per GPU, like the research's teaching cluster P25
    fine = [(32, 4, 10)] * 2  # 8 cores per GPU
    _add_jobs(db_path, "gpu", "H100", starved + fine)
    report = recommend_partitions(PartitionQuery(db=str(db_path)))
    (row,) = report.rows
    assert (row.partition, row.gpu_type, row.gres_type) == ("gpu", "H100", "h100_80gb")
    assert row.jobs == 8 and row.gpu_hours == pytest.approx(8 * 40)
    assert row.node_max_cpus_per_gpu == 24
    assert 1 < row.def_cpu_per_gpu <= 8 and row.min_cpus_per_gpu <= row.def_cpu_per_gpu
    assert row.jobs_below == 6 and row.share_jobs_below == pytest.approx(0.75)
    assert row.gpu_hours_below == pytest.approx(240)
    assert 0 < row.gpu_hours_lost < row.gpu_hours_below
    # the interval: the same loss under each of the fit's refits (demand refitted too)
    lo, hi = row.gpu_hours_lost_interval
    assert 0 <= lo <= row.gpu_hours_lost <= hi <= row.gpu_hours_below
    assert lo < hi
    # Fix: (rec x 4 - 1) vCPUs for 10 h, six jobs; the 8 jobs start a day apart, run 10 h:
    # less than a month of data, so the "per month" figures are the span's totals.
    # what decided the group's answer: H100 with 4 GPUs is a family the bench measured
    assert row.decision_basis == "wait model"
    assert row.span_hours == pytest.approx(7 * 24 + 10)
    assert row.months_observed == pytest.approx((7 + 10 / 24) / 30.4375)
    assert not row.per_month
    assert row.gpu_hours_lost_per_month == pytest.approx(row.gpu_hours_lost)
    assert row.gpu_hours_lost_per_month_interval == pytest.approx((lo, hi))
    vcpu_h = (row.def_cpu_per_gpu * 4 - 1) * 10 * 6
    assert row.fix_vcpu_hours == pytest.approx(vcpu_h)
    assert row.fix_vcpu_hours_per_month == pytest.approx(vcpu_h)
    assert row.fix_usd_per_month == pytest.approx(vcpu_h * 0.0504)
    assert row.lost_usd_per_month == pytest.approx(row.gpu_hours_lost_per_month * 55.04 / 8)
    assert row.p25_cores_per_gpu == pytest.approx(0.25)


def test_partition_recommendation_by_cli_without_a_database_says_how_to_load_one(cli, no_db):
    code, _, err = cli("recommend", "--partition", "*", "--format", "json")
    assert code == 4 and "advisor ingest" in err


def test_partition_recommendation_by_cli_as_json(cli, db_path: Path):
    _add_nodes(db_path, "A100", cpus=64, gpus=8, partitions=["teach"])
    _add_jobs(db_path, "teach", "A100", [(2, 2, 5), (4, 2, 5), (16, 2, 5)])
    code, out, err = cli(
        "recommend", "--partition", "teach", "--db", str(db_path), "--format", "json"
    )
    assert code == 0, err
    data = json.loads(out)
    (row,) = data["partitions"]
    assert row["partition"] == "teach" and row["node_max_cpus_per_gpu"] == 8
    lo, hi = row["gpu_hours_lost_interval"]  # next to gpu_hours_lost, for the dashboard
    assert lo <= row["gpu_hours_lost"] <= hi
    assert "gpu_time_lost" in data["assumptions"]


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--model-size", "70b", "--rps", "16", "--prompt-tokens", "100000", "--tolerance", "0.05"],
        ["--current-cpus-per-gpu=2", "--max-cpus-per-gpu", "12", "--ample-ttft-ms", "180"],
    ],
)
def test_the_fast_job_submit_path_answers_exactly_as_the_typer_command(cli, no_db, capsys, extra):
    from advisor.cli.recommend import fast_recommend

    args = ["recommend", "--gpu-type", "H200", "--gpus", "8", *extra, "--format", "json"]
    code, typer_out, err = cli(*args)
    assert code == 0, err
    assert fast_recommend(args) == 0
    fast_out = capsys.readouterr().out
    a, b = json.loads(typer_out), json.loads(fast_out)
    a["assumptions"]["model"].pop("file"), b["assumptions"]["model"].pop("file")
    assert a == b


def test_the_fast_path_gives_the_same_error_and_leaves_everything_else_to_typer(no_db, capsys):
    from advisor.cli.recommend import fast_recommend

    assert fast_recommend(["recommend", "--gpu-type", "H100", "--gpus", "0", "-f", "json"]) == 2
    assert "Error: --gpus must be 1 to 4,096 (the model's range), got 0" in capsys.readouterr().err
    for argv in (
        ["recommend", "--gpu-type", "H100", "--gpus", "2"],  # table output
        ["recommend", "--partition", "*", "--format", "json"],  # a partition
        ["recommend", "--help"],
        ["recommend", "--gpu-type", "H100", "--gpus", "two", "--format", "json"],
        ["fit", "--format", "json"],
    ):
        assert fast_recommend(argv) is None


def test_partition_figures_equal_the_ratio_engines_on_a_mixed_cluster(db_path: Path):
    import numpy as np

    from advisor.quantiles import job_percentile
    from advisor.ratios import RatioQuery, ratio_summary

    rng = np.random.default_rng(3)
    for partition, gpu_type in (("gpu", "H100"), ("teach", "A100"), ("gpu", "L40S")):
        specs = [
            (
                int(rng.choice([1, 2, 4, 8, 16, 32, 48])),
                int(rng.choice([1, 2, 4, 8])),
                int(rng.integers(1, 30)),
            )
            for _ in range(60)
        ]
        _add_jobs(db_path, partition, gpu_type, specs)
    report = recommend_partitions(PartitionQuery(db=str(db_path)))
    con = connect(db_path, read_only=True)
    thresholds = tuple(sorted({float(r.def_cpu_per_gpu) for r in report.rows}))
    summary = ratio_summary(
        con, RatioQuery(by=("partition", "gpu_type"), thresholds_cores_per_gpu=thresholds)
    )
    con.close()
    groups = {(g.keys["partition"], g.keys["gpu_type"]): g for g in summary.groups}
    assert len(report.rows) == len(groups) == 3
    for row in report.rows:
        g = groups[(row.partition, row.gpu_type)]
        assert row.jobs == g.jobs
        assert row.gpu_hours == pytest.approx(g.gpu_hours)
        assert row.p25_cores_per_gpu == pytest.approx(g.p25_cores_per_gpu)
        assert row.p50_cores_per_gpu == pytest.approx(g.p50_cores_per_gpu)
        assert row.share_jobs_below == pytest.approx(g.share_jobs_below[float(row.def_cpu_per_gpu)])
        assert row.share_gpu_hours_below == pytest.approx(
            g.share_gpu_hours_below[float(row.def_cpu_per_gpu)]
        )
    values, counts = [0.5, 1.0, 3.0, 8.0], [3, 1, 4, 2]
    expanded = np.repeat(values, counts)
    for q in (0.0, 0.1, 0.25, 0.5, 0.9, 1.0):
        assert job_percentile(values, counts, q) == pytest.approx(np.quantile(expanded, q))


def test_a_partition_recommendation_can_be_limited_to_clusters_and_a_time_range(db_path: Path):
    # eight jobs on days 1..8 of November 2026 in cluster c1; the first four at 0.25 cores/GPU
    _add_jobs(db_path, "gpu", "H100", [(1, 4, 10)] * 4 + [(32, 4, 10)] * 4)
    con = connect(db_path)
    con.execute("UPDATE jobs SET cluster = 'c2' WHERE job_id_raw = 7")
    con.close()
    whole = recommend_partitions(PartitionQuery(db=str(db_path))).rows[0]
    assert whole.jobs == 8
    (c1,) = recommend_partitions(PartitionQuery(db=str(db_path), clusters=("c1",))).rows
    assert c1.jobs == 7 and c1.jobs_below == 4
    (early,) = recommend_partitions(
        PartitionQuery(
            db=str(db_path), start=dt.datetime(2026, 11, 2), end=dt.datetime(2026, 11, 6)
        )
    ).rows
    assert early.jobs == 4 and early.jobs_below == 3  # days 2..5: three starved, one fine
    assert early.p25_cores_per_gpu == pytest.approx(0.25)
    assert not recommend_partitions(PartitionQuery(db=str(db_path), clusters=("nowhere",))).rows


def _installed(*args: str, env_extra: dict[str, str] | None = None, cwd: Path | None = None):
    """The installed console script as a subprocess (what a job-submit plugin runs)."""
    import os
    import shutil
    import subprocess
    import sys

    # the script of the environment running the tests, on PATH or not
    exe = shutil.which("advisor", path=str(Path(sys.executable).parent)) or shutil.which("advisor")
    assert exe, "the advisor console script is not installed in this environment"
    # the script imports this checkout's advisor, wherever the environment was installed from
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": root}
    env.pop("ADVISOR_MODEL", None)
    env.pop("ADVISOR_DB", None)
    env.update(env_extra or {})
    done = subprocess.run(
        [exe, *args], capture_output=True, text=True, timeout=120, cwd=cwd, env=env
    )
    return done.returncode, done.stdout, done.stderr


def test_a_gpu_heavy_load_gets_the_2_plus_n_floor_and_no_more(no_db):
    # one H200, unique 16k-token prompts at 1 request/s: measured flat from 2 to 14 cores
    rec = recommend_job(
        JobQuery(
            gpu_type="H200",
            gpus=1,
            workload=Workload(load_rps=1, prompt_tokens=16_000, workload="unique"),
        )
    )
    assert rec.floor_cores == 3 and rec.cores_total == 3 and rec.cpus_per_gpu == 3
    assert rec.knee_cores is not None and rec.knee_cores <= rec.floor_cores
    assert rec.load_regime == "gpu-bound"
    rec8 = recommend_job(
        JobQuery(
            gpu_type="H200",
            gpus=8,
            workload=Workload(load_rps=1, prompt_tokens=16_000, workload="unique"),
            current_cpus_per_gpu=4,
        )
    )
    assert rec8.floor_cores == 10 and rec8.cores_total == 16  # ceil(10 / 8) per GPU
    assert rec8.regime == "gpu-bound" and not rec8.pathological_now


def _cores(rps: float = 3.4, tokens: int = 30_000, **kw: object) -> int:
    gpus = int(kw.pop("gpus", 1))  # type: ignore[call-overload]
    tp = kw.pop("tp", None)
    executor = kw.pop("executor", None)
    gpu_type = str(kw.pop("gpu_type", "H200"))
    w = Workload(load_rps=rps, prompt_tokens=tokens, workload="tokenize-heavy", executor=executor)  # type: ignore[arg-type]
    return recommend_job(JobQuery(gpu_type=gpu_type, gpus=gpus, tp=tp, workload=w)).cores_total  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"gpus": 2, "tp": 1},
        {"gpus": 2, "tp": 2},
        {"executor": "mp"},
        {"executor": "uni"},
        {"gpus": 4},
    ],
)
def test_cores_never_fall_as_the_load_or_the_prompts_grow(no_db, config):
    by_rate = [_cores(rps, **config) for rps in (1, 2, 3, 4, 5, 6, 8, 16, 64)]
    assert by_rate == sorted(by_rate), by_rate
    by_tokens = [
        _cores(4, t, **config) for t in (1000, 8000, 20_000, 30_000, 40_000, 60_000, 200_000)
    ]
    assert by_tokens == sorted(by_tokens), by_tokens


def test_the_answer_does_not_flip_on_the_gpu_label(no_db):
    # the demand does not depend on the GPU type: H100 and H200 (equal curves) answer alike,
    # and so do B200 and an unknown label
    for rps in (2.5, 3, 4.5, 6):
        answers = {_cores(rps, gpu_type=t) for t in ("H100", "H200", "B200")}
        assert len(answers) == 1, (rps, answers)


def test_tp_and_the_executor_change_the_demand_and_its_family(no_db):
    def rec(gpus: int, tp: int | None, executor: str | None = None):
        w = Workload(load_rps=6, prompt_tokens=7000, workload="unique", executor=executor)
        return recommend_job(JobQuery(gpu_type="H200", gpus=gpus, tp=tp, workload=w))

    uni, mp = rec(1, None), rec(1, None, "mp")
    assert uni.executor == "uni" and mp.executor == "mp"
    # the mp worker busy-waits on a core of its own: about one core more
    assert mp.demand_parts["gpu_workers"] > 0.5 and uni.demand_parts["gpu_workers"] == 0.0
    assert mp.demand_cores > uni.demand_cores + 0.5
    tp2, tp1 = rec(2, 2), rec(2, 1)
    assert tp2.executor == "mp" and tp2.demand_parts["gpu_workers"] > 1.0
    assert tp2.evidence_family == "vllm, 2 GPU(s), TP 2, mp executor"
    assert tp1.evidence_family == "vllm, 2 GPU(s), TP 1, uni executor"


def test_without_a_series_of_the_family_the_answer_is_2_plus_n_with_evidence_none(no_db):
    # two GPUs without TP (two engines): no calibration series ran it; not 30 cores from a
    # TP=2 series at the same load, as the nearest-series lookup used to answer
    rec = recommend_job(
        JobQuery(
            gpu_type="H200",
            gpus=2,
            tp=1,
            workload=Workload(load_rps=6, prompt_tokens=7000, workload="unique"),
        )
    )
    assert rec.evidence == "none" and rec.evidence_series == ()
    assert rec.decision_basis == "no evidence" and rec.cores_total == 4 == rec.floor_cores
    assert "no calibration series" in rec.decision_reason


def test_the_basis_and_its_reason_come_from_the_fits_held_out_decisions(no_db):
    from advisor.model import slowdown

    params = slowdown.load_params()
    cap = params.meta["capacity"]
    rec = recommend_job(JobQuery(gpu_type="H200", gpus=1))
    # the shipped fit has a wait model for the default executor, so the wait decides; the
    # capacity rule's settings are still the fit's
    assert params.meta["wait"]["roles"]["engine_core/uni"]
    assert rec.decision_basis == "wait model" and "at most 15% of the time" in rec.decision_reason
    assert rec.wait_knee == rec.cores_total and rec.cores_total >= rec.floor_cores
    assert rec.utilisation_target == cap["utilisation_target"]
    assert rec.decision_score["2 + N"]["series"] == cap["decision"]["2 + N"]["series"]
    if rec.decision_basis == "2 + N":
        # 2 + N, raised only where the demand alone needs more (demand < cores)
        assert rec.cores_total == max(rec.floor_cores, int(rec.demand_cores) + 1)


def test_a_saturated_tokenizer_gets_more_renderer_workers_not_the_node_maximum(no_db):
    heavy = Workload(load_rps=8, prompt_tokens=30_000, workload="tokenize-heavy")
    rec = recommend_job(JobQuery(gpu_type="H200", gpus=1, workload=heavy))
    assert rec.tokenizer_saturated and "tokenizer-saturated" in rec.flags
    assert rec.cores_total < rec.max_cpus_per_gpu  # not the node's maximum
    assert rec.renderer_workers_recommended > 1 and rec.rps_per_renderer_worker
    # that many workers bring each thread under the saturation share at this rate
    assert 8 / rec.renderer_workers_recommended <= rec.rps_per_renderer_worker + 1e-9
    assert any(
        f"--renderer-num-workers {rec.renderer_workers_recommended}" in w for w in rec.warnings
    )
    fixed = recommend_job(
        JobQuery(
            gpu_type="H200",
            gpus=1,
            workload=Workload(
                load_rps=8,
                prompt_tokens=30_000,
                workload="tokenize-heavy",
                renderer_workers=rec.renderer_workers_recommended,
            ),
        )
    )
    assert not fixed.tokenizer_saturated and fixed.flags == ()
    assert fixed.cores_total == rec.cores_total  # the same CPU work on more threads


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_inputs_never_reach_the_model(no_db, bad):
    from advisor.errors import InputError

    with pytest.raises(InputError, match="--rps.*finite"):
        recommend_job(JobQuery(gpu_type="H200", gpus=1, workload=Workload(load_rps=bad)))
    with pytest.raises(InputError, match="--current-cpus-per-gpu.*finite"):
        recommend_job(JobQuery(gpu_type="H200", gpus=1, current_cpus_per_gpu=bad))


def test_no_field_is_a_cap_divided_by_a_prediction(no_db):
    from advisor.model import slowdown

    cap = slowdown.load_params().max_slowdown
    for q in (
        JobQuery(gpu_type="H100", gpus=4),
        JobQuery(gpu_type="B200", gpus=8),
        # the busy-waiting worker puts the demand beyond twice the one CPU Slurm gives
        JobQuery(
            gpu_type="H200",
            gpus=1,
            workload=Workload(
                load_rps=8, prompt_tokens=33_000, workload="tokenize-heavy", executor="mp"
            ),
        ),
    ):
        rec = recommend_job(q)
        assert rec.pathological_now  # Slurm's default of one CPU for the whole job
        assert rec.regime == "pathological"
        assert rec.slowdown_now is None and rec.ttft_ms_now is None
        assert rec.predicted_speedup is None and rec.speedup_interval is None
        assert (
            rec.pathological_note
            and f"below {rec.pathological_below_cores} cores" in rec.pathological_note
        )
        numbers = [
            v
            for v in (
                rec.slowdown_recommended,
                *rec.slowdown_now_interval,
            )
            if isinstance(v, float) and math.isfinite(v)
        ]
        artefacts = [cap, cap / (rec.slowdown_recommended or 1.0)]
        assert not any(v == pytest.approx(a) for v in numbers for a in artefacts), numbers


def test_the_evidence_is_every_series_of_the_family_never_a_distance(no_db):
    rec = recommend_job(
        JobQuery(
            gpu_type="H200",
            gpus=2,
            tp=2,
            workload=Workload(load_rps=6, prompt_tokens=7000, workload="unique"),
        )
    )
    assert rec.evidence == "measured"
    assert {e["family"] for e in rec.evidence_series} == {rec.evidence_family}
    assert any("|2gpu|tp2|mp|unique|6.0rps" in e["series"] for e in rec.evidence_series)
    assert all("distance" not in e for e in rec.evidence_series)
    assert rec.validation["scheme"] == "leave one series out"


def test_recommend_options_through_the_installed_console_script(tmp_path: Path):
    base = [
        "recommend",
        "--gpu-type",
        "H200",
        "--gpus",
        "2",
        "--prompt-tokens",
        "30000",
        "--rps",
        "8",
        "--format",
        "json",
    ]
    code, out, err = _installed(*base, "--tp", "1", "--prefix-hit", "0.95", cwd=tmp_path)
    assert code == 0, err
    one = json.loads(out)
    assert one["tp"] == 1 and one["demand_parts"]["gpu_workers"] == 0.0
    assert one["assumptions"]["workload"]["prefix_hit"] == 0.95
    code, out, err = _installed(*base, "--workload", "tokenize-heavy", cwd=tmp_path)
    assert code == 0, err
    two = json.loads(out)
    assert two["tp"] == 2 and two["demand_parts"]["gpu_workers"] > 0  # a busy worker per GPU
    assert two["demand_cores"] > one["demand_cores"]
    for key in (
        "cpus_per_gpu",
        "predicted_speedup",
        "cost_delta_pct",
        "cores_total",
        "knee_cores",
        "knee_cores_interval",
        "regime",
        "evidence",
        "floor_cores",
    ):
        assert key in two
    assert two["regime"] == "pathological"  # Slurm's default: one CPU for the job
    for bad, msg in (
        (["--prefix-hit", "1.5"], "--prefix-hit must be between 0 and 1"),
        (["--workload", "chatty"], "--workload 'chatty'"),
        (["--tp", "4"], "--tp must be between 1 and --gpus"),
    ):
        code, out, err = _installed(*base, *bad, cwd=tmp_path)
        assert code == 2 and f"Error: {msg}" in err and "Traceback" not in err, (bad, err)
    code, out, err = _installed(*base, "--fit-file", str(tmp_path / "none.json"), cwd=tmp_path)
    assert code == 4 and "none.json: no such model file" in err


def test_a_partition_default_and_the_policy_follow_the_job_function(no_db):
    from advisor.model import slowdown
    from advisor.policy import PolicyConfig, build_policy
    from advisor.recommend import sufficient_cores

    params = slowdown.load_params()
    w = Workload(load_rps=8, prompt_tokens=33_000, workload="tokenize-heavy")
    policy = build_policy(PolicyConfig(workload=w, fallback_gpus=4))
    rules = {(r.partition, r.gpu_type): r for r in policy.rules}
    s = sufficient_cores(params, gpus=4, platform="H200", workload=w, cap=24)
    assert rules[("*", "h200")].default_cpus_per_gpu == s.cpus_per_gpu
    assert s.cpus_per_gpu * 4 >= 2 + 4


def test_the_job_submit_path_imports_neither_scikit_learn_nor_scipy(tmp_path: Path):
    # nor the partition half of advisor.recommend (issue 52: it loads on first use)
    import subprocess
    import sys

    code = (
        "import sys; from advisor.recommend import JobQuery, Workload, recommend_job; "
        "recommend_job(JobQuery(gpu_type='H200', gpus=2, tp=2, workload=Workload("
        "workload='tokenize-heavy'))); "
        "print(sorted(({m.split('.')[0] for m in sys.modules} | set(sys.modules)) & "
        "{'sklearn', 'scipy', 'pandas', 'duckdb', 'advisor.model.calibration', "
        "'advisor.recommend.partitions', 'advisor.recommend.measured'}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_starvation_is_gpu_hours_times_the_slowdown_gap_for_rows_below_the_recommendation():
    import dataclasses

    import numpy as np

    from advisor.model import slowdown
    from advisor.recommend import starvation

    # a model file without a wait fit: the TTFT curve gives the slowdown (with one, the wait's
    # bound does: tests/test_wait_bound.py)
    shipped = slowdown.load_params()
    params = dataclasses.replace(
        shipped, meta={k: v for k, v in shipped.meta.items() if k != "wait"}
    )

    def slow(cores_per_gpu: float, w: Workload | None = None) -> float:
        w = w or Workload()
        row = slowdown.feature_row(
            cores_per_gpu,
            gpus=4,
            platform="H100",
            model_params_b=w.model_params_b,
            prefix_hit=w.hit(),
        )
        return float(slowdown.evaluate(params, np.array([row]))[0][0])

    # 4 GPUs each: 8 CPUs (2 per GPU, below 6) for 10 GPU-h over 2.5 h; 32 CPUs (8, above) for 5
    got = starvation(
        params,
        cpus=[8, 32],
        gpus=[4, 4],
        gpu_hours=[10.0, 5.0],
        elapsed_s=[9000, 3600],
        recommended_cores_per_gpu=6,
        platform="H100",
    )
    assert got.below.tolist() == [True, False]
    assert slow(2) > slow(6), "2 cores per GPU must be starved for the check to mean anything"
    assert got.gpu_hours_lost == pytest.approx(10.0 * (1.0 - slow(6) / slow(2)), rel=1e-12)
    assert got.fix_vcpu_hours == (6 * 4 - 8) * 2.5  # the missing 16 cores for 2.5 hours
    # a larger model at the same cores: the workload reaches the curve
    big = Workload(model_params_b=70.0)
    got70 = starvation(
        params,
        cpus=[8],
        gpus=[4],
        gpu_hours=[10.0],
        elapsed_s=[9000],
        recommended_cores_per_gpu=6,
        platform="H100",
        workload=big,
    )
    assert got70.gpu_hours_lost == pytest.approx(
        10.0 * (1.0 - slow(6, big) / slow(2, big)), rel=1e-12
    )
    # nobody below: nothing lost, nothing to fix
    none = starvation(
        params,
        cpus=[32],
        gpus=[4],
        gpu_hours=[5.0],
        elapsed_s=[3600],
        recommended_cores_per_gpu=6,
        platform="H100",
    )
    assert (none.gpu_hours_lost, none.fix_vcpu_hours) == (0.0, 0.0)


def test_starvation_of_many_groups_at_once_equals_each_group_alone():
    """recommend_partitions judges every group in one call (a recommendation and a platform per
    row): the rows' losses and fixes must be what each group's own call gives."""
    import numpy as np

    from advisor.model import slowdown
    from advisor.recommend import starvation

    params = slowdown.load_params()
    groups = [
        # (CPUs, GPUs, GPU-hours, elapsed s) rows, recommended cores per GPU, platform
        ([(8, 4, 10.0, 9000), (32, 4, 5.0, 3600)], 6, "H100"),
        ([(1, 8, 40.0, 18000), (4, 2, 3.0, 5400), (2, 1, 1.0, 3600)], 4, "A100"),
        ([(2, 2, 7.0, 12600)], 3, None),
    ]

    def cols(rows):
        return {
            "cpus": [r[0] for r in rows],
            "gpus": [r[1] for r in rows],
            "gpu_hours": [r[2] for r in rows],
            "elapsed_s": [r[3] for r in rows],
        }

    alone = [
        starvation(params, **cols(rows), recommended_cores_per_gpu=rec, platform=platform)
        for rows, rec, platform in groups
    ]
    every = [(r, rec, platform) for rows, rec, platform in groups for r in rows]
    together = starvation(
        params,
        **cols([r for r, _, _ in every]),
        recommended_cores_per_gpu=[rec for _, rec, _ in every],
        platform=[p for _, _, p in every],
    )
    assert together.below.tolist() == [b for a in alone for b in a.below.tolist()]
    np.testing.assert_allclose(together.lost_rows, np.concatenate([a.lost_rows for a in alone]))
    np.testing.assert_allclose(together.fix_rows, np.concatenate([a.fix_rows for a in alone]))
    assert together.gpu_hours_lost == pytest.approx(sum(a.gpu_hours_lost for a in alone))
    assert alone[1].gpu_hours_lost > 0 and alone[1].fix_vcpu_hours == pytest.approx(
        (4 * 8 - 1) * 5.0 + (4 * 2 - 4) * 1.5 + (4 * 1 - 2) * 1.0
    )
    # no rows: nothing lost, nothing to fix
    empty = starvation(params, **cols([]), recommended_cores_per_gpu=[], platform=[])
    assert (empty.gpu_hours_lost, empty.fix_vcpu_hours, empty.below.size) == (0.0, 0.0, 0)


def test_one_context_answers_as_separate_calls_do_and_closes_its_connection(db_path: Path):
    import duckdb

    from advisor.recommend import RecommendContext

    connect(db_path).close()
    _add_nodes(db_path, "H100", 64, 4, ["gpu"])
    _add_jobs(db_path, "gpu", "H100", [(4, 4, 10), (8, 4, 5), (32, 4, 2)])
    job = JobQuery(gpu_type="H100", gpus=4, partition="gpu", db=str(db_path))
    part = PartitionQuery(db=str(db_path))
    with RecommendContext.open(db=db_path) as ctx:
        assert recommend_job(job, ctx) == recommend_job(job)
        assert recommend_partitions(part, ctx=ctx) == recommend_partitions(part)
        con = ctx.connection()
        assert con is ctx.connection()  # one connection for every call
        assert recommend_job(job, ctx).max_cpus_per_gpu_source.startswith("node inventory")
    with pytest.raises(duckdb.ConnectionException):
        con.execute("SELECT 1")


def test_a_context_without_a_database_leaves_duckdb_unimported(tmp_path: Path):
    import subprocess
    import sys

    code = (
        "import sys; from advisor.recommend import JobQuery, RecommendContext, recommend_job; "
        "ctx = RecommendContext.open(db='missing.duckdb'); "
        "print(ctx.connection(), recommend_job(JobQuery(gpu_type='H100', gpus=4), ctx)"
        ".max_cpus_per_gpu_source.startswith('no node inventory'), 'duckdb' in sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "True", "False"]


def _one_error_line(code: int, err: str, expected_code: int) -> str:
    """The stderr of a failed run: exactly one line, 'Error: ...', no traceback."""
    lines = err.strip().splitlines()
    assert code == expected_code, err
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("fmt", ["json", "table"])
@pytest.mark.parametrize("tolerance", ["5", "0", "-0.1", "1.5"])
def test_a_tolerance_outside_zero_to_one_is_a_usage_error_of_one_line(tmp_path, fmt, tolerance):
    code, out, err = _installed(
        "recommend",
        "--gpu-type",
        "H100",
        "--gpus",
        "4",
        "--tolerance",
        tolerance,
        "--format",
        fmt,
        cwd=tmp_path,
    )
    line = _one_error_line(code, err, 2)
    assert "--tolerance must be a fraction in (0, 1]" in line and out == ""


def test_a_tolerance_of_one_is_accepted(no_db):
    assert recommend_job(JobQuery(gpu_type="H100", gpus=4, tolerance=1.0)).tolerance == 1.0


def test_policy_and_partition_tolerances_outside_zero_to_one_are_usage_errors(cli, no_db):
    from advisor.errors import UsageError

    with pytest.raises(UsageError, match="--min-tolerance must be a fraction"):
        recommend_partitions(PartitionQuery(min_tolerance=2.0))
    code, _, err = cli("policy", "export", "--tolerance", "5", "--format", "json")
    assert code == 2 and "--tolerance must be a fraction in (0, 1]" in err


def test_an_unknown_partition_is_not_found_naming_it_and_the_known_ones(db_path: Path, tmp_path):
    _add_nodes(db_path, "H100", cpus=64, gpus=4, partitions=["gpu", "gpu-big"])
    _add_jobs(db_path, "teach", "A100", [(2, 2, 5)])  # a partition known from its jobs only
    job = ["recommend", "--gpu-type", "H100", "--gpus", "4", "--db", str(db_path)]
    for args in (
        [*job, "--partition", "nope", "--format", "json"],  # the job-submit path
        [*job, "--partition", "nope"],  # the typer command, table output
        ["recommend", "--partition", "nope", "--db", str(db_path), "--format", "json"],
    ):
        code, out, err = _installed(*args, cwd=tmp_path)
        line = _one_error_line(code, err, 4)
        assert "--partition 'nope' is not in the database" in line, line
        assert "known: gpu, gpu-big, teach" in line and "advisor nodes list" in line
        assert out == ""
    code, out, err = _installed(*job, "--partition", "teach", "--format", "json", cwd=tmp_path)
    assert code == 0, err
    assert "no node inventory" in json.loads(out)["max_cpus_per_gpu_source"]
    code, out, err = _installed(*job, "--partition", "gpu-big", "--format", "json", cwd=tmp_path)
    assert code == 0, err
    rec = json.loads(out)
    assert rec["max_cpus_per_gpu"] == 16
    assert rec["max_cpus_per_gpu_source"] == "node inventory: 2 H100 node(s) in partition gpu-big"


def test_the_node_cap_is_the_smallest_over_every_node_of_the_partition(db_path: Path):
    _add_nodes(db_path, "H100", cpus=64, gpus=4, partitions=["gpu"])
    _add_nodes(db_path, "H100", cpus=32, gpus=8, partitions=["gpu", "old"], n=3)
    _add_nodes(db_path, "A100", cpus=8, gpus=8, partitions=["gpu"])
    from advisor.recommend import RecommendContext, node_cap

    with RecommendContext.open(db=db_path) as ctx:
        assert node_cap(ctx, "H100", None) == (4, 5)
        assert node_cap(ctx, "h100", "gpu") == (4, 5)
        assert node_cap(ctx, "H100", "old") == (4, 3)
        assert node_cap(ctx, "A100", "old") is None
        assert node_cap(ctx, "L40S", None) is None


def test_the_job_submit_command_with_a_node_inventory_imports_neither_pandas_nor_typer(
    db_path: Path, tmp_path: Path
):
    import subprocess
    import sys

    _add_nodes(db_path, "H100", cpus=64, gpus=4, partitions=["gpu"])
    argv = ["advisor", "recommend", "--gpu-type", "H100", "--gpus", "4", "--partition", "gpu"]
    argv += ["--db", str(db_path), "--format", "json"]
    code = (
        "import atexit, sys; atexit.register(lambda: sys.stderr.write(repr(sorted("
        "{m.split('.')[0] for m in sys.modules} & {'pandas', 'typer', 'click', 'rich', "
        "'sklearn', 'scipy', 'altair', 'pyarrow', 'duckdb'})))); "
        f"sys.argv = {argv!r}; from advisor.cli import main; main()"
    )
    root = str(Path(__file__).resolve().parent.parent)

    def call() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": root},
        )

    done = call()
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["max_cpus_per_gpu_source"].startswith("node inventory")
    assert done.stderr.strip().splitlines()[-1] == "['duckdb']"  # the database, nothing else
    # the inventory read is cached beside the database: the next call opens no database at all
    assert Path(f"{db_path}.nodecaps.json").exists()
    again = call()
    assert again.stdout == done.stdout and again.stderr.strip().splitlines()[-1] == "[]"


def test_the_node_cap_cache_is_read_only_while_the_database_is_unchanged(
    db_path: Path, tmp_path: Path
):
    from advisor.recommend import JobQuery, recommend_job

    _add_nodes(db_path, "H100", cpus=64, gpus=4, partitions=["gpu"])
    q = JobQuery(gpu_type="H100", gpus=4, db=str(db_path), max_wait=0.01)
    first = recommend_job(q)
    assert first.max_cpus_per_gpu == 16
    cache = Path(f"{db_path}.nodecaps.json")
    assert cache.exists()
    # nodes of a quarter the cores: the database changed, so the cache no longer answers
    con = connect(db_path)
    con.execute("UPDATE nodes SET cpus = 16")
    con.close()
    assert recommend_job(q).max_cpus_per_gpu == 4
    # a cache that is no JSON, or of another database, is ignored, never believed
    cache.write_text("{not json")
    assert recommend_job(q).max_cpus_per_gpu == 4


@pytest.mark.parametrize(
    "args",
    [
        ["recommend", "--gpu-type", "H100", "--gpus", "4", "--format", "json"],  # job-submit path
        ["recommend", "--gpu-type", "H100", "--gpus", "4", "--format", "csv"],  # the typer command
        ["policy", "export", "--format", "json"],
        ["calibration", "list", "--format", "json"],
    ],
)
def test_a_named_database_that_is_missing_is_one_warning_where_the_answer_needs_none(
    tmp_path, args
):
    missing = tmp_path / "typo.duckdb"
    code, out, err = _installed(*args, "--db", str(missing), cwd=tmp_path)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if str(missing) in line]
    assert warnings == [
        f"Warning: {missing}: no such database (named by --db or $ADVISOR_DB); answering "
        f"without it: {warnings[0].split('answering without it: ')[1]}"
    ], err
    assert out and "Traceback" not in err
    assert not missing.exists()  # a read command never creates the file
    code, _, err = _installed(*args, cwd=tmp_path, env_extra={"ADVISOR_DB": str(missing)})
    assert code == 0 and f"Warning: {missing}: no such database" in err
    code, _, err = _installed(*args, cwd=tmp_path)  # the default file: only looked for
    assert code == 0 and "no such database" not in err
    assert not (tmp_path / "advisor.duckdb").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["recommend", "--partition", "*", "--format", "json"],
        ["jobs"],
        ["ratios"],
        ["nodes", "list"],
        ["db", "info"],
        ["usage"],
    ],
)
def test_a_named_database_that_is_missing_is_not_found_where_the_answer_needs_it(tmp_path, args):
    missing = tmp_path / "typo.duckdb"
    code, out, err = _installed(*args, "--db", str(missing), cwd=tmp_path)
    line = _one_error_line(code, err, 4)
    assert f"{missing}: no such database" in line and "advisor ingest" in line
    assert out == "" and not missing.exists()


def test_gpu_busy_moves_the_mp_engine_cores_demand_and_a_bad_share_is_refused(tmp_path):
    """The mp engine core follows its GPU's busy share (docs/model.md): sized for a busy GPU by
    default, fewer cores where the admin says the GPUs idle; both paths of the console script."""
    import json
    import subprocess

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["advisor", "recommend", "--gpu-type", "H100", "--gpus", "1", "--executor", "mp",
             "--rps", "12", "--prompt-tokens", "3050", "--workload", "tokenize-heavy", *extra],
            capture_output=True, text=True, cwd=tmp_path,
        )  # fmt: skip

    busy, idle = (json.loads(run("--gpu-busy", v, "--format", "json").stdout) for v in ("1", "0.4"))
    default = json.loads(run("--format", "json").stdout)
    assert default["cores_total"] == busy["cores_total"] == 4  # measured knee 4 (highrate-short)
    assert default["assumptions"]["workload"]["gpu_busy"] == 1.0
    assert idle["cores_total"] == 3
    assert idle["demand_parts"]["engine_core"] < busy["demand_parts"]["engine_core"]
    for fmt in ("json", "table"):
        bad = run("--gpu-busy", "1.5", "--format", fmt)
        assert bad.returncode == 2 and "Traceback" not in bad.stderr
        assert "--gpu-busy must be between 0 and 1, got 1.5" in bad.stderr


def test_the_packages_names_are_its_functions_whatever_was_imported_first(tmp_path: Path):
    """advisor.recommend loads its partition half on first use; a submodule imported before a
    name is read must not stand where that name's function is (the Trends page met
    ``starvation``, the module, where it called the function)."""
    import subprocess
    import sys

    code = (
        "import advisor.recommend.starvation, advisor.recommend.partitions; "
        "from advisor.recommend import starvation, recommend_partitions, PartitionQuery; "
        "print(callable(starvation), callable(recommend_partitions), isinstance(PartitionQuery, type))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True"]
