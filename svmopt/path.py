"""``svmopt.path``: a warm-started regularization path over C (LIBLINEAR's ``-C`` idea).

The problems for the C values differ only in C, a runtime leaf of the problem, so every solve on
the path runs the one compiled program. They are solved from the smallest C up (small C is cheap
and its solution is a good start for the next), each starting from the previous primal (w, b) and
dual alpha (alpha scaled by the ratio of the C values, which keeps it in the box [0, C s] of the
hinge). Each point is one plan run by the stage runner (``svmopt.stages``): a point the default
method leaves uncertified is handed over as a single solve would be, before the next point starts
from it. The result is one ``Result`` whose arrays carry a leading axis in the order of the C
values given.
"""
from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from . import finish, plan, stages
from .checks import check_C
from .losses import Loss, hinge
from .regularizers import Regularizer, l2
from .result import Result, SolverError, Status, warn_convergence
from .solvers import Method, auto

__all__ = ["path"]


def path(X, y, *, C, loss: Loss = hinge, reg: Regularizer = l2, method: Method = auto, tol: float | None = None,
         max_iter: int | None = None, fit_intercept: bool = True, intercept_scaling: float | None = None,
         sample_weight=None, dtype=None, layout: str = "auto", kernel=None, verbose=False, throw: bool = False,
         warm: bool = True, history: bool = False, record_every: int = 1, **method_params: Any) -> Result:
    """Solve for every C in ``C`` (a 1-D array), warm-starting each from the previous one.

    Returns a Result with a leading axis over C (w (k, d), b (k,), objectives, status,
    iterations); ``timings["per_C"]`` holds each solve's run time and ``extras["order"]``
    the order they were solved in. ``warm=False`` solves each C cold (for comparison).
    ``verbose`` reports each solve under the label "[C=...]"; ``history=True`` gives
    ``Result.history`` as a list of one table per C (in the order of ``C``). Other
    arguments are those of ``svmopt.solve``.
    """
    C_arr = check_C(C)
    if C_arr.ndim != 1:
        raise ValueError("path takes a 1-D array of C values; for one C use svmopt.solve")
    run = plan.check_run_args(history=history, record_every=record_every, verbose=verbose, throw=throw,
                              fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, layout=layout,
                              max_iter=max_iter)
    method = plan.configure(method, tol, method_params)
    base = plan.binary(X, y, loss=loss, reg=reg, method=method, C=float(C_arr[0]), fit_intercept=fit_intercept,
                       intercept_scaling=intercept_scaling, sample_weight=sample_weight, max_iter=run["max_iter"],
                       dtype=dtype, layout=layout, bucket=kernel is None, kernel=kernel)
    order = np.argsort(C_arr, kind="stable")
    results: list = [None] * C_arr.size
    per_C = np.zeros(C_arr.size)
    handed, compile_time, prev, prev_C = {}, 0.0, None, None
    t0 = time.perf_counter()
    for j in order:
        c = float(C_arr[j])
        pb = base.pb.replace(C=jnp.asarray(c, base.pb.dtype))
        start = None
        if warm and prev is not None:
            alpha = prev.extras.get("alpha")
            start = {"w": None if base.pb.kernel is not None else prev.w,
                     "b": None if base.pb.kernel is not None else prev.b,
                     "alpha": None if alpha is None else alpha * (c / prev_C)}
        point = dataclasses.replace(base, pb=pb, C=c, labels=(f"C={c:g}",),
                                    start=plan.make_start(start, base.method, pb, intercept_scaling, base.n))
        out = stages.run(point, history=history, record_every=run["record_every"],
                         verbose=run["verbose"])
        results[j] = finish.result(point, out)
        compile_time += out.timings["compile"]
        per_C[j] = out.timings["run"]
        handed.update(out.handed)
        prev, prev_C = results[j], c
    res = _stack(results, base, C_arr)
    res.timings = {"compile": compile_time, "run": float(per_C.sum()), "per_C": per_C,
                   "total": time.perf_counter() - t0}
    res.extras["order"] = order
    res.history = [r.history for r in results] if history else None
    if base.why is not None:
        res.extras["auto"] = base.why
    if handed:
        handed = {k: dict(v, index=int(np.flatnonzero(C_arr == float(k[2:]))[0])) for k, v in handed.items()}
        replaced = sum("kept" not in v for v in handed.values())
        if replaced:
            ho = base.handover
            res.method = ho.method.name if replaced == C_arr.size else f"{base.method.name}+{ho.method.name}"
            res.extras["auto"] += f"; {ho.label} took over the C values {base.method.name} had not certified"
        res.extras["handover"] = handed
    status = np.asarray(res.status)
    if np.any(status != Status.CONVERGED):
        bad = [f"C={C_arr[i]:g}: {Status(int(s)).name}" for i, s in enumerate(status) if s != Status.CONVERGED]
        msg = (f"{res.method} path: {len(bad)} of {C_arr.size} solves not certified ({'; '.join(bad[:5])})"
               + finish.conditioning_hint(base.pb, np.max(C_arr[status != Status.CONVERGED])))
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=2)
    return res


def _stack(results, base, C_arr) -> Result:
    """One Result with a leading axis over C from the points' Results (in the order of ``C``)."""
    arrays = ("w", "b", "primal_objective", "dual_objective", "gap")
    first = results[0]
    stacked = {f: np.stack([np.asarray(getattr(r, f)) for r in results]) for f in arrays}
    extras = {k: np.stack([np.asarray(r.extras[k]) for r in results]) for k in first.extras
              if all(k in r.extras and np.shape(r.extras[k]) == np.shape(first.extras[k])
                     and not isinstance(r.extras[k], (str, list, dict)) for r in results)}
    return Result(**stacked, status=np.asarray([int(r.status) for r in results], np.int32),
                  iterations=np.asarray([int(r.iterations) for r in results]), method=base.method.name,
                  loss=first.loss, C=C_arr, classes=first.classes, extras=extras,
                  intercept_scaling=base.intercept_scaling, tol=first.tol, kernel=first.kernel,
                  support_vectors=None, dual_coef=None,
                  state=jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(x) for x in a]),
                                               *[r.state for r in results])
                  if all(r.state is not None for r in results) and all(r.method == first.method for r in results)
                  else None)
