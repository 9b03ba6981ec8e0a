"""Benchmarks page: the runs ``advisor bench`` stored, their victim TTFT against cores per GPU
(one line per platform, model, GPU count and load) with the fitted model's curve over them, and
the engine core's and API server's measured CPU wait, the quantity the answer is decided on."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from advisor import charts
from advisor.model.waitknee import DEFAULT_MAX_WAIT
from app.chart_view import show_chart
from app.db import db_key
from app.filters import Filters, current_filters
from app.loaders import bench_runs
from app.messages import guarded, stop_info
from app.model_calls import model_params
from app.tables import show_table

st.title("Benchmarks")
key = db_key()
filters = current_filters()

# Runs are measurements of the serving stack, not of the jobs' months: the month range does not
# apply to them (runs made after the newest job would otherwise never show).
run_filters = Filters(filters.clusters, filters.partitions, filters.gpu_types)
runs = guarded(lambda: bench_runs(key, run_filters))
stored = len(guarded(lambda: bench_runs(key)))
filtered = stored != len(runs)
if not runs:
    stop_info(
        f"None of the {stored:,} stored benchmark runs matches the sidebar's filters "
        "(GPU type, cluster, partition). Widen them; runs made "
        "outside Slurm record no cluster or partition."
        if stored
        else "No benchmark runs are stored. Run `advisor bench run ...` (or `advisor bench sweep "
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
    fit = charts.bench_fit_frame(series, model_params()) if show_fit else None
    st.subheader("Victim TTFT P50 against cores per GPU")
    show_chart("bench_curves_chart", series, fit)
    st.caption(
        "Solid line: median of the repeats at each core count; vertical bar: their range "
        "(fastest to slowest repeat). Dashed: the fitted model for the same platform, GPUs, "
        "model size and load, anchored at the run with the most cores."
    )
    noisy = series[(series["runs"] > 1) & (series["spread_pct"] > 20.0)]
    if not noisy.empty:
        st.warning(
            f"{len(noisy):,} core counts have repeats more than 20% apart (slowest against "
            "fastest, over the median): their medians are uncertain. "
            + "; ".join(
                f"{r.series} at {r.cores_per_gpu:g} cores/GPU: {r.spread_pct:.0f}%"
                for r in noisy.head(5).itertuples()
            )
        )
    show_table(
        series,
        ["series", "cores_per_gpu", "runs", "ttft_ms", "ttft_min_ms", "ttft_max_ms", "spread_pct"],
        labels={"series": "Series"},
    )

waits = charts.bench_wait_frame(frame)
if not waits.empty:
    st.subheader("Measured CPU wait against cores per GPU: what decides the answer")
    show_chart("bench_wait_chart", waits, DEFAULT_MAX_WAIT)
    st.caption(
        "The share of each phase the engine core and the API server were runnable but waited "
        "for a CPU (their threads' run-queue time), median of the repeats; bar: their range. "
        f"Red dashed rule: --max-wait {DEFAULT_MAX_WAIT:.0%}, the most either may wait: the "
        "answer is the fewest cores per GPU at which both are under it. The wait model that "
        "gives every recommendation is fitted on these curves; the TTFT curves above are "
        "evidence beside them."
    )
elif not series.empty:
    st.caption(
        "No stored run recorded its processes' CPU wait (runs made before the bench sampled "
        "run-queue time): only TTFT is shown."
    )

st.subheader("Runs")
flag_col = next((c for c in ("flag_reasons", "flags") if c in frame.columns), None)
if flag_col is not None:
    frame["flags_text"] = frame[flag_col].map(
        lambda v: "; ".join(map(str, v)) if isinstance(v, (list, tuple)) else (v or "")
    )
    flagged = frame[frame["flags_text"] != ""]
    if not flagged.empty:
        st.warning(
            f"{len(flagged):,} runs carry flags from the benchmark (see the Flags column): "
            + "; ".join(f"{r.run_id}: {r.flags_text}" for r in flagged.head(5).itertuples())
        )
show_table(
    frame,
    [
        "run_id",
        "status",
        "flags_text",
        "platform",
        "model",
        "gpus",
        "cores_per_gpu",
        "attacker_rps",
        "repeat",
        "victim_ttft_p50_ms",
        "requests_timed_out",
        "cluster",
        "partition",
        "started_at",
    ],
    labels={
        "flags_text": "Flags",
        "run_id": "Run",
        "cores_per_gpu": "Cores / GPU",
        "attacker_rps": "Load (req/s)",
        "requests_timed_out": "Timed out",
    },
)
st.caption(
    (f"{len(runs):,} of {stored:,} stored runs match the sidebar's filters. " if filtered else "")
    + "The filters apply to runs as to jobs: GPU type (the run's platform) and the Slurm cluster "
    "and partition the run's job ran in (runs made outside Slurm record none and show only "
    "while neither filter is set). The month range does not apply: runs are measurements of the "
    "serving stack, whenever they were made."
)
