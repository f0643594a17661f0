"""AL-FPGM: decomposition with large working sets for the kernel SVM dual (Aregbesola & Griva, 2022).

The dual of eq. (1), with per-sample bounds C_i = C s_i (sample weights) and Q_ij = y_i y_j K(x_i, x_j):

    min_alpha  1/2 alpha^T Q alpha - e^T alpha   s.t.  y^T alpha = 0,  0 <= alpha_i <= C_i.

The gradient G = Q alpha - e of the full problem is kept for all n rows and updated from the
kernel rows of the working set only. With q_t = -y_t G_t (the paper's q_t(alpha)), one driver
step is one working set B of ``ws`` = 2 ``pairs`` indices (Algorithm 1):

  1. Selection. B keeps the half selected by the previous step (their kernel rows are cached,
     and keeping them damps the zig-zag of fresh working sets; ThunderSVM's FIFO rule) and adds
     a new half: the largest q over I_up and the smallest q over I_low (eq. 14, first order),
     outside the kept half, each only when it violates against the other side. The size is
     adaptive: ``ws`` is lowered to what the row cache holds and to n.
  2. Sub-problem on B (eq. 3-6), in alpha_B with the rest fixed:
         min 1/2 d^T Q_BB d + G_B^T d,  y_B^T d = 0,  -alpha_B <= d <= C_B - alpha_B.
     ``inner="smo"`` (default): SMO steps inside B (second-order pair, LIBSVM's WSS2 on the
     |B| x |B| block, one product) until max_{B up} q - min_{B low} q < max(eps_scale * viol,
     viol_tol / 2). The steps cost O(|B|) each and do not depend on the conditioning of Q_BB.
     ``inner="alfpgm"``: the paper's augmented Lagrangian (eq. 7-9, penalty ``mu``) whose inner
     problem on the box is a fast (accelerated, restarted) projected gradient method with
     step 1/L, L = lambda_1(Q_BB) (power iterations) + |B| mu (eq. 16), inner stop nu < eps_k
     (eq. 10-11), eps_k = min(eps, eps_scale * viol); the answer is projected onto
     {y_B^T d = 0} in the box, and one SMO step is the fall-back when it is not better. Its
     iteration count grows with the condition number of Q_BB.
  3. alpha_B += d, G += Q_{:,B} d: one (|B|) x (|B|, n) product with the rows of B, which come
     from the bounded row cache (a miss computes its rows as one matrix product per chunk).

Stop (``check``): LIBSVM's m(alpha) - M(alpha) <= viol_tol with m = max_{I_up} q, M = min_{I_low} q
(viol_tol = 1e-3 like LIBSVM's -e); no decrease in ``patience`` steps -> STALLED. The driver then
certifies the relative duality gap (P - D)/|P| <= tol (default 1e-3; P and D from alpha and G);
above it, viol_tol is divided by 10 and the working sets go on. The bias is
b = -rho with rho from the free support vectors (LIBSVM's calculate_rho).

Result: b, primal 1/2 alpha^T Q alpha + sum_i C_i hinge(y_i f_i) and dual e^T alpha - 1/2 alpha^T Q alpha,
both from alpha and the maintained G (f_i = y_i (G_i + 1) + b), extras "alpha", "rho", "violation" and
counters (cache hits/misses/rows, inner iterations, working-set size). ``w`` is X^T (alpha * y) for
the linear kernel (kernel=None) and a zero-length array for other kernels, whose model is
``support_vectors``, ``dual_coef`` and ``b`` (set by ``svmopt.solve``).

Small problems (n <= ``whole`` rows, and the n x n kernel matrix within ``cache_size``) skip the
decomposition: the matrix is computed once (one matrix product) and a step runs SMO
over all rows to the violation viol_tol (LIBSVM with a cache holding every row), the gradient
coming from SMO's own updates. This is what one-vs-one's many small pair problems run.

Nothing in a step leaves the device: selection, cache lookups, kernel rows (matrix products),
the sub-problem and the update are one traced program per working set, and the driver runs
many working sets per call. Kernel rows are kept in a bounded cache of ``cache_size`` MB
(``svmopt.kernel_cache``); nothing n x n is formed unless the budget holds all n rows. Sparse
X is densified once (n * d must fit ``dense_budget`` MB).
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from ..kernel_cache import cache_rows, fetch, init_cache, top_k
from ..kernels import kernel_rows, linear
from ..problem import Problem
from ..result import Status
from .base import DUAL, RESUME, Iterate, Method, Start, check_positive, concrete, require, start_or, \
    stall_update, static

RUNNING = -1


class ALFPGMState(NamedTuple):
    alpha: Any
    G: Any  # Q alpha - e for all rows
    keep: Any  # (ws/2,) the half of B selected last step (kept in the next B)
    keep_ok: Any  # (ws/2,) which of them are real entries
    cache: Any  # KernelCache (decomposition) or None
    K: Any  # the whole kernel matrix (n, n) for small problems, else None
    viol: Any  # m(alpha) - M(alpha)
    best: Any
    since: Any
    inner: Any
    viol_tol: Any  # tightened by the driver's certificate
    X: Any  # densified sparse X, else None


__all__ = ["ALFPGM", "alfpgm", "calculate_rho", "subproblem_smo", "solve_subproblem", "project_hyperplane_box"]


@dataclasses.dataclass(frozen=True)
class ALFPGM(Method):
    """Decomposition for the kernel SVM dual (AL-FPGM's framework). Parameters:

    pairs           |B| = 2 pairs indices per working set, lowered to the cache's rows and to n
                    (paper: 50-100 pairs for its AL-FPGM sub-problems; ThunderSVM: |B| = 512-1024
                    with SMO inside B). 256 by measurement (bench/results/design-notes.md, AL-FPGM)
    inner           sub-problem solver: "smo" (default) or "alfpgm" (the paper's, eq. 7-11, 16)
    eps_scale       the sub-problem stops when its own violation is below eps_scale x the
                    global one (ThunderSVM: 0.1); for "alfpgm" eps_k = min(eps, eps_scale * viol)
    tol             relative duality gap certified at the end (1e-3)
    viol_tol        working-set stop m(alpha) - M(alpha) <= viol_tol (LIBSVM -e, 1e-3)
    max_inner       cap of SMO steps (or FPGM iterations) per working set
    mu, eps, max_outer, power_iters   inner="alfpgm" only: penalty (paper 0.1), accuracy
                    (paper 1e-2), augmented-Lagrangian iterations, power iterations (eq. 16)
    tau             replaces a_ij <= 0 in the second-order rule (LIBSVM's TAU)
    cache_size      kernel-row cache budget in MB (rows of length n in the problem's dtype)
    whole           problems of at most this many rows whose kernel matrix fits ``cache_size`` are
                    solved on the whole matrix (no working sets; see above); 0: never. 2048 by
                    measurement (bench/results/design-notes.md, AL-FPGM)
    row_chunk       kernel rows computed per matrix product on cache misses; 0 (default): 64 on
                    CPU (blocks that stay in cache ran fastest), |B| / 2 on accelerators (the new
                    half of B in one product)
    col_block       columns per block inside ``kernel_rows``
    patience        steps without a decrease of the objective before STALLED
    dense_budget    MB allowed for densifying a sparse X (kernel rows need dense rows)
    """

    pairs: int = static(256)
    inner: str = static("smo")
    eps_scale: float = 0.1
    tol: float = 1e-3
    viol_tol: float = 1e-3
    max_inner: int = 10_000
    mu: float = 0.1
    eps: float = 1e-2
    max_outer: int = 30
    power_iters: int = static(10)
    tau: float = 1e-12
    cache_size: float = static(200.0)
    whole: int = static(2048)
    row_chunk: int = static(0)
    col_block: int = static(65536)
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
        for k in ("pairs", "col_block", "power_iters"):
            v = getattr(self, k)
            if not (isinstance(v, int) and v >= 1):
                raise ValueError(f"alfpgm {k} must be a positive integer, got {v!r}")
        if not (isinstance(self.whole, int) and self.whole >= 0):
            raise ValueError(f"alfpgm whole must be an integer >= 0 (0: never), got {self.whole!r}")
        if not (isinstance(self.row_chunk, int) and self.row_chunk >= 0):
            raise ValueError(f"alfpgm row_chunk must be an integer >= 0 (0: by backend), got {self.row_chunk!r}")
        if self.inner not in ("smo", "alfpgm"):
            raise ValueError(f"alfpgm inner must be 'smo' or 'alfpgm', got {self.inner!r}")
        check_positive(self, "max_inner", "max_outer", "patience", integer=True)
        check_positive(self, "mu", "eps", "eps_scale", "viol_tol", "tau")
        for k in ("cache_size", "dense_budget"):
            if not getattr(self, k) > 0:
                raise ValueError(f"alfpgm {k} must be > 0, got {getattr(self, k)!r}")
        n, d = pb.op.shape
        if n < 2:
            raise ValueError("alfpgm needs at least two samples")
        if pb.op.layout != "dense":
            mb = n * d * jnp.dtype(pb.dtype).itemsize / 2**20
            if mb > self.dense_budget:
                raise ValueError(f"alfpgm needs dense rows of X for the kernel: {n} x {d} is {mb:.0f} MB, over "
                                 f"dense_budget={self.dense_budget:g} MB; raise dense_budget or reduce d")
        self._sizes(pb)  # raises when the cache cannot hold a working set of 2 rows

    def default_max_iter(self, pb) -> int:
        return max(10_000, 100 * pb.n // self._sizes(pb)[0])

    def _sizes(self, pb):
        """Static sizes: (working-set size ws (even), cache rows S)."""
        n = pb.n
        S = cache_rows(n, jnp.dtype(pb.dtype).itemsize, self.cache_size, 2)
        ws = max(2, min(2 * self.pairs, S, n) // 2 * 2)
        return ws, S

    def _whole(self, pb) -> bool:
        """Static: solve on the whole kernel matrix (small problems whose matrix fits the budget)."""
        return pb.n <= self.whole and self._sizes(pb)[1] >= pb.n

    def _chunk(self, ws):
        if self.row_chunk:
            return min(self.row_chunk, ws)
        return min(64, ws) if jax.default_backend() == "cpu" else ws // 2

    # ------------------------------------------------------------------ state
    def aux_template(self, pb):
        n, dt = pb.n, pb.dtype
        h = self._sizes(pb)[0] // 2
        return dict(G=jnp.zeros((n,), dt), keep=jnp.zeros((h,), jnp.int32), keep_ok=jnp.zeros((h,), bool),
                    viol_tol=jnp.zeros((), dt))

    def init(self, pb: Problem, start: Start) -> ALFPGMState:
        n, dt = pb.n, pb.dtype
        ws, S = self._sizes(pb)
        X = _dense_rows(pb)
        kern = _kernel(pb)
        # a dual warm start: alpha clipped to the box, then projected onto y^T alpha = 0
        from ..problem import project_dual
        alpha = jnp.where(pb.cs > 0, jnp.clip(start.alpha, 0.0, pb.cs), 0.0)
        alpha = start_or(start, DUAL, project_dual(pb, alpha), jnp.zeros((n,), dt))
        resume = (start.level & RESUME) != 0
        warm = ((start.level & DUAL) != 0) & ~resume

        # G = Q alpha - e: nothing to compute for a cold start (loops of zero trips, not conds:
        # under vmap a cond runs both branches)
        if self._whole(pb):
            K = kern(X, X).astype(dt)
            v = alpha * pb.y
            G = lax.fori_loop(0, warm.astype(jnp.int32), lambda _, g: K @ v, jnp.zeros_like(v)) * pb.y - 1.0
            cache = None
        else:  # in row blocks (never n x n)
            G = _kernel_matvec(kern, X, alpha * pb.y, self.col_block, 512, warm) * pb.y - 1.0
            K, cache = None, init_cache(S, n, dt)
        aux = start.aux
        G = jnp.where(resume, aux["G"], G)
        h = ws // 2
        return ALFPGMState(alpha=alpha, G=G, keep=jnp.where(resume, aux["keep"], jnp.arange(h, dtype=jnp.int32)),
                           keep_ok=resume & aux["keep_ok"], cache=cache, K=K,
                           viol=jnp.asarray(jnp.inf, dt), best=jnp.asarray(jnp.inf, dt),
                           since=jnp.asarray(0, jnp.int32), inner=jnp.zeros((), jnp.int32),
                           viol_tol=jnp.where(resume, aux["viol_tol"], jnp.asarray(self.viol_tol, dt)),
                           X=None if pb.op.layout == "dense" else X)

    # ------------------------------------------------------------------ one working set
    def step(self, pb: Problem, st: ALFPGMState) -> ALFPGMState:
        ws, _ = self._sizes(pb)
        n, dt = pb.n, pb.dtype
        X = st.X if st.X is not None else pb.op.dense()
        kern = _kernel(pb)
        y, cs = pb.y, pb.cs
        alpha, G = st.alpha, st.G

        if st.K is not None:  # small problem: SMO over all rows on the whole matrix
            alpha, steps, q = subproblem_smo(st.K, y, alpha, cs, G, cs > 0, st.viol_tol, self.max_inner, self.tau)
            return self._advance(pb, st, alpha, -y * q, steps, st.keep, st.keep_ok, st.cache)

        def rows(ix):
            return kernel_rows(kern, X, ix, block=self.col_block).astype(dt)

        # 1. B = the kept half + the most violating new indices (eq. 14), first order
        B, vB, m, M = _select(y, alpha, G, cs, st.keep, st.keep_ok, ws)
        KB, cache = fetch(st.cache, B, vB, rows, self._chunk(ws))  # (ws, n): one lookup
        XB = X[B]
        KBB = kern(XB, XB).astype(dt)  # (ws, ws): a product; gathering KB's columns is slower on CPU
        yB, aB, cB, gB = y[B], alpha[B], cs[B], G[B]
        viol = m - M
        eps_k = jnp.maximum(self.eps_scale * viol, 0.5 * st.viol_tol)

        # 2. the sub-problem on B
        if self.inner == "smo":
            new, steps, _ = subproblem_smo(KBB, yB, aB, cB, gB, vB, eps_k, self.max_inner, self.tau)
        else:
            new, steps = self._alfpgm_inner(KBB, yB, aB, cB, gB, vB, viol, y, alpha, G, cs)

        # 3. update alpha and the gradient (one product with the rows of B)
        dB = jnp.where(vB, new - aB, 0.0)
        alpha = alpha.at[jnp.where(vB, B, n)].set(new, mode="drop")
        G = G + y * ((yB * dB) @ KB)
        h = ws // 2
        return self._advance(pb, st, alpha, G, steps, B[h:], vB[h:], cache)

    def _advance(self, pb, st, alpha, G, steps, keep, keep_ok, cache):
        """The next state: violation, stall counter and counters from the new alpha and G."""
        up, low = _index_sets(pb.y, alpha, pb.cs)
        dual = 0.5 * jnp.sum(alpha * (1.0 - G))
        best, since = stall_update(st.best, st.since, -dual, 0.0)
        return st._replace(alpha=alpha, G=G, keep=keep, keep_ok=keep_ok, cache=cache,
                           viol=_extremes(-pb.y * G, up, low), best=best, since=since,
                           inner=st.inner + steps.astype(jnp.int32))

    def _alfpgm_inner(self, KBB, yB, aB, cB, gB, vB, viol, y, alpha, G, cs):
        """The paper's sub-problem solver (eq. 6-11, 16) on B, with one SMO step as the fall-back."""
        dt = KBB.dtype
        yv = jnp.where(vB, yB, 0.0)
        H = (yv[:, None] * yv[None, :]) * KBB
        lo = jnp.where(vB, -aB, 0.0)
        hi = jnp.where(vB, cB - aB, 0.0)
        g = jnp.where(vB, gB, 0.0)
        eps_k = jnp.maximum(jnp.minimum(self.eps, self.eps_scale * viol), jnp.finfo(dt).eps)
        lam0 = calculate_rho(y, alpha, G, cs)  # the multiplier of y^T alpha = 0 is rho
        d_al, n_inner, _ = solve_subproblem(H, g, yv, lo, hi, lam0, self.mu, eps_k, self.power_iters,
                                            self.max_outer, self.max_inner)
        d_al = project_hyperplane_box(d_al, yv, lo, hi)
        smo, _, _ = subproblem_smo(KBB, yB, aB, cB, gB, vB, jnp.zeros((), dt), 1, self.tau)
        d_smo = jnp.where(vB, smo - aB, 0.0)

        def quad(d):
            return 0.5 * jnp.vdot(d, H @ d) + jnp.vdot(g, d)

        d = jnp.where(quad(d_smo) < quad(d_al), d_smo, d_al)
        new = jnp.where(d >= hi, cB, jnp.where(d <= lo, 0.0, aB + d))  # exactly onto the bounds it reaches
        return new, n_inner

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
        if st.K is None:
            c = st.cache
            rows = dict(cache_hits=c.hits, cache_misses=c.misses, cache_rows=jnp.asarray(c.rows.shape[0]),
                        working_set=jnp.asarray(2 * st.keep.shape[0]))
        else:  # the whole matrix: every row computed once, every row in the one working set
            n = jnp.asarray(pb.n, jnp.int32)
            rows = dict(cache_hits=jnp.zeros((), jnp.int32), cache_misses=n, cache_rows=n, working_set=n)
        extras = {"rho": rho, "violation": st.viol, **rows, "inner_iterations": st.inner}
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
        aux = dict(G=st.G, keep=st.keep, keep_ok=st.keep_ok, viol_tol=st.viol_tol)
        return Start(jnp.zeros((pb.d,), pb.dtype), jnp.zeros((), pb.dtype), st.alpha,
                     jnp.asarray(DUAL, jnp.int32), aux)


# ---------------------------------------------------------------------- pieces
def _kernel(pb: Problem):
    return pb.kernel if pb.kernel is not None else linear


def _dense_rows(pb: Problem):
    """X as a dense (n, d) array (a sparse operator is scattered once)."""
    return pb.op.dense()


def _kernel_matvec(kern, X, v, col_block, row_block, active=True):
    """K(X, X) v in blocks of ``row_block`` rows (memory row_block x n); zeros unless ``active``."""
    n = X.shape[0]
    nb = jnp.where(active, -(-n // row_block), 0)

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


def _select(y, alpha, G, cs, keep, keep_ok, ws):
    """The working set B (ws,) = [kept half, new half] and its mask; also m and M (Section 3).

    The new half: the largest q over I_up (eq. 14) and the smallest over I_low, outside the kept
    half, each taken only when it violates (q_i > M, resp. q_j < m); an index found on both
    sides (a free alpha) is taken once. Entries not taken are masked (their index is arbitrary).
    """
    n = y.shape[0]
    h = ws // 2
    hu = (h + 1) // 2
    q = -y * G
    up, low = _index_sets(y, alpha, cs)
    m, M = _extremes(q, up, low, split=True)
    kept = jnp.zeros((n,), bool).at[jnp.where(keep_ok, keep, n)].set(True, mode="drop")
    inf = jnp.asarray(jnp.inf, G.dtype)
    cand = jnp.stack([jnp.where(up & ~kept, q, -inf), jnp.where(low & ~kept, -q, -inf)])
    vals, idx = top_k(cand, hu)  # both rows at once
    I, J = idx[0], idx[1, :h - hu]
    vi = (vals[0] > -inf) & (q[I] > M)
    vj = (vals[1, :h - hu] > -inf) & (q[J] < m) & ~jnp.any((J[:, None] == I[None, :]) & vi[None, :], axis=1)
    return jnp.concatenate([keep, I, J]), jnp.concatenate([keep_ok, vi, vj]), m, M


def subproblem_smo(K, yB, a, c, g, valid, eps, max_steps, tau=1e-12):
    """SMO on the working set: min over a of the dual restricted to B, the other alphas fixed.

    K (m, m) kernel block of B, yB (m,) labels, a (m,) alpha_B, c (m,) bounds C_i, g (m,) the
    gradient G_B at a, valid (m,) mask (other entries never move). Each step takes i = argmax q
    over B's I_up and j by the second-order rule (LIBSVM's WSS2) over B's I_low, and the exact
    step on the pair, clipped to the box (the bound it reaches is set exactly). Stops when
    max_{up} q - min_{low} q <= eps or after ``max_steps``. Returns (a, steps, q = -yB * G_B).
    """
    m = a.shape[0]
    kd = jnp.diagonal(K)
    iota = lax.iota(jnp.int32, m)
    inf = jnp.asarray(jnp.inf, g.dtype)
    ypos = yB > 0

    def at(v, t):  # v[t] for an index known to be in range (no negative-index fix-up)
        return lax.dynamic_index_in_dim(v, t, 0, keepdims=False)

    def cond(s):
        return (s[0] < max_steps) & (s[3] > eps)

    def body(s):
        k, a, q, _ = s
        up = valid & jnp.where(ypos, a < c, a > 0)
        low = valid & jnp.where(ypos, a > 0, a < c)
        qu = jnp.where(up, q, -inf)
        i = jnp.argmax(qu).astype(jnp.int32)
        m_up = at(qu, i)
        Ki = at(K, i)
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
        q = q - t * (Ki - at(K, j))  # q = -y G, G_B += t (y_i Q_Bi - y_j Q_Bj)
        return k + 1, a, q, jnp.where(t > 0, gap, 0.0)

    s = lax.while_loop(cond, body, (jnp.zeros((), jnp.int32), a, -yB * g, inf))
    return s[1], s[0], s[2]


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
"""Decomposition for the kernel SVM dual (AL-FPGM's framework, SMO inside working sets), with its defaults."""
