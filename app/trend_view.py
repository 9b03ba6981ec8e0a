"""The Trends page's loss and pressure by month: what the jobs of each month lost against
today's answer (``advisor.report.trend.loss_by_month``) and what the measured ones waited for
(``advisor.pressure.summary.pressure_groups`` by month)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import streamlit as st

from advisor.errors import AdvisorError
from app.assumptions import assumptions
from app.chart_view import show_chart
from app.db import DbKey
from app.filters import Filters
from app.loaders import cached_core
from app.messages import guarded
from app.model_calls import model_file, model_key, partition_recommendations
from app.usage_block import pressure_query

SUMMED = (
    "gpu_hours",
    "gpu_hours_below",
    "gpu_hours_lost",
    "gpu_hours_lost_low",
    "gpu_hours_lost_high",
    "usd_lost",
    "usd_lost_low",
    "usd_lost_high",
    "gpu_hours_measured",
)


def _by_month(rows: list[dict[str, Any]], split: str) -> pd.DataFrame:
    """The loss rows summed per month and ``split`` (the interval ends added up: one set of
    refits judges every row, so they rise and fall together)."""
    frame = pd.DataFrame(rows)
    frame[split] = frame[split].fillna("(none)").astype(str)
    out = frame.groupby(["month", split], as_index=False)[list(SUMMED)].sum(min_count=1)
    out["month"] = pd.to_datetime(out["month"] + "-01")
    return out


def _loss_on(
    con: Any, q: Any, answers: tuple[tuple[Any, float], ...], _model_key: tuple[str, float]
) -> list[dict[str, Any]]:
    """``loss_by_month`` on this run's connection against the pages' own answers
    (``_model_key`` only keys the cache)."""
    from advisor.report.trend import loss_by_month

    return loss_by_month(q, con, dict(answers))


def show_loss_trend(key: DbKey, filters: Filters, split: str, split_label: str) -> None:
    """GPU-hours lost and their price by month, each with its 90% band."""
    from advisor.report.trend import LossTrendQuery

    a = assumptions()
    q = LossTrendQuery(
        db=key[0],
        start=filters.since_datetime,
        end=filters.until_exclusive,
        clusters=filters.clusters,
        partitions=filters.partitions,
        gpu_types=filters.gpu_types,
        workload=a.workload,
        max_wait=a.max_wait,
        model_file=model_file(),
    )
    st.subheader(f"GPU-hours lost to too few cores, by {split_label}")
    try:
        # the answers every page judges against, computed once (Who, Overview) and read here
        recs = partition_recommendations(key, a, guard=False)
        answers = tuple(sorted(((k, float(r.def_cpu_per_gpu)) for k, r in recs.items()), key=str))
        rows = cached_core("loss_by_month", key, _loss_on, q, answers, model_key())
    except AdvisorError as exc:  # no model answer: the charts above need none
        st.info(f"No loss by month without the model's answer: {exc}")
        return
    if not rows:
        st.info("No job of these months ran below the recommended cores per GPU: nothing lost.")
        return
    frame = _by_month(rows, split)
    show_chart("loss_trend_chart", frame, group=split)
    st.caption(
        "Each month's jobs against today's answer for their partition and GPU type (under the "
        "load set on Recommend), so that a change is the jobs' change: the monthly report's "
        "estimate, in which measured jobs lose what their own CPU pressure held and the model "
        "speaks for the rest; an upper bound (every GPU job counted as an LLM server). Band: "
        "the model's 90% interval."
    )
    priced = frame[frame["usd_lost"].notna()]
    if not priced.empty:
        st.subheader(f"What it cost (USD at the GPU's hourly price), by {split_label}")
        show_chart(
            "loss_trend_chart",
            priced,
            group=split,
            value="usd_lost",
            y_title="USD lost (est.)",
            value_format="$,.0f",
        )
        unpriced = sorted({str(r["gpu_type"]) for r in rows if r["usd_lost"] is None})
        st.caption(
            "The lost GPU-hours at the reference instance's price per GPU-hour (on demand)."
            + (f" Left out, no price for the GPU type: {', '.join(unpriced)}." if unpriced else "")
        )


def show_pressure_trend(key: DbKey, filters: Filters, split: str, split_label: str) -> None:
    """The measured jobs' stall share by month, and how much of the GPU time was measured;
    nothing where no job was measured."""
    from advisor.pressure.summary import any_records, pressure_groups

    if not guarded(lambda: cached_core("pressure_any", key, any_records)):
        return
    q = pressure_query(filters, ("month", split))
    rows = guarded(lambda: cached_core("pressure_groups", key, pressure_groups, q))
    measured = [r for r in rows if r["jobs_measured"]]
    if not measured:
        return
    frame = pd.DataFrame(measured)
    frame["month"] = pd.to_datetime(frame["month"].astype(str).str[:7] + "-01")
    frame[split] = frame[split].fillna("(none)").astype(str)
    st.subheader(f"Measured CPU pressure, by {split_label}")
    show_chart("pressure_trend_chart", frame, group=split)
    st.caption(
        "Solid: the share of the measured jobs' time at least one task waited for a CPU (PSI "
        "some, GPU-hour weighted). Dashed: the share of the GPU-hours whose jobs were measured. "
        "Per group: `advisor pressure summary --by month`."
    )
