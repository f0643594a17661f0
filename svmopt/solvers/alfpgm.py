"""AL-FPGM: decomposition with large working sets for LIBSVM's general dual (Aregbesola & Griva, 2022).

The paper's dual of eq. (1) is the C-SVM's; the same decomposition solves LIBSVM's general form
(``svmopt.solvers.libsvm_dual``), with per-variable bounds U_t = C s_i (sample weights) and
Q_tu = y_t y_u K(x_pt(t), x_pt(u)):

    min_alpha  1/2 alpha^T Q alpha + p^T alpha   s.t.  y^T alpha = rhs,  0 <= alpha_t <= U_t,

the C-SVC (the hinge: p = -1, rhs = 0), epsilon-SVR (``epsilon_insensitive`` on real targets:
2n variables alpha, alpha*, y = [1, -1], p = [eps - t, eps + t]) and the one-class SVM
(``svmopt.solve_oneclass``: p = 0, rhs = 1). The gradient G = Q alpha + p of the full problem
is kept for all m variables and updated from the kernel rows of the working set only. With
q_t = -y_t G_t (the paper's q_t(alpha)), one driver step is one working set B of ``ws`` =
2 ``pairs`` indices (Algorithm 1):

  1. Selection. B keeps the half selected by the previous step (their kernel rows are cached,
     and keeping them damps the zig-zag of fresh working sets; ThunderSVM's FIFO rule) and adds
     a new half: the largest q over I_up and the smallest q over I_low (eq. 14, first order),
     outside the kept half, each only when it violates against the other side. The size is
     adaptive: ``ws`` is lowered to what the row cache holds and to n.
  2. Sub-problem on B (eq. 3-6), in alpha_B with the rest fixed:
         min 1/2 d^T Q_BB d + G_B^T d,  y_B^T d = 0,  -alpha_B <= d <= U_B - alpha_B.
     ``inner="smo"`` (default): SMO steps inside B (second-order pair, LIBSVM's WSS2 on the
     |B| x |B| block, one product) until max_{B up} q - min_{B low} q < max(eps_scale * viol,
     viol_tol / 2). The steps cost O(|B|) each and do not depend on the conditioning of Q_BB.
     ``inner="alfpgm"``: the paper's augmented Lagrangian (eq. 7-9, penalty ``mu``) whose inner
     problem on the box is a fast (accelerated, restarted) projected gradient method with
     step 1/L, L = lambda_1(Q_BB) (power iterations) + |B| mu (eq. 16), inner stop nu < eps_k
     (eq. 10-11), eps_k = min(eps, eps_scale * viol); the answer is projected onto
     {y_B^T d = 0} in the box, and one SMO step is the fall-back when it is not better. Its
     iteration count grows with the condition number of Q_BB. (``svmopt.solvers.subproblems``.)
  3. alpha_B += d, G += Q_{:,B} d: one (|B|) x (|B|, n) product with the rows of B's points, which
     come from the bounded row cache (a miss computes its rows as one matrix product per chunk;
     epsilon-SVR's alpha_i and alpha*_i share point i's row, as in LIBSVM's SVR_Q). The linear kernel
     (kernel=None) keeps w = X^T beta instead (LIBLINEAR's way): w += X_B^T (y_B d), G = y X w + p,
     two passes over X and no kernel rows (no cache).

Stop (``check``): LIBSVM's m(alpha) - M(alpha) <= viol_tol with m = max_{I_up} q, M = min_{I_low} q
(viol_tol = 1e-3 like LIBSVM's -e); no decrease in ``patience`` steps -> STALLED. The driver then
certifies the relative duality gap (P - D)/|P| <= tol (default 1e-3; P and D from alpha and G);
above it, viol_tol is divided by 10 and the working sets go on. The bias is
b = -rho with rho from the free support vectors (LIBSVM's calculate_rho).

Result: b, the primal 1/2 alpha^T Q alpha + sum_i C s_i loss(y_i f_i) (+ rhs b, the one-class -rho) and
the dual -(1/2 alpha^T Q alpha + p^T alpha), both from alpha and the maintained G (f = K beta + b with
K beta read off G), extras "alpha" (the library's alpha (n,): alpha - alpha* for epsilon-SVR), "rho",
"violation" and counters (cache hits/misses/rows, inner iterations, working-set size). ``w`` is
X^T (alpha * y) for the linear kernel (kernel=None) and a zero-length array for other kernels, whose
model is ``support_vectors``, ``dual_coef`` and ``b`` (set by ``svmopt.solve``).

Small problems (m <= ``whole`` variables, and the n x n kernel matrix within ``cache_size``) skip the
decomposition: the matrix is computed once (one matrix product) and a step runs SMO
over all variables to the violation viol_tol (LIBSVM with a cache holding every row), the gradient
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
from ..problem import Problem, project_dual
from ..result import Status
from .base import DUAL, RESUME, Iterate, Method, Start, check_positive, require, start_or, stall_update, static
from .libsvm_dual import (LibsvmDual, accepts, calculate_rho, cold_start, extremes, from_library, index_sets,
                          libsvm_dual, on_points, project, rhs, to_library, variables)
from .subproblems import project_hyperplane_box, solve_subproblem, subproblem_smo

RUNNING = -1


class ALFPGMState(NamedTuple):
    alpha: Any  # (m,) the dual's variables
    G: Any  # (m,) Q alpha + p
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
    w: Any  # (d,) X^T beta for the linear kernel on working sets (kernel=None), else None
    count: Any = None  # selection="pwss": (m,) times each variable was in a working set
    stuck: Any = None  # selection="pwss": (m,) in the last working set and moved less than delta_alpha


__all__ = ["ALFPGM", "alfpgm", "calculate_rho", "subproblem_smo", "solve_subproblem", "project_hyperplane_box"]


@dataclasses.dataclass(frozen=True)
class ALFPGM(Method):
    """Decomposition for LIBSVM's general kernel dual (AL-FPGM's framework): C-SVC, epsilon-SVR and the
    one-class SVM. Parameters:

    pairs           |B| = 2 pairs indices per working set, lowered to the cache's rows and to n
                    (paper: 50-100 pairs for its AL-FPGM sub-problems; ThunderSVM: |B| = 512-1024
                    with SMO inside B). 256 by measurement (bench/results/design-notes.md, AL-FPGM)
    inner           sub-problem solver: "smo" (default) or "alfpgm" (the paper's, eq. 7-11, 16)
    selection       "fifo" (default): the kept half plus first-order extremes (module docstring);
                    "pwss": the paper's pWSS (Section 3): ``pairs`` pairs, i by eq. 14 over I_up, j by
                    WSS2nd (eq. 15, the largest b_ij^2 / a_ij with q_j < q_i) among the first
                    ``min_alpha_check`` unused entries of I_low sorted by q (minAlphaCheck), over the
                    variables the MinMaxLimiter leaves: not in the last working set with a move below
                    ``delta_alpha``, used fewer than ``max_alpha_opt`` times, and not at a bound after
                    ``min_alpha_opt`` uses (paper: 1e-6, 5, 20; minAlphaCheck is not given, 20 here).
                    When those variables' worst pair violates by less than half the global worst,
                    all are eligible again and the counts restart (the limiter alone stalled short of
                    the optimum: a1a, rbf 0.1, C = 10, dual at 1869 of 2212 after 160 working sets). The paper's variant is
                    ``alfpgm(selection="pwss", inner="alfpgm", pairs=50)``
    eps_scale       the sub-problem stops when its own violation is below eps_scale x the
                    global one (ThunderSVM: 0.1); for "alfpgm" eps_k = min(eps, eps_scale * viol)
    tol             relative duality gap certified at the end (1e-3)
    viol_tol        working-set stop m(alpha) - M(alpha) <= viol_tol (LIBSVM -e, 1e-3)
    max_inner       cap of SMO steps (or FPGM iterations) per working set
    mu, eps, max_outer, power_iters   inner="alfpgm" only: penalty (paper 0.1), accuracy
                    (paper 1e-2), augmented-Lagrangian iterations, power iterations (eq. 16)
    tau             replaces a_ij <= 0 in the second-order rule (LIBSVM's TAU)
    cache_size      kernel-row cache budget in MB (rows of length n in the problem's dtype)
    whole           problems of at most this many dual variables (rows; epsilon-SVR has two per row)
                    whose kernel matrix fits ``cache_size`` are solved on the whole matrix (no working
                    sets; see above); 0: never. 2048 by measurement (bench/results/design-notes.md, AL-FPGM)
    row_chunk       kernel rows computed per matrix product on cache misses; 0 (default): 64 on
                    CPU (blocks that stay in cache ran fastest), |B| / 2 on accelerators (the new
                    half of B in one product)
    col_block       columns per block inside ``kernel_rows``
    patience        steps without a decrease of the objective before STALLED
    dense_budget    MB allowed for densifying a sparse X (kernel rows need dense rows)
    """

    pairs: int = static(256)
    inner: str = static("smo")
    selection: str = static("fifo")
    delta_alpha: float = 1e-6
    min_alpha_opt: int = 5
    max_alpha_opt: int = 20
    min_alpha_check: int = static(20)
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
    solves_libsvm_dual = True

    # ------------------------------------------------------------------ set-up
    def validate(self, pb: Problem) -> None:
        pb.loss.box_diagonal()  # raises MissingCapability naming the box-plus-diagonal dual
        why = accepts(pb)
        require(why is None, f"alfpgm solves LIBSVM's dual: a box [0, C] (the hinge, the one-class SVM) or [-C, C] "
                             f"(epsilon_insensitive) and no diagonal; loss={pb.loss!r} has {why}")
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
        if self.selection not in ("fifo", "pwss"):
            raise ValueError(f"alfpgm selection must be 'fifo' or 'pwss', got {self.selection!r}")
        if not (isinstance(self.min_alpha_check, int) and self.min_alpha_check >= 1):
            raise ValueError(f"alfpgm min_alpha_check must be a positive integer, got {self.min_alpha_check!r}")
        check_positive(self, "min_alpha_opt", "max_alpha_opt", integer=True)
        check_positive(self, "delta_alpha", allow_zero=True)
        if self.inner not in ("smo", "alfpgm"):
            raise ValueError(f"alfpgm inner must be 'smo' or 'alfpgm', got {self.inner!r}")
        check_positive(self, "max_inner", "max_outer", "patience", integer=True)
        check_positive(self, "mu", "eps", "eps_scale", "viol_tol", "tau")
        for k in ("cache_size", "dense_budget"):
            if not getattr(self, k) > 0:
                raise ValueError(f"alfpgm {k} must be > 0, got {getattr(self, k)!r}")
        n, d = pb.op.shape
        if n < 2:
            raise ValueError(f"alfpgm needs at least two samples, got n_samples = {n}")
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
        return variables(pb) <= self.whole and self._sizes(pb)[1] >= pb.n

    def _chunk(self, ws):
        if self.row_chunk:
            return min(self.row_chunk, ws)
        return min(64, ws) if jax.default_backend() == "cpu" else ws // 2

    # ------------------------------------------------------------------ state
    def aux_template(self, pb):
        dt = pb.dtype
        m = variables(pb)
        h = self._sizes(pb)[0] // 2
        return dict(G=jnp.zeros((m,), dt), keep=jnp.zeros((h,), jnp.int32), keep_ok=jnp.zeros((h,), bool),
                    viol_tol=jnp.zeros((), dt), alpha=jnp.zeros((m,), dt))

    def init(self, pb: Problem, start: Start) -> ALFPGMState:
        n, dt = pb.n, pb.dtype
        ws, S = self._sizes(pb)
        X = _dense_rows(pb)
        kern = _kernel(pb)
        dual = libsvm_dual(pb)
        resume = (start.level & RESUME) != 0
        warm = ((start.level & DUAL) != 0) & ~resume
        aux = start.aux
        if not dual.split and dual.rhs == 0.0:  # C-SVC: alpha clipped to the box, then onto y^T alpha = 0
            alpha = jnp.where(pb.cs > 0, jnp.clip(start.alpha, 0.0, pb.cs), 0.0)
            alpha = start_or(start, DUAL, project_dual(pb, alpha), jnp.zeros((n,), dt))
        else:  # the library's alpha as the dual's variables, projected onto its feasible set
            alpha = jnp.where(warm, project(dual, from_library(dual, start.alpha)), cold_start(dual))
        alpha = jnp.where(resume, aux["alpha"], alpha)
        # G = Q alpha + p: nothing to compute from alpha = 0 (loops of zero trips, not conds: under vmap
        # a cond runs both branches); the one-class start is not 0
        active = warm | (dual.rhs != 0.0)
        beta = on_points(dual, dual.y * alpha)
        w = None
        if self._whole(pb):
            K = kern(X, X).astype(dt)
            Kb = lax.fori_loop(0, active.astype(jnp.int32), lambda _, g: K @ beta, jnp.zeros_like(beta))
            cache = None
        elif pb.kernel is None:  # the linear kernel: w = X^T beta, no kernel rows
            w = pb.op.rmatvec(beta)
            Kb, K, cache = pb.op.matvec(w), None, None
        else:  # in row blocks (never n x n)
            Kb = _kernel_matvec(kern, X, beta, self.col_block, 512, active)
            K, cache = None, init_cache(S, n, dt)
        G = dual.y * _on_variables(dual, Kb) + dual.p
        G = jnp.where(resume, aux["G"], G)
        h = ws // 2
        return ALFPGMState(alpha=alpha, G=G, keep=jnp.where(resume, aux["keep"], jnp.arange(h, dtype=jnp.int32)),
                           keep_ok=resume & aux["keep_ok"], cache=cache, K=K,
                           viol=jnp.asarray(jnp.inf, dt), best=jnp.asarray(jnp.inf, dt),
                           since=jnp.asarray(0, jnp.int32), inner=jnp.zeros((), jnp.int32),
                           viol_tol=jnp.where(resume, aux["viol_tol"], jnp.asarray(self.viol_tol, dt)),
                           X=None if pb.op.layout == "dense" else X, w=w,
                           count=jnp.zeros(alpha.shape, jnp.int32) if self.selection == "pwss" else None,
                           stuck=jnp.zeros(alpha.shape, bool) if self.selection == "pwss" else None)

    # ------------------------------------------------------------------ one working set
    def step(self, pb: Problem, st: ALFPGMState) -> ALFPGMState:
        ws, _ = self._sizes(pb)
        n, dt = pb.n, pb.dtype
        X = st.X if st.X is not None else pb.op.dense()
        kern = _kernel(pb)
        dual = libsvm_dual(pb)
        y, U = dual.y, dual.U
        alpha, G = st.alpha, st.G

        if st.K is not None:  # small problem: SMO over all variables on the whole matrix
            alpha, steps, q = subproblem_smo(st.K, y, alpha, U, G, U > 0, st.viol_tol, self.max_inner, self.tau,
                                             split=dual.split)
            return self._advance(dual, st, alpha, -y * q, steps, st.keep, st.keep_ok, st.cache)

        def rows(ix):
            return kernel_rows(kern, X, ix, block=self.col_block).astype(dt)

        # 1. B = the kept half + the most violating new indices (eq. 14), first order
        if self.selection == "pwss":
            B, vB, m, M, reset = _select_pwss(y, alpha, G, U, st.count, st.stuck, X, kern, dual.split, n, ws // 2,
                                              self.min_alpha_check, self.min_alpha_opt, self.max_alpha_opt,
                                              self.tau, 0.5 * st.viol_tol)
            st = st._replace(count=jnp.where(reset, 0, st.count))
        else:
            B, vB, m, M = _select(y, alpha, G, U, st.keep, st.keep_ok, ws)
        P = B % n if dual.split else B  # the points of B
        first = _first_of_point(P, vB) if dual.split else None  # alpha_i and alpha*_i share a row
        if st.w is None:
            KB, cache = fetch(st.cache, P, vB if first is None else vB & (first == jnp.arange(ws)), rows,
                              self._chunk(ws))  # (ws, n): one lookup
        XB = X[P]
        KBB = kern(XB, XB).astype(dt)  # (ws, ws): a product; gathering KB's columns is slower on CPU
        yB, aB, cB, gB = y[B], alpha[B], U[B], G[B]
        viol = m - M
        eps_k = jnp.maximum(self.eps_scale * viol, 0.5 * st.viol_tol)

        # 2. the sub-problem on B
        if self.inner == "smo":
            new, steps, _ = subproblem_smo(KBB, yB, aB, cB, gB, vB, eps_k, self.max_inner, self.tau)
        else:
            new, steps = self._alfpgm_inner(KBB, yB, aB, cB, gB, vB, viol, y, alpha, G, U)

        # 3. update alpha and the gradient (one product with the rows of B's points)
        dB = jnp.where(vB, new - aB, 0.0)
        alpha = alpha.at[jnp.where(vB, B, alpha.shape[0])].set(new, mode="drop")
        if self.selection == "pwss":  # the MinMaxLimiter's counts
            drop = jnp.where(vB, B, alpha.shape[0])
            st = st._replace(count=st.count.at[drop].add(1, mode="drop"),
                             stuck=jnp.zeros_like(st.stuck).at[drop].set(jnp.abs(dB) < self.delta_alpha, mode="drop"))
        coef = yB * dB
        if first is not None:  # each point's change on its first entry in B (the row fetched)
            coef = jnp.zeros_like(coef).at[first].add(coef)
        h = ws // 2
        if st.w is not None:  # G afresh from w (no drift)
            w = st.w + coef @ XB
            G = y * _on_variables(dual, pb.op.matvec(w)) + dual.p
            return self._advance(dual, st._replace(w=w), alpha, G, steps, B[h:], vB[h:], None)
        G = G + y * _on_variables(dual, coef @ KB)
        return self._advance(dual, st, alpha, G, steps, B[h:], vB[h:], cache)

    def _advance(self, dual: LibsvmDual, st, alpha, G, steps, keep, keep_ok, cache):
        """The next state: violation, stall counter and counters from the new alpha and G."""
        up, low = index_sets(dual.y, alpha, dual.U)
        obj = -0.5 * jnp.sum(alpha * (G + dual.p))  # the dual objective -(1/2 a^T Q a + p^T a)
        best, since = stall_update(st.best, st.since, -obj, 0.0)
        return st._replace(alpha=alpha, G=G, keep=keep, keep_ok=keep_ok, cache=cache,
                           viol=extremes(-dual.y * G, up, low), best=best, since=since,
                           inner=st.inner + steps.astype(jnp.int32))

    def _alfpgm_inner(self, KBB, yB, aB, cB, gB, vB, viol, y, alpha, G, U):
        """The paper's sub-problem solver (eq. 6-11, 16) on B, with one SMO step as the fall-back."""
        dt = KBB.dtype
        yv = jnp.where(vB, yB, 0.0)
        H = (yv[:, None] * yv[None, :]) * KBB
        lo = jnp.where(vB, -aB, 0.0)
        hi = jnp.where(vB, cB - aB, 0.0)
        g = jnp.where(vB, gB, 0.0)
        eps_k = jnp.maximum(jnp.minimum(self.eps, self.eps_scale * viol), jnp.finfo(dt).eps)
        lam0 = calculate_rho(y, alpha, G, U)  # the multiplier of y^T alpha = rhs is rho
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
        dual = libsvm_dual(pb)
        alpha = to_library(dual, st.alpha)
        rho = calculate_rho(dual.y, st.alpha, st.G, dual.U)
        if pb.kernel is None:  # linear kernel: the primal w exists
            w = pb.op.rmatvec(alpha * pb.y)
        else:  # kernel model: w lives in feature space; zero-length placeholder
            w = jnp.zeros((0,), pb.dtype)
        if st.w is not None:  # no kernel rows
            zero = jnp.zeros((), jnp.int32)
            rows = dict(cache_hits=zero, cache_misses=zero, cache_rows=zero,
                        working_set=jnp.asarray(2 * st.keep.shape[0]))
        elif st.K is None:
            c = st.cache
            rows = dict(cache_hits=c.hits, cache_misses=c.misses, cache_rows=jnp.asarray(c.rows.shape[0]),
                        working_set=jnp.asarray(2 * st.keep.shape[0]))
        else:  # the whole matrix: every row computed once, every variable in the one working set
            n = jnp.asarray(pb.n, jnp.int32)
            rows = dict(cache_hits=jnp.zeros((), jnp.int32), cache_misses=n, cache_rows=n,
                        working_set=jnp.asarray(st.alpha.shape[0], jnp.int32))
        extras = {"rho": rho, "violation": st.viol, **rows, "inner_iterations": st.inner}
        return Iterate(w, -rho, alpha, extras)

    def own_objectives(self, pb) -> bool:
        return True

    def objectives(self, pb, st: ALFPGMState, it: Iterate):
        """Objectives from alpha and the maintained gradient (no kernel pass)."""
        dual = libsvm_dual(pb)
        G, a = st.G, st.alpha
        quad = jnp.vdot(a, G - dual.p)  # alpha^T Q alpha, since G = Q alpha + p
        value = -(0.5 * quad + jnp.vdot(dual.p, a))
        n = pb.n
        Kb = (dual.y * (G - dual.p))[:n]  # (K beta)_i, beta_i = sum of y_t alpha_t over point i's variables
        margin = pb.y * (Kb + it.b)  # y_i f(x_i), f = K beta + b
        primal = 0.5 * quad + jnp.sum(pb.cs * pb.loss.value(margin)) + dual.rhs * it.b
        return primal, value, it.alpha

    def start_objective(self, pb):
        if rhs(pb) != 0.0:  # the one-class primal at w = 0 is -rho, unbounded below and above
            return jnp.asarray(jnp.inf, pb.dtype)
        return super().start_objective(pb)

    def carry(self, pb, st: ALFPGMState) -> Start:
        aux = dict(G=st.G, keep=st.keep, keep_ok=st.keep_ok, viol_tol=st.viol_tol, alpha=st.alpha)
        return Start(jnp.zeros((pb.d,), pb.dtype), jnp.zeros((), pb.dtype), to_library(libsvm_dual(pb), st.alpha),
                     jnp.asarray(DUAL, jnp.int32), aux)


# ---------------------------------------------------------------------- pieces
def _kernel(pb: Problem):
    return pb.kernel if pb.kernel is not None else linear


def _dense_rows(pb: Problem):
    """X as a dense (n, d) array (a sparse operator is scattered once)."""
    return pb.op.dense()


def _on_variables(dual: LibsvmDual, v):
    """A per-point vector (n,) on the dual's variables (m,)."""
    return jnp.concatenate([v, v]) if dual.split else v


def _first_of_point(P, valid):
    """For each entry of B, the first valid entry on the same point (itself when it is the first)."""
    same = (P[:, None] == P[None, :]) & valid[None, :]
    return jnp.argmax(same, axis=1).astype(jnp.int32)


def _kernel_matvec(kern, X, v, col_block, row_block, active=True):
    """K(X, X) v = sum_i v_i K(x_i, X) over the nonzero v_i only, ``row_block`` kernel rows at a time (memory
    row_block x n; LIBSVM too computes a start's gradient from the rows of its nonzero alphas); zeros unless
    ``active``."""
    n = X.shape[0]
    b = min(row_block, n)
    nz = v != 0
    order = jnp.argsort(~nz, stable=True).astype(jnp.int32)  # the nonzero entries first
    order = jnp.concatenate([order, jnp.zeros((-n % b,), jnp.int32)])
    count = jnp.sum(nz)
    nb = jnp.where(active, (count + b - 1) // b, 0)

    def body(i, out):
        idx = lax.dynamic_slice_in_dim(order, i * b, b)
        coef = jnp.where(i * b + jnp.arange(b) < count, v[idx], 0.0)
        return out + coef @ kernel_rows(kern, X, idx, block=col_block).astype(v.dtype)

    return lax.fori_loop(0, nb, body, jnp.zeros((n,), v.dtype))


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
    up, low = index_sets(y, alpha, cs)
    m, M = extremes(q, up, low, split=True)
    kept = jnp.zeros((n,), bool).at[jnp.where(keep_ok, keep, n)].set(True, mode="drop")
    inf = jnp.asarray(jnp.inf, G.dtype)
    cand = jnp.stack([jnp.where(up & ~kept, q, -inf), jnp.where(low & ~kept, -q, -inf)])
    vals, idx = top_k(cand, hu)  # both rows at once
    I, J = idx[0], idx[1, :h - hu]
    vi = (vals[0] > -inf) & (q[I] > M)
    vj = (vals[1, :h - hu] > -inf) & (q[J] < m) & ~jnp.any((J[:, None] == I[None, :]) & vi[None, :], axis=1)
    return jnp.concatenate([keep, I, J]), jnp.concatenate([keep_ok, vi, vj]), m, M


def _select_pwss(y, alpha, G, U, count, stuck, X, kern, split, n, h, check, min_opt, max_opt, tau, floor):
    """pWSS (the paper's Section 3): B = [I, J] of h pairs and its mask; also m and M.

    I: the h largest q over the eligible I_up (eq. 14), each taken only when it violates (q_i > M).
    J: for each i in turn, WSS2nd (eq. 15) over the first ``check`` unused eligible entries of I_low
    sorted by q (minAlphaCheck): the largest b^2 / a with b = q_i - q_j > 0, a = K_ii + K_jj - 2 K_ij
    (tau where a <= 0). Eligible (MinMaxLimiter): live, not ``stuck``, used fewer than ``max_opt``
    times, not at a bound after ``min_opt`` uses; when that leaves no pair violating by more than
    ``floor`` or by less than half the global violation, every live variable is eligible again (and
    ``reset``, the last value returned, says so: the counts start afresh).
    """
    q = -y * G
    up, low = index_sets(y, alpha, U)
    m, M = extremes(q, up, low, split=True)
    live = U > 0
    bound = (alpha <= 0) | (alpha >= U)
    elig = live & ~stuck & (count < max_opt) & ~((count >= min_opt) & bound)
    me, Me = extremes(q, up & elig, low & elig, split=True)
    # the limiter must not hide the violation that matters: when the eligible variables' worst pair
    # violates by less than half the global one (or by less than ``floor``), all are eligible again
    # and the counts start afresh
    reset = (me - Me <= jnp.maximum(floor, 0.5 * (m - M)))
    elig = jnp.where(reset, live, elig)
    inf = jnp.asarray(jnp.inf, G.dtype)
    vals, I = top_k(jnp.where(up & elig, q, -inf), h)
    vi = (vals > -inf) & (q[I] > M)
    pool_size = min(h + check, q.shape[0])
    pvals, J0 = top_k(jnp.where(low & elig, -q, -inf), pool_size)  # I_low's smallest q, in order
    avail = (pvals > -inf) & ~jnp.any((J0[:, None] == I[None, :]) & vi[None, :], axis=1)
    pts = (lambda t: t % n) if split else (lambda t: t)
    XI, XJ = X[pts(I)], X[pts(J0)]
    kij = kern(XI, XJ).astype(G.dtype)  # (h, pool)
    diag = jax.vmap(lambda a: kern(a[None], a[None])[0, 0])
    kii, kjj = diag(XI).astype(G.dtype), diag(XJ).astype(G.dtype)
    a = kii[:, None] + kjj[None, :] - 2.0 * kij
    a = jnp.where(a > 0, a, tau)
    b = q[I][:, None] - q[J0][None, :]
    score = jnp.where(b > 0, b * b / a, -inf)

    def pick(r, carry):
        used, J, vj = carry
        free = avail & ~used
        first = free & (jnp.cumsum(free) <= check)  # minAlphaCheck: the first unused entries only
        s_ = jnp.where(first & vi[r], score[r], -inf)
        k = jnp.argmax(s_)
        ok = s_[k] > -inf
        return used.at[k].set(used[k] | ok), J.at[r].set(J0[k]), vj.at[r].set(ok)

    used0 = jnp.zeros((pool_size,), bool)
    _, J, vj = lax.fori_loop(0, h, pick, (used0, jnp.zeros((h,), I.dtype), jnp.zeros((h,), bool)))
    return jnp.concatenate([I, J]), jnp.concatenate([vi & vj, vj]), m, M, reset


alfpgm = ALFPGM()
"""Decomposition for LIBSVM's general kernel dual (AL-FPGM's framework, SMO inside working sets), with its defaults."""
