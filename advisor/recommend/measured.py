"""Where the cluster measured, the measurement decides (issue 49; docs/pressure.md, "Measured
curves").

A group's measured curve (:mod:`advisor.pressure.curve`: its jobs' GPU-hour weighted stall
share per whole cores per GPU, with intervals) answers ``DefCpuPerGPU`` itself where it can:
the fewest cores per GPU whose cell is enough to decide from and *under* the threshold beyond
doubt, with no enough cell above it *over* it. Where no cell is, the model decides. Where both
answer, :func:`agreement` says whether they agree: the measured knee lies above the highest
enough cell that is over the threshold (``bracket_low``) and at most the measured answer, and
the model's answer agrees when it falls in that bracket (:func:`decide_default` says which
decides). Per cell, the model's predicted stall
(:func:`advisor.model.psilink.predicted_stall`) against the measured interval is the standing
validation of the one mechanism on the cluster's own jobs, TP >= 2 included.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.model.psilink import predicted_stall
from advisor.model.waitknee import check_max_wait

if TYPE_CHECKING:  # the job-submit path imports this module and never DuckDB
    import numpy as np

    from advisor.pressure.curve import CurveCell
    from advisor.recommend.starvation import Starvation

MEASURED = "measured"
MODEL = "model"


@dataclass(frozen=True)
class MeasuredAnswer:
    """What a group's measured curve says about its DefCpuPerGPU."""

    cores_per_gpu: int | None  # None: the measurement cannot decide (``reason`` says why)
    bracket_low: int | None  # the highest enough cell below the answer that is over, if any
    jobs: int  # measured jobs of the group
    cells_enough: int
    reason: str


def measured_answer(cells: Sequence[CurveCell], threshold: float) -> MeasuredAnswer:
    """The measured DefCpuPerGPU of one group's cells (see the module docstring)."""
    jobs = sum(c.jobs for c in cells)
    enough = sorted((c for c in cells if c.enough), key=lambda c: c.cores_per_gpu)
    if not enough:
        return MeasuredAnswer(
            None, None, jobs, 0,
            f"no cores-per-GPU cell has enough measured jobs ({jobs} measured in all)",
        )  # fmt: skip
    for i, c in enumerate(enough):
        if c.verdict != "under" or c.cores_per_gpu < 1:
            continue
        if any(d.verdict == "over" for d in enough[i + 1 :]):
            continue
        below = [d.cores_per_gpu for d in enough[:i] if d.verdict == "over"]
        low = max(below) if below else None
        return MeasuredAnswer(
            c.cores_per_gpu, low, jobs, len(enough),
            f"the fewest cores per GPU whose {c.jobs} measured jobs stalled under {threshold:.3f} "
            f"beyond doubt (90% interval {c.some_low:.3f}-{c.some_high:.3f}), none above over it",
        )  # fmt: skip
    over = [c.cores_per_gpu for c in enough if c.verdict == "over"]
    why = (
        f"measured jobs stalled over {threshold:.3f} up to {max(over)} cores per GPU and no "
        "enough cell above is under it beyond doubt"
        if over
        else f"no enough cell is under {threshold:.3f} beyond doubt"
    )
    return MeasuredAnswer(None, max(over) if over else None, jobs, len(enough), why)


def decide_default(model_answer: int, measured: MeasuredAnswer | None) -> tuple[int, str]:
    """The group's DefCpuPerGPU and its basis. The measured answer decides where the curve
    brackets its knee (an enough cell below it is over the threshold) or asks no more than the
    model; a measured answer above the model's with nothing measured below it says only that
    its cores suffice, not that fewer starve, so the model's stands."""
    if measured is None or measured.cores_per_gpu is None:
        return model_answer, MODEL
    if measured.bracket_low is not None or measured.cores_per_gpu <= model_answer:
        return measured.cores_per_gpu, MEASURED
    return model_answer, MODEL


def agreement(model_answer: int, measured: MeasuredAnswer) -> str | None:
    """How the model's answer sits against the measured bracket: ``agree`` (inside it),
    ``model asks more`` (above the measured answer), ``model asks fewer`` (at or below a
    count measured over the threshold), ``not contradicted`` (below the measured answer where
    nothing below it was measured enough), or None where the measurement says nothing."""
    hi, low = measured.cores_per_gpu, measured.bracket_low
    if low is not None and model_answer <= low:
        return "model asks fewer"
    if hi is None:
        return None
    if model_answer > hi:
        return "model asks more"
    if low is None and model_answer < hi:
        return "not contradicted"
    return "agree"


def compare(
    params: Any,
    cells: Sequence[CurveCell],
    *,
    gpus: int | None,
    load_rps: float,
    prompt_tokens: float,
) -> list[dict[str, Any]]:
    """Per measured cell of one group: the measured stall with its interval and the model's
    predicted stall with its own (none without the group's GPUs), and whether the model's
    point lies in the measured interval (``within``), above it or below it."""
    cpg = [c.cores_per_gpu if c.cores_per_gpu >= 1 else 0.5 for c in cells]
    pred = (
        predicted_stall(
            params, gpus=gpus, cores_per_gpu=cpg, load_rps=load_rps, prompt_tokens=prompt_tokens
        )
        if gpus
        else None
    )
    out = []
    for i, c in enumerate(cells):
        p = pred[i] if pred else None
        side = None
        if p is not None and c.enough:
            side = "above" if p.psi > c.some_high else "below" if p.psi < c.some_low else "within"
        out.append(
            {
                "cores_per_gpu": c.cores_per_gpu,
                "jobs": c.jobs,
                "enough": c.enough,
                "measured": c.some_share,
                "measured_low": c.some_low,
                "measured_high": c.some_high,
                "predicted": p.psi if p else None,
                "predicted_low": p.low if p else None,
                "predicted_high": p.high if p else None,
                "model_vs_measured": side,
            }
        )
    return out


def curve_report(
    con: Any,
    *,
    max_wait: float,
    query: Any = None,
    load_rps: float | None = None,
    prompt_tokens: float | None = None,
    model_file: str | None = None,
) -> dict[str, Any]:
    """``advisor pressure curve`` (``con``: a DuckDB connection): the measured curve of every
    group against the stall that
    ``max_wait`` means through the measured link, each cell beside the model's prediction for
    the group's GPUs (where the grouping has them) at the given load (the model's reference
    by default), and each group's measured answer."""
    from dataclasses import replace

    from advisor.model.psilink import STARVED_PSI_DEFAULT, links_from_json, starved_psi_for
    from advisor.model.slowdown import REF_LOAD_RPS, REF_PROMPT_TOKENS, load_params
    from advisor.pressure.curve import CurveQuery, curve_of

    check_max_wait(max_wait)
    params = load_params(model_file)
    implied = starved_psi_for(max_wait, links_from_json(params.meta.get("psi_link")))
    threshold = implied[0] if implied else STARVED_PSI_DEFAULT
    q = replace(query or CurveQuery(), threshold=threshold)
    curve = curve_of(con, q)
    rps = load_rps or REF_LOAD_RPS
    tokens = prompt_tokens or REF_PROMPT_TOKENS
    groups = []
    for key, cells in curve.groups.items():
        keys = dict(zip(q.by, key, strict=True))
        gpus = keys.get("gpu_count")
        answer = measured_answer(cells, threshold)
        rows = compare(
            params, cells, gpus=int(gpus) if gpus else None, load_rps=rps, prompt_tokens=tokens
        )
        for row, c in zip(rows, cells, strict=True):
            row.update(
                effective_jobs=c.effective_jobs, gpu_hours=c.gpu_hours, verdict=c.verdict,
                full=c.full_share, full_low=c.full_low, full_high=c.full_high,
            )  # fmt: skip
        groups.append(
            {
                **keys,
                "jobs_measured": answer.jobs,
                "measured_cpus_per_gpu": answer.cores_per_gpu,
                "bracket_low": answer.bracket_low,
                "reason": answer.reason,
                "cells": rows,
            }
        )
    return {
        "max_wait": max_wait,
        "threshold": threshold,
        "threshold_basis": "--max-wait through the measured link (advisor pressure link)"
        if implied
        else "no link in the model file: --starved-psi's default",
        "load_rps": rps,
        "prompt_tokens": tokens,
        "by": list(q.by),
        "groups": groups,
    }


@dataclass(frozen=True)
class LossSplit:
    """The loss of a group's job rows, each row's measured jobs from their own stall and the
    rest from the model: per row the GPU-hours measured, the GPU time their CPU waiting held
    (``held_full`` to ``held_some``, only on rows below the recommendation), and the model's
    loss for the unmeasured rest (``model``) and for the measured jobs (``model_measured``, to
    compare)."""

    gpu_hours_measured: np.ndarray
    held_full: np.ndarray
    held_some: np.ndarray
    model: Starvation
    model_measured: Starvation

    def totals(self, part: slice | np.ndarray | None = None) -> SplitTotals:
        """The loss of the rows ``part`` (None: all): the model's for the unmeasured jobs plus
        what the measured ones held (``some``; its interval from the model's refits and
        ``full``), and whether the model and the measurement disagree for the measured jobs."""
        import numpy as np

        rows = slice(None) if part is None else part
        held = (float(np.sum(self.held_full[rows])), float(np.sum(self.held_some[rows])))
        model_lost = float(np.sum(self.model.lost_rows[rows]))
        lo, hi = self.model.gpu_hours_lost_interval(part)
        measured = float(np.sum(self.gpu_hours_measured[rows]))
        return SplitTotals(
            lost=model_lost + held[1],
            interval=(lo + held[0], hi + held[1]),
            held=held,
            model_lost=model_lost,
            gpu_hours_measured=measured,
            disagreement=disagreement(
                self.model_measured.gpu_hours_lost_interval(part), held, measured
            ),
        )


@dataclass(frozen=True)
class SplitTotals:
    """A group's loss split by measurement (:meth:`LossSplit.totals`)."""

    lost: float  # GPU-hours: the model's for the unmeasured jobs + the measured jobs' some
    interval: tuple[float, float]
    held: tuple[float, float]  # the measured jobs' loss, full to some
    model_lost: float  # the model's loss of the unmeasured jobs
    gpu_hours_measured: float
    disagreement: str | None  # model and measurement apart beyond their intervals


def loss_split(
    measured_mix: dict[tuple[Any, ...], tuple[float, float, float]],
    keys: Sequence[tuple[Any, ...]],
    gpu_hours: Sequence[float],
    starved: Starvation,
) -> LossSplit:
    """:class:`LossSplit` of the job rows ``keys`` ((partition, GPU family, CPUs, GPUs), with
    their GPU-hours) from ``measured_mix`` (``recommend/measured_mix.sql``: per row key the
    measured GPU-hours and their stall-weighted sums) and the model's ``starved``."""
    import numpy as np

    got = np.array([measured_mix.get(tuple(k), (0.0, 0.0, 0.0)) for k in keys], dtype=float)
    got = got.reshape(len(keys), 3)
    gh = np.asarray(gpu_hours, dtype=float)
    share = np.clip(np.divide(got[:, 0], gh, out=np.zeros_like(gh), where=gh > 0), 0.0, 1.0)
    below = starved.below.astype(float)
    return LossSplit(
        got[:, 0],
        got[:, 2] * below,
        got[:, 1] * below,
        starved.weighted(1.0 - share),
        starved.weighted(share),
    )


def disagreement(
    model: tuple[float, float], measured: tuple[float, float], gpu_hours_measured: float
) -> str | None:
    """Where the model's loss for the measured jobs (its interval) and what they measured
    (``full`` to ``some``) do not overlap, in words; None where they do or nothing was
    measured."""
    if gpu_hours_measured <= 0:
        return None
    (m_lo, m_hi), (full, some) = model, measured
    if m_lo <= some and m_hi >= full:
        return None
    side = "above" if m_lo > some else "below"
    return (
        f"the model puts {_gpu_hours_range(m_lo, m_hi)} of loss on the measured jobs, {side} "
        f"the {_gpu_hours_range(full, some)} their own CPU pressure held"
    )


def _gpu_hours_range(low: float, high: float) -> str:
    """A range of GPU-hours in words: one number where both ends round to it."""
    lo, hi = f"{low:,.0f}", f"{high:,.0f}"
    return f"{lo} GPU-h" if lo == hi else f"{lo}-{hi} GPU-h"
