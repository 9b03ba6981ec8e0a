"""CPU-per-GPU ratio analytics over ``jobs``: summaries, distributions and fair shares.

One package, four rooms: :mod:`~advisor.ratios.records` (queries and reports),
:mod:`~advisor.ratios.planning` (which source answers a query, and its SQL),
:mod:`~advisor.ratios.summaries` (the figures) and :mod:`~advisor.ratios.inmemory` (the people
cubes in memory). The cubes they read are built by :mod:`advisor.derived.cube`, whose rebuild
and freshness functions are re-exported here for the callers that knew them here. The definitions are in ``records``' docstring
and docs/ratios.md.
"""

from advisor.derived.cube import (
    CUBE_RULES_VERSION,
    cube_is_fresh,
    ensure_ratio_cube,
    people_months_are_fresh,
    refresh_people_months,
    refresh_ratio_cube,
    store_fresh_cubes,
)
from advisor.ratios.planning import cube_answers, people_cube_answers
from advisor.ratios.records import (
    DEFAULT_BIN_EDGES,
    DEFAULT_THRESHOLDS,
    EXCLUSION_REASONS,
    GROUP_KEYS,
    QUANTILES,
    BelowTargetGroup,
    BelowTargetReport,
    DistributionGroup,
    EcdfPoint,
    HistogramBin,
    NodeType,
    RatioDistribution,
    RatioGroup,
    RatioQuery,
    RatioReport,
    RatioTable,
    TargetQuery,
    Weight,
)
from advisor.ratios.summaries import (
    below_target,
    excluded_counts,
    fair_share,
    ratio_distribution,
    ratio_summary,
)

__all__ = [
    "CUBE_RULES_VERSION",
    "DEFAULT_BIN_EDGES",
    "DEFAULT_THRESHOLDS",
    "EXCLUSION_REASONS",
    "GROUP_KEYS",
    "QUANTILES",
    "BelowTargetGroup",
    "BelowTargetReport",
    "DistributionGroup",
    "EcdfPoint",
    "HistogramBin",
    "NodeType",
    "RatioDistribution",
    "RatioGroup",
    "RatioQuery",
    "RatioReport",
    "RatioTable",
    "TargetQuery",
    "Weight",
    "below_target",
    "cube_answers",
    "cube_is_fresh",
    "ensure_ratio_cube",
    "excluded_counts",
    "fair_share",
    "people_cube_answers",
    "people_months_are_fresh",
    "ratio_distribution",
    "ratio_summary",
    "refresh_people_months",
    "refresh_ratio_cube",
    "store_fresh_cubes",
]
