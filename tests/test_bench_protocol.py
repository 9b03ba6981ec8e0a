"""The measured-advice protocol of ``bench run``: the tokenize-heavy workload, the run flags
that keep a run out of the fit, bootstrap intervals, vLLM's counters, the context check,
re-pinning a live engine, the rate ladder, and what ``bench collect`` makes of the flags.

Engines here are the stub server (a real process; no GPU on this machine)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.errors import UsageError
from advisor.harness.config import BenchConfig, check_context, max_model_len
from advisor.harness.load.loadgen import Target, plan_phase
from advisor.harness.load.prompts import PromptFactory, SharedDocument
from advisor.harness.metrics import RunChecks, bootstrap_ci, run_flags, vllm_deltas
from advisor.harness.records import LoadSpec
from advisor.harness.results.collect import (
    calibration_points,
    collect,
    list_runs,
    propagate_series_flags,
)
from advisor.harness.runner import run_bench
from advisor.harness.serve.pinning import check_pinning, repin
from tests.bench_fixtures import CPUS, ROOT, TOKENIZE_LOAD, stub_config, tiny_model_dir


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory, weights=False)


def _flags(**kw) -> list[str]:
    base = dict(
        sent=200,
        failed=0,
        timed_out=0,
        workload="tokenize-heavy",
        prefix_hit_rate=0.99,
        victim_p50_ms=30.0,
        noload_p50_ms=20.0,
        at_most_cores=True,
    )
    base.update(kw)
    return [f["flag"] for f in run_flags(**base)]  # type: ignore[arg-type]


def test_a_clean_run_has_no_flags():
    assert _flags() == []


def test_more_than_one_percent_failed_requests_flags_the_run_and_one_percent_does_not():
    assert _flags(failed=2) == []
    assert _flags(failed=3) == ["failed-requests"]
    assert _flags(timed_out=3) == ["timeouts"]


def test_a_prefix_hit_rate_off_the_workloads_target_flags_the_run():
    assert _flags(prefix_hit_rate=0.42) == ["prefix-hit"]
    assert _flags(workload="unique", prefix_hit_rate=0.42) == ["prefix-hit"]
    assert _flags(workload="unique", prefix_hit_rate=0.0) == []
    assert _flags(workload="shared-prefix", prefix_hit_rate=0.42) == []  # no target
    assert _flags(prefix_hit_rate=None) == []  # an engine without the counters


def test_gpu_bound_is_judged_at_the_most_cores_against_the_no_load_ttft():
    assert _flags(victim_p50_ms=90.0) == ["gpu-bound"]  # 4.5x no-load
    assert _flags(victim_p50_ms=90.0, at_most_cores=False) == []
    assert _flags(victim_p50_ms=90.0, checks=RunChecks(gpu_bound_factor=5.0)) == []
    [flag] = run_flags(
        sent=10,
        failed=0,
        timed_out=0,
        workload="unique",
        prefix_hit_rate=0.0,
        victim_p50_ms=100.0,
        noload_p50_ms=20.0,
        at_most_cores=True,
    )
    assert "5.0x its no-load 20 ms" in flag["reason"]


def test_vllm_deltas_sum_label_sets_and_give_the_hit_rate_and_queue_time():
    before = {
        'vllm:prefix_cache_queries_total{engine="0"}': 1000.0,
        'vllm:prefix_cache_hits_total{engine="0"}': 500.0,
        'vllm:request_queue_time_seconds_sum{engine="0"}': 1.0,
        'vllm:request_queue_time_seconds_count{engine="0"}': 10.0,
    }
    after = {
        'vllm:prefix_cache_queries_total{engine="0"}': 11000.0,
        'vllm:prefix_cache_hits_total{engine="0"}': 9500.0,
        'vllm:request_queue_time_seconds_sum{engine="0"}': 3.0,
        'vllm:request_queue_time_seconds_count{engine="0"}': 30.0,
    }
    d = vllm_deltas(before, after)
    assert d["prefix_cache_queries"] == 10000.0 and d["prefix_cache_hits"] == 9000.0
    assert d["prefix_hit_rate"] == pytest.approx(0.9)
    assert d["queue_time_mean_ms"] == pytest.approx(100.0)
    assert vllm_deltas({}, {})["prefix_hit_rate"] is None


def test_bootstrap_interval_holds_the_median_and_narrows_with_more_requests():
    import random

    rng = random.Random(1)
    few = [rng.gauss(100, 20) for _ in range(20)]
    many = [rng.gauss(100, 20) for _ in range(2000)]
    lo_f, hi_f = bootstrap_ci(few, 50)  # type: ignore[misc]
    lo_m, hi_m = bootstrap_ci(many, 50, n_boot=300)  # type: ignore[misc]
    assert lo_f < 100 < hi_f and lo_m < 100 < hi_m
    assert hi_m - lo_m < (hi_f - lo_f) / 3
    assert bootstrap_ci([1.0, 2.0], 50) is None


def test_tokenize_heavy_prompts_share_one_document_and_differ_in_their_tails(tiny_model: Path):
    factory = PromptFactory(tiny_model, corpus_tokens=20_000)
    doc = SharedDocument(factory, 2000, 2100, tail_tokens=32)
    a, b = doc.prompt("a"), doc.prompt("b")
    assert a.text.startswith(doc.document) and b.text.startswith(doc.document)
    assert a.text != b.text
    assert 2000 <= a.tokens <= 2101 and 2000 <= b.tokens <= 2101
    assert 0.95 < doc.expected_prefix_share < 1.0
    # a second series of the same shape (a later phase or start) reuses the same document
    again = SharedDocument(PromptFactory(tiny_model, corpus_tokens=20_000, seed=9), 2000, 2100, 32)
    assert again.document == doc.document


def test_plan_phase_builds_tokenize_heavy_attackers_on_the_shared_document(tiny_model: Path):
    factory = PromptFactory(tiny_model, corpus_tokens=20_000)
    spec = LoadSpec(
        workload="tokenize-heavy",
        attacker_rps=20,
        attacker_tokens_min=1000,
        attacker_tokens_max=1000,
        victim_rps=2,
        victim_tokens=16,
        duration_s=1.0,
    )
    planned = plan_phase(spec, Target("127.0.0.1", 1, "m"), factory)
    attackers = [p for p in planned if p.kind == "attacker"]
    assert len(attackers) >= 5
    doc = SharedDocument(factory, 1000, 1000).document
    assert all(json.dumps(doc)[1:-1].encode() in p.request for p in attackers)
    victims = [p for p in planned if p.kind == "victim"]
    assert victims and not any(json.dumps(doc)[1:-1].encode() in p.request for p in victims)


def _cfg(tmp_path: Path, model: Path, **kw) -> BenchConfig:
    return stub_config(tmp_path, model, TOKENIZE_LOAD, **kw)


def test_a_prompt_longer_than_the_context_is_refused_before_any_engine_starts(
    tmp_path: Path, tiny_model: Path
):
    cfg = _cfg(tmp_path, tiny_model)
    assert max_model_len(cfg) == 8192  # the tiny model's config.json
    assert max_model_len(replace(cfg, engine_args=("--max-model-len", "4096"))) == 4096
    too_long = replace(
        cfg.loads[0], attacker_tokens_min=8000, attacker_tokens_max=8190, attacker_output_tokens=16
    )
    with pytest.raises(UsageError, match="needs up to 8222 tokens of context, but the engine's"):
        run_bench(replace(cfg, loads=(too_long,)))
    assert not (tmp_path / "out").exists()  # nothing started, nothing written
    check_context(cfg)  # the ordinary load fits


def test_repin_moves_every_thread_of_a_live_process(tmp_path: Path):
    script = (
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
        "print('ready', flush=True); time.sleep(30)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == b"ready"
        assert repin([proc.pid], {CPUS[0]}) == 2
        report = check_pinning([proc.pid], {CPUS[0]})
        assert report.ok and report.threads == 2
    finally:
        proc.kill()
        proc.wait()


def test_repinned_runs_spread_repeats_over_starts_and_record_the_no_load_ttft(
    tmp_path: Path, tiny_model: Path
):
    cfg = _cfg(tmp_path, tiny_model, repin=True, starts=2, repeats=2)
    rows = run_bench(cfg)
    assert sorted(r.status for r in rows) == ["ok", "ok"]
    runs = [json.loads(Path(r.path).read_text())["run"] for r in rows]
    assert sorted(r["extra"]["engine_start"] for r in runs) == [1, 2]
    for run in runs:
        assert run["extra"]["pinning_mode"] == "repin"
        assert run["extra"]["noload"]["victims"] >= 2
        assert run["extra"]["noload"]["victim_ttft_p50_ms"] > 0
        # gpu-bound compares TTFT under load with its no-load value (2 ms on the stub): the
        # tests beside this one on a 2-core machine can raise that ratio past 4x on their own,
        # so it says nothing about the protocol here (the rule has its own test below)
        assert [f for f in run["extra"]["flags"] if f["flag"] != "gpu-bound"] == []
        assert run["extra"]["threads_repinned"] >= 1
    logs = sorted(p.name for p in (tmp_path / "out").glob("engine-start*.log"))
    assert logs == ["engine-start1.log", "engine-start2.log"]


def test_the_rate_ladder_runs_at_the_most_cores_and_sets_the_phases_rates(
    tmp_path: Path, tiny_model: Path
):
    cfg = _cfg(
        tmp_path,
        tiny_model,
        repin=True,
        rate_workloads=("tokenize-heavy",),
        rate_fractions=(0.5, 1.0),
        rate_ladder=(2.0, 4.0),
        ladder_step_s=1.0,
        saturation_factor=1000.0,  # the stub never saturates: the ladder's top is the rate
    )
    rows = run_bench(cfg)
    ladder = json.loads((tmp_path / "out" / "rate-tokenize-heavy.json").read_text())
    assert [s["attacker_rps"] for s in ladder["steps"]] == [2.0, 4.0]
    assert ladder["saturation_rps"] == 4.0 and ladder["ladder_top_unsaturated"] is True
    assert sorted(r.attacker_rps for r in rows) == [2.0, 4.0]
    # a rerun reuses the ladder's rates and skips the finished points
    again = run_bench(cfg)
    assert sorted(r.status for r in again) == ["skipped", "skipped"]


def _run(cores: int, flags: list[dict] | None = None, **kw) -> dict:
    base = {
        "run_id": f"r-c{cores}-{kw.get('repeat', 1)}",
        "status": "ok",
        "engine": "vllm",
        "platform": "H200",
        "model": "m",
        "tp": 1,
        "gpus": 1,
        "cores": cores,
        "workload": "unique",
        "attacker_rps": 1.0,
        "attacker_tokens_min": 100,
        "attacker_tokens_max": 100,
        "victim_rps": 4.0,
        "timeout_s": 30.0,
        "victim_ttft_p50_ms": 50.0,
        "started_at": "2026-12-01T22:00:00",
        "extra": {"flags": flags or []},
    }
    base.update(kw)
    return base


GPU_BOUND = [{"flag": "gpu-bound", "reason": "x"}]


def test_a_series_gpu_bound_at_its_most_cores_is_flagged_at_every_core_count():
    runs = [_run(2), _run(14, GPU_BOUND, repeat=1), _run(14, GPU_BOUND, repeat=2), _run(14)]
    propagate_series_flags(runs)
    assert all(any(f["flag"] == "gpu-bound" for f in r["extra"]["flags"]) for r in runs)
    assert all(calibration_points(r) == [] for r in runs)
    # one of three at the most cores is not enough
    runs = [_run(2), _run(14, GPU_BOUND), _run(14, repeat=2), _run(14, repeat=3)]
    propagate_series_flags(runs)
    assert runs[0]["extra"]["flags"] == []


def test_a_run_with_timeouts_becomes_a_censored_point_and_a_clean_run_gives_its_parts():
    timed = _run(2, [{"flag": "timeouts", "reason": "y"}])
    assert [(p["metric"], p["value"]) for p in calibration_points(timed)] == [("timeout", 30.0)]
    clean = _run(
        4,
        extra={
            "flags": [],
            "noload": {"victim_ttft_p50_ms": 20.0},
            "vllm_deltas": {"prefix_hit_rate": 0.99},
            "engine_cpu_by_process": [
                {"role": "api_server", "cpu_percent": 60.0},
                {"role": "engine_core", "cpu_percent": 40.0},
                {"role": "gpu_worker", "cpu_percent": 100.0},
                {"role": "gpu_worker", "cpu_percent": 80.0},
            ],
        },
    )
    got = {p["metric"]: p["value"] for p in calibration_points(clean)}
    assert got["ttft_p50_ms"] == 50.0 and got["noload_ttft_ms"] == 20.0
    assert got["prefix_hit_rate"] == 0.99
    assert got["cpu_api_server_cores"] == pytest.approx(0.6)
    assert got["cpu_engine_core_cores"] == pytest.approx(0.4)
    assert got["cpu_worker_cores"] == pytest.approx(0.9)  # mean per worker


def test_bench_runs_lists_each_runs_flags_with_their_reasons(tmp_path: Path, db_path: Path):
    out = tmp_path / "runs"
    out.mkdir()
    for run in (_run(2), _run(14, [{"flag": "failed-requests", "reason": "3 of 200 failed"}])):
        doc = {"schema": "advisor.bench.run/1", "run": run, "requests": []}
        (out / f"{run['run_id']}.json").write_text(json.dumps(doc))
    (out / "rate-unique.json").write_text(json.dumps({"schema": "advisor.bench.rate/1"}))
    result = collect([out], db_path)
    assert result.problems == () and result.runs_loaded == 2  # the ladder file is not a run
    by_id = {r["run_id"]: r for r in list_runs(db_path)}
    assert by_id["r-c14-1"]["flags"] == "failed-requests"
    assert by_id["r-c14-1"]["flag_reasons"] == "3 of 200 failed"
    assert by_id["r-c2-1"]["flags"] == ""


def test_runs_with_more_tokenizer_workers_form_their_own_series():
    from advisor.harness.results.collect import workload_label

    argv = ["python", "-m", "vllm", "serve", "--renderer-num-workers", "4"]
    assert workload_label(_run(2, extra={"engine_argv": argv})) == "unique/rw4"
    assert workload_label(_run(2, extra={"engine_argv": ["--renderer-num-workers=1"]})) == "unique"
    assert workload_label(_run(2)) == "unique"
    [point] = [
        p
        for p in calibration_points(_run(2, extra={"engine_argv": argv}))
        if p["metric"] == "ttft_p50_ms"
    ]
    assert point["workload"] == "unique/rw4"


def test_the_dashboard_reads_the_flags_of_the_committed_h200_runs(db_path: Path):
    from advisor import datainfo
    from advisor.store import connect

    collect([ROOT / "data" / "bench" / "h200-2026-12-01"], db_path)
    con = connect(db_path, read_only=True)
    try:
        runs = datainfo.bench_runs(con, platforms=["H200"])
    finally:
        con.close()
    unique = [r for r in runs if r.workload == "unique"]
    assert len(unique) == 9 and all(r.flags == "gpu-bound" for r in unique)
    reasons = [r.flag_reasons or "" for r in unique]
    assert all("its no-load" in x or x.startswith("series GPU-bound") for x in reasons)
    assert sum("its no-load" in x for x in reasons) == 2  # 2 of 3 runs at 14 cores
    heavy = [r for r in runs if r.workload == "tokenize-heavy"]
    assert len(heavy) == 50 and all(r.flags == "" for r in heavy)
