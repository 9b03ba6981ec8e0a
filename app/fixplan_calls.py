"""The Overview's answer for the pages (``advisor.fixplan``): the fix plan for the sidebar's
filters under the shared assumptions, and its headline (interval, share, basis, calibration,
the data's age, the usage evidence)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import Any

import duckdb

from app.assumptions import Assumptions
from app.db import DbKey
from app.filters import Filters
from app.loaders import cached_core, filter_options, freshness
from app.model_calls import model_file, model_key


def fix_plan(key: DbKey, filters: Filters, a: Assumptions) -> Any:
    """``advisor.fixplan.fix_plan`` for the sidebar's filters and the shared assumptions.

    Raises the core's AdvisorError (a broken model file, say) so the page can show it and go on
    with what needs no model."""
    from advisor import fixplan

    # One cached plan of every cluster per month range, narrowed here to the clusters,
    # partitions and GPU types chosen: those filter changes then ask the model nothing new.
    q = fixplan.FixQuery(
        db=key[0],
        clusters=filter_options(key).clusters,
        start=filters.since_datetime,
        end=filters.until_exclusive,
        workload=a.workload,
        tolerance=a.tolerance,
        max_wait=a.max_wait,
        model_file=model_file(),
    )
    plan = cached_core("fix_plan", key, _fix_plan_on, q, model_key())
    return fixplan.merge([plan], filters.partitions, filters.gpu_types, filters.clusters)


def headline(key: DbKey, filters: Filters, plan: Any) -> Any:
    """``advisor.fixplan.plan_headline`` of the narrowed ``plan``: its interval, share, basis,
    calibration, the data's age and the usage evidence for the sidebar's filters."""
    from advisor import fixplan

    q = fixplan.FixQuery(
        db=key[0],
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
        start=filters.since_datetime,
        end=filters.until_exclusive,
    )
    # the hour keys the cache, so that a page left open still shows the data's age rightly
    hour = dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0)
    # the settings carry the time they were written: keyed with them, every re-run missed the
    # cache and the headline was computed again (1 s at 4.65M jobs); it does not read them
    bare = dataclasses.replace(plan, settings=())
    # the data's age scans every job but depends on the data alone: one cached read a file
    fresh = tuple(freshness(key))
    return cached_core("headline", key, fixplan.plan_headline, bare, q, hour, fresh)


def _fix_plan_on(con: duckdb.DuckDBPyConnection, q: Any, _model_key: tuple[str, float]) -> Any:
    """``fixplan.fix_plan`` on this run's connection (``_model_key`` only keys the cache: a
    refitted model file gives new plans)."""
    from advisor import fixplan

    return fixplan.fix_plan(q, con)
