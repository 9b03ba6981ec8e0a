"""Who page: the accounts and users whose jobs lose the most GPU-hours to too few cores, and the
flag each should submit with. GPU-hours lost are estimated as the group's GPU-hours below the
target times the share of those its partition loses (``recommend_partitions``' estimate under
the shared workload assumptions, the same as Overview and Recommend). The target is the model's recommendation for the job's
partition and GPU type (``advisor.recommend.recommend_partitions``) or a fixed number; names
become pseudonyms when the privacy setting is on. ``advisor.ratios.below_target`` ranks the groups
on the cube's counts and summarises only the ones shown."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from advisor import fixplan
from app.assumptions import assumptions, assumptions_caption
from app.chart_view import show_chart
from app.db import db_key
from app.filters import current_filters, display_name
from app.messages import stop_info
from app.model_calls import partition_recommendations
from app.ratio_calls import below_target, excluded_caption, ratio_query
from app.sidebar import require_gpu_jobs, warn_stale, warn_unknown_gpu_types
from app.tables import show_table
from app.usage_block import show_usage_block

st.title("Who loses GPU time to too few cores")
key = db_key()
require_gpu_jobs(key)
warn_unknown_gpu_types(key)
filters = current_filters()
warn_stale(key, filters.clusters)
assumed = assumptions()

c1, c2, c3, c4 = st.columns(4)
who = c1.segmented_control("Who", ["account", "user"], default="account", key="who_by") or "account"
mode = (
    c2.segmented_control(
        "Target",
        ["recommended", "fixed"],
        default="recommended",
        key="who_mode",
        help="recommended: the model's DefCpuPerGPU for each partition and GPU type; "
        "fixed: one number of cores per GPU for every job.",
    )
    or "recommended"
)
fixed = c3.number_input(
    "Fixed target (cores per GPU)",
    min_value=0.25,
    max_value=128.0,
    value=8.0,
    step=1.0,
    key="who_target",
    disabled=mode != "fixed",
)
MOST_SHOWN = fixplan.RANKING_POOL // 2
top_n = c4.slider("Show", min_value=5, max_value=MOST_SHOWN, value=15, key="who_top")

recs = partition_recommendations(key, assumed)
if mode == "recommended":
    targets = fixplan.recommended_targets(recs)
    # no recommendation at all (no model answer): the fixed number, as before
    fixed_target = None if targets else float(fixed)
else:
    targets, fixed_target = (), float(fixed)

q = ratio_query(filters, by=(who, "cluster", "partition", "gpu_type"), weight="gpu-hours")
# Rank on the cube's GPU-hours below for a wide pool, then by GPU-hours lost within it; one
# pool for every "Show" value, so that moving the slider asks the database nothing new.
report = below_target(key, q, targets, fixed_target, fixplan.RANKING_POOL)
if not report.groups_counted:
    stop_info("No GPU job matches the filters. Widen them in the sidebar.")
if not report.groups:
    st.info("No GPU-hours ran below the target with these filters.")
    show_usage_block(key, filters, who)  # what the jobs used, even when none ran below
    st.stop()


# the report's accounts table ranks with the same function
ranked = fixplan.rank_who_loses(report, recs, by_loss=mode == "recommended")
rows = pd.DataFrame(
    [
        {
            who: display_name(w.group.keys[who]) or "(none)",
            "cluster": w.group.keys["cluster"],
            "partition": w.group.keys["partition"],
            "gpu_type": w.group.keys["gpu_type"],
            "jobs": w.group.jobs,
            "gpu_hours": w.group.gpu_hours,
            "gpu_hours_below": w.gpu_hours_below,
            "gpu_hours_lost": w.gpu_hours_lost,
            "share_jobs_below": w.group.share_jobs_below[w.target_cores_per_gpu],
            "p50_cores_per_gpu": w.group.p50_cores_per_gpu,
            "target_cores_per_gpu": w.target_cores_per_gpu,
            "flag": w.flag,
        }
        for w in ranked
    ]
)
rows["label"] = (
    rows[who]
    + " · "
    + rows["cluster"].fillna("?")
    + " / "
    + rows["partition"].fillna("?")
    + " · "
    + rows["gpu_type"]
)
if mode == "recommended":
    # the model's loss is defined against its own recommendation, so it ranks only that mode
    rank, rank_title = "gpu_hours_lost", "GPU-hours lost to too few cores (est.), total"
    columns = [who, "cluster", "partition", "gpu_type", "gpu_hours_lost", "flag", "gpu_hours_below"]
else:
    rank, rank_title = "gpu_hours_below", f"GPU-hours below {fixed:g} cores per GPU, total"
    columns = [who, "cluster", "partition", "gpu_type", "gpu_hours_below", "flag"]
rows = rows.head(top_n)

show_chart(
    "top_bar_chart",
    rows,
    name="label",
    value=rank,
    title=f"{rank_title}, {filters.months_words}",
    limit=top_n,
    tooltip=("gpu_hours_below:Q", "jobs:Q", "flag:N"),
)
# totals over the months chosen, named so (the Overview's figures are per month)
total = f"total, {filters.months_words}"
show_table(
    rows,
    columns + ["share_jobs_below", "p50_cores_per_gpu", "jobs"],
    labels={
        "gpu_hours_below": f"GPU-h below target ({total})",
        "gpu_hours_lost": f"GPU-h lost, est. ({total})",
        "jobs": f"Jobs ({total})",
        # the ranking's query weighs by GPU-hours, unlike the Overview's job-weighted P50
        "p50_cores_per_gpu": "P50 cores / GPU (GPU-h weighted)",
    },
)
st.caption(
    "Each group's jobs below the target should ask for at least the flag shown (or "
    "`--cpus-per-task` = that times the GPUs per task); where its P50 is already there, only "
    "those jobs need to. GPU-hours weighted; a job belongs to the month it started in."
    + (
        " Targets: the model's recommendation per partition and GPU type (see Recommend)."
        if mode == "recommended"
        else ""
    )
)
assumptions_caption(assumed)
excluded_caption(report)
# the page's purpose first: what the jobs used and waited for is evidence below the ranking
show_usage_block(key, filters, who)
