"""Benchmarks page: the runs ``advisor bench`` stored, their victim TTFT against cores per GPU
(one line per platform, model, GPU count and load), and the fitted model's curve over them."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from advisor import charts
from app import common

st.title("Benchmarks")
key = common.db_key()
filters = common.current_filters()

runs = common.guarded(lambda: common.bench_runs(key))
if filters.gpu_types:
    runs = [r for r in runs if r.platform in filters.gpu_types]
if not runs:
    common.stop_info(
        "No benchmark runs are stored"
        + (" for the GPU types chosen in the sidebar" if filters.gpu_types else "")
        + ". Run `advisor bench run ...` (or `advisor bench sweep --slurm` on a cluster), then "
        f"`advisor bench collect RESULTS --db {key[0]}`. Until then the model rests on the "
        "research's published points (see Recommend)."
    )

frame = pd.DataFrame([asdict(r) for r in runs])
statuses = frame["status"].value_counts().to_dict()
c1, c2, c3 = st.columns(3)
c1.metric("Runs stored", f"{len(frame):,}")
c2.metric("Runs ok", f"{statuses.get('ok', 0):,}")
c3.metric("Crashed, hung or timed out", f"{len(frame) - statuses.get('ok', 0):,}")

series = charts.bench_series_frame(frame)
if series.empty:
    st.warning("No run finished with a victim TTFT: every stored run failed, hung or timed out.")
else:
    show_fit = st.toggle("Show the fitted model", value=True, key="bn_fit")
    fit = charts.bench_fit_frame(series, common.model_params()) if show_fit else None
    st.subheader("Victim TTFT P50 against cores per GPU")
    common.show_chart("bench_curves_chart", series, fit)
    st.caption(
        "Solid: median of the repeats of each core count. Dashed: the fitted model for the same "
        "platform, GPUs, model size and load, anchored at the run with the most cores."
    )

st.subheader("Runs")
st.dataframe(frame, hide_index=True)
