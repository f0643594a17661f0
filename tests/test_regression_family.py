"""Regression for users: SVMRegressor against scikit-learn's LinearSVR (same optimum, shapes and
estimator checks), the command line's -s 11 / 12 / 13, -p and -v against LIBLINEAR's own train and
predict, and model files read and written both ways (svmopt's format and LIBLINEAR's)."""
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_regressor
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVR
from sklearn.utils import estimator_checks

import svmopt
from svmopt.estimators import SVMRegressor
from svmopt.result import RegressionResult, Status


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes

    X, t = load_diabetes(return_X_y=True)
    return X / np.abs(X).max(axis=0), t


def _objective(X, t, w, b, p, eps, C, s=1.0):
    """1/2 (|w|^2 + b^2) + C sum s (|t - w.x - b| - eps)_+^p: LIBLINEAR's / LinearSVR's problem (b regularized)."""
    r = np.maximum(np.abs(t - (X @ w + b)) - eps, 0.0)
    return 0.5 * (w @ w + b * b) + C * np.sum(s * r ** p)


# ---------------------------------------------------------------- SVMRegressor: scikit-learn's LinearSVR


@pytest.mark.parametrize("loss, p, eps", [("epsilon_insensitive", 1, 5.0), ("squared_epsilon_insensitive", 2, 2.0)],
                         ids=["l1", "l2"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["bias", "none"])
def test_regressor_reaches_linearsvr_optimum(diabetes, loss, p, eps, fit_intercept):
    """The defaults make LinearSVR's problem (bias feature 1, regularized); with sample weights, in
    float64 the objective is LinearSVR's at -e 1e-10, and the shapes are LinearSVR's."""
    X, t = diabetes
    s = np.random.default_rng(0).uniform(0.2, 2.0, X.shape[0])
    ref = LinearSVR(loss=loss, epsilon=eps, C=1.0, tol=1e-10, max_iter=1_000_000, fit_intercept=fit_intercept,
                    dual=True).fit(X, t, sample_weight=s)
    m = SVMRegressor(loss=loss, epsilon=eps, dtype="float64", tol=1e-9, max_iter=100_000,
                     fit_intercept=fit_intercept).fit(X, t, sample_weight=s)
    assert m.result_.status == Status.CONVERGED and isinstance(m.result_, RegressionResult)
    assert m.coef_.shape == ref.coef_.shape == (X.shape[1],) and isinstance(m.n_iter_, int)
    if fit_intercept:
        assert m.intercept_.shape == ref.intercept_.shape == (1,)
    else:
        assert type(m.intercept_) is type(ref.intercept_) is float and m.intercept_ == 0.0
    b, b_ref = np.ravel(m.intercept_)[0], np.ravel(ref.intercept_)[0]
    P, P_ref = _objective(X, t, m.coef_, b, p, eps, 1.0, s), _objective(X, t, ref.coef_, b_ref, p, eps, 1.0, s)
    assert abs(P - P_ref) <= 1e-8 * P_ref
    f_ref = ref.predict(X)  # (the L2 objective is flat: 1e-8 in P moves predictions by 1e-4 of their range)
    np.testing.assert_allclose(m.predict(X), f_ref, rtol=0, atol=2e-4 * np.abs(f_ref).max())
    # float32 at the default tolerance: within it of the optimum
    m32 = SVMRegressor(loss=loss, epsilon=eps, fit_intercept=fit_intercept).fit(X, t, sample_weight=s)
    b32 = float(np.ravel(m32.intercept_)[0])
    assert P_ref * (1 - 1e-5) <= _objective(X, t, m32.coef_.astype(float), b32, p, eps, 1.0, s) <= P_ref * (1 + 1e-3)


def test_regressor_score_is_weighted_r2_and_works_in_sklearn(diabetes):
    X, t = diabetes
    s = np.random.default_rng(1).uniform(0.0, 3.0, X.shape[0])
    m = SVMRegressor(loss="squared_epsilon_insensitive", C=10.0, intercept_scaling=None).fit(X, t)
    f = m.predict(X)
    assert m.score(X, t) == pytest.approx(r2_score(t, f), abs=1e-12)
    assert m.score(X, t, sample_weight=s) == pytest.approx(r2_score(t, f, sample_weight=s), abs=1e-12)
    assert m.score(X, t) > 0.45  # a free intercept: near least squares' R^2 on diabetes (0.52)
    assert is_regressor(m) and clone(m).get_params() == m.get_params()
    pipe = make_pipeline(StandardScaler(), SVMRegressor(loss="squared_epsilon_insensitive", intercept_scaling=None))
    grid = GridSearchCV(pipe, {"svmregressor__C": [0.01, 1.0]}, cv=3).fit(X, t)
    assert grid.best_params_["svmregressor__C"] == 1.0 and grid.best_score_ > 0.4


def test_regressor_kernel_and_bad_parameters(diabetes):
    X, t = diabetes
    with pytest.raises(NotImplementedError, match="kernel regression"):
        SVMRegressor(kernel="rbf").fit(X[:50], t[:50])
    linear = SVMRegressor(kernel="linear").fit(X[:50], t[:50])
    assert linear.coef_.shape == (X.shape[1],)
    for kw, match in [(dict(loss="hinge"), "loss must be one of"), (dict(epsilon=-1.0), "epsilon"),
                      (dict(C=0.0), "C must be"), (dict(intercept_scaling=0.0), "intercept_scaling")]:
        with pytest.raises(ValueError, match=match):
            SVMRegressor(**kw).fit(X[:50], t[:50])
    with pytest.raises(ValueError, match="real-valued"):
        SVMRegressor().fit(X[:3], np.array(["a", "b", "c"]))
    with pytest.raises(ValueError, match="sample_weight has shape"):
        SVMRegressor().fit(X[:50], t[:50], sample_weight=np.ones(3))


# Checks of the protocol that need no fit, or fail before solving, and one that trains.
FAST_CHECKS = [
    "check_parameters_default_constructible",
    "check_no_attributes_set_in_init",
    "check_get_params_invariance",
    "check_set_params",
    "check_estimators_unfitted",
    "check_estimators_empty_data_messages",
    "check_requires_y_none",
    "check_estimator_repr",
    "check_estimator_cloneable",
    "check_regressors_no_decision_function",
    "check_regressors_train",
]


@pytest.mark.parametrize("check", FAST_CHECKS)
def test_sklearn_check_fast(check):
    getattr(estimator_checks, check)("SVMRegressor", SVMRegressor())


# LinearSVR (scikit-learn 1.9) fails exactly these two as well: an iterative solver stopped at its
# tolerance is not equal to 1e-7 to a refit on repeated rows.
EXPECTED_FAILED = {
    "check_sample_weight_equivalence_on_dense_data": "iterative solver: equal to its tolerance, not to 1e-7",
    "check_sample_weight_equivalence_on_sparse_data": "iterative solver: equal to its tolerance, not to 1e-7",
}


@pytest.mark.slow
def test_sklearn_check_estimator_all():
    """Every check (each new data shape compiles: about a minute)."""
    results = estimator_checks.check_estimator(SVMRegressor(), expected_failed_checks=EXPECTED_FAILED, on_fail=None)
    failed = [(r["check_name"], str(r["exception"])[:200]) for r in results if r["status"] == "failed"]
    assert not failed
