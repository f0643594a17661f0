"""Restarted Halpern PDHG (``pdhg``) against independent optima: the LP-SVM (hinge + l1) solved as a
linear program by scipy's HiGHS in float64, LIBSVM's C-SVC (hinge + l2, free intercept) and
LIBLINEAR's -s 5 (squared hinge + l1). The LP-SVM is the problem no other method certifies: their
dual points do not identify the LP's margin rows (docs/auto.md)."""
import warnings
import numpy as np
import pytest
import scipy.sparse as sp

import jax.numpy as jnp

import svmopt
from svmopt.losses import hinge, logistic, lp_hinge, squared_hinge
from svmopt.losses import MissingCapability
from svmopt.regularizers import l1, l2
from svmopt.result import Status
from svmopt.solvers import auto, pdhg
from references import load, lp_primal, lp_svm, pm


@pytest.mark.parametrize("name,C", [("heart_scale", 1.0), ("heart_scale", 100.0), ("a1a", 1.0), ("diabetes_scale", 10.0)])
def test_lp_svm_certifies_at_the_lp_optimum(name, C):
    """float64, tol 1e-6: CONVERGED; the dual below HiGHS's optimum, the primal within tol of it, and the
    reported primal the LP objective of the returned (w, b) recomputed in numpy."""
    X, y = load(name)
    r = svmopt.solve(X, y, C=C, loss=hinge, reg=l1, method=pdhg(tol=1e-6), dtype=jnp.float64)
    ref = lp_svm(name, C)
    w, b = np.asarray(r.w, np.float64), float(r.b)
    P = lp_primal(sp.csr_matrix(X, dtype=np.float64), pm(y), w, b, C)
    assert r.status == Status.CONVERGED, (r.status, float(r.relative_gap))
    assert float(r.primal_objective) == pytest.approx(P, rel=1e-10)
    assert float(r.dual_objective) <= ref * (1 + 1e-9)
    assert (P - ref) / ref <= 1e-6 * (1 + 1e-6)
    assert (P - ref) / ref >= -1e-9


@pytest.mark.parametrize("name", ["heart_scale", pytest.param("a1a", marks=pytest.mark.slow)])
def test_lp_svm_float32_and_no_intercept(name):
    """float32 at the default tol 1e-3 (with the rounding bound of the status contract), and the LP
    without an intercept: the float64 objective of the returned model within tol of HiGHS's."""
    X, y = load(name)
    for fit in (True, False):
        r = svmopt.solve(X, y, C=1.0, loss=hinge, reg=l1, method=pdhg, dtype=jnp.float32, fit_intercept=fit)
        ref = lp_svm(name, 1.0, fit)
        P = lp_primal(sp.csr_matrix(X, dtype=np.float64), pm(y), np.asarray(r.w, np.float64), float(r.b), 1.0)
        assert r.status == Status.CONVERGED
        assert (P - ref) / ref <= 1e-3 + 1e-5, (fit, P, ref)


def test_auto_picks_pdhg_for_the_lp_svm():
    X, y = load("heart_scale")
    r = svmopt.solve(X, y, C=1.0, loss=hinge, reg=l1)
    assert r.method == "pdhg" and r.status == Status.CONVERGED
    assert "linear program" in r.extras["auto"]


def test_hinge_l2_free_intercept_matches_libsvm():
    """C-SVC (hinge, l2, free intercept): LIBSVM's linear-kernel optimum, tol 1e-6 in float64."""
    from libsvm import svmutil

    X, y = load("heart_scale")
    Xd, yy = np.asarray(sp.csr_matrix(X).todense()), pm(y)
    prob = svmutil.svm_problem(list(yy), [{j + 1: v for j, v in enumerate(row) if v != 0} for row in Xd])
    m = svmutil.svm_train(prob, "-s 0 -t 0 -c 1 -e 1e-12 -h 0 -q")
    coef = np.array(m.get_sv_coef())[:, 0]
    idx = np.array(m.get_sv_indices()) - 1
    sign = 1.0 if m.get_labels()[0] == 1 else -1.0
    wl, bl = sign * Xd[idx].T @ coef, -sign * m.rho[0]
    ref = 0.5 * wl @ wl + np.maximum(1.0 - yy * (Xd @ wl + bl), 0.0).sum()
    r = svmopt.solve(X, y, C=1.0, loss=hinge, reg=l2, method=pdhg(tol=1e-6), dtype=jnp.float64)
    assert r.status == Status.CONVERGED
    assert float(r.dual_objective) <= ref * (1 + 1e-9)
    assert (float(r.primal_objective) - ref) / ref <= 1e-6 * (1 + 1e-6)


def test_squared_hinge_l1_matches_liblinear():
    """squared hinge + l1 without intercept: LIBLINEAR's -s 5 (through LinearSVC) run to 1e-10."""
    from sklearn.svm import LinearSVC

    X, y = load("heart_scale")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LinearSVC(penalty="l1", loss="squared_hinge", dual=False, C=1.0, fit_intercept=False, tol=1e-10,
                      max_iter=100000, random_state=0).fit(X, pm(y))
    wl = m.coef_.ravel()
    Xc, yy = sp.csr_matrix(X, dtype=np.float64), pm(y)
    ref = np.abs(wl).sum() + (np.maximum(1.0 - yy * (Xc @ wl), 0.0) ** 2).sum()
    r = svmopt.solve(X, y, C=1.0, loss=squared_hinge, reg=l1, method=pdhg(tol=1e-6), dtype=jnp.float64,
                     fit_intercept=False)
    assert r.status == Status.CONVERGED
    assert float(r.dual_objective) <= ref * (1 + 1e-9)
    assert (float(r.primal_objective) - ref) / ref <= 1e-6 * (1 + 1e-6)


def test_a_grid_of_C_is_one_program_and_each_certifies():
    """C as a vector (vmapped): each problem as certified as alone, and a second grid of other C
    values reuses the compiled program (C is a leaf)."""
    X, y = load("heart_scale")
    Cs = np.array([0.1, 1.0, 10.0])
    r = svmopt.solve(X, y, C=Cs, loss=hinge, reg=l1, method=pdhg(tol=1e-5), dtype=jnp.float64)
    for i, C in enumerate(Cs):
        ref = lp_svm("heart_scale", float(C))
        assert Status(int(r.status[i])) == Status.CONVERGED
        assert float(r.dual_objective[i]) <= ref * (1 + 1e-9)
        assert (float(r.primal_objective[i]) - ref) / ref <= 1e-5 * (1 + 1e-6)
    before = svmopt.compile_count()
    svmopt.solve(X, y, C=Cs * 2.0, loss=hinge, reg=l1, method=pdhg(tol=1e-4, step_size=0.8, omega0=3.0),
                 dtype=jnp.float64)
    assert svmopt.compile_count() == before


def test_what_it_refuses():
    X, y = load("heart_scale")
    with pytest.raises(MissingCapability, match="box-plus-diagonal"):
        svmopt.solve(X, y, loss=logistic, reg=l1, method=pdhg)
    with pytest.raises(ValueError, match="step_size"):
        svmopt.solve(X, y, loss=hinge, reg=l1, method=pdhg(step_size=-1.0))


def test_auto_hands_a_capped_alm_over_to_pdhg():
    """The hinge with l2 and a free intercept goes to Jacobi-scaled alm; on bench.certify's seeded
    mushrooms-like set at C = 100 it ended MAX_ITER at its 5000-iteration cap (gap 2.9e-3). Now pdhg
    takes over and certifies; the certificate is recomputed in numpy."""
    import sys
    from pathlib import Path

    from svmopt.plan import prepare

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` is a top-level folder
    from bench.certify import onehot

    X, y = onehot()
    pb, _, _ = prepare(X, y, loss=hinge, reg=l2)
    first, _ = auto.choose(pb)
    assert first.name == "alm" and auto.handover(pb, first).method.name == "pdhg"
    pb, _, _ = prepare(X, y, loss=lp_hinge(1.1), reg=l2)  # alm, but no box dual: nothing to hand over to
    assert auto.choose(pb)[0].name == "alm" and auto.handover(pb, auto.choose(pb)[0]) is None
    r = svmopt.solve(X, y, C=100.0, loss=hinge, reg=l2)
    assert r.method == "pdhg" and r.status == Status.CONVERGED, r.extras.get("auto")
    assert [s["method"] for s in r.extras["stages"]] == ["alm", "pdhg"]
    # the certificate recomputed in numpy float64 from the returned (w, b) and alpha: alpha feasible
    # (0 <= alpha <= C, y^T alpha = 0 up to rounding), P(w, b) - D(alpha) within tol of P
    Xc, w, b = sp.csr_matrix(X, dtype=np.float64), np.asarray(r.w, np.float64), float(r.b)
    a = np.asarray(r.extras["alpha"], np.float64)
    assert a.min() >= 0 and a.max() <= 100.0 * (1 + 1e-6) and abs(a @ y) <= 1e-4 * a.sum()
    v = Xc.T @ (a * y)
    D = a.sum() - 0.5 * v @ v
    P = 0.5 * w @ w + 100.0 * np.maximum(1.0 - y * (Xc @ w + b), 0.0).sum()
    assert (P - D) / P <= 1e-3 + 1e-4, ((P - D) / P, float(r.relative_gap))


def test_inside_jit_the_same_certified_answer():
    """solve(method=pdhg) traced inside the caller's jit: the objective of its w within the certified gaps
    of the eager solve (hinge, l2, free intercept, heart_scale, float64)."""
    import jax

    X, y = load("heart_scale")
    Xd, yy = np.asarray(sp.csr_matrix(X).todense()), pm(y)
    kw = dict(loss=hinge, reg=l2, method=pdhg(tol=1e-6), dtype=jnp.float64)
    eager = svmopt.solve(Xd, yy, C=0.5, **kw)
    w, b, status = jax.jit(lambda C: (lambda r: (r.w, r.b, r.status))(svmopt.solve(Xd, yy, C=C, **kw)))(0.5)
    P = 0.5 * np.dot(w, w) + 0.5 * np.maximum(1.0 - yy * (Xd @ np.asarray(w) + float(b)), 0.0).sum()
    assert int(status) == Status.CONVERGED and eager.status == Status.CONVERGED
    assert abs(P - float(eager.primal_objective)) <= 2e-6 * abs(P)


def test_a_capped_run_warns_and_names_float64():
    X, y = load("heart_scale")
    with pytest.warns(svmopt.ConvergenceWarning, match=r"max_iter.*float64"):
        r = svmopt.solve(X, y, C=100.0, loss=hinge, reg=l1, method=pdhg, max_iter=64)
    assert r.status == Status.MAX_ITER
