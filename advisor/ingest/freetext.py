"""Which free-text field of a sacct text record holds the delimiter.

sacct never quotes: a job name or submit line holding the delimiter (``sleep 1 | cat``) gives a
line with k more fields than the header. When the header has one free-text column, it absorbs
the k extra delimiters. With several (``sacct --format=ALL`` has JobName, SubmitLine, WorkDir,
Comment, ...), each candidate split is checked against the header's typed fields (numbers,
times, durations, exit codes, states, TRES) and, first, against the shape of whole free text (a
WorkDir is an absolute path, a SubmitLine starts with sbatch, srun or salloc): the one candidate
whose split leaves every field well-formed wins; when more than one does, the record is
rejected naming them.
"""

from __future__ import annotations

import re

from advisor.ingest.detect import TextLayout, canonical_field
from advisor.ingest.records import FREE_TEXT_FIELDS

# free text in sacct --format=ALL beyond the fields the parser reads
_MORE_FREE_TEXT = frozenset(
    {
        "systemcomment",
        "extra",
        "container",
        "failednode",
        "mcslabel",
        "reservation",
        "licenses",
        "flags",
        "tresusageintot",
    }
)

_INT = re.compile(r"\d+")
_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|Unknown|None|\d+")
_DURATION = re.compile(r"(\d+-)?(\d+:)?\d+:\d+(\.\d+)?|UNLIMITED|Partition_Limit|INVALID|\d+")
_EXIT = re.compile(r"\d+:\d+")
_STATE = re.compile(r"[A-Z_]+( by \d+)?\+?")
_MEM = re.compile(r"\d+(\.\d+)?[KMGTP]?[nc]?")
_TRES = re.compile(r"([a-z]+(/[^=,]+)?=[^=,]+)(,[a-z]+(/[^=,]+)?=[^=,]+)*")
_JOBID = re.compile(r"\d+(_\d+|_\[[^\]]*\]|\+\d+)?(\.[A-Za-z0-9+]+)?")

_INTS = (
    "elapsedraw",
    "nnodes",
    "ncpus",
    "alloccpus",
    "reqcpus",
    "uid",
    "gid",
    "cputimeraw",
    "reqnodes",
    "allocnodes",
    "associd",
    "priority",
    "restarts",
    "dbindex",
)
_DURATIONS = (
    "elapsed",
    "timelimit",
    "timelimitraw",
    "cputime",
    "suspended",
    "totalcpu",
    "usercpu",
    "systemcpu",
    "reserved",
    "planned",
    "plannedcpu",
)
_TYPED: dict[str, re.Pattern[str]] = {
    **dict.fromkeys(_INTS, _INT),
    **dict.fromkeys(("submit", "start", "end", "eligible"), _TIME),
    **dict.fromkeys(_DURATIONS, _DURATION),
    **dict.fromkeys(("exitcode", "derivedexitcode"), _EXIT),
    "state": _STATE,
    "reqmem": _MEM,
    **dict.fromkeys(("reqtres", "alloctres"), _TRES),
    **dict.fromkeys(("jobid", "jobidraw"), _JOBID),
}
# What free text looks like when it is whole: tried first, dropped when no candidate fits them.
_SHAPED: dict[str, re.Pattern[str]] = {
    "workdir": re.compile(r"/.*", re.S),  # sacct writes an absolute path
    "submitline": re.compile(r"(\S*/)?(sbatch|srun|salloc)(\s.*)?", re.S),  # the command typed
}


def free_columns(layout: TextLayout) -> list[int]:
    """The positions of the free-text columns of the header."""
    return [
        i
        for i, n in enumerate(layout.header_names)
        if canonical_field(n) in FREE_TEXT_FIELDS or canonical_field(n) in _MORE_FREE_TEXT
    ]


def _joined(parts: list[str], i: int, extra: int, delim: str) -> list[str]:
    return parts[:i] + [delim.join(parts[i : i + extra + 1])] + parts[i + extra + 1 :]


def _well_formed(fields: list[str], layout: TextLayout, shaped: bool) -> bool:
    for name, value in zip(layout.header_names, fields, strict=True):
        field = canonical_field(name)
        check = _TYPED.get(field) or (_SHAPED.get(field) if shaped else None)
        if value and check is not None and check.fullmatch(value) is None:
            return False
    return True


def rejoin(parts: list[str], delim: str, layout: TextLayout) -> list[str] | None:
    """``parts`` (more than the header's fields) with the extra delimiters given back to the
    one free-text column that can hold them, or None (no such column, or several)."""
    fits = candidates(parts, delim, layout)
    return (
        _joined(parts, fits[0], len(parts) - len(layout.columns), delim) if len(fits) == 1 else None
    )


def candidates(parts: list[str], delim: str, layout: TextLayout) -> list[int]:
    """The free-text columns that could absorb the extra fields of ``parts``."""
    extra = len(parts) - len(layout.columns)
    free = free_columns(layout)
    if extra <= 0 or not free:
        return []
    if len(free) == 1:  # nothing to choose between
        return free
    fits: list[int] = []
    for shaped in (True, False):
        fits = [i for i in free if _well_formed(_joined(parts, i, extra, delim), layout, shaped)]
        if fits:
            break
    return fits


def ambiguity(text: str, delim: str, layout: TextLayout) -> tuple[str, str] | None:
    """The reason and field for a record two free-text columns could each complete, else
    None."""
    parts = text.split(delim)
    fits = candidates(parts, delim, layout)
    if len(fits) < 2:
        return None
    names = [layout.header_names[i] for i in fits]
    extra = len(parts) - len(layout.columns)
    return (
        f"{extra} delimiter(s) {delim!r} too many, and the free-text fields {' and '.join(names)}"
        " could each hold them: cannot tell which (choose another --delimiter in sacct)",
        ",".join(names),
    )
