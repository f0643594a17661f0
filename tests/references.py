"""Independent references for the Section-1 objective, computed with peers in float64."""
from functools import lru_cache

import jax
import jax.numpy as jnp
import numpy as np
import scipy.sparse as sp
from scipy.optimize import minimize

import svmopt
from conftest import data_path

N_FEATURES = {"a9a": 123, "a9a.t": 123, "a1a": 123, "a5a": 123}


@lru_cache(maxsize=None)
def load(name):
    return svmopt.load_svmlight(data_path(name), n_features=N_FEATURES.get(name))


def pm(y):
    """±1 labels with the larger original label as +1 (svmopt's convention)."""
    return np.where(y == np.max(y), 1.0, -1.0)


def objective(X, y, w, b, C, p, bias_regularized=False):
    """R(w) + C sum (1 - y(Xw + b))_+^p in float64, numpy only."""
    m = pm(y) * (X @ w + b)
    reg = 0.5 * (w @ w + (b * b if bias_regularized else 0.0))
    return reg + C * np.sum(np.maximum(1.0 - m, 0.0) ** p)


@lru_cache(maxsize=None)
def linearsvc(name, p, C=1.0, bias=1.0):
    """LIBLINEAR dual CD through scikit-learn's LinearSVC (same code, higher pass cap).

    bias=None: no intercept; bias=s: LIBLINEAR's -B s bias feature (b regularized).
    Returns (objective, w, b, model).
    """
    import warnings

    from sklearn.svm import LinearSVC

    X, y = load(name)
    loss = {1: "hinge", 2: "squared_hinge"}[p]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # seeded coordinate order (unseeded it came from numpy's global generator: the reference
        # depended on what ran before it in the worker)
        m = LinearSVC(loss=loss, dual=True, tol=1e-7, max_iter=200000, C=C, fit_intercept=bias is not None,
                      intercept_scaling=bias or 1.0, random_state=0).fit(X, pm(y))
    w = m.coef_.ravel().astype(float)
    b = float(m.intercept_[0]) if bias is not None else 0.0
    # LIBLINEAR regularizes the bias weight w_B = b / s
    reg_b = (b / bias) if bias is not None else 0.0
    obj = objective(X, y, w, b, C, p) + 0.5 * reg_b * reg_b
    return obj, w, b, m


def lbfgs(X, y, p, C=1.0, fit_intercept=True):
    """Float64 L-BFGS-B on the Lp-hinge primal (differentiable for p > 1)."""
    yy = pm(y)
    n, d = X.shape

    def fg(z):
        w, b = z[:d], (z[d] if fit_intercept else 0.0)
        r = np.maximum(1.0 - yy * (X @ w + b), 0.0)
        f = 0.5 * w @ w + C * np.sum(r ** p)
        u = -C * p * yy * r ** (p - 1.0)
        g = np.concatenate([w + X.T @ u, [u.sum()] if fit_intercept else []])
        return f, g

    z0 = np.zeros(d + (1 if fit_intercept else 0))
    res = minimize(fg, z0, jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-10})
    return res.fun, res.x[:d], (res.x[d] if fit_intercept else 0.0)


def dual_certificate(X, y, alpha, C, p, fit_intercept=True):
    """Dual objective of a feasible alpha, recomputed in numpy (p in {1, 2})."""
    yy = pm(y)
    assert np.all(alpha >= -1e-12)
    if p == 1:
        assert np.all(alpha <= C * (1 + 1e-12))
    if fit_intercept:
        assert abs(alpha @ yy) <= 1e-8 * max(1.0, alpha.sum())
    v = X.T @ (alpha * yy) if not sp.issparse(X) else X.T @ (alpha * yy)
    quad = 0.0 if p == 1 else np.sum(alpha ** 2) / (4.0 * C)
    return alpha.sum() - quad - 0.5 * v @ v


def free_intercept_gap(X, y, r, C, p):
    """(P, D) of a free-intercept result ``r``, both in numpy float64: P from its (w, b), D from its alpha
    (``dual_certificate``: the box and y^T alpha = 0 checked) after evening the class sums as
    dual_newton does (float32 leaves y^T alpha at its rounding)."""
    yy = pm(y)
    alpha = np.asarray(r.extras["alpha"], float)[: X.shape[0]]
    pos, neg = alpha[yy > 0].sum(), alpha[yy < 0].sum()
    alpha = alpha * np.where(yy > 0, min(1.0, neg / pos), min(1.0, pos / neg))
    return objective(X, yy, np.asarray(r.w, float), float(r.b), C, p), dual_certificate(X, yy, alpha, C, p)


def _loss_parts(name, p=None):
    """value, first and second derivative of a smooth loss of the margin (numpy)."""
    if name == "squared_hinge":
        return (lambda m: np.maximum(1 - m, 0) ** 2, lambda m: -2 * np.maximum(1 - m, 0),
                lambda m: 2.0 * (m < 1))
    if name == "logistic":
        sig = lambda t: 0.5 * (1 + np.tanh(0.5 * t))  # noqa: E731
        return (lambda m: np.logaddexp(0, -m), lambda m: -sig(-m), lambda m: sig(m) * sig(-m))
    if name == "lp":
        return (lambda m: np.maximum(1 - m, 0) ** p, lambda m: -p * np.maximum(1 - m, 0) ** (p - 1),
                lambda m: p * (p - 1) * np.where(m < 1, np.maximum(1 - m, 1e-300) ** (p - 2), 0.0))
    raise ValueError(name)


def newton(X, y, loss, C=1.0, s=None, p=None, fit_intercept=True, iters=200):
    """High-precision float64 (w, b) of the l2-regularized smooth-loss SVM by damped Newton.

    y in {-1, +1}; b unregularized. Converges to machine precision (an independent reference
    for finite differences of the solution)."""
    X = X.toarray() if sp.issparse(X) else np.asarray(X, float)
    n, d = X.shape
    s = np.ones(n) if s is None else np.asarray(s, float)
    val, d1, d2 = _loss_parts(loss, p)
    Z = np.hstack([X, np.ones((n, 1))]) if fit_intercept else X
    reg = np.ones(Z.shape[1])
    if fit_intercept:
        reg[-1] = 0.0
    z = np.zeros(Z.shape[1])

    def obj(z):
        return 0.5 * np.sum(reg * z * z) + C * np.sum(s * val(y * (Z @ z)))

    for _ in range(iters):
        m = y * (Z @ z)
        g = reg * z + Z.T @ (C * s * y * d1(m))
        if np.linalg.norm(g) <= 1e-15 * max(1.0, np.linalg.norm(z)):
            break
        H = np.diag(reg) + (Z * (C * s * d2(m))[:, None]).T @ Z + 1e-300
        step = np.linalg.solve(H, -g)
        t, f0 = 1.0, obj(z)
        while obj(z + t * step) > f0 + 1e-4 * t * (g @ step) and t > 1e-12:
            t *= 0.5
        z = z + t * step
    return (z[:-1], z[-1]) if fit_intercept else (z, 0.0)


def scipy_primal(X, y, loss, reg, C=1.0):
    """Float64 optimum of  reg(w) + C sum_i loss(y_i (x_i.w + b))  (free intercept) by scipy alone:
    an independent reference where the regularizer has an l1 part (l1, elastic_net) or the loss a
    kink (the hinge), which svmopt's float64 methods may not certify tightly. The l1 part is split,
    w = p - q with p, q >= 0 (the rest of the regularizer, reg(w) - rho ||w||_1, is smooth); the
    hinge becomes slack variables xi_i >= 1 - y_i (x_i.w + b), xi >= 0. Smooth losses: L-BFGS-B
    over (p, q, b); the hinge: SLSQP over (p, q, b, xi). Returns the objective recomputed at the
    solution (w = p - q) with svmopt's own loss and regularizer values."""
    X, yy = np.asarray(X, np.float64), pm(y)
    n, d = X.shape
    rho = {"l1": 1.0, "elastic_net": float(reg.params["ratio"]) if reg.name == "elastic_net" else 0.0}
    rho = rho.get(reg.name, 0.0)
    smooth = jax.jit(jax.value_and_grad(lambda w: reg.value(w) - rho * jnp.sum(jnp.abs(w))))
    free = (None, None) if rho == 0 else (0.0, None)  # without an l1 part w = p, q fixed at 0
    qb = (0.0, 0.0) if rho == 0 else (0.0, None)

    def wsplit(z):
        return z[:d] - z[d:2 * d], z[2 * d]

    def reg_part(z):
        f, g = smooth(jnp.asarray(z[:d] - z[d:2 * d]))
        g = np.asarray(g)
        return float(f) + rho * np.sum(z[:2 * d]), np.concatenate([g + rho, -g + rho])

    if loss.name == "hinge":
        def fun(z):
            f, g = reg_part(z)
            return f + C * np.sum(z[2 * d + 1:]), np.concatenate([g, [0.0], np.full(n, C)])

        # xi_i - 1 + y_i (x_i.(p - q) + b) >= 0
        A = np.hstack([yy[:, None] * X, -yy[:, None] * X, yy[:, None], np.eye(n)])
        cons = {"type": "ineq", "fun": lambda z: A @ z - 1.0, "jac": lambda z: A}
        z0 = np.concatenate([np.zeros(2 * d + 1), np.ones(n)])
        res = minimize(fun, z0, jac=True, method="SLSQP", constraints=[cons],
                       bounds=[free] * d + [qb] * d + [(None, None)] + [(0.0, None)] * n,
                       options={"maxiter": 5000, "ftol": 1e-15})
    else:
        value_grad = jax.jit(jax.value_and_grad(lambda m: C * jnp.sum(loss.value(m))))

        def fun(z):
            f, g = reg_part(z)
            w, b = wsplit(z)
            lv, lg = value_grad(jnp.asarray(yy * (X @ w + b)))
            u = yy * np.asarray(lg)
            xu = X.T @ u
            return f + float(lv), np.concatenate([g + np.concatenate([xu, -xu]), [u.sum()]])

        res = minimize(fun, np.zeros(2 * d + 1), jac=True, method="L-BFGS-B",
                       bounds=[free] * d + [qb] * d + [(None, None)],
                       options={"maxiter": 50000, "maxcor": 30, "ftol": 1e-15, "gtol": 1e-11})
    w, b = wsplit(res.x)
    return float(reg.value(jnp.asarray(w))) + C * float(jnp.sum(loss.value(jnp.asarray(yy * (X @ w + b)))))


def lp_primal(X, y, w, b, C):
    return np.abs(w).sum() + C * np.maximum(1.0 - y * (X @ w + b), 0.0).sum()


@lru_cache(maxsize=None)
def lp_svm(name, C, fit_intercept=True):
    """The LP-SVM's optimum on a shared set (``lp_optimum``)."""
    X, y = load(name)
    return lp_optimum(X, pm(y), C, fit_intercept)


def lp_optimum(X, y, C, fit_intercept=True):
    """min ||w||_1 + C sum_i xi_i  s.t. y_i (x_i.w + b) >= 1 - xi_i, xi >= 0, solved by HiGHS (float64)."""
    from scipy.optimize import linprog

    X = sp.csr_matrix(X, dtype=np.float64)
    n, d = X.shape
    YX = sp.diags(y) @ X
    # variables [u (d), v (d), b (1), xi (n)], w = u - v
    A = sp.hstack([-YX, YX, -y[:, None] * (1.0 if fit_intercept else 0.0), -sp.eye(n)], format="csr")
    c = np.concatenate([np.ones(2 * d), [0.0], C * np.ones(n)])
    bounds = [(0, None)] * (2 * d) + [(None, None) if fit_intercept else (0, 0)] + [(0, None)] * n
    res = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=bounds, method="highs",
                  options=dict(primal_feasibility_tolerance=1e-10, dual_feasibility_tolerance=1e-10))
    assert res.status == 0, res.message
    return float(res.fun)
