"""The hinge at large C: the default solve (dual CD, handed over to alm where it does not certify)
against dual CD alone and LIBLINEAR's -s 3, same run.

    python -m bench.large_c                                # a9a, ijcnn1, news20-bin, dense-gen 50k; C = 1, 10, 100
    python -m bench.large_c --datasets a9a --C 10,100 --repeats 3

Per dataset x C (hinge, LIBLINEAR's bias feature -B 1 = ``intercept_scaling=1.0``, float32 for
svmopt as a user gets it):
  * f*: a float64 solve certified to a relative gap of 1e-5 by Jacobi-scaled alm, or on wide data
    (more features than rows) to 1e-8 by dual_newton (its gap printed);
  * svmopt default: ``solve(X, y, C=C, intercept_scaling=1.0)``: status, what ran (the stages of
    the hand-over, ``svmopt.solvers.auto``), wall time (median of --repeats calls after a first
    one whose compile time is reported apart), the relative error of its objective against f*;
  * dual_cd alone: ``method=dual_cd`` at its 1000-pass cap, the default before the hand-over;
  * LIBLINEAR -s 3 at -e 0.1 (its default), 0.01 and 0.001, each with its own 1000-iteration cap:
    wall time and relative error (LIBLINEAR certifies nothing; its run ends on its pass rule or cap).
The relative error is measured in float64 on the training objective.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import time
import warnings

import numpy as np
import scipy.sparse as sp



def load(name, dense_rows):
    from bench import data

    if name == "dense-gen":
        X, y = data.make_dense(dense_rows, 54, seed=0)
        return f"dense-gen {dense_rows} x 54", X, y
    ds = data.load(name)
    return name, sp.csr_matrix(ds.X), np.asarray(ds.y, float)


def timed(fn, repeats):
    first = fn()
    walls = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = fn()
        walls.append(time.perf_counter() - t0)
    return first, r, statistics.median(walls)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="a9a,ijcnn1,news20-bin,dense-gen")
    ap.add_argument("--C", default="1,10,100")
    ap.add_argument("--dense-rows", type=int, default=50_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)  # f* in float64; svmopt's own runs stay float32 (its default)
    import svmopt
    from svmopt.losses import hinge
    from svmopt.solvers import alm, dual_cd, dual_newton

    try:
        from liblinear import liblinearutil as ll
    except ImportError:
        ll = None
    warnings.simplefilter("ignore")
    lines = [f"# The hinge at large C ({datetime.date.today()}, {platform.node()}, svmopt {svmopt.__version__})", "",
             f"`python -m bench.large_c --datasets {args.datasets} --C {args.C} --repeats {args.repeats}`; "
             "wall seconds, median of the repeats after a first call (its compile time in brackets); "
             "err = relative objective error against f* (float64).", "",
             "| data | C | f* (gap) | default: status, stages | time [compile] | err | dual_cd alone: status, "
             "time, err | LIBLINEAR -s 3 -e 0.1 / 0.01 / 0.001: time (err) |",
             "|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for name in args.datasets.split(","):
        label, X, y = load(name, args.dense_rows)
        yy = np.where(y == y.max(), 1.0, -1.0)
        Xd = X.astype(np.float64) if sp.issparse(X) else np.asarray(X, np.float64)
        for C in map(float, args.C.split(",")):
            kw = dict(loss=hinge, C=C, intercept_scaling=1.0)
            # wide data: dual_newton certifies 1e-8 in float64 (alm stopped at 1e-3 on news20-bin C = 100)
            wide = X.shape[1] + 1 > X.shape[0]
            ref = svmopt.solve(X, y, dtype=jnp.float64, tol=1e-8 if wide else 1e-5, max_iter=50000,
                               method=dual_newton if wide else alm(precondition=True, adapt_mu=True), **kw)
            fstar = float(ref.primal_objective)

            def err(w, b):
                w = np.asarray(w, float)
                m = 1.0 - yy * (Xd @ w + b)
                return (0.5 * (w @ w + b * b) + C * np.maximum(m, 0.0).sum() - fstar) / abs(fstar)

            first, r, t = timed(lambda: svmopt.solve(X, y, **kw), args.repeats)
            stages = " → ".join(f"{s['method']} {s['iterations']}" for s in r.extras.get("stages", [])) or r.method
            _, a, ta = timed(lambda: svmopt.solve(X, y, method=dual_cd, **kw), args.repeats)
            peers = []
            if ll is not None:
                prob = ll.problem(yy, sp.csr_matrix(X) if not sp.issparse(X) else X)
                for eps in (0.1, 0.01, 0.001):
                    walls = []
                    for _ in range(args.repeats):
                        t0 = time.perf_counter()
                        m = ll.train(prob, ll.parameter(f"-s 3 -c {C:g} -B 1 -e {eps} -q"))
                        walls.append(time.perf_counter() - t0)
                    wl, bl = m.get_decfun()
                    sign = 1.0 if m.get_labels()[0] == 1 else -1.0
                    w = np.zeros(X.shape[1])
                    w[:len(wl)] = sign * np.asarray(wl, float)
                    peers.append(f"{statistics.median(walls):.2f} ({err(w, sign * bl):.1e})")
            row = (f"| {label} | {C:g} | {fstar:.6g} ({float(ref.relative_gap):.0e}) | {r.status.name}: {stages} | "
                   f"{t:.2f} [{first.timings['compile']:.2f}] | {err(r.w, float(r.b)):.1e} | {a.status.name}, "
                   f"{ta:.2f}, {err(a.w, float(a.b)):.1e} | {' / '.join(peers) or 'absent'} |")
            lines.append(row)
            print(row, flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
