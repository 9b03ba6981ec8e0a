"""The ratio analytics for the pages (``advisor.ratios``): the sidebar's filters as a
``RatioQuery``, the cached summaries, distributions and below-target rankings (from memory when
the people cubes fit), and the caption of jobs a ratio cannot count."""

from __future__ import annotations

from typing import Any

import streamlit as st

from advisor.wording import count_words
from app.db import DbKey, connection
from app.filters import Filters
from app.loaders import cached_core
from app.messages import guarded


def ratio_query(
    filters: Filters,
    by: tuple[str, ...] = ("gpu_type",),
    weight: str = "jobs",
    thresholds: tuple[float, ...] | None = None,
) -> Any:
    """The sidebar's filters as an ``advisor.ratios.RatioQuery`` (time range on job start)."""
    from advisor import ratios

    kwargs: dict[str, Any] = {}
    if thresholds is not None:
        kwargs["thresholds_cores_per_gpu"] = thresholds
    return ratios.RatioQuery(
        by=by,
        weight=ratios.Weight(weight),
        start=filters.since_datetime,
        end=filters.until_exclusive,
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
        **kwargs,
    )


def ratio_summary(key: DbKey, q: Any) -> Any:
    """``advisor.ratios.ratio_summary`` through the cache (a ``RatioReport``)."""
    from advisor import ratios

    return guarded(lambda: cached_core("ratio_summary", key, ratios.ratio_summary, q))


def below_target(
    key: DbKey,
    q: Any,
    targets: tuple[tuple[str | None, str | None, float], ...],
    fixed: float | None,
    top: int,
) -> Any:
    """``advisor.ratios.below_target`` through the cache (a ``BelowTargetReport``): the ``top``
    groups of ``q`` with the most GPU-hours below their target (per (partition, GPU type) in
    ``targets``, or ``fixed`` cores per GPU)."""
    from advisor import ratios

    tq = ratios.TargetQuery(q, targets_cores_per_gpu=targets, fixed_cores_per_gpu=fixed, top=top)
    report = guarded(lambda: _below_target_in_memory(key, tq))
    if report is not None:
        return report
    return guarded(lambda: cached_core("below_target", key, ratios.below_target, tq))


@st.cache_resource(
    show_spinner="Loading the account and user tables into memory (once per database version)",
    max_entries=1,
)
def people_in_memory(key: DbKey) -> Any:
    """``advisor.ratios.inmemory.PeopleInMemory`` of this file version (None when its cubes are
    stale or too large): one copy for every session, so that ranking accounts and users on each
    click reads memory instead of scanning the cubes (docs/performance.md)."""
    from advisor.ratios.inmemory import PeopleInMemory

    with connection(key) as con:
        return PeopleInMemory.load(con)


@st.cache_data(show_spinner=False, max_entries=256)
def _below_target_in_memory(key: DbKey, tq: Any) -> Any:
    """The ranking from :func:`people_in_memory`, or None for DuckDB to answer."""
    memory = people_in_memory(key)
    return None if memory is None else memory.below_target(tq)


def ratio_distribution(key: DbKey, q: Any) -> Any:
    """``advisor.ratios.ratio_distribution`` through the cache (a ``RatioDistribution``)."""
    from advisor import ratios

    return guarded(lambda: cached_core("ratio_distribution", key, ratios.ratio_distribution, q))


def node_types(key: DbKey) -> list[Any]:
    """``advisor.ratios.fair_share``: every GPU node type and its fair share of cores per GPU."""
    from advisor import ratios

    return guarded(lambda: cached_core("fair_share", key, ratios.fair_share))


# Why a selected job has no cores per GPU, in a person's words.
EXCLUDED_WORDS = {
    "never_started": "that never started",
    "no_gpus": "without GPUs",
    "no_cpus": "without CPUs",
}


def excluded_caption(report: Any) -> None:
    """Say how many jobs the filters selected but the ratio cannot count, and why."""
    if report.excluded_jobs:
        parts = ", ".join(
            count_words(n, "job") + " " + EXCLUDED_WORDS.get(reason, reason.replace("_", " "))
            for reason, n in report.excluded.items()
        )
        st.caption(f"Not counted: {parts}.")
