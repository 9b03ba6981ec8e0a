"""Data page: where the numbers come from. Freshness per cluster, GPU types (unrecognised ones
named), the ingest log, and every rejected record grouped by its reason."""

from __future__ import annotations

import os
from dataclasses import asdict

import pandas as pd
import streamlit as st

from advisor import datainfo
from advisor.wording import age_words, count_words
from app.chart_view import show_chart
from app.common import STALE_DAYS
from app.db import db_key
from app.filters import current_filters, hash_users
from app.loaders import freshness, gpu_type_counts, ingest_log, recent_rejects, reject_reasons
from app.messages import guarded
from app.sidebar import warn_stale, warn_unknown_gpu_types
from app.tables import show_table

st.title("Data")
key = db_key()
filters = current_filters()

fresh = guarded(lambda: freshness(key))
if filters.clusters:
    fresh = [f for f in fresh if f.cluster in filters.clusters]

st.subheader("Freshness")
if not fresh:
    st.info(
        "No jobs loaded yet. Load accounting records with "
        f"`advisor ingest FILE --db {key[0]}`; every load appears in the log below."
    )
else:
    warn_stale(key, filters.clusters)
    cols = st.columns(min(len(fresh), 4))
    for col, f in zip(cols, fresh, strict=False):
        age = "age unknown" if f.age_days is None else f"newest record {age_words(f.age_days)}"
        stale = f.age_days is not None and f.age_days > STALE_DAYS
        col.metric(
            f.cluster,
            count_words(f.jobs, "job"),
            age,
            delta_color="inverse" if stale else "off",
            delta_arrow="off",
        )
    ages = pd.DataFrame([asdict(f) for f in fresh])
    # whole days, as every sentence says the age
    ages["age_days"] = ages["age_days"].map(lambda d: None if d is None else round(d))
    show_table(
        ages,
        [
            "cluster",
            "jobs",
            "gpu_jobs",
            "age_days",
            "last_submit",
            "last_end",
            "last_ingest",
            "first_submit",
        ],
        labels={
            "age_days": "Days since newest record",
            "last_submit": "Newest submit (UTC)",
            "last_end": "Newest end (UTC)",
            "last_ingest": "Last load (UTC)",
            "first_submit": "Oldest submit (UTC)",
        },
    )

st.subheader("GPU types")
types = guarded(lambda: gpu_type_counts(key))
if types:
    warn_unknown_gpu_types(key)
    show_table(pd.DataFrame([asdict(t) for t in types]))
else:
    st.caption("No GPU jobs loaded.")

st.subheader("Ingest log")
log = guarded(lambda: ingest_log(key, 200))
if filters.clusters:
    log = [i for i in log if i.cluster is None or i.cluster in filters.clusters]
if log:
    show_table(
        pd.DataFrame([asdict(i) for i in log]),
        [
            "ingest_id",
            "source",
            "cluster",
            "status",
            "finished_at",
            "duration_s",
            "inserted",
            "updated",
            "rejected",
            "lines_read",
            "format",
            "missing_fields",
            "disabled_analyses",
        ],
    )
    st.caption(
        "Every field of each load (unchanged jobs, rows read, compression, start time): "
        "`advisor data status --format json` (its `ingests`)."
    )
else:
    st.caption("Nothing loaded yet.")

st.subheader("Rejected records")
reasons = guarded(lambda: reject_reasons(key, 100))
# with names hidden, a rejected line's text is withheld and the names a reason quotes hashed
private = hash_users()
salt = os.environ.get(datainfo.HASH_SALT_ENV, "")
if private:
    reasons = datainfo.private_reasons(reasons, salt)
if not reasons:
    st.success("No record was rejected.")
else:
    rdf = pd.DataFrame([asdict(r) for r in reasons])
    rdf["label"] = rdf["reason"].str.slice(0, 80) + rdf["field"].map(
        lambda f: f" [{f}]" if f else ""
    )
    show_chart(
        "top_bar_chart",
        rdf,
        name="label",
        value="records",
        title="rejected records",
        tooltip=("example_source:N", "example_line_no:Q"),
    )
    show_table(rdf.drop(columns=["label"]))
    with st.expander("Latest rejected records"):
        rejects = recent_rejects(key, 200)
        if private:
            st.caption(
                "User and account names are hidden, so the text of each rejected line is "
                "withheld; its file and line number say where to look."
            )
            rejects = datainfo.private_rejects(rejects, salt)
        show_table(pd.DataFrame([asdict(r) for r in rejects]))
