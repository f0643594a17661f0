"""Every entry point is a facade over one plan, one loop and one stage runner: the same problem
solved through any of them reaches the same optimum with the same status as the plain solve
(grid vs one solve per C, path vs cold solves, one-vs-rest vs the binary solves, one-vs-one vs the
binary kernel solves on each pair's rows, traced vs eager, the estimator vs solve), and the
hand-over takes the same decision for a problem solved alone and inside a batch."""
import warnings

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import svmopt
from svmopt.kernels import rbf
from svmopt.losses import hinge, logistic, squared_hinge
from svmopt.result import Status
from svmopt.solvers import alfpgm, alm

F64 = jnp.float64
from references import load

TOL = 1e-8  # float64 certified gaps: two certified answers agree to about this in objective


def _same(a, b, rel=5 * TOL):
    a, b = float(a), float(b)
    assert abs(a - b) <= rel * max(abs(a), abs(b)), (a, b)


@pytest.fixture(scope="module")
def heart():
    X, y = load("heart_scale")
    return X, y


@pytest.mark.parametrize("loss", [hinge, squared_hinge])
def test_a_grid_solves_what_one_solve_per_C_solves(heart, loss):
    X, y = heart
    Cs = [0.1, 1.0, 10.0]
    tol = TOL if loss is squared_hinge else 1e-6  # (dual CD's float64 passes stall short of 1e-8 at C = 10)
    kw = dict(loss=loss, dtype=F64, tol=tol, intercept_scaling=1.0)
    grid = svmopt.solve(X, y, C=Cs, **kw)
    for k, c in enumerate(Cs):
        one = svmopt.solve(X, y, C=c, **kw)
        assert int(grid.status[k]) == int(one.status) == Status.CONVERGED
        _same(grid.primal_objective[k], one.primal_objective, rel=5 * tol)
        assert int(grid.iterations[k]) == int(one.iterations)


def test_a_path_solves_what_cold_solves_solve(heart):
    X, y = heart
    Cs = np.array([4.0, 0.25, 1.0])
    kw = dict(loss=logistic, dtype=F64, tol=TOL)
    path = svmopt.path(X, y, C=Cs, **kw)
    assert list(path.extras["order"]) == [1, 2, 0]
    for k, c in enumerate(Cs):
        one = svmopt.solve(X, y, C=float(c), **kw)
        assert int(path.status[k]) == int(one.status) == Status.CONVERGED
        _same(path.primal_objective[k], one.primal_objective)


def test_one_vs_rest_solves_the_binary_problems(heart):
    X, y = heart
    y3 = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.5, 7, y).astype(int)
    kw = dict(loss=squared_hinge, dtype=F64, tol=TOL)
    mc = svmopt.solve_multiclass(X, y3, **kw)
    assert list(mc.classes) == [-1, 1, 7]
    for k, c in enumerate(mc.classes):
        one = svmopt.solve(X, np.where(y3 == c, 1, -1), **kw)
        assert int(mc.status[k]) == int(one.status) == Status.CONVERGED
        _same(mc.primal_objective[k], one.primal_objective)
    # the path of one-vs-rest problems too (the CLI's -C runs it)
    path = svmopt.path(X, y3, C=[1.0], **kw)
    _same(np.asarray(path.primal_objective)[0, 2], mc.primal_objective[2])


def test_one_vs_one_solves_the_binary_kernel_problems(heart):
    X, y = heart
    y3 = np.where(np.asarray(X[:, 0].todense()).ravel() > 0.5, 7, y).astype(int)
    kern = rbf(0.2)
    ovo = svmopt.solve_multiclass(X, y3, strategy="ovo", kernel=kern, dtype=F64, tol=1e-6)
    for p, (i, j) in enumerate(np.asarray(ovo.pairs)):
        rows = np.flatnonzero((y3 == ovo.classes[i]) | (y3 == ovo.classes[j]))
        yb = np.where(y3[rows] == ovo.classes[i], 1, -1)
        one = svmopt.solve(X[rows], yb, kernel=kern, method=alfpgm, dtype=F64, tol=1e-6)
        assert int(ovo.status[p]) == int(one.status) == Status.CONVERGED
        _same(ovo.primal_objective[p], one.primal_objective, rel=3e-6)


def test_a_traced_solve_solves_what_an_eager_one_solves(heart):
    X, y = heart
    Xd, yd = jnp.asarray(X.toarray()), jnp.asarray(y)
    kw = dict(loss=squared_hinge, dtype=F64, tol=TOL)
    eager = svmopt.solve(Xd, yd, C=2.0, **kw)
    traced = jax.jit(lambda C: svmopt.solve(Xd, yd, C=C, **kw))(2.0)
    assert int(traced.status) == int(eager.status) == Status.CONVERGED
    _same(traced.primal_objective, eager.primal_objective)
    grid = jax.jit(lambda C: svmopt.solve(Xd, yd, C=C, **kw))(jnp.asarray([2.0, 3.0]))
    _same(grid.primal_objective[0], eager.primal_objective)


def test_the_estimator_solves_what_solve_solves(heart):
    from svmopt.estimators import SVMClassifier

    X, y = heart
    est = SVMClassifier(loss="hinge", C=3.0, dtype="float64", tol=TOL).fit(X, y)
    one = svmopt.solve(X, y, loss=hinge, C=3.0, dtype=F64, tol=TOL)
    assert est.result_.status == one.status == Status.CONVERGED
    _same(est.result_.primal_objective, one.primal_objective)


def test_the_hand_over_decides_alike_alone_and_in_a_batch(heart):
    """heart_scale, the hinge with LIBLINEAR's bias feature: at C = 100 dual CD's 300 passes leave a
    gap above 0.1 and Jacobi-scaled alm takes over; at C = 10 the gap is within 0.1 and dual CD goes
    on to 1000 passes before alm takes over. Alone, in a C grid and as classes of a one-vs-rest
    problem (the same labels), each takes the same stages with the same iteration counts."""
    X, y = heart
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        alone = {C: svmopt.solve(X, y, C=C, intercept_scaling=1.0) for C in (10.0, 100.0)}
        grid = svmopt.solve(X, y, C=[1.0, 10.0, 100.0], intercept_scaling=1.0)
        ovr = svmopt.solve_multiclass(X, y, C=100.0, intercept_scaling=1.0)
    steps = lambda stages: [(s["method"], s["iterations"]) for s in stages]  # noqa: E731
    for k, C in ((1, 10.0), (2, 100.0)):
        assert steps(grid.extras["stages"][k]) == steps(alone[C].extras["stages"])
        assert int(grid.status[k]) == int(alone[C].status)
        assert int(grid.iterations[k]) == int(alone[C].iterations)
    assert [s["method"] for s in alone[100.0].extras["stages"]] == ["dual_cd", "alm"]
    assert [s["method"] for s in alone[10.0].extras["stages"]] == ["dual_cd", "dual_cd", "alm"]
    # one-vs-rest with two classes: the class "+1 against the rest" is the binary problem itself
    assert steps(ovr.extras["stages"][1]) == steps(alone[100.0].extras["stages"])
