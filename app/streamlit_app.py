"""The dashboard's entry point: ``streamlit run app/streamlit_app.py -- --db FILE``.

Routes the pages kept in ``app_pages/``, draws the filters every page shares in the sidebar,
and opens nothing itself: pages reach the database through ``app.db``, whose connection for
this run it closes when the run ends.
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:  # `streamlit run` puts only app/ on the path; pages import app.db
    sys.path.insert(0, _ROOT)

import streamlit as st  # noqa: E402

from app.db import db_key, release_connection  # noqa: E402
from app.sidebar import sidebar_filters  # noqa: E402

st.set_page_config(page_title="advisor: CPU cores per GPU", page_icon=":bar_chart:", layout="wide")

PAGES = [
    st.Page("app_pages/overview.py", title="Overview", icon=":material/insights:", default=True),
    st.Page("app_pages/trends.py", title="Trends", icon=":material/timeline:"),
    st.Page("app_pages/who.py", title="Who", icon=":material/group:"),
    st.Page("app_pages/recommend.py", title="Recommend", icon=":material/tune:"),
    st.Page("app_pages/benchmarks.py", title="Benchmarks", icon=":material/speed:"),
    st.Page("app_pages/data.py", title="Data", icon=":material/database:"),
]

page = st.navigation(PAGES)
try:
    key = db_key()
    sidebar_filters(key)
    page.run()
finally:  # also after st.stop(): between interactions the dashboard holds no lock on the file
    release_connection()
