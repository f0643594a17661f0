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
(``svmopt.multiclass_kernel.solve_ovo``); ``strategy="crammer_singer"`` one joint problem over all
classes (Crammer and Singer's multiclass SVM, LIBLINEAR's ``-s 4``, ``svmopt.solvers.crammer_singer``)
with its own certified gap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import jax

from . import finish, plan, stages
from .kernels import predict_kernel
from .multiclass_kernel import solve_ovo
from .losses import Loss, hinge
from .regularizers import Regularizer, l2
from .result import Result, SolverError, Status, warn_convergence
from .solvers import Method, auto
from .solvers.crammer_singer import CrammerSinger, crammer_singer

__all__ = ["solve_multiclass", "MulticlassResult"]


@jax.tree_util.register_pytree_node_class
@dataclass(repr=False)
class MulticlassResult(Result):
    """A one-vs-rest solve: ``Result`` with a leading class axis on every array.

    w (K, d), b (K,), primal_objective / dual_objective / gap / status / iterations (K,):
    row k is the problem "class ``classes[k]`` against the rest". Kernel models keep
    the union of the support vectors (n_sv, d) and dual_coef (K, n_sv).
    ``decision_function`` is (n, K); ``predict`` its arg-max mapped to ``classes``.
    A Crammer-Singer model (``strategy="crammer_singer"``) is one joint problem: w (K, d) and
    b (K,) as above, its objectives, gap, status and iterations scalars, extras["alpha"] (K, n).
    """

    def decision_function(self, X):
        """(n, K) decision values w_k.x + b_k (kernel: sum_j dual_coef_kj K(x, sv_j) + b_k); a path over
        m values of C (``svmopt.path`` with K > 2 classes: w (m, K, d)) gives (m, n, K)."""
        b = np.asarray(self.b)
        if self.kernel is not None:
            return predict_kernel(self.kernel, self.support_vectors, np.asarray(self.dual_coef).T, X) + b
        w = np.asarray(self.w)
        if w.ndim == 3:
            m, K, d = w.shape
            f = np.asarray(X @ w.reshape(m * K, d).T).reshape(-1, m, K)
            return np.transpose(f, (1, 0, 2)) + b[:, None, :]
        return np.asarray(X @ w.T) + b

    def predict(self, X):
        return np.asarray(self.classes)[np.argmax(self.decision_function(X), axis=-1)]

    @property
    def message(self) -> str:
        st = np.asarray(self.status)
        if st.ndim == 0:  # Crammer-Singer: one joint problem
            return super().message
        if np.all(st == Status.CONVERGED):
            return f"all {st.size} one-vs-rest problems converged"
        parts = []
        classes = np.broadcast_to(np.asarray(self.classes), st.shape)
        for code in np.unique(st[st != Status.CONVERGED]):
            names = ", ".join(str(c) for c in np.unique(classes[st == code]))
            parts.append(f"{Status(int(code)).name} for class(es) {names} ({Status(int(code)).message})")
        return "; ".join(parts)

    def __repr__(self) -> str:
        st = np.asarray(self.status)
        return (f"MulticlassResult(method={self.method}, loss={self.loss}, C={self.C}, "
                f"classes={len(self.classes)}, converged={int(np.sum(st == Status.CONVERGED))}/{st.size}, "
                f"iterations={np.asarray(self.iterations).tolist()})")


def solve_multiclass(X, y, *, strategy: str = "ovr", loss: Loss = hinge, reg: Regularizer = l2,
                     method: Method = auto, C=1.0, fit_intercept: bool = True,
                     intercept_scaling: float | None = None, sample_weight=None, tol: float | None = None,
                     max_iter: int | None = None, dtype=None, throw: bool = False, kernel=None,
                     devices=None, batch: str = "auto", verbose=False, layout: str = "auto",
                     history: bool = False, record_every: int = 1, init=None, **method_params: Any):
    """One-vs-rest: the K problems "class k against the rest", one compiled program for all.

    X: (n, d) numpy / jax / scipy.sparse; y: (n,) with K >= 2 distinct labels of any
    kind (K = 2 gives two mirrored problems; ``solve`` fits the single binary one).
    C must be a scalar here. ``devices`` (default: all local devices) and ``batch``
    ("auto" | "loop" | "vmap", see ``svmopt.driver.run_batch``) say where and how the K
    problems run; ``verbose`` reports per class (True: log lines, an int k: every k
    iterations, a callable: called with a dict whose "label" names the class);
    ``history=True`` gives ``Result.history`` as a list of one table per class
    (iteration, objective, gap, time). ``init`` warm-starts every class: an earlier
    MulticlassResult of these classes, or {"w": (K, d), "b": (K,), "alpha": (K, n)} (any
    of them). The other arguments are those of
    ``svmopt.solve``. A class that misses its tolerance warns (``ConvergenceWarning``)
    or, with ``throw=True``, raises ``SolverError``.

    ``strategy="ovo"``: LIBSVM's one-vs-one kernel SVM (``svmopt.multiclass_kernel.solve_ovo``;
    the default kernel is rbf(1/d)); returns an ``OvOModel``.

    ``strategy="crammer_singer"``: Crammer and Singer's joint problem (LIBLINEAR ``-s 4``, scikit-learn's
    ``LinearSVC(multi_class="crammer_singer")``), method ``svmopt.solvers.crammer_singer`` (the default;
    ``method_params`` such as eps configure it), one certified gap for all classes. Its intercept is
    LIBLINEAR's bias feature: pass ``intercept_scaling`` (e.g. 1.0) or ``fit_intercept=False``; a free
    intercept is refused. loss and reg stay at their defaults (the problem has its own loss).
    """
    if strategy == "ovo":
        if init is not None:
            raise ValueError("strategy='ovo' starts cold: init= is for one-vs-rest")
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
    if strategy == "crammer_singer":
        res, p = _crammer_singer(X, y, loss=loss, reg=reg, method=method, C=C, fit_intercept=fit_intercept,
                                 intercept_scaling=intercept_scaling, sample_weight=sample_weight, tol=tol,
                                 max_iter=max_iter, dtype=dtype, throw=throw, kernel=kernel, devices=devices,
                                 verbose=verbose, layout=layout, history=history, record_every=record_every,
                                 method_params=method_params)
        return finish.report(res, p, throw, " (Crammer-Singer)")
    if strategy != "ovr":
        raise ValueError("strategy must be 'ovr' (one-vs-rest), 'ovo' (one-vs-one) or 'crammer_singer', "
                         f"got {strategy!r}")
    run = plan.check_run_args(history=history, record_every=record_every, verbose=verbose, throw=throw,
                              fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, layout=layout,
                              max_iter=max_iter, batch=batch, devices=devices)
    method = plan.configure(method, tol, method_params)
    p = plan.one_vs_rest(X, y, loss=loss, reg=reg, method=method, C=C, fit_intercept=fit_intercept,
                         intercept_scaling=intercept_scaling, sample_weight=sample_weight, max_iter=run["max_iter"],
                         dtype=dtype, layout=layout, kernel=kernel, devices=run["devices"], batch=batch, init=init)
    out = stages.run(p, history=history, record_every=run["record_every"], verbose=run["verbose"])
    res = finish.result(p, out, MulticlassResult)
    if not res.converged:
        msg = f"{res.method} one-vs-rest: {res.message}" + finish.conditioning_hint(p.pb, C)
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=3)
    return res


def _crammer_singer(X, y, *, loss, reg, method, C, fit_intercept, intercept_scaling, sample_weight, tol, max_iter,
                    dtype, throw, kernel, devices, verbose, layout, history, record_every, method_params):
    """``solve_multiclass(strategy="crammer_singer")``: the plan, the stage runner, (Result, plan)."""
    if loss is not hinge or not reg.is_l2 or kernel is not None or devices is not None:
        raise ValueError("strategy='crammer_singer' is its own linear l2 problem (LIBLINEAR -s 4) on one device; "
                         f"got loss={loss!r}, reg={reg!r}, kernel={kernel!r}, devices={devices!r}: leave them at "
                         "their defaults")
    if isinstance(method, str) and method == "auto" or method is auto:
        method = crammer_singer
    if not isinstance(method, CrammerSinger):
        raise TypeError(f"strategy='crammer_singer' runs svmopt.solvers.crammer_singer, got method={method!r:.60}")
    run = plan.check_run_args(history=history, record_every=record_every, verbose=verbose, throw=throw,
                              fit_intercept=fit_intercept, intercept_scaling=intercept_scaling, layout=layout,
                              max_iter=max_iter)
    method = plan.configure(method, tol, method_params)
    p = plan.crammer_singer(X, y, method=method, C=C, fit_intercept=fit_intercept,
                            intercept_scaling=intercept_scaling, sample_weight=sample_weight,
                            max_iter=run["max_iter"], dtype=dtype, layout=layout)
    out = stages.run(p, history=history, record_every=run["record_every"], verbose=run["verbose"])
    res = finish.result(p, out, MulticlassResult)
    res.loss = "crammer_singer"
    if intercept_scaling is None:  # no intercept: b = 0 for every class
        res.b = np.zeros(len(p.classes), np.asarray(res.w).dtype)
    return res, p
