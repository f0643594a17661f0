"""Projected Newton on the box dual (``dual_newton``) against LIBLINEAR on wide real data (news20:
more features than rows), its float32 certificate near a hard margin, and auto's hand-over to it."""
import warnings
from functools import lru_cache

import numpy as np
import pytest
import scipy.sparse as sp

import jax.numpy as jnp

import svmopt
from svmopt.losses import MissingCapability, hinge, least_squares, squared_hinge
from svmopt.regularizers import l1
from svmopt.result import Status
from svmopt.solvers import dual_cd, dual_newton
import references
from references import load, objective

F64 = jnp.float64


@lru_cache(maxsize=None)
def wide():
    """news20 (20 classes, 62,061 features): every 5th row, 3000 rows, classes 1-10 against 11-20."""
    X, y = load("news20")
    return X[::5][:3000].tocsr(), np.where(y[::5][:3000] <= 10, 1.0, -1.0)


@lru_cache(maxsize=None)
def flipped():
    """``wide`` with its first three rows repeated under the opposite label: Q = Y X X^T Y is
    singular along each pair while the dual gradient there is -2."""
    X, y = wide()
    return sp.vstack([X, X[:3]]).tocsr(), np.r_[y, -y[:3]]


def liblinear(data, p, C):
    """LIBLINEAR's optimum (LinearSVC: dual CD, its pass rule to 1e-10, seeded order) with the bias
    feature -B 1, evaluated in numpy float64."""
    return _liblinear(data, p, C)


@lru_cache(maxsize=None)
def _liblinear(data, p, C):
    from sklearn.svm import LinearSVC

    X, y = {"wide": wide, "flipped": flipped}[data]()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = LinearSVC(loss={1: "hinge", 2: "squared_hinge"}[p], dual=True, tol=1e-10, max_iter=1_000_000, C=C,
                      intercept_scaling=1.0, random_state=0).fit(X, y)
    w, b = m.coef_.ravel().astype(float), float(m.intercept_[0])
    return objective(X, y, w, b, C, p) + 0.5 * b * b


def P64(X, y, r, C, p):
    """The bias-feature objective of a result's (w, b), in numpy float64."""
    b = float(r.b)
    return objective(X, y, np.asarray(r.w, float), b, C, p) + 0.5 * b * b


@pytest.mark.parametrize("p, C", [pytest.param(1, 1.0, marks=pytest.mark.slow), (1, 100.0),
                                  pytest.param(2, 1.0, marks=pytest.mark.slow)],
                         ids=["hinge-C1", "hinge-C100", "sqhinge-C1"])  # the slow two: 10-12 s each from zero
def test_certifies_liblinears_optimum_on_wide_data(p, C):
    """From zero, float64 to a 1e-8 gap: LIBLINEAR's optimum to 1e-6 (its own pass rule leaves it
    up to 1e-7 above ours at C = 100), the reported P is the numpy objective of (w, b), and D is
    below the optimum. float32 at the default tol certifies too, within tol of it."""
    X, y = wide()
    loss = {1: hinge, 2: squared_hinge}[p]
    ref = liblinear("wide", p, C)
    r = svmopt.solve(X, y, loss=loss, C=C, intercept_scaling=1.0, method=dual_newton(tol=1e-8), dtype=F64)
    assert r.status == Status.CONVERGED and r.method == "dual_newton"
    P = P64(X, y, r, C, p)
    assert P == pytest.approx(float(r.primal_objective), rel=1e-10)
    assert abs(P - ref) <= 1e-6 * ref and float(r.dual_objective) <= ref * (1 + 1e-9)
    # D is the numpy dual objective of the returned alpha (the method's own certificate, 2026-11-25)
    Z = sp.hstack([X, np.ones((X.shape[0], 1))]).tocsr()
    D = references.dual_certificate(Z, y, np.asarray(r.extras["alpha"], float), C, p, fit_intercept=False)
    assert float(r.dual_objective) == pytest.approx(D, rel=1e-10)
    r32 = svmopt.solve(X, y, loss=loss, C=C, intercept_scaling=1.0, method=dual_newton)
    assert r32.status == Status.CONVERGED
    assert ref * (1 - 1e-6) <= P64(X, y, r32, C, p) <= ref * (1 + 1.1e-3)


@pytest.mark.parametrize("dtype", [F64, jnp.float32])
def test_rows_repeated_with_opposite_labels(dtype):
    """Three rows repeated under the other label (news20-bin has two such pairs): warm from 30 dual CD
    passes, the damped Newton systems keep CG finite and the run certifies LIBLINEAR's optimum (with
    damping=0 the float64 run STALLED after 20 steps: CG's direction ran off along the pairs)."""
    X, y = flipped()
    C = 10.0
    ref = liblinear("flipped", 1, C)
    tol = 1e-6 if dtype == F64 else 1e-3
    with pytest.warns(svmopt.ConvergenceWarning):
        first = svmopt.solve(X, y, C=C, intercept_scaling=1.0, method=dual_cd, max_iter=30, dtype=dtype)
    assert first.status == Status.MAX_ITER
    r = svmopt.solve(X, y, C=C, intercept_scaling=1.0, method=dual_newton(tol=tol), dtype=dtype, init=first)
    assert r.status == Status.CONVERGED and r.iterations < 50
    assert ref * (1 - 1e-6) <= P64(X, y, r, C, 1) <= ref * (1 + tol + 1e-6)


def test_float32_certificate_near_a_hard_margin():
    """A separable Gaussian (500 x 2000) at C = 100: in float32 the support vectors' margins of
    v = X^T (alpha y) sit at 1 +- rounding and C times their hinge terms swamped P (STALLED at a
    relative gap of 1.8e-2 with P(v) as the primal point). The primal point s v with the best s
    certifies at tol 1e-3, and its P is within tol of the float64 optimum (LinearSVC, pass rule 1e-10).
    At 1e-4 the float32 rounding of the support vectors' margins (C times ~500 hinge terms at the kink)
    could move P by more than tol (its rounding bound), until a multiple 1 + O(u) of w lifts them past the
    kink (``loop.lift``): CONVERGED, and P within 1e-4 of the optimum; float64 certifies it too."""
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(0)
    X = rng.standard_normal((500, 2000))
    y = np.sign(X @ rng.standard_normal(2000) + 20 * rng.standard_normal(500))
    C = 100.0
    m = LinearSVC(loss="hinge", dual=True, tol=1e-10, max_iter=1_000_000, C=C, intercept_scaling=1.0,
                  random_state=0).fit(X, y)
    wl, bl = m.coef_.ravel(), float(m.intercept_[0])
    ref = objective(X, y, wl, bl, C, 1) + 0.5 * bl * bl
    r = svmopt.solve(X, y, C=C, intercept_scaling=1.0, method=dual_newton(tol=1e-3), dtype="float32")
    assert r.status == Status.CONVERGED and float(r.extras["scale"]) > 1.0
    assert ref * (1 - 1e-6) <= P64(X, y, r, C, 1) <= ref * (1 + 1e-3 + 1e-6)
    r = svmopt.solve(X, y, C=C, intercept_scaling=1.0, method=dual_newton(tol=1e-4), dtype="float32")
    assert r.status == Status.CONVERGED and float(r.relative_gap) + float(r.extras["rounding"]) <= 1e-4
    assert ref * (1 - 1e-6) <= P64(X, y, r, C, 1) <= ref * (1 + 1e-4 + 1e-6)
    r = svmopt.solve(X, y, C=C, intercept_scaling=1.0, method=dual_newton(tol=1e-4), dtype="float64")
    assert r.status == Status.CONVERGED
    assert ref * (1 - 1e-6) <= P64(X, y, r, C, 1) <= ref * (1 + 1e-4 + 1e-6)


def test_runtime_numbers_do_not_recompile_and_a_resume_goes_on():
    """C, tol, damping and the caps are runtime numbers; a run cut at 4 steps and resumed from its
    alpha goes on (no more steps in all than one run, but for the rounding of v = X^T (alpha y)
    formed afresh at the resume instead of updated in place) to the same certified optimum."""
    X, y = wide()
    kw = dict(C=10.0, intercept_scaling=1.0, dtype=F64)
    whole = svmopt.solve(X, y, method=dual_newton(tol=1e-6), **kw)
    n0 = svmopt.compile_count()
    svmopt.solve(X, y, method=dual_newton(tol=1e-5, damping=1e-7, cg_iters=300), C=3.0, intercept_scaling=1.0,
                 dtype=F64)
    assert svmopt.compile_count() == n0
    with pytest.warns(svmopt.ConvergenceWarning, match="wide data"):
        part = svmopt.solve(X, y, method=dual_newton(tol=1e-6), max_iter=4, **kw)
    assert part.status == Status.MAX_ITER
    rest = svmopt.solve(X, y, method=dual_newton(tol=1e-6), init=part, **kw)
    assert rest.status == Status.CONVERGED and part.iterations + rest.iterations <= whole.iterations + 3
    assert float(rest.primal_objective) == pytest.approx(float(whole.primal_objective), rel=2e-6)


def test_max_cg_stops_the_run_where_its_cg_steps_reach_it():
    """``max_cg`` (auto's cap where X X^T is nearly singular) is a runtime number: a run capped at half the
    CG steps an uncapped one took ends MAX_ITER after fewer Newton steps, its CG count at or past the cap
    (a step's CG runs to its own end), with no new compile, and its warning names the cap; a cap that is no
    positive integer is refused."""
    X, y = wide()
    kw = dict(C=10.0, intercept_scaling=1.0, dtype=F64)
    whole = svmopt.solve(X, y, method=dual_newton(tol=1e-6, max_cg=10**6), **kw)
    assert whole.status == Status.CONVERGED
    n0 = svmopt.compile_count()
    cap = int(whole.extras["cg_steps"]) // 2
    with pytest.warns(svmopt.ConvergenceWarning, match=f"max_cg = {cap} "):  # the warning names the cap
        part = svmopt.solve(X, y, method=dual_newton(tol=1e-6, max_cg=cap), **kw)
    assert svmopt.compile_count() == n0
    assert part.status == Status.MAX_ITER and part.iterations < whole.iterations
    assert cap <= int(part.extras["cg_steps"]) < int(whole.extras["cg_steps"])
    for bad in (0, 2.5):
        with pytest.raises(ValueError, match="max_cg"):
            svmopt.solve(X, y, method=dual_newton(max_cg=bad), **kw)


@pytest.mark.parametrize("p, dtype, tol", [(2, F64, 1e-8), (2, jnp.float32, 1e-3),
                                           # the hinge in float32: fast siblings on other data below
                                           # (small alphas, the scaled-gradient fallback)
                                           pytest.param(1, jnp.float32, 1e-3, marks=pytest.mark.slow),
                                           pytest.param(1, F64, 1e-8, marks=pytest.mark.slow)])
def test_free_intercept_keeps_y_alpha_zero_and_numpy_recomputes_its_gap(p, dtype, tol):
    """With a free intercept (y^T alpha = 0 kept: CG projected onto y_F^T d = 0, the clipped arc shifted
    back onto it, b the minimiser of P(s v, b)), from dual CD's passes on the bias-feature problem, on
    wide news20 (C = 1): CONVERGED, and the gap recomputed in numpy float64 from the returned (w, b) and
    alpha -- the primal objective and the dual objective of alpha (tests/references.py, which checks
    alpha's box and y^T alpha = 0) -- is within tol."""
    X, y = wide()
    r = svmopt.solve(X, y, loss={1: hinge, 2: squared_hinge}[p], method=dual_newton(warm="dual_cd", tol=tol),
                     dtype=dtype)
    assert r.status == Status.CONVERGED and r.method == "dual_newton" and int(r.extras["warm_passes"]) > 0
    P, D = references.free_intercept_gap(X, y, r, 1.0, p)
    assert D <= P * (1 + 1e-12) and P - D <= tol * P


def test_free_intercept_certifies_small_alphas_in_float32():
    """bench.suite seed 0's g03 (1,377 x 3,107 sparse, standardized, hinge, C = 2.55, free intercept): a
    near hard margin, every alpha ~ 5e-4, below the eps-active threshold of sqrt(u) (1 + max |alpha|) that
    dual_newton used, where it stalled at a gap of 0.12 in float32. With eps relative to max |alpha|:
    CONVERGED in float32, and numpy's float64 gap from (w, b) and alpha is within tol."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench import suite

    spec = next(s for s in suite.problems(0, "small") if s.name.startswith("g03"))
    X, y = suite.make(spec)[:2]
    y = np.where(y == y.max(), 1.0, -1.0)
    r = svmopt.solve(X, y, loss=hinge, C=spec.C, method=dual_newton(warm="dual_cd"), dtype=jnp.float32)
    assert r.status == Status.CONVERGED and r.iterations <= 30
    P, D = references.free_intercept_gap(X, y, r, spec.C, 1)
    assert D <= P * (1 + 1e-12) and P - D <= r.tol * P


def test_free_intercept_falls_back_to_the_gradient_where_the_newton_arc_does_not_descend():
    """news20 as bench.ovr splits it (unit rows, 12,748 x 62,061), class 15 against the rest, hinge, C = 1,
    free intercept, float32: after 8 steps the Newton arc (clipped, its eps-active rows on a gradient step,
    shifted back onto y^T alpha = 0) was no descent direction, and the run ended STALLED at a gap of 1.1e-2
    (float64 alike). The step then searches along the scaled gradient projected onto y_F^T d = 0:
    CONVERGED, and numpy's float64 gap from (w, b) and alpha is within tol."""
    import sys
    from pathlib import Path

    from conftest import DATA

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from bench.ovr import load as ovr_load

    X, y = ovr_load("news20", str(DATA))[:2]
    y = np.where(y == 15, 1.0, -1.0)
    r = svmopt.solve(X, y, loss=hinge, method=dual_newton(warm="dual_cd"), dtype=jnp.float32)
    assert r.status == Status.CONVERGED
    P, D = references.free_intercept_gap(X, y, r, 1.0, 1)
    assert D <= P * (1 + 1e-12) and P - D <= r.tol * P


def test_what_it_refuses_and_warns_about():
    X, y = wide()
    with pytest.raises(ValueError, match="warm must be None or 'dual_cd'"):
        svmopt.solve(X, y, method=dual_newton(warm="alm"))
    with pytest.raises(MissingCapability, match="free intercept where the dual is bounded below by 0"):
        svmopt.solve(X, y, method=dual_newton, loss=least_squares)
    with pytest.raises(MissingCapability, match="l2-regularized"):
        svmopt.solve(X, y, method=dual_newton, reg=l1, intercept_scaling=1.0)
    with pytest.raises(ValueError, match="damping"):
        svmopt.solve(X, y, method=dual_newton(damping=-1.0), intercept_scaling=1.0)
    Xh, yh = load("heart_scale")  # 270 x 13: more rows than features
    with pytest.warns(UserWarning, match="at least as many rows as features"):
        r = svmopt.solve(Xh, yh, method=dual_newton, intercept_scaling=1.0, max_iter=5)
    assert r.status != Status.CONVERGED or float(r.gap) <= 1e-3 * abs(float(r.primal_objective))


def test_auto_hands_wide_data_over_to_dual_newton():
    """The default solve on wide data: 100 dual CD passes, then dual_newton from their alpha (C = 100:
    dual CD alone needs thousands); certified at LIBLINEAR's optimum. A C grid hands its uncertified
    C values over to it too, after as many passes."""
    X, y = wide()
    C = 100.0
    ref = liblinear("wide", 1, C)
    r = svmopt.solve(X, y, C=C, intercept_scaling=1.0, history=True)
    assert r.status == Status.CONVERGED and r.method == "dual_newton" and "dual_newton took over" in r.extras["auto"]
    assert [(s["method"], s["iterations"]) for s in r.extras["stages"]][0] == ("dual_cd", 100)
    assert [s["method"] for s in r.extras["stages"]] == ["dual_cd", "dual_newton"]
    assert ref * (1 - 1e-6) <= P64(X, y, r, C, 1) <= ref * (1 + 1.1e-3)
    assert float(r.dual_objective) <= ref * (1 + 1e-6)
    grid = svmopt.solve(X, y, C=np.array([0.01, C]), intercept_scaling=1.0)
    assert np.all(np.asarray(grid.status) == Status.CONVERGED) and grid.method == "dual_cd+dual_newton"
    assert list(grid.extras["handover"]) == ["C=100"] and grid.extras["handover"]["C=100"]["passes"] == 100
    assert ref * (1 - 1e-6) <= P64(X, y, type("R", (), dict(w=grid.w[1], b=grid.b[1])), C, 1) <= ref * (1 + 1.1e-3)
