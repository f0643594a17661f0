"""The benchmarked problem, evaluated independently of svmopt in float64 numpy.

    P(w) = 1/2 ||w||^2 + C sum_i (1 - y_i w.x_i)_+^p          p = 1 (L1), 2 (L2), other (Lp)

on X with the intercept convention applied (``Task.X``): "none" is X itself,
"bias" appends a constant column 1 (LIBLINEAR ``-B 1`` = svmopt
``intercept_scaling=1``: the bias is a regularized weight). Multiclass data is
one-vs-rest: K binary problems, P = sum_k P_k(w_k).

Dual (for the certificate):  D(a) = sum_i [a_i - C h*(a_i / C)] - 1/2 ||X^T (a y)||^2,
h(xi) = xi^p on xi >= 0, so h*(s) = (p-1) (s/p)^(p/(p-1)) for p > 1 and a in [0, C]
for p = 1 (the standard L1/L2-SVM duals; Hsieh et al. 2008 eq. 2 for p = 1, 2).
Any feasible a gives D(a) <= P* <= P(w).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
from scipy.optimize import lsq_linear

from .data import Dataset

__all__ = ["LOSSES", "Task", "primal", "dual", "complete_dual", "add_bias"]

# bench loss name -> exponent p of (1 - m)_+^p (Lp's p is set by --p)
LOSSES = {"L1": 1.0, "L2": 2.0, "Lp": 1.5}


def add_bias(X, scale: float = 1.0):
    """[X, scale * 1]: LIBLINEAR's bias feature."""
    col = np.full((X.shape[0], 1), scale)
    return sp.hstack([X, col], format="csr") if sp.issparse(X) else np.hstack([X, col])


def primal(X, y, w, p: float, C: float) -> float:
    xi = np.maximum(0.0, 1.0 - y * (X @ w))
    return float(0.5 * w @ w + C * np.sum(xi if p == 1 else xi ** p))


def dual(X, y, a, p: float, C: float) -> float:
    """D(a) for a feasible a (0 <= a, and a <= C when p = 1)."""
    v = X.T @ (a * y)
    if p == 1:
        lin = np.sum(a)
    else:
        lin = np.sum(a - C * (p - 1) * (a / (C * p)) ** (p / (p - 1)))
    return float(lin - 0.5 * v @ v)


def complete_dual(X, y, w, p: float, C: float, deltas=(1e-4, 1e-3, 1e-2)) -> float:
    """The best dual value reachable from a primal point w: a lower bound on P*.

    p > 1: a_i = C h'(xi_i) = C p xi_i^(p-1) (KKT, exact at w*). p = 1: a_i = C where
    y_i w.x_i < 1, 0 where > 1, and the near-margin ones (|m_i - 1| <= delta) fitted by
    bounded least squares to w = X^T (a y) (the stationarity condition); best over deltas.
    """
    m = y * (X @ w)
    if p != 1:
        return dual(X, y, C * p * np.maximum(0.0, 1.0 - m) ** (p - 1), p, C)
    best = -np.inf
    for delta in deltas:
        a = np.where(m < 1.0, C, 0.0)
        near = np.flatnonzero(np.abs(m - 1.0) <= delta)
        if 0 < near.size <= 20_000:
            a[near] = 0.0
            rest = X.T @ (a * y)
            Xm = X[near]
            A = (Xm.multiply(y[near][:, None]) if sp.issparse(Xm) else Xm * y[near][:, None]).T
            A = sp.csc_matrix(A) if sp.issparse(A) else A
            a[near] = lsq_linear(A, w - rest, bounds=(0.0, C), tol=1e-12, lsmr_tol="auto").x
        best = max(best, dual(X, y, a, p, C))
    return best


@dataclasses.dataclass
class Task:
    """One benchmark problem: dataset x loss x intercept convention x C (binary or one-vs-rest)."""

    data: Dataset
    loss: str  # "L1" | "L2" | "Lp"
    p: float
    convention: str = "bias"  # "bias" | "none"
    C: float = 1.0

    def __post_init__(self):
        if self.convention not in ("bias", "none"):
            raise ValueError(f"intercept convention must be 'bias' or 'none', got {self.convention!r}")
        self._X = self._Xt = None

    @property
    def name(self) -> str:
        return f"{self.data.name}/{self.loss}"

    @property
    def bias(self) -> bool:
        return self.convention == "bias"

    @property
    def X(self):
        """Training X with the convention applied (what P is evaluated on)."""
        if self._X is None:
            self._X = add_bias(self.data.X) if self.bias else self.data.X
        return self._X

    @property
    def X_test(self):
        if self._Xt is None:
            self._Xt = add_bias(self.data.X_test) if self.bias else self.data.X_test
        return self._Xt

    @property
    def classes(self) -> np.ndarray:
        """One entry per binary subproblem: the positive class (binary data: just +1)."""
        return self.data.classes if self.data.multiclass else np.array([1.0])

    def labels(self, k: int) -> np.ndarray:
        """+-1 labels of subproblem k (class k vs rest)."""
        if not self.data.multiclass:
            return self.data.y
        return np.where(self.data.y == self.classes[k], 1.0, -1.0)

    def objective(self, W) -> float:
        """sum_k P_k(W[:, k]); W is (d', K) or (d',) for binary."""
        W = np.asarray(W, np.float64).reshape(self.X.shape[1], -1)
        return sum(primal(self.X, self.labels(k), W[:, k], self.p, self.C) for k in range(W.shape[1]))

    def accuracy(self, W) -> float:
        """Test accuracy: sign for binary, argmax of the K one-vs-rest scores for multiclass."""
        W = np.asarray(W, np.float64).reshape(self.X.shape[1], -1)
        f = np.asarray(self.X_test @ W)
        if not self.data.multiclass:
            return float(np.mean(np.where(f[:, 0] > 0, 1.0, -1.0) == self.data.y_test))
        return float(np.mean(self.classes[np.argmax(f, axis=1)] == self.data.y_test))
