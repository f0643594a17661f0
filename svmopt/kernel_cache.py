"""A bounded cache of kernel rows that lives inside jit (fixed-size buffer, tags, use stamps).

Decomposition solvers (``svmopt.solvers.alfpgm``) need rows K(x_t, X) of the
kernel matrix for the indices t of each working set. Computing a row costs
O(n d); the same indices come back often (free support vectors), so rows are
kept in a buffer of ``S`` slots:

    rows   (S, n)   the cached rows K(x_tags[s], X)
    tags   (S,)     index held by each slot, -1 when empty
    slot   (n,)     inverse map: slot holding row t, -1 when not cached
    stamp  (S,)     when the slot was last used (LRU order; -1 when empty)
    clock, hits, misses                       counters (int32 scalars)

Memory is S * n * itemsize for the rows plus O(n + S) integers: the size is
fixed when the cache is made (``cache_rows`` turns a budget in MB into S)
and never grows. A lookup of m indices touches the hits, computes the misses
in chunks of ``chunk`` rows (one matrix product per chunk, only as many chunks
as there are misses) into a compact block, and writes that block over the m
least recently used slots in one scatter, so S >= m is required.

Eviction (``fetch(..., demote=...)``): least recently used first (LIBSVM's and
scikit-learn's policy); rows of indices the caller marks in ``demote`` (unlikely
to come back) go before all others, in LRU order.
Everything is a pytree of arrays with static shapes, so the cache is carried
through ``lax.while_loop`` and ``vmap``.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax.numpy as jnp
from jax import lax

__all__ = ["KernelCache", "cache_rows", "init_cache", "fetch", "top_k"]

_EMPTY = jnp.iinfo(jnp.int32).min + 1  # priority of an empty slot: always evicted first
_DEMOTE = 2**30  # demoted rows rank below every used one (stamps stay < 2**29 + m)


def top_k(v, k: int):
    """(values, indices) of the k largest entries of the 1-D ``v``, largest first, ties by index.

    ``lax.top_k``: on CPU (jax 0.10) it no longer sorts all of v, and compiles in a fraction of a
    second (bench/results/design-notes.md).
    """
    return lax.top_k(v, k)


class KernelCache(NamedTuple):
    rows: jnp.ndarray  # (S, n)
    tags: jnp.ndarray  # (S,) int32
    slot: jnp.ndarray  # (n,) int32
    stamp: jnp.ndarray  # (S,) int32
    clock: jnp.ndarray  # () int32
    hits: jnp.ndarray  # () int32
    misses: jnp.ndarray  # () int32

    @property
    def size(self) -> int:
        return self.rows.shape[-2]


def cache_rows(n: int, itemsize: int, size_mb: float, at_least: int) -> int:
    """Number of rows S a ``size_mb`` budget holds for rows of length n (at most n).

    Raises ValueError when the budget cannot hold ``at_least`` rows (one lookup).
    """
    if not size_mb > 0:
        raise ValueError(f"cache_size must be > 0 MB, got {size_mb}")
    S = int(size_mb * 2**20 // (n * itemsize))
    need = min(at_least, n)
    if S < need:
        raise ValueError(f"cache_size={size_mb} MB holds {S} kernel rows of length n={n}, but one working set "
                         f"needs {need}; raise cache_size to >= {need * n * itemsize / 2**20:.1f} MB "
                         "or lower the number of pairs")
    return min(S, n)


def init_cache(S: int, n: int, dtype) -> KernelCache:
    """An empty cache of S kernel rows of length n (all slots free)."""
    i32 = jnp.int32
    return KernelCache(rows=jnp.zeros((S, n), dtype), tags=jnp.full((S,), -1, i32), slot=jnp.full((n,), -1, i32),
                       stamp=jnp.full((S,), -1, i32), clock=jnp.zeros((), i32), hits=jnp.zeros((), i32),
                       misses=jnp.zeros((), i32))


def fetch(cache: KernelCache, idx, need, compute: Callable, chunk: int = 16, demote=None):
    """Rows K(x_idx, X) (m, n) for the entries of ``idx`` with ``need`` set, and the updated cache.

    idx     (m,) int indices, distinct where ``need`` is True (m <= cache size)
    need    (m,) bool; rows of the other entries are returned as arbitrary cached rows
    compute fn(idx_chunk (chunk,)) -> (chunk, n) kernel rows (called once per chunk of misses)
    demote  optional (n,) bool: rows of these indices are evicted before any other (else pure LRU)
    """
    S, n = cache.rows.shape
    m = idx.shape[0]
    if m > S:
        raise ValueError(f"a lookup of {m} rows needs a cache of at least {m} rows, this one has {S}")
    # use stamps: lookup number * m + position in the lookup (so LRU ties follow request order);
    # past 2**29 every stamp is shifted down (the oldest ones merge at 0): no int32 overflow
    shift = jnp.where((cache.clock + 1) * m >= 2**29, 2**28 // m, 0).astype(jnp.int32)
    clock = cache.clock + 1 - shift
    old_stamp = jnp.where(cache.tags >= 0, jnp.maximum(cache.stamp - shift * m, 0), -1)
    now = clock * m + jnp.arange(m, dtype=jnp.int32)
    s = cache.slot[idx]
    hit = need & (s >= 0)
    miss = need & (s < 0)
    # touch the hits first so that no victim below is a row this lookup returns
    stamp = old_stamp.at[jnp.where(hit, s, S)].set(now, mode="drop")
    prio = jnp.where(cache.tags < 0, _EMPTY, stamp)
    if demote is not None:
        old = demote[jnp.maximum(cache.tags, 0)] & (cache.tags >= 0) & (stamp < clock * m)
        prio = jnp.where(old, stamp - _DEMOTE, prio)  # demoted rows go first, in LRU order
    k = min(m, S)
    victims = top_k(-prio, k)[1]  # the k lowest priorities
    # position of each miss among the misses (a small triangular product: m <= 2p)
    tri = jnp.tril(jnp.ones((m, m), jnp.float32))
    rank = (tri @ miss.astype(jnp.float32)).astype(jnp.int32) - 1
    victim = jnp.where(miss, victims[jnp.clip(rank, 0, k - 1)], S)
    n_miss = jnp.sum(miss)

    # compute the missing rows chunk by chunk into a compact block (fresh[r] = the r-th miss); only
    # that block is carried by the loop (under vmap a loop's carry is selected every round)
    pad = (-m) % chunk
    order = jnp.zeros((m + pad,), jnp.int32).at[jnp.where(miss, rank, m + pad)].set(
        jnp.arange(m, dtype=jnp.int32), mode="drop")

    def cond(c):
        return c[0] * chunk < n_miss

    def body(c):
        i, fresh = c
        sel = lax.dynamic_slice_in_dim(order, i * chunk, chunk)
        return i + 1, lax.dynamic_update_slice_in_dim(fresh, compute(idx[sel]).astype(fresh.dtype), i * chunk, 0)

    fresh = jnp.zeros((m + pad, n), cache.rows.dtype)
    _, fresh = lax.while_loop(cond, body, (jnp.zeros((), n_miss.dtype), fresh))
    dst = jnp.where(jnp.arange(m) < n_miss, victims, S)  # the r-th miss goes to the r-th victim
    rows = cache.rows.at[dst].set(fresh[:m], mode="drop")  # one scatter, outside the loop

    # bookkeeping: the evicted indices forget their slot, the new ones take it
    old_tag = jnp.where(miss, cache.tags[jnp.minimum(victim, S - 1)], -1)
    slot = cache.slot.at[jnp.where(old_tag >= 0, old_tag, n)].set(-1, mode="drop")
    slot = slot.at[jnp.where(miss, idx, n)].set(victim.astype(jnp.int32), mode="drop")
    tags = cache.tags.at[victim].set(idx.astype(jnp.int32), mode="drop")
    stamp = stamp.at[victim].set(now, mode="drop")
    where = jnp.where(miss, victim, jnp.maximum(s, 0))
    out = rows[jnp.minimum(where, S - 1)]
    new = KernelCache(rows=rows, tags=tags, slot=slot, stamp=stamp, clock=clock,
                      hits=cache.hits + jnp.sum(hit).astype(jnp.int32),
                      misses=cache.misses + n_miss.astype(jnp.int32))
    return out, new
