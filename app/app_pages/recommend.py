"""Recommend page: pick GPU type, GPU count, model size and load; see the fitted model's
TTFT-vs-cores curve with its interval, the calibration points behind it, the recommended
``--cpus-per-gpu`` with its predicted gain and cost, and the per-partition recommendation
for the jobs in the database."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from advisor import charts
from app import recommend_view as rv
from app.assumptions import Assumptions, assumptions, set_assumptions
from app.chart_view import show_chart
from app.db import db_key
from app.filters import current_filters
from app.loaders import cached_call, filter_options
from app.messages import guarded, missing_feature
from app.model_calls import (
    calibration_points,
    measured_waits,
    model_file,
    model_key,
    model_params,
    partition_recommendations,
)
from app.sidebar import warn_stale
from app.tables import LOSS_COLUMNS, MEASURED_COLUMNS, period_labels, show_table

st.title("Recommend cores per GPU")
key = db_key()
filters = current_filters()
try:
    from advisor import fixplan, pricing, recommend
except ImportError:
    missing_feature("The recommendation", "advisor.recommend")

book = cached_call("load_pricing", pricing.load_pricing, None)
types = book.gpu_types()
preferred = next(
    (t for t in filters.gpu_types if t in types), "H100" if "H100" in types else types[0]
)

assumed = assumptions()
wl = assumed.workload
recs = partition_recommendations(key)  # observed P50s only: any workload will do

c1, c2, c3, c4 = st.columns(4)
gpu_type = c1.selectbox("GPU type", types, index=types.index(preferred), key="rc_gpu_type")
gpus = c2.selectbox("GPUs per job", [1, 2, 4, 8], index=2, key="rc_gpus")
model_b = c3.number_input(
    "Model size (billion parameters)",
    min_value=0.1,
    max_value=2000.0,
    value=float(wl.model_params_b or 8.0),
    step=1.0,
    key="rc_model_b",
)
load_rps = c4.number_input(
    "Load (long requests per second)",
    min_value=0.1,
    max_value=256.0,
    value=float(wl.load_rps or 8.0),
    step=1.0,
    key="rc_load",
)
c5, c6, c7, c8 = st.columns(4)
token_options = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
prompt_tokens = c5.select_slider(
    "Prompt tokens",
    options=token_options,
    value=wl.prompt_tokens if wl.prompt_tokens in token_options else 16384,
    key="rc_tokens",
)
# "Current" starts at what the chosen partition's jobs of this GPU type get (their P50).
observed = sorted((r for (_, g), r in recs.items() if g == gpu_type), key=lambda r: -r.gpu_hours)
part_names = [r.partition or "(none)" for r in observed]
partition = c6.selectbox(
    "Current allocation: partition",
    part_names + ["Slurm's default"],
    index=0,
    key="rc_partition",
    help="The current cores per GPU start at the median (P50) of this partition's jobs.",
)
chosen = next((r for r in observed if (r.partition or "(none)") == partition), None)
default_now = float(chosen.p50_cores_per_gpu) if chosen else 1.0 / int(gpus)
current = c6.number_input(
    "Current cores per GPU",
    min_value=0.01,
    max_value=256.0,
    value=round(default_now, 2),
    step=0.25,
    key=f"rc_current::{gpu_type}::{gpus}::{partition}",
    help="Slurm gives one CPU per task when a job asks for none: 1/GPUs cores per GPU.",
)
# the control that moves the answer: enough cores = wait at most this (--max-wait)
max_wait = (
    c7.slider(
        "Max CPU wait (% of the time)",
        min_value=1,
        max_value=50,
        value=int(round(assumed.max_wait * 100)),
        step=1,
        key="rc_max_wait",
        help="Enough cores: the engine core and the API server each wait for a CPU at most "
        "this share of the time (--max-wait).",
    )
    / 100.0
)
tolerance = assumed.tolerance
ample_ttft = c8.number_input(
    "TTFT with ample cores (ms, 0: show the slowdown)",
    min_value=0.0,
    max_value=1e6,
    value=0.0,
    step=50.0,
    key="rc_ample",
)

workload = recommend.Workload(
    model_params_b=model_b, load_rps=load_rps, prompt_tokens=prompt_tokens
)
# Every page (Overview, Who) answers under the workload chosen here.
set_assumptions(Assumptions(workload=workload, tolerance=tolerance, max_wait=max_wait))
job = recommend.JobQuery(
    gpu_type=gpu_type,
    gpus=int(gpus),
    workload=workload,
    current_cpus_per_gpu=current,
    tolerance=tolerance,
    max_wait=max_wait,
    ample_ttft_ms=ample_ttft or None,
    db=key[0],
    model_file=model_file(),
)
rec = cached_call("recommend_job", recommend.recommend_job, job, extra=(key, model_key()))
params = model_params()
head = rv.headline(rec, params)

m1, m2, m3 = st.columns(3)
m1.metric(
    "Recommended --cpus-per-gpu",
    f"{rec.cpus_per_gpu}",
    f"{rec.cpus_per_gpu * rec.gpus} CPUs for {rec.gpus} GPUs",
    delta_color="off",
    delta_arrow="off",
    help=f"Submit with `{rec.slurm_option}`.",
)
m2.metric(
    head.effect_label,
    head.effect_value,
    head.effect_short,
    delta_color="off",
    delta_arrow="off",
    help=head.effect_note,
)
m3.metric(head.cost_label, head.cost_value, head.cost_note, delta_color="off", delta_arrow="off")
st.caption(f"{head.effect_value}: {head.effect_note}.")
for w in rec.warnings:
    if "the slowdown shown is the model's cap" in w or "already suffice" in w:
        continue  # said in words above
    st.warning(w)

if rec.wait_curve:
    st.subheader("Predicted CPU wait against cores per GPU: what decides the answer")
    seen = pd.DataFrame(
        measured_waits(
            key,
            (
                rec.gpus,
                rec.tp,
                rec.executor,
                rec.renderer_workers,
                float(rec.assumptions["workload"]["load_rps"]),
                float(rec.assumptions["workload"]["prompt_tokens"]),
            ),
        )
    )
    show_chart(
        "wait_curve_chart",
        charts.wait_curve_frame(rec.wait_curve, int(gpus)),
        max_wait,
        recommended_cores_per_gpu=rec.cpus_per_gpu,
        measured=seen,
    )
    st.caption(
        "Each process's predicted share of the time it waits for a CPU (the wait model, fitted "
        "on the bench's measured run-queue waits; band: 90% interval). Red dashed rule: "
        f"--max-wait {max_wait:.0%}, the most either may wait; green rule: the answer, the "
        "fewest cores per GPU at which both are under it (never below 2 + N). "
        + (
            f"Diamonds: what {seen['series'].nunique()} measured series of this configuration "
            "at a load within 15% of this one waited (median of its phases, line: their range). "
            if not seen.empty
            else "No measured series of this configuration and load to show beside it (one "
            "within 15% of its requests/s and prompt tokens would be). "
        )
        + "The TTFT curve below is evidence beside it."
    )

curve = charts.model_curve_frame(
    params,
    gpus=int(gpus),
    platform=rec.assumptions.get("platform", gpu_type),
    model_params_b=model_b,
    load_rps=load_rps,
    prompt_tokens=prompt_tokens,
    ample_ttft_ms=ample_ttft or None,
    max_cores_per_gpu=max(64.0, float(rec.max_cpus_per_gpu)),
)
training = calibration_points(key, float(params.max_slowdown))
points = charts.calibration_frame(training)
same_gpus = st.toggle("Only calibration points with this GPU count", value=False, key="rc_same")
if same_gpus:
    points = points[points["gpus"] == int(gpus)]
if ample_ttft:
    points = points.assign(ttft_ms=points["slowdown"] * ample_ttft)
    chart_kwargs: dict[str, object] = {}
else:
    chart_kwargs = {
        "value": "slowdown",
        "low": "slowdown_low",
        "high": "slowdown_high",
        "y_title": "TTFT slowdown vs ample cores (log)",
    }
st.subheader("Predicted TTFT against cores per GPU")
show_chart(
    "ttft_curve_chart",
    curve,
    points,
    recommended_cores_per_gpu=rec.cpus_per_gpu,
    current_cores_per_gpu=rec.current_cpus_per_gpu,
    **chart_kwargs,
)
st.caption(
    f"Band: the model's {params.interval:.0%} interval (bootstrap refits plus residual spread); "
    f"it stops at the model's cap ({params.max_slowdown:g}x) where the model predicts timeouts: "
    "values there mean CPU-starved, not a measured slowdown. Dots: the calibration points of "
    + ("this GPU count" if same_gpus else "every platform and GPU count")
    + ", as slowdowns against the fewest-to-best ratio of their series. Green rule: the "
    "recommendation; orange dashed rule: the current allocation. Model error: "
    + rv.validated_error(params)
    + "."
)
off = rv.disagreements(params, training, rec.assumptions.get("platform", gpu_type), int(gpus))
if off:
    st.warning(
        f"{len(off)} measured benchmark points of {off[0].source.split(',')[0]} with {gpus} GPUs "
        "fall outside the curve's interval: "
        + "; ".join(
            f"{d.cores_per_gpu:g} cores/GPU measured {d.measured:.2f}x, "
            f"predicted {d.predicted:.2f}x"
            for d in off[:4]
        )
        + ("; ..." if len(off) > 4 else "")
        + ". Trust the measurements; the model needs a refit (`advisor fit`)."
    )
with st.expander("Assumptions behind this answer"):
    st.markdown(f"Assumed: {Assumptions(workload, tolerance, max_wait).in_words()}.")
    show_table(
        rv.assumption_rows(rec.assumptions), labels={"assumption": "Assumption", "value": "Value"}
    )

st.subheader("Per partition, for the jobs in the database")
opts = guarded(lambda: filter_options(key))
if opts.gpu_jobs == 0:
    st.info(
        "There are no jobs with GPUs in the database (no jobs at all, or CPU jobs only), so "
        f"there is no partition to recommend for. Load accounting records with "
        f"`advisor ingest FILE --db {key[0]}`."
    )
else:
    warn_stale(key, filters.clusters)
    report = cached_call(
        "recommend_by_cluster",
        recommend.recommend_by_cluster,
        recommend.PartitionQuery(
            db=key[0],
            gpu_type=filters.gpu_types[0] if len(filters.gpu_types) == 1 else None,
            partition=filters.partitions[0] if len(filters.partitions) == 1 else None,
            clusters=filters.clusters,
            start=filters.since_datetime,
            end=filters.until_exclusive,
            workload=workload,
            tolerance=tolerance,
            max_wait=max_wait,
            model_file=model_file(),
        ),
        extra=(key, model_key()),
    )
    rows = pd.DataFrame([asdict(r) for r in report.rows])
    if rows.empty:
        st.info("No GPU job matches the partition and GPU type chosen in the sidebar.")
    else:
        measured = bool(rows["measured_jobs"].sum())
        show_table(
            rows,
            ["cluster", *LOSS_COLUMNS, *(MEASURED_COLUMNS if measured else ())],
            labels=period_labels(fixplan.period_words(max(r.span_hours for r in report.rows))),
        )
        same = next(
            (
                r
                for r in report.rows
                if (r.partition or "(none)") == partition and r.gpu_type == gpu_type
            ),
            None,
        )
        if same is not None:  # both numbers are on the page for this partition: say which is which
            st.markdown(rv.job_and_partition(rec, same))
        st.caption(
            "DefCpuPerGPU is the value to set per partition (export it with "
            "`advisor policy export`); where enough of a group's jobs had their CPU pressure "
            "measured, the measured curve decides it (Decided by: measured) and the model's "
            "answer stands beside it; GPU-hours lost assume every GPU job is an LLM server, "
            "except measured jobs, which lose what their own CPU waiting held. "
            "Computed over the jobs of the clusters and months chosen in the sidebar, for the "
            "partition and GPU type chosen there when only one is."
        )
