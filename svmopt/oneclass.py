"""``svmopt.solve_oneclass``: the one-class SVM (SPEC section 7; LIBSVM -s 2, LIBLINEAR -s 21) as a plan, run,
finished.

    minimize over w, rho:  1/2 ||w||^2 - rho + 1/(nu sum_i s_i) sum_i s_i max(0, rho - w.phi(x_i))

(Schoelkopf et al., 2001). Its dual, min 1/2 alpha^T K alpha with 0 <= alpha_i <= s_i/(nu sum_i s_i) and
sum_i alpha_i = 1, is LIBSVM's general dual with p = 0 (``svmopt.solvers.libsvm_dual``), solved by
``alfpgm``; the status certifies the relative duality gap of this problem, as every solve's does.
"""
from __future__ import annotations

from typing import Any

from . import finish, plan, stages
from .checks import is_traced
from .result import OneClassResult
from .solvers import Method, auto

__all__ = ["solve_oneclass"]


def solve_oneclass(X, *, nu: float = 0.5, kernel=None, method: Method = auto, sample_weight=None,
                   tol: float | None = None, max_iter: int | None = None, dtype=None, history: bool = False,
                   record_every: int = 1, throw: bool = False, verbose=False, layout: str = "auto",
                   **method_params: Any) -> OneClassResult:
    """The one-class SVM of the rows of X (n, d) (numpy, jax or scipy.sparse).

    nu        in (0, 1] (default 0.5, LIBSVM's and scikit-learn's): an upper bound on the fraction of
              training rows outside the estimated support and a lower bound on the fraction of support
              vectors
    kernel    an ``svmopt.kernels.Kernel`` (e.g. rbf(gamma)); None (default): linear, with the primal
              ``w`` in the result (LIBLINEAR's -s 21)
    method    "auto" (alfpgm) or a method that solves LIBSVM's dual with sum alpha = 1 (alfpgm)
    tol       the relative duality gap (P - D)/|P| a CONVERGED status certifies (default 1e-3)

    The other keywords are ``svmopt.solve``'s. Returns a ``OneClassResult``: ``decision_function`` is
    w.phi(x) - rho, ``predict`` is +1 / -1; ``support_vectors`` and ``dual_coef`` (alpha, summing to 1)
    for a kernel, ``w`` for the linear model; ``scale`` turns these into LIBSVM's numbers.
    """
    if is_traced((X, sample_weight, nu, kernel)):
        raise TypeError("solve_oneclass cannot run inside jax.jit / jax.vmap / jax.grad; call it eagerly")
    method = plan.configure(method, tol, method_params)
    run = plan.check_run_args(history=history, record_every=record_every, verbose=verbose, throw=throw,
                              layout=layout, max_iter=max_iter)
    p = plan.oneclass(X, nu=nu, method=method, kernel=kernel, sample_weight=sample_weight, max_iter=run["max_iter"],
                      dtype=dtype, layout=layout)
    out = stages.run(p, history=history, record_every=run["record_every"], verbose=run["verbose"])
    res = finish.result(p, out, cls=OneClassResult, nu=p.extra["nu"], scale=p.extra["scale"])
    return finish.report(res, p, throw)
