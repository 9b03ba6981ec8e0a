"""Synthetic sacct accounting data in the real ``sacct -P`` text format, calibrated to the research.

Owns :class:`SynthConfig` and :func:`generate`: deterministic from the seed, vectorised (numpy
draws every random value, DuckDB formats the lines), so millions of records take seconds.

What the output looks like (one header line, ``|``-separated, like ``sacct -P``)::

    JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|User|UID|Submit|Eligible|Start|End|
    Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|
    WorkDir|JobName|SubmitLine

with step lines (``.batch``, ``.extern``, ``.interactive``, ``.0``) after their allocation,
array tasks (``123_4``), het-job components (``123+0``/``123+1``), ``CANCELLED by UID``,
jobs cancelled while pending (``Start`` ``Unknown``, empty ``AllocTRES``), running jobs (``End``
``Unknown``), CPU-only jobs, typed GPU keys beside the untyped total
(``gres/gpu:h100=4,gres/gpu=4``), ``--cpus-per-gpu`` jobs whose ``ReqCPUS`` differs from the
allocation, ``--exclusive`` whole-node jobs, and rare free text that breaks naive parsers (a
``|`` or a newline inside ``SubmitLine``, non-UTF-8 bytes in ``JobName``).

Calibration (cores per GPU = allocated CPUs / allocated GPUs over allocations with GPUs,
job-count weighted, continuous-linear percentiles as numpy's default / DuckDB ``quantile_cont``):

====================  =====  =====  ==========================================
cluster / GPU type    P25    P50    other
====================  =====  =====  ==========================================
teaching / H100       0.25   1.00
teaching / A100       1.00   2.00
research / H100       4.00   8.00   60% of jobs at or below 8, 49% strictly below
====================  =====  =====  ==========================================

The research reports "P50 8.00, ~60% of jobs below 8" for the research cluster; under a
job-count-weighted P50 of exactly 8 at most half the jobs can lie strictly below 8, so the
generator reads "below 8" as "at or below 8" (documented in docs/ingest.md).

Guarantee: the ratio categories are assigned by exact proportions within each
(cluster, GPU type) group (stratified, then shuffled), not drawn independently, so those
P25/P50 are exact (tolerance 0.0 cores) once a group holds 200 or more GPU allocations, which
``records >= 2000`` ensures; tests check the shipped sample at 20k.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, cast

import numpy as np

from advisor.errors import UsageError
from advisor.progress import ProgressFn, no_progress

FIELDS: tuple[str, ...] = (
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
    "Elapsed",
    "ExitCode",
    "State",
    "NNodes",
    "NCPUS",
    "ReqCPUS",
    "ReqMem",
    "ReqTRES",
    "AllocTRES",
    "Timelimit",
    "NodeList",
    "WorkDir",
    "JobName",
    "SubmitLine",
)

# The usage fields SynthConfig.usage adds (after NodeList: see fields_of).
USAGE_FIELDS: tuple[str, ...] = ("TotalCPU", "CPUTimeRAW", "TRESUsageInTot", "TRESUsageInMax")

# Ratio categories (cores per GPU) and their job shares per calibrated group. Each group's
# cumulative shares put the target percentiles well inside one category (see module docstring).
RATIOS = np.array([0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 12.0, 16.0])
_SHARES = {
    # teaching H100: P25 0.25 (cum 8% below, 38% at), P50 1.0 (48% below, 70% at)
    "teaching-H100": [0.08, 0.30, 0.10, 0.22, 0.10, 0.08, 0.06, 0.00, 0.06],
    # teaching A100: P25 1.0 (15% below, 35% at), P50 2.0 (35% below, 65% at)
    "teaching-A100": [0.00, 0.05, 0.10, 0.20, 0.30, 0.20, 0.10, 0.00, 0.05],
    # research H100: P25 4.0 (18% below, 49% at), P50 8.0 (49% below, 60% at)
    "research-H100": [0.00, 0.02, 0.03, 0.05, 0.08, 0.31, 0.11, 0.15, 0.25],
    # uncalibrated groups: something plausible
    "research-A100": [0.00, 0.00, 0.05, 0.10, 0.20, 0.30, 0.25, 0.00, 0.10],
    "research-L40S": [0.00, 0.00, 0.00, 0.10, 0.20, 0.30, 0.30, 0.00, 0.10],
}

# (cluster, partition, GPU name as the site spells it, canonical, GPUs per node, CPUs per node)
_GPU_KINDS = (
    ("teaching", "gpu-h100", "h100", "H100", 8, 128),
    ("teaching", "gpu-a100", "a100_80gb", "A100", 4, 64),
    ("research", "h100", "nvidia_h100_80gb_hbm3", "H100", 8, 128),
    ("research", "a100", "a100-sxm4-80gb", "A100", 4, 64),
    ("research", "l40s", "l40s", "L40S", 4, 64),
)
_CLUSTERS = ("teaching", "research")
_CLUSTER_SHARE = 0.55  # teaching
# Per cluster: share of allocations that are GPU (by kind), CPU-only, pending-cancelled.
# cluster -> (GPU kind indices, their shares, CPU-only share, pending-cancelled share)
_MIX: dict[str, tuple[tuple[int, ...], tuple[float, ...], float, float]] = {
    "teaching": ((0, 1), (0.40, 0.30), 0.22, 0.08),
    "research": ((2, 3, 4), (0.45, 0.15, 0.10), 0.24, 0.06),
}
_STATES = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "RUNNING", "OUT_OF_MEMORY", "NODE_FAIL")
_STATE_P = (0.70, 0.10, 0.08, 0.05, 0.03, 0.02, 0.02)
_TIMELIMITS_S = np.array([3600, 4 * 3600, 86400, 2 * 86400])
_YEAR_START = 1704067200  # 2024-01-01T00:00:00Z
_YEAR_S = 366 * 86400


@dataclass(frozen=True)
class SynthConfig:
    """What to generate.

    ``records`` counts allocations (jobs, array tasks, het components: what sacct ``-X``
    prints); step lines come on top for ``step_share`` of the started allocations.
    """

    records: int = 20_000
    seed: int = 0
    step_share: float = 0.3
    odd_text_share: float = 0.0005  # '|', newline or non-UTF-8 bytes in free text
    array_share: float = 0.10
    het_share: float = 0.03
    # what jobs used (TotalCPU, CPUTimeRAW, TRESUsageInTot / Max with gres/gpuutil and gpumem):
    # extra fields after FIELDS, drawn from a generator of their own so that the other fields
    # stay byte for byte what they are without them
    usage: bool = False
    # how long the records span (submit times spread evenly over them, ending 2024-12-31) and how
    # many users submit them (8 of 11 on the teaching cluster): a large centre's decade is
    # years=10, users=4000
    years: int = 1
    users: int = 1100


@dataclass(frozen=True)
class SynthResult:
    """What :func:`generate` wrote."""

    path: str
    allocations: int
    lines: int
    bytes_written: int
    compression: str | None


def _stratified(rng: np.random.Generator, n: int, shares: list[float]) -> np.ndarray:
    """``n`` category indices in exact proportion to ``shares`` (largest remainder), shuffled."""
    p = np.asarray(shares, dtype=float)
    p = p / p.sum()
    raw = p * n
    counts = np.floor(raw).astype(np.int64)
    rest: int = n - int(counts.sum())
    if rest > 0:
        order = np.argsort(-(raw - counts), kind="stable")
        counts[order[:rest]] += 1
    out = np.repeat(np.arange(len(p)), counts)
    rng.shuffle(out)
    return out


# Allocations drawn and formatted at a time: memory stays bounded (a 46.5M-record draw held
# whole took more than the 24 GiB machine had).
CHUNK_RECORDS = 2_000_000


@dataclass(frozen=True)
class _Chunk:
    """One slice of the output: its records, its seed, its share of the time span, and where its
    line numbers carry on from the chunks before it."""

    records: int
    seed: int
    t0: int  # first submit time (epoch s)
    span_s: int
    i_from: int


def _draw(cfg: SynthConfig, chunk: _Chunk) -> dict[str, np.ndarray]:
    """Every per-allocation value of ``chunk``, as numpy arrays (deterministic from its seed)."""
    n = chunk.records
    rng = np.random.default_rng(chunk.seed)
    cluster = (rng.random(n) >= _CLUSTER_SHARE).astype(np.int8)  # 0 teaching, 1 research
    kind = np.full(n, -1, dtype=np.int8)  # GPU kind index, -1 CPU-only
    pending = np.zeros(n, dtype=bool)
    for ci, cname in enumerate(_CLUSTERS):
        idx = np.flatnonzero(cluster == ci)
        kinds, kind_shares, cpu_share, pending_share = _MIX[cname]
        assign = _stratified(rng, len(idx), [*kind_shares, cpu_share, pending_share])
        for j, k in enumerate(kinds):
            kind[idx[assign == j]] = k
        pending[idx[assign == len(kinds) + 1]] = True
    # Pending-cancelled jobs requested GPUs of a kind too (ReqTRES), but hold nothing.
    gpus = np.zeros(n, dtype=np.int64)
    cpus = rng.choice(np.array([1, 2, 4, 8, 16, 32]), size=n, p=[0.3, 0.2, 0.2, 0.15, 0.1, 0.05])
    ratio = np.zeros(n)
    for k, (cname, _part, _raw, canon, _gpn, _cpn) in enumerate(_GPU_KINDS):
        idx = np.flatnonzero((kind == k) & ~pending)
        cat = _stratified(rng, len(idx), _SHARES[f"{cname}-{canon}"])
        r = RATIOS[cat]
        # GPU count: any of 1,2,4,8 for which cpus = r * gpus is a whole number >= 1.
        g_choice = rng.choice(np.array([1, 2, 4, 8]), size=len(idx), p=[0.4, 0.25, 0.25, 0.1])
        g_min = np.where(r < 1, np.ceil(1 / r), 1).astype(np.int64)
        g = np.maximum(g_choice, g_min)
        ratio[idx] = r
        gpus[idx] = g
        cpus[idx] = np.rint(r * g).astype(np.int64)
    pend_gpu = pending & (kind >= 0)
    gpus_req = np.where(pend_gpu, rng.choice(np.array([1, 2, 4]), size=n), gpus)
    # Kinds of CPU-only and pending jobs: pick a partition per cluster.
    gpn = np.array([k[4] for k in _GPU_KINDS])
    cpn = np.array([k[5] for k in _GPU_KINDS])
    safe_kind = np.where(kind >= 0, kind, 0)
    nnodes = np.where(kind >= 0, np.maximum(1, np.ceil(gpus / gpn[safe_kind])), 1).astype(np.int64)
    nnodes = np.where(kind < 0, np.where(rng.random(n) < 0.05, 2, 1), nnodes)
    cpus = np.where(kind < 0, cpus * nnodes, cpus)
    exclusive = (kind >= 0) & ~pending & (gpus == gpn[safe_kind]) & (cpus == cpn[safe_kind])
    # --cpus-per-gpu jobs: ReqCPUS printed as 1 while the allocation holds more.
    cpg = (kind >= 0) & ~pending & (cpus > gpus) & (rng.random(n) < 0.10)
    req_cpus = np.where(cpg, 1, cpus)
    # Times.
    submit = chunk.t0 + np.sort(rng.integers(0, chunk.span_s, size=n))
    wait = rng.exponential(600.0, size=n).astype(np.int64)
    tl_idx = rng.integers(0, len(_TIMELIMITS_S), size=n)
    timelimit = _TIMELIMITS_S[tl_idx]
    elapsed = np.minimum(rng.lognormal(np.log(1800), 1.3, size=n).astype(np.int64) + 5, timelimit)
    state = rng.choice(len(_STATES), size=n, p=_STATE_P).astype(np.int8)
    elapsed = np.where(state == 3, timelimit, elapsed)  # TIMEOUT ran its limit
    state = np.where(pending, 2, state)  # pending jobs were cancelled
    exit_code = np.where(np.isin(state, [1, 5]), 1, 0)
    interactive = ~pending & (rng.random(n) < 0.15)
    steps = ~pending & (rng.random(n) < cfg.step_share)
    has_step0 = rng.random(n) < 0.5
    teachers = max(1, cfg.users * 8 // 11)
    researchers = max(1, cfg.users - teachers)
    user = np.where(
        cluster == 0,
        rng.integers(0, teachers, size=n),
        teachers + rng.integers(0, researchers, size=n),
    )
    canceller = np.where(rng.random(n) < 0.8, 10000 + user, 0)
    name_id = rng.integers(0, 12, size=n)
    odd = rng.random(n) < cfg.odd_text_share
    odd_kind = rng.integers(0, 3, size=n)
    # Arrays and het jobs: runs of consecutive allocations of one cluster share a base id.
    array_start = rng.random(n) < cfg.array_share / 6
    array_len = rng.integers(2, 11, size=n)
    het_start = (rng.random(n) < cfg.het_share / 2) & ~array_start
    mem_gb = np.maximum(4, cpus * 4)
    return {
        "cluster": cluster,
        "kind": kind,
        "pending": pending,
        "gpus": gpus,
        "gpus_req": gpus_req,
        "cpus": cpus,
        "req_cpus": req_cpus,
        "nnodes": nnodes,
        "exclusive": exclusive,
        "cpg": cpg,
        "submit": submit,
        "wait": wait,
        "elapsed": elapsed,
        "timelimit": timelimit,
        "state": state,
        "exit_code": exit_code,
        "interactive": interactive,
        "steps": steps,
        "has_step0": has_step0,
        "user": user,
        "canceller": canceller,
        "name_id": name_id,
        "odd": odd,
        "odd_kind": odd_kind,
        "array_start": array_start,
        "array_len": array_len,
        "het_start": het_start,
        "mem_gb": mem_gb,
        "ratio": ratio,
    }


def _ids(
    d: dict[str, np.ndarray], id_from: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Raw ids (sequential per cluster, from ``id_from``), and array/het base ids and positions
    (-1 if none)."""
    n = len(d["cluster"])
    raw = np.zeros(n, dtype=np.int64)
    base = np.full(n, -1, dtype=np.int64)
    pos = np.full(n, -1, dtype=np.int64)
    het = np.zeros(n, dtype=bool)
    for ci in range(len(_CLUSTERS)):
        idx = np.flatnonzero(d["cluster"] == ci)
        raw[idx] = 1_000_000 * (ci + 1) + int(id_from[ci]) + np.arange(len(idx))
        # Walk the starts in order (only the starts, a small fraction): mark runs.
        starts_a = d["array_start"][idx]
        starts_h = d["het_start"][idx]
        lens = d["array_len"][idx]
        free_from = 0
        for j in np.flatnonzero(starts_a | starts_h):
            if j < free_from:
                continue
            length = int(lens[j]) if starts_a[j] else 2
            run = idx[j : j + length]
            base[run] = raw[idx[j]]
            pos[run] = np.arange(len(run))
            if starts_h[j]:
                het[run] = True
            free_from = int(j) + length
    return raw, base, pos, het


@contextmanager
def _open_out(path: Path) -> Iterator[tuple[BinaryIO, str | None]]:
    """A binary writer for ``path``: gzip or zstd by suffix, else plain."""
    name = path.name.lower()
    with open(path, "wb") as raw:
        if name.endswith(".gz"):
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
                yield cast(BinaryIO, gz), "gzip"
        elif name.endswith((".zst", ".zstd")):
            import zstandard

            with zstandard.ZstdCompressor(level=6).stream_writer(raw, closefd=False) as zw:
                yield cast(BinaryIO, zw), "zstd"
        else:
            yield raw, None


def fields_of(cfg: SynthConfig) -> tuple[str, ...]:
    """The header of ``cfg``'s output: FIELDS, with USAGE_FIELDS after NodeList when asked for
    (the free-text fields stay last, as ``advisor ingest --sacct`` asks sacct for them)."""
    if not cfg.usage:
        return FIELDS
    at = FIELDS.index("NodeList") + 1
    return FIELDS[:at] + USAGE_FIELDS + FIELDS[at:]


def _usage_draws(chunk: _Chunk, d: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """CPU efficiency, mean GPU utilisation (%), GPU and host memory used (MB) per allocation.

    A job's CPU demand per GPU is drawn around 3 cores; with fewer cores than that its cores
    saturate and its GPUs wait (utilisation falls with the shortfall), with more they idle.
    """
    rng = np.random.default_rng(chunk.seed + 7919)
    n = chunk.records
    gpus = np.maximum(d["gpus"], 1)
    cpg = d["cpus"] / gpus
    demand = rng.lognormal(np.log(3.0), 0.6, size=n)
    eff = np.clip(
        np.minimum(1.0, demand / np.maximum(cpg, 0.125)) * rng.uniform(0.85, 1.0, n), 0, 1
    )
    eff = np.where(d["kind"] >= 0, eff, rng.uniform(0.05, 1.0, n))
    util = np.clip(95.0 * np.minimum(1.0, cpg / demand) - rng.uniform(0, 20, n), 0, 100)
    return {
        "cpu_s": d["elapsed"] * d["cpus"] * eff,
        "util": util,
        "gmem": rng.integers(1024, 80 * 1024, size=n),
        "mem_used": np.maximum(
            1, (d["mem_gb"] * 1024 * rng.uniform(0.05, 0.9, n)).astype(np.int64)
        ),
    }


def _chunks(cfg: SynthConfig, ends: Sequence[int]) -> Iterator[_Chunk]:
    """The slices ``cfg`` is drawn in: the records of each output (up to each of ``ends``), each
    in even slices of at most CHUNK_RECORDS, with the time span shared in proportion. The first
    chunk keeps ``cfg.seed`` (a small output is what it always was); the others get seeds of
    their own."""
    import datetime as dt

    end = _YEAR_START + _YEAR_S
    start = int(dt.datetime(2025 - cfg.years, 1, 1, tzinfo=dt.UTC).timestamp())
    span = end - start
    c = 0
    for first, end in zip([0, *ends[:-1]], ends, strict=True):
        parts = -(-(end - first) // CHUNK_RECORDS)
        for k in range(parts):
            lo = first + (end - first) * k // parts
            hi = first + (end - first) * (k + 1) // parts
            seed = (
                cfg.seed
                if c == 0
                else int(np.random.SeedSequence([cfg.seed, c]).generate_state(1)[0])
            )
            t0, t1 = span * lo // cfg.records, span * hi // cfg.records
            yield _Chunk(hi - lo, seed, start + t0, t1 - t0, lo)
            c += 1


def generate(
    cfg: SynthConfig,
    out_path: str | Path,
    progress: ProgressFn = no_progress,
) -> SynthResult:
    """Write ``cfg.records`` synthetic allocations (plus steps) as ``sacct -P`` text.

    The output is gzip- or zstd-compressed when ``out_path`` ends in ``.gz`` / ``.zst``.
    The same config always gives the same bytes.
    """
    return _write(cfg, [(Path(out_path), cfg.records)], progress)[0]


def generate_with_tail(
    cfg: SynthConfig,
    out_path: str | Path,
    tail_path: str | Path,
    tail_share: float,
    progress: ProgressFn = no_progress,
) -> tuple[SynthResult, SynthResult]:
    """:func:`generate`'s records in two files: the last ``tail_share`` of the allocations (the
    latest submit times, with their steps) in ``tail_path``, the rest in ``out_path``; what a
    later export of the same cluster adds, for measuring a load on top of a database."""
    head, tail = generate_parts(cfg, [out_path, tail_path], tail_share, progress)
    return head, tail


def generate_parts(
    cfg: SynthConfig,
    paths: Sequence[str | Path],
    tail_share: float,
    progress: ProgressFn = no_progress,
) -> list[SynthResult]:
    """:func:`generate`'s records in ``paths``, in time order: the last file takes the latest
    ``tail_share`` of the allocations, the others share the rest evenly (a decade's history as
    the yearly exports an admin loads, then the month that came since)."""
    if not 0.0 < tail_share < 1.0:
        raise UsageError("the tail's share must be between 0 and 1")
    cut = cfg.records - max(1, round(cfg.records * tail_share))
    heads = len(paths) - 1
    if heads < 1 or cut < heads:
        raise UsageError("--records too few to keep a tail apart")
    ends = [cut * (k + 1) // heads for k in range(heads)] + [cfg.records]
    return _write(cfg, [(Path(p), end) for p, end in zip(paths, ends, strict=True)], progress)


def _write(
    cfg: SynthConfig, outputs: list[tuple[Path, int]], progress: ProgressFn
) -> list[SynthResult]:
    """Write the records into ``outputs``: each file takes the allocations up to its end index."""
    if cfg.records < 1:
        raise UsageError("--records must be at least 1")
    if not 0.0 <= cfg.step_share <= 1.0:
        raise UsageError("--step-share must be between 0 and 1")
    if not 1 <= cfg.years <= 50:
        raise UsageError("--years must be between 1 and 50")
    if cfg.users < 2:
        raise UsageError("--users must be at least 2 (one a cluster)")
    import duckdb
    import pyarrow as pa

    from advisor.store import query, render

    kinds = pa.table(
        {
            "k": np.arange(len(_GPU_KINDS), dtype=np.int8),
            "partition": [k[1] for k in _GPU_KINDS],
            "gres": [k[2] for k in _GPU_KINDS],
            "prefix": ["th100", "ta100", "rh100", "ra100", "rl40s"],
        }
    )
    steps = pa.table({"step_no": [1, 2, 3, 4], "suffix": ["batch", "interactive", "extern", "0"]})
    sql = render(
        "synth/lines",
        usage=query("synth/usage_columns") if cfg.usage else "",
        step_usage=query("synth/step_usage_columns") if cfg.usage else "",
    )
    header = ("|".join(fields_of(cfg)) + "\n").encode()
    chunks = _chunks(cfg, [end for _, end in outputs])
    id_from = np.zeros(len(_CLUSTERS), dtype=np.int64)  # the ids the next chunk starts at
    results: list[SynthResult] = []
    lines_before = 0
    start = 0
    con = duckdb.connect()
    try:
        con.register("kinds", kinds)
        con.register("steps", steps)
        for out, end in outputs:
            lines = 0
            written = len(header)
            with _open_out(out) as (fh, compression):
                fh.write(header)
                while start < end:
                    chunk = next(chunks)
                    d = _draw(cfg, chunk)
                    raw, base, pos, het = _ids(d, id_from)
                    id_from += np.bincount(d["cluster"], minlength=len(_CLUSTERS))
                    cols = {k: v for k, v in d.items() if k != "ratio"}
                    if cfg.usage:
                        cols.update(_usage_draws(chunk, d))
                    i = chunk.i_from + np.arange(chunk.records)
                    alloc = pa.table(
                        {"i": i, "raw": raw, "base": base, "pos": pos, "het": het, **cols}
                    )
                    del d, cols
                    con.register("alloc", alloc)
                    for batch in con.execute(sql).to_arrow_reader(200_000):
                        data = _batch_bytes(batch.column(0))
                        if b"\x1a" in data:
                            data = data.replace(b"\x1a", b"\xe9")  # latin-1 e-acute: not UTF-8
                        fh.write(data)
                        written += len(data)
                        lines += batch.num_rows
                        progress("synth", lines_before + lines, None)
                    con.unregister("alloc")
                    start += chunk.records
            first = sum(r.allocations for r in results)
            results.append(SynthResult(str(out), end - first, lines, written, compression))
            lines_before += lines
    finally:
        con.close()
    return results


def _batch_bytes(arr: object) -> bytes:
    """The concatenated UTF-8 bytes of an Arrow string array (each value ends in a newline)."""
    import pyarrow as pa

    assert isinstance(arr, pa.Array)
    is_str = pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)
    if is_str and arr.null_count == 0:
        bufs = arr.buffers()
        small = pa.types.is_string(arr.type)
        offsets = np.frombuffer(bufs[1], dtype=np.int32 if small else np.int64)
        lo = int(offsets[arr.offset])
        hi = int(offsets[arr.offset + len(arr)])
        return bytes(memoryview(bufs[2])[lo:hi])
    buf = io.StringIO()
    for v in arr.to_pylist():
        buf.write(v or "")
    return buf.getvalue().encode()


def expected_percentiles() -> dict[tuple[str, str], dict[str, float]]:
    """The calibration targets (cluster, canonical type) -> {'p25', 'p50'} cores per GPU."""
    return {
        ("teaching", "H100"): {"p25": 0.25, "p50": 1.0},
        ("teaching", "A100"): {"p25": 1.0, "p50": 2.0},
        ("research", "H100"): {"p25": 4.0, "p50": 8.0},
    }


OUTPUT_FORMATS = ("sacct-text", "sacct-json", "jobcomp")


def _epoch(ts: str) -> int:
    import datetime as dt

    if ts in ("Unknown", "None", ""):
        return 0
    return int(dt.datetime.fromisoformat(ts).replace(tzinfo=dt.UTC).timestamp())


def _records_from_text(data: bytes) -> list[tuple[dict[str, str], list[str]]]:
    """(allocation fields, step suffixes) of synth text; lines broken by odd free text skipped."""
    lines = data.decode("utf-8", errors="replace").split("\n")
    out: list[tuple[dict[str, str], list[str]]] = []
    for line in lines[1:]:
        parts = line.split("|")
        if len(parts) != len(FIELDS):
            continue
        rec = dict(zip(FIELDS, parts, strict=True))
        if "." in rec["JobID"]:
            if out and rec["JobIDRaw"].split(".")[0] == out[-1][0]["JobIDRaw"]:
                out[-1][1].append(rec["JobID"].split(".", 1)[1])
            continue
        out.append((rec, []))
    return out


def _tres_json(tres: str) -> list[dict[str, object]]:
    items: list[dict[str, object]] = []
    ids = {"cpu": 1, "mem": 2, "node": 4, "billing": 5}
    for part in filter(None, tres.split(",")):
        key, _, val = part.partition("=")
        if key == "mem":
            count = int(val[:-1]) * (1024 if val.endswith("G") else 1)
            items.append({"type": "mem", "name": "", "id": 2, "count": count})
        elif key.startswith("gres/"):
            items.append({"type": "gres", "name": key[5:], "id": 1001, "count": int(val)})
        else:
            items.append({"type": key, "name": "", "id": ids.get(key, 0), "count": int(val)})
    return items


def _num(n: int | None) -> dict[str, object]:
    return {"set": n is not None, "infinite": False, "number": n or 0}


def generate_as(
    cfg: SynthConfig, out_path: str | Path, output: str, progress: ProgressFn = no_progress
) -> SynthResult:
    """Like :func:`generate`, in ``output``: sacct-text, sacct-json (Slurm 23.11, data_parser
    v0.0.40 shape) or jobcomp (jobcomp/filetxt lines of the jobs that ended). The JSON and
    jobcomp forms are built in Python per record: meant for samples, not millions."""
    import json
    import tempfile

    if output == "sacct-text":
        return generate(cfg, out_path, progress)
    if output not in OUTPUT_FORMATS:
        raise UsageError(f"--as {output!r}: use one of {', '.join(OUTPUT_FORMATS)}")
    if cfg.records > 200_000:
        raise UsageError(f"--as {output} is for samples: at most 200000 records")
    with tempfile.TemporaryDirectory() as tmp:
        text_path = Path(tmp) / "synth.txt"
        generate(cfg, text_path, progress)
        records = _records_from_text(text_path.read_bytes())
    if output == "sacct-json":
        jobs = []
        for rec, steps in records:
            raw = int(rec["JobIDRaw"])
            jid = rec["JobID"]
            arr_job, arr_task = (jid.split("_") + [""])[:2] if "_" in jid else ("0", "")
            het_job, het_off = (jid.split("+") + [""])[:2] if "+" in jid else ("0", "")
            state = rec["State"].split(" ")[0]
            jobs.append(
                {
                    "account": rec["Account"],
                    "cluster": rec["Cluster"],
                    "group": rec["Group"],
                    "user": rec["User"],
                    "name": rec["JobName"],
                    "job_id": raw,
                    "partition": rec["Partition"],
                    "qos": rec["QOS"],
                    "nodes": rec["NodeList"],
                    "allocation_nodes": int(rec["NNodes"]),
                    "submit_line": rec["SubmitLine"],
                    "working_directory": rec["WorkDir"],
                    "array": {
                        "job_id": int(arr_job),
                        "task_id": _num(int(arr_task) if arr_task else None),
                    },
                    "het": {
                        "job_id": int(het_job),
                        "job_offset": _num(int(het_off) if het_off else None),
                    },
                    "state": {"current": [state], "reason": "None"},
                    "exit_code": {
                        "status": ["SUCCESS" if rec["ExitCode"] == "0:0" else "ERROR"],
                        "return_code": _num(int(rec["ExitCode"].split(":")[0])),
                    },
                    "required": {"CPUs": int(rec["ReqCPUS"])},
                    "time": {
                        "submission": _epoch(rec["Submit"]),
                        "eligible": _epoch(rec["Eligible"]),
                        "start": _epoch(rec["Start"]),
                        "end": _epoch(rec["End"]),
                        "elapsed": max(0, _epoch(rec["End"]) - _epoch(rec["Start"]))
                        if _epoch(rec["Start"]) and _epoch(rec["End"])
                        else 0,
                        "limit": _num(None),
                    },
                    "tres": {
                        "allocated": _tres_json(rec["AllocTRES"]),
                        "requested": _tres_json(rec["ReqTRES"]),
                    },
                    "steps": [{"step": {"id": f"{raw}.{s}", "name": s}} for s in steps],
                }
            )
        doc = {
            "meta": {
                "plugin": {"type": "", "name": "", "data_parser": "data_parser/v0.0.40"},
                "slurm": {
                    "version": {"major": "23", "micro": "4", "minor": "11"},
                    "release": "23.11.4",
                    "cluster": "teaching",
                },
            },
            "errors": [],
            "warnings": [],
            "jobs": jobs,
        }
        body = json.dumps(doc, ensure_ascii=False).encode()
    else:
        lines = []
        for rec, _steps in records:
            if rec["End"] in ("Unknown", ""):
                continue  # jobcomp logs a job when it ends
            jid = rec["JobID"]
            extra = ""
            if "_" in jid:
                extra = f" ArrayJobId={jid.split('_')[0]} ArrayTaskId={jid.split('_')[1]}"
            elif "+" in jid:
                extra = f" HetJobId={jid.split('+')[0]} HetJobOffset={jid.split('+')[1]}"
            tl = rec["Timelimit"]
            days, _, hms = tl.rpartition("-")
            h, m, _s = hms.split(":")
            minutes = (int(days or 0) * 24 + int(h)) * 60 + int(m)
            lines.append(
                f"JobId={rec['JobIDRaw']} UserId={rec['User']}({rec['UID']}) "
                f"GroupId={rec['Group']}(2000) Name={rec['JobName']} "
                f"JobState={rec['State'].split(' ')[0]} Partition={rec['Partition']} "
                f"TimeLimit={minutes} StartTime={rec['Start']} EndTime={rec['End']} "
                f"NodeList={rec['NodeList']} NodeCnt={rec['NNodes']} ProcCnt={rec['NCPUS']} "
                f"WorkDir={rec['WorkDir']} ReservationName= Tres={rec['ReqTRES']} "
                f"Account={rec['Account']} QOS={rec['QOS']} WcKey= Cluster={rec['Cluster']} "
                f"SubmitTime={rec['Submit']} EligibleTime={rec['Eligible']}{extra} "
                f"DerivedExitCode=0:0 ExitCode={rec['ExitCode']}"
            )
        body = ("\n".join(lines) + "\n").encode()
    out = Path(out_path)
    out.write_bytes(body)
    return SynthResult(str(out), len(records), body.count(b"\n"), len(body), None)
