"""Support vector regression on the same core: the epsilon-insensitive losses of the residual
(LIBLINEAR's -s 11 / 12 / 13) and squared error, solved by dual CD (LIBLINEAR's SVR update: the
coordinate step soft-thresholded by epsilon), newton and alm, each with a certified gap, at
LIBLINEAR's optimum on real data (scikit-learn's bundled diabetes set, and a seeded generator)."""
import numpy as np
import pytest

import jax.numpy as jnp

import svmopt
from svmopt.losses import epsilon_insensitive, hinge, squared_epsilon_insensitive, squared_error
from svmopt.result import RegressionResult, Status
from svmopt.solvers import alm, dual_cd, newton, pdhg

F64 = jnp.float64


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes

    X, t = load_diabetes(return_X_y=True)
    return X / np.abs(X).max(axis=0), t


def _generated(seed=0, n=400, d=12):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * rng.uniform(0.1, 3.0, d)
    t = X @ rng.standard_normal(d) + 2.0 + rng.standard_t(3, n)
    return X, t


def _objective(X, t, w, b, p, eps, C, bias_regularized):
    r = np.maximum(np.abs(t - (X @ w + b)) - eps, 0.0)
    return 0.5 * (w @ w + (b * b if bias_regularized else 0.0)) + C * np.sum(r ** p)


def _liblinear(X, t, s, C, eps):
    from liblinear import liblinearutil as ll

    m = ll.train(ll.problem(t, X), ll.parameter(f"-s {s} -c {C} -p {eps} -B 1 -e 1e-10 -q"))
    w, b = m.get_decfun()
    return np.asarray(w), float(b)


@pytest.mark.parametrize("s, p", [(13, 1), (12, 2), (11, 2)], ids=["s13", "s12", "s11"])
@pytest.mark.parametrize("data", ["diabetes", pytest.param("generated", marks=pytest.mark.slow)])
def test_the_optimum_is_liblinears(diabetes, s, p, data):
    X, t = diabetes if data == "diabetes" else _generated()
    C, eps = (1.0, 5.0) if data == "diabetes" else (0.5, 0.3)
    w0, b0 = _liblinear(X, t, s, C, eps)
    ref = _objective(X, t, w0, b0, p, eps, C, True)
    loss = epsilon_insensitive(eps) if p == 1 else squared_epsilon_insensitive(eps)
    tight = dict(method=dual_cd(tol=1e-9), max_iter=20000) if s != 11 else dict(tol=1e-9)
    r = svmopt.solve(X, t, loss=loss, C=C, dtype=F64, intercept_scaling=1.0, **tight)
    assert isinstance(r, RegressionResult) and r.status == Status.CONVERGED
    P = _objective(X, t, np.asarray(r.w), float(r.b), p, eps, C, True)
    # never above LIBLINEAR's objective; equal to it where LIBLINEAR reached the optimum (diabetes:
    # the generated set's -s 13 stops at LIBLINEAR's 1000-iteration cap 8e-4 above ours, certified)
    assert P <= ref * (1 + 1e-6) and (data == "generated" or abs(P - ref) <= 1e-6 * ref)
    assert float(r.dual_objective) <= min(ref, P) * (1 + 1e-9)  # a certificate: D below the optimum
    # float32 at the default tol: within it of LIBLINEAR's optimum
    r32 = svmopt.solve(X, t, loss=loss, C=C, intercept_scaling=1.0)
    assert r32.status == Status.CONVERGED
    best = min(ref, P)
    assert best * (1 - 1e-5) <= _objective(X, t, np.asarray(r32.w, float), float(r32.b), p, eps, C, True) \
        <= best * (1 + 1.1e-3)


@pytest.mark.parametrize("method", [dual_cd, newton, alm, pdhg], ids=["dual_cd", "newton", "alm", "pdhg"])
def test_every_method_that_takes_the_loss_certifies_the_same_optimum(diabetes, method):
    X, t = diabetes
    loss = squared_epsilon_insensitive(2.0)
    kw = dict(loss=loss, C=2.0, dtype=F64, intercept_scaling=1.0)
    ref = svmopt.solve(X, t, tol=1e-10, **kw)
    r = svmopt.solve(X, t, method=method(tol=1e-8), **kw)
    assert r.status == Status.CONVERGED and r.method == method.name
    assert abs(float(r.primal_objective) - float(ref.primal_objective)) <= 1e-7 * float(ref.primal_objective)


def test_a_free_intercept_and_squared_error(diabetes):
    """The free (unregularized) intercept, the default: alm for the L1 loss, newton for the L2 ones;
    squared error is ridge regression, checked against its normal equations."""
    X, t = diabetes
    r = svmopt.solve(X, t, loss=squared_error, C=3.0, dtype=F64, tol=1e-10)
    A = np.hstack([X, np.ones((X.shape[0], 1))])
    reg = np.diag([1.0] * X.shape[1] + [0.0])
    sol = np.linalg.solve(reg + 2 * 3.0 * A.T @ A, 2 * 3.0 * A.T @ t)  # grad of 1/2|w|^2 + C |t - A v|^2
    assert r.status == Status.CONVERGED
    v = np.concatenate([np.asarray(r.w), [float(r.b)]])
    P = lambda v: 0.5 * v[:-1] @ v[:-1] + 3.0 * np.sum((t - A @ v) ** 2)  # noqa: E731
    assert abs(P(v) - P(sol)) <= 1e-9 * P(sol)
    np.testing.assert_allclose(v, sol, atol=1e-5 * np.abs(sol).max())
    l1 = svmopt.solve(X, t, loss=epsilon_insensitive(5.0), C=1.0, dtype=F64, tol=1e-5)
    assert l1.status == Status.CONVERGED and l1.method == "alm"
    assert 0.0 < l1.score(X, t) < 1.0 and np.allclose(l1.predict(X), X @ np.asarray(l1.w) + float(l1.b))


def test_l1_svr_with_a_free_intercept_to_1e8(diabetes):
    """The epsilon-insensitive loss with a free intercept: pdhg's saddle point takes the targets and
    epsilon in its dual step (a soft threshold). Certified to 1e-8 in float64; its objective, recomputed
    in numpy, between alm's certified dual and primal at 1e-5."""
    X, t = diabetes
    kw = dict(loss=epsilon_insensitive(5.0), C=1.0, dtype=F64)
    r = svmopt.solve(X, t, method=pdhg(tol=1e-8), **kw)
    a = svmopt.solve(X, t, method=alm(tol=1e-5), **kw)
    assert r.status == Status.CONVERGED and a.status == Status.CONVERGED
    P = _objective(X, t, np.asarray(r.w), float(r.b), 1, 5.0, 1.0, False)
    assert P == pytest.approx(float(r.primal_objective), rel=1e-10)
    assert float(a.dual_objective) * (1 - 1e-12) <= P <= float(a.primal_objective)
    assert float(r.dual_objective) <= float(a.primal_objective)


def test_regression_errors_name_the_fix(diabetes):
    X, t = diabetes
    with pytest.raises(ValueError, match="NaN or inf"):
        svmopt.solve(X, np.where(t > 100, np.nan, t), loss=epsilon_insensitive())
    with pytest.raises(TypeError, match="epsilon"):
        epsilon_insensitive("wide")
    with pytest.raises(ValueError, match="epsilon"):
        squared_epsilon_insensitive(-1.0)
    with pytest.raises(ValueError, match="classes"):  # a classification loss on real targets
        svmopt.solve(X, t, loss=hinge)
