"""Who page: the accounts and users with the most GPU-hours below the recommended cores per GPU,
and the flag each should submit with. Names become pseudonyms when the privacy setting is on."""

from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from advisor import charts
from app import common

st.title("Who runs below the recommendation")
key = common.db_key()
common.require_gpu_jobs(key)
common.warn_unknown_gpu_types(key)
filters = common.current_filters()

c1, c2, c3 = st.columns(3)
who = c1.segmented_control("Who", ["account", "user"], default="account", key="who_by") or "account"
target = c2.number_input(
    "Recommended cores per GPU", min_value=0.25, max_value=128.0, value=8.0, step=1.0,
    key="who_target",
    help="Jobs below this ratio count as under-provisioned. The research behind advisor saw "
    "TTFT fall 1.4-5.4x when LLM-serving jobs got enough cores per GPU.",
)
top_n = c3.slider("Show", min_value=5, max_value=50, value=15, key="who_top")

q = common.ratio_query(filters, by=(who, "gpu_type"), weight="gpu-hours", thresholds=(target,))
report = common.ratio_summary(key, q)
if not report.groups:
    common.stop_info("No GPU job matches the filters. Widen them in the sidebar.")

flag = f"--cpus-per-gpu={math.ceil(target)}"
rows = pd.DataFrame(
    [
        {
            who: common.display_name(g.keys[who]) or "(none)",
            "gpu_type": g.keys["gpu_type"],
            "jobs": g.jobs,
            "gpu_hours": g.gpu_hours,
            "gpu_hours_below": g.gpu_hours * (g.share_gpu_hours_below[target] or 0.0),
            "share_jobs_below": g.share_jobs_below[target],
            "p50_cores_per_gpu": g.p50_cores_per_gpu,
            "flag": flag,
        }
        for g in report.groups
    ]
)
rows = rows[rows["gpu_hours_below"] > 0].sort_values("gpu_hours_below", ascending=False)
if rows.empty:
    st.success(f"No GPU-hours ran below {target:g} cores per GPU with these filters.")
    st.stop()
rows["label"] = rows[who] + " · " + rows["gpu_type"]

st.altair_chart(
    charts.top_bar_chart(
        rows, name="label", value="gpu_hours_below",
        title=f"GPU-hours below {target:g} cores per GPU", limit=top_n,
        tooltip=["jobs:Q", "share_jobs_below:Q", "flag:N"],
    )
)
st.dataframe(rows.drop(columns=["label"]).head(top_n), hide_index=True)
st.caption(
    f"Each of them should submit with `{flag}` (or `--cpus-per-task` = that times the GPUs per "
    "task). GPU-hours weighted; a job belongs to the month it started in."
)
common.excluded_caption(report)
