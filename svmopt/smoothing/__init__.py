"""Nesterov smoothing of max-type functions (NESVM, Zhou et al. 2010).

A max-type function f(x) = max_{u in U} <u, A x> - phi(u) is smoothed by
subtracting mu * d(u) with a prox-function d (here d(u) = u^2 / 2, scaled per
sample as in the paper). The smoothed function has a (1/mu)-Lipschitz
gradient and under-approximates f by at most mu * max_U d (Theorems 1-2).

Everything here is elementwise and pure: callers sum.
"""
from __future__ import annotations

import jax.numpy as jnp

__all__ = [
    "smoothed_hinge_value",
    "smoothed_hinge_derivative",
    "hinge_smoothing_bound",
    "smoothed_l1_value",
    "smoothed_l1_gradient",
    "l1_smoothing_bound",
    "homotopy_mu",
    "homotopy_num_stages",
    "moreau_value",
    "moreau_derivative",
]


def smoothed_hinge_value(m, mu_i):
    """hbar_mu(m) = max_{u in [0,1]} u (1 - m) - mu_i/2 u^2  (NESVM eq. 5, 10).

    ``mu_i`` is the per-sample smoothing, mu * ||x_i||_inf in the paper.
    """
    r = 1.0 - m
    u = jnp.clip(r / mu_i, 0.0, 1.0)  # eq. 6: median{r / mu_i, 0, 1}
    return u * r - 0.5 * mu_i * u * u


def smoothed_hinge_derivative(m, mu_i):
    """d hbar_mu / dm = -u with u the maximiser of eq. 6."""
    return -jnp.clip((1.0 - m) / mu_i, 0.0, 1.0)


def hinge_smoothing_bound(mu, row_inf_norm):
    """Theorem 1: hbar_mu <= hbar <= hbar_mu + mu/2 ||x_i||_inf, per sample."""
    return 0.5 * mu * row_inf_norm


def smoothed_l1_value(w, mu):
    """l_mu(w_j) = max_{|u| <= 1} u w_j - mu/2 u^2 (Huber; NESVM eq. 23-28)."""
    u = jnp.clip(w / mu, -1.0, 1.0)
    return u * w - 0.5 * mu * u * u


def smoothed_l1_gradient(w, mu):
    """NESVM eq. 30: the gradient is the maximiser u = median{w/mu, -1, 1}."""
    return jnp.clip(w / mu, -1.0, 1.0)


def l1_smoothing_bound(mu, dim):
    """Theorem 2: l_mu <= l <= l_mu + mu/2 per coordinate, so dim * mu/2 in total."""
    return 0.5 * mu * dim


def homotopy_mu(mu0, t):
    """Homotopy schedule mu_t = mu0 / (t + 1) (NESVM Algorithm 2)."""
    return mu0 / (t + 1.0)


def homotopy_num_stages(mu0: float, mu_star: float) -> int:
    """Number of stages t = 0..T with mu_T <= mu_star, i.e. T = ceil(mu0/mu_star) - 1."""
    if mu_star <= 0 or mu0 <= 0:
        raise ValueError(f"homotopy needs mu0 > 0 and mu_star > 0, got {mu0}, {mu_star}")
    import math

    return max(1, int(math.ceil(mu0 / mu_star - 1e-12)))


def moreau_value(value_fn, prox_fn, m, mu):
    """Moreau envelope min_z f(z) + (m - z)^2 / (2 mu): Nesterov smoothing with d = u^2/2.

    For the hinge it equals ``smoothed_hinge_value`` with mu_i = mu.
    """
    z = prox_fn(m, mu)
    return value_fn(z) + (m - z) ** 2 / (2.0 * mu)


def moreau_derivative(prox_fn, m, mu):
    """Gradient of the Moreau envelope, (m - prox(m)) / mu, which is (1/mu)-Lipschitz."""
    return (m - prox_fn(m, mu)) / mu
