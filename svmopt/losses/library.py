"""The losses svmopt ships, as functions of the margin m = y (w.x + b)."""
from __future__ import annotations

import math

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .. import smoothing
from .base import DualDescription, Loss, LossFamily, prox_newton

__all__ = [
    "hinge",
    "squared_hinge",
    "lp_hinge",
    "smoothed_hinge",
    "least_squares",
    "logistic",
    "epsilon_insensitive",
    "squared_epsilon_insensitive",
    "squared_error",
    "one_class",
    "from_function",
]


def _relu(x):
    return jnp.maximum(x, 0.0)


# ---------------------------------------------------------------- smoothed hinge
def _sh_mu(params):
    # per-sample smoothing mu * ||x_i||_inf once bound to data, mu before
    return params["mu"] * params.get("kappa", 1.0)


def _sh_prox(params, v, gamma):
    # Closed form of the prox of the piecewise (linear / quadratic / zero) smoothed hinge.
    mu = _sh_mu(params)
    m_quad = (mu * v + gamma) / (mu + gamma)  # stationary point on the quadratic piece
    m_lin = v + gamma  # on the linear piece (1 - m >= mu)
    return jnp.where(v >= 1.0, v, jnp.where(m_quad >= 1.0 - mu, m_quad, m_lin))


_SMOOTHED_HINGE = LossFamily(
    name="smoothed_hinge",
    value=lambda p, m: smoothing.smoothed_hinge_value(m, _sh_mu(p)),
    derivative=lambda p, m: smoothing.smoothed_hinge_derivative(m, _sh_mu(p)),
    prox=_sh_prox,
    curvature=lambda p: 1.0 / _sh_mu(p),
    smooth=True,
    dual=DualDescription(
        lower=0.0, upper=1.0, dual_value=lambda p, a: a - 0.5 * _sh_mu(p) * a * a, quad=lambda p: 0.5 * _sh_mu(p)
    ),
    describe=lambda p: f"mu={p['mu']}",
    bind=lambda p, row_inf: {**p, "kappa": row_inf},
)


def smoothed_hinge(mu: float = 5.0, per_sample: bool = True) -> Loss:
    """NESVM's smoothed hinge (eq. 10): max_{u in [0,1]} u (1 - m) - mu_i/2 u^2.

    With ``per_sample=True`` (the paper's choice) mu_i = mu * ||x_i||_inf, attached
    when a solver binds the loss to the data; otherwise mu_i = mu. Default mu = 5
    as in the paper's experiments. Under-approximates the hinge by <= mu_i / 2
    (Theorem 1).
    """
    if isinstance(mu, (int, float)) and not mu > 0:  # traced mu (homotopy, vmap) is the caller's
        raise ValueError(f"smoothed_hinge needs mu > 0, got {mu}")
    fam = _SMOOTHED_HINGE if per_sample else _SMOOTHED_HINGE_PLAIN
    return Loss(fam, {"mu": jnp.asarray(mu)})


_SMOOTHED_HINGE_PLAIN = LossFamily(**{**_SMOOTHED_HINGE.__dict__, "name": "smoothed_hinge_plain", "bind": None})


# ---------------------------------------------------------------- hinge (p = 1)
def _hinge_prox(params, v, gamma):
    # eq. 12 of SVM-ALM, written in the margin: move right by gamma, stop at the kink.
    return jnp.where(v >= 1.0, v, jnp.minimum(v + gamma, 1.0))


_HINGE = LossFamily(
    name="hinge",
    value=lambda p, m: _relu(1.0 - m),
    derivative=lambda p, m: jnp.where(m < 1.0, -1.0, 0.0).astype(jnp.result_type(m)),
    prox=_hinge_prox,
    smooth=False,
    smoothed=lambda p, mu: smoothed_hinge(mu),
    dual=DualDescription(lower=0.0, upper=1.0, dual_value=lambda p, a: a, quad=lambda p: 0.0),
    kink=1.0,
)
hinge = Loss(_HINGE, {})
"""(1 - m)_+, the L1-loss SVM. Dual: box [0, C], no diagonal."""


# ---------------------------------------------------------------- squared hinge (p = 2)
_SQUARED_HINGE = LossFamily(
    name="squared_hinge",
    value=lambda p, m: _relu(1.0 - m) ** 2,
    derivative=lambda p, m: -2.0 * _relu(1.0 - m),
    # eq. 13 of SVM-ALM in the margin: shrink the distance to the kink by 1 + 2 gamma
    prox=lambda p, v, gamma: jnp.where(v >= 1.0, v, (v + 2.0 * gamma) / (1.0 + 2.0 * gamma)),
    curvature=lambda p: 2.0,
    smooth=True,
    dual=DualDescription(lower=0.0, upper=math.inf, dual_value=lambda p, a: a - 0.25 * a * a, quad=lambda p: 0.25),
)
squared_hinge = Loss(_SQUARED_HINGE, {})
"""(1 - m)_+^2, the L2-loss SVM. Dual: alpha >= 0 with D_ii = 1/(2C)."""


# ---------------------------------------------------------------- Lp hinge, any real p >= 1
def _lp_value(p, m):
    r = _relu(1.0 - m)
    return jnp.where(r > 0, jnp.where(r > 0, r, 1.0) ** p["p"], 0.0)


def _lp_derivative(p, m):
    r = _relu(1.0 - m)
    safe = jnp.where(r > 0, r, 1.0)  # no inf * 0 in derivatives of the unused branch
    return -p["p"] * jnp.where(r > 0, safe ** (p["p"] - 1.0), 0.0)


def _lp_prox(params, v, gamma, iters: int = 60):
    """eq. 11 of SVM-ALM in the margin: for v < 1 solve r + gamma p r^(p-1) = a, a = 1 - v > 0.

    The left side is increasing, so the root is unique. Newton is run on a variable in
    which the equation is convex (u = r^(p-1) when p < 2, r itself when p > 2), started
    above the root: the iterates then decrease monotonically to it, with no bracketing.
    """
    p = params["p"]
    a = jnp.maximum(1.0 - v, 0.0)
    gp = gamma * p
    tiny = jnp.finfo(jnp.result_type(v)).tiny
    small_p = p < 2.0
    q = jnp.where(small_p, 1.0 / (p - 1.0), p - 1.0)  # exponent of the convex term
    c1 = jnp.where(small_p, gp, 1.0)  # phi(x) = x^q * c0 + c1 x - a with c0 = 1 or gp
    c0 = jnp.where(small_p, 1.0, gp)
    # start above the root: both terms are >= 0, so x* <= a / c1 and x* <= (a / c0)^(1/q)
    x0 = jnp.minimum(a / c1, (a / c0) ** (1.0 / q))

    eps = jnp.finfo(jnp.result_type(v)).eps

    def body(c):
        x, k, _ = c
        xs = jnp.maximum(x, tiny)
        xq1 = xs ** (q - 1.0)
        phi = c0 * xq1 * xs + c1 * xs - a
        x_new = jnp.maximum(xs - phi / (c0 * q * xq1 + c1), 0.0)
        moving = jnp.any(x - x_new > 4 * eps * x)  # monotone: steps only go down
        return x_new, k + 1, moving

    x, _, _ = lax.while_loop(lambda c: c[2] & (c[1] < iters), body, (x0, 0, jnp.asarray(True)))
    r = jnp.where(small_p, x ** q, x)
    return jnp.where(v >= 1.0, v, 1.0 - r)


def _lp_dual_value(params, a):
    # -l*(-a) = a - (p-1) (a/p)^(p/(p-1)) for a >= 0 (conjugate of r_+^p)
    p = params["p"]
    return a - (p - 1.0) * (a / p) ** (p / (p - 1.0))


_LP_HINGE = LossFamily(
    name="lp_hinge",
    value=_lp_value,
    derivative=_lp_derivative,
    prox=_lp_prox,
    smooth=False,  # for 1 < p < 2 the derivative is continuous but not Lipschitz
    differentiable=True,
    smoothed=lambda p, mu: _moreau(Loss(_LP_HINGE, p), mu),
    dual=DualDescription(lower=0.0, upper=math.inf, dual_value=_lp_dual_value),
    describe=lambda p: f"p={float(p['p']):g}",
)


def lp_hinge(p: float) -> Loss:
    """(1 - m)_+^p for any real p >= 1 (SVM-ALM's Lp-primal SVM).

    p = 1 and p = 2 return ``hinge`` and ``squared_hinge`` (closed-form prox, eq. 12-13);
    other p use a monotone 1-D root finder for the prox (eq. 11).

    A traced p (``jax.vmap(lambda p: svmopt.solve(..., loss=lp_hinge(p)))(ps)``, or ``jax.grad``
    with respect to p) gives the general family, valid for p > 1 (the hinge, p = 1, has a
    kink that no smooth family describes).
    """
    if isinstance(p, jax.core.Tracer):
        return Loss(_LP_HINGE, {"p": p})
    try:
        p = float(p)
    except TypeError as exc:
        raise TypeError(f"lp_hinge needs a real p >= 1, got {p!r}") from exc
    if not (p >= 1.0) or not math.isfinite(p):
        raise ValueError(f"lp_hinge needs p >= 1 (a convex loss), got p = {p}")
    if p == 1.0:
        return hinge
    if p == 2.0:
        return squared_hinge
    return Loss(_LP_HINGE, {"p": jnp.asarray(p)})


# ---------------------------------------------------------------- least squares
_LEAST_SQUARES = LossFamily(
    name="least_squares",
    value=lambda p, m: (1.0 - m) ** 2,
    derivative=lambda p, m: -2.0 * (1.0 - m),
    prox=lambda p, v, gamma: (v + 2.0 * gamma) / (1.0 + 2.0 * gamma),
    curvature=lambda p: 2.0,
    smooth=True,
    dual=DualDescription(
        lower=-math.inf, upper=math.inf, dual_value=lambda p, a: a - 0.25 * a * a, quad=lambda p: 0.25
    ),
)
least_squares = Loss(_LEAST_SQUARES, {})
"""(1 - m)^2 = (y - f)^2 for y in {-1, +1}: LS-SVM. Dual: unbounded alpha, D_ii = 1/(2C)."""


# ---------------------------------------------------------------- regression: losses of the residual
# A regression row has y = 1, so its margin is the score m = f; the loss measures m against the
# row's target t (params["t"], attached by ``Loss.with_targets``) with a tube of half-width eps.
def _over(p, m):
    return jnp.abs(m - p["t"]) - p["eps"]  # > 0 outside the tube


def _ei_prox(p, v, gamma):
    # gamma (|m - t| - eps)_+ + (m - v)^2 / 2: move towards the tube by gamma, stop at its edge
    t, e = p["t"], p["eps"]
    return jnp.where(v > t + e, jnp.maximum(v - gamma, t + e), jnp.where(v < t - e, jnp.minimum(v + gamma, t - e), v))


def _sei_prox(p, v, gamma):
    # gamma (|m - t| - eps)_+^2 + (m - v)^2 / 2: shrink the distance to the tube's edge by 1 + 2 gamma
    t, e = p["t"], p["eps"]
    up, down = t + e, t - e
    return jnp.where(v > up, (v + 2.0 * gamma * up) / (1.0 + 2.0 * gamma),
                     jnp.where(v < down, (v + 2.0 * gamma * down) / (1.0 + 2.0 * gamma), v))


_EPS_INSENSITIVE = LossFamily(
    name="epsilon_insensitive",
    value=lambda p, m: _relu(_over(p, m)),
    derivative=lambda p, m: jnp.where(_over(p, m) > 0, jnp.sign(m - p["t"]), 0.0).astype(jnp.result_type(m)),
    prox=_ei_prox,
    smooth=False,
    smoothed=lambda p, mu: _moreau(Loss(_EPS_INSENSITIVE, p), mu),
    # -l*(-a) = t a - eps |a| on [-1, 1]: LIBLINEAR's L1-loss SVR dual (-s 13)
    dual=DualDescription(lower=-1.0, upper=1.0, dual_value=lambda p, a: p["t"] * a - p["eps"] * jnp.abs(a),
                         quad=lambda p: 0.0, linear=lambda p: p["t"], l1=lambda p: p["eps"]),
    describe=lambda p: f"epsilon={float(p['eps']):g}",
    target=True,
)

_SQ_EPS_INSENSITIVE = LossFamily(
    name="squared_epsilon_insensitive",
    value=lambda p, m: _relu(_over(p, m)) ** 2,
    derivative=lambda p, m: 2.0 * jnp.sign(m - p["t"]) * _relu(_over(p, m)),
    prox=_sei_prox,
    curvature=lambda p: 2.0,
    smooth=True,
    # -l*(-a) = t a - eps |a| - a^2 / 4, a free: LIBLINEAR's L2-loss SVR dual (-s 12)
    dual=DualDescription(lower=-math.inf, upper=math.inf,
                         dual_value=lambda p, a: p["t"] * a - p["eps"] * jnp.abs(a) - 0.25 * a * a,
                         quad=lambda p: 0.25, linear=lambda p: p["t"], l1=lambda p: p["eps"]),
    describe=lambda p: f"epsilon={float(p['eps']):g}",
    target=True,
)


def _epsilon(epsilon):
    if isinstance(epsilon, jax.core.Tracer):
        return epsilon
    try:
        e = float(epsilon)
    except (TypeError, ValueError):
        raise TypeError(f"epsilon (the half-width of the insensitive tube) must be a number >= 0, got {epsilon!r}") \
            from None
    if not (math.isfinite(e) and e >= 0):
        raise ValueError(f"epsilon (the half-width of the insensitive tube) must be finite and >= 0, got {epsilon!r}")
    return jnp.asarray(e)


def epsilon_insensitive(epsilon: float = 0.1) -> Loss:
    """(|t - f| - epsilon)_+, the epsilon-insensitive loss of support vector regression (L1-loss SVR:
    LIBLINEAR's -s 13 and, dual, -s 3 of LIBSVM; default epsilon 0.1 as LIBLINEAR's -p and
    scikit-learn's SVR). A loss of the residual: ``svmopt.solve(X, t, loss=epsilon_insensitive(0.1))``
    takes real targets t. Dual: alpha in [-C s_i, C s_i], sum_i t_i alpha_i - epsilon |alpha_i|."""
    return Loss(_EPS_INSENSITIVE, {"eps": _epsilon(epsilon)})


def squared_epsilon_insensitive(epsilon: float = 0.0) -> Loss:
    """(|t - f| - epsilon)_+^2, the L2-loss SVR (LIBLINEAR's -s 11 primal, -s 12 dual; default
    epsilon 0, LIBLINEAR's and scikit-learn's LinearSVR default). Twice differentiable (generalized
    at the tube's edges): newton solves it. Dual: alpha free, D_ii = 1/(2 C s_i)."""
    return Loss(_SQ_EPS_INSENSITIVE, {"eps": _epsilon(epsilon)})


squared_error = Loss(_SQ_EPS_INSENSITIVE, {"eps": jnp.asarray(0.0)})
"""(t - f)^2: least squares regression (ridge with R = l2; LS-SVM's regression face). The same family
as ``squared_epsilon_insensitive`` with epsilon = 0."""


# ---------------------------------------------------------------- one-class
_ONE_CLASS = LossFamily(
    name="one_class",
    value=lambda p, m: _relu(-m),
    derivative=lambda p, m: jnp.where(m < 0.0, -1.0, 0.0).astype(jnp.result_type(m)),
    prox=lambda p, v, gamma: jnp.where(v >= 0.0, v, jnp.minimum(v + gamma, 0.0)),
    smooth=False,
    # -l*(-a) = 0 on [0, 1]; the primal's -rho = b makes the intercept's constraint sum alpha = 1
    dual=DualDescription(lower=0.0, upper=1.0, dual_value=lambda p, a: jnp.zeros_like(a), quad=lambda p: 0.0,
                         linear=lambda p: 0.0, rhs=1.0),
)
one_class = Loss(_ONE_CLASS, {})
"""(-m)_+ with m = w.phi(x) - rho: the one-class SVM's loss (SPEC section 7; LIBSVM -s 2), whose problem
also has the term -rho = b: minimize 1/2 ||w||^2 - rho + C sum_i s_i (rho - w.phi(x_i))_+ with
C = 1/(nu sum_i s_i). Dual: 0 <= alpha_i <= C s_i, sum_i alpha_i = 1 (``DualDescription.rhs``). Solved by
``svmopt.solve_oneclass``; ``svmopt.solve`` refuses it (its problems have no term in b alone)."""


# ---------------------------------------------------------------- logistic
def _xlogx(x):
    return jnp.where(x > 0, x * jnp.log(jnp.where(x > 0, x, 1.0)), 0.0)


_LOGISTIC = LossFamily(
    name="logistic",
    value=lambda p, m: jnp.logaddexp(0.0, -m),
    derivative=lambda p, m: -jax.nn.sigmoid(-m),
    prox=lambda p, v, gamma: prox_newton(
        lambda m: -jax.nn.sigmoid(-m), lambda m: jax.nn.sigmoid(m) * jax.nn.sigmoid(-m), v, gamma
    ),
    curvature=lambda p: 0.25,
    smooth=True,
    dual=DualDescription(lower=0.0, upper=1.0, dual_value=lambda p, a: -_xlogx(a) - _xlogx(1.0 - a)),
)
logistic = Loss(_LOGISTIC, {})
"""log(1 + exp(-m)), logistic regression. Dual: entropy on [0, 1] (not box-plus-diagonal)."""


# ---------------------------------------------------------------- generic: Moreau smoothing, user losses
def _moreau(base: Loss, mu) -> Loss:
    """Smooth any loss with a prox by its Moreau envelope (Nesterov smoothing, d = u^2/2)."""
    fam = _moreau_family(base.family)
    return Loss(fam, {"base": base.params, "mu": jnp.asarray(mu)})


_MOREAU_CACHE: dict = {}


def _moreau_family(base: LossFamily) -> LossFamily:
    # one family object per base family so jitted solvers are not recompiled
    if base not in _MOREAU_CACHE:

        def prox_b(p, m, g):
            return base.prox(p["base"], m, g)

        _MOREAU_CACHE[base] = LossFamily(
            name=f"moreau_{base.name}",
            value=lambda p, m: smoothing.moreau_value(
                lambda z: base.value(p["base"], z), lambda z, g: prox_b(p, z, g), m, p["mu"]
            ),
            derivative=lambda p, m: smoothing.moreau_derivative(lambda z, g: prox_b(p, z, g), m, p["mu"]),
            curvature=lambda p: 1.0 / p["mu"],
            smooth=True,
            describe=lambda p: f"mu={p['mu']}",
        )
    return _MOREAU_CACHE[base]


def from_function(fn, name: str | None = None, *, smooth: bool | None = None, curvature: float | None = None,
                  conjugate=None, dual_box=None, box_diagonal=None) -> Loss:
    """Turn a plain ``jnp`` function of the margin into a Loss that every solver can use.

    The derivative comes from ``jax.grad``, the prox from the safeguarded Newton solver
    (valid for any convex ``fn``). What it can declare:

    curvature      sup |fn''|: marks the loss smooth (NESVM, Lipschitz steps)
    conjugate      a function a -> -l*(-a) on ``dual_box`` (lower, upper): exact duality gaps
    box_diagonal   (lower, upper, quad) when -l*(-a) = a - quad a^2 on [lower, upper]: the dual
                   that dual coordinate descent solves (the squared hinge is (0, inf, 1/4))

    Without ``conjugate`` the duality gap uses a numerical conjugate: -l*(-a) = min_m l(m) + a m
    by a bracketed Newton search on l'(m) = -a, reported as a lower bound (so the gap stays an
    upper bound) wherever the root is bracketed; ``dual_box`` defaults to the range of -l' seen
    on margins in [-1e6, 1e6]. Convexity is the caller's promise: it is checked on a grid here
    and a violation raises.
    """
    if not callable(fn):
        raise TypeError(f"from_function needs a callable of the margin, got {fn!r}")
    deriv = jax.vmap(jax.grad(fn))
    second = jax.vmap(jax.grad(jax.grad(fn)))

    def elementwise(f):
        return lambda m: f(jnp.ravel(m)).reshape(jnp.shape(m))

    grid = jnp.linspace(-5.0, 5.0, 201)
    try:
        jax.eval_shape(jax.grad(lambda m: jnp.sum(fn(m))), grid)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError) as exc:
        raise TypeError(f"loss function {name or fn} must be written with jax.numpy (jnp), not numpy or Python "
                        "branches on values: svmopt differentiates and compiles it (jax.grad, jax.jit); e.g. "
                        f"from_function(lambda m: jnp.maximum(0.0, 1.0 - m) ** 2). ({type(exc).__name__})") from None
    vals = jnp.asarray(fn(grid), dtype=float)
    if vals.shape != grid.shape:
        raise ValueError(f"loss function {name or fn} must be elementwise (same shape out as in)")
    dv = jnp.diff(jnp.asarray(deriv(grid)))
    if not bool(jnp.all(jnp.isfinite(vals))):
        raise ValueError(f"loss function {name or fn} is not finite on margins in [-5, 5]")
    if bool(jnp.any(dv < -1e-6 * (1 + jnp.abs(dv).max()))):
        raise ValueError(f"loss function {name or fn} is not convex (its derivative decreases on [-5, 5])")
    d_el, s_el = elementwise(deriv), elementwise(second)
    if box_diagonal is not None:
        lo, hi, quad = (float(v) for v in box_diagonal)
        dual = DualDescription(lo, hi, lambda p, a: a - quad * a * a, quad=lambda p: quad)
    elif conjugate is not None:
        lo, hi = dual_box if dual_box is not None else (0.0, math.inf)
        dual = DualDescription(float(lo), float(hi), lambda p, a: conjugate(a))
    else:
        if dual_box is None:
            dual_box = _derivative_range(deriv)
        dual = DualDescription(float(dual_box[0]), float(dual_box[1]),
                               lambda p, a: numeric_dual_value(lambda m: fn(m), d_el, s_el, a))
    fam = LossFamily(
        name=name or getattr(fn, "__name__", "custom"),
        value=lambda p, m: fn(m),
        derivative=lambda p, m: d_el(m),
        prox=lambda p, v, g: prox_newton(d_el, s_el, v, g),
        curvature=None if curvature is None else (lambda p: curvature),
        smooth=bool(smooth) if smooth is not None else curvature is not None,
        differentiable=True,  # jax.grad defines the derivative
        dual=dual,
    )
    fam = LossFamily(**{**fam.__dict__, "smoothed": lambda p, mu: _moreau(Loss(fam), mu)}) if fam.prox else fam
    return Loss(fam, {})


def _derivative_range(deriv):
    """(-sup l', -inf l'): where -l'(m) goes as m -> +inf and -inf, probed at |m| = 100 and 1000."""
    probe = np.asarray(deriv(jnp.asarray([100.0, 1000.0, -100.0, -1000.0])), dtype=float)
    hi_far, lo_far = -probe[3], -probe[1]
    # -l'(-m) still growing (or overflowing) far out: unbounded above (squared-type losses)
    grows = not np.isfinite(hi_far) or abs(hi_far + probe[2]) > 1e-6 * max(1.0, abs(hi_far))
    hi = math.inf if grows else float(hi_far)
    lo = float(lo_far) if np.isfinite(lo_far) else -math.inf
    return (0.0 if abs(lo) < 1e-12 else lo), hi


def numeric_dual_value(value, deriv, second, a, iters: int = 80, reach: float = 2.0 ** 30):
    """A lower bound on -l*(-a) = min_m l(m) + a m for convex l (elementwise in a).

    The minimiser solves l'(m) = -a; it is bracketed by doubling from 0, then found by Newton
    steps kept inside the bracket (bisection otherwise). With phi(m) = l(m) + a m convex and
    phi' changing sign on [lo, hi], min phi >= phi(m) - |phi'(m)| (hi - lo) for any m there: the
    value returned, so a duality gap built from it stays an upper bound. Without a sign change
    within |m| <= ``reach`` the infimum is a limit; phi(+-reach) is returned there.
    """
    a = jnp.asarray(a)
    g = lambda m: deriv(m) + a  # noqa: E731  (phi', non-decreasing)
    zero = jnp.zeros_like(a)
    sgn = jnp.where(g(zero) < 0, 1.0, -1.0)  # the root lies in direction sgn

    def grow(c):
        k, t = c
        return k + 1, jnp.where(sgn * g(sgn * t) < 0, 2.0 * t, t)

    def more(c):
        k, t = c
        return (k < 32) & jnp.any((sgn * g(sgn * t) < 0) & (t < reach))

    _, t = lax.while_loop(more, grow, (0, jnp.ones_like(a)))
    found = sgn * g(sgn * t) >= 0
    lo = jnp.minimum(0.0, sgn * t)
    hi = jnp.maximum(0.0, sgn * t)

    def body(c):
        k, lo, hi, m = c
        gm = g(m)
        lo = jnp.where(gm < 0, m, lo)
        hi = jnp.where(gm > 0, m, hi)
        h = second(m)
        newton = m - gm / jnp.where(h > 0, h, 1.0)
        ok = (h > 0) & (newton > lo) & (newton < hi)
        return k + 1, lo, hi, jnp.where(gm == 0, m, jnp.where(ok, newton, 0.5 * (lo + hi)))

    _, lo, hi, m = lax.fori_loop(0, iters, lambda i, c: body(c), (0, lo, hi, 0.5 * (lo + hi)))
    phi = value(m) + a * m
    bound = phi - jnp.abs(g(m)) * (hi - lo)
    edge = value(sgn * reach) + a * sgn * reach
    return jnp.where(found, bound, edge)
