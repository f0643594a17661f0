"""Crammer-Singer multiclass (LIBLINEAR -s 4) against LIBLINEAR: the time to a certified relative gap.

    python -m bench.crammer_singer                                   # letter, pendigits; 1e-2 and 1e-3
    python -m bench.crammer_singer --datasets news20 --thresholds 1e-2 --repeats 1 --ref-tol 1e-3

Per dataset (C = 1, LIBLINEAR's bias feature -B 1 = ``intercept_scaling=1.0``):
  * f*: the lowest objective of a float64 svmopt solve certified to ``--ref-tol`` and LIBLINEAR's
    tightest run of the sweep (its D is printed: f* - D bounds the reference's own error);
  * svmopt: ``solve_multiclass(X, y, strategy="crammer_singer", intercept_scaling=1.0, tol=t)``
    in float32 as a user gets it; a CONVERGED run certifies (P - D)/P <= t, hence a relative error
    <= t. The first call's compile time is reported apart; the time is the median of --repeats calls;
  * LIBLINEAR: -s 4 over an -e sweep; the time to a threshold is the fastest run whose W (evaluated
    here in float64) is within it of f* (median of repeats). LIBLINEAR certifies nothing.
Times are this process's CPU time (``--clock cpu``, default: fair on a shared machine; it charges
svmopt every thread it uses) or wall time.
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

EPS = (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001)


def clock(kind):
    return time.process_time if kind == "cpu" else time.perf_counter


def objective(X, y, W, b, classes, C=1.0, bias=1.0):
    """1/2 (||W||^2 + ||b / bias||^2) + C sum_i max_m (e_i^m + f_im - f_iy), float64."""
    F = np.asarray(X @ W.T, np.float64) + b
    code = np.searchsorted(classes, y)
    loss = (F + (np.arange(len(classes))[None, :] != code[:, None])).max(axis=1) - F[np.arange(len(y)), code]
    return 0.5 * (np.sum(W * W) + np.sum((b / bias) ** 2)) + C * np.sum(loss)


def liblinear_runs(X, y, classes, eps_list, repeats, tick):
    """[(eps, median time, objective)] of LIBLINEAR -s 4 -B 1 over the -e sweep."""
    from liblinear import liblinearutil as ll

    prob = ll.problem(y, X, bias=1)
    out = []
    for eps in eps_list:
        times = []
        for _ in range(repeats):
            t0 = tick()
            m = ll.train(prob, f"-s 4 -c 1 -B 1 -e {eps} -q")
            times.append(tick() - t0)
        K, d = m.get_nr_class(), m.get_nr_feature()
        w = np.ctypeslib.as_array(m.w, shape=((d + 1) * K,)).reshape(d + 1, K).T[np.argsort(m.get_labels())]
        W = np.zeros((K, X.shape[1]))
        W[:, :d] = w[:, :d]
        out.append((eps, statistics.median(times), objective(X, y, W, w[:, d], classes)))
    return out


def svmopt_run(X, y, tol, repeats, tick, dtype=None):
    import svmopt

    kw = dict(strategy="crammer_singer", intercept_scaling=1.0, tol=tol, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = svmopt.solve_multiclass(X, y, **kw)
        times, walls = [], []
        for _ in range(repeats):
            t0, w0 = tick(), time.perf_counter()
            r = svmopt.solve_multiclass(X, y, **kw)
            times.append(tick() - t0)
            walls.append(time.perf_counter() - w0)
    return r, statistics.median(times), statistics.median(walls), first.timings["compile"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", default="letter,pendigits")
    ap.add_argument("--thresholds", default="1e-2,1e-3")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ref-tol", type=float, default=1e-6, help="the float64 reference's certified gap")
    ap.add_argument("--eps", default=",".join(map(str, EPS)), help="LIBLINEAR's -e sweep")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--out", default=None, help="also write the table (markdown) here")
    args = ap.parse_args(argv)

    import jax
    jax.config.update("jax_enable_x64", True)  # for the reference; the timed solves ask float32
    import svmopt
    from bench import data

    tick = clock(args.clock)
    thresholds = [float(t) for t in args.thresholds.split(",")]
    eps_list = [float(e) for e in args.eps.split(",")]
    head = ("| data | f* (svmopt gap / LIBLINEAR tightest) | tol | svmopt (s) | iters, status, gap | err | compile (s) "
            "| LIBLINEAR (s) | -e | err | ratio |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name in args.datasets.split(","):
        ds = data.load(name)
        X, y = sp.csr_matrix(ds.X), ds.y
        classes = np.unique(y)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = svmopt.solve_multiclass(X, y, strategy="crammer_singer", intercept_scaling=1.0, dtype="float64",
                                          tol=args.ref_tol)
        runs = liblinear_runs(X, y, classes, eps_list, args.repeats, tick)
        P_ref = objective(X, y, np.asarray(ref.w), np.asarray(ref.b), classes)
        fstar = min(P_ref, min(obj for _, _, obj in runs))
        D = float(ref.dual_objective)
        ref_txt = f"{fstar:.6g} ({ref.relative_gap:.1e} / {(runs[-1][2] - fstar) / fstar:.1e})"
        for t in thresholds:
            r, sec, wall, comp = svmopt_run(X, y, t, args.repeats, tick)
            err = (objective(X, y, np.asarray(r.w, float), np.asarray(r.b, float), classes) - fstar) / fstar
            within = [(s, e, (obj - fstar) / fstar) for e, s, obj in runs if (obj - fstar) / fstar <= t]
            if within:
                s_ll, e_ll, err_ll = min(within)
                peer = f"{s_ll:.3f} | {e_ll:g} | {err_ll:.1e} | {sec / s_ll:.2f}"
            else:
                peer = "not reached | — | — | —"
            lines.append(f"| {name} {X.shape[0]}x{X.shape[1]}, K={classes.size} | {ref_txt} | {t:g} | {sec:.3f} | "
                         f"{int(r.iterations)}, {r.status.name.lower()}, {r.relative_gap:.1e} | {err:.1e} | "
                         f"{comp:.2f} | {peer} |")
            print(lines[-1], flush=True)
        print(f"  ({name}: f* - D* = {(fstar - D) / fstar:.1e} relative; LIBLINEAR's sweep: "
              + ", ".join(f"-e {e:g} {s:.3f} s err {(o - fstar) / fstar:.1e}" for e, s, o in runs) + ")", flush=True)
    stamp = (f"{datetime.date.today()} {platform.node()} ({platform.machine()}), svmopt {svmopt.__version__}, "
             f"jax {jax.__version__}, clock {args.clock}, repeats {args.repeats}")
    table = "\n".join(lines)
    print("\n" + table + "\n\n" + stamp)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"# Crammer-Singer (-s 4) against LIBLINEAR\n\n`python -m bench.crammer_singer "
                    f"{' '.join(argv or [])}`\n\n{stamp}\n\n{table}\n")


if __name__ == "__main__":
    import sys
    main(sys.argv[1:])
