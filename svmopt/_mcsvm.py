"""One pass of the Crammer-Singer sequential dual method: a compiled CPU kernel and a pure-JAX pass.

The pass of Keerthi, Sundararajan, Chang, Hsieh and Lin (KDD 2008), as LIBLINEAR's Solver_MCSVM_CS
runs it (``svmopt/_mcsvm_ffi.cc`` states the dual and the steps): the rows still in the pass in a
random order, for each the K-variable sub-problem over its active classes solved by sorting, with
shrinking. ``svmopt.solvers.crammer_singer`` calls ``pass_`` once per driver step. Under XLA a
per-sample loop costs several kernel launches per row, so on the CPU the pass is one custom call
(``svmopt._ffi``'s registry); ``xla_pass`` is the same steps in JAX, for accelerators and builds
without the extension, and the reference ``tests/test_crammer_singer.py`` compares the kernel with.

State of a pass (K classes, n rows, d features):
  wt (d, K)     the weights, feature-major (LIBLINEAR's layout: one feature's K weights together)
  alpha (n, K)  the dual variables: sum_m alpha_i^m = 0, alpha_i^m <= C_i delta(m, y_i)
  index (n, K)  int32, each row's classes, its ``act`` active ones first (a stable partition)
  act (n,)      int32, active classes per row; a row with act <= 1 is not visited
  info (n, 2)   [C_i, ||x_i||^2]; rows (``rows(op)``): the operator's own arrays; y (n,) int32 codes
"""
from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from . import _ffi

__all__ = ["available", "supports", "rows", "pass_", "ffi_pass", "xla_pass", "random_order"]

_DTYPES = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
TINY_SPREAD = 1e-12  # LIBLINEAR: a row whose max G - min G is at most this does not move


def available() -> bool:
    """True when the kernel is built, registered and passes its self-test (``svmopt._ffi.load``)."""
    return _ffi.load("_mcsvm_ffi", _self_test)


def supports(dtype) -> bool:
    return np.dtype(dtype) in _DTYPES


def _self_test() -> bool:
    """One row x = (1, 0), class 0 of 2, C = 1, from alpha = 0: G = (0, 1), D = (1, 1), beta = 1/2,
    alpha = (1/2, -1/2), w_0 = x/2, w_1 = -x/2."""
    cpu = jax.local_devices(backend="cpu")[0]
    args = jax.device_put((np.zeros((2, 2), np.float32), np.zeros((1, 2), np.float32),
                           np.array([[1.0, 1.0]], np.float32),
                           dict(vals=np.array([1.0], np.float32), cols=np.array([0], np.int32),
                                ptr=np.array([0, 1], np.int32)),
                           np.zeros(1, np.int32), np.array([[0, 1]], np.int32), np.array([2], np.int32),
                           np.zeros(2, np.uint32)), cpu)
    wt, alpha, index, act, order, stats = jax.jit(ffi_pass)(*args)
    return bool(np.allclose(np.asarray(alpha), [[0.5, -0.5]]) and np.allclose(np.asarray(wt), [[0.5, -0.5], [0, 0]])
                and int(act[0]) == 2 and int(order[0]) == 0 and float(stats[0]) == 1.0)


def rows(op):
    """The rows as the kernel reads them: CSR (vals, cols, ptr) or dense (vals (n, d), empty cols / ptr)."""
    if op.layout == "sparse":
        data, indices, indptr, _ = op.entries()
        return dict(vals=data, cols=indices.astype(jnp.int32), ptr=indptr.astype(jnp.int32))
    empty = jnp.zeros((0,), jnp.int32)
    return dict(vals=op.dense(), cols=empty, ptr=empty)


def ffi_pass(wt, alpha, info, rows, y, index, act, bits):
    """The compiled pass (after ``available()``): (wt, alpha, index, act, order, stats), ``order`` the
    rows it visited in its order (-1 after them); ``bits`` (2,) uint32 seed that order."""
    dt = wt.dtype
    n = act.shape[0]
    call = jax.ffi.ffi_call(
        f"svmopt_mcsvm_pass_{_DTYPES[np.dtype(dt)]}",
        (jax.ShapeDtypeStruct(wt.shape, dt), jax.ShapeDtypeStruct(alpha.shape, dt),
         jax.ShapeDtypeStruct(index.shape, jnp.int32), jax.ShapeDtypeStruct((n,), jnp.int32),
         jax.ShapeDtypeStruct((n,), jnp.int32), jax.ShapeDtypeStruct((2,), dt)),
        vmap_method="sequential", input_output_aliases={0: 0, 1: 1, 7: 2, 8: 3})
    return call(wt, alpha, info, rows["vals"], rows["cols"], rows["ptr"], y, index, act, bits)


def pass_(wt, alpha, info, rows, y, index, act, bits, native: bool):
    """One pass: (wt, alpha, index, act, stats), stats = [the largest max G - min G over the rows that
    moved (-inf: none), the active classes summed over the rows visited]. ``bits`` (2,) uint32 seed the
    pass's random order. ``native``: the compiled kernel, else ``xla_pass`` over ``random_order``."""
    if native:
        out = ffi_pass(wt, alpha, info, rows, y, index, act, bits)
        return out[:4] + out[5:]
    order, count = random_order(jax.random.wrap_key_data(bits), act)
    return xla_pass(wt, alpha, info, rows, y, index, act, order, count)


def random_order(key, act):
    """(order, count): the rows with act > 1 in a random order, then the others."""
    n = act.shape[0]
    perm = jax.random.permutation(key, n).astype(jnp.int32)
    out = perm[jnp.argsort(act[perm] <= 1, stable=True)]
    return out, jnp.sum(act > 1, dtype=jnp.int32)


def _row_ops(rows, d, K, dt):
    """(dot(wt, i) -> x_i . w_m for every m (K,), axpy(wt, i, delta) -> wt + x_i delta^T)."""
    vals = rows["vals"]
    if rows["ptr"].shape[0] == 0:  # dense rows
        return (lambda wt, i: vals[i] @ wt), (lambda wt, i, delta: wt + jnp.outer(vals[i], delta))
    cols, ptr = rows["cols"], rows["ptr"]
    nnz = vals.shape[0]
    if nnz == 0:
        return (lambda wt, i: jnp.zeros((K,), dt)), (lambda wt, i, delta: wt)
    n = ptr.shape[0] - 1
    width = int(max(1, min(d, 4 * int(np.ceil(1.25 * nnz / max(n, 1) / 4)))))  # a padded chunk of a row

    def chunk(i, c):
        p = ptr[i] + c * width + jnp.arange(width)
        ok = p < ptr[i + 1]
        p = jnp.clip(p, 0, nnz - 1)
        return jnp.where(ok, jnp.clip(cols[p], 0, d - 1), 0), jnp.where(ok, vals[p], 0.0)

    def chunks(i):
        return (ptr[i + 1] - ptr[i] + width - 1) // width

    def dot(wt, i):
        def body(c, g):
            cc, v = chunk(i, c)
            return g + v @ wt[cc]
        return lax.fori_loop(0, chunks(i), body, jnp.zeros((K,), dt))

    def axpy(wt, i, delta):
        def body(c, wt):
            cc, v = chunk(i, c)
            return wt.at[cc].add(v[:, None] * delta[None, :])
        return lax.fori_loop(0, chunks(i), body, wt)

    return dot, axpy


def xla_pass(wt, alpha, info, rows, y, index, act, order, count):
    """The kernel's pass in JAX over the rows ``order[:count]`` (each with act > 1): the same steps
    in the same order, so from the same state and order both end at the same state up to rounding.
    Returns (wt, alpha, index, act, stats) as ``pass_``."""
    d, K = wt.shape
    dt = wt.dtype
    dot, axpy = _row_ops(rows, d, K, dt)
    pos = jnp.arange(K)
    inf = jnp.asarray(jnp.inf, dt)

    def row(k, carry):
        wt, alpha, index, act, stop, work = carry
        i = order[k]
        C, A, yi = info[i, 0], info[i, 1], y[i]
        idx, a, al = index[i], act[i], alpha[i]
        live = pos < a
        isy = idx == yi
        G = jnp.where(isy, 0.0, 1.0).astype(dt) + dot(wt, i)[idx]  # per position: e + w_m . x_i
        alc = al[idx]
        bound = jnp.where(isy, C, 0.0)
        free = live & ((alc < 0) | (isy & (alc < C)))
        minG = jnp.min(jnp.where(free, G, inf))
        maxG = jnp.max(jnp.where(live, G, -inf))
        shrunk = live & (alc == bound) & (G < minG)
        keep = live & ~shrunk
        na = jnp.sum(keep, dtype=jnp.int32)
        perm = jnp.argsort(jnp.where(keep, 0, jnp.where(shrunk, 1, 2)), stable=True)
        idx, G, alc, bound, isy = idx[perm], G[perm], alc[perm], bound[perm], isy[perm]
        on = pos < na
        # the sub-problem: D = B + A C e_y sorted down; beta = (sum of its r largest - A C) / r
        B = G - A * alc
        D = jnp.sort(jnp.where(on, B + jnp.where(isy, A * C, 0.0), -inf))[::-1]
        S = jnp.cumsum(D.at[0].add(-A * C))
        r = jnp.arange(1, K)
        more = (S[:-1] < r * D[1:]) & (r < na)
        used = 1 + jnp.sum(jnp.cumprod(more.astype(jnp.int32)))
        beta = S[used - 1] / used
        spread = maxG - minG
        move = (na > 1) & (spread > TINY_SPREAD)
        anew = jnp.where(move & on, jnp.minimum(bound, (beta - B) / jnp.where(A > 0, A, 1.0)), alc)
        delta = jnp.zeros((K,), dt).at[idx].set(anew - alc)
        wt = lax.cond(move, lambda w: axpy(w, i, delta), lambda w: w, wt)
        alpha = alpha.at[i].set(al.at[idx].set(anew))
        return (wt, alpha, index.at[i].set(idx), act.at[i].set(na), jnp.where(move, jnp.maximum(stop, spread), stop),
                work + a.astype(dt))

    act = jnp.clip(act, 0, K)
    carry = (wt, alpha, index, act, -inf, jnp.zeros((), dt))
    wt, alpha, index, act, stop, work = lax.fori_loop(0, count, row, carry)
    return wt, alpha, index, act, jnp.stack([stop, work])
