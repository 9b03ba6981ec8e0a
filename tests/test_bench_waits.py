"""CPU wait of real processes: the sampler reads each thread's run-queue wait from
``/proc/<pid>/task/<tid>/schedstat`` of real processes pinned with ``taskset``, and a bench
phase against the stub server (a real process) records it per process and role. The wait knee
is tested on constructed per-block wait shares. No GPU is needed or mocked here.
"""

from __future__ import annotations

import functools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from advisor.harness.results.curves import curves, summary_rows
from advisor.harness.serve import engine as eng
from advisor.harness.serve.waits import WaitSampler, process_threads, psi_delta, wait_of_run
from advisor.model.knee import NO_EFFECT, NOT_RESOLVED, RESOLVED
from advisor.model.waitknee import measure_wait_knee
from advisor.pressure.collector import parse_pressure
from tests.bench_fixtures import CPUS, ROOT, STUB, unpack

BURN = "import time\nend = time.monotonic() + {s}\nwhile time.monotonic() < end: pass\n"


def _burner(cpu: int, seconds: float) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["taskset", "-c", str(cpu), sys.executable, "-c", BURN.format(s=seconds)]
    )


def test_two_busy_loops_on_one_core_each_wait_about_half_the_time():
    a, b = _burner(CPUS[0], 4.0), _burner(CPUS[0], 4.0)
    try:
        time.sleep(0.3)
        with WaitSampler(lambda: [a.pid], root_pid=a.pid, period_s=0.1) as s:
            time.sleep(1.5)
    finally:
        a.kill(), b.kill(), a.wait(), b.wait()
    res = s.result
    assert res["status"] == "ok"
    (row,) = res["by_process"]
    assert row["pid"] == a.pid and row["threads"] == 1
    # one core shared by two runnable loops: each runs about half the time and waits the rest
    assert row["wait_share"] > 0.25
    assert row["cpu_share"] < 0.8
    assert res["by_role"]["api_server"]["wait_share"] == pytest.approx(row["wait_share"])


def test_a_sleeping_process_waits_for_nothing():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3)"])
    try:
        time.sleep(0.3)
        with WaitSampler(lambda: [p.pid], root_pid=p.pid, period_s=0.1) as s:
            time.sleep(0.8)
    finally:
        p.kill(), p.wait()
    (row,) = s.result["by_process"]
    assert row["wait_s"] < 0.01 and row["cpu_s"] < 0.05


def test_threads_born_and_gone_during_the_sample_are_counted(tmp_path: Path):
    # The thread burns 0.4 s of its own CPU time (not of wall time), and starts only once the
    # sampler runs: on a machine busy with other tests it takes longer, never less CPU.
    go, done = tmp_path / "go", tmp_path / "done"
    code = (
        "import pathlib, threading, time\n"
        "def burn():\n"
        "    end = time.thread_time() + 0.4\n"
        "    while time.thread_time() < end: pass\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.01)\n"
        "t = threading.Thread(target=burn); t.start(); t.join()\n"
        f"pathlib.Path({str(done)!r}).touch()\n"
        "time.sleep(60)\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code])
    try:
        with WaitSampler(lambda: [p.pid], root_pid=p.pid, period_s=0.05) as s:
            time.sleep(0.2)
            go.touch()
            deadline = time.monotonic() + 60
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            time.sleep(0.2)
    finally:
        p.kill(), p.wait()
    assert done.exists()
    (row,) = s.result["by_process"]
    assert row["threads_born"] == 1 and row["threads_gone"] == 1
    # the thread's 0.4 s of burning is counted though it had exited before the end
    assert row["cpu_s"] > 0.3


def test_a_process_whose_schedstat_cannot_be_read_gives_no_number(tmp_path: Path):
    with WaitSampler(lambda: [999999999], proc=tmp_path, machine_psi=tmp_path / "none") as s:
        pass
    assert s.result["status"] == "unavailable"
    assert s.result["by_process"] == [] and s.result["psi"]["machine"] is None
    assert wait_of_run({"extra": {"wait": s.result}}, "engine_core") is None


def test_psi_totals_are_read_in_seconds_and_differenced_into_shares():
    before = parse_pressure(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=1000000\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    after = parse_pressure(
        "some avg10=1.00 avg60=0.00 avg300=0.00 total=1500000\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=250000\n"
    )
    d = psi_delta(before, after, 2.0)
    assert d == {"some_s": 0.5, "some_share": 0.25, "full_s": 0.25, "full_share": 0.125}
    assert process_threads(999999999) == {}


def _stub(tmp_path: Path, cpu: int, busy_ms: float) -> eng.EngineProcess:
    spec = eng.spec_from(
        STUB + f" --busy-ms {busy_ms}",
        model="m",
        tp=1,
        cores=(cpu,),
        host="127.0.0.1",
        port=eng.free_port(),
        log_path=tmp_path / "stub.log",
        env={"PYTHONPATH": str(ROOT)},
    )
    return eng.EngineProcess(spec)


def _load_wait(tmp_path: Path, cpu: int, *, busy_loops: int) -> tuple[float, float]:
    """The stub server's (wait share, CPU share) of wall time while it answers 40 requests,
    each burning 40 ms of CPU, with ``busy_loops`` loops pinned to its core."""
    import httpx

    engine = _stub(tmp_path, cpu, 40.0)
    engine.start()
    burners = [_burner(cpu, 60.0) for _ in range(busy_loops)]
    try:
        assert engine.wait_ready(20).status == "ok"
        url = f"http://127.0.0.1:{engine.spec.port}/v1/completions"
        with WaitSampler(engine.pids, root_pid=engine.pid, period_s=0.1) as s, httpx.Client() as c:
            for _ in range(40):
                c.post(url, json={"model": "m", "prompt": "x", "max_tokens": 1, "stream": True})
    finally:
        for b in burners:
            b.kill(), b.wait()
        engine.stop()
    assert s.result["status"] == "ok"
    role = s.result["by_role"]["api_server"]
    return float(role["wait_share"]), float(role["cpu_share"])


def test_a_real_server_answering_requests_has_its_wait_and_cpu_recorded_per_role(
    tmp_path: Path,
):
    # The sampler on a real server process: its API server role is found and its CPU counted
    # (40 requests of 40 ms of CPU each). How much more it waits beside busy loops than alone
    # is a timing of the machine, measured by bench/bench_wait_sampler.py, not asserted here.
    wait, cpu = _load_wait(tmp_path, CPUS[0], busy_loops=0)
    assert 0.0 <= wait <= 1.0
    assert cpu > 0.0


def _shares(core: float, api: float) -> dict[str, float]:
    return {"engine_core": core, "api_server": api}


def test_the_wait_knee_is_resolved_where_the_wait_falls_under_the_threshold_beyond_doubt():
    # the H100 mp figures at 3.6 req/s: 0.33 / 0.13 / 0.04 / 0 over four blocks
    per_cores = {2: (0.33, 0.24), 3: (0.13, 0.05), 4: (0.04, 0.01), 14: (0.0, 0.0)}
    jitter = (-0.01, 0.005, 0.01, -0.005)
    samples = {
        ((0, b), c): _shares(max(0.0, core + j * (core > 0)), max(0.0, api + j * (api > 0) / 2))
        for b, j in enumerate(jitter)
        for c, (core, api) in per_cores.items()
    }
    k = measure_wait_knee(samples, max_wait=0.05, seed=1)
    assert (k.status, k.knee_cores) == (RESOLVED, 4)
    assert "3 cores" in k.reason and "engine_core" in k.reason
    p3 = k.point(3, "engine_core")
    assert p3 is not None and p3.wait_low > 0.05 and p3.wait_share == pytest.approx(0.13)
    # a stricter threshold moves the knee to where the wait is zero
    assert measure_wait_knee(samples, max_wait=0.01, seed=1).knee_cores == 14


def test_overlapping_wait_at_the_threshold_is_not_resolved_and_a_flat_curve_is_no_effect():
    straddle = {
        ((0, b), c): _shares(w, 0.0)
        for b, w3 in enumerate((0.02, 0.09, 0.03, 0.08))
        for c, w in ((3, w3), (4, 0.01), (8, 0.0))
    }
    k = measure_wait_knee(straddle, max_wait=0.05)
    assert k.status == NOT_RESOLVED and k.knee_cores is None and "straddles" in k.reason
    flat = {((0, b), c): _shares(0.01, 0.0) for b in range(3) for c in (2, 4, 8)}
    f = measure_wait_knee(flat, max_wait=0.05)
    assert (f.status, f.knee_cores) == (NO_EFFECT, 2)
    one = measure_wait_knee({((0, 0), 2): _shares(0.3, 0.1)}, max_wait=0.05)
    assert one.status == NOT_RESOLVED and "block" in one.reason


def _run_file(cores: int, repeat: int, core_wait: float, ttft: float) -> dict:
    return {
        "schema": "advisor.bench.run/1",
        "source_folder": "f",
        "run": {
            "run_id": f"r{cores}-{repeat}",
            "status": "ok",
            "platform": "H100",
            "model": "m",
            "engine_version": "0.26.0",
            "engine": "vllm",
            "tp": 1,
            "cores": cores,
            "repeat": repeat,
            "workload": "tokenize-heavy",
            "attacker_rps": 3.6,
            "attacker_tokens_min": 30000,
            "attacker_tokens_max": 30100,
            "victim_rps": 8,
            "extra": {
                "session": "s",
                "engine_start": 1,
                "flags": [],
                "series": {"id": "abc", "tp": 1, "executor": "mp", "renderer_workers": 1},
                "wait": {
                    "status": "ok",
                    "by_process": [{"role": "engine_core"}],
                    "by_role": {
                        "engine_core": {"wait_share": core_wait},
                        "api_server": {"wait_share": core_wait / 2},
                    },
                    "psi": {"machine": {"some_share": core_wait / 2}},
                },
            },
        },
        "requests": [
            {"kind": "victim", "status": "ok", "ttft_ms": ttft * f} for f in (0.95, 1.0, 1.05)
        ],
    }


def test_bench_curve_puts_the_wait_knee_beside_the_ttft_knee_of_the_same_series():
    waits = {2: 0.33, 3: 0.13, 4: 0.03, 14: 0.0}
    datas = [
        _run_file(c, r, max(0.0, w + 0.01 * (r - 2)), 40.0 if c == 2 else 25.0)
        for r in (1, 2, 3)
        for c, w in waits.items()
    ]
    (c,) = curves(datas, max_wait=0.05, bootstrap_resamples=500)
    assert c.wait is not None and (c.wait.status, c.wait.knee_cores) == (RESOLVED, 4)
    rows = {r["cores"]: r for r in summary_rows([c])}
    assert rows[3]["wait_core"] == pytest.approx(0.13, abs=1e-3)
    assert rows[3]["wait_core_low"] > 0.05 and rows[4]["wait_core_high"] <= 0.05
    assert rows[2]["wait_api"] == pytest.approx(0.165, abs=1e-3)
    assert all(r["wait_knee_cores"] == 4 for r in rows.values())
    assert json.loads(json.dumps(c.to_json_dict()))["wait"]["knee_cores"] == 4


def test_runs_without_wait_records_keep_their_ttft_curve_and_get_no_wait_knee():
    datas = [_run_file(c, r, 0.0, 30.0) for r in (1, 2) for c in (2, 4)]
    for d in datas:
        del d["run"]["extra"]["wait"]
    (c,) = curves(datas, bootstrap_resamples=200)
    assert c.wait is None and c.knee.points
    assert all(r["wait_core"] is None for r in summary_rows([c]))


def test_the_evidence_brackets_the_threshold_between_harmless_and_harmful_wait():
    from advisor.harness.results.curves import evidence_summary, wait_evidence

    waits = {2: 0.5, 3: 0.2, 4: 0.03, 14: 0.0}
    ttft = {2: 100.0, 3: 25.0, 4: 25.0, 14: 25.0}
    datas = [
        _run_file(c, r, w + 0.005 * r, ttft[c] * (1 + 0.002 * r))
        for r in (1, 2, 3)
        for c, w in waits.items()
    ]
    rows = wait_evidence(curves(datas, bootstrap_resamples=300))
    by = {r["cores"]: r for r in rows}
    assert by[2]["ttft"] == "slower" and by[2]["role"] == "engine_core"
    assert by[3]["ttft"] == "within" and by[3]["itl"] is None
    s = evidence_summary(rows)
    assert s["largest_harmless"]["cores"] == 3 and s["largest_harmless"]["wait"] == 0.21
    assert s["smallest_harmful"]["cores"] == 2


H100_WAIT = ROOT / "data" / "bench" / "h100-2026-12-06-wait"


def _h100_runs(
    tmp_path: Path, names: tuple[str, ...] = ("mp.tgz", "uni-unique.tgz", "rerun-mp.tgz")
) -> Path:
    """The committed H100 run archives ``names`` unpacked into ``tmp_path`` (each its folder)."""
    for name in names:
        unpack(H100_WAIT / name, tmp_path)
    return tmp_path


def _wait_knees(*folders: Path) -> dict[str, tuple[str, int | None]]:
    """Each series' wait knee in ``folders`` as ``advisor bench curve`` reports it."""
    from advisor.harness.results.curves import curve_report

    return {
        c.label: (c.wait.status, c.wait.knee_cores)
        for c in curve_report(list(folders))
        if c.wait is not None
    }


def test_the_committed_h100_wait_points_match_the_committed_raw_runs(tmp_path: Path):
    runs = _h100_runs(tmp_path)
    out = tmp_path / "points.csv"
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import-bench-runs"), str(out),
         str(runs / "mp"), str(runs / "uni-unique")],
        capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    committed = ROOT / "data" / "calibration" / "h100-vllm-0.26.0-2026-12-06-wait.csv"
    assert out.read_text() == committed.read_text()


def test_the_committed_h100_runs_resolve_the_wait_knees_docs_model_states(tmp_path: Path):
    runs = _h100_runs(tmp_path)
    got = _wait_knees(runs / "mp", runs / "uni-unique")
    assert got["tp1 mp rw1 tokenize-heavy 6/s (heavy)"] == (RESOLVED, 4)
    assert got["tp1 mp rw1 tokenize-heavy 1/s (light)"] == (RESOLVED, 3)
    assert got["tp1 uni rw1 tokenize-heavy 2.8/s (medium)"] == (RESOLVED, 3)
    assert got["tp1 uni rw1 tokenize-heavy 1/s (light)"] == (NO_EFFECT, 2)
    # the rerun on another machine, not in the fit, finds the same knees
    rerun = _wait_knees(runs / "rerun-mp")
    for label in ("tp1 mp rw1 tokenize-heavy 6/s (heavy)", "tp1 mp rw1 tokenize-heavy 1/s (light)"):
        assert rerun[label] == got[label]


def _held_out(
    folder: Path,
    rates: tuple[float, ...],
    prompt_tokens: int,
    executor: str = "mp",
    workload: str = "tokenize-heavy",
    renderer_workers: int = 1,
    role: str = "engine_core",
) -> tuple[float, int, int, int]:
    """The shipped wait model against runs it was not fitted on, as ``recommend`` predicts them
    (the demand model's demand for the configuration, then the wait curve): ``role``'s (the
    engine core's) mean absolute error at 2, 3 and 4 cores, the points inside their 90%
    interval, all of them, and those measured above their interval (the model short of cores)."""
    import statistics

    from advisor.harness.results.curves import read_runs
    from advisor.model import slowdown
    from advisor.model.waitmodel import WaitFit, wait_curve
    from advisor.recommend.decision import job_demand
    from advisor.recommend.query import Workload, features_of

    runs = [d["run"] for d in read_runs([folder])]
    params = slowdown.load_params()
    fit = WaitFit.from_json(params.meta["wait"])
    assert fit is not None
    errors, inside, under = [], 0, 0
    for rps in rates:
        mine = [r for r in runs if r["attacker_rps"] == rps and r["status"] == "ok"]
        # the load's GPU busy share as measured at the most cores (recommend's default, a GPU
        # always busy, only asks for more: the under-prediction counts stay 0 either way)
        most = max(r["cores"] for r in mine)
        busy = statistics.mean(r["gpu_util_percent"] / 100 for r in mine if r["cores"] == most)
        w = Workload(
            load_rps=rps,
            prompt_tokens=prompt_tokens,
            workload=workload,
            executor=executor,
            gpu_busy=busy,
            renderer_workers=renderer_workers,
        )
        parts = job_demand(params, features_of("H100", 1, w)).parts
        curve = wait_curve(
            fit,
            executor=executor,
            workers=1 if executor == "mp" else 0,
            api_cores=parts.api_server_cores,
            engine_cores=parts.engine_core_cores,
            core_counts=[2, 3, 4],
        )
        for p in (p for p in curve if p.role == role):
            measured = statistics.mean(
                wait_of_run(r, role) or 0.0 for r in mine if r["cores"] == p.cores
            )
            errors.append(abs(p.wait - measured))
            inside += p.low <= measured <= p.high
            under += measured > p.high
    return statistics.mean(errors), inside, len(errors), under


def test_the_shipped_wait_model_predicts_the_held_out_rerun_within_its_intervals(tmp_path: Path):
    mae, inside, points, under = _held_out(
        _h100_runs(tmp_path) / "rerun-mp", (1.0, 2.8, 6.0), 30050
    )
    # the whole chain (demand model, then wait model) on a machine it never saw: 0.04, 9 of 9
    # inside before the H200 run joined the fit; since, its intervals are narrower and 4 cores
    # at 1/s (measured 0.014) sits a hair under its interval (0.016-0.056): over-predicted
    assert mae < 0.05 and points == 9 and inside >= 8 and under == 0


def test_the_shipped_wait_model_predicts_a_prompt_length_it_never_saw(tmp_path: Path):
    """Every fitted mp series has a 30k-token document; this H100 run (2026-12-06, 12k tokens,
    rates 1, 3 and 6 from its own ladder) is in no fit. Its measured wait knees are 3, 3 and 4
    cores; with a constant engine core recommend answered 3 for all three, one core short at
    6/s (3 cores measured 0.159 against the 0.15 threshold); with the engine core following the
    GPU's busy share it answers 4, 4, 4 (test below)."""
    folder = _h100_runs(tmp_path, ("prompt12k.tgz",)) / "prompt12k"
    mae, inside, points, under = _held_out(folder, (1.0, 3.0, 6.0), 12050)
    # MAE 0.035 with a constant engine core, 0.068 since it follows the busy share: the wait is
    # over-predicted where the headroom is small, never under
    assert mae < 0.07 and points == 9 and inside >= 8 and under == 0
    assert _wait_knees(folder) == {
        "tp1 mp rw1 tokenize-heavy 1/s (light)": (RESOLVED, 3),
        "tp1 mp rw1 tokenize-heavy 3/s (medium)": (RESOLVED, 3),
        "tp1 mp rw1 tokenize-heavy 6/s (heavy)": (RESOLVED, 4),
    }


def test_the_shipped_uni_wait_model_predicts_a_prompt_length_it_never_saw(tmp_path: Path):
    """The same 12k-token document and rates with the uni executor (H100, 2026-12-06, a later
    session; in no fit): engine-core MAE 0.023, 9 of 9 inside. Measured wait knees 2 (no effect:
    0.13 at 2 cores under the 0.15 threshold), 3 and 3; recommend answers 3, 3, 3 (2 + N, the
    floor below which it never goes)."""
    folder = _h100_runs(tmp_path, ("prompt12k-uni.tgz",)) / "prompt12k-uni"
    mae, inside, points, under = _held_out(folder, (1.0, 3.0, 6.0), 12050, executor="uni")
    # as above: 4 cores at 1/s measured 0.000 against 0.000-0.006, a hair under since the refit
    assert mae < 0.04 and points == 9 and inside >= 8 and under == 0
    assert _wait_knees(folder) == {
        "tp1 uni rw1 tokenize-heavy 1/s (light)": (NO_EFFECT, 2),
        "tp1 uni rw1 tokenize-heavy 3/s (medium)": (RESOLVED, 3),
        "tp1 uni rw1 tokenize-heavy 6/s (heavy)": (RESOLVED, 3),
    }


def test_the_shipped_wait_model_on_unique_prompts_at_loads_it_never_saw(tmp_path: Path):
    """Unique prompts (1-3k tokens) at 3, 12 and 24 req/s on an H100 (2026-12-06; the fitted
    unique series has 6 req/s only). Measured wait knees: 3 cores at 12 and 24 req/s, not
    resolved at 3 req/s (2 cores measured 0.17 and 0.15 against the 0.15 threshold); recommend
    answers 4 for all three (3 with a constant engine core): one core more than measured."""
    folder = _h100_runs(tmp_path, ("unique-rates.tgz",)) / "unique-rates"
    mae, inside, points, under = _held_out(folder, (3.0, 12.0, 24.0), 2000, workload="unique")
    # the engine core at a 85-100% busy GPU needs 0.9-1.0 cores (measured 0.89-0.99): at 2 and
    # 3 cores the headroom is negative or small and the wait form over-predicts it (2 cores at
    # 24/s: 0.63 against 0.22 measured; MAE 0.149, was 0.054 with a constant engine core), 2 of
    # 9 inside, every point outside over-predicted: the side of more cores (docs/model.md)
    assert mae < 0.16 and points == 9 and inside == 2 and under == 0
    assert _wait_knees(folder) == {
        "tp1 mp rw1 unique 3/s": (NOT_RESOLVED, None),
        "tp1 mp rw1 unique 12/s": (RESOLVED, 3),
        "tp1 mp rw1 unique 24/s": (RESOLVED, 3),
    }


HIGHRATE = ROOT / "data" / "bench" / "h100-2026-12-07-highrate"


@pytest.mark.parametrize(
    ("name", "rps", "tokens", "executor", "knee", "most_mae"),
    [
        ("highrate-mp", 6.0, 20050, "mp", 4, 0.02),
        ("highrate-uni", 6.0, 20050, "uni", 3, 0.04),
        ("highrate-short", 12.0, 3050, "mp", 4, 0.04),
    ],
)
def test_the_shipped_model_at_high_token_and_request_rates_it_never_saw(
    tmp_path: Path, name, rps, tokens, executor, knee, most_mae
):
    """Issue 48 item 5 (H100, 2026-12-07, in no fit): 120k prompt tokens/s (20k-token document
    at 6/s) with both executors, and a 3k-token document at 12/s. Measured with the GPU's busy
    share the engine-core wait is inside its interval at 2, 3 and 4 cores; the measured knee is
    recommend's answer (with a constant engine core the mp answers were 3, one core short)."""
    from advisor.model import slowdown
    from advisor.recommend.decision import sufficient_cores
    from advisor.recommend.query import Workload

    unpack(HIGHRATE / f"{name}.tgz", tmp_path)
    folder = tmp_path / name
    mae, inside, points, under = _held_out(folder, (rps,), tokens, executor=executor)
    assert mae < most_mae and (inside, points, under) == (3, 3, 0)
    label = f"tp1 {executor} rw1 tokenize-heavy {rps:g}/s (light)"
    assert _wait_knees(folder)[label] == (RESOLVED, knee)
    w = Workload(load_rps=rps, prompt_tokens=tokens, workload="tokenize-heavy", executor=executor)
    answer = sufficient_cores(slowdown.load_params(), gpus=1, platform="H100", workload=w, cap=16)
    assert answer.cores_total == knee


RENDERER = ROOT / "data" / "bench" / "h100-2026-12-08-renderer"


@pytest.mark.parametrize(
    ("name", "executor", "knee", "api_inside", "api_under"),
    [("rw2-mp", "mp", 4, 3, 0), ("rw2-mp-b", "mp", 4, 2, 1), ("rw2-uni", "uni", 3, 3, 0)],
)
def test_two_renderer_workers_keep_the_answer_and_wait_more_in_the_api_server(
    tmp_path: Path, name, executor, knee, api_inside, api_under
):
    """Issue 48 item 5 (H100, 2026-12-08, in no fit): the high-rate load (20k-token document at
    6/s) with ``--renderer-num-workers 2``, mp from two engine starts. The engine core, which
    decides, is inside its interval at 2, 3 and 4 cores and the knee is recommend's answer; the
    API server's two tokenizer threads wait 1.5-1.9x more at 2-3 cores than one thread did,
    which the wait model does not know: one start measured it above the interval at 3 cores
    (data/bench/h100-2026-12-08-renderer/README.md)."""
    from advisor.model import slowdown
    from advisor.recommend.decision import sufficient_cores
    from advisor.recommend.query import Workload

    unpack(RENDERER / f"{name}.tgz", tmp_path)
    folder = tmp_path / name
    held = functools.partial(_held_out, folder, (6.0,), 20050, executor, renderer_workers=2)
    mae, inside, points, under = held()
    assert mae < 0.04 and (inside, points, under) == (3, 3, 0)
    _, inside, points, under = held(role="api_server")
    assert (inside, points, under) == (api_inside, 3, api_under)
    assert _wait_knees(folder) == {
        f"tp1 {executor} rw2 tokenize-heavy 6/s (light)": (RESOLVED, knee)
    }
    w = Workload(
        load_rps=6.0,
        prompt_tokens=20050,
        workload="tokenize-heavy",
        executor=executor,
        renderer_workers=2,
    )
    answer = sufficient_cores(slowdown.load_params(), gpus=1, platform="H100", workload=w, cap=16)
    assert answer.cores_total == knee


def test_two_renderer_workers_cut_the_short_requests_ttft_at_ample_cores(tmp_path: Path):
    """What ``tokenizer-saturated`` advises, measured: at 14 cores the 64-token victims' TTFT
    median falls from 34 to 19 ms (mp) and from 28 to 20 ms (uni) with a second tokenizer thread,
    and the API server's CPU stays that of one thread's tokens."""
    from advisor.harness.results.curves import read_runs
    from advisor.harness.serve.waits import busy_of_run

    def at_most_cores(archive: Path, name: str) -> tuple[float, float]:
        unpack(archive, tmp_path)
        runs = [d["run"] for d in read_runs([tmp_path / name]) if d["run"]["status"] == "ok"]
        most = [r for r in runs if r["cores"] == 14]
        ttft = statistics.median(r["victim_ttft_p50_ms"] for r in most)
        return ttft, statistics.mean(busy_of_run(r, "api_server") or 0.0 for r in most)

    for one, two in [
        ((HIGHRATE / "highrate-mp.tgz", "highrate-mp"), (RENDERER / "rw2-mp.tgz", "rw2-mp")),
        ((HIGHRATE / "highrate-mp.tgz", "highrate-mp"), (RENDERER / "rw2-mp-b.tgz", "rw2-mp-b")),
        ((HIGHRATE / "highrate-uni.tgz", "highrate-uni"), (RENDERER / "rw2-uni.tgz", "rw2-uni")),
    ]:
        (ttft1, api1), (ttft2, api2) = at_most_cores(*one), at_most_cores(*two)
        assert ttft2 < 0.75 * ttft1 and abs(api2 - api1) < 0.1


def test_over_every_held_out_h100_run_recommend_is_never_a_core_short(tmp_path: Path):
    """Every resolved wait knee of the runs no fit saw (the rerun, 12k documents with both
    executors, unique prompts at new rates, the high-rate runs with one and two renderer workers)
    against recommend's answer for the same load, the GPU's busy share left at its default (a
    serving job's busy GPU): 10 exact, 5 one core over, none under. With a constant engine core it was 9 exact and 3 one core short
    (docs/model.md: a missing core costs GPU time, a spare one a vCPU-hour)."""
    from advisor.model import slowdown
    from advisor.recommend.decision import sufficient_cores
    from advisor.recommend.query import Workload

    sets = [
        ("rerun-mp", H100_WAIT / "rerun-mp.tgz", 30050, "mp", "tokenize-heavy"),
        ("prompt12k", H100_WAIT / "prompt12k.tgz", 12050, "mp", "tokenize-heavy"),
        ("prompt12k-uni", H100_WAIT / "prompt12k-uni.tgz", 12050, "uni", "tokenize-heavy"),
        ("unique-rates", H100_WAIT / "unique-rates.tgz", 2000, "mp", "unique"),
        ("highrate-mp", HIGHRATE / "highrate-mp.tgz", 20050, "mp", "tokenize-heavy"),
        ("highrate-uni", HIGHRATE / "highrate-uni.tgz", 20050, "uni", "tokenize-heavy"),
        ("highrate-short", HIGHRATE / "highrate-short.tgz", 3050, "mp", "tokenize-heavy"),
        ("rw2-mp", RENDERER / "rw2-mp.tgz", 20050, "mp", "tokenize-heavy"),
        ("rw2-mp-b", RENDERER / "rw2-mp-b.tgz", 20050, "mp", "tokenize-heavy"),
        ("rw2-uni", RENDERER / "rw2-uni.tgz", 20050, "uni", "tokenize-heavy"),
    ]
    params = slowdown.load_params()
    off: list[int] = []
    for name, archive, tokens, executor, workload in sets:
        unpack(archive, tmp_path)
        for label, (status, knee) in _wait_knees(tmp_path / name).items():
            if status != RESOLVED:
                continue
            rps = float(next(p for p in label.split() if p.endswith("/s"))[:-2])
            renderers = int(next(p for p in label.split() if p.startswith("rw"))[2:])
            w = Workload(
                load_rps=rps,
                prompt_tokens=tokens,
                workload=workload,
                executor=executor,
                renderer_workers=renderers,
            )
            answer = sufficient_cores(params, gpus=1, platform="H100", workload=w, cap=16)
            off.append(answer.cores_total - knee)
    assert len(off) == 15 and min(off) >= 0
    assert (off.count(0), off.count(1)) == (10, 5)


def test_an_engine_started_in_a_cgroup_of_its_own_reads_that_cgroups_pressure_and_cpu(
    tmp_path: Path,
):
    # The bench starts the engine (and only it) in a fresh cgroup under a cgroup v2 parent, as
    # the lent GPU machines allow: a phase then reads the very counters the node collector
    # reads of a production job. Here the parent is a test folder of this machine's v2 tree.
    unified = Path("/sys/fs/cgroup/unified")
    if not (os.geteuid() == 0 and (unified / "cpu.pressure").exists()):
        pytest.skip("needs root and a writable cgroup v2 tree at /sys/fs/cgroup/unified")
    import httpx

    parent = unified / f"advisor-bench-test-{os.getpid()}"
    parent.mkdir()
    try:
        spec = eng.spec_from(
            STUB + " --busy-ms 40",
            model="m",
            tp=1,
            cores=(CPUS[0],),
            host="127.0.0.1",
            port=eng.free_port(),
            log_path=tmp_path / "stub.log",
            env={"PYTHONPATH": str(ROOT)},
            cgroup_parent=parent,
        )
        engine = eng.EngineProcess(spec)
        engine.start()
        try:
            assert engine.wait_ready(20).status == "ok"
            assert engine.cgroup is not None and engine.cgroup.parent == parent
            members = {int(p) for p in (engine.cgroup / "cgroup.procs").read_text().split()}
            assert set(engine.pids()) <= members and os.getpid() not in members
            url = f"http://127.0.0.1:{spec.port}/v1/completions"
            with (
                WaitSampler(engine.pids, root_pid=engine.pid, cgroup=engine.cgroup) as s,
                httpx.Client() as c,
            ):
                for _ in range(20):
                    c.post(url, json={"model": "m", "prompt": "x", "max_tokens": 1, "stream": True})
        finally:
            made = engine.cgroup
            engine.stop()
        psi = s.result["psi"]
        assert psi["cgroup_path"] == str(made) and psi["cgroup"]["some_share"] is not None
        # 20 requests of 40 ms of CPU each: at least 0.6 s of the cgroup's own CPU time
        assert psi["cgroup_cpu"]["usage_s"] > 0.6, psi["cgroup_cpu"]
        assert not made.exists()  # removed with the engine
    finally:
        parent.rmdir()


def test_the_measured_waits_beside_a_prediction_are_the_matching_series_phases():
    """Issue 48 item 3: the Recommend page's wait chart shows, over the prediction, what the
    calibration series of the same configuration at a load within 15% measured: the median of
    each core count's phases and their range, read here again from the shipped CSV itself."""
    import pandas as pd

    from advisor.charts import wait_curve_chart, wait_curve_frame
    from advisor.model.calibration import load_points
    from advisor.model.calibration.waits import measured_waits

    points = load_points().points
    kw = {"gpus": 1, "tp": 1, "renderer_workers": 1}
    rows = measured_waits(points, executor="mp", load_rps=3.0, prompt_tokens=30050, **kw)
    assert {r["series"] for r in rows} == {
        "H100 tokenize-heavy/mp 2.8/s x 30,050 tokens, 2026-12-06"
    }
    csv = pd.read_csv(ROOT / "data" / "calibration" / "h100-vllm-0.26.0-2026-12-06-wait.csv")
    mine = csv[
        (csv["metric"] == "wait_engine_core_share")
        & (csv["load_rps"] == 2.8)
        & csv["notes"].str.contains("executor=mp ")
    ]
    for cores, phases in mine.groupby("cores")["value"]:
        (row,) = [r for r in rows if r["role"] == "engine_core" and r["cores"] == cores]
        assert row["wait"] == pytest.approx(phases.median())
        assert (row["low"], row["high"], row["phases"]) == (phases.min(), phases.max(), len(phases))
    assert {r["role"] for r in rows} == {"engine_core", "api_server"}
    # another executor, TP, or a load 20% away: nothing measured to show
    assert measured_waits(points, executor="uni", load_rps=8.0, prompt_tokens=16384, **kw) == []
    assert measured_waits(points, executor="mp", load_rps=3.4, prompt_tokens=30050, **kw) == []
    both = measured_waits(points, executor="uni", load_rps=1.0, prompt_tokens=30050, **kw)
    assert {r["series"].split()[0] for r in both} == {"H100", "H200"}
    curve = [
        {"cores": c, "engine_core": {"wait": w, "low": w / 2, "high": w * 2}}
        for c, w in ((2, 0.5), (3, 0.2), (4, 0.05))
    ]
    spec = wait_curve_chart(
        wait_curve_frame(curve, 1), 0.15, recommended_cores_per_gpu=4, measured=pd.DataFrame(rows)
    ).to_dict()
    assert len(spec["layer"]) == 6 and "measured series" in json.dumps(spec)
    bare = wait_curve_chart(wait_curve_frame(curve, 1), 0.15, measured=pd.DataFrame()).to_dict()
    assert len(bare["layer"]) == 3
