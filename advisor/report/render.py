"""Rendering the monthly report: its charts (Vega-Lite specs drawn from the report object
alone), the number formats, and the one self-contained HTML page (templates under
``advisor/report_templates/``, the Vega JavaScript inlined from vl-convert's bundle so the
file opens offline with no CDN).

The HTML carries each number in a ``data-key``/``data-value`` attribute pair so tests (and
scripts) can read them back exactly.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any

from advisor.pressure.curve import MIN_JOBS
from advisor.report.records import BelowRecommendation, MonthlyReport
from advisor.wording import cores_text, gpu_hours_range_text

# --------------------------------------------------------------------------------------------
# Charts


@dataclass(frozen=True)
class ReportChart:
    """One chart of the report: an id (its file name for PNG/PDF), a title, a Vega-Lite spec."""

    chart_id: str
    title: str
    spec: dict[str, Any]


# The month before in light grey, this month in near black (never a GPU type's colour).
MONTH_GREYS = ["#a6a6a6", "#252525"]


def report_charts(report: MonthlyReport) -> tuple[ReportChart, ...]:
    """The report's charts, each drawn from the report object alone (no query of its own)."""
    return tuple(
        chart
        for draw in (_month_chart, _histogram_chart, _below_charts, _wait_charts, _daily_chart)
        for chart in draw(report)
    )


def _month_chart(report: MonthlyReport) -> list[ReportChart]:
    """P25 and P50 cores per GPU per GPU type, this month against last."""
    import altair as alt
    import pandas as pd

    charts: list[ReportChart] = []
    if not report.gpu_types:
        return charts
    rows = []
    for g in report.gpu_types:
        for month, p25, p50 in (
            (report.previous_month, g.prev_p25_cores_per_gpu, g.prev_p50_cores_per_gpu),
            (report.month, g.p25_cores_per_gpu, g.p50_cores_per_gpu),
        ):
            for quantile, value in (("P25", p25), ("P50", p50)):
                if value is not None and value > 0:
                    rows.append(
                        {
                            "gpu_type": g.gpu_type,
                            "month": month,
                            "quantile": quantile,
                            "cores_per_gpu": value,
                        }
                    )
    if rows:
        order = [report.previous_month, report.month]
        chart = (
            alt.Chart(pd.DataFrame(rows))
            .mark_point(filled=True, size=90)
            .encode(
                x=alt.X("gpu_type:N", title="GPU type"),
                xOffset=alt.XOffset("month:N", sort=order),
                y=alt.Y(
                    "cores_per_gpu:Q",
                    scale=alt.Scale(type="log", base=2),
                    axis=alt.Axis(values=[2.0**k for k in range(-4, 9)], format="~g"),
                    title="CPU cores per GPU (log scale)",
                ),
                # months in greys of their own: the GPU types' colours mean GPU types
                color=alt.Color(
                    "month:N",
                    sort=order,
                    title="month",
                    scale=alt.Scale(domain=order, range=MONTH_GREYS),
                ),
                shape=alt.Shape("quantile:N", sort=["P25", "P50"], title="percentile"),
                tooltip=[
                    "gpu_type:N",
                    "month:N",
                    "quantile:N",
                    alt.Tooltip("cores_per_gpu:Q", format=".2f"),
                ],
            )
            .properties(width=max(160, 110 * len(report.gpu_types)), height=260)
        )
        charts.append(
            ReportChart("cores-per-gpu", "Cores per GPU: this month against last", chart.to_dict())
        )
    return charts


def _histogram_chart(report: MonthlyReport) -> list[ReportChart]:
    """The month's ratio histogram, the month before outlined."""
    import pandas as pd

    charts: list[ReportChart] = []
    if not report.distribution:
        return charts
    from advisor.charts import ratio_histogram

    dist = pd.DataFrame([vars(p) for p in report.distribution])
    quantiles = pd.DataFrame(
        [
            {
                "gpu_type": g.gpu_type,
                "p25_cores_per_gpu": g.p25_cores_per_gpu,
                "p50_cores_per_gpu": g.p50_cores_per_gpu,
            }
            for g in report.gpu_types
            if g.jobs
        ]
    )
    previous = (
        pd.DataFrame([vars(p) for p in report.prev_distribution])
        if report.prev_distribution
        else None
    )
    chart = ratio_histogram(
        dist,
        quantiles=quantiles,
        previous=previous,
        previous_label=report.previous_month,
        height=120,
    )
    charts.append(
        ReportChart(
            "ratio-histogram",
            f"Cores per GPU in {report.month} (outlined: {report.previous_month})",
            chart.to_dict(),
        )
    )
    return charts


def _below_charts(report: MonthlyReport) -> list[ReportChart]:
    """The accounts and the partitions most below the recommendation, ranked apart."""
    import pandas as pd

    from advisor.charts import top_bar_chart

    charts: list[ReportChart] = []

    # Accounts and partitions apart: an account's GPU-hours are also its partition's, so one
    # ranking of both would count them twice.
    for scope, below in (
        ("accounts", report.below_accounts),
        ("partitions", report.below_partitions),
    ):
        if not below:
            continue
        # accounts as the dashboard's Who page ranks them (by the loss), partitions by hours below
        rank_by, rank_title = (
            ("gpu_hours_lost", "GPU-hours lost to too few cores (est.)")
            if scope == "accounts"
            else ("gpu_hours_below", "GPU-hours below the recommendation")
        )
        df = pd.DataFrame(
            [
                {
                    "who": _who(b),
                    "gpu_hours_below": b.gpu_hours_below,
                    "gpu_hours_lost": b.gpu_hours_lost,
                    "flag": b.flag,
                }
                for b in below
            ]
        )
        chart = top_bar_chart(
            df,
            name="who",
            value=rank_by,
            title=rank_title,
            tooltip=["flag:N"],
            limit=max(1, len(below)),
        )
        charts.append(
            ReportChart(
                f"below-{scope}",
                f"{scope.capitalize()} most below the recommendation",
                chart.to_dict(),
            )
        )
    return charts


def _wait_charts(report: MonthlyReport) -> list[ReportChart]:
    """The predicted wait behind each GPU type's answer (recommend's wait curve)."""
    from advisor.charts import wait_curve_chart, wait_curve_frame

    charts: list[ReportChart] = []
    for n, w in enumerate(report.wait_curves):
        chart = wait_curve_chart(
            wait_curve_frame(w["curve"], int(w["gpus"])),
            float(w["max_wait"]),
            recommended_cores_per_gpu=w["cores_per_gpu"],
            height=220,
        )
        charts.append(
            ReportChart(
                f"wait-{n}",
                f"{w['gpu_type']}, {w['gpus']} GPU{'' if w['gpus'] == 1 else 's'} per job: "
                f"{w['cores_per_gpu']} cores per GPU",
                chart.to_dict(),
            )
        )
    return charts


def _daily_chart(report: MonthlyReport) -> list[ReportChart]:
    """Allocations started per day (a day without any in red)."""
    import altair as alt
    import pandas as pd

    charts: list[ReportChart] = []
    if not report.quality.daily:
        return charts
    df = pd.DataFrame(
        [
            {"day": d.day.isoformat(), "gpu_jobs": d.gpu_jobs, "jobs": d.jobs}
            for d in report.quality.daily
        ]
    )
    chart = (
        alt.Chart(df)
        .mark_bar()
        .encode(
            x=alt.X("day:T", title="day (UTC)", timeUnit="utcyearmonthdate"),
            y=alt.Y("jobs:Q", title="allocations started"),
            color=alt.condition("datum.jobs == 0", alt.value("#d62728"), alt.value("#4c78a8")),
            tooltip=[
                alt.Tooltip("day:T", timeUnit="utcyearmonthdate", format="%Y-%m-%d"),
                "jobs:Q",
                "gpu_jobs:Q",
            ],
        )
        .properties(width=620, height=160)
    )
    charts.append(ReportChart("daily-starts", "Allocations started per day", chart.to_dict()))
    return charts


_BUNDLE_SNIPPET = "window.vegaEmbed = vegaEmbed; window.vega = vega; window.vegaLite = vegaLite;"


def _who(b: BelowRecommendation) -> str:
    where = f" in {b.partition}" if b.scope == "account" else ""
    return f"{b.name}{where} ({b.gpu_type})"


@cache
def _vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script, from vl-convert (no network, no CDN)."""
    import vl_convert

    return str(vl_convert.javascript_bundle(_BUNDLE_SNIPPET))


# --------------------------------------------------------------------------------------------
# Rendering


def _num(value: object) -> str:
    """A number as the report shows it."""
    if value is None:
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if math.isnan(value):
            return "–"
        if abs(value) >= 1000:
            return f"{value:,.0f}"
        if 0 < abs(value) < 0.1:
            return f"{value:.3g}"  # 0.0504 $/vCPU-hour: small figures keep their digits
        return f"{value:,.2f}"
    return str(value)


def _raw(value: object) -> str:
    """A number exactly, for the ``data-value`` attribute (repr round-trips floats)."""
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def _fmt(value: object, kind: str = "num") -> str:
    """One format per kind of number, the same wherever it appears in the report: counts and
    hours whole with separators, cores per GPU as short as they read exactly (advisor.wording),
    dollars whole, unit prices
    with the cents that matter."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if not isinstance(value, (int, float)) or isinstance(value, bool) or kind == "num":
        return _num(value)
    v = float(value)
    if kind in ("int", "hours"):
        return f"{v:,.0f}"
    if kind == "cores":
        return cores_text(v)
    if kind == "usd":
        return f"${v:,.0f}"
    if kind == "price":
        return f"${v:,.2f}"
    raise ValueError(f"unknown number kind {kind!r}")


def _share(value: float | None) -> str:
    return "–" if value is None else f"{100.0 * value:.1f}%"


@cache
def _template(name: str = "report.html.j2") -> Any:
    import jinja2

    text = resources.files("advisor").joinpath("report_templates", name).read_text(encoding="utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["num"] = _num
    env.filters["gpu_hours_range"] = lambda lo, hi: gpu_hours_range_text(float(lo), float(hi))
    env.filters["raw"] = _raw
    env.filters["share"] = _share
    env.filters["fmt"] = _fmt
    env.filters["capitalize_first"] = lambda text: str(text)[:1].upper() + str(text)[1:]
    return env.from_string(text)


# Inside <script>, "<!--<script>" in a name would make the HTML parser swallow the elements
# after it and "</script" would end it; "&", U+2028 and U+2029 trip other parsers. JSON can
# spell each of them as a \u escape inside a string (they never occur outside one).
_INLINE_JSON_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def inline_json(value: Any) -> str:
    """``value`` as JSON that is safe to place inside an HTML ``<script>`` element as is."""
    return json.dumps(value, separators=(",", ":"), default=str).translate(_INLINE_JSON_ESCAPES)


def render_html(report: MonthlyReport, charts: Sequence[ReportChart] | None = None) -> str:
    """The report as one self-contained HTML page (charts drawn in the browser, offline)."""
    charts = report_charts(report) if charts is None else charts
    specs = {c.chart_id: c.spec for c in charts}
    specs_json = inline_json(specs)
    bundle = _vega_bundle().replace("</script", "<\\/script") if charts else ""
    return str(
        _template().render(
            r=report,
            charts=charts,
            specs_json=specs_json,
            vega_bundle=bundle,
            title=_title(report),
            usage_html=_usage_html(report),
        )
    )


def render_index(entries: Sequence[dict[str, Any]]) -> str:
    """The page listing every report (``index.html``), entries in the order given."""
    return str(_template("index.html.j2").render(entries=entries))


def _usage_html(report: MonthlyReport) -> Any:
    """The usage section (its own template: usage_section.html.j2), or nothing."""
    import markupsafe

    if report.usage is None:
        return ""
    return markupsafe.Markup(
        _template("usage_section.html.j2").render(
            u=report.usage,
            pressure=report.pressure,
            min_jobs=MIN_JOBS,
            validation=report.measured_vs_model,
        )
    )


def _title(report: MonthlyReport) -> str:
    where = f"cluster {report.cluster}" if report.cluster else "all clusters"
    return f"CPU cores per GPU, {report.month}, {where}"
