"""Data operators: the design matrix X (n x d) behind one interface.

Solvers only ever touch X through

  matvec(w)        X w                      (n,)
  rmatvec(u)       X^T u                    (d,)
  fused(w, f, a)   X^T g, sum(s) with (g, s) = f(X w, a) computed block by block,
                   so X is read once per gradient pass
  row_sq_norms()   ||x_i||^2               (n,)
  col_sq_norms()   ||X_:j||^2              (d,)   (diagonal of X^T X)
  row_inf_norms()  ||x_i||_inf             (n,)
  sq_rmatvec(D)    (X o X)^T D             (d,)   (Newton's Jacobi preconditioner)

and, where a method walks rows itself, ``layout`` ("dense" | "sparse" | "sharded"), ``dense()``
(dense X, or sparse X scattered), ``entries()`` (sparse: data, indices, indptr, row ids),
``walks_rows()`` and ``rows_first(keep, D)`` (the CPU kernel's row walk, restricted to the rows
that matter). No solver reads an operator's arrays by name.

Both operators are pytrees (arrays are leaves, shapes static), so they are
passed to jitted solvers as arguments: one compilation per shape and dtype.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import jax
import jax.numpy as jnp
from jax import lax

from . import _csr, _ffi
from .checks import check_finite_X

__all__ = ["DenseOperator", "SparseOperator", "BiasColumn", "as_operator", "with_bias"]


def _tdot(u, X):
    """X^T u for dense X (n, d). In float32 on the CPU as a fused multiply and column sum, faster
    and more accurate there than XLA's vector-matrix dot; elsewhere, and in float64, the backend's
    dot (with the sum, a float64 dual CD run drifted further from X^T (alpha y), not understood
    yet, so float64 keeps the dot that precision tests were built on; docs/auto.md)."""
    if (jax.default_backend() == "cpu" and jnp.ndim(u) == 1 and jnp.ndim(X) == 2
            and jnp.result_type(u, X) == jnp.float32):
        return jnp.sum(X * u[:, None], axis=0)
    return u @ X


@jax.tree_util.register_pytree_node_class
class DenseOperator:
    """Dense X as a jax array; the fused pass walks row blocks of ``block_rows``."""

    layout = "dense"

    def __init__(self, X, block_rows: int = 8192):
        self.X = X
        self.block_rows = int(block_rows)

    def tree_flatten(self):
        return (self.X,), self.block_rows

    @classmethod
    def tree_unflatten(cls, block_rows, children):
        return cls(children[0], block_rows)

    @property
    def shape(self):
        return self.X.shape

    @property
    def dtype(self):
        return self.X.dtype

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.X.shape)) * self.X.dtype.itemsize

    def matvec(self, w):
        return self.X @ w

    def rmatvec(self, u):
        return _tdot(u, self.X)

    def fused(self, w, f, aux=()):
        n, d = self.X.shape
        bs = min(self.block_rows, n)
        nblocks = -(-n // bs)
        if nblocks == 1:
            g, s = f(self.X @ w, *aux)
            return _tdot(g, self.X), jnp.sum(s)

        def body(i, carry):
            acc, tot = carry
            # the last block is clamped to end at n; rows already seen are masked out
            start = jnp.minimum(i * bs, n - bs)
            Xb = lax.dynamic_slice_in_dim(self.X, start, bs, 0)
            ab = [lax.dynamic_slice_in_dim(a, start, bs, 0) for a in aux]
            g, s = f(Xb @ w, *ab)
            fresh = (start + jnp.arange(bs)) >= i * bs
            g = jnp.where(fresh, g, 0.0)
            s = jnp.where(fresh, s, 0.0)
            return acc + _tdot(g, Xb), tot + jnp.sum(s)

        zero = jnp.zeros((d,), self.X.dtype)
        return lax.fori_loop(0, nblocks, body, (zero, jnp.zeros((), self.X.dtype)))

    def row_sq_norms(self):
        return jnp.sum(self.X * self.X, axis=1)

    def abs_matvec(self, w):
        """|X| |w| (a row-wise reduction XLA fuses: |X| is never formed)."""
        return jnp.sum(jnp.abs(self.X) * jnp.abs(w), axis=1)

    def col_sq_norms(self):
        return jnp.sum(self.X * self.X, axis=0)

    def row_inf_norms(self):
        return jnp.max(jnp.abs(self.X), axis=1)

    def sq_rmatvec(self, D):
        """(X o X)^T D in one contraction that never forms X o X."""
        return jnp.einsum("ij,ij,i->j", self.X, self.X, D)

    def walks_rows(self) -> bool:
        """Static: does the CPU kernel walk this operator's rows (``hvp``, ``rows_first``)? Never dense."""
        return False

    def rows(self, idx):
        """Dense rows X[idx] (k x d)."""
        return self.X[idx]

    def dense(self):
        """X as a dense (n, d) array."""
        return self.X

    def csr(self):
        """(data, indices, indptr) of X in CSR form (built on the fly for dense X)."""
        import numpy as _np
        A = sp.csr_matrix(_np.asarray(self.X))
        return jnp.asarray(A.data), jnp.asarray(A.indices), jnp.asarray(A.indptr)


@jax.tree_util.register_pytree_node_class
class SparseOperator:
    """CSR X kept sparse: values, column indices, row pointers and (sorted) row ids.

    ``matvec`` / ``rmatvec`` are the CSR primitives of ``svmopt._csr``: on CPU a compiled
    XLA custom call (scipy's speed), elsewhere a sorted segment sum over rows and a
    scatter-add over columns. ``impl="xla"`` forces the pure-XLA path. Both accept a
    stack of vectors (w (d, K), u (n, K)) and batch under vmap into one call.
    ``entries()`` serves solvers that walk rows.
    """

    layout = "sparse"

    def __init__(self, data, indices, row_ids, indptr, shape, impl: str = "auto"):
        if impl not in _csr.IMPLS:
            raise ValueError(f"impl must be one of {_csr.IMPLS}, got {impl!r}")
        self.data = data
        self.indices = indices
        self.row_ids = row_ids
        self.indptr = indptr
        self._shape = tuple(int(s) for s in shape)
        self.impl = impl

    def tree_flatten(self):
        return (self.data, self.indices, self.row_ids, self.indptr), (self._shape, self.impl)

    @classmethod
    def tree_unflatten(cls, aux, children):
        shape, impl = aux
        return cls(*children, shape, impl)

    @classmethod
    def from_scipy(cls, A, dtype, impl: str = "auto", nnz_to: int | None = None, pad_rows: int = 1,
                   bias: float | None = None, rows: int | None = None):
        """CSR arrays of ``A``, on the device (refusing a value NaN, infinite or beyond ``dtype``,
        named by its row, as ``solve`` does for dense X). ``rows``: that many rows (>= A's), the extra ones
        empty. ``bias``: a last column of that value in every row (LIBLINEAR's -B). ``nnz_to``:
        store that many entries, the extra ones explicit zeros (column 0) at the start of the last
        ``pad_rows`` rows, so that matrices whose nnz fall in one bucket share array shapes (and
        compiled programs); products, norms and row walks are unchanged by them. Duplicate
        entries are summed and columns sorted, in a copy: ``A`` is left as it was."""
        A = A if sp.issparse(A) and A.format == "csr" else sp.csr_matrix(A)
        n0, d0 = A.shape
        n = n0 if rows is None else int(rows)
        if n < n0:
            raise ValueError(f"rows={n} is fewer than the matrix's {n0}")
        dt = np.dtype(jax.dtypes.canonicalize_dtype(dtype))
        arrays = _host_arrays(A, n, dt, nnz_to, pad_rows, bias)
        # built on the host and sent in one transfer (not a conversion on the device and four transfers)
        return cls(*jax.device_put(arrays), (n, d0 + (bias is not None)), impl)

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def nnz(self) -> int:
        return int(self.data.shape[0])

    @property
    def nbytes(self) -> int:
        return self.nnz * (self.data.dtype.itemsize + 4)

    def matvec(self, w):
        return _csr.matvec(self.data, self.indices, self.indptr, self.row_ids, w, self.impl)

    def rmatvec(self, u):
        return _csr.rmatvec(self.data, self.indices, self.indptr, self.row_ids, u, self._shape[1], self.impl)

    def fused(self, w, f, aux=()):
        g, s = f(self.matvec(w), *aux)
        return self.rmatvec(g), jnp.sum(s)

    def hvp(self, v, D, c=0.0):
        """(X^T (D (X v + c)), sum D (X v + c)): on the CPU one walk over the rows with D_i != 0."""
        return _csr.hvp(self.data, self.indices, self.indptr, self.row_ids, v, D, c, self.impl)

    def row_sq_norms(self):
        """||x_i||^2 per row: the product of X o X with ones, so the CPU kernel's row walk computes
        it rather than a segment sum (dual CD and newton's dual pass ask for it)."""
        d = self._shape[1]
        ones = jnp.ones((d,), self.data.dtype)
        return _csr.matvec(self.data * self.data, self.indices, self.indptr, self.row_ids, ones, self.impl)

    def abs_matvec(self, w):
        """|X| |w|: the product of the CSR with every stored value's magnitude."""
        return _csr.matvec(jnp.abs(self.data), self.indices, self.indptr, self.row_ids, jnp.abs(w), self.impl)

    def col_sq_norms(self):
        return jax.ops.segment_sum(self.data * self.data, self.indices, self._shape[1])

    def row_inf_norms(self):
        return jax.ops.segment_max(
            jnp.abs(self.data), self.row_ids, self._shape[0], indices_are_sorted=True
        ).clip(min=0.0)

    def sq_rmatvec(self, D):
        """(X o X)^T D: the same CSR with every stored value squared, then its own product."""
        return SparseOperator(self.data * self.data, self.indices, self.row_ids, self.indptr, self._shape,
                              self.impl).rmatvec(D)

    def entries(self):
        """(data, indices, indptr, row_ids): the CSR arrays, for methods that walk rows."""
        return self.data, self.indices, self.indptr, self.row_ids

    def walks_rows(self) -> bool:
        """Static: do the CPU kernel's products walk this CSR row by row along indptr?"""
        return (self.impl != "xla" and jax.default_backend() == "cpu" and self.dtype in (jnp.float32, jnp.float64)
                and _csr.ffi_available())

    def stored_in(self, keep):
        """Stored entries of the rows with ``keep`` (n,) (traced)."""
        return jnp.sum(jnp.where(keep, jnp.diff(self.indptr), 0), dtype=jnp.int32)

    def rows_first(self, keep, D, with_perm=False):
        """(op', D'): the rows with ``keep`` (n,) first, in order (row i of op' is row perm[i] of this
        one, D' = D[perm]), and indptr ending after them, so the kernel walks only those (one pass in
        the custom call, ``_csr.keep_rows``). The other rows keep their entries and row ids: the XLA
        path, which sums over row ids, stays exact as long as D' is 0 there. ``with_perm``: (op', D', perm)."""
        perm, indptr, indices, rows, src = _csr.keep_rows(self.indices, self.indptr, keep)
        op = SparseOperator(self.data[src], indices, rows, indptr, self._shape, self.impl)
        return (op, D[perm], perm) if with_perm else (op, D[perm])

    def rows(self, idx):
        """Dense rows X[idx] (k x d), gathered from the CSR parts (jittable)."""
        return self.dense()[idx]

    def dense(self):
        """X as a dense (n, d) array (scattered once from the nonzeros)."""
        n, d = self._shape
        return jnp.zeros((n, d), self.dtype).at[self.row_ids, self.indices].add(self.data)

    def csr(self):
        """(data, indices, indptr) of X in CSR form."""
        return self.data, self.indices, self.indptr

    def to_scipy(self):
        return sp.csr_matrix(
            (np.asarray(self.data), np.asarray(self.indices), np.asarray(self.indptr)), shape=self._shape
        )


@jax.tree_util.register_pytree_node_class
class BiasColumn:
    """[X, s 1]: an operator with a constant last column of value ``bias``, not stored (LIBLINEAR's
    -B without a copy of X). The products split w into (w_X, w_last); the compiled dual CD pass adds
    the column as it reads a row (``_dcd.rows``). Built by ``with_bias``."""

    def __init__(self, base, bias):
        self.base, self.bias = base, bias

    def tree_flatten(self):
        return (self.base, self.bias), None

    @classmethod
    def tree_unflatten(cls, _, children):
        return cls(*children)

    layout = property(lambda self: self.base.layout)
    dtype = property(lambda self: self.base.dtype)
    nnz = property(lambda self: self.base.nnz + self.base.shape[0])

    @property
    def shape(self):
        n, d = self.base.shape
        return n, d + 1

    def matvec(self, w):
        return self.base.matvec(w[..., :-1]) + self.bias * w[..., -1:] if w.ndim > 1 else \
            self.base.matvec(w[:-1]) + self.bias * w[-1]

    def rmatvec(self, u):
        return jnp.concatenate([self.base.rmatvec(u), jnp.reshape(self.bias * jnp.sum(u), (1,))])

    def fused(self, w, f, aux=()):
        g, s = f(self.matvec(w), *aux)
        return self.rmatvec(g), jnp.sum(s)

    def row_sq_norms(self):
        return self.base.row_sq_norms() + self.bias * self.bias

    def abs_matvec(self, w):
        return self.base.abs_matvec(w[:-1]) + jnp.abs(self.bias * w[-1])

    def row_inf_norms(self):
        return jnp.maximum(self.base.row_inf_norms(), jnp.abs(self.bias))

    def col_sq_norms(self):
        return jnp.concatenate([self.base.col_sq_norms(), jnp.reshape(self.bias * self.bias * self.shape[0], (1,))])

    def sq_rmatvec(self, D):
        return jnp.concatenate([self.base.sq_rmatvec(D), jnp.reshape(self.bias * self.bias * jnp.sum(D), (1,))])

    def dense(self):
        n = self.base.shape[0]
        return jnp.concatenate([self.base.dense(), jnp.full((n, 1), self.bias, self.dtype)], axis=1)

    def walks_rows(self) -> bool:
        return False


def with_bias(op, bias: float = 1.0) -> BiasColumn:
    """``op`` with LIBLINEAR's bias feature of value ``bias`` appended, lazily (see ``BiasColumn``)."""
    return BiasColumn(op, jnp.asarray(bias, op.dtype))


# "auto" layout: a sparse X is densified when it is this dense and fits this budget.
# 25% sits between a dense-friendly and a sparse-friendly set (bench/results/design-notes.md).
AUTO_DENSE_MIN_DENSITY = 0.25
AUTO_DENSE_MAX_BYTES = 512 * 2**20


def _host_arrays(A, n, dt, nnz_to, pad_rows, bias):
    """(data, indices, row_ids, indptr) of CSR ``A`` as ``SparseOperator.from_scipy`` describes
    them: one pass of the compiled ``build_csr`` where it is built, numpy otherwise."""
    m = int(min(max(pad_rows, 1), n)) if n > 0 else 0
    build = _compiled_build()
    if build is None or dt not in (np.float32, np.float64) or A.shape[1] >= 2**31 - 1:
        check_finite_X(A, dt)
        A = _canonical(A)
        return _numpy_arrays(A, n, dt, _stored(A, n, bias, nnz_to)[1], m, bias)
    # (the int32 copy below would wrap an int64 index out of range into one in range)
    if A.indices.dtype == np.int32 or not A.nnz or 0 <= A.indices.min() <= A.indices.max() < A.shape[1]:
        for attempt in range(2):
            nnz, nnz_out = _stored(A, n, bias, nnz_to)
            out = (_aligned(nnz_out, dt), _aligned(nnz_out, np.int32), _aligned(nnz_out, np.int32),
                   _aligned(n + 1, np.int32))
            data = A.data if A.data.dtype in (np.float32, np.float64) else A.data.astype(np.float64)
            code = build(np.ascontiguousarray(A.indptr, np.int64), np.ascontiguousarray(A.indices, np.int32),
                         np.ascontiguousarray(data), data.dtype == np.float64, out[0], dt == np.float64, out[1],
                         out[2], out[3], A.shape[1], 0.0 if bias is None else float(bias), bias is not None, m,
                         nnz_out - nnz)
            if code == 0:
                return out
            if code == 4:  # a value NaN, infinite or beyond dt: the same error as a dense X's, naming the row
                _refuse_nonfinite(A, dt)
            if code != 1 or attempt:
                break
            A = _canonical(A)  # unsorted columns or duplicates: sum and sort a copy, then again
    raise ValueError("X is a malformed CSR matrix (a column index outside [0, n_features), or indptr "
                     "decreasing or outside the stored entries)")


def _dense_host(X, dtype, bias, rows):
    """X (numpy or scipy.sparse) as one (rows, d [+ 1]) host array of ``dtype``: the rows past X's
    zero, the bias column last, 64-byte aligned so that the transfer takes it without a copy (the
    device-side cast, row padding and column append cost time every call, and a compile per shape in
    a new process). A value NaN, infinite or beyond ``dtype`` is refused, naming its row."""
    dt = np.dtype(jax.dtypes.canonicalize_dtype(dtype or jnp.float32))
    n0, d0 = X.shape
    rows = n0 if rows is None else max(int(rows), n0)
    d1 = d0 + (bias is not None)
    A = _aligned(rows * d1, dt).reshape(rows, d1)
    A[:n0, :d0] = X.toarray() if sp.issparse(X) else X
    A[n0:, :d0] = 0
    if bias is not None:
        A[:, d0] = bias
    if not np.isfinite(A).all():  # NaN, inf, or a value the cast to dt overflowed
        _refuse_nonfinite(X, dt)
    return A


def _refuse_nonfinite(A, dt):
    """A build found such a value in A: ``checks.check_finite_X``'s error, which names the row."""
    check_finite_X(A, dt)
    raise ValueError(f"X holds a value that {np.dtype(dt).name} cannot represent")  # (not reached)


def _stored(A, n, bias, nnz_to):
    """(entries of A and the bias feature, entries to store): the bucket's count when larger."""
    nnz = A.nnz + (n if bias is not None else 0)
    nnz_out = max(nnz, int(nnz_to or 0))
    if nnz_out >= 2**31:
        raise ValueError(f"X has {nnz_out} stored entries; the sparse operator indexes them with int32 (< 2**31)")
    return nnz, nnz_out


def _aligned(size, dtype, align=64):
    """An empty array whose data starts on a 64-byte boundary: JAX's CPU client then takes it
    as the device buffer without a copy. Only arrays no one else holds: the device array aliases it."""
    dtype = np.dtype(dtype)
    raw = np.empty(size * dtype.itemsize + align, np.uint8)
    at = -raw.ctypes.data % align
    return raw[at:at + size * dtype.itemsize].view(dtype)


def _compiled_build():
    """The extension's one-pass CSR builder (bias feature, row bucket), or None where it is not built."""
    return getattr(_ffi.extension("_csr_ffi"), "build_csr", None)


def _canonical(A):
    """A copy of CSR ``A`` with duplicates summed and each row's columns sorted."""
    A = sp.csr_matrix(A, copy=True)
    A.sum_duplicates()
    A.sort_indices()
    return A


def _numpy_arrays(A, n, dt, nnz_out, m, bias):
    """``_host_arrays`` without the compiled module, for a canonical ``A``: the same arrays, in numpy."""
    n0, d0 = A.shape
    if n > n0:
        A = sp.vstack([A, sp.csr_matrix((n - n0, d0), dtype=A.dtype)], format="csr")
    counts = np.diff(A.indptr).astype(np.int64)
    if bias is not None:  # each row's new final slot holds the bias feature
        counts = counts + 1
    indptr = np.concatenate([[0], np.cumsum(counts)])
    add = np.zeros(n, np.int64)
    extra = nnz_out - int(indptr[-1])
    if extra > 0:  # the padding's zeros first in the last m rows
        add[n - m:] = extra // m
        add[n - m:n - m + extra % m] += 1
        indptr = np.concatenate([[0], np.cumsum(counts + add)])
    data = np.zeros(nnz_out, dt)
    indices = np.zeros(nnz_out, np.int32)
    at = np.repeat(indptr[:-1] + add - A.indptr[:-1], np.diff(A.indptr)) + np.arange(A.nnz)
    data[at], indices[at] = A.data, A.indices
    if bias is not None:
        data[indptr[1:] - 1], indices[indptr[1:] - 1] = bias, d0
    row_ids = np.repeat(np.arange(n, dtype=np.int32), np.diff(indptr))
    return data, indices, row_ids, indptr.astype(np.int32)


def as_operator(X, dtype=None, bias_scale: float | None = None, layout: str = "auto",
                nnz_bucket=None, pad_rows: int = 1, rows: int | None = None):
    """Wrap numpy / jax / scipy.sparse X as an operator of ``dtype``.

    ``nnz_bucket``: a function of the number of stored entries giving the number to store
    (sparse result only; explicit zeros in the last ``pad_rows`` rows, see
    ``SparseOperator.from_scipy``), so CV folds of nearby sizes share one compiled program.

    ``rows`` (sparse X): that many rows, the ones past X's empty (a row bucket, built in the
    same pass).

    ``bias_scale`` appends a constant column of that value (LIBLINEAR's ``-B``
    convention: the intercept becomes a regularized weight). ``layout`` is
    "sparse" (keep scipy input sparse), "dense", or "auto" (densify sparse input
    with density >= 25% whose dense copy fits 512 MiB; keep it sparse otherwise).
    """
    if layout not in ("auto", "sparse", "dense"):
        raise ValueError(f"layout must be 'auto', 'sparse' or 'dense', got {layout!r}")
    if isinstance(X, (DenseOperator, SparseOperator)):
        if bias_scale is not None:
            raise ValueError("bias_scale cannot be applied to an existing operator; pass the raw matrix")
        return X
    if sp.issparse(X) and layout == "auto":
        n, d = X.shape
        itemsize = jnp.dtype(dtype or jnp.float32).itemsize
        if X.nnz >= AUTO_DENSE_MIN_DENSITY * n * d and n * d * itemsize <= AUTO_DENSE_MAX_BYTES:
            layout = "dense"
    if sp.issparse(X) and layout != "dense":
        nnz = X.nnz + ((rows or X.shape[0]) if bias_scale is not None else 0)
        nnz_to = None if nnz_bucket is None else int(nnz_bucket(nnz))
        return SparseOperator.from_scipy(X, dtype or jnp.float32, nnz_to=nnz_to, pad_rows=pad_rows,
                                         bias=bias_scale, rows=rows)
    if not isinstance(X, (jax.Array, jax.core.Tracer)):  # host data: built and checked on the host
        return DenseOperator(jax.device_put(_dense_host(X, dtype, bias_scale, rows)))
    if rows is not None and rows > X.shape[0]:
        X = jnp.concatenate([X, jnp.zeros((rows - X.shape[0], X.shape[1]), X.dtype)])
    A = jnp.asarray(X, dtype=dtype)
    if bias_scale is not None:
        A = jnp.concatenate([A, jnp.full((A.shape[0], 1), bias_scale, A.dtype)], axis=1)
    return DenseOperator(A)
