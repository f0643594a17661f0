"""Data operators: dense and sparse agree with scipy on real data, in float32 and float64."""
import numpy as np
import pytest
import scipy.sparse as sp

import jax
import jax.numpy as jnp

import svmopt
from svmopt import _csr
from svmopt.operators import DenseOperator, SparseOperator, as_operator
from conftest import data_path


@pytest.fixture(scope="module")
def heart():
    X, y = svmopt.load_svmlight(data_path("heart_scale"))
    return X, y


def _ops(X, dtype):
    return {
        "sparse": as_operator(X, dtype, layout="sparse"),
        "dense": as_operator(X, dtype, layout="dense"),
        "dense_blocked": DenseOperator(jnp.asarray(X.toarray(), dtype), block_rows=37),  # 270 rows: ragged tail
    }


@pytest.mark.parametrize("dtype,rtol", [(jnp.float64, 1e-12), (jnp.float32, 1e-5)])
def test_operators_match_scipy(heart, dtype, rtol):
    X, y = heart
    rng = np.random.default_rng(1)
    w = rng.normal(size=X.shape[1])
    u = rng.normal(size=X.shape[0])
    Xd = X.toarray()
    for name, op in _ops(X, dtype).items():
        assert op.dtype == dtype and op.shape == X.shape
        np.testing.assert_allclose(op.matvec(jnp.asarray(w, dtype)), X @ w, rtol=rtol, atol=rtol * 10, err_msg=name)
        np.testing.assert_allclose(op.rmatvec(jnp.asarray(u, dtype)), X.T @ u, rtol=rtol, atol=rtol * 100,
                                   err_msg=name)
        np.testing.assert_allclose(op.row_sq_norms(), (Xd ** 2).sum(1), rtol=rtol, err_msg=name)
        np.testing.assert_allclose(op.row_inf_norms(), np.abs(Xd).max(1), rtol=rtol, err_msg=name)
        # fused pass X^T f(Xw): hinge-gradient coefficients and a loss sum, with a per-row aux array
        yy = jnp.asarray(y, dtype)

        def f(z, yb):
            m = yb * z
            return -yb * (m < 1), jnp.maximum(1 - m, 0)

        g, s = op.fused(jnp.asarray(w, dtype), f, (yy,))
        m = y * (X @ w)
        np.testing.assert_allclose(g, X.T @ (-y * (m < 1)), rtol=rtol, atol=rtol * 100, err_msg=name)
        assert float(s) == pytest.approx(np.maximum(1 - m, 0).sum(), rel=rtol * 10)


def test_operators_are_jittable_pytrees(heart):
    X, _ = heart
    op = as_operator(X, jnp.float64, layout="sparse")
    leaves, tree = jax.tree_util.tree_flatten(op)
    assert all(isinstance(l, jax.Array) for l in leaves)
    f = jax.jit(lambda o, w: o.matvec(w))
    np.testing.assert_allclose(f(op, jnp.ones(13)), X @ np.ones(13), rtol=1e-12)
    assert isinstance(op, SparseOperator) and np.allclose(op.to_scipy().toarray(), X.toarray())


def test_auto_layout_and_bias_column(heart):
    X, _ = heart
    assert isinstance(as_operator(X, jnp.float64), DenseOperator)  # 270 x 13, 96% dense
    wide = sp.random(50, 100_000, density=1e-4, format="csr", random_state=0)
    assert isinstance(as_operator(wide, jnp.float32), SparseOperator)
    op = as_operator(X, jnp.float64, bias_scale=2.5, layout="sparse")
    assert op.shape == (270, 14)
    np.testing.assert_allclose(op.matvec(jnp.eye(14)[13]), np.full(270, 2.5))
    with pytest.raises(ValueError, match="layout"):
        as_operator(X, jnp.float64, layout="diagonal")


def _built_matrix(A, rows, bias, nnz_to, pad_rows):
    """What from_scipy must hold, from scipy alone: A with empty rows up to ``rows``, the bias
    column, duplicates summed; and where the padding's explicit zeros sit."""
    B = sp.csr_matrix(A, copy=True)
    B.sum_duplicates()
    B = sp.vstack([B, sp.csr_matrix((rows - A.shape[0], A.shape[1]))], format="csr")
    if bias is not None:
        B = sp.hstack([B, np.full((rows, 1), bias)], format="csr")
    return B


@pytest.mark.parametrize("case", ["a9a-like", "unsorted+duplicates", "int64+ints", "empty rows", "no pad rows"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sparse_operator_build_matches_scipy(case, dtype, monkeypatch):
    """SparseOperator.from_scipy builds the row bucket, the bias feature and the nnz padding in one
    compiled pass (``build_csr``) where the module is built, in numpy otherwise. Both give the
    same arrays, and they hold scipy's own vstack / hstack / sum_duplicates of X, the padding's
    explicit zeros first in the last rows; the caller's matrix is left as it was."""
    import svmopt.operators as ops

    rng = np.random.default_rng(3)
    A = sp.random(300, 40, density=0.1, format="csr", random_state=4, dtype=np.float64)
    rows, bias, nnz_to, pad_rows = 320, 1.5, None, 20
    if case == "unsorted+duplicates":  # rows reversed within, one entry repeated
        A = sp.csr_matrix((np.r_[A.data, 2.0], np.r_[A.indices, A.indices[0]],
                           np.r_[A.indptr[:1], A.indptr[1:] + 1]), shape=A.shape)
        for r in range(A.shape[0]):
            s, e = A.indptr[r], A.indptr[r + 1]
            A.indices[s:e], A.data[s:e] = A.indices[s:e][::-1].copy(), A.data[s:e][::-1].copy()
        A.has_sorted_indices = False
    elif case == "int64+ints":
        A = sp.csr_matrix((rng.integers(-3, 4, A.nnz), A.indices.astype(np.int64), A.indptr.astype(np.int64)),
                          shape=A.shape)
        bias, nnz_to = None, A.nnz + 1000
    elif case == "empty rows":
        A = A.multiply(sp.csr_matrix(rng.uniform(size=(300, 1)) < 0.5)).tocsr()
        nnz_to = 2 * A.nnz
    elif case == "no pad rows":  # the padding's zeros land in the last real row
        rows, pad_rows, nnz_to = 300, 0, A.nnz + 300 + 7
    before = (A.data.copy(), A.indices.copy(), A.indptr.copy())
    ref = _built_matrix(A, rows, bias, nnz_to, pad_rows)
    built = []
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(ops, "_compiled_build", lambda: None)
        elif ops._compiled_build() is None:
            continue
        op = SparseOperator.from_scipy(A, dtype, nnz_to=nnz_to, pad_rows=pad_rows, bias=bias, rows=rows)
        arrays = [np.asarray(a) for a in (op.data, op.indices, op.row_ids, op.indptr)]
        built.append(arrays)
        data, indices, row_ids, indptr = arrays
        assert op.shape == ref.shape and data.dtype == dtype
        assert len(data) == max(ref.nnz, nnz_to or 0)
        np.testing.assert_array_equal(row_ids, np.repeat(np.arange(rows), np.diff(indptr)))
        np.testing.assert_allclose(op.to_scipy().toarray(), ref.toarray(), rtol=1e-7 if dtype == np.float32 else 0)
        first = rows - max(min(pad_rows, rows), 1)
        for r in range(rows):  # columns strictly increasing after the padding's zeros (rows >= first only)
            cols, vals = indices[indptr[r]:indptr[r + 1]], data[indptr[r]:indptr[r + 1]]
            lead = 0
            if r >= first:
                while lead < len(cols) and vals[lead] == 0 and cols[lead] == 0 and lead < len(cols) - ref[r].nnz:
                    lead += 1
            assert lead == len(cols) - ref[r].nnz and np.all(np.diff(cols[lead:]) > 0), r
    for a, b in zip(*built) if len(built) == 2 else ():
        np.testing.assert_array_equal(a, b)
    for a, b in zip(before, (A.data, A.indices, A.indptr)):
        np.testing.assert_array_equal(a, b)


def test_sparse_operator_build_refuses_a_malformed_matrix():
    A = sp.csr_matrix((np.ones(3), np.array([0, 5, 1], np.int32), np.array([0, 2, 3], np.int32)), shape=(2, 4))
    with pytest.raises(ValueError, match="malformed"):
        SparseOperator.from_scipy(A, jnp.float32, bias=1.0)
    A = sp.csr_matrix((np.ones(3), np.array([0, 2**33, 1], np.int64), np.array([0, 2, 3], np.int64)), shape=(2, 4))
    with pytest.raises(ValueError, match="malformed"):
        SparseOperator.from_scipy(A, jnp.float32)


@pytest.mark.parametrize("source", ["numpy", "numpy-F", "int", "csr"])
def test_dense_operator_from_host_matches_numpy(source):
    """A host X becomes the dense operator in one host pass (cast, zero rows, bias column): equal
    to numpy's own stacking whatever the source's dtype or memory order; a jax array takes the
    device path to the same operator."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(37, 6))
    if source == "int":
        X = rng.integers(-5, 6, size=(37, 6))
    want = np.zeros((45, 7), np.float32)
    want[:37, :6], want[:, 6] = X, 2.5
    src = {"numpy": X, "numpy-F": np.asfortranarray(X), "int": X, "csr": sp.csr_matrix(X)}[source]
    op = as_operator(src, jnp.float32, bias_scale=2.5, layout="dense", rows=45)
    assert isinstance(op, DenseOperator) and op.X.dtype == jnp.float32
    np.testing.assert_array_equal(np.asarray(op.X), want)
    dev = as_operator(jnp.asarray(X, jnp.float32), jnp.float32, bias_scale=2.5, rows=45)
    np.testing.assert_array_equal(np.asarray(dev.X), want)
    with pytest.raises(ValueError, match=r"NaN or inf \(first at row 30\)"):
        bad = np.array(X, np.float64)
        bad[30, 4] = np.inf
        as_operator(sp.csr_matrix(bad) if source == "csr" else bad, jnp.float32, bias_scale=2.5, layout="dense",
                    rows=45)


@pytest.mark.parametrize("bad", [np.nan, -np.inf, 1e39])
@pytest.mark.parametrize("unsorted", [False, True])
def test_sparse_operator_build_refuses_nonfinite_values(bad, unsorted, monkeypatch):
    """The sparse build checks the values in its own pass (solve no longer makes one before it):
    NaN, inf and, for float32, a float64 value beyond its range are refused with solve's message
    naming the first such row, compiled and in numpy, also on the canonicalising retry; 1e39 is
    kept in float64. Through solve on a sparse layout the same error comes out."""
    import svmopt.operators as ops

    A = sp.random(200, 30, density=0.2, format="csr", random_state=5, dtype=np.float64)
    A.data[A.indptr[123] + 1] = bad
    A.data[A.indptr[150]] = bad
    if unsorted:  # row 40's columns reversed: the compiled build's first pass stops there and retries
        s, e = A.indptr[40], A.indptr[41]
        A.indices[s:e], A.data[s:e] = A.indices[s:e][::-1].copy(), A.data[s:e][::-1].copy()
        A.has_sorted_indices = False
    what = "beyond the range of float32" if bad == 1e39 else "NaN or inf"
    for compiled in (True, False):
        if not compiled:
            monkeypatch.setattr(ops, "_compiled_build", lambda: None)
        elif ops._compiled_build() is None:
            continue
        with pytest.raises(ValueError, match=rf"{what} .*first at row 123\)"):
            SparseOperator.from_scipy(A, np.float32, bias=1.0, rows=256)
        if bad == 1e39 and jax.config.jax_enable_x64:
            op = SparseOperator.from_scipy(A, np.float64, bias=1.0, rows=256)
            assert np.asarray(op.data).max() == 1e39
        y = np.where(np.arange(200) % 2, 1.0, -1.0)
        with pytest.raises(ValueError, match=rf"{what} .*first at row 123\)"):
            svmopt.solve(A, y, layout="sparse", max_iter=2)


# ---- the CSR products (svmopt._csr): custom call on CPU when built, pure XLA otherwise ----
# scipy is the reference; "xla" is always tested, the compiled kernel when this checkout has it.
IMPLS = ["xla", pytest.param("ffi", marks=pytest.mark.skipif(
    not _csr.ffi_available(), reason="compiled CSR kernel not built (pip install -e . builds it)"))]


def _awkward():
    """40 x 25 with empty rows 3 and 17, empty columns 0 and 24, one long row."""
    A = sp.random(40, 25, density=0.3, format="lil", random_state=3)
    A[3, :] = 0
    A[17, :] = 0
    A[:, 0] = 0
    A[:, 24] = 0
    A[5, 1:24] = np.arange(1.0, 24.0)
    return sp.csr_matrix(A)


MATRICES = {
    "awkward": _awkward,
    "single_row": lambda: sp.csr_matrix(np.array([[0.0, 1.5, 0.0, -2.0, 0.0, 3.0]])),
    "no_entries": lambda: sp.csr_matrix((3, 4)),
}


def _hinge_parts(z, yb):
    m = yb * z
    return -yb * (m < 1), jnp.maximum(1 - m, 0)


def _all_products(op, w, u, W, U, W40, U40, y):
    """Every way a solver calls the products."""
    return dict(
        matvec=op.matvec(w), rmatvec=op.rmatvec(u),
        XW=op.matvec(W), XtU=op.rmatvec(U),  # a stack of vectors
        XW40=op.matvec(W40), XtU40=op.rmatvec(U40),  # beyond the kernel's compile-time K (32)
        vmap=jax.vmap(op.matvec)(W.T),  # one-vs-rest: vmap over vectors, X shared
        vmap2=jax.vmap(jax.vmap(op.rmatvec))(U.T[:, None]),
        fused=op.fused(w, _hinge_parts, (y,)),
    )


@pytest.mark.parametrize("impl", IMPLS)
def test_csr_products_match_scipy(impl):
    """Every call pattern on three awkward shapes (float64; the first also float32), in one program:
    one compilation, which is what this test spends its time on."""
    tols = {np.float64: 1e-12, np.float32: 1e-5}
    rng = np.random.default_rng(0)
    cases, wants = {}, {}
    for which, make in MATRICES.items():
        A = make()
        n, d = A.shape
        w, u, W, U = rng.normal(size=d), rng.normal(size=n), rng.normal(size=(d, 3)), rng.normal(size=(n, 3))
        W40, U40 = rng.normal(size=(d, 40)), rng.normal(size=(n, 40))
        y = np.where(np.arange(n) % 2 == 0, 1.0, -1.0)
        m = y * (A @ w)
        wants[which] = dict(matvec=A @ w, rmatvec=A.T @ u, XW=A @ W, XtU=A.T @ U, XW40=A @ W40, XtU40=A.T @ U40,
                            vmap=(A @ W).T, vmap2=(A.T @ U).T[:, None],
                            fused=(A.T @ (-y * (m < 1)), np.maximum(1 - m, 0).sum()))
        for dt in tols if which == "awkward" else [np.float64]:
            op = SparseOperator.from_scipy(A, dt, impl=impl)
            cases[which, dt.__name__] = (op,) + tuple(jnp.asarray(a, dt) for a in (w, u, W, U, W40, U40, y))
    got = jax.jit(lambda cs: {k: _all_products(*c) for k, c in cs.items()})(cases)
    for (which, dt_name), out in got.items():
        dt = np.dtype(dt_name).type
        for key, ref in wants[which].items():
            for g, r in zip(jax.tree_util.tree_leaves(out[key]), jax.tree_util.tree_leaves(ref)):
                assert g.dtype == dt, (which, key)
                np.testing.assert_allclose(g, r, rtol=tols[dt], atol=tols[dt] * 10, err_msg=f"{which} {dt_name} {key}")
    op, w = cases["awkward", "float32"][:2]  # outside jit: the primitive's own compiled implementation
    eager = op.matvec(w)
    assert eager.dtype == np.float32
    np.testing.assert_allclose(eager, wants["awkward"]["matvec"], rtol=1e-5, atol=1e-4)
    # vmap over the matrix values: the batching rule's XLA fallback (the same for every impl)
    scaled = jax.vmap(lambda c: SparseOperator(op.data * c, op.indices, op.row_ids, op.indptr, op.shape,
                                               impl).matvec(w))(jnp.asarray([1.0, -2.0], np.float32))
    np.testing.assert_allclose(scaled, np.outer([1.0, -2.0], wants["awkward"]["matvec"]), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("impl", IMPLS)
def test_csr_products_differentiate(impl):
    """grad, jvp and the gradient of a vmapped product in data and the vectors, against central
    finite differences in float64; X^T is the transpose of X (linear_transpose)."""
    A = _awkward()
    op = SparseOperator.from_scipy(A, jnp.float64, impl=impl)
    rng = np.random.default_rng(1)
    args = (op.data, jnp.asarray(rng.normal(size=A.shape[1])), jnp.asarray(rng.normal(size=A.shape[0])))

    def loss(data, w, u):  # nonlinear in both products
        o = SparseOperator(data, op.indices, op.row_ids, op.indptr, op.shape, impl)
        return jnp.sum(jnp.sin(o.matvec(w))) + jnp.sum(jnp.cos(o.rmatvec(u)) * w) \
            + jnp.sum(jnp.tanh(jax.vmap(o.matvec)(jnp.stack([w, 2 * w]))))

    dirs = tuple(jnp.asarray(rng.normal(size=a.shape)) for a in args)
    eps = 1e-6

    @jax.jit
    def probe(a, t):
        grads = jax.grad(loss, argnums=(0, 1, 2))(*a)
        _, jvp = jax.jvp(loss, a, t)
        fd = (loss(*[x + eps * v for x, v in zip(a, t)]) - loss(*[x - eps * v for x, v in zip(a, t)])) / (2 * eps)
        return sum(jnp.vdot(g, v) for g, v in zip(grads, t)), jvp, fd

    along, jvp, fd = probe(args, dirs)
    np.testing.assert_allclose([along, jvp], [fd, fd], rtol=1e-7)
    (t,) = jax.linear_transpose(op.matvec, args[1])(args[2])
    np.testing.assert_allclose(t, A.T @ np.asarray(args[2]), rtol=1e-12)


def test_csr_impl_choice_reaches_the_compiled_program():
    """On CPU the default operator lowers to the custom call when it is built; impl='xla' never does."""
    X = _awkward()
    hlo = lambda op: jax.jit(lambda o, w: o.rmatvec(o.matvec(w))).lower(op, jnp.ones(25)).as_text()  # noqa: E731
    assert "custom_call" not in hlo(SparseOperator.from_scipy(X, jnp.float64, impl="xla"))
    if jax.default_backend() == "cpu" and _csr.ffi_available():
        assert "custom_call @svmopt_csr_matvec_f64" in hlo(as_operator(X, jnp.float64, layout="sparse"))
    with pytest.raises(ValueError, match="impl"):
        SparseOperator.from_scipy(X, jnp.float64, impl="cuda")


def _large():
    """6000 x 700, about 150k entries (enough for the kernel to split a product over XLA's thread pool:
    32k entries per range), with empty rows, a full row, and a dense band of rows that fills a range alone."""
    A = sp.random(6000, 700, density=0.03, format="lil", random_state=5)
    A[100:110, :] = 0
    A[2000, :] = np.linspace(-1.0, 1.0, 700)
    A[5000:5060, :] = sp.random(60, 700, density=0.9, random_state=6).toarray()
    return sp.csr_matrix(A)


@pytest.mark.skipif(not _csr.ffi_available(), reason="compiled CSR kernel not built")
def test_csr_kernel_split_over_threads_matches_scipy():
    """Products large enough to be split by rows over the CPU thread pool (X^T u with one partial sum
    per range): every K path (1, compile-time 3, run-time 40) against scipy in float64, and float32
    within its round-off; the same call twice gives the same bits (the split is fixed, not racy)."""
    A = _large()
    assert A.nnz > 4 * 32768
    n, d = A.shape
    rng = np.random.default_rng(7)
    vecs = dict(w=rng.normal(size=d), u=rng.normal(size=n), W=rng.normal(size=(d, 3)), U=rng.normal(size=(n, 3)),
                W40=rng.normal(size=(d, 40)), U40=rng.normal(size=(n, 40)))
    want = dict(w=A @ vecs["w"], u=A.T @ vecs["u"], W=A @ vecs["W"], U=A.T @ vecs["U"], W40=A @ vecs["W40"],
                U40=A.T @ vecs["U40"])
    prods = jax.jit(lambda op, v: {k: (op.matvec(x) if k[0] == "w" or k[0] == "W" else op.rmatvec(x))
                                   for k, x in v.items()})
    for dt, tol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        op = SparseOperator.from_scipy(A, dt, impl="ffi")
        v = {k: jnp.asarray(x, dt) for k, x in vecs.items()}
        got, again = prods(op, v), prods(op, v)
        for k in want:
            scale = np.abs(want[k]).max()
            np.testing.assert_allclose(got[k], want[k], rtol=tol, atol=tol * scale, err_msg=f"{dt.__name__} {k}")
            np.testing.assert_array_equal(got[k], again[k])
    # a bad column index in the last rows (another range than the first) is still caught
    op = SparseOperator.from_scipy(A, jnp.float64, impl="ffi")
    bad = SparseOperator(op.data, op.indices.at[A.nnz - 3].set(d + 4), op.row_ids, op.indptr, op.shape, "ffi")
    for product, x in ((bad.matvec, jnp.ones(d)), (bad.rmatvec, jnp.ones(n))):
        with pytest.raises(Exception, match="malformed matrix"):
            jax.block_until_ready(product(x))


@pytest.mark.parametrize("impl", IMPLS)
def test_csr_hessian_product_matches_scipy(impl):
    """newton's X^T (D (X v + c)) and sum D (X v + c) in one walk (the custom call skips the rows with
    D_i = 0): against scipy in float64 and float32 on a matrix split over the thread pool, with a
    third of D zero; under vmap over D and v, and its jvp in v and D, against the same formulas; a
    bad column index is reported, not read."""
    A = _large()
    n, d = A.shape
    rng = np.random.default_rng(11)
    v, c = rng.normal(size=d), 0.7
    D = np.where(rng.uniform(size=n) < 1 / 3, 0.0, rng.uniform(0.1, 2.0, n))
    q = D * (A @ v + c)
    for dt, tol in ((np.float64, 1e-12), (np.float32, 2e-5)):
        op = SparseOperator.from_scipy(A, dt, impl=impl)
        z, s = jax.jit(lambda o, v, D: o.hvp(v, D, c))(op, jnp.asarray(v, dt), jnp.asarray(D, dt))
        np.testing.assert_allclose(z, A.T @ q, rtol=tol, atol=tol * np.abs(A.T @ q).max(), err_msg=dt.__name__)
        assert float(s) == pytest.approx(q.sum(), rel=tol * 10, abs=tol * np.abs(q).sum())
    op = SparseOperator.from_scipy(A, np.float64, impl=impl)
    Ds, vs = np.stack([D, np.ones(n)]), np.stack([v, -v])
    zb, sb = jax.vmap(lambda v, D: op.hvp(v, D, c))(jnp.asarray(vs), jnp.asarray(Ds))
    for k in range(2):
        qk = Ds[k] * (A @ vs[k] + c)
        np.testing.assert_allclose(zb[k], A.T @ qk, rtol=1e-12, atol=1e-12 * np.abs(A.T @ qk).max())
        assert float(sb[k]) == pytest.approx(qk.sum(), rel=1e-12)
    dv, dD = rng.normal(size=d), rng.normal(size=n)
    _, (tz, ts) = jax.jvp(lambda v, D: op.hvp(v, D, c), (jnp.asarray(v), jnp.asarray(D)),
                          (jnp.asarray(dv), jnp.asarray(dD)))
    tq = D * (A @ dv) + dD * (A @ v + c)
    np.testing.assert_allclose(tz, A.T @ tq, rtol=1e-12, atol=1e-12 * np.abs(A.T @ tq).max())
    assert float(ts) == pytest.approx(tq.sum(), rel=1e-10)
    if impl == "ffi":
        bad = SparseOperator(op.data, op.indices.at[A.nnz - 3].set(d + 4), op.row_ids, op.indptr, op.shape, "ffi")
        with pytest.raises(Exception, match="malformed matrix"):
            jax.block_until_ready(bad.hvp(jnp.ones(d), jnp.ones(n)))


@pytest.mark.skipif(not _csr.ffi_available(), reason="compiled CSR kernel not built")
def test_csr_kernel_refuses_indices_out_of_range():
    """The compiled kernel checks what it indexes: a hand-built operator with a column index
    >= d, or row pointers that run past the entries, raises instead of touching stray memory."""
    op = SparseOperator.from_scipy(_awkward(), jnp.float64, impl="ffi")
    bad_col = SparseOperator(op.data, op.indices.at[7].set(25), op.row_ids, op.indptr, op.shape, "ffi")
    with pytest.raises(Exception, match="malformed matrix"):
        jax.block_until_ready(bad_col.rmatvec(jnp.ones(40)))
    bad_rows = SparseOperator(op.data, op.indices, op.row_ids, op.indptr.at[-1].add(5), op.shape, "ffi")
    with pytest.raises(Exception, match="malformed matrix"):
        jax.block_until_ready(bad_rows.matvec(jnp.ones(25)))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dense_transposed_products_match_float64(dtype):
    """Dense X^T u (a column sum on the CPU) and the fused block pass against numpy in float64, on
    a matrix whose row count is not a multiple of the block: plain, under jit and vmap, and the
    fused X^T (D (X v)) Newton's CG uses."""
    from svmopt.operators import DenseOperator

    rng = np.random.default_rng(3)
    X = rng.standard_normal((20_011, 37))
    u, v, D = rng.standard_normal(20_011), rng.standard_normal(37), (rng.random(20_011) < 0.4) * 2.0
    op = DenseOperator(jnp.asarray(X, dtype), block_rows=4096)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    ref = X.T @ u
    scale = np.abs(ref).max()
    np.testing.assert_allclose(np.asarray(op.rmatvec(jnp.asarray(u, dtype))), ref, atol=tol * scale)
    U = rng.standard_normal((3, 20_011))
    got = jax.jit(jax.vmap(op.rmatvec))(jnp.asarray(U, dtype))
    np.testing.assert_allclose(np.asarray(got), U @ X, atol=tol * np.abs(U @ X).max())
    g, s = jax.jit(lambda w: op.fused(w, lambda z, Dh: (Dh * z, Dh * z), (jnp.asarray(D, dtype),)))(jnp.asarray(v, dtype))
    want = X.T @ (D * (X @ v))
    np.testing.assert_allclose(np.asarray(g), want, atol=tol * np.abs(want).max())
    assert float(s) == pytest.approx(np.sum(D * (X @ v)), abs=tol * np.abs(D * (X @ v)).sum())
