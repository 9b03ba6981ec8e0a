"""Recommend page (wired to its core functions as they land)."""

from __future__ import annotations

import streamlit as st

from app import common

st.title("Recommend")
key = common.db_key()
common.require_gpu_jobs(key)
common.warn_unknown_gpu_types(key)
