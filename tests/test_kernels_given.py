"""Kernels as users give them: a precomputed Gram matrix (LIBSVM -t 4, sklearn's kernel="precomputed")
and a plain NumPy function (sklearn's SVC(kernel=callable)), through svmopt.solve, the one-vs-one
solve, the estimator and model files; against LIBSVM through scikit-learn's SVC on real data."""
import warnings

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path
from sklearn.svm import SVC

import svmopt
from svmopt import kernels
from svmopt.estimators import SVMClassifier, load_estimator
from svmopt.model_io import load_model, save_model

GAMMA = 0.2


@pytest.fixture(scope="module")
def heart():
    X, y = svmopt.load_svmlight(data_path("heart_scale"))
    return X.toarray(), y


@pytest.fixture(scope="module")
def digits():
    """pendigits: 400 training rows (10 classes) and 200 test rows, features scaled to [0, 1]."""
    X, y = svmopt.load_svmlight(data_path("pendigits"))
    X = X.toarray() / 100.0
    return X[:400], y[:400], X[400:600], y[400:600]


def rbf_gram(A, B, gamma=GAMMA):
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0.0))


def test_precomputed_binary_matches_libsvm(heart):
    X, y = heart
    Xtr, ytr, Xte = X[:200], y[:200], X[200:]
    K, KT = rbf_gram(Xtr, Xtr), rbf_gram(Xte, Xtr)
    r = svmopt.solve(K, ytr, kernel="precomputed", C=2.0, dtype="float64", tol=1e-6)
    ref = SVC(kernel="precomputed", C=2.0, tol=1e-8).fit(K, ytr)
    assert r.converged and r.kernel.name == "precomputed"
    assert r.support_vectors.shape == (len(ref.support_), 1)  # row indices, as LIBSVM's 0:i
    np.testing.assert_array_equal(r.support_vectors[:, 0], np.sort(ref.support_))
    np.testing.assert_allclose(r.decision_function(KT), ref.decision_function(KT), atol=1e-4)
    # the same problem through the rbf kernel object: the same model
    same = svmopt.solve(Xtr, ytr, kernel=kernels.rbf(GAMMA), C=2.0, dtype="float64", tol=1e-6)
    np.testing.assert_allclose(r.decision_function(KT), same.decision_function(Xte), atol=1e-4)
    # K(test, train) is read only at the support vectors' columns (LIBSVM's rule)
    sparse_kt = np.zeros_like(KT)
    sv = r.support_vectors[:, 0].astype(int)
    sparse_kt[:, sv] = KT[:, sv]
    np.testing.assert_array_equal(r.decision_function(sparse_kt), r.decision_function(KT))
    with pytest.raises(ValueError, match="one column per training row .200."):
        r.decision_function(KT[:, :150])


def test_precomputed_one_vs_one_and_estimator_match_libsvm(digits, tmp_path):
    Xtr, ytr, Xte, yte = digits
    K, KT = rbf_gram(Xtr, Xtr), rbf_gram(Xte, Xtr)
    est = SVMClassifier(kernel="precomputed", C=5.0, tol=1e-6, dtype="float64").fit(K, ytr)
    ref = SVC(kernel="precomputed", C=5.0, tol=1e-8).fit(K, ytr)
    assert est.n_features_in_ == 400 and est.support_vectors_.shape[1] == 1
    np.testing.assert_array_equal(np.sort(est.support_), np.sort(ref.support_))
    ovo = dict(decision_function_shape="ovo")
    np.testing.assert_allclose(est.set_params(**ovo).decision_function(KT),
                               ref.set_params(**ovo).decision_function(KT), atol=1e-3)
    assert np.mean(est.predict(KT) == ref.predict(KT)) >= 0.99
    assert est.score(KT, yte) > 0.9
    with pytest.raises(ValueError, match="expecting 400 features"):
        est.predict(KT[:, :399])
    # model files keep the training size and the support vectors' indices
    back = load_estimator(save_model(est, tmp_path / "pre.model"))
    assert back.n_features_in_ == 400 and back.kernel == "precomputed"
    np.testing.assert_array_equal(back.predict(KT), est.predict(KT))
    m = load_model(tmp_path / "pre.model")
    np.testing.assert_array_equal(m.predict(KT), est.predict(KT))


def test_numpy_kernel_function_is_solved_on_its_gram_matrix(digits):
    """A plain NumPy function: through solve (a binary pair of digits), the one-vs-one solve and
    the estimator, the same models as the precomputed Gram matrix and the built-in rbf kernel."""
    Xtr, ytr, Xte, _ = digits
    pair = np.isin(ytr, (1, 7))
    calls = []

    def fn(A, B):
        calls.append((A.shape[0], B.shape[0]))
        return rbf_gram(np.asarray(A), np.asarray(B))

    r = svmopt.solve(Xtr[pair], ytr[pair], kernel=fn, C=5.0, dtype="float64", tol=1e-6)
    ref = svmopt.solve(Xtr[pair], ytr[pair], kernel=kernels.rbf(GAMMA), C=5.0, dtype="float64", tol=1e-6)
    assert r.kernel.host and r.support_vectors.shape[1] == Xtr.shape[1]  # support vectors are rows of X
    np.testing.assert_allclose(r.decision_function(Xte), ref.decision_function(Xte), atol=1e-4)
    assert calls[0] == (pair.sum(), pair.sum())  # one Gram matrix, then predictions against support vectors
    assert calls[-1] == (Xte.shape[0], r.support_vectors.shape[0])
    # kernels.from_function of a NumPy function (not traceable): evaluated on the host too
    wrapped = svmopt.solve(Xtr[pair], ytr[pair], kernel=kernels.from_function(fn), C=5.0, dtype="float64",
                           tol=1e-6)
    assert wrapped.kernel.host
    np.testing.assert_allclose(wrapped.decision_function(Xte), ref.decision_function(Xte), atol=1e-4)
    # one-vs-one on the precomputed Gram matrix: the pairwise values of the rbf kernel object
    m = svmopt.solve_multiclass(rbf_gram(Xtr, Xtr), ytr, strategy="ovo", kernel="precomputed", C=5.0,
                                dtype="float64", tol=1e-6)
    m_ref = svmopt.solve_multiclass(Xtr, ytr, strategy="ovo", kernel=kernels.rbf(GAMMA), C=5.0, dtype="float64",
                                    tol=1e-6)
    np.testing.assert_allclose(m.decision_function(rbf_gram(Xte, Xtr)), m_ref.decision_function(Xte), atol=1e-4)
    # one-vs-one through the estimator, against sklearn's SVC with the same callable
    est = SVMClassifier(kernel=rbf_gram, C=5.0, tol=1e-6, dtype="float64").fit(Xtr, ytr)
    svc = SVC(kernel=rbf_gram, C=5.0, tol=1e-8).fit(Xtr, ytr)
    np.testing.assert_allclose(est.decision_function(Xte), svc.decision_function(Xte), atol=1e-3)
    with pytest.raises(AttributeError, match="only available when using a linear kernel"):
        est.coef_


def test_kernel_functions_that_cannot_work_are_refused_with_what_to_write(heart, monkeypatch):
    X, y = heart
    with pytest.raises(ValueError, match=r"returned an array of shape \(270, 13\) .* K\(A, B\)"):
        svmopt.solve(X, y, kernel=lambda A, B: A)
    with pytest.raises(ValueError, match="NaN or inf"):
        svmopt.solve(X, y, kernel=lambda A, B: np.full((len(A), len(B)), np.nan))
    monkeypatch.setattr(kernels, "GRAM_BUDGET", 100_000)
    with pytest.raises(ValueError, match=r"270 x 270 Gram matrix.*svmopt.kernels.from_function\(fn\)"):
        svmopt.solve(X, y, kernel=lambda A, B: A @ B.T)
    # a JAX function passed to from_function stays on the device (rows on demand), nothing n x n
    r = svmopt.solve(X, y, kernel=kernels.from_function(lambda A, B: jnp.dot(A, B.T)), C=0.5, dtype="float64")
    assert not r.kernel.host and r.converged
    with pytest.raises(ValueError, match="Precomputed matrix must be a square matrix. Input is a 270x13 matrix"):
        svmopt.solve(X, y, kernel="precomputed")
    with pytest.raises(TypeError, match="Sparse precomputed"):
        svmopt.solve(sp.csr_matrix(X @ X.T), y, kernel="precomputed")
    with pytest.raises(TypeError, match="'precomputed' or a function"):
        svmopt.solve(X, y, kernel=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        host = svmopt.solve(X[:60], y[:60], kernel=lambda A, B: A @ B.T, max_iter=3)
    with pytest.raises(ValueError, match="cannot save a custom kernel"):
        save_model(host, "/tmp/never-written.model")
