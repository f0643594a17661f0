"""The physical floor: a gradient pass has to read X once.

``bandwidth()`` measures the machine's read bandwidth in the same run as the methods
(the best of a few ``numpy.sum`` over a buffer far larger than the caches).
``passes(ds)`` times one gradient pass over the dataset's X in each representation:

  svmopt op.fused        X^T g(Xw) block by block (X read once), float32 and float64
  svmopt matvec+rmatvec  the same as two separate passes
  scipy / numpy          X @ w then X.T @ u on the float64 CSR (or dense) matrix

and reports it as a multiple of bytes(X)/bandwidth, bytes(X) being that representation's
own size (svmopt: ``op.nbytes``; scipy CSR: data + indices + indptr). Per-iteration
times of every method (from its trace) are put on the same scale in the report.
"""
from __future__ import annotations

import time

import numpy as np
import scipy.sparse as sp

__all__ = ["bandwidth", "passes", "best_time"]


def best_time(fn, repeats=5, min_total=0.0):
    """Best wall time of ``fn()`` over ``repeats`` calls after one warm-up call."""
    fn()
    best, spent, k = np.inf, 0.0, 0
    while k < repeats or spent < min_total:
        t0 = time.perf_counter()
        fn()
        dt = time.perf_counter() - t0
        best, spent, k = min(best, dt), spent + dt, k + 1
    return best


def bandwidth(nbytes: int = 1 << 29, repeats: int = 5) -> float:
    """Read bandwidth in bytes/s: best ``np.sum`` over an ``nbytes`` float64 buffer."""
    a = np.ones(nbytes // 8)
    t = best_time(a.sum, repeats)
    return a.nbytes / t


def passes(ds, bw: float, dtypes=(np.float32, np.float64), repeats: int = 5):
    """Rows (dict) for one gradient pass over ``ds.X`` per representation."""
    import jax
    import jax.numpy as jnp

    from svmopt import as_operator

    rows = []
    n, d = ds.X.shape
    kind = "sparse" if ds.sparse else "dense"

    def row(what, dtype, nbytes, seconds):
        rows.append(dict(dataset=ds.name, kind=kind, what=what, dtype=np.dtype(dtype).name, bytes=int(nbytes),
                         seconds=seconds, gbps=nbytes / seconds / 1e9, floor_multiple=seconds / (nbytes / bw)))

    fused = jax.jit(lambda op, w: op.fused(w, lambda z: (jnp.maximum(0.0, 1.0 - z), z)))
    two = jax.jit(lambda op, w: op.rmatvec(op.matvec(w)))
    for dt in dtypes:
        op = as_operator(ds.X, dt)
        w = jnp.full((d,), 0.01, dt)
        row("svmopt op.fused", dt, op.nbytes, best_time(lambda: jax.block_until_ready(fused(op, w)), repeats))
        row("svmopt matvec+rmatvec", dt, op.nbytes,
            best_time(lambda: jax.block_until_ready(two(op, w)), repeats))
        del op
    X = ds.X
    w = np.full(d, 0.01)
    if sp.issparse(X):
        XT = X.T  # CSC view, no copy: X.T @ u walks the CSR arrays once
        nb = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
        row("scipy CSR X@w, X.T@u", np.float64, nb, best_time(lambda: XT @ (X @ w), repeats))
    else:
        row("numpy X@w, u@X", np.float64, X.nbytes, best_time(lambda: (X @ w) @ X, repeats))
    return rows
