"""The CPU demand: its parts by configuration, its fit on measured per-process CPU, and the
capacity answer, on synthetic observations whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.model.demand import (
    DEMAND_PARAMS,
    DEMAND_PRIOR,
    CpuObservation,
    capacity_cores,
    demand_of,
    fit_demand,
)

# api_base, per 100k tok/s, engine uni, engine mp (busy GPU), spin, the mp engine's idle share
TRUE = (0.2, 0.35, 0.42, 0.9, 1.04, 0.25)


def _obs(seed: int = 0, noise: float = 0.02, mp: bool = True) -> list[CpuObservation]:
    """Per-process CPU of three uni series at three loads (and GPU busy shares) and two mp
    series at two GPU busy shares, two phases each."""
    rng = np.random.default_rng(seed)
    out = []
    configs = [
        ("uni-2", 60_000.0, "uni", 0.3),
        ("uni-3", 102_000.0, "uni", 0.6),
        ("uni-5", 150_000.0, "uni", 0.9),
    ]
    if mp:
        configs += [("mp-3", 102_000.0, "mp", 0.4), ("mp-5", 150_000.0, "mp", 0.9)]
    for series, tok, ex, busy in configs:
        for block in ("1/1", "1/2"):
            mp_engine = TRUE[3] * (TRUE[5] + (1 - TRUE[5]) * busy)
            parts = {
                "api_server": TRUE[0] + TRUE[1] * tok / 1e5,
                "engine_core": mp_engine if ex == "mp" else TRUE[2],
            }
            if ex == "mp":
                parts["gpu_worker"] = TRUE[4]
            for proc, v in parts.items():
                out.append(
                    CpuObservation(
                        series, block, proc, v * (1 + rng.normal(0, noise)), tok, 1, 1, ex, busy
                    )
                )
    return out


def test_the_fit_recovers_known_parts_with_intervals_around_them():
    fit = fit_demand(_obs(), n_bootstrap=200, seed=1)
    assert fit.values == pytest.approx(TRUE, rel=0.08)
    assert all(s.startswith("measured") for s in fit.sources)
    for name, (lo, hi) in fit.interval().items():
        v = fit.values[DEMAND_PARAMS.index(name)]
        assert lo <= v <= hi


def test_a_part_no_series_measured_keeps_its_prior_and_says_so():
    fit = fit_demand(_obs(mp=False), n_bootstrap=20)
    i_spin, i_mp = DEMAND_PARAMS.index("worker_busy"), DEMAND_PARAMS.index("engine_core_mp")
    assert fit.values[i_spin] == DEMAND_PRIOR[i_spin]
    assert fit.values[i_mp] == DEMAND_PRIOR[i_mp]
    i_idle = DEMAND_PARAMS.index("engine_idle_share")
    assert fit.values[i_idle] == DEMAND_PRIOR[i_idle] and fit.sources[i_idle].startswith("prior")
    assert fit.sources[i_spin].startswith("prior")
    assert fit.interval()["worker_busy"] == (DEMAND_PRIOR[i_spin], DEMAND_PRIOR[i_spin])


def test_the_fit_is_deterministic_given_a_seed():
    a, b = fit_demand(_obs(), n_bootstrap=30, seed=4), fit_demand(_obs(), n_bootstrap=30, seed=4)
    assert a == b


def test_the_demand_of_a_configuration_is_the_sum_of_its_processes():
    one_uni = demand_of(TRUE, load_rps=3.4, prompt_tokens=30_000, gpus=1, tp=1, executor="uni")
    api = 0.2 + 0.35 * 1.02
    assert one_uni.api_server_cores == pytest.approx(api)
    assert one_uni.gpu_worker_cores == 0.0
    assert one_uni.demand_cores == pytest.approx(api + 0.42)
    one_mp = demand_of(TRUE, load_rps=3.4, prompt_tokens=30_000, gpus=1, tp=1, executor="mp")
    assert one_mp.demand_cores == pytest.approx(api + 0.9 + 1.04)
    # TP = 4: one engine core, four busy-waiting workers (mp whatever was asked)
    tp4 = demand_of(TRUE, load_rps=3.4, prompt_tokens=30_000, gpus=4, tp=4, executor="uni")
    assert tp4.gpu_worker_cores == pytest.approx(4 * 1.04)
    assert tp4.engine_core_cores == pytest.approx(0.9)
    # 2 GPUs without TP: two engines (data-parallel replicas), no worker processes
    dp = demand_of(TRUE, load_rps=3.4, prompt_tokens=30_000, gpus=2, tp=1, executor="uni")
    assert dp.engine_core_cores == pytest.approx(2 * 0.42) and dp.gpu_worker_cores == 0.0
    # the tokenizer thread: per-token cost over the renderer workers
    rw4 = demand_of(
        TRUE, load_rps=5, prompt_tokens=30_000, gpus=1, tp=1, executor="uni", renderer_workers=4
    )
    assert rw4.tokenizer_utilisation == pytest.approx(0.35 * 1.5 / 4)


def test_the_multiprocess_engine_core_follows_its_gpus_busy_share_and_the_in_process_does_not():
    def engine(executor: str, busy: float) -> float:
        return demand_of(
            TRUE, load_rps=3, prompt_tokens=30_000, gpus=1, tp=1, executor=executor, gpu_busy=busy
        ).engine_core_cores

    assert engine("mp", 1.0) == pytest.approx(0.9)  # the default: a serving job's busy GPU
    assert engine("mp", 0.0) == pytest.approx(0.9 * 0.25)
    assert engine("mp", 0.5) == pytest.approx(0.9 * (0.25 + 0.75 * 0.5))
    assert engine("uni", 0.2) == engine("uni", 1.0) == pytest.approx(0.42)
    # the fit recovers the idle share from series at different busy shares, and says it measured
    fit = fit_demand(_obs(noise=0.0), n_bootstrap=0)
    i = DEMAND_PARAMS.index("engine_idle_share")
    assert fit.values[i] == pytest.approx(0.25, abs=0.011)
    assert fit.sources[i] == "measured: 2 series"


@pytest.mark.parametrize(
    ("demand", "u", "floor", "cores"),
    [(0.9, 0.7, 3, 3), (2.8, 0.7, 3, 4), (2.8, 0.5, 3, 6), (3.5, 0.7, 3, 5), (1.4, 0.7, 2, 2)],
)
def test_the_capacity_answer_is_the_fewest_cores_under_the_target(demand, u, floor, cores):
    assert capacity_cores(demand, u, floor) == cores
    assert demand <= u * cores or cores == floor
    if cores > floor:
        assert demand > u * (cores - 1)


def test_a_target_outside_0_1_is_refused():
    with pytest.raises(ValueError, match="utilisation"):
        capacity_cores(1.0, 1.5, 3)


def test_demand_drivers_reproduces_the_figures_docs_model_states():
    """scripts/demand-drivers on the committed runs: the mp engine core follows the GPU's busy
    share (docs/model.md, "What the CPU depends on beyond tokens/s")."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, str(root / "scripts/demand-drivers"), str(root / "data/bench")],
        capture_output=True,
        text=True,
        check=True,
    )
    lines = {ln[:10]: ln for ln in done.stdout.splitlines()}
    assert done.stdout.startswith("216 phases at their series' most cores, 20 folders")
    assert "0.241 + 0.766 x GPU busy share: r 0.932" in lines["mp  engine"]
    assert "leave one folder out: 0.045 against a constant's 0.123" in lines["mp  engine"]
    # the in-process engine core: no better than a constant when a folder is left out
    assert "leave one folder out: 0.086 against a constant's 0.079" in lines["uni engine"]
