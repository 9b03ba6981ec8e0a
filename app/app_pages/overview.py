"""Overview page: the answer first (per cluster and partition, the GPU-hours lost each month to
too few cores, their value, the cost of the fix, the DefCpuPerGPU to set and the settings to
paste, from ``advisor.fixplan``), then how many cores per GPU jobs get per GPU type (histogram
or ECDF with P25 and P50 marked), the shares below thresholds, and the node types' fair share."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from advisor import fixplan
from advisor.errors import AdvisorError
from advisor.wording import cores_per_gpu_words, cores_text, count_words
from app.assumptions import assumptions, assumptions_caption
from app.chart_view import show_chart
from app.common import FEW_JOBS
from app.db import db_key
from app.filters import current_filters, display_name
from app.fixplan_calls import fix_plan, headline
from app.messages import md_name, stop_info
from app.model_calls import partition_recommendations
from app.ratio_calls import (
    below_target,
    excluded_caption,
    node_types,
    ratio_distribution,
    ratio_query,
    ratio_summary,
)
from app.sidebar import require_gpu_jobs, warn_stale, warn_unknown_gpu_types
from app.tables import LOSS_COLUMNS, period_labels, show_table
from app.usage_block import show_usage_block

st.title("CPU cores per GPU")
key = db_key()
require_gpu_jobs(key)
warn_unknown_gpu_types(key)
filters = current_filters()
warn_stale(key, filters.clusters)
assumed = assumptions()

st.subheader("What too few cores cost, and the fix")
try:
    plan = fix_plan(key, filters, assumed)
except AdvisorError as exc:  # e.g. a broken model file: the distributions below need no model
    plan = None
    st.error(f"No recommendation: {exc}")
if plan is None:
    pass
elif not plan.rows:
    st.info(
        "No GPU job matches the filters (cluster, partition, GPU type, time range), so there "
        "is nothing to recommend. Widen them in the sidebar."
    )
else:
    period = plan.period  # "per month", or the span's totals when it is shorter than a month
    h = headline(key, filters, plan)
    m1, m2, m3 = st.columns(3)
    m1.metric(
        f"GPU-hours lost {period}",
        h.gpu_hours_lost_text(),
        f"{h.interval_pct}% interval {h.gpu_hours_interval_text()}",
        delta_color="off",
        delta_arrow="off",
        help="An upper bound: GPU time the jobs below the recommendation would spend waiting "
        "on CPU if every GPU job were an LLM server. The interval carries the fit's spread and "
        "the model's held-out error, so it brackets the figure.",
    )
    m2.metric(
        f"Their value {period}",
        h.lost_usd_text(),
        f"{h.interval_pct}% interval {h.usd_interval_text()}",
        delta_color="off",
        delta_arrow="off",
        help="Lost GPU-hours at the reference cloud instance's price per GPU-hour.",
    )
    m3.metric(
        f"Cost of the fix {period}",
        f"${plan.fix_usd_per_month:,.0f}",
        help="The extra vCPU-hours the jobs below would get, at the per-vCPU price.",
    )
    if not plan.per_month:
        st.caption(
            f"The data span less than a month, so these are the totals {period}, not a rate "
            "per month: a month's worth cannot be told from so little."
        )
    lost = h.lost_words()
    st.markdown(f"{lost[0].upper()}{lost[1:]}.")
    # one badge per GPU type: which figures are the curve's extrapolation, and from what
    st.markdown(
        " ".join(
            f":green-badge[:material/verified: {c.badge(md_name(c.gpu_type))}]"
            if c.calibrated
            else f":orange-badge[:material/warning: {c.badge(md_name(c.gpu_type))}]"
            for c in h.calibrations
        )
    )
    st.caption(
        f"Basis: {h.basis_sentence} {h.data_age.words().capitalize()}."
        + (f" {h.usage_words()}" if h.usage else "")
        + (f" {h.measured_words()}" if h.measured_words() else "")
    )
    top = plan.rows[0]
    st.markdown(
        f"Most is lost in partition **{top.partition or '(none)'}** of cluster "
        f"**{top.cluster}** ({top.gpu_type}): at most "
        f"{count_words(round(top.gpu_hours_lost_per_month), 'GPU-hour')} "
        f"{period}; its jobs get a median of {cores_per_gpu_words(top.p50_cores_per_gpu)}"
        f" per GPU. Set `DefCpuPerGPU={top.def_cpu_per_gpu}` there."
    )
    show_table(
        [r.__dict__ for r in plan.rows],
        ["cluster", *LOSS_COLUMNS],
        labels=period_labels(period),
    )
    # who loses most: the Who page's ranking (same query, same cache), its top three here
    recs = partition_recommendations(key, assumed)
    targets = fixplan.recommended_targets(recs)
    if targets:
        wq = ratio_query(
            filters, by=("account", "cluster", "partition", "gpu_type"), weight="gpu-hours"
        )
        top_who = fixplan.rank_who_loses(
            below_target(key, wq, targets, None, fixplan.RANKING_POOL), recs
        )[:3]
        if top_who:
            st.markdown(
                f"**The accounts that lose most** ({filters.months_words}; the Who page "
                "ranks them all):"
            )
            show_table(
                [
                    {
                        "account": display_name(w.group.keys["account"]) or "(none)",
                        "cluster": w.group.keys["cluster"],
                        "partition": w.group.keys["partition"],
                        "gpu_type": w.group.keys["gpu_type"],
                        "gpu_hours_lost": w.gpu_hours_lost,
                        "jobs_below_of": f"{w.jobs_below:,} of {w.group.jobs:,}",
                        "p50_cores_per_gpu": w.group.p50_cores_per_gpu,
                        "flag": w.flag,
                    }
                    for w in top_who
                ],
                labels={
                    "gpu_hours_lost": f"GPU-h lost, est. (total, {filters.months_words})",
                    "p50_cores_per_gpu": "P50 cores / GPU (GPU-h weighted)",
                },
            )
    st.markdown(
        "**Settings to paste** (per cluster: slurm.conf lines, or the Lua policy that "
        "`slurm/job_submit.lua` reads)"
    )
    tabs = st.tabs([s.cluster for s in plan.settings])
    for tab, s in zip(tabs, plan.settings, strict=True):
        with tab:
            st.code(s.slurm_conf, language="ini", wrap_lines=True)
            with st.expander("Lua policy (advisor-policy.lua)"):
                st.code(s.lua, language="lua", wrap_lines=True)
    assumptions_caption(assumed)

st.subheader("How many cores per GPU jobs get")
c1, c2 = st.columns(2)
view = c1.segmented_control("Chart", ["Histogram", "ECDF"], default="Histogram", key="ov_view")
# a segmented control can be clicked off (None): fall back to the default
weight_label = (
    c2.segmented_control("Weighted by", ["jobs", "GPU-hours"], default="jobs", key="ov_weight")
    or "jobs"
)
weight = "gpu-hours" if weight_label == "GPU-hours" else "jobs"
column = "gpu_hours" if weight == "gpu-hours" else "jobs"

q = ratio_query(filters, by=("gpu_type",), weight=weight)
report = ratio_summary(key, q)
if not report.groups:
    stop_info(
        "No GPU job matches the filters (cluster, partition, GPU type, time range). "
        "Widen them in the sidebar."
    )
dist = ratio_distribution(key, q)

summary = pd.DataFrame(
    [
        {
            "gpu_type": g.keys["gpu_type"],
            "jobs": g.jobs,
            "gpu_hours": g.gpu_hours,
            "p25_cores_per_gpu": g.p25_cores_per_gpu,
            "p50_cores_per_gpu": g.p50_cores_per_gpu,
            "p90_cores_per_gpu": g.p90_cores_per_gpu,
            "fair_cores_per_gpu": g.fair_share_cores_per_gpu,
            "share_jobs_below_fair_share": g.share_jobs_below_fair_share,
        }
        for g in report.groups
    ]
).sort_values("jobs", ascending=False)
order = list(summary["gpu_type"])
total_jobs = int(summary["jobs"].sum())
if total_jobs < FEW_JOBS:
    st.info(
        f"Small sample: {count_words(total_jobs, 'GPU job')} "
        f"{'matches' if total_jobs == 1 else 'match'} the "
        "filters, too few for the percentiles and shares below to describe a cluster."
    )

cols = st.columns(min(len(order), 4))
for col, row in zip(cols, summary.itertuples(), strict=False):
    col.metric(
        f"{md_name(row.gpu_type)}: P50 cores/GPU",
        cores_text(row.p50_cores_per_gpu),
        f"P25 {cores_text(row.p25_cores_per_gpu)} · {count_words(row.jobs, 'job')}",
        delta_color="off",
        delta_arrow="off",
    )

ecdf_rows = pd.DataFrame(dist.ecdf_records())
ecdf_rows["order"] = ecdf_rows["gpu_type"].map({t: i for i, t in enumerate(order)})
ecdf_rows = ecdf_rows.sort_values(["order", "cores_per_gpu"]).drop(columns="order")
quantiles = summary[["gpu_type", "p25_cores_per_gpu", "p50_cores_per_gpu"]]
fair = summary[["gpu_type", "fair_cores_per_gpu"]].dropna()

# the answer on the distribution: each GPU type's DefCpuPerGPU where most of its GPU time runs
answer = None
if plan is not None and plan.rows:
    by_type = pd.DataFrame([r.__dict__ for r in plan.rows]).sort_values("gpu_hours")
    answer = (
        by_type.groupby("gpu_type", as_index=False)
        .last()[["gpu_type", "def_cpu_per_gpu"]]
        .rename(columns={"def_cpu_per_gpu": "cores_per_gpu"})
    )

st.subheader(f"Distribution ({'share of ' + weight_label})")
if view == "ECDF":
    show_chart("ratio_ecdf", ecdf_rows, weight=column, quantiles=quantiles, recommended=answer)
else:
    show_chart(
        "ratio_histogram",
        ecdf_rows,
        weight=column,
        quantiles=quantiles,
        fair_share=fair,
        recommended=answer,
        width=720,
    )
if view == "ECDF":
    st.caption(
        "One line per GPU type: the share at or below each ratio. Diamonds: its P25 "
        "(at 25%) and P50 (at 50%). Green circle: the recommended cores per GPU, where the "
        "type's line crosses it."
    )
else:
    st.caption(
        "Red rules: P50 (solid) and P25 (dashed) of the chosen weight. Green rule: the "
        "recommended cores per GPU (the DefCpuPerGPU above, where most of the type's GPU time "
        "runs). Grey dotted rule: the node type's fair share (usable CPUs / GPUs per node), "
        "when the node inventory is loaded."
    )

st.subheader("Share below thresholds")
shares = pd.DataFrame(
    [
        {
            "gpu_type": g.keys["gpu_type"],
            "threshold_cores_per_gpu": t,
            "share_jobs": g.share_jobs_below[t],
            "share_gpu_hours": g.share_gpu_hours_below.get(t),
        }
        for g in report.groups
        for t in sorted(g.share_jobs_below)
    ]
)
show_chart(
    "share_below_chart", shares, order=order, width=max(120, min(240, 680 // max(1, len(order))))
)

st.subheader("Per GPU type")
per_type = pd.DataFrame(report.rows())
first = [
    "gpu_type",
    "jobs",
    "gpu_hours",
    "p25",
    "p50",
    "p90",
    "fair_share_cores_per_gpu",
    "share_jobs_below_fair_share",
]
show_table(per_type, first)
excluded_caption(report)
show_usage_block(key, filters, "gpu_type")

types = node_types(key)
with st.expander(f"Node types and their fair share ({len(types)})"):
    if types:
        show_table(
            pd.DataFrame([t.__dict__ for t in types]).assign(
                partitions=lambda d: d["partitions"].map(lambda p: ", ".join(p or ()))
            ),
            [
                "cluster",
                "gpu_type",
                "nodes",
                "cpus_per_node",
                "gpus_per_node",
                "cores_per_gpu",
                "partitions",
            ],
            labels={"cores_per_gpu": "Fair share cores / GPU"},
        )
    else:
        st.caption(
            "No node inventory loaded: load `scontrol show node -o` output to compare jobs with "
            "what their nodes could give them."
        )
