"""Naming the likely cause when nothing usable was read from a source.

A load whose every record was rejected (or a file refused before any record) is an error, not
a quiet success: a cron job must notice. The message says what the bytes look like instead of
one generic reason: a multi-character delimiter read as a single one, another command's output
(``scontrol show job``) taken for a jobcomp log, a JSON document that is not sacct's.
"""

from __future__ import annotations

import re
from pathlib import Path

from advisor.ingest import detect
from advisor.ingest.records import IngestSummary

_SCONTROL_KEYS = re.compile(r"(^|\s)(JobName|JobState|RunTime|NumCPUs|TRES|Command)=")


def nothing_usable(path: Path, compression: str | None, fmt: str, summary: IngestSummary) -> str:
    """The error message for a load that stored no row though it read records."""
    head = detect.read_head(path, compression)
    text = head.decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    n = summary.rejected
    first = f" First: {summary.first_reasons[0]}." if summary.first_reasons else ""
    every = f"every record was rejected ({n} rejected, nothing stored)"
    if fmt == "jobcomp" and _looks_like_scontrol(lines):
        return (
            f"{every}: this looks like `scontrol show job` output (JobName=, JobState=, "
            "indented continuation lines), not a jobcomp/filetxt log; load sacct output "
            "instead (sacct -P or sacct --json)."
        )
    if fmt == "sacct-text" and lines:
        sep = detect.header_separator(lines[0])
        if sep is not None:
            return (
                f"{every}: the header's fields are separated by {sep!r}, which is longer than"
                f" one character; give --delimiter {sep!r}." + first
            )
    return f"{every}; see `advisor ingest` rejects for each line's reason.{first}"


def _looks_like_scontrol(lines: list[str]) -> bool:
    sample = lines[:50]
    return any(_SCONTROL_KEYS.search(ln) for ln in sample) or any(
        ln.startswith((" ", "\t")) and "=" in ln for ln in sample
    )
