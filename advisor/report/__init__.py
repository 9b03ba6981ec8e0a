"""The monthly batch report: one self-contained HTML file per month (and cluster).

Three rooms, one way through: :mod:`~advisor.report.gather` collects every number into a
frozen :class:`MonthlyReport` (the records in :mod:`~advisor.report.records`; one module per
part of it: ``months``, ``inputs``, ``distribution``, ``tables``, ``quality``, ``summary``),
:mod:`~advisor.report.render` turns it into charts and HTML, and
:mod:`~advisor.report.publish` writes the folders, the e-mail copies and the index
(:func:`run_reports` does all three). The names below are the public ones of all three, so
``from advisor.report import X`` reads the same as before the split.
"""

from advisor.policy import read_policy
from advisor.report.distribution import gpu_type_months, month_distribution, ratio_query
from advisor.report.gather import build_report
from advisor.report.inputs import ReportInputs, load_inputs
from advisor.report.months import (
    Month,
    ReportConfig,
    available_months,
    check_cluster,
    parse_month,
    resolve_month,
)
from advisor.report.publish import (
    CHROMIUM_ENV,
    REPORT_WIDTH_PX,
    print_report,
    report_as_dict,
    report_dir_name,
    run_reports,
    write_report,
)
from advisor.report.quality import data_quality
from advisor.report.records import (
    SMALL_SAMPLE_JOBS,
    BelowRecommendation,
    DataQuality,
    DayCount,
    GpuTypeMonth,
    MonthIngest,
    MonthlyReport,
    PolicyCompliance,
    PolicyRuleCompliance,
    RatioCount,
    RejectGroup,
    ReportResult,
    StarvationEstimate,
    Summary,
    TimeGap,
)
from advisor.report.render import ReportChart, inline_json, render_html, render_index, report_charts
from advisor.report.summary import pressure_section, usage_section
from advisor.report.tables import below_recommendation, policy_compliance, starvation_estimates

__all__ = [
    "CHROMIUM_ENV",
    "REPORT_WIDTH_PX",
    "SMALL_SAMPLE_JOBS",
    "BelowRecommendation",
    "DataQuality",
    "DayCount",
    "GpuTypeMonth",
    "Month",
    "MonthIngest",
    "MonthlyReport",
    "PolicyCompliance",
    "PolicyRuleCompliance",
    "RatioCount",
    "RejectGroup",
    "ReportChart",
    "ReportConfig",
    "ReportInputs",
    "ReportResult",
    "StarvationEstimate",
    "Summary",
    "TimeGap",
    "available_months",
    "below_recommendation",
    "build_report",
    "check_cluster",
    "data_quality",
    "gpu_type_months",
    "inline_json",
    "load_inputs",
    "month_distribution",
    "parse_month",
    "policy_compliance",
    "print_report",
    "ratio_query",
    "read_policy",
    "render_html",
    "render_index",
    "report_as_dict",
    "report_charts",
    "report_dir_name",
    "resolve_month",
    "run_reports",
    "starvation_estimates",
    "pressure_section",
    "usage_section",
    "write_report",
]
