"""Node inventory: parsing ``scontrol show node -o`` into the ``nodes`` table.

This module owns what a cluster's nodes look like (CPUs, sockets, cores, threads, memory, GPUs
and their canonical type, partitions), read from a file or by running ``scontrol`` itself
(with an argument list, never a shell). A bad line is kept out with its file, line and field
(in ``rejects``, and in the result) while every good line still loads. The fair share of cores
per GPU built on this table lives in :mod:`advisor.ratios`.

One ``scontrol show node -o`` line is ``Key=Value`` pairs separated by spaces; a few values
(``OS=``, ``Reason=``) contain spaces themselves, so a word that does not start a new
``Key=`` continues the previous value. GPUs come from ``Gres=``
(``gpu:h100:4(S:0-1)``, ``gpu:4``, several entries comma-separated), or from ``CfgTRES``
(``gres/gpu=4``, ``gres/gpu:h100=4``) when ``Gres`` has none.

``scontrol`` output does not name its cluster: ``--cluster`` does (with ``--live``, the
``ClusterName`` of ``scontrol show config`` by default). To load several clusters from one file,
put a ``CLUSTER: name`` line (the header ``sinfo -M``/``squeue -M`` print) before each
cluster's lines; it names the cluster of the lines that follow it.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import duckdb

from advisor.errors import ExternalToolError, InputError, NotFoundError, UsageError
from advisor.gputypes import canonical_gpu_type, load_site_mapping
from advisor.ingest import bookkeeping
from advisor.ingest.records import Reject
from advisor.progress import ProgressFn, no_progress
from advisor.store import query

_KEY_RE = re.compile(r"^([A-Za-z][A-Za-z0-9_]*)=(.*)$", re.DOTALL)
_GRES_RE = re.compile(
    r"^(?P<name>[^:(]+)(?::(?P<a>[^:(]*))?(?::(?P<b>[^:(]*))?(?:\((?P<extra>[^)]*)\))?$"
)
_COUNT_RE = re.compile(r"^(\d+)([KMGTP]?)$")
_MULT = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3, "T": 1024**4, "P": 1024**5}
_CLUSTER_RE = re.compile(r"^\s*ClusterName\s*=\s*(\S+)\s*$", re.MULTILINE)
_HEADER_RE = re.compile(r"^CLUSTER:\s*(\S+)\s*$")


@dataclass(frozen=True)
class NodeRecord:
    """One node as ``scontrol show node`` describes it. Memory in MB (Slurm's RealMemory)."""

    node_name: str
    cpus: int
    cpus_effective: int | None
    sockets: int | None
    cores_per_socket: int | None
    threads_per_core: int | None
    real_memory_mb: int | None
    gpus: int
    gpu_type: str | None
    gpu_type_raw: str | None
    gres: str | None
    partitions: tuple[str, ...]
    features: str | None
    state: str | None
    line_no: int
    cluster: str | None = None  # from a preceding ``CLUSTER: name`` line, else None


@dataclass(frozen=True)
class NodeReject:
    """A line that could not be loaded: where it was, which field, why, and the line itself."""

    source: str
    line_no: int
    field: str | None
    reason: str
    raw: str

    def message(self) -> str:
        """The reject as an :class:`~advisor.errors.InputError` message (file:line, field)."""
        return str(InputError(self.reason, source=self.source, line=self.line_no, field=self.field))


@dataclass(frozen=True)
class NodeIngestConfig:
    """What to load: ``path`` (a file of ``scontrol show node -o`` output) or ``live`` (run
    ``scontrol``). ``cluster`` names the cluster the nodes belong to; with ``live`` it defaults
    to ``ClusterName`` from ``scontrol show config``. ``gpu_types`` is a site's GPU type mapping
    file (see advisor.gputypes)."""

    path: str | os.PathLike[str] | None = None
    live: bool = False
    cluster: str | None = None
    gpu_types: str | os.PathLike[str] | None = None
    scontrol: str = "scontrol"
    timeout_s: float = 60.0


@dataclass(frozen=True)
class NodeIngestResult:
    """What a node load did: nodes read, inserted, updated, and the rejected lines."""

    ingest_id: int
    source: str
    clusters: tuple[str, ...]
    lines_read: int
    nodes_read: int
    inserted: int
    updated: int
    rejects: tuple[NodeReject, ...] = field(default_factory=tuple)

    @property
    def rejected(self) -> int:
        return len(self.rejects)


def _split_pairs(line: str) -> list[tuple[str, str]]:
    pairs: list[tuple[str, str]] = []
    for word in line.split():
        m = _KEY_RE.match(word)
        if m:
            pairs.append((m.group(1), m.group(2)))
        elif pairs:
            key, value = pairs[-1]
            pairs[-1] = (key, f"{value} {word}")
        elif word.strip():
            raise InputError(f"expected Key=Value, got {word!r}", field="NodeName")
    return pairs


def _count(text: str, fieldname: str) -> int:
    m = _COUNT_RE.match(text.strip())
    if not m:
        raise InputError(f"{text!r} is not a count", field=fieldname)
    return int(m.group(1)) * _MULT[m.group(2)]


def parse_gres(gres: str | None) -> dict[str | None, int]:
    """GPUs per raw type in a node ``Gres=`` string (``None`` for untyped GPUs).

    ``gpu:h100:4(S:0-1)`` gives ``{"h100": 4}``, ``gpu:4`` ``{None: 4}``,
    ``gpu:a100:2,gpu:v100:2`` both; non-GPU GRES (``shard``, ``mps``) are ignored and
    ``(null)`` means none. Raises InputError (field Gres) for an entry it cannot read.
    """
    out: dict[str | None, int] = {}
    if gres is None:
        return out
    text = gres.strip()
    if text in ("", "(null)", "N/A"):
        return out
    depth = 0
    parts: list[str] = []
    cur: list[str] = []
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    for part in parts:
        m = _GRES_RE.match(part.strip().replace("(null)", ""))
        if not m:
            raise InputError(f"cannot read GRES entry {part!r}", field="Gres")
        if m.group("name").strip().lower() != "gpu":
            continue
        a, b = m.group("a"), m.group("b")
        if b is not None:
            gtype, count = a, b
        elif a is not None and _COUNT_RE.match(a):
            gtype, count = None, a
        elif a is not None:
            gtype, count = a, "1"  # gpu:h100 with no count means one
        else:
            gtype, count = None, "1"
        if gtype in ("(null)", ""):
            gtype = None
        n = _count(count, "Gres")
        out[gtype] = out.get(gtype, 0) + n
    return out


def _parse_cfg_tres(tres: str | None) -> dict[str | None, int]:
    typed: dict[str | None, int] = {}
    untyped = 0
    if not tres:
        return typed
    for item in tres.split(","):
        key, _, value = item.partition("=")
        if key == "gres/gpu":
            untyped = _count(value, "CfgTRES")
        elif key.startswith("gres/gpu:"):
            typed[key.split(":", 1)[1]] = _count(value, "CfgTRES")
    if typed:
        return typed  # typed and untyped keys name the same GPUs, not a sum
    return {None: untyped} if untyped else {}


def _int(pairs: dict[str, str], key: str, *, required: bool = False) -> int | None:
    value = pairs.get(key)
    if value is None or value.strip() in ("", "N/A", "(null)"):
        if required:
            raise InputError(f"{key} is missing", field=key)
        return None
    try:
        return int(value)
    except ValueError:
        raise InputError(f"{value!r} is not an integer", field=key) from None


def parse_node_line(
    line: str, line_no: int, site: dict[str, str] | None = None
) -> NodeRecord | None:
    """One ``scontrol show node -o`` line as a NodeRecord; ``None`` for a blank line.

    Raises InputError naming the field that is missing or malformed.
    """
    text = line.strip()
    if not text:
        return None
    pairs = dict(_split_pairs(text))
    name = pairs.get("NodeName", "").strip()
    if not name:
        raise InputError("no NodeName= on this line", field="NodeName")
    cpus = _int(pairs, "CPUTot", required=True)
    assert cpus is not None
    if cpus <= 0:
        raise InputError(f"{cpus} is not a positive CPU count", field="CPUTot")
    gres = pairs.get("Gres")
    by_type = parse_gres(gres)
    if not by_type:
        by_type = _parse_cfg_tres(pairs.get("CfgTRES"))
    gpus = sum(by_type.values())
    raw_type = None
    if by_type:
        # A node with several GPU types is filed under the type it has most of.
        raw_type = max(by_type.items(), key=lambda kv: (kv[1], kv[0] is not None))[0]
    partitions = tuple(p for p in (pairs.get("Partitions") or "").split(",") if p)
    return NodeRecord(
        node_name=name,
        cpus=cpus,
        cpus_effective=_int(pairs, "CPUEfctv"),
        sockets=_int(pairs, "Sockets"),
        cores_per_socket=_int(pairs, "CoresPerSocket"),
        threads_per_core=_int(pairs, "ThreadsPerCore"),
        real_memory_mb=_int(pairs, "RealMemory"),
        gpus=gpus,
        gpu_type=canonical_gpu_type(raw_type, site),
        gpu_type_raw=raw_type,
        gres=None if gres in (None, "(null)") else gres,
        partitions=partitions,
        features=pairs.get("AvailableFeatures") or pairs.get("Features"),
        state=pairs.get("State"),
        line_no=line_no,
    )


def parse_scontrol_nodes(
    text: str, source: str, site: dict[str, str] | None = None
) -> tuple[list[NodeRecord], list[NodeReject]]:
    """Every node of ``scontrol show node -o`` output, and every line that could not be read.

    A ``CLUSTER: name`` line sets the ``cluster`` of the nodes after it.
    """
    nodes: list[NodeRecord] = []
    rejects: list[NodeReject] = []
    cluster: str | None = None
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip().startswith("No nodes in the system"):
            continue
        header = _HEADER_RE.match(line.strip())
        if header:
            cluster = header.group(1)
            continue
        try:
            rec = parse_node_line(line, i, site)
        except InputError as exc:
            rejects.append(
                NodeReject(
                    source=source,
                    line_no=i,
                    field=exc.field,
                    reason=str(exc).split(": ", 1)[-1],
                    raw=line,
                )
            )
            continue
        if rec is not None:
            nodes.append(replace(rec, cluster=cluster) if cluster else rec)
    return nodes, rejects


def _run(cmd: Sequence[str], timeout_s: float) -> str:
    try:
        proc = subprocess.run(  # noqa: S603 - an argument list, no shell
            list(cmd), capture_output=True, text=True, errors="replace", timeout=timeout_s
        )
    except FileNotFoundError as exc:
        raise ExternalToolError(
            f"{cmd[0]}: not found; install the Slurm client or load a file with "
            "`advisor nodes ingest FILE`"
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise ExternalToolError(f"{' '.join(cmd)}: no answer within {timeout_s:g} s") from exc
    if proc.returncode != 0:
        raise ExternalToolError(
            f"{' '.join(cmd)} failed (exit {proc.returncode}): {proc.stderr.strip()[:500]}"
        )
    return proc.stdout


def _read_source(cfg: NodeIngestConfig) -> tuple[str, str, str | None]:
    """(text, source label, cluster name from scontrol when live)."""
    if cfg.live and cfg.path is not None:
        raise UsageError("give either a FILE or --live, not both")
    if cfg.live:
        text = _run([cfg.scontrol, "show", "node", "-o"], cfg.timeout_s)
        cluster = cfg.cluster
        if cluster is None:
            conf = _run([cfg.scontrol, "show", "config"], cfg.timeout_s)
            m = _CLUSTER_RE.search(conf)
            cluster = m.group(1) if m else None
        return text, "scontrol show node -o", cluster
    if cfg.path is None:
        raise UsageError("give a FILE of `scontrol show node -o` output, or --live")
    path = Path(cfg.path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise NotFoundError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputError("is a directory, not a file", source=str(path)) from None
    return data.decode("utf-8", errors="replace"), str(path), cfg.cluster


def ingest_nodes(
    con: duckdb.DuckDBPyConnection,
    cfg: NodeIngestConfig,
    progress: ProgressFn = no_progress,
) -> NodeIngestResult:
    """Load a node inventory into ``nodes`` (upsert on cluster + node name), in one transaction.

    Bad lines go to ``rejects`` (and the result) with their line and field; the rest loads.
    Nodes missing from a newer snapshot are kept with their older ``snapshot_at``.
    """
    text, source, default_cluster = _read_source(cfg)
    site = load_site_mapping(cfg.gpu_types)
    lines = text.splitlines()
    progress(source, 0, len(lines))
    nodes, rejects = parse_scontrol_nodes(text, source, site)
    if not default_cluster and any(n.cluster is None for n in nodes):
        raise UsageError(
            f"{source}: which cluster are these nodes from? give --cluster NAME "
            "(the cluster name your jobs carry), or put a `CLUSTER: NAME` line before them"
        )
    # The last line of a node wins when a snapshot names it twice.
    latest: dict[tuple[str, str], NodeRecord] = {}
    for n in nodes:
        latest[(n.cluster or str(default_cluster), n.node_name)] = n
    clusters = tuple(sorted({c for c, _ in latest}))
    now = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    digest = hashlib.sha256(text.encode("utf-8", errors="replace")).hexdigest()
    con.execute("BEGIN TRANSACTION")
    try:
        ingest_id = bookkeeping.open_ingest(
            con,
            bookkeeping.IngestRow(
                source=source,
                format="scontrol-node",
                cluster=",".join(clusters) or default_cluster,
                started_at=now,
                content_hash=digest,
                lines_read=len(lines),
            ),
        )
        keys = list(latest)
        existing_row = con.execute(
            query("nodes/count_existing"), [[c for c, _ in keys], [nm for _, nm in keys]]
        ).fetchone()
        existing = int(existing_row[0]) if existing_row else 0
        if latest:
            con.executemany(
                query("nodes/upsert"),
                [
                    [
                        c,
                        n.node_name,
                        n.cpus,
                        n.cpus_effective,
                        n.sockets,
                        n.cores_per_socket,
                        n.threads_per_core,
                        n.real_memory_mb,
                        n.gpus,
                        n.gpu_type,
                        n.gpu_type_raw,
                        n.gres,
                        list(n.partitions),
                        n.features,
                        n.state,
                        now,
                        ingest_id,
                    ]
                    for (c, _), n in latest.items()
                ],
            )
        bookkeeping.store_rejects(
            con, ingest_id, source, [Reject(r.line_no, r.raw, r.reason, r.field) for r in rejects]
        )
        bookkeeping.finish_ingest(
            con,
            ingest_id,
            bookkeeping.IngestCounts(
                rows_read=len(latest),
                lines_read=len(lines),
                inserted=len(latest) - existing,
                updated=existing,
                unchanged=0,
                rejected=len(rejects),
            ),
        )
        con.execute("COMMIT")
    except Exception:
        con.execute("ROLLBACK")
        raise
    progress(source, len(lines), len(lines))
    return NodeIngestResult(
        ingest_id=ingest_id,
        source=source,
        clusters=clusters,
        lines_read=len(lines),
        nodes_read=len(latest),
        inserted=len(latest) - existing,
        updated=existing,
        rejects=tuple(rejects),
    )


@dataclass(frozen=True)
class NodeRow:
    """A node of the inventory as ``advisor nodes list`` shows it."""

    cluster: str
    node_name: str
    cpus: int | None
    cpus_effective: int | None
    sockets: int | None
    cores_per_socket: int | None
    threads_per_core: int | None
    real_memory_mb: int | None
    gpus: int
    gpu_type: str | None
    gpu_type_raw: str | None
    partitions: tuple[str, ...]
    state: str | None
    cores_per_gpu: float | None
    snapshot_at: dt.datetime


def list_nodes(con: duckdb.DuckDBPyConnection, cluster: str | None = None) -> list[NodeRow]:
    """Every node in the inventory (of one cluster, if given), ordered by cluster and name."""
    cur = con.execute(query("nodes/list"), {"cluster": cluster})
    cols = [d[0] for d in cur.description or ()]
    out = []
    for row in cur.fetchall():
        r = dict(zip(cols, row, strict=True))
        r["partitions"] = tuple(r["partitions"] or ())
        out.append(NodeRow(**r))
    return out
