"""method="auto" (the default): a certified method for every loss / regularizer pair it accepts."""
import numpy as np
import pytest

import jax.numpy as jnp

import svmopt
from svmopt import driver
from svmopt.losses import (MissingCapability, from_function, hinge, least_squares, logistic, lp_hinge,
                           smoothed_hinge, squared_hinge)
from svmopt.regularizers import elastic_net, l1, l2, smoothed_l1
from svmopt.result import Status
from svmopt.solve import prepare
from svmopt.solvers import auto
from references import linearsvc, load, pm

LOSSES = [hinge, squared_hinge, lp_hinge(1.5), lp_hinge(3.0), logistic, least_squares, smoothed_hinge(0.5),
          from_function(lambda m: jnp.logaddexp(0.0, -2.0 * m), name="steep_logistic")]
REGS = [l2, l1, elastic_net(0.5), smoothed_l1(0.1)]


def test_every_pair_gets_a_method_that_certifies():
    """The choice accepts the problem and can certify a duality gap (no UNCERTIFIED by design)."""
    X, y = load("heart_scale")
    seen = set()
    for loss in LOSSES:
        for reg in REGS:
            pb, _, _ = prepare(X, y, loss=loss, reg=reg)
            method, why = auto.choose(pb)
            method.validate(pb)
            assert driver.has_dual(method, pb), (loss, reg, method.name)
            assert why and method.tol == auto.tol
            smooth = loss.is_differentiable and reg.is_smooth
            assert method.name == ("newton" if smooth else "alm"), (loss, reg)
            if method.name == "alm":  # Jacobi steps exactly where the (w, b) step is a least-squares one
                assert method.precondition == (reg.quadratic is not None)
            seen.add(method.name)
    assert seen == {"newton", "alm"}


def test_default_solve_is_auto_and_matches_liblinear():
    """No method given: auto runs, says what and why, and certifies LIBLINEAR's optimum at tol 1e-3."""
    X, y = load("a1a")
    for p, loss, name in ((1, hinge, "alm"), (2, squared_hinge, "newton")):
        ref = linearsvc("a1a", p, bias=1.0)[0]
        r = svmopt.solve(X, y, loss=loss, intercept_scaling=1.0)
        assert r.status == Status.CONVERGED and r.method == name and r.extras["auto"]
        assert ref * (1 - 1e-5) <= float(r.primal_objective) <= ref * (1 + 1e-3)
        same = svmopt.solve(X, y, loss=loss, intercept_scaling=1.0, method="auto", tol=1e-3)
        assert same.method == name and float(same.primal_objective) == float(r.primal_objective)


def test_other_entry_points_default_to_auto():
    X, y = load("heart_scale")
    mc = svmopt.solve_multiclass(X, y, loss=squared_hinge)
    assert mc.method == "newton" and mc.extras["auto"]
    pa = svmopt.path(X, y, C=[0.1, 1.0], loss=squared_hinge)
    assert pa.method == "newton" and pa.converged
    est = svmopt.SVMClassifier(loss="squared_hinge").fit(X, y)
    assert est.get_params()["method"] == "auto" and est.result_.method == "newton"
    from svmopt.kernels import rbf

    k = svmopt.solve(X, y, kernel=rbf(0.2))
    assert k.method == "alfpgm" and k.status == Status.CONVERGED


def test_auto_refuses_method_parameters_and_names_what_is_missing():
    X, y = load("heart_scale")
    with pytest.raises(TypeError, match="auto.*takes only tol"):
        svmopt.solve(X, y, rho=1.1)
    with pytest.raises(ValueError, match="tol"):
        svmopt.solve(X, y, tol=2.0)
    # a smooth loss with neither a dual nor a prox: nothing certifies it, the first refusal is shown
    with pytest.raises(MissingCapability, match="dual"):
        svmopt.solve(X, y, loss=lp_hinge(1.5).smoothed(0.1), reg=l2)
    assert pm(y).size == X.shape[0]
