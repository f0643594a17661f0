"""CSR products X x and X^T u as two JAX primitives, with a compiled CPU kernel.

  csr_matvec_p   (data, indices, indptr, row_ids, x (K, d))  ->  x X^T  (K, n)
  csr_rmatvec_p  (data, indices, indptr, row_ids, u (K, n))  ->  u X    (K, d)

Each primitive lowers to an XLA FFI custom call (``svmopt/_csr_ffi.cc``) on CPU when
the extension is built, for float32 and float64; everywhere else (GPU/TPU, other dtypes,
no extension, ``impl="xla"``) to the pure-XLA sorted segment sum / scatter-add.
Rules make them ordinary JAX citizens: batching (vmap over x is one call with K columns;
a batched matrix falls back to the XLA path), JVP (bilinear in data and x) and transpose
(X^T u is the transpose of X w), so jit, vmap, grad, jvp and linear_transpose all work.

Per pass (one X w + one X^T u, ``python -m bench.sparse_pass``) the custom call runs at about
scipy's speed, the XLA path slower on CPU (docs/auto.md).
"""
from __future__ import annotations

import functools

import numpy as np

import jax
import jax.numpy as jnp

from . import _ffi
from jax.extend.core import Primitive
from jax.interpreters import ad, batching, mlir

__all__ = ["matvec", "rmatvec", "hvp", "keep_rows", "ffi_available", "IMPLS"]

# auto: the custom call where it is built and passed its self-test, else XLA; xla: always XLA;
# ffi: the custom call on CPU without asking (the self-test itself, benchmarks)
IMPLS = ("auto", "xla", "ffi")
_FFI_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


# ---- the pure-XLA products (every backend; the reference the custom call must match) ----

def _xla_matvec(data, indices, indptr, row_ids, x):
    n = indptr.shape[0] - 1
    if x.shape[0] == 1:
        y = jax.ops.segment_sum(data * x[0, indices], row_ids, n, indices_are_sorted=True)
        return y[None]
    y = jax.ops.segment_sum(data[:, None] * x.T[indices], row_ids, n, indices_are_sorted=True)
    return y.T


def _xla_rmatvec(data, indices, indptr, row_ids, u, *, d):
    if u.shape[0] == 1:
        return jax.ops.segment_sum(data * u[0, row_ids], indices, d)[None]
    return jax.ops.segment_sum(data[:, None] * u.T[row_ids], indices, d).T


# ---- the compiled kernel ------------------------------------------------------------------

def ffi_available() -> bool:
    """True when the CPU custom call is built, registered and agrees with the XLA path
    (``svmopt._ffi.load``: a 3 x 4 self-test through the custom calls themselves)."""
    return _ffi.load("_csr_ffi", _self_test)


def _self_test() -> bool:
    data = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    args = (data, np.array([0, 3, 1, 2], np.int32), np.array([0, 2, 2, 4], np.int32),
            np.array([0, 0, 2, 2], np.int32))
    x = np.arange(1.0, 9.0, dtype=np.float32).reshape(2, 4)
    keep = np.array([False, True, True])
    # on this process's own CPU device: under jax.distributed, devices("cpu")[0] may be another's
    args, x, keep = jax.device_put((args, x, keep), jax.local_devices(backend="cpu")[0])
    y = _bind_matvec(*args, x, "ffi")
    z = _bind_rmatvec(*args, y, 4, "ffi")
    y_ref = np.array([[9.0, 0.0, 18.0], [21.0, 0.0, 46.0]], np.float32)
    ok = np.array_equal(np.asarray(y), y_ref) and np.allclose(np.asarray(z), y_ref @ _dense(*args, (3, 4)))
    # one walk for X^T (D (X v + c)): row 1 has D = 0
    D, c = jax.device_put((np.array([1.0, 0.0, 2.0], np.float32), np.float32(0.5)), x.devices().pop())
    hz, hs = csr_hvp_p.bind(*args, x[0], D, c, impl="ffi")
    q = np.array([1.0, 0.0, 2.0], np.float32) * (y_ref[0] + 0.5)
    ok = ok and np.allclose(np.asarray(hz), q @ _dense(*args, (3, 4))) and float(hs) == float(q.sum())
    # rows 1 (empty) and 2 first, then row 0; indptr stops at the kept rows' 2 entries
    got = _keep_rows_call(args[1], args[2], keep)
    want = ([1, 2, 0], [0, 0, 2, 2], [1, 2, 0, 3], [1, 1, 2, 2], [2, 3, 0, 1])
    return bool(ok and all(np.array_equal(np.asarray(g), v) for g, v in zip(got, want)))


def _dense(data, indices, indptr, row_ids, shape):
    A = np.zeros(shape, data.dtype)
    np.add.at(A, (row_ids, indices), data)
    return A


def _k_minor():
    """(K, m) operands and results with K as the minor dimension: each row of K values is
    contiguous, as the kernel reads them (the same bytes as row-major when K = 1)."""
    from jax.experimental.layout import Layout

    return Layout(major_to_minor=(1, 0))


def _ffi_lowering(op, dtype):
    return jax.ffi.ffi_lowering(f"svmopt_csr_{op}_{_FFI_DTYPES[np.dtype(dtype)]}",
                                operand_layouts=[None] * 4 + [_k_minor()], result_layouts=[_k_minor()])


def _use_ffi(impl, dtype) -> bool:
    if impl == "ffi":  # forced: the self-test, and benchmarks that compare the two paths
        return True
    return impl == "auto" and np.dtype(dtype) in _FFI_DTYPES and ffi_available()


# ---- primitives ---------------------------------------------------------------------------

csr_matvec_p = Primitive("svmopt_csr_matvec")
csr_rmatvec_p = Primitive("svmopt_csr_rmatvec")


def _bind_matvec(data, indices, indptr, row_ids, x, impl):
    return csr_matvec_p.bind(data, indices, indptr, row_ids, x, impl=impl)


def _bind_rmatvec(data, indices, indptr, row_ids, u, d, impl):
    return csr_rmatvec_p.bind(data, indices, indptr, row_ids, u, d=d, impl=impl)


def _check(data, indices, row_ids, v, m):
    """The kernel trusts shapes and dtypes; catch a mismatch at trace time instead."""
    if data.dtype != v.dtype or v.ndim != 2 or v.shape[1] != m:
        raise TypeError(f"svmopt csr: operand {v.dtype}{list(v.shape)} does not fit a {data.dtype} matrix "
                        f"(expected (K, {m}))")
    if not indices.shape == row_ids.shape == data.shape:
        raise TypeError(f"svmopt csr: data {data.shape}, indices {indices.shape}, row_ids {row_ids.shape} differ")


@csr_matvec_p.def_abstract_eval
def _matvec_abstract(data, indices, indptr, row_ids, x, *, impl):
    _check(data, indices, row_ids, x, x.shape[-1])
    return jax.core.ShapedArray((x.shape[0], indptr.shape[0] - 1), x.dtype)


@csr_rmatvec_p.def_abstract_eval
def _rmatvec_abstract(data, indices, indptr, row_ids, u, *, d, impl):
    _check(data, indices, row_ids, u, indptr.shape[0] - 1)
    return jax.core.ShapedArray((u.shape[0], d), u.dtype)


@functools.cache
def _compiled(prim, **params):
    return jax.jit(functools.partial(prim.bind, **params))


# eager calls: one jitted bind per primitive and parameters (then jit's own cache per shape)
csr_matvec_p.def_impl(lambda *args, **params: _compiled(csr_matvec_p, **params)(*args))
csr_rmatvec_p.def_impl(lambda *args, **params: _compiled(csr_rmatvec_p, **params)(*args))


def _matvec_lowering_cpu(ctx, *args, impl):
    if _use_ffi(impl, ctx.avals_out[0].dtype):
        return _ffi_lowering("matvec", ctx.avals_out[0].dtype)(ctx, *args)
    return _matvec_lowering_xla(ctx, *args, impl=impl)


def _rmatvec_lowering_cpu(ctx, *args, d, impl):
    if _use_ffi(impl, ctx.avals_out[0].dtype):
        return _ffi_lowering("rmatvec", ctx.avals_out[0].dtype)(ctx, *args)
    return _rmatvec_lowering_xla(ctx, *args, d=d, impl=impl)


_matvec_lowering_xla = mlir.lower_fun(lambda *a, impl: _xla_matvec(*a), multiple_results=False)
_rmatvec_lowering_xla = mlir.lower_fun(lambda *a, d, impl: _xla_rmatvec(*a, d=d), multiple_results=False)
mlir.register_lowering(csr_matvec_p, _matvec_lowering_xla)
mlir.register_lowering(csr_rmatvec_p, _rmatvec_lowering_xla)
mlir.register_lowering(csr_matvec_p, _matvec_lowering_cpu, platform="cpu")
mlir.register_lowering(csr_rmatvec_p, _rmatvec_lowering_cpu, platform="cpu")


# vmap: a batch of vectors becomes more columns of one call (B*K); a batched matrix
# (vmap over data / indices) takes the XLA path, which batches natively.
def _batch(prim, xla_fn, args, dims, **params):
    *mat, v = args
    *mat_dims, v_dim = dims
    if any(dm is not None for dm in mat_dims):
        fn = functools.partial(xla_fn, **({"d": params["d"]} if "d" in params else {}))
        return jax.vmap(fn, in_axes=tuple(dims))(*args), 0
    v = jnp.moveaxis(v, v_dim, 0)
    B, K, m = v.shape
    out = prim.bind(*mat, v.reshape(B * K, m), **params)
    return out.reshape(B, K, out.shape[-1]), 0


batching.primitive_batchers[csr_matvec_p] = functools.partial(_batch, csr_matvec_p, _xla_matvec)
batching.primitive_batchers[csr_rmatvec_p] = functools.partial(_batch, csr_rmatvec_p, _xla_rmatvec)


# autodiff: both products are bilinear in (data, vector)
def _is_zero(t):
    return type(t) is ad.Zero


def _matvec_jvp(primals, tangents, *, impl):
    data, indices, indptr, row_ids, x = primals
    ddata, _, _, _, dx = tangents
    y = _bind_matvec(data, indices, indptr, row_ids, x, impl)
    dy = None
    if not _is_zero(ddata):
        dy = _bind_matvec(ddata, indices, indptr, row_ids, x, impl)
    if not _is_zero(dx):
        t = _bind_matvec(data, indices, indptr, row_ids, dx, impl)
        dy = t if dy is None else dy + t
    return y, (jnp.zeros_like(y) if dy is None else dy)


def _rmatvec_jvp(primals, tangents, *, d, impl):
    data, indices, indptr, row_ids, u = primals
    ddata, _, _, _, du = tangents
    z = _bind_rmatvec(data, indices, indptr, row_ids, u, d, impl)
    dz = None
    if not _is_zero(ddata):
        dz = _bind_rmatvec(ddata, indices, indptr, row_ids, u, d, impl)
    if not _is_zero(du):
        t = _bind_rmatvec(data, indices, indptr, row_ids, du, d, impl)
        dz = t if dz is None else dz + t
    return z, (jnp.zeros_like(z) if dz is None else dz)


def _matvec_transpose(ct, data, indices, indptr, row_ids, x, *, impl):
    # y[k, i] = sum_p data[p] x[k, idx[p]] over row i's entries
    if _is_zero(ct):
        return [None] * 5
    if ad.is_undefined_primal(x):
        d = x.aval.shape[1]
        return [None, None, None, None, _bind_rmatvec(data, indices, indptr, row_ids, ct, d, impl)]
    return [jnp.sum(ct[:, row_ids] * x[:, indices], axis=0), None, None, None, None]


def _rmatvec_transpose(ct, data, indices, indptr, row_ids, u, *, d, impl):
    # z[k, j] = sum_p data[p] u[k, row[p]] over column j's entries
    if _is_zero(ct):
        return [None] * 5
    if ad.is_undefined_primal(u):
        return [None, None, None, None, _bind_matvec(data, indices, indptr, row_ids, ct, impl)]
    return [jnp.sum(u[:, row_ids] * ct[:, indices], axis=0), None, None, None, None]


ad.primitive_jvps[csr_matvec_p] = _matvec_jvp
ad.primitive_jvps[csr_rmatvec_p] = _rmatvec_jvp
ad.primitive_transposes[csr_matvec_p] = _matvec_transpose
ad.primitive_transposes[csr_rmatvec_p] = _rmatvec_transpose


# ---- public entry points ------------------------------------------------------------------

def _common(data, v):
    dt = jnp.result_type(data, v)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.result_type(dt, jnp.float32)
    return jnp.asarray(data, dt), jnp.asarray(v, dt)


def matvec(data, indices, indptr, row_ids, w, impl="auto"):
    """X w for w (d,) -> (n,), or X W for W (d, K) -> (n, K)."""
    data, w = _common(data, w)
    if w.ndim == 1:
        return _bind_matvec(data, indices, indptr, row_ids, w[None], impl)[0]
    return _bind_matvec(data, indices, indptr, row_ids, w.T, impl).T


def rmatvec(data, indices, indptr, row_ids, u, d, impl="auto"):
    """X^T u for u (n,) -> (d,), or X^T U for U (n, K) -> (d, K)."""
    data, u = _common(data, u)
    if u.ndim == 1:
        return _bind_rmatvec(data, indices, indptr, row_ids, u[None], int(d), impl)[0]
    return _bind_rmatvec(data, indices, indptr, row_ids, u.T, int(d), impl).T


def keep_rows(indices, indptr, keep):
    """(perm, indptr', indices', row_ids', src): the rows with ``keep`` (n,) first, in order, then
    the others (row r of the result is row perm[r]; entry p is entry src[p] of X, so data' =
    data[src]), indptr' ending every later row at the kept rows' last entry. The CPU custom
    call only (``ffi_available()``): one pass, cheaper than XLA's cumsum and repeat over the
    entries. Integer operands and results: nothing to differentiate; vmap maps it."""
    if not ffi_available():  # (also what registers the target)
        raise RuntimeError("svmopt csr keep_rows needs the compiled CPU kernels (svmopt._csr_ffi)")
    return _keep_rows_call(indices, indptr, keep)


def _keep_rows_call(indices, indptr, keep):
    n, nnz = keep.shape[0], indices.shape[0]
    i32 = lambda *shape: jax.ShapeDtypeStruct(shape, jnp.int32)  # noqa: E731
    call = jax.ffi.ffi_call("svmopt_csr_keep_rows", (i32(n), i32(n + 1), i32(nnz), i32(nnz), i32(nnz)),
                            vmap_method="sequential")
    return call(jnp.asarray(indptr, jnp.int32), jnp.asarray(indices, jnp.int32), jnp.asarray(keep, bool))


# ---- X^T (D (X v + c)) in one walk: newton's Hessian product -------------------------------

csr_hvp_p = Primitive("svmopt_csr_hvp")
csr_hvp_p.multiple_results = True


def _unfused_hvp(data, indices, indptr, row_ids, v, D, c, *, impl):
    """The same through the two products (the XLA lowering, vmap and differentiation)."""
    q = D * (_bind_matvec(data, indices, indptr, row_ids, v[None], impl)[0] + c)
    return [_bind_rmatvec(data, indices, indptr, row_ids, q[None], v.shape[0], impl)[0], jnp.sum(q)]


@csr_hvp_p.def_abstract_eval
def _hvp_abstract(data, indices, indptr, row_ids, v, D, c, *, impl):
    if not indices.shape == row_ids.shape == data.shape:
        raise TypeError(f"svmopt csr: data {data.shape}, indices {indices.shape}, row_ids {row_ids.shape} differ")
    if v.ndim != 1 or D.shape != (indptr.shape[0] - 1,) or c.shape != () or not data.dtype == v.dtype == D.dtype == c.dtype:
        raise TypeError(f"svmopt csr hvp: v {v.dtype}{list(v.shape)}, D {D.dtype}{list(D.shape)}, c {c.dtype}"
                        f"{list(c.shape)} do not fit a {data.dtype} matrix of {indptr.shape[0] - 1} rows")
    return [jax.core.ShapedArray(v.shape, v.dtype), jax.core.ShapedArray((), v.dtype)]


csr_hvp_p.def_impl(lambda *args, **params: _compiled(csr_hvp_p, **params)(*args))


def _hvp_lowering_cpu(ctx, *args, impl):
    dt = ctx.avals_out[0].dtype
    if _use_ffi(impl, dt):
        return jax.ffi.ffi_lowering(f"svmopt_csr_hvp_{_FFI_DTYPES[np.dtype(dt)]}")(ctx, *args)
    return _hvp_lowering_xla(ctx, *args, impl=impl)


_hvp_lowering_xla = mlir.lower_fun(_unfused_hvp, multiple_results=True)
mlir.register_lowering(csr_hvp_p, _hvp_lowering_xla)
mlir.register_lowering(csr_hvp_p, _hvp_lowering_cpu, platform="cpu")


def _hvp_batch(args, dims, *, impl):
    # a batch of v or D: the two products batch into calls with K columns, reading X once
    fn = functools.partial(_unfused_hvp, impl=impl)
    return jax.vmap(fn, in_axes=tuple(dims))(*args), (0, 0)


def _hvp_jvp(primals, tangents, *, impl):
    data, indices, indptr, row_ids, v, D, c = primals
    f = lambda data, v, D, c: _unfused_hvp(data, indices, indptr, row_ids, v, D, c, impl=impl)  # noqa: E731
    tans = [ad.instantiate_zeros(t) for t in (tangents[0], *tangents[4:])]
    out = csr_hvp_p.bind(*primals, impl=impl)
    _, dout = jax.jvp(f, (data, v, D, c), tuple(tans))
    return out, dout


batching.primitive_batchers[csr_hvp_p] = _hvp_batch
ad.primitive_jvps[csr_hvp_p] = _hvp_jvp


def hvp(data, indices, indptr, row_ids, v, D, c=0.0, impl="auto"):
    """(X^T (D (X v + c)), sum D (X v + c)) for v (d,), D (n,), a scalar c: on the CPU with the
    compiled kernels one walk over the rows that skips those with D_i = 0; elsewhere the two
    products."""
    dt = jnp.result_type(data, v, D)
    if not jnp.issubdtype(dt, jnp.inexact):
        dt = jnp.result_type(dt, jnp.float32)
    args = [jnp.asarray(a, dt) for a in (data, v, D, c)]
    return tuple(csr_hvp_p.bind(args[0], indices, indptr, row_ids, *args[1:], impl=impl))
