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

import jax

from . import finish, plan, stages
from .kernels import Kernel, predict_kernel, rbf
from .result import Result, SolverError, Status, warn_convergence
from .solvers.alfpgm import alfpgm
from .solvers.base import Method

__all__ = ["solve_ovo", "OvOModel", "class_pairs", "votes", "ovr_scores"]


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
        k = np.asarray(self.classes).size
        # the first maximum: ties go to the class listed first
        return np.asarray(self.classes)[np.argmax(votes(f, self.pairs, k), axis=1)]

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


def votes(f, pairs, k: int, zero_votes_first: bool = False) -> np.ndarray:
    """(n, k) votes from pairwise decision values f (n, P): pair (i, j) votes i where f > 0 (LIBSVM),
    or f >= 0 with ``zero_votes_first`` (scikit-learn's per-class scores), else j."""
    f, pairs = np.asarray(f), np.asarray(pairs)
    out = np.zeros((f.shape[0], k))
    first = f >= 0 if zero_votes_first else f > 0
    np.add.at(out, (np.arange(f.shape[0])[:, None], np.where(first, pairs[:, 0], pairs[:, 1])), 1.0)
    return out


def ovr_scores(f, pairs, k: int) -> np.ndarray:
    """(n, k) per-class scores from pairwise decision values (n, P), scikit-learn's rule for SVC's
    decision_function_shape="ovr": each class's votes plus its summed pairwise values squashed into
    (-1/3, 1/3), so the largest score is the class with most votes, ties going to the more confident.
    A value of exactly 0 votes for the pair's first class here (scikit-learn's choice), for the second
    in ``votes`` (LIBSVM's)."""
    f, pairs = np.asarray(f), np.asarray(pairs)
    conf = np.zeros((f.shape[0], k))
    rows = np.arange(f.shape[0])[:, None]
    np.add.at(conf, (rows, pairs[:, 0]), f)
    np.add.at(conf, (rows, pairs[:, 1]), -f)
    return votes(f, pairs, k, zero_votes_first=True) + conf / (3.0 * (np.abs(conf) + 1.0))


def class_pairs(k: int) -> np.ndarray:
    """(k(k-1)/2, 2) pairs (i, j), i < j, in LIBSVM's order."""
    return np.array([(i, j) for i in range(k) for j in range(i + 1, k)], dtype=np.int64).reshape(-1, 2)


def solve_ovo(X, y, *, C=1.0, kernel: Kernel | None = None, method: Method = alfpgm, sample_weight=None,
              dtype=None, batch: str = "auto", max_iter: int | None = None, throw: bool = False, devices=None,
              verbose=False, **method_params) -> OvOModel:
    """One-vs-one kernel SVM: every pair of classes solved with ``method`` (AL-FPGM by default).

    X (n, d) dense or scipy.sparse, y (n,) with >= 2 labels; kernel defaults to rbf(1 / d)
    (LIBSVM's default gamma). ``batch``: "auto", "loop" or "vmap" (``svmopt.driver.run_batch``);
    in "vmap" mode the method's ``cache_size`` is the budget of the whole batch. Extra keywords
    configure the method.
    """
    run = plan.check_run_args(verbose=verbose, throw=throw, max_iter=max_iter, batch=batch, devices=devices)
    if not isinstance(method, Method) or not getattr(method, "supports_kernel", False):
        raise TypeError(f"method must be a kernel solver such as svmopt.solvers.alfpgm, got {method!r:.60}")
    if method_params:
        method = method(**method_params)
    if kernel is None:
        kernel = rbf(1.0 / np.shape(X)[1]) if len(np.shape(X)) == 2 and np.shape(X)[1] else None
    p = plan.one_vs_one(X, y, method=method, kernel=kernel, C=C, sample_weight=sample_weight,
                        max_iter=run["max_iter"], dtype=dtype, batch=batch, devices=run["devices"])
    outcome = stages.run(p, verbose=run["verbose"])
    out = outcome.summary
    rows, Ys, pairs = p.extra["rows"], p.extra["Ys"], p.extra["pairs"]
    # support vectors: union over pairs, one coefficient row per pair
    alpha = np.asarray(out.extras["alpha"])  # (P, n_max)
    sv_rows = np.unique(np.concatenate([r[alpha[k, :r.size] > 0] for k, r in enumerate(rows)]))
    pos = np.full(p.n, -1)
    pos[sv_rows] = np.arange(sv_rows.size)
    coef = np.zeros((len(rows), sv_rows.size))
    for k, r in enumerate(rows):
        a = alpha[k, :r.size]
        on = a > 0
        coef[k, pos[r[on]]] = a[on] * Ys[k, :r.size][on]
    primal, dual = np.asarray(out.primal), np.asarray(out.dual)
    model = OvOModel(w=None, b=np.asarray(out.b, float), primal_objective=primal, dual_objective=dual,
                     gap=primal - dual, status=np.asarray(out.status).astype(np.int32),
                     iterations=np.asarray(out.iterations), method=p.method.name, loss=repr(p.pb.loss), C=p.C,
                     classes=p.classes, timings=outcome.timings, extras={"support": sv_rows},
                     kernel=p.kernel, support_vectors=p.X[sv_rows], dual_coef=coef,
                     tol=float(np.asarray(p.method.tol)), pairs=pairs)
    if not model.converged:
        msg = f"{p.method.name} one-vs-one: {model.message}" + finish.definiteness_hint(p.pb)
        if throw:
            raise SolverError(msg)
        warn_convergence(msg, stacklevel=2)
    return model
