"""AL-FPGM: decomposition with p-pair working sets for the kernel SVM dual (Aregbesola & Griva, 2022).

The dual of eq. (1), with per-sample bounds C_i = C s_i (sample weights) and Q_ij = y_i y_j K(x_i, x_j):

    min_alpha  1/2 alpha^T Q alpha - e^T alpha   s.t.  y^T alpha = 0,  0 <= alpha_i <= C_i.

The gradient G = Q alpha - e of the full problem is kept for all n rows and updated from the
kernel rows of the working set only. With q_t = -y_t G_t (the paper's q_t(alpha)), one driver
step is one working set (Algorithm 1):

  1. pWSS (Section 3). Eligible indices: not excluded by the MinMaxLimiter (3.2): a change
     below ``delta_alpha`` the last time in B, ``min_alpha_opt`` uses and at a bound, or
     ``max_alpha_opt`` uses. The i's are the p largest q over I_up (eq. 14); the j
     candidates the ``min_alpha_check`` smallest q over I_low (3.3); the i's, larger q first,
     get distinct candidates minimising -b_it^2 / a_it (eq. 15, a <= 0 replaced by ``tau``).
     When no violating pair is left among the eligible ones, the exclusions are reset
     (so the limiter only reorders work, it never stops the solve early).
  2. Sub-problem on B (eq. 3-6), written in the step d = alpha_B - alpha_B^old:
         min 1/2 d^T Q_BB d + G_B^T d,  y_B^T d = 0,  -alpha_B <= d <= C_B - alpha_B,
     solved by the augmented Lagrangian (eq. 7-9, penalty ``mu``) whose inner problem on
     the box is a fast (accelerated, restarted) projected gradient method with step 1/L,
     L = lambda_1(Q_BB) (power iterations) + |B| mu (eq. 16). Inner stop nu < eps_k
     (eq. 10-11), outer stop max(nu, |g|) < eps_k with eps_k = min(eps, eps_scale * viol).
     The answer is projected exactly onto {y_B^T d = 0} within the box, and the SMO step of
     the first (WSS2nd) pair is the fall-back when it is not better: every step decreases
     the objective at least as much as an SMO step on that pair would (convergence as SMO's).
  3. alpha_B += d, G += Q_{:,B} d (kernel rows of B from the bounded row cache).

Stop (``check``): LIBSVM's m(alpha) - M(alpha) <= viol_tol with m = max_{I_up} q, M = min_{I_low} q
(viol_tol = 1e-3 like LIBSVM's -e); no decrease in ``patience`` steps -> STALLED. The driver then
certifies the relative duality gap (P - D)/|P| <= tol (default 1e-3; P and D from alpha and G);
above it, viol_tol is divided by 10 and the working sets go on. The bias is
b = -rho with rho from the free support vectors (LIBSVM's calculate_rho).

Result: b, primal 1/2 alpha^T Q alpha + sum_i C_i hinge(y_i f_i) and dual e^T alpha - 1/2 alpha^T Q alpha,
both from alpha and the maintained G (f_i = y_i (G_i + 1) + b), extras "alpha", "rho", "violation" and
counters (cache hits/misses/rows, inner iterations, limiter resets, SMO fall-backs). ``w`` is
X^T (alpha * y) for the linear kernel (kernel=None) and a zero-length array for other kernels,
whose model is ``support_vectors``, ``dual_coef`` and ``b`` (set by ``svmopt.solve``).

Kernel rows are computed in blocks on demand (``svmopt.kernels.kernel_rows``) and kept in a
bounded cache of ``cache_size`` MB (``svmopt.kernel_cache``); nothing n x n is formed unless
the budget holds all n rows. Sparse X is densified once (n * d must fit ``dense_budget`` MB).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..kernel_cache import cache_rows, fetch, init_cache, top_k
from ..kernels import kernel_diag, kernel_rows, linear
from ..operators import DenseOperator
from ..problem import Problem
from ..result import Status
from ._base import DUAL, PRIMAL, RESUME, Iterate, Method, Start, check_positive, concrete, require, start_or, \
    stall_update, static

RUNNING = -1


class ALFPGMState(NamedTuple):
    alpha: Any
    G: Any  # Q alpha - e for all rows
    kdiag: Any
    count: Any  # MinMaxLimiter: times in a working set
    frozen: Any
    cache: Any
    viol: Any  # m(alpha) - M(alpha)
    best: Any
    since: Any
    inner: Any
    resets: Any
    smo: Any
    viol_tol: Any  # tightened by the driver's certificate
    X: Any  # densified sparse X, else None

__all__ = ["ALFPGM", "alfpgm", "calculate_rho", "solve_subproblem", "project_hyperplane_box"]


@dataclasses.dataclass(frozen=True)
class ALFPGM(Method):
    """AL-FPGM with pWSS. Parameters (paper defaults where the paper gives one):

    pairs           p, pairs per working set (|B| = 2p; paper: 50-100; 64, see
                    bench/results/design-notes.md, AL-FPGM, for this and the defaults below)
    mu              augmented-Lagrangian penalty (paper 0.1)
    eps             sub-problem accuracy on nu and |g| (paper 1e-2); eps_k = min(eps, eps_scale * viol)
    eps_scale       ties the sub-problem accuracy to the current violation m(alpha) - M(alpha):
                    with the paper's fixed eps the sub-problems stop at once near the end and
                    the SMO fall-back does most of the work
    tol             relative duality gap certified at the end (1e-3)
    viol_tol        working-set stop m(alpha) - M(alpha) <= viol_tol (LIBSVM -e, 1e-3)
    delta_alpha, min_alpha_opt, max_alpha_opt   MinMaxLimiter (paper 1e-6, 5, 20)
    min_alpha_check number of j candidates (smallest q over I_low) searched by eq. 15; 0 = all
                    (all: several times slower, no fewer steps that matter)
    tau             replaces a_ij <= 0 in eq. 15 (LIBSVM's TAU)
    cache_size      kernel-row cache budget in MB (rows of length n in the problem's dtype)
    cache_policy    "lru+demote" (LRU, but rows of limiter-excluded indices are evicted first:
                    fewer misses than "lru") or "lru"
    row_chunk       kernel rows computed per block on a cache miss
    col_block       columns per block inside ``kernel_rows``
    power_iters     power iterations for lambda_1(Q_BB) (eq. 16)
    max_inner, max_outer   caps of the FPGM and augmented-Lagrangian loops per working set
    patience        steps without a decrease of the objective before STALLED
    dense_budget    MB allowed for densifying a sparse X (kernel rows need dense rows)
    """

    pairs: int = static(64)
    mu: float = 0.1
    eps: float = 1e-2
    eps_scale: float = 0.03
    tol: float = 1e-3
    viol_tol: float = 1e-3
    delta_alpha: float = 1e-6
    min_alpha_opt: int = 5
    max_alpha_opt: int = 20
    min_alpha_check: int = static(512)
    tau: float = 1e-12
    cache_size: float = static(200.0)
    cache_policy: str = static("lru+demote")
    row_chunk: int = static(16)
    col_block: int = static(65536)
    power_iters: int = static(10)
    max_inner: int = 300
    max_outer: int = 30
    patience: int = 200
    dense_budget: float = static(2048.0)

    name = "alfpgm"
    certify_every = 4  # the gap costs little next to an iteration: check it often
    supports_kernel = True

    # ------------------------------------------------------------------ set-up
    def validate(self, pb: Problem) -> None:
        lower, upper, quad = pb.loss.box_diagonal()
        hinge_like = concrete(quad) is None or (lower == 0 and upper == 1 and float(quad) == 0.0)
        require(hinge_like, f"alfpgm solves the hinge-loss (C-SVM) dual (box [0, C], no diagonal), got loss={pb.loss!r}")
        require(pb.reg.is_l2, f"alfpgm solves l2-regularized problems only, got reg={pb.reg!r}")
        require(pb.fit_intercept, "alfpgm solves the dual with the intercept (y^T alpha = 0); "
                                  "fit_intercept=False / intercept_scaling are not supported")
        for k in ("pairs", "row_chunk", "col_block", "power_iters"):
            v = getattr(self, k)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"alfpgm {k} must be a positive integer, got {v!r}")
        check_positive(self, "min_alpha_opt", "max_alpha_opt", "max_inner", "max_outer", "patience", integer=True)
        check_positive(self, "mu", "eps", "eps_scale", "viol_tol", "tau")
        check_positive(self, "delta_alpha", allow_zero=True)
        for k in ("cache_size", "dense_budget"):
            if not getattr(self, k) > 0:
                raise ValueError(f"alfpgm {k} must be > 0, got {getattr(self, k)!r}")
        if not (isinstance(self.min_alpha_check, int) and self.min_alpha_check >= 0):
            raise ValueError(f"alfpgm min_alpha_check must be an integer >= 0 (0 = all), got {self.min_alpha_check!r}")
        if self.cache_policy not in ("lru", "lru+demote"):
            raise ValueError(f"alfpgm cache_policy must be 'lru' or 'lru+demote', got {self.cache_policy!r}")
        n, d = pb.op.shape
        if n < 2:
            raise ValueError("alfpgm needs at least two samples")
        if not isinstance(pb.op, DenseOperator):
            mb = n * d * jnp.dtype(pb.dtype).itemsize / 2**20
            if mb > self.dense_budget:
                raise ValueError(f"alfpgm needs dense rows of X for the kernel: {n} x {d} is {mb:.0f} MB, over "
                                 f"dense_budget={self.dense_budget:g} MB; raise dense_budget or reduce d")
        self._sizes(pb)  # raises when the cache cannot hold one working set

    def default_max_iter(self, pb) -> int:
        return max(10_000, 100 * pb.n // (2 * self._sizes(pb)[0]))

    def _sizes(self, pb):
        """Static sizes: (p, number of j candidates, cache rows)."""
        n = pb.n
        p = max(1, min(self.pairs, n // 2))
        mc = n if self.min_alpha_check == 0 else min(self.min_alpha_check, n)
        S = cache_rows(n, jnp.dtype(pb.dtype).itemsize, self.cache_size, 2 * p)
        return p, mc, S

    # ------------------------------------------------------------------ state
    def aux_template(self, pb):
        n, dt = pb.n, pb.dtype
        return dict(G=jnp.zeros((n,), dt), count=jnp.zeros((n,), jnp.int32), frozen=jnp.zeros((n,), bool),
                    viol_tol=jnp.zeros((), dt))

    def init(self, pb: Problem, start: Start) -> ALFPGMState:
        n, dt = pb.n, pb.dtype
        _, _, S = self._sizes(pb)
        X = _dense_rows(pb)
        kern = _kernel(pb)
        # a dual warm start: alpha clipped to the box, then projected onto y^T alpha = 0
        from ..problem import project_dual
        alpha = jnp.where(pb.cs > 0, jnp.clip(start.alpha, 0.0, pb.cs), 0.0)
        alpha = start_or(start, DUAL, project_dual(pb, alpha), jnp.zeros((n,), dt))
        resume = (start.level & RESUME) != 0
        warm = ((start.level & DUAL) != 0) & ~resume

        def gradient():  # G = Q alpha - e in row blocks (never n x n)
            return _kernel_matvec(kern, X, alpha * pb.y, self.col_block, 512) * pb.y - 1.0

        G = lax.cond(warm, gradient, lambda: -jnp.ones((n,), dt))
        aux = start.aux
        G = jnp.where(resume, aux["G"], G)
        return ALFPGMState(alpha=alpha, G=G, kdiag=kernel_diag(kern, X).astype(dt),
                           count=jnp.where(resume, aux["count"], 0), frozen=jnp.where(resume, aux["frozen"], False),
                           cache=init_cache(S, n, dt), viol=jnp.asarray(jnp.inf, dt),
                           best=jnp.asarray(jnp.inf, dt), since=jnp.asarray(0, jnp.int32),
                           inner=jnp.zeros((), jnp.int32), resets=jnp.zeros((), jnp.int32),
                           smo=jnp.zeros((), jnp.int32),
                           viol_tol=jnp.where(resume, aux["viol_tol"], jnp.asarray(self.viol_tol, dt)),
                           X=None if isinstance(pb.op, DenseOperator) else X)

    # ------------------------------------------------------------------ one working set
    def step(self, pb: Problem, st: ALFPGMState) -> ALFPGMState:
        p, mc, _ = self._sizes(pb)
        n, dt = pb.n, pb.dtype
        X = st.X if st.X is not None else pb.op.X
        kern = _kernel(pb)
        y, cs, kd = pb.y, pb.cs, st.kdiag
        alpha, G, cache = st.alpha, st.G, st.cache
        inf = jnp.asarray(jnp.inf, dt)

        def rows(ix):
            return kernel_rows(kern, X, ix, block=self.col_block).astype(dt)

        # 1. pWSS: eligible indices (MinMaxLimiter), reset when they hold no violating pair
        q = -y * G
        up, low = _index_sets(y, alpha, cs)
        viol = _extremes(q, up, low)
        at_bound = (alpha <= 0) | (alpha >= cs)
        count, frozen = st.count, st.frozen
        elig = ~frozen & (count < self.max_alpha_opt) & ~((count >= self.min_alpha_opt) & at_bound)
        m_r, M_r = _extremes(q, up & elig, low & elig, split=True)
        reset = ~(m_r - M_r > st.viol_tol)
        elig = elig | reset
        frozen = frozen & ~reset
        count = jnp.where(reset, 0, count)
        M_r = jnp.where(reset, _extremes(q, up, low, split=True)[1], M_r)
        demote = ~elig if self.cache_policy == "lru+demote" else None

        # eq. 14 and 3.3 in one pass: the p largest q over I_up, the mc smallest over I_low
        kk = max(p, mc)
        cand = jnp.stack([jnp.where(up & elig, q, -inf), jnp.where(low & elig, -q, -inf)])
        vals, idx = jax.vmap(lambda v: top_k(v, kk, coarse=True))(cand)
        qi, I, qj, J = vals[0, :p], idx[0, :p], -vals[1, :mc], idx[1, :mc]  # q itself, not rounded
        vi = qi > M_r  # an i is useful only if some j has a smaller q
        # eq. 15 needs K(x_i, x_j) on the candidates only: a (p, mc) block, no full rows yet
        KIJ = kern(X[I], X[J]).astype(dt)
        a = kd[I][:, None] + kd[J][None, :] - 2.0 * KIJ
        a = jnp.where(a > 0, a, self.tau)
        bij = qi[:, None] - qj[None, :]
        score = jnp.where(vi[:, None] & (bij > 0), -bij * bij / a, inf)
        clash = jnp.any((J[None, :] == I[:, None]) & vi[:, None], axis=0)
        score = jnp.where(clash[None, :], inf, score)
        sel, vj = _assign(score)
        Jp = J[sel]

        # 2. the sub-problem on B in the step d (eq. 3-6), AL-FPGM (eq. 7-11, 16)
        B = jnp.concatenate([I, Jp])
        vB = jnp.concatenate([vi, vj])
        KB, cache = fetch(cache, B, vB, rows, self.row_chunk, demote)  # rows of B: one cache lookup
        yB = jnp.where(vB, y[B], 0.0)
        H = (yB[:, None] * yB[None, :]) * KB[:, B]
        aB, cB = alpha[B], cs[B]
        lo = jnp.where(vB, -aB, 0.0)
        hi = jnp.where(vB, cB - aB, 0.0)
        g = jnp.where(vB, G[B], 0.0)
        eps_k = jnp.maximum(jnp.minimum(self.eps, self.eps_scale * viol), jnp.finfo(dt).eps)
        lam0 = calculate_rho(y, alpha, G, cs)  # the multiplier of y^T alpha = 0 is rho
        d_al, n_inner, _ = solve_subproblem(H, g, yB, lo, hi, lam0, self.mu, eps_k, self.power_iters,
                                         self.max_outer, self.max_inner)
        d_al = project_hyperplane_box(d_al, yB, lo, hi)

        # SMO step on the first (WSS2nd) pair: the fall-back that guarantees progress
        ok = vi[0] & vj[0]
        i1, j1 = I[0], Jp[0]
        t_max = jnp.minimum(jnp.where(y[i1] > 0, cs[i1] - alpha[i1], alpha[i1]),
                            jnp.where(y[j1] > 0, alpha[j1], cs[j1] - alpha[j1]))
        a1 = kd[i1] + kd[j1] - 2.0 * KIJ[0, sel[0]]
        t = jnp.where(ok, jnp.minimum((qi[0] - qj[sel[0]]) / jnp.where(a1 > 0, a1, self.tau), t_max), 0.0)
        d_smo = jnp.zeros_like(d_al).at[0].set(y[i1] * t).at[p].set(-y[j1] * t)

        def quad(d):
            return 0.5 * jnp.vdot(d, H @ d) + jnp.vdot(g, d)

        use_smo = quad(d_smo) < quad(d_al)
        d = jnp.where(use_smo, d_smo, d_al)

        # 3. update alpha (exactly onto the bounds it reaches) and the gradient
        def snap(d):
            return jnp.where(d >= hi, cB, jnp.where(d <= lo, 0.0, aB + d))

        new = snap(d)
        dB = jnp.where(vB, new - aB, 0.0)
        tgt = jnp.where(vB, B, n)
        alpha = alpha.at[tgt].set(new, mode="drop")
        G = G + y * ((yB * dB) @ KB)

        # MinMaxLimiter bookkeeping (3.2)
        count = count.at[tgt].add(1, mode="drop")
        # judged on the sub-problem's answer: an SMO fall-back step says nothing about the others
        still = vB & (jnp.abs(snap(d_al) - aB) < self.delta_alpha)
        frozen = frozen.at[jnp.where(still, B, n)].set(True, mode="drop")

        up, low = _index_sets(y, alpha, cs)
        dual = 0.5 * jnp.sum(alpha * (1.0 - G))
        best, since = stall_update(st.best, st.since, -dual, 0.0)
        return st._replace(alpha=alpha, G=G, count=count, frozen=frozen, cache=cache,
                           viol=_extremes(-y * G, up, low), best=best, since=since,
                           inner=st.inner + n_inner.astype(jnp.int32), resets=st.resets + reset.astype(jnp.int32),
                           smo=st.smo + use_smo.astype(jnp.int32))

    def check(self, pb, st: ALFPGMState):
        return jnp.where(st.viol <= st.viol_tol, Status.CONVERGED,
                         jnp.where(st.since >= self.patience, Status.STALLED, RUNNING))

    def tighten(self, pb, st: ALFPGMState):
        return st._replace(viol_tol=st.viol_tol / 10.0, since=jnp.zeros_like(st.since))

    # ------------------------------------------------------------------ results
    def finalize(self, pb, st: ALFPGMState) -> Iterate:
        alpha, G, y = st.alpha, st.G, pb.y
        rho = calculate_rho(y, alpha, G, pb.cs)
        if pb.kernel is None:  # linear kernel: the primal w exists
            w = pb.op.rmatvec(alpha * y)
        else:  # kernel model: w lives in feature space; zero-length placeholder
            w = jnp.zeros((0,), pb.dtype)
        c = st.cache
        extras = {"rho": rho, "violation": st.viol, "cache_hits": c.hits,
                  "cache_misses": c.misses, "cache_rows": jnp.asarray(c.rows.shape[0]),
                  "inner_iterations": st.inner, "resets": st.resets, "smo_steps": st.smo}
        return Iterate(w, -rho, alpha, extras)

    def own_objectives(self, pb) -> bool:
        return True

    def objectives(self, pb, st: ALFPGMState, it: Iterate):
        """Objectives from alpha and the maintained gradient (no kernel pass)."""
        G, y, alpha = st.G, pb.y, it.alpha
        quad = jnp.vdot(alpha, G + 1.0)  # alpha^T Q alpha, since G = Q alpha - e
        dual = jnp.sum(alpha) - 0.5 * quad
        margin = G + 1.0 + y * it.b  # y_i f(x_i) = (Q alpha)_i + y_i b
        primal = 0.5 * quad + jnp.sum(pb.cs * pb.loss.value(margin))
        return primal, dual, alpha

    def carry(self, pb, st: ALFPGMState) -> Start:
        aux = dict(G=st.G, count=st.count, frozen=st.frozen, viol_tol=st.viol_tol)
        return Start(jnp.zeros((pb.d,), pb.dtype), jnp.zeros((), pb.dtype), st.alpha,
                     jnp.asarray(DUAL, jnp.int32), aux)


# ---------------------------------------------------------------------- pieces
def _kernel(pb: Problem):
    return pb.kernel if pb.kernel is not None else linear


def _dense_rows(pb: Problem):
    """X as a dense (n, d) array (a sparse operator is scattered once)."""
    return pb.op.dense()


def _kernel_matvec(kern, X, v, col_block, row_block):
    """K(X, X) v in blocks of ``row_block`` rows (memory row_block x n)."""
    n = X.shape[0]
    nb = -(-n // row_block)

    def body(i, out):
        s = jnp.minimum(i * row_block, n - row_block) if n >= row_block else 0
        idx = s + jnp.arange(min(row_block, n))
        rows = kernel_rows(kern, X, idx, block=col_block).astype(v.dtype)
        return out.at[idx].set(rows @ v)

    return lax.fori_loop(0, nb, body, jnp.zeros((n,), v.dtype))


def _index_sets(y, alpha, cs):
    """I_up and I_low of Section 3 (with per-sample bounds C_i)."""
    below, above = alpha < cs, alpha > 0
    up = jnp.where(y > 0, below, above)
    low = jnp.where(y > 0, above, below)
    return up, low


def _extremes(q, up, low, split=False):
    """m = max_{I_up} q and M = min_{I_low} q; their difference unless ``split``."""
    m = jnp.max(jnp.where(up, q, -jnp.inf))
    M = jnp.min(jnp.where(low, q, jnp.inf))
    return (m, M) if split else m - M


def calculate_rho(y, alpha, G, cs):
    """LIBSVM's rho (b = -rho): mean y_i G_i over free alphas, else the middle of the feasible range."""
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


def _assign(score):
    """Distinct candidates for the rows of ``score`` (p, mc), lower row = higher priority.

    Parallel greedy: every unassigned row proposes its best free candidate, each candidate
    goes to the highest-priority row proposing it, repeat until nothing changes (a few
    rounds; the sequential greedy of pWSS needs p dependent argmins). Returns (sel, ok).
    """
    p, mc = score.shape
    rank = jnp.arange(p, dtype=jnp.int32)

    def cond(c):
        return c[3]

    def body(c):
        taken, sel, ok, _ = c
        s = jnp.where(taken[None, :] | ok[:, None], jnp.inf, score)
        j = jnp.argmin(s, axis=1).astype(jnp.int32)
        prop = jnp.take_along_axis(s, j[:, None], axis=1)[:, 0] < jnp.inf
        claim = jnp.full((mc,), p, jnp.int32).at[jnp.where(prop, j, mc)].min(rank, mode="drop")
        win = prop & (claim[j] == rank)
        taken = taken.at[jnp.where(win, j, mc)].set(True, mode="drop")
        return taken, jnp.where(win, j, sel), ok | win, jnp.any(win)

    init = (jnp.zeros((mc,), bool), jnp.zeros((p,), jnp.int32), jnp.zeros((p,), bool), jnp.asarray(True))
    _, sel, ok, _ = lax.while_loop(cond, body, init)
    return sel, ok


def _kkt_violation(d, gr, lo, hi):
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
            return k + 1, x1, gx1, z1, gz1, t1, _kkt_violation(x1, gx1, lo, hi)

        one = jnp.ones((), dt)
        s = lax.while_loop(cond, body, (0, d, gd, d, gd, one, _kkt_violation(d, gd, lo, hi)))
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


alfpgm = ALFPGM()
"""AL-FPGM (Aregbesola & Griva 2022) for the kernel SVM dual, with its defaults."""
