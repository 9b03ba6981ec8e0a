"""Tables for people: every page's tables go through :func:`show_table`, so one column reads
the same everywhere (its label, its number format, months as ``2024-01``, no "None" cells)."""

from __future__ import annotations

import math
import re
from typing import Any, Literal

import streamlit as st

from advisor.wording import cores_text

# column name -> (label, kind); kinds: int, num (two decimals), ratio (cores per GPU), pct
# (a 0-1 share shown as a percentage), usd, text. Every page's tables go through show_table,
# so one column reads the same everywhere.
COLUMNS: dict[str, tuple[str, str]] = {
    "cluster": ("Cluster", "text"),
    "partition": ("Partition", "text"),
    "gpu_type": ("GPU type", "text"),
    "account": ("Account", "text"),
    "user": ("User", "text"),
    "month": ("Month", "text"),
    "jobs": ("Jobs", "int"),
    "gpu_jobs": ("GPU jobs", "int"),
    "gpu_hours": ("GPU-hours", "int"),
    "gpu_hours_below": ("GPU-h below target", "int"),
    "gpu_hours_lost": ("GPU-h lost (est.)", "int"),
    "gpu_hours_lost_per_month": ("Lost GPU-h / month", "int"),
    "lost_usd_per_month": ("Lost $ / month", "usd"),
    "fix_usd_per_month": ("Fix $ / month", "usd"),
    "def_cpu_per_gpu": ("Set DefCpuPerGPU", "int"),
    "basis": ("Decided by", "text"),
    "model_def_cpu_per_gpu": ("Model's answer", "int"),
    "measured_def_cpu_per_gpu": ("Measured answer", "int"),
    "measured_jobs": ("Jobs measured", "int"),
    "model_vs_measured": ("Model vs measured", "text"),
    "min_cpus_per_gpu": ("Minimum cores / GPU", "int"),
    "typical_gpus": ("Typical GPUs / job", "int"),
    "node_max_cpus_per_gpu": ("Node max cores / GPU", "int"),
    "p10_cores_per_gpu": ("P10 cores / GPU", "ratio"),
    "p25_cores_per_gpu": ("P25 cores / GPU", "ratio"),
    "p50_cores_per_gpu": ("P50 cores / GPU", "ratio"),
    "p75_cores_per_gpu": ("P75 cores / GPU", "ratio"),
    "p90_cores_per_gpu": ("P90 cores / GPU", "ratio"),
    "mean_cores_per_gpu": ("Mean cores / GPU", "ratio"),
    "target_cores_per_gpu": ("Target cores / GPU", "ratio"),
    "fair_cores_per_gpu": ("Fair share cores / GPU", "ratio"),
    "fair_share_cores_per_gpu": ("Fair share cores / GPU", "ratio"),
    "share_jobs_below": ("% of jobs below target", "pct"),
    "share_gpu_hours_below": ("% of GPU-h below target", "pct"),
    "share_jobs_below_fair_share": ("% of jobs below fair share", "pct"),
    "jobs_below": ("Jobs below target", "int"),
    "flag": ("Submit with", "text"),
    "jobs_below_of": ("Jobs below the answer", "text"),
    "months_observed": ("Months observed", "num"),
    "fix_vcpu_hours_per_month": ("Extra vCPU-hours / month", "int"),
    "p10": ("P10 cores / GPU", "ratio"),
    "p25": ("P25 cores / GPU", "ratio"),
    "p50": ("P50 cores / GPU", "ratio"),
    "p75": ("P75 cores / GPU", "ratio"),
    "p90": ("P90 cores / GPU", "ratio"),
    "mean": ("Mean cores / GPU", "ratio"),
    "share_gpu_hours_below_fair_share": ("% of GPU-h below fair share", "pct"),
    "cpus_per_node": ("CPUs per node", "int"),
    "gpus_per_node": ("GPUs per node", "int"),
    "nodes": ("Nodes", "int"),
    "cores_per_gpu": ("Cores / GPU", "ratio"),
    "partitions": ("Partitions", "text"),
    "records": ("Records", "int"),
    "ingest_id": ("Load", "text"),
    "source": ("Source", "text"),
    "status": ("Status", "text"),
    "duration_s": ("Duration (s)", "num"),
    "inserted": ("Inserted", "int"),
    "updated": ("Updated", "int"),
    "unchanged": ("Unchanged", "int"),
    "rejected": ("Rejected", "int"),
    "rows_read": ("Rows read", "int"),
    "lines_read": ("Lines read", "int"),
    "age_days": ("Days since newest record", "num"),
    "known": ("Recognised", "text"),
    "model": ("Model", "text"),
    "platform": ("Platform", "text"),
    "gpus": ("GPUs", "int"),
    "attacker_rps": ("Attacker requests/s", "num"),
    "workload": ("Workload", "text"),
    "requests_ok": ("Requests ok", "int"),
    "requests_failed": ("Failed", "int"),
    "requests_timed_out": ("Timed out", "int"),
    "engine": ("Engine", "text"),
    "engine_version": ("Engine version", "text"),
    "spread_pct": ("Spread", "pct100"),
    "runs": ("Repeats", "int"),
    "repeat": ("Repeat", "int"),
    "cores": ("Cores", "int"),
    "ttft_ms": ("TTFT, median of repeats (ms)", "int"),
    "ttft_min_ms": ("Fastest (ms)", "int"),
    "ttft_max_ms": ("Slowest (ms)", "int"),
    "victim_ttft_p50_ms": ("Victim TTFT P50 (ms)", "int"),
    "victim_ttft_p90_ms": ("Victim TTFT P90 (ms)", "int"),
    "run_id": ("Run", "text"),
    "series": ("Series", "text"),
    "flags_text": ("Flags", "text"),
    "started_at": ("Started (UTC)", "text"),
    "finished_at": ("Finished (UTC)", "text"),
    "first_submit": ("Oldest submit (UTC)", "text"),
    "last_submit": ("Newest submit (UTC)", "text"),
    "last_end": ("Newest end (UTC)", "text"),
    "last_ingest": ("Last load (UTC)", "text"),
    "format": ("Format", "text"),
    "compression": ("Compression", "text"),
    "missing_fields": ("Missing fields", "text"),
    "disabled_analyses": ("Analyses off", "text"),
    "reason": ("Reason", "text"),
    "field": ("Field", "text"),
    "example_source": ("First seen in", "text"),
    "example_line_no": ("At line", "int"),
    "example_raw": ("Example line", "text"),
    "line_no": ("Line", "int"),
    "raw": ("Line as read", "text"),
    "ingests": ("Loads", "int"),
    "gpu_type_raw": ("GPU type as recorded", "text"),
    "assumption": ("Assumption", "text"),
    "value": ("Value", "text"),
}
_SHARE_BELOW = re.compile(r"^share_(jobs|gpu_hours)_below_([0-9.]+)$")
# "pct" columns are scaled to 0-100 by show_table: Streamlit's "percent" keeps a varying number
# of decimals, and one share should read like the next.
_FORMATS = {
    "int": "%,.0f",
    "num": "%,.2f",
    "ratio": "%.3g",  # 0.125 stays 0.125, 2 stays 2 (the values are rounded to match)
    "pct": "%.1f%%",
    "usd": "$%,.0f",
    "pct100": "%.0f%%",
}


def column_kind(column: str) -> tuple[str, str]:
    """A column's label for people and its kind (see :data:`COLUMNS`)."""
    m = _SHARE_BELOW.match(column)
    if m:
        what = "jobs" if m.group(1) == "jobs" else "GPU-h"
        return f"% of {what} below {m.group(2)} cores/GPU", "pct"
    return COLUMNS.get(column, (column.replace("_", " ").capitalize(), "auto"))


def table_config(
    columns: list[str],
    labels: dict[str, str] | None = None,
    as_text: set[str] | None = None,
    widths: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Streamlit column configs: a person's label and one number format per kind of column
    (``as_text``: numeric columns already written out as text, see :func:`show_table`);
    ``widths`` in pixels where the table is squeezed to fit, the whole label then on hover."""
    labels = labels or {}
    widths = widths or {}
    out: dict[str, Any] = {}
    for c in columns:
        label, kind = column_kind(c)
        label = labels.get(c, label)
        extra: dict[str, Any] = {"width": widths[c], "help": label} if c in widths else {}
        if c in (as_text or ()):
            out[c] = st.column_config.TextColumn(label, **extra)
        elif kind in _FORMATS:
            out[c] = st.column_config.NumberColumn(label, format=_FORMATS[kind], **extra)
        else:
            out[c] = st.column_config.Column(label, **extra)
    return out


# The width of a page-wide table at a 1400 px window with the sidebar open, the pixels a
# character of a cell or header takes, and the narrowest a squeezed column gets.
TABLE_WIDTH_PX = 940
CHAR_PX = 7.6
MIN_COLUMN_PX = 64


def fitted_widths(df: Any, labels: dict[str, str] | None = None) -> dict[str, int]:
    """Column widths that keep the table within TABLE_WIDTH_PX (none when it fits as it is).
    Cells come first: where every column's longest cell (the first 200 rows) fits, each gets
    that and the room left is shared towards its label's width (a long label then wraps to
    its hover text, a flag or a name is never cut); only where the cells alone do not fit are
    the columns scaled down alike, never under MIN_COLUMN_PX."""
    labels = labels or {}
    natural: dict[str, float] = {}
    cell: dict[str, float] = {}
    for c in df.columns:
        label = labels.get(str(c), column_kind(str(c))[0])
        cells = df[c].head(200).map(lambda v: len(f"{v:,.2f}" if _is_number(v) else str(v)))
        longest_cell = int(cells.max()) if len(cells) else 0
        natural[str(c)] = CHAR_PX * min(max(len(label), longest_cell), 48) + 28
        cell[str(c)] = max(math.ceil(CHAR_PX * min(longest_cell, 48) + 28), MIN_COLUMN_PX)
    if sum(natural.values()) <= TABLE_WIDTH_PX:
        return {}
    if sum(cell.values()) <= TABLE_WIDTH_PX:
        room = TABLE_WIDTH_PX - sum(cell.values())
        more = {c: natural[c] - cell[c] for c in cell if natural[c] > cell[c]}
        share = min(1.0, room / sum(more.values())) if more else 0.0
        return {c: int(w + share * more.get(c, 0.0)) for c, w in cell.items()}
    fixed: dict[str, int] = {}
    while True:  # columns pushed to the floor keep it; the others share what is left
        free = {c: w for c, w in natural.items() if c not in fixed}
        room = TABLE_WIDTH_PX - sum(fixed.values())
        scale = room / sum(free.values()) if free else 1.0
        low = {c for c, w in free.items() if w * scale < MIN_COLUMN_PX}
        if not low:
            return {**fixed, **{c: int(w * scale) for c, w in free.items()}}
        fixed.update(dict.fromkeys(low, MIN_COLUMN_PX))


# The columns of a per-partition table of GPU time lost and what the fix costs (the Overview's
# fix plan, Recommend's partitions), so both pages show the same figures in the same order.
LOSS_COLUMNS: tuple[str, ...] = (
    "partition",
    "gpu_type",
    "def_cpu_per_gpu",
    "basis",
    "gpu_hours_lost_per_month",
    "lost_usd_per_month",
    "fix_usd_per_month",
    "p50_cores_per_gpu",
    "share_gpu_hours_below",
)
# where the cluster measured, the measurement beside the model (issue 49): the standing check
MEASURED_COLUMNS: tuple[str, ...] = (
    "model_def_cpu_per_gpu",
    "measured_def_cpu_per_gpu",
    "measured_jobs",
    "model_vs_measured",
)


def period_labels(period: str) -> dict[str, str]:
    """Labels of the ``*_per_month`` columns for figures covering ``period``
    (``advisor.fixplan.period_words``): none to change for a rate per month."""
    if period == "per month":
        return {}
    return {
        "gpu_hours_lost_per_month": f"Lost GPU-h {period}",
        "lost_usd_per_month": f"Lost $ {period}",
        "fix_usd_per_month": f"Fix $ {period}",
        "fix_vcpu_hours_per_month": f"Extra vCPU-hours {period}",
    }


# What an empty cell says: a table for people never shows a literal "None".
EMPTY_CELL = "—"


def _readable_cells(df: Any) -> tuple[Any, set[str]]:
    """Cells as a table for people reads them: ratios to three significant digits (the format
    "%.3g" then shows 0.125 whole), and no empty cell shown as "None" (a numeric column with
    one becomes text in its own format; a text column says EMPTY_CELL). Also returns the
    numeric columns made text."""
    import math

    out = {}
    as_text: set[str] = set()
    for c in df.columns:
        kind = column_kind(str(c))[1]
        col = df[c]
        if kind == "ratio":
            col = col.map(lambda v: float(f"{v:.3g}") if _is_number(v) else v)
        if not col.isna().any():
            out[c] = col
        elif kind in _FORMATS:
            as_text.add(str(c))
            fmt = _FORMATS[kind].replace(",", "")
            out[c] = col.map(
                lambda v, f=fmt, k=kind: (
                    EMPTY_CELL
                    if v is None or (isinstance(v, float) and math.isnan(v))
                    else _number_text(float(v), f, k)
                )
            )
        else:
            out[c] = col.map(lambda v: EMPTY_CELL if _is_missing(v) else v)
    return (df.assign(**out) if out else df), as_text


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and v == v


def _is_missing(v: Any) -> bool:
    try:
        return v is None or bool(v != v)
    except (TypeError, ValueError):  # an array or list cell: present
        return False


def _number_text(v: float, fmt: str, kind: str) -> str:
    """One number as the column's format shows it (thousands separated, as Streamlit does)."""
    if kind == "ratio":
        return cores_text(v)
    text = fmt % v
    head, _, rest = text.partition(".")
    sign = "-" if head.lstrip("$").startswith("-") else ""
    digits = head.lstrip("$-")
    grouped = f"{int(digits):,}" if digits.isdigit() else digits
    prefix = "$" if head.startswith("$") else ""
    return f"{prefix}{sign}{grouped}" + (f".{rest}" if rest else "")


def month_label(value: Any) -> str:
    """A month as ``2024-01`` whatever it arrives as (timestamp, date or text)."""
    if hasattr(value, "strftime"):
        return str(value.strftime("%Y-%m"))
    return str(value)[:7]


def show_table(
    frame: Any,
    columns: list[str] | None = None,
    labels: dict[str, str] | None = None,
    height: int | Literal["auto", "stretch", "content"] | None = None,
) -> None:
    """A table for people: the ``columns`` given first (else all), labelled and formatted by
    :data:`COLUMNS`, months as ``2024-01``, as wide as the page and never wider (columns
    squeezed by :func:`fitted_widths`), every row shown up to SHOWN_ROWS (``height`` None;
    longer ones scroll)."""
    import pandas as pd

    df = frame if isinstance(frame, pd.DataFrame) else pd.DataFrame(frame)
    if columns is not None:
        df = df[[c for c in columns if c in df.columns]]
    if "month" in df.columns:
        df = df.assign(month=df["month"].map(month_label))
    pct = [c for c in df.columns if column_kind(str(c))[1] == "pct"]
    if pct:
        df = df.assign(**{c: df[c] * 100.0 for c in pct})
    df, as_text = _readable_cells(df)
    if height is None:
        height = "content" if len(df) <= SHOWN_ROWS else "auto"
    st.dataframe(
        df,
        hide_index=True,
        column_config=table_config(list(df.columns), labels, as_text, fitted_widths(df, labels)),
        width="stretch",
        height=height,
    )


# A table of this many rows or fewer is shown whole, without a scroll of its own.
SHOWN_ROWS = 25
