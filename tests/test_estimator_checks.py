"""scikit-learn's common estimator checks on the TTFT-slowdown estimator."""

from __future__ import annotations

import pytest
from sklearn.utils.estimator_checks import parametrize_with_checks

from advisor.model.estimator import CoreSlowdownRegressor


# One bootstrap refit keeps that path under every check at half the fits of three.
@parametrize_with_checks([CoreSlowdownRegressor(n_bootstrap=1, random_state=0)])
def test_estimator_passes_sklearn_common_checks(estimator, check, monkeypatch: pytest.MonkeyPatch):
    # sklearn skips its numpy "array API" input check unless SCIPY_ARRAY_API is set; set it for
    # that check only, so that it runs instead of skipping.
    monkeypatch.setenv("SCIPY_ARRAY_API", "1")
    check(estimator)
