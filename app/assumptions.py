"""The workload every page's recommendation assumes (set on Recommend, read by Overview, Who and
Recommend), kept in the session so that two pages never answer under different assumptions."""

from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from advisor.recommend import Workload


@dataclass(frozen=True)
class Assumptions:
    """The workload every page's recommendation assumes (set on Recommend, read everywhere), so
    that two pages never answer the same question under different assumptions."""

    workload: Workload = Workload(model_params_b=8.0, load_rps=8.0, prompt_tokens=16384)
    tolerance: float = 0.10  # the TTFT curve's evidence band only; the answer follows max_wait
    max_wait: float = 0.15  # enough cores: the engine core and API server wait at most this

    def in_words(self) -> str:
        from advisor import fixplan

        return fixplan.assumptions_in_words(self.workload, self.max_wait)


def assumptions() -> Assumptions:
    """The shared assumptions (defaults until the Recommend page changes them)."""
    a = st.session_state.get("_assumptions")
    return a if isinstance(a, Assumptions) else Assumptions()


def set_assumptions(a: Assumptions) -> None:
    st.session_state["_assumptions"] = a


def assumptions_caption(a: Assumptions) -> None:
    st.caption(f"Assumed: {a.in_words()}. Change this on the Recommend page; every page uses it.")
