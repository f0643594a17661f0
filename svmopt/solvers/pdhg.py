"""PDHG: restarted Halpern primal-dual hybrid gradient on the saddle-point form of the Section-1 problem.

A loss whose conjugate is a box plus a diagonal (hinge, squared hinge, smoothed hinge, the
regression losses) is a maximum over its dual variable; in the library's scale alpha_i = C s_i a_i,

  C s_i loss(m_i) = max over lo_i <= alpha_i <= hi_i of  g_i(alpha_i) - alpha_i m_i,
  g_i(alpha) = lin_i alpha - eps_i |alpha| - q alpha^2 / (C s_i),

so the problem is the saddle point  min over (w, b), max over alpha of

  L(w, b, alpha) = R(w) + sum_i g_i(alpha_i) - alpha^T Y (X w + b).

PDHG (Chambolle & Pock 2011) alternates a proximal step in (w, b) and one in alpha, each of them
closed form (R's prox; a clipped scalar for g_i), with one product X w and one X^T (alpha y) per
iteration:

  w'     = prox_{tau R}(w + tau X^T (alpha y)),    b' = b + tau_b y^T alpha
  alpha' = argmax g(a) - a^T Y (X (2 w' - w) + 2 b' - b) - ||a - alpha||^2 / (2 sigma)  over the box

The restart scheme is the one of restarted Halpern PDHG (Lu & Yang 2024, the successor of
Applegate et al.'s PDLP): z_{k+1} = (k+1)/(k+2) ((1 + gamma) T(z_k) - gamma z_k) + z_0 / (k+2),
with z_0 the epoch's anchor, T one PDHG step and gamma the reflection (``reflect``); an epoch
ends (z_0 := T(z_k)) when the fixed-point residual ||T(z_k) - z_k|| has fallen to ``beta_sufficient``
of the epoch's first, or to ``beta_necessary`` of it and grows again, or the epoch has run
``beta_artificial`` of all iterations. At each restart the primal weight omega (tau = eta / omega,
sigma = eta omega) moves halfway (in log) to the ratio of the dual and primal moves since the last
restart. Steps are diagonal: the columns of [X 1] are scaled to unit norm (tau_j ~ 1 / ||X_:j||^2),
and eta = ``step_size`` / ||K|| with ||K|| the scaled operator's norm by power iteration.

Why it is here: the LP-SVM (hinge + l1) is a linear program, and on a linear program (sharp,
piecewise linear) restarted PDHG converges linearly to a primal and a dual optimum. The methods on
the smoothed or augmented primal (nesvm, homotopy_nesvm, alm) reach the LP's primal optimum but not
a dual point that certifies it (their multipliers do not identify the LP's margin rows). PDHG's alpha
converges to a dual optimum, so the gap closes. It also takes l2, elastic net and the free intercept
(y^T alpha = 0 is the b-step's fixed point), with matvecs only (any backend, vmap, sharding).

The driver certifies the gap of (w, b, alpha) every ``certify_every`` iterations (its dual candidate
is projected and scaled into R*'s domain as for every method).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from ..problem import Problem
from .base import DUAL, PRIMAL, Iterate, Method, Start, check_positive, power_iteration, probe, require, start_or, \
    static

__all__ = ["PDHG", "pdhg"]


class PDHGState(NamedTuple):
    w: Any  # z_k: (w, b, alpha)
    b: Any
    alpha: Any
    f: Any  # X w (kept along the blends; recomputed at each restart)
    v: Any  # X^T (alpha y)
    w0: Any  # the epoch's anchor z_0 and its products
    b0: Any
    a0: Any
    f0: Any
    v0: Any
    tc: Any  # (d,) diagonal primal metric (1 / ||X_:j||^2), tau = eta tc / omega
    tb: Any  # () the intercept's
    sr: Any  # (n,) diagonal dual metric, sigma = eta sr omega
    eta: Any
    omega: Any  # primal weight
    k: Any  # iteration within the epoch
    total: Any  # iterations in all
    r0: Any  # fixed-point residual at the epoch's first iteration
    rprev: Any  # at the previous iteration
    restarts: Any


@dataclasses.dataclass(frozen=True)
class PDHG(Method):
    """Restarted Halpern PDHG on the saddle-point form (module docstring).

    Runtime numbers:

    tol              relative duality gap certified by the driver
    step_size        eta ||K||: below 1 for convergence (0.9 leaves room for the power estimate of ||K||)
    reflect          gamma of the reflected Halpern step, in [0, 1] (1: the reflected operator 2T - I)
    beta_sufficient, beta_necessary, beta_artificial   the restart rules (module docstring)
    smoothing        theta of the primal weight's update, in [0, 1] (0: omega stays)
    omega0           the primal weight at the start; 0 (default): the mean of C s_i, the scale of alpha
                     (a number either way, so a new value reuses the compiled program)

    Structure (static): ``power_iters`` (the estimate of ||K||), ``every`` (iterations between
    certificates).
    """

    tol: float = 1e-3
    step_size: float = 0.9
    reflect: float = 1.0
    beta_sufficient: float = 0.2
    beta_necessary: float = 0.8
    beta_artificial: float = 0.36
    smoothing: float = 0.5
    omega0: float = 0.0
    power_iters: int = static(40)
    every: int = static(64)
    rows: bool = static(True)
    refresh: int = static(64)

    name = "pdhg"

    def validate(self, pb: Problem) -> None:
        require(pb.kernel is None, "pdhg is a linear solver; for a kernel use method=alfpgm or nesvm")
        pb.loss.box_diagonal()  # raises MissingCapability naming the box-plus-diagonal dual
        require(pb.loss.dual.rhs == 0.0, f"pdhg solves duals with y^T alpha = 0; {pb.loss!r} has another right-hand side")
        require(pb.reg.has_conjugate, f"pdhg certifies a duality gap: {pb.reg!r} has no conjugate")
        probe("reg.prox", lambda reg, v: reg.prox(v, jnp.ones_like(v)), pb.reg, pb.dtype)
        check_positive(self, "tol", "step_size")
        check_positive(self, "omega0", allow_zero=True)
        for k in ("reflect", "beta_sufficient", "beta_necessary", "beta_artificial", "smoothing"):
            check_positive(self, k, allow_zero=True)
        if not (isinstance(self.power_iters, int) and self.power_iters > 0):
            raise ValueError(f"pdhg needs an integer power_iters > 0, got {self.power_iters!r}")
        if not (isinstance(self.every, int) and self.every > 0):
            raise ValueError(f"pdhg needs an integer every > 0, got {self.every!r}")

    def default_max_iter(self, pb) -> int:
        return 100000

    def certify_due(self, pb, st, k):
        return k % self.every == 0

    # ------------------------------------------------------------------ the pieces
    def _dual_prox(self, pb, alpha, m, sigma):
        """argmax over the box of g(a) - a m - ||a - alpha||^2 / (2 sigma), per row (closed form)."""
        lower, upper, quad = pb.loss.box_diagonal()
        lin, eps = pb.loss.dual_terms()
        cs = pb.cs
        live = cs > 0
        z = alpha + sigma * (lin - m)
        z = jnp.sign(z) * jnp.maximum(jnp.abs(z) - sigma * eps, 0.0)
        z = z / (1.0 + sigma * jnp.where(live, 2.0 * quad / jnp.where(live, cs, 1.0), 0.0))
        lo = lower * cs if lower != -jnp.inf else -jnp.inf
        hi = upper * cs if upper != jnp.inf else jnp.inf
        return jnp.where(live, jnp.clip(z, lo, hi), 0.0)

    def _apply(self, pb, st, w, b, alpha, f, v):
        """One PDHG step T(z) from z = (w, b, alpha) with f = X w, v = X^T (alpha y):
        (w', b', alpha', X w', X^T (alpha' y), the squared residual ||T(z) - z||^2 in omega's norm)."""
        tau = st.eta * st.tc / st.omega
        w1 = pb.reg.prox(w + tau * v, tau)
        fi = 1.0 if pb.fit_intercept else 0.0
        b1 = b + fi * (st.eta * st.tb / st.omega) * jnp.vdot(pb.y, alpha)
        f1 = pb.op.matvec(w1)
        m = pb.y * (2.0 * f1 - f + 2.0 * b1 - b)
        a1 = self._dual_prox(pb, alpha, m, st.eta * st.omega * st.sr)
        v1 = pb.op.rmatvec(a1 * pb.y)
        dw, db, da = w1 - w, b1 - b, a1 - alpha
        res = st.omega * (jnp.vdot(dw, dw / st.tc) + db * db / st.tb) + jnp.vdot(da, da / st.sr) / st.omega
        return w1, b1, a1, f1, v1, res

    def _scales(self, pb):
        """(tc, tb, eta): unit columns of [X 1], and eta = step / ||K|| by power iteration on
        K^T K, K = Y [X 1] diag(sqrt(tc), sqrt(tb))."""
        dt = pb.dtype
        live = pb.cs > 0
        cols = pb.op.sq_rmatvec(live.astype(dt))
        tc = jnp.where(cols > 0, 1.0 / jnp.where(cols > 0, cols, 1.0), 1.0)
        nl = jnp.maximum(jnp.sum(live), 1).astype(dt)
        tb = 1.0 / nl
        fi = 1.0 if pb.fit_intercept else 0.0
        sc, sb = jnp.sqrt(tc), jnp.sqrt(tb)
        ly = jnp.where(live, pb.y, 0.0)
        if self.rows:
            r = pb.op.abs_matvec(sc) + fi * sb
            r = jnp.where(live & (r > 0), r, 1.0)
            sr = jnp.exp(jnp.sum(jnp.where(live, jnp.log(r), 0.0)) / nl) / r
        else:
            sr = jnp.ones((pb.n,), dt)
        ss = jnp.sqrt(sr)
        ly = ly * ss

        def apply(u):  # K^T K on (d + 1,)
            r = ly * (pb.op.matvec(sc * u[:-1]) + fi * sb * u[-1])
            return jnp.concatenate([sc * pb.op.rmatvec(ly * r), (fi * sb * jnp.sum(ly * r))[None]])

        lam = power_iteration(apply, pb.d + 1, dt, self.power_iters)
        norm = jnp.sqrt(jnp.maximum(lam, jnp.finfo(dt).tiny))
        return tc, tb, sr, (self.step_size / norm).astype(dt)

    # ------------------------------------------------------------------ Method protocol
    def init(self, pb: Problem, start: Start) -> PDHGState:
        dt = pb.dtype
        w = start_or(start, PRIMAL, start.w, jnp.zeros((pb.d,), dt))
        b = start_or(start, PRIMAL, start.b, jnp.zeros((), dt)) if pb.fit_intercept else jnp.zeros((), dt)
        alpha = start_or(start, DUAL, start.alpha, jnp.zeros((pb.n,), dt))
        alpha = self._dual_prox(pb, alpha, jnp.zeros_like(alpha), jnp.zeros((), dt))  # into the box
        tc, tb, sr, eta = self._scales(pb)
        f, v = pb.op.matvec(w), pb.op.rmatvec(alpha * pb.y)
        z = jnp.zeros((), dt)
        i0 = jnp.zeros((), jnp.int32)
        return PDHGState(w=w, b=b, alpha=alpha, f=f, v=v, w0=w, b0=b, a0=alpha, f0=f, v0=v, tc=tc, tb=tb, sr=sr, eta=eta,
                         omega=self._omega0(pb), k=i0, total=i0, r0=z, rprev=z, restarts=i0)

    def _omega0(self, pb):
        live = pb.cs > 0
        mean = jnp.sum(jnp.where(live, pb.cs, 0.0)) / jnp.maximum(jnp.sum(live), 1)
        given = jnp.asarray(self.omega0, pb.dtype)
        return jnp.where(given > 0, given, mean).astype(pb.dtype)

    def step(self, pb: Problem, st: PDHGState) -> PDHGState:
        dt = pb.dtype
        w1, b1, a1, f1, v1, res = self._apply(pb, st, st.w, st.b, st.alpha, st.f, st.v)
        r = jnp.sqrt(res)
        first = st.k == 0
        r0 = jnp.where(first, r, st.r0)
        tiny = jnp.finfo(dt).tiny
        restart = ~first & ((r <= self.beta_sufficient * r0)
                            | ((r <= self.beta_necessary * r0) & (r > st.rprev))
                            | (st.k.astype(dt) >= self.beta_artificial * st.total.astype(dt)))
        # Halpern's blend toward the anchor, with the reflection
        lam = (st.k + 1).astype(dt) / (st.k + 2).astype(dt)
        g = jnp.asarray(self.reflect, dt)

        def blend(t, z, z0):
            return lam * ((1.0 + g) * t - g * z) + (1.0 - lam) * z0

        nxt = tuple(blend(t, z, z0) for t, z, z0 in
                    ((w1, st.w, st.w0), (b1, st.b, st.b0), (a1, st.alpha, st.a0), (f1, st.f, st.f0), (v1, st.v, st.v0)))
        # a restart starts the next epoch at T(z_k), whose products are exact; the primal weight
        # moves halfway (in log) to the ratio of the dual to the primal move since the last restart
        dw, db, da = w1 - st.w0, b1 - st.b0, a1 - st.a0
        px = jnp.sqrt(jnp.vdot(dw, dw / st.tc) + db * db / st.tb)
        pa = jnp.sqrt(jnp.vdot(da, da / st.sr))
        # a move within rounding of its point (a primal stuck on an LP vertex) says nothing of the ratio
        nx = jnp.sqrt(jnp.vdot(w1, w1 / st.tc) + b1 * b1 / st.tb)
        na = jnp.sqrt(jnp.vdot(a1, a1 / st.sr))
        small = 64 * jnp.finfo(dt).eps
        ok = (px > small * nx + tiny) & (pa > small * na + tiny) & jnp.isfinite(px) & jnp.isfinite(pa)
        th = jnp.asarray(self.smoothing, dt)
        omega_new = jnp.exp(th * jnp.log(jnp.where(ok, pa / jnp.where(ok, px, 1.0), 1.0))
                            + (1.0 - th) * jnp.log(st.omega))
        omega = jnp.where(restart & ok, omega_new, st.omega)
        w, b, alpha, f, v = (jnp.where(restart, t, n) for t, n in zip((w1, b1, a1, f1, v1), nxt))
        if self.refresh:  # the blends' rounding drifts f and v from X w and X^T (alpha y): recompute now and then
            f, v = jax.lax.cond((st.total + 1) % self.refresh == 0,
                                lambda wa: (pb.op.matvec(wa[0]), pb.op.rmatvec(wa[1] * pb.y)),
                                lambda _: (f, v), (w, alpha))
        w0, b0, a0, f0, v0 = (jnp.where(restart, t, o) for t, o in
                              zip((w1, b1, a1, f1, v1), (st.w0, st.b0, st.a0, st.f0, st.v0)))
        return st._replace(w=w, b=b, alpha=alpha, f=f, v=v, w0=w0, b0=b0, a0=a0, f0=f0, v0=v0, omega=omega,
                           k=jnp.where(restart, 0, st.k + 1), total=st.total + 1, r0=r0, rprev=r,
                           restarts=st.restarts + restart.astype(jnp.int32))

    def advice(self, status):
        from ..result import Status

        if status in (Status.STALLED, Status.MAX_ITER):
            return ("With l1 at a large C in float32, the dual point's rounding limits the certificate: "
                    "X^T (alpha y) must stay within 1 in every coordinate, and its cancellation in float32 costs "
                    "about 1e-3 of D (seeded gauss set, C = 100: P within 1.4e-7 of the LP optimum, D 3.8e-3 "
                    "below it, where float64 certified in 2,304 iterations). Try float64 "
                    "(jax.config.update('jax_enable_x64', True), dtype='float64'), a looser tol, or a larger max_iter")
        return None

    def check(self, pb, st: PDHGState):
        return jnp.asarray(-1, jnp.int32)  # RUNNING: the driver's periodic certificate decides

    def finalize(self, pb, st: PDHGState) -> Iterate:
        extras = {"restarts": st.restarts, "primal_weight": st.omega, "step_size": st.eta, "residual": st.rprev}
        return Iterate(st.w, st.b, st.alpha, extras)


pdhg = PDHG()
"""Restarted Halpern PDHG on the saddle-point form (linear convergence on the LP-SVM, hinge + l1)."""
