"""One-vs-rest multiclass as ONE vmapped solve (SPEC section 4).

For K classes c_1 < ... < c_K the K binary problems

    minimize  R(w_k) + C sum_i s_i loss(Y_ki (w_k.x_i + b_k)),   Y_ki = +1 if y_i = c_k else -1

share X, s, C, the loss and the regularizer; only the labels differ. So the
Problem is built once and the labels are the only batched leaf: one compiled
program serves all K problems (``driver.run_batch``). On a CPU the problems run as
lanes of that program, spread over the devices ("loop": a finished class leaves at
once, the next starts); on accelerators as vmapped batches whose finished lanes
leave ("vmap"). Each class keeps its own status and iteration count. Prediction is
the arg-max of the K decision values, as LIBLINEAR / scikit-learn's ``LinearSVC`` do.

``strategy="ovo"`` trains LIBSVM's one-vs-one kernel model instead
(``svmopt.multiclass_kernel.solve_ovo``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from . import driver, sharding
from .losses import Loss, hinge
from .problem import Problem
from .regularizers import Regularizer, l2
from .result import Result, SolverError, Status, warn_convergence
from .solve import (batch_axes, check_labels, choose_method, conditioning_hint, configure_method, finish_problem,
                    hand_over_batch, make_start, name_handed, prepare)
from .solvers import Method, auto

__all__ = ["solve_multiclass", "MulticlassResult"]


@jax.tree_util.register_pytree_node_class
@dataclass(repr=False)
class MulticlassResult(Result):
    """A one-vs-rest solve: ``Result`` with a leading class axis on every array.

    w (K, d), b (K,), primal_objective / dual_objective / gap / status / iterations (K,):
    row k is the problem "class ``classes[k]`` against the rest". Kernel models keep
    the union of the support vectors (n_sv, d) and dual_coef (K, n_sv).
    ``decision_function`` is (n, K); ``predict`` its arg-max mapped to ``classes``.
    """

    def decision_function(self, X):
        """(n, K) decision values w_k.x + b_k (kernel: sum_j dual_coef_kj K(x, sv_j) + b_k)."""
        b = np.asarray(self.b)
        if self.kernel is not None:
            from .kernels import predict_kernel  # lazy: only kernel models need it
            return predict_kernel(self.kernel, self.support_vectors, np.asarray(self.dual_coef).T, X) + b
        return np.asarray(X @ np.asarray(self.w).T) + b

    def predict(self, X):
        return np.asarray(self.classes)[np.argmax(self.decision_function(X), axis=1)]

    @property
    def message(self) -> str:
        st = np.asarray(self.status)
        if np.all(st == Status.CONVERGED):
            return f"all {st.size} one-vs-rest problems converged"
        parts = []
        for code in np.unique(st[st != Status.CONVERGED]):
            names = ", ".join(str(c) for c in np.asarray(self.classes)[st == code])
            parts.append(f"{Status(int(code)).name} for class(es) {names} ({Status(int(code)).message})")
        return "; ".join(parts)

    def __repr__(self) -> str:
        st = np.asarray(self.status)
        return (f"MulticlassResult(method={self.method}, loss={self.loss}, C={self.C}, "
                f"classes={len(self.classes)}, converged={int(np.sum(st == Status.CONVERGED))}/{st.size}, "
                f"iterations={np.asarray(self.iterations).tolist()})")


def _label(c) -> str:
    """A class label for progress lines: 3.0 reads as 3."""
    if isinstance(c, (float, np.floating)) and float(c).is_integer():
        return str(int(c))
    return str(c)


def _labels(y, n: int):
    """(classes, Y) with Y (K, n) in +-1: row k is 'class k against the rest'."""
    y, classes = check_labels(y, n, "a classifier")
    return classes, np.where(y[None, :] == classes[:, None], 1.0, -1.0)


def solve_multiclass(X, y, *, strategy: str = "ovr", loss: Loss = hinge, reg: Regularizer = l2,
                     method: Method = auto, C=1.0, fit_intercept: bool = True,
                     intercept_scaling: float | None = None, sample_weight=None, tol: float | None = None,
                     max_iter: int | None = None, dtype=None, throw: bool = False, kernel=None,
                     devices=None, batch: str = "auto", verbose=False, layout: str = "auto",
                     history: bool = False, record_every: int = 1, **method_params: Any):
    """One-vs-rest: the K problems "class k against the rest", one compiled program for all.

    X: (n, d) numpy / jax / scipy.sparse; y: (n,) with K >= 2 distinct labels of any
    kind (K = 2 gives two mirrored problems; ``solve`` fits the single binary one).
    C must be a scalar here. ``devices`` (default: all local devices) and ``batch``
    ("auto" | "loop" | "vmap", see ``svmopt.driver.run_batch``) say where and how the K
    problems run; ``verbose`` reports per class (True: log lines, an int k: every k
    iterations, a callable: called with a dict whose "label" names the class);
    ``history=True`` gives ``Result.history`` as a list of one table per class
    (iteration, objective, gap, time). The other arguments are those of
    ``svmopt.solve``. A class that misses its tolerance warns (``ConvergenceWarning``)
    or, with ``throw=True``, raises ``SolverError``.

    ``strategy="ovo"``: LIBSVM's one-vs-one kernel SVM (``svmopt.multiclass_kernel.solve_ovo``;
    the default kernel is rbf(1/d)); returns an ``OvOModel``.
    """
    if strategy == "ovo":
        from .multiclass_kernel import solve_ovo
        if loss is not hinge or not reg.is_l2 or not fit_intercept or intercept_scaling is not None:
            raise ValueError("strategy='ovo' trains LIBSVM's C-SVM (hinge loss, l2, a free intercept); got "
                             f"loss={loss!r}, reg={reg!r}, fit_intercept={fit_intercept}, "
                             f"intercept_scaling={intercept_scaling}")
        kw = dict(method_params)
        if tol is not None:
            kw["tol"] = tol
        if method is not auto and method != "auto":
            kw["method"] = method
        return solve_ovo(X, y, C=C, kernel=kernel, sample_weight=sample_weight, dtype=dtype, max_iter=max_iter,
                         throw=throw, devices=devices, batch=batch, verbose=verbose, **kw)
    if strategy != "ovr":
        raise ValueError(f"strategy must be 'ovr' (one-vs-rest) or 'ovo' (one-vs-one), got {strategy!r}")
    method = configure_method(method, tol, method_params)
    n = X.shape[0] if hasattr(X, "shape") else len(X)
    if np.ndim(C) != 0:
        raise ValueError(f"solve_multiclass takes a scalar C, got shape {np.shape(C)}; "
                         "loop over C or use svmopt.solve for a binary grid")
    if sharding.is_sharded(X):  # rows over devices: the classes run one after another on all of them
        if kernel is not None:
            raise ValueError("a kernel one-vs-rest needs X on one device; row-sharded X is for linear methods")
        pb, Yp, classes = sharding.prepare_multiclass(X, y, loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                                                      intercept_scaling=intercept_scaling,
                                                      sample_weight=sample_weight, dtype=dtype)
        Y = None
    else:
        classes, Y = _labels(y, n)
        # the Problem is validated and built once, with a placeholder binary y replaced below
        pb, _, _ = prepare(X, Y[0], loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                           intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype,
                           layout=layout, bucket=kernel is None)
    chooser = method
    method, why = choose_method(method, pb, kernel)
    handover = chooser.handover(pb, method) if why is not None and max_iter is None and Y is not None else None
    pb, max_iter = finish_problem(pb, method, kernel, max_iter)
    if handover is not None:  # the batch's problems run to the hand-over's cap (wide data: 100 passes)
        max_iter = min(max_iter, handover.cap)
    method = method.canonical(pb.dtype)
    K, n_pad = len(classes), pb.n
    if Y is not None:
        Yp = np.ones((K, n_pad))
        Yp[:, :n] = Y
        Yp = jnp.asarray(Yp, pb.dtype)
    pb = pb.replace(y=Yp)
    start = make_start(None, method, pb.replace(y=pb.y[0]))
    starts = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (K,) + jnp.shape(a)), start)
    out, timings = driver.run_batch(method, pb, batch_axes(pb, y=0), starts, size=K, max_iter=max_iter,
                                    mode=batch, devices=devices, verbose=verbose,
                                    labels=[_label(c) for c in classes], history=history,
                                    record_every=record_every)
    hist = timings.pop("history", None)
    handed = {}
    if handover is not None:
        out, hist, handed = hand_over_batch(handover, method, lambda k: pb.replace(y=pb.y[k]), out, hist, timings,
                                            [_label(c) for c in classes], history=history,
                                            record_every=record_every, verbose=verbose)

    w, b = out.w, out.b
    if intercept_scaling is not None:  # the bias feature's weight, back in the data's units
        b = w[:, -1] * intercept_scaling
        w = w[:, :-1]
    extras = dict(out.extras)
    if "alpha" in extras and Y is not None:
        extras["alpha"] = np.asarray(extras["alpha"])[:, :n]
    res = MulticlassResult(w=w, b=b, primal_objective=out.primal, dual_objective=out.dual, gap=out.gap,
                           status=np.asarray(out.status), iterations=np.asarray(out.iterations),
                           method=method.name, loss=repr(pb.loss), C=C, classes=classes, timings=timings,
                           history=hist,
                           extras=extras, intercept_scaling=intercept_scaling, state=out.state,
                           tol=float(np.asarray(method.tol)))
    if why is not None:
        res.extras["auto"] = why
    if handed:
        name_handed(res, method, handover, handed, K, "classes")
    if pb.kernel is not None:
        alpha = np.asarray(res.extras["alpha"])  # (K, n)
        sv = np.flatnonzero(np.any(alpha > 0, axis=0))
        res.kernel = pb.kernel
        res.support_vectors = X[sv]
        res.dual_coef = alpha[:, sv] * Y[:, sv]
        res.extras["support"] = sv
    if not res.converged:
        msg = f"{res.method} one-vs-rest: {res.message}" + conditioning_hint(pb, C)
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=3)
    return res
