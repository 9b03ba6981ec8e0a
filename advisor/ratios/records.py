"""The records of the ratio analytics: queries in, reports out, and the definitions they follow.

The package :mod:`advisor.ratios` owns the questions "how many cores per GPU do jobs get?" and "how many could they
have had?". Jobs are filtered and summed in DuckDB (the SQL under ``advisor/sql/ratios/``); a
summary's percentiles, means and shares are then read off the summed rows with numpy, for all
groups at once (:func:`_table`). Python also validates the query and builds the dataclasses.

Definitions (see docs/ratios.md):

- The ratio of a job is its allocated Slurm CPUs divided by its allocated GPUs
  (``cores_per_gpu``; Slurm CPUs are logical CPUs, i.e. hardware threads where SMT is on).
- A job counts when it got an allocation: a start time, GPUs > 0 and CPUs > 0 (allocated, so a
  job cancelled while pending has none). Every other job that passes the filters is counted in
  ``excluded`` under the first of these it fails (``never_started``, ``no_gpus``,
  ``no_cpus``), never silently. A job that started and ended within the same second counts,
  with zero GPU-hours (it weighs nothing in GPU-hour-weighted figures).
- A job belongs to the month (UTC) it started in, whole, even if it ran across months; time
  filters select on the start time too (the submit time for jobs never started).
- Percentiles weighted by jobs use linear interpolation (numpy's default, DuckDB's
  ``quantile_cont``). Percentiles weighted by GPU-hours use the weighted inverted CDF
  (``numpy.percentile(x, q, weights=gpu_seconds, method="inverted_cdf")``): the smallest ratio
  whose cumulative share of GPU-hours reaches q.
- The fair share of a job is the cores per GPU of its node type (usable node CPUs / node GPUs,
  from ``nodes``), matched on (cluster, GPU type); when a cluster has several node shapes of one
  GPU type, the smallest (a job below it is below on every node of that type).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from advisor.filters import JOB_GROUP_KEYS, JobFilters

GROUP_KEYS: tuple[str, ...] = (*JOB_GROUP_KEYS, "interactive")
"""Names a report can be grouped by (``RatioQuery.by``)."""

DEFAULT_THRESHOLDS: tuple[float, ...] = (1.0, 2.0, 4.0, 8.0)
QUANTILES: tuple[float, ...] = (0.10, 0.25, 0.50, 0.75, 0.90)
DEFAULT_BIN_EDGES: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0)
EXCLUSION_REASONS: tuple[str, ...] = ("never_started", "no_gpus", "no_cpus")


class Weight(StrEnum):
    """What a percentile counts: every job once, or every GPU-hour once."""

    jobs = "jobs"
    gpu_hours = "gpu-hours"


@dataclass(frozen=True)
class RatioQuery(JobFilters):
    """What to summarise: grouping, weighting, thresholds, and the job filters of
    :class:`advisor.filters.JobFilters` (keywords only)."""

    by: tuple[str, ...] = ("gpu_type",)
    weight: Weight = Weight.jobs
    thresholds_cores_per_gpu: tuple[float, ...] = DEFAULT_THRESHOLDS


@dataclass(frozen=True)
class RatioGroup:
    """One group of a ratio report. Ratios are cores (Slurm CPUs) per GPU.

    Percentiles and the mean follow the report's weight. ``share_jobs_below`` and
    ``share_gpu_hours_below`` map each threshold (cores per GPU) to the fraction (0..1) of jobs
    and of GPU-hours whose ratio is strictly below it. The fair-share fields are ``None`` when no
    node inventory covers the group's jobs; the shares below fair share count only the jobs whose
    node type is known.
    """

    keys: Mapping[str, Any]
    jobs: int
    gpu_hours: float
    p10_cores_per_gpu: float
    p25_cores_per_gpu: float
    p50_cores_per_gpu: float
    p75_cores_per_gpu: float
    p90_cores_per_gpu: float
    mean_cores_per_gpu: float
    share_jobs_below: Mapping[float, float]
    share_gpu_hours_below: Mapping[float, float]
    fair_share_cores_per_gpu: float | None = None
    jobs_with_fair_share: int = 0
    share_jobs_below_fair_share: float | None = None
    share_gpu_hours_below_fair_share: float | None = None

    def as_row(self) -> dict[str, Any]:
        """The group as one flat record, the JSON contract of ``advisor ratios``.

        The group's keys by their ``by`` names, then ``jobs``, ``gpu_hours``, ``p10`` ..
        ``p90``, ``mean`` (cores per GPU), ``share_jobs_below_<t>``,
        ``share_gpu_hours_below_<t>`` per threshold, then the fair-share fields.
        """
        row: dict[str, Any] = dict(self.keys)
        row.update(
            jobs=self.jobs,
            gpu_hours=self.gpu_hours,
            p10=self.p10_cores_per_gpu,
            p25=self.p25_cores_per_gpu,
            p50=self.p50_cores_per_gpu,
            p75=self.p75_cores_per_gpu,
            p90=self.p90_cores_per_gpu,
            mean=self.mean_cores_per_gpu,
        )
        for t, share in self.share_jobs_below.items():
            row[f"share_jobs_below_{_fmt_threshold(t)}"] = share
        for t, share in self.share_gpu_hours_below.items():
            row[f"share_gpu_hours_below_{_fmt_threshold(t)}"] = share
        row["fair_share_cores_per_gpu"] = self.fair_share_cores_per_gpu
        row["share_jobs_below_fair_share"] = self.share_jobs_below_fair_share
        row["share_gpu_hours_below_fair_share"] = self.share_gpu_hours_below_fair_share
        return row


@dataclass(frozen=True, eq=False)
class RatioTable:
    """A summary's figures as columns, one entry per group, groups in key order: what
    :func:`ratio_summary` computes (``RatioReport.groups`` turns it into one
    :class:`RatioGroup` per group, on first use).

    ``keys`` maps each group key to its values; ``percentiles`` has one column per
    ``QUANTILES`` entry, ``share_*_below`` one per ``thresholds`` entry. Where a RatioGroup has
    ``None`` (no node inventory covers the group), these arrays hold NaN.
    """

    keys: Mapping[str, Sequence[Any]]
    thresholds: tuple[float, ...]
    jobs: npt.NDArray[np.int64]
    gpu_hours: npt.NDArray[np.float64]
    percentiles: npt.NDArray[np.float64]
    mean: npt.NDArray[np.float64]
    share_jobs_below: npt.NDArray[np.float64]
    share_gpu_hours_below: npt.NDArray[np.float64]
    fair_share: npt.NDArray[np.float64]
    jobs_with_fair_share: npt.NDArray[np.int64]
    share_jobs_below_fair_share: npt.NDArray[np.float64]
    share_gpu_hours_below_fair_share: npt.NDArray[np.float64]

    def __len__(self) -> int:
        return len(self.jobs)

    def groups(self) -> tuple[RatioGroup, ...]:
        """One RatioGroup per group, in order."""
        keys = {k: list(v) for k, v in self.keys.items()}
        t = self.thresholds
        pct = self.percentiles.tolist()
        nb = self.share_jobs_below.tolist()
        wb = self.share_gpu_hours_below.tolist()
        cols = zip(
            self.jobs.tolist(),
            self.gpu_hours.tolist(),
            self.mean.tolist(),
            self.fair_share.tolist(),
            self.jobs_with_fair_share.tolist(),
            self.share_jobs_below_fair_share.tolist(),
            self.share_gpu_hours_below_fair_share.tolist(),
            strict=True,
        )
        return tuple(
            RatioGroup(
                keys={k: v[i] for k, v in keys.items()},
                jobs=jobs,
                gpu_hours=gpu_hours,
                p10_cores_per_gpu=pct[i][0],
                p25_cores_per_gpu=pct[i][1],
                p50_cores_per_gpu=pct[i][2],
                p75_cores_per_gpu=pct[i][3],
                p90_cores_per_gpu=pct[i][4],
                mean_cores_per_gpu=mean,
                share_jobs_below=dict(zip(t, nb[i], strict=True)),
                share_gpu_hours_below=dict(zip(t, wb[i], strict=True)),
                fair_share_cores_per_gpu=None if math.isnan(fair) else fair,
                jobs_with_fair_share=n_fs,
                share_jobs_below_fair_share=None if math.isnan(s_n) else s_n,
                share_gpu_hours_below_fair_share=None if math.isnan(s_w) else s_w,
            )
            for i, (jobs, gpu_hours, mean, fair, n_fs, s_n, s_w) in enumerate(cols)
        )


@dataclass(frozen=True, eq=False)
class RatioReport:
    """A summary: its figures (``table``: columns, groups ordered by their keys), what was
    excluded and why, the query. ``groups`` gives one RatioGroup per group."""

    table: RatioTable
    excluded: Mapping[str, int]
    query: RatioQuery

    @cached_property
    def groups(self) -> tuple[RatioGroup, ...]:
        """The groups in key order (built from ``table`` on first use: for tens of thousands of
        groups, building the objects costs more than computing the figures)."""
        return self.table.groups()

    @property
    def jobs(self) -> int:
        """Jobs counted in the report (all groups)."""
        return int(self.table.jobs.sum())

    @property
    def excluded_jobs(self) -> int:
        return sum(self.excluded.values())

    def rows(self) -> list[dict[str, Any]]:
        """Every group as :meth:`RatioGroup.as_row`."""
        return [g.as_row() for g in self.groups]

    def __eq__(self, other: object) -> bool:
        """Reports are equal when their groups, exclusions and queries are."""
        if not isinstance(other, RatioReport):
            return NotImplemented
        return (self.groups, self.excluded, self.query) == (
            other.groups,
            other.excluded,
            other.query,
        )


@dataclass(frozen=True)
class HistogramBin:
    """Jobs and GPU-hours whose ratio lies in ``[lo_cores_per_gpu, hi_cores_per_gpu)``;
    ``hi_cores_per_gpu`` is ``None`` for the last, open bin."""

    lo_cores_per_gpu: float
    hi_cores_per_gpu: float | None
    jobs: int
    gpu_hours: float


@dataclass(frozen=True)
class EcdfPoint:
    """A distinct ratio, and the share (0..1) of jobs and of GPU-hours at or below it."""

    cores_per_gpu: float
    jobs: int
    gpu_hours: float
    share_jobs_at_or_below: float
    share_gpu_hours_at_or_below: float


@dataclass(frozen=True)
class DistributionGroup:
    keys: Mapping[str, Any]
    histogram: tuple[HistogramBin, ...]
    ecdf: tuple[EcdfPoint, ...]


@dataclass(frozen=True)
class RatioDistribution:
    """What charts need, per group: a histogram over fixed bins and the exact ECDF."""

    groups: tuple[DistributionGroup, ...]
    query: RatioQuery
    bin_edges_cores_per_gpu: tuple[float, ...] = field(default=DEFAULT_BIN_EDGES)

    def histogram_records(self) -> list[dict[str, Any]]:
        """Flat records (keys + bin fields) for a chart library."""
        return [
            {
                **g.keys,
                "lo_cores_per_gpu": b.lo_cores_per_gpu,
                "hi_cores_per_gpu": b.hi_cores_per_gpu,
                "jobs": b.jobs,
                "gpu_hours": b.gpu_hours,
            }
            for g in self.groups
            for b in g.histogram
        ]

    def ecdf_records(self) -> list[dict[str, Any]]:
        """Flat records (keys + ECDF point fields) for a chart library."""
        return [
            {
                **g.keys,
                "cores_per_gpu": p.cores_per_gpu,
                "jobs": p.jobs,
                "gpu_hours": p.gpu_hours,
                "share_jobs_at_or_below": p.share_jobs_at_or_below,
                "share_gpu_hours_at_or_below": p.share_gpu_hours_at_or_below,
            }
            for g in self.groups
            for p in g.ecdf
        ]


@dataclass(frozen=True)
class NodeType:
    """A node shape of a cluster and the cores per GPU a job could have had on it."""

    cluster: str
    gpu_type: str | None
    cpus_per_node: int
    gpus_per_node: int
    nodes: int
    cores_per_gpu: float
    partitions: tuple[str, ...]


def _fmt_threshold(t: float) -> str:
    return str(int(t)) if float(t).is_integer() else repr(float(t))


@dataclass(frozen=True)
class TargetQuery:
    """Which groups run furthest below a target ratio: the groups and filters of ``ratios``
    (its weight applies to the percentiles; its thresholds are ignored), and the target in
    cores per GPU, either one per (partition, GPU type) in ``targets_cores_per_gpu`` as
    ``(partition, gpu_type, cores_per_gpu)`` (``ratios.by`` must then include ``partition``
    and ``gpu_type``; groups of other partitions and GPU types have no target) or one
    ``fixed_cores_per_gpu`` for every group. ``top``: how many groups to return."""

    ratios: RatioQuery
    targets_cores_per_gpu: tuple[tuple[str | None, str | None, float], ...] = ()
    fixed_cores_per_gpu: float | None = None
    top: int = 15


@dataclass(frozen=True)
class BelowTargetGroup:
    """A group with GPU-hours below its target: its full summary (``group``; its
    ``share_*_below`` include the target), the target (cores per GPU), and the jobs and
    GPU-hours of its jobs strictly below the target."""

    group: RatioGroup
    target_cores_per_gpu: float
    jobs_below: int
    gpu_hours_below: float


@dataclass(frozen=True)
class BelowTargetReport:
    """The ``query.top`` groups with the most GPU-hours below their target, most first (ties in
    key order), only groups with some; ``groups_counted``: how many groups the filters select
    (with counted jobs, whether or not they have a target); ``excluded`` as in RatioReport."""

    groups: tuple[BelowTargetGroup, ...]
    groups_counted: int
    excluded: Mapping[str, int]
    query: TargetQuery

    @property
    def excluded_jobs(self) -> int:
        return sum(self.excluded.values())
