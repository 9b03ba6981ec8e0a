"""What a report uses besides the month's jobs (:class:`ReportInputs`): the partition
recommendations over every job, the fitted curve, the prices and the exported policy, loaded
once per run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from advisor import store
from advisor.model.slowdown import CurveParams
from advisor.policy import Policy, read_policy
from advisor.pricing import PriceBook
from advisor.recommend import PartitionRecommendation
from advisor.report.months import ReportConfig


@dataclass(frozen=True)
class ReportInputs:
    """What a report uses besides the month's jobs: the partition recommendations (from
    :func:`advisor.recommend.recommend_partitions`), the fitted model, the prices, the policy."""

    recommendations: tuple[PartitionRecommendation, ...] = ()
    recommendation_assumptions: tuple[str, ...] = ()
    params: CurveParams | None = None
    prices: PriceBook | None = None
    policy: Policy | None = None
    policy_source: str | None = None
    max_wait: float = 0.15  # the wait threshold the recommendations were made under


def load_inputs(config: ReportConfig, db: str | os.PathLike[str] | None = None) -> ReportInputs:
    """Recommendations over every job in the database, the model, the prices and the policy."""
    from advisor.recommend import PartitionQuery, RecommendContext, recommend_partitions

    path = store.resolve_db_path(db)
    model_file = str(config.model_file) if config.model_file else None
    pricing_file = str(config.pricing_file) if config.pricing_file else None
    with RecommendContext.open(db=path, fit_file=model_file, pricing_file=pricing_file) as ctx:
        params, prices = ctx.params, ctx.book
        query = PartitionQuery(db=str(path))
        recs = recommend_partitions(query, ctx=ctx)
    # The report prices the month itself, so recommend's per-month scaling does not apply.
    assumptions = tuple(
        f"{k.replace('_', ' ')}: {_assumption_text(v)}"
        for k, v in recs.assumptions.items()
        if k != "per_month"
    )
    policy = read_policy(config.policy_file) if config.policy_file else None
    return ReportInputs(
        recommendations=recs.rows,
        recommendation_assumptions=assumptions,
        params=params,
        prices=prices,
        policy=policy,
        policy_source=str(config.policy_file) if config.policy_file else None,
        max_wait=query.max_wait,
    )


def _assumption_text(value: Any) -> str:
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return str(value)
