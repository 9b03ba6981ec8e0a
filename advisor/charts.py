"""Chart builders shared by the dashboard and the monthly report: plain functions returning altair.

Each builder takes a small, already aggregated ``pandas.DataFrame`` (columns named below, units
in the names) and returns an ``alt.Chart`` (or a layered/concatenated chart); nothing here runs
a query. CPU-per-GPU ratios are drawn on a base-2 log axis, because the values that matter
(0.25, 1, 2, 8 cores per GPU) are powers of two apart.

Column conventions:

- distribution: ``gpu_type``, ``cores_per_gpu``, ``jobs``, ``gpu_hours`` (one row per distinct
  ratio value, or per bin, of one GPU type)
- quantiles: ``gpu_type``, ``p25_cores_per_gpu``, ``p50_cores_per_gpu``
- fair share: ``gpu_type``, ``fair_cores_per_gpu``
- shares below thresholds: ``gpu_type``, ``threshold_cores_per_gpu``, ``share_jobs``,
  ``share_gpu_hours`` (fractions 0-1)
- trends: ``month``, a group column, ``p25_cores_per_gpu``, ``p50_cores_per_gpu``
- TTFT curve: ``cores_per_gpu``, ``ttft_ms``, ``ttft_low_ms``, ``ttft_high_ms`` (or any value
  and band columns named in the call, e.g. the model's ``slowdown``)
- TTFT points: ``cores_per_gpu``, the same value column, ``source``
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import altair as alt
import pandas as pd

RATIO_AXIS_TITLE = "CPU cores per GPU (log scale)"
AnyChart = alt.Chart | alt.LayerChart | alt.VConcatChart | alt.FacetChart
"""What the builders return: something ``st.altair_chart`` and ``vl_convert`` both accept."""

_LOG2 = alt.Scale(type="log", base=2)
# Ticks at powers of two only: 0.25, 1, 8 cores per GPU are the values people talk about.
_RATIO_AXIS = alt.Axis(values=[2.0**k for k in range(-4, 9)], format="~g")
_MAX_PANELS = 12
RECOMMENDED_COLOUR = "#2ca02c"  # the answer, on every chart that draws it
# One convention on every chart: P50 solid, P25 dashed, and the legend draws the dash.
QUANTILE_DASH = alt.Scale(domain=["P50", "P25"], range=[[1, 0], [6, 3]])
# Labels are never cut to "H200 · Llama-3.1-8B · 1 G…": no limit on legend or axis labels.
_LEGEND: dict[str, Any] = {"labelLimit": 0, "titleLimit": 0}


def _legend(title: str | None = None, **kw: Any) -> alt.Legend:
    # the symbol's colour is set: a legend merged from lines and points would draw none
    return alt.Legend(
        title=title,
        symbolType="stroke",
        symbolStrokeWidth=2,
        symbolStrokeColor="#444",
        **_LEGEND,
        **kw,
    )


# What a column is called on a chart (axis, legend, tooltip): never the raw field name.
FIELD_TITLES = {
    "gpu_type": "GPU type",
    "gpu_hours": "GPU-hours",
    "jobs": "jobs",
    "cluster": "cluster",
    "partition": "partition",
    "account": "account",
    "user": "user",
    "cores_per_gpu": "cores/GPU",
    "gpu_hours_below": "GPU-hours below target",
    "gpu_hours_lost": "GPU-hours lost (est.)",
    "flag": "submit with",
    "example_source": "first seen in",
    "example_line_no": "at line",
    "records": "records",
    "label": "who",
}


def field_title(name: str) -> str:
    """A column's name for people on a chart (``gpu_hours`` -> "GPU-hours")."""
    return FIELD_TITLES.get(name, name.replace("_", " "))


# One colour per GPU type on every chart (Overview, Trends, the report): the known families have
# their own, and any other name gets one of the spare colours by a stable hash of its name.
GPU_TYPE_COLOURS = {
    "H100": "#1f77b4",
    "A100": "#ff7f0e",
    "H200": "#2ca02c",
    "B200": "#d62728",
    "L40S": "#9467bd",
    "L4": "#8c564b",
    "A10G": "#e377c2",
    "V100": "#bcbd22",
    "MI300X": "#17becf",
    "GH200": "#393b79",
    "(untyped)": "#7f7f7f",
}
_SPARE_COLOURS = ("#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354")


def gpu_type_colour(name: str) -> str:
    """The colour of one GPU type, the same on every chart and in every run."""
    if name in GPU_TYPE_COLOURS:
        return GPU_TYPE_COLOURS[name]
    h = 0
    for ch in name:  # not hash(): Python salts it per process
        h = (h * 31 + ord(ch)) % 1_000_003
    return _SPARE_COLOURS[h % len(_SPARE_COLOURS)]


def gpu_type_scale(types: Sequence[str]) -> alt.Scale:
    """The colour scale of these GPU types (:func:`gpu_type_colour` for each)."""
    names = list(dict.fromkeys(types))
    return alt.Scale(domain=names, range=[gpu_type_colour(t) for t in names])


def group_colour(group: str, values: Sequence[str], legend: alt.Legend) -> alt.Color:
    """The colour channel of a ``group`` column: GPU types in their own colours."""
    if group == "gpu_type":
        return alt.Color(f"{group}:N", scale=gpu_type_scale(values), legend=legend)
    return alt.Color(f"{group}:N", legend=legend)


# A layer's rows told apart by a ``layer`` column; the histogram's previous month is ``prev``.
_PREV = "datum.layer == 'prev'"


def _ratio_scale(values: pd.Series) -> tuple[alt.Scale, alt.Axis]:
    """A log-2 cores-per-GPU scale spanning ``values`` from one power of two below to one
    above, with a tick at each power of two inside: one value (one job) still gets an axis of
    three ticks instead of every tick piled on one point."""
    v = values[values > 0].astype(float)
    if v.empty:
        return _LOG2, _RATIO_AXIS
    lo = 2.0 ** math.floor(math.log2(float(v.min())))
    hi = 2.0 ** math.ceil(math.log2(float(v.max())))
    if hi <= lo:
        lo, hi = lo / 2.0, hi * 2.0
    ticks = [2.0**k for k in range(-8, 12) if lo <= 2.0**k <= hi]
    return alt.Scale(type="log", base=2, domain=[lo, hi]), alt.Axis(values=ticks, format="~g")


def _when(test: str, value: Any) -> dict[str, Any]:
    """A channel's value when ``test`` holds. Typed channel values (``alt.OpacityValue(v,
    condition=...)``) instead of ``alt.condition``/``alt.value`` and shorthand strings: altair
    searches its schema to turn those into objects, which made building a chart cost several
    times drawing it."""
    return {"test": test, "value": value}


def _ratio_bins(values: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Power-of-two bins: a ratio r falls in [2^floor(log2 r), 2^(floor(log2 r)+1))."""
    lo = values.map(lambda r: 2.0 ** math.floor(math.log2(r)))
    return lo, lo * 2.0


def binned_distribution(dist: pd.DataFrame, weight: str = "jobs") -> pd.DataFrame:
    """Shares per GPU type in power-of-two ratio bins (``bin_lo``, ``bin_hi``, ``share``).

    ``weight`` is ``jobs`` or ``gpu_hours``; rows with a ratio <= 0 are left out (no CPUs).
    GPU types keep the order they first appear in (the histogram's panel order).
    """
    _check_weight(weight)
    d = dist[dist["cores_per_gpu"] > 0].copy()
    if d.empty:
        return pd.DataFrame(columns=["gpu_type", "bin_lo", "bin_hi", weight, "share"])
    d["bin_lo"], d["bin_hi"] = _ratio_bins(d["cores_per_gpu"].astype(float))
    g = d.groupby(["gpu_type", "bin_lo", "bin_hi"], as_index=False, sort=False)[weight].sum()
    g["_order"] = g["gpu_type"].map({t: i for i, t in enumerate(dict.fromkeys(d["gpu_type"]))})
    g = g.sort_values(["_order", "bin_lo"]).drop(columns="_order").reset_index(drop=True)
    totals = g.groupby("gpu_type")[weight].transform("sum")
    g["share"] = (g[weight] / totals).where(totals > 0, 0.0)
    return g


def ecdf(dist: pd.DataFrame, weight: str = "jobs") -> pd.DataFrame:
    """Cumulative share of ``weight`` at or below each ratio, per GPU type (``cum_share``)."""
    _check_weight(weight)
    d = dist[dist["cores_per_gpu"] > 0]
    d = d.groupby(["gpu_type", "cores_per_gpu"], as_index=False)[weight].sum()
    d = d.sort_values(["gpu_type", "cores_per_gpu"])
    totals = d.groupby("gpu_type")[weight].transform("sum")
    d["cum_share"] = (d.groupby("gpu_type")[weight].cumsum() / totals).where(totals > 0, 0.0)
    return d.reset_index(drop=True)


def _check_weight(weight: str) -> None:
    if weight not in ("jobs", "gpu_hours"):
        raise ValueError(f"weight must be 'jobs' or 'gpu_hours', not {weight!r}")


def _quantile_long(quantiles: pd.DataFrame | None) -> pd.DataFrame:
    if quantiles is None or quantiles.empty:
        return pd.DataFrame(columns=["gpu_type", "quantile", "cores_per_gpu"])
    q = quantiles.melt(
        id_vars=["gpu_type"],
        value_vars=["p25_cores_per_gpu", "p50_cores_per_gpu"],
        var_name="quantile",
        value_name="cores_per_gpu",
    )
    q["quantile"] = q["quantile"].map({"p25_cores_per_gpu": "P25", "p50_cores_per_gpu": "P50"})
    return q[q["cores_per_gpu"].notna() & (q["cores_per_gpu"] > 0)]


def ratio_histogram(
    dist: pd.DataFrame,
    *,
    weight: str = "jobs",
    quantiles: pd.DataFrame | None = None,
    fair_share: pd.DataFrame | None = None,
    previous: pd.DataFrame | None = None,
    previous_label: str = "month before",
    recommended: pd.DataFrame | None = None,
    width: int = 560,
    height: int = 140,
) -> AnyChart:
    """One histogram panel per GPU type (rows, in the order the types first appear): share of
    jobs (or GPU-hours) per power-of-two bin, with P50/P25 as solid/dashed red rules and the
    node types' fair share as a grey dotted rule.

    ``previous`` (a distribution like ``dist``, e.g. the month before) is overlaid as outlined
    bars, so a comparison the title promises is on the chart. ``recommended`` (``gpu_type``,
    ``cores_per_gpu``) draws the answer as a green rule in each type's panel.

    Built as one faceted, layered chart over a single table (a ``layer`` column tells bars,
    quantiles and fair shares apart): a few chart objects whatever the number of GPU types.
    """
    bins = binned_distribution(dist, weight)
    order = list(dict.fromkeys(bins["gpu_type"]))[:_MAX_PANELS]
    parts = [bins[bins["gpu_type"].isin(order)].assign(layer="bin")]
    q = _quantile_long(quantiles)
    if not q.empty:
        parts.append(q[q["gpu_type"].isin(order)].assign(layer="quantile"))
    if fair_share is not None and not fair_share.empty:
        f = fair_share[fair_share["gpu_type"].isin(order) & (fair_share["fair_cores_per_gpu"] > 0)]
        parts.append(f.rename(columns={"fair_cores_per_gpu": "cores_per_gpu"}).assign(layer="fair"))
    if previous is not None and not previous.empty:
        prev = binned_distribution(previous, weight)
        parts.append(prev[prev["gpu_type"].isin(order)].assign(layer="prev"))
    if recommended is not None and not recommended.empty:
        r = recommended[recommended["gpu_type"].isin(order) & (recommended["cores_per_gpu"] > 0)]
        parts.append(r[["gpu_type", "cores_per_gpu"]].assign(layer="recommended"))
    data = pd.concat(parts, ignore_index=True)
    return _histogram_chart(weight, tuple(order), width, height).properties(data=data)


@functools.lru_cache(maxsize=64)
def _histogram_chart(weight: str, order: tuple[str, ...], width: int, height: int) -> AnyChart:
    """:func:`ratio_histogram`'s chart without its data. The same for every filter that keeps
    these GPU types, so it is built once: building it costs more than the rest of the
    histogram. The caller sets the data on a copy; the cached chart is never changed."""
    base = alt.Chart()
    bars = (
        # this month's bars filled; the month before (``previous``) as dashed outlines in the
        # same layer (a layer of its own would be empty in some panels, and vega warns)
        base.mark_bar()
        .encode(
            fillOpacity=alt.FillOpacityValue(0.8, condition=_when(_PREV, 0)),
            stroke=alt.StrokeValue("white", condition=_when(_PREV, "#222")),
            strokeDash=alt.StrokeDashValue([1, 0], condition=_when(_PREV, [4, 2])),
            strokeWidth=alt.StrokeWidthValue(1, condition=_when(_PREV, 1.5)),
            color=alt.Color(
                "gpu_type:N", scale=gpu_type_scale(order), legend=None, title="GPU type"
            ),
            x=alt.X("bin_lo:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS),
            x2=alt.X2("bin_hi"),
            y=alt.Y(
                "share:Q",
                axis=alt.Axis(format="%"),
                title=f"share of {field_title(weight)}",
                scale=alt.Scale(zero=True),
            ),
            y2=alt.Y2Datum(0),  # with x and x2 set, a bar needs y2 to rise from the axis
            tooltip=[
                alt.Tooltip("bin_lo:Q", title="from cores/GPU"),
                alt.Tooltip("bin_hi:Q", title="below cores/GPU"),
                alt.Tooltip(f"{weight}:Q", format=",.0f", title=field_title(weight)),
                alt.Tooltip("share:Q", format=".1%"),
            ],
        )
        .transform_filter("datum.layer == 'bin' || datum.layer == 'prev'")
    )
    rules = (
        base.mark_rule(color="#d62728", size=2)
        .encode(
            x=alt.X("cores_per_gpu:Q"),
            strokeDash=alt.StrokeDash(
                "quantile:N", scale=QUANTILE_DASH, legend=_legend("percentile")
            ),
            tooltip=[
                alt.Tooltip("quantile:N", title="percentile"),
                alt.Tooltip("cores_per_gpu:Q", format=".3~g", title="cores/GPU"),
            ],
        )
        .transform_filter(alt.datum.layer == "quantile")
    )
    fair = (
        base.mark_rule(color="#555", size=2, strokeDash=[2, 2])
        .encode(
            x=alt.X("cores_per_gpu:Q"),
            tooltip=[alt.Tooltip("cores_per_gpu:Q", title="fair share", format=".1f")],
        )
        .transform_filter(alt.datum.layer == "fair")
    )
    answer = (
        base.mark_rule(color=RECOMMENDED_COLOUR, size=3)
        .encode(
            x=alt.X("cores_per_gpu:Q"),
            tooltip=[alt.Tooltip("cores_per_gpu:Q", title="recommended cores/GPU", format="~g")],
        )
        .transform_filter(alt.datum.layer == "recommended")
    )
    return (
        alt.layer(bars, rules, fair, answer, data=alt.InlineData(values=[]))  # set by the caller
        .properties(width=width, height=height)
        .facet(
            row=alt.Row(
                "gpu_type:N",
                sort=list(order),
                title=None,
                header=alt.Header(labelAngle=0, labelAlign="left", labelFontWeight="bold"),
            )
        )
        .resolve_scale(y="independent")
    )


def ratio_ecdf(
    dist: pd.DataFrame,
    *,
    weight: str = "jobs",
    quantiles: pd.DataFrame | None = None,
    recommended: pd.DataFrame | None = None,
    width: int = 560,
    height: int = 320,
) -> AnyChart:
    """Cumulative share of jobs (or GPU-hours) at or below each ratio, one line per GPU type
    (coloured in the order the types first appear, as the histogram's panels), with the P25/P50
    points marked; every line runs on at 100% to the axis's right end (a power of two past the
    largest value), and ``recommended`` (``gpu_type``, ``cores_per_gpu``) marks each type's
    answer on its line."""
    order = list(dict.fromkeys(dist["gpu_type"]))
    e = ecdf(dist, weight)
    if not e.empty:
        edge = 2.0 ** (math.floor(math.log2(float(e["cores_per_gpu"].max()))) + 1)
        ends = pd.DataFrame({"gpu_type": order, "cores_per_gpu": edge, "cum_share": 1.0})
        e = pd.concat([e, ends.assign(**{weight: 0.0})], ignore_index=True)
    lines = (
        alt.Chart(e)
        .mark_line(interpolate="step-after", point=False)
        .encode(
            x=alt.X("cores_per_gpu:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS),
            y=alt.Y(
                "cum_share:Q",
                axis=alt.Axis(format="%"),
                title=f"share of {field_title(weight)} at or below",
            ),
            color=alt.Color(
                "gpu_type:N", sort=order, scale=gpu_type_scale(order), legend=_legend("GPU type")
            ),
            tooltip=[
                alt.Tooltip("gpu_type:N", title="GPU type"),
                alt.Tooltip("cores_per_gpu:Q", format=".3~g", title="cores/GPU"),
                alt.Tooltip("cum_share:Q", format=".1%", title="share at or below"),
            ],
        )
    )
    layers: list[alt.Chart] = [lines]
    q = _quantile_long(quantiles)
    if not q.empty:
        q = q.assign(cum_share=q["quantile"].map({"P25": 0.25, "P50": 0.5}))
        layers.append(
            alt.Chart(q)
            .mark_point(filled=True, size=80, shape="diamond")
            .encode(
                x=alt.X("cores_per_gpu:Q", title=RATIO_AXIS_TITLE),
                y=alt.Y("cum_share:Q", title=f"share of {field_title(weight)} at or below"),
                color=alt.Color(
                    "gpu_type:N", sort=order, scale=gpu_type_scale(order), title="GPU type"
                ),
                tooltip=[
                    alt.Tooltip("gpu_type:N", title="GPU type"),
                    alt.Tooltip("quantile:N", title="percentile"),
                    alt.Tooltip("cores_per_gpu:Q", format=".2f", title="cores/GPU"),
                ],
            )
        )
    if recommended is not None and not recommended.empty and not e.empty:
        r = recommended[recommended["gpu_type"].isin(order) & (recommended["cores_per_gpu"] > 0)]
        # each answer where its type's line is: the share at or below the recommended cores
        at = []
        for t, c in zip(r["gpu_type"], r["cores_per_gpu"], strict=True):
            below = e[(e["gpu_type"] == t) & (e["cores_per_gpu"] <= c)]["cum_share"]
            at.append(float(below.max()) if len(below) else 0.0)
        r = r.assign(cum_share=at)
        layers.append(
            alt.Chart(r)
            .mark_point(filled=False, size=160, shape="circle", strokeWidth=3)
            .encode(
                x=alt.X("cores_per_gpu:Q"),
                y=alt.Y("cum_share:Q"),
                color=alt.ColorValue(RECOMMENDED_COLOUR),
                tooltip=[
                    alt.Tooltip("gpu_type:N", title="GPU type"),
                    alt.Tooltip("cores_per_gpu:Q", format="~g", title="recommended cores/GPU"),
                    alt.Tooltip("cum_share:Q", format=".1%", title="share below or at it"),
                ],
            )
        )
    return alt.layer(*layers).properties(width=width, height=height)


def share_below_chart(
    shares: pd.DataFrame,
    *,
    order: Sequence[str] | None = None,
    width: int = 140,
    height: int = 200,
) -> AnyChart:
    """Share of jobs and of GPU-hours below each threshold, one panel per GPU type (in
    ``order``, else as they first appear: the histogram's order)."""
    facet_order = list(order) if order is not None else list(dict.fromkeys(shares["gpu_type"]))
    long = shares.melt(
        id_vars=["gpu_type", "threshold_cores_per_gpu"],
        value_vars=["share_jobs", "share_gpu_hours"],
        var_name="weighted_by",
        value_name="share",
    )
    long["weighted_by"] = long["weighted_by"].map(
        {"share_jobs": "jobs", "share_gpu_hours": "GPU-hours"}
    )
    long["threshold"] = "< " + long["threshold_cores_per_gpu"].map(lambda t: f"{t:g}")
    order = [f"< {t:g}" for t in sorted(shares["threshold_cores_per_gpu"].unique())]
    return (
        alt.Chart(long)
        .mark_bar()
        .encode(
            x=alt.X("threshold:N", sort=order, title="cores per GPU", axis=alt.Axis(labelAngle=0)),
            xOffset=alt.XOffset("weighted_by:N"),
            y=alt.Y(
                "share:Q",
                axis=alt.Axis(format="%"),
                scale=alt.Scale(domain=[0, 1]),
                title="share below",
            ),
            color=alt.Color("weighted_by:N", legend=alt.Legend(title="weighted by", **_LEGEND)),
            tooltip=[
                alt.Tooltip("gpu_type:N", title="GPU type"),
                alt.Tooltip("threshold:N", title="cores per GPU"),
                alt.Tooltip("weighted_by:N", title="weighted by"),
                alt.Tooltip("share:Q", format=".1%"),
            ],
        )
        .properties(width=width, height=height)
        .facet(
            column=alt.Column(
                "gpu_type:N",
                title=None,
                sort=facet_order,
                header=alt.Header(labelFontWeight="bold", labelLimit=0),
            )
        )
    )


def trend_chart(
    trends: pd.DataFrame,
    *,
    group: str = "cluster",
    min_jobs: int = 0,
    width: int = 620,
    height: int = 300,
) -> AnyChart:
    """P50 (solid) and P25 (dashed) cores per GPU by month, one colour per ``group`` value.

    With a ``jobs`` column, months with fewer than ``min_jobs`` jobs are left out of the lines
    and drawn as faded points (their percentiles rest on few jobs: the page names them with
    their counts); every tooltip carries the count."""
    long = _months_long(
        trends,
        group,
        min_jobs,
        {"p25_cores_per_gpu": "P25", "p50_cores_per_gpu": "P50"},
        var_name="quantile",
        value_name="cores_per_gpu",
    )
    long = long[long["cores_per_gpu"].notna() & (long["cores_per_gpu"] > 0)]
    y_scale, y_axis = _ratio_scale(long["cores_per_gpu"])
    base = alt.Chart(long).encode(
        x=alt.X("month:T", title="month", timeUnit="yearmonth"),
        y=alt.Y("cores_per_gpu:Q", scale=y_scale, title=RATIO_AXIS_TITLE, axis=y_axis),
        color=group_colour(
            group, list(long[group].astype(str)), alt.Legend(title=field_title(group), **_LEGEND)
        ),
        strokeDash=alt.StrokeDash("quantile:N", scale=QUANTILE_DASH, legend=_legend("percentile")),
        detail=alt.Detail("quantile:N"),
        tooltip=[
            alt.Tooltip("month:T", format="%Y-%m"),
            alt.Tooltip(f"{group}:N", title=field_title(group)),
            alt.Tooltip("quantile:N", title="percentile"),
            alt.Tooltip("cores_per_gpu:Q", format=".3~g", title="cores/GPU"),
            alt.Tooltip("jobs:Q", format=","),
        ],
    )
    return _with_faded_months(base, width, height)


def _months_long(
    trends: pd.DataFrame,
    group: str,
    min_jobs: int,
    columns: dict[str, str],
    *,
    var_name: str,
    value_name: str,
) -> pd.DataFrame:
    """``trends`` (one row per month and ``group``) as one row per month, group and column of
    ``columns`` (named by its value in ``var_name``), with ``few_jobs`` set where the month has
    fewer than ``min_jobs`` jobs (every month counts when there is no ``jobs`` column)."""
    trends = trends.copy()
    if "jobs" not in trends.columns:
        trends["jobs"] = min_jobs
    trends["few_jobs"] = trends["jobs"] < min_jobs
    long = trends.melt(
        id_vars=["month", group, "jobs", "few_jobs"],
        value_vars=list(columns),
        var_name=var_name,
        value_name=value_name,
    )
    long[var_name] = long[var_name].map(columns)
    return long


def _with_faded_months(base: alt.Chart, width: int, height: int) -> AnyChart:
    """Lines through the months with enough jobs; every month as a point, faded (and off the
    lines) when it has few jobs. The points carry no dash of their own: a dash field on a point
    layer would leave the dash legend without strokes."""
    lines = base.transform_filter("!datum.few_jobs").mark_line()
    points = base.mark_point(filled=True, size=30).encode(
        strokeDash=alt.StrokeDashValue([1, 0]),
        opacity=alt.OpacityValue(1.0, condition=_when("datum.few_jobs", 0.3)),
    )
    return alt.layer(lines, points).properties(width=width, height=height)


def top_bar_chart(
    rows: pd.DataFrame,
    *,
    name: str,
    value: str,
    title: str,
    tooltip: Sequence[str] = (),
    limit: int = 20,
    width: int = 560,
) -> AnyChart:
    """Horizontal bars of the ``limit`` rows with the largest ``value``, largest on top."""
    top = rows.nlargest(limit, value)
    # whole numbers from 10 on; below, decimals, so that small values do not read "0 0 0 1 1"
    small = bool(len(top)) and float(top[value].max()) < 10
    fmt = ",.2~f" if small else ",.0f"
    return (
        alt.Chart(top)
        .mark_bar()
        .encode(
            y=alt.Y(f"{name}:N", sort="-x", title=None, axis=alt.Axis(labelLimit=0)),
            x=alt.X(f"{value}:Q", title=title, axis=alt.Axis(format=fmt, tickCount=5)),
            tooltip=[
                alt.Tooltip(f"{name}:N", title=field_title(name)),
                alt.Tooltip(f"{value}:Q", format=fmt, title=title or field_title(value)),
                *(alt.Tooltip(t, title=field_title(t.split(":")[0])) for t in tooltip),
            ],
        )
        .properties(width=width, height=alt.Step(22))
    )


def ttft_curve_chart(
    curve: pd.DataFrame,
    points: pd.DataFrame | None = None,
    *,
    recommended_cores_per_gpu: float | None = None,
    current_cores_per_gpu: float | None = None,
    value: str = "ttft_ms",
    low: str = "ttft_low_ms",
    high: str = "ttft_high_ms",
    y_title: str = "TTFT (ms, log)",
    width: int = 620,
    height: int = 320,
) -> AnyChart:
    """Predicted TTFT (or its slowdown, with ``value="slowdown"``) against cores per GPU: the
    interval (``low``..``high``) as a band, the prediction as a line, calibration points (with a
    ``source`` column and the same ``value`` column) as dots, the recommendation as a green rule
    and the current allocation as an orange dashed one, each labelled at the top."""
    y_scale = alt.Scale(type="log")
    # a slowdown's log axis shows 1 (no slowdown) and the round values above it
    y_axis = (
        alt.Axis(values=[1, 1.25, 1.5, 2, 3, 4, 6, 8, 10, 15, 20, 30, 50], format="~g")
        if value == "slowdown"
        else alt.Axis(format="~s")
    )
    base = alt.Chart(curve).encode(
        x=alt.X("cores_per_gpu:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS)
    )
    layers: list[alt.Chart] = []
    if {low, high} <= set(curve.columns):
        layers.append(
            base.mark_area(opacity=0.25, color="#1f77b4").encode(
                y=alt.Y(f"{low}:Q", scale=y_scale, title=y_title, axis=y_axis),
                y2=alt.Y2(f"{high}:Q"),
            )
        )
    layers.append(
        base.mark_line(color="#1f77b4", size=2).encode(
            y=alt.Y(f"{value}:Q", scale=y_scale, title=y_title, axis=y_axis),
            tooltip=[
                alt.Tooltip("cores_per_gpu:Q", format=".3~g", title="cores/GPU"),
                alt.Tooltip(f"{value}:Q", format=",.2f"),
            ],
        )
    )
    if points is not None and not points.empty:
        layers.append(
            alt.Chart(points)
            .mark_point(filled=True, size=60)
            .encode(
                x=alt.X("cores_per_gpu:Q"),
                y=alt.Y(f"{value}:Q"),
                shape=alt.Shape("source:N", legend=alt.Legend(title="calibration", **_LEGEND)),
                color=alt.Color("source:N", legend=alt.Legend(title="calibration", **_LEGEND)),
                tooltip=[
                    alt.Tooltip("source:N"),
                    alt.Tooltip("cores_per_gpu:Q", format=".3~g", title="cores/GPU"),
                    alt.Tooltip(f"{value}:Q", format=",.2f"),
                ],
            )
        )
    marks = []
    if recommended_cores_per_gpu is not None and recommended_cores_per_gpu > 0:
        marks.append((float(recommended_cores_per_gpu), "recommended", RECOMMENDED_COLOUR, [1, 0]))
    if current_cores_per_gpu is not None and current_cores_per_gpu > 0:
        marks.append((float(current_cores_per_gpu), "now", "#ff7f0e", [6, 3]))
    for cores, label, colour, dash in marks:
        rec = pd.DataFrame({"cores_per_gpu": [cores], "label": [f"{label}: {cores:g}"]})
        rule = alt.Chart(rec).encode(
            x=alt.X("cores_per_gpu:Q"),
            tooltip=[alt.Tooltip("cores_per_gpu:Q", title=label, format=".2f")],
        )
        layers.append(rule.mark_rule(color=colour, size=3, strokeDash=dash))
        layers.append(
            rule.mark_text(
                color=colour, align="left", baseline="top", dx=4, dy=2, fontWeight="bold"
            ).encode(text=alt.Text("label:N"), y=alt.YValue(0))
        )
    return alt.layer(*layers).properties(width=width, height=height)


def bench_curves_chart(
    runs: pd.DataFrame,
    fit: pd.DataFrame | None = None,
    *,
    series: str = "series",
    width: int = 620,
    height: int = 320,
) -> AnyChart:
    """Measured TTFT against cores per GPU, one line per ``series`` (platform, model, GPUs,
    load), with the fitted model's curve for the same series dashed when ``fit`` is given."""
    measured = (
        alt.Chart(runs)
        .mark_line(point=True)
        .encode(
            x=alt.X("cores_per_gpu:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS),
            y=alt.Y("ttft_ms:Q", scale=alt.Scale(type="log"), title="victim TTFT P50 (ms, log)"),
            color=alt.Color(f"{series}:N", legend=_legend(None, orient="bottom", columns=1)),
            tooltip=[
                alt.Tooltip(f"{series}:N"),
                alt.Tooltip("cores_per_gpu:Q", format=".3~g", title="cores/GPU"),
                alt.Tooltip("ttft_ms:Q", format=",.0f"),
            ],
        )
    )
    layers: list[alt.Chart] = [measured]
    if {"ttft_min_ms", "ttft_max_ms"} <= set(runs.columns):
        # the repeats' range at each core count: a point alone hides how noisy the runs were
        layers.append(
            alt.Chart(runs)
            .mark_rule(size=2, opacity=0.6)
            .encode(
                x=alt.X("cores_per_gpu:Q"),
                y=alt.Y("ttft_min_ms:Q"),
                y2=alt.Y2("ttft_max_ms:Q"),
                color=alt.Color(f"{series}:N"),
                tooltip=[
                    alt.Tooltip(f"{series}:N"),
                    alt.Tooltip("runs:Q", title="repeats"),
                    alt.Tooltip("ttft_min_ms:Q", format=",.0f", title="fastest (ms)"),
                    alt.Tooltip("ttft_max_ms:Q", format=",.0f", title="slowest (ms)"),
                ],
            )
        )
    if fit is not None and not fit.empty:
        layers.append(
            alt.Chart(fit)
            .mark_line(strokeDash=[5, 3], opacity=0.8)
            .encode(
                x=alt.X("cores_per_gpu:Q"), y=alt.Y("ttft_ms:Q"), color=alt.Color(f"{series}:N")
            )
        )
    return alt.layer(*layers).properties(width=width, height=height)


def loss_trend_chart(
    frame: pd.DataFrame,
    *,
    group: str = "cluster",
    value: str = "gpu_hours_lost",
    y_title: str = "GPU-hours lost (est.)",
    value_format: str = ",.0f",
    width: int = 620,
    height: int = 240,
) -> AnyChart:
    """A loss by month (:func:`advisor.report.trend.loss_by_month` summed per ``group``): the
    point estimate as a line with points, its 90% interval (``<value>_low`` to
    ``<value>_high``) as a band, one colour per group."""
    x = alt.X("month:T", title="month", timeUnit="yearmonth")
    colour = group_colour(
        group, list(frame[group].astype(str)), alt.Legend(title=field_title(group), **_LEGEND)
    )
    base = alt.Chart(frame)
    # one axis title for the band and the line (vega-lite would join the band's field names)
    y = alt.Y(f"{value}:Q", title=y_title, axis=alt.Axis(format="~s"))
    band = base.mark_area(opacity=0.2).encode(
        x=x, y=alt.Y(f"{value}_low:Q", title=y_title), y2=f"{value}_high:Q", color=colour
    )
    line = base.mark_line(point=True).encode(
        x=x,
        y=y,
        color=colour,
        tooltip=[
            alt.Tooltip("month:T", format="%Y-%m"),
            alt.Tooltip(f"{group}:N", title=field_title(group)),
            alt.Tooltip(f"{value}:Q", format=value_format, title=y_title),
            alt.Tooltip(f"{value}_low:Q", format=value_format, title="90% low"),
            alt.Tooltip(f"{value}_high:Q", format=value_format, title="90% high"),
        ],
    )
    return alt.layer(band, line).properties(width=width, height=height)


def pressure_trend_chart(
    frame: pd.DataFrame,
    *,
    group: str = "cluster",
    width: int = 620,
    height: int = 240,
) -> AnyChart:
    """The measured CPU pressure by month (``advisor.pressure.summary.pressure_groups`` by
    month and ``group``): the measured jobs' stall share (PSI some, solid) and the share of the
    GPU-hours measured (dashed), one colour per group."""
    long = frame.melt(
        id_vars=["month", group, "jobs_measured"],
        value_vars=["some_share", "share_measured"],
        var_name="what",
        value_name="share",
    )
    long["what"] = long["what"].map(
        {"some_share": "stalled (some)", "share_measured": "GPU-hours measured"}
    )
    long = long[long["share"].notna()]
    return (
        alt.Chart(long)
        .mark_line(point=True)
        .encode(
            x=alt.X("month:T", title="month", timeUnit="yearmonth"),
            y=alt.Y("share:Q", axis=alt.Axis(format="%"), scale=alt.Scale(domain=[0, 1])),
            color=group_colour(
                group,
                list(long[group].astype(str)),
                alt.Legend(title=field_title(group), **_LEGEND),
            ),
            strokeDash=alt.StrokeDash(
                "what:N",
                scale=alt.Scale(
                    domain=["stalled (some)", "GPU-hours measured"], range=[[1, 0], [6, 3]]
                ),
                legend=_legend("share"),
            ),
            detail=alt.Detail("what:N"),
            tooltip=[
                alt.Tooltip("month:T", format="%Y-%m"),
                alt.Tooltip(f"{group}:N", title=field_title(group)),
                alt.Tooltip("what:N", title="share"),
                alt.Tooltip("share:Q", format=".1%"),
                alt.Tooltip("jobs_measured:Q", format=",", title="jobs measured"),
            ],
        )
        .properties(width=width, height=height)
    )


def share_trend_chart(
    trends: pd.DataFrame,
    *,
    group: str = "cluster",
    threshold_cores_per_gpu: float,
    min_jobs: int = 0,
    width: int = 620,
    height: int = 240,
) -> AnyChart:
    """Share of jobs (dashed) and of GPU-hours (solid) below a threshold, by month and group.

    Columns: ``month``, ``group``, ``share_jobs_below``, ``share_gpu_hours_below`` (0-1), and
    ``jobs`` (months with fewer than ``min_jobs`` are faded points off the lines, as in
    :func:`trend_chart`).
    """
    long = _months_long(
        trends,
        group,
        min_jobs,
        {"share_jobs_below": "jobs", "share_gpu_hours_below": "GPU-hours"},
        var_name="weighted_by",
        value_name="share",
    )
    long = long[long["share"].notna()]
    base = alt.Chart(long).encode(
        x=alt.X("month:T", title="month", timeUnit="yearmonth"),
        y=alt.Y(
            "share:Q",
            axis=alt.Axis(format="%"),
            scale=alt.Scale(domain=[0, 1]),
            title=f"share below {threshold_cores_per_gpu:g} cores/GPU",
        ),
        color=group_colour(
            group, list(long[group].astype(str)), alt.Legend(title=field_title(group), **_LEGEND)
        ),
        strokeDash=alt.StrokeDash(
            "weighted_by:N",
            scale=alt.Scale(domain=["GPU-hours", "jobs"], range=[[1, 0], [6, 3]]),
            legend=_legend("weighted by"),
        ),
        detail=alt.Detail("weighted_by:N"),
        tooltip=[
            alt.Tooltip("month:T", format="%Y-%m"),
            alt.Tooltip(f"{group}:N", title=field_title(group)),
            alt.Tooltip("weighted_by:N", title="weighted by"),
            alt.Tooltip("share:Q", format=".1%"),
            alt.Tooltip("jobs:Q", format=","),
        ],
    )
    return _with_faded_months(base, width, height)


def model_curve_frame(
    params: Any,
    *,
    gpus: int,
    platform: str | None,
    model_params_b: float | None = None,
    load_rps: float | None = None,
    prompt_tokens: int | None = None,
    ample_ttft_ms: float | None = None,
    max_cores_per_gpu: float = 64.0,
    points_per_octave: int = 8,
) -> pd.DataFrame:
    """The fitted model's curve as chart data: ``cores_per_gpu``, ``slowdown`` (against ample
    cores), ``slowdown_low``/``slowdown_high`` (its interval, the open upper end capped at the
    model's maximum), ``pathological``; and ``ttft_ms``/``ttft_low_ms``/``ttft_high_ms`` when
    ``ample_ttft_ms`` (TTFT with ample cores) is given.

    ``params`` is an ``advisor.model.slowdown.CurveParams``; the grid runs from 1/``gpus`` (Slurm's
    default of one CPU per task) to ``max_cores_per_gpu`` on a log scale.
    """
    import numpy as np

    from advisor.model import slowdown

    lo = 1.0 / max(gpus, 1)
    n = int(points_per_octave * math.log2(max_cores_per_gpu / lo)) + 1
    cores = np.geomspace(lo, max_cores_per_gpu, n)
    X = np.array(
        [
            slowdown.feature_row(
                c,
                gpus=gpus,
                model_params_b=model_params_b,
                load_rps=load_rps,
                prompt_tokens=prompt_tokens,
                platform=platform,
            )
            for c in cores
        ]
    )
    pred = slowdown.predict(params, X)
    cap = float(params.max_slowdown)
    frame = pd.DataFrame(
        {
            "cores_per_gpu": cores,
            "slowdown": pred.slowdown,
            "slowdown_low": np.minimum(pred.low, cap),
            "slowdown_high": np.minimum(pred.high, cap),
            "pathological": pred.pathological,
        }
    )
    if ample_ttft_ms is not None:
        frame["ttft_ms"] = frame["slowdown"] * ample_ttft_ms
        frame["ttft_low_ms"] = frame["slowdown_low"] * ample_ttft_ms
        frame["ttft_high_ms"] = frame["slowdown_high"] * ample_ttft_ms
    return frame


def calibration_frame(
    training: Any, *, platform: str | None = None, gpus: int | None = None
) -> pd.DataFrame:
    """Calibration points as chart data: ``cores_per_gpu``, ``slowdown`` (the fit's target),
    ``source`` (paper / bench, and whether the run timed out), ``point_id``.

    ``training`` is an ``advisor.model.calibration.TrainingSet``; ``platform``/``gpus`` keep only the
    points of that platform and GPU count when given.
    """
    rows = []
    for x, y, p, censored in zip(
        training.X, training.y, training.points, training.censored, strict=True
    ):
        if platform is not None and p.platform != platform:
            continue
        if gpus is not None and p.gpus != gpus:
            continue
        where = p.platform or "platform not recorded"
        count = f"{p.gpus} GPU{'s' * (p.gpus != 1)}" if p.gpus else "GPUs not recorded"
        label = f"{'the paper' if p.source_kind == 'paper' else p.source_kind}: {where}, {count}"
        rows.append(
            {
                "cores_per_gpu": float(x[0]),
                "slowdown": float(y),
                "source": label + (" (timed out)" if censored else ""),
                "point_id": p.point_id,
                "platform": p.platform,
                "gpus": p.gpus,
            }
        )
    return pd.DataFrame(
        rows, columns=["cores_per_gpu", "slowdown", "source", "point_id", "platform", "gpus"]
    )


def bench_series_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Benchmark runs as TTFT-vs-cores series: one row per (series, cores per GPU) with the
    median victim TTFT P50 over repeats (``ttft_ms``), the repeats' spread (``ttft_min_ms``,
    ``ttft_max_ms``, and ``spread_pct``: (max - min) / median), the runs behind it, and a
    ``series`` label (platform, model, GPUs, load). Runs that failed or have no TTFT are left
    out.

    Columns used: ``platform``, ``model``, ``gpus``, ``attacker_rps``, ``workload``,
    ``cores_per_gpu``, ``victim_ttft_p50_ms``, ``status``, ``model_params_b``.
    """
    cols = [
        "series",
        "platform",
        "model",
        "model_params_b",
        "gpus",
        "attacker_rps",
        "workload",
        "cores_per_gpu",
        "ttft_ms",
        "ttft_min_ms",
        "ttft_max_ms",
        "spread_pct",
        "runs",
    ]
    ok = runs[
        (runs["status"] == "ok")
        & runs["victim_ttft_p50_ms"].notna()
        & runs["cores_per_gpu"].notna()
    ]
    if ok.empty:
        return pd.DataFrame(columns=cols)
    g = (
        ok.fillna({k: "?" for k in ("platform", "model", "workload")})
        .groupby([*_SERIES_KEYS, "cores_per_gpu"], dropna=False, as_index=False)
        .agg(
            ttft_ms=("victim_ttft_p50_ms", "median"),
            runs=("victim_ttft_p50_ms", "size"),
            ttft_min_ms=("victim_ttft_p50_ms", "min"),
            ttft_max_ms=("victim_ttft_p50_ms", "max"),
        )
    )
    g["spread_pct"] = 100.0 * (g["ttft_max_ms"] - g["ttft_min_ms"]) / g["ttft_ms"]
    g["series"] = _series_label(g)
    return g[cols].sort_values(["series", "cores_per_gpu"]).reset_index(drop=True)


_SERIES_KEYS = ["platform", "model", "model_params_b", "gpus", "attacker_rps", "workload"]


def _series_label(g: pd.DataFrame) -> pd.Series:
    """A benchmark series as people name it: platform · model · GPUs · load · workload."""
    return (
        g["platform"].astype(str)
        + " · "
        + g["model"].astype(str)
        + " · "
        + g["gpus"].map(lambda n: f"{n:g} GPUs" if pd.notna(n) else "? GPUs")
        + " · "
        + g["attacker_rps"].map(lambda r: f"{r:g} rps" if pd.notna(r) else "? rps")
        + " · "
        + g["workload"].astype(str)
    )


WAIT_ROLES = {"wait_engine_core": "engine core", "wait_api_server": "API server"}


def bench_wait_frame(runs: pd.DataFrame) -> pd.DataFrame:
    """Benchmark runs' measured CPU wait as curves: one row per (series, process, cores per GPU)
    with the median wait share over repeats (``wait``), the repeats' range (``wait_min``,
    ``wait_max``) and how many runs measured it. Runs without a wait record are left out (an
    empty frame when none has one).

    Columns used: those of :func:`bench_series_frame` and ``wait_engine_core``,
    ``wait_api_server``."""
    cols = ["series", "role", "cores_per_gpu", "wait", "wait_min", "wait_max", "runs"]
    have = [c for c in WAIT_ROLES if c in runs.columns]
    if not have:
        return pd.DataFrame(columns=cols)
    ok = runs[(runs["status"] == "ok") & runs["cores_per_gpu"].notna()]
    long = ok.melt(
        id_vars=[*_SERIES_KEYS, "cores_per_gpu"], value_vars=have, var_name="role", value_name="w"
    ).dropna(subset=["w"])
    if long.empty:
        return pd.DataFrame(columns=cols)
    g = (
        long.fillna({k: "?" for k in ("platform", "model", "workload")})
        .groupby([*_SERIES_KEYS, "role", "cores_per_gpu"], dropna=False, as_index=False)
        .agg(wait=("w", "median"), wait_min=("w", "min"), wait_max=("w", "max"), runs=("w", "size"))
    )
    g["series"] = _series_label(g)
    g["role"] = g["role"].map(WAIT_ROLES)
    return g[cols].sort_values(["series", "role", "cores_per_gpu"]).reset_index(drop=True)


def bench_wait_chart(
    frame: pd.DataFrame, max_wait: float, *, width: int = 300, height: int = 260
) -> AnyChart:
    """Measured CPU wait against cores per GPU, one panel per process and one line per series,
    the repeats' range as bars, and the ``--max-wait`` rule: the quantity that decides the
    answer, as the bench measured it."""
    x = alt.X("cores_per_gpu:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS)
    y = alt.Y(
        "wait:Q",
        title="measured wait for a CPU",
        axis=alt.Axis(format="%"),
        scale=alt.Scale(domain=[0, max(0.3, float(frame["wait_max"].max() or 0))]),
    )
    colour = alt.Color("series:N", legend=_legend(None, orient="bottom", columns=1))
    panels = []
    for role in ("engine core", "API server"):
        data = frame[frame["role"] == role]
        if data.empty:
            continue
        base = alt.Chart(data)
        line = base.mark_line(point=True).encode(
            x=x,
            y=y,
            color=colour,
            tooltip=[
                alt.Tooltip("series:N"),
                alt.Tooltip("cores_per_gpu:Q", format=".3~g", title="cores/GPU"),
                alt.Tooltip("wait:Q", format=".1%", title="median wait"),
                alt.Tooltip("wait_min:Q", format=".1%", title="least"),
                alt.Tooltip("wait_max:Q", format=".1%", title="most"),
                alt.Tooltip("runs:Q", title="repeats"),
            ],
        )
        spread = base.mark_rule(size=2, opacity=0.5).encode(
            x="cores_per_gpu:Q", y="wait_min:Q", y2="wait_max:Q", color=colour
        )
        rule = (
            alt.Chart(pd.DataFrame({"max_wait": [max_wait]}))
            .mark_rule(color="#c0392b", strokeDash=[4, 3])
            .encode(y="max_wait:Q")
        )
        panels.append(
            alt.layer(line, spread, rule).properties(width=width, height=height, title=role)
        )
    return alt.hconcat(*panels).resolve_scale(y="shared")


def bench_fit_frame(series: pd.DataFrame, params: Any, points_per_octave: int = 6) -> pd.DataFrame:
    """The fitted model's curve for each benchmark series, in milliseconds, for
    :func:`bench_curves_chart`'s ``fit``: the slowdown curve is anchored at the series' run
    with the most cores (its TTFT / the predicted slowdown there = TTFT with ample cores)."""
    import numpy as np

    from advisor.model import slowdown

    out = []
    for label, s in series.groupby("series", sort=False):
        top = s.loc[s["cores_per_gpu"].idxmax()]
        gpus = int(top["gpus"]) if pd.notna(top["gpus"]) else None
        platform = top["platform"] if top["platform"] in slowdown.PLATFORMS else None
        mp = float(top["model_params_b"]) if pd.notna(top["model_params_b"]) else None
        rps = float(top["attacker_rps"]) if pd.notna(top["attacker_rps"]) else None

        def row(c: float, gpus=gpus, platform=platform, mp=mp, rps=rps) -> list[float]:
            return slowdown.feature_row(
                c, gpus=gpus, model_params_b=mp, load_rps=rps, platform=platform
            )

        at_top = slowdown.predict(params, np.array([row(float(top["cores_per_gpu"]))]))
        ample_ms = float(top["ttft_ms"]) / float(at_top.slowdown[0])
        lo, hi = float(s["cores_per_gpu"].min()), float(s["cores_per_gpu"].max())
        n = max(2, int(points_per_octave * math.log2(hi / lo)) + 1) if hi > lo else 2
        grid = np.geomspace(lo, hi if hi > lo else lo * 2, n)
        pred = slowdown.predict(params, np.array([row(float(c)) for c in grid]))
        out.append(
            pd.DataFrame(
                {"series": label, "cores_per_gpu": grid, "ttft_ms": pred.slowdown * ample_ms}
            )
        )
    if not out:
        return pd.DataFrame(columns=["series", "cores_per_gpu", "ttft_ms"])
    return pd.concat(out, ignore_index=True)


def pressure_chart(rows: pd.DataFrame, *, width: int = 620, height: int = 280) -> AnyChart:
    """Measured CPU stall share (PSI some, GPU-hour weighted) by cores per GPU, one line per GPU
    type (``advisor.pressure.summary`` rows; groups without a measured job left out): does
    pressure fall as cores per GPU rise, on this cluster?"""
    data = rows[rows["jobs_measured"] > 0].copy()
    data["gpu_type"] = data["gpu_type"].astype(str)
    return (
        alt.Chart(data)
        .mark_line(point=True)
        .encode(
            x=alt.X("cores_per_gpu_bin:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS),
            y=alt.Y(
                "some_share:Q",
                title="stalled for a CPU (PSI some)",
                axis=alt.Axis(format="%"),
            ),
            color=alt.Color(
                "gpu_type:N",
                scale=gpu_type_scale(sorted(set(data["gpu_type"]))),
                legend=_legend(field_title("gpu_type")),
            ),
            tooltip=[
                alt.Tooltip("gpu_type:N", title="GPU type"),
                alt.Tooltip("cores_per_gpu_bin:Q", title="cores/GPU (bin)"),
                alt.Tooltip("some_share:Q", format=".1%", title="stalled (some)"),
                alt.Tooltip("full_share:Q", format=".1%", title="stalled (full)"),
                alt.Tooltip("jobs_measured:Q", format=",", title="jobs measured"),
            ],
        )
        .properties(width=width, height=height)
    )


def measured_curve_chart(
    cells: pd.DataFrame, threshold: float, *, width: int = 620, height: int = 280
) -> AnyChart:
    """One group's measured stall (PSI some, GPU-hour weighted) by whole cores per GPU with
    its 90% interval, the model's prediction for the same group beside it, and the threshold
    that ``--max-wait`` means through the measured link (``advisor pressure curve`` cells:
    ``cores_per_gpu``, ``measured``, ``measured_low``/``_high``, ``predicted``, ``jobs``,
    ``verdict``). Cells of too few jobs are drawn faded: they decide nothing."""
    data = cells.copy()
    data["x"] = data["cores_per_gpu"].clip(lower=0.5)  # "<1" drawn at half a core
    data["decides"] = data["verdict"].ne("too few")
    x = alt.X("x:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS)
    y_title = "stalled for a CPU (PSI some)"
    tips = [
        alt.Tooltip("cores_per_gpu:Q", title="cores/GPU (whole; 0: below one)"),
        alt.Tooltip("measured:Q", format=".1%", title="measured"),
        alt.Tooltip("measured_low:Q", format=".1%", title="90% low"),
        alt.Tooltip("measured_high:Q", format=".1%", title="90% high"),
        alt.Tooltip("predicted:Q", format=".1%", title="model"),
        alt.Tooltip("jobs:Q", format=",", title="jobs measured"),
        alt.Tooltip("verdict:N", title="against the threshold"),
    ]
    base = alt.Chart(data)
    bars = base.mark_rule().encode(
        x=x, y=alt.Y("measured_low:Q", title=y_title, axis=alt.Axis(format="%")),
        y2="measured_high:Q", opacity=alt.condition("datum.decides", alt.value(1), alt.value(0.3)),
    )  # fmt: skip
    points = base.mark_point(filled=True, size=60).encode(
        x=x,
        y="measured:Q",
        color=alt.Color(
            "verdict:N",
            scale=alt.Scale(
                domain=["over", "unresolved", "under", "too few"],
                range=["#c0392b", "#e6a23c", "#2e7d32", "#9e9e9e"],
            ),
            legend=_legend("measured, against the threshold"),
        ),
        tooltip=tips,
    )
    layers: list[Any] = [bars, points]
    if data["predicted"].notna().any():
        layers.append(
            base.mark_line(strokeDash=[4, 3], color="#555")
            .encode(x=x, y="predicted:Q", tooltip=tips)
            .transform_filter("isValid(datum.predicted)")
        )
    rule = (
        alt.Chart(pd.DataFrame({"threshold": [threshold]}))
        .mark_rule(color="#c0392b")
        .encode(y="threshold:Q")
    )
    return alt.layer(*layers, rule).properties(width=width, height=height)


def wait_curve_frame(wait_curve: Sequence[dict[str, Any]], gpus: int) -> pd.DataFrame:
    """A recommendation's ``wait_curve`` (one row per total core count, one entry per role)
    as long rows: role, cores per GPU, predicted wait share and its 90% interval."""
    rows = []
    for row in wait_curve:
        for role in ("engine_core", "api_server"):
            p = row.get(role)
            if p:
                rows.append(
                    {
                        "role": role.replace("_", " "),
                        "cores": row["cores"],
                        "cores_per_gpu": row["cores"] / max(gpus, 1),
                        "wait": p["wait"],
                        "low": p["low"],
                        "high": p["high"],
                    }
                )
    return pd.DataFrame(rows, columns=["role", "cores", "cores_per_gpu", "wait", "low", "high"])


def wait_curve_chart(
    frame: pd.DataFrame,
    max_wait: float,
    *,
    recommended_cores_per_gpu: float | None = None,
    measured: pd.DataFrame | None = None,
    width: int = 620,
    height: int = 280,
) -> AnyChart:
    """The mechanism that decides the answer: each role's predicted CPU wait (share of the
    time) against cores per GPU with its 90% band, the ``--max-wait`` rule, and the answer;
    ``measured`` (:func:`advisor.model.calibration.waits.measured_waits`): the matching
    series' measured waits as points with their range, over the prediction."""
    x = alt.X("cores_per_gpu:Q", scale=_LOG2, title=RATIO_AXIS_TITLE, axis=_RATIO_AXIS)
    colour = alt.Color("role:N", legend=_legend("process"))
    base = alt.Chart(frame)
    band = base.mark_area(opacity=0.2).encode(x=x, y="low:Q", y2="high:Q", color=colour)
    line = base.mark_line(point=True).encode(
        x=x,
        y=alt.Y("wait:Q", title="predicted wait for a CPU", axis=alt.Axis(format="%")),
        color=colour,
        tooltip=[
            alt.Tooltip("role:N", title="process"),
            alt.Tooltip("cores:Q", title="cores in all"),
            alt.Tooltip("cores_per_gpu:Q", format=".2~f", title="cores / GPU"),
            alt.Tooltip("wait:Q", format=".1%", title="wait"),
            alt.Tooltip("low:Q", format=".1%", title="90% low"),
            alt.Tooltip("high:Q", format=".1%", title="90% high"),
        ],
    )
    rules = pd.DataFrame({"max_wait": [max_wait]})
    layers: list[Any] = [
        band,
        line,
        alt.Chart(rules).mark_rule(color="#c0392b", strokeDash=[4, 3]).encode(y="max_wait:Q"),
    ]
    if recommended_cores_per_gpu is not None:
        answer = pd.DataFrame({"answer": [float(recommended_cores_per_gpu)]})
        layers.append(alt.Chart(answer).mark_rule(color="#2e7d32").encode(x="answer:Q"))
    if measured is not None and not measured.empty:
        seen = alt.Chart(measured.assign(role=measured["role"].str.replace("_", " ")))
        layers.append(
            seen.mark_rule(strokeWidth=1.5).encode(x=x, y="low:Q", y2="high:Q", color=colour)
        )
        layers.append(
            seen.mark_point(filled=True, size=70, shape="diamond", stroke="black").encode(
                x=x,
                y="wait:Q",
                color=colour,
                tooltip=[
                    alt.Tooltip("series:N", title="measured series"),
                    alt.Tooltip("role:N", title="process"),
                    alt.Tooltip("cores:Q", title="cores in all"),
                    alt.Tooltip("wait:Q", format=".1%", title="measured wait (median)"),
                    alt.Tooltip("low:Q", format=".1%", title="lowest phase"),
                    alt.Tooltip("high:Q", format=".1%", title="highest phase"),
                    alt.Tooltip("phases:Q", title="phases"),
                ],
            )
        )
    return alt.layer(*layers).properties(width=width, height=height)
