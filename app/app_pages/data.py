"""Data page: where the numbers come from. Freshness per cluster, GPU types (unrecognised ones
named), the ingest log, and every rejected record grouped by its reason."""

from __future__ import annotations

from dataclasses import asdict

import pandas as pd
import streamlit as st

from app import common

st.title("Data")
key = common.db_key()
filters = common.current_filters()

fresh = common.guarded(lambda: common.freshness(key))
if filters.clusters:
    fresh = [f for f in fresh if f.cluster in filters.clusters]

st.subheader("Freshness")
if not fresh:
    st.info(
        "No jobs loaded yet. Load accounting records with "
        f"`advisor ingest FILE --db {key[0]}`; every load appears in the log below."
    )
else:
    cols = st.columns(min(len(fresh), 4))
    for col, f in zip(cols, fresh, strict=False):
        age = "unknown" if f.age_days is None else f"{f.age_days:,.1f} days old"
        col.metric(f.cluster, f"{f.jobs:,} jobs", age, delta_color="off", delta_arrow="off")
    st.dataframe(pd.DataFrame([asdict(f) for f in fresh]), hide_index=True)

st.subheader("GPU types")
types = common.guarded(lambda: common.gpu_type_counts(key))
if types:
    common.warn_unknown_gpu_types(key)
    st.dataframe(pd.DataFrame([asdict(t) for t in types]), hide_index=True)
else:
    st.caption("No GPU jobs loaded.")

st.subheader("Ingest log")
log = common.guarded(lambda: common.ingest_log(key, 200))
if filters.clusters:
    log = [i for i in log if i.cluster is None or i.cluster in filters.clusters]
if log:
    st.dataframe(pd.DataFrame([asdict(i) for i in log]), hide_index=True)
else:
    st.caption("Nothing loaded yet.")

st.subheader("Rejected records")
reasons = common.guarded(lambda: common.reject_reasons(key, 100))
if not reasons:
    st.success("No record was rejected.")
else:
    rdf = pd.DataFrame([asdict(r) for r in reasons])
    rdf["label"] = rdf["reason"].str.slice(0, 80) + rdf["field"].map(lambda f: f" [{f}]" if f else "")
    common.show_chart(
        "top_bar_chart", rdf, name="label", value="records", title="rejected records",
        tooltip=("example_source:N", "example_line_no:Q"),
    )
    st.dataframe(rdf.drop(columns=["label"]), hide_index=True)
    with st.expander("Latest rejected records"):
        st.dataframe(
            pd.DataFrame([asdict(r) for r in common.recent_rejects(key, 200)]), hide_index=True
        )
