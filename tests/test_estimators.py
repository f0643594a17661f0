"""SVMClassifier: scikit-learn conventions (estimator checks), Pipeline, GridSearchCV,
agreement with svmopt.solve, the parameter resolvers, and no sklearn import of its own."""
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import svmopt
from sklearn_checks import PROTOCOL_CHECKS, failed_checks, run_check
from svmopt.estimators import (NotFittedError, SVMClassifier, available_methods, resolve_kernel, resolve_loss,
                               resolve_method, resolve_reg)
from svmopt.losses import hinge, lp_hinge, squared_hinge
from svmopt.multiclass import MulticlassResult
from svmopt.regularizers import elastic_net, l1, l2
from svmopt.solvers import alm


@pytest.fixture(scope="module")
def heart():
    return svmopt.load_svmlight(data_path("heart_scale"))


# ---------------------------------------------------------------- sklearn conventions

# Checks that need no fit, or fail before solving: fast, and the heart of the protocol.
FAST_CHECKS = PROTOCOL_CHECKS + ["check_requires_y_none"]


@pytest.mark.parametrize("check", FAST_CHECKS)
def test_sklearn_check_fast(check):
    run_check(check, SVMClassifier())


@pytest.mark.slow
def test_sklearn_check_estimator_all():
    """Every check (each new data shape compiles: several minutes)."""
    assert not failed_checks(SVMClassifier())


def test_params_protocol_without_sklearn_base():
    clf = SVMClassifier(C=0.5, loss="squared_hinge")
    assert not any(c.__module__.startswith("sklearn") for c in type(clf).__mro__)
    p = clf.get_params()
    assert p["C"] == 0.5 and p["loss"] == "squared_hinge" and p["method"] == "auto" and len(p) == 22
    assert clf.set_params(C=2.0, tol=1e-4) is clf and clf.C == 2.0 and clf.tol == 1e-4
    with pytest.raises(ValueError, match="Invalid parameter 'foo' for estimator SVMClassifier"):
        clf.set_params(foo=1)
    assert repr(clf) == "SVMClassifier(C=2.0, loss='squared_hinge', tol=0.0001)"
    c2 = clone(clf)
    assert c2 is not clf and c2.get_params() == clf.get_params() and is_classifier(c2)
    with pytest.raises(NotFittedError, match="not fitted"):
        clf.predict(np.zeros((2, 3)))


def test_module_does_not_import_sklearn():
    """import svmopt stays free of scikit-learn; svmopt.ConvergenceWarning, once used, is a
    subclass of scikit-learn's (scikit-learn installed), and so is what svmopt emits."""
    code = ("import sys, warnings, numpy as np, svmopt, svmopt.estimators\n"
            "assert 'sklearn' not in sys.modules, 'sklearn imported'\n"
            "W = svmopt.ConvergenceWarning\n"
            "from sklearn.exceptions import ConvergenceWarning as S\n"
            "assert issubclass(W, S) and issubclass(W, svmopt.result.ConvergenceWarning)\n"
            "warnings.simplefilter('error', S)\n"
            "X = np.random.default_rng(0).normal(size=(40, 3))\n"
            "try:\n"
            "    svmopt.solve(X, np.sign(X[:, 0] + 0.5), max_iter=1)\n"
            "    raise SystemExit('no warning')\n"
            "except S as e:\n"
            "    assert isinstance(e, W)\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


# ---------------------------------------------------------------- agreement with solve


def test_binary_matches_solve(heart):
    X, y = heart
    clf = SVMClassifier(C=0.7, dtype="float64").fit(X, y)
    r = svmopt.solve(X, y, C=0.7, dtype="float64", loss=squared_hinge)  # LinearSVC's loss: the default
    assert clf.coef_.shape == (1, 13) and clf.intercept_.shape == (1,)
    np.testing.assert_array_equal(clf.coef_[0], np.asarray(r.w))
    np.testing.assert_array_equal(clf.intercept_[0], np.asarray(r.b))
    np.testing.assert_array_equal(clf.classes_, [-1.0, 1.0])
    assert clf.n_iter_ == r.iterations and clf.n_features_in_ == 13 and clf.result_.converged
    np.testing.assert_array_equal(clf.decision_function(X), r.decision_function(X))
    np.testing.assert_array_equal(clf.predict(X), r.predict(X))
    assert clf.score(X, y) == r.score(X, y) > 0.8
    with pytest.raises(ValueError, match="X has 12 features, but SVMClassifier is expecting 13"):
        clf.predict(X[:, :12])


def test_float32_and_options_pass_through(heart):
    """dtype, loss as p, class_weight and sample_weight reach solve unchanged."""
    X, y = heart
    Xd = X.toarray()
    clf = SVMClassifier(loss=2.0, class_weight="balanced", dtype="float32").fit(Xd, y, sample_weight=np.full(270, 0.5))
    assert clf.coef_.dtype == np.float32
    n_pos = np.sum(y > 0)
    s = 0.5 * np.where(y > 0, 270 / (2 * n_pos), 270 / (2 * (270 - n_pos)))
    r = svmopt.solve(Xd, y, loss=squared_hinge, sample_weight=s, dtype="float32")
    np.testing.assert_array_equal(clf.coef_[0], np.asarray(r.w))
    assert clf.result_.loss == "squared_hinge"


def test_multiclass_uses_one_vs_rest(heart):
    X, y = heart
    y3 = np.where(X[:, 0].toarray().ravel() > 0.3, 2, y).astype(int)
    labels = np.array(["a", "b", "c"])[np.searchsorted([-1, 1, 2], y3)]
    clf = SVMClassifier(loss=1.5, dtype="float32", max_iter=2)
    with pytest.warns(svmopt.ConvergenceWarning):
        clf.fit(X, labels)  # the problem of test_multiclass's cap test: its compilation is reused
    assert isinstance(clf.result_, MulticlassResult) and list(clf.classes_) == ["a", "b", "c"]
    assert clf.coef_.shape == (3, 13) and clf.intercept_.shape == (3,) and clf.n_iter_ == 2
    f = clf.decision_function(X)
    assert f.shape == (270, 3)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[np.argmax(f, axis=1)])


@pytest.mark.slow
def test_rbf_kernel_matches_libsvm(heart, tmp_path):
    """Kernel models (method alfpgm) against LIBSVM through sklearn's SVC; fast siblings:
    test_model_io's kernel round trip and the kernel-with-alm error below."""
    from sklearn.svm import SVC

    from svmopt.model_io import load_model, save_model

    X, y = heart
    clf = SVMClassifier(kernel="rbf", gamma=0.1, method="alfpgm", dtype="float64").fit(X, y)
    ref = SVC(kernel="rbf", gamma=0.1, C=1.0, tol=1e-5).fit(X, y)
    assert clf.result_.converged and not hasattr(clf, "coef_")
    assert clf.dual_coef_.shape == (1, clf.support_vectors_.shape[0])
    assert abs(clf.support_vectors_.shape[0] - len(ref.support_)) <= 3
    np.testing.assert_allclose(clf.decision_function(X), ref.decision_function(X), atol=1e-2)
    assert np.mean(clf.predict(X) == ref.predict(X)) >= 0.99
    m = load_model(save_model(clf, tmp_path / "rbf.model"))
    np.testing.assert_array_equal(m.decision_function(X), clf.decision_function(X))


# ---------------------------------------------------------------- sklearn tools


def test_pipeline_with_scaler(heart):
    X, y = heart
    Xd = X.toarray()
    pipe = make_pipeline(StandardScaler(), SVMClassifier(C=0.1, dtype="float64")).fit(Xd, y)
    Z = StandardScaler().fit_transform(Xd)
    r = svmopt.solve(Z, y, C=0.1, dtype="float64", loss=squared_hinge)
    np.testing.assert_array_equal(pipe[-1].coef_[0], np.asarray(r.w))
    np.testing.assert_array_equal(pipe.predict(Xd), r.predict(Z))
    assert pipe.score(Xd, y) > 0.8


def test_grid_search_over_C(heart):
    """GridSearchCV's cross-validated accuracies equal a hand-written loop over svmopt.solve."""
    X, y = heart
    Xd = X.toarray()
    grid = [0.01, 0.1, 1.0, 10.0]
    cv = StratifiedKFold(n_splits=3, shuffle=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", svmopt.ConvergenceWarning)
        gs = GridSearchCV(SVMClassifier(dtype="float64"), {"C": grid}, cv=cv).fit(Xd, y)
        manual = [np.mean([svmopt.solve(Xd[tr], y[tr], C=C, dtype="float64", loss=squared_hinge).score(Xd[te], y[te])
                           for tr, te in cv.split(Xd, y)]) for C in grid]
    np.testing.assert_allclose(gs.cv_results_["mean_test_score"], manual)
    assert gs.best_params_["C"] == grid[int(np.argmax(manual))]
    assert gs.best_score_ > 0.8 and gs.best_estimator_.C == gs.best_params_["C"]


# ---------------------------------------------------------------- resolvers and errors


def test_resolvers():
    assert resolve_loss("hinge") is hinge and resolve_loss("squared_hinge") is squared_hinge
    assert resolve_loss(1) is hinge and resolve_loss("2") is squared_hinge
    assert repr(resolve_loss(1.5)) == repr(lp_hinge(1.5))
    assert resolve_reg("l2") is l2 and resolve_reg("L1") is l1
    en = elastic_net(0.5)
    assert resolve_reg(en) is en and resolve_method("alm") is alm and resolve_method(alm(tol=1e-4)).tol == 1e-4
    assert "alm" in available_methods()
    assert resolve_kernel(None) is None
    Xd = np.random.default_rng(0).normal(size=(50, 4))
    k = resolve_kernel("rbf", Xd)  # gamma "scale" = 1 / (d var X), as sklearn's SVC
    assert np.isclose(float(k.params["gamma"]), 1.0 / (4 * Xd.var()))
    assert np.isclose(float(resolve_kernel("rbf", sp.csr_matrix(Xd)).params["gamma"]), 1.0 / (4 * Xd.var()))


@pytest.mark.parametrize("kwargs, match", [
    (dict(loss="cubic"), "unknown loss 'cubic'"),
    (dict(loss=0.5), "p >= 1"),
    (dict(reg="l3"), "unknown reg"),
    (dict(method="nope"), "unknown method 'nope'; available methods: .*alm"),
    (dict(C=0.0), "C must be a finite number > 0"),
    (dict(kernel="rbf", method="alm"), "method alm is linear"),  # an explicit linear method is refused
    (dict(kernel="laplace"), "unknown kernel"),
    (dict(class_weight={7: 2.0}), "class_weight names classes"),
])
def test_bad_parameters_fail_at_fit(heart, kwargs, match):
    X, y = heart
    clf = SVMClassifier(**kwargs)  # sklearn convention: no validation in __init__
    with pytest.raises((ValueError, TypeError), match=match):
        clf.fit(X, y)


def test_bad_data(heart):
    X, y = heart
    with pytest.raises(ValueError, match="NaN or infinity"):
        SVMClassifier().fit(np.where(X.toarray() > 0.9, np.nan, X.toarray()), y)
    with pytest.raises(ValueError, match="at least 2 classes"):
        SVMClassifier().fit(X, np.ones(270))
    with pytest.raises(ValueError, match="Unknown label type"):
        SVMClassifier().fit(X, y + 0.5 * np.arange(270) / 270)
    with pytest.raises(ValueError, match="shape mismatch"):
        SVMClassifier().fit(X, y[:10])
    with pytest.raises(ValueError, match="Reshape your data"):
        SVMClassifier().fit(np.ones(5), np.arange(5) % 2)


def test_kernel_multiclass_scores_are_per_class_as_svc():
    """Kernel models with K > 2 classes are one-vs-one; their decision_function was the (n, P)
    pairwise values, which with K = 3 look like per-class scores (argmax matched predict on 27.5%
    of wine's rows). It is now SVC's per-class shape and rule: on wine (standardized, rbf) the
    argmax is predict, and the scores equal SVC's (same C, gamma) where the decisions agree;
    decision_function_shape="ovo" keeps the pairwise values."""
    from sklearn.datasets import load_wine
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    X, y = load_wine(return_X_y=True)
    X = StandardScaler().fit_transform(X)
    est = svmopt.SVMClassifier(kernel="rbf", tol=1e-6, dtype="float64").fit(X, y)
    f = est.decision_function(X)
    assert f.shape == (178, 3)
    np.testing.assert_array_equal(est.classes_[np.argmax(f, axis=1)], est.predict(X))
    ref = SVC(kernel="rbf", tol=1e-10).fit(X, y).decision_function(X)
    np.testing.assert_allclose(f, ref, atol=1e-3)
    pairwise = est.set_params(decision_function_shape="ovo").decision_function(X)
    assert pairwise.shape == (178, 3) and not np.allclose(pairwise, f)
    with pytest.raises(ValueError, match="decision_function_shape"):
        est.set_params(decision_function_shape="both").decision_function(X)


# ---------------------------------------------------------------- scikit-learn's SVC behaviours


@pytest.fixture(scope="module")
def digits():
    """pendigits: 300 rows of 10 classes, features scaled to [0, 1]."""
    X, y = svmopt.load_svmlight(data_path("pendigits"))
    return X.toarray()[:300] / 100.0, y[:300]


def test_linear_kernel_has_svc_coef(heart, digits):
    """kernel="linear": coef_ = dual_coef_ @ support_vectors_, read-only, per pair; equal to SVC's."""
    from sklearn.svm import SVC

    X, y = heart
    for Xs, ys, shape in ((X.toarray(), y, (1, 13)), (digits[0], digits[1], (45, 16))):
        est = SVMClassifier(kernel="linear", C=0.5, tol=1e-6, dtype="float64").fit(Xs, ys)
        ref = SVC(kernel="linear", C=0.5, tol=1e-8).fit(Xs, ys)
        assert est.coef_.shape == shape
        np.testing.assert_allclose(est.coef_, ref.coef_, atol=2e-3 * np.abs(ref.coef_).max())
        np.testing.assert_allclose(est.intercept_, ref.intercept_, atol=2e-3 * np.abs(ref.intercept_).max())
        with pytest.raises(ValueError, match="read-only"):
            est.coef_[0, 0] = 1.0
        with pytest.raises(AttributeError, match="set dual_coef_"):
            est.coef_ = np.zeros(shape)
    with pytest.raises(AttributeError, match="only available when using a linear kernel"):
        SVMClassifier(kernel="rbf").fit(X, y).coef_


def test_predictions_follow_edited_attributes(heart, digits):
    """Predictions come from coef_ / intercept_ (linear) and dual_coef_ / support_vectors_ / intercept_
    (kernel), as scikit-learn's: set them, and decision_function is the numpy formula on the new values."""
    from sklearn.metrics.pairwise import rbf_kernel
    from sklearn.svm import LinearSVC

    X, y = heart
    Xd = X.toarray()
    est = SVMClassifier(dtype="float64").fit(Xd, y)
    ref = LinearSVC(C=0.01, dual=True, tol=1e-8, max_iter=100000).fit(Xd, y)  # another model's weights
    est.coef_, est.intercept_ = ref.coef_.copy(), ref.intercept_.copy()
    np.testing.assert_allclose(est.decision_function(Xd), ref.decision_function(Xd), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(est.predict(Xd), ref.predict(Xd))
    Xs, ys = digits
    est = SVMClassifier(dtype="float64").fit(Xs, ys)  # one-vs-rest
    est.coef_ = est.coef_[::-1].copy()
    np.testing.assert_allclose(est.decision_function(Xs), Xs @ est.coef_.T + est.intercept_, atol=1e-12)
    kern = SVMClassifier(kernel="rbf", gamma=0.5, dtype="float64").fit(Xd, y)
    kern.dual_coef_ = -kern.dual_coef_
    kern.intercept_ = kern.intercept_ + 0.25
    manual = rbf_kernel(Xd, kern.support_vectors_, gamma=0.5) @ kern.dual_coef_[0] + kern.intercept_[0]
    np.testing.assert_allclose(kern.decision_function(Xd), manual, atol=1e-9)
    np.testing.assert_array_equal(kern.predict(Xd), np.where(manual > 0, 1.0, -1.0))


def test_warm_start_starts_from_the_previous_fit(heart, digits):
    """warm_start=True: a refit begins at the previous solution (solve's init), so at the same C it
    is certified at once, and at another C it reaches the cold fit's optimum."""
    X, y = heart
    Xd = X.toarray()
    for Xs, ys in ((Xd, y), digits):
        est = SVMClassifier(C=0.5, warm_start=True, dtype="float64").fit(Xs, ys)
        cold_iter = est.n_iter_
        assert est.fit(Xs, ys).n_iter_ < cold_iter
        est.set_params(C=1.0).fit(Xs, ys)
        cold = SVMClassifier(C=1.0, dtype="float64").fit(Xs, ys)
        np.testing.assert_allclose(est.result_.primal_objective, cold.result_.primal_objective, rtol=2e-3)
        assert est.result_.converged
    # a binary kernel model starts from its dual alpha (AL-FPGM solves this one in one iteration:
    # what is checked is the start handed to solve)
    kern = SVMClassifier(kernel="rbf", gamma=0.5, warm_start=True, dtype="float64").fit(Xd, y)
    alpha = np.asarray(kern.result_.extras["alpha"])
    seen = []
    real_solve = svmopt.estimators.classifier.solve
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(svmopt.estimators.classifier, "solve", lambda *a, **k: seen.append(k["init"]) or real_solve(*a, **k))
        kern.set_params(C=2.0).fit(Xd, y)
    np.testing.assert_array_equal(seen[0]["alpha"], alpha)
    cold = SVMClassifier(kernel="rbf", gamma=0.5, C=2.0, dtype="float64").fit(Xd, y)
    np.testing.assert_allclose(kern.result_.primal_objective, cold.result_.primal_objective, rtol=2e-3)
    with pytest.raises(ValueError, match="one-vs-rest"):
        svmopt.solve_multiclass(*digits, strategy="ovo", kernel=svmopt.kernels.rbf(0.5), init={"alpha": None})


def test_saved_estimator_loads_as_a_fitted_estimator(heart, digits, tmp_path):
    from svmopt.estimators import load_estimator

    X, y = heart
    est = SVMClassifier(C=0.3, class_weight="balanced", dtype="float64").fit(X, y)
    back = load_estimator(svmopt.save_model(est, tmp_path / "lin.model"))
    assert back.C == 0.3 and back.class_weight == "balanced" and back.n_features_in_ == 13
    np.testing.assert_array_equal(back.coef_, est.coef_)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert back.fit(X, y).score(X, y) == est.score(X, y)  # its parameters refit the same model
    kern = SVMClassifier(kernel="rbf", gamma=2.0, C=3.0, decision_function_shape="ovo").fit(*digits)
    back = load_estimator(svmopt.save_model(kern, tmp_path / "ovo.model"))
    assert (back.kernel, back.gamma, back.decision_function_shape) == ("rbf", 2.0, "ovo")
    np.testing.assert_array_equal(back.decision_function(digits[0]), kern.decision_function(digits[0]))
    m = SVMClassifier.from_model(svmopt.solve(X, y, C=0.3))  # a Result from solve: the defaults
    assert m.C == 1.0 and m.coef_.shape == (1, 13) and m.score(X, y) > 0.8


def test_break_ties_as_svc(digits):
    """break_ties=True with decision_function_shape="ovr": predict is the arg-max of the per-class
    scores (as SVC); with "ovo" it is refused, as SVC refuses it."""
    from sklearn.svm import SVC

    X, y = digits
    est = SVMClassifier(kernel="rbf", gamma=0.5, C=1.0, break_ties=True, tol=1e-6, dtype="float64").fit(X, y)
    ref = SVC(kernel="rbf", gamma=0.5, C=1.0, break_ties=True, tol=1e-8).fit(X, y)
    rng = np.random.default_rng(0)
    Z = 0.5 * (X[rng.integers(0, 300, 4000)] + X[rng.integers(0, 300, 4000)])  # midpoints: tied votes (~2%)
    f = est.decision_function(Z)
    np.testing.assert_array_equal(est.predict(Z), est.classes_[np.argmax(f, axis=1)])
    np.testing.assert_allclose(f, ref.decision_function(Z), atol=1e-3)
    assert np.mean(est.predict(Z) == ref.predict(Z)) > 0.99
    votes_only = est.set_params(break_ties=False).predict(Z)  # LIBSVM's rule: ties to the class listed first
    np.testing.assert_array_equal(votes_only, ref.set_params(break_ties=False).predict(Z))
    assert np.any(votes_only != est.classes_[np.argmax(f, axis=1)])
    with pytest.raises(ValueError, match="break_ties must be False"):
        est.set_params(break_ties=True, decision_function_shape="ovo").predict(Z)
