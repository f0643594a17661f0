"""Implicit differentiation of the solution (w, b) of SPEC section 1 (never by unrolling).

``attach(summary, pb)`` returns the summary with (w, b) made differentiable with respect
to every float leaf of the problem: C, the sample weights s, the data X (dense values
or the sparse values), the labels, and the numeric parameters of the loss and the
regularizer (p of the Lp hinge, mu of a smoothing). The objectives are recomputed from
(w, b) so their gradients follow too (at the optimum dP*/dp = dP/dp, the envelope
theorem).

Smooth case (a differentiable loss and regularizer: squared hinge, Lp with p > 1,
logistic, smoothed hinge, least squares; l2 or smoothed l1). With theta = (w, b) the
optimality condition is F(theta, p) = grad_theta P(theta; p) = 0, so
dtheta/dp = -H^{-1} dF/dp with H = grad^2_theta P (the generalized Hessian where l''
jumps, e.g. the squared hinge at margin 1). The VJP solves H u = ct by conjugate
gradients on Hessian-vector products (two passes over X each) and returns
-(dF/dp)^T u.

Hinge (piecewise linear: ``loss.family.kink``). P has no Hessian; the derivative is the
one of the *active-set* KKT system, valid where the sets E = {i: y_i f_i = 1} (free
support vectors), L = {y_i f_i < 1} and R = {y_i f_i > 1} do not change under a small
change of p (almost everywhere). With a_i = alpha_i on E, C s_i on L, 0 on R:

    w = sum_i a_i y_i x_i,   sum_i a_i y_i = 0 (with a free b),   y_i (w.x_i + b) = 1 on E.

Differentiating this system (unknowns w, b, alpha_E) gives a symmetric saddle-point
system in (alpha_E, b) with matrix [Q_EE y_E; y_E^T 0], Q_EE = (y_i y_j x_i.x_j) on E,
solved by conjugate gradients projected onto y_E^T z = 0. E is read from the margins:
|y_i f_i - 1| <= ``KINK_TOL`` (solve to a tight tol when you differentiate a hinge SVM).
Where the active set changes the solution is not differentiable and the result is one
of its one-sided derivatives.

Not differentiable here: non-smooth regularizers (l1, elastic net) and kernel models
(asking raises NotImplementedError when the gradient is taken).
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax.scipy.sparse.linalg import cg

from .problem import Problem, dual_objective, primal_objective, project_dual

__all__ = ["attach", "KINK_TOL"]

KINK_TOL = 1e-6
"""Margins within this of a kink count as on the margin (set E), float64 (KINK_TOL32: float32)."""
KINK_TOL32 = 1e-3


def _split(pb: Problem):
    leaves, tree = jax.tree_util.tree_flatten(pb)
    isf = tuple(bool(jnp.issubdtype(jnp.result_type(x), jnp.inexact)) for x in leaves)
    fl = [x for x, f in zip(leaves, isf) if f]
    il = [x for x, f in zip(leaves, isf) if not f]
    return fl, il, (tree, isf)


def _merge(fl, il, meta):
    tree, isf = meta
    fl, il = iter(fl), iter(il)
    return jax.tree_util.tree_unflatten(tree, [next(fl) if f else next(il) for f in isf])


def attach(out, pb: Problem):
    """The summary with differentiable w, b (and objectives recomputed from them)."""
    fl, il, meta = _split(pb)
    w, b = _solution(meta, out.w, out.b, fl, il)
    if pb.kernel is not None:
        return out._replace(w=w, b=b)
    f = pb.op.matvec(w) + b
    primal = primal_objective(pb, w, b, f)
    dual = out.dual
    if pb.loss.has_dual and pb.reg.has_conjugate and "alpha" in out.extras:
        dual = dual_objective(pb, project_dual(pb, jax.lax.stop_gradient(out.extras["alpha"])))[0]
        dual = jnp.where(jnp.isfinite(out.dual), jnp.maximum(dual, out.dual), dual)
    return out._replace(w=w, b=b, primal=primal, dual=dual, gap=primal - dual)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _solution(meta, w, b, fl, il):
    return w, b


def _fwd(meta, w, b, fl, il):
    return (w, b), (w, b, fl, il)


def _bwd(meta, res, ct):
    w, b, fl, il = res
    ct_w, ct_b = ct
    pb = _merge(fl, il, meta)
    if pb.kernel is not None:
        raise NotImplementedError("implicit differentiation of kernel models is not available; "
                                  "differentiate a linear model (kernel=None)")
    if not pb.reg.is_smooth and pb.reg.quadratic is None:
        raise NotImplementedError(f"implicit differentiation needs a twice-differentiable regularizer; "
                                  f"{pb.reg!r} is not (use l2 or smoothed_l1)")
    if getattr(pb.loss.family, "kink", None) is not None:
        ct_fl = _bwd_kink(meta, w, b, fl, il, ct_w, ct_b)
    elif pb.loss.is_differentiable:
        ct_fl = _bwd_smooth(meta, w, b, fl, il, ct_w, ct_b)
    else:
        raise NotImplementedError(f"implicit differentiation needs a differentiable loss or the hinge; "
                                  f"{pb.loss!r} is neither")
    return jnp.zeros_like(w), jnp.zeros_like(b), ct_fl, [None] * len(il)


_solution.defvjp(_fwd, _bwd)


def _cg_tol(dtype):
    return 1e-12 if jnp.dtype(dtype) == jnp.float64 else 1e-6


def _bwd_smooth(meta, w, b, fl, il, ct_w, ct_b):
    pb0 = _merge(fl, il, meta)
    fi = pb0.fit_intercept

    def F(theta, fl):
        pb = _merge(fl, il, meta)
        tw, tb = theta
        m = pb.y * (pb.op.matvec(tw) + tb)
        u = pb.cs * pb.y * pb.loss.derivative(m)
        gw = pb.reg.grad(tw) + pb.op.rmatvec(u)
        gb = jnp.sum(u) if fi else jnp.zeros_like(tb)
        return gw, gb

    theta = (w, b)

    def H(v):
        hv = jax.jvp(lambda t: F(t, fl), (theta,), (v,))[1]
        # no intercept: b is not a variable, keep its direction an identity (decoupled)
        return hv if fi else (hv[0], v[1])

    rhs = (ct_w, ct_b if fi else jnp.zeros_like(ct_b))
    u, _ = cg(H, rhs, tol=_cg_tol(w.dtype), maxiter=4 * (w.shape[0] + 1) + 50)
    _, vjp = jax.vjp(lambda fl_: F(theta, fl_), fl)
    (ct_fl,) = vjp((-u[0], -u[1] if fi else jnp.zeros_like(u[1])))
    return ct_fl


def _bwd_kink(meta, w, b, fl, il, ct_w, ct_b):
    pb0 = _merge(fl, il, meta)
    fi = pb0.fit_intercept
    dt = w.dtype
    tol = KINK_TOL if jnp.dtype(dt) == jnp.float64 else KINK_TOL32
    kink = pb0.loss.family.kink
    m = jax.lax.stop_gradient(pb0.y * (pb0.op.matvec(w) + b))
    live = pb0.cs > 0
    E = live & (jnp.abs(m - kink) <= tol)
    L = live & (m < kink - tol)
    Ef = E.astype(dt)
    e = pb0.y * Ef  # (n,)
    nE = jnp.maximum(jnp.sum(Ef), 1.0)

    def A(v):  # (d,) -> (n,): rows y_i x_i on E
        return e * pb0.op.matvec(v)

    def At(z):  # (n,) -> (d,)
        return pb0.op.rmatvec(e * z)

    def Q(z):
        return A(At(z))

    def proj(z):  # onto e^T z = 0 within E (no intercept: only restrict to E)
        z = z * Ef
        return z - e * (jnp.vdot(e, z) / nE) if fi else z

    # alpha on E from w = X^T (y a): least squares on the E rows (same operator)
    vL = pb0.op.rmatvec(pb0.y * jnp.where(L, pb0.cs, 0.0))
    rhs_a = A(w - vL)
    alpha_E, _ = cg(lambda z: Q(z * Ef) * Ef + (1 - Ef) * z, rhs_a * Ef, tol=_cg_tol(dt), maxiter=2 * pb0.n + 50)
    alpha_E = alpha_E * Ef

    # the adjoint system: [Q e; e^T 0][u_a; u_b] = [A ct_w; ct_b]
    r = A(ct_w)
    u0 = e * (ct_b / nE) if fi else jnp.zeros_like(r)
    rhs = proj(r - Q(u0))
    z, _ = cg(lambda v: proj(Q(proj(v))) + (1 - Ef) * v, rhs, tol=_cg_tol(dt), maxiter=2 * pb0.n + 50)
    u_a = u0 + proj(z)
    u_b = jnp.vdot(e, r - Q(u_a)) / nE if fi else jnp.zeros((), dt)
    u_w = ct_w - At(u_a)

    def Fp(fl_):
        pb = _merge(fl_, il, meta)
        a = jnp.where(E, alpha_E, jnp.where(L, pb.cs, 0.0))
        Fw = w - pb.op.rmatvec(pb.y * a)
        Fb = jnp.vdot(pb.y, a) if fi else jnp.zeros((), dt)
        FE = Ef * (pb.y * (pb.op.matvec(w) + b) - kink)
        return Fw, Fb, FE

    _, vjp = jax.vjp(Fp, fl)
    (ct_fl,) = vjp((-u_w, -u_b, -u_a))
    return ct_fl
