"""Proximal Newton for l1-regularized linear models (newGLMNET; LIBLINEAR's -s 6, and -s 5's problem).

For  P(w, b) = lam ||w||_1 + S(w, b),  S = (1 - lam)/2 ||w||^2 + sum_i C s_i l(y_i (w.x_i + b))
(``l1``: lam = 1; ``elastic_net(ratio)``: lam = ratio) with l twice differentiable (the logistic
loss, the squared hinge with its generalized second derivative, least squares, Lp hinge), one outer
step (Yuan, Ho & Lin 2012) is

  1. G = grad S at w (one X^T u), D_i = C s_i l''(y_i f_i) (f = X w + b);
  2. the outer active set: a coordinate at 0 whose |G_j| is below lam by more than M / n (M the
     largest violation of the optimality conditions at the previous step) stays at 0 (Section 3.3);
  3. the direction d approximately minimizes the quadratic model with the l1 term,
        G.d + 1/2 d^T (X^T D X + (1 - lam + nu) I) d + lam ||w + d||_1,
     by coordinate descent over the active columns (``svmopt._l1cd``: compiled or pure JAX, one
     call per step, with its own shrinking), until the sum of violations of the model's optimality is
     below ``inner_eps`` x that of the first step (inner_eps starts at 1 and is quartered whenever
     one pass was enough: the model is easy, solve it more exactly; as in the paper) or, when
     smaller, below the forcing term min(0.5, sqrt(v / v0)) v of the current outer violation v
     (``forcing``), at most ``inner_passes``; where the passes run out (an ill-conditioned model:
     collinear one-hot columns, a free intercept's column of ones beside the features) on tall data
     (rows >= features), conjugate gradients on the model restricted to the nonzeros of w + d, their
     signs fixed (``refine`` iterations at most, to ``refine_tol`` x the first residual); the best by
     the model of the passes' point, the CG point cut at its first sign change and the CG point with
     the crossed coordinates set to 0, no coordinate moved by more than 10, not after a failed
     search. A CG iteration reads all of X (two products), so on wide data, where the passes read
     only the few active columns, it is not run;
  4. the step: t = 1, halved while P(w + t d) > P(w) + sigma t Delta, Delta = G.d + lam (||w + d||_1
     - ||w||_1) (Armijo for composite objectives, Tseng & Yun 2009; sigma = 0.01), at most 20
     halvings; f is recomputed as X w + b after the step (one product), so round-off in X d never
     accumulates into the certificate.

Stopping: the relative duality gap (P - D)/|P| <= tol, every method's rule, with the dual point
alpha = -C s l'(margin) (projected onto y^T alpha = 0 with a free intercept; scaled into
||X^T (alpha y)||_inf <= 1 by the regularizer's ``dual_scale``), computed after every step from the
same X^T u as the gradient. Newton's fast local convergence makes that dual point feasible to the
last digits, where proximal gradient steps (``alm``) may not certify. STALLED when neither the
objective (by ``obj_tol``) nor the gap (by 1%) improved in ``patience`` steps.

Needs unsharded dense or CSR X. The inner solve is the compiled CPU kernel where it is built
(float32 / float64 data on the CPU), else the same passes in pure JAX (``impl``). ``auto`` picks
this method for l1 and elastic net with a twice-differentiable loss (see ``svmopt.solvers.auto``)
and hands a run that stalls to ``alm`` from its point. Memory: X's columns are held once more for the
solve (CSC of a CSR X, or the transpose of a dense one). Cost: a step is one kernel call (its passes
read X's nonzeros of the active columns twice each), at most ``refine`` pairs of products with X
where the passes ran out, a few products with X (the new f, the gradient, the certificate) and
O(n + d) per halving of the search. Measurements: docs/auto.md (``python -m bench.l1``).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from .. import _l1cd
from ..problem import Problem, dual_objective, project_dual
from ..result import Status
from .base import PRIMAL, RESUME, Iterate, Method, Start, check_positive, finite_gap, platform, require, second, \
    start_or, stall_update, static

__all__ = ["NewGLMNET", "newglmnet"]

MOVE = 10.0  # the largest move of one coordinate by the CG refinement (the kernel's bound per visit)
NU = 1e-12  # added to the model's diagonal (LIBLINEAR's nu): a column on rows of zero curvature stays finite


class NewGLMNETState(NamedTuple):
    w: Any
    b: Any
    f: Any  # X w + b
    G: Any  # grad of the smooth part at (w, b), w-part
    gb: Any  # its b-part (0 without a free intercept)
    obj: Any
    crit: Any
    dual: Any  # D(alpha) of crit
    alpha: Any  # (n,) its dual point, -C s l'(margin) projected
    M: Any  # largest violation at the previous step (outer shrinking); inf: shrink nothing
    norm0: Any  # sum of violations at the start (the inner tolerance's unit)
    inner_eps: Any
    passes: Any  # inner passes so far (diagnostic)
    step: Any  # the last step length
    k: Any  # outer steps (the inner order's seed)
    best: Any
    since: Any
    cols: Any  # X's columns for the kernel (built once per solve)


def _weights(pb: Problem):
    """(lam, l2 weight): l1 -> (1, 0), elastic_net(ratio) -> (ratio, 1 - ratio)."""
    dt = pb.dtype
    if pb.reg.name == "elastic_net":
        r = jnp.asarray(pb.reg.params["ratio"], dt)
        return r, 1.0 - r
    return jnp.ones((), dt), jnp.zeros((), dt)


@dataclasses.dataclass(frozen=True)
class NewGLMNET(Method):
    """Proximal Newton with a coordinate-descent inner solve. Runtime numbers:

    tol            relative duality gap to certify (default 1e-3)
    inner_passes   cap on the inner passes of one step (default 100)
    inner_eps0     the inner tolerance's start, in multiples of the first step's violation (1.0)
    sigma          the line search's sufficient decrease (0.01)
    obj_tol, patience   the safeguard: STALLED when neither the objective improved by obj_tol (1e-10,
                        relative; at least 2 roundings of the dtype) nor the gap by 1% in ``patience`` (20)
                        steps. ``auto`` then hands the problem to ``alm`` from this point
    forcing        1 (default): the inner tolerance is also at most min(0.5, sqrt(v / v0)) v, v the
                   current sum of violations (0: LIBLINEAR's rule alone)
    shrink         outer shrinking (default on; runtime number, 0 / 1)
    refine         cap on the CG iterations on the model's free set after passes that hit their cap,
                   on tall data (default 50; 0: coordinate descent alone, LIBLINEAR's -s 6)
    refine_tol     CG stops when the residual is below this fraction of its start (0.1)
    impl           the inner solve (static): "auto" (default: the compiled kernel of ``svmopt._l1cd``
                   where it is built, float32/float64 data on the CPU, else pure JAX), "xla" (always
                   pure JAX), "ffi" (the kernel; an error where it is not available)
    """

    tol: float = 1e-3
    inner_passes: int = 100
    inner_eps0: float = 1.0
    sigma: float = 0.01
    obj_tol: float = 1e-10
    patience: int = 20
    shrink: bool = True
    forcing: float = 1.0
    refine: int = 50
    refine_tol: float = 0.1
    impl: str = static("auto")

    name = "newglmnet"
    batchable = False  # the kernel runs the lanes of a vmap one after another

    def validate(self, pb: Problem) -> None:
        require(pb.kernel is None, "newglmnet is a linear solver; for a kernel use method=alfpgm or nesvm")
        require(pb.reg.name in ("l1", "elastic_net"),
                f"newglmnet solves l1 and elastic-net problems; {pb.reg!r} is neither (for l2 use method=newton)")
        require(pb.loss.is_differentiable,
                f"newglmnet needs a twice-differentiable loss; {pb.loss!r} has a kink (use method=alm)")
        require(pb.loss.has_dual, f"newglmnet certifies a duality gap: loss {pb.loss!r} needs a dual")
        require(pb.op.layout in ("dense", "sparse"),
                "newglmnet needs unsharded dense or CSR X (its inner solve walks columns on one device)")
        if self.impl not in _l1cd.IMPLS:
            raise ValueError(f"newglmnet impl must be one of {_l1cd.IMPLS}, got {self.impl!r}")
        if self.impl == "ffi" and not self.native(pb):
            raise ValueError("newglmnet(impl='ffi') needs its compiled CPU kernel (svmopt._l1cd_ffi, built by "
                             "`pip install -e .`) and float32/float64 data on the CPU; here: "
                             f"built={_l1cd.available()}, dtype={pb.dtype}, platform={platform(pb)!r}")
        check_positive(self, "inner_passes", "patience", integer=True)
        check_positive(self, "refine", integer=True, allow_zero=True)
        check_positive(self, "inner_eps0", "sigma", "refine_tol")
        check_positive(self, "obj_tol", allow_zero=True)

    def native(self, pb) -> bool:
        """Whether the inner solve runs as the compiled CPU kernel (``svmopt._l1cd``) on ``pb``."""
        return (self.impl != "xla" and platform(pb) == "cpu" and jax.default_backend() == "cpu"
                and _l1cd.supports(pb.dtype) and _l1cd.available())

    def _inner(self, pb) -> str:
        return "ffi" if self.native(pb) else "xla"

    def default_max_iter(self, pb) -> int:
        return 500

    def aux_template(self, pb):
        dt = pb.dtype
        return dict(M=jnp.full((), jnp.inf, dt), norm0=jnp.zeros((), dt), inner_eps=jnp.ones((), dt),
                    best=jnp.full((2,), jnp.inf, dt), since=jnp.zeros((), jnp.int32))

    def init(self, pb: Problem, start: Start) -> NewGLMNETState:
        dt = pb.dtype
        w, b = start_or(start, PRIMAL, (start.w, start.b), (jnp.zeros((pb.d,), dt), jnp.zeros((), dt)))
        if not pb.fit_intercept:
            b = jnp.zeros((), dt)
        f = pb.op.matvec(w) + b
        G, gb, obj, crit, dual, alpha = _measure(pb, w, b, f)
        fresh = dict(self.aux_template(pb), inner_eps=jnp.asarray(self.inner_eps0, dt),
                     norm0=_violation(pb, w, G, gb, jnp.full((), jnp.inf, dt))[2])
        aux = start_or(start, RESUME, start.aux, fresh)
        return NewGLMNETState(w=w, b=b, f=f, G=G, gb=gb, obj=obj, crit=crit, dual=dual, alpha=alpha, M=aux["M"],
                               norm0=aux["norm0"], inner_eps=aux["inner_eps"], passes=jnp.asarray(0, jnp.int32),
                               step=jnp.ones((), dt), k=jnp.asarray(0, jnp.int32), best=aux["best"],
                               since=aux["since"], cols=_l1cd.columns(pb.op, self._inner(pb)))

    def step(self, pb: Problem, st: NewGLMNETState) -> NewGLMNETState:
        dt = pb.dtype
        lam, l2w = _weights(pb)
        fb = pb.fit_intercept
        M = jnp.where(jnp.asarray(self.shrink, bool), st.M, jnp.inf)
        active, Mnew, now = _violation(pb, st.w, st.G, st.gb, M)
        D = pb.cs * second(pb.loss, pb.y * st.f)
        w0, G0 = st.w, st.G
        if fb:
            w0, G0 = jnp.append(st.w, st.b), jnp.append(st.G, st.gb)
            active = jnp.append(active, True)
        forced = jnp.minimum(0.5, jnp.sqrt(now / jnp.maximum(st.norm0, jnp.finfo(dt).tiny))) * now
        inner_tol = jnp.where(self.forcing > 0, jnp.minimum(st.inner_eps * st.norm0, forced), st.inner_eps * st.norm0)
        params = jnp.stack([lam, l2w + NU, inner_tol,
                            jnp.asarray(self.inner_passes, dt)]).astype(dt)
        bits = jnp.stack([jnp.uint32(0x9E3779B9) + st.k.astype(jnp.uint32), jnp.uint32(0x85EBCA6B)])
        wpd, q, stats = _l1cd.solve(w0, G0, D, st.cols, active, params, bits, self._inner(pb))
        if pb.n >= pb.d:  # tall data (see ``refine``)
            # not after a failed search: the CD direction alone, as before the refinement, gets its chance
            capped = (stats[0] >= self.inner_passes) & (jnp.asarray(self.refine) > 0) & (st.step > 0)
            wpd, q = lax.cond(capped, lambda a: _refine(pb, w0, G0, D, a[0], a[1], lam, l2w + NU, self.refine,
                                                         self.refine_tol), lambda a: a, (wpd, q))
        dw = wpd[:pb.d] - st.w
        db = wpd[pb.d] - st.b if fb else jnp.zeros((), dt)
        delta = jnp.vdot(st.G, dw) + st.gb * db + lam * (jnp.sum(jnp.abs(st.w + dw)) - jnp.sum(jnp.abs(st.w)))

        def phi(t):
            return pb.reg.value(st.w + t * dw) + jnp.sum(pb.cs * pb.loss.value(pb.y * (st.f + t * q)))

        def cond(c):
            t, val, j = c
            return (val > st.obj + self.sigma * t * delta) & (j < 20)

        def body(c):
            t, _, j = c
            return 0.5 * t, phi(0.5 * t), j + 1

        one = jnp.ones((), dt)
        t, val, _ = lax.while_loop(cond, body, (one, phi(one), 0))
        ok = (val <= st.obj + self.sigma * t * delta) & (delta < 0)
        t = jnp.where(ok, t, 0.0)
        w, b = st.w + t * dw, st.b + t * db
        f = pb.op.matvec(w) + b  # afresh: X d's round-off does not accumulate
        G, gb, obj, crit, dual, alpha = _measure(pb, w, b, f)
        # a step that needed only one inner pass: the model was easy, solve the next one more exactly
        inner_eps = jnp.where(stats[0] <= 1, 0.25 * st.inner_eps, st.inner_eps)
        # a failed search: look at every coordinate again (shrinking may have hidden the way down)
        Mnext = jnp.where(ok, Mnew, jnp.inf)
        # an objective change below two roundings is none (float32 steps of round-off size would go on)
        best_obj, since_obj = stall_update(st.best[0], st.since, obj, jnp.maximum(self.obj_tol, 2 * jnp.finfo(dt).eps))
        best_gap, since_gap = stall_update(st.best[1], st.since, crit, 0.01)
        return NewGLMNETState(w=w, b=b, f=f, G=G, gb=gb, obj=obj, crit=crit, dual=dual, alpha=alpha, M=Mnext,
                               norm0=st.norm0,
                               inner_eps=inner_eps, passes=st.passes + stats[0].astype(jnp.int32), step=t,
                               k=st.k + 1, best=jnp.stack([best_obj, best_gap]),
                               since=jnp.minimum(since_obj, since_gap), cols=st.cols)

    def progress(self, pb, st):
        return st.obj, st.dual  # measured at every step

    def check(self, pb, st: NewGLMNETState):
        return jnp.where(st.crit <= self.tol, Status.CONVERGED,
                         jnp.where(st.since >= self.patience, Status.STALLED, -1))

    def own_objectives(self, pb) -> bool:
        # every step measures P from a fresh X w and the gap of -C s l'(margin), projected: the
        # driver's certificate and the summary's would compute the same again, compiled into every program
        return True

    def objectives(self, pb, st: NewGLMNETState, it: Iterate):
        """The step's own P (from X w afresh), D(alpha) and alpha: no product."""
        return st.obj, st.dual, st.alpha

    def finalize(self, pb, st: NewGLMNETState) -> Iterate:
        # the dual point goes to the driver through ``objectives``
        return Iterate(st.w, st.b, None, {"criterion": st.crit, "inner_passes": st.passes, "step": st.step})

    def carry(self, pb, st: NewGLMNETState) -> Start:
        return Start(st.w, st.b, jnp.zeros((pb.n,), st.w.dtype), jnp.asarray(PRIMAL, jnp.int32),
                     dict(M=st.M, norm0=st.norm0, inner_eps=st.inner_eps, best=st.best, since=st.since))

    def advice(self, status) -> str | None:
        return "raise max_iter, or try method=alm (proximal steps) for this problem"


def _refine(pb: Problem, w0, G0, D, wpd, q, lam, c, iters, rtol):
    """Conjugate gradients on the model restricted to the nonzeros of w + d with their signs fixed
    (the intercept free): where coordinate descent ran out of passes on an ill-conditioned model,
    CG takes the sqrt of its condition number. The best of CD's point, the CG point truncated at
    the first sign change, and the CG point with crossed coordinates set to 0, by the model."""
    dt = wpd.dtype
    d = pb.d
    fb = wpd.shape[0] > d
    F = wpd != 0
    lamv = jnp.full(wpd.shape, lam, dt)
    if fb:
        F = F.at[d].set(True)
        lamv = lamv.at[d].set(0.0)
    s = jnp.sign(wpd)

    def xv(v):
        return pb.op.matvec(v[:d]) + (v[d] if fb else 0.0)

    def xtu(u):
        g = pb.op.rmatvec(u)
        return jnp.append(g, jnp.sum(u)) if fb else g

    def model(dv, qv):
        l1 = jnp.sum(lamv * (jnp.abs(w0 + dv) - jnp.abs(w0)))
        return jnp.vdot(G0, dv) + 0.5 * (jnp.vdot(D * qv, qv) + c * jnp.vdot(dv, dv)) + l1

    dv = wpd - w0
    r = jnp.where(F, G0 + xtu(D * q) + c * dv + lamv * s, 0.0)
    res = -r
    rr0 = jnp.vdot(res, res)

    def cond(cc):
        k, _, _, _, _, rr = cc
        return (k < iters) & (rr > rtol * rtol * rr0) & (rr > 0)

    def body(cc):
        k, x, xq, res, p, rr = cc
        Xp = xv(p)
        Hp = jnp.where(F, xtu(D * Xp) + c * p, 0.0)
        pHp = jnp.vdot(p, Hp)
        a = jnp.where(pHp > 0, rr / pHp, 0.0)
        x, xq, res = x + a * p, xq + a * Xp, res - a * Hp
        rr1 = jnp.vdot(res, res)
        p = res + (rr1 / rr) * p
        return k + 1, x, xq, res, p, jnp.where(pHp > 0, rr1, 0.0)

    zero = jnp.zeros_like(wpd)
    _, x, xq, _, _, _ = lax.while_loop(cond, body, (0, zero, jnp.zeros_like(q), res, res, rr0))
    # no coordinate moves by more than MOVE (the passes' bound per visit): a column on rows of zero
    # curvature (the smoothed or squared hinge past its kink) has only nu on the model's diagonal, and
    # CG would follow it out of the model's range of validity (the searches then fail)
    big = jnp.max(jnp.abs(x))
    lim = jnp.where(big > MOVE, MOVE / big, 1.0)
    x, xq = lim * x, lim * xq
    # truncated at the first sign change (the model decreases along x on [0, 1])
    cross = F & (lamv > 0) & (s * x < 0)
    ratio = jnp.where(cross, -wpd / jnp.where(cross, x, 1.0), jnp.inf)
    tau = jnp.minimum(1.0, jnp.min(ratio))
    zt = jnp.where(cross & (ratio <= tau), 0.0, wpd + tau * x)
    qt = q + tau * xq
    # full, the crossed coordinates set to 0 (one more product)
    zp = wpd + x
    zp = jnp.where(F & (lamv > 0) & (zp * s < 0), 0.0, zp)
    qp = q + xv(zp - wpd)
    mc, mt, mp = model(dv, q), model(zt - w0, qt), model(zp - w0, qp)
    take_t = (mt < mc) & (mt <= mp)
    take_p = (mp < mc) & (mp < mt)
    z = jnp.where(take_t, zt, jnp.where(take_p, zp, wpd))
    qz = jnp.where(take_t, qt, jnp.where(take_p, qp, q))
    return z, qz


def _violation(pb: Problem, w, G, gb, M):
    """(active (d,), largest violation, sum of violations over the active coordinates) of the
    optimality conditions of min lam ||w||_1 + S: at w_j = 0, by how much |G_j| exceeds lam;
    elsewhere |G_j + lam sign(w_j)|; the intercept |gb|. A coordinate at 0 with G_j inside
    (-lam + M/n, lam - M/n) is shrunk (inactive)."""
    lam, _ = _weights(pb)
    gp, gn = G + lam, G - lam
    at0 = w == 0
    viol = jnp.where(at0, jnp.maximum(jnp.maximum(-gp, gn), 0.0), jnp.where(w > 0, jnp.abs(gp), jnp.abs(gn)))
    edge = M / pb.n
    active = ~(at0 & (gp > edge) & (gn < -edge))
    viol = jnp.where(active, viol, 0.0)
    vb = jnp.abs(gb) if pb.fit_intercept else jnp.zeros((), w.dtype)
    return active, jnp.maximum(jnp.max(viol), vb), jnp.sum(viol) + vb


def _measure(pb: Problem, w, b, f):
    """(G, gb, P, relative gap, D, alpha) at (w, b), f = X w + b: one X^T u serves the gradient of
    the smooth part and the dual point alpha = -C s l'(margin) of the gap."""
    _, l2w = _weights(pb)
    lp = pb.loss.derivative(pb.y * f)
    u = pb.cs * pb.y * lp
    xu = pb.op.rmatvec(u)
    G = xu + l2w * w
    gb = jnp.sum(u) if pb.fit_intercept else jnp.zeros((), w.dtype)
    obj = pb.reg.value(w) + jnp.sum(pb.cs * pb.loss.value(pb.y * f))
    alpha = project_dual(pb, -pb.cs * lp)
    dual, _ = dual_objective(pb, alpha, v=None if pb.fit_intercept else -xu)
    dual = jnp.where(jnp.isfinite(dual), dual, -jnp.inf)
    return G, gb, obj, finite_gap(obj, dual), dual, alpha


newglmnet = NewGLMNET()
"""Proximal Newton (newGLMNET) for l1 / elastic net: ``solve(X, y, loss=logistic, reg=l1, method=newglmnet)``."""
