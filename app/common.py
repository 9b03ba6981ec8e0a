"""What more than one page judges data by: the thresholds for too few jobs and for stale data.

The rest of what pages share lives in one module per idea: ``db`` (the connection),
``loaders`` (cached core calls), ``filters`` and ``sidebar``, ``messages``, ``tables``,
``chart_view``, ``ratio_calls``, ``model_calls``, ``assumptions`` and ``fixplan_calls``.
"""

# A month (or group) with fewer jobs than this is drawn faded and named: its percentiles move
# a lot with a handful of jobs.
FEW_JOBS = 30
# Data older than this (days since the newest record) gets a warning: the core's one number.
from advisor.datainfo import STALE_DAYS  # noqa: E402,F401
