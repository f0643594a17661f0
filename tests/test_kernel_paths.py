"""Each compiled CPU kernel against its pure-JAX path on real data: the CSR products (``svmopt._csr``),
one dual CD pass (``svmopt._dcd`` against dual_cd's XLA serial pass) and newglmnet's inner solve
(``svmopt._l1cd``). The pure side always runs (against numpy where there is nothing to compare it
with); the compiled side is skipped where its kernel is not available."""
import importlib

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import svmopt
from svmopt import _csr, _dcd, _l1cd
from svmopt.losses import hinge, logistic, squared_hinge
from svmopt.regularizers import l1, l2
from svmopt.result import Status
from svmopt.plan import prepare
from svmopt.solvers import dual_cd, newglmnet
from svmopt.solvers.base import Start
from references import load, pm

F64 = jnp.float64
dcd_passes = importlib.import_module("svmopt.solvers.dcd_passes")  # (dual_cd's XLA passes)


def maxdiff(a, b):
    return float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))))


# ---- (a) the CSR products -----------------------------------------------------------------------

@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_csr_products_ffi_equal_xla(dtype):
    """a9a: X w, X^T u (one vector and a stack of 3) and newton's X^T (D (X v + c)) with rows of
    D = 0, through the custom calls and the pure-XLA segment sums: equal to rounding; the XLA path
    against scipy in float64."""
    X, y = load("a9a")
    op = svmopt.as_operator(X, dtype, layout="sparse")
    arr = (op.data, op.indices, op.indptr, op.row_ids)
    n, d = op.shape
    rng = np.random.default_rng(0)
    w, W = rng.normal(size=d), rng.normal(size=(d, 3))
    u, U = rng.normal(size=n), rng.normal(size=(n, 3))
    D = np.where(rng.random(n) < 0.3, 0.0, rng.random(n))
    cast = lambda a: jnp.asarray(a, dtype)  # noqa: E731
    run = {impl: dict(mv=_csr.matvec(*arr, cast(w), impl=impl), mvK=_csr.matvec(*arr, cast(W), impl=impl),
                      rmv=_csr.rmatvec(*arr, cast(u), d, impl=impl), rmvK=_csr.rmatvec(*arr, cast(U), d, impl=impl),
                      hvp=_csr.hvp(*arr, cast(w), cast(D), 0.5, impl=impl))
           for impl in ("xla", "ffi") if impl == "xla" or _csr.ffi_available()}
    Xs, A = X.astype(float), abs(X.astype(float))
    hq, hqa = D * (Xs @ w + 0.5), D * (A @ abs(w) + 0.5)
    # each result with the sum of the absolute values of its terms: its rounding scales with that
    want = dict(mv=(Xs @ w, A @ abs(w)), mvK=(Xs @ W, A @ abs(W)), rmv=(Xs.T @ u, A.T @ abs(u)),
                rmvK=(Xs.T @ U, A.T @ abs(U)), hvp=((Xs.T @ hq, hq.sum()), (A.T @ hqa, hqa.sum())))
    rtol = 1e-13 if dtype == "float64" else 1e-5

    def flat(v):
        return np.concatenate([np.ravel(np.asarray(a, float)) for a in (v if isinstance(v, tuple) else (v,))])

    for key, (ref, size) in want.items():
        tol = rtol * flat(size)
        assert np.all(np.abs(flat(run["xla"][key]) - flat(ref)) <= tol), key
        if "ffi" in run:
            assert np.all(np.abs(flat(run["ffi"][key]) - flat(run["xla"][key])) <= tol), key
    if "ffi" not in run:
        pytest.skip("the compiled CSR products are not available: the XLA path checked against scipy only")


# ---- (b) one dual CD pass -----------------------------------------------------------------------

@pytest.mark.parametrize("loss", [hinge, squared_hinge], ids=["L1", "L2"])
def test_dual_cd_compiled_pass_equals_the_xla_pass(loss, monkeypatch):
    """a9a, float64, three passes from alpha = 0 with the same seed: the compiled pass and dual_cd's
    XLA serial pass, the XLA pass drawing its order as the kernel does (SplitMix64 Fisher-Yates of
    the pass's key bits, ``_l1cd.permutation``), so both visit the rows in one order. The third pass
    shrinks (finite Mbar / mbar from the second), the orders still agree while every row is active.
    Same w, alpha, kept rows and bounds to rounding; w = X^T (alpha y) for the XLA pass."""
    X, y = load("a9a")
    pb = prepare(X, y, loss=loss, reg=l2, fit_intercept=False, dtype=F64, bucket=False)[0]
    monkeypatch.setattr(dcd_passes, "_random_order",
                        lambda key, n: _l1cd.permutation(jax.random.bits(key, (2,), jnp.uint32), n))

    init = jax.jit(lambda m, pb, start: m.init(pb, start))
    step = jax.jit(lambda m, pb, st: m.step(pb, st))
    runs = {}
    for impl in ("xla", "ffi"):
        m = dual_cd(impl=impl, seed=3).canonical(pb.dtype)
        if impl == "ffi" and not m.native(pb):
            continue
        assert m.native(pb) == (impl == "ffi")
        st = init(m, pb, Start(jnp.zeros(pb.d, F64), jnp.zeros((), F64), jnp.zeros(pb.n, F64),
                               jnp.asarray(0, jnp.int32), m.aux_template(pb)))
        runs[impl] = []
        for _ in range(3):
            st = step(m, pb, st)
            runs[impl].append(st)
    last = runs["xla"][-1]
    a = np.asarray(last.alpha)
    np.testing.assert_allclose(np.asarray(last.w), X.T @ (a * pm(y)), rtol=0, atol=1e-11 * np.abs(a).max())
    if "ffi" not in runs:
        pytest.skip("the compiled dual CD pass is not available: the XLA pass checked alone")
    assert not np.all(np.asarray(runs["ffi"][-1].active))  # the third pass did shrink
    for k, (p, q) in enumerate(zip(runs["ffi"], runs["xla"])):
        assert maxdiff(p.w, q.w) <= 1e-12 * np.abs(np.asarray(p.w)).max(), k
        assert maxdiff(p.alpha, q.alpha) <= 1e-12, k
        np.testing.assert_array_equal(np.asarray(p.active), np.asarray(q.active))
        for f in ("Mbar", "mbar", "crit"):
            a, b = float(getattr(p, f)), float(getattr(q, f))
            assert a == b or abs(a - b) <= 1e-12 * abs(a), (k, f, a, b)


# ---- (c) newglmnet's inner solve ----------------------------------------------------------------

def splitmix_permutation(bits, n):
    """The kernel's Fisher-Yates order (svmopt/_ffi_module.h) in Python integers."""
    mask = (1 << 64) - 1
    s = (int(bits[0]) << 32) | int(bits[1])
    order = list(range(n))
    for k in range(n, 1, -1):
        s = (s + 0x9E3779B97F4A7C15) & mask
        z = ((s ^ (s >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        j = (((z ^ (z >> 31)) >> 32) * k) >> 32
        order[k - 1], order[j] = order[j], order[k - 1]
    return order


@pytest.mark.parametrize("bits", [(0, 0), (0x9E3779B9, 0x85EBCA6B), (0xFFFFFFFF, 0xFFFFFFFF), (12345, 678)])
def test_permutation_is_splitmix64_fisher_yates(bits):
    """The pure path's generator (SplitMix64 in uint32 pairs) against the kernel's in 64-bit integers."""
    got = np.asarray(jax.jit(_l1cd.permutation, static_argnums=1)(jnp.asarray(bits, jnp.uint32), 300))
    np.testing.assert_array_equal(got, splitmix_permutation(bits, 300))


def test_columns_ffi_equal_xla():
    """a9a with svmopt's padding entries (explicit zeros in the last row): the counting sort and the
    pure path's sort give the same CSC arrays."""
    X, _ = load("a9a")
    op = svmopt.as_operator(X, F64, layout="sparse", nnz_bucket=lambda k: k + 37)
    cx = jax.jit(_l1cd.columns_xla)(op)
    assert int(cx["ptr"][-1]) == op.data.shape[0]
    if not _l1cd.available():
        pytest.skip("the compiled l1 kernel is not built")
    cf = jax.jit(lambda op: _l1cd.columns(op, "ffi"))(op)
    for k in ("vals", "idx", "ptr"):
        np.testing.assert_array_equal(np.asarray(cf[k]), np.asarray(cx[k]), err_msg=k)


def inner_inputs(name, loss, intercept, C=1.0):
    """(X, w, G, D): a sparse w (a third of it nonzero) and, in numpy, the gradient of the smooth part
    and the curvature there (the intercept last in w and G)."""
    X, y = load(name)
    rng = np.random.default_rng(0)
    w = np.where(rng.random(X.shape[1]) < 1 / 3, 0.3 * rng.standard_normal(X.shape[1]), 0.0)
    b = 0.1 if intercept else 0.0
    yy = pm(y)
    z = yy * (X @ w + b)
    if loss is logistic:
        s = 1.0 / (1.0 + np.exp(z))
        lp, lpp = -s, s * (1.0 - s)
    else:
        lp, lpp = -2.0 * np.maximum(1.0 - z, 0.0), 2.0 * (z < 1.0)
    u = C * yy * lp
    G, D = X.T @ u, C * lpp
    if intercept:
        w, G = np.append(w, b), np.append(G, u.sum())
    return X, w, G, D


@pytest.mark.parametrize("name, loss, intercept, layout, cap", [
    ("a9a", logistic, False, "sparse", 100),
    ("a9a", logistic, False, "sparse", 3),
    ("heart_scale", squared_hinge, True, "sparse", 100),
    ("heart_scale", logistic, True, "dense", 100),
], ids=["a9a-log", "a9a-log-3passes", "heart-sq+b", "heart-log+b-dense"])
def test_l1_inner_solve_ffi_equals_xla(name, loss, intercept, layout, cap):
    """float64, the same inputs (some coordinates inactive, as after outer shrinking), the same seed:
    the kernel and the pure path take the same number of passes and return the same w + d and X d to
    1e-10 (relative to their size) and the same last sum of violations; the pure path's X d is
    X (w + d - w) in numpy. With a cap of 3 passes the last pass widens to every active coordinate."""
    X, w, G, D = inner_inputs(name, loss, intercept)
    m = w.shape[0]
    op = svmopt.as_operator(X, F64, layout=layout)
    rng = np.random.default_rng(1)
    active = ~((w == 0) & (rng.random(m) < 0.2))  # some coordinates at 0 left out, as outer shrinking does
    if intercept:
        active[-1] = True
    viol = np.abs(G).sum()
    params = jnp.asarray([1.0, 1e-12, 1e-9 * viol, cap], F64)
    bits = jnp.asarray([0x9E3779B9 + 2, 0x85EBCA6B], jnp.uint32)
    args = (jnp.asarray(w), jnp.asarray(G), jnp.asarray(D))
    solve = jax.jit(_l1cd.solve, static_argnames="impl")
    wx, qx, sx = solve(*args, jax.jit(_l1cd.columns_xla)(op), jnp.asarray(active), params, bits, impl="xla")
    Xa = np.hstack([X.toarray(), np.ones((X.shape[0], 1))]) if intercept else X
    step = np.asarray(wx) - w
    assert np.all(step[~active] == 0)
    np.testing.assert_allclose(np.asarray(qx), Xa @ step, rtol=0, atol=1e-10 * max(1.0, np.abs(np.asarray(qx)).max()))
    assert 1 <= float(sx[0]) <= cap
    if not _l1cd.available():
        pytest.skip("the compiled l1 kernel is not built: the pure path checked alone")
    wf, qf, sf = solve(*args, _l1cd.columns(op, "ffi"), jnp.asarray(active), params, bits, impl="ffi")
    assert float(sf[0]) == float(sx[0])
    assert float(sx[1]) == pytest.approx(float(sf[1]), rel=1e-8, abs=1e-12 * viol)
    assert maxdiff(wx, wf) <= 1e-10 * max(1.0, np.abs(np.asarray(wf)).max())
    assert maxdiff(qx, qf) <= 1e-10 * max(1.0, np.abs(np.asarray(qf)).max())


@pytest.mark.parametrize("name", ["heart_scale", pytest.param("a1a", marks=pytest.mark.slow)])
@pytest.mark.parametrize("loss", [logistic, squared_hinge], ids=["log", "sq"])
def test_newglmnet_pure_path_certifies_the_kernels_optimum(name, loss):
    """float64, tol 1e-8, no intercept: newglmnet(impl="xla") certifies, and with the kernel both
    runs' objectives agree within the tolerance and each run's dual bound lies below the other's
    primal objective."""
    X, y = load(name)
    kw = dict(loss=loss, reg=l1, C=1.0, fit_intercept=False, dtype=F64)
    rx = svmopt.solve(X, y, method=newglmnet(tol=1e-8, impl="xla"), **kw)
    assert rx.status == Status.CONVERGED and rx.method == "newglmnet"
    assert float(rx.relative_gap) <= 1e-8
    if not _l1cd.available():
        pytest.skip("the compiled l1 kernel is not built: the pure path checked alone")
    rf = svmopt.solve(X, y, method=newglmnet(tol=1e-8, impl="ffi"), **kw)
    assert rf.status == Status.CONVERGED
    Px, Pf = float(rx.primal_objective), float(rf.primal_objective)
    assert abs(Px - Pf) <= 1e-8 * Pf
    assert float(rx.dual_objective) <= Pf * (1 + 1e-12) and float(rf.dual_objective) <= Px * (1 + 1e-12)


def test_newglmnet_impl_choice(monkeypatch):
    """impl="auto" runs the kernel where it is available, else the pure path; impl="ffi" is refused
    where the kernel is not available; an unknown impl is refused."""
    X, y = load("heart_scale")
    pb = prepare(X, y, loss=logistic, reg=l1, dtype=F64)[0]
    assert newglmnet.native(pb) == _l1cd.available() and not newglmnet(impl="xla").native(pb)
    newglmnet(impl="xla").validate(pb)
    with pytest.raises(ValueError, match="impl must be"):
        newglmnet(impl="cuda").validate(pb)
    monkeypatch.setattr(_l1cd, "available", lambda: False)
    assert not newglmnet.native(pb)
    newglmnet.validate(pb)  # a missing kernel: the pure path, not a refusal
    with pytest.raises(ValueError, match="impl='ffi'"):
        newglmnet(impl="ffi").validate(pb)
