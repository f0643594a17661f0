"""One sparse gradient pass (X w, then X^T u) per implementation, against scipy's CSR.

    python -m bench.sparse_pass                          # a9a, news20, sparse-gen[100000]; f32/f64; K = 1, 20
    python -m bench.sparse_pass --datasets a9a --alternatives --solve
    python -m bench.sparse_pass --smoke                  # heart_scale, one round (CI)

A pass is ``w <- tanh(X^T (X w))`` ("two") or ``w <- tanh(w - 1e-3 g)`` with ``g, s =
op.fused(w, hinge)`` ("fused"), 20 of them in one jitted ``lax.fori_loop`` (so dispatch
is counted as in the solvers). K = 20 is 20 vectors at once, vmapped over w with X
shared: the one-vs-rest hot path. scipy does the same in a Python loop: ``A @ w`` and
``A.T @ u`` with A.T the CSC view of the CSR arrays (what LIBLINEAR-style code does),
W as a (d, K) array. Implementations:

  svmopt        SparseOperator as built by as_operator (CPU: the compiled custom call)
  xla           the same operator with impl="xla": sorted segment sum for X w,
                scatter-add for X^T u (the pure-XLA path accelerators use)
  --alternatives also: csc (pure XLA, X^T u as a sorted segment sum over a CSC copy:
                2x the memory), bcoo (jax.experimental.sparse), callback
                (jax.pure_callback to the scipy products, vmap_method="expand_dims")

All implementations are timed once per round, round after round (interleaved, so they
see the same machine load); the table shows the median wall time per pass (``--clock cpu``:
this process's CPU time, which waiting for a core on a busy machine does not inflate) and
its ratio to scipy's median in the same rounds. Compile = lowering + XLA compilation of the
20-pass loop. sparse-gen[n] is the first n rows of bench.data's sparse-gen (make_sparse
draws it block by block, so they are the same rows). ``--solve`` adds the ALM solve on
a9a (``svmopt.solve(X, y, intercept_scaling=1.0)``, float32), compiled once, then timed.
"""
from __future__ import annotations

import argparse
import datetime
import os
import shlex
import statistics
import sys
import time

import numpy as np
import scipy
import scipy.sparse as sp

import jax

jax.config.update("jax_enable_x64", True)

import jax.numpy as jnp  # noqa: E402
from jax import lax  # noqa: E402

import svmopt  # noqa: E402
from svmopt import _csr  # noqa: E402
from svmopt.operators import SparseOperator, as_operator  # noqa: E402

from . import data as bdata  # noqa: E402
from .run import machine, versions  # noqa: E402

PASSES = 20


def load(name: str, sgen_rows: int):
    if name == "sparse-gen":
        X, _ = bdata.make_sparse(sgen_rows, seed=0)
        return f"sparse-gen[{sgen_rows}]", X
    d = {"a9a": 123, "news20": 62061, "heart_scale": 13}[name]
    X, _ = svmopt.load_svmlight(bdata.DATA_DIR / f"{name}.xz", n_features=d)
    return name, sp.csr_matrix(X, dtype=np.float64)


# ---- implementations: each returns (operands pytree, matvec(ops, w), rmatvec(ops, u)[, fused]) ----

def _svmopt(impl):
    def make(A, dt):
        op = SparseOperator.from_scipy(A, dt, impl=impl)
        return op, (lambda o, w: o.matvec(w)), (lambda o, u: o.rmatvec(u)), (lambda o, w, f, aux: o.fused(w, f, aux))
    return make


def _csc(A, dt):
    n, d = A.shape
    C = A.tocsc()
    C.sort_indices()
    rows = np.repeat(np.arange(n, dtype=np.int32), np.diff(A.indptr))
    cols = np.repeat(np.arange(d, dtype=np.int32), np.diff(C.indptr))
    ops = tuple(map(jnp.asarray, (A.data.astype(dt), A.indices.astype(np.int32), rows,
                                  C.data.astype(dt), C.indices.astype(np.int32), cols)))
    mv = lambda o, w: jax.ops.segment_sum(o[0] * w[o[1]], o[2], n, indices_are_sorted=True)  # noqa: E731
    rmv = lambda o, u: jax.ops.segment_sum(o[3] * u[o[4]], o[5], d, indices_are_sorted=True)  # noqa: E731
    return ops, mv, rmv


def _bcoo(A, dt):
    from jax.experimental import sparse as jsparse

    M = jsparse.BCOO.from_scipy_sparse(A.astype(dt))
    return (M, M.T), (lambda o, w: o[0] @ w), (lambda o, u: o[1] @ u)


def _callback(A, dt):
    n, d = A.shape
    Ad = A.astype(dt)
    At = Ad.T

    def host(M, m_out):
        def f(v):  # v: (..., m_in) with vmap's leading axes
            v = np.asarray(v)
            out = M @ v.reshape(-1, v.shape[-1]).T
            return np.ascontiguousarray(out.T, dtype=dt).reshape(v.shape[:-1] + (m_out,))
        return f

    def call(f, m_out):
        return lambda o, v: jax.pure_callback(f, jax.ShapeDtypeStruct(v.shape[:-1] + (m_out,), dt), v,
                                              vmap_method="expand_dims")
    return (), call(host(Ad, n), n), call(host(At, d), d)


IMPLS = {"svmopt": _svmopt("auto"), "xla": _svmopt("xla"), "csc": _csc, "bcoo": _bcoo, "callback": _callback}


def _hinge(z, y):
    m = y * z
    return -y * (m < 1), jnp.maximum(1 - m, 0)


def _programs(make, A, dt, K, y):
    """Jitted 20-pass loops ("two", "fused") for one implementation, compiled; compile seconds."""
    ops, mv, rmv, *fused_op = make(A, dt)
    if not fused_op:  # what SparseOperator.fused does: matvec, f, rmatvec
        fused_op = [lambda o, w, f, aux: (lambda g, s: (rmv(o, g), jnp.sum(s)))(*f(mv(o, w), *aux))]

    def two(o, w):
        return jnp.tanh(rmv(o, mv(o, w)))

    def fused(o, w):
        g, _ = fused_op[0](o, w, _hinge, (y,))
        return jnp.tanh(w - 1e-3 * g)

    w0 = jnp.full((K, A.shape[1]) if K > 1 else (A.shape[1],), 0.01, dt)
    out = {}
    for name, step in (("two", two), ("fused", fused)):
        if K > 1:
            step = jax.vmap(step, in_axes=(None, 0))
        loop = jax.jit(lambda o, w, step=step: lax.fori_loop(0, PASSES, lambda i, w: step(o, w), w))
        t0 = time.perf_counter()
        exe = loop.lower(ops, w0).compile()
        out[name] = (lambda exe=exe: jax.block_until_ready(exe(ops, w0)), time.perf_counter() - t0)
    return out


def _scipy_programs(A, dt, K, y):
    Ad = A.astype(dt)
    At = Ad.T  # CSC view of the same arrays: A.T @ u is a scatter over the CSR rows, no copy
    w0 = np.full((A.shape[1], K) if K > 1 else A.shape[1], 0.01, dt)
    yk = y[:, None] if K > 1 else y

    def two():
        w = w0
        for _ in range(PASSES):
            w = np.tanh(At @ (Ad @ w))
        return w

    def fused():
        w = w0
        for _ in range(PASSES):
            m = yk * (Ad @ w)
            w = np.tanh(w - 1e-3 * (At @ (-yk * (m < 1))))
        return w

    return {"two": (two, 0.0), "fused": (fused, 0.0)}


def measure(name, A, impls, dtypes, Ks, rounds, log, clock=time.perf_counter):
    rows = []
    y = np.where(np.arange(A.shape[0]) % 3 == 0, 1.0, -1.0)
    for dtn in dtypes:
        dt = np.dtype(dtn)
        for K in Ks:
            progs = {"scipy": _scipy_programs(A, dt, K, y.astype(dt))}
            for impl in impls:
                progs[impl] = _programs(IMPLS[impl], A, dt, K, jnp.asarray(y, dt))
            for kind in ("two", "fused"):
                fns = {k: p[kind][0] for k, p in progs.items()}
                for fn in fns.values():
                    fn()  # warm-up
                ts = {k: [] for k in fns}
                for _ in range(rounds):
                    for k, fn in fns.items():
                        t0 = clock()
                        fn()
                        ts[k].append(clock() - t0)
                med = {k: statistics.median(v) / PASSES for k, v in ts.items()}
                row = dict(dataset=name, dtype=dt.name, K=K, kind=kind,
                           **{f"{k}_ms": 1e3 * v for k, v in med.items()},
                           **{f"{k}_ratio": v / med["scipy"] for k, v in med.items()},
                           **{f"{k}_compile_s": progs[k][kind][1] for k in impls})
                rows.append(row)
                log("  " + _line(row, impls))
    return rows


def _line(r, impls):
    cells = [f"{r['dataset']} {r['dtype']} K={r['K']} {r['kind']}: scipy {r['scipy_ms']:.3f} ms"]
    cells += [f"{k} {r[k + '_ms']:.3f} ms ({r[k + '_ratio']:.2f}x)" for k in impls]
    return " | ".join(cells)


def table(rows, impls):
    head = ["data", "dtype", "K", "pass", "scipy ms"] + [f"{k} ms (x scipy)" for k in impls]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in rows:
        cells = [r["dataset"], r["dtype"], str(r["K"]), "X w + X^T u" if r["kind"] == "two" else "fused",
                 f"{r['scipy_ms']:.3f}"]
        cells += [f"{r[k + '_ms']:.3f} ({r[k + '_ratio']:.2f})" for k in impls]
        lines.append("| " + " | ".join(cells) + " |")
    comp = ["| data | dtype | K | " + " | ".join(f"{k} compile s" for k in impls) + " |",
            "|---|---|---|" + "|".join("---" for _ in impls) + "|"]
    for r in rows:
        if r["kind"] == "two":
            comp.append(f"| {r['dataset']} | {r['dtype']} | {r['K']} | "
                        + " | ".join(f"{r[k + '_compile_s']:.2f}" for k in impls) + " |")
    return "\n".join(lines) + "\n\nCompile (20-pass loop, X w + X^T u):\n\n" + "\n".join(comp)


def solve_a9a(rounds, log):
    """ALM on a9a, float32, intercept_scaling=1: the custom call against the XLA path."""
    X, y = svmopt.load_svmlight(bdata.DATA_DIR / "a9a.xz", n_features=123)
    op = as_operator(X, jnp.float32, bias_scale=1.0, layout="sparse")
    ops = {"svmopt": op, "xla": SparseOperator(op.data, op.indices, op.row_ids, op.indptr, op.shape, impl="xla")}
    first, ts = {}, {k: [] for k in ops}
    for k, o in ops.items():
        first[k] = svmopt.solve(o, y, fit_intercept=False)  # == solve(X, y, intercept_scaling=1.0)
    for _ in range(rounds):
        for k, o in ops.items():
            ts[k].append(svmopt.solve(o, y, fit_intercept=False).timings["run"])
    lines = ["| ALM a9a (float32, intercept_scaling=1) | compile s | run s (median) | x svmopt | iterations |",
             "|---|---|---|---|---|"]
    base = statistics.median(ts["svmopt"])
    for k in ops:
        med = statistics.median(ts[k])
        lines.append(f"| {k} | {first[k].timings['compile']:.2f} | {med:.3f} | {med / base:.2f} | "
                     f"{int(first[k].iterations)} |")
    out = "\n".join(lines)
    log(out)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.sparse_pass", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="a9a,news20,sparse-gen", help="from a9a, news20, sparse-gen, heart_scale")
    ap.add_argument("--sgen-rows", type=int, default=100_000, help="rows of sparse-gen (default 100000)")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--K", default="1,20", help="vectors per pass (1 = X w; 20 = one-vs-rest batch)")
    ap.add_argument("--rounds", type=int, default=5, help="timed rounds per implementation (median)")
    ap.add_argument("--alternatives", action="store_true", help="also time csc, bcoo and callback")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="wall time, or this process's CPU time (all threads): waiting for a core on a busy "
                         "machine does not count")
    ap.add_argument("--solve", action="store_true", help="also time the ALM solve on a9a, custom call vs XLA")
    ap.add_argument("--smoke", action="store_true", help="heart_scale, float32, one round: checks the script runs")
    a = ap.parse_args(argv)
    if a.smoke:
        a.datasets, a.rounds, a.K, a.dtypes = "heart_scale", 1, "1,3", "float32"
    impls = ["svmopt", "xla"] + (["csc", "bcoo", "callback"] if a.alternatives else [])
    log = lambda s: print(s, file=sys.stderr, flush=True)  # noqa: E731
    load0 = _load()
    log(f"custom call available: {_csr.ffi_available()}; load average {load0}")
    rows = []
    for name in a.datasets.split(","):
        label, A = load(name, a.sgen_rows)
        log(f"{label}: {A.shape[0]} x {A.shape[1]}, {A.nnz} nonzeros")
        rows += measure(label, A, impls, a.dtypes.split(","), [int(k) for k in a.K.split(",")], a.rounds, log,
                        time.perf_counter if a.clock == "wall" else time.process_time)
    node, cpu, cores, mem = machine()
    v = versions()
    out = [f"# Sparse pass: ms per pass (ratio to scipy CSR), median of {a.rounds} interleaved rounds of "
           f"{PASSES} passes, {a.clock} clock", "",
           f"- date: {datetime.date.today()}; machine: {node}, {cpu}, {cores} cores, {mem:.0f} GiB; "
           f"load average {load0} at the start, {_load()} at the end",
           f"- command: `python -m bench.sparse_pass {shlex.join(sys.argv[1:] if argv is None else argv)}`",
           f"- versions: svmopt {v['svmopt']}, jax {jax.__version__}, jaxlib {v['jaxlib']}, numpy {np.__version__}, "
           f"scipy {scipy.__version__}; compiled CSR kernel {'on' if _csr.ffi_available() else 'OFF (not built)'}",
           "", table(rows, impls)]
    if a.solve:
        out += ["", solve_a9a(a.rounds, log)]
    print("\n".join(out))
    return rows


def _load():
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except OSError:
        return "?"


if __name__ == "__main__":
    main()
