"""The one Result type every solver returns, and its status enum."""
from __future__ import annotations

import enum
import functools
import sys
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Optional

import numpy as np

import jax

from .problem import relative_gap

__all__ = ["Status", "Result", "RegressionResult", "OneClassResult",
           "ConvergenceWarning", "SolverError", "warn_convergence", "warning_category",
           "public_convergence_warning"]


class ConvergenceWarning(UserWarning):
    """A solve ended without a certified answer (status other than CONVERGED).

    ``svmopt.ConvergenceWarning`` is this class made a subclass of
    ``sklearn.exceptions.ConvergenceWarning`` too when scikit-learn is installed (resolved
    when the name is first used, so ``import svmopt`` does not pay scikit-learn's import),
    and every warning svmopt emits once scikit-learn is imported is of that class:
    scikit-learn's warning filters (and ``GridSearchCV``'s) treat it as theirs, and filters or
    ``pytest.warns`` on either class catch it. Without scikit-learn it is this class.
    """


@functools.lru_cache(maxsize=None)
def _with_sklearn(skl):
    return type("ConvergenceWarning", (ConvergenceWarning, skl), {"__module__": __name__,
                                                                   "__doc__": ConvergenceWarning.__doc__})


def warning_category():
    """The class svmopt warns with: ``ConvergenceWarning``, also sklearn's once sklearn is imported."""
    skl = sys.modules.get("sklearn.exceptions")
    return ConvergenceWarning if skl is None else _with_sklearn(skl.ConvergenceWarning)


def public_convergence_warning():
    """``svmopt.ConvergenceWarning``: a subclass of scikit-learn's when scikit-learn is installed."""
    try:
        import sklearn.exceptions  # noqa: F401  (only when the name is used)
    except ImportError:
        return ConvergenceWarning
    return warning_category()


def warn_convergence(message: str, stacklevel: int = 3):
    """Warn with ``message`` as a ``ConvergenceWarning`` (of ``warning_category()``)."""
    warnings.warn(message, warning_category(), stacklevel=stacklevel)


class SolverError(RuntimeError):
    """Raised by ``solve(..., throw=True)`` when the status is not CONVERGED."""


class Status(enum.IntEnum):
    """How a solve ended; ``Status.CONVERGED`` only with a certified relative duality gap <= tol.

    MAX_ITER, DIVERGED, NONFINITE, STALLED and UNCERTIFIED say why not; ``.message`` explains.
    """

    CONVERGED = 0
    MAX_ITER = 1
    DIVERGED = 2
    NONFINITE = 3
    STALLED = 4
    UNCERTIFIED = 5

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    Status.CONVERGED: "converged: the relative duality gap (P - D)/|P| is certified <= tol",
    Status.MAX_ITER: "stopped at the iteration cap (max_iter) before the duality gap was certified <= tol",
    Status.DIVERGED: "diverged: the objective grew far beyond its value at the starting point",
    Status.NONFINITE: "non-finite values (nan/inf) appeared in the iterates",
    Status.STALLED: "stalled: the objective stopped improving before the duality gap was certified <= tol",
    Status.UNCERTIFIED: "the method's own stopping rule was met but the duality gap could not be certified "
                        "<= tol (no dual for this loss/regularizer, the method cannot tighten further, or the dtype's "
                        "rounding of P and D could exceed tol: extras['rounding'])",
}


@jax.tree_util.register_pytree_node_class
@dataclass
class Result:
    """What a solve returns (a pytree: it can leave ``jax.jit`` and ``jax.vmap``).

    w, b                 weights (d,) and intercept (b = 0 without one); batched solves
                         (a grid of C, one-vs-rest, vmap) carry a leading batch axis.
    primal_objective     R(w) + C sum s_i loss(y_i (w.x_i + b)), SPEC section 1
    dual_objective, gap  D of a feasible dual point and P - D (a true bound on P - P*);
                         nan where the loss or regularizer has no dual
    status, message      a ``Status``: CONVERGED means (P - D)/|P| <= tol, certified
    iterations           outer iterations taken
    history              {"iteration", "objective", "gap", "time"} arrays when asked for
    timings              {"compile": s, "run": s} (compile = lowering + XLA, 0 when cached)
    classes              the two original labels, (negative, positive)
    extras               solver-specific arrays ("alpha" dual variables, criteria, counters)
    state                where ``solve(..., init=result)`` resumes (a ``Start``)
    """

    w: Any
    b: Any
    primal_objective: Any
    dual_objective: Any
    gap: Any
    status: Any
    iterations: Any
    method: str
    loss: str
    C: Any
    classes: Optional[Any] = None
    history: Optional[dict] = None
    timings: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    intercept_scaling: Optional[float] = None  # set when b was learned as a regularized bias feature
    kernel: Any = None  # kernel models: decision = K(X, support_vectors) @ dual_coef + b
    support_vectors: Any = None
    dual_coef: Any = None  # alpha_i y_i of the support vectors
    state: Any = None
    tol: Optional[float] = None

    _AUX = ("method", "loss", "intercept_scaling", "tol")

    def tree_flatten(self):
        names = [f.name for f in fields(self) if f.name not in self._AUX]
        return tuple(getattr(self, k) for k in names), (tuple(names), tuple(getattr(self, k) for k in self._AUX))

    @classmethod
    def tree_unflatten(cls, aux, children):
        names, auxv = aux
        obj = object.__new__(cls)
        for k, v in zip(names, children):
            object.__setattr__(obj, k, v)
        for k, v in zip(cls._AUX, auxv):
            object.__setattr__(obj, k, v)
        return obj

    @property
    def message(self) -> str:
        st = np.asarray(self.status)
        if st.ndim == 0:
            msg = Status(int(st)).message
            if int(st) != Status.CONVERGED and self.tol is not None:
                try:
                    msg += f" (relative gap {float(self.relative_gap):.3g}, tol {self.tol:g})"
                except (TypeError, ValueError):
                    pass
            return msg
        return "; ".join(f"[{i}] {Status(int(s)).name}" for i, s in enumerate(st.ravel()))

    @property
    def converged(self) -> bool:
        return bool(np.all(np.asarray(self.status) == Status.CONVERGED))

    @property
    def relative_gap(self):
        p = np.asarray(self.primal_objective, np.float64)
        return relative_gap(p, p - np.asarray(self.gap, np.float64))

    def decision_function(self, X):
        """w.x + b for the rows of X (numpy, jax or scipy.sparse); (k, n) for a batch of k models."""
        w, b = np.asarray(self.w), np.asarray(self.b)
        if self.kernel is not None:
            from .kernels import predict_kernel  # lazy: only kernel models need it
            return predict_kernel(self.kernel, self.support_vectors, self.dual_coef, X) + b
        if w.ndim == 1:
            return np.asarray(X @ w) + b
        return np.asarray(X @ w.T).T + b[:, None]

    def predict(self, X):
        """Labels for the rows of X. A row whose decision value is NaN or inf (NaN or inf in X) raises."""
        f = np.asarray(self.decision_function(X))
        if not np.isfinite(f).all():
            row = int(np.argwhere(~np.isfinite(f))[0][-1])
            raise ValueError(f"the decision value of row {row} is {f.ravel()[~np.isfinite(f.ravel())][0]} "
                             "(NaN or inf in X?): no label to give")
        if self.classes is None:
            return np.where(f > 0, 1.0, -1.0)
        classes = np.asarray(self.classes)
        return np.where(f > 0, classes[..., 1:2] if classes.ndim > 1 else classes[1],
                        classes[..., 0:1] if classes.ndim > 1 else classes[0])

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def __repr__(self) -> str:
        st = np.asarray(self.status)
        try:
            name = Status(int(st)).name if st.ndim == 0 else f"batch of {st.size}"
        except (TypeError, ValueError):
            name = "traced"
        return (f"Result(method={self.method}, loss={self.loss}, C={self.C}, status={name}, "
                f"iterations={self.iterations}, primal={self.primal_objective}, gap={self.gap})")


@jax.tree_util.register_pytree_node_class
@dataclass(repr=False)
class RegressionResult(Result):
    """A regression solve (a loss of the residual, e.g. ``epsilon_insensitive``): ``predict`` is the
    decision function w.x + b (no labels), ``score`` the coefficient of determination R^2."""

    def predict(self, X):
        f = np.asarray(self.decision_function(X))
        if not np.isfinite(f).all():
            row = int(np.argwhere(~np.isfinite(f))[0][-1])
            raise ValueError(f"the prediction of row {row} is not finite (NaN or inf in X?)")
        return f

    def score(self, X, y) -> float:
        """R^2 = 1 - sum (y - f)^2 / sum (y - mean y)^2 (scikit-learn's regressor score)."""
        y = np.asarray(y, float)
        f = self.predict(X)
        ss = float(np.sum((y - y.mean()) ** 2))
        return 1.0 - float(np.sum((y - f) ** 2)) / ss if ss > 0 else float("nan")

    def __repr__(self) -> str:
        return "Regression" + super().__repr__()


@jax.tree_util.register_pytree_node_class
@dataclass(repr=False)
class OneClassResult(Result):
    """A one-class SVM (``svmopt.solve_oneclass``; SPEC section 7): ``decision_function(X)`` is
    w.phi(x) - rho (b = -rho), ``predict`` +1 where it is > 0 (inside the estimated support), else -1.

    The numbers are in SPEC section 7's scale (sum alpha = 1); ``scale`` = nu sum_i s_i (nu n without
    weights) turns them into LIBSVM's (``-s 2``, scikit-learn's OneClassSVM): alpha, rho and the decision
    values there are ``scale`` times these.
    """

    nu: Any = None
    scale: Any = None

    @property
    def rho(self):
        """The offset rho = -b."""
        return -np.asarray(self.b)

    def score_samples(self, X):
        """w.phi(x) (the decision function plus rho)."""
        return np.asarray(self.decision_function(X)) + self.rho

    def predict(self, X):
        """+1 (inlier) or -1 (outlier) per row, as integers."""
        return np.asarray(super().predict(X), dtype=np.intp)

    def __repr__(self) -> str:
        return "OneClass" + super().__repr__()
