"""``sacct --json`` (and slurmrestd's same document), Slurm 21.08 through the current release.

Owns turning the document into records of canonical sacct fields (text), so that one SQL
parser serves every format. Shapes handled (research §3.6): dbv0.0.37/38 (plain ints, step.id
"batch" or int, ``time.start`` holding the eligible time before 22.05.8), data_parser v0.0.39
(``{set, infinite, number}`` numbers, step.id an object), v0.0.40+ (``state.current`` a list,
step.id "123.batch", lower-case ``meta.slurm``). A login banner before the ``{`` is skipped.

Versions v0.0.41 to v0.0.45 (Slurm 24.05 to 26.05) only add job fields this reader does not
need (stdout/stderr paths, ``time.planned``, ``qosreq``, ``restart_cnt``, ``segment_size``,
``sluid``, ``exclusive``, ``oversubscribe``) and the step ``submit_line`` (v0.0.45); the fields
read keep their names and shapes (SchedMD/slurm ``src/plugins/data_parser/v0.0.4x/parsers.c``;
docs/ingest.md lists them). :func:`data_parser_version` names the version of a document.
"""

from __future__ import annotations

import json
import math
from typing import Any

from advisor.errors import InputError
from advisor.ingest.records import JOB_RECORD_FIELDS, Reject

_BASE_STATES = {
    "PENDING",
    "RUNNING",
    "SUSPENDED",
    "COMPLETED",
    "CANCELLED",
    "FAILED",
    "TIMEOUT",
    "NODE_FAIL",
    "PREEMPTED",
    "BOOT_FAIL",
    "DEADLINE",
    "OUT_OF_MEMORY",
    "REQUEUED",
    "RESIZING",
    "REVOKED",
}
# The fields the document carries: the job record's, with the request, the submit line and
# what the job used.
_PRESENT = JOB_RECORD_FIELDS | {
    "reqcpus",
    "reqmem",
    "submitline",
    "totalcpu",
    "tresusageintot",
    "tresusageinmax",
    "admincomment",
}


def number(v: Any) -> int | None:
    """A Slurm JSON number: plain, or {set, infinite, number}; None when unset or infinite."""
    if isinstance(v, dict):
        if not v.get("set", True) or v.get("infinite", False):
            return None
        v = v.get("number")
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, float):
        # Slurm writes whole numbers: Infinity, NaN or 1.5 is a damaged value, and reading it
        # as int would raise (OverflowError) or round; ValueError rejects the job
        if not math.isfinite(v) or not v.is_integer():
            raise ValueError(f"{v!r} is not a whole number")
        return int(v)
    if isinstance(v, int):
        return v
    return None


# Slurm's NO_VAL and INFINITE (slurm.h): a plain-number time of a job that never started
# (25.11 writes "start": 4294967294 for one cancelled while pending) is unset, not 2106.
_UNSET_32 = (4294967294, 4294967295)


class _FieldError(ValueError):
    """A job's value of the wrong kind: the job is rejected naming ``field``."""

    def __init__(self, message: str, field: str) -> None:
        super().__init__(message)
        self.field = field


def _epoch(v: Any) -> str | None:
    """A time as epoch-seconds text for the parser; None when unset. A value that is no
    epoch (``"yesterday"``, ``-100``) goes on as text, so that the parser rejects it naming the
    field, as for text (it was read as unset, and a missing submit is stored as 1970)."""
    n = number(v)
    if n is None:
        return None if v is None or isinstance(v, dict) else str(v)
    return str(n) if n != 0 and n not in _UNSET_32 else None


def _tres(items: Any, field: str) -> str | None:
    """A TRES list ([{type, name, count}]) as sacct's TRES text; None when absent. Anything
    but a list (``"cpu=4"``) rejects the job naming ``field``: it was read as no TRES, a job
    with no CPUs and no reject."""
    if items is None:
        return None
    if not isinstance(items, list):
        raise _FieldError(f"{field} is a {type(items).__name__}, not a list of TRES", field)
    parts = []
    for t in items:
        if not isinstance(t, dict):
            continue
        typ, name, count = t.get("type"), t.get("name"), number(t.get("count"))
        if not typ or count is None:
            continue
        # (a negative count goes on: the parser rejects it naming the TRES field)
        key = f"{typ}/{name}" if name else str(typ)
        parts.append(f"{key}={count}M" if key == "mem" else f"{key}={count}")
    return ",".join(parts) if parts else ""


def _usage_tres(items: Any) -> str | None:
    """A step's consumed TRES (tres.consumed.total / .max) as sacct's TRESUsageIn* text: every
    count as it is (mem and gres/gpumem in bytes, gres/gpuutil in percent)."""
    if not isinstance(items, list):
        return None
    parts = []
    for t in items:
        if not isinstance(t, dict):
            continue
        typ, name, count = t.get("type"), t.get("name"), number(t.get("count"))
        if typ and count is not None and count >= 0:
            parts.append(f"{typ}/{name}={count}" if name else f"{typ}={count}")
    return ",".join(parts) or None


def _cpu_seconds(v: Any) -> str | None:
    """time.total ({seconds, microseconds}): sacct's TotalCPU, as seconds text."""
    if not isinstance(v, dict):
        return None
    sec, usec = number(v.get("seconds")), number(v.get("microseconds"))
    if sec is None:
        return None
    return f"{sec + (usec or 0) / 1e6:.6f}"


def _req_mem(req: dict[str, Any], requested: Any) -> str | None:
    """Requested memory as text's ReqMem writes it (parse.sql scales it the same way): per
    node (``Mn``) or per CPU (``Mc``) from ``required.memory_per_node`` / ``memory_per_cpu``
    (Slurm 23.02+), else the job's total (``M``) from ``tres.requested`` mem, else 21.08-22.05's
    plain ``required.memory`` (MB)."""
    for key, unit in (("memory_per_node", "Mn"), ("memory_per_cpu", "Mc")):
        n = number(req.get(key))
        if n is not None and n > 0:
            return f"{n}{unit}"
    if isinstance(requested, list):
        for t in requested:
            if isinstance(t, dict) and t.get("type") == "mem":
                n = number(t.get("count"))
                if n is not None and n > 0:
                    return f"{n}M"
    n = number(req.get("memory"))
    return f"{n}M" if n is not None and n > 0 else None


def _state(v: Any) -> str | None:
    cur = v.get("current") if isinstance(v, dict) else v
    if isinstance(cur, list):
        base = [s for s in cur if isinstance(s, str) and s in _BASE_STATES]
        return base[0] if base else (str(cur[0]) if cur else None)
    return str(cur) if cur is not None else None


def _exit(v: Any) -> str | None:
    if not isinstance(v, dict):
        return None
    rc = number(v.get("return_code"))
    sig = v.get("signal")
    sig_n = number(sig.get("id")) if isinstance(sig, dict) else None
    return f"{rc if rc is not None else 0}:{sig_n if sig_n is not None else 0}"


# data_parser version -> the Slurm release whose sacct --json first writes it (SchedMD/slurm
# RELEASE_NOTES and CHANGELOG/slurm-*.md: "Added new v0.0.4x API endpoints").
DATA_PARSER_RELEASES = {
    "v0.0.37": "21.08",
    "v0.0.38": "22.05",
    "v0.0.39": "23.02",
    "v0.0.40": "23.11",
    "v0.0.41": "24.05",
    "v0.0.42": "24.11",
    "v0.0.43": "25.05",
    "v0.0.44": "25.11",
    "v0.0.45": "26.05",
}


def data_parser_version(meta: Any) -> str | None:
    """``v0.0.42`` from ``meta.plugin.data_parser`` ("data_parser/v0.0.42"), or from the
    older ``meta.plugin.type`` ("openapi/dbv0.0.38"); None when the document does not say."""
    plugin = meta.get("plugin") if isinstance(meta, dict) else None
    if not isinstance(plugin, dict):
        return None
    for key in ("data_parser", "type"):
        text = plugin.get(key)
        if isinstance(text, str) and "v0.0." in text:
            tail = text[text.rindex("v0.0.") :]
            digits = tail[5:].split("/")[0]
            if digits.isdigit():
                return f"v0.0.{int(digits)}"
    return None


def _version(meta: Any) -> tuple[int, int, int] | None:
    if not isinstance(meta, dict):
        return None
    s = meta.get("slurm") or meta.get("Slurm") or {}
    v = s.get("version") if isinstance(s, dict) else None
    if not isinstance(v, dict):
        return None
    try:
        return (int(v.get("major", 0)), int(v.get("minor", 0)), int(v.get("micro", 0)))
    except (TypeError, ValueError):
        return None


def _display_id(job: dict[str, Any]) -> str:
    jid = job.get("job_id")
    arr = job.get("array") or {}
    het = job.get("het") or {}
    a_job, a_task = number(arr.get("job_id")), number(arr.get("task_id"))
    if a_job and a_task is not None:
        return f"{a_job}_{a_task}"
    h_job, h_off = number(het.get("job_id")), number(het.get("job_offset"))
    if h_job and h_off is not None:
        return f"{h_job}+{h_off}"
    return str(jid)


def _step_suffix(step: dict[str, Any]) -> str | None:
    sid = (step.get("step") or {}).get("id")
    if isinstance(sid, dict):  # v0.0.39
        sid = sid.get("step_id")
    if isinstance(sid, str) and "." in sid:  # v0.0.40+: "123.batch", "123.0+1"
        sid = sid.split(".", 1)[1]
    if sid is None:
        return None
    return str(sid).lower() if isinstance(sid, str) else str(sid)


def records(
    data: bytes, source: str
) -> tuple[list[dict[str, str | int | None]], list[Reject], set[str]]:
    """Records (allocations and their steps) of a sacct --json document, per-job rejects."""
    text = data.decode("utf-8", errors="replace")
    brace = text.find("{")
    if brace < 0:
        raise InputError("no JSON object found (expected sacct --json output)", source=source)
    try:
        doc = json.loads(text[brace:])
    except json.JSONDecodeError as exc:
        raise InputError(
            f"not valid JSON: {exc.msg} (column {exc.colno})", source=source, line=exc.lineno
        ) from exc
    except RecursionError:
        # nesting deeper than Python's parser goes (a damaged or hostile job): parse the
        # document job by job, so that only the jobs too deep to read are rejected
        doc = _shallow_document(text[brace:], source)
    jobs = doc.get("jobs") if isinstance(doc, dict) else None
    if not isinstance(jobs, list):
        raise InputError("no 'jobs' list (expected sacct --json output)", source=source)
    _refuse_slurmctld_view(doc, jobs, source)
    plugin = json.dumps(doc.get("meta", {}).get("plugin", {})) if isinstance(doc, dict) else ""
    version = _version(doc.get("meta")) if isinstance(doc, dict) else None
    start_is_eligible = ("dbv0.0.37" in plugin or "dbv0.0.38" in plugin) and (
        version is None or version < (22, 5, 8)
    )
    out: list[dict[str, str | int | None]] = []
    rejects: list[Reject] = []
    for i, job in enumerate(jobs, start=1):
        if isinstance(job, _TooDeep):
            rejects.append(Reject(i, job.raw, f"job #{i} of the document: {job.reason}"))
            continue
        try:
            out.extend(_job_records(job, i, start_is_eligible))
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raw = json.dumps(job, ensure_ascii=False)[:4000]
            field = exc.field if isinstance(exc, _FieldError) else None
            rejects.append(
                Reject(i, raw, f"job #{i} of the document: unusable ({exc})", field=field)
            )
    present = carried(jobs)
    if "dbv0.0.37" in plugin or "dbv0.0.38" in plugin:
        # 22.05's plugin writes return_code 0 for a job whose batch script exited 3 (state
        # FAILED; the real Slurm export in data/sample/slurm): not an exit code to keep
        present.discard("exitcode")
    return out, rejects, present


def _refuse_slurmctld_view(doc: Any, jobs: list[Any], source: str) -> None:
    """Refuse slurmctld's view of current jobs: ``squeue --json``, ``scontrol show job --json``
    and slurmrestd's ``/slurm/v0.0.4x/jobs`` share sacct's ``jobs`` list but not its job
    shape (``job_state``, ``gres_detail``, ``tres_alloc_str`` instead of ``state``, ``tres``),
    and hold no finished jobs; read as accounting they were stored as empty jobs."""
    meta = doc.get("meta") if isinstance(doc, dict) else None
    plugin = meta.get("plugin") if isinstance(meta, dict) else None
    kind = str(plugin.get("type") or "") if isinstance(plugin, dict) else ""
    command = meta.get("command") if isinstance(meta, dict) else None
    first = str(command[0]) if isinstance(command, list) and command else ""
    controller = any(isinstance(j, dict) and "job_state" in j and "state" not in j for j in jobs)
    if "slurmctld" in kind or first.rsplit("/", 1)[-1] in ("squeue", "scontrol") or controller:
        raise InputError(
            "this is slurmctld's view of current jobs (squeue/scontrol --json, slurmrestd"
            " /slurm/.../jobs), not accounting: use sacct --json (or slurmrestd's"
            " /slurmdb/.../jobs)",
            source=source,
        )


class _TooDeep:
    """A job of the document nested too deeply to parse: rejected with its start."""

    def __init__(self, raw: str) -> None:
        self.raw = raw[:4000]
        self.reason = "unusable (nested too deeply to read)"


def _value_end(text: str, start: int) -> int:
    """The index after the JSON value that starts at ``start``, by counting brackets outside
    strings: no recursion, so any depth is scanned."""
    depth, i, n = 0, start, len(text)
    while i < n:
        ch = text[i]
        if ch == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
            if depth == 0:
                return i + 1
        elif depth == 0 and ch in ",]}":
            return i
        i += 1
    return n


def _shallow_document(text: str, source: str) -> dict[str, Any]:
    """The document's ``meta`` and ``jobs``, each job parsed on its own; a job too deep for the
    parser becomes a :class:`_TooDeep`. Only for documents json.loads cannot parse whole."""
    decoder = json.JSONDecoder()
    key = text.find('"jobs"')
    colon = text.find("[", key) if key >= 0 else -1
    if colon < 0:
        raise InputError("nested too deeply to read, and no 'jobs' list found", source=source)
    jobs: list[Any] = []
    i = colon + 1
    while True:
        while i < len(text) and text[i] in " \t\r\n,":
            i += 1
        if i >= len(text) or text[i] == "]":
            break
        end = _value_end(text, i)
        try:
            jobs.append(decoder.raw_decode(text[i:end])[0])
        except (RecursionError, json.JSONDecodeError):
            jobs.append(_TooDeep(text[i:end]))
        i = end
    meta: Any = {}
    mkey = text.find('"meta"')
    if mkey >= 0:
        mstart = text.find("{", mkey)
        try:
            meta = decoder.raw_decode(text[mstart : _value_end(text, mstart)])[0]
        except (RecursionError, json.JSONDecodeError):
            meta = {}
    return {"meta": meta, "jobs": jobs}


# Fields whose key some versions of the document lack (22.05's dbv0.0.38 has no submit_line):
# a load of such a document must not read the field as NULL on every job.
_OPTIONAL_KEYS = {"submitline": "submit_line", "workdir": "working_directory"}


def carried(jobs: list[Any]) -> set[str]:
    """The canonical fields this document really carries: a field whose key no job has is
    absent (its stored value is kept on update, see model.JOB_COLUMN_SOURCES)."""
    keys = {k for job in jobs if isinstance(job, dict) for k in job}
    return {f for f in _PRESENT if f not in _OPTIONAL_KEYS or _OPTIONAL_KEYS[f] in keys}


def _text(v: object, key: str) -> str | None:
    """A text field's value: strings as they are, numbers as text; a list or an object is
    not a value of these fields (TypeError: the job becomes a reject naming the field)."""
    if v is None or isinstance(v, str):
        return v
    if isinstance(v, bool | int | float):
        return str(v)
    raise TypeError(f"field {key!r} is a {type(v).__name__}, not a text")


def _job_records(
    job: dict[str, Any], index: int, start_is_eligible: bool
) -> list[dict[str, str | int | None]]:
    if not isinstance(job, dict) or number(job.get("job_id")) is None:
        raise ValueError("no job_id")
    t = job.get("time") or {}
    end, elapsed = number(t.get("end")), number(t.get("elapsed"))
    start_value: Any = t.get("start")
    if start_is_eligible:
        # 21.08 to 22.05.7 wrote the eligible time into time.start: derive the real start from
        # the end. A job still running (end 0) has no end to count back from: its time.start
        # is kept (the eligible time at worst, the start itself for a job that did not wait),
        # if it ran at all.
        if end and end > 0 and elapsed is not None:
            start_value = end - elapsed
        elif not elapsed:
            start_value = None
    tres = job.get("tres") or {}
    req = job.get("required") or {}
    display = _display_id(job)
    jid = str(number(job.get("job_id")))
    rec: dict[str, str | int | None] = {
        "jobid": display,
        "jobidraw": jid,
        "cluster": _text(job.get("cluster"), "cluster"),
        "partition": _text(job.get("partition"), "partition"),
        "qos": _text(job.get("qos"), "qos"),
        "account": _text(job.get("account"), "account"),
        "group": _text(job.get("group"), "group"),
        "user": _text(job.get("user"), "user"),
        "jobname": _text(job.get("name"), "name"),
        "state": _state(job.get("state")),
        "exitcode": _exit(job.get("exit_code")),
        # (sacct always writes the submission time: none is an unknown one, rejected by name)
        "submit": _epoch(t.get("submission")) or "Unknown",
        "eligible": _epoch(t.get("eligible")),
        "start": _epoch(start_value),
        "end": _epoch(t.get("end")),
        "elapsedraw": str(elapsed) if elapsed is not None else None,
        "timelimitraw": str(number(t.get("limit"))) if number(t.get("limit")) else None,
        "nnodes": str(number(job.get("allocation_nodes"))) if job.get("allocation_nodes") else None,
        # Requested CPUs: required.CPUs wins over tres.requested's cpu (parse.sql reads reqcpus
        # first): it is sacct's ReqCPUS, the value a text export of the same job carries, so
        # a job loaded as text and as JSON keeps one value; tres.requested's cpu is what
        # slurmctld made of the request (whole cores, --exclusive, --cpus-per-gpu expanded).
        "reqcpus": str(number(req.get("CPUs"))) if number(req.get("CPUs")) is not None else None,
        "reqmem": _req_mem(req, tres.get("requested")),
        "alloctres": _tres(tres.get("allocated"), "tres.allocated"),
        "reqtres": _tres(tres.get("requested"), "tres.requested"),
        "nodelist": _text(job.get("nodes"), "nodes"),
        "submitline": _text(job.get("submit_line"), "submit_line"),
        "workdir": _text(job.get("working_directory"), "working_directory"),
        "totalcpu": _cpu_seconds(t.get("total")),
        "admincomment": _text((job.get("comment") or {}).get("administrator"), "comment"),
        "line_no": index,
        "_raw": json.dumps(
            {k: job.get(k) for k in ("job_id", "name", "state", "tres")}, ensure_ascii=False
        )[:4000],
    }
    out = [rec]
    for step in job.get("steps") or []:
        suffix = _step_suffix(step) if isinstance(step, dict) else None
        if suffix is None:
            continue
        tres_s = step.get("tres")
        consumed = tres_s.get("consumed") if isinstance(tres_s, dict) else None
        consumed = consumed if isinstance(consumed, dict) else {}
        out.append(
            {
                "jobid": f"{display}.{suffix}",
                "jobidraw": f"{jid}.{suffix}",
                "cluster": _text(job.get("cluster"), "cluster"),
                "totalcpu": _cpu_seconds((step.get("time") or {}).get("total")),
                "tresusageintot": _usage_tres(consumed.get("total")),
                "tresusageinmax": _usage_tres(consumed.get("max")),
                "line_no": index,
                "_raw": "",
            }
        )
    return out
