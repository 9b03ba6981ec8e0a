"""The TTFT-slowdown model: the mechanism's parts, its pathological region, the JSON round trip,
and a validation that leaves whole series out and compares against baselines."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from advisor.errors import InputError
from advisor.model import slowdown
from advisor.model.calibration import (
    BASELINES,
    COLUMNS,
    FitConfig,
    fit_model,
    load_points,
    training_set,
    validate,
)
from advisor.model.calibration.curvefit import fit_curve
from advisor.model.calibration.fit import decision_basis
from advisor.model.calibration.split import load_split
from advisor.model.estimator import CoreSlowdownRegressor

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def fitted() -> CoreSlowdownRegressor:
    ts = training_set(load_points().points, 25.0)
    X, y, w, groups = ts.arrays()
    return CoreSlowdownRegressor(n_bootstrap=10, random_state=0).fit(
        X, y, sample_weight=w, groups=groups
    )


def _grid(cores: np.ndarray, **kw: object) -> np.ndarray:
    return np.array([slowdown.feature_row(float(c), **kw) for c in cores])  # type: ignore[arg-type]


def test_prediction_never_increases_with_cores_for_any_workload(fitted):
    rng = np.random.default_rng(1)
    cores = np.linspace(0.1, 64, 400)
    for _ in range(30):
        gpus = int(rng.choice([1, 2, 4, 8]))
        kw = dict(
            gpus=gpus,
            tp=int(rng.choice([1, gpus])),
            model_params_b=float(rng.uniform(1, 200)),
            load_rps=float(rng.uniform(0.5, 64)),
            prompt_tokens=int(rng.integers(500, 200_000)),
            prefix_hit=float(rng.uniform(0, 1)),
            platform=str(rng.choice(slowdown.PLATFORMS)),
        )
        pred = fitted.predict(_grid(cores, **kw))
        assert np.all(np.diff(pred) <= 1e-12), kw
        assert pred[-1] >= 1.0


def test_cpu_demand_is_the_sum_of_its_parts_and_grows_by_a_worker_per_gpu():
    values = slowdown.PRIOR  # the prior: 2 + N at no load
    X = _grid(np.array([8.0, 8.0, 8.0, 8.0]), load_rps=10, prompt_tokens=30_000)
    for i, (g, tp) in enumerate([(1, 1), (2, 2), (4, 4), (8, 8)]):
        X[i] = slowdown.feature_row(8.0, gpus=g, tp=tp, load_rps=10, prompt_tokens=30_000)
    m = slowdown.mechanism(values, X)
    api = 0.5 + 0.33 * 10 * 30_000 / 1e5  # tokens tokenized per second drive the API server
    np.testing.assert_allclose(m.api_server_cores, api)
    np.testing.assert_allclose(m.demand_cores, [api + 1.0, api + 1 + 2, api + 1 + 4, api + 1 + 8])
    # per-GPU demand never falls below one busy-waiting worker as GPUs are added
    assert np.all(m.demand_cores[1:] / [2, 4, 8] >= 1.0)


def test_a_prefix_cache_hit_makes_a_request_cpu_bound_and_a_faster_gpu_too():
    values = slowdown.PRIOR
    kw = dict(gpus=1, load_rps=4, prompt_tokens=16_000)
    rows = np.array(
        [
            slowdown.feature_row(3.0, prefix_hit=0.0, platform="H100", **kw),
            slowdown.feature_row(3.0, prefix_hit=0.95, platform="H100", **kw),
            slowdown.feature_row(3.0, prefix_hit=0.0, platform="B200", **kw),
        ]
    )
    m = slowdown.mechanism(values, rows)
    assert m.cpu_share[1] > m.cpu_share[2] > m.cpu_share[0]
    assert m.slowdown[1] > m.slowdown[2] > m.slowdown[0] > 1.0  # H100 and B200 differ


def test_an_overload_within_the_measured_range_is_a_finite_stretch_beyond_it_pathological(fitted):
    params = fitted.to_params()
    d = slowdown.mechanism(params.values, _grid(np.array([8.0]), gpus=4)).demand_cores[0]
    # demand / cores: 2.5 and 2.05 (beyond any measured overload), 1.5, 1.0, 0.8 (the join), 0.5
    rho = np.array([2.5, 2.05, 1.5, 1.0, slowdown.JOIN_RHO, 0.5])
    X = _grid(d / rho / 4, gpus=4)
    m = slowdown.mechanism(params.values, X)
    assert m.pathological.tolist() == [True, True, False, False, False, False]
    assert np.isinf(m.slowdown[:2]).all() and np.isfinite(m.slowdown[2:]).all()
    assert np.all(np.diff(m.slowdown[2:]) < 0) and m.slowdown[-1] > 1.0
    pred = slowdown.predict(params, X)
    assert np.isinf(pred.high[:2]).all() and np.isfinite(pred.high[2:]).all()
    assert slowdown.fewest_finite_cores(d) == math.ceil(d / slowdown.RHO_LIMIT)


def test_the_cpu_wait_joins_the_queue_to_processor_sharing_continuously():
    for c in (1.0, 2.0, 3.0, 8.0, 40.0):
        j = slowdown.JOIN_RHO * c
        eps = 1e-9 * c
        below = slowdown.cpu_wait(np.array([c]), np.array([j - eps]))[0]
        at = slowdown.cpu_wait(np.array([c]), np.array([j]))[0]
        assert below == pytest.approx(at, rel=1e-6)
        np.testing.assert_allclose(at, slowdown.queue_wait(np.array([c]), np.array([j]))[0])
        # above the join: the queue's wait there plus the stretch, one per unit of load / cores
        over = slowdown.cpu_wait(np.array([c]), np.array([1.5 * c]))[0]
        assert over == pytest.approx(at + 1.5 - slowdown.JOIN_RHO)
    # at a fixed demand, more cores never wait longer, across the join and past the cores
    cores = np.linspace(1.0, 40.0, 800)
    w = slowdown.cpu_wait(cores, np.full_like(cores, 6.0))
    assert np.isfinite(w).all() and np.all(np.diff(w) <= 1e-12)


def test_a_saturated_tokenizer_is_pathological_at_every_core_count():
    values = slowdown.PRIOR
    # 16 requests/s x 100k tokens: 5.3 cores of tokenizing on one renderer thread
    X = _grid(np.array([1.0, 16.0, 256.0]), gpus=1, load_rps=16, prompt_tokens=100_000)
    assert slowdown.mechanism(values, X).pathological.all()
    X8 = _grid(np.array([256.0]), gpus=1, load_rps=16, prompt_tokens=100_000, renderer_workers=8)
    assert not slowdown.mechanism(values, X8).pathological.any()


def test_every_prediction_has_an_interval_around_it(fitted):
    X = _grid(np.linspace(2.5, 32, 50), gpus=8, model_params_b=14.7, load_rps=16)
    pred = slowdown.predict(fitted.to_params(), X)
    ok = ~pred.pathological
    assert ok.any()
    assert np.all(pred.low[ok] <= pred.slowdown[ok]) and np.all(pred.slowdown[ok] <= pred.high[ok])
    assert np.all(pred.low >= 1.0) and np.any(pred.high[ok] > pred.low[ok])


def test_saved_json_loads_back_to_identical_predictions(fitted, tmp_path: Path):
    path = slowdown.save_params(fitted.to_params({"note": "test"}), tmp_path / "m.json")
    text = path.read_text()
    assert text.lstrip().startswith("{") and json.loads(text)["format"] == slowdown.MODEL_FORMAT
    loaded = slowdown.load_params(path)
    X = _grid(np.linspace(0.5, 40, 80), gpus=4, load_rps=12, platform="H200", prefix_hit=0.9)
    np.testing.assert_array_equal(slowdown.predict(loaded, X).slowdown, fitted.predict(X))
    rebuilt = CoreSlowdownRegressor.from_params(loaded)
    np.testing.assert_array_equal(rebuilt.predict(X), fitted.predict(X))
    np.testing.assert_array_equal(rebuilt.predict_interval(X)[1], fitted.predict_interval(X)[1])


def test_the_same_seed_gives_the_same_intervals_and_the_bootstrap_resamples_whole_series():
    ts = training_set(load_points().points, 25.0)
    X, y, w, groups = ts.arrays()
    a = CoreSlowdownRegressor(n_bootstrap=4, random_state=7).fit(
        X, y, sample_weight=w, groups=groups
    )
    b = CoreSlowdownRegressor(n_bootstrap=4, random_state=7).fit(
        X, y, sample_weight=w, groups=groups
    )
    np.testing.assert_array_equal(a.bootstrap_values_, b.bootstrap_values_)
    # one series only: every resample of series is that series, so every refit is the fit
    one = groups == groups[0]
    c = CoreSlowdownRegressor(n_bootstrap=3, random_state=0).fit(
        X[one], y[one], sample_weight=w[one], groups=groups[one]
    )
    np.testing.assert_allclose(c.bootstrap_values_, np.tile(c.values_, (3, 1)), rtol=1e-6)


def test_a_model_file_of_another_format_is_refused_with_its_name(tmp_path: Path):
    bad = tmp_path / "model.json"
    bad.write_text('{"format": "advisor-slowdown-model/2", "theta": [1]}')
    with pytest.raises(InputError, match="model.json.*refit"):
        slowdown.load_params(bad)


def test_the_shipped_model_is_a_fit_of_the_shipped_points():
    shipped = slowdown.load_params(slowdown.shipped_model_path())
    report = fit_model(FitConfig(n_bootstrap=0))
    refit = "refit it: advisor fit --output advisor/data/model.json"
    assert shipped.meta["points_fitted"] == report.points_fitted, refit
    assert shipped.meta["validation"]["model"] == pytest.approx(
        report.validation["model"], rel=1e-4
    ), refit
    np.testing.assert_allclose(shipped.values, list(report.parameters.values()), rtol=1e-3)


def test_the_validation_reports_every_baseline_with_a_paired_interval_and_the_decisions():
    meta = slowdown.load_params(slowdown.shipped_model_path()).meta
    v = meta["validation"]
    assert v["scheme"] == "leave one series out"
    assert "lower is better" in v["metric"]
    assert set(v["baselines"]) == set(BASELINES)
    assert {
        "always 1.0",
        "2 + N rule",
        "2 + N within platform",
        "knee curve per platform",
    } <= set(BASELINES)
    for name, err in v["baselines"].items():
        gap = v["paired_bootstrap"][name]
        assert gap["baseline_minus_model"] == pytest.approx(err - v["model"])
        lo, hi = gap["interval"]
        assert lo <= gap["baseline_minus_model"] <= hi
        assert gap["model_better"] == (lo > 0)
    d = v["decision"]
    for rule in ("model", "2 + N", "2 + N within platform", "knee curve per platform"):
        s = d[rule]
        assert s["within one core"] + s["above"] + s["below"] == s["series"] == d["series"]
    # the basis recommend uses is what the held-out decisions say, in a sentence
    basis, reason = decision_basis(d)
    assert meta["capacity"]["decision_basis"] == basis
    assert meta["capacity"]["decision_reason"] == reason
    # the frozen test split was scored by a fit that never saw it
    assert meta["split"]["test_series"] >= 2 and meta["test"]["scheme"].startswith("test split")


def test_leaving_a_series_out_scores_it_with_a_fit_that_never_saw_it():
    cfg = FitConfig(n_bootstrap=0)
    ts = training_set(
        load_points().points,
        cfg.max_slowdown,
        split=load_split(ROOT / "data" / "calibration"),
    )
    table, scores, sigma = validate(ts, cfg)
    assert table["series"] == len([s for s in scores if s.rows]) and sigma > 0
    assert not any(ts.series_info[s.series].test for s in scores)  # training series only
    # redo one held-out series by hand: fit without it, score its non-reference rows
    target = next(s for s in scores if s.series.startswith("bench|") and s.rows >= 4)
    others = [s for s in ts.training_series() if s != target.series]
    fit = fit_curve(ts, others)
    X, y, _, labels, censored = ts.slowdown_arrays()
    rows = [
        i
        for i, (p, g) in enumerate(zip(ts.points, labels, strict=True))
        if g == target.series
        and p.cores_per_gpu
        != max(q.cores_per_gpu for q, h in zip(ts.points, labels, strict=True) if h == g)
    ]
    m = slowdown.mechanism(fit.values, X[rows])
    pred = np.where(m.pathological, 25.0, np.minimum(m.slowdown, 25.0))
    assert target.model == pytest.approx(float(np.mean(np.abs(np.log(pred / y[rows])))))
    assert target.baselines["always 1.0"] == pytest.approx(float(np.mean(np.abs(np.log(y[rows])))))


def _cpu_series(tmp_path: Path) -> Path:
    """A bench-like series: TTFT by cores plus each process's CPU at the largest count."""
    rows = []
    ttft = {3: 900.0, 4: 420.0, 6: 260.0, 8: 240.0, 14: 230.0}
    for c, v in ttft.items():
        base = (
            "bench:r{c},bench:r{c},,H200,vllm,0.26.0,Llama-3.1-8B,8,1,tokenize-heavy,8,30000,"
            "{c},{c},{metric},{value},x,2026-12-01,"
        ).format
        rows.append(base(c=c, metric="ttft_p50_ms", value=v))
        rows.append(base(c=c, metric="prefix_hit_rate", value=0.97))
        if c == 14:  # TP=1: the GPU worker lives in the engine core's process
            for metric, value in (
                ("cpu_api_server_cores", 1.1),
                ("cpu_engine_core_cores", 0.95),
                ("cpu_worker_cores", 0.0),
            ):
                rows.append(base(c=c, metric=metric, value=value))
    rows = [f"p{i}-{r}" for i, r in enumerate(rows)]
    (tmp_path / "h200-test.csv").write_text(",".join(COLUMNS) + "\n" + "\n".join(rows) + "\n")
    return tmp_path


def test_measured_process_cpu_pins_the_parts_of_the_demand(tmp_path: Path):
    ts = training_set(load_points(_cpu_series(tmp_path)).points, 25.0)
    assert len(ts.cpu_y) == 2 and len(ts.y) == 5  # no worker of its own without TP
    assert {round(x[7], 2) for x in ts.X} == {0.97}  # the measured prefix-hit share is used
    fit = fit_curve(ts, list(ts.series_info))
    named = dict(zip(slowdown.PARAM_NAMES, fit.values, strict=True))
    # one load level: the API server's mean with the prior's slope through it
    api = named["api_base"] + named["api_per_100k_tok_s"] * 8 * 30_000 / 1e5
    assert api == pytest.approx(1.1)
    assert named["engine_core"] == pytest.approx(0.95)  # measured, not TTFT-fitted
    assert named["worker_busy"] == slowdown.PRIOR[4]  # no mp series: the prior, and it says so
    assert fit.demand.sources[4].startswith("prior")


def test_fit_command_prints_the_validation_table_and_its_model_feeds_recommend(cli, tmp_path):
    out_file = tmp_path / "fitted.json"
    code, out, err = cli("fit", "--bootstrap", "2", "--output", str(out_file), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    v = data["validation"]
    assert v["scheme"] == "leave one series out" and "lower is better" in v["metric"]
    assert v["model"] > 0 and data["capacity"]["decision_basis"] in ("capacity model", "2 + N")
    assert set(v["baselines"]) == set(BASELINES)
    assert set(data["parameters"]) == set(slowdown.PARAM_NAMES)
    code, out, err = cli(
        "recommend",
        "--gpu-type",
        "H200",
        "--gpus",
        "1",
        "--fit-file",
        str(out_file),
        "--format",
        "json",
    )
    assert code == 0, err
    assert json.loads(out)["assumptions"]["model"]["file"] == str(out_file)


def test_fit_names_the_bad_row_and_still_fits_the_rest(cli, tmp_path: Path):
    src = ROOT / "data" / "calibration" / "published.csv"
    lines = src.read_text().splitlines()
    lines.append("broken,paper:x,,,,,,,4,,,,5,1.25,speedup,fast,x,,")
    (tmp_path / "published.csv").write_text("\n".join(lines) + "\n")
    code, out, err = cli(
        "fit", "--calibration-dir", str(tmp_path), "--bootstrap", "0", "--format", "json"
    )
    assert code == 0, err
    assert f"{tmp_path / 'published.csv'}:{len(lines)}, field value: 'fast' is not a number" in err
    assert json.loads(out)["points_fitted"] == 14


def test_every_finished_calibration_run_gets_a_number_from_the_shipped_curve():
    # the overloaded runs (demand at or past the cores) finished, so the curve must give them
    # a finite slowdown; only a run that timed out may sit in the pathological region
    params = slowdown.load_params()
    ts = training_set(load_points().points, params.max_slowdown)
    X, y, _, labels, censored = ts.slowdown_arrays()
    m = slowdown.mechanism(params.values, X)
    finished = ~censored & (y > 0)
    assert finished.sum() > 50
    overloaded = finished & (m.demand_cores >= slowdown._columns(X)["cores"])
    assert overloaded.sum() >= 5  # the published 4- and 8-GPU figures, the TP = 2 runs
    assert not m.pathological[finished].any(), sorted(set(labels[finished & m.pathological]))
    assert np.isfinite(m.slowdown[finished]).all()
    # the dashboard's "±N%" is the held-out error of these predictions, not of the display cap
    mape = params.meta["validation"]["mape"]
    assert 0.0 < mape < 1.0 and params.meta["loo_mape"] == mape


def test_a_row_of_weight_k_fits_exactly_as_k_shuffled_copies_of_it():
    """Bit-for-bit, not within a tolerance: the fit collapses identical rows before the
    optimiser, so its stopping point cannot depend on the order of a floating-point sum
    (scikit-learn's weight-equivalence check failed by 1e-5 on another processor's BLAS)."""
    ts = training_set(load_points().points, 25.0)
    X, y, _, _ = ts.arrays()
    rng = np.random.default_rng(3)
    pick = rng.choice(len(y), size=60, replace=False)
    X, y = X[pick], y[pick]
    k = rng.integers(0, 4, size=len(y))
    order = rng.permutation(int(k.sum()))
    X_rep, y_rep = np.repeat(X, k, axis=0)[order], np.repeat(y, k)[order]
    weighted = CoreSlowdownRegressor(n_bootstrap=0).fit(X, y, sample_weight=k.astype(float))
    repeated = CoreSlowdownRegressor(n_bootstrap=0).fit(X_rep, y_rep)
    assert np.array_equal(weighted.values_, repeated.values_)
    assert np.array_equal(weighted.predict(X), repeated.predict(X))
    assert weighted.sigma_log_ == pytest.approx(repeated.sigma_log_, rel=1e-12)
