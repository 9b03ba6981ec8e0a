"""The sidebar every page shares (the filter widgets, the privacy toggle, the database's size)
and the checks an analysis page makes of the loaded data before it draws anything."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import streamlit as st

from advisor import datainfo
from advisor.wording import count_words
from app.db import DbKey
from app.filters import Filters, months_between
from app.loaders import filter_options, gpu_type_counts
from app.messages import guarded, md_name, stop_info


def sidebar_filters(key: DbKey) -> Filters:
    """Draw the filter widgets in the sidebar and remember the choice for every page."""
    opts = guarded(lambda: filter_options(key))
    sb = st.sidebar
    sb.header("Filters")
    clusters = sb.multiselect("Cluster", opts.clusters, key="f_clusters", placeholder="all")
    partitions = sb.multiselect("Partition", opts.partitions, key="f_partitions", placeholder="all")
    gpu_types = sb.multiselect("GPU type", opts.gpu_types, key="f_gpu_types", placeholder="all")
    first = last = None
    if opts.first_time is not None and opts.last_time is not None:
        months = months_between(opts.first_time, opts.last_time)
        if len(months) > 1:
            chosen = sb.select_slider(
                "Months (job start, UTC)",
                options=months,
                value=(months[0], months[-1]),
                key="f_months",
            )
            first, last = chosen
            if (first, last) == (months[0], months[-1]):
                first = last = None  # the whole span: no time filter at all
    forced = datainfo.hash_users_setting()
    sb.toggle(
        "Hide user and account names",
        value=forced,
        key="hash_users",
        disabled=forced,
        help="Shows stable pseudonyms instead of names (forced on by ADVISOR_HASH_USERS=1).",
    )
    sb.caption(
        f"Database: `{Path(key[0]).name}` · {count_words(opts.jobs, 'job')}, "
        f"{count_words(opts.gpu_jobs, 'GPU job')}"
    )
    filters = Filters(tuple(clusters), tuple(partitions), tuple(gpu_types), first, last)
    st.session_state["_filters"] = filters
    return filters


def require_gpu_jobs(key: DbKey) -> datainfo.FilterOptions:
    """Stop with a clear message when the database has no jobs, or no GPU jobs at all."""
    opts = guarded(lambda: filter_options(key))
    if opts.jobs == 0:
        stop_info(
            "The database has no jobs yet. Load accounting records with "
            f"`advisor ingest FILE --db {key[0]}` (sacct -P text, sacct --json or a jobcomp log)."
        )
    if opts.gpu_jobs == 0:
        stop_info(
            f"The database holds {count_words(opts.jobs, 'job')} but none of them used a GPU, so there is no "
            "CPU-per-GPU ratio to show. GPU counts come from AllocTRES `gres/gpu` (or "
            "`gres/gpu:TYPE`); load records that include that field."
        )
    return opts


def warn_unknown_gpu_types(key: DbKey) -> None:
    """Name the GPU types no family pattern recognised, and how to map them."""
    counts = guarded(lambda: gpu_type_counts(key))
    unknown = [c for c in counts if not c.known]
    if unknown:
        names = ", ".join(
            f"{md_name(c.gpu_type or '(no type)')} ({count_words(c.jobs, 'job')})"
            for c in unknown[:8]
        )
        st.warning(
            f"Unrecognised GPU types: {names}. They are shown under their raw names; map them to "
            "a family with a site mapping file (`ADVISOR_GPU_TYPES=map.json`, e.g. "
            '`{"a100l": "A100"}`) and ingest again.'
        )


def warn_stale(key: DbKey, clusters: Sequence[str] = ()) -> None:
    """A visible warning for each cluster (of ``clusters``; empty: every one) whose newest
    record is older than STALE_DAYS: every figure "per month" then describes that time, not
    now. The same words on every page that shows such figures."""
    import datetime as dt

    from advisor.datainfo import STALE_DAYS
    from advisor.wording import age_words
    from app.loaders import freshness

    for f in guarded(lambda: freshness(key)):
        if clusters and f.cluster not in clusters:
            continue
        if f.age_days is not None and f.age_days > STALE_DAYS:
            since = (f.last_end or f.last_submit or dt.datetime(1970, 1, 1)).date().isoformat()
            st.warning(
                f"**{f.cluster}**: the newest record is **{age_words(f.age_days)}** "
                f"(last job ended {since}); every number here is that old. Load what "
                f"came since with `advisor ingest --sacct --start {since} --db {key[0]}` on the "
                "cluster (or ingest a fresh `sacct` export).",
                icon=":material/schedule:",
            )
