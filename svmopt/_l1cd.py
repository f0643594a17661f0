"""Proximal Newton's inner coordinate descent for l1 as a compiled CPU kernel (``svmopt/_l1cd_ffi.cc``).

  solve(w, G, D, cols, active, params, bits) -> (w + d, X d, stats)

One call runs every pass of the inner problem of one outer step of ``newglmnet`` (newGLMNET):
a per-coordinate loop, which under XLA would cost a few kernel launches per coordinate.
``cols`` are X's columns (``columns(op)``: CSC built once per solve by a counting sort in the same
module, or the dense transpose);
``params`` = [lam, c, tol, max passes]; ``stats`` = [passes, last pass's sum of violations].
vmap runs the lanes one after the other. There is no XLA version: where the kernel is not
built, ``newglmnet`` refuses the problem and ``auto`` sends it to ``alm``.
"""
from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

from . import _ffi

__all__ = ["available", "supports", "columns", "solve"]

_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def available() -> bool:
    """True when the kernel is built, registered, and solves one known problem correctly (``svmopt._ffi.load``)."""
    return _ffi.load("_l1cd_ffi", _self_test)


def _self_test() -> bool:
    # one column x = (1, 2), w = 0, G = -3, D = 1, lam = 1: H = 5, the first visit moves w to
    # (3 - 1) / 5 = 0.4, the second finds the model's gradient -3 + 0.4 + 1.6 = -1 = -lam: optimal
    cpu = jax.local_devices(backend="cpu")[0]
    args = jax.device_put((np.zeros(1, np.float32), np.array([-3.0], np.float32), np.ones(2, np.float32),
                           dict(vals=np.array([1.0, 2.0], np.float32), idx=np.array([0, 1], np.int32),
                                ptr=np.array([0, 2], np.int32)),
                           np.ones(1, bool), np.array([1.0, 0.0, 1e-6, 10.0], np.float32), np.zeros(2, np.uint32)), cpu)
    wpd, xd, stats = jax.jit(solve)(*args)
    return bool(np.allclose(np.asarray(wpd), [0.4]) and np.allclose(np.asarray(xd), [0.4, 0.8])
                and float(stats[0]) == 2.0)


def supports(dtype) -> bool:
    return np.dtype(dtype) in _DTYPES


def columns(op):
    """X's columns for the kernel: CSC (vals, idx row ids, ptr) of a CSR operator (a counting sort,
    each column's entries in row order), or the transpose (d, n) of dense X (one copy of X, held for
    the solve)."""
    if op.layout == "sparse":
        n, d = op.shape
        data, indices, indptr, _ = op.entries()
        dt = data.dtype
        call = jax.ffi.ffi_call(  # a counting sort in the kernel module (an XLA sort cost a9a 150 ms a solve)
            f"svmopt_csc_{_DTYPES[np.dtype(dt)]}",
            (jax.ShapeDtypeStruct(data.shape, dt), jax.ShapeDtypeStruct(data.shape, jnp.int32),
             jax.ShapeDtypeStruct((d + 1,), jnp.int32)), vmap_method="sequential")
        vals, idx, ptr = call(data, indices.astype(jnp.int32), indptr.astype(jnp.int32))
        return dict(vals=vals, idx=idx, ptr=ptr)
    empty = jnp.zeros((0,), jnp.int32)
    return dict(vals=jnp.transpose(op.dense()), idx=empty, ptr=empty)


def solve(w, G, D, cols, active, params, bits):
    dt = w.dtype
    call = jax.ffi.ffi_call(
        f"svmopt_l1cd_{_DTYPES[np.dtype(dt)]}",
        (jax.ShapeDtypeStruct(w.shape, dt), jax.ShapeDtypeStruct(D.shape, dt), jax.ShapeDtypeStruct((2,), dt)),
        vmap_method="sequential")
    return call(w, G, D, cols["vals"], cols["idx"], cols["ptr"], active, params.astype(dt), bits)
