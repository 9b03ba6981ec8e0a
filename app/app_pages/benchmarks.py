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

runs = common.guarded(lambda: common.bench_runs(key, filters))
stored = len(common.guarded(lambda: common.bench_runs(key)))
filtered = stored != len(runs)
if not runs:
    common.stop_info(
        f"None of the {stored:,} stored benchmark runs matches the sidebar's filters "
         "(GPU type, cluster, partition, months of the run's start). Widen them; runs made "
         "outside Slurm record no cluster or partition."
         if stored else
         "No benchmark runs are stored. Run `advisor bench run ...` (or `advisor bench sweep "
         f"--slurm` on a cluster), then `advisor bench collect RESULTS --db {key[0]}`. Until "
         "then the model rests on the research's published points (see Recommend)."
    )

frame = pd.DataFrame([asdict(r) for r in runs])
statuses = frame["status"].value_counts().to_dict()
c1, c2, c3 = st.columns(3)
c1.metric("Runs stored", f"{len(runs):,} of {stored:,}" if filtered else f"{stored:,}")
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
st.caption(
    (f"{len(runs):,} of {stored:,} stored runs match the sidebar's filters. " if filtered else "")
    + "The filters apply to runs as to jobs: GPU type (the run's platform), the Slurm cluster "
    "and partition the run's job ran in (runs made outside Slurm record none and show only "
    "while neither filter is set) and the months of the run's start."
)
