"""Chart builders: the numbers they derive, and the marks their Vega-Lite specs carry."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from advisor import charts

DIST = pd.DataFrame(
    {
        "gpu_type": ["H100"] * 4 + ["A100"] * 2,
        "cores_per_gpu": [0.25, 1.0, 3.0, 8.0, 1.0, 0.0],
        "jobs": [10, 5, 3, 2, 4, 9],
        "gpu_hours": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    }
)
QUANT = pd.DataFrame(
    {
        "gpu_type": ["H100", "A100"],
        "p25_cores_per_gpu": [0.25, 1.0],
        "p50_cores_per_gpu": [1.0, 1.0],
    }
)


def _spec(chart) -> dict:
    return json.loads(chart.to_json())


def _datasets(spec: dict) -> list[list[dict]]:
    return list(spec.get("datasets", {}).values())


def test_ratios_fall_in_power_of_two_bins_and_shares_sum_to_one_per_gpu_type():
    b = charts.binned_distribution(DIST, "jobs")
    h100 = b[b["gpu_type"] == "H100"].set_index("bin_lo")
    assert list(h100.index) == [0.25, 1.0, 2.0, 8.0]  # 3 cores/GPU falls in [2, 4)
    assert list(h100["bin_hi"]) == [0.5, 2.0, 4.0, 16.0]
    assert h100.loc[0.25, "share"] == pytest.approx(0.5)
    assert b.groupby("gpu_type")["share"].sum().tolist() == pytest.approx([1.0, 1.0])


def test_jobs_without_cpus_are_left_out_of_the_distribution():
    b = charts.binned_distribution(DIST, "jobs")
    a100 = b[b["gpu_type"] == "A100"]
    assert a100["jobs"].tolist() == [4] and a100["share"].tolist() == [1.0]


def test_ecdf_weighted_by_gpu_hours_accumulates_to_one():
    e = charts.ecdf(DIST, "gpu_hours")
    h = e[e["gpu_type"] == "H100"]
    assert h["cum_share"].tolist() == pytest.approx([0.1, 0.3, 0.6, 1.0])


def test_an_unknown_weight_is_refused():
    with pytest.raises(ValueError, match="weight must be"):
        charts.binned_distribution(DIST, "cpus")


def test_histogram_has_one_panel_per_gpu_type_with_p25_p50_and_fair_share_rules():
    fair = pd.DataFrame({"gpu_type": ["H100"], "fair_cores_per_gpu": [12.0]})
    spec = _spec(charts.ratio_histogram(DIST, quantiles=QUANT, fair_share=fair))
    assert spec["facet"]["row"]["field"] == "gpu_type"
    assert spec["facet"]["row"]["sort"] == ["H100", "A100"]  # the order the types came in
    layers = spec["spec"]["layer"]
    assert [layer["mark"]["type"] for layer in layers] == ["bar", "rule", "rule", "rule"]
    assert layers[0]["encoding"]["x"]["scale"] == {"type": "log", "base": 2}
    rows = [r for d in _datasets(spec) for r in d]
    quantile_rows = {
        (r["gpu_type"], r["quantile"], r["cores_per_gpu"]) for r in rows if r["layer"] == "quantile"
    }
    assert quantile_rows == {
        ("H100", "P25", 0.25),
        ("H100", "P50", 1.0),
        ("A100", "P25", 1.0),
        ("A100", "P50", 1.0),
    }
    assert [(r["gpu_type"], r["cores_per_gpu"]) for r in rows if r["layer"] == "fair"] == [
        ("H100", 12.0)
    ]
    bars = [r for r in rows if r["layer"] == "bin"]
    assert sum(r["share"] for r in bars if r["gpu_type"] == "H100") == pytest.approx(1.0)


def test_ecdf_chart_marks_the_quantiles_at_a_quarter_and_a_half():
    spec = _spec(charts.ratio_ecdf(DIST, quantiles=QUANT))
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["line", "point"]
    # every line runs on at 100% to a power of two past the largest value (8: to 16)
    line = [r for d in _datasets(spec) for r in d if "quantile" not in r]
    ends = {r["gpu_type"]: (r["cores_per_gpu"], r["cum_share"]) for r in line}
    assert ends == {"H100": (16.0, 1.0), "A100": (16.0, 1.0)}
    points = [r for d in _datasets(spec) for r in d if "quantile" in r]
    assert {(r["gpu_type"], r["quantile"], r["cum_share"]) for r in points} == {
        ("H100", "P25", 0.25),
        ("H100", "P50", 0.5),
        ("A100", "P25", 0.25),
        ("A100", "P50", 0.5),
    }


def test_share_below_chart_draws_jobs_and_gpu_hours_side_by_side_per_threshold():
    shares = pd.DataFrame(
        {
            "gpu_type": ["H100", "H100"],
            "threshold_cores_per_gpu": [8.0, 1.0],
            "share_jobs": [0.9, 0.5],
            "share_gpu_hours": [0.8, 0.3],
        }
    )
    spec = _spec(charts.share_below_chart(shares))
    assert spec["spec"]["encoding"]["x"]["sort"] == ["< 1", "< 8"]
    assert spec["spec"]["encoding"]["x"]["axis"]["labelAngle"] == 0  # labels read level
    rows = [r for d in _datasets(spec) for r in d]
    assert {(r["threshold"], r["weighted_by"], r["share"]) for r in rows} == {
        ("< 8", "jobs", 0.9),
        ("< 8", "GPU-hours", 0.8),
        ("< 1", "jobs", 0.5),
        ("< 1", "GPU-hours", 0.3),
    }


def test_trend_chart_draws_p25_dashed_and_p50_solid_per_group_and_drops_empty_months():
    t = pd.DataFrame(
        {
            "month": pd.to_datetime(["2024-01-01", "2024-02-01"]),
            "partition": ["gpu", "gpu"],
            "p25_cores_per_gpu": [1.0, None],
            "p50_cores_per_gpu": [2.0, 4.0],
        }
    )
    spec = _spec(charts.trend_chart(t, group="partition"))
    assert spec["layer"][0]["encoding"]["color"]["field"] == "partition"
    rows = [r for d in _datasets(spec) for r in d]
    assert sorted((r["quantile"], r["cores_per_gpu"]) for r in rows) == [
        ("P25", 1.0),
        ("P50", 2.0),
        ("P50", 4.0),
    ]


def test_ttft_curve_has_interval_band_line_calibration_points_and_recommendation():
    curve = pd.DataFrame(
        {
            "cores_per_gpu": [1.0, 2.0, 4.0],
            "ttft_ms": [900.0, 400.0, 300.0],
            "ttft_low_ms": [800.0, 350.0, 250.0],
            "ttft_high_ms": [1000.0, 450.0, 350.0],
        }
    )
    pts = pd.DataFrame({"cores_per_gpu": [1.0], "ttft_ms": [880.0], "source": ["paper"]})
    spec = _spec(charts.ttft_curve_chart(curve, pts, recommended_cores_per_gpu=4.0))
    assert [layer["mark"]["type"] for layer in spec["layer"]] == [
        "area",
        "line",
        "point",
        "rule",
        "text",
    ]
    assert any(
        r == {"cores_per_gpu": 4.0, "label": "recommended: 4"} for d in _datasets(spec) for r in d
    )
    no_band = _spec(charts.ttft_curve_chart(curve[["cores_per_gpu", "ttft_ms"]]))
    assert [layer["mark"]["type"] for layer in no_band["layer"]] == ["line"]


def test_top_bar_chart_keeps_the_largest_rows_only():
    rows = pd.DataFrame({"name": list("abcde"), "gpu_hours": [5.0, 1.0, 9.0, 3.0, 7.0]})
    spec = _spec(charts.top_bar_chart(rows, name="name", value="gpu_hours", title="t", limit=3))
    names = [r["name"] for d in _datasets(spec) for r in d]
    assert sorted(names) == ["a", "c", "e"]


MEASURED_CELLS = pd.DataFrame(
    {
        "cores_per_gpu": [0, 1, 2, 4],
        "measured": [0.5, 0.3, 0.05, 0.002],
        "measured_low": [0.45, 0.25, 0.03, 0.001],
        "measured_high": [0.55, 0.35, 0.07, 0.003],
        "predicted": [0.52, 0.38, 0.07, None],
        "jobs": [40, 30, 12, 60],
        "verdict": ["over", "over", "too few", "under"],
    }
)


def test_the_measured_curve_draws_every_cell_the_threshold_and_the_model_beside():
    spec = _spec(charts.measured_curve_chart(MEASURED_CELLS, 0.075))
    rows = [r for d in _datasets(spec) for r in d]
    cells = [r for r in rows if "measured" in r]
    assert sorted(r["cores_per_gpu"] for r in cells) == [0, 1, 2, 4]
    # below one core per GPU is drawn at half a core on the log axis; too few jobs: faded
    assert {r["cores_per_gpu"]: r["x"] for r in cells}[0] == 0.5
    assert [r["decides"] for r in sorted(cells, key=lambda r: r["cores_per_gpu"])] == [
        True, True, False, True,
    ]  # fmt: skip
    assert [r["threshold"] for r in rows if "threshold" in r] == [0.075]
    assert "isValid(datum.predicted)" in json.dumps(spec)


def test_every_builder_renders_to_svg_with_vl_convert():
    vlc = pytest.importorskip("vl_convert", reason="vl-convert-python is a declared dependency")
    curve = pd.DataFrame({"cores_per_gpu": [1.0, 2.0], "ttft_ms": [900.0, 400.0]})
    runs = pd.DataFrame({"cores_per_gpu": [1.0, 2.0], "ttft_ms": [5.0, 3.0], "series": ["x", "x"]})
    for chart in (
        charts.ratio_histogram(DIST, quantiles=QUANT),
        charts.ratio_ecdf(DIST),
        charts.ttft_curve_chart(curve),
        charts.bench_curves_chart(runs, runs),
        charts.measured_curve_chart(MEASURED_CELLS, 0.075),
        charts.bench_wait_chart(
            pd.DataFrame(
                {
                    "series": ["x", "x"],
                    "role": ["engine core", "engine core"],
                    "cores_per_gpu": [1.0, 2.0],
                    "wait": [0.3, 0.05],
                    "wait_min": [0.25, 0.04],
                    "wait_max": [0.35, 0.06],
                    "runs": [2, 2],
                }
            ),
            0.15,
        ),
    ):
        svg = vlc.vegalite_to_svg(chart.to_dict())
        assert svg.startswith("<svg") and "<path" in svg


def _runs() -> pd.DataFrame:
    rows = []
    for c, ttft in ((2.0, 900.0), (4.0, 400.0), (8.0, 260.0)):
        for rep in (0, 1, 2):
            rows.append(
                {
                    "platform": "H100",
                    "model": "m",
                    "model_params_b": 8.0,
                    "gpus": 4,
                    "attacker_rps": 8.0,
                    "workload": "unique",
                    "cores_per_gpu": c,
                    "victim_ttft_p50_ms": ttft + 10.0 * rep,
                    "status": "ok",
                }
            )
    rows.append({**rows[0], "status": "hung", "victim_ttft_p50_ms": None, "cores_per_gpu": 1.0})
    return pd.DataFrame(rows)


def test_bench_series_take_the_median_of_repeats_and_leave_failed_runs_out():
    s = charts.bench_series_frame(_runs())
    assert s["cores_per_gpu"].tolist() == [2.0, 4.0, 8.0]
    assert s["ttft_ms"].tolist() == [910.0, 410.0, 270.0]
    assert s["runs"].tolist() == [3, 3, 3]
    assert s["series"].unique().tolist() == ["H100 · m · 4 GPUs · 8 rps · unique"]


def test_bench_waits_take_the_median_of_repeats_per_process_and_leave_runs_without_one_out():
    runs = _runs()
    runs["wait_engine_core"] = runs["cores_per_gpu"].map({2.0: 0.3, 4.0: 0.1, 8.0: 0.01})
    runs.loc[runs.index[1], "wait_engine_core"] = 0.5  # one slow repeat at 2 cores per GPU
    runs["wait_api_server"] = None
    w = charts.bench_wait_frame(runs)
    assert set(w["role"]) == {"engine core"}  # the API server measured nothing
    assert w["cores_per_gpu"].tolist() == [2.0, 4.0, 8.0]
    assert w["wait"].tolist() == pytest.approx([0.3, 0.1, 0.01])
    assert w.iloc[0][["wait_min", "wait_max", "runs"]].tolist() == pytest.approx([0.3, 0.5, 3])
    assert w["series"].unique().tolist() == ["H100 · m · 4 GPUs · 8 rps · unique"]
    spec = charts.bench_wait_chart(w, 0.15).to_dict()
    assert [p["title"] for p in spec["hconcat"]] == ["engine core"]
    assert charts.bench_wait_frame(_runs()).empty  # runs recorded before the wait sampler


def test_bench_fit_is_anchored_at_the_run_with_the_most_cores_and_never_rises_with_cores():
    from advisor.model import slowdown

    params = slowdown.load_params()
    s = charts.bench_series_frame(_runs())
    fit = charts.bench_fit_frame(s, params)
    assert fit["cores_per_gpu"].min() == pytest.approx(2.0)
    assert fit["cores_per_gpu"].max() == pytest.approx(8.0)
    assert fit["ttft_ms"].iloc[-1] == pytest.approx(270.0)
    assert fit["ttft_ms"].is_monotonic_decreasing


def test_model_curve_spans_slurm_default_to_the_cap_with_a_capped_interval():
    from advisor.model import slowdown

    params = slowdown.load_params()
    f = charts.model_curve_frame(
        params, gpus=4, platform="H100", ample_ttft_ms=100.0, max_cores_per_gpu=32.0
    )
    assert f["cores_per_gpu"].iloc[0] == pytest.approx(0.25)
    assert f["cores_per_gpu"].iloc[-1] == pytest.approx(32.0)
    assert (f["slowdown_low"] <= f["slowdown"]).all() and (
        f["slowdown"] <= f["slowdown_high"]
    ).all()
    assert f["slowdown_high"].max() <= params.max_slowdown
    assert f["slowdown"].is_monotonic_decreasing
    assert f["ttft_ms"].tolist() == pytest.approx((f["slowdown"] * 100.0).tolist())
    assert bool(f["pathological"].iloc[0])  # a quarter core per GPU starves the server


def test_calibration_points_keep_their_source_and_filter_by_platform_and_gpus():
    from advisor.model import calibration, slowdown

    params = slowdown.load_params()
    ts = calibration.training_set(calibration.load_points().points, params.max_slowdown)
    every = charts.calibration_frame(ts)
    assert len(every) == len(ts.y) > 0
    # Each point says where it comes from: the research's published figures or our bench runs.
    kinds = every["source"].str.split(":").str[0]
    assert set(kinds) == {"the paper", "bench"}
    # no "paper: ?" and no "1 GPUs" (issue 39 item 7)
    assert not every["source"].str.contains(r"\?|\b1 GPUs").any()
    assert every.loc[every["gpus"] == 1, "source"].str.contains(r"\b1 GPU\b").all()
    bench = every.loc[kinds == "bench", "source"]
    assert set(bench.str.split(",").str[0]) == {"bench: H100", "bench: H200"}
    four = charts.calibration_frame(ts, gpus=4)
    assert 0 < len(four) < len(every) and (four["gpus"] == 4).all()
    assert charts.calibration_frame(ts, platform="no such platform").empty


def test_the_current_allocation_is_a_labelled_dashed_rule_beside_the_recommendation():
    curve = pd.DataFrame({"cores_per_gpu": [1.0, 2.0, 4.0], "slowdown": [3.0, 1.5, 1.0]})
    spec = _spec(
        charts.ttft_curve_chart(
            curve, recommended_cores_per_gpu=4.0, current_cores_per_gpu=1.0, value="slowdown"
        )
    )
    labels = sorted(r["label"] for d in _datasets(spec) for r in d if "label" in r)
    assert labels == ["now: 1", "recommended: 4"]
    dashes = [
        layer["mark"].get("strokeDash")
        for layer in spec["layer"]
        if layer["mark"]["type"] == "rule"
    ]
    assert dashes == [[1, 0], [6, 3]]


def _legends(spec: dict) -> list[dict]:
    """Every legend definition in a spec (nested layers and facets included)."""
    out = []
    if isinstance(spec, dict):
        for k, v in spec.items():
            if k == "legend" and isinstance(v, dict):
                out.append(v)
            else:
                out.extend(_legends(v))
    elif isinstance(spec, list):
        for v in spec:
            out.extend(_legends(v))
    return out


def test_p50_is_solid_and_p25_dashed_on_every_chart_with_a_legend_that_draws_the_dash():
    t = pd.DataFrame(
        {
            "month": pd.to_datetime(["2024-01-01"]),
            "cluster": ["a"],
            "p25_cores_per_gpu": [1.0],
            "p50_cores_per_gpu": [2.0],
            "jobs": [50],
        }
    )
    for chart in (charts.trend_chart(t), charts.ratio_histogram(DIST, quantiles=QUANT)):
        spec = chart.to_dict()
        text = str(spec)
        assert "'domain': ['P50', 'P25'], 'range': [[1, 0], [6, 3]]" in text
        dash_legends = [lg for lg in _legends(spec) if lg.get("title") == "percentile"]
        assert dash_legends and all(lg["symbolType"] == "stroke" for lg in dash_legends)


def test_legends_and_bar_labels_have_no_length_limit():
    runs = pd.DataFrame(
        {
            "cores_per_gpu": [1.0, 2.0],
            "ttft_ms": [5.0, 3.0],
            "series": ["H200 · Llama-3.1-8B · 1 GPU · 8 rps · unique"] * 2,
        }
    )
    spec = charts.bench_curves_chart(runs).to_dict()
    assert all(lg["labelLimit"] == 0 for lg in _legends(spec))
    bars = charts.top_bar_chart(
        pd.DataFrame({"n": ["x" * 80], "v": [1.0]}), name="n", value="v", title="t"
    ).to_dict()
    assert bars["encoding"]["y"]["axis"]["labelLimit"] == 0


def test_months_with_few_jobs_are_faded_off_the_lines_and_carry_their_count():
    t = pd.DataFrame(
        {
            "month": pd.to_datetime(["2024-01-01", "2024-02-01"]),
            "cluster": ["a", "a"],
            "p25_cores_per_gpu": [1.0, 1.0],
            "p50_cores_per_gpu": [2.0, 2.0],
            "jobs": [5, 500],
        }
    )
    spec = _spec(charts.trend_chart(t, min_jobs=30))
    rows = [r for d in _datasets(spec) for r in d]
    assert {(r["jobs"], r["few_jobs"]) for r in rows} == {(5, True), (500, False)}
    lines, points = spec["layer"]
    assert lines["mark"]["type"] == "line" and lines["transform"] == [{"filter": "!datum.few_jobs"}]
    assert points["mark"]["type"] == "point" and "transform" not in points
    assert points["encoding"]["opacity"]["condition"]["test"] == "datum.few_jobs"
    assert {"field": "jobs", "type": "quantitative", "format": ","} in points["encoding"]["tooltip"]


def test_the_dash_legend_draws_its_strokes():
    vlc = pytest.importorskip("vl_convert", reason="vl-convert-python is a declared dependency")
    t = pd.DataFrame(
        {
            "month": pd.to_datetime(["2024-01-01", "2024-02-01"]),
            "cluster": ["a", "a"],
            "p25_cores_per_gpu": [1.0, 1.0],
            "p50_cores_per_gpu": [2.0, 2.0],
            "jobs": [50, 50],
        }
    )
    for chart in (
        charts.trend_chart(t, min_jobs=30),
        charts.ratio_histogram(DIST, quantiles=QUANT),
    ):
        svg = vlc.vegalite_to_svg(chart.to_dict())
        dashes = re.findall(r'<path[^>]*d="M-5,0L5,0"[^>]*>', svg)
        assert dashes and all('stroke="' in d for d in dashes), dashes


def test_share_below_panels_follow_the_order_given():
    shares = pd.DataFrame(
        {
            "gpu_type": ["A100", "H100"],
            "threshold_cores_per_gpu": [1.0, 1.0],
            "share_jobs": [0.1, 0.2],
            "share_gpu_hours": [0.1, 0.2],
        }
    )
    spec = charts.share_below_chart(shares, order=["H100", "A100"]).to_dict()
    assert spec["facet"]["column"]["sort"] == ["H100", "A100"]


def _colour_scales(node) -> list[dict]:
    """Every colour scale with a domain in a spec (any depth)."""
    out = []
    if isinstance(node, dict):
        scale = node.get("color", {}).get("scale") if isinstance(node.get("color"), dict) else None
        if isinstance(scale, dict) and "domain" in scale:
            out.append(scale)
        for v in node.values():
            out.extend(_colour_scales(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_colour_scales(v))
    return out


def test_a_gpu_type_has_one_colour_on_every_chart_whatever_else_is_drawn():
    trend = pd.DataFrame(
        {
            "month": ["2024-01", "2024-01"],
            "gpu_type": ["A100", "Zorblax9"],
            "p25_cores_per_gpu": [1.0, 2.0],
            "p50_cores_per_gpu": [2.0, 4.0],
            "share_jobs_below": [0.5, 0.2],
            "share_gpu_hours_below": [0.4, 0.1],
            "jobs": [40, 40],
        }
    )
    specs = [
        _spec(charts.ratio_ecdf(DIST, quantiles=QUANT)),
        _spec(charts.ratio_histogram(DIST, quantiles=QUANT)),
        _spec(charts.trend_chart(trend, group="gpu_type")),
        _spec(charts.share_trend_chart(trend, group="gpu_type", threshold_cores_per_gpu=2.0)),
    ]
    seen: dict[str, set[str]] = {}
    for spec in specs:
        scales = _colour_scales(spec)
        assert scales, "a chart of GPU types without its colour scale"
        for scale in scales:
            for name, colour in zip(scale["domain"], scale["range"], strict=True):
                seen.setdefault(name, set()).add(colour)
    assert {k: len(v) for k, v in seen.items()} == {"H100": 1, "A100": 1, "Zorblax9": 1}
    assert seen["H100"] == {charts.gpu_type_colour("H100")} != seen["A100"]
    assert charts.gpu_type_colour("Zorblax9") == charts.gpu_type_colour("Zorblax9")


def _titles(node) -> list[str]:
    """Every axis, legend and tooltip title a spec shows (a field without a title shows its
    own name)."""
    out = []
    if isinstance(node, dict):
        legend = node.get("legend")
        titled = "title" in node or (isinstance(legend, dict) and "title" in legend)
        if "field" in node and "type" in node and not titled and "aggregate" not in node:
            out.append(str(node["field"]))
        if isinstance(node.get("title"), str):
            out.append(node["title"])
        for k, v in node.items():
            if k not in ("data", "datasets", "transform", "scale", "sort", "detail"):
                out.extend(_titles(v))
    elif isinstance(node, list):
        for v in node:
            out.extend(_titles(v))
    return out


@pytest.mark.parametrize("weight", ["jobs", "gpu_hours"])
def test_the_distribution_charts_name_no_raw_field(weight):
    for chart in (
        charts.ratio_ecdf(DIST, weight=weight, quantiles=QUANT),
        charts.ratio_histogram(DIST, weight=weight, quantiles=QUANT),
    ):
        titles = _titles(_spec(chart))
        assert not [t for t in titles if t in ("gpu_type", "gpu_hours", "cum_share")], titles


def test_the_top_bar_chart_tooltips_name_no_raw_field():
    rows = pd.DataFrame(
        {"label": ["a", "b"], "gpu_hours_lost": [3.0, 1.0], "gpu_hours_below": [5.0, 2.0]}
    )
    spec = _spec(
        charts.top_bar_chart(
            rows, name="label", value="gpu_hours_lost", title="lost", tooltip=("gpu_hours_below:Q",)
        )
    )
    titles = [t["title"] for t in spec["encoding"]["tooltip"]]
    assert titles == ["who", "lost", "GPU-hours below target"]


ANSWER = pd.DataFrame({"gpu_type": ["H100", "A100"], "cores_per_gpu": [4.0, 2.0]})


def test_the_distributions_draw_the_recommendation_in_each_types_panel_and_line():
    """Issue 39 item 7: the answer was not on the distributions it is about."""
    spec = _spec(charts.ratio_histogram(DIST, quantiles=QUANT, recommended=ANSWER))
    answer = spec["spec"]["layer"][-1]
    assert answer["mark"] == {"type": "rule", "color": charts.RECOMMENDED_COLOUR, "size": 3}
    rows = [r for d in _datasets(spec) for r in d if r["layer"] == "recommended"]
    assert {(r["gpu_type"], r["cores_per_gpu"]) for r in rows} == {("H100", 4.0), ("A100", 2.0)}
    ecdf = _spec(charts.ratio_ecdf(DIST, quantiles=QUANT, recommended=ANSWER))
    assert [layer["mark"]["type"] for layer in ecdf["layer"]] == ["line", "point", "point"]
    marked = [r for d in _datasets(ecdf) for r in d if "cum_share" in r and "jobs" not in r]
    at = {r["gpu_type"]: r["cum_share"] for r in marked if "quantile" not in r}
    # H100: 10 + 5 + 3 of 20 jobs at or below 4 cores; A100: its one job with cores, at 1
    assert at == pytest.approx({"H100": 0.9, "A100": 1.0})


def test_one_months_trend_gets_an_axis_of_three_ticks_not_a_pile():
    one = pd.DataFrame(
        {
            "month": ["2024-03-01"],
            "cluster": ["c"],
            "p25_cores_per_gpu": [1.0],
            "p50_cores_per_gpu": [1.0],
            "jobs": [1],
        }
    )
    spec = _spec(charts.trend_chart(one))
    y = spec["layer"][0]["encoding"]["y"]
    assert y["scale"] == {"type": "log", "base": 2, "domain": [0.5, 2.0]}
    assert y["axis"]["values"] == [0.5, 1.0, 2.0]


def test_small_values_on_a_bar_chart_read_with_their_decimals():
    rows = pd.DataFrame({"who": ["a", "b", "c"], "lost": [0.2, 0.45, 1.3]})
    spec = _spec(charts.top_bar_chart(rows, name="who", value="lost", title="lost"))
    assert spec["encoding"]["x"]["axis"]["format"] == ",.2~f"
    big = pd.DataFrame({"who": ["a"], "lost": [1200.0]})
    spec = _spec(charts.top_bar_chart(big, name="who", value="lost", title="lost"))
    assert spec["encoding"]["x"]["axis"]["format"] == ",.0f"


def test_a_slowdown_axis_shows_one():
    curve = pd.DataFrame(
        {
            "cores_per_gpu": [1.0, 2.0, 4.0],
            "slowdown": [2.0, 1.2, 1.0],
            "low": [1.5, 1.1, 1.0],
            "high": [3.0, 1.4, 1.0],
        }
    )
    spec = _spec(charts.ttft_curve_chart(curve, value="slowdown", low="low", high="high"))
    assert 1 in spec["layer"][1]["encoding"]["y"]["axis"]["values"]


def test_the_wait_curve_has_each_role_its_band_the_max_wait_rule_and_the_answer():
    curve = [
        {"cores": 3, "engine_core": {"wait": 0.4, "low": 0.3, "high": 0.5},
         "api_server": {"wait": 0.2, "low": 0.1, "high": 0.3}},
        {"cores": 4, "engine_core": {"wait": 0.1, "low": 0.05, "high": 0.2},
         "api_server": {"wait": 0.05, "low": 0.02, "high": 0.1}},
    ]  # fmt: skip
    frame = charts.wait_curve_frame(curve, gpus=2)
    assert list(frame["cores_per_gpu"]) == [1.5, 1.5, 2.0, 2.0]
    assert list(frame["role"]) == ["engine core", "api server"] * 2
    spec = _spec(charts.wait_curve_chart(frame, 0.15, recommended_cores_per_gpu=2))
    rows = [r for d in _datasets(spec) for r in d]
    assert [r["max_wait"] for r in rows if "max_wait" in r] == [0.15]
    assert [r["answer"] for r in rows if "answer" in r] == [2.0]
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["area", "line", "rule", "rule"]
