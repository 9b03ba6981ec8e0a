"""The measured knee's paired bootstrap on synthetic curves whose answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.model.knee import NO_EFFECT, NOT_RESOLVED, RESOLVED, measure_knee, replicates

CORES = (2, 3, 4, 6, 8)


def _curve(
    slowdowns: dict[int, float], *, starts=2, repeats=2, n=60, noise=0.05, seed=1, block_sd=0.0
):
    """Lognormal TTFT samples around 20 ms x slowdown; ``block_sd`` is a shared per-block factor
    (the same for every core count of a block: a phase's traffic)."""
    rng = np.random.default_rng(seed)
    out = {}
    for s in range(starts):
        for r in range(repeats):
            shared = np.exp(rng.normal(0.0, block_sd))
            for c, slow in slowdowns.items():
                out[(s, r, c)] = 20.0 * slow * shared * np.exp(rng.normal(0.0, noise, n))
    return out


def test_a_clear_knee_is_resolved_at_the_fewest_cores_within_tolerance():
    res = measure_knee(_curve({2: 3.0, 3: 1.6, 4: 1.0, 6: 1.0, 8: 1.0}), seed=3)
    assert res.status == RESOLVED
    assert res.knee_cores == 4
    assert res.reference_cores == 8
    p2 = res.point(2)
    assert p2 is not None and p2.slowdown_low > 2.5 and p2.slowdown_high < 3.5
    assert res.point(8).slowdown == 1.0  # type: ignore[union-attr]
    assert all(p.slowdown_high <= 1.1 for p in res.points if p.cores >= 4)


def test_a_flat_curve_has_no_effect_and_its_knee_is_the_fewest_cores():
    res = measure_knee(_curve({c: 1.0 for c in CORES}, noise=0.03), seed=2)
    assert res.status == NO_EFFECT
    assert res.knee_cores == 2
    assert res.within_tolerance_from_cores == 2


def test_pure_noise_between_blocks_is_not_resolved_never_a_knee():
    # No core effect at all, but the blocks differ by a factor of about 2 and each block's
    # requests are noisy: the 2026-12-02 repeats that differ up to 3x.
    res = measure_knee(_curve({c: 1.0 for c in CORES}, noise=0.8, n=15, block_sd=0.0), seed=5)
    assert res.status == NOT_RESOLVED
    assert res.knee_cores is None
    assert "straddle" in res.reason


def test_one_block_is_too_few_whatever_the_curve():
    res = measure_knee(_curve({2: 3.0, 4: 1.0, 8: 1.0}, starts=1, repeats=1), seed=0)
    assert res.status == NOT_RESOLVED and res.knee_cores is None
    assert "block" in res.reason
    assert res.blocks == 1


def test_noise_shared_by_a_block_cancels_in_the_pairing():
    # Blocks differ by a shared factor (sd 0.5 in log) at every core count: paired, the ratio
    # sees none of it, so a 2x effect stays resolved.
    data = _curve({2: 2.0, 4: 1.0, 8: 1.0}, starts=2, repeats=2, noise=0.02, block_sd=0.5)
    res = measure_knee(data, seed=4)
    assert res.status == RESOLVED and res.knee_cores == 4
    p2 = res.point(2)
    assert p2 is not None and 1.8 < p2.slowdown_low <= p2.slowdown_high < 2.2


def test_per_phase_p50s_work_as_one_sample_per_block():
    data = {(s, r, c): v for (s, r, c), v in _curve({2: 3.0, 4: 1.0, 8: 1.0}).items()}
    p50s = {k: float(np.median(v)) for k, v in data.items()}
    res = measure_knee(p50s, seed=0)
    assert res.points[0].samples == 4  # one per block
    assert res.status == RESOLVED and res.knee_cores == 4


def test_deterministic_given_a_seed_and_differs_between_seeds():
    data = _curve({2: 1.3, 3: 1.1, 4: 1.0, 8: 1.0}, noise=0.3, n=20)
    a, b, c = measure_knee(data, seed=7), measure_knee(data, seed=7), measure_knee(data, seed=8)
    assert a == b
    assert a.points[0].slowdown_low != c.points[0].slowdown_low


def test_a_wider_interval_is_never_narrower():
    data = _curve({2: 1.3, 4: 1.0, 8: 1.0}, noise=0.3, n=20)
    narrow = measure_knee(data, interval=0.5, seed=1).point(2)
    wide = measure_knee(data, interval=0.95, seed=1).point(2)
    assert narrow is not None and wide is not None
    assert wide.slowdown_low <= narrow.slowdown_low <= narrow.slowdown_high <= wide.slowdown_high


def test_non_finite_samples_are_ignored_and_bad_cores_refused():
    data = _curve({2: 3.0, 4: 1.0, 8: 1.0})
    data[(0, 0, 2)] = np.append(data[(0, 0, 2)], [np.nan, np.inf, -1.0])
    assert measure_knee(data, seed=0).point(2).samples == 4 * 60  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="cores"):
        measure_knee({(0, 0, 2.5): [1.0], (0, 0, 4): [1.0]})  # type: ignore[dict-item]
    with pytest.raises(ValueError, match="interval"):
        measure_knee(data, interval=1.5)


def test_replication_agrees_for_the_same_curve_and_not_for_a_different_one():
    a = measure_knee(_curve({2: 3.0, 4: 1.0, 8: 1.0}, seed=1), seed=0)
    b = measure_knee(_curve({2: 3.0, 4: 1.0, 8: 1.0}, seed=2), seed=0)
    c = measure_knee(_curve({2: 1.5, 4: 1.0, 8: 1.0}, seed=3), seed=0)
    assert replicates(a, b).agree
    other = replicates(a, c)
    assert not other.agree and other.disagreeing_cores == (2,)


def test_json_names_every_field():
    res = measure_knee(_curve({2: 3.0, 4: 1.0, 8: 1.0}), seed=0)
    d = res.to_json_dict()
    assert d["status"] == "resolved" and d["knee_cores"] == 4
    assert set(d["points"][0]) == {
        "cores",
        "ttft_p50_ms",
        "slowdown",
        "slowdown_low",
        "slowdown_high",
        "blocks",
        "samples",
    }


def test_an_effect_whose_end_is_not_located_is_not_resolved():
    # Resolved slower at 2 cores, but 3 and 4 cores are too noisy to place inside or outside
    # the tolerance: the knee is somewhere in 3..8, so no knee is reported.
    data = _curve({2: 3.0, 8: 1.0}, noise=0.02)
    data.update(_curve({3: 1.0, 4: 1.0}, noise=1.2, n=6, seed=9))
    res = measure_knee(data, seed=0)
    assert res.slower_cores == (2,)
    assert res.status == NOT_RESOLVED and res.knee_cores is None
    assert "where that ends" in res.reason


def test_every_count_slower_puts_a_resolved_knee_at_the_most_cores():
    res = measure_knee(_curve({2: 3.0, 4: 2.0, 8: 1.0}), seed=0)
    assert res.status == RESOLVED and res.knee_cores == 8 and res.slower_cores == (2, 4)
