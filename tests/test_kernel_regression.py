"""Kernel epsilon-SVR (LIBSVM -s 3) on LIBSVM's general dual: ``svmopt.solve(X, t, loss=epsilon_insensitive(eps),
kernel=rbf(g))`` runs alfpgm on 2n variables (alpha, alpha*) and returns a RegressionResult whose certified gap
is P of the regression problem (from the kernel expansion) against D of the dual.

References are LIBSVM at -e 1e-12: libsvm-official's svmutil and scikit-learn's SVR (its copy of LIBSVM), each
model's P and D recomputed here in numpy (float64) from its dual coefficients (P with the best intercept for them).
LIBSVM keeps its kernel values in single precision (Qfloat): its dual objective agrees with ours to ~1e-10, but
the primal of its model, steep where many free support vectors sit on the tube's edge, is up to ~2e-5 above
the optimum (pendigits). So the comparisons are: our D and P within 1e-6 of LIBSVM's D, our D below and our P
above LIBSVM's bounds. Data: scikit-learn's diabetes, and pendigits from ../shared/data (the last pen coordinate
regressed on the other fifteen)."""
import numpy as np
import pytest

import jax.numpy as jnp

from conftest import data_path

import svmopt
from svmopt.kernels import rbf
from svmopt.losses import epsilon_insensitive, squared_epsilon_insensitive
from svmopt.result import RegressionResult, Status
from svmopt.solvers.alfpgm import alfpgm

F64 = jnp.float64


def rbf_np(A, B, gamma):
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0.0))


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes

    X, t = load_diabetes(return_X_y=True)
    return X / np.abs(X).max(axis=0), t


@pytest.fixture(scope="module")
def pendigits():
    X, _ = svmopt.load_svmlight(data_path("pendigits"), n_features=16)
    X = X.toarray()[:1500] / 100.0
    return X[:, :15], X[:, 15]


def objectives(X, t, beta, b, C, eps, gamma, s=None):
    """(P, D) of epsilon-SVR for the expansion beta (n,) and intercept b, in float64; b=None: the intercept
    that minimizes P for this beta (P is convex and piecewise linear in b: its minimum is at a kink)."""
    s = np.ones(len(t)) if s is None else s
    K = rbf_np(X, X, gamma)
    Kb = K @ beta
    quad = beta @ Kb

    def loss(b):
        return C * np.sum(s[:, None] * np.maximum(np.abs(t[:, None] - Kb[:, None] - b) - eps, 0.0), axis=0)

    if b is None:  # a model's rho is exact only at the exact optimum; with many free SVs P is steep in b
        kinks = np.concatenate([t - Kb - eps, t - Kb + eps])
        b = min((loss(kinks[i:i + 256]).min(), kinks[i:i + 256][loss(kinks[i:i + 256]).argmin()])
                for i in range(0, kinks.size, 256))[1]
    P = 0.5 * quad + float(loss(np.atleast_1d(b))[0])
    D = t @ beta - eps * np.abs(beta).sum() - 0.5 * quad
    return P, D


def libsvm_reference(X, t, C, eps, gamma):
    """libsvm-official's svmutil, -s 3 at -e 1e-12: (beta (n,), b, P, D)."""
    from libsvm import svmutil

    m = svmutil.svm_train(svmutil.svm_problem(t.tolist(), X.tolist()),
                          svmutil.svm_parameter(f"-s 3 -t 2 -g {gamma!r} -c {C!r} -p {eps!r} -e 1e-12 -h 0 -q"))
    beta = np.zeros(len(t))
    beta[np.asarray(m.get_sv_indices()) - 1] = [c[0] for c in m.get_sv_coef()]
    return (beta, -m.rho[0], *objectives(X, t, beta, None, C, eps, gamma))


def sklearn_reference(X, t, C, eps, gamma, s=None):
    from sklearn.svm import SVR

    m = SVR(C=C, epsilon=eps, gamma=gamma, tol=1e-12).fit(X, t, sample_weight=s)
    beta = np.zeros(len(t))
    beta[m.support_] = m.dual_coef_.ravel()
    return (beta, float(m.intercept_[0]), *objectives(X, t, beta, None, C, eps, gamma, s))


CASES = {  # data, C, epsilon, gamma, method (the whole matrix, or working sets of 32 with a 60-row cache), tol
    "diabetes": ("diabetes", 100.0, 5.0, 0.5, alfpgm, 1e-10),
    "pendigits": ("pendigits", 10.0, 0.05, 2.0, alfpgm(whole=3000), 1e-10),  # 3000 variables: the whole matrix
    # working sets: dual steps of ~1e-18 near the optimum no longer move D in float64 (STALLED below ~5e-8)
    "pendigits-decomposed": ("pendigits", 10.0, 0.05, 2.0, alfpgm(whole=0, pairs=16, cache_size=0.75), 1e-7),
}


# pendigits with the whole matrix is slow; its working-set run and diabetes's whole matrix stay fast
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "pendigits" else c for c in CASES])
def test_the_optimum_is_libsvms(case, request):
    name, C, eps, gamma, method, tol = CASES[case]
    X, t = request.getfixturevalue(name)
    _, _, P_ref, D_ref = libsvm_reference(X, t, C, eps, gamma)
    _, _, P_sk, D_sk = sklearn_reference(X, t, C, eps, gamma)
    assert D_ref <= P_ref <= D_ref + 1e-4 * abs(D_ref) and abs(D_sk - D_ref) <= 1e-8 * abs(D_ref)

    r = svmopt.solve(X, t, loss=epsilon_insensitive(eps), C=C, kernel=rbf(gamma), method=method, tol=tol, dtype=F64)
    assert isinstance(r, RegressionResult) and r.status == Status.CONVERGED, r.message
    P, D = float(r.primal_objective), float(r.dual_objective)
    assert D <= P_ref * (1 + 1e-12) and P >= D_ref * (1 - 1e-12)  # D below and P above the reference's bounds
    assert abs(P - D_ref) <= 1e-6 * abs(D_ref) and abs(D - D_ref) <= 1e-6 * abs(D_ref), (P, D, D_ref, P_ref)
    assert P <= P_ref * (1 + 1e-9)  # its primal is at least as good as LIBSVM's model's
    # the reported numbers are those of the model it returns (support vectors, dual_coef = alpha - alpha*, b)
    beta = np.zeros(len(t))
    beta[r.extras["support"]] = r.dual_coef
    P_model, D_model = objectives(X, t, beta, float(r.b), C, eps, gamma)
    assert abs(P_model - P) <= 1e-9 * abs(P) and abs(D_model - D) <= 1e-9 * abs(D)
    # the dual point is feasible: |beta_i| <= C, sum beta = 0
    assert np.abs(beta).max() <= C * (1 + 1e-12) and abs(beta.sum()) <= 1e-9 * C
    np.testing.assert_allclose(r.support_vectors, X[r.extras["support"]])
    if case == "pendigits-decomposed":
        assert int(r.extras["working_set"]) == 32 and int(r.extras["cache_misses"]) > X.shape[0]


def test_auto_picks_the_kernel_solver_and_float32_certifies(pendigits):
    X, t = pendigits
    C, eps, gamma = 10.0, 0.05, 2.0
    beta_ref, b_ref, P_ref, _ = libsvm_reference(X, t, C, eps, gamma)
    r = svmopt.solve(X, t, loss=epsilon_insensitive(eps), C=C, kernel=rbf(gamma))  # float32, tol 1e-3
    assert r.method == "alfpgm" and "epsilon-SVR" in r.extras["auto"]
    assert r.status == Status.CONVERGED and float(r.relative_gap) <= 1e-3
    P = objectives(X, t, np.bincount(r.extras["support"], np.asarray(r.dual_coef, np.float64), len(t)), float(r.b),
                   C, eps, gamma)[0]
    assert P_ref <= P <= P_ref * (1 + 2e-3)  # the model it returns is within tol of the optimum
    f_ref = rbf_np(X, X, gamma) @ beta_ref + b_ref
    assert np.abs(r.predict(X) - f_ref).max() <= 0.05 * np.abs(t).max()
    assert r.score(X, t) > 0.5


def test_sample_weights_match_libsvm(diabetes):
    """scikit-learn's SVR scales C per row by the weight (LIBSVM's C_i = C w_i): the same dual box here; rows of
    weight 0 are absent."""
    X, t = diabetes
    s = np.random.default_rng(0).uniform(0.1, 3.0, len(t))
    C, eps, gamma = 20.0, 5.0, 0.5
    _, _, P_ref, D_ref = sklearn_reference(X, t, C, eps, gamma, s)
    kw = dict(loss=epsilon_insensitive(eps), C=C, kernel=rbf(gamma), tol=1e-10, dtype=F64)
    r = svmopt.solve(X, t, sample_weight=s, **kw)
    assert r.status == Status.CONVERGED
    assert abs(float(r.primal_objective) - D_ref) <= 1e-6 * abs(D_ref) and float(r.dual_objective) <= P_ref
    s[:20] = 0.0
    zero = svmopt.solve(X, t, sample_weight=s, **kw)
    drop = svmopt.solve(X[20:], t[20:], sample_weight=s[20:], **kw)
    assert not np.isin(np.arange(20), zero.extras["support"]).any()
    assert abs(float(zero.primal_objective) - float(drop.primal_objective)) <= 1e-8 * float(drop.primal_objective)


def test_resume_and_warm_start(pendigits):
    X, t = pendigits
    kw = dict(loss=epsilon_insensitive(0.05), C=10.0, kernel=rbf(2.0), dtype=F64,
              method=alfpgm(whole=0, pairs=16, cache_size=1.0))
    part = svmopt.solve(X, t, max_iter=5, **kw)
    assert part.status == Status.MAX_ITER
    full = svmopt.solve(X, t, tol=1e-6, **kw)
    resumed = svmopt.solve(X, t, tol=1e-6, init=part, **kw)  # the exact state: alpha and alpha* apart
    assert resumed.status == Status.CONVERGED and resumed.iterations < full.iterations
    assert abs(float(resumed.primal_objective) - float(full.primal_objective)) <= 2e-6 * float(full.primal_objective)
    warm = svmopt.solve(X, t, tol=1e-6, init={"alpha": full.extras["alpha"]}, **kw)  # alpha - alpha* only
    assert warm.status == Status.CONVERGED and warm.iterations < full.iterations / 10


def test_what_alfpgm_refuses(diabetes):
    X, t = diabetes
    with pytest.raises(svmopt.MissingCapability, match="diagonal"):  # the L2-loss SVR: not LIBSVM's dual
        svmopt.solve(X, t, loss=squared_epsilon_insensitive(1.0), kernel=rbf(0.5), method=alfpgm)
    with pytest.raises(svmopt.MissingCapability, match="intercept"):
        svmopt.solve(X, t, loss=epsilon_insensitive(1.0), kernel=rbf(0.5), method=alfpgm, fit_intercept=False)
