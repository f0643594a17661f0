"""The one Result type every solver returns, and its status enum."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

__all__ = ["Status", "Result", "ConvergenceWarning", "SolverError"]


class ConvergenceWarning(UserWarning):
    """A solver stopped without meeting its tolerance."""


class SolverError(RuntimeError):
    """Raised by ``solve(..., throw=True)`` when the status is not CONVERGED."""


class Status(enum.IntEnum):
    CONVERGED = 0
    MAX_ITER = 1
    DIVERGED = 2
    NONFINITE = 3
    STALLED = 4

    @property
    def message(self) -> str:
        return _MESSAGES[self]


_MESSAGES = {
    Status.CONVERGED: "converged: the stopping criterion was met",
    Status.MAX_ITER: "stopped at the iteration cap (max_iter) before the stopping criterion was met",
    Status.DIVERGED: "diverged: the objective grew far beyond its value at the starting point",
    Status.NONFINITE: "non-finite values (nan/inf) appeared in the iterates",
    Status.STALLED: "stalled: the objective stopped changing before the stopping criterion was met",
}


@dataclass
class Result:
    """What a solve returns.

    w, b                 weights (d,) and intercept (b = 0 without one); batched solves
                         (vmap over C or labels) carry a leading batch axis on every array.
    primal_objective     R(w) + C sum s_i loss(y_i (w.x_i + b)), SPEC section 1
    dual_objective, gap  where the loss and regularizer have a dual (else nan)
    status, message      a ``Status`` and its readable explanation
    iterations           outer iterations taken
    history              {"iteration", "objective", "time"} arrays when asked for
    timings              {"compile": s, "run": s} (compile = first-call lowering + XLA)
    classes              the two original labels, (negative, positive)
    extras               solver-specific arrays (e.g. "alpha" dual variables)
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
    classes: Optional[np.ndarray] = None
    history: Optional[dict] = None
    timings: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)
    intercept_scaling: Optional[float] = None  # set when b was learned as a regularized bias feature
    kernel: Any = None  # kernel models: decision = K(X, support_vectors) @ dual_coef + b
    support_vectors: Any = None
    dual_coef: Any = None  # alpha_i y_i of the support vectors

    @property
    def message(self) -> str:
        st = np.asarray(self.status)
        if st.ndim == 0:
            return Status(int(st)).message
        return "; ".join(f"[{i}] {Status(int(s)).name}" for i, s in enumerate(st.ravel()))

    @property
    def converged(self) -> bool:
        return bool(np.all(np.asarray(self.status) == Status.CONVERGED))

    @property
    def relative_gap(self):
        return np.asarray(self.gap) / np.maximum(np.abs(np.asarray(self.primal_objective)), 1e-300)

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
        f = self.decision_function(X)
        if self.classes is None:
            return np.where(f > 0, 1.0, -1.0)
        return np.where(f > 0, self.classes[1], self.classes[0])

    def score(self, X, y) -> float:
        return float(np.mean(self.predict(X) == np.asarray(y)))

    def __repr__(self) -> str:
        st = np.asarray(self.status)
        name = Status(int(st)).name if st.ndim == 0 else f"batch of {st.size}"
        return (f"Result(method={self.method}, loss={self.loss}, C={self.C}, status={name}, "
                f"iterations={self.iterations}, primal={self.primal_objective}, gap={self.gap})")
