"""A certificate for the LP-SVM (hinge loss, l1 regularizer) from a primal point.

The problem  min ||w||_1 + C sum_i s_i (1 - y_i (x_i.w + b))_+  is a linear program; its dual is

    max sum_i alpha_i   s.t.  0 <= alpha_i <= C s_i,  |X^T (alpha o y)|_j <= 1 for every j
                              (and y^T alpha = 0 with a free intercept b).

A primal method (alm, nesvm, homotopy_nesvm) reaches a w within ~1e-4 of the optimum on such a
problem, but its dual candidates (multipliers of the loss, scaled into the l_inf ball) stay far from
this LP's optimum, so the run ends uncertified: on a1a at C = 1 alm's own gap was 5e-2 where its w was
1.4e-4 from the optimum (bench.certify). Near the optimum, w says which constraints are active
(complementary slackness): a row whose margin is clearly below 1 has alpha_i = C s_i, one clearly
above has alpha_i = 0, and only the rows near the margin are free. The LP in those rows alone (their
count of variables, d two-sided constraints) is small, and HiGHS (``scipy.optimize.linprog``) solves
it exactly on the host. Its solution, made exactly feasible for the whole dual (the class with the
larger sum scaled down, then everything into the l_inf ball), is a dual point: its objective bounds the
optimum from below whichever rows were fixed, so the gap against w's primal objective (both in float64)
certifies the result or not. A wrong guess of the active set costs tightness, never validity.

``certify`` tries margins 1 +- delta for growing delta until the gap is within tol; the LP's size is
capped (``MAX_ENTRIES`` stored entries in the free rows) and each LP is stopped by HiGHS after
``SECONDS``. The stage runner (``svmopt.stages``) calls it for a hinge + l1 run that ended without a
certificate (eager calls; a traced solve has no host step).
"""
from __future__ import annotations

import threading
import time

import numpy as np
import scipy.sparse as sp

from .operators import BiasColumn, DenseOperator, SparseOperator
from .problem import Problem

__all__ = ["applies", "certify", "DELTAS", "MAX_ENTRIES", "SECONDS"]

DELTAS = (0.01, 0.03, 0.1, 0.3, 1.0)
"""The margin bands |y_i f_i - 1| <= delta whose rows are the LP's variables, tried in turn. On a1a
(C = 0.01, 1, 100) alm / nesvm / homotopy_nesvm certified from delta = 0.01-0.03 where the LP was feasible;
a band too narrow fixes a row at C that the optimum leaves inside the box and the LP is infeasible."""
MAX_ENTRIES = 2_000_000
"""The most stored entries of X the free rows may hold (the LP's constraint matrix): a wider band is
not tried."""
SECONDS = 2.0
"""The default time for one ``certify`` call (its LPs share it: HiGHS's time limit is what is left)."""
BLOCK = 8192
"""Rows per block where a float64 product reads a float32 X (no float64 copy of X)."""


def applies(pb: Problem) -> bool:
    """Static: is ``pb`` an LP-SVM (the hinge loss, the l1 regularizer, a linear model)?"""
    return pb.kernel is None and pb.loss.name == "hinge" and pb.reg.name == "l1"


def _host_matrix(op):
    """X of the operator on the host (scipy CSR, or a numpy array), or None for one it cannot read
    (row-sharded, matrix-free)."""
    if isinstance(op, BiasColumn):
        base = _host_matrix(op.base)
        if base is None:
            return None
        col = np.full((base.shape[0], 1), float(np.asarray(op.bias)), base.dtype)
        return sp.hstack([sp.csr_matrix(base), col], format="csr")
    if isinstance(op, SparseOperator):
        indptr = np.asarray(op.indptr)
        end = int(indptr[-1])
        return sp.csr_matrix((np.asarray(op.data)[:end], np.asarray(op.indices)[:end], indptr), shape=op.shape)
    if isinstance(op, DenseOperator):
        return np.asarray(op.X)
    return None


def _matvec(X, w):
    """X w in float64, a block of rows at a time."""
    return np.concatenate([np.asarray(X[i:i + BLOCK] @ w, np.float64).ravel()
                           for i in range(0, X.shape[0], BLOCK)] or [np.zeros(0)])


def _rmatvec(X, u):
    """X^T u in float64, a block of rows at a time (rows with u_i = 0 skipped)."""
    out = np.zeros(X.shape[1])
    for i in range(0, X.shape[0], BLOCK):
        part = u[i:i + BLOCK]
        if np.any(part):
            out += np.asarray(X[i:i + BLOCK].T @ part, np.float64).ravel()
    return out


def _feasible(alpha, X, y, free_b: bool):
    """alpha made exactly feasible for the whole dual: the class with the larger sum scaled down to the
    other's (y^T alpha = 0), then everything into the l_inf ball (with a margin for the rounding of the
    product)."""
    if free_b:
        pos, neg = alpha[y > 0].sum(), alpha[y < 0].sum()
        if pos > neg:
            alpha = np.where(y > 0, alpha * (neg / pos), alpha)
        elif neg > pos:
            alpha = np.where(y < 0, alpha * (pos / neg), alpha)
    v = np.max(np.abs(_rmatvec(X, alpha * y)), initial=0.0)
    return alpha / (max(1.0, v) * (1 + 64 * np.finfo(np.float64).eps))


def _scipy_linprog():
    """scipy.optimize.linprog, imported on first use (a third of a second that ``import svmopt`` does not pay)."""
    from scipy.optimize import linprog

    return linprog


def _linprog(c, A_ub, b_ub, A_eq, b_eq, bounds, seconds):
    """scipy's HiGHS in a worker thread: the caller's thread waits in short slices, so Ctrl-C stops
    the solve at once (the LP itself ends within ``seconds``, unobserved)."""
    linprog = _scipy_linprog()
    box: dict = {}

    def work():
        try:
            box["res"] = linprog(c, A_ub=A_ub, b_ub=b_ub, A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs",
                                 options={"time_limit": seconds})
        except Exception as exc:  # noqa: BLE001  (a failed LP only means no certificate)
            box["error"] = exc

    t = threading.Thread(target=work, name="svmopt-lp-certificate", daemon=True)
    t.start()
    while t.is_alive():
        t.join(0.05)
    return box.get("res")


def certify(pb: Problem, w, b, tol: float, seconds: float = SECONDS):
    """A dual point for the LP-SVM ``pb`` near the primal point (w, b), or None.

    Returns dict(primal, dual, alpha, rows, delta, seconds): w's primal objective and the best dual
    objective found (float64), its dual point (n,), the LP's free rows and band; the gap is within
    ``tol`` when the bands allowed it (the last band tried otherwise). None where X cannot be read on
    the host or no band gave a feasible LP within ``seconds`` (wider bands are not tried after them)."""
    _scipy_linprog()  # (its first import is not the LPs' time)
    t0 = time.perf_counter()
    X = _host_matrix(pb.op)
    if X is None:
        return None
    y, cs = np.asarray(pb.y, np.float64), np.asarray(pb.cs, np.float64)
    w, b = np.asarray(w, np.float64).ravel(), float(np.asarray(b, np.float64))
    if not (np.all(np.isfinite(w)) and np.isfinite(b)):
        return None
    f = _matvec(X, w) + b
    live = cs > 0
    margin = y * f
    primal = float(np.abs(w).sum() + np.sum(cs * np.maximum(0.0, 1.0 - margin)))
    free_b = bool(pb.fit_intercept)
    row_nnz = np.diff(X.indptr) if sp.issparse(X) else np.full(X.shape[0], X.shape[1])
    best, last = None, None
    for delta in DELTAS:
        left = seconds - (time.perf_counter() - t0)
        if left <= 0:
            break
        free = live & (np.abs(margin - 1.0) <= delta)
        if last is not None and np.array_equal(free, last):
            continue
        last = free
        if int(row_nnz[free].sum()) > MAX_ENTRIES:
            break
        fixed = np.where(live & (margin < 1.0 - delta), cs, 0.0)
        g = _rmatvec(X, fixed * y)
        idx = np.flatnonzero(free)
        alpha = fixed.copy()
        if idx.size:
            Xf = sp.csr_matrix(X[idx]).multiply(y[idx][:, None]).T.tocsr()  # d x |free|, the columns y_i x_i
            A_ub = sp.vstack([Xf, -Xf]).tocsr()
            b_ub = np.concatenate([1.0 - g, 1.0 + g])
            eq = dict(A_eq=y[idx][None, :], b_eq=np.array([-float(fixed @ y)])) if free_b else dict(A_eq=None,
                                                                                                     b_eq=None)
            bounds = np.column_stack([np.zeros(idx.size), cs[idx]])
            res = _linprog(-np.ones(idx.size), A_ub, b_ub, eq["A_eq"], eq["b_eq"], bounds, left)
            if res is None or res.x is None or res.status not in (0, 1):  # 1: the time limit, with a point
                continue
            alpha[idx] = np.clip(res.x, 0.0, cs[idx])
        alpha = _feasible(alpha, X, y, free_b)
        dual = float(alpha.sum())
        if best is None or dual > best["dual"]:
            best = dict(primal=primal, dual=dual, alpha=alpha, rows=int(idx.size), delta=delta)
        if (primal - best["dual"]) <= tol * abs(primal):
            break
    if best is not None:
        best["seconds"] = time.perf_counter() - t0
    return best
