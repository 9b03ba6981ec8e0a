"""Synthetic CPU pressure records for the GPU jobs already in a database, consistent with them
(their ids, clusters, nodes and run times), so the sample shows the feature: a share of the
jobs gets one record per node at its end, with a stall share that falls with cores per GPU as
the bench measured it (each busy-waiting GPU worker holds a core; the wait falls by a constant
factor per spare core, docs/model.md), and lognormal noise between jobs.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from pathlib import Path

import numpy as np

from advisor.pressure.collector import append_records, record
from advisor.store import connect

# some-share at one core per GPU, and its factor per extra core per GPU (docs/pressure.md)
SOME_AT_ONE = 0.45
FACTOR_PER_CORE = 0.3


def typical_some_share(cores_per_gpu: float) -> float:
    """The stall share the synthetic jobs scatter around at ``cores_per_gpu``."""
    return min(0.9, SOME_AT_ONE * FACTOR_PER_CORE ** max(cores_per_gpu - 1.0, 0.0))


def synth_pressure(
    db: str | os.PathLike[str] | None, out: Path, *, share: float = 0.3, seed: int = 7
) -> int:
    """Append records for about ``share`` of the database's GPU jobs to ``out``; returns how
    many records."""
    con = connect(db, read_only=True)
    try:
        rows = con.execute(
            "SELECT cluster, job_id_raw, start, elapsed_s, cpus::DOUBLE / gpus, "
            "greatest(coalesce(nnodes, 1), 1) FROM jobs "
            "WHERE gpus > 0 AND cpus > 0 AND start IS NOT NULL AND elapsed_s > 0 "
            "ORDER BY cluster, job_id_raw, submit"
        ).fetchall()
    finally:
        con.close()
    rng = np.random.default_rng(seed)
    records = []
    for cluster, job, start, elapsed, cpg, nodes in rows:
        if rng.random() >= share:
            continue
        end = start + dt.timedelta(seconds=int(elapsed))
        for n in range(int(nodes)):
            some = min(0.95, typical_some_share(cpg) * math.exp(rng.normal(0.0, 0.4)))
            full = some * float(rng.uniform(0.1, 0.3))
            records.append(
                record(
                    host=f"{cluster}-node{n:02d}",
                    cluster=cluster,
                    job_id=str(job),
                    collected_at=end.strftime("%Y-%m-%dT%H:%M:%S.000000Z"),
                    some_s=round(some * elapsed, 3),
                    full_s=round(full * elapsed, 3),
                    source="synth",
                )
            )
    append_records(out, records)
    return len(records)
