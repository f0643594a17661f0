"""Objective against time for two methods (SVM-ALM and dual coordinate descent) on a9a.

Both solve the L1-loss SVM with LIBLINEAR's bias feature (``-s 3 -B 1``); ``history=True``
records each run's objective, duality gap and time. The first call of each method also
compiles its loop: the figure marks that compile time on the time axis, as a user pays it
on a first call (the persistent compilation cache makes later processes cheaper).

    python examples/plot_objective.py [out.png] [--rows N]
"""
import argparse

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

import svmopt  # noqa: E402
from svmopt.losses import hinge  # noqa: E402
from svmopt.solvers import alm, dual_cd  # noqa: E402

from _data import data  # noqa: E402


def main(out="objective_vs_time.png", rows=None):
    X, y = svmopt.load_svmlight(data("a9a"), n_features=123)
    if rows:
        X, y = X[:rows], y[:rows]
    runs = {}
    for method in (alm, dual_cd):
        r = svmopt.solve(X, y, loss=hinge, method=method, intercept_scaling=1.0, tol=1e-4, history=True,
                         record_every=2)
        runs[method.name] = r
        print(f"{method.name:8s} {r.status.name}: objective {float(r.primal_objective):.3f} after "
              f"{r.iterations} iterations, run {r.timings['run']:.2f} s, compile {r.timings['compile']:.2f} s")
    best = min(float(np.min(r.history["objective"])) for r in runs.values())
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for (name, r), color in zip(runs.items(), ("C0", "C1")):
        h, tc = r.history, r.timings["compile"]
        err = np.maximum((h["objective"] - best) / abs(best), 1e-7)
        ax.plot(tc + h["time"], err, color=color, label=f"{name} (compile {tc:.2f} s)")
        ax.axvline(tc, color=color, ls=":", lw=1)  # the loop starts after its compilation
    ax.set_xlim(left=0.0)  # a linear time axis from the call: its ticks read as seconds
    ax.set_yscale("log")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_xlabel("seconds since the call (dotted: end of compilation)")
    ax.set_ylabel("(P - P_best) / |P_best|")
    ax.set_title(f"L1-loss SVM, a9a{'' if not rows else f' ({rows} rows)'}, -B 1")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    print(f"wrote {out}")
    return runs


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?", default="objective_vs_time.png")
    ap.add_argument("--rows", type=int, default=None)
    a = ap.parse_args()
    main(a.out, a.rows)
