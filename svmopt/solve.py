"""``svmopt.solve``: validate input, build the Problem, run a method, return a Result.

Eager calls (numpy / scipy / concrete jax arrays) validate everything with clear errors,
pad the rows to a bucket (zero-weight rows change nothing, and folds and grids of
nearby sizes then share one compiled program), run the method in interruptible chunks
and report timings. Called with traced values (inside a user's ``jax.jit``, ``jax.vmap``
or ``jax.grad``) the whole solve becomes part of the user's computation: checks that
need concrete values are skipped, and gradients of the solution come from the
optimality conditions (``svmopt.implicit``), never from unrolling the loop.
"""
from __future__ import annotations

import functools
import math
import os
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
from .result import Result, SolverError, Status, warn_convergence
from .solvers import Method, auto
from .solvers.auto import Auto
from .solvers._base import DUAL, PRIMAL, RESUME, Start, concrete, is_traced

__all__ = ["solve", "prepare", "encode_labels", "check_labels", "make_start", "configure_method",
           "choose_method", "finish_problem", "batch_axes", "bucket_rows"]


# ---------------------------------------------------------------------------------- input checks
def as_matrix(X, what="X"):
    """X as a scipy CSR matrix, a numpy array or a jax array, with clear errors."""
    if isinstance(X, (DenseOperator, SparseOperator)):
        return X
    if sp.issparse(X):
        try:
            X = X.tocsr()
        except Exception as exc:  # noqa: BLE001  (any format scipy cannot convert)
            raise TypeError(f"{what}: cannot convert sparse format {type(X).__name__} to CSR: {exc}") from exc
        data = X.data
    elif isinstance(X, jax.Array):
        data = X
    else:
        try:
            X = np.asarray(X)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(f"{what} must be a numeric matrix: {exc}") from exc
        data = X
    dt = np.dtype(data.dtype) if not isinstance(data, jax.Array) else np.dtype(data.dtype)
    if dt == bool:
        X = X.astype(np.float32) if not isinstance(X, jax.Array) else X.astype(jnp.float32)
    elif np.issubdtype(dt, np.complexfloating):
        raise TypeError(f"{what} is complex ({dt}); an SVM needs real features")
    elif not (np.issubdtype(dt, np.integer) or np.issubdtype(dt, np.floating)):
        raise TypeError(f"{what} must be numeric, got dtype {dt}")
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D (n_samples, n_features), got shape {X.shape}")
    return X


def check_finite_X(X, dtype=None):
    """NaN / inf, and values that overflow ``dtype`` (float32: |x| > 3.4e38), name the first row."""
    if isinstance(X, (DenseOperator, SparseOperator)) or is_traced(X):
        return
    data = X.data if sp.issparse(X) else np.asarray(X)
    if data.size == 0:
        return
    if np.issubdtype(data.dtype, np.integer):
        bad = np.zeros(data.shape, bool)
    else:
        bad = ~np.isfinite(data)
    what = "NaN or inf"
    if not bad.any() and dtype is not None and np.dtype(dtype).itemsize < data.dtype.itemsize:
        big = float(np.finfo(np.dtype(dtype)).max)
        bad = np.abs(data) > big
        what = f"a value beyond the range of {np.dtype(dtype).name} (|x| > {big:.3g}; use dtype=float64)"
    if bad.any():
        if sp.issparse(X):
            row = int(np.searchsorted(X.indptr, np.flatnonzero(bad)[0], side="right") - 1)
        else:
            row = int(np.argwhere(bad)[0][0])
        raise ValueError(f"X contains {what} (first at row {row})")


def check_labels(y, n: int, what: str = "a binary SVM"):
    """Validate a label vector for n rows; returns (y as an array, its sorted distinct classes)."""
    try:
        y = np.asarray(y)
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"y must be an array of labels: {exc}") from exc
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per row, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"shape mismatch: X has {n} rows but y has {y.shape[0]} labels")
    if np.issubdtype(y.dtype, np.complexfloating):
        raise TypeError("y is complex; labels must be real numbers or strings")
    if np.issubdtype(y.dtype, np.number) and not np.all(np.isfinite(y)):
        raise ValueError(f"y contains NaN or inf (first at index {int(np.flatnonzero(~np.isfinite(y))[0])})")
    if y.dtype == object:
        missing = [i for i, v in enumerate(y) if v is None or (isinstance(v, float) and not math.isfinite(v))]
        if missing:
            raise ValueError(f"y contains a missing label (None or NaN) at index {missing[0]}")
    if np.issubdtype(y.dtype, np.number) and y.size:  # two numeric labels: no sort (a9a: 0.25 -> 0.05 ms)
        lo, hi = y.min(), y.max()
        if lo != hi and np.all((y == lo) | (y == hi)):
            return y, np.array([lo, hi], dtype=y.dtype)
    try:
        classes = np.unique(y)
    except TypeError as exc:
        raise TypeError(f"y mixes labels that cannot be ordered (e.g. numbers and strings): {exc}") from exc
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


def resolve_dtype(dtype):
    """float32 unless asked: it is our default for speed, whatever X's dtype."""
    x64 = jax.config.jax_enable_x64
    if dtype is None:
        return jnp.dtype(jnp.float32)
    dtype = jnp.dtype(dtype)
    if dtype not in (jnp.float32, jnp.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if dtype == jnp.float64 and not x64:
        raise ValueError("dtype=float64 needs jax_enable_x64: call jax.config.update('jax_enable_x64', True) first")
    return dtype


def check_C(C, dtype=None):
    try:
        C_arr = np.asarray(C, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"C must be a number > 0 or a 1-D array of them, got {C!r}") from exc
    if C_arr.ndim > 1:
        raise ValueError(f"C must be a scalar or a 1-D array of values to solve in one batch, got shape {C_arr.shape}")
    if C_arr.size == 0:
        raise ValueError("C must be a number > 0 or a non-empty 1-D array of them, got an empty array")
    if not np.all(np.isfinite(C_arr)) or np.any(C_arr <= 0):
        raise ValueError(f"C must be finite and > 0, got {C}")
    if dtype is not None and np.max(C_arr) > float(np.finfo(np.dtype(dtype)).max) / 1e3:
        raise ValueError(f"C = {np.max(C_arr):g} is beyond what {np.dtype(dtype).name} can solve with; "
                         "use dtype=float64 or a smaller C")
    return C_arr


def check_weights(sample_weight, n):
    if sample_weight is None:
        return np.ones(n)
    s = np.asarray(sample_weight, dtype=float)
    if s.shape != (n,):
        raise ValueError(f"shape mismatch: sample_weight has shape {s.shape}, expected ({n},)")
    if not np.all(np.isfinite(s)):
        raise ValueError("sample_weight contains NaN or inf")
    if np.any(s < 0):
        raise ValueError(f"sample_weight must be >= 0 (first negative at index {int(np.flatnonzero(s < 0)[0])})")
    if not np.any(s > 0):
        raise ValueError("sample_weight is zero everywhere: nothing to train on")
    return s


# ---------------------------------------------------------------------------------- row buckets
BUCKETS_PER_OCTAVE = 16  # padding adds at most 1/16 = 6.25% rows


def bucket_rows(n: int) -> int:
    """The smallest bucket >= n: 16 sizes per power of two (exact below 64)."""
    if n <= 64:
        return n
    step = 1 << max(0, n.bit_length() - 1 - 4)  # 2^(floor(log2 n) - 4)
    return -(-n // step) * step


def _pad(X, y, s, n_pad):
    """The padding rows' labels (+1) and weights (0) appended to y and s. X's zero rows come from
    ``as_operator(rows=n_pad)`` (a sparse X's ``nnz_bucket`` keeps its number of stored entries on
    a bucket too: explicit zeros in these rows)."""
    n = X.shape[0]
    if n_pad == n:
        return X, y, s
    extra = n_pad - n
    y = np.concatenate([y, np.ones(extra)])
    s = np.concatenate([s, np.zeros(extra)])
    return X, y, s


# ---------------------------------------------------------------------------------- the problem
def _cast(tree, dt):
    def conv(a):
        a = jnp.asarray(a)
        return a.astype(dt) if jnp.issubdtype(a.dtype, jnp.floating) else a
    return jax.tree_util.tree_map(conv, tree)


def prepare(X, y, *, loss: Loss, reg: Regularizer, C=1.0, fit_intercept=True, intercept_scaling=None,
            sample_weight=None, dtype=None, layout="auto", bucket: bool = True):
    """Validate everything and return (Problem, classes, C array). Shared by all eager entry points.

    The Problem may have more rows than X (a row bucket); the extra rows weigh 0.
    """
    if not isinstance(loss, Loss):
        raise TypeError(f"loss must be an svmopt Loss (e.g. svmopt.losses.hinge), got {loss!r}; "
                        "wrap a plain function with svmopt.losses.from_function")
    if not isinstance(reg, Regularizer):
        raise TypeError(f"reg must be an svmopt Regularizer (e.g. svmopt.regularizers.l2), got {reg!r}")
    from . import sharding
    if sharding.is_sharded(X):  # rows spread over devices: checked and encoded where they live
        return sharding.prepare(X, y, loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                                intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype)
    dt = resolve_dtype(dtype)
    X = as_matrix(X)
    n = X.shape[0]
    if n == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape})")
    if isinstance(X, jax.Array):  # (host X: as_operator checks while it builds the operator)
        check_finite_X(X, dt)
    y_pm, classes = encode_labels(y, n)
    C_arr = check_C(C, dt)
    s = check_weights(sample_weight, n)
    for label, sign in ((classes[0], -1.0), (classes[1], 1.0)):
        if not np.any(s[np.asarray(y_pm) == sign] > 0):  # a one-class problem: P* = 0, no gap can certify it
            label = label.item() if isinstance(label, np.generic) else label
            raise ValueError(f"sample_weight is zero on every row of class {label!r}: only one class has weight, "
                             "and a classifier needs two")
    if np.max(C_arr) * np.max(s) > float(np.finfo(np.dtype(dt)).max) / 1e3:  # the same margin as check_C
        raise ValueError(f"C * sample_weight reaches {np.max(C_arr) * np.max(s):g}, beyond what "
                         f"{np.dtype(dt).name} can solve with; use dtype=float64 or smaller weights")
    if intercept_scaling is not None:
        if not (np.isfinite(intercept_scaling) and intercept_scaling > 0):
            raise ValueError(f"intercept_scaling must be > 0, got {intercept_scaling}")
        fit_intercept = False
    check_width(X.shape[1] + (intercept_scaling is not None), dt)
    bucketed = bucket and not isinstance(X, (DenseOperator, SparseOperator))
    rows = n
    if bucketed:
        rows = bucket_rows(n)
        X, y_pm, s = _pad(X, y_pm, s, rows)
    op = as_operator(X, dt, bias_scale=intercept_scaling, layout=layout,
                     nnz_bucket=bucket_rows if bucketed else None, pad_rows=rows - n, rows=rows)
    pb = build_problem(op, y_pm, s, C_arr.ravel()[0], loss, reg, fit_intercept, dt)
    return pb, classes, C_arr


WIDTH_VECTORS = 16
"""About how many vectors of the model's length a linear solve keeps (w, its gradient, the
method's state, CG's vectors, the certificate's X^T (alpha y)): a file with one feature index of
5e7 took 1.6 GB to train on two rows."""


def check_width(d: int, dtype) -> None:
    """Refuse a problem whose model vectors alone cannot fit in this machine's memory, naming the
    width (a LIBSVM file with one huge feature index, 2e9, made the solve die allocating 8 GB)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on this platform: no check
        return
    need = WIDTH_VECTORS * int(d) * np.dtype(dtype).itemsize
    if need > memory:
        raise ValueError(f"X has {int(d):,} columns: a linear model keeps about {WIDTH_VECTORS} vectors of that "
                         f"length, {need / 2**30:.1f} GiB in {np.dtype(dtype).name}, more than this machine's "
                         f"{memory / 2**30:.1f} GiB. A huge feature index makes X this wide (the largest index "
                         "sets the width); renumber the features that occur, or check the file")


def _to_device(x, dt):
    """``jnp.asarray(x, dt)``; host data is converted on the host and transferred (converting on
    the device compiles a program per shape: a new process pays that at its first solve)."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return jnp.asarray(x, dt)
    return jax.device_put(np.asarray(x, dtype=dt))


def build_problem(op, y_pm, s, C, loss, reg, fit_intercept, dt):
    if loss.family.bind is not None:  # an all-zero row would get a zero smoothing: use 1 there
        kappa = op.row_inf_norms()
        loss = loss.bind(jnp.where(kappa > 0, kappa, 1.0))
    parts = (y_pm, s, C)
    if not any(isinstance(x, (jax.Array, jax.core.Tracer)) for x in parts):  # host data: one transfer
        y_pm, s, C = jax.device_put([np.asarray(x, dtype=dt) for x in parts])
    return Problem(op=op, y=_to_device(y_pm, dt), s=_to_device(s, dt), C=_to_device(C, dt),
                   loss=_cast(loss, dt), reg=_cast(reg, dt), fit_intercept=bool(fit_intercept))


def configure_method(method, tol, method_params) -> Method:
    """Check ``method`` is a solver (or "auto") and apply ``tol`` / extra keywords to it."""
    if isinstance(method, str) and method == "auto":
        method = auto
    if isinstance(method, Auto) and method_params:
        raise TypeError(f"method='auto' takes only tol; {sorted(method_params)} are parameters of a specific "
                        "method: pass it, e.g. method=svmopt.solvers.alm(rho=1.1)")
    if not isinstance(method, Method):
        raise TypeError(f"method must be an svmopt solver (e.g. svmopt.solvers.alm), got {method!r}")
    if tol is not None:
        method_params = {**method_params, "tol": tol}
    method = method(**method_params) if method_params else method
    t = concrete(method.tol)
    if t is not None and not (np.ndim(t) == 0 and np.isfinite(t) and 0 < t < 1):
        raise ValueError(f"tol (the relative duality gap to certify) must be in (0, 1), got {method.tol!r}")
    return method


def choose_method(method: Method, pb: Problem, kernel=None):
    """(method to run, why): ``auto`` picks one for this problem (``svmopt.solvers.auto``); any
    other method runs as given (why = None)."""
    if not isinstance(method, Auto):
        return method, None
    return method.choose(pb if kernel is None else pb.replace(kernel=_cast(kernel, pb.dtype)))


def finish_problem(pb: Problem, method: Method, kernel, max_iter):
    """Attach a kernel, let the method validate the problem, resolve max_iter."""
    if kernel is not None:
        from .kernels import Kernel
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be an svmopt.kernels.Kernel (e.g. rbf(gamma=0.1)), got {kernel!r}")
        if not getattr(method, "supports_kernel", False):
            raise ValueError(f"method {method.name} is linear; for kernel={kernel!r} use method=alfpgm or nesvm")
        pb = pb.replace(kernel=_cast(kernel, pb.dtype))
    method.validate(pb)
    if max_iter is None:
        max_iter = method.default_max_iter(pb)
    mi = concrete(max_iter)
    if mi is not None and not (isinstance(mi, (int, np.integer)) and not isinstance(mi, bool) and mi >= 1):
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    return pb, (int(mi) if mi is not None else max_iter)


def batch_axes(pb: Problem, **batched):
    """vmap in_axes for a Problem: 0 for the named fields, None elsewhere."""
    none = jax.tree_util.tree_map(lambda _: None, pb)
    return none.replace(**batched)


# ---------------------------------------------------------------------------------- starts
def make_start(init, method: Method, pb: Problem, intercept_scaling=None, n_user=None) -> Start:
    """A ``Start`` from ``init``: None, an earlier Result, (w, b), or {"w", "b", "alpha"}.

    A Result of the same method on a problem of the same shape resumes exactly (its
    carried state); otherwise its w, b and dual alpha are a warm start.
    """
    cold = driver.cold_start(method, pb)
    if init is None:
        return cold
    dt = pb.dtype
    if isinstance(init, Result):
        st = init.state
        if st is not None and init.method == method.name and _same_shapes(st, cold):
            return Start(*(_cast(v, dt) for v in st[:3]), jnp.asarray(st.level | RESUME, jnp.int32),
                         _cast(st.aux, dt))
        alpha = init.extras.get("alpha") if isinstance(init.extras, dict) else None
        init = {"w": init.w, "b": init.b, "alpha": alpha}
    if isinstance(init, tuple) and len(init) == 2:
        init = {"w": init[0], "b": init[1]}
    if not isinstance(init, dict):
        raise TypeError("init must be a Result, a (w, b) pair or a dict with 'w', 'b' and/or 'alpha', "
                        f"got {type(init).__name__}")
    unknown = set(init) - {"w", "b", "alpha"}
    if unknown:
        raise TypeError(f"init has unknown keys {sorted(unknown)}; it takes 'w', 'b', 'alpha'")
    w, b, alpha, level = cold.w, cold.b, cold.alpha, 0
    if init.get("w") is not None:
        wv = jnp.asarray(init["w"], dt).ravel()
        bv = jnp.asarray(0.0 if init.get("b") is None else init["b"], dt).reshape(())
        d_user = pb.d - (1 if intercept_scaling is not None else 0)
        if pb.kernel is None and wv.shape[0] != d_user:
            raise ValueError(f"init w has {wv.shape[0]} entries; the problem has {d_user} features")
        if intercept_scaling is not None:
            wv, bv = jnp.concatenate([wv, (bv / intercept_scaling)[None]]), jnp.zeros((), dt)
        if pb.kernel is None:
            w, b, level = wv, bv, level | PRIMAL
    if init.get("alpha") is not None:
        a = jnp.asarray(init["alpha"], dt).ravel()
        if a.shape[0] not in (pb.n, n_user):
            raise ValueError(f"init alpha has {a.shape[0]} entries; the problem has {n_user or pb.n} rows")
        alpha = jnp.zeros((pb.n,), dt).at[: a.shape[0]].set(a) * (pb.s > 0)
        level |= DUAL
    return Start(w, b, alpha, jnp.asarray(level, jnp.int32), cold.aux)


def _same_shapes(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    return ta == tb and all(np.shape(x) == np.shape(z) for x, z in zip(la, lb))


# ---------------------------------------------------------------------------------- solve
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
    method = configure_method(method, tol, method_params)
    if kernel is not None and is_traced((X, y, C, sample_weight, init, loss, reg, method, max_iter, kernel)):
        raise TypeError("a kernel solve cannot run inside jax.jit / jax.vmap / jax.grad (traced X, y, C, sample "
                        "weights or kernel parameters): its support vectors are picked on the host from the "
                        "solution; call it eagerly, or trace a linear model (kernel=None)")
    if is_traced((X, y, C, sample_weight, init, loss, reg, method, max_iter)):
        return _solve_traced(X, y, loss=loss, reg=reg, method=method, C=C, fit_intercept=fit_intercept,
                             intercept_scaling=intercept_scaling, sample_weight=sample_weight,
                             max_iter=max_iter, dtype=dtype, kernel=kernel, init=init)
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if devices is not None and np.ndim(C) == 0 and kernel is None:  # one problem: its rows over the devices
        from .sharding import shard_rows
        X, y, sample_weight = shard_rows(X, y, np.ones(n) if sample_weight is None else sample_weight,
                                         devices=devices, dtype=dtype)
    pb, classes, C_arr = prepare(X, y, loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                                    intercept_scaling=intercept_scaling, sample_weight=sample_weight,
                                    dtype=dtype, layout=layout, bucket=bucket and kernel is None)
    chooser = method
    method, why = choose_method(method, pb, kernel)
    handover = chooser.handover(pb, method) if why is not None and max_iter is None else None
    pb, max_iter = finish_problem(pb, method, kernel, max_iter)
    if handover is not None:  # the batch's problems run to the hand-over's cap (wide data: 100 passes)
        max_iter = min(max_iter, handover.cap)
    method = method.canonical(pb.dtype)
    if handover is not None and C_arr.ndim == 0:
        res = _run_handover(handover, method, pb, make_start(init, method, pb, intercept_scaling, n), why,
                            classes=classes, C=C, intercept_scaling=intercept_scaling, n=n, history=history,
                            record_every=record_every, verbose=verbose)
        return finish_result(res, handover.method if res.method != method.name else method, throw, pb=pb)
    if C_arr.ndim == 1:
        pb = pb.replace(C=jnp.asarray(C_arr, pb.dtype))
        start = make_start(init, method, pb.replace(C=pb.C[0]), intercept_scaling, n)
        starts = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (C_arr.size,) + jnp.shape(a)), start)
        out, timings = driver.run_batch(method, pb, batch_axes(pb, C=0), starts, size=C_arr.size,
                                        max_iter=max_iter, mode=batch, devices=devices, verbose=verbose,
                                        labels=[f"C={c:g}" for c in C_arr], history=history,
                                        record_every=record_every)
        hist = timings.pop("history", None)
        handed = {}
        if handover is not None:
            out, hist, handed = hand_over_batch(handover, method, lambda k: pb.replace(C=pb.C[k]), out, hist, timings,
                                                [f"C={c:g}" for c in C_arr], history=history,
                                                record_every=record_every, verbose=verbose)
    else:
        start = make_start(init, method, pb, intercept_scaling, n)
        out, hist, timings = driver.run(method, pb, start, max_iter=max_iter, history=history,
                                        record_every=record_every, verbose=verbose)
    res = to_result(out, hist, timings, method, pb, classes, C if C_arr.ndim == 0 else C_arr,
                    intercept_scaling, n)
    if pb.kernel is not None and C_arr.ndim == 0:
        attach_support_vectors(res, X, pb, n)
    if why is not None:
        res.extras["auto"] = why
    if C_arr.ndim == 1 and handed:
        name_handed(res, method, handover, handed, C_arr.size, "grid points")
    return finish_result(res, method, throw, pb=pb)


def name_handed(res: Result, method, ho, handed: dict, size: int, what: str):
    """Result.method and extras after ``hand_over_batch``: the method that ran last for every problem
    ("alm"), or both ("dual_cd+alm"); ``extras["handover"]`` says what happened to each."""
    replaced = sum("kept" not in v for v in handed.values())
    if replaced:
        res.method = ho.method.name if replaced == size else f"{method.name}+{ho.method.name}"
    res.extras["auto"] = (res.extras.get("auto", "") + f"; {ho.label} took over the {what} dual CD had not "
                          f"certified in its {ho.cap} passes")
    res.extras["handover"] = handed


def _run_handover(ho, method, pb, start, why, *, classes, C, intercept_scaling, n, history, record_every,
                  verbose) -> Result:
    """auto's first method, then, if it has not certified, ``ho.method`` (``Auto.handover``): one
    Result, the last stage's, with the stages in ``extras["stages"]``, the timings summed and the
    histories joined (iterations and times of a stage follow on from the one before)."""
    def stage(m, st, cap):
        out, hist, timings = driver.run(m, pb, st, max_iter=cap, history=history, record_every=record_every,
                                        verbose=verbose)
        return to_result(out, hist, timings, m, pb, classes, C, intercept_scaling, n)

    def rel(r):
        return float(r.relative_gap)

    runs = [stage(method, start, ho.check)]
    first = runs[-1]
    if first.status == Status.MAX_ITER and rel(first) <= ho.go_on and ho.cap > ho.check:
        # the same method resumed exactly (its carried state) for the rest of its passes
        runs.append(stage(method, make_start(first, method, pb, intercept_scaling, n), ho.cap - ho.check))
        first = runs[-1]
    note = why
    if first.status in ho.when:
        nxt = ho.method.canonical(pb.dtype)
        nxt.validate(pb)
        passes = sum(r.iterations for r in runs)
        warm = rel(first) <= ho.warm_within
        runs.append(stage(nxt, make_start(first if warm else None, nxt, pb, intercept_scaling, n),
                          nxt.default_max_iter(pb)))
        unit = "passes" if method.name == "dual_cd" else "iterations"
        how = "" if first.status == Status.MAX_ITER else f" ({first.status.name})"
        note = (f"{why}; it had not certified after {passes} {unit}{how} (relative gap {rel(first):.2g}), so "
                f"{ho.label} took over"
                f"{' from its point' if warm else ' from zero'}")
    res = runs[-1]
    if res.status != Status.CONVERGED and rel(first) < rel(res):  # neither certified: the smaller gap stays
        res = first
        note += f", and ended at a larger gap ({rel(runs[-1]):.2g}): {method.name}'s result is kept"
    res.extras["auto"] = note
    res.extras["stages"] = [dict(method=r.method, status=r.status, iterations=r.iterations,
                                 relative_gap=rel(r), **r.timings) for r in runs]
    res.timings = {k: sum(r.timings.get(k, 0.0) for r in runs) for k in ("compile", "run")}
    if history:
        res.history = _join_histories([r.history for r in runs], [r.iterations for r in runs])
    return res


def hand_over_batch(ho, method, problem, out, hist, timings, labels, *, history, record_every, verbose):
    """The problems of a batch (``out``: a Summary with a leading axis; ``problem(k)``: the k-th
    Problem) whose run ended at the pass cap, solved again by ``ho.method`` (``Auto.handover``), one
    after another, from their (w, alpha) where the gap is within ``ho.warm_within``, else from zero.
    Their entries replace the first run's unless the new run is uncertified with a larger gap.
    ``timings`` (compile, run) grow in place. Returns (out, hist, {label: what happened})."""
    status = np.asarray(out.status)
    todo = np.flatnonzero(np.isin(status, [int(v) for v in ho.when]))
    if not todo.size:
        return out, hist, {}
    nxt = ho.method.canonical(problem(0).dtype)
    fields = ("w", "b", "primal", "dual", "gap", "status", "iterations")
    arr = {f: np.array(getattr(out, f)) for f in fields}
    alpha = np.array(out.extras["alpha"])
    rel = np.abs(arr["gap"]) / np.maximum(np.abs(arr["primal"]), 1e-300)
    handed = {}
    for k in todo:
        pbk = problem(k)
        nxt.validate(pbk)
        warm = bool(rel[k] <= ho.warm_within)
        start = driver.cold_start(nxt, pbk)
        if warm:
            start = start._replace(w=jnp.asarray(arr["w"][k]), b=jnp.asarray(arr["b"][k]),
                                   alpha=jnp.asarray(alpha[k]), level=jnp.asarray(PRIMAL | DUAL, jnp.int32))
        o, h, t = driver.run(nxt, pbk, start, max_iter=nxt.default_max_iter(pbk), history=history,
                             record_every=record_every, verbose=verbose, label=labels[k])
        handed[labels[k]] = dict(index=int(k), passes=int(arr["iterations"][k]), relative_gap=float(rel[k]),
                                          warm=warm, status=Status(int(o.status)), iterations=int(o.iterations),
                                          **t)
        timings["compile"] += t["compile"]
        timings["run"] += t["run"]
        new_rel = abs(float(o.gap)) / max(abs(float(o.primal)), 1e-300)
        if int(o.status) != Status.CONVERGED and new_rel > rel[k]:  # neither certified: the smaller gap stays
            handed[labels[k]]["kept"] = method.name
            continue
        if history and hist is not None:
            hist[k] = _join_histories([hist[k], h], [int(arr["iterations"][k]), int(o.iterations)])
        for f in fields:
            arr[f][k] = np.asarray(getattr(o, f))
        alpha[k] = np.asarray(o.extras["alpha"])
    if all("kept" in v for v in handed.values()):
        return out, hist, handed
    # the carried state mixes two methods now: a later init= warm-starts from (w, b, alpha) instead
    return out._replace(**arr, extras={**out.extras, "alpha": alpha}, state=None), hist, handed


def _join_histories(hists, iterations):
    """One history table from the stages': each stage's iterations and times offset by the ones before."""
    out, it0, t0 = {}, 0, 0.0
    for h, k in zip(hists, iterations):
        if not h:
            continue
        part = dict(h)
        part["iteration"] = np.asarray(h["iteration"]) + it0
        if "time" in part:
            part["time"] = np.asarray(h["time"]) + t0
            t0 = float(part["time"][-1]) if len(part["time"]) else t0
        for key, v in part.items():
            out[key] = np.concatenate([out[key], np.asarray(v)]) if key in out else np.asarray(v)
        it0 += int(k)
    return out


def attach_support_vectors(res, X, pb, n):
    alpha = np.asarray(res.extras["alpha"])[:n]
    sv = np.flatnonzero(alpha != 0)  # signed alpha (LS-SVM) counts too
    res.kernel = pb.kernel
    res.support_vectors = as_matrix(X)[sv] if not isinstance(X, (DenseOperator, SparseOperator)) else None
    res.dual_coef = alpha[sv] * np.asarray(pb.y)[sv]
    res.extras["support"] = sv


def _split(w, scale):
    """w and b of the user's problem from the solver's: the bias feature's weight, times its scale, is b."""
    return w[..., :-1], w[..., -1] * scale


def _first_rows(alpha, n):
    """alpha without the padding rows. Sliced on the host where it lives on one device: an eager
    slice compiles a program per n (a new process pays it at its first solve)."""
    if alpha.shape[-1] == n:
        return alpha
    sharding = getattr(alpha, "sharding", None)
    if is_traced(alpha) or sharding is None or len(sharding.device_set) != 1:
        return alpha[..., :n]
    return jax.device_put(np.asarray(alpha)[..., :n], sharding)


def to_result(out, hist, timings, method, pb, classes, C, intercept_scaling, n) -> Result:
    extras = dict(out.extras)
    w, b = out.w, out.b
    if intercept_scaling is not None:
        if is_traced(intercept_scaling) or not driver.on_one_device(w):
            w, b = _split(w, intercept_scaling)
        else:  # one compiled call (cached like the loop's), not an eagerly compiled op per slice
            scale = np.asarray(intercept_scaling, pb.dtype)
            exe, _ = driver._compile("split", _split, (w, scale))
            w, b = exe(w, scale)
    if "alpha" in extras and n is not None:
        extras["alpha"] = _first_rows(extras["alpha"], n)
    status = out.status
    iterations = out.iterations
    if np.ndim(status) == 0 and not is_traced(status):
        status, iterations = Status(int(status)), int(iterations)
    return Result(w=w, b=b, primal_objective=out.primal, dual_objective=out.dual, gap=out.gap, status=status,
                  iterations=iterations, method=method.name, loss=repr(pb.loss), C=C, classes=classes,
                  history=hist, timings=timings, extras=extras, intercept_scaling=intercept_scaling,
                  state=out.state, tol=_float(method.tol))


def _float(v):
    c = concrete(v)
    return None if c is None else float(np.asarray(c).ravel()[0])


def finish_result(res: Result, method, throw: bool, what: str = "", pb: Problem | None = None):
    status = np.asarray(res.status)
    if np.any(status != Status.CONVERGED):
        msg = f"{method.name}{what}: {res.message}"
        stages = res.extras.get("stages") if isinstance(res.extras, dict) else None
        if stages and len(stages) > 1:  # auto's hand-over ran: say what each stage ended with
            msg += ". The default method ran " + " -> ".join(
                f"{st['method']} {st['iterations']} ({Status(int(st['status'])).name}, relative gap "
                f"{st['relative_gap']:.2g})" for st in stages) + f"; the result is {res.method}'s"
        elif np.ndim(status) == 0:
            hint = method.advice(Status(int(status)))
            if hint:
                msg += f". {hint}"
        if pb is not None:
            msg += conditioning_hint(pb, np.max(np.asarray(res.C, float))) + definiteness_hint(pb)
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=4)
    return res


def definiteness_hint(pb: Problem) -> str:
    """For a kernel that is not positive semidefinite (``Kernel.psd``): why no run certifies."""
    if pb.kernel is None or pb.kernel.psd:
        return ""
    return (f". The {pb.kernel.name} kernel is not positive semidefinite, so the problem is not convex: no duality "
            "gap certifies its optimum (the dual is no lower bound), and the answer is a stationary point at best, "
            "as LIBSVM's is; an rbf kernel is")


def conditioning_hint(pb: Problem, C_max) -> str:
    """For a run that did not certify: a note when C max_i s_i ||x_i||^2 exceeds 1e4, where the
    problem is close to a hard margin and every method slows down (pendigits' raw 0..100 features:
    9.6e4 at C = 1, dual CD and alm both uncertified; breast-cancer's sample-id column: 1.8e14;
    a9a: 15 C, which certifies to C = 100). "" otherwise, for a kernel, or where it cannot be had."""
    if pb.kernel is not None or is_traced(pb):
        return ""
    try:
        q = float(C_max) * float(jnp.max(pb.op.row_sq_norms() * pb.s))
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        return ""
    if not q > 1e4:
        return ""
    return (f". C max_i ||x_i||^2 is {q:.2g}: the problem is close to a hard margin and ill-conditioned; "
            "features scaled to a common range (e.g. [0, 1] or unit variance) or a smaller C make it far easier")


# ---------------------------------------------------------------------------------- traced
def _solve_traced(X, y, *, loss, reg, method, C, fit_intercept, intercept_scaling, sample_weight, max_iter,
                  dtype, kernel, init):
    """The solve as a traced computation (inside the user's jit / vmap / grad)."""
    from . import implicit

    if not isinstance(loss, Loss) or not isinstance(reg, Regularizer):
        raise TypeError("loss and reg must be svmopt Loss / Regularizer objects")
    if sp.issparse(X):
        raise TypeError("scipy.sparse X cannot enter a traced solve; pass svmopt.operators.as_operator(X) "
                        "(a pytree) or a dense jax array")
    dt = resolve_dtype(dtype)  # float32 unless asked, as in eager calls
    y = jnp.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per row, got shape {y.shape}")
    hi, lo = jnp.max(y), jnp.min(y)
    y_pm = jnp.where(y == hi, 1.0, -1.0).astype(dt)
    classes = jnp.stack([lo, hi])
    n = y.shape[0]
    s = jnp.ones((n,), dt) if sample_weight is None else jnp.asarray(sample_weight, dt)
    if intercept_scaling is not None:
        fit_intercept = False
    op = X if isinstance(X, (DenseOperator, SparseOperator)) else as_operator(jnp.asarray(X, dt), dt,
                                                                                 bias_scale=intercept_scaling)
    C = jnp.asarray(C, dt)
    if C.ndim > 1:
        raise ValueError(f"C must be a scalar or 1-D, got shape {C.shape}")
    pb = build_problem(op, y_pm, s, C if C.ndim == 0 else C[0], loss, reg, fit_intercept, dt)
    method, _ = choose_method(method, pb, kernel)
    pb, max_iter = finish_problem(pb, method, kernel, max_iter)
    method = method.canonical(dt)
    start = make_start(init, method, pb, intercept_scaling, n)

    def one(Cv):
        p = pb.replace(C=Cv)
        out = driver.run_inline(method, jax.lax.stop_gradient(p), jax.lax.stop_gradient(start), max_iter)
        return implicit.attach(out, p)

    out = one(C) if C.ndim == 0 else jax.vmap(one)(C)
    return to_result(out, None, {}, method, pb, classes, C, intercept_scaling, n)
