"""Truncated Newton on the primal for twice-differentiable losses (LIBLINEAR's -s 2 / -s 0 family).

For  P(w, b) = R(w) + sum_i C s_i l(y_i (w.x_i + b))  with l differentiable and R smooth, one
iteration (Lin, Weng & Keerthi 2008; Galli & Lin 2021 for the line-search form) is

  1. g = grad P = (grad R(w) + X^T u, sum u),  u_i = C s_i y_i l'(m_i),  m = y (X w + b)
  2. the Newton direction: H d = -g by preconditioned conjugate gradients, where
         H v = (hvp_R(w) v_w + X^T (D q),  sum D q),  q = X v_w + v_b,  D_i = C s_i l''(m_i)
     only matrix-vector products with X, so it runs wherever the matvecs run (accelerators,
     sharded rows). l'' is the derivative of ``loss.derivative`` (``jax.jvp``): for the squared
     hinge that is 2 on the active set m < 1 and 0 elsewhere, LIBLINEAR's generalized Hessian.
     Preconditioner: the diagonal of H, diag(hvp_R) + (X o X)^T D and sum D (Hsia, Chiang & Lin
     2018, with their mixing (1 - a) + a diag(H); ``pre_mix`` = a).
     CG stops on the quadratic model's relative decrease, i Q_i - Q_{i-1} <= eta Q_i with
     eta = min(cg_eta, sqrt ||g||_{M^-1}) (LIBLINEAR's newton.cpp), once the residual is below
     ||g|| / 2, or, for a quadratic regularizer without a free intercept, as soon as the residual
     is small enough for the duality gap target (||r||^2 <= 2 c tol |P| / 10: there the gap of the
     next iterate is ||g||^2 / (2 c), c = the regularizer's curvature) -- the last rule lets the
     final Newton step land on a certified point instead of stopping one step short of it (with a
     free intercept the gap also pays for projecting alpha onto y^T alpha = 0: no residual bound
     certifies it, and the rule would cut every later CG to one step);
     H v only involves the rows with D_i != 0 (LIBLINEAR's index set): for CSR X on the CPU kernel,
     a CG step's X^T (D (X v)) is one walk over the rows that skips those with D_i = 0
     (``SparseOperator.hvp``), and when they hold at most half of the nonzeros, X is restricted to
     them once per step (rows permuted, indptr ending after them, one pass of ``_csr.keep_rows``);
  3. the step along d: ``line_search="exact"`` (default) minimises the convex phi(t) = P(w + t d)
     over (0, 1] by safeguarded Newton / secant steps on phi'(t), each O(n + d); then (and with
     "armijo" from t = 1) backtracking (Armijo, factor 1/2, sufficient decrease 0.01, at most 30
     halvings) checks the decrease. f + t X d is formed from X d once: no further product with X.

Cost of an iteration: (CG steps) x (one X v and one X^T u) + X d + X^T u for the new gradient
(+ X^T (alpha y) for the gap with a free intercept, where alpha is re-projected onto
y^T alpha = 0) + one pass over X o X for the preconditioner (+ one gather of the nonzeros when
the CG products are restricted to the active rows, whose nonzeros are then all a CG step reads).

Stopping: the relative duality gap (P - D)/|P| <= tol (every method's rule) with the dual point
alpha = -C s l'(margin) (projected when an intercept is fitted), computed after every step. With
l2-type R = c/2 ||w||^2 and no free intercept that gap is exactly ||grad P||^2 / (2c), which
overstates the objective's error by up to the Hessian's condition. So once the gap is within
``fit_within`` x tol, the dual point is refined, and the larger dual objective counts:

  * without a free intercept, on wide data where the passes below do not apply (see ``fit``), it
    is fitted: alpha + delta with delta on the rows strictly inside the dual box, the least-norm
    solution of X^T (delta y) = grad P (``fit_steps`` CGLS steps, each one X v and one X^T u),
    clipped into the box. Then X^T (alpha y) = grad R(w) nearly holds, R's part of the gap
    vanishes, and what is left is the loss's part on the rows that moved, and the part of grad P
    outside the span of those rows;
  * then, where the loss has a box dual (the squared hinge), l2 and no free intercept, on the CPU
    with the compiled pass, passes of dual coordinate descent (``svmopt._dcd``) over every row
    raise D further, rows at the bound included: while a pass cuts the gap at least 1.5-fold and
    it is above tol, at most ``dual_passes``. From the natural point the pass starts at its
    w_alpha = w - grad P(w), no product with X; after a fit they cut what the fit cannot reach,
    grad P outside the span of the rows inside the box. From the natural point alone they did as
    well as the fit followed by them, so by default they run without the fit (docs/auto.md).

The safeguard ends a run that can no longer make progress (round-off) as STALLED: in ``patience``
iterations, neither a relative decrease of the objective above ``obj_tol`` nor one of the gap
above 1%.
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..problem import Problem, dual_box, dual_objective, primal_objective, project_dual
from ..result import Status
from .base import PRIMAL, RESUME, Iterate, Method, Start, box_dual, box_table, check_positive, finite_gap, probe, \
    require, second, start_or, stall_update, static
from .warm import validate_warm, warm_passes

__all__ = ["Newton", "newton"]


class NewtonState(NamedTuple):
    w: Any
    b: Any
    f: Any  # X w + b
    gw: Any  # gradient at (w, b)
    gb: Any
    obj: Any  # P(w, b)
    crit: Any  # relative duality gap at (w, b)
    dual: Any  # D(alpha), the dual objective of crit
    step: Any  # the last line-search step
    cg: Any  # CG steps so far (diagnostic)
    warm: Any  # dual CD passes of the warm start (diagnostic; 0 without one)
    best: Any  # (best objective, best gap) for the safeguard
    since: Any
    alpha: Any  # (n,) the dual point of crit (the fitted one when it was the better)


@dataclasses.dataclass(frozen=True)
class Newton(Method):
    """Line-search truncated Newton. Structure (static): ``precondition``. Runtime numbers:

    tol         relative duality gap to certify (default 1e-3)
    cg_iters    cap on CG steps per Newton iteration (default 100)
    cg_eta      the quadratic-model rule's constant (LIBLINEAR's eps_cg, 0.5)
    pre_mix     preconditioner (1 - a) I + a diag(H); a = 1 (default): plain Jacobi
    obj_tol, patience   the safeguard: STALLED when neither the objective improved by obj_tol (1e-10,
                        relative) nor the gap by 1% in ``patience`` (20) iterations
    precondition        diagonal preconditioning of CG (default on)
    active_rows         restrict sparse X to the rows with l''(m_i) != 0 for the CG products (default on;
                        used where the CPU CSR kernel runs; under ``jax.vmap`` the restricted matrices are
                        batched and take the slower XLA path: switch it off there)
    warm                "dual_cd": a cold start first runs dual coordinate descent (``dual_cd``'s
                        default variant, its pass rule with ``warm_eps``) for at most ``warm_passes``
                        passes and starts Newton from its w = X^T (alpha y) -- LIBLINEAR's -s 1, which
                        hands over to -s 2 after its pass cap. Needs a loss with a box dual (hinge,
                        squared hinge, smoothed hinge), l2 and no free intercept. None (default): from 0.
                        A warm start or a resume given to ``solve`` skips the passes.
    warm_passes, warm_eps   the warm start's pass cap (100) and pass-rule tolerance (LIBLINEAR's -e, 0.1)
    fit                 where the fitted dual point (see above) is tried: "auto" (default): "wide" where the
                        dual CD passes do not apply, "never" where they do; "wide" (X with at least as
                        many columns as rows: on tall data its 2 x fit_steps passes over X cost about what
                        the steps it saves do), "always", or "never"
    fit_steps, fit_within   its CGLS steps (20) and the gap, in multiples of tol, below which the dual point
                        is refined (300: wide enough for the first Newton step after a warm start);
                        runtime numbers
    dual_pass           the dual CD passes of the refinement (see above) where they apply (default True)
    dual_passes         their cap (5; runtime number); one pass costs a fraction of a Newton step
    line_search         "exact" (default: the minimiser of P along the direction in (0, 1], see above)
                        or "armijo" (halving from t = 1: smaller steps, more Newton steps)
    """

    tol: float = 1e-3
    cg_iters: int = 100
    cg_eta: float = 0.5
    pre_mix: float = 1.0
    obj_tol: float = 1e-10
    patience: int = 20
    warm_passes: int = 100
    warm_eps: float = 0.1
    fit_steps: int = 20
    fit_within: float = 300.0
    precondition: bool = static(True)
    active_rows: bool = static(True)
    warm: Any = static(None)
    line_search: str = static("exact")
    fit: str = static("auto")
    dual_pass: bool = static(True)
    dual_passes: int = 5

    name = "newton"

    def validate(self, pb: Problem) -> None:
        require(pb.kernel is None, "newton is a linear solver; for a kernel use method=alfpgm or nesvm")
        require(pb.loss.is_differentiable,
                f"newton needs a twice-differentiable loss; {pb.loss!r} has a kink (use method=alm, or the "
                "loss's smoothed form)")
        probe("grad", lambda reg, v: reg.grad(v), pb.reg, pb.dtype)  # raises MissingCapability naming 'grad' (l1, elastic net)
        require(pb.loss.has_dual and pb.reg.has_conjugate,
                f"newton certifies a duality gap: loss {pb.loss!r} needs a dual and {pb.reg!r} a conjugate")
        if self.line_search not in ("exact", "armijo"):
            raise ValueError(f"newton line_search must be 'exact' or 'armijo', got {self.line_search!r}")
        if self.fit not in ("auto", "wide", "always", "never"):
            raise ValueError(f"newton fit must be 'auto', 'wide', 'always' or 'never', got {self.fit!r}")
        if self.warm not in (None, "dual_cd"):
            raise ValueError(f"newton warm must be None or 'dual_cd', got {self.warm!r}")
        if self.warm == "dual_cd":
            validate_warm(self, pb)
        check_positive(self, "cg_iters", "patience", integer=True)
        check_positive(self, "fit_steps", "dual_passes", integer=True, allow_zero=True)
        check_positive(self, "fit_within")
        check_positive(self, "cg_eta", "pre_mix")
        check_positive(self, "obj_tol", allow_zero=True)

    def default_max_iter(self, pb) -> int:
        return 500

    def aux_template(self, pb):
        dt = pb.dtype  # what an exact resume needs beyond (w, b): f as updated in place, the safeguard
        return dict(f=jnp.zeros((pb.n,), dt), best=jnp.full((2,), jnp.inf, dt), since=jnp.zeros((), jnp.int32))

    def init(self, pb: Problem, start: Start) -> NewtonState:
        dt = pb.dtype
        w, b = start_or(start, PRIMAL, (start.w, start.b), (jnp.zeros((pb.d,), dt), jnp.zeros((), dt)))
        if not pb.fit_intercept:
            b = jnp.zeros((), dt)
        passes = jnp.asarray(0, jnp.int32)
        if self.warm == "dual_cd":
            w, b, passes = self._dual_cd_start(pb, start, w, b)
        aux = start_or(start, RESUME, start.aux, dict(self.aux_template(pb), f=pb.op.matvec(w) + b))
        f = aux["f"]
        # the plain certificate: the loop steps before it checks, so the refined one (dual CD
        # passes) would only be compiled into the start's program, never used
        gw, gb, obj, crit, dual, alpha = _measure(pb, w, b, f)
        return NewtonState(w=w, b=b, f=f, gw=gw, gb=gb, obj=obj, crit=crit, dual=dual, step=jnp.ones((), dt),
                           cg=jnp.asarray(0, jnp.int32), warm=passes, best=aux["best"], since=aux["since"],
                           alpha=alpha)

    def _certify(self, pb: Problem, w, b, f):
        """(gw, gb, obj, crit, dual, alpha) at (w, b): the gap of -C s l'(margin) and, when that is
        within fit_within x tol, of the refined dual point (see the module's docstring), the better one."""
        gw, gb, obj, crit, dual, alpha = _measure(pb, w, b, f)
        wide = pb.d >= pb.n
        near = (crit > self.tol) & (crit <= self.fit_within * self.tol)
        passes = self.dual_pass and _dual_pass_applies(pb)
        mode = self.fit if self.fit != "auto" else ("never" if passes else "wide")
        # (with a free intercept the fit would have to keep y^T alpha = 0)
        fit = not pb.fit_intercept and (mode == "always" or (mode == "wide" and wide))
        if not (fit or passes):
            return gw, gb, obj, crit, dual, alpha

        def refine(_):
            a, v = alpha, w - gw  # X^T (alpha y) = grad R(w) - grad P(w), R = 1/2 ||w||^2 where passes run
            if fit:
                a = lax.cond(self.fit_steps > 0, lambda: _fit_dual(pb, alpha, gw, self.fit_steps), lambda: alpha)
                v = None
            if passes:
                a = _dual_passes(pb, obj, a, v, self.tol, self.dual_passes)
            return _better(pb, obj, crit, dual, alpha, a)

        crit, dual, alpha = lax.cond(near, refine, lambda _: (crit, dual, alpha), None)
        return gw, gb, obj, crit, dual, alpha

    def _dual_cd_start(self, pb: Problem, start: Start, w, b):
        """(w, b, passes): ``warm_passes``' point on a cold start (b: the bias column's weight with a
        free intercept, whose optimum is near it; the Newton steps take it the rest of the way). A
        given start (or a resume) keeps its (w, b) and runs no pass."""
        cold = start.level == 0
        vw, _, k = warm_passes(pb, start, jnp.where(cold, jnp.asarray(self.warm_passes, jnp.int32), 0), self.warm_eps)
        if pb.fit_intercept:
            return jnp.where(cold, vw[:-1], w), jnp.where(cold, vw[-1], b), k
        return jnp.where(cold, vw, w), b, k

    def step(self, pb: Problem, st: NewtonState) -> NewtonState:
        dt = pb.dtype
        D = pb.cs * second(pb.loss, pb.y * st.f)
        hvp_reg = lambda v: jax.jvp(pb.reg.grad, (st.w,), (v,))[1]  # noqa: E731
        live = (pb.s > 0).astype(dt)
        fb = 1.0 if pb.fit_intercept else 0.0

        c = pb.reg.quadratic if pb.reg.quadratic is not None else 1.0
        # the intercept's curvature sum(D) is 0 when every margin sits on a linear piece of the loss
        # (the smoothed hinge at w = 0): a damping of c keeps its Newton step finite there
        damp_b = jnp.where(jnp.sum(D) > 0, 0.0, c)

        # ||r||^2 that certifies the next iterate: gap = ||g||^2 / (2 c) holds only for a quadratic
        # regularizer without a free intercept. With one, the gap also pays for projecting alpha onto
        # y^T alpha = 0, first order in the intercept's gradient: no residual target certifies it
        # (stopping CG there left every later step a one-step CG, a gradient step, and stalled)
        exact = pb.reg.quadratic is not None and not pb.fit_intercept
        target = 0.1 * 2.0 * c * self.tol * jnp.abs(st.obj) if exact else jnp.zeros((), dt)
        db = jnp.sum(D * live) + damp_b

        def direction(op, Dh):
            """PCG on H s = -g with H v = hvp_R v + X^T (Dh * X v) over the rows of ``op``."""
            def hess(v):
                vw, vb = v
                xtdq, sdq = _xtdx(op, vw, Dh, fb * vb)
                return hvp_reg(vw) + xtdq, fb * (sdq + damp_b * vb)

            if self.precondition:
                a = self.pre_mix
                dw = jnp.maximum(hvp_reg(jnp.ones_like(st.w)), 0.0) + op.sq_rmatvec(Dh)
                mw, mb = (1.0 - a) + a * dw, (1.0 - a) + a * db
                mw = jnp.where(mw > 0, mw, 1.0)
                mb = jnp.where(mb > 0, mb, 1.0)
            else:
                mw, mb = jnp.ones_like(st.w), jnp.ones((), dt)
            return _pcg(hess, (st.gw, fb * st.gb), (mw, mb), self.cg_eta, self.cg_iters, target)

        # H v only involves the rows with D_i != 0 (LIBLINEAR's index set I): when they hold at most half
        # of the nonzeros, a CSR walked by the CPU kernel is restricted to them once per step (one gather
        # of the nonzeros), so each CG step reads only theirs
        walks = pb.op.walks_rows()
        if self.active_rows and walks:
            keep = D != 0
            kept = pb.op.stored_in(keep)
            # (not a cond selecting only the rows around one copy of CG: its untaken branch copies X)
            (sw, sb), k = lax.cond(2 * kept <= pb.op.nnz,
                                   lambda: direction(*pb.op.rows_first(keep, D)),
                                   lambda: direction(pb.op, D))
        else:
            (sw, sb), k = direction(pb.op, D)
        # line search on P(w + t s): f moves along q = X s_w + s_b, no further product with X
        q = pb.op.matvec(sw) + fb * sb
        slope = jnp.vdot(st.gw, sw) + fb * st.gb * sb

        def phi(t):
            return pb.reg.value(st.w + t * sw) + jnp.sum(pb.cs * pb.loss.value(pb.y * (st.f + t * q)))

        def cond(c):
            t, val, j = c
            return (val > st.obj + 0.01 * t * slope) & (j < 30)

        def body(c):
            t, _, j = c
            return 0.5 * t, phi(0.5 * t), j + 1

        t0 = jnp.ones((), dt)
        if self.line_search == "exact":
            t0 = _exact_step(pb, st, sw, q)
        t, val, _ = lax.while_loop(cond, body, (t0, phi(t0), 0))
        ok = (val <= st.obj) & (slope < 0)  # a failed search leaves the iterate as it was
        t = jnp.where(ok, t, 0.0)
        w, b, f = st.w + t * sw, st.b + t * fb * sb, st.f + t * q
        gw, gb, obj, crit, dual, alpha = self._certify(pb, w, b, f)
        # stalled: neither the objective (by obj_tol) nor the gap (by 1%) improved in patience steps
        best_obj, since_obj = stall_update(st.best[0], st.since, obj, self.obj_tol)
        best_gap, since_gap = stall_update(st.best[1], st.since, crit, 0.01)
        best, since = jnp.stack([best_obj, best_gap]), jnp.minimum(since_obj, since_gap)
        return NewtonState(w=w, b=b, f=f, gw=gw, gb=gb, obj=obj, crit=crit, dual=dual, step=t, cg=st.cg + k, warm=st.warm,
                           best=best, since=since, alpha=alpha)

    def advice(self, status):
        if status in (Status.STALLED, Status.MAX_ITER):
            return ("Near a kink (an Lp hinge with p < 2, a large C, float32) newton's steps can stop short of "
                    "tol: method=svmopt.solvers.alm(precondition=True, adapt_mu=True) with init=this result "
                    "certified where it stalled (Lp 1.5 on a1a at C = 100: 645 iterations), and the default "
                    "method (auto) hands over to it by itself")
        return None

    def own_objectives(self, pb) -> bool:
        # every step already certifies (alpha, D(alpha)) and refines it near tol: the driver's
        # certificate and the summary's would compute the same products again, compiled into every program
        return True

    def objectives(self, pb, st: NewtonState, it: Iterate):
        """P(w, b) from X w computed afresh (the f the steps update in place drifts by round-off)
        and the step's certificate (alpha, D(alpha)), exact for that alpha whatever f was."""
        primal = primal_objective(pb, it.w, it.b, pb.op.matvec(it.w) + it.b)
        return primal, st.dual, st.alpha

    def progress(self, pb, st: NewtonState):
        return st.obj, st.dual  # measured at every step: a history row costs nothing more

    def check(self, pb, st: NewtonState):
        return jnp.where(st.crit <= self.tol, Status.CONVERGED, jnp.where(st.since >= self.patience, Status.STALLED, -1))

    def finalize(self, pb, st: NewtonState) -> Iterate:
        return Iterate(st.w, st.b, st.alpha, {"criterion": st.crit, "cg_steps": st.cg, "step": st.step,
                                          "warm_passes": st.warm})

    def carry(self, pb, st: NewtonState) -> Start:
        return Start(st.w, st.b, jnp.zeros((pb.n,), st.w.dtype), jnp.asarray(PRIMAL, jnp.int32),
                     dict(f=st.f, best=st.best, since=st.since))


def _better(pb: Problem, obj, crit, dual, alpha, candidate):
    """(gap, dual, alpha): the candidate dual point where its gap (D evaluated afresh) is the smaller."""
    d, _ = dual_objective(pb, candidate)
    d = jnp.where(jnp.isfinite(d), d, -jnp.inf)
    gap = finite_gap(obj, d)
    better = gap < crit
    return jnp.where(better, gap, crit), jnp.where(better, d, dual), jnp.where(better, candidate, alpha)


def _dual_pass_applies(pb: Problem) -> bool:
    """Static: the squared-hinge-type dual (a box plus a diagonal), l2 = 1/2 ||w||^2, no free
    intercept, and the compiled serial dual CD pass for these rows (CPU, unsharded)."""
    from .dual_cd import dual_cd
    return bool(pb.reg.is_l2 and box_dual(pb) and dual_cd.native(pb))


def _dual_passes(pb: Problem, obj, alpha, v, tol, cap):
    """alpha after passes of serial dual coordinate descent (every coordinate, a fresh random order
    each) from ``alpha`` (clipped into the dual box), whose X^T (alpha y) is ``v`` (None: computed,
    one product). A pass only raises D. The passes go on while the gap to ``obj`` is above ``tol``,
    the last pass cut it at least 1.5-fold and the passes left, at that pass's rate, would bring it
    to tol, at most ``cap`` passes (the first pass's cut, from the start point, says little about the
    next ones, so the second always runs); D is evaluated from the pass's own w (no product with X)
    and afresh by the caller."""
    from .. import _dcd
    inf = jnp.asarray(jnp.inf, pb.dtype)
    coef = box_table(pb)
    alpha = jnp.clip(alpha, coef[:, 1], coef[:, 2])
    if v is None:
        v = pb.op.rmatvec(alpha * pb.y)
    rows = _dcd.rows(pb.op, pb.y)
    every = jnp.ones((pb.n,), bool)

    def gap(a, v):
        d, _ = dual_objective(pb, a, v=v)
        return finite_gap(obj, jnp.where(jnp.isfinite(d), d, -jnp.inf))

    def cond(c):
        k, _, _, g, last = c
        # on while the last pass cut the gap 1.5-fold and, at its rate, the passes left reach tol
        rate = g / jnp.maximum(last, jnp.finfo(g.dtype).tiny)
        reach = g * rate ** jnp.maximum(cap - k, 0).astype(g.dtype) <= tol
        return (k < cap) & (g > tol) & (g * 1.5 <= last) & reach

    def body(c):
        k, a, v, g, _ = c
        bits = jnp.stack([jnp.uint32(0x9E3779B9) + k.astype(jnp.uint32), jnp.uint32(0x7F4A7C15)])
        v, a, _, _, _ = _dcd.pass_(v, a, coef, rows, every, inf, -inf, bits)
        return k + 1, a, v, gap(a, v), g

    k0 = jnp.asarray(0, jnp.int32)
    return lax.while_loop(cond, body, (k0, alpha, v, gap(alpha, v), inf))[1]


def _exact_step(pb: Problem, st, sw, q, iters: int = 16, rtol: float = 1e-3):
    """t in (0, 1] minimising phi(t) = R(w + t s) + sum_i C s_i l(y_i (f_i + t q_i)) (q = X s).

    phi is convex with phi'(0) < 0, so t = 1 when phi'(1) <= 0 (one evaluation: the usual case
    near the optimum). Else phi' = 0 is solved in the bracket (0, 1) by Newton steps, falling back
    to the secant of the bracket's ends when a Newton step leaves it (phi' is piecewise smooth: for
    the squared hinge piecewise linear, with kinks where a margin crosses 1), and to bisection when
    that stalls at one end; until |phi'(t)| <= rtol |phi'(0)| (the decrease left is then about an
    rtol^2 fraction) or ``iters`` evaluations. It returns the point of smallest |phi'| met (a step
    rejected by round-off near the root must not lose it to a bisection of a bracket still wide on
    the other side). Each evaluation is O(n + d): no product with X. The caller still checks
    Armijo's decrease (halving from this t)."""
    dt = sw.dtype

    def d12(t):
        g, h = jax.jvp(lambda u: jnp.vdot(pb.reg.grad(st.w + u * sw), sw), (t,), (jnp.ones((), dt),))
        m = pb.y * (st.f + t * q)
        g = g + jnp.sum(pb.cs * pb.y * q * pb.loss.derivative(m))
        h = h + jnp.sum(pb.cs * q * q * second(pb.loss, m))
        return g, h

    zero, one = jnp.zeros((), dt), jnp.ones((), dt)
    g0 = jnp.vdot(pb.reg.grad(st.w), sw) + jnp.sum(pb.cs * pb.y * q * pb.loss.derivative(pb.y * st.f))
    g1, h1 = d12(one)
    stop = rtol * jnp.abs(g0)

    def cond(c):
        i, _, _, _, _, _, g, _, _, _ = c
        return (i < iters) & (g > stop) | (i > 0) & (i < iters) & (jnp.abs(g) > stop)

    def body(c):
        i, lo, glo, hi, ghi, t, g, h, best, gbest = c
        lo, glo = jnp.where(g < 0, t, lo), jnp.where(g < 0, g, glo)
        hi, ghi = jnp.where(g > 0, t, hi), jnp.where(g > 0, g, ghi)
        width = hi - lo
        tn = t - g / jnp.where(h > 0, h, 1.0)
        sec = lo - glo * width / jnp.where(ghi > glo, ghi - glo, 1.0)
        inside = lambda v, gap: jnp.isfinite(v) & (v > lo + gap) & (v < hi - gap)  # noqa: E731
        # a secant hugging an end of the bracket (false position stalling on one side): bisect
        tn = jnp.where((h > 0) & inside(tn, 0.0), tn,
                       jnp.where(inside(sec, 0.01 * width) & (i % 4 != 3), sec, 0.5 * (lo + hi)))
        gn, hn = d12(tn)
        better = jnp.abs(gn) < gbest
        return (i + 1, lo, glo, hi, ghi, tn, gn, hn, jnp.where(better, tn, best), jnp.where(better, jnp.abs(gn), gbest))

    c = lax.while_loop(cond, body, (jnp.asarray(0, jnp.int32), zero, g0, one, g1, one, g1, h1, one, jnp.abs(g1)))
    t = jnp.where(g1 <= 0, one, c[8])
    return jnp.where(jnp.isfinite(t) & (t > 0), t, one)


def _measure(pb: Problem, w, b, f):
    """Gradient, objective, relative duality gap, dual objective and its dual point
    alpha = -C s l'(margin) (projected) at (w, b) with f = X w + b."""
    lp = pb.loss.derivative(pb.y * f)
    u = pb.cs * pb.y * lp
    xu = pb.op.rmatvec(u)
    gw = pb.reg.grad(w) + xu
    gb = jnp.sum(u) if pb.fit_intercept else jnp.zeros((), w.dtype)
    obj = primal_objective(pb, w, b, f)
    alpha = -pb.cs * lp
    # X^T (alpha y) = -X^T u, already at hand unless the projection onto y^T alpha = 0 moves alpha
    v = None if pb.fit_intercept else -xu
    alpha = project_dual(pb, alpha)
    dual, _ = dual_objective(pb, alpha, v=v)
    dual = jnp.where(jnp.isfinite(dual), dual, -jnp.inf)
    return gw, gb, obj, finite_gap(obj, dual), dual, alpha


def _xtdx(op, v, Dh, c=0.0):
    """(X^T (Dh (X v + c)), sum_i Dh_i (X v + c)_i). On the CPU in one walk over the rows: CSR through
    the custom call, which skips the rows with Dh_i = 0; dense X block by block, reading X once. On
    accelerators two whole products (a loop over blocks would cost kernel launches per block there)."""
    if op.walks_rows():
        return op.hvp(v, Dh, c)
    if jax.default_backend() == "cpu":
        return op.fused(v, lambda z, Dh: (Dh * (z + c),) * 2, (Dh,))
    Dq = Dh * (op.matvec(v) + c)
    return op.rmatvec(Dq), jnp.sum(Dq)


def _fit_dual(pb: Problem, alpha, gw, steps):
    """alpha + delta clipped into the dual box, delta the least-norm solution on the rows strictly
    inside the box of X^T (delta y) = gw, so that X^T (alpha y) moves to grad R(w), where R(w) +
    R*(v) = w.v holds (X^T (alpha y) = grad R(w) - gw for alpha = -C s l'(margin)), by ``steps``
    CGLS steps from delta = 0. A CSR walked by the CPU kernel is restricted to those rows first (one
    gather of the nonzeros), and the 2 x ``steps`` products read only theirs."""
    lo, hi = dual_box(pb)
    inside = (alpha > lo) & (alpha < hi) & (pb.cs > 0)
    op, perm = pb.op, None
    rows = inside.astype(alpha.dtype) * pb.y
    if op.walks_rows():
        op, rows, perm = op.rows_first(inside, rows, with_perm=True)
    At = lambda r: rows * op.matvec(r)  # noqa: E731  (A = X^T diag(y rows), d x n)
    A = lambda p: op.rmatvec(rows * p)  # noqa: E731
    tiny = jnp.finfo(alpha.dtype).tiny

    def body(_, carry):
        delta, r, s, p, gamma = carry
        q = A(p)
        qq = jnp.vdot(q, q)
        t = jnp.where(qq > tiny, gamma / jnp.where(qq > tiny, qq, 1.0), 0.0)
        delta, r = delta + t * p, r - t * q
        s = At(r)
        gn = jnp.vdot(s, s)
        p = s + jnp.where(gamma > tiny, gn / jnp.where(gamma > tiny, gamma, 1.0), 0.0) * p
        return delta, r, s, p, gn

    s0 = At(gw)
    delta = lax.fori_loop(0, steps, body, (jnp.zeros_like(alpha), gw, s0, s0, jnp.vdot(s0, s0)))[0]
    if perm is not None:  # back to the rows' own order
        delta = jnp.zeros_like(delta).at[perm].set(delta, unique_indices=True)
    return project_dual(pb, alpha + delta)


def _pcg(hess, g, M, eta, iters, target):
    """Approximately solve H s = -g (pairs (w-part, b-part)) by preconditioned CG from s = 0.

    Stops on LIBLINEAR's quadratic-model rule once ||r|| <= ||g|| / 2, on ||r||^2 <= target, on
    non-positive curvature, or after ``iters`` steps. Returns (s, steps).
    """
    dot = lambda a, c: jnp.vdot(a[0], c[0]) + a[1] * c[1]  # noqa: E731
    axpy = lambda t, x, y: (y[0] + t * x[0], y[1] + t * x[1])  # noqa: E731
    r = (-g[0], -g[1])
    z = (r[0] / M[0], r[1] / M[1])
    zr = dot(z, r)
    gg = dot(g, g)
    eta = jnp.minimum(eta, jnp.sqrt(jnp.sqrt(jnp.maximum(zr, 0.0))))
    s0 = (jnp.zeros_like(g[0]), jnp.zeros_like(g[1]))
    zero = jnp.zeros((), g[0].dtype)

    def cond(c):
        return ~c[-1]

    def body(c):
        s, r, d, zr, Q, k, _ = c
        Hd = hess(d)
        dHd = dot(d, Hd)
        flat = ~(dHd > jnp.finfo(dHd.dtype).tiny * 1e6)  # no curvature left along d (or nan)
        a = jnp.where(flat, 0.0, zr / jnp.where(flat, 1.0, dHd))
        s = axpy(a, d, s)
        r = axpy(-a, Hd, r)
        Qn = -0.5 * (dot(s, r) - dot(s, g))  # the quadratic model at s (<= 0)
        rr = dot(r, r)
        quad_rule = ((k + 1) * (Qn - Q) >= eta * Qn) & (rr <= 0.25 * gg)
        done = flat | quad_rule | (rr <= target) | (Qn > 0) | (k + 1 >= iters)
        z = (r[0] / M[0], r[1] / M[1])
        zr_new = dot(z, r)
        beta = zr_new / jnp.where(zr > 0, zr, 1.0)
        d = axpy(beta, d, z)
        return s, r, d, zr_new, Qn, k + 1, done

    s, *_, k, _ = lax.while_loop(cond, body, (s0, r, z, zr, zero, jnp.asarray(0, jnp.int32),
                                               gg <= jnp.finfo(zr.dtype).tiny))
    return s, k


newton = Newton()
"""Truncated Newton (line search, Jacobi-preconditioned CG) with its defaults: ``solve(X, y, loss=squared_hinge, method=newton)``."""
