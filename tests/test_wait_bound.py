"""TTFT bounded from the wait (issue 36: slowdown and lost GPU-hours from the mechanism, not
fitted to TTFT noise): the stretch of a role's CPU work, the bound per core count, its use in
a job's answer and in the GPU-hours a partition's jobs lose. Numbers only; no GPU needed."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.model import slowdown
from advisor.model.waitmodel import (
    WaitFit,
    WaitPrediction,
    bound_array,
    slowdown_bounds,
    stretch,
)
from advisor.recommend import JobQuery, recommend_job
from advisor.recommend.decision import evidence_for, job_demand
from advisor.recommend.query import Workload, features_of
from advisor.recommend.starvation import starvation


def test_a_role_waiting_a_quarter_of_what_it_needs_takes_a_third_longer():
    assert stretch(0.2, 0.8) == pytest.approx(1 / 0.75)
    assert stretch(0.0, 0.5) == 1.0
    assert math.isinf(stretch(0.8, 0.8)) and math.isinf(stretch(0.9, 0.5))


def test_the_bound_is_the_larger_stretch_of_the_judged_roles_and_its_high_end_the_waits():
    curve = [
        WaitPrediction("engine_core", 2, 0.5, 0.4, 0.7),
        WaitPrediction("api_server", 2, 0.1, 0.05, 0.2),
        WaitPrediction("gpu_worker", 2, 0.9, 0.9, 0.9),  # not on a request's CPU path
        WaitPrediction("engine_core", 3, 0.0, 0.0, 0.01),
        WaitPrediction("api_server", 3, 0.0, 0.0, 0.0),
    ]
    (two, three) = slowdown_bounds(curve, {"engine_core": 0.8, "api_server": 0.5})
    assert (two.cores, three.cores) == (2, 3)
    assert two.most == pytest.approx(1 / (1 - 0.5 / 0.8))
    assert two.most_high == pytest.approx(1 / (1 - 0.7 / 0.8))
    assert three.most == 1.0 and three.most_high == pytest.approx(1 / (1 - 0.01 / 0.8))
    assert two.to_json_dict()["most"] == pytest.approx(8 / 3)


def test_a_jobs_answer_carries_the_bound_its_wait_curve_gives_at_the_answer():
    rec = recommend_job(JobQuery(gpu_type="H100", gpus=1))
    assert rec.decision_basis == "wait model"
    at = next(w for w in rec.wait_curve if w["cores"] == rec.cores_total)
    assert rec.slowdown_from_wait == pytest.approx(at["slowdown_most"])
    assert rec.slowdown_from_wait_high == pytest.approx(at["slowdown_most_high"])
    # at the answer both judged roles wait at most the threshold, so the bound is modest
    assert 1.0 <= rec.slowdown_from_wait <= 1 / (1 - rec.max_wait / 0.3)
    fewer = next(w for w in rec.wait_curve if w["cores"] == rec.cores_total - 1)
    assert fewer["slowdown_most"] > rec.slowdown_from_wait


def test_lost_gpu_hours_come_from_the_wait_bound_where_the_wait_model_decides():
    params = slowdown.load_params()
    fit = WaitFit.from_json(params.meta["wait"])
    w = Workload()
    f = features_of("H100", 1, w)
    assert evidence_for(params, f).level != "none"
    parts = job_demand(params, f).parts
    demand = {"api_server": parts.api_server_cores, "engine_core": parts.engine_core_cores}
    workers = 1 if f.executor == "mp" else 0
    cpus = np.array([1.0, 2.0, 3.0, 6.0])
    st = starvation(
        params,
        cpus=cpus,
        gpus=[1, 1, 1, 1],
        gpu_hours=[10.0, 10.0, 10.0, 10.0],
        elapsed_s=[3600.0] * 4,
        recommended_cores_per_gpu=3,
        platform="H100",
        workload=w,
    )
    kw = {"executor": f.executor, "workers": workers, "demand": demand}
    job = np.minimum(bound_array(fit, cores=cpus, **kw), params.max_slowdown)
    at_rec = bound_array(fit, cores=np.array([3.0]), **kw)[0]
    expected = np.where(cpus < 3, 10.0 * np.clip(1 - at_rec / job, 0, 1), 0.0)
    assert st.lost_rows == pytest.approx(expected)
    assert st.lost_rows[1] > 0 and st.lost_rows[2] == 0 and st.lost_rows[3] == 0
    lo, hi = st.gpu_hours_lost_interval()
    assert lo <= st.gpu_hours_lost <= hi


def test_a_tolerance_that_cannot_move_a_wait_answer_is_told_so(cli):
    """Issue 39 item 1: --tolerance 0.02 to 1 changed nothing, silently."""
    import json

    args = ("recommend", "--gpu-type", "H100", "--gpus", "4", "--format", "json")
    code, out, err = cli(*args, "--tolerance", "0.02")
    assert code == 0, err
    tight = json.loads(out)
    code, out, err = cli(*args)
    assert code == 0, err
    default = json.loads(out)
    assert tight["decision_basis"] == default["decision_basis"] == "wait model"
    assert tight["cpus_per_gpu"] == default["cpus_per_gpu"]
    said = [n for n in tight["answer_notes"] if n.startswith("--tolerance 0.02 does not move")]
    assert said and "--max-wait 0.15" in said[0]
    assert not [n for n in default["answer_notes"] if n.startswith("--tolerance")]
