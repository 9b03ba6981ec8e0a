"""Trends page: P25 and P50 cores per GPU by month, split by cluster, partition or GPU type,
the share of GPU-hours below a threshold, the GPU-hours and dollars lost against today's answer,
and the measured CPU pressure, by month."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from advisor.errors import AdvisorError
from app.assumptions import assumptions
from app.chart_view import show_chart
from app.common import FEW_JOBS
from app.db import db_key
from app.filters import current_filters
from app.fixplan_calls import fix_plan
from app.messages import stop_info
from app.ratio_calls import excluded_caption, ratio_query, ratio_summary
from app.sidebar import require_gpu_jobs, warn_stale, warn_unknown_gpu_types
from app.tables import month_label, show_table
from app.trend_view import show_loss_trend, show_pressure_trend

st.title("Trends by month")
key = db_key()
require_gpu_jobs(key)
warn_unknown_gpu_types(key)
filters = current_filters()
warn_stale(key, filters.clusters)

c1, c2, c3 = st.columns(3)
split_label = c1.segmented_control(
    "Split by", ["cluster", "partition", "GPU type"], default="cluster", key="tr_split"
)
split = {"cluster": "cluster", "partition": "partition", "GPU type": "gpu_type"}[
    split_label or "cluster"
]
weight_label = (
    c2.segmented_control("Weighted by", ["jobs", "GPU-hours"], default="jobs", key="tr_weight")
    or "jobs"
)
weight = "gpu-hours" if weight_label == "GPU-hours" else "jobs"
# the threshold starts at the recommendation (of the partition with the most GPU-hours)
try:
    main = fix_plan(key, filters, assumptions()).main_row
except AdvisorError:  # no model answer: the charts need none, the threshold starts at 8
    main = None
recommended = float(main.def_cpu_per_gpu) if main else 8.0
choices = sorted({1.0, 2.0, 4.0, 8.0, 16.0, recommended})
threshold = c3.selectbox(
    "Threshold (cores per GPU)",
    choices,
    index=choices.index(recommended),
    format_func=lambda t: f"{t:g}" + (" (recommended)" if main and t == recommended else ""),
    key="tr_threshold",
    help=(
        f"Starts at the recommended DefCpuPerGPU of partition {main.partition or '(none)'} "
        f"({main.gpu_type}), which has the most GPU-hours."
        if main
        else "No recommendation available: starts at 8."
    ),
)

q = ratio_query(filters, by=("month", split), weight=weight, thresholds=(threshold,))
report = ratio_summary(key, q)
if not report.groups:
    stop_info("No GPU job matches the filters. Widen them in the sidebar.")

rows = pd.DataFrame(
    [
        {
            "month": pd.Timestamp(f"{g.keys['month']}-01"),
            split: str(g.keys[split]),
            "jobs": g.jobs,
            "gpu_hours": g.gpu_hours,
            "p25_cores_per_gpu": g.p25_cores_per_gpu,
            "p50_cores_per_gpu": g.p50_cores_per_gpu,
            "share_jobs_below": g.share_jobs_below[threshold],
            "share_gpu_hours_below": g.share_gpu_hours_below[threshold],
        }
        for g in report.groups
        if g.keys.get("month")
    ]
)

few = rows[rows["jobs"] < FEW_JOBS]
few_note = (
    "Faded points off the lines: months with fewer than "
    f"{FEW_JOBS} jobs, whose percentiles rest on few jobs ("
    + "; ".join(
        f"{month_label(m)} {g}: {n:,}"
        for m, g, n in few[["month", split, "jobs"]].head(12).itertuples(index=False)
    )
    + ("; ..." if len(few) > 12 else "")
    + ")."
    if not few.empty
    else ""
)

st.subheader(f"P25 and P50 cores per GPU, by {split_label}")
show_chart("trend_chart", rows, group=split, min_jobs=FEW_JOBS)
st.caption("Solid: P50 (the median job). Dashed: P25 (a quarter of jobs get less). " + few_note)

st.subheader(f"Share below {threshold:g} cores per GPU")
show_chart(
    "share_trend_chart",
    rows,
    group=split,
    threshold_cores_per_gpu=threshold,
    min_jobs=FEW_JOBS,
)
st.caption("Solid: share of GPU-hours. Dashed: share of jobs. " + few_note)

show_loss_trend(key, filters, split, split_label or "cluster")
show_pressure_trend(key, filters, split, split_label or "cluster")

with st.expander("The numbers"):
    show_table(
        rows.sort_values(["month", split]),
        [
            "month",
            split,
            "jobs",
            "gpu_hours",
            "p25_cores_per_gpu",
            "p50_cores_per_gpu",
            "share_jobs_below",
            "share_gpu_hours_below",
        ],
        labels={
            "share_jobs_below": f"% of jobs below {threshold:g} cores/GPU",
            "share_gpu_hours_below": f"% of GPU-h below {threshold:g} cores/GPU",
        },
    )
excluded_caption(report)
