"""SVM-ALM: augmented-Lagrangian primal solver for the Lp-loss SVM (Nie et al., ICML 2014).

Splitting e_i = y_i - (w.x_i + b) turns the loss into a separable function of e,
so with multipliers lam and penalty mu (eq. 7-8) one iteration is

  1. e-update   e_i = argmin  C s_i (y_i e_i)_+^p + mu/2 (e_i - t_i)^2,
                t = y - f - lam/mu,  f = X w + b                      (eq. 10-13)
                = the loss's prox in the margin (see ``Loss.prox``)
  2. (w, b)     min 1/2 ||w||^2 + mu/2 ||X w + b - z||^2, z = y - e - lam/mu  (eq. 14)
                inexact: one gradient step with the exact line minimiser (eq. 16-18)
                exact:   conjugate gradients on the normal equations (eq. 15)
  3. lam       += mu (X w + b - y + e)                                 (eq. 9)
  4. mu        = min(rho * mu, mu_max)   (non-decreasing schedule)

Cost of an inexact iteration: X^T r and X g for the step, X^T(alpha y) for the
duality gap used to stop: three matvecs, as in the paper. f is updated in place
(f -= s X g), never recomputed.

Stopping (``criterion``):
  "gap"  (default) relative duality gap (P - D)/|P| <= tol, with alpha = -y lam (hinge)
         or -C s l'(margin) (differentiable losses) as the dual point, projected to be
         feasible. Certifies the answer; works for p = 1.
  "grad" LIBLINEAR's rule ||grad P|| <= tol * ||grad P(0)|| (paper default tol = 0.01);
         needs a differentiable loss (p > 1).
plus the objective-change safeguard: no relative improvement above ``obj_tol`` in
``patience`` iterations stops with status STALLED.
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from jax import lax

from ..problem import Problem, dual_objective, primal_objective, project_dual
from ..result import Status
from ._base import Method, require, stall_update

__all__ = ["ALM", "alm"]


@dataclasses.dataclass(frozen=True)
class ALM(Method):
    """SVM-ALM. Parameters (defaults chosen on a9a / ijcnn1, see docs):

    variant     "inexact" (Algorithm 2, default) or "exact" (Algorithm 1, CG per iteration)
    mu0         initial penalty, relative to the data: mu_1 = mu0 / (C * mean ||x_i||^2)
    rho         growth factor of mu per iteration (>= 1; 1 keeps mu fixed)
    mu_max      cap of mu, relative like mu0
    criterion   "gap" or "grad" (see module doc); tol its tolerance
    obj_tol, patience   the objective-change safeguard
    cg_iters, cg_tol    inner CG of the exact variant
    precondition        scale the inexact step (and CG) by the diagonal of the (w, b) Hessian,
                        diag(X^T X) + 1/mu and n (Jacobi); the exact line search along the
                        scaled direction keeps eq. 18's role. Off (default) = the paper's plain
                        gradient: on a9a squared hinge Jacobi is 3x faster to a 1e-4 gap but
                        stalls in the tail (5000 iterations short of 1e-5, plain needs 1566).
    """

    variant: str = "inexact"
    mu0: float = 1.0
    rho: float = 1.0
    mu_max: float = 1e6

    criterion: str = "gap"
    tol: float = 1e-3
    obj_tol: float = 1e-10
    patience: int = 1000
    cg_iters: int = 20
    cg_tol: float = 1e-6
    precondition: bool = False

    name = "alm"

    def validate(self, pb: Problem) -> None:
        require(pb.reg.name == "l2", f"alm solves l2-regularized problems only, got reg={pb.reg!r}; "
                                     "use method=nesvm for l1 / smoothed l1 / elastic net")
        pb.loss.prox(jnp.zeros(1), 1.0)  # raises MissingCapability naming 'prox'
        if self.variant not in ("inexact", "exact"):
            raise ValueError(f"alm variant must be 'inexact' or 'exact', got {self.variant!r}")
        if self.criterion not in ("gap", "grad"):
            raise ValueError(f"alm criterion must be 'gap' or 'grad', got {self.criterion!r}")
        if self.criterion == "gap":
            require(pb.loss.has_dual, f"criterion='gap' needs a dual for loss {pb.loss!r}; use criterion='grad'")
        else:
            require(pb.loss.is_differentiable,
                    f"criterion='grad' needs a differentiable loss; {pb.loss!r} is not, use criterion='gap'")
        if not self.rho >= 1.0:
            raise ValueError(f"alm needs a non-decreasing penalty schedule (rho >= 1), got rho={self.rho}")

    def default_max_iter(self, pb) -> int:
        return 5000

    # -- state: w, b, f = Xw + b, lam, mu, e, criterion value, safeguard counters, grad0
    def init(self, pb: Problem):
        dt = pb.dtype
        w = jnp.zeros((pb.d,), dt)
        b = jnp.zeros((), dt)
        f = jnp.zeros((pb.n,), dt)
        scale = pb.C * jnp.mean(pb.op.row_sq_norms()) + jnp.finfo(dt).tiny
        mu = jnp.asarray(self.mu0, dt) / scale
        lam = jnp.zeros((pb.n,), dt)
        g0 = _grad_norm(pb, w, b, f) if self.criterion == "grad" else jnp.ones((), dt)
        inf = jnp.asarray(jnp.inf, dt)
        colsq = pb.op.col_sq_norms() if self.precondition else None
        return dict(w=w, b=b, f=f, lam=lam, mu=mu, mu_cap=jnp.asarray(self.mu_max, dt) / scale,
                    e=jnp.zeros((pb.n,), dt), crit=inf, best=inf, since=jnp.asarray(0), g0=g0, colsq=colsq)

    def step(self, pb: Problem, st):
        op, y, mu = pb.op, pb.y, st["mu"]
        # 1. e-update via the loss's prox in the margin m = 1 - y e (eq. 10-13)
        t = y - st["f"] - st["lam"] / mu
        m = pb.loss.prox(1.0 - y * t, pb.cs / mu)
        e = y * (1.0 - m)
        # 2. (w, b)-update on G(w, b) = 1/(2 mu) ||w||^2 + 1/2 ||X w + b - z||^2 (eq. 14, scaled)
        z = y - e - st["lam"] / mu
        pre = _jacobi(pb, st["colsq"], mu) if self.precondition else None
        if self.variant == "inexact":
            w, b, f = _gradient_step(pb, st["w"], st["b"], st["f"], z, mu, pre)
        else:
            w, b, f = _cg_solve(pb, st["w"], st["b"], z, mu, self.cg_iters, self.cg_tol, pre)
        # 3. multipliers (eq. 9)
        lam = st["lam"] + mu * (f - y + e)
        # 4. stopping quantities
        primal = primal_objective(pb, w, b, f)
        if self.criterion == "gap":
            # the dual point: -l'(margin) for differentiable losses (exact at the optimum and
            # as accurate as the primal), the multipliers for the hinge (eq. 26: alpha = -y lam)
            if pb.loss.is_differentiable:
                alpha = -pb.cs * pb.loss.derivative(y * f)
            else:
                alpha = -y * lam
            dual, _ = dual_objective(pb, project_dual(pb, alpha))
            crit = (primal - dual) / jnp.maximum(jnp.abs(primal), jnp.finfo(primal.dtype).tiny)
        else:
            crit = _grad_norm(pb, w, b, f) / st["g0"]
        best, since = stall_update(st["best"], st["since"], primal, self.obj_tol)
        mu = jnp.minimum(mu * self.rho, st["mu_cap"])
        return dict(st, w=w, b=b, f=f, lam=lam, mu=mu, e=e, crit=crit, best=best, since=since)

    def check(self, pb, st):
        return jnp.where(st["crit"] <= self.tol, Status.CONVERGED,
                         jnp.where(st["since"] >= self.patience, Status.STALLED, -1))

    def finalize(self, pb, st):
        return st["w"], st["b"], -pb.y * st["lam"], {"mu": st["mu"], "criterion": st["crit"]}


def _grad_norm(pb: Problem, w, b, f):
    u = pb.cs * pb.y * pb.loss.derivative(pb.y * f)
    gw = w + pb.op.rmatvec(u)
    gb = jnp.sum(u) if pb.fit_intercept else 0.0
    return jnp.sqrt(jnp.vdot(gw, gw) + gb * gb)


def _jacobi(pb: Problem, colsq, mu):
    """Inverse diagonal of the Hessian of G: 1 / (||X_:j||^2 + 1/mu) for w, 1/n for b."""
    return 1.0 / (colsq + 1.0 / mu), 1.0 / pb.n


def _gradient_step(pb: Problem, w, b, f, z, mu, pre=None):
    """One (preconditioned) descent step on G with the exact minimiser along it (eq. 16-18)."""
    r = f - z
    gw = pb.op.rmatvec(r) + w / mu
    gb = jnp.sum(r) if pb.fit_intercept else jnp.zeros((), w.dtype)
    dw, db = (gw, gb) if pre is None else (pre[0] * gw, pre[1] * gb)
    q = pb.op.matvec(dw) + db  # X d_w + 1 d_b
    num = jnp.vdot(gw, dw) + gb * db
    den = jnp.vdot(q, q) + jnp.vdot(dw, dw) / mu
    s = jnp.where(den > 0, num / jnp.where(den > 0, den, 1.0), 0.0)  # eq. 18 along d
    return w - s * dw, b - s * db, f - s * q


def _cg_solve(pb: Problem, w, b, z, mu, iters, tol, pre=None):
    """Exact variant: (X^T X + I/mu) w + X^T 1 b = X^T z,  1^T X w + n b = 1^T z by CG (eq. 15)."""
    op = pb.op

    def A(v):
        vw, vb = v
        q = op.matvec(vw) + (vb if pb.fit_intercept else 0.0)
        aw = op.rmatvec(q) + vw / mu
        ab = jnp.sum(q) if pb.fit_intercept else jnp.zeros((), vw.dtype)
        return aw, ab

    rhs = (op.rmatvec(z), jnp.sum(z) if pb.fit_intercept else jnp.zeros((), w.dtype))
    M = None if pre is None else (lambda v: (pre[0] * v[0], pre[1] * v[1]))
    (w, b), _ = jax.scipy.sparse.linalg.cg(A, rhs, x0=(w, b), tol=tol, maxiter=iters, M=M)
    return w, b, op.matvec(w) + b


alm = ALM()
