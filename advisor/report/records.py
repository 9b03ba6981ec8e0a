"""The records of the monthly report: every number it shows is a field of one frozen
:class:`MonthlyReport` (per GPU type, per account and partition, the starvation estimates, the
policy's compliance, the data's quality, the summary), and :class:`ReportResult` says what one
written report holds. Rendering and publishing add no number of their own."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from advisor.fixplan import ClusterFix
from advisor.headline import Headline
from advisor.usage import UsageReport


@dataclass(frozen=True)
class GpuTypeMonth:
    """Cores per GPU of one GPU type, this month against the month before."""

    gpu_type: str
    jobs: int
    gpu_hours: float
    p25_cores_per_gpu: float | None
    p50_cores_per_gpu: float | None
    prev_jobs: int
    prev_gpu_hours: float
    prev_p25_cores_per_gpu: float | None
    prev_p50_cores_per_gpu: float | None
    p50_change_cores_per_gpu: float | None  # this month's P50 minus last month's


@dataclass(frozen=True)
class RatioCount:
    """Jobs and GPU-hours of one GPU type at one distinct cores-per-GPU value (the month)."""

    gpu_type: str
    cores_per_gpu: float
    jobs: int
    gpu_hours: float


@dataclass(frozen=True)
class BelowRecommendation:
    """An account or partition whose jobs ask for fewer cores per GPU than recommended."""

    scope: str  # "account" | "partition"
    name: str  # the account's or the partition's name
    partition: str | None  # the partition whose recommendation applies
    gpu_type: str
    jobs: int
    jobs_below: int
    gpu_hours_below: float
    p50_cores_per_gpu: float | None
    recommended_cores_per_gpu: float
    flag: str  # an account's job scripts: "--cpus-per-gpu=8"; a partition's slurm.conf: "DefCpuPerGPU=8"
    gpu_hours_lost: float = 0.0  # the part of gpu_hours_below estimated lost (fixplan.lost_share)

    @property
    def advice_lead(self) -> str:
        """The words before :attr:`flag` that tell the group what to do, agreeing with why it is
        listed: where its typical (median) job already has the recommended cores, only the jobs
        below are told to ask for them; never "submit with" fewer cores than its typical job."""
        typical = self.p50_cores_per_gpu
        if typical is not None and typical >= self.recommended_cores_per_gpu:
            jobs = "the job" if self.jobs_below == 1 else f"the {self.jobs_below:,} jobs"
            return f"its median job has enough; {jobs} below should ask for at least"
        return "should submit with"


@dataclass(frozen=True)
class StarvationEstimate:
    """GPU time lost to too few cores per GPU, and the price of the cores that would fix it."""

    partition: str | None
    gpu_type: str
    recommended_cores_per_gpu: float
    gpu_hours_below: float  # GPU-hours of jobs below the recommendation
    gpu_hours_lost: float  # the part of those spent waiting on the CPU (model estimate)
    extra_cpu_hours: float  # core-hours needed to bring those jobs up to the recommendation
    usd_per_vcpu_hour: float
    usd_to_fix: float  # extra_cpu_hours x usd_per_vcpu_hour
    usd_per_gpu_hour: float | None
    usd_lost: float | None  # gpu_hours_lost x usd_per_gpu_hour
    gpu_hours_lost_interval: tuple[float, float] = (0.0, 0.0)  # 5-95% over the fit's refits
    gpu_hours: float = 0.0  # every GPU-hour of the group's jobs in the month, below or not
    # the month's jobs whose CPU pressure was measured: their GPU-hours and the loss their own
    # stall held (full to some), part of gpu_hours_lost; where the model's loss for them is
    # outside that, why
    gpu_hours_measured: float = 0.0
    gpu_hours_lost_measured: tuple[float, float] = (0.0, 0.0)
    loss_disagreement: str | None = None

    @property
    def months(self) -> float:
        """A month's report: its figures are one month's (advisor.headline.MeasuredRow)."""
        return 1.0

    @property
    def usd_lost_interval(self) -> tuple[float, float] | None:
        if self.usd_per_gpu_hour is None:
            return None
        lo, hi = self.gpu_hours_lost_interval
        return lo * self.usd_per_gpu_hour, hi * self.usd_per_gpu_hour


@dataclass(frozen=True)
class PolicyRuleCompliance:
    """How the month's jobs matched one rule of the exported policy."""

    partition: str
    gpu_type: str
    mode: str
    min_cpus_per_gpu: float
    jobs: int
    jobs_compliant: int
    share_compliant: float | None


@dataclass(frozen=True)
class PolicyCompliance:
    """Jobs of the month against the exported CPU-per-GPU policy (docs/policy-format.md)."""

    source: str
    generated_at: str | None
    jobs: int
    jobs_compliant: int
    share_compliant: float | None
    rules: tuple[PolicyRuleCompliance, ...]


@dataclass(frozen=True)
class MonthIngest:
    """A load that brought in some of the month's allocations."""

    ingest_id: int
    source: str
    format: str
    status: str
    rows_read: int
    inserted: int
    updated: int
    unchanged: int
    rejected: int
    missing_fields: tuple[str, ...]
    disabled_analyses: tuple[str, ...]


@dataclass(frozen=True)
class RejectGroup:
    """Rejected lines of those loads that share a reason, with the first place it happened."""

    reason: str
    field: str | None
    lines: int
    first_source: str | None
    first_line_no: int | None


@dataclass(frozen=True)
class TimeGap:
    """A run of whole UTC days with no allocation starting: missing accounting data, or an outage."""

    first_day: dt.date
    last_day: dt.date
    days: int


@dataclass(frozen=True)
class DayCount:
    """Allocations started on one UTC day."""

    day: dt.date
    jobs: int
    gpu_jobs: int


@dataclass(frozen=True)
class DataQuality:
    """What the month's numbers stand on: the loads, their rejected lines, gaps in time."""

    jobs: int
    gpu_jobs: int
    ingests: tuple[MonthIngest, ...]
    rejected_lines: int
    rejects: tuple[RejectGroup, ...]
    gaps: tuple[TimeGap, ...]
    gap_days: int
    daily: tuple[DayCount, ...]


SMALL_SAMPLE_JOBS = 30  # fewer GPU jobs than this in a month: its percentiles move a lot


@dataclass(frozen=True)
class Summary:
    """What a head of computing reads in 30 seconds: the loss, its value, the fix, where it
    happens, the settings that fix it, and what changed since last month."""

    gpu_hours_lost: float
    usd_lost: float  # priced GPU types only
    usd_to_fix: float
    prev_gpu_hours_lost: float | None  # None: no estimate for the month before
    top_partitions: tuple[StarvationEstimate, ...]  # the three losing the most GPU-hours
    top_accounts: tuple[BelowRecommendation, ...]  # the three most GPU-hours below
    settings: tuple[ClusterFix, ...]  # per cluster: slurm.conf lines that set the recommendations
    changes: tuple[str, ...]  # sentences: what moved since the month before
    headline: Headline | None = None  # the loss's interval, share, calibration, data age, basis


@dataclass(frozen=True)
class MonthlyReport:
    """Everything one monthly report shows; rendering adds no number of its own."""

    month: str
    previous_month: str
    cluster: str | None
    generated_at: dt.datetime
    gpu_types: tuple[GpuTypeMonth, ...]
    distribution: tuple[RatioCount, ...]  # the month's ratios per GPU type (for the histogram)
    below_accounts: tuple[BelowRecommendation, ...]
    below_partitions: tuple[BelowRecommendation, ...]
    starvation: tuple[StarvationEstimate, ...]
    gpu_hours_lost_total: float  # sum over ``starvation``
    usd_to_fix_total: float  # sum over ``starvation``
    starvation_assumptions: tuple[str, ...]
    starvation_warnings: tuple[str, ...]  # recommend's warnings for the rows shown (extrapolation)
    policy: PolicyCompliance | None
    quality: DataQuality
    notes: tuple[str, ...] = field(default_factory=tuple)  # sections that could not be computed
    summary: Summary | None = None
    prev_distribution: tuple[RatioCount, ...] = ()  # the month before (overlaid on the histogram)
    no_records: bool = False  # not one allocation started in the month (of the cluster)
    small_sample: bool = False  # fewer than SMALL_SAMPLE_JOBS GPU allocations
    usage: UsageReport | None = None  # what the month's GPU jobs used (issue 23)
    # measured CPU pressure per GPU type and cores-per-GPU bin (issue 37, docs/pressure.md);
    # empty where no job of the month was measured
    pressure: tuple[dict[str, Any], ...] = ()
    # where the cluster measured, its answer beside the model's per partition (issue 49)
    measured_vs_model: tuple[dict[str, Any], ...] = ()
    # why the model answers what it does: its predicted CPU wait per GPU type and typical GPUs
    # (gpu_type, gpus, cores_per_gpu, max_wait, curve as recommend's wait_curve)
    wait_curves: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class ReportResult:
    """One report written: where, and what it holds."""

    month: str
    cluster: str | None
    html_path: Path
    image_paths: tuple[Path, ...]
    gpu_jobs: int
    html_sha256: str
