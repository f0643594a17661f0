"""The Section-1 problem every solver solves, and its primal/dual objectives.

    minimize over w, b:  R(w) + C * sum_i s_i * loss(y_i (w.x_i + b))

``Problem`` is a pytree (data and C are leaves; ``fit_intercept`` is static), so
a solver's core is a pure function of it and can be vmapped over C or y.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp

from .losses import Loss
from .regularizers import Regularizer

__all__ = ["Problem", "primal_objective", "dual_objective", "dual_loss_part", "project_dual", "polish_dual",
           "can_polish", "primal_gradient", "live_mean", "relative_gap", "dual_box", "rounding_bound"]


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True)
class Problem:
    op: Any  # DenseOperator | SparseOperator
    y: jax.Array  # (n,) in {-1, +1}
    s: jax.Array  # (n,) sample weights, > 0 or 0
    C: jax.Array  # scalar
    loss: Loss
    reg: Regularizer
    fit_intercept: bool = True
    kernel: Any = None  # svmopt.kernels.Kernel for kernel methods, None for linear ones

    def tree_flatten(self):
        return (self.op, self.y, self.s, self.C, self.loss, self.reg, self.kernel), self.fit_intercept

    @classmethod
    def tree_unflatten(cls, fit_intercept, children):
        op, y, s, C, loss, reg, kernel = children
        return cls(op, y, s, C, loss, reg, fit_intercept=fit_intercept, kernel=kernel)

    @property
    def n(self) -> int:
        return self.op.shape[0]

    @property
    def d(self) -> int:
        return self.op.shape[1]

    @property
    def dtype(self):
        return self.op.dtype

    @property
    def cs(self):
        """Per-sample loss weight C * s_i."""
        return self.C * self.s

    def replace(self, **kw) -> "Problem":
        fields = dict(op=self.op, y=self.y, s=self.s, C=self.C, loss=self.loss, reg=self.reg,
                      fit_intercept=self.fit_intercept, kernel=self.kernel)
        fields.update(kw)
        return Problem(**fields)


def relative_gap(primal, dual):
    """(P - D) / |P|: the number every status certifies (the one place it is formed). Traced or jax
    inputs give a jax array; numpy / Python numbers a numpy value in their own precision."""
    xp = jnp if any(isinstance(v, (jax.Array, jax.core.Tracer)) for v in (primal, dual)) else np
    primal = xp.asarray(primal)
    tiny = xp.finfo(primal.dtype if xp.issubdtype(primal.dtype, xp.floating) else xp.float64).tiny
    return (primal - dual) / xp.maximum(xp.abs(primal), tiny)


def primal_objective(pb: Problem, w, b, f=None):
    """R(w) + C sum_i s_i loss(y_i f_i) with f = X w + b (pass ``f`` to skip the matvec)."""
    if f is None:
        f = pb.op.matvec(w) + b
    return pb.reg.value(w) + jnp.sum(pb.cs * pb.loss.value(pb.y * f))


def primal_gradient(pb: Problem, w, b, f=None):
    """(grad_w, grad_b) of the primal for a differentiable loss and regularizer."""
    if f is None:
        f = pb.op.matvec(w) + b
    u = pb.cs * pb.y * pb.loss.derivative(pb.y * f)
    gw = pb.reg.grad(w) + pb.op.rmatvec(u)
    gb = jnp.sum(u) if pb.fit_intercept else jnp.zeros((), w.dtype)
    return gw, gb


def dual_box(pb: Problem):
    """Per-sample bounds (lo, hi) of alpha in the library's scale (0 for rows of weight 0)."""
    d, cs = pb.loss.dual, pb.cs
    lo = jnp.where(cs > 0, d.lower * cs, 0.0) if d.lower != -jnp.inf else -jnp.inf
    hi = jnp.where(cs > 0, d.upper * cs, 0.0) if d.upper != jnp.inf else jnp.inf
    return lo, hi


PROJECTION_STEPS = 48  # bisection steps for the shift tau (2^-48 of the bracket: below float64's rounding)


def project_dual(pb: Problem, alpha, weight=None):
    """The point of {lo <= alpha <= hi, y^T alpha = 0 (with an intercept)} nearest to alpha.

    alpha is in the library's scale (alpha_i = C s_i a_i); rows of weight 0 get 0. Without an
    intercept this is a clip. With one, alpha_i(tau) = clip(alpha_i - tau y_i / weight_i) and
    the shift tau solving y^T alpha(tau) = 0 is found by bisection (``PROJECTION_STEPS``); the
    last rounding is removed by scaling the class with the larger sum (exact, and inside the
    box when the lower bound is 0). ``weight`` (n,) > 0 makes it the projection in the norm
    sum_i weight_i alpha_i^2 (default 1). Duals unbounded on both sides get the exact shift.
    (The scaling alone can cost far more dual objective when y^T alpha is large: every alpha of a
    class shrinks.)
    """
    lo, hi = dual_box(pb)
    live = pb.cs > 0
    alpha = jnp.where(live, alpha, 0.0)
    if not pb.fit_intercept:
        return jnp.where(live, jnp.clip(alpha, lo, hi), 0.0)
    y = jnp.where(live, pb.y, 0.0)
    d = pb.loss.dual
    if d.lower == -jnp.inf and d.upper == jnp.inf:
        return alpha - y * jnp.vdot(y, alpha) / jnp.maximum(jnp.sum(live), 1)
    inv = jnp.ones_like(alpha) if weight is None else 1.0 / weight
    # y^T clip(alpha - tau y inv) is non-increasing in tau; +-T brackets its zero (lower bound 0)
    big = jnp.max(jnp.abs(alpha)) + 1.0
    for bound in (lo, hi):
        if not isinstance(bound, float):  # a finite bound (an array); infinite ones are floats
            big = big + jnp.max(jnp.abs(bound))
    T = big / jnp.min(jnp.where(live, inv, jnp.inf))
    z = alpha

    def at(tau):
        return jnp.where(live, jnp.clip(z - tau * y * inv, lo, hi), 0.0)

    def bisect(_, br):
        a, b_ = br
        mid = 0.5 * (a + b_)
        pos = jnp.vdot(y, at(mid)) > 0
        return jnp.where(pos, mid, a), jnp.where(pos, b_, mid)

    a, b_ = jax.lax.fori_loop(0, PROJECTION_STEPS, bisect, (-T, T))
    alpha = at(0.5 * (a + b_))
    # exact equality: scale down the class with the larger sum
    sp_ = jnp.sum(jnp.where(y > 0, alpha, 0.0))
    sn_ = jnp.sum(jnp.where(y < 0, alpha, 0.0))
    tiny = jnp.finfo(alpha.dtype).tiny
    fp = jnp.where(sp_ > sn_, sn_ / jnp.maximum(sp_, tiny), 1.0)
    fn = jnp.where(sn_ > sp_, sp_ / jnp.maximum(sn_, tiny), 1.0)
    return alpha * jnp.where(pb.y > 0, fp, fn)


def _can_fit(pb: Problem) -> bool:
    return (pb.kernel is None and pb.loss.has_dual and pb.loss.family.kink is not None
            and pb.loss.dual.lower == 0 and pb.reg.family.prox is not None)


def _can_ascend(pb: Problem) -> bool:
    d = pb.loss.dual if pb.loss.has_dual else None
    return (pb.kernel is None and d is not None and d.quad is not None and d.linear is None and d.l1 is None
            and pb.reg.quadratic is not None)


def _kink_rows(pb: Problem, f, budget):
    """Rows nearest the loss's kink whose alpha may leave its bound: sorted by d_i = |kink - m_i|,
    the longest prefix whose cost sum_i C s_i (upper - lower) d_i stays within ``budget``
    (freeing alpha_i costs D at most that much to first order)."""
    dist = jnp.where(pb.cs > 0, jnp.abs(pb.loss.family.kink - pb.y * f), jnp.inf)
    order = jnp.argsort(dist)
    cost = jnp.where(pb.cs > 0, pb.cs * (pb.loss.dual.upper - pb.loss.dual.lower) * dist, 0.0)
    if pb.loss.dual.upper == jnp.inf:  # an unbounded dual: count each row at its margin only
        cost = jnp.where(pb.cs > 0, pb.cs * dist, 0.0)
    k = jnp.sum(jnp.cumsum(cost[order]) <= budget)
    edge = jnp.where(k > 0, dist[order][jnp.maximum(k - 1, 0)], -1.0)
    return (pb.cs > 0) & (dist <= edge)


def can_polish(pb: Problem) -> bool:
    """Static: does ``polish_dual`` do anything for this problem?"""
    return _can_fit(pb) or _can_ascend(pb)


def polish_dual(pb: Problem, alpha, w, f, steps: int, fit_steps: int = 0, budget=0.0):
    """A better feasible dual point from a feasible alpha (n,), the primal w (d,) and f = X w + b.

    Two moves, each a few matvecs; the result is feasible and never worse than alpha:

    1. ``fit_steps`` (a loss with a kink, e.g. the hinge; any regularizer with a prox): at the
       optimum, v = X^T (alpha y) lies in dR(w) (v = c w for R = c/2 ||w||^2; v_j = sign(w_j)
       where w_j != 0 for the l1 norm), and the alpha_i of rows away from the kink sit at their
       bounds. So only the rows near the kink move (within twice the largest |kink - m_i| of
       a row where ``raw``, the unprojected candidate (default alpha), is strictly inside its
       box), by conjugate-gradient steps on  min ||X^T (alpha y) - t||^2  that keep y^T alpha,
       with t = (x - prox_{sR}(x)) / s, x = w + s v, s = 1e-3 max|w| (the element of dR nearest
       v at a point within s of w), then ``project_dual`` (and R's ``dual_scale`` in D).
    2. ``steps`` projected-gradient ascent steps, when D is a concave quadratic (box-plus-
       diagonal loss, dual_value(a) = a - q a^2, and R = c/2 ||w||^2):
       D = sum_i (alpha_i - q alpha_i^2 / (C s_i)) - ||X^T (alpha y)||^2 / (2c).
       z = alpha + grad / Q_ii with Q_ii = ||x_i||^2 / c + 2 q / (C s_i), its projection in the
       Q-norm, then the exact line search on the segment to it (a convex combination).

    Used by the driver on each certificate near the end of a solve: the dual candidates of
    methods that work in the primal (NESVM's smoothed derivative, ALM's multipliers) are far
    less accurate than their primal. Other problems: alpha is returned unchanged.
    """
    dt = alpha.dtype
    cs, live, y = pb.cs, pb.cs > 0, pb.y
    if fit_steps > 0 and _can_fit(pb):
        rows = _kink_rows(pb, f, budget).astype(dt)
        count = jnp.maximum(jnp.sum(rows), 1.0)

        def restrict(x):  # onto {supported on rows, y^T x = 0 with an intercept}
            x = x * rows
            return x - rows * y * jnp.vdot(y, x) / count if pb.fit_intercept else x

        a0 = alpha - (rows * y * jnp.vdot(y, alpha) / count if pb.fit_intercept else 0.0)
        v = pb.op.rmatvec(a0 * y)
        sc = 1e-3 * jnp.max(jnp.abs(w)) + jnp.finfo(dt).tiny
        x = w + sc * v
        near = pb.reg.prox(x, sc)
        cols = (near != 0).astype(dt)  # where R's prox sets a coordinate to 0, dR allows any v_j
        r = cols * ((x - near) / sc - v)
        g = restrict(y * pb.op.matvec(r))

        def cg(_, carry):
            d, r, g, p, gg = carry
            q = cols * pb.op.rmatvec(p * y)
            qq = jnp.vdot(q, q)
            t = jnp.where(qq > 0, gg / jnp.where(qq > 0, qq, 1.0), 0.0)
            d, r = d + t * p, r - t * q
            g = restrict(y * pb.op.matvec(r))
            gn = jnp.vdot(g, g)
            p = g + jnp.where(gg > 0, gn / jnp.where(gg > 0, gg, 1.0), 0.0) * p
            return d, r, g, p, gn

        d = jax.lax.fori_loop(0, fit_steps, cg, (jnp.zeros_like(alpha), r, g, g, jnp.vdot(g, g)))[0]
        fitted = project_dual(pb, a0 + d)
        better = dual_objective(pb, fitted)[0] > dual_objective(pb, alpha)[0]
        alpha = jnp.where(better, fitted, alpha)
    if steps <= 0 or not _can_ascend(pb):
        return alpha
    c = jnp.asarray(pb.reg.quadratic, dt)
    _, _, quad = pb.loss.box_diagonal()
    qd = jnp.where(live, 2.0 * quad / jnp.where(live, cs, 1.0), 0.0)
    Q = pb.op.row_sq_norms() / c + qd
    Q = jnp.where(live, jnp.maximum(Q, jnp.finfo(dt).eps * jnp.max(Q) + jnp.finfo(dt).tiny), 1.0)

    def step(_, carry):
        a, v = carry
        g = jnp.where(live, 1.0 - qd * a - y * pb.op.matvec(v) / c, 0.0)
        d = project_dual(pb, a + g / Q, Q) - a
        u = pb.op.rmatvec(d * y)
        curv = jnp.vdot(u, u) / c + jnp.vdot(qd * d, d)
        slope = jnp.vdot(g, d)
        t = jnp.where(curv > 0, jnp.clip(slope / jnp.where(curv > 0, curv, 1.0), 0.0, 1.0),
                      jnp.where(slope > 0, 1.0, 0.0))
        return a + t * d, v + t * u

    return jax.lax.fori_loop(0, steps, step, (alpha, pb.op.rmatvec(alpha * y)))[0]


def dual_objective(pb: Problem, alpha, v=None):
    """D(alpha) = sum_i C s_i (-l*(-alpha_i / (C s_i))) - R*(sum_i alpha_i y_i x_i) for feasible alpha.

    Returns (D, v) where v = X^T (alpha * y), so callers can reuse it (or pass it in when they
    already have it). The regularizer's ``dual_scale`` shrinks alpha into the domain of R* first
    (l1-type penalties).
    """
    if v is None:
        v = pb.op.rmatvec(alpha * pb.y)
    theta = pb.reg.dual_scale(v)
    alpha, v = alpha * theta, v * theta
    return dual_loss_part(pb, alpha) - pb.reg.conjugate(v), v


def dual_loss_part(pb: Problem, alpha):
    """sum_i C s_i (-l*(-alpha_i / (C s_i))): the loss's share of the dual objective."""
    cs = pb.cs
    a = jnp.where(cs > 0, alpha / jnp.where(cs > 0, cs, 1.0), 0.0)
    return jnp.sum(jnp.where(cs > 0, cs * pb.loss.dual_value(a), 0.0))


def live_mean(pb: Problem, v):
    """Mean of v over the rows with weight > 0 (padding rows of a bucket weigh 0)."""
    live = pb.s > 0
    return jnp.sum(jnp.where(live, v, 0.0)) / jnp.maximum(jnp.sum(live), 1)


MARGIN_ROUNDING = 1.0
"""A margin x_i.w + b computed in the dtype from data rounded to it is taken to be within
MARGIN_ROUNDING u (|x_i|.|w| + |b|) of its exact value (u the unit roundoff). An estimate, not a worst
case: the data's rounding moves it by at most u |x_i|.|w|, and the sum's own rounding (blocked, as
XLA's dot and the CSR kernels sum) adds about u sqrt(k) times the partial sums, which cancellation
keeps near |x_i|.|w| / sqrt(k); on a 500 x 2000 Gaussian the largest error seen was 0.52 u |x_i|.|w|.
The worst case, k u |x_i|.|w|, would refuse float32 certificates that float64 confirms."""


def rounding_bound(pb: Problem, w, b, alpha, primal, dual):
    """How far the dtype's rounding can move P(w) - D(alpha) from its exact value, relative to |P|.

    Each margin's error is taken as e_i = MARGIN_ROUNDING u (|x_i|.|w| + |b|); the loss moves by at
    most e_i times its steepest slope within e_i of the margin (a convex loss's slope is largest at
    an end), so rows further than e_i from a kink add nothing to the hinge's share. D moves through
    v = X^T (alpha y) by about grad R*(v).dv = w.dv <= sum_i |alpha_i| e_i. Both sums round by
    u log2(n) of their terms. Costs a product of |X| with |w| (``abs_matvec``) and one with w; the
    loop pays it only for a gap already within tol. In float64 the figure is ~1e-14; in float32 it
    stops a gap that rounding alone made from certifying (bench.suite seed 0's g04, raw features at
    C = 67: 4e2 |P|, where the float32 run had said CONVERGED 0.23 above the optimum).
    """
    delta, m = margin_rounding(pb, w, b)
    return rounding_of(pb, m, delta, alpha, primal, dual)


def margin_rounding(pb: Problem, w, b):
    """(e, m): each margin's rounding e_i = MARGIN_ROUNDING u (|x_i|.|w| + |b|) and the margins
    m = y (X w + b) (``rounding_bound``; two products with X)."""
    grow = float(jnp.finfo(pb.dtype).eps) / 2 * MARGIN_ROUNDING
    return grow * (pb.op.abs_matvec(w) + jnp.abs(b)), pb.y * (pb.op.matvec(w) + b)


def loss_rounding(pb: Problem, m, delta):
    """The loss terms' share of ``rounding_bound`` (absolute): each row's e_i times its loss's steepest
    slope within e_i of its margin."""
    slope = jnp.maximum(jnp.abs(pb.loss.derivative(m - delta)), jnp.abs(pb.loss.derivative(m + delta)))
    return jnp.sum(jnp.where(pb.cs > 0, pb.cs * slope * delta, 0.0))


def rounding_of(pb: Problem, m, delta, alpha, primal, dual):
    """``rounding_bound`` from the margins m and their rounding ``delta`` (``margin_rounding``)."""
    dt = pb.dtype
    u = float(jnp.finfo(dt).eps) / 2
    n = pb.op.shape[0]
    e_primal = loss_rounding(pb, m, delta)
    e_dual = 0.0 if alpha is None else jnp.sum(jnp.where(pb.cs > 0, jnp.abs(alpha) * delta, 0.0))
    finite_dual = jnp.where(jnp.isfinite(dual), dual, 0.0)
    e_sum = u * (2.0 + float(np.log2(max(n, 2)))) * (jnp.abs(primal) + jnp.abs(finite_dual))
    out = (e_primal + e_dual + e_sum) / jnp.maximum(jnp.abs(primal), jnp.finfo(dt).tiny)
    return jnp.where(jnp.isfinite(out), out, 0.0).astype(dt)
