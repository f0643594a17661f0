"""Probability estimates (svmopt.probability, SVMClassifier(probability=True)) against LIBSVM through
scikit-learn's SVC(probability=True), scikit-learn's CalibratedClassifierCV and float64 SciPy fits,
on pendigits, letter and heart_scale.

The end-to-end comparisons are on a fixed split: both models are fitted on the same training rows
(each with its own internal 5-fold cross-validation, seeded) and scored by log-loss on the same
held-out rows."""
import warnings

import numpy as np
import pytest
from conftest import data_path
from scipy.optimize import minimize
from sklearn.metrics import log_loss
from sklearn.svm import SVC

import svmopt
from svmopt import probability
from svmopt.estimators import SVMClassifier, load_estimator
from svmopt.kernels import rbf
from svmopt.multiclass_kernel import class_pairs


def _split(name, n, scale):
    X, y = svmopt.load_svmlight(data_path(name), n_features=16)
    Xt, yt = svmopt.load_svmlight(data_path(name + ".t"), n_features=16)
    return X.toarray()[:n] * scale, y[:n], Xt.toarray()[:n] * scale, yt[:n]


@pytest.fixture(scope="module")
def digits():
    """pendigits: the first 1000 training rows and the first 1000 test rows, features / 100."""
    return _split("pendigits", 1000, 0.01)


@pytest.fixture(scope="module")
def heart():
    X, y = svmopt.load_svmlight(data_path("heart_scale"))
    return X.toarray(), y


def _svc(**kw):
    with warnings.catch_warnings():  # scikit-learn 1.9 deprecates SVC(probability=True)
        warnings.simplefilter("ignore", FutureWarning)
        return SVC(**kw)


def _svc_fit(X, y, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return _svc(**kw).fit(X, y)


# ------------------------------------------------------------------------- the pieces
def test_sigmoid_train_is_the_maximum_likelihood_fit(heart):
    """Lin, Lin & Weng's Newton method reaches the optimum of the smoothed-target likelihood that a
    float64 BFGS minimization finds independently."""
    X, y = heart
    f = SVC(kernel="rbf", gamma=0.1).fit(X[:150], y[:150]).decision_function(X[150:])
    pos = y[150:] > 0
    A, B = probability.sigmoid_train(f, pos)
    n1, n0 = pos.sum(), (~pos).sum()
    t = np.where(pos, (n1 + 1) / (n1 + 2), 1 / (n0 + 2))

    def nll(ab):
        z = ab[0] * f + ab[1]
        return np.sum(t * z + np.logaddexp(0, -z))  # -sum t log p + (1 - t) log(1 - p), p = 1 / (1 + e^z)

    ref = minimize(nll, [0.0, np.log((n0 + 1) / (n1 + 1))], method="BFGS", options={"gtol": 1e-10})
    np.testing.assert_allclose([A, B], ref.x, atol=1e-4)
    assert A < 0  # larger decision values, more likely positive
    # a single class, or constant decision values: finite, the prior's odds
    A1, B1 = probability.sigmoid_train(np.ones(10), np.ones(10, bool))
    assert np.isfinite([A1, B1]).all() and probability.sigmoid_predict(1.0, A1, B1) > 0.9


def test_pairwise_coupling_reproduces_libsvm(digits):
    """SVC's own pairwise decision values and sigmoids, coupled here, give SVC's probabilities (to
    LIBSVM's stopping tolerance 0.005 / K, which it iterates to; the minimizer is exact here)."""
    X, y, Xt, _ = digits
    ref = _svc_fit(X, y, kernel="rbf", C=10.0, probability=True, random_state=0, decision_function_shape="ovo")
    f = ref.decision_function(Xt)
    r = np.clip(probability.sigmoid_predict(f, ref.probA_[None], ref.probB_[None]), 1e-7, 1 - 1e-7)
    K, pairs = 10, class_pairs(10)
    R = np.zeros((f.shape[0], K, K))
    R[:, pairs[:, 0], pairs[:, 1]], R[:, pairs[:, 1], pairs[:, 0]] = r, 1 - r
    p = probability.pairwise_coupling(R)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, atol=1e-12)
    np.testing.assert_allclose(p, ref.predict_proba(Xt), atol=2e-3)
    # the coupled p minimizes sum (r_ji p_i - r_ij p_j)^2: no feasible step along the simplex lowers it
    Rt = np.swapaxes(R, 1, 2)  # Rt[:, t, j] = r_jt (R's diagonal is 0)
    Q = -Rt * R
    Q[:, np.arange(K), np.arange(K)] = np.sum(Rt ** 2, axis=2)
    grad = np.einsum("nij,nj->ni", Q, p)
    assert np.max(np.ptp(grad, axis=1)) < 1e-10  # equal partial derivatives: the simplex optimum


# ------------------------------------------------------------------------- against LIBSVM
def test_kernel_one_vs_one_log_loss_as_libsvm(digits):
    """pendigits (10 classes, rbf, C = 10): log-loss within 2% of SVC(probability=True)'s."""
    X, y, Xt, yt = digits
    est = SVMClassifier(kernel="rbf", C=10.0, probability=True, random_state=0).fit(X, y)
    ref = _svc_fit(X, y, kernel="rbf", C=10.0, probability=True, random_state=0)
    P = est.predict_proba(Xt)
    ours, theirs = log_loss(yt, P, labels=est.classes_), log_loss(yt, ref.predict_proba(Xt), labels=ref.classes_)
    assert ours <= 1.02 * theirs, (ours, theirs)
    assert P.shape == (1000, 10) and np.allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(est.predict_log_proba(Xt)), P, rtol=1e-12)
    assert np.mean(est.classes_[P.argmax(axis=1)] == est.predict(Xt)) > 0.97
    assert est.probA_.shape == est.probB_.shape == (45,) and np.all(est.probA_ < 0)


@pytest.mark.slow
def test_kernel_one_vs_one_log_loss_as_libsvm_letter():
    """letter (26 classes, 2000 rows, rbf, C = 10): log-loss within 2% of SVC(probability=True)'s."""
    X, y, Xt, yt = _split("letter.scale", 2000, 1.0)
    est = SVMClassifier(kernel="rbf", C=10.0, probability=True, random_state=0).fit(X, y)
    ref = _svc_fit(X, y, kernel="rbf", C=10.0, probability=True, random_state=0)
    ours, theirs = log_loss(yt, est.predict_proba(Xt), labels=est.classes_), \
        log_loss(yt, ref.predict_proba(Xt), labels=ref.classes_)
    assert ours <= 1.02 * theirs, (ours, theirs)


def test_binary_log_loss_as_libsvm(heart):
    """heart_scale, two classes: Platt's sigmoid on the binary model, log-loss within 2% of SVC's;
    SVC's own decision values and sigmoid give SVC's probabilities."""
    X, y = heart
    est = SVMClassifier(kernel="rbf", probability=True, random_state=0).fit(X[:135], y[:135])
    ref = _svc_fit(X[:135], y[:135], kernel="rbf", probability=True, random_state=0)
    ours, theirs = log_loss(y[135:], est.predict_proba(X[135:])), log_loss(y[135:], ref.predict_proba(X[135:]))
    assert ours <= 1.02 * theirs, (ours, theirs)
    assert est.probA_.shape == (1,)
    # LIBSVM's sigmoid gives P(classes_[0]) of its own decision value, -f: A f + B = -(A_l (-f) + B_l)
    mine = probability.Platt("binary", ref.probA_[0], -ref.probB_[0])
    p = probability.predict_proba(None, mine, None, decision=ref.decision_function(X[135:]))
    np.testing.assert_allclose(p, ref.predict_proba(X[135:]), atol=5e-3)  # LIBSVM couples 2 classes to 0.0025


def test_linear_one_vs_rest_as_calibrated_linear_svc(digits):
    """A linear model with 10 classes: per-class sigmoids on the one-vs-rest values, normalized; the
    method of CalibratedClassifierCV(LinearSVC, method="sigmoid", ensemble=False): log-loss within 2%."""
    from sklearn.calibration import CalibratedClassifierCV
    from sklearn.model_selection import StratifiedKFold
    from sklearn.svm import LinearSVC

    X, y, Xt, yt = digits
    est = SVMClassifier(C=1.0, probability=True, random_state=0, dtype="float64").fit(X, y)
    ref = CalibratedClassifierCV(LinearSVC(C=1.0, tol=1e-8, max_iter=100000), method="sigmoid", ensemble=False,
                                 cv=StratifiedKFold(5, shuffle=True, random_state=0)).fit(X, y)
    P = est.predict_proba(Xt)
    ours, theirs = log_loss(yt, P, labels=est.classes_), log_loss(yt, ref.predict_proba(Xt), labels=ref.classes_)
    assert ours <= 1.02 * theirs, (ours, theirs)
    assert est.probA_.shape == (10,) and np.allclose(P.sum(axis=1), 1.0)


# ------------------------------------------------------------------------- plumbing
def test_folds_share_compiled_programs(digits):
    """The cross-validation runs through solve_multiclass, whose row buckets give the folds one program."""
    X, y = digits[0][:700], digits[1][:700]
    test = probability.stratified_folds(y, 5, 0)[0]
    train = np.setdiff1d(np.arange(700), test)
    svmopt.solve_multiclass(X[train], y[train], strategy="ovo", kernel=rbf(0.5), C=10.0)
    before = svmopt.compile_count()
    platt = probability.fit(X, y, "ovo", kernel=rbf(0.5), C=10.0)
    assert svmopt.compile_count() == before
    assert platt.kind == "ovo" and platt.A.shape == (45,)
    sizes = [f.size for f in probability.stratified_folds(y, 5, 0)]
    assert max(sizes) - min(sizes) <= 1


def test_probabilities_survive_model_files(digits, heart, tmp_path):
    X, y, Xt, _ = digits
    est = SVMClassifier(kernel="rbf", C=10.0, probability=True).fit(X[:300], y[:300])
    back = load_estimator(svmopt.save_model(est, tmp_path / "p.model"))
    assert back.probability
    np.testing.assert_array_equal(back.predict_proba(Xt), est.predict_proba(Xt))
    np.testing.assert_array_equal(back.probA_, est.probA_)
    Xh, yh = heart
    lin = SVMClassifier(probability=True).fit(Xh, yh)
    back = load_estimator(svmopt.save_model(lin, tmp_path / "b.model"))
    np.testing.assert_array_equal(back.predict_proba(Xh), lin.predict_proba(Xh))
    plain = load_estimator(svmopt.save_model(SVMClassifier().fit(Xh, yh), tmp_path / "n.model"))
    assert not hasattr(plain, "predict_proba")
    with pytest.raises(AttributeError, match="not available when fitted with probability=False"):
        plain.set_params(probability=True).predict_proba(Xh)
