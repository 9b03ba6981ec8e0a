"""Charts on a page: ``advisor.charts`` builders (the ones the report draws too) drawn as
Vega-Lite, their specs cached by their inputs."""

from __future__ import annotations

from typing import Any

import streamlit as st


@st.cache_data(show_spinner=False, max_entries=512)
def _chart_spec(builder: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    from advisor import charts

    chart = getattr(charts, builder)(*args, **kwargs)
    # advisor's chart tests validate every builder's spec against the Vega-Lite schema; here
    # validating again would cost more than the rest of a cached re-run.
    spec: dict[str, Any] = chart.to_dict(validate=False)
    if not any(k in spec for k in ("facet", "hconcat", "vconcat", "concat", "repeat")):
        spec["width"] = "container"  # a single view takes the page's width
    return spec


def show_chart(builder: str, *args: Any, **kwargs: Any) -> None:
    """Draw ``advisor.charts.<builder>(*args, **kwargs)``; the spec is cached by its inputs
    (building an altair chart costs more than the rest of a cached page re-run)."""
    spec = _chart_spec(builder, args, kwargs)
    st.vega_lite_chart(spec, width="stretch" if spec.get("width") == "container" else "content")
