"""``svmopt.solve``: one problem (or a grid over C), as a plan, run, finished.

Eager calls (numpy / scipy / concrete jax arrays) are validated with clear errors, padded to a
row bucket (zero-weight rows change nothing, and folds and grids of nearby sizes then share one
compiled program) and run in interruptible chunks (``svmopt.plan``, ``svmopt.stages``,
``svmopt.finish``). Called with traced values (inside a user's ``jax.jit``, ``jax.vmap`` or
``jax.grad``) the whole solve becomes part of the user's computation: checks that need concrete
values are skipped, and gradients of the solution come from the optimality conditions
(``svmopt.implicit``), never from unrolling the loop.
"""
from __future__ import annotations

from typing import Any

from . import finish, plan, stages
from .checks import is_traced
from .losses import Loss, hinge
from .regularizers import Regularizer, l2
from .result import Result
from .solvers import Method, auto

__all__ = ["solve"]


def solve(X, y, *, loss: Loss = hinge, reg: Regularizer = l2, method: Method = auto, C=1.0,
          fit_intercept: bool = True, intercept_scaling: float | None = None, sample_weight=None,
          tol: float | None = None, max_iter: int | None = None, dtype=None, history: bool = False,
          record_every: int = 1, throw: bool = False, kernel=None, layout: str = "auto", init=None,
          verbose=False, devices=None, batch: str = "auto", bucket: bool = True,
          **method_params: Any) -> Result:
    """Solve  min R(w) + C sum_i s_i loss(y_i (w.x_i + b))  (SPEC section 1).

    X: (n, d) numpy / jax array or scipy.sparse matrix (any format); y: (n,) with exactly two
    labels (the larger one is +1). C: a scalar, or a 1-D array to solve a whole grid
    (arrays in the Result then carry a leading axis). ``intercept_scaling=s`` switches to
    LIBLINEAR's bias-feature convention (b regularized as a weight on a constant feature s).

    method     "auto" (default: the method measured fastest for this loss, regularizer, data and
               backend, see ``svmopt.solvers.auto``; ``Result.method`` names it and
               ``Result.extras["auto"]`` says why) or a solver such as ``svmopt.solvers.alm(rho=1.1)``
    tol        the relative duality gap (P - D)/|P| a CONVERGED status certifies (every method)
    init       a warm start: an earlier Result (same method and shapes: resumes exactly),
               a (w, b) pair, or {"w", "b", "alpha"}
    verbose    True (a progress line about every second, via the ``logging`` module, logger
               "svmopt"), an int k (every k iterations) or a callable receiving a dict
    history    record iteration, objective, gap and time per ``record_every`` iterations
               (``Result.history``: a dict of arrays; for a C grid a list, one dict per C)
    devices    a list of jax devices. One C: the rows of X are split over them (``svmopt.shard_rows``;
               every solver then computes X w and X^T u there, one all-reduce of d numbers per
               X^T u). A C grid: the grid points run on them. Already sharded X (from
               ``shard_rows``) needs no ``devices``. Default None: one device (on a CPU, row
               sharding over host devices pays for sparse X only: docs/scaling.md).
    batch      how a C grid runs: "auto" | "loop" | "vmap" (``svmopt.driver.run_batch``)
    bucket     pad the rows to one of 16 sizes per power of two with zero-weight rows (exact),
               so folds and grids of nearby sizes reuse one compiled program
    layout     "auto" | "sparse" | "dense": the data operator for scipy input
    dtype      float32 (default) or float64 (with jax_enable_x64 on)

    Extra keywords configure ``method``. A run that ends without a certified gap warns
    (``ConvergenceWarning``), or raises ``SolverError`` with ``throw=True``.

    Inside ``jax.jit`` / ``jax.vmap`` / ``jax.grad`` (traced arguments) a linear solve runs as
    part of the traced computation (a kernel solve raises a TypeError there); labels must then be two distinct numbers (the larger
    is +1), value checks are skipped, and ``jax.grad`` of the solution uses implicit
    differentiation (``svmopt.implicit``).
    """
    method = plan.configure(method, tol, method_params)
    if is_traced((X, y, C, sample_weight, init, loss, reg, method, max_iter, kernel)):
        p = plan.traced(X, y, loss=loss, reg=reg, method=method, C=C, fit_intercept=fit_intercept,
                        intercept_scaling=intercept_scaling, sample_weight=sample_weight, max_iter=max_iter,
                        dtype=dtype, kernel=kernel, init=init)
        return finish.result(p, stages.run(p))
    run = plan.check_run_args(history=history, record_every=record_every, verbose=verbose, throw=throw,
                              fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, layout=layout,
                              bucket=bucket, max_iter=max_iter, batch=batch, devices=devices)
    p = plan.binary(X, y, loss=loss, reg=reg, method=method, C=C, fit_intercept=fit_intercept,
                    intercept_scaling=intercept_scaling, sample_weight=sample_weight, max_iter=run["max_iter"],
                    dtype=dtype, layout=layout, bucket=bucket, kernel=kernel, init=init, devices=run["devices"],
                    batch=batch)
    out = stages.run(p, history=history, record_every=run["record_every"], verbose=run["verbose"])
    return finish.report(finish.result(p, out), p, throw)
