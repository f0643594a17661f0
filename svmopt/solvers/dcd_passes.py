"""Dual coordinate descent's passes in pure JAX (``svmopt.solvers.dual_cd``): the serial pass of
Algorithm 1 with shrinking, the online pass of Algorithm 2, the block pass with its exact line
search and serial fallback, and the serial pass over rows split across devices. They run where the
compiled pass (``svmopt._dcd``) does not: accelerators, sharded rows, the "online" and "block"
variants, builds without the extension, and ``dual_cd(impl="xla")``.

The serial loop body is a few kernels: a gather of w (sparse rows), the fused update, a scatter
into w, an in-place write of the pass's output. For that each pass first gathers its rows into pass
order (y_i x_i, D_ii, L_i, U_i, 1/Qbar_ii, alpha_i) and the loop reads them in sequence, carrying
only w and the output (new alpha, PG, shrink flag) that is scattered back after the loop: each
coordinate is visited once per pass, so alpha_i can be read from the records. A block step costs
about as many kernels for ``block_size`` coordinates. Sparse rows are padded (ELL) rows of
``width`` entries built once from the CSR; rows that are longer keep their place in the random pass
(the short rows between two long ones run as one plain loop) and walk their remaining entries in
chunks of ``width``.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

from ..problem import Problem
from ..sharding import AXIS
from .base import platform

__all__ = ["COEFS", "DCDState", "serial_pass", "block_pass", "online_pass", "sharded_pass", "exact_extremes", "bounds", "layout",
           "row_table", "key", "wrap", "key_words", "sharded_specs", "LOCAL"]

COEFS = 6
"""Per-row coefficients after a row's values in the pass table: D_ii, L_i, U_i, 1/Qbar_ii, the dual's
linear coefficient (1 for classification, the target for regression) and its l1 weight (epsilon)."""

LOCAL = ("table", "cols", "tail", "long")
"""The per-device fields of a sharded solve's state: the records of the device's own rows."""


class DCDState(NamedTuple):
    w: Any
    alpha: Any
    table: Any  # per row: y_i x_i (W values), D_ii, L_i, U_i, 1/Qbar_ii
    cols: Any  # sparse: padded column indices, else None
    tail: Any  # sparse rows longer than the padding, else None
    long: Any
    active: Any  # not shrunk
    Mbar: Any
    mbar: Any
    crit: Any  # M - m of the last pass
    done: Any
    n_active: Any
    key: Any
    eps: Any  # the pass rule's tolerance (tightened by the driver's certificate)
    layout: Any  # block variant: the stored random layout, else None
    rows: Any = None  # compiled serial pass: z_i = y_i x_i as CSR or dense (``svmopt._dcd.rows``), else None
    work: Any = None  # rows visited since the last periodic certificate, in passes over all n (None: sharded)


def sharded_specs():
    """PartitionSpecs of a sharded solve's state: w replicated, the rows' fields split by rows."""
    R, rows = P(), P(AXIS)
    return DCDState(w=R, alpha=rows, table=rows, cols=None, tail=None, long=None, active=rows, Mbar=R, mbar=R,
                    crit=R, done=R, n_active=R, key=R, eps=R, layout=None)


# ---------------------------------------------------------------- the coordinate update (eq. 8, 9, 16)
def _update(a, G, lo, hi, invq, eps, Mbar, mbar):
    """New alpha, projected gradient (0 when shrunk) and shrink flag; elementwise.

    The coordinate's problem is min_x 1/2 Qbar (x - a)^2 + G (x - a) + eps |x| on [lo, hi]: eps = 0 for
    the classification duals (eq. 9: a clipped Newton step), eps > 0 for the epsilon-insensitive
    regression duals (LIBLINEAR's SVR update: the Newton step soft-thresholded by eps / Qbar, then
    clipped). The projected gradient (eq. 8) takes the one-sided derivatives G + eps sign."""
    up = jnp.where(a >= 0, G + eps, G - eps)  # derivative when alpha increases
    down = jnp.where(a > 0, G + eps, G - eps)  # ... when it decreases
    at_lo, at_hi = a <= lo, a >= hi
    shrink = (at_lo & (up > Mbar)) | (at_hi & (down < mbar))  # eq. 16
    pg = jnp.where(~at_hi & (up < 0), up, jnp.where(~at_lo & (down > 0), down, 0.0))  # eq. 8
    pg = jnp.where(lo >= hi, 0.0, pg)  # a fixed variable (weight 0: L = U = 0) is optimal as it is
    z = a - G * invq
    z = jnp.sign(z) * jnp.maximum(jnp.abs(z) - eps * invq, 0.0)
    # a shrunk coordinate sits at a bound with G pointing out of the box: the clip keeps it there
    return jnp.clip(z, lo, hi), jnp.where(shrink, 0.0, pg), shrink  # eq. 9


def bounds(method, st):
    """Mbar, mbar of eq. 16 (no shrinking: +-inf)."""
    inf = jnp.asarray(jnp.inf, st["w"].dtype)
    return (st["Mbar"], st["mbar"]) if method.shrinking else (inf, -inf)


def _extremes(pg, kept):
    """M, m: the largest and smallest projected gradient over the coordinates kept in the pass."""
    return jnp.max(jnp.where(kept, pg, -jnp.inf)), jnp.min(jnp.where(kept, pg, jnp.inf))


def serial_pass(method, pb: Problem, st, key):
    """Algorithm 1 over the active coordinates in a fresh random order (Sections 3.1-3.2)."""
    n, width = pb.n, st["table"].shape[1] - COEFS
    Mbar, mbar = bounds(method, st)
    # the active coordinates in one random order, shrunk ones last (not visited)
    order, counts = _grouped(_random_order(key, n), jnp.where(st["active"], 0, 2))
    n_act = counts[0]
    recs = _records(st, order, 1)
    recs["alpha"] = st["alpha"][order]
    out = jnp.zeros((n, 3), recs["alpha"].dtype).at[:, 0].set(recs["alpha"])  # new alpha, PG, shrink flag
    short = _serial_body(recs, width, Mbar, mbar, tails=False)
    if st["tail"] is None:
        w, out = lax.fori_loop(0, n_act, short, (st["w"], out))
    else:
        # long rows keep their random places (visiting them after the short ones, a fixed
        # two-group order, stalls the descent): the short runs between them are plain loops
        # and only the long rows take the tail-walking step
        step_long = _serial_body(recs, width, Mbar, mbar, tails=True)
        is_long = st["long"][order] & (jnp.arange(n) < n_act)
        n_long = jnp.sum(is_long, dtype=jnp.int32)
        at = jnp.nonzero(is_long, size=n, fill_value=0)[0].astype(jnp.int32)  # their places, in pass order
        after = lambda k: jnp.where(k > 0, at[jnp.maximum(k - 1, 0)] + 1, 0)  # first place past long row k-1

        def run(k, carry):  # the short rows before long row k, then long row k
            return step_long(at[k], lax.fori_loop(after(k), at[k], short, carry))

        carry = lax.fori_loop(0, n_long, run, (st["w"], out))
        w, out = lax.fori_loop(after(n_long), n_act, short, carry)
    kept = (jnp.arange(n) < n_act) & (out[:, 2] == 0)
    return (w, st["alpha"].at[order].set(out[:, 0]), *_extremes(out[:, 1], kept),
            jnp.zeros((n,), bool).at[order].set(kept))


def block_pass(method, pb: Problem, st, key):
    """The block variant: blocks of a stored random layout of the active rows, in a random block order.

    Gathering every row into a fresh order each pass costs more than the block loop itself, so
    the rows are laid out once (active ones first, in a random order) and a pass permutes only
    the blocks. The layout is redrawn when shrinking has removed a quarter of its rows or when
    the shrunk coordinates are restored, so shrinking still shortens the pass. When the active
    rows fit in max(8 B, n/16) (on accelerators, where a serial step is a kernel launch, in one
    block) the pass takes exact serial steps instead, block after block: there Jacobi steps on a
    few strongly coupled rows stall, and serial steps are cheap.
    """
    n, B = pb.n, method.block(pb)
    width = st["table"].shape[1] - COEFS
    Mbar, mbar = bounds(method, st)
    k_lay, k_blk = jax.random.split(key)
    n_active, lay = jnp.sum(st["active"], dtype=jnp.int32), st["layout"]
    stale = (n_active > lay["n"]) | (4 * n_active < 3 * lay["n"])
    lay = lax.cond(stale, lambda: layout(st, k_lay, B), lambda: lay)
    order = lay["order"]
    recs = dict(lay["recs"], csr=None if st["tail"] is None else st["tail"]["csr"])
    n_pad = recs["table"].shape[0]
    pad = lambda x: jnp.concatenate([x, jnp.zeros((n_pad - n,), x.dtype)])
    recs["alpha"] = pad(st["alpha"][order])
    live = pad(st["active"][order]) & (jnp.arange(n_pad) < lay["n"])  # rows shrunk since the layout: skipped
    n_blocks = (lay["n"] + B - 1) // B
    ids = jnp.arange(n_pad // B)
    blocks, _ = _grouped(_random_order(k_blk, n_pad // B), jnp.where(ids < n_blocks, 0, 2))
    out = jnp.zeros((n_pad, 3), recs["alpha"].dtype).at[:, 0].set(recs["alpha"])
    loops = [lambda c: lax.fori_loop(0, n_blocks, _block_body(recs, width, Mbar, mbar, B, blocks, live), c)]
    for tails in (False, True) if recs["tail"] is not None else (False,):
        serial = _serial_body(recs, width, Mbar, mbar, tails, pos=lambda s: blocks[s // B] * B + s % B, live=live)
        loops.append(lambda c, body=serial: lax.fori_loop(0, n_blocks * B, body, c))
    # 0: Jacobi blocks; 1: the serial fallback; 2: the same when some active row is long
    # on accelerators a serial step is a kernel launch: fall back only once the active rows fit one block
    small = max(8 * B, n // 16) if platform(pb) == "cpu" else B
    mode = jnp.where(lay["n"] <= small, 1 + jnp.any(st["long"] & st["active"]), 0)
    w, out = lax.switch(jnp.minimum(mode, len(loops) - 1), loops, (st["w"], out))
    kept = live[:n] & (out[:n, 2] == 0)
    return (w, st["alpha"].at[order].set(out[:n, 0]), *_extremes(out[:n, 1], kept),
            jnp.zeros((n,), bool).at[order].set(kept), lay)


def layout(st, key, B):
    """The active rows in a random order (then the inactive ones), gathered once, padded to B."""
    n = st["active"].shape[0]
    order, counts = _grouped(_random_order(key, n), jnp.where(st["active"], 0, 2))
    recs = _records(st, order, B)
    recs.pop("csr")  # static: taken from the state each pass, not stored twice
    return dict(order=order, n=counts[0], recs=recs)


def _serial_body(recs, width, Mbar, mbar, tails, pos=None, live=None):
    """Coordinate step s of Algorithm 1 on the pass's records (eq. 12, 8, 9, 13).

    ``pos`` maps the step to a record (default: record s); ``live`` masks records not to update.
    """

    def body(s, carry):
        w, out = carry
        p = s if pos is None else pos(s)
        f = lax.dynamic_index_in_dim(recs["table"], p, keepdims=False)
        a = lax.dynamic_index_in_dim(recs["alpha"], p, keepdims=False)
        row = _record_row(recs, p, tails)
        G = _row_dot(w, row, f[:width]) - f[width + 4] + f[width] * a
        a_new, pg, shrink = _update(a, G, f[width + 1], f[width + 2], f[width + 3], f[width + 5], Mbar, mbar)
        if live is not None:
            on = live[p]
            a_new, pg, shrink = jnp.where(on, a_new, a), jnp.where(on, pg, 0.0), on & shrink
        w = _row_axpy(w, row, f[:width], a_new - a)
        return w, lax.dynamic_update_index_in_dim(out, jnp.stack([a_new, pg, shrink.astype(w.dtype)]), p, 0)

    return body


def _block_body(recs, width, Mbar, mbar, B, blocks, live):
    """Block step: B Jacobi proposals (eq. 9) from one w, then the exact line search on the dual."""

    def body(b, carry):
        w, out = carry
        s = blocks[b] * B
        f = lax.dynamic_slice_in_dim(recs["table"], s, B)
        a = lax.dynamic_slice_in_dim(recs["alpha"], s, B)
        on = lax.dynamic_slice_in_dim(live, s, B)
        row = _record_row(recs, s, recs["tail"] is not None, B)
        vals, Dii = f[:, :width], f[:, width]
        G = _row_dot(w, row, vals) - f[:, width + 4] + Dii * a
        a_new, pg, shrink = _update(a, G, f[:, width + 1], f[:, width + 2], f[:, width + 3], 0.0, Mbar, mbar)
        dlt = jnp.where(on, a_new - a, 0.0)
        # along t dlt the dual changes by t G.dlt + t^2/2 (|v|^2 + sum D dlt^2), v = sum dlt_i y_i x_i
        v = _row_axpy(jnp.zeros_like(w), row, vals, dlt)
        curv = jnp.vdot(v, v) + jnp.sum(Dii * dlt * dlt)
        slope = jnp.vdot(G, dlt)
        t = jnp.where(curv > 0, jnp.clip(-slope / jnp.where(curv > 0, curv, 1.0), 0.0, 1.0), 1.0)
        res = jnp.stack([a + t * dlt, jnp.where(on, pg, 0.0), (on & shrink).astype(w.dtype)], axis=1)
        return w + t * v, lax.dynamic_update_slice_in_dim(out, res, s, 0)

    return body


def online_pass(pb: Problem, st, key):
    """Algorithm 2: n uniformly random coordinates; alpha is read live (a coordinate may repeat)."""
    n, d = pb.n, pb.d
    width = st["table"].shape[1] - COEFS
    pick = jax.random.randint(key, (n,), 0, n, dtype=jnp.int32)
    recs = _records(st, pick, 1)
    slot = d + pick  # u = [w | alpha]: one gather reads w.x_i and alpha_i, one scatter writes both
    tails = st["tail"] is not None

    def body(s, u):
        f = lax.dynamic_index_in_dim(recs["table"], s, keepdims=False)
        row = _record_row(recs, s, tails)
        cols = jnp.arange(d, dtype=jnp.int32) if row["cols"] is None else row["cols"]
        idx = jnp.concatenate([cols, slot[s][None]])
        g = _gather(u, idx)
        a = g[width]
        G = jnp.dot(g[:width], f[:width]) - f[width + 4] + f[width] * a
        if tails:
            G = G + _tail_dot(u, row["csr"], row["tail"], width)[0]
        a_new, _, _ = _update(a, G, f[width + 1], f[width + 2], f[width + 3], f[width + 5], jnp.inf, -jnp.inf)
        delta = a_new - a
        u = _scatter_add(u, idx, jnp.concatenate([delta * f[:width], delta[None]]))
        return _tail_add(u, row["csr"], row["tail"], width, delta[None]) if tails else u

    u = lax.fori_loop(0, n, body, jnp.concatenate([st["w"], st["alpha"]]))
    return u[:d], u[d:]


# ---------------------------------------------------------------- rows: dense, padded sparse, long tails
_DN_GATHER = lax.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
_DN_SCATTER = lax.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,))
# the indices are in range by construction; skipping jnp's negative-index fix-up saves kernels per step
_IN_BOUNDS = lax.GatherScatterMode.PROMISE_IN_BOUNDS


def _gather(x, idx):
    return lax.gather(x, idx[..., None], _DN_GATHER, (1,), mode=_IN_BOUNDS)


def _scatter_add(x, idx, upd):
    return lax.scatter_add(x, idx[..., None], upd, _DN_SCATTER, mode=_IN_BOUNDS)


def _record_row(recs, s, tails, B=None):
    """Row s (or rows s..s+B) of the pass: column indices for sparse X, the tail for long rows."""
    take = (lambda x: lax.dynamic_index_in_dim(x, s, keepdims=False)) if B is None else \
        (lambda x: lax.dynamic_slice_in_dim(x, s, B))
    row = {"cols": None if recs["cols"] is None else take(recs["cols"])}
    if tails:
        row.update(tail=take(recs["tail"]).reshape(-1, 2), csr=recs["csr"])
    return row


def _row_dot(w, row, vals):
    """y_i x_i . w for one row (vals (W,)) or a block (vals (B, W))."""
    if row["cols"] is None:
        return vals @ w
    out = jnp.sum(_gather(w, row["cols"]) * vals, axis=-1)
    if "tail" in row:
        out = out + _tail_dot(w, row["csr"], row["tail"], vals.shape[-1]).reshape(out.shape)
    return out


def _row_axpy(w, row, vals, coef):
    """w + sum coef_i y_i x_i for one row (coef scalar) or a block (coef (B,))."""
    if row["cols"] is None:
        return w + (coef * vals if vals.ndim == 1 else coef @ vals)
    w = _scatter_add(w, row["cols"], coef[..., None] * vals if vals.ndim > 1 else coef * vals)
    if "tail" in row:
        w = _tail_add(w, row["csr"], row["tail"], vals.shape[-1], jnp.reshape(coef, (-1,)))
    return w


def _tail_chunk(csr, tail, width, c):
    """Entries c*width .. (c+1)*width of each row (start, length): (cols, vals), zero past its end.

    Chunk 0 is the padded row itself; past-the-end positions read the padding (or are clamped) and
    are masked to zero.
    """
    start, length = tail[:, 0], tail[:, 1]
    p = c * width + jnp.arange(width)
    ok = p < length[:, None]
    pos = start[:, None] + p
    return jnp.where(ok, csr["cols"][pos], 0), jnp.where(ok, csr["vals"][pos], 0.0)


def _tail_dot(w, csr, tail, width):
    """Dot products with w of the entries past ``width`` of rows tail = (start, length) (k, 2)."""

    def body(c, acc):
        cols, vals = _tail_chunk(csr, tail, width, c)
        return acc + jnp.sum(w[cols] * vals, axis=1)

    n_chunks = (jnp.max(tail[:, 1]) + width - 1) // width
    return lax.fori_loop(1, n_chunks, body, jnp.zeros(tail.shape[:1], w.dtype))


def _tail_add(w, csr, tail, width, coef):
    """w[:d] += sum_k coef_k * (entries past ``width`` of row k)."""

    def body(c, w):
        cols, vals = _tail_chunk(csr, tail, width, c)
        return w.at[cols].add(coef[:, None] * vals, mode="promise_in_bounds")

    n_chunks = (jnp.max(tail[:, 1]) + width - 1) // width
    return lax.fori_loop(1, n_chunks, body, w)


def _width(pb: Problem, width):
    """Static padded row width: d for dense X; for sparse X ``width`` or 1.25 x the mean row length."""
    if pb.op.layout == "dense":
        return pb.d
    if width is None:
        width = 4 * int(np.ceil(1.25 * pb.op.nnz / max(pb.n, 1) / 4))
    return int(max(1, min(width, pb.d)))


def row_table(pb: Problem, width):
    """z_i = y_i x_i as a table: vals (n, W); for sparse X also cols (n, W) and the long-row tails.

    Built once per solve, inside the jitted core, from the operator's CSR (data, indices, indptr).
    """
    op, n, d = pb.op, pb.n, pb.d
    W = _width(pb, width)
    none = dict(cols=None, tail=None, long=jnp.zeros((n,), bool))
    if op.layout == "dense":
        return dict(none, vals=op.dense() * pb.y[:, None])
    data, indices, indptr, row_ids = op.entries()
    start, length = indptr[:-1], indptr[1:] - indptr[:-1]
    csr = dict(cols=jnp.concatenate([indices, jnp.zeros((W,), jnp.int32)]),
               vals=jnp.concatenate([data * pb.y[row_ids], jnp.zeros((W,), op.dtype)]))
    tail = jnp.stack([start, length], axis=1).astype(jnp.int32)
    cols, vals = _tail_chunk(csr, tail, W, 0)
    if W >= d:  # no row is longer than the padding
        return dict(none, cols=cols, vals=vals)
    return dict(cols=cols, vals=vals, tail=dict(rows=tail, csr=csr), long=length > W)


def _records(st, order, B):
    """The rows in ``order`` (one vectorized gather), padded with zero rows to a multiple of B."""
    take = lambda x: x[order]
    recs = dict(table=take(st["table"]), cols=None if st["cols"] is None else take(st["cols"]), tail=None, csr=None)
    if st["tail"] is not None:
        recs.update(tail=take(st["tail"]["rows"]), csr=st["tail"]["csr"])
    pad = (-order.shape[0]) % B
    if pad:  # zero rows: L = U = 0 proposes no move, length 0 has no tail
        recs = {k: v if v is None or k == "csr" else jnp.concatenate([v, jnp.zeros((pad,) + v.shape[1:], v.dtype)])
                for k, v in recs.items()}
    return recs


def _random_order(key, n):
    """A random permutation of range(n): sort random bits packed above the index (one array sort).

    XLA's sort of one uint32 array is cheaper on CPU than a key-value sort. With b index bits
    32 - b random bits remain; ties (same random bits) are broken by the previous order, and a
    second round with fresh bits is added when fewer than 16 random bits remain (n > 65536).
    """
    b = max(1, (n - 1).bit_length())
    mask = (1 << b) - 1
    rounds = 1 if 32 - b >= 16 else 2
    order = jnp.arange(n, dtype=jnp.int32)
    for k in jax.random.split(key, rounds):
        r = jax.random.bits(k, (n,), jnp.uint32)
        pos = lax.sort((r >> b << b) | jnp.arange(n, dtype=jnp.uint32), is_stable=False) & mask
        order = order[pos.astype(jnp.int32)]
    return order


def _grouped(order, group):
    """Stable partition of ``order`` by group id 0, 1, 2 (O(n), no sort); returns (order, counts)."""
    g = group[order]
    counts, offset = [], 0
    pos = jnp.zeros_like(order)
    for k in range(3):
        hit = g == k
        c = jnp.cumsum(hit, dtype=jnp.int32)
        pos = jnp.where(hit, offset + c - 1, pos)
        counts.append(c[-1])
        offset = offset + c[-1]
    return jnp.zeros_like(order).at[pos].set(order), counts


def exact_extremes(pb: Problem, st, w, alpha):
    """max and min over i of the projected gradient (eq. 8) at (w, alpha): one matvec."""
    width = st["table"].shape[1] - COEFS
    Dii, lo, hi, invq, lin, eps = st["table"][:, width:].T
    G = pb.y * pb.op.matvec(w) - lin + Dii * alpha
    _, pg, _ = _update(alpha, G, lo, hi, invq, eps, jnp.inf, -jnp.inf)
    return jnp.max(pg), jnp.min(pg)


def key(seed):
    """A typed key from an int seed (traced or not) or a key (typed or raw uint32 words)."""
    if isinstance(seed, jax.Array) and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key):
        return seed
    if isinstance(seed, (jax.Array, np.ndarray)) and seed.dtype == np.uint32 and seed.shape == (2,):
        return jax.random.wrap_key_data(jnp.asarray(seed))
    return jax.random.key(seed)


def wrap(data):
    """Keys are carried as raw words (a uniform array leaf); typed back for jax.random."""
    return jax.random.wrap_key_data(data)


def sharded_pass(method, pb: Problem, st, key):
    """Serial steps on every device over its own active rows, synchronised every ``sync_rows``.

    A pass walks each device's active rows in a fresh random order, in segments of H =
    ``sync_rows`` rows. In a segment every device takes exact serial steps (eq. 12, 8, 9, 13)
    on its H rows from the shared w, keeping its own copy of w; then one all-reduce sums the
    moves, v = sum_k X_k^T (y Delta_k), and the block of K H coordinates moves by t Delta with
    t in [0, 1] the exact minimiser of the dual along Delta (as in the block variant): along t
    the dual changes by t (w.v + sum (D a - 1) Delta) + t^2/2 (|v|^2 + sum D Delta^2), so it
    never increases. Communication: one all-reduce of d + 2 numbers per segment, n / (K H)
    segments per pass. Where rows share features (a bias feature: all of them) the devices'
    moves overlap and long segments stall far from the optimum; syncing once per pass (CoCoA,
    also with CoCoA+'s K-scaled local problems) is the extreme case. The default H = 8 is the
    longest that kept the serial pass's linear convergence in ``bench/devices.py``."""
    from ..sharding import map_problem, replicated_specs

    H = method.sync_rows

    def local(pbl, method, st, key):
        d = dict(st._asdict(), **jax.tree_util.tree_map(lambda a: a[0], st.table))
        n, width = pbl.n, d["table"].shape[1] - COEFS
        Mbar, mbar = bounds(method, d)
        k = jax.random.fold_in(wrap(key), lax.axis_index(AXIS))  # an own random order on every device
        order, counts = _grouped(_random_order(k, n), jnp.where(d["active"], d["long"].astype(jnp.int32), 2))
        n_short, n_act = counts[0], counts[0] + counts[1]
        recs = _records(d, order, H)  # padded to a multiple of H: a segment never runs past the end
        n_pad = recs["table"].shape[0]
        a0 = jnp.concatenate([d["alpha"][order], jnp.zeros((n_pad - n,), d["alpha"].dtype)])
        recs["alpha"] = a0
        Dii = recs["table"][:, width]
        out = jnp.zeros((n_pad, 3), a0.dtype).at[:, 0].set(a0)
        short = _serial_body(recs, width, Mbar, mbar, tails=False)
        tails = d["tail"] is not None
        long_ = _serial_body(recs, width, Mbar, mbar, tails=True) if tails else None

        def segment(j, carry):
            w, out = carry
            lo = j * H
            hi = jnp.minimum(lo + H, n_act)
            c = lax.fori_loop(lo, jnp.minimum(hi, n_short), short, (w, out))
            if tails:
                c = lax.fori_loop(jnp.maximum(lo, n_short), hi, long_, c)
            w_k, out = c
            a, D = lax.dynamic_slice_in_dim(a0, lo, H), lax.dynamic_slice_in_dim(Dii, lo, H)
            dlt = lax.dynamic_slice_in_dim(out[:, 0], lo, H) - a  # 0 for rows not stepped
            lin = lax.dynamic_slice_in_dim(recs["table"][:, width + 4], lo, H)
            both = lax.psum(jnp.concatenate([w_k - w, jnp.stack([jnp.sum((D * a - lin) * dlt),
                                                                 jnp.sum(D * dlt * dlt)])]), AXIS)
            v = both[:-2]  # one all-reduce of d + 2 numbers
            slope, curv = jnp.vdot(w, v) + both[-2], jnp.vdot(v, v) + both[-1]
            t = jnp.where(curv > 0, jnp.clip(-slope / jnp.where(curv > 0, curv, 1.0), 0.0, 1.0), 1.0)
            out = lax.dynamic_update_slice_in_dim(out, (a + t * dlt)[:, None], lo, 0)
            return w + t * v, out

        n_seg = lax.pmax((n_act + H - 1) // H, AXIS)
        w, out = lax.fori_loop(0, n_seg, segment, (st.w, out))
        kept = (jnp.arange(n) < n_act) & (out[:n, 2] == 0)
        M, m = _extremes(out[:n, 1], kept)
        return (w, d["alpha"].at[order].set(out[:n, 0]), lax.pmax(M, AXIS), lax.pmin(m, AXIS),
                jnp.zeros((n,), bool).at[order].set(kept))

    R, rows = P(), P(AXIS)
    return map_problem(local, pb, (method, st, jax.random.key_data(key)),
                       (replicated_specs(method), sharded_specs(), R), (R, rows, R, R, rows))


def key_words(seed: int):
    """``key_data(key(seed))``. For JAX's default threefry keys and a seed in [0, 2**32) these
    are the words (0, seed), made on the host (the generic path compiles JAX's seeding
    program: a noticeable part of a new process's first solve)."""
    impl = str(getattr(jax.config, "jax_default_prng_impl", "threefry2x32"))
    if impl == "threefry2x32" and 0 <= seed < 2 ** 32:
        return jax.device_put(np.array([0, seed], np.uint32))
    return jax.random.key_data(jax.random.key(seed))

