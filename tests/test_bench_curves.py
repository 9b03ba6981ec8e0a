"""The repeatable-curve protocol of ``bench run`` (issue 28): common random numbers, the
series identity (TP, executor, renderer workers, engine arguments), loads chosen by measured
CPU demand, repeats under a time budget, curves with paired-bootstrap intervals and the
replication check (``bench curve``, ``bench replicate``).

Engines are the stub server (a real process); no GPU on this machine, and nothing here
pretends to be one: the measured H200 curves are read from the committed raw runs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from advisor.errors import UsageError
from advisor.harness.config import BenchConfig
from advisor.harness.levels import choose_levels
from advisor.harness.load.loadgen import Target, plan_phase
from advisor.harness.load.prompts import PromptFactory
from advisor.harness.metrics import run_flags
from advisor.harness.results.collect import calibration_points, series_key
from advisor.harness.results.curves import compare, curves, read_runs
from advisor.harness.results.series import identity_of_run, series_identity
from advisor.harness.runner import run_bench
from advisor.model.calibration.series import identity_of_notes
from tests.bench_fixtures import ROOT, TOKENIZE_LOAD, stub_config, tiny_model_dir, unpack

H200_RUNS = ROOT / "data" / "bench" / "h200-2026-12-01"
RERUN_TGZ = ROOT / "data" / "bench" / "h200-2026-12-02" / "tp1-mp-and-uni-3.4rps.tgz"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model_dir(tmp_path_factory, weights=False)


def test_phases_of_one_repeat_carry_the_same_traffic_at_every_core_count(tiny_model: Path):
    factory = PromptFactory(tiny_model, corpus_tokens=20_000)
    target = Target("127.0.0.1", 1, "m")
    spec = replace(
        TOKENIZE_LOAD, workload="unique", attacker_tokens_min=200, attacker_tokens_max=400
    )
    # two core counts of one repeat: the runner gives them one seed and different salts
    a = plan_phase(replace(spec, seed=1000, salt="0000aaaa"), target, factory)
    factory.text(500)  # the factory's own generator moving on must not change the traffic
    b = plan_phase(replace(spec, seed=1000, salt="0000bbbb"), target, factory)
    assert [(p.kind, p.at_s, p.prompt_tokens) for p in a] == [
        (p.kind, p.at_s, p.prompt_tokens) for p in b
    ]
    # the same text, only the leading marker differs (the prefix cache cannot serve b from a)
    for pa, pb in zip(a, b, strict=True):
        assert pa.request != pb.request
        assert pa.request.replace(b"0000aaaa", b"0000bbbb") == pb.request
    other = plan_phase(replace(spec, seed=2000, salt="0000aaaa"), target, factory)
    assert [p.at_s for p in other] != [p.at_s for p in a]


def test_the_executor_and_renderer_workers_are_part_of_a_series_identity():
    base = ["--load-format", "dummy", "--max-model-len", "32768"]
    default = series_identity("vllm", 1, base, {})
    uni = series_identity("vllm", 1, [*base, "--distributed-executor-backend", "uni"], {})
    mp = series_identity("vllm", 1, [*base, "--distributed-executor-backend=mp"], {})
    rw4 = series_identity("vllm", 1, [*base, "--renderer-num-workers", "4"], {})
    tp2 = series_identity("vllm", 2, base, {})
    eager = series_identity("vllm", 1, [*base, "--enforce-eager"], {"OMP_NUM_THREADS": "1"})
    assert default["executor"] == uni["executor"] == "uni" and default["id"] == uni["id"]
    assert mp["executor"] == "mp" and mp["id"] != uni["id"]
    assert rw4["renderer_workers"] == 4 and rw4["id"] != uni["id"]
    assert tp2["executor"] == "mp" and tp2["id"] != uni["id"]
    assert eager["engine_args"] == ["--enforce-eager"] and eager["env"] == {"OMP_NUM_THREADS": "1"}
    assert len({default["id"], mp["id"], rw4["id"], tp2["id"], eager["id"]}) == 5
    # a run recorded before identities existed gets the same one from its command line
    old_run = {"engine": "vllm", "tp": 1, "extra": {"engine_argv": ["vllm", "serve", *base]}}
    assert identity_of_run(old_run)["id"] == uni["id"]


def _run(executor: str | None, cores: int = 2, workload: str = "tokenize-heavy") -> dict:
    argv = ["serve", "/m"] + (["--distributed-executor-backend", executor] if executor else [])
    return {
        "run_id": f"r-{executor}-{cores}",
        "status": "ok",
        "platform": "H200",
        "engine": "vllm",
        "engine_version": "0.26.0",
        "model": "Llama-3.1-8B",
        "tp": 1,
        "gpus": 1,
        "cores": cores,
        "workload": workload,
        "attacker_rps": 3.4,
        "attacker_tokens_min": 30000,
        "attacker_tokens_max": 30100,
        "victim_rps": 4,
        "victim_ttft_p50_ms": 30.0,
        "extra": {"engine_argv": argv, "flags": []},
    }


def test_mp_and_default_runs_are_separate_series_and_their_points_say_which():
    assert series_key(_run("mp")) != series_key(_run(None))
    assert series_key(_run("uni")) == series_key(_run(None))
    point = next(p for p in calibration_points(_run("mp")) if p["metric"] == "ttft_p50_ms")
    ident = identity_of_notes(point["notes"])
    assert ident["executor"] == "mp" and ident["tp"] == "1" and ident["renderer_workers"] == "1"
    assert ident["series"] == identity_of_run(_run("mp"))["id"]
    assert point["workload"] == "tokenize-heavy"


def test_the_api_servers_limit_is_its_own_flag():
    common = dict(
        sent=100,
        failed=0,
        timed_out=0,
        workload="unique",
        prefix_hit_rate=None,
        victim_p50_ms=30.0,
        noload_p50_ms=20.0,
        at_most_cores=True,
    )
    flags = run_flags(**common, api_server_cores=0.95)
    assert [f["flag"] for f in flags] == ["tokenizer-saturated"]
    assert "0.95 cores" in flags[0]["reason"]
    assert run_flags(**common, api_server_cores=0.95, renderer_workers=4) == []
    assert run_flags(**common, api_server_cores=0.5) == []


def _step(rps: float, cores: float, saturated: list[str] | None = None) -> dict:
    return {"attacker_rps": rps, "cores_total": cores, "saturated_by": saturated or []}


def test_demand_levels_come_from_the_ladders_measured_cpu():
    steps = [
        _step(1, 0.6),
        _step(2, 0.9),
        _step(3, 1.3),
        _step(4, 1.7),
        _step(5, 2.2, ["tokenizer-saturated"]),
    ]
    levels = choose_levels(steps, fewest_cores=2)
    assert levels["light"]["attacker_rps"] == 2  # the highest rate needing <= 1 core
    assert levels["heavy"]["attacker_rps"] == 4  # the highest rate below saturation
    assert levels["medium"]["demand_cores"] == pytest.approx((0.9 + 1.7) / 2)
    assert levels["medium"]["attacker_rps"] == 3.0  # 1.3 cores at 3/s: halfway, interpolated
    # an engine that always needs more than the fewest cores minus one: light is the lowest rate
    spin = choose_levels([_step(1, 1.4), _step(2, 1.7), _step(3, 2.0)], fewest_cores=2)
    assert spin["light"]["attacker_rps"] == 1 and "lowest" in spin["light"]["why"]
    assert spin["medium"]["attacker_rps"] == 2.0


def _repinned_config(tmp_path: Path, model: Path, **kw) -> BenchConfig:
    """A re-pinned run of the tokenize-heavy load: two starts, two repeats, 1 and 2 cores, half
    a second of no-load, a stub whose first token takes 5 ms; ``kw`` override any field."""
    base = dict(repin=True, starts=2, repeats=2, cores=(1, 2), noload_s=0.5)
    return stub_config(tmp_path, model, TOKENIZE_LOAD, "--first-token-ms", "5", **{**base, **kw})


def test_repeats_follow_the_budget_and_the_run_says_what_it_resolved(
    tmp_path: Path, tiny_model: Path
):
    cfg = _repinned_config(
        tmp_path,
        tiny_model,
        level_workloads=("tokenize-heavy",),
        levels=("light", "heavy"),
        rate_ladder=(2.0, 4.0),
        ladder_step_s=1.0,
        saturation_factor=1000.0,
        budget_minutes=0.5,
    )
    rows = run_bench(cfg)
    out = tmp_path / "out"
    levels = json.loads((out / "levels-tokenize-heavy.json").read_text())
    assert [s["attacker_rps"] for s in levels["steps"]] == [2.0, 4.0]
    assert all(s["cores_by_role"]["api_server"] is not None for s in levels["steps"])
    repeats = {r.repeat for r in rows}
    assert {1, 2} <= repeats  # the minimum always runs
    assert {r.attacker_rps for r in rows} == {2.0, 4.0}
    runs = [json.loads(Path(r.path).read_text())["run"] for r in rows]
    assert {r["extra"]["level"] for r in runs} == {"light", "heavy"}
    # common random numbers: one seed per repeat at every core count, one salt per phase
    for rep in repeats:
        same = [r["extra"]["crn"] for r in runs if r["repeat"] == rep]
        assert len({c["seed"] for c in same}) == 1 and len({c["salt"] for c in same}) == len(same)
    summary = json.loads((out / "curves-default-tokenize-heavy.json").read_text())
    assert summary["stopped"] in ("resolved", "budget spent")
    assert summary["wall_s"] <= 0.5 * 60 + 30  # one round (~10 s) of slack past the budget
    assert len(summary["curves"]) == 2
    for c in summary["curves"]:
        assert c["status"] in ("resolved", "no effect", "not resolved")
        assert [p["cores"] for p in c["points"]] == [1, 2]
        assert c["points"][-1]["slowdown"] == 1.0
        assert c["blocks"] == len(repeats)


def test_budget_minutes_needs_repin(tmp_path: Path, tiny_model: Path):
    with pytest.raises(UsageError, match="--budget-minutes needs --repin"):
        run_bench(stub_config(tmp_path, tiny_model, TOKENIZE_LOAD, budget_minutes=1.0))
    with pytest.raises(UsageError, match="--executor 'x'"):
        run_bench(stub_config(tmp_path, tiny_model, TOKENIZE_LOAD, executor="x"))


def _h200_runs(tmp_path: Path) -> tuple[Path, Path]:
    """The 2026-12-01 protocol runs and the 2026-12-02 rerun of its 3.4/s load (mp and uni)."""
    rerun = tmp_path / "rerun"
    unpack(RERUN_TGZ, rerun)
    return H200_RUNS / "tp1-protocol", rerun


def test_the_measured_h200_curves_resolve_only_where_the_spinning_worker_starves(
    tmp_path: Path,
):
    _, rerun = _h200_runs(tmp_path)
    found = {(c.series["executor"], c.load["attacker_rps"]): c for c in curves(read_runs([rerun]))}
    mp, uni = found[("mp", 3.4)].knee, found[("uni", 3.4)].knee
    two = mp.point(2)
    # 2 cores are slower beyond doubt, but 3-6 straddle the tolerance: the knee is not located
    assert mp.status == "not resolved" and mp.knee_cores is None and mp.slower_cores == (2,)
    assert two is not None and two.slowdown_low > 1.1
    assert uni.status == "not resolved" and uni.knee_cores is None and uni.slower_cores == ()


def test_bench_replicate_says_the_rerun_agrees_only_within_wide_intervals(tmp_path: Path):
    old, rerun = _h200_runs(tmp_path)
    rows = compare(curves(read_runs([old])), curves(read_runs([rerun / "uni"])))
    assert len(rows) == 1  # only the 3.4/s default-executor series is in both
    row = rows[0]
    # the published "knee at 4" is not resolved by its own three repeats
    assert row["old_status"] == "not resolved" and row["old_knee_cores"] is None
    assert row["agree"] is True and row["common_cores"] == [2, 3, 4, 5, 6, 14]
    cmd = [sys.executable, "-m", "advisor", "bench", "replicate", str(old), str(rerun / "uni")]
    done = subprocess.run([*cmd, "--format", "json"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)[0]["agree"] is True
    none = subprocess.run([*cmd[:-1], str(rerun / "mp")], capture_output=True, text=True)
    assert none.returncode == 4 and "no series and load is in both" in none.stderr
    curve = subprocess.run(
        [sys.executable, "-m", "advisor", "bench", "curve", str(rerun), "--format", "json"],
        capture_output=True,
        text=True,
    )
    assert curve.returncode == 0, curve.stderr
    slower = {c["series"]["executor"]: c["slower_cores"] for c in json.loads(curve.stdout)}
    assert slower == {"mp": [2], "uni": []}


def test_the_committed_crn_points_match_the_committed_raw_runs(tmp_path: Path, db_path: Path):
    from advisor.harness.results.collect import collect
    from advisor.model.calibration import read_csv

    folder = ROOT / "data" / "bench" / "h200-2026-12-02-crn"
    for name in ("sweep.tgz", "rerun.tgz"):
        unpack(folder / name, tmp_path)
    out = tmp_path / "points.csv"
    result = collect([tmp_path / "sweep", tmp_path / "rerun"], db_path, calibration_csv=out)
    assert result.problems == () and result.runs_loaded == 180
    # the rerun reused the sweep's run ids: its points are kept apart (suffix, its own start)
    committed = ROOT / "data" / "calibration" / "h200-vllm-0.26.0-2026-12-02-crn.csv"
    assert out.read_text() == committed.read_text()
    ids = [line.split(",", 1)[0] for line in out.read_text().splitlines()[1:]]
    assert (
        len(ids) == len(set(ids))
        and sum(i.endswith(f"-rerun:{i.rsplit(':', 1)[1]}") for i in ids) == 208  # 24 runs
    )
    points, problems = read_csv(committed)
    assert problems == [] and len(points) == result.calibration_points
    # every phase's CPU split is there, and the mp worker's spin is one core at every count
    worker = [p for p in points if p.metric == "cpu_worker_cores"]
    assert worker and all(0.9 <= p.value <= 1.1 for p in worker)


def test_runs_by_point_keep_the_mp_and_default_executors_apart(tmp_path: Path, db_path: Path):
    from advisor.harness.results.collect import collect, summarise_points

    _, rerun = _h200_runs(tmp_path)
    assert collect([rerun], db_path).problems == ()
    points = summarise_points(db_path)
    at_two = {p["executor"]: p for p in points if p["cores"] == 2}
    assert set(at_two) == {"mp", "uni"}  # one load, two engines: two points, not one
    assert at_two["mp"]["series_id"] != at_two["uni"]["series_id"]
    assert all(p["renderer_workers"] == 1 and p["workload"] == "tokenize-heavy" for p in points)
    assert at_two["mp"]["runs"] == 2 and at_two["uni"]["runs"] == 2
    # each executor's speedup is against its own fewest cores
    assert at_two["mp"]["speedup_vs_fewest_cores"] == pytest.approx(1.0)


def test_a_stored_series_is_rerun_with_its_own_settings_and_compared(
    tmp_path: Path, tiny_model: Path
):
    from advisor.harness.rerun import rerun_series, stored_config

    old = tmp_path / "old"
    cfg = _repinned_config(old, tiny_model)
    run_bench(cfg)
    again, ident = stored_config(read_runs([old / "out"]), model=str(tiny_model), out_dir=tmp_path)
    assert (again.cores, again.repeats, again.starts, again.repin) == ((1, 2), 2, 2, True)
    assert again.loads == cfg.loads and again.engine == "stub" and again.tp == 1
    assert ident["id"] == cfg.identity({})["id"]
    common = dict(
        model=str(tiny_model),
        engine_cmd=cfg.engine_cmd,
        engine_env=cfg.engine_env,
        client_cores=1,
        start_timeout_s=20,
        warmup_requests=1,
        noload_s=0.5,
    )
    # an engine that would be another series is refused before anything starts
    with pytest.raises(UsageError, match="give the same --engine-arg"):
        rerun_series(
            old / "out",
            out_dir=tmp_path / "wrong",
            engine_args=("--renderer-num-workers", "4"),
            **common,
        )
    assert not (tmp_path / "wrong").exists()
    rows = rerun_series(old / "out", out_dir=tmp_path / "new", **common)
    assert len(rows) == 1 and rows[0]["common_cores"] == [1, 2]
    assert rows[0]["agree"] == (rows[0]["disagreeing_cores"] == [])
    new_runs = read_runs([tmp_path / "new"])
    assert len(new_runs) == 4  # 2 core counts x 2 repeats, over 2 starts, as stored
    assert {d["run"]["extra"]["engine_start"] for d in new_runs} == {1, 2}
