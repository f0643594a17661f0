"""The Loss type: a small immutable pytree of pure functions of the margin.

A loss is l(m) with m = y (w.x + b). Its numeric parameters (p, mu, a
per-sample smoothing vector) are pytree leaves, so a jitted solver is
compiled once per loss *family* and can be vmapped over a parameter.
The functions (the "family") are static and compared by identity.

What each solver may ask of a loss:
  value(m), derivative(m)       everything
  prox(v, gamma)                ALM: argmin_m gamma*l(m) + (m - v)^2 / 2
  smoothed(mu), curvature       NESVM: a smooth surrogate and its Lipschitz constant
  dual                          dual CD / duality gaps: the conjugate, as a box and a diagonal

Asking for something a loss cannot provide raises ``MissingCapability``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["Loss", "LossFamily", "DualDescription", "MissingCapability", "prox_newton"]


class MissingCapability(TypeError):
    """A solver asked a loss or regularizer for something it does not provide."""


@dataclass(frozen=True)
class DualDescription:
    """The conjugate of a loss in the form dual solvers consume.

    With a = alpha_i / (C s_i) the normalised dual variable, the dual objective
    contributes  C s_i * dual_value(a)  with  dual_value(a) = -l*(-a), and a lies in
    the box [lower, upper].  When dual_value(a) = lin * a - l1 * |a| - quad * a^2 exactly, the
    dual is "box plus diagonal" (LIBLINEAR's U and D): U_i = upper * C s_i and
    D_ii = 2 quad / (C s_i).  ``quad`` is None when the conjugate is not of that form; ``linear``
    (per sample, default 1) and ``l1`` (default 0) are the regression losses' target and epsilon
    (LIBLINEAR's SVR duals: lin = t_i, l1 = epsilon). ``rhs`` is the right-hand side of the
    intercept's dual constraint y^T alpha = rhs: 0 for the losses of Section 1; the one-class SVM's
    primal has the term rhs * b besides its loss (b = -rho, rhs = 1: SPEC section 7).
    """

    lower: float
    upper: float
    dual_value: Callable[[Any, Any], Any]  # (params, a) -> -l*(-a)
    quad: Optional[Callable[[Any], Any]] = None  # params -> quad coefficient (may be per sample)
    linear: Optional[Callable[[Any], Any]] = None  # params -> the coefficient of a (per sample), None: 1
    l1: Optional[Callable[[Any], Any]] = None  # params -> the weight of |a|, None: 0
    rhs: float = 0.0  # y^T alpha = rhs (static); the primal then has rhs * b


@dataclass(frozen=True, eq=False)
class LossFamily:
    """The static part of a loss: pure functions of (params, margin)."""

    name: str
    value: Callable
    derivative: Callable
    prox: Optional[Callable] = None  # (params, v, gamma) -> m
    curvature: Optional[Callable] = None  # params -> sup |l''| (Lipschitz constant of l')
    smooth: bool = False  # differentiable with a Lipschitz derivative
    differentiable: Optional[bool] = None  # defaults to ``smooth``; Lp hinge with 1 < p < 2 is, but not smooth
    smoothed: Optional[Callable] = None  # (params, mu) -> Loss
    dual: Optional[DualDescription] = None
    describe: Callable = lambda params: ""
    bind: Optional[Callable] = None  # (params, row_inf_norms) -> params
    kink: Optional[float] = None  # margin of a kink between two linear pieces (the hinge: 1)
    target: bool = False  # a loss of the residual: needs the targets t (``Loss.with_targets``), y = 1

    # families are compared by identity (jit cache keys): copies must stay the same object,
    # or sklearn's clone (a deepcopy) would trigger a recompilation per clone
    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


@dataclass(frozen=True, eq=False)
class Composite:
    """A ``family`` of static functions with its runtime numbers ``params``: a pytree whose leaves
    are the params (a new value never recompiles) and whose structure is the family. Losses and
    regularizers are composites."""

    family: Any
    params: Any = field(default_factory=dict)

    def tree_flatten(self):
        return (self.params,), self.family

    @classmethod
    def tree_unflatten(cls, family, children):
        return cls(family, children[0])

    @property
    def name(self) -> str:
        return self.family.name


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True, eq=False)
class Loss(Composite):
    """A loss of the margin: ``family`` (static functions, a ``LossFamily``) and ``params`` (pytree)."""

    def __repr__(self) -> str:
        try:
            extra = self.family.describe(self.params)
        except (TypeError, jax.errors.ConcretizationTypeError):  # traced parameters
            extra = "traced"
        return f"{self.family.name}({extra})" if extra else self.family.name

    def value(self, m):
        return self.family.value(self.params, m)

    def derivative(self, m):
        return self.family.derivative(self.params, m)

    def prox(self, v, gamma):
        """argmin_m gamma * l(m) + (m - v)^2 / 2, elementwise (gamma > 0, may be per sample)."""
        if self.family.prox is None:
            raise MissingCapability(f"loss {self!r} has no proximal map (prox)")
        return self.family.prox(self.params, v, gamma)

    @property
    def is_smooth(self) -> bool:
        return self.family.smooth

    @property
    def is_differentiable(self) -> bool:
        d = self.family.differentiable
        return self.family.smooth if d is None else d

    def curvature(self):
        """Lipschitz constant of l' (sup of l''); per sample for per-sample smoothing."""
        if self.family.curvature is None:
            raise MissingCapability(
                f"loss {self!r} has no Lipschitz-continuous derivative (curvature); "
                "smooth it first with .smoothed(mu)"
            )
        return self.family.curvature(self.params)

    def smoothed(self, mu) -> "Loss":
        """Nesterov-smoothed version with smoothing parameter mu (itself if already smooth)."""
        if self.family.smooth:
            return self
        if self.family.smoothed is None:
            raise MissingCapability(f"loss {self!r} has no smoothed form (smoothed)")
        return self.family.smoothed(self.params, mu)

    @property
    def dual(self) -> DualDescription:
        if self.family.dual is None:
            raise MissingCapability(f"loss {self!r} has no dual description (dual)")
        return self.family.dual

    @property
    def has_dual(self) -> bool:
        return self.family.dual is not None

    def dual_value(self, a):
        """-l*(-a) for the normalised dual variable a (outside the box: -inf)."""
        d = self.dual
        v = d.dual_value(self.params, a)
        inside = (a >= d.lower) & (a <= d.upper)
        return jnp.where(inside, v, -jnp.inf)

    def box_diagonal(self):
        """(lower, upper, quad) when the dual is box-plus-diagonal, else MissingCapability."""
        d = self.dual
        if d.quad is None:
            raise MissingCapability(
                f"loss {self!r} has no box-plus-diagonal dual (what dual_cd, dual_newton, alfpgm and the cutting "
                "plane solve); method=newton (a twice-differentiable loss, linear models), alm or nesvm take it"
            )
        return d.lower, d.upper, d.quad(self.params)

    def dual_terms(self):
        """(lin, eps) of a box-plus-diagonal dual (``DualDescription``): 1 and 0 for classification."""
        d = self.dual
        return (1.0 if d.linear is None else d.linear(self.params)), (0.0 if d.l1 is None else d.l1(self.params))

    @property
    def needs_targets(self) -> bool:
        """A loss of the residual t - f (regression): ``with_targets`` gives it the targets."""
        return self.family.target

    def with_targets(self, t) -> "Loss":
        """The loss bound to real targets t (n,): a regression problem's rows have y = 1 and
        margin m = f, the loss measures m against t_i."""
        if not self.family.target:
            raise MissingCapability(f"loss {self!r} is a classification loss of the margin y f; a regression needs a "
                                    "loss of the residual (svmopt.losses.epsilon_insensitive, squared_error, ...)")
        return Loss(self.family, {**self.params, "t": t})

    def bind(self, row_inf_norms) -> "Loss":
        """Attach per-sample data a loss needs (NESVM's ||x_i||_inf weight); identity otherwise."""
        if self.family.bind is None:
            return self
        return Loss(self.family, self.family.bind(self.params, row_inf_norms))


def prox_newton(derivative, second, v, gamma, *, max_iter: int = 60):
    """Safeguarded, vectorised Newton for argmin_m gamma*l(m) + (m - v)^2/2, l convex.

    Solves phi(m) = gamma l'(m) + m - v = 0, which is increasing in m. The root lies
    between v and v - gamma l'(v) (convexity of l), so Newton steps that leave the
    current bracket are replaced by bisection. Stops when every entry has converged.
    """
    d0 = derivative(v)
    a = v
    b = v - gamma * d0
    lo = jnp.minimum(a, b)
    hi = jnp.maximum(a, b)
    eps = jnp.finfo(jnp.result_type(v)).eps

    def phi(m):
        return gamma * derivative(m) + m - v

    def cond(s):
        lo, hi, m, k, width = s
        return (k < max_iter) & jnp.any(width > 0)

    def body(s):
        lo, hi, m, k, _ = s
        f = phi(m)
        lo = jnp.where(f < 0, m, lo)
        hi = jnp.where(f > 0, m, hi)
        newton = m - f / (gamma * second(m) + 1.0)
        mid = 0.5 * (lo + hi)
        ok = (newton > lo) & (newton < hi)
        m_new = jnp.where(f == 0, m, jnp.where(ok, newton, mid))
        step = jnp.abs(m_new - m)
        tol = 4 * eps * (1.0 + jnp.abs(m_new))
        width = jnp.where((step <= tol) | (hi - lo <= tol), 0.0, hi - lo)
        return lo, hi, m_new, k + 1, width

    m0 = 0.5 * (lo + hi)
    init = (lo, hi, m0, jnp.asarray(0), hi - lo + 1.0)
    _, _, m, _, _ = lax.while_loop(cond, body, init)
    return m
