"""``svmopt.solve``: validate input, build the Problem, run a method, return a Result."""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

import jax
import jax.numpy as jnp

from . import driver
from .losses import Loss, hinge
from .operators import DenseOperator, SparseOperator, as_operator
from .problem import Problem
from .regularizers import Regularizer, l2
from .result import ConvergenceWarning, Result, SolverError, Status
from .solvers import Method, alm

__all__ = ["solve", "prepare", "encode_labels"]


def _check_finite_X(X):
    data = X.data if sp.issparse(X) else np.asarray(X)
    if not np.issubdtype(data.dtype, np.number):
        raise TypeError(f"X must be numeric, got dtype {data.dtype}")
    bad = ~np.isfinite(data)
    if bad.any():
        if sp.issparse(X):
            row = int(np.searchsorted(sp.csr_matrix(X).indptr, np.flatnonzero(bad)[0], side="right") - 1)
        else:
            row = int(np.argwhere(bad)[0][0])
        raise ValueError(f"X contains NaN or inf (first at row {row})")


def check_labels(y, n: int, what: str = "a binary SVM"):
    """Validate a label vector for n rows; returns (y as an array, its sorted distinct classes)."""
    y = np.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per row, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"shape mismatch: X has {n} rows but y has {y.shape[0]} labels")
    if np.issubdtype(y.dtype, np.number) and not np.all(np.isfinite(y)):
        raise ValueError(f"y contains NaN or inf (first at index {int(np.flatnonzero(~np.isfinite(y))[0])})")
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(f"y has only one class ({classes[0]!r}); {what} needs two")
    return y, classes


def encode_labels(y, n: int):
    """Map two distinct labels to -1/+1 (the larger one is +1); returns (y_pm, classes)."""
    y, classes = check_labels(y, n)
    if classes.size > 2:
        raise ValueError(f"y has {classes.size} classes; solve() is binary — use svmopt.solve_multiclass "
                         "(one-vs-rest) for more than two")
    return np.where(y == classes[1], 1.0, -1.0), classes


def _resolve_dtype(X, dtype):
    """float32 unless asked: it is our default for speed, whatever X's dtype."""
    x64 = jax.config.jax_enable_x64
    if dtype is None:
        return jnp.float32
    dtype = jnp.dtype(dtype)
    if dtype == jnp.float64 and not x64:
        raise ValueError("dtype=float64 needs jax_enable_x64: call jax.config.update('jax_enable_x64', True) first")
    if dtype not in (jnp.float32, jnp.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    return dtype


def _check_C(C):
    C_arr = np.asarray(C, dtype=float)
    if C_arr.ndim > 1:
        raise ValueError(f"C must be a scalar or a 1-D array of values to solve in one batch, got shape {C_arr.shape}")
    if not np.all(np.isfinite(C_arr)) or np.any(C_arr <= 0):
        raise ValueError(f"C must be finite and > 0, got {C}")
    return C_arr


def prepare(X, y, *, loss: Loss, reg: Regularizer, C=1.0, fit_intercept=True, intercept_scaling=None,
            sample_weight=None, dtype=None, layout="auto"):
    """Validate everything and return (Problem, classes, C array). Shared by all entry points."""
    if not isinstance(loss, Loss):
        raise TypeError(f"loss must be an svmopt Loss (e.g. svmopt.losses.hinge), got {loss!r}; "
                        "wrap a plain function with svmopt.losses.from_function")
    if not isinstance(reg, Regularizer):
        raise TypeError(f"reg must be an svmopt Regularizer (e.g. svmopt.regularizers.l2), got {reg!r}")
    if isinstance(X, (DenseOperator, SparseOperator)):
        n = X.shape[0]
    else:
        if not sp.issparse(X):
            X = np.asarray(X) if not isinstance(X, jax.Array) else X
            if X.ndim != 2:
                raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
        _check_finite_X(X)
        n = X.shape[0]
    if n == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape})")
    y_pm, classes = encode_labels(y, n)
    C_arr = _check_C(C)
    if sample_weight is None:
        s = np.ones(n)
    else:
        s = np.asarray(sample_weight, dtype=float)
        if s.shape != (n,):
            raise ValueError(f"shape mismatch: sample_weight has shape {s.shape}, expected ({n},)")
        if not np.all(np.isfinite(s)):
            raise ValueError("sample_weight contains NaN or inf")
        if np.any(s < 0):
            raise ValueError(f"sample_weight must be >= 0 (first negative at index {int(np.flatnonzero(s < 0)[0])})")
        if not np.any(s > 0):
            raise ValueError("sample_weight is zero everywhere: nothing to train on")
    if intercept_scaling is not None:
        if not (np.isfinite(intercept_scaling) and intercept_scaling > 0):
            raise ValueError(f"intercept_scaling must be > 0, got {intercept_scaling}")
        fit_intercept = False
    dt = _resolve_dtype(X, dtype)
    op = as_operator(X, dt, bias_scale=intercept_scaling, layout=layout)
    if loss.family.bind is not None:  # an all-zero row would get a zero smoothing: use 1 there
        kappa = op.row_inf_norms()
        loss = loss.bind(jnp.where(kappa > 0, kappa, 1.0))
    pb = Problem(op=op, y=jnp.asarray(y_pm, dt), s=jnp.asarray(s, dt), C=jnp.asarray(C_arr.ravel()[0], dt),
                 loss=jax.tree_util.tree_map(lambda a: jnp.asarray(a, dt), loss),
                 reg=jax.tree_util.tree_map(lambda a: jnp.asarray(a, dt), reg), fit_intercept=bool(fit_intercept))
    return pb, classes, C_arr


def solve(X, y, *, loss: Loss = hinge, reg: Regularizer = l2, method: Method = alm, C=1.0,
          fit_intercept: bool = True, intercept_scaling: float | None = None, sample_weight=None,
          tol: float | None = None, max_iter: int | None = None, dtype=None, history: bool = False,
          record_every: int = 1, throw: bool = False, kernel=None, layout: str = "auto",
          **method_params: Any) -> Result:
    """Solve  min R(w) + C sum_i s_i loss(y_i (w.x_i + b))  (SPEC section 1).

    X: (n, d) numpy / jax array or scipy.sparse matrix; y: (n,) with exactly two labels.
    C: a scalar, or a 1-D array to solve a whole grid in one vmapped call (arrays in the
    Result then carry a leading axis). ``intercept_scaling=s`` switches to LIBLINEAR's
    bias-feature convention (b regularized as a weight on a constant feature s).
    ``layout`` ("auto" | "sparse" | "dense") picks the data operator for scipy input.
    ``tol`` / extra keywords configure ``method``; ``dtype`` defaults to float32 (pass
    float64, with jax_enable_x64 on, for high precision). ``history=True`` records the objective and
    time per ``record_every`` iterations. A run that misses its tolerance warns
    (``ConvergenceWarning``), or raises ``SolverError`` with ``throw=True``.
    """
    method = configure_method(method, tol, method_params)
    pb, classes, C_arr = prepare(X, y, loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                                 intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype,
                                 layout=layout)
    pb, max_iter = finish_problem(pb, method, kernel, max_iter)
    batch_axes = None
    if C_arr.ndim == 1:
        pb = pb.replace(C=jnp.asarray(C_arr, pb.dtype))
        batch_axes = _axes(pb, C=0)
    out, hist, timings = driver.run(method, pb, max_iter=int(max_iter), history=history,
                                    record_every=record_every, batch_axes=batch_axes)
    res = _to_result(out, hist, timings, method, pb, classes, C if C_arr.ndim == 0 else C_arr,
                     intercept_scaling, throw)
    if pb.kernel is not None and C_arr.ndim == 0:
        alpha = np.asarray(res.extras["alpha"])
        sv = np.flatnonzero(alpha != 0)  # signed alpha (LS-SVM) counts too
        res.kernel = pb.kernel
        res.support_vectors = X[sv]
        res.dual_coef = alpha[sv] * np.asarray(pb.y)[sv]
        res.extras["support"] = sv
    return res


def configure_method(method, tol, method_params) -> Method:
    """Check ``method`` is a solver and apply ``tol`` / extra keywords to it."""
    if not isinstance(method, Method):
        raise TypeError(f"method must be an svmopt solver (e.g. svmopt.solvers.alm), got {method!r}")
    if tol is not None:
        method_params = {**method_params, "tol": tol}
    return method(**method_params) if method_params else method


def finish_problem(pb: Problem, method: Method, kernel, max_iter):
    """Attach a kernel, let the method validate the problem, resolve max_iter."""
    if kernel is not None:
        from .kernels import Kernel
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be an svmopt.kernels.Kernel (e.g. rbf(gamma=0.1)), got {kernel!r}")
        if not getattr(method, "supports_kernel", False):
            raise ValueError(f"method {method.name} is linear; for kernel={kernel!r} use method=alfpgm or nesvm")
        pb = pb.replace(kernel=jax.tree_util.tree_map(lambda a: jnp.asarray(a, pb.dtype), kernel))
    method.validate(pb)
    if max_iter is None:
        max_iter = method.default_max_iter(pb)
    if not (isinstance(max_iter, (int, np.integer)) and max_iter >= 1):
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    return pb, int(max_iter)


def _axes(pb: Problem, **batched):
    """vmap in_axes for a Problem: 0 for the named fields, None elsewhere."""
    none = jax.tree_util.tree_map(lambda _: None, pb)
    return none.replace(**{k: v for k, v in batched.items()})


def _to_result(out, hist, timings, method, pb, classes, C, intercept_scaling, throw) -> Result:
    w, b = out["w"], out["b"]
    if intercept_scaling is not None:
        b = w[..., -1] * intercept_scaling
        w = w[..., :-1]
    res = Result(w=w, b=b, primal_objective=out["primal"], dual_objective=out["dual"], gap=out["gap"],
                 status=out["status"], iterations=out["iterations"], method=method.name, loss=repr(pb.loss),
                 C=C, classes=classes, history=hist, timings=timings, extras=out["extras"],
                 intercept_scaling=intercept_scaling)
    status = np.asarray(res.status)
    if status.ndim == 0:
        res.status = Status(int(status))
        res.iterations = int(res.iterations)
    if np.any(status != Status.CONVERGED):
        msg = f"{method.name}: {res.message}"
        if throw:
            raise SolverError(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)
    return res
