"""The usage block of the Overview and Who pages: what GPU jobs used (CPU efficiency, GPU
utilisation, likely CPU-starved GPU-hours and their value) beside the allocation-based figures,
and which of the two an admin should trust for the data selected (advisor.usage)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pandas as pd
import streamlit as st

from app.db import DbKey
from app.filters import Filters, display_name
from app.loaders import cached_core
from app.messages import guarded


def _query(filters: Filters, by: tuple[str, ...]) -> Any:
    from advisor import usage

    return usage.UsageQuery(
        by=by,
        start=filters.since_datetime,
        end=filters.until_exclusive,
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
    )


def pressure_query(filters: Filters, by: tuple[str, ...] | None = None) -> Any:
    """The sidebar's filters as a :class:`advisor.pressure.summary.PressureQuery` grouped by
    ``by`` (None: by GPU type and cores-per-GPU bin)."""
    from advisor.pressure.summary import PressureQuery

    q = PressureQuery(
        start=filters.since_datetime,
        end=filters.until_exclusive,
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
    )
    return q if by is None else dataclasses.replace(q, by=by)


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{100 * v:.0f}%"


def show_usage_block(key: DbKey, filters: Filters, by: str = "gpu_type") -> None:
    """What the jobs used (:func:`_show_usage`) and, where their cgroups' CPU pressure was
    measured, what they waited for (:func:`_show_pressure`)."""
    _show_usage(key, filters, by)
    _show_pressure(key, filters)


def _show_pressure(key: DbKey, filters: Filters) -> None:
    """Measured CPU pressure by GPU type and cores per GPU (docs/pressure.md): how much of the
    GPU time is measured, the stall share, the GPU-hours held between the full and some bounds,
    and its chart; nothing where no selected job was measured."""
    from advisor.pressure.summary import any_records, headline, pressure_groups
    from app.chart_view import show_chart

    # most databases hold no pressure records: one cached look a file, not a scan a filter
    if not guarded(lambda: cached_core("pressure_any", key, any_records)):
        return
    q = pressure_query(filters)
    rows = guarded(lambda: cached_core("pressure_groups", key, pressure_groups, q))
    head = headline(rows)
    if not head["jobs_measured"]:
        return
    st.subheader("What the jobs waited for (CPU pressure)")
    c1, c2, c3 = st.columns(3)
    c1.metric("Share of GPU-hours measured", _pct(head["share_measured"]))
    some = sum(r["some_share"] * r["gpu_hours_measured"] for r in rows if r["jobs_measured"])
    c2.metric("Stalled for a CPU (some)", _pct(some / head["gpu_hours_measured"]))
    c3.metric(
        "GPU-hours held by CPU waiting",
        f"{head['held_gpu_hours_low']:,.0f} to {head['held_gpu_hours_high']:,.0f}",
    )
    show_chart("pressure_chart", pd.DataFrame(rows))
    st.caption(
        f"{head['jobs_measured']:,} of {head['jobs']:,} GPU jobs measured (their cgroups' PSI; "
        "the others keep the estimates above). Stalled: the share of a job's time at least one "
        "of its tasks waited for a CPU; the GPU-hours held lie between GPU-hours x full and x "
        "some. Per group: `advisor pressure summary`."
    )
    _show_measured_curve(key, filters)


def _show_measured_curve(key: DbKey, filters: Filters) -> None:
    """One group's measured stall by cores per GPU against the threshold, with the model's
    prediction beside it and what the measurement answers (``advisor pressure curve``)."""
    from advisor.model.waitknee import DEFAULT_MAX_WAIT
    from advisor.pressure.curve import CurveQuery
    from app.chart_view import show_chart

    q = CurveQuery(
        start=filters.since_datetime,
        end=filters.until_exclusive,
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
    )
    rep = guarded(lambda: cached_core("pressure_curve", key, _curve_report, q, DEFAULT_MAX_WAIT))
    groups = [g for g in rep["groups"] if any(c["enough"] for c in g["cells"])]
    if not groups:
        return
    st.markdown("**Measured stall by cores per GPU, beside the model**")

    def label(g: dict[str, Any]) -> str:
        return f"{g['cluster']} / {g['partition']} / {g['gpu_type']} / {g['gpu_count']} GPU"

    groups.sort(key=lambda g: -g["jobs_measured"])
    g = st.selectbox("Group", groups, format_func=label, key="measured_curve_group")
    show_chart("measured_curve_chart", pd.DataFrame(g["cells"]), rep["threshold"])
    answer = g["measured_cpus_per_gpu"]
    st.caption(
        (f"Measured answer: **{answer} cores per GPU**; " if answer is not None else "")
        + f"{g['reason']}. Threshold {rep['threshold']:.1%}: --max-wait "
        f"{rep['max_wait']:.0%} through the measured link. Dashed: the model's prediction for "
        f"{g['gpu_count']} GPU at {rep['load_rps']:g} req/s of {rep['prompt_tokens']:,.0f} "
        "tokens. Faded: too few measured jobs to decide. Every group: `advisor pressure curve`."
    )


def _curve_report(con: Any, q: Any, max_wait: float) -> dict[str, Any]:
    from advisor.recommend.measured import curve_report

    return curve_report(con, max_wait=max_wait, query=q)


def _show_usage(key: DbKey, filters: Filters, by: str) -> None:
    """The trust advice, four figures and, when usage exists, the ``by`` groups with the most
    likely-starved GPU-hours (names through the privacy setting)."""
    from advisor import usage

    def summary(keys: tuple[str, ...]) -> Any:
        return guarded(
            lambda: cached_core("usage_summary", key, usage.usage_summary, _query(filters, keys))
        )

    # The advice and the four figures need no grouping: asked first, they come from the
    # pre-aggregated usage table for any ``by``; groups by account or user (the people's usage
    # table) are asked for only when a selected job carries usage.
    rep = summary((by,) if by in usage.TABLE_KEYS else ())
    st.subheader("What the jobs used (usage data)")
    text = f"Trust the **{rep.advice.trust}-based** estimate here: {rep.advice.reason}."
    if rep.advice.trust == "usage":
        st.success(text)
    else:
        st.info(text)
    o = rep.overall
    if not o.jobs_with_usage:
        return
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("GPU-hours with usage", _pct(o.share_gpu_hours_with_cpu_usage))
    c2.metric("CPU efficiency", _pct(o.cpu_efficiency))
    util = "–" if o.gpu_util_mean_pct is None else f"{o.gpu_util_mean_pct:.0f}%"
    c3.metric("GPU utilisation (mean)", util)
    usd = "" if o.starved_usd is None else f" · ${o.starved_usd:,.0f}"
    c4.metric(
        "GPU-hours likely CPU-starved",
        _pct(o.share_gpu_hours_starved),
        usd.strip(" ·"),
        delta_color="off",
        delta_arrow="off",
    )
    if by in usage.TABLE_KEYS:
        rows = usage.most_starved(rep.groups)
    else:  # by account or user: the people's usage table, not every job
        rows = guarded(
            lambda: cached_core("usage_top", key, usage.top_groups, _query(filters, (by,)))
        )
    table = pd.DataFrame(
        [
            {
                by: display_name(str(g.keys[by])) if by in ("account", "user") else g.keys[by],
                "jobs": g.jobs,
                "CPU efficiency": g.cpu_efficiency,
                "GPU util %": g.gpu_util_mean_pct,
                "starved GPU-hours": g.starved_gpu_hours,
                "starved $": g.starved_usd,
                "over-provisioned jobs": g.over_provisioned_jobs,
            }
            for g in rows
        ]
    )
    st.dataframe(table, hide_index=True)
    st.caption(
        f"Likely CPU-starved: cores at least {100 * rep.thresholds.starved_cpu_eff:.0f}% busy "
        f"while GPUs are at most {rep.thresholds.starved_gpu_util_pct:g}% busy; the jobs and "
        "their numbers: `advisor usage --jobs --verdict starved`."
    )
