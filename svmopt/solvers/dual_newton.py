"""Projected Newton on the box dual, for wide data (more features than rows).

The dual that ``dual_cd`` solves one coordinate at a time (l2, a loss whose conjugate is a box
plus a diagonal: hinge, squared hinge, smoothed hinge, least squares; no free intercept):

    min_alpha  f(alpha) = 1/2 ||X^T (alpha y)||^2 + 1/2 sum_i D_ii alpha_i^2 - sum_i alpha_i,
               L_i <= alpha_i <= U_i                                  (``dual_cd.box_table``)

solved by the two-metric projected Newton method (Bertsekas 1982; the active-set Newton of
LIBLINEAR's trust-region solvers, applied to the dual). One step, with v = X^T (alpha y) (the
model w) and the gradient g = y (X v) - 1 + D alpha:

  1. the free set F: every live row but those at a bound whose gradient points out of the box
     (alpha_i = L_i with g_i > 0, alpha_i = U_i with g_i < 0);
  2. the Newton direction on F: conjugate gradients on (Q_FF + D_FF) d = -g_F, Q = Y X X^T Y,
     Jacobi-preconditioned, to a residual of ``cg_eta`` min(1, ||g_F||) ||g_F|| (tighter as the
     step converges), at most ``cg_iters`` steps, each X^T and X restricted to the rows of F;
  3. a projected search along the arc alpha(t) = clip(alpha + t d): Armijo's decrease
     f(alpha(t)) <= f(alpha) + 1e-4 g^T (alpha(t) - alpha), halving t from 1 (at most 30 times);
     f's change is computed from delta = alpha(t) - alpha and X^T (y delta), not as a difference of
     two values of f, which float32 rounds away near the optimum.

Where this wins: with more features than rows X X^T is usually nonsingular, the dual strongly
convex, and once the bounded rows are found (a few dozen steps) the free set stops changing and
the steps converge fast, also at large C, where the hinge is close to a hard margin and dual CD's
passes grow with C. With more rows than features Q is singular: the Newton systems on F are
inconsistent and the steps crawl, which is dual CD's and ALM's ground; ``auto`` runs this method
on wide data only (the hand-over, ``svmopt.solvers.auto``; measurements: docs/auto.md).

Cost of a step: one X v over every row (the gradient and the primal objective of the
certificate), then per CG step one X^T and one X over the rows of F, per trial of the search one
X^T over them. On the CPU with a CSR matrix the kernel walks only those rows (F's rows are
gathered once per step, ``_csr.keep_rows``) where they hold at most half of the nonzeros; elsewhere
(dense X, accelerators, row-sharded X) the products run over every row with the others masked:
matvecs only, so it runs on accelerators.

Stopping: the relative duality gap (P(v) - D(alpha))/|P(v)| <= tol (every method's rule, D = -f);
STALLED when neither f (by ``obj_tol``, relative) nor the gap (by 1%) improved in ``patience``
steps.
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, NamedTuple

import jax.numpy as jnp
from jax import lax

from ..problem import Problem, dual_objective, project_dual, relative_gap
from ..result import Status
from .base import DUAL, PRIMAL, Iterate, golden_min, Method, Start, box_table, check_positive, require, require_box_dual, \
    start_or, stall_update

__all__ = ["DualNewton", "dual_newton"]


class DualNewtonState(NamedTuple):
    alpha: Any  # (n,) feasible dual point
    v: Any  # (d,) X^T (alpha y): the primal point w
    g: Any  # (n,) gradient of f at alpha
    f: Any  # f(alpha) = -D(alpha)
    scale: Any  # s: the primal point is s v (``_scale``)
    obj: Any  # P(s v)
    crit: Any  # relative duality gap (P(s v) - D(alpha)) / |P(s v)|
    step: Any  # the last search step t
    free: Any  # rows in the last step's free set (diagnostic)
    cg: Any  # CG steps so far (diagnostic)
    best: Any  # (best f, best gap) for the safeguard
    since: Any


@dataclasses.dataclass(frozen=True)
class DualNewton(Method):
    """Projected Newton on the box dual (module docstring). Runtime numbers:

    tol         relative duality gap to certify (default 1e-3)
    cg_iters    cap on CG steps per Newton step (default 500)
    cg_eta      CG stops at a residual of cg_eta min(1, ||g_F||) ||g_F|| (default 0.1)
    damping     the Newton systems are (Q_FF + D_FF + lam diag(Q_FF + D_FF)) d = -g_F with
                lam = damping min(1, ||g_F||) (default 1e-6): a singular Q_FF (rows repeated with
                opposite labels: news20-bin has two such pairs) no longer sends CG off to infinity
    obj_tol, patience   the safeguard: STALLED when neither f improved by obj_tol (1e-12, relative)
                        nor the gap by 1% in ``patience`` (20) steps
    """

    tol: float = 1e-3
    cg_iters: int = 500
    cg_eta: float = 0.1
    damping: float = 1e-6
    obj_tol: float = 1e-12
    patience: int = 20

    name = "dual_newton"
    polish_steps = (0, 0)  # alpha is the dual iterate itself: nothing for the driver's polish to add

    def validate(self, pb: Problem) -> None:
        require_box_dual(self.name, pb)
        require(pb.loss.dual.linear is None and pb.loss.dual.l1 is None,
                f"dual_newton solves the classification duals (a smooth box-plus-diagonal dual); {pb.loss!r} has "
                "the regression dual's |alpha| term: use method=dual_cd, newton or alm")
        check_positive(self, "tol", "cg_eta")
        check_positive(self, "cg_iters", "patience", integer=True)
        check_positive(self, "obj_tol", "damping", allow_zero=True)
        if pb.d <= pb.n:
            warnings.warn(f"dual_newton on X with at least as many rows as features ({pb.n} x {pb.d}): its Newton "
                          "systems are singular there and its steps crawl (a9a: uncertified after 500 steps); "
                          "method=dual_cd or alm(precondition=True) solve this shape, and the default "
                          "method (auto) picks one", UserWarning, stacklevel=3)

    def default_max_iter(self, pb) -> int:
        return 500

    def aux_template(self, pb):
        return None

    def init(self, pb: Problem, start: Start) -> DualNewtonState:
        dt = pb.dtype
        coef = box_table(pb)
        lo, hi = coef[:, 1], coef[:, 2]
        zero = jnp.zeros((pb.n,), dt)
        # from a primal start, its natural dual point -C s l'(margin); a dual start wins
        natural = -pb.cs * pb.loss.derivative(pb.y * (pb.op.matvec(start.w) + start.b))
        alpha = start_or(start, PRIMAL, natural, zero)
        alpha = start_or(start, DUAL, start.alpha, alpha)
        alpha = jnp.where(pb.cs > 0, jnp.clip(alpha, lo, hi), 0.0).astype(dt)
        v = pb.op.rmatvec(alpha * pb.y)
        g, f, sc, obj, crit = _measure(pb, coef, alpha, v)
        inf = jnp.asarray(jnp.inf, dt)
        return DualNewtonState(alpha=alpha, v=v, g=g, f=f, scale=sc, obj=obj, crit=crit, step=jnp.ones((), dt),
                               free=jnp.asarray(0, jnp.int32), cg=jnp.asarray(0, jnp.int32),
                               best=jnp.stack([inf, inf]), since=jnp.asarray(0, jnp.int32))

    def step(self, pb: Problem, st: DualNewtonState) -> DualNewtonState:
        dt = pb.dtype
        coef = box_table(pb)
        D, lo, hi, invq = coef[:, 0], coef[:, 1], coef[:, 2], coef[:, 3]
        live = pb.cs > 0
        g, alpha = st.g, st.alpha
        free = live & ~((alpha <= lo) & (g > 0)) & ~((alpha >= hi) & (g < 0))
        # Jacobi: 1/Qbar_ii (rows with x_i = 0 and D_ii = 0 get 1, not 1/tiny)
        pre = jnp.where(invq * jnp.finfo(dt).tiny >= 0.5, 1.0, invq)

        def newton_step(op, perm):
            """(alpha, v, t, cg steps) of one step, computed over op's rows (row i of op is row
            perm[i] of X: the free rows first where op is restricted to them; perm None: X's rows)."""
            take = (lambda x: x) if perm is None else (lambda x: x[perm])  # noqa: E731
            y, Fm = take(pb.y), take(free).astype(dt)
            a0, g0, Dp, M, lop, hip = take(alpha), take(g) * Fm, take(D), take(pre) * Fm, take(lo), take(hi)

            # Levenberg damping lam Qbar_ii, lam = damping min(1, ||g_F||): bounds the step along
            # directions without curvature (rows equal up to the label: x_i = x_j, y_i = -y_j make
            # Q singular while g_i + g_j = -2), where the box then stops it; vanishes as g_F -> 0
            lam = self.damping * jnp.minimum(1.0, jnp.sqrt(jnp.vdot(g0, g0)))
            Dl = Dp + lam / jnp.where(Fm > 0, M, 1.0)

            def hess(p):
                p = p * Fm
                return Fm * (y * op.matvec(op.rmatvec(y * p)) + Dl * p)

            d, k = _pcg(hess, g0, M, self.cg_eta, self.cg_iters)
            vn = st.v

            def trial(t):
                # f's change from the small quantities (delta, X^T (y delta)), not as a difference of
                # two values of f: in float32 that difference is lost in f's rounding near the optimum
                a = jnp.where(Fm > 0, jnp.clip(a0 + t * d, lop, hip), a0)
                delta = a - a0
                dv = op.rmatvec(y * delta)
                df = (jnp.vdot(vn, dv) + 0.5 * jnp.vdot(dv, dv) + jnp.sum(Dp * delta * (a0 + 0.5 * delta))
                      - jnp.sum(delta))
                return a, vn + dv, df, jnp.vdot(g0, delta)

            def cond(c):
                t, _, _, df, dec, j = c
                return (df > 1e-4 * dec) & (j < 30)

            def body(c):
                t, _, _, _, _, j = c
                t = 0.5 * t
                return (t,) + trial(t) + (j + 1,)

            one = jnp.ones((), dt)
            t, a, vt, df, dec, _ = lax.while_loop(cond, body, (one,) + trial(one) + (0,))
            ok = (df <= 1e-4 * dec) & jnp.isfinite(df)
            a = jnp.where(ok, a, a0)
            vt = jnp.where(ok, vt, vn)
            a = a if perm is None else jnp.zeros_like(alpha).at[perm].set(a)
            return a, vt, jnp.where(ok, t, 0.0), k

        if pb.op.walks_rows():  # the kernel walks only the free rows (gathered once per step)
            op, _, perm = pb.op.rows_first(free, D, with_perm=True)
            alpha, v, t, k = newton_step(op, perm)
        else:
            alpha, v, t, k = newton_step(pb.op, None)
        g, f, sc, obj, crit = _measure(pb, coef, alpha, v)
        best_f, since_f = stall_update(st.best[0], st.since, f, self.obj_tol)
        best_gap, since_gap = stall_update(st.best[1], st.since, crit, 0.01)
        return DualNewtonState(alpha=alpha, v=v, g=g, f=f, scale=sc, obj=obj, crit=crit, step=t,
                               free=jnp.sum(free, dtype=jnp.int32), cg=st.cg + k,
                               best=jnp.stack([best_f, best_gap]), since=jnp.minimum(since_f, since_gap))

    def advice(self, status):
        if status in (Status.MAX_ITER, Status.STALLED):
            return ("dual_newton is made for wide data (more features than rows) and converges from a good "
                    "start: give it dual CD's point (init=svmopt.solve(..., method=svmopt.solvers.dual_cd, "
                    "max_iter=100)), as the default method (auto) does; in float32 a problem close to a hard "
                    "margin may need dtype=float64")
        return None

    def own_objectives(self, pb) -> bool:
        # alpha is the dual iterate and every step measures P(s v) from a fresh X v: the driver's
        # certificate would add -C s l'(margin) as a second candidate and its polish, compiled into every program
        return True

    def objectives(self, pb, st: DualNewtonState, it: Iterate):
        """P(s v), measured from X v afresh by the step, and D(alpha) from X^T (alpha y) computed
        afresh (v = X^T (alpha y) is updated in place by the steps and drifts by round-off)."""
        alpha = project_dual(pb, st.alpha)  # the box clip (a no-op up to round-off)
        return st.obj, dual_objective(pb, alpha)[0], alpha

    def progress(self, pb, st):
        return st.obj, -st.f  # P(s v) and D(alpha) = -f, measured at every step

    def check(self, pb, st: DualNewtonState):
        return jnp.where(st.crit <= self.tol, Status.CONVERGED,
                         jnp.where(st.since >= self.patience, Status.STALLED, -1))

    def finalize(self, pb, st: DualNewtonState) -> Iterate:
        return Iterate(st.scale * st.v, jnp.zeros((), st.v.dtype), st.alpha,
                       {"criterion": st.crit, "cg_steps": st.cg, "step": st.step, "free": st.free, "scale": st.scale})


def _f(v, alpha, D):
    """f(alpha) = 1/2 ||v||^2 + 1/2 sum D alpha^2 - sum alpha, v = X^T (alpha y) (alpha in the box)."""
    return 0.5 * jnp.vdot(v, v) + 0.5 * jnp.sum(D * alpha * alpha) - jnp.sum(alpha)


def _measure(pb: Problem, coef, alpha, v):
    """(g, f, s, P(s v), relative gap) at the dual point alpha with v = X^T (alpha y); s v is the
    primal point (``_scale``)."""
    fx = pb.op.matvec(v)
    D = coef[:, 0]
    g = jnp.where(pb.cs > 0, pb.y * fx - 1.0 + D * alpha, 0.0)
    f = _f(v, alpha, D)
    s, obj = _scale(pb, v, fx)
    crit = relative_gap(obj, -f)
    return g, f, s, obj, jnp.where(jnp.isfinite(crit), crit, jnp.inf)


SCALE_STEPS = 40  # golden-section steps: the bracket [1/2, 2] shrinks to 1.5 * 0.618^40 = 6e-9


def _scale(pb: Problem, v, fx):
    """(s, P(s v)): the primal point along v with the smallest objective, s in [1/2, 2] (1 where
    no other is better; P(s v) = s^2 R(v) + sum C s_i l(s m_i) is convex in s, one O(n) pass per
    step). Why: near a hard margin (large C, separable rows) the support vectors' margins of
    v = X^T (alpha y) sit at 1 +- rounding, and C times their hinge terms is P's error, while
    s = 1 + 1e-6 lifts them all past the kink at a cost of 1e-6 R(v)."""
    m = pb.y * fx
    r = pb.reg.value(v)
    cs = pb.cs

    def phi(s):
        return s * s * r + jnp.sum(cs * pb.loss.value(s * m))

    s, ps = golden_min(phi, jnp.asarray(0.5, v.dtype), jnp.asarray(2.0, v.dtype), SCALE_STEPS)
    p1 = phi(jnp.ones((), v.dtype))
    better = ps < p1
    return jnp.where(better, s, 1.0), jnp.where(better, ps, p1)


def _pcg(hess, g, M, eta, iters):
    """(d, steps): preconditioned CG on H d = -g (M: the inverse diagonal, 0 off the free set) to
    ||r|| <= eta min(1, ||g||) ||g||. A direction of no positive curvature ends it; on the first
    step the scaled gradient -M g is returned."""
    gn = jnp.sqrt(jnp.vdot(g, g))
    target = eta * jnp.minimum(1.0, gn) * gn
    r = -g
    z = M * r
    zero = jnp.zeros_like(g)

    def cond(c):
        _, r, _, _, k, done = c
        return (k < iters) & ~done & (jnp.sqrt(jnp.vdot(r, r)) > target)

    def body(c):
        d, r, z, p, k, _ = c
        hp = hess(p)
        php = jnp.vdot(p, hp)
        bad = ~(php > 0)
        rz = jnp.vdot(r, z)
        a = jnp.where(bad, 0.0, rz / jnp.where(bad, 1.0, php))
        d = jnp.where(bad & (k == 0), z, d + a * p)
        r = r - a * hp
        bad = bad | ~jnp.all(jnp.isfinite(d))
        zn = M * r
        beta = jnp.vdot(r, zn) / jnp.where(rz != 0, rz, 1.0)
        return d, r, zn, zn + beta * p, k + 1, bad

    d, _, _, _, k, _ = lax.while_loop(cond, body, (zero, r, z, z, jnp.asarray(0, jnp.int32), False))
    return d, k


dual_newton = DualNewton()
"""Projected Newton on the box dual with its defaults (tol 1e-3); ``dual_newton(tol=1e-6)`` etc."""
