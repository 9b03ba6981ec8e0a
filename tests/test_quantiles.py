"""The one job-weighted percentile (advisor.quantiles) against numpy on the expanded values."""

import numpy as np
import pytest

from advisor.quantiles import grouped_job_percentiles, job_percentile, job_percentiles_by_group

QS = (0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 1.0)


@pytest.mark.parametrize("seed", range(20))
def test_job_percentile_equals_numpy_on_the_values_repeated_by_their_counts(seed):
    rng = np.random.default_rng(seed)
    values = rng.choice([0.125, 0.25, 1.0, 2.0, 3.0, 8.0, 12.5], size=rng.integers(1, 8))
    counts = rng.integers(0, 5, size=len(values))
    counts[0] = max(counts[0], 1)
    expanded = np.repeat(values, counts)
    for q in QS:
        assert job_percentile(values.tolist(), counts.tolist(), q) == np.percentile(
            expanded, 100 * q
        )


def test_grouped_percentiles_treat_each_run_of_rows_as_its_own_group():
    values = np.array([1.0, 2.0, 4.0, 0.5, 8.0])
    counts = np.array([3, 1, 2, 1, 4], dtype=np.int64)
    starts = np.array([0, 3], dtype=np.int64)
    got = grouped_job_percentiles(values, counts, starts, QS)
    first = np.repeat(values[:3], counts[:3])
    second = np.repeat(values[3:], counts[3:])
    assert got.tolist() == [
        [float(np.percentile(first, 100 * q)) for q in QS],
        [float(np.percentile(second, 100 * q)) for q in QS],
    ]


def test_no_group_gives_an_empty_table():
    got = grouped_job_percentiles(
        np.array([]), np.array([], dtype=np.int64), np.array([], dtype=np.int64), (0.5,)
    )
    assert got.shape == (0, 1)


@pytest.mark.parametrize("seed", range(10))
def test_percentiles_by_group_equal_numpy_on_each_group_in_any_row_order(seed):
    rng = np.random.default_rng(seed)
    size = int(rng.integers(1, 60))
    values = rng.choice([0.125, 0.25, 1.0, 2.0, 3.0, 8.0, 12.5], size=size)
    counts = rng.integers(0, 5, size=size)
    groups = rng.integers(0, 6, size=size)
    got = job_percentiles_by_group(values, counts, groups, QS)
    assert got.shape == (int(groups.max()) + 1, len(QS))
    for g in range(got.shape[0]):
        mine = groups == g
        expanded = np.repeat(values[mine], counts[mine])
        if expanded.size == 0:  # no row, or only rows seen no time: no percentile
            assert np.isnan(got[g]).all()
        else:
            assert got[g].tolist() == [float(np.percentile(expanded, 100 * q)) for q in QS]
