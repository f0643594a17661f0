"""``svmopt.path``: a warm-started regularization path over C (LIBLINEAR's ``-C`` idea).

The problems for the C values differ only in C, a runtime leaf of the problem, so every solve on
the path runs the one compiled program. They are solved from the smallest C up (small C is cheap
and its solution is a good start for the next), each starting from the previous primal (w, b) and
dual alpha (alpha scaled by the ratio of the C values, which keeps it in the box [0, C s] of the
hinge). With more than two classes every point is the one-vs-rest batch of ``solve_multiclass``,
each class warm-started from its own previous solution. Each point is one plan run by the stage runner (``svmopt.stages``): a point the default
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
from .checks import as_matrix, check_C
from .losses import Loss, hinge
from .regularizers import Regularizer, l2
from .multiclass import MulticlassResult
from .result import Result, SolverError, Status, warn_convergence
from .solvers import Method, auto

__all__ = ["path"]


def path(X, y, *, C, loss: Loss = hinge, reg: Regularizer = l2, method: Method = auto, tol: float | None = None,
         max_iter: int | None = None, fit_intercept: bool = True, intercept_scaling: float | None = None,
         sample_weight=None, dtype=None, layout: str = "auto", kernel=None, verbose=False, throw: bool = False,
         warm: bool = True, history: bool = False, record_every: int = 1, **method_params: Any) -> Result:
    """Solve for every C in ``C`` (a 1-D array), warm-starting each from the previous one.

    Returns a Result with a leading axis over C (w (k, d), b (k,), objectives, status,
    iterations); with K > 2 classes a ``MulticlassResult`` one-vs-rest over every C (w (k, K, d),
    b (k, K), ..., ``decision_function`` (k, n, K)); ``timings["per_C"]`` holds each solve's run time and ``extras["order"]``
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
    kw = dict(loss=loss, reg=reg, method=method, C=float(C_arr[0]), fit_intercept=fit_intercept,
              intercept_scaling=intercept_scaling, sample_weight=sample_weight, max_iter=run["max_iter"],
              dtype=dtype, layout=layout, kernel=kernel)
    X = as_matrix(X)
    ovr = plan.targets(y, X.shape[0], "ovr")[1].size > 2
    base = plan.one_vs_rest(X, y, **kw) if ovr else plan.binary(X, y, bucket=kernel is None, **kw)
    order = np.argsort(C_arr, kind="stable")
    results: list = [None] * C_arr.size
    per_C = np.zeros(C_arr.size)
    handed, compile_time, prev, prev_C = {}, 0.0, None, None
    t0 = time.perf_counter()
    for j in order:
        c = float(C_arr[j])
        point = dataclasses.replace(base, pb=base.pb.replace(C=jnp.asarray(c, base.pb.dtype)), C=c,
                                    labels=base.labels if ovr else (f"C={c:g}",))
        if warm and prev is not None:
            point.start = _warm(point, prev, c / prev_C)
        out = stages.run(point, history=history, record_every=run["record_every"], verbose=run["verbose"])
        results[j] = finish.result(point, out, MulticlassResult if ovr else Result)
        compile_time += out.timings["compile"]
        per_C[j] = out.timings["run"]
        handed.update({(k if not ovr else f"C={c:g} class {k}"): v for k, v in out.handed.items()})
        prev, prev_C = results[j], c
    res = _stack(results, base, C_arr)
    res.timings = {"compile": compile_time, "run": float(per_C.sum()), "per_C": per_C,
                   "total": time.perf_counter() - t0}
    res.extras["order"] = order
    res.history = [r.history for r in results] if history else None
    if base.why is not None:
        res.extras["auto"] = base.why
    if handed:
        handed = {k: dict(v, index=int(np.flatnonzero(C_arr == float(k.split()[0][2:]))[0]))
                  for k, v in handed.items()}
        replaced = sum("kept" not in v for v in handed.values())
        if replaced:
            ho = base.handover
            # each point's own method(s) (a point whose hand-over chain went on names its last method)
            res.method = "+".join(dict.fromkeys(m for r in results for m in str(r.method).split("+")))
            res.extras["auto"] += f"; {ho.label} took over the C values {base.method.name} had not certified"
        res.extras["handover"] = handed
    status = np.asarray(res.status)
    if np.any(status != Status.CONVERGED):
        failed = status.reshape(C_arr.size, -1) != Status.CONVERGED
        bad = [f"C={C_arr[i]:g}: {Status(int(status.reshape(C_arr.size, -1)[i][failed[i]][0])).name}"
               for i in np.flatnonzero(failed.any(axis=1))]
        msg = (f"{res.method} path: {int(failed.sum())} of {failed.size} solves not certified "
               f"({'; '.join(bad[:5])})" + finish.conditioning_hint(base.pb, np.max(C_arr[failed.any(axis=1)])))
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=2)
    return res


def _warm(point, prev, ratio):
    """The start of a point from the previous point's Result (alpha scaled by the ratio of the Cs)."""
    def one(k):
        pick = (lambda a: a) if point.axes is None else (lambda a: None if a is None else np.asarray(a)[k])
        alpha = pick(prev.extras.get("alpha"))
        kernel = point.pb.kernel is not None
        return plan.make_start({"w": None if kernel else pick(prev.w), "b": None if kernel else pick(prev.b),
                                "alpha": None if alpha is None else alpha * ratio},
                               point.method, point.problem(k), point.intercept_scaling, point.n)

    if point.axes is None:
        return one(0)
    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *[one(k) for k in range(point.size)])


def _stack(results, base, C_arr) -> Result:
    """One Result with a leading axis over C from the points' Results (in the order of ``C``)."""
    arrays = ("w", "b", "primal_objective", "dual_objective", "gap", "status", "iterations")
    first = results[0]
    stacked = {f: np.stack([np.asarray(getattr(r, f)) for r in results]) for f in arrays}
    stacked["status"] = stacked["status"].astype(np.int32)
    extras = {k: np.stack([np.asarray(r.extras[k]) for r in results]) for k in first.extras
              if all(k in r.extras and np.shape(r.extras[k]) == np.shape(first.extras[k])
                     and not isinstance(r.extras[k], (str, list, dict)) for r in results)}
    same = all(r.state is not None for r in results) and all(r.method == first.method for r in results)
    state = jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(x) for x in a]), *[r.state for r in results]) \
        if same else None
    return type(first)(**stacked, method=base.method.name, loss=first.loss, C=C_arr, classes=first.classes,
                       extras=extras, intercept_scaling=base.intercept_scaling, tol=first.tol, kernel=first.kernel,
                       state=state)
