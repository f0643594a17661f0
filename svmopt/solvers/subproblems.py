"""The working-set sub-problems of AL-FPGM's decomposition (``svmopt.solvers.alfpgm``).

On a working set B the dual restricted to B, the other variables fixed, is

    min 1/2 d^T H d + g^T d,  y_B^T d = 0,  lo <= d <= hi

(LIBSVM's general dual: H_ij = y_i y_j K_ij, g the gradient Q alpha + p on B). Two solvers:

* ``subproblem_smo``: SMO steps inside B, LIBSVM's second-order pair selection (WSS2, Fan, Chen
  & Lin 2005) on the |B| x |B| kernel block, O(|B|) a step whatever the conditioning;
* ``solve_subproblem``: the paper's augmented Lagrangian (Aregbesola & Griva 2022, eq. 6-11, 16)
  whose inner problem on the box is an accelerated projected gradient method, with
  ``project_hyperplane_box`` to put its answer back on {y_B^T d = 0}.
"""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

__all__ = ["subproblem_smo", "solve_subproblem", "project_hyperplane_box", "kkt_violation"]


def subproblem_smo(K, yB, a, c, g, valid, eps, max_steps, tau=1e-12, split=False):
    """SMO on the working set: min over a of the dual restricted to B, the other alphas fixed.

    K (m, m) kernel block of B, yB (m,) signs y_i, a (m,) alpha_B, c (m,) upper bounds U_i, g (m,)
    the gradient G_B at a, valid (m,) mask (other entries never move). Each step takes i = argmax q
    over B's I_up and j by the second-order rule (LIBSVM's WSS2) over B's I_low, and the exact
    step on the pair, clipped to the box (the bound it reaches is set exactly). Stops when
    max_{up} q - min_{low} q <= eps or after ``max_steps``. Returns (a, steps, q = -yB * G_B).
    ``split`` (static): m = 2n variables on the n points of K (n, n), variable t on point t mod n
    (epsilon-SVR's alpha and alpha*, LIBSVM's SVR_Q).
    """
    m = a.shape[0]
    n = K.shape[0]
    kd = jnp.tile(jnp.diagonal(K), 2) if split else jnp.diagonal(K)
    iota = lax.iota(jnp.int32, m)
    inf = jnp.asarray(jnp.inf, g.dtype)
    ypos = yB > 0

    def at(v, t):  # v[t] for an index known to be in range (no negative-index fix-up)
        return lax.dynamic_index_in_dim(v, t, 0, keepdims=False)

    def row(t):  # K's row of variable t, over the m variables
        if not split:
            return at(K, t)
        r = at(K, lax.rem(t, jnp.int32(n)))
        return jnp.concatenate([r, r])

    def cond(s):
        return (s[0] < max_steps) & (s[3] > eps)

    def body(s):
        k, a, q, _ = s
        up = valid & jnp.where(ypos, a < c, a > 0)
        low = valid & jnp.where(ypos, a > 0, a < c)
        qu = jnp.where(up, q, -inf)
        i = jnp.argmax(qu).astype(jnp.int32)
        m_up = at(qu, i)
        Ki = row(i)
        b = m_up - q
        aa = at(kd, i) + kd - 2.0 * Ki
        aa = jnp.where(aa > 0, aa, tau)
        score = jnp.where(low & (b > 0), b * b / aa, -inf)  # WSS2: the largest decrease b^2 / a
        j = jnp.argmax(score).astype(jnp.int32)
        gap = m_up - jnp.min(jnp.where(low, q, inf))
        ai, aj, ci, cj, pi, pj = at(a, i), at(a, j), at(c, i), at(c, j), at(ypos, i), at(ypos, j)
        room_i = jnp.where(pi, ci - ai, ai)
        room_j = jnp.where(pj, aj, cj - aj)
        go = (at(score, j) > -inf) & (gap > eps)
        t = jnp.where(go, jnp.minimum(at(b, j) / at(aa, j), jnp.minimum(room_i, room_j)), 0.0)
        ni = jnp.where(t >= room_i, jnp.where(pi, ci, 0.0), ai + jnp.where(pi, t, -t))
        nj = jnp.where(t >= room_j, jnp.where(pj, 0.0, cj), aj - jnp.where(pj, t, -t))
        a = jnp.where(iota == i, ni, jnp.where(iota == j, nj, a))
        q = q - t * (Ki - row(j))  # q = -y G, G_B += t (y_i Q_Bi - y_j Q_Bj)
        return k + 1, a, q, jnp.where(t > 0, gap, 0.0)

    s = lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), a, -yB * g, inf))
    return s[1], s[0], s[2]


def kkt_violation(d, gr, lo, hi):
    """nu of eq. (10-11): |grad| inside the box, the outward part at a bound, 0 for fixed entries."""
    v = jnp.where(d <= lo, jnp.maximum(-gr, 0.0), jnp.where(d >= hi, jnp.maximum(gr, 0.0), jnp.abs(gr)))
    return jnp.max(jnp.where(lo < hi, v, 0.0))


def solve_subproblem(H, g, yb, lo, hi, lam, mu, eps, power_iters=10, max_outer=30, max_inner=300):
    """AL-FPGM on  min 1/2 d^T H d + g^T d,  yb^T d = 0,  lo <= d <= hi  (eq. 6-11, 16).

    Augmented Lagrangian L_mu(d, lam) = f(d) - lam g(d) + mu/2 g(d)^2, g(d) = yb^T d (eq. 7);
    inner: accelerated projected gradient on the box with step 1/L, L = lambda_1(H) + mu |B|
    (eq. 16; lambda_1 by ``power_iters`` power iterations, +5% margin), adaptive restart,
    stop nu < eps (eq. 10-11); outer: lam <- lam - mu g (eq. 9), stop max(nu, |g|) < eps.
    Returns (d, total inner iterations, outer iterations). Entries with lo == hi stay fixed (padding).
    """
    dt = H.dtype
    v = yb

    def power(_, v):
        w = H @ v
        return w / jnp.maximum(jnp.linalg.norm(w), jnp.finfo(dt).tiny)

    v = lax.fori_loop(0, power_iters, power, v / jnp.maximum(jnp.linalg.norm(v), jnp.finfo(dt).tiny))
    L = 1.05 * jnp.linalg.norm(H @ v) + mu * jnp.vdot(yb, yb)
    L = jnp.maximum(L, jnp.finfo(dt).tiny)

    Hmu = H + mu * jnp.outer(yb, yb)  # Hessian of L_mu: grad = Hmu d + g - lam yb

    def inner(d, lam):
        c = g - lam * yb
        gd = Hmu @ d + c

        def cond(s):
            return (s[0] < max_inner) & (s[6] >= eps)

        def body(s):
            k, x, gx, z, gz, t, _ = s
            x1 = jnp.clip(z - gz / L, lo, hi)
            gx1 = Hmu @ x1 + c
            t1 = 0.5 * (1.0 + jnp.sqrt(1.0 + 4.0 * t * t))
            restart = jnp.vdot(z - x1, x1 - x) > 0  # O'Donoghue-Candes gradient restart
            beta = jnp.where(restart, 0.0, (t - 1.0) / t1)
            t1 = jnp.where(restart, 1.0, t1)
            z1 = x1 + beta * (x1 - x)
            gz1 = gx1 + beta * (gx1 - gx)  # the gradient is affine: no extra product
            return k + 1, x1, gx1, z1, gz1, t1, kkt_violation(x1, gx1, lo, hi)

        one = jnp.ones((), dt)
        s = lax.while_loop(cond, body, (0, d, gd, d, gd, one, kkt_violation(d, gd, lo, hi)))
        return s[1], s[6], s[0]

    def ocond(c):
        return (c[0] < max_outer) & (c[3] >= eps)

    def obody(c):
        o, d, lam, _, total = c
        d, nu, k = inner(d, lam)
        r = jnp.vdot(yb, d)
        return o + 1, d, lam - mu * r, jnp.maximum(nu, jnp.abs(r)), total + k

    d0 = jnp.zeros_like(g)
    c = lax.while_loop(ocond, obody, (0, d0, jnp.asarray(lam, dt), jnp.asarray(jnp.inf, dt), 0))
    return c[1], c[4], c[0]


def project_hyperplane_box(x, yb, lo, hi):
    """Euclidean projection of x onto {yb^T d = 0, lo <= d <= hi} (yb in {-1, 0, 1}; 0 in the box).

    d(theta) = clip(x + theta yb, lo, hi); h(theta) = yb^T d(theta) is non-decreasing and piecewise
    linear with breakpoints where an entry reaches a bound: h is evaluated at all 2|B| of them
    at once and the root is interpolated exactly in the bracketing piece.
    """
    s = jnp.where(yb != 0, yb, 1.0)
    bp = jnp.concatenate([jnp.where(yb != 0, (lo - x) / s, 0.0), jnp.where(yb != 0, (hi - x) / s, 0.0)])
    hv = jnp.clip(x[None, :] + bp[:, None] * yb[None, :], lo, hi) @ yb
    inf = jnp.asarray(jnp.inf, x.dtype)
    ta = jnp.max(jnp.where(hv <= 0, bp, -inf))  # the piece [ta, tb] holds the root
    tb = jnp.min(jnp.where(hv >= 0, bp, inf))
    ha = jnp.max(jnp.where(bp == ta, hv, -inf))
    hb = jnp.min(jnp.where(bp == tb, hv, inf))
    span = hb - ha
    inner = jnp.isfinite(ta) & jnp.isfinite(tb) & (span > 0)
    theta = jnp.where(inner, ta - ha * (tb - ta) / jnp.where(inner, span, 1.0),
                      jnp.where(jnp.isfinite(ta), ta, jnp.where(jnp.isfinite(tb), tb, 0.0)))
    return jnp.clip(x + theta * yb, lo, hi)

