"""dual_cd's compiled CPU pass (svmopt/_dcd_ffi.cc) against the pure-XLA pass, LIBLINEAR and float64.

The compiled pass and the XLA pass draw their random orders differently, so they follow
different trajectories to the same optimum: they are compared through certified objectives,
and the compiled pass alone through invariants that hold for every order (w = X^T (alpha y),
the box, a dual that never decreases, identical runs for dense and sparse storage of X).
"""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path
from test_dual_cd import dual_value, primal, reference

import jax
import jax.numpy as jnp

import svmopt
from svmopt import _dcd
from svmopt.losses import hinge, squared_hinge
from svmopt.plan import prepare
from svmopt.solvers import auto, dual_cd

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu" or not _dcd.available(),
                                reason="the compiled dual CD pass runs on the CPU backend, where it is built")


def solve(X, y, loss, method, **kw):
    kw.setdefault("dtype", "float64")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return svmopt.solve(X, y, loss=loss, method=method, fit_intercept=False, **kw)


@pytest.fixture(scope="module")
def a9a_part():
    """3000 rows of a9a (sparse, 14 entries a row) with LIBLINEAR's bias feature."""
    X, y = svmopt.load_svmlight(data_path("a9a"), n_features=123)
    return X[:3000], y[:3000]


@pytest.fixture(scope="module")
def a9a_part_hinge_optimum(a9a_part):
    """The float64 optimum of the hinge with the bias feature on a9a_part (LinearSVC, tol 1e-10)."""
    X, y = a9a_part
    return reference(X, y, "hinge", bias=1.0)


def with_bias(X):
    return sp.hstack([X, np.ones((X.shape[0], 1))]).tocsr()


def test_the_default_serial_pass_is_the_compiled_one_on_cpu(a9a_part):
    X, y = a9a_part
    pb = prepare(X, y, loss=hinge, reg=svmopt.regularizers.l2, fit_intercept=False)[0]
    assert dual_cd.native(pb) and not dual_cd(impl="xla").native(pb)
    assert not dual_cd(variant="block").native(pb) and not dual_cd(variant="online").native(pb)


@pytest.mark.parametrize("loss, tol", [pytest.param(hinge, 1e-5, marks=pytest.mark.slow), (squared_hinge, 1e-9)],
                         ids=["L1", "L2"])  # L1 (12 s): its fast sibling is test_sample_weights_and_zero_weights
def test_compiled_and_xla_passes_certify_the_liblinear_optimum(a9a_part, loss, tol):
    """Both passes, float64, on 3000 a9a rows with the bias feature: certified within tol (the hinge's
    tail is long: 1e-7 took 17,000 passes), the certificate recomputed in numpy from alpha, and
    within max(tol, 1e-7) of LIBLINEAR -s 1 (L2) at -e 1e-10 / LinearSVC (L1) at tol 1e-10 (its
    random order seeded: unseeded, a run once stopped 5.8e-5 above the optimum; seeds 0-4 take
    65,000-150,000 of its 200,000 passes and agree to 1e-12)."""
    X, y = a9a_part
    ref = reference(X, y, loss.name, bias=1.0)
    Xb = with_bias(X)
    runs = {impl: solve(X, y, loss, dual_cd(eps=1e-4, impl=impl), intercept_scaling=1.0, tol=tol, max_iter=30000)
            for impl in ("ffi", "xla")}
    for impl, r in runs.items():
        assert r.status == svmopt.Status.CONVERGED, impl
        assert float(r.relative_gap) <= tol, impl
        P = float(r.primal_objective)
        D = dual_value(Xb, y, np.asarray(r.extras["alpha"]), loss.name)
        assert D <= ref * (1 + 1e-12) and P - D <= tol * P * (1 + 1e-9), impl
        assert abs(P - ref) <= max(tol, 1e-7) * ref, impl
        assert float(r.primal_objective) == pytest.approx(
            primal(X, y, np.asarray(r.w), float(r.b), loss.name, bias=1.0), rel=1e-12)
    assert float(runs["ffi"].primal_objective) == pytest.approx(float(runs["xla"].primal_objective), rel=2 * tol)


def test_float32_compiled_pass(a9a_part, a9a_part_hinge_optimum):
    """float32 data: the compiled f32 kernel certifies 1e-4 and lands within 1e-4 of the float64
    optimum (LinearSVC's, shared with the auto test below: no float64 dual CD compile here)."""
    X, y = a9a_part
    ref = a9a_part_hinge_optimum
    r = solve(X, y, hinge, dual_cd, intercept_scaling=1.0, tol=1e-4, dtype="float32")
    assert r.w.dtype == np.float32 and r.status == svmopt.Status.CONVERGED
    assert abs(r.primal_objective - ref) <= 1e-4 * ref
    assert float(r.gap) >= -1e-5 * ref  # weak duality survives float32 rounding


def test_one_pass_invariants(a9a_part):
    """One pass of the kernel from alpha = 0, float64: w = X^T (alpha y), 0 <= alpha <= C, the dual
    increased, every coordinate kept (nothing can be shrunk with Mbar = inf), and M, m bracket 0;
    then a pass with shrinking bounds drops coordinates at 0 whose gradient exceeds Mbar."""
    X, y = a9a_part
    Xb = with_bias(X)
    n, d = Xb.shape
    q = np.asarray(Xb.multiply(Xb).sum(1)).ravel()
    coef = np.stack([np.zeros(n), np.zeros(n), np.ones(n), 1.0 / q, np.ones(n), np.zeros(n)], 1)
    op = svmopt.operators.SparseOperator.from_scipy(Xb, jnp.float64)
    rows = _dcd.rows(op, jnp.asarray(y))
    inf = jnp.asarray(np.inf)
    w, a, kept, M, m = jax.jit(_dcd.pass_)(jnp.zeros(d), jnp.zeros(n), jnp.asarray(coef), rows, jnp.ones(n, bool),
                                           inf, -inf, jnp.array([1, 2], jnp.uint32))
    w, a = np.asarray(w), np.asarray(a)
    np.testing.assert_allclose(w, Xb.T @ (a * y), rtol=0, atol=1e-12 * np.abs(w).max())
    assert a.min() >= 0 and a.max() <= 1 and np.count_nonzero(a) > 100
    assert dual_value(Xb, y, a, "hinge") > 0  # D(0) = 0 and every exact coordinate step raises it
    assert bool(np.all(kept)) and float(M) >= 0 >= float(m)
    # second pass with LIBLINEAR's bounds from the first: some coordinates at 0 with G > Mbar leave
    w2, a2, kept2, _, _ = jax.jit(_dcd.pass_)(jnp.asarray(w), jnp.asarray(a), jnp.asarray(coef), rows, jnp.ones(n, bool),
                                              jnp.asarray(0.1), jnp.asarray(-0.1), jnp.array([3, 4], jnp.uint32))
    out = ~np.asarray(kept2)
    assert 0 < out.sum() < n
    assert np.all(np.asarray(a2)[out] == np.asarray(a)[out])  # a shrunk coordinate does not move
    assert dual_value(Xb, y, np.asarray(a2), "hinge") >= dual_value(Xb, y, a, "hinge")
    assert np.all((np.asarray(a2)[out] == 0) | (np.asarray(a2)[out] == 1))


def test_dense_and_sparse_storage_run_the_same_passes():
    """Same seed, same order: the compiled pass over dense and CSR rows of heart_scale takes the same
    steps (they differ in summation order only): equal iterates mid-run, and the same certified
    optimum at the end."""
    X, y = svmopt.load_svmlight(data_path("heart_scale"), n_features=13)
    runs = {}
    for max_iter in (7, 50000):
        dense, sparse = (solve(X, y, hinge, dual_cd(eps=1e-6), layout=layout, tol=1e-10, max_iter=max_iter)
                         for layout in ("dense", "sparse"))
        runs[max_iter] = dense, sparse
    dense, sparse = runs[7]
    np.testing.assert_allclose(sparse.extras["alpha"], dense.extras["alpha"], rtol=0, atol=1e-10)
    dense, sparse = runs[50000]
    assert dense.status == sparse.status == svmopt.Status.CONVERGED
    assert float(sparse.primal_objective) == pytest.approx(float(dense.primal_objective), rel=1e-10)
    np.testing.assert_allclose(sparse.w, dense.w, rtol=0, atol=1e-6 * np.abs(dense.w).max())


def test_sample_weights_and_zero_weights(a9a_part):
    """Per-sample weights (some 0: those rows keep alpha = 0) on 1500 a9a rows: the compiled and XLA
    passes certify the same optimum, LinearSVC's with the same weights. (The smoothed hinge, a box
    plus a diagonal, runs the compiled pass in test_dual_cd.py::test_smoothed_hinge_per_sample.)"""
    X, y = a9a_part
    X, y = X[:1500], y[:1500]
    s = np.random.default_rng(0).uniform(0.0, 2.0, len(y))
    s[::7] = 0.0
    a, b = (solve(X, y, hinge, dual_cd(eps=1e-4, impl=impl), intercept_scaling=1.0, sample_weight=s, tol=1e-5,
                  max_iter=30000) for impl in ("ffi", "xla"))
    assert a.status == b.status == svmopt.Status.CONVERGED
    assert float(a.primal_objective) == pytest.approx(float(b.primal_objective), rel=2e-5)
    assert np.all(np.asarray(a.extras["alpha"])[s == 0] == 0)
    ref = reference(X, y, "hinge", bias=1.0, sample_weight=s)
    assert abs(a.primal_objective - ref) <= 1e-5 * ref


def test_batched_C_runs_lane_by_lane():
    """C as an array with the compiled pass (vmap runs the custom call once per lane): equal to
    separate solves; new C values, tol and seed do not recompile."""
    X, y = svmopt.load_svmlight(data_path("heart_scale"), n_features=13)
    Cs = np.array([0.5, 2.0])
    batch = solve(X, y, hinge, dual_cd(eps=1e-6), C=Cs, tol=1e-10, max_iter=5000)
    for j, C in enumerate(Cs):
        single = solve(X, y, hinge, dual_cd(eps=1e-6), C=C, tol=1e-10, max_iter=5000)
        np.testing.assert_allclose(batch.w[j], single.w, rtol=0, atol=1e-10)
    n0 = svmopt.compile_count()
    solve(X, y, hinge, dual_cd(eps=1e-5, seed=9), C=3.0, tol=1e-6, max_iter=5000)
    assert svmopt.compile_count() == n0


def test_malformed_row_pointers_are_an_error():
    w, a = jnp.zeros(2), jnp.zeros(2)
    coef = jnp.asarray([[0.0, 0.0, 1.0, 1.0, 1.0, 0.0]] * 2)
    rows = dict(vals=jnp.ones(2), cols=jnp.zeros(2, jnp.int32), ptr=jnp.asarray([0, 2, 1], jnp.int32), y=jnp.ones(2))
    with pytest.raises(Exception, match="malformed CSR row pointers"):
        jax.block_until_ready(jax.jit(_dcd.pass_)(w, a, coef, rows, jnp.ones(2, bool), jnp.asarray(np.inf),
                                                  jnp.asarray(-np.inf), jnp.zeros(2, jnp.uint32)))


def test_column_indices_outside_w_stay_inside_it():
    """Column indices are clamped into [0, d) where the kernel reads them (no clipped copy is
    made): a row whose entries name columns -5 and 7 of a 2-vector reads and writes only w's own
    entries. Row 0 is x = (1, 0) with its entries at columns 0 and -5 (clamped to 1, value 0);
    row 1 has its single entry at column 7 (clamped to 1). From alpha = 0 with the box [0, 1],
    D = 0, Qbar = 1: each row moves alpha to 1 and w to the sum of its clamped rows, (1, 2)."""
    w, a = jnp.zeros(2), jnp.zeros(2)
    coef = jnp.asarray([[0.0, 0.0, 1.0, 1.0, 1.0, 0.0]] * 2)
    rows = dict(vals=jnp.asarray([1.0, 0.0, 2.0]), cols=jnp.asarray([0, -5, 7], jnp.int32),
                ptr=jnp.asarray([0, 2, 3], jnp.int32), y=jnp.ones(2))
    w, a, _, _, _ = jax.jit(_dcd.pass_)(w, a, coef, rows, jnp.ones(2, bool), jnp.asarray(np.inf),
                                        jnp.asarray(-np.inf), jnp.zeros(2, jnp.uint32))
    np.testing.assert_allclose(np.asarray(w), [1.0, 2.0])
    np.testing.assert_allclose(np.asarray(a), [1.0, 1.0])


def test_impl_is_checked():
    X, y = svmopt.load_svmlight(data_path("heart_scale"), n_features=13)
    with pytest.raises(ValueError, match="impl must be"):
        solve(X, y, hinge, dual_cd(impl="c"))
    with pytest.raises(ValueError, match="needs the compiled pass"):
        solve(X, y, hinge, dual_cd(impl="ffi", variant="block"))


def test_auto_runs_the_compiled_dual_cd_for_the_hinge_with_a_bias_feature(a9a_part, a9a_part_hinge_optimum):
    """The default method on the CPU: hinge + l2 + LIBLINEAR's bias feature -> dual_cd (compiled);
    with a free intercept -> alm; squared hinge on tall data -> newton. The dual_cd answer
    certifies the default tol against LinearSVC's optimum."""
    X, y = a9a_part
    r = solve(X, y, hinge, "auto", intercept_scaling=1.0, dtype="float32")
    assert r.method == "dual_cd" and r.status == svmopt.Status.CONVERGED
    ref = a9a_part_hinge_optimum
    assert r.primal_objective - ref <= 1e-3 * ref and r.primal_objective >= ref * (1 - 1e-5)
    free = prepare(X, y, loss=hinge, reg=svmopt.regularizers.l2, fit_intercept=True)[0]
    assert auto.choose(free)[0].name == "alm"
    smooth = prepare(X, y, loss=squared_hinge, reg=svmopt.regularizers.l2, fit_intercept=False)[0]
    assert auto.choose(smooth)[0].name == "newton"
