"""Proximal Newton's inner coordinate descent for l1: a compiled CPU kernel (``svmopt/_l1cd_ffi.cc``)
and its pure-JAX twin.

  solve(w, G, D, cols, active, params, bits, impl="auto") -> (w + d, X d, stats)

One call runs every pass of the inner problem of one outer step of ``newglmnet`` (newGLMNET).
``cols`` are X's columns (``columns(op)``: CSC (vals, idx row ids, ptr), or the dense transpose
(vals (d, n), empty idx and ptr)); ``w``, ``G``, ``active`` (m,), m = d or d + 1 (the last
coordinate a free intercept: a column of ones, no l1 term); ``D`` (n,); ``params`` = [lam, c, tol,
max passes]; ``bits`` (2,) uint32 seed the passes' orders; ``stats`` = [passes, last pass's sum of
violations].

impl: "ffi" the compiled kernel (CPU, float32 / float64; an error where it is not registered), "xla"
the pure-JAX loop (``solve_xla``: any backend, the same passes and the same random orders, so the
two agree to rounding), "auto" (default) the kernel where it is built and passed its
self-test, the default backend is the CPU and the dtype is supported, else the pure loop. Under
vmap the kernel runs the lanes one after the other; the pure loop batches them.
"""
from __future__ import annotations

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from . import _ffi

__all__ = ["available", "supports", "columns", "columns_xla", "solve", "solve_xla", "permutation", "IMPLS"]

IMPLS = ("auto", "xla", "ffi")
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
    wpd, xd, stats = jax.jit(_solve_ffi)(*args)
    return bool(np.allclose(np.asarray(wpd), [0.4]) and np.allclose(np.asarray(xd), [0.4, 0.8])
                and float(stats[0]) == 2.0)


def supports(dtype) -> bool:
    """Whether the kernel has a version for ``dtype`` (float32, float64)."""
    return np.dtype(dtype) in _DTYPES


def _use_ffi(impl, dtype) -> bool:
    if impl not in IMPLS:
        raise ValueError(f"svmopt l1cd: impl must be one of {IMPLS}, got {impl!r}")
    if impl == "ffi":
        available()  # registers the targets (forced: used even where the self-test failed)
        return True
    return impl == "auto" and supports(dtype) and jax.default_backend() == "cpu" and available()


def columns(op, impl: str = "auto"):
    """X's columns for ``solve``: CSC (vals, idx row ids, ptr (d + 1)) of a CSR operator, each
    column's entries in row order, or the transpose (d, n) of dense X (empty idx and ptr); one copy
    of X, held for the solve. CSC through the kernel module's counting sort (``impl`` as for
    ``solve``), else ``columns_xla``; both give the same arrays."""
    if op.layout == "sparse" and _use_ffi(impl, op.dtype):
        n, d = op.shape
        data, indices, indptr, _ = op.entries()
        dt = data.dtype
        call = jax.ffi.ffi_call(  # a counting sort in the kernel module (cheaper than an XLA sort)
            f"svmopt_csc_{_DTYPES[np.dtype(dt)]}",
            (jax.ShapeDtypeStruct(data.shape, dt), jax.ShapeDtypeStruct(data.shape, jnp.int32),
             jax.ShapeDtypeStruct((d + 1,), jnp.int32)), vmap_method="sequential")
        vals, idx, ptr = call(data, indices.astype(jnp.int32), indptr.astype(jnp.int32))
        return dict(vals=vals, idx=idx, ptr=ptr)
    return columns_xla(op)


def columns_xla(op):
    """``columns`` in pure JAX: CSC by a stable sort of the entries by column (entries past the last
    row pointer last, as zeros of row 0, as the kernel's counting sort places them), or the dense
    transpose."""
    if op.layout != "sparse":
        empty = jnp.zeros((0,), jnp.int32)
        return dict(vals=jnp.transpose(op.dense()), idx=empty, ptr=empty)
    n, d = op.shape
    data, indices, indptr, row_ids = op.entries()
    nnz = data.shape[0]
    pos = jnp.arange(nnz, dtype=jnp.int32)
    used = pos < indptr[-1]
    key = jnp.where(used, indices.astype(jnp.int32), d)
    b = max(1, (nnz - 1).bit_length())
    if (d + 1).bit_length() + b <= 32:
        # column above position in one uint32: a sort of one array (cheaper than a key-value sort on the CPU),
        # stable because positions are distinct
        packed = lax.sort((key.astype(jnp.uint32) << b) | pos.astype(jnp.uint32), is_stable=False)
        perm = (packed & jnp.uint32((1 << b) - 1)).astype(jnp.int32)
    else:
        perm = jnp.argsort(key, stable=True).astype(jnp.int32)
    skey = key[perm]
    ptr = jnp.searchsorted(skey, jnp.arange(d + 1, dtype=jnp.int32), side="left").astype(jnp.int32)
    live = skey < d
    vals = jnp.where(live, data[perm], 0)
    idx = jnp.where(live, row_ids.astype(jnp.int32)[perm], 0)
    return dict(vals=vals, idx=idx, ptr=ptr)


def solve(w, G, D, cols, active, params, bits, impl: str = "auto"):
    """Every pass of the inner problem of one outer step (see the module docstring); ``impl``
    "auto" (default), "ffi" or "xla"."""
    if _use_ffi(impl, w.dtype):
        return _solve_ffi(w, G, D, cols, active, params, bits)
    return solve_xla(w, G, D, cols, active, params, bits)


def _solve_ffi(w, G, D, cols, active, params, bits):
    dt = w.dtype
    call = jax.ffi.ffi_call(
        f"svmopt_l1cd_{_DTYPES[np.dtype(dt)]}",
        (jax.ShapeDtypeStruct(w.shape, dt), jax.ShapeDtypeStruct(D.shape, dt), jax.ShapeDtypeStruct((2,), dt)),
        vmap_method="sequential")
    return call(w, G, D, cols["vals"], cols["idx"], cols["ptr"], active, params.astype(dt), bits)


# ---- SplitMix64 in uint32 pairs (hi, lo): the kernel's generator without 64-bit integers ----------

_U32 = jnp.uint32
_GOLDEN = (0x9E3779B9, 0x7F4A7C15)
_MIX1 = (0xBF58476D, 0x1CE4E5B9)
_MIX2 = (0x94D049BB, 0x133111EB)


def _mul32(a, b):
    """The full 64-bit product of two uint32 as (hi, lo), through 16-bit halves."""
    a0, a1, b0, b1 = a & 0xFFFF, a >> 16, b & 0xFFFF, b >> 16
    p00, p01, p10, p11 = a0 * b0, a0 * b1, a1 * b0, a1 * b1
    mid = (p00 >> 16) + (p01 & 0xFFFF) + (p10 & 0xFFFF)
    return p11 + (p01 >> 16) + (p10 >> 16) + (mid >> 16), (p00 & 0xFFFF) | (mid << 16)


def _mul64(x, k):
    """x * k mod 2^64, k a constant pair."""
    hi, lo = _mul32(x[1], _U32(k[1]))
    return hi + x[0] * _U32(k[1]) + x[1] * _U32(k[0]), lo


def _shr_xor(x, s):
    """x ^ (x >> s), 0 < s < 32."""
    return x[0] ^ (x[0] >> s), x[1] ^ ((x[1] >> s) | (x[0] << (32 - s)))


def _below(state, bound):
    """(state', uniform in [0, bound)): ``SplitMix64::below`` of svmopt/_ffi_module.h."""
    lo = state[1] + _U32(_GOLDEN[1])
    hi = state[0] + _U32(_GOLDEN[0]) + (lo < state[1]).astype(_U32)
    z = _mul64(_shr_xor((hi, lo), 30), _MIX1)
    z = _mul64(_shr_xor(z, 27), _MIX2)
    top = z[0] ^ (z[0] >> 31)  # the high word of z ^ (z >> 31)
    return (hi, lo), _mul32(top, bound.astype(_U32))[0]


def _shuffle(order, size, state):
    """Fisher-Yates over order[:size] exactly as the kernel: k = size .. 2 swaps k - 1 with below(k)."""

    def body(c):
        k, order, state = c
        state, j = _below(state, k)
        j = j.astype(jnp.int32)
        a, b = order[k - 1], order[j]
        return k - 1, order.at[k - 1].set(b).at[j].set(a), state

    _, order, state = lax.while_loop(lambda c: c[0] > 1, body, (size, order, state))
    return order, state


def permutation(bits, n):
    """The kernel's first pass order over n active coordinates seeded by ``bits`` (2,) uint32
    (also dual CD's compiled pass order: both draw it so)."""
    bits = jnp.asarray(bits, _U32)
    order, _ = _shuffle(jnp.arange(n, dtype=jnp.int32), jnp.asarray(n, jnp.int32), (bits[0], bits[1]))
    return order


# ---- the passes in pure JAX ----------------------------------------------------------------------

def _chunk(nnz, d):
    """Entries read per step of a sparse column walk (static): about the mean column length."""
    mean = -(-nnz // max(d, 1))
    return int(min(nnz, max(16, min(4096, 1 << max(0, mean - 1).bit_length()))))


def solve_xla(w, G, D, cols, active, params, bits):
    """``solve`` in pure JAX: the kernel's passes, shrinking, stopping rule and random orders
    (SplitMix64 in uint32 arithmetic), one ``lax.while_loop`` step per coordinate visit; a sparse
    column is read in chunks of about the mean column length. Same inputs and outputs as the
    kernel; sums are taken in another order, so results agree to rounding."""
    dt = w.dtype
    m, n = w.shape[0], D.shape[0]
    vals, idx, ptr = cols["vals"], cols["idx"], cols["ptr"]
    sparse = ptr.shape[0] > 0
    d = ptr.shape[0] - 1 if sparse else vals.shape[0]
    if m not in (d, d + 1) or G.shape != (m,) or active.shape != (m,) or params.shape != (4,):
        raise ValueError(f"svmopt l1cd: operand shapes do not match (w {w.shape}, G {G.shape}, D {D.shape}, "
                         f"active {active.shape}, params {params.shape}, {d} columns)")
    fb = m == d + 1
    params = params.astype(dt)
    lam, c, tol, cap = params[0], params[1], params[2], params[3]
    max_passes = jnp.where(jnp.isfinite(cap), jnp.clip(jnp.trunc(cap), 0, 2.0 ** 31 - 1), 0).astype(jnp.int32)
    nf = jnp.asarray(n, dt)
    nnz = vals.shape[0] if sparse else 0
    B = _chunk(nnz, d) if sparse and nnz else 0
    if sparse:
        idx = jnp.clip(idx, 0, n - 1)  # as the kernel: row ids clamped into [0, n)
    zero = jnp.zeros((), dt)

    def walk(j, f, init, v):
        """fold f(acc, window of v, window rows, mask) over column j's entries, B at a time."""
        start, end = ptr[j], ptr[j + 1]

        def body(k, acc):
            s = start + k * B
            at = jnp.minimum(s, nnz - B)  # a window that fits, its extra entries masked
            p = at + jnp.arange(B, dtype=jnp.int32)
            mask = (p >= s) & (p < end)
            return f(acc, lax.dynamic_slice_in_dim(v, at, B), lax.dynamic_slice_in_dim(idx, at, B), mask)

        return lax.fori_loop(0, (end - start + B - 1) // B, body, init)

    # H_j = sum_i x_ij^2 D_i + c of the active columns, a column walk each (a segment sum over the
    # entries is a scatter, costlier than a pass)
    if sparse:
        xD = vals * D[idx]  # x_ij D_i once: the passes' column walks gather only Xd

        def sq(j, H):
            f = lambda acc, v, r, mask: acc + jnp.sum(jnp.where(mask, v * v * D[r], 0))  # noqa: E731
            return H.at[j].set(lax.cond(active[j], lambda: walk(j, f, zero, vals), lambda: zero))

        Hsq = lax.fori_loop(0, d, sq, jnp.zeros((d,), dt)) if B else jnp.zeros((d,), dt)
    else:
        Hsq = jnp.sum(vals * vals * D[None, :], axis=1)
    if fb:
        Hsq = jnp.append(Hsq, jnp.sum(D))
    Hcol = Hsq + c

    def column_dot(j, Xd):  # sum_i x_ij D_i Xd_i
        if not sparse:
            return jnp.sum(lax.dynamic_index_in_dim(vals, jnp.minimum(j, d - 1), keepdims=False) * D * Xd)
        if not B:
            return zero
        return walk(j, lambda acc, v, r, mask: acc + jnp.sum(jnp.where(mask, v * Xd[r], 0)), zero, xD)

    def column_axpy(j, z, Xd):  # Xd + z x_j
        if not sparse:
            return Xd + z * lax.dynamic_index_in_dim(vals, jnp.minimum(j, d - 1), keepdims=False)
        if not B:
            return Xd
        return walk(j, lambda acc, v, r, mask: acc.at[r].add(jnp.where(mask, z * v, 0)), Xd, vals)

    if fb:  # the intercept's column of ones (index d)
        dot = lambda j, Xd: lax.cond(j == d, lambda: jnp.sum(D * Xd), lambda: column_dot(j, Xd))  # noqa: E731
        axpy = lambda j, z, Xd: lax.cond(j == d, lambda: Xd + z, lambda: column_axpy(j, z, Xd))  # noqa: E731
    else:
        dot, axpy = column_dot, column_axpy

    def visit(carry):
        k, size, order, wpd, Xd, Gmax, total, Gmax_old = carry
        j = order[k]
        H, wj = Hcol[j], wpd[j]
        lj = jnp.where(j == d, zero, lam) if fb else lam
        g = G[j] + c * (wj - w[j]) + dot(j, Xd)
        gp, gn = g + lj, g - lj
        at0 = wj == 0
        viol = jnp.where(at0, jnp.where(gp < 0, -gp, jnp.where(gn > 0, gn, zero)),
                         jnp.where(wj > 0, jnp.abs(gp), jnp.abs(gn)))
        # at 0 with the model's gradient well inside (-lam, lam): shrunk for the rest of these passes
        shrink = at0 & ~(gp < 0) & ~(gn > 0) & (gp > Gmax_old / nf) & (gn < -Gmax_old / nf)
        last = jnp.where(shrink, size - 1, size)
        to = jnp.minimum(last, m - 1)
        a, b = order[k], order[to]
        order = order.at[k].set(jnp.where(shrink, b, a)).at[to].set(jnp.where(shrink, a, b))
        Gmax = jnp.where(~shrink & (Gmax < viol), viol, Gmax)  # std::max: a NaN violation is passed over
        total = jnp.where(shrink, total, total + viol)
        z = jnp.where(gp < H * wj, -gp / H, jnp.where(gn > H * wj, -gn / H, -wj))
        move = ~shrink & (jnp.abs(z) >= 1e-12)
        z = jnp.clip(z, -10.0, 10.0)  # as LIBLINEAR: a bounded move per visit
        wpd = wpd.at[j].set(jnp.where(move, wj + z, wj))
        Xd = lax.cond(move, lambda: axpy(j, z, Xd), lambda: Xd)
        return jnp.where(shrink, k, k + 1), last, order, wpd, Xd, Gmax, total, Gmax_old

    inf = jnp.asarray(jnp.inf, dt)
    n_active = jnp.sum(active, dtype=jnp.int32)
    full = jnp.argsort(~active, stable=True).astype(jnp.int32)  # the active coordinates first, in index order

    def one_pass(carry):
        wpd, Xd, order, size, Gmax_old, _, passes, state, _ = carry
        widen = (passes + 1 == max_passes) & (size < n_active)  # the last pass allowed sees every coordinate
        order, size = jnp.where(widen, full, order), jnp.where(widen, n_active, size)
        Gmax_old = jnp.where(widen, inf, Gmax_old)
        order, state = _shuffle(order, size, state)
        _, size, order, wpd, Xd, Gmax, total, _ = lax.while_loop(
            lambda cc: cc[0] < cc[1], visit, (jnp.int32(0), size, order, wpd, Xd, zero, zero, Gmax_old))
        passes = passes + 1
        met = total <= tol
        # met with coordinates shrunk: one more look at all of them before stopping
        reset = met & (size < n_active)
        order, size = jnp.where(reset, full, order), jnp.where(reset, n_active, size)
        return wpd, Xd, order, size, jnp.where(met, inf, Gmax), total, passes, state, met & ~reset

    bits = jnp.asarray(bits, _U32)
    init = (w, jnp.zeros((n,), dt), full, n_active, inf, zero, jnp.int32(0), (bits[0], bits[1]), jnp.asarray(False))
    wpd, Xd, _, _, _, total, passes, _, _ = lax.while_loop(lambda cc: (cc[6] < max_passes) & ~cc[8], one_pass, init)
    return wpd, Xd, jnp.stack([passes.astype(dt), total])
