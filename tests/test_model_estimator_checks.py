"""scikit-learn's common estimator checks on the TTFT-slowdown estimator."""

from __future__ import annotations

from sklearn.utils.estimator_checks import parametrize_with_checks

from advisor.model import CoreSlowdownRegressor


@parametrize_with_checks([CoreSlowdownRegressor(n_bootstrap=3, random_state=0)])
def test_estimator_passes_sklearn_common_checks(estimator, check):
    check(estimator)
