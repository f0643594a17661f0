"""LIBSVM's general dual of a kernel problem (Chang & Lin, LIBSVM, Section 4.1: its ``Solver``):

    min_a  1/2 a^T Q a + p^T a   s.t.  y^T a = rhs,  0 <= a_t <= U_t,   Q_tu = y_t y_u K(x_pt(t), x_pt(u))

built from a ``Problem`` whose loss has a box dual with no diagonal (``DualDescription``):

  problem                          loss (dual box)            m    y          p                    rhs
  C-SVC (LIBSVM -s 0)              hinge ([0, 1])             n    y_i        -1                   0
  epsilon-SVR (LIBSVM -s 3)        epsilon_insensitive        2n   [1, -1]    [eps - t, eps + t]   0
                                   ([-1, 1], split in two)
  one-class SVM (LIBSVM -s 2)      one_class ([0, 1])         n    1          0                    1

with U_t = C s_i in the library's scale (0 for rows of weight 0: the variable stays at 0). A loss
whose box is [-1, 1] is split LIBSVM's way: alpha_i = a_i - a_{n+i} (a, a* of epsilon-SVR), variable
t lives on point pt(t) = t mod n, and sum_t y_t a_t K(x_pt(t), .) is the model. The one-class rhs
is 1 in SPEC section 7's scale (LIBSVM's alpha are nu sum_i s_i times these).

The gradient G = Q a + p, the index sets I_up / I_low, the violation m(a) - M(a) and rho
(LIBSVM's calculate_rho, b = -rho) have one form for all three.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp
from jax import lax

from ..checks import concrete

__all__ = ["LibsvmDual", "libsvm_dual", "accepts", "variables", "rhs", "index_sets", "extremes", "calculate_rho",
           "cold_start", "from_library", "to_library", "project", "on_points"]


class LibsvmDual(NamedTuple):
    """The arrays of the general dual (module docstring); ``split`` and ``rhs`` are static."""

    y: Any  # (m,) in {-1, +1}
    p: Any  # (m,)
    U: Any  # (m,) upper bounds, 0 where the variable is fixed
    rhs: float  # y^T a = rhs
    split: bool  # m = 2n: variable t on point t mod n


def accepts(pb) -> str | None:
    """None when ``pb``'s loss has this dual (box [0, 1] or [-1, 1] in C s_i units, no diagonal), else what
    it has instead. Static: read from the loss's description (a traced diagonal passes)."""
    d = pb.loss.dual if pb.loss.has_dual else None
    if d is None or d.quad is None:
        return "no box-plus-diagonal dual"
    q = concrete(d.quad(pb.loss.params))
    if q is not None and not bool(jnp.all(jnp.asarray(q) == 0.0)):
        return "a dual diagonal (a squared loss)"
    if not (d.upper == 1.0 and d.lower in (0.0, -1.0)):
        return f"a dual box [{d.lower:g}, {d.upper:g}]"
    return None


def variables(pb) -> int:
    """The number of variables m (static): 2n for a dual box [-1, 1] (split), else n."""
    return 2 * pb.n if pb.loss.has_dual and pb.loss.dual.lower == -1.0 else pb.n


def rhs(pb) -> float:
    """The right-hand side of y^T alpha = rhs (static; 0 but for the one-class SVM)."""
    return float(pb.loss.dual.rhs) if pb.loss.has_dual else 0.0


def libsvm_dual(pb) -> LibsvmDual:
    """The general dual of ``pb`` (see ``accepts``)."""
    d = pb.loss.dual
    lin, eps = pb.loss.dual_terms()
    n, dt = pb.n, pb.dtype
    one = jnp.ones((n,), dt)
    cs = pb.cs
    U = jnp.where(cs > 0, d.upper * cs, 0.0).astype(dt)
    y = pb.y.astype(dt)
    if d.lower == 0.0:
        return LibsvmDual(y, (-lin * one).astype(dt), U, float(d.rhs), False)
    # alpha_i in [-U_i, U_i]: a_i - a*_i with a, a* >= 0; |alpha_i| = a_i + a*_i at the optimum (eps >= 0)
    return LibsvmDual(jnp.concatenate([y, -y]), jnp.concatenate([(eps - lin) * one, (eps + lin) * one]).astype(dt),
                      jnp.concatenate([U, U]), float(d.rhs), True)


def on_points(dual: LibsvmDual, v):
    """sum over the variables of each point: (m,) -> (n,) (identity unless split)."""
    if not dual.split:
        return v
    n = v.shape[0] // 2
    return v[:n] + v[n:]


def to_library(dual: LibsvmDual, a):
    """The library's alpha (n,) of variables a (m,): a, or a - a* for a split dual."""
    if not dual.split:
        return a
    n = a.shape[0] // 2
    return a[:n] - a[n:]


def from_library(dual: LibsvmDual, alpha):
    """Variables (m,) of the library's alpha (n,): alpha, or (alpha_+, alpha_-) for a split dual."""
    if not dual.split:
        return alpha
    return jnp.concatenate([jnp.maximum(alpha, 0.0), jnp.maximum(-alpha, 0.0)])


def cold_start(dual: LibsvmDual):
    """A feasible point: 0 when rhs = 0; else LIBSVM's one-class start, the variables of sign(rhs)
    filled to their bounds in order until y^T a = rhs (solve_one_class)."""
    if dual.rhs == 0.0:
        return jnp.zeros_like(dual.U)
    sign = 1.0 if dual.rhs > 0 else -1.0
    room = jnp.where(dual.y == sign, dual.U, 0.0)
    before = jnp.cumsum(room) - room
    return jnp.clip(abs(dual.rhs) - before, 0.0, room)


PROJECTION_STEPS = 60


def project(dual: LibsvmDual, a):
    """The point of {0 <= a <= U, y^T a = rhs} nearest to a: clip(a - tau y) with tau by bisection
    (y^T clip(a - tau y) is non-increasing in tau), then the residual taken off the free variable
    with the most room (exact where one has room)."""
    y, U = dual.y, dual.U
    a = jnp.clip(a, 0.0, U)
    T = jnp.max(U) + jnp.max(jnp.abs(a)) + abs(dual.rhs) + 1.0

    def h(tau):
        return jnp.vdot(y, jnp.clip(a - tau * y, 0.0, U)) - dual.rhs

    def bisect(_, br):
        lo, hi = br
        mid = 0.5 * (lo + hi)
        pos = h(mid) > 0
        return jnp.where(pos, mid, lo), jnp.where(pos, hi, mid)

    lo, hi = lax.fori_loop(0, PROJECTION_STEPS, bisect, (-T, T))
    a = jnp.clip(a - 0.5 * (lo + hi) * y, 0.0, U)
    r = jnp.vdot(y, a) - dual.rhs  # move one variable by -r y_t, within its box
    room = jnp.where(y * r > 0, a, U - a)
    t = jnp.argmax(room)
    return a.at[t].add(-jnp.clip(r * y[t], -(U[t] - a[t]), a[t]))


def index_sets(y, a, U):
    """I_up and I_low (LIBSVM): the variables that may move up (y_t a_t) or down, per bound U_t."""
    below, above = a < U, a > 0
    up = jnp.where(y > 0, below, above)
    low = jnp.where(y > 0, above, below)
    return up, low


def extremes(q, up, low, split=False):
    """m = max_{I_up} q and M = min_{I_low} q (q = -y G); their difference unless ``split``."""
    m = jnp.max(jnp.where(up, q, -jnp.inf))
    M = jnp.min(jnp.where(low, q, jnp.inf))
    return (m, M) if split else m - M


def calculate_rho(y, alpha, G, cs):
    """LIBSVM's rho (b = -rho): mean y_t G_t over the free variables, else the middle of the feasible
    range. ``cs``: the upper bounds U (0: a fixed variable, which says nothing about rho)."""
    yG = y * G
    live = cs > 0  # zero-weight (and padding) rows hold no information on b
    at_hi, at_lo = alpha >= cs, alpha <= 0
    free = live & ~at_hi & ~at_lo
    ub_set = live & ((at_hi & (y < 0)) | (~at_hi & at_lo & (y > 0)))
    lb_set = live & ((at_hi & (y > 0)) | (~at_hi & at_lo & (y < 0)))
    ub = jnp.min(jnp.where(ub_set, yG, jnp.inf))
    lb = jnp.max(jnp.where(lb_set, yG, -jnp.inf))
    nfree = jnp.sum(free)
    mid = jnp.where(jnp.isfinite(ub) & jnp.isfinite(lb), 0.5 * (ub + lb),
                    jnp.where(jnp.isfinite(ub), ub, jnp.where(jnp.isfinite(lb), lb, 0.0)))
    return jnp.where(nfree > 0, jnp.sum(jnp.where(free, yG, 0.0)) / jnp.maximum(nfree, 1), mid).astype(G.dtype)
