"""The Section-1 problem every solver solves, and its primal/dual objectives.

    minimize over w, b:  R(w) + C * sum_i s_i * loss(y_i (w.x_i + b))

``Problem`` is a pytree (data and C are leaves; ``fit_intercept`` is static), so
a solver's core is a pure function of it and can be vmapped over C or y.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from .losses import Loss
from .regularizers import Regularizer

__all__ = ["Problem", "primal_objective", "dual_objective", "dual_loss_part", "project_dual", "primal_gradient",
           "live_mean"]


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


def project_dual(pb: Problem, alpha):
    """Make a dual candidate feasible: the loss's box, then y^T alpha = 0 with an intercept.

    alpha is in the library's scale (alpha_i = C s_i a_i). With a free intercept the
    equality is restored by shrinking the class with the larger sum (keeps the box when
    the lower bound is 0) or by a shift along y (unbounded duals).
    """
    d = pb.loss.dual
    cs = pb.cs
    lo = jnp.where(cs > 0, d.lower * cs, 0.0) if d.lower != -jnp.inf else -jnp.inf
    hi = jnp.where(cs > 0, d.upper * cs, 0.0) if d.upper != jnp.inf else jnp.inf
    alpha = jnp.clip(alpha, lo, hi)
    alpha = jnp.where(cs > 0, alpha, 0.0)
    if pb.fit_intercept:
        if d.lower == -jnp.inf and d.upper == jnp.inf:
            active = cs > 0
            alpha = alpha - jnp.where(active, pb.y, 0.0) * jnp.vdot(pb.y, alpha) / jnp.maximum(jnp.sum(active), 1)
        else:
            sp_ = jnp.sum(jnp.where(pb.y > 0, alpha, 0.0))
            sn_ = jnp.sum(jnp.where(pb.y < 0, alpha, 0.0))
            tiny = jnp.finfo(alpha.dtype).tiny
            fp = jnp.where(sp_ > sn_, sn_ / jnp.maximum(sp_, tiny), 1.0)
            fn = jnp.where(sn_ > sp_, sp_ / jnp.maximum(sn_, tiny), 1.0)
            alpha = alpha * jnp.where(pb.y > 0, fp, fn)
    return alpha


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
