"""Overview page: how many cores per GPU jobs get, per GPU type (histogram or ECDF with P25 and
P50 marked), the shares of jobs and GPU-hours below thresholds, and the node types' fair share."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import common
from app.usage_block import show_usage_block

st.title("CPU cores per GPU")
key = common.db_key()
common.require_gpu_jobs(key)
common.warn_unknown_gpu_types(key)
filters = common.current_filters()

c1, c2 = st.columns(2)
view = c1.segmented_control("Chart", ["Histogram", "ECDF"], default="Histogram", key="ov_view")
# a segmented control can be clicked off (None): fall back to the default
weight_label = c2.segmented_control(
    "Weighted by", ["jobs", "GPU-hours"], default="jobs", key="ov_weight"
) or "jobs"
weight = "gpu-hours" if weight_label == "GPU-hours" else "jobs"
column = "gpu_hours" if weight == "gpu-hours" else "jobs"

q = common.ratio_query(filters, by=("gpu_type",), weight=weight)
report = common.ratio_summary(key, q)
if not report.groups:
    common.stop_info(
        "No GPU job matches the filters (cluster, partition, GPU type, time range). "
        "Widen them in the sidebar."
    )
dist = common.ratio_distribution(key, q)

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

cols = st.columns(min(len(order), 4))
for col, row in zip(cols, summary.itertuples(), strict=False):
    col.metric(
        f"{row.gpu_type}: P50 cores/GPU",
        f"{row.p50_cores_per_gpu:.2f}",
        f"P25 {row.p25_cores_per_gpu:.2f} · {row.jobs:,} jobs",
        delta_color="off",
        delta_arrow="off",
    )

ecdf_rows = pd.DataFrame(dist.ecdf_records())
ecdf_rows["order"] = ecdf_rows["gpu_type"].map({t: i for i, t in enumerate(order)})
ecdf_rows = ecdf_rows.sort_values(["order", "cores_per_gpu"]).drop(columns="order")
quantiles = summary[["gpu_type", "p25_cores_per_gpu", "p50_cores_per_gpu"]]
fair = summary[["gpu_type", "fair_cores_per_gpu"]].dropna()

st.subheader(f"Distribution ({'share of ' + weight_label})")
if view == "ECDF":
    common.show_chart("ratio_ecdf", ecdf_rows, weight=column, quantiles=quantiles)
else:
    common.show_chart(
        "ratio_histogram", ecdf_rows, weight=column, quantiles=quantiles, fair_share=fair
    )
st.caption(
    "Red rules: P25 (solid) and P50 (dashed) of the chosen weight. Grey dotted rule: the node "
    "type's fair share (usable CPUs / GPUs per node), when the node inventory is loaded."
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
common.show_chart("share_below_chart", shares)

st.subheader("Per GPU type")
st.dataframe(pd.DataFrame(report.rows()), hide_index=True)
common.excluded_caption(report)
show_usage_block(key, filters, "gpu_type")

types = common.node_types(key)
with st.expander(f"Node types and their fair share ({len(types)})"):
    if types:
        st.dataframe(pd.DataFrame([t.__dict__ for t in types]), hide_index=True)
    else:
        st.caption(
            "No node inventory loaded: load `scontrol show node -o` output to compare jobs with "
            "what their nodes could give them."
        )
