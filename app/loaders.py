"""Cached calls into the core: what is loaded (``advisor.datainfo``) and the generic wrappers
(:func:`cached_core` on this run's connection, :func:`cached_call` for calls that open files
themselves), keyed by the database file's path and modification time so that a new ingest
shows up without restarting the dashboard."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from advisor import datainfo
from app.db import FILE_LOCK, DbKey, connection
from app.filters import Filters
from app.messages import guarded


@st.cache_data(show_spinner=False, max_entries=64)
def filter_options(key: DbKey) -> datainfo.FilterOptions:
    with connection(key) as con:
        return datainfo.filter_options(con)


@st.cache_data(show_spinner=False, max_entries=64)
def gpu_type_counts(key: DbKey, extra_known: tuple[str, ...] = ()) -> list[datainfo.GpuTypeCount]:
    with connection(key) as con:
        return datainfo.gpu_type_counts(con, extra_known)


@st.cache_data(show_spinner=False, max_entries=64)
def ingest_log(key: DbKey, limit: int) -> list[datainfo.IngestRecord]:
    with connection(key) as con:
        return datainfo.ingest_log(con, limit)


@st.cache_data(show_spinner=False, max_entries=64)
def reject_reasons(key: DbKey, limit: int) -> list[datainfo.RejectReason]:
    with connection(key) as con:
        return datainfo.reject_reasons(con, limit)


@st.cache_data(show_spinner=False, max_entries=64)
def recent_rejects(key: DbKey, limit: int) -> list[datainfo.RejectRecord]:
    with connection(key) as con:
        return datainfo.recent_rejects(con, limit)


@st.cache_data(show_spinner=False, max_entries=64)
def bench_runs(key: DbKey, filters: Filters | None = None) -> list[datainfo.BenchRun]:
    """The stored benchmark runs the sidebar's filters select (every run for None)."""
    f = filters or Filters()
    with connection(key) as con:
        return datainfo.bench_runs(
            con,
            platforms=f.gpu_types,
            clusters=f.clusters,
            partitions=f.partitions,
            start=f.since_datetime,
            end=f.until_exclusive,
        )


@st.cache_data(show_spinner=False, max_entries=64, ttl=600)
def freshness(key: DbKey) -> list[datainfo.ClusterFreshness]:
    with connection(key) as con:
        return datainfo.freshness(con)


def cached_core(name: str, key: DbKey, fn: Callable[..., Any], *args: Any) -> Any:
    """Call ``fn(con, *args)`` through ``st.cache_data`` (``name`` + ``args`` are the cache key).

    Used for core functions whose modules are written by other domains (ratios, model, bench):
    ``args`` must be hashable or picklable (frozen dataclasses are).
    """
    return _cached_core(name, key, args, _FunctionRef(fn))


class _FunctionRef:
    """Keeps the function out of Streamlit's cache hashing (its name is part of the key)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn


@st.cache_data(
    show_spinner=False,
    max_entries=512,
    hash_funcs={_FunctionRef: lambda ref: f"{ref.fn.__module__}.{ref.fn.__qualname__}"},
)
def _cached_core(name: str, key: DbKey, args: tuple[Any, ...], ref: _FunctionRef) -> Any:
    with connection(key) as con:
        return ref.fn(con, *args)


@st.cache_data(
    show_spinner=False,
    max_entries=256,
    hash_funcs={_FunctionRef: lambda ref: f"{ref.fn.__module__}.{ref.fn.__qualname__}"},
)
def _cached_call(name: str, args: tuple[Any, ...], ref: _FunctionRef, extra: Any) -> Any:
    with FILE_LOCK:  # such calls open the file themselves: not while the cubes are rewritten
        return ref.fn(*args)


def cached_call(
    name: str, fn: Callable[..., Any], *args: Any, extra: Any = None, guard: bool = True
) -> Any:
    """``fn(*args)`` through ``st.cache_data`` for core calls that open files themselves;
    ``extra`` joins the cache key only (e.g. the model file's modification time). With
    ``guard`` an AdvisorError stops the page in an error box; without, it is raised for a
    page that can go on without the answer."""

    def call() -> Any:
        return _cached_call(name, args, _FunctionRef(fn), extra)

    return guarded(call) if guard else call()
