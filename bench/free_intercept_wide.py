"""The free intercept on wide data: the default (auto) against the methods it chains.

    python -m bench.free_intercept_wide --seeds 19,23
    python -m bench.free_intercept_wide --seeds 29,31 --loss hinge --methods auto,dual-newton-warm
    python -m bench.free_intercept_wide --seeds 0,3 --methods auto,alm,newton-warm --out FILE.md

For every generated problem of ``bench.suite`` (``--size small``) with more features than rows, the
squared hinge (``--loss hinge``: the hinge) at the problem's C with svmopt's default free intercept
(``fit_intercept=True``, no bias feature), float32, tol 1e-3: per method a first call (compile) and a
timed call (wall clock; a first call over ``--once-over`` seconds is not repeated and its time,
compile included, is reported as '<='; one past ``--budget`` seconds is stopped and reported as '>').
Methods: ``auto`` (the default: on this shape ``dual_newton(warm="dual_cd")`` since 2026-11-29, handed
over to alm, then pdhg, after ``FREE_DUAL_NEWTON_STEPS`` steps; before, for the squared hinge
``newton(warm="dual_cd", warm_passes=300)``, for the hinge alm then pdhg), ``alm``
(``alm(precondition=True, adapt_mu=True)``, auto's hand-over target), ``newton-warm`` (the squared
hinge's earlier rule's first method alone, capped at 50 steps) and ``dual-newton-warm``
(``dual_newton(warm="dual_cd")`` alone, at its own cap). The status column gives the relative gap of
a run that did not certify. Each result's objective is recomputed in numpy (float64) from its (w, b);
``--reference`` adds a float64 alm solve certified to 1e-7 and the relative error against it. No
LIBLINEAR column: LIBLINEAR has no free intercept (its -B 1 regularizes b).
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
import warnings


def _objective(X, y, C, w, b, power=2):
    """P(w, b) in numpy float64: the hinge (power 1) or the squared hinge (power 2)."""
    import numpy as np
    yy = np.where(y == y.max(), 1.0, -1.0)
    w = np.asarray(w, np.float64)
    return 0.5 * w @ w + C * np.sum(np.maximum(0.0, 1.0 - yy * (X @ w + float(b))) ** power)


class _OverBudget(Exception):
    pass


def _within(seconds, call):
    """call(), or None where it ran past ``seconds`` (0: no limit): a SIGALRM handler raises between
    two of the solve's compiled chunks, where a Ctrl-C would stop it."""
    import signal

    if not seconds:
        return call()

    def over(signum, frame):
        raise _OverBudget

    old = signal.signal(signal.SIGALRM, over)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return call()
    except _OverBudget:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _stages(r):
    stages = r.extras.get("stages") or [{"method": r.method, "iterations": r.iterations}]
    return " > ".join(f"{s['method']} {s['iterations']}" for s in stages)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", default="19,23")
    ap.add_argument("--methods", default="auto,alm,newton-warm")
    ap.add_argument("--loss", default="squared_hinge", choices=["squared_hinge", "hinge"])
    ap.add_argument("--reference", action="store_true", help="float64 alm to 1e-7: relative errors")
    ap.add_argument("--once-over", type=float, default=20.0,
                    help="a first call slower than this many seconds is not repeated: its time, compile "
                         "included, is reported as '<=' (an upper bound on the run)")
    ap.add_argument("--budget", type=float, default=0.0,
                    help="stop a first call after this many seconds and report '>budget' (0: no limit)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    import jax
    if args.reference:
        jax.config.update("jax_enable_x64", True)
    import numpy as np

    import svmopt
    from svmopt.losses import hinge, squared_hinge
    from svmopt.solvers import alm, dual_newton, newton

    from . import suite

    methods = {"auto": None, "alm": alm(precondition=True, adapt_mu=True),
               "newton-warm": newton(warm="dual_cd", warm_passes=300),
               "dual-newton-warm": dual_newton(warm="dual_cd")}
    loss, power = (hinge, 1) if args.loss == "hinge" else (squared_hinge, 2)
    chosen = args.methods.split(",")
    head = ["problem", "rows x features", "C"] + [f"{m}: s, status, stages" for m in chosen]
    if args.reference:
        head.append("rel. error (" + ", ".join(chosen) + ")")
    lines = [f"# Free intercept, wide data, {args.loss.replace('_', ' ')}: auto against the methods it chains", "",
             f"`python -m bench.free_intercept_wide {' '.join(sys.argv[1:] if argv is None else argv)}`",
             f"date {datetime.datetime.now().isoformat(timespec='seconds')}; machine {platform.node()}, "
             f"{os.cpu_count()} cores; float32, tol 1e-3, wall clock of a second call (compile apart; '<=': "
             f"the first call's, compile included, where it took over {args.once_over:g} s)", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    print(lines[-2])
    for seed in [int(s) for s in args.seeds.split(",")]:
        for spec in suite.problems(seed, "small"):
            if spec.kind != "gen" or spec.features <= spec.rows:
                continue
            X, y = suite.make(spec)[:2]
            kw = dict(loss=loss, C=spec.C, dtype=np.float32)
            row = [f"s{seed}-{spec.name}", f"{X.shape[0]} x {X.shape[1]}", f"{spec.C:.3g}"]
            errs = []
            ref = None
            if args.reference:
                r = svmopt.solve(X, y, method=methods["alm"], tol=1e-7, max_iter=100_000,
                                 **dict(kw, dtype=np.float64))
                ref = _objective(X, y, spec.C, r.w, r.b, power) if r.status == svmopt.Status.CONVERGED else None
            for name in chosen:
                m = methods[name]
                extra = {} if m is None else {"method": m}
                if name == "newton-warm":
                    extra["max_iter"] = 50
                t = time.perf_counter()
                r = _within(args.budget, lambda: svmopt.solve(X, y, **extra, **kw))
                t = time.perf_counter() - t
                if r is None:
                    row.append(f">{args.budget:g}, (stopped: over the budget)")
                    errs.append("-")
                    continue
                once = t > args.once_over  # slow: the first call's time (compile included) stands
                if not once:
                    t = time.perf_counter()
                    r = svmopt.solve(X, y, **extra, **kw)
                    t = time.perf_counter() - t
                gap = "" if r.status == svmopt.Status.CONVERGED else f" (gap {r.relative_gap:.1e})"
                row.append(f"{'<=' if once else ''}{t:.3f}, {r.status.name}{gap}, {_stages(r)}")
                if ref is not None:
                    errs.append(f"{(_objective(X, y, spec.C, r.w, r.b, power) - ref) / abs(ref):.1e}")
            if args.reference:
                row.append(", ".join(errs) if ref is not None else "(reference uncertified)")
            lines.append("| " + " | ".join(row) + " |")
            print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
