"""Live mode: running the real ``sacct`` binary, window by window, and loading its output.

Owns the sacct command line and the resumable window loop. sacct runs with an argument list
(no shell), ``TZ=UTC`` and ``SLURM_TIME_FORMAT=standard`` (times come out in UTC), no inherited
``SACCT_FORMAT``, ``--parsable2`` with the ASCII unit separator (0x1f) as delimiter (no job name
or command line holds it) and the free-text fields last. Steps are kept (no ``-X``): they are
folded into their allocation and tell interactive jobs apart. ``--duplicates`` keeps requeued
and reused job ids (the key includes the submit time). A long job appears in every window it
overlaps; the upsert makes that harmless. Each finished window is recorded in
``ingest_windows``; a rerun skips those, so an interrupted year resumes where it stopped.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import duckdb

from advisor.errors import ExternalToolError, UsageError
from advisor.ingest.records import FREE_TEXT_FIELDS, IngestOptions, IngestSummary
from advisor.progress import ProgressFn, no_progress
from advisor.store import query

DELIMITER = "\x1f"
SACCT_FIELDS: tuple[str, ...] = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "Partition",
    "QOS",
    "Account",
    "Group",
    "User",
    "UID",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "ElapsedRaw",
    "TimelimitRaw",
    "ExitCode",
    "State",
    "NNodes",
    "NCPUS",
    "ReqCPUS",
    "ReqMem",
    "ReqTRES",
    "AllocTRES",
    "NodeList",
    "WorkDir",
    # what jobs used (issue 23; blank where the site gathers none, stored as NULL)
    "TotalCPU",
    "CPUTimeRAW",
    "TRESUsageInTot",
    "TRESUsageInMax",
    "JobName",
    "SubmitLine",
)
_TIME = "%Y-%m-%dT%H:%M:%S"


@dataclass(frozen=True)
class SacctWindowConfig:
    """What to fetch with sacct: ``[start, end)`` (UTC) in steps of ``window``.

    ``clusters`` is passed as ``-M`` (e.g. ``all``); ``fields`` is the ``--format`` list
    (free text last); ``timeout_s`` bounds one sacct call.
    """

    start: dt.datetime
    end: dt.datetime
    window: dt.timedelta = dt.timedelta(days=1)
    sacct_bin: str = "sacct"
    clusters: str | None = None
    fields: tuple[str, ...] = SACCT_FIELDS
    timeout_s: float = 600.0


def windows(config: SacctWindowConfig) -> list[tuple[dt.datetime, dt.datetime]]:
    """The ``[a, b)`` windows covering ``[start, end)``; the last one may be shorter."""
    if config.end <= config.start:
        raise UsageError("--end must be after --start")
    if config.window <= dt.timedelta(0):
        raise UsageError("--window must be positive")
    out = []
    a = config.start
    while a < config.end:
        b = min(a + config.window, config.end)
        out.append((a, b))
        a = b
    return out


# sacct -S/-E leaves out a job that was never eligible (held, then cancelled: Eligible Unknown)
# unless a state is asked for: a second pass per window asks for the cancelled ones.
NEVER_ELIGIBLE_STATES = "CA"


def sacct_argv(
    config: SacctWindowConfig, a: dt.datetime, b: dt.datetime, states: str | None = None
) -> list[str]:
    """The argument list for one window (no shell ever sees it). With ``states``: that
    ``--state`` pass, header-less (its records are appended to the main pass's output)."""
    argv = [
        config.sacct_bin,
        "--allusers",
        "--duplicates",
        "--parsable2",
        f"--delimiter={DELIMITER}",
        "--noconvert",
        f"--format={','.join(config.fields)}",
        f"--starttime={a.strftime(_TIME)}",
        f"--endtime={b.strftime(_TIME)}",
    ]
    if config.clusters:
        argv.append(f"--clusters={config.clusters}")
    if states:
        argv += [f"--state={states}", "--noheader"]
    return argv


def _records(data: bytes, fields: tuple[str, ...]) -> list[tuple[tuple[bytes, bytes], bytes]]:
    """((cluster, allocation raw id), record text) of sacct -P output with DELIMITER, free text
    last; a line continuing a record's free text (a newline in it) stays with its record."""
    names = [f.lower() for f in fields]
    idx = names.index("jobidraw")
    cl = names.index("cluster") if "cluster" in names else None
    free = sum(1 for f in names if f in FREE_TEXT_FIELDS)
    need = len(fields) - 1 - free  # delimiters before the first free-text field
    delim = DELIMITER.encode()
    out: list[tuple[tuple[bytes, bytes], bytes]] = []
    for line in data.splitlines(keepends=True):
        parts = line.split(delim)
        raw = parts[idx].split(b".", 1)[0] if len(parts) > idx else b""
        if len(parts) - 1 >= need and raw.isdigit():
            out.append(((parts[cl] if cl is not None else b"", raw), line))
        elif out:
            out[-1] = (out[-1][0], out[-1][1] + line)
    return out


def _fetch(config: SacctWindowConfig, a: dt.datetime, b: dt.datetime, target: Path) -> None:
    """The window's records into ``target``: the main pass, then the jobs that only the
    cancelled pass lists (a job in both appears once)."""
    _run(sacct_argv(config, a, b), target, config.timeout_s)
    if "jobidraw" not in {f.lower() for f in config.fields} or target.stat().st_size == 0:
        return
    extra = target.with_name("cancelled.txt")
    _run(sacct_argv(config, a, b, NEVER_ELIGIBLE_STATES), extra, config.timeout_s)
    seen = {key for key, _ in _records(target.read_bytes(), config.fields)}
    new = [rec for key, rec in _records(extra.read_bytes(), config.fields) if key not in seen]
    if new:
        with target.open("ab") as fh:
            if not target.read_bytes().endswith(b"\n"):
                fh.write(b"\n")
            fh.writelines(new)


def sacct_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SACCT_FORMAT", "SLURM_TIME_FORMAT")}
    env["TZ"] = "UTC"
    env["SLURM_TIME_FORMAT"] = "standard"
    return env


def _run(argv: list[str], out: Path, timeout_s: float) -> None:
    span = " ".join(a for a in argv if a.startswith(("--starttime=", "--endtime=", "--state=")))
    try:
        with out.open("wb") as fh:
            proc = subprocess.run(  # noqa: S603 - an argument list, no shell
                argv,
                stdout=fh,
                stderr=subprocess.PIPE,
                env=sacct_env(),
                timeout=timeout_s,
                check=False,
            )
    except FileNotFoundError as exc:
        raise ExternalToolError(
            f"{argv[0]}: not found; install slurm-client or give --sacct-bin PATH"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise ExternalToolError(
            f"{argv[0]} took longer than {timeout_s:.0f} s for {span}; use a smaller --window"
        ) from exc
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", errors="replace").strip()[-500:]
        raise ExternalToolError(f"{argv[0]} exited with {proc.returncode}: {tail}")


def run_windows(
    con: duckdb.DuckDBPyConnection,
    config: SacctWindowConfig,
    options: IngestOptions,
    progress: ProgressFn = no_progress,
) -> list[IngestSummary]:
    """Fetch and load every window not loaded before; return one summary per window loaded."""
    from advisor.ingest import pipeline

    spans = windows(config)
    opts = replace(options, input_format="sacct-text", delimiter=DELIMITER, source_tz="UTC")
    pipeline.check_options(opts)
    pipeline.prepare(con)
    clusters = config.clusters or ""
    done = {(r[0], r[1]) for r in con.execute(query("ingest/done_windows"), [clusters]).fetchall()}
    out: list[IngestSummary] = []
    with tempfile.TemporaryDirectory(prefix="advisor-sacct-") as tmp:
        for i, (a, b) in enumerate(spans):
            progress("sacct windows", i, len(spans))
            if (a, b) in done:
                continue
            target = Path(tmp) / "window.txt"
            _fetch(config, a, b, target)
            label = f"sacct:{a.strftime(_TIME)}/{b.strftime(_TIME)}"
            if target.stat().st_size == 0:
                continue  # sacct -P prints at least its header; nothing at all: nothing to load
            summary = pipeline.ingest_path(con, target, opts, source=label)
            con.execute(query("ingest/record_window"), [clusters, a, b, summary.ingest_id])
            out.append(summary)
        progress("sacct windows", len(spans), len(spans))
    return out
