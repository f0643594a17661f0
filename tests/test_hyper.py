"""Learning through the solve: C by implicit gradients (optax), and the bilevel example."""
import numpy as np
import pytest

import svmopt
from svmopt.hyper import learn_C
from svmopt.losses import squared_hinge
from references import load, pm


def _split(n):
    X, y = load("a9a")
    idx = np.random.default_rng(0).permutation(X.shape[0])[: 2 * n]
    X, y = np.asarray(X[idx].toarray()), pm(y[idx])
    return X[:n], y[:n], X[n:], y[n:]


def test_learn_C_lowers_the_validation_loss():
    Xt, yt, Xv, yv = _split(400)
    C, trace = learn_C(Xt, yt, Xv, yv, C0=1.0, steps=8, dtype="float64", tol=1e-7)
    assert np.all(np.diff(trace["loss"][:4]) < 0) and C != 1.0


@pytest.mark.slow
def test_learn_C_finds_the_grid_optimum_of_the_validation_loss():
    """Gradient steps on log C reach the C that a grid search of plain solves picks (independent)."""
    Xt, yt, Xv, yv = _split(800)
    C, trace = learn_C(Xt, yt, Xv, yv, C0=1.0, steps=30, dtype="float64", tol=1e-8)
    grid = np.exp(np.linspace(np.log(1e-3), np.log(10.0), 41))

    def vloss(c):
        r = svmopt.solve(Xt, yt, C=c, loss=squared_hinge, tol=1e-8, dtype="float64")
        return float(np.mean(np.logaddexp(0, -yv * (Xv @ np.asarray(r.w) + float(r.b)))))

    values = np.array([vloss(c) for c in grid])
    best = grid[np.argmin(values)]
    assert trace["loss"][-1] < trace["loss"][0]
    assert abs(np.log(C) - np.log(best)) <= 0.2  # within a grid step or two of the best C
    assert vloss(C) <= values.min() * (1 + 1e-3)
