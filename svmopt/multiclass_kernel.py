"""One-vs-one multiclass kernel SVM (LIBSVM's strategy), the pairwise problems solved in batches.

For k classes there are k(k-1)/2 binary problems, one per pair of classes (i < j in sorted
label order), each on the rows of those two classes with class i as +1. The problems are
padded to one size (padding rows get sample weight 0, so their alpha stays 0 and they take
no part in the working-set rule, the bias or the objective) and solved by one compiled
program (``svmopt.driver.run_batch``): as lanes spread over the devices ("loop", the CPU
default) or as vmapped batches whose finished problems leave ("vmap", accelerators).

Prediction evaluates K(x, sv) once against the union of all support vectors, in row blocks
(``svmopt.kernels.predict_kernel``), then every pairwise decision value as one matrix product,
and votes: pair (i, j) votes i when its decision value is > 0, else j; ties go to the class
listed first (LIBSVM's rule).

    model = solve_ovo(X, y, C=10.0, kernel=rbf(gamma=0.5))
    model.predict(X_test), model.decision_function(X_test), model.score(X_test, y_test)
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

import jax
import jax.numpy as jnp

from . import driver
from .kernels import Kernel, predict_kernel, rbf
from .losses import hinge
from .operators import DenseOperator
from .problem import Problem
from .regularizers import l2
from .result import Result, SolverError, Status, warn_convergence
from .solvers._base import Method
from .solvers.alfpgm import alfpgm

__all__ = ["solve_ovo", "OvOModel", "class_pairs"]


@jax.tree_util.register_pytree_node_class
@dataclass(repr=False)
class OvOModel(Result):
    """A trained one-vs-one model: a ``Result`` with a leading pair axis.

    classes          (k,) sorted labels
    pairs            (P, 2) class positions (i, j), i < j, P = k(k-1)/2 in LIBSVM's order;
                     pair p votes classes[i] when f_p(x) > 0, else classes[j]
    kernel           the kernel
    support_vectors  rows of X that are a support vector of at least one pair (n_sv, d)
    dual_coef        (P, n_sv) alpha * y of each support vector in each pair (0 where not in it)
    b                (P,) intercept of each pair;  f_p(x) = sum_s K(x, sv_s) dual_coef[p, s] + b_p
    primal_objective, dual_objective, gap, status, iterations   (P,) per pair
    extras["support"]  the support vectors' row indices in X
    timings          {"compile", "run"} seconds (all pairs)
    """

    pairs: Any = None

    @property
    def intercept(self):
        return np.asarray(self.b)

    @property
    def support(self):
        return self.extras.get("support")

    def decision_function(self, X):
        """(n, P) pairwise decision values."""
        return predict_kernel(self.kernel, self.support_vectors, np.asarray(self.dual_coef).T, X) + self.intercept

    def predict(self, X):
        f = np.asarray(self.decision_function(X))
        if np.isnan(f).any():
            row = int(np.argwhere(np.isnan(f))[0][0])
            raise ValueError(f"the decision value of row {row} is NaN (NaN or inf in X?): no label to give")
        pairs = np.asarray(self.pairs)
        winner = np.where(f > 0, pairs[:, 0], pairs[:, 1])  # (n, P) class positions
        k = np.asarray(self.classes).size
        votes = np.zeros((f.shape[0], k), np.int64)
        np.add.at(votes, (np.arange(f.shape[0])[:, None], winner), 1)
        return np.asarray(self.classes)[np.argmax(votes, axis=1)]  # first maximum: the class listed first

    @property
    def message(self) -> str:
        st = np.asarray(self.status)
        if np.all(st == Status.CONVERGED):
            return f"all {st.size} one-vs-one problems converged"
        c = np.asarray(self.classes)
        bad = [f"{c[i]!r}/{c[j]!r}: {Status(int(code)).name}" for (i, j), code in zip(np.asarray(self.pairs), st)
               if code != Status.CONVERGED]
        return f"{len(bad)} pair(s) did not converge ({'; '.join(bad[:5])}{'; ...' if len(bad) > 5 else ''})"

    def __repr__(self) -> str:
        st = np.asarray(self.status)
        return (f"OvOModel(method={self.method}, C={self.C}, kernel={self.kernel!r}, classes={len(self.classes)}, "
                f"pairs={st.size}, converged={int(np.sum(st == Status.CONVERGED))}/{st.size}, "
                f"support_vectors={np.shape(self.support_vectors)[0]})")


def class_pairs(k: int) -> np.ndarray:
    """(k(k-1)/2, 2) pairs (i, j), i < j, in LIBSVM's order."""
    return np.array([(i, j) for i in range(k) for j in range(i + 1, k)], dtype=np.int64).reshape(-1, 2)


def _problem(X, y, s, C, kernel, dt) -> Problem:
    return Problem(op=DenseOperator(jnp.asarray(X, dt)), y=jnp.asarray(y, dt), s=jnp.asarray(s, dt),
                   C=jnp.asarray(C, dt), loss=hinge, reg=l2, fit_intercept=True,
                   kernel=jax.tree_util.tree_map(lambda a: jnp.asarray(a, dt), kernel))


def _batch_axes(pb: Problem) -> Problem:
    none = jax.tree_util.tree_map(lambda _: None, pb)
    return none.replace(op=jax.tree_util.tree_map(lambda _: 0, pb.op), y=0, s=0)


def _check_X_values(X):
    from .solve import as_matrix, check_finite_X
    X = as_matrix(X)
    check_finite_X(X)
    return X


def _check_input(X, y, C, sample_weight):
    X = _check_X_values(X)
    n = X.shape[0]
    if n == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape})")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != n:
        raise ValueError(f"shape mismatch: X has {n} rows but y has shape {y.shape}")
    if np.issubdtype(y.dtype, np.number) and not np.all(np.isfinite(y)):
        raise ValueError("y contains NaN or inf")
    classes = np.unique(y)
    if classes.size < 2:
        raise ValueError(f"y has only one class ({classes[0]!r}); one-vs-one needs at least two")
    C = float(np.asarray(C, dtype=float)) if np.ndim(C) == 0 else None
    if C is None or not (np.isfinite(C) and C > 0):
        raise ValueError(f"C must be a finite scalar > 0, got {C!r}")
    s = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float)
    if s.shape != (n,) or not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError(f"sample_weight must be finite, >= 0 and of shape ({n},)")
    return X, y, classes, C, s


def solve_ovo(X, y, *, C=1.0, kernel: Kernel | None = None, method: Method = alfpgm, sample_weight=None,
              dtype=None, batch: str = "auto", max_iter: int | None = None, throw: bool = False, devices=None,
              verbose=False, **method_params) -> OvOModel:
    """One-vs-one kernel SVM: every pair of classes solved with ``method`` (AL-FPGM by default).

    X (n, d) dense or scipy.sparse, y (n,) with >= 2 labels; kernel defaults to rbf(1 / d)
    (LIBSVM's default gamma). ``batch``: "auto", "loop" or "vmap" (``svmopt.driver.run_batch``);
    in "vmap" mode the method's ``cache_size`` is the budget of the whole batch. Extra keywords
    configure the method.
    """
    if not isinstance(method, Method) or not getattr(method, "supports_kernel", False):
        raise TypeError(f"method must be a kernel solver such as svmopt.solvers.alfpgm, got {method!r}")
    if batch not in ("auto", "vmap", "loop"):
        raise ValueError(f"batch must be 'auto', 'vmap' or 'loop', got {batch!r}")
    if method_params:
        method = method(**method_params)
    X, y, classes, C, s = _check_input(X, y, C, sample_weight)
    d = X.shape[1]
    if kernel is None:
        kernel = rbf(1.0 / d)
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be an svmopt.kernels.Kernel (e.g. rbf(gamma=0.1)), got {kernel!r}")
    x64 = jax.config.jax_enable_x64
    dt = jnp.dtype(dtype) if dtype is not None else (jnp.float64 if x64 and X.dtype == np.float64 else jnp.float32)
    if dt == jnp.float64 and not x64:
        raise ValueError("dtype=float64 needs jax_enable_x64")

    k = classes.size
    pairs = class_pairs(k)
    members = [np.flatnonzero(y == c) for c in classes]
    rows = [np.concatenate([members[i], members[j]]) for i, j in pairs]
    rows = [np.sort(r) for r in rows]  # the data's own order within each problem
    n_max = max(r.size for r in rows)
    P = len(rows)

    if batch == "vmap":
        full = n_max * n_max * jnp.dtype(dt).itemsize / 2**20  # one problem's cache holding every row
        method = method(cache_size=float(min(method.cache_size / P, full + 1e-6 * full + 1.0)))

    # padded problems: zero rows with weight 0 (never selected, no share in b or objectives)
    dense = (lambda A: A.toarray()) if sp.issparse(X) else np.asarray
    Xs = np.zeros((P, n_max, d))
    Ys = np.ones((P, n_max))
    Ss = np.zeros((P, n_max))
    for p, ((i, j), r) in enumerate(zip(pairs, rows)):
        Xs[p, :r.size] = dense(X[r])
        Ys[p, :r.size] = np.where(y[r] == classes[i], 1.0, -1.0)
        Ss[p, :r.size] = s[r]

    one = _problem(Xs[0], Ys[0], Ss[0], C, kernel, dt)
    method.validate(one)
    if max_iter is None:
        max_iter = method.default_max_iter(one)
    method = method.canonical(dt)
    pb = _problem(Xs, Ys, Ss, C, kernel, dt)
    from .multiclass import _label  # (multiclass imports this module)

    start = driver.cold_start(method, one)
    starts = jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (P,) + jnp.shape(a)), start)
    out, timings = driver.run_batch(method, pb, _batch_axes(pb), starts, size=P, max_iter=int(max_iter),
                                    mode=batch, devices=devices, verbose=verbose,
                                    labels=[f"{_label(classes[i])}/{_label(classes[j])}" for i, j in pairs])

    # support vectors: union over pairs, one coefficient row per pair
    alpha = np.asarray(out.extras["alpha"])  # (P, n_max)
    sv_rows = np.unique(np.concatenate([r[alpha[p, :r.size] > 0] for p, r in enumerate(rows)]))
    pos = np.full(X.shape[0], -1)
    pos[sv_rows] = np.arange(sv_rows.size)
    coef = np.zeros((P, sv_rows.size))
    for p, r in enumerate(rows):
        a = alpha[p, :r.size]
        on = a > 0
        coef[p, pos[r[on]]] = a[on] * Ys[p, :r.size][on]
    primal, dual = np.asarray(out.primal), np.asarray(out.dual)
    model = OvOModel(w=None, b=np.asarray(out.b, float), primal_objective=primal, dual_objective=dual,
                     gap=primal - dual, status=np.asarray(out.status).astype(np.int32),
                     iterations=np.asarray(out.iterations), method=method.name, loss=repr(hinge), C=C,
                     classes=classes, timings=timings, extras={"support": sv_rows}, kernel=kernel,
                     support_vectors=X[sv_rows], dual_coef=coef, tol=float(np.asarray(method.tol)), pairs=pairs)
    if not model.converged:
        from .solve import definiteness_hint

        msg = f"{method.name} one-vs-one: {model.message}" + definiteness_hint(pb)
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=2)
    return model
