"""The records and configs of the ingest domain, and the field catalogue.

Owns :class:`IngestOptions` (what a load may be told), :class:`IngestSummary` (what a load did,
per source), :class:`JobFilter` (what ``advisor jobs`` selects), :class:`TextLayout` (how a
sacct text file is laid out, found by ``detect`` and read by the parsers), and the sacct field
names the parsers know, with the analyses each missing field switches off.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

INPUT_FORMATS = ("sacct-text", "sacct-json", "jobcomp", "pressure")
# How sacct text reaches ``jobs`` (advisor.ingest.pipeline): "bulk" (the parser writes the rows
# in one statement), "careful" (parsed into a temp table, then upserted), "auto" (bulk where
# it is the faster of the two).
STRATEGIES = ("auto", "bulk", "careful")

# What a job used (issue 23): CPU seconds, CPU time allocated, peak and total TRES usage, and
# Princeton jobstats' summary in AdminComment. Most sites export none of them (NULL columns).
USAGE_FIELDS: tuple[str, ...] = (
    "totalcpu",
    "cputimeraw",
    "tresusageintot",
    "tresusageinmax",
    "admincomment",
)

# Canonical (lower-case) sacct field names every parser maps its input to; the SQL sees exactly
# these columns (absent ones as NULL). exclusive_hint carries JSON's / jobcomp's own flag.
CANONICAL_FIELDS: tuple[str, ...] = (
    "jobid",
    "jobidraw",
    "cluster",
    "partition",
    "qos",
    "account",
    "group",
    "user",
    "uid",
    "jobname",
    "state",
    "exitcode",
    "submit",
    "eligible",
    "start",
    "end",
    "elapsed",
    "elapsedraw",
    "timelimit",
    "timelimitraw",
    "nnodes",
    "ncpus",
    "alloccpus",
    "reqcpus",
    "reqmem",
    "reqtres",
    "alloctres",
    "allocgres",
    "reqgres",
    "nodelist",
    "submitline",
    "workdir",
    "exclusive_hint",
    *USAGE_FIELDS,
)

# The canonical fields of Slurm's own job record, which both structured formats (sacct JSON and
# the jobcomp log) carry for every job; each of their readers adds the few only its format has.
# Named one by one, not as the catalogue less some: a field added to the catalogue is not
# carried by a format until its reader says so (an update writes only the fields carried).
JOB_RECORD_FIELDS = frozenset(
    {
        "account",
        "alloctres",
        "cluster",
        "elapsedraw",
        "eligible",
        "end",
        "exitcode",
        "group",
        "jobid",
        "jobidraw",
        "jobname",
        "nnodes",
        "nodelist",
        "partition",
        "qos",
        "reqtres",
        "start",
        "state",
        "submit",
        "timelimitraw",
        "user",
        "workdir",
    }
)

# Fields whose text is free (may hold the delimiter, newlines, non-UTF-8 bytes).
FREE_TEXT_FIELDS = frozenset(
    {
        "jobname",
        "submitline",
        "workdir",
        "comment",
        "admincomment",
        "constraints",
        "reason",
        "wckey",
    }
)

# What each missing field (or group: all of them missing) switches off. Shown per ingest.
DISABLED_BY_MISSING: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("alloctres", "allocgres"), "AllocTRES", "GPU counts and types: no cores-per-GPU ratios"),
    (("alloctres", "ncpus", "alloccpus"), "NCPUS", "CPU counts: no cores-per-GPU ratios"),
    (
        ("jobidraw",),
        "JobIDRaw",
        "array tasks are keyed by JobID until a source with JobIDRaw brings their raw ids",
    ),
    (("cluster",), "Cluster", "per-cluster grouping (rows get --cluster)"),
    (("partition",), "Partition", "by-partition ratios"),
    (("account",), "Account", "by-account ratios"),
    (("user",), "User", "by-user ratios"),
    (("submit",), "Submit", "by-month grouping; requeue-safe key (submit stored as 1970-01-01)"),
    (("elapsed", "elapsedraw"), "Elapsed", "GPU-hour weighting"),
    (("start",), "Start", "wait times and time-range filters on start"),
    (("state",), "State", "state filters (failed and cancelled jobs look alike)"),
    (("submitline",), "SubmitLine", "interactive detection from the submit command"),
    (("reqtres", "reqcpus"), "ReqTRES", "requested-vs-allocated comparison"),
    (("nodelist",), "NodeList", "node inventory join (feasible cores per GPU)"),
)


# The source fields each column of ``jobs`` is read from (any one of them present: the source
# knows the column). An update writes only the columns its source knows; the others keep what
# was stored, so a narrower load (sacct -X with a dozen fields) never erases what a wider one
# loaded. Columns not listed (the key, ingest bookkeeping, interactive evidence) are handled by
# the upsert itself (advisor/sql/ingest/replace_changed.sql).
JOB_COLUMN_SOURCES: dict[str, tuple[str, ...]] = {
    "job_id": ("jobid", "jobidraw"),
    "array_job_id": ("jobid",),
    "array_task_id": ("jobid",),
    "het_job_id": ("jobid",),
    "het_job_offset": ("jobid",),
    "user": ("user",),
    "uid": ("uid",),
    "group": ("group",),
    "account": ("account",),
    "partition": ("partition",),
    "qos": ("qos",),
    "job_name": ("jobname",),
    "state": ("state",),
    "state_raw": ("state",),
    "exit_code": ("exitcode",),
    "eligible": ("eligible",),
    "start": ("start",),
    "end": ("end",),
    "elapsed_s": ("elapsed", "elapsedraw"),
    "timelimit_s": ("timelimit", "timelimitraw"),
    "nnodes": ("nnodes", "alloctres"),
    "cpus": ("alloctres", "ncpus", "alloccpus"),
    "gpus": ("alloctres", "allocgres"),
    "gpu_type": ("alloctres", "allocgres"),
    "gpu_type_raw": ("alloctres", "allocgres"),
    "gpu_types": ("alloctres",),
    "mem_mb": ("alloctres",),
    "billing": ("alloctres",),
    "node_list": ("nodelist",),
    "req_cpus": ("reqcpus", "reqtres"),
    "req_gpus": ("reqtres", "reqgres"),
    "req_mem_mb": ("reqmem",),
    "alloc_tres": ("alloctres",),
    "req_tres": ("reqtres",),
    "submit_line": ("submitline",),
    "work_dir": ("workdir",),
    "exclusive": ("submitline", "exclusive_hint"),
    "cpu_used_s": ("totalcpu", "admincomment"),
    "cpu_time_alloc_s": ("cputimeraw",),
    "mem_used_max_mb": ("tresusageinmax",),
    "gpu_util_mean_pct": ("tresusageintot", "admincomment"),
    "gpu_util_max_pct": ("tresusageinmax", "admincomment"),
    "gpu_mem_max_mb": ("tresusageinmax", "admincomment"),
    "usage_source": ("totalcpu", "tresusageintot", "tresusageinmax", "admincomment"),
}
# Per format, the columns of ``jobs`` it carries less well than accounting does, so that on
# update it never overwrites a stored value (coalesce: stored first), while a first load of a
# job still takes them. jobcomp/filetxt writes the requested TRES (its AllocTRES is ProcCnt
# CPUs plus the requested GPUs, see advisor.ingest.jobcomp), the partitions a job was
# submitted to (``h100,a100``) rather than the one it ran in, ``(null)`` for an empty node
# list, and its own exit code (issue 30 C16: each once replaced sacct's value).
REQUEST_ONLY_COLUMNS: dict[str, frozenset[str]] = {
    "jobcomp": frozenset(
        {
            "gpus",
            "gpu_type",
            "gpu_type_raw",
            "gpu_types",
            "mem_mb",
            "billing",
            "alloc_tres",
            "partition",
            "node_list",
            "exit_code",
        }
    ),
}
# TRES strings compared as sets of items: sacct text and JSON list the same TRES in
# different orders, which is no change.
TRES_COLUMNS = ("alloc_tres", "req_tres")
KEY_COLUMNS = ("cluster", "job_id_raw", "submit")
# Derived from several sources at once: a stored value backed by stronger evidence is kept.
EVIDENCE_COLUMNS = ("is_interactive", "interactive_evidence")


def missing_and_disabled(present: set[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The sacct names of missing fields and the analyses they disable, given canonical names."""
    missing: list[str] = []
    disabled: list[str] = []
    for group, name, analysis in DISABLED_BY_MISSING:
        if not any(g in present for g in group):
            missing.append(name)
            disabled.append(analysis)
    return tuple(dict.fromkeys(missing)), tuple(dict.fromkeys(disabled))


@dataclass(frozen=True)
class IngestOptions:
    """How to read the sources of one ``advisor ingest`` call.

    ``input_format`` None detects per file; ``delimiter`` None detects it from the header;
    ``fields`` names the columns of header-less sacct text; ``cluster`` fills rows whose source
    names none; ``source_tz`` is the zone of text times (stored as UTC); ``gpu_types`` is a
    site's extra GPU name mapping (see advisor.gputypes); ``strategy`` picks the bulk or the
    careful way for sacct text (STRATEGIES; "auto": bulk for an uncompressed file of few step
    lines, "bulk": for every uncompressed file; either hands a file over to the careful way
    when it cannot load it exactly as that would).
    """

    input_format: str | None = None
    delimiter: str | None = None
    fields: tuple[str, ...] | None = None
    cluster: str = "default"
    source_tz: str = "UTC"
    gpu_types: Mapping[str, str] | None = None
    strategy: str = "auto"


@dataclass(frozen=True)
class TextLayout:
    """How a sacct text file is laid out."""

    delimiter: str
    columns: tuple[str, ...]  # canonical name per column, in file order ('' for unnamed)
    header_names: tuple[str, ...]  # as written in the header (or in --fields)
    has_header: bool


@dataclass(frozen=True)
class Source:
    """One source being loaded: the file, what detect found in it, and how to name it."""

    path: Path
    label: str  # how messages and the ``ingests`` row name it (the path, or a sacct window)
    fmt: str  # one of INPUT_FORMATS
    compression: str | None  # gzip | zstd | None
    head: bytes  # its first bytes, uncompressed (detect.read_head)
    started_at: dt.datetime  # when its load began (UTC): the ``ingests`` row's started_at
    layout: TextLayout | None = None  # sacct text: delimiter, columns, header


@dataclass(frozen=True)
class Reject:
    """A record that could not be loaded (a row of ``rejects``): its physical line (None when
    the line is unknown, or the source was refused whole), its text, why, and the field."""

    line_no: int | None
    raw: str
    reason: str
    field: str | None = None
    # a usage fault (issue 30): the record was stored with that field NULL, so the reject row
    # shows the fault without costing the job (not counted in ``rejected``)
    kept: bool = False

    def message(self) -> str:
        """``line N, field F: reason``, as a summary lists the first rejects."""
        where = f"line {self.line_no}" + (f", field {self.field}" if self.field else "")
        return f"{where}: {self.reason}"


@dataclass(frozen=True)
class IngestSummary:
    """What one source's load did (one ``ingests`` row)."""

    ingest_id: int
    source: str
    format: str
    compression: str | None
    lines_read: int
    rows_read: int
    inserted: int
    updated: int
    unchanged: int
    rejected: int
    missing_fields: tuple[str, ...] = ()
    disabled_analyses: tuple[str, ...] = ()
    first_reasons: tuple[str, ...] = ()
    seconds: float = 0.0
    # Every line read is accounted for: lines_read = inserted + updated + unchanged + rejected
    # + duplicates + steps_folded (a duplicate: another line of a key kept once, saying the
    # same; one that differs is rejected).
    duplicates: int = 0
    steps_folded: int = 0
    unknown_states: int = 0  # rows stored with state NULL: a state word Slurm does not print
    usage_faults: int = 0  # rows stored with an implausible usage field NULL (a reject row each)
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileOutcome:
    """What became of one file of a multi-file load: its summary, or why it failed (the
    InputError's message, which names the file) and the exit code that failure maps to."""

    source: str
    summary: IngestSummary | None = None
    error: str | None = None
    exit_code: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class JobFilter:
    """What ``list_jobs`` selects; None means no condition. Times are UTC, on ``submit``."""

    cluster: str | None = None
    since: dt.datetime | None = None
    until: dt.datetime | None = None
    state: str | None = None
    gpu_type: str | None = None
    account: str | None = None
    user: str | None = None
    limit: int | None = 1000
    columns: tuple[str, ...] = field(default=())


JOB_COLUMNS: tuple[str, ...] = (
    "cluster",
    "job_id",
    "job_id_raw",
    "user",
    "account",
    "partition",
    "state",
    "submit",
    "start",
    "end",
    "elapsed_s",
    "nnodes",
    "cpus",
    "gpus",
    "gpu_type",
    "gpu_type_raw",
    "mem_mb",
    # what the job used (issue 23; NULL where the site exports no usage)
    "cpu_efficiency",
    "gpu_util_mean_pct",
    "gpu_util_max_pct",
)
