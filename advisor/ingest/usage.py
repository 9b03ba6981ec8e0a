"""The usage side of a job record: Princeton jobstats' summary in AdminComment (issue 23).

jobstats (github.com/PrincetonUniversity/jobstats, docs/setup/summaries.md) stores at job end
``JS1:`` followed by base64 of a gzip-compressed JSON document: ``{"gpus": n, "nodes": {node:
{"cpus", "total_time" (CPU seconds used), "used_memory", "total_memory", "gpu_utilization":
{gpu index: percent}, "gpu_used_memory": {gpu index: bytes}, "gpu_total_memory": {...}}},
"total_time": elapsed seconds}``; ``JS1:Short`` and ``JS1:None`` mark jobs too short to sample
or without data. DuckDB cannot inflate gzip, so the parser calls :func:`jobstats_figures` as a
scalar function (``ing_jobstats``), and only on the rare values that start with ``JS1:``.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import math
import zlib
from typing import Any

import duckdb
from duckdb.func import FunctionNullHandling

# zlib's window bits for "gzip or zlib header, detect which" (zlib.decompress docs).
_GZIP_OR_ZLIB = 47
_MAX_INFLATED = 4 << 20  # a summary is a few kB; never inflate a hostile blob without bound


def _numbers(d: Any) -> list[float]:
    """The finite numbers of a {gpu index: value} mapping."""
    if not isinstance(d, dict):
        return []
    out = []
    for v in d.values():
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            out.append(float(v))
    return out


def decode_jobstats(text: str) -> dict[str, Any] | None:
    """The JSON summary of a ``JS1:`` AdminComment, or None (another comment, ``JS1:Short``,
    ``JS1:None``, or bytes that do not decode)."""
    if not text.startswith("JS1:"):
        return None
    try:
        raw = base64.b64decode(text[4:].strip(), validate=False)
        inflater = zlib.decompressobj(_GZIP_OR_ZLIB)
        body = inflater.decompress(raw, _MAX_INFLATED)
        doc = json.loads(body)
    except (binascii.Error, zlib.error, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def jobstats_figures(text: str | None) -> list[float | None] | None:
    """[CPU seconds used, mean GPU utilisation %, peak GPU utilisation %, peak GPU memory MB]
    of a ``JS1:`` summary (None for a figure it lacks), or None when it carries none."""
    doc = decode_jobstats(text) if text else None
    nodes = doc.get("nodes") if doc else None
    if not isinstance(nodes, dict) or not nodes:
        return None
    cpu: float | None = None
    util: list[float] = []
    mem: list[float] = []
    for node in nodes.values():
        if not isinstance(node, dict):
            continue
        t = node.get("total_time")
        if isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t):
            cpu = (cpu or 0.0) + float(t)
        util += _numbers(node.get("gpu_utilization"))
        mem += _numbers(node.get("gpu_used_memory"))
    return [
        cpu,
        sum(util) / len(util) if util else None,
        max(util) if util else None,
        max(mem) / 1048576 if mem else None,
    ]


def register(con: duckdb.DuckDBPyConnection) -> None:
    """Make ``ing_jobstats(VARCHAR) -> DOUBLE[]`` callable on ``con`` (once per connection)."""
    with contextlib.suppress(duckdb.InvalidInputException, duckdb.CatalogException):
        con.remove_function("ing_jobstats")  # registered already on this connection
    con.create_function(
        "ing_jobstats",
        jobstats_figures,
        [duckdb.sqltype("VARCHAR")],
        duckdb.list_type(duckdb.sqltype("DOUBLE")),
        null_handling=FunctionNullHandling.SPECIAL,
        exception_handling=duckdb.PythonExceptionHandling.RETURN_NULL,
        side_effects=False,
    )
