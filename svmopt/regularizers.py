"""Regularizers R(w): value, gradient, prox, Lipschitz constant and conjugate.

Like losses, a regularizer is a pytree: numeric parameters (mu, ratio) are
leaves, the functions are a static family. The intercept is never passed here
(it is unregularized unless the bias-feature convention appends it to w).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import jax
import jax.numpy as jnp

from . import smoothing
from .losses import MissingCapability
from .losses.base import Composite

__all__ = ["Regularizer", "l2", "l1", "smoothed_l1", "elastic_net", "custom"]


@dataclass(frozen=True, eq=False)
class _RegFamily:
    name: str
    value: Callable
    grad: Optional[Callable]
    prox: Callable  # (params, v, t) -> argmin_w t R(w) + ||w - v||^2 / 2
    lipschitz: Optional[Callable] = None  # params -> Lipschitz constant of grad
    conjugate: Optional[Callable] = None  # (params, v) -> R*(v) on its domain
    dual_scale: Callable = lambda p, v: jnp.asarray(1.0, v.dtype)  # theta with theta v in dom R*
    primal_from_dual: Optional[Callable] = None  # (params, v) -> grad R*(v)
    smoothed: Optional[Callable] = None  # (params, mu) -> Regularizer
    quadratic: Optional[Callable] = None  # params -> c when R(w) = c/2 ||w||^2 exactly

    def __copy__(self):  # identity-compared like loss families: copies stay the same object
        return self

    def __deepcopy__(self, memo):
        return self


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True, eq=False)
class Regularizer(Composite):
    """A regularizer R(w) with its capabilities: ``value``, ``grad``, ``prox``, ``lipschitz``,
    ``conjugate`` (see the module docstring); ``params`` are its runtime numbers (pytree leaves)."""

    def __repr__(self):
        try:
            ps = ", ".join(f"{k}={float(v):g}" for k, v in self.params.items())
        except (TypeError, jax.errors.ConcretizationTypeError):  # traced parameters (a probe, a jit)
            ps = "traced"
        return f"{self.name}({ps})" if ps else self.name

    def __call__(self, w):
        return self.value(w)

    def value(self, w):
        return self.family.value(self.params, w)

    def grad(self, w):
        if self.family.grad is None:
            raise MissingCapability(f"regularizer {self!r} is not differentiable (grad); smooth it first")
        return self.family.grad(self.params, w)

    def prox(self, v, t):
        return self.family.prox(self.params, v, t)

    def lipschitz(self):
        if self.family.lipschitz is None:
            raise MissingCapability(f"regularizer {self!r} has no Lipschitz gradient (lipschitz)")
        return self.family.lipschitz(self.params)

    @property
    def is_smooth(self):
        return self.family.lipschitz is not None

    @property
    def quadratic(self):
        """c when R(w) = c/2 ||w||^2 (the l2 family: the SVM duals need it), else None."""
        return None if self.family.quadratic is None else self.family.quadratic(self.params)

    @property
    def is_l2(self) -> bool:
        """R(w) = ||w||^2 / 2 exactly: what dual CD, AL-FPGM and the cutting plane solve."""
        c = self.quadratic
        if c is None:
            return False
        try:
            return float(c) == 1.0
        except (TypeError, jax.errors.ConcretizationTypeError):  # traced: the family decides
            return True

    def smoothed(self, mu) -> "Regularizer":
        if self.is_smooth:
            return self
        if self.family.smoothed is None:
            raise MissingCapability(f"regularizer {self!r} has no smoothed form")
        return self.family.smoothed(self.params, mu)

    @property
    def has_conjugate(self):
        return self.family.conjugate is not None

    def conjugate(self, v):
        if self.family.conjugate is None:
            raise MissingCapability(f"regularizer {self!r} has no conjugate (needed for a duality gap)")
        return self.family.conjugate(self.params, v)

    def dual_scale(self, v):
        return self.family.dual_scale(self.params, v)


def _soft(v, t):
    return jnp.sign(v) * jnp.maximum(jnp.abs(v) - t, 0.0)


_L2 = _RegFamily(
    name="l2",
    value=lambda p, w: 0.5 * jnp.vdot(w, w),
    grad=lambda p, w: w,
    prox=lambda p, v, t: v / (1.0 + t),
    lipschitz=lambda p: 1.0,
    conjugate=lambda p, v: 0.5 * jnp.vdot(v, v),
    primal_from_dual=lambda p, v: v,
    quadratic=lambda p: 1.0,
)
l2 = Regularizer(_L2, {})
"""R(w) = ||w||^2 / 2."""


_L1 = _RegFamily(
    name="l1",
    value=lambda p, w: jnp.sum(jnp.abs(w)),
    grad=None,
    prox=lambda p, v, t: _soft(v, t),
    conjugate=lambda p, v: jnp.asarray(0.0, v.dtype),
    dual_scale=lambda p, v: jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.max(jnp.abs(v)), 1e-300)),
    smoothed=lambda p, mu: smoothed_l1(mu),
)
l1 = Regularizer(_L1, {})
"""R(w) = ||w||_1 (LP-SVM)."""


def _huber_prox(p, v, t):
    mu = p["mu"]
    # argmin t*huber_mu(w) + (w - v)^2/2: quadratic zone |w| <= mu, else soft threshold
    w_quad = v * mu / (mu + t)
    return jnp.where(jnp.abs(w_quad) <= mu, w_quad, _soft(v, t))


_SMOOTHED_L1 = _RegFamily(
    name="smoothed_l1",
    value=lambda p, w: jnp.sum(smoothing.smoothed_l1_value(w, p["mu"])),
    grad=lambda p, w: smoothing.smoothed_l1_gradient(w, p["mu"]),
    prox=_huber_prox,
    lipschitz=lambda p: 1.0 / p["mu"],
    conjugate=lambda p, v: 0.5 * p["mu"] * jnp.vdot(v, v),
    dual_scale=lambda p, v: jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.max(jnp.abs(v)), 1e-300)),
)


def smoothed_l1(mu: float) -> Regularizer:
    """NESVM's smoothed l1 (Huber, eq. 23-28); under-approximates ||w||_1 by <= d mu/2 (Theorem 2)."""
    if isinstance(mu, (int, float)) and not mu > 0:  # traced mu (homotopy, vmap) is the caller's
        raise ValueError(f"smoothed_l1 needs mu > 0, got {mu}")
    return Regularizer(_SMOOTHED_L1, {"mu": jnp.asarray(mu)})


_ELASTIC = _RegFamily(
    name="elastic_net",
    value=lambda p, w: p["ratio"] * jnp.sum(jnp.abs(w)) + 0.5 * (1.0 - p["ratio"]) * jnp.vdot(w, w),
    grad=None,
    prox=lambda p, v, t: _soft(v, t * p["ratio"]) / (1.0 + t * (1.0 - p["ratio"])),
    conjugate=lambda p, v: 0.5 * jnp.sum(_soft(v, p["ratio"]) ** 2) / (1.0 - p["ratio"]),
    primal_from_dual=lambda p, v: _soft(v, p["ratio"]) / (1.0 - p["ratio"]),
)


def elastic_net(ratio: float) -> Regularizer:
    """R(w) = ratio ||w||_1 + (1 - ratio)/2 ||w||^2 with 0 <= ratio < 1."""
    if not (0.0 <= ratio < 1.0):
        raise ValueError(f"elastic_net needs 0 <= ratio < 1 (ratio = 1 is l1), got {ratio}")
    return Regularizer(_ELASTIC, {"ratio": jnp.asarray(ratio)})


def custom(name: str, value: Callable, prox: Callable, *, grad: Callable | None = None,
           lipschitz: float | None = None, conjugate: Callable | None = None,
           dual_scale: Callable | None = None, params: dict | None = None) -> Regularizer:
    """Define a new regularizer from plain functions (the public way to extend the set).

    value(params, w) -> R(w); prox(params, v, t) -> argmin_w t R(w) + ||w - v||^2 / 2;
    grad(params, w) (smooth regularizers) with ``lipschitz`` its constant; conjugate(params, v)
    -> R*(v) on its domain and dual_scale(params, v) -> theta in (0, 1] with theta v in that
    domain (duality gaps). ``params``: numeric parameters (pytree leaves: vmappable).
    Solvers ask for what they need and name what is missing.

        group = custom("group_l2", value=lambda p, w: p["lam"] * jnp.linalg.norm(w),
                       prox=lambda p, v, t: v * jnp.maximum(0, 1 - t * p["lam"] / jnp.linalg.norm(v)),
                       params={"lam": 0.1})
    """
    if not (callable(value) and callable(prox)):
        raise TypeError("custom regularizer needs callables value(params, w) and prox(params, v, t)")
    fam = _RegFamily(
        name=name, value=value, grad=grad, prox=prox,
        lipschitz=None if lipschitz is None else (lambda p, L=float(lipschitz): L),
        conjugate=conjugate,
        dual_scale=dual_scale or (lambda p, v: jnp.asarray(1.0, v.dtype)),
    )
    return Regularizer(fam, dict(params or {}))
