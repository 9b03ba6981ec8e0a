"""Recommend page: pick GPU type, GPU count, model size and load; see the fitted model's
TTFT-vs-cores curve with its interval, the calibration points behind it, the recommended
``--cpus-per-gpu`` with its predicted gain and cost, and the per-partition recommendation
for the jobs in the database."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from advisor import charts
from app import common

st.title("Recommend cores per GPU")
key = common.db_key()
filters = common.current_filters()
try:
    from advisor import pricing, recommend
except ImportError:
    common.missing_feature("The recommendation", "advisor.recommend")

book = common.cached_call("load_pricing", pricing.load_pricing, None)
types = book.gpu_types()
preferred = next((t for t in filters.gpu_types if t in types), "H100" if "H100" in types else types[0])

c1, c2, c3, c4 = st.columns(4)
gpu_type = c1.selectbox("GPU type", types, index=types.index(preferred), key="rc_gpu_type")
gpus = c2.selectbox("GPUs per job", [1, 2, 4, 8], index=2, key="rc_gpus")
model_b = c3.number_input("Model size (billion parameters)", min_value=0.1, max_value=2000.0,
                          value=8.0, step=1.0, key="rc_model_b")
load_rps = c4.number_input("Load (long requests per second)", min_value=0.1, max_value=256.0,
                           value=8.0, step=1.0, key="rc_load")
c5, c6, c7, c8 = st.columns(4)
prompt_tokens = c5.select_slider(
    "Prompt tokens", options=[1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072],
    value=16384, key="rc_tokens",
)
current = c6.number_input(
    "Current cores per GPU (0: Slurm's default)", min_value=0.0, max_value=256.0, value=0.0,
    step=0.25, key="rc_current",
    help="Slurm gives one CPU per task when a job asks for none: 1/GPUs cores per GPU.",
)
tolerance = c7.slider("Within % of ample cores", min_value=5, max_value=50, value=10, step=5,
                      key="rc_tol") / 100.0
ample_ttft = c8.number_input(
    "TTFT with ample cores (ms, 0: show the slowdown)", min_value=0.0, max_value=1e6,
    value=0.0, step=50.0, key="rc_ample",
)

workload = recommend.Workload(model_params_b=model_b, load_rps=load_rps, prompt_tokens=prompt_tokens)
job = recommend.JobQuery(
    gpu_type=gpu_type, gpus=int(gpus), workload=workload,
    current_cpus_per_gpu=current or None, tolerance=tolerance,
    ample_ttft_ms=ample_ttft or None, db=key[0], model_file=common.model_file(),
)
rec = common.cached_call(
    "recommend_job", recommend.recommend_job, job, extra=(key, common.model_key())
)

m1, m2, m3, m4 = st.columns(4)
m1.metric("Recommended --cpus-per-gpu", f"{rec.cpus_per_gpu}",
          f"{rec.cpus_per_gpu * rec.gpus} CPUs for {rec.gpus} GPUs", delta_color="off",
          delta_arrow="off", help=f"Submit with `{rec.slurm_option}`.")
lo, hi = rec.speedup_interval
m2.metric("Predicted TTFT speed-up", f"{rec.predicted_speedup:.2f}x",
          f"interval {lo:.2f}x to {'open' if hi == float('inf') else f'{hi:.2f}x'}",
          delta_color="off", delta_arrow="off")
m3.metric("Extra cost", f"${rec.usd_per_hour_delta:.2f}/h",
          f"{rec.cost_delta_pct:.2f}% of the GPUs' share of {rec.instance}",
          delta_color="off", delta_arrow="off")
m4.metric("Now (cores per GPU)", f"{rec.current_cpus_per_gpu:g}",
          "pathological: CPU-starved" if rec.pathological_now else
          f"slowdown {rec.slowdown_now:.2f}x", delta_color="off", delta_arrow="off")
for w in rec.warnings:
    st.warning(w)

params = common.model_params()
curve = charts.model_curve_frame(
    params, gpus=int(gpus), platform=rec.assumptions.get("platform", gpu_type),
    model_params_b=model_b, load_rps=load_rps, prompt_tokens=prompt_tokens,
    ample_ttft_ms=ample_ttft or None, max_cores_per_gpu=max(64.0, float(rec.max_cpus_per_gpu)),
)
points = charts.calibration_frame(common.calibration_points(key, float(params.max_slowdown)))
same_gpus = st.toggle("Only calibration points with this GPU count", value=False, key="rc_same")
if same_gpus:
    points = points[points["gpus"] == int(gpus)]
if ample_ttft:
    points = points.assign(ttft_ms=points["slowdown"] * ample_ttft)
    chart_kwargs: dict[str, object] = {}
else:
    chart_kwargs = {"value": "slowdown", "low": "slowdown_low", "high": "slowdown_high",
                    "y_title": "TTFT slowdown vs ample cores (log)"}
st.subheader("Predicted TTFT against cores per GPU")
common.show_chart("ttft_curve_chart", curve, points, recommended_cores_per_gpu=rec.cpus_per_gpu,
                  **chart_kwargs)
st.caption(
    f"Band: the model's {params.interval:.0%} interval (bootstrap refits plus residual spread); "
    f"it is open above where the model predicts timeouts (capped at {params.max_slowdown:g}x). "
    "Dots: the calibration points of every platform and GPU count, as slowdowns against the "
    "fewest-to-best ratio of their series. Green rule: the recommendation."
)
with st.expander("Assumptions behind this answer"):
    st.json(rec.assumptions)

st.subheader("Per partition, for the jobs in the database")
opts = common.guarded(lambda: common.filter_options(key))
if opts.gpu_jobs == 0:
    st.info(
        "There are no jobs with GPUs in the database (no jobs at all, or CPU jobs only), so "
        f"there is no partition to recommend for. Load accounting records with "
        f"`advisor ingest FILE --db {key[0]}`."
    )
else:
    report = common.cached_call(
        "recommend_partitions",
        recommend.recommend_partitions,
        recommend.PartitionQuery(
            db=key[0],
            gpu_type=filters.gpu_types[0] if len(filters.gpu_types) == 1 else None,
            partition=filters.partitions[0] if len(filters.partitions) == 1 else None,
            clusters=filters.clusters, start=filters.since_datetime,
            end=filters.until_exclusive,
            workload=workload, tolerance=tolerance, model_file=common.model_file(),
        ),
        extra=(key, common.model_key()),
    )
    rows = pd.DataFrame([asdict(r) for r in report.rows])
    if rows.empty:
        st.info("No GPU job matches the partition and GPU type chosen in the sidebar.")
    else:
        st.dataframe(rows, hide_index=True)
        st.caption(
            "`def_cpu_per_gpu` is the DefCpuPerGPU to set per partition (export it with "
            "`advisor policy export`); GPU-hours lost assume every GPU job is an LLM server. "
            "Computed over the jobs of the clusters and months chosen in the sidebar, for the "
            "partition and GPU type chosen there when only one is."
        )
