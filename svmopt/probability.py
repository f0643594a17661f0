"""Probability estimates for SVM classifiers (LIBSVM's ``-b 1``, scikit-learn's ``SVC(probability=True)``).

Two classes: Platt's sigmoid P(y = +1 | f) = 1 / (1 + exp(A f + B)) of the decision value f, fitted by
the Newton method with backtracking of Lin, Lin & Weng ("A note on Platt's probabilistic outputs for
support vector machines", Machine Learning 68, 2007) to decision values from an internal
cross-validation, with Platt's smoothed targets (N+ + 1) / (N+ + 2) and 1 / (N- + 2): LIBSVM's
``svm_binary_svc_probability`` and ``sigmoid_train``. The folds (5 by default) are stratified by
class and seeded (LIBSVM draws a plain permutation); each fold is one ``svmopt.solve`` /
``solve_multiclass`` call, so folds of nearby sizes share compiled programs.

More than two classes:

* one-vs-one (kernel models): pair (i, j)'s sigmoid, fitted on the cross-validated decision values of
  the rows of classes i and j, gives r_ij = P(i | i or j, x), clipped to [1e-7, 1 - 1e-7] as LIBSVM
  does; the second method of Wu, Lin & Weng ("Probability estimates for multi-class classification by
  pairwise coupling", JMLR 5, 2004) couples them: p minimizes sum_i sum_{j != i} (r_ji p_i - r_ij p_j)^2
  subject to sum_i p_i = 1 (LIBSVM's ``multiclass_probability``). Here the minimizer is computed
  exactly, from its (K + 1) x (K + 1) optimality system, where LIBSVM iterates to 0.005 / K.
* one-vs-rest (linear models): class k's sigmoid, fitted on the cross-validated decision values of
  the problem "k against the rest", gives q_k = P(k | f_k); p_k = q_k / sum_j q_j (Zadrozny & Elkan,
  KDD 2002; scikit-learn's ``CalibratedClassifierCV`` on ``LinearSVC`` does the same). The model has
  no pairwise decision values to couple, and its K sigmoids are fitted on exactly the problems it
  solved.

    platt = fit(X, y, "ovo", kernel=rbf(0.5), C=10.0)       # cross-validates, returns a Platt
    model = solve_multiclass(X, y, strategy="ovo", kernel=rbf(0.5), C=10.0)
    predict_proba(model, platt, X_test)                       # (n, K), rows sum to 1
"""
from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from .kernels import as_kernel, host_gram
from .multiclass import solve_multiclass
from .multiclass_kernel import class_pairs
from .result import warn_convergence, warning_category
from .solve import solve

__all__ = ["Platt", "fit", "predict_proba", "sigmoid_train", "sigmoid_predict", "pairwise_coupling",
           "stratified_folds", "MIN_PROB"]

MIN_PROB = 1e-7
"""Pairwise probabilities are clipped to [MIN_PROB, 1 - MIN_PROB] (LIBSVM's min_prob)."""


class Platt(NamedTuple):
    """The fitted sigmoids of a model: ``kind`` "binary" (A, B scalars), "ovo" (P,) one per pair in
    LIBSVM's order, or "ovr" (K,) one per class."""

    kind: str
    A: np.ndarray
    B: np.ndarray


# ------------------------------------------------------------------------- Platt's sigmoid
def sigmoid_train(f, positive, max_iter: int = 100, min_step: float = 1e-10, sigma: float = 1e-12,
                  eps: float = 1e-5):
    """(A, B) maximizing the likelihood of P(+1 | f) = 1 / (1 + exp(A f + B)) with Platt's targets.

    f (n,) decision values, positive (n,) bool. Newton's method on (A, B) with the Hessian shifted by
    ``sigma``, backtracking by halves to ``min_step``, stopping when both gradient entries are below
    ``eps`` or after ``max_iter`` iterations (Lin, Lin & Weng 2007, Algorithm 1; LIBSVM's defaults).
    """
    f = np.asarray(f, np.float64).ravel()
    positive = np.asarray(positive, bool).ravel()
    n1 = int(positive.sum())
    n0 = positive.size - n1
    t = np.where(positive, (n1 + 1.0) / (n1 + 2.0), 1.0 / (n0 + 2.0))
    A, B = 0.0, math.log((n0 + 1.0) / (n1 + 1.0))

    def objective(a, b):
        z = f * a + b
        return float(np.sum(np.where(z >= 0, t * z + np.log1p(np.exp(-np.abs(z))),
                                     (t - 1.0) * z + np.log1p(np.exp(-np.abs(z))))))

    fval = objective(A, B)
    for _ in range(max_iter):
        z = f * A + B
        p = np.where(z >= 0, np.exp(-np.abs(z)) / (1.0 + np.exp(-np.abs(z))), 1.0 / (1.0 + np.exp(-np.abs(z))))
        q = 1.0 - p
        d2 = p * q
        h11, h22, h21 = sigma + np.dot(f * f, d2), sigma + d2.sum(), np.dot(f, d2)
        d1 = t - p
        g1, g2 = np.dot(f, d1), d1.sum()
        if abs(g1) < eps and abs(g2) < eps:
            break
        det = h11 * h22 - h21 * h21
        dA, dB = -(h22 * g1 - h21 * g2) / det, -(-h21 * g1 + h11 * g2) / det
        gd = g1 * dA + g2 * dB
        step = 1.0
        while step >= min_step:  # backtracking line search (sufficient decrease)
            new = objective(A + step * dA, B + step * dB)
            if new < fval + 1e-4 * step * gd:
                A, B, fval = A + step * dA, B + step * dB, new
                break
            step /= 2.0
        if step < min_step:
            break  # the line search failed: keep the last (A, B), as LIBSVM does
    return A, B


def sigmoid_predict(f, A, B):
    """1 / (1 + exp(A f + B)), computed without overflow; A, B broadcast against f."""
    z = np.asarray(f, np.float64) * A + B
    e = np.exp(-np.abs(z))
    return np.where(z >= 0, e / (1.0 + e), 1.0 / (1.0 + e))


def pairwise_coupling(r):
    """Class probabilities (n, K) from pairwise ones r (n, K, K), r[:, i, j] = P(i | i or j), r_ij + r_ji = 1.

    Wu, Lin & Weng's second method: p minimizes p^T Q p with Q_tt = sum_{j != t} r_jt^2,
    Q_tj = -r_jt r_tj, subject to sum p = 1; solved exactly from [[Q, 1], [1^T, 0]] [p; b] = [0; 1]
    (p >= 0 holds at the minimizer for r in (0, 1); negatives from rounding are clipped).
    """
    r = np.asarray(r, np.float64)
    n, K = r.shape[0], r.shape[1]
    rt = np.swapaxes(r, 1, 2)  # rt[:, t, j] = r_jt
    Q = -rt * r
    off = ~np.eye(K, dtype=bool)
    Q[:, np.arange(K), np.arange(K)] = np.sum(np.where(off, rt * rt, 0.0), axis=2)
    M = np.zeros((n, K + 1, K + 1))
    M[:, :K, :K] = Q
    M[:, :K, K] = M[:, K, :K] = 1.0
    rhs = np.zeros((n, K + 1))
    rhs[:, K] = 1.0
    p = np.clip(np.linalg.solve(M, rhs[..., None])[..., 0][:, :K], 0.0, None)
    return p / p.sum(axis=1, keepdims=True)


# ------------------------------------------------------------------------- cross-validation
def stratified_folds(y, k: int = 5, seed=0):
    """k folds (lists of row indices): each class's rows in a seeded random order dealt to the folds in
    turn, the turn carried over from class to class, so fold sizes differ by at most one row."""
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    fold = np.empty(y.shape[0], np.int64)
    start = 0
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        fold[idx] = (start + np.arange(idx.size)) % k
        start += idx.size
    return [np.flatnonzero(fold == f) for f in range(k)]


def _rows(X, rows, cols=None):
    """X's rows (a Gram matrix: its block rows x cols)."""
    if cols is not None:
        return X[np.ix_(rows, cols)]
    return X[rows] if hasattr(X, "shape") else np.asarray(X)[rows]


def fit(X, y, strategy: str, *, folds: int = 5, seed=0, sample_weight=None, kernel=None, **solve_kw) -> Platt:
    """Cross-validated decision values of the model ``solve_kw`` describes, and the sigmoids fitted to them.

    strategy: "binary" (``svmopt.solve``, two labels), "ovo" (``solve_multiclass(strategy="ovo")``,
    kernel models) or "ovr" (``solve_multiclass``). ``folds`` stratified folds seeded by ``seed``; a
    fold whose training rows lack a class gives that problem LIBSVM's constant decision values (+1 when
    only the positive class is there, -1 when only the negative one). Convergence warnings of the folds
    are summed up in one warning.
    """
    y = np.asarray(y)
    classes = np.unique(y)
    kernel = as_kernel(kernel)
    gram = kernel is not None and (kernel.host or kernel.name == "precomputed")
    if gram and kernel.host:  # the Gram matrix once, not once per fold
        X, kernel = host_gram(kernel, X if hasattr(X, "shape") else np.asarray(X)), "precomputed"
    elif gram:
        if sp.issparse(X):
            raise TypeError("Sparse precomputed kernels are not supported: pass the Gram matrix as a dense array")
        X, kernel = np.asarray(X), "precomputed"
    if kernel is not None:
        solve_kw["kernel"] = kernel
    k = int(folds)
    if k < 2:
        raise ValueError(f"probability estimates need >= 2 cross-validation folds, got {folds!r}")
    P = len(class_pairs(classes.size)) if strategy == "ovo" else classes.size if strategy == "ovr" else 1
    dec = np.zeros((y.shape[0], P))
    missed = 0
    for test in stratified_folds(y, min(k, y.shape[0]), seed):
        train = np.setdiff1d(np.arange(y.shape[0]), test)
        kw = dict(solve_kw)
        if sample_weight is not None:
            kw["sample_weight"] = np.asarray(sample_weight)[train]
        Xtr, Xte = (_rows(X, train, train), _rows(X, test, train)) if gram else (_rows(X, train), _rows(X, test))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", warning_category())
            dec[test] = _fold(strategy, Xtr, y[train], Xte, classes, kw)
        missed += any(issubclass(w.category, warning_category()) for w in caught)
        for w in caught:
            if not issubclass(w.category, warning_category()):
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if missed:
        warn_convergence(f"probability estimates: {missed} of {k} cross-validation fits did not certify their "
                         "tolerance; the sigmoids are fitted on their decision values", stacklevel=3)
    if strategy == "binary":
        A, B = sigmoid_train(dec[:, 0], y == classes[1])
        return Platt("binary", np.float64(A), np.float64(B))
    AB = np.zeros((2, P))
    if strategy == "ovo":
        for p, (i, j) in enumerate(class_pairs(classes.size)):
            on = (y == classes[i]) | (y == classes[j])
            AB[:, p] = sigmoid_train(dec[on, p], y[on] == classes[i])
    else:
        for c in range(classes.size):
            AB[:, c] = sigmoid_train(dec[:, c], y == classes[c])
    return Platt(strategy, AB[0], AB[1])


def _fold(strategy, Xtr, ytr, Xte, classes, kw):
    """Decision values (n_test, P) of the model trained on one fold's training rows."""
    present = np.unique(ytr)
    if strategy == "binary":
        if present.size == 2:
            return np.asarray(solve(Xtr, ytr, **kw).decision_function(Xte))[:, None]
        return np.full((_n(Xte), 1), 1.0 if present[0] == classes[1] else -1.0)
    where = np.searchsorted(classes, present)
    if strategy == "ovr":
        out = np.full((_n(Xte), classes.size), -1.0)  # a class absent from the fold: only negatives
        if present.size == 1:
            out[:, where[0]] = 1.0
        else:
            out[:, where] = np.asarray(solve_multiclass(Xtr, ytr, **kw).decision_function(Xte))
        return out
    pairs = class_pairs(classes.size)
    has = np.isin(np.arange(classes.size), where)
    out = np.where(has[pairs[:, 0]], 1.0, np.where(has[pairs[:, 1]], -1.0, 0.0))[None, :].repeat(_n(Xte), 0)
    if present.size >= 2:
        f = np.asarray(solve_multiclass(Xtr, ytr, strategy="ovo", **kw).decision_function(Xte))
        col = {(int(where[i]), int(where[j])): c for c, (i, j) in enumerate(class_pairs(present.size))}
        for p, (i, j) in enumerate(pairs):
            if (int(i), int(j)) in col:
                out[:, p] = f[:, col[int(i), int(j)]]
    return out


def _n(X):
    return X.shape[0] if hasattr(X, "shape") else len(X)


# ------------------------------------------------------------------------- prediction
def predict_proba(model, platt: Platt, X, decision=None):
    """(n, K) class probabilities, columns in the order of ``model.classes``; ``decision`` (the model's
    decision values for X) when already computed."""
    f = np.asarray(model.decision_function(X) if decision is None else decision, np.float64)
    if platt.kind == "binary":
        p1 = np.clip(sigmoid_predict(f.ravel(), platt.A, platt.B), MIN_PROB, 1.0 - MIN_PROB)
        return np.stack([1.0 - p1, p1], axis=1)
    if platt.kind == "ovr":
        q = np.clip(sigmoid_predict(f, platt.A[None, :], platt.B[None, :]), MIN_PROB, 1.0 - MIN_PROB)
        return q / q.sum(axis=1, keepdims=True)
    K = np.asarray(model.classes).size
    pairs = class_pairs(K)
    r = np.clip(sigmoid_predict(f, platt.A[None, :], platt.B[None, :]), MIN_PROB, 1.0 - MIN_PROB)
    if K == 2:
        return np.stack([r[:, 0], 1.0 - r[:, 0]], axis=1)
    R = np.zeros((f.shape[0], K, K))
    R[:, pairs[:, 0], pairs[:, 1]] = r
    R[:, pairs[:, 1], pairs[:, 0]] = 1.0 - r
    return pairwise_coupling(R)
