"""From the user's X and y to a ``Problem``: one place for the data a plan solves.

``targets`` maps labels in one step (two labels to -1/+1, the larger +1; K labels to K one-vs-rest
rows, or their class codes for Crammer-Singer; ordered ranks to codes; real targets of a regression
kept); ``problem_data`` checks X, y, weights and C, pads the rows to a bucket (``bucket_rows``: nearby
sizes share one compiled program) and builds the Problem on the device in the working dtype;
``sharded_problem_data`` does the same for rows already spread over devices (``svmopt.sharding``).
``kernel_input`` turns a precomputed or host kernel into the Gram matrix rows the solvers read.
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import jax
import jax.numpy as jnp

from . import sharding
from .checks import (as_matrix, check_C, check_finite_X, check_labels, check_targets, check_weights, check_width,
                     is_operator, resolve_dtype)
from .kernels import as_kernel, gram_rows, host_gram, is_gram, precomputed
from .losses import Loss
from .operators import as_operator
from .problem import Problem
from .regularizers import Regularizer

__all__ = ["targets", "label_name", "BUCKETS_PER_OCTAVE", "bucket_rows", "cast", "to_device", "build_problem",
           "check_pieces", "problem_data", "sharded_problem_data", "prepare", "kernel_input"]


def targets(y, n: int, task: str):
    """(coded targets, classes): task "binary" -> (n,) in {-1, +1}, the larger label +1; "ovr" ->
    (K, n), row k "class k against the rest"; "ordinal" -> (n,) rank codes 0..R-1; "regression" ->
    (n,) ones and the real targets in place of classes (the loss is bound to them); "oneclass" -> (n,)
    ones and no classes."""
    if task == "regression":  # real targets: every row has y = 1, the loss measures the score against t
        t = check_targets(y, n)
        return np.ones(n), t
    if task == "oneclass":  # no targets: every row has y = 1
        return np.ones(n), None
    if task == "ordinal":
        ranks = np.asarray(y)
        if ranks.ndim != 1:
            raise ValueError(f"ranks must be 1-D with one label per row, got shape {ranks.shape}")
        if ranks.shape[0] != n:
            raise ValueError(f"shape mismatch: X has {n} rows but ranks has {ranks.shape[0]} labels")
        if not np.issubdtype(ranks.dtype, np.number):
            raise TypeError(f"ranks must be numeric (ordered), got dtype {ranks.dtype}")
        if not np.all(np.isfinite(ranks)):
            raise ValueError(f"ranks contain NaN or inf (first at index {int(np.flatnonzero(~np.isfinite(ranks))[0])})")
        values, codes = np.unique(ranks, return_inverse=True)
        if values.size < 2:
            raise ValueError(f"ranks have a single value ({values[0]!r}): there is no ordered pair to learn from")
        return codes.astype(np.float64), values
    y, classes = check_labels(y, n, "a binary SVM" if task == "binary" else "a classifier")
    if task == "binary":
        if classes.size > 2:
            raise ValueError(f"y has {classes.size} classes; solve() is binary — use svmopt.solve_multiclass "
                             "(one-vs-rest) for more than two")
        return np.where(y == classes[1], 1.0, -1.0), classes
    return np.where(y[None, :] == classes[:, None], 1.0, -1.0), classes


def label_name(c) -> str:
    """A class label for progress lines and notes: 3.0 reads as 3."""
    if isinstance(c, (float, np.floating)) and float(c).is_integer():
        return str(int(c))
    return str(c)


# ---------------------------------------------------------------------------------- the problem
BUCKETS_PER_OCTAVE = 16  # padding adds at most 1/16 = 6.25% rows


def bucket_rows(n: int) -> int:
    """The smallest bucket >= n: 16 sizes per power of two (exact below 64)."""
    if n <= 64:
        return n
    step = 1 << max(0, n.bit_length() - 1 - 4)  # 2^(floor(log2 n) - 4)
    return -(-n // step) * step


def cast(tree, dt):
    """The floating leaves of a pytree (a loss, a regularizer, a kernel, a start) in dtype dt; others as they are."""
    def conv(a):
        a = jnp.asarray(a)
        return a.astype(dt) if jnp.issubdtype(a.dtype, jnp.floating) else a
    return jax.tree_util.tree_map(conv, tree)


def to_device(x, dt):
    """``jnp.asarray(x, dt)``; host data is converted on the host and transferred (converting on
    the device compiles a program per shape: a new process pays that at its first solve)."""
    if isinstance(x, (jax.Array, jax.core.Tracer)):
        return jnp.asarray(x, dt)
    return jax.device_put(np.asarray(x, dtype=dt))


def build_problem(op, y, s, C, loss, reg, fit_intercept, dt) -> Problem:
    """The Problem of an operator, coded targets, weights and C (every leaf in ``dt``)."""
    if loss.family.bind is not None:  # an all-zero row would get a zero smoothing: use 1 there
        kappa = op.row_inf_norms()
        loss = loss.bind(jnp.where(kappa > 0, kappa, 1.0))
    parts = (y, s, C)
    if not any(isinstance(x, (jax.Array, jax.core.Tracer)) for x in parts):  # host data: one transfer
        y, s, C = jax.device_put([np.asarray(x, dtype=dt) for x in parts])
    return Problem(op=op, y=to_device(y, dt), s=to_device(s, dt), C=to_device(C, dt),
                   loss=cast(loss, dt), reg=cast(reg, dt), fit_intercept=bool(fit_intercept))


def check_pieces(loss, reg, task="binary"):
    """loss and reg are svmopt Loss / Regularizer objects fit for the task (a regression needs a loss of the residual)."""
    if not isinstance(loss, Loss):
        raise TypeError(f"loss must be an svmopt Loss (e.g. svmopt.losses.hinge), got {loss!r:.60}; "
                        "wrap a plain function with svmopt.losses.from_function")
    if not isinstance(reg, Regularizer):
        raise TypeError(f"reg must be an svmopt Regularizer (e.g. svmopt.regularizers.l2), got {reg!r:.60}")
    if loss.has_dual and loss.dual.rhs != 0.0 and task != "oneclass":  # its problem has a term in b alone
        raise ValueError(f"loss {loss!r} is the one-class SVM's; train it with svmopt.solve_oneclass")


def problem_data(X, y, task, *, loss, reg, C, fit_intercept, intercept_scaling, sample_weight, dtype, layout, bucket):
    """(Problem with the first problem's targets, all targets, classes, C array, n): validated."""
    check_pieces(loss, reg, task)
    if sharding.is_sharded(X):  # rows spread over devices: checked and coded where they live
        return sharded_problem_data(X, y, task, loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                             intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype)
    dt = resolve_dtype(dtype)
    X = as_matrix(X)
    n = X.shape[0]
    if n == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape})")
    if isinstance(X, jax.Array):  # (host X: as_operator checks while it builds the operator)
        check_finite_X(X, dt)
    coded, classes = targets(y, n, task)
    if task == "regression" and not loss.needs_targets:
        raise ValueError(f"a regression needs a loss of the residual (epsilon_insensitive, squared_epsilon_insensitive, "
                         f"squared_error), got {loss!r}")
    C_arr = check_C(C, dt)
    s = check_weights(sample_weight, n)
    if task == "binary":
        for label, sign in ((classes[0], -1.0), (classes[1], 1.0)):
            if not np.any(s[coded == sign] > 0):  # a one-class problem: P* = 0, no gap can certify it
                label = label.item() if isinstance(label, np.generic) else label
                raise ValueError(f"sample_weight is zero on every row of class {label!r}: only one class has "
                                 "weight, and a classifier needs two")
    if np.max(C_arr) * np.max(s) > float(np.finfo(np.dtype(dt)).max) / 1e3:  # the same margin as check_C
        raise ValueError(f"C * sample_weight reaches {np.max(C_arr) * np.max(s):g}, beyond what "
                         f"{np.dtype(dt).name} can solve with; use dtype=float64 or smaller weights")
    if intercept_scaling is not None:
        fit_intercept = False
    check_width(X.shape[1] + (intercept_scaling is not None), dt)  # (kernel models: their rows, checked alike)
    bucketed = bucket and not is_operator(X)
    rows = bucket_rows(n) if bucketed else n
    pad = rows - n
    if pad:  # zero-weight rows (exact: every solver treats weight 0 as absent); X's zero rows below
        coded = np.concatenate([coded, np.ones(coded.shape[:-1] + (pad,))], axis=-1)
        s = np.concatenate([s, np.zeros(pad)])
    op = as_operator(X, dt, bias_scale=intercept_scaling, layout=layout,
                     nnz_bucket=bucket_rows if bucketed else None, pad_rows=pad, rows=rows)
    first = coded if coded.ndim == 1 else coded[0]
    if task == "regression":  # the targets travel with the loss (padding rows: 0, weight 0)
        loss = loss.with_targets(to_device(np.concatenate([classes, np.zeros(pad)]), dt))
        classes = None
    pb = build_problem(op, first, s, C_arr.ravel()[0], loss, reg, fit_intercept, dt)
    return pb, coded, classes, C_arr, n


def sharded_problem_data(X, y, task, *, loss, reg, C, fit_intercept, intercept_scaling, sample_weight, dtype):
    """problem_data for X already row-sharded over devices (``svmopt.sharding``): the same checks and Problem, no buckets."""
    if task not in ("binary", "ovr"):
        raise ValueError(f"row-sharded X serves linear binary and one-vs-rest solves, not {task}")
    dt = resolve_dtype(dtype)
    op, yv, s, classes = sharding.rows_and_labels(X, y, sample_weight, dt)
    if task == "binary" and classes.size != 2:
        what = "only one class" if classes.size < 2 else f"{classes.size} classes"
        raise ValueError(f"y has {what}; solve() is binary"
                         + (" — use svmopt.solve_multiclass (one-vs-rest) for more than two" if classes.size > 2
                            else ""))
    if classes.size < 2:
        raise ValueError("y has only one class; a classifier needs two")
    C_arr = check_C(C, dt)
    if intercept_scaling is not None:
        op, fit_intercept = op.with_column(float(intercept_scaling)), False
    coded = sharding.encode(yv, classes[1], dt) if task == "binary" else sharding.one_vs_rest(yv, classes, dt, op)
    first = coded if task == "binary" else coded[0]
    pb = build_problem(op, first, s, jnp.asarray(C_arr.ravel()[0], dt), loss, reg, fit_intercept, dt)
    return pb, coded, classes, C_arr, op.shape[0]


def prepare(X, y, *, loss, reg, C=1.0, fit_intercept=True, intercept_scaling=None, sample_weight=None, dtype=None,
            layout="auto", bucket: bool = True):
    """(Problem, classes, C array) of a binary problem, validated as ``solve`` validates it: for
    calling a method's ``init`` / ``step`` by hand. The Problem may have more rows than X (a row
    bucket, ``bucket=True``); the extra rows weigh 0."""
    pb, _, classes, C_arr, _ = problem_data(X, y, "binary", loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                                     intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype,
                                     layout=layout, bucket=bucket)
    return pb, classes, C_arr


# ---------------------------------------------------------------------------------- method and start
def kernel_input(X, kernel):
    """(X the solver reads, the rows a model keeps as support vectors, the kernel the solver evaluates,
    the kernel the model predicts with) for ``kernel`` as ``svmopt.kernels.as_kernel`` takes it.

    A precomputed kernel: X is the Gram matrix K (n, n), support vectors are row indices (n_sv, 1).
    A host kernel (plain Python / NumPy): K = fn(X, X) on the host (``kernels.host_gram``, within
    its budget); support vectors are rows of X. Both solve on ``kernels.gram_rows(K)``.
    """
    kernel = as_kernel(kernel)
    if not is_gram(kernel):
        return X, (as_matrix(X) if kernel is not None and not is_operator(X) else X), kernel, kernel
    if kernel.host:
        keep = X if hasattr(X, "shape") else np.asarray(X)  # rows of anything the function takes
        if sp.issparse(keep):
            keep = keep.tocsr()
        G, model = host_gram(kernel, keep), kernel
    else:
        if sp.issparse(X):
            raise TypeError("Sparse precomputed kernels are not supported: pass the Gram matrix as a dense array")
        G = np.asarray(as_matrix(X), np.float64)
        if G.shape[0] != G.shape[1]:
            raise ValueError(f"Precomputed matrix must be a square matrix. Input is a {G.shape[0]}x{G.shape[1]} "
                             "matrix: kernel='precomputed' fits on K(train, train)")
        check_finite_X(G)
        keep, model = np.arange(G.shape[0], dtype=np.float64)[:, None], precomputed(G.shape[0])
    return gram_rows(G), keep, precomputed(G.shape[0]), model
