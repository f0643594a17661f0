"""``svmopt.path``: a warm-started regularization path over C (LIBLINEAR's ``-C`` idea).

The problems for the C values differ only in C, a runtime leaf of the problem, so every
solve on the path runs the one compiled program. They are solved from the smallest C up
(small C is cheap and its solution is a good start for the next), each starting from the
previous primal (w, b) and dual alpha (alpha scaled by the ratio of the C values, which
keeps it in the box [0, C s] of the hinge). The result is one ``Result`` whose arrays carry
a leading axis in the order of the C values given.
"""
from __future__ import annotations

import time
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from . import driver
from .losses import Loss, hinge
from .regularizers import Regularizer, l2
from .result import Result, SolverError, Status, warn_convergence
from .solve import (attach_support_vectors, check_C, choose_method, conditioning_hint, configure_method,
                    finish_problem, hand_over_batch, make_start, name_handed, prepare, to_result)
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
    method = configure_method(method, tol, method_params)
    n = X.shape[0]
    pb, classes, _ = prepare(X, y, loss=loss, reg=reg, C=float(C_arr[0]), fit_intercept=fit_intercept,
                                intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype,
                                layout=layout, bucket=kernel is None)
    chooser = method
    method, why = choose_method(method, pb, kernel)
    handover = chooser.handover(pb, method) if why is not None and max_iter is None else None
    pb, max_iter = finish_problem(pb, method, kernel, max_iter)
    if handover is not None:  # the batch's problems run to the hand-over's cap (wide data: 100 passes)
        max_iter = min(max_iter, handover.cap)
    method = method.canonical(pb.dtype)
    order = np.argsort(C_arr, kind="stable")
    outs: list = [None] * C_arr.size
    hists: list = [None] * C_arr.size
    per_C = np.zeros(C_arr.size)
    compile_time, prev, prev_C = 0.0, None, None
    t0 = time.perf_counter()
    for j in order:
        c = float(C_arr[j])
        p = pb.replace(C=jnp.asarray(c, pb.dtype))
        start = driver.cold_start(method, p)
        if warm and prev is not None:
            ratio = c / prev_C
            start = make_start({"w": prev.w, "b": prev.b, "alpha": None if prev.alpha is None else prev.alpha * ratio},
                               method, p, None, n)
        out, hists[j], timings = driver.run(method, p, start, max_iter=max_iter, verbose=verbose, history=history,
                                            record_every=record_every, label=f"[C={c:g}] ")
        compile_time += timings["compile"]
        per_C[j] = timings["run"]
        outs[j] = out
        kernel_model = pb.kernel is not None
        prev = _Warm(w=None if kernel_model else out.w, b=None if kernel_model else out.b,
                     alpha=out.extras.get("alpha"))
        prev_C = c
    stacked = jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(v) for v in a]), *outs)
    handed, timings = {}, {"compile": compile_time, "run": 0.0}
    if handover is not None:  # the C values dual CD left uncertified, each handed to alm (solvers.auto)
        stacked, hists, handed = hand_over_batch(
            handover, method, lambda k: pb.replace(C=jnp.asarray(float(C_arr[k]), pb.dtype)), stacked,
            hists if history else None, timings, [f"C={c:g}" for c in C_arr], history=history,
            record_every=record_every, verbose=verbose)
        for h in handed.values():
            per_C[h["index"]] += h["run"]
    total = time.perf_counter() - t0
    res = to_result(stacked, None, {"compile": timings["compile"], "run": float(per_C.sum()), "per_C": per_C,
                                    "total": total}, method, pb, classes, C_arr, intercept_scaling, n)
    res.extras["order"] = order
    res.history = hists if history else None
    if why is not None:
        res.extras["auto"] = why
    if handed:
        name_handed(res, method, handover, handed, C_arr.size, "C values")
    if np.any(np.asarray(res.status) != Status.CONVERGED):
        bad = [f"C={C_arr[i]:g}: {Status(int(s)).name}" for i, s in enumerate(np.asarray(res.status))
               if s != Status.CONVERGED]
        failed = C_arr[np.asarray(res.status) != Status.CONVERGED]
        msg = (f"{res.method} path: {len(bad)} of {C_arr.size} solves not certified ({'; '.join(bad[:5])})"
               + conditioning_hint(pb, np.max(failed)))
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=2)
    return res


class _Warm:
    def __init__(self, w, b, alpha):
        self.w, self.b, self.alpha = w, b, alpha
