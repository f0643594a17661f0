"""One pass of serial dual coordinate descent as a compiled CPU kernel (``svmopt/_dcd_ffi.cc``).

Under XLA a coordinate step is a few kernel launches plus a gather of the pass's records, which
left ``dual_cd``'s serial pass well behind LIBLINEAR's loop (docs/auto.md). The custom call runs
the whole pass (random order, eq. 12 / 8 / 9 / 13, shrinking of eq. 16) in one launch. ``dual_cd``
uses it on the CPU where the extension is built and passed its self-test; everywhere else it runs
its pure-XLA serial pass (``svmopt/solvers/dcd_passes.py``).

  pass_(w, alpha, coef, rows, active, Mbar, mbar, bits) -> (w', alpha', kept, M, m)

(w has d + 1 entries when ``rows`` carries an implicit bias feature, ``operators.with_bias``.)

coef (n, 6) = [D_ii, lo_i, hi_i, 1/Qbar_ii, lin_i, eps] (``solvers.base.box_table``); rows = ``rows(op, y)`` (the operator's own arrays and
the labels: the kernel forms z_i = y_i x_i as it goes); bits (2,) uint32 seed the pass's order.
vmap runs the lanes one after the other (a pass is sequential by nature).
"""
from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp

from . import _ffi

__all__ = ["available", "rows", "pass_"]

_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}


def available() -> bool:
    """True when the pass is built, registered, and takes one known step correctly (``svmopt._ffi.load``)."""
    return _ffi.load("_dcd_ffi", _self_test)


def _self_test() -> bool:
    cpu = jax.local_devices(backend="cpu")[0]
    # the row is x = (-1, -2) with label -1, so z = (1, 2) as above
    args = jax.device_put((np.zeros(2, np.float32), np.zeros(1, np.float32),
                           np.array([[0.0, 0.0, 1.0, 0.2, 1.0, 0.0]], np.float32),
                           dict(vals=np.array([-1.0, -2.0], np.float32), cols=np.array([0, 1], np.int32),
                                ptr=np.array([0, 2], np.int32), y=np.array([-1.0], np.float32)),
                           np.ones(1, bool), np.float32(np.inf), np.float32(-np.inf), np.zeros(2, np.uint32)), cpu)
    w, alpha, kept, M, m = jax.jit(pass_)(*args)
    return bool(np.allclose(np.asarray(w), [0.2, 0.4]) and np.allclose(np.asarray(alpha), [0.2])
                and bool(kept[0]) and float(M) == float(m) == -1.0)


def supports(dtype) -> bool:
    return np.dtype(dtype) in _DTYPES


def rows(op, y):
    """The rows for the kernel: CSR (vals, cols, ptr) or dense (vals (n, d), empty cols / ptr), the
    labels y, and the operator's implicit bias feature (``operators.with_bias``: (1,) its value, else
    (0,)). The arrays are the operator's own (no label-scaled copy of X, which costs memory and time
    every solve; no clipped copy of the columns: the kernel clamps each index into [0, d) where it
    reads it, and checks the row pointers)."""
    y = jnp.asarray(y, op.dtype)
    bias = jnp.zeros((0,), op.dtype)
    if getattr(op, "bias", None) is not None:  # a constant column the kernel adds as it reads a row
        bias, op = jnp.reshape(jnp.asarray(op.bias, op.dtype), (1,)), op.base
    if op.layout == "sparse":
        data, indices, indptr, _ = op.entries()
        return dict(vals=data, cols=indices.astype(jnp.int32), ptr=indptr.astype(jnp.int32), y=y, bias=bias)
    empty = jnp.zeros((0,), jnp.int32)
    return dict(vals=op.dense(), cols=empty, ptr=empty, y=y, bias=bias)


def pass_(w, alpha, coef, rows, active, Mbar, mbar, bits):
    dt = w.dtype
    call = jax.ffi.ffi_call(
        f"svmopt_dcd_pass_{_DTYPES[np.dtype(dt)]}",
        (jax.ShapeDtypeStruct(w.shape, dt), jax.ShapeDtypeStruct(alpha.shape, dt),
         jax.ShapeDtypeStruct(alpha.shape, jnp.bool_), jax.ShapeDtypeStruct((2,), dt)),
        vmap_method="sequential", input_output_aliases={0: 0, 1: 1})
    bias = rows.get("bias", jnp.zeros((0,), dt))
    w, alpha, kept, ext = call(w, alpha, coef, rows["vals"], rows["cols"], rows["ptr"], rows["y"], bias, active,
                               jnp.stack([Mbar, mbar]).astype(dt), bits)
    return w, alpha, kept, ext[0], ext[1]
