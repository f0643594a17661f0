"""Time against n on seeded subsamples (1/16 ... 1 of the rows), with the log-log slope.

Each batch method solves each subsample once, to its own default stopping rule:
svmopt solvers with tol = 1e-2 (alm: relative duality gap <= 1e-2, which certifies
relative error <= 1e-2), LIBLINEAR with its default -e (the dual CD ones, not batch
methods, are shown for comparison). Compilation is excluded (reported apart); a solve
cut by the budget says MAX_ITER.
Two slopes per method: of the solve time, and of the time per iteration (the cost
of a pass over X, which must grow like n: slope 1).
"""
from __future__ import annotations

import numpy as np

from .objective import Task

__all__ = ["sweep", "slopes", "FRACTIONS"]

FRACTIONS = (1 / 16, 1 / 8, 1 / 4, 1 / 2, 1.0)


def sweep(ds, loss, p, methods, fractions=FRACTIONS, convention="bias", C=1.0, budget_s=20.0, log=print):
    """Largest subsample first: svmopt's per-iteration time is probed there once, and each smaller
    solve gets max_iter = budget / (that time scaled by n), so no solve runs far past the budget."""
    rows = []
    n = ds.X.shape[0]
    per_full, refused = {}, set()
    for f in sorted(fractions, reverse=True):
        sub = ds.subsample(max(int(round(f * n)), 10)) if f < 1 else ds
        task = Task(sub, loss, p, convention, C)
        for m in methods:
            if m.available() or m.supports(task) or m.name in refused:
                continue
            try:
                if m.group == "svmopt":
                    if m.name not in per_full:
                        per_full[m.name] = (m.per_iteration(task), sub.X.shape[0])
                    per, n0 = per_full[m.name]
                    cap = int(np.clip(budget_s / max(per * sub.X.shape[0] / n0, 1e-7), 10, 100_000))
                    t, its, comp, status = m.timed_solve(task, max_iter=cap)
                else:
                    t, its, comp, status = m.timed_solve(task)
            except Exception as e:
                if type(e).__name__ == "MissingCapability":  # the solver does not take this loss / convention
                    refused.add(m.name)
                else:
                    log(f"    scaling {m.name} n={sub.X.shape[0]}: failed ({type(e).__name__}: {str(e)[:120]})")
                continue
            rows.append(dict(dataset=ds.name, loss=loss, method=m.name, n=sub.X.shape[0], seconds=t,
                             iterations=its, per_iter=t / max(its, 1), compile=comp, status=status))
            log(f"    scaling {m.name:22s} {loss} n={sub.X.shape[0]:>8d}  {t:8.3f}s  {its} it  {status}")
    rows.sort(key=lambda r: (r["method"], r["n"]))
    return rows


def slopes(rows):
    """{(dataset, loss, method): (slope of time over converged runs, slope of time per iteration)}, log-log fits."""
    out = {}
    for key in sorted({(r["dataset"], r["loss"], r["method"]) for r in rows}):
        rs = [r for r in rows if (r["dataset"], r["loss"], r["method"]) == key]
        if len(rs) < 2:
            continue
        fit = lambda rr, c: (float(np.polyfit(np.log([r["n"] for r in rr]),  # noqa: E731
                                              np.log([max(r[c], 1e-9) for r in rr]), 1)[0])
                             if len({r["n"] for r in rr}) >= 2 else float("nan"))
        done = [r for r in rs if r["status"] == "CONVERGED"]
        out[key] = (fit(done, "seconds"), fit(rs, "per_iter"))
    return out
