"""Synthetic CPU pressure records for the GPU jobs already in a database, consistent with them
(their ids, clusters, nodes and run times), so the sample shows what the pipeline does with a
real cluster's: a share of the jobs gets one record per node at its end, with a stall share
drawn from the measured mechanism. Each job serves a load drawn around the model's reference
(8 requests/s of 16k-token prompts, lognormal, sigma :data:`LOAD_SIGMA`); the CPU demand
model, the wait model and the PSI link of the shipped fit (``advisor.model.psilink``) give
its ``some`` share at its cores and GPUs (executor ``mp`` beyond one GPU), and lognormal
noise between jobs (:data:`NOISE_SIGMA`) spreads it. The bench has measured no ``full`` link
yet: ``full`` is a uniform 10-30% of ``some``, as the H200 job cgroup showed it.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from pathlib import Path

import numpy as np

from advisor.model.psilink import predicted_stall
from advisor.model.slowdown import REF_LOAD_RPS, REF_PROMPT_TOKENS, load_params
from advisor.pressure.collector import append_records, record
from advisor.store import connect

LOAD_SIGMA = 0.8
NOISE_SIGMA = 0.3
# loads are drawn from a few levels (multiples of the reference), so the mechanism is
# evaluated once per level, GPU count and cores, not once per job
LOAD_LEVELS = tuple(math.exp(x) for x in np.linspace(-2 * LOAD_SIGMA, 2 * LOAD_SIGMA, 9))


def synth_pressure(
    db: str | os.PathLike[str] | None, out: Path, *, share: float = 0.3, seed: int = 7
) -> int:
    """Append records for about ``share`` of the database's GPU jobs to ``out``; returns how
    many records."""
    con = connect(db, read_only=True)
    try:
        rows = con.execute(
            "SELECT cluster, job_id_raw, start, elapsed_s, cpus, gpus, "
            "greatest(coalesce(nnodes, 1), 1) FROM jobs "
            "WHERE gpus > 0 AND cpus > 0 AND start IS NOT NULL AND elapsed_s > 0 "
            "ORDER BY cluster, job_id_raw, submit"
        ).fetchall()
    finally:
        con.close()
    params = load_params()
    # probabilities of the load levels: the lognormal's weights at the levels
    z = np.linspace(-2.0, 2.0, len(LOAD_LEVELS))
    p_level = np.exp(-0.5 * z**2) / np.exp(-0.5 * z**2).sum()
    cache: dict[tuple[int, float, int], float] = {}

    def some_at(gpus: int, cores_per_gpu: float, level: int) -> float:
        key = (gpus, cores_per_gpu, level)
        if key not in cache:
            pred = predicted_stall(
                params, gpus=gpus, cores_per_gpu=[cores_per_gpu],
                load_rps=REF_LOAD_RPS * LOAD_LEVELS[level], prompt_tokens=REF_PROMPT_TOKENS,
            )  # fmt: skip
            cache[key] = pred[0].psi if pred else 0.0
        return cache[key]

    rng = np.random.default_rng(seed)
    records = []
    for cluster, job, start, elapsed, cpus, gpus, nodes in rows:
        if rng.random() >= share:
            continue
        level = int(rng.choice(len(LOAD_LEVELS), p=p_level))
        typical = some_at(int(gpus), float(cpus) / int(gpus), level)
        end = start + dt.timedelta(seconds=int(elapsed))
        for n in range(int(nodes)):
            some = min(0.95, typical * math.exp(rng.normal(0.0, NOISE_SIGMA)))
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
