"""Recommendations of cores per GPU: for one job (the job-submit path) and for a partition's jobs.

One idea per module:

- :mod:`~advisor.recommend.query`: what is asked (workload, job) and the job's features;
- :mod:`~advisor.recommend.context`: the curve, prices and database of one run, the node cap;
- :mod:`~advisor.recommend.decision`: the CPU demand, the evidence and the cores (capacity
  model, or 2 + N where the model does not decide better, or without evidence);
- :mod:`~advisor.recommend.curve`: the TTFT curve now and recommended, with intervals;
- :mod:`~advisor.recommend.job`: :func:`recommend_job`, the steps an admin would explain;
- :mod:`~advisor.recommend.starvation`: GPU time lost below a recommendation, with interval;
- :mod:`~advisor.recommend.partitions`: ``DefCpuPerGPU`` per partition and GPU family.

Importing this package imports numpy, not scikit-learn, SciPy, pandas or DuckDB (a test checks);
the partition half (:mod:`~advisor.recommend.partitions` and what it imports) loads when one of
its names is first read, so the job-submit path never pays for it.
"""

import importlib
from typing import TYPE_CHECKING, Any

from advisor.recommend.context import (
    DEFAULT_MAX_CPUS_PER_GPU,
    RecommendContext,
    check_partition,
    node_cap,
    node_inventory,
)
from advisor.recommend.decision import (
    Sufficient,
    evidence_for,
    floor_cores,
    job_demand,
    minimum_cores,
    sufficient_cores,
)
from advisor.recommend.job import JobRecommendation, recommend_job
from advisor.recommend.query import (
    JobFeatures,
    JobQuery,
    Workload,
    check_tolerance,
    features_of,
    job_features,
    parse_model_size,
)

if TYPE_CHECKING:
    from advisor.recommend.partitions import (
        DAYS_PER_MONTH,
        MeasuredMix,
        PartitionQuery,
        PartitionRecommendation,
        PartitionReport,
        measured_mix,
        recommend_by_cluster,
        recommend_partitions,
    )
# (eager: importing the submodule would otherwise leave the module where the function is named)
from advisor.recommend.starvation import Starvation, starvation

_LAZY = dict.fromkeys(
    (
        "DAYS_PER_MONTH",
        "MeasuredMix",
        "PartitionQuery",
        "PartitionRecommendation",
        "PartitionReport",
        "measured_mix",
        "recommend_by_cluster",
        "recommend_partitions",
    ),
    "advisor.recommend.partitions",
)


def __getattr__(name: str) -> Any:
    """A name of the partition half, imported on first use (PEP 562)."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'advisor.recommend' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


__all__ = [
    "DAYS_PER_MONTH",
    "DEFAULT_MAX_CPUS_PER_GPU",
    "JobFeatures",
    "JobQuery",
    "JobRecommendation",
    "PartitionQuery",
    "PartitionRecommendation",
    "PartitionReport",
    "RecommendContext",
    "Starvation",
    "Sufficient",
    "Workload",
    "check_partition",
    "check_tolerance",
    "evidence_for",
    "features_of",
    "floor_cores",
    "job_demand",
    "job_features",
    "measured_mix",
    "MeasuredMix",
    "minimum_cores",
    "node_cap",
    "node_inventory",
    "parse_model_size",
    "recommend_job",
    "recommend_by_cluster",
    "recommend_partitions",
    "starvation",
    "sufficient_cores",
]
