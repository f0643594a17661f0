"""Cutting plane — SVMperf (Joachims, KDD 2006), the 1-slack structural SVM.

Classification (Algorithm 1). With S = sum_i s_i and C_p = C S, the problem of SPEC
section 1 (hinge, l2, no free intercept) is OP2 in weighted form:

    min_{w, xi >= 0}  1/2 ||w||^2 + C_p xi
    s.t. for all c in {0,1}^n:   w . g_c >= delta_c - xi,
         g_c = (1/S) sum_i c_i s_i y_i x_i,   delta_c = (1/S) sum_i c_i s_i          (OP2)

(s = 1: S = n and C_p = C n is the paper's C, whose objective puts C_p/n on the slacks.)
At the optimum xi is the weighted mean hinge loss (Theorem 1), so the two optima coincide
and the Result's primal objective is the SPEC section-1 one (the driver recomputes it).
A constraint is kept only in its condensed form (g_c, delta_c): d + 1 numbers, never c.

One iteration (one driver ``step``):
  1. add the pending most violated constraint to the working set W (a buffer of
     ``max_constraints`` slots with an active mask);
  2. solve the dual over W (OP3), warm-started:
         min_alpha 1/2 alpha^T H alpha - delta^T alpha,  alpha >= 0, sum alpha <= C_p,
         H = G G^T,  w = G^T alpha
     by a small dense active-set method (Newton steps on the face of the simplex
     {alpha, alpha_0 = C_p - sum alpha >= 0}, each followed by an SMO pair step, see
     ``_qp``) until the QP duality gap  alpha^T grad - C_p min(0, min grad) <= qp_tol eps C_p;
  3. recover w = G^T alpha and xi = max(0, max_{c in W} delta_c - w . g_c);
  4. separation oracle at w (one fused pass over X, O(sn)): c_i = 1 iff y_i w.x_i < 1;
     the loss L(w) = delta_c - w . g_c is the weighted mean hinge loss of w;
  5. stop when L(w) <= xi + eps (line 9 of Algorithm 1).

``eps`` is the paper's epsilon (default 0.001): a bound on the *training loss*, not on the
objective. At the stop (w, xi + eps) is feasible for OP2, so with the QP gap g_QP
    P(w) - P* <= C_p eps + g_QP <= (1 + qp_tol) C S eps,
a relative error of at most (1 + qp_tol) eps C S / P* (e.g. a9a, C = 1: eps = 1e-3 gives
<= 0.3 %). The status contract asks more: when line 9 holds the driver computes the relative
duality gap (P(w) - D)/P(w) with D the working-set dual D_W below (or the dual of -l'(margin),
whichever is larger); at most ``tol`` (1e-3): CONVERGED, otherwise ``tighten`` divides eps by
10 and the cuts go on. For ordinal regression the same holds with OP4's objective.

Intercept: the cutting plane has no free (unregularized) b. With ``fit_intercept=True``
(the ``solve`` default) ``validate`` raises MissingCapability pointing to
``intercept_scaling``: ``intercept_scaling=s`` appends the constant feature s, the paper's
(and SVMperf's) convention, so b = s w_last is regularized, as LIBLINEAR's ``-B s``;
``fit_intercept=False`` fits no b. Silently regularizing b would report the optimum of a
different problem than the one asked for.

Ordinal regression / ROC area (Algorithm 2, OP5): ``task="ordinal"``, labels are ranks
0..R-1 in ``pb.y`` (``svmopt.ranking`` builds that problem). The pairs P = {(i, j): y_i > y_j},
m = |P|, and a constraint is c in {0,1}^m, condensed as g = (1/m) sum_i (c+_i - c-_i) x_i,
delta = (1/2m) sum_i (c+_i + c-_i). The most violated one (Theorem 5) has
    c+_i = #{j: y_j < y_i, w.x_i - w.x_j < 1},   c-_i = #{j: y_j > y_i, w.x_j - w.x_i < 1},
counted from one sort of w.x and running per-rank counts (Lemma 3): O(n log n + R n), the
O(n^2) pairs are never enumerated. C_p = C m, so the objective is
1/2 ||w||^2 + C sum_{(i,j) in P} (1 - w.(x_i - x_j))_+ (OP4 with the library's C).

Working set: a slot whose alpha stayed 0 for ``inactive_limit`` iterations is dropped (as
SVMperf does). If all slots are in use, the new constraint takes the slot idle the longest;
if every slot has alpha > 0, the two with the smallest alpha are aggregated into their
alpha-weighted average (a valid cut of OP2; w and the QP value are unchanged), so the
dual value never decreases and the method still converges, only more slowly.

The returned w is the iterate with the lowest primal objective seen (the last one when the
objective decreased monotonically). The reported dual objective is the working-set dual
D_W = delta^T alpha - 1/2 ||w||^2, a valid lower bound on the optimum of the section-1
problem (alpha_i = (s_i/S) sum_c alpha_c c_i is feasible for its dual).

``Result.extras``: "xi" (the last xi over W), "loss" (L at the returned w: the mean training
hinge loss, or the mean pairwise hinge loss for ranking), "working_set" (active slots at the
end), "alpha_w" (the working-set dual, K), "qp_iters" (inner QP iterations in all),
"qp_capped", "merges" (aggregations), and per-iteration traces of the first ``trace_len``
iterations (fixed-length arrays, NaN / -1 past the last iteration: ``init`` does not see
max_iter): "trace_xi", "trace_loss" (L of each iterate), "trace_working_set",
"trace_qp_iters". The driver's ``history=True`` adds the objective and time per
``record_every`` iterations. No per-sample "alpha" is returned (only condensed cuts are kept).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from typing import Any, NamedTuple

from ..problem import Problem
from ..result import Status
from .base import PRIMAL, RESUME, Iterate, Method, Start, check_positive, concrete, require, stall_update, start_or, \
    static

RUNNING = -1


class CPState(NamedTuple):
    G: Any  # working set: condensed cuts (K, d), their offsets, Gram matrix, QP dual
    delta: Any
    H: Any
    alpha: Any
    active: Any
    idle: Any
    w: Any
    xi: Any
    g_new: Any  # the pending most violated cut
    delta_new: Any
    loss: Any
    scale: Any
    best_w: Any
    best: Any
    best_loss: Any
    since: Any
    it: Any
    qp_iters: Any
    qp_capped: Any
    merges: Any
    trace_xi: Any
    trace_loss: Any
    trace_ws: Any
    trace_qp: Any
    eps: Any  # line 9's epsilon (tightened by the driver's certificate)


_RESUMED = ("G", "delta", "H", "alpha", "active", "idle", "w", "xi", "g_new", "delta_new", "loss", "best_w", "best",
            "best_loss", "eps")

__all__ = ["CuttingPlane", "cutting_plane", "most_violated_ordinal"]


@dataclasses.dataclass(frozen=True)
class CuttingPlane(Method):
    """SVMperf's cutting-plane method. Parameters (paper defaults where it has one):

    tol              relative duality gap certified at the end (0.001)
    eps              the paper's epsilon: stop when the most violated constraint is violated by
                     <= eps beyond xi; a bound on the (weighted) mean training hinge loss (0.001)
    max_constraints  working-set buffer size K (slots; memory K x d)
    inactive_limit   drop a constraint whose alpha stayed 0 this many iterations (SVMperf: 50)
    qp_tol           inner QP stops at duality gap <= qp_tol * eps * C_p
    qp_max_iter      cap on inner QP iterations per QP (extras["qp_capped"] counts QPs that hit it)
    patience         STALLED after this many iterations without a lower primal objective
    trace_len        length of the per-iteration trace arrays in extras
    task             "classification" (Algorithm 1) or "ordinal" (Algorithm 2; use svmopt.ranking)
    n_ranks          number of ranks R for task="ordinal" (set by svmopt.ranking)
    """

    tol: float = 1e-3
    eps: float = 1e-3
    max_constraints: int = static(100)
    inactive_limit: int = 50
    qp_tol: float = 0.1
    qp_max_iter: int = 1000
    patience: int = 200
    trace_len: int = static(1000)
    task: str = static("classification")
    n_ranks: int = static(0)

    name = "cutting_plane"
    certify_every = 1  # the gap costs little next to an iteration: check it often

    def validate(self, pb: Problem) -> None:
        require(pb.kernel is None, "cutting_plane is a linear method; for kernels use method=alfpgm or nesvm")
        # (the smoothed hinge's diagonal is an array: compared elementwise, never through float())
        box = [concrete(v) for v in pb.loss.box_diagonal()]
        require(all(v is not None and np.all(np.asarray(v) == t) for v, t in zip(box, (0.0, 1.0, 0.0))),
                f"cutting_plane solves the hinge loss (OP2) only, got loss={pb.loss!r}")
        require(pb.reg.is_l2, f"cutting_plane solves l2-regularized problems only, got reg={pb.reg!r}")
        require(not pb.fit_intercept,
                "cutting_plane cannot fit a free (unregularized) intercept: the 1-slack cutting plane models b "
                "as a constant feature (Joachims 2006, Sec. 2.1), so b is regularized. Pass intercept_scaling=1.0 "
                "(LIBLINEAR's -B 1 / SVMperf's bias feature) or fit_intercept=False")
        if self.task not in ("classification", "ordinal"):
            raise ValueError(f"cutting_plane task must be 'classification' or 'ordinal', got {self.task!r}")
        if self.task == "ordinal" and self.n_ranks < 2:
            raise ValueError("task='ordinal' needs n_ranks >= 2; use svmopt.ranking.solve_ordinal")
        check_positive(self, "eps", "qp_tol")
        check_positive(self, "inactive_limit", "qp_max_iter", "patience", integer=True)
        if not (isinstance(self.max_constraints, int) and self.max_constraints >= 2):
            raise ValueError(f"max_constraints must be an integer >= 2, got {self.max_constraints!r}")
        if not (isinstance(self.trace_len, int) and self.trace_len >= 0):
            raise ValueError("trace_len must be an integer >= 0")

    def default_max_iter(self, pb) -> int:
        return 2000

    def aux_template(self, pb):
        dt, K, d = pb.dtype, self.max_constraints, pb.d
        z = jnp.zeros((), dt)
        return dict(G=jnp.zeros((K, d), dt), delta=jnp.zeros((K,), dt), H=jnp.zeros((K, K), dt),
                    alpha=jnp.zeros((K,), dt), active=jnp.zeros((K,), bool), idle=jnp.zeros((K,), jnp.int32),
                    w=jnp.zeros((d,), dt), xi=z, g_new=jnp.zeros((d,), dt), delta_new=z, loss=z,
                    best_w=jnp.zeros((d,), dt), best=z, best_loss=z, eps=z)

    # -- state: working set (G, delta, H, alpha, active, idle), iterate, pending cut, traces
    def init(self, pb: Problem, start: Start) -> CPState:
        dt, K, d, T = pb.dtype, self.max_constraints, pb.d, self.trace_len
        w = start_or(start, PRIMAL, start.w, jnp.zeros((d,), dt))  # the first cut is taken at w
        scale = _scale(self, pb)
        g, delta = _oracle(self, pb, w, scale)
        inf = jnp.asarray(jnp.inf, dt)
        nan_t = jnp.full((T,), jnp.nan, dt)
        st = CPState(
            G=jnp.zeros((K, d), dt), delta=jnp.zeros((K,), dt), H=jnp.zeros((K, K), dt),
            alpha=jnp.zeros((K,), dt), active=jnp.zeros((K,), bool), idle=jnp.zeros((K,), jnp.int32),
            w=w, xi=jnp.zeros((), dt), g_new=g, delta_new=delta, loss=delta - jnp.vdot(w, g),
            scale=scale, best_w=w, best=inf, best_loss=delta, since=jnp.asarray(0, jnp.int32),
            it=jnp.asarray(0, jnp.int32), qp_iters=jnp.asarray(0, jnp.int32), qp_capped=jnp.asarray(0, jnp.int32),
            merges=jnp.asarray(0, jnp.int32), trace_xi=nan_t, trace_loss=nan_t,
            trace_ws=jnp.full((T,), -1, jnp.int32), trace_qp=jnp.full((T,), -1, jnp.int32),
            eps=jnp.asarray(self.eps, dt))
        resume = (start.level & RESUME) != 0
        return st._replace(**{k: jnp.where(resume, start.aux[k], getattr(st, k)) for k in _RESUMED})

    def step(self, pb: Problem, st: CPState) -> CPState:
        Cp = pb.C * st.scale
        # 1. add the pending cut (found at the current w) to the working set
        G, delta, H, alpha, active, idle, merged = _insert(st._asdict(), st.g_new, st.delta_new)
        # 2. the dual over W (OP3), warm-started from the previous alpha
        qp_gap_tol = self.qp_tol * st.eps * Cp
        alpha, qp_k = _qp(H, delta, alpha, active, Cp, qp_gap_tol, self.qp_max_iter)
        # drop constraints inactive for inactive_limit iterations (SVMperf)
        idle = jnp.where(alpha > 0, 0, idle + 1)
        active = active & (idle < self.inactive_limit)
        alpha = jnp.where(active, alpha, 0.0)
        # 3. primal recovery: w = G^T alpha, xi = the largest violation over W
        w = alpha @ G
        xi = jnp.maximum(jnp.max(jnp.where(active, delta - G @ w, -jnp.inf)), 0.0)
        # 4. separation oracle at the new w; its loss L(w) = delta_c - w.g_c (Theorem 1 / 5)
        g, dnew = _oracle(self, pb, w, st.scale)
        loss = dnew - jnp.vdot(w, g)
        primal = 0.5 * jnp.vdot(w, w) + Cp * loss
        take = primal < st.best
        best, since = stall_update(st.best, st.since, primal, 0.0)
        it = st.it
        tr = lambda a, v: a.at[it].set(v, mode="drop")  # noqa: E731  (first trace_len iterations)
        return st._replace(
            G=G, delta=delta, H=H, alpha=alpha, active=active, idle=idle, w=w, xi=xi, g_new=g,
            delta_new=dnew, loss=loss, best_w=jnp.where(take, w, st.best_w),
            best_loss=jnp.where(take, loss, st.best_loss), best=best, since=since, it=it + 1,
            qp_iters=st.qp_iters + qp_k, qp_capped=st.qp_capped + (qp_k >= self.qp_max_iter),
            merges=st.merges + merged,
            trace_xi=tr(st.trace_xi, xi), trace_loss=tr(st.trace_loss, loss),
            trace_ws=tr(st.trace_ws, jnp.sum(active).astype(jnp.int32)),
            trace_qp=tr(st.trace_qp, qp_k.astype(jnp.int32)))

    def check(self, pb, st: CPState):
        # line 9 of Algorithm 1 / line 24 of Algorithm 2
        return jnp.where(st.loss <= st.xi + st.eps, Status.CONVERGED,
                         jnp.where(st.since >= self.patience, Status.STALLED, -1))

    def tighten(self, pb, st: CPState):
        return st._replace(eps=st.eps / 10.0, since=jnp.zeros_like(st.since))

    def finalize(self, pb, st: CPState) -> Iterate:
        extras = {
            "xi": st.xi, "loss": st.best_loss, "working_set": jnp.sum(st.active),
            "qp_iters": st.qp_iters, "qp_capped": st.qp_capped, "merges": st.merges,
            "alpha_w": st.alpha, "trace_xi": st.trace_xi, "trace_loss": st.trace_loss,
            "trace_working_set": st.trace_ws, "trace_qp_iters": st.trace_qp, "eps": st.eps,
        }
        return Iterate(st.best_w, jnp.zeros((), pb.dtype), None, extras)

    def carry(self, pb, st: CPState) -> Start:
        aux = {k: getattr(st, k) for k in _RESUMED}
        return Start(st.best_w, jnp.zeros((), pb.dtype), jnp.zeros((pb.n,), pb.dtype),
                     jnp.asarray(PRIMAL, jnp.int32), aux)

    def _working_set_dual(self, st: CPState):
        return jnp.vdot(st.alpha, st.delta) - 0.5 * jnp.vdot(st.w, st.w)

    def dual_bound(self, pb, st: CPState):
        """D_W = delta^T alpha - 1/2 ||w||^2: a valid lower bound on the section-1 optimum."""
        return self._working_set_dual(st) if self.task == "classification" else None

    def own_objectives(self, pb) -> bool:
        return self.task == "ordinal"

    def section1_objective(self, pb) -> bool:
        return self.task != "ordinal" and pb.kernel is None

    def start_objective(self, pb):
        if self.task == "classification":
            return super().start_objective(pb)
        return pb.C * _scale(self, pb)  # OP4 at w = 0: every pair has loss 1

    def objectives(self, pb, st: CPState, it: Iterate):
        """Ordinal: OP4's objective 1/2||w||^2 + C m L(w) and the working-set dual."""
        primal = 0.5 * jnp.vdot(it.w, it.w) + pb.C * st.scale * st.best_loss
        return primal, self._working_set_dual(st), None


def _scale(method: CuttingPlane, pb: Problem):
    """S = sum of sample weights (classification) or m = number of ordered pairs (ordinal)."""
    if method.task == "classification":
        return jnp.sum(pb.s)
    counts = jnp.sum(jax.nn.one_hot(pb.y.astype(jnp.int32), method.n_ranks, dtype=pb.dtype), axis=0)
    below = jnp.cumsum(counts) - counts
    return jnp.vdot(counts, below)


def _oracle(method: CuttingPlane, pb: Problem, w, scale):
    """Most violated constraint at w, condensed: (g (d,), delta scalar)."""
    if method.task == "ordinal":
        cplus, cminus = most_violated_ordinal(pb.op.matvec(w), pb.y.astype(jnp.int32), method.n_ranks)
        cplus, cminus = cplus.astype(pb.dtype), cminus.astype(pb.dtype)
        return pb.op.rmatvec((cplus - cminus) / scale), jnp.sum(cplus + cminus) / (2.0 * scale)

    def f(z, y, s):  # Algorithm 1, lines 5-7: c_i = 1 iff y_i w.x_i < 1
        cs = jnp.where(y * z < 1.0, s, 0.0) / scale
        return cs * y, cs

    return pb.op.fused(w, f, (pb.y, pb.s))


def most_violated_ordinal(z, ranks, n_ranks: int):
    """(c+, c-) of the most violated OP5 constraint at scores z (Theorem 5), int32 (n,) each.

    c+_i = #{j: ranks_j < ranks_i, z_i - z_j < 1},  c-_i = #{j: ranks_j > ranks_i, z_j - z_i < 1}.
    One sort of z, then for every i the per-rank counts of the elements below z_i - 1 and
    below z_i + 1 come from a running count table (n+1, R) indexed by binary search:
    O(n log n + R n) time, as Lemma 3 (the paper sweeps the sorted list; same counts).
    The tests compare z_j with z_i -+ 1, which is z_i - z_j < 1 exactly whenever z_i -+ 1 is
    computed without rounding (always for the exact tie z_i - z_j = 1 of integer scores).
    """
    zs, rs = lax.sort((z, ranks), num_keys=1, is_stable=False)
    # cnt[p, r] = # of rank-r elements among the p smallest scores; below[p, r] = # of rank < r
    onehot = jax.nn.one_hot(rs, n_ranks, dtype=jnp.int32)
    cnt = jnp.concatenate([jnp.zeros((1, n_ranks), jnp.int32), jnp.cumsum(onehot, axis=0)])
    below = jnp.cumsum(cnt, axis=1) - cnt
    n = z.shape[0]
    p = jnp.searchsorted(zs, z - 1.0, side="right")  # # of z_j <= z_i - 1
    q = jnp.searchsorted(zs, z + 1.0, side="left")  # # of z_j <  z_i + 1
    cplus = below[n, ranks] - below[p, ranks]  # lower ranks with z_j > z_i - 1
    cminus = q - below[q, ranks] - cnt[q, ranks]  # higher ranks with z_j < z_i + 1
    return cplus, cminus


def _insert(st, g, dnew):
    """Put a new cut into a free slot, else the longest-idle slot with alpha = 0, else
    aggregate the two smallest-alpha cuts into one (keeps w and the QP value) and use the
    freed slot. Updates the Gram matrix H = G G^T by one row/column per changed slot."""
    G, delta, H, alpha, active, idle = (st[k] for k in ("G", "delta", "H", "alpha", "active", "idle"))
    full = jnp.all(active)
    evictable = active & (alpha <= 0)
    must_merge = full & ~jnp.any(evictable)

    def merge(args):
        G, delta, H, alpha = args
        i = jnp.argmin(alpha)
        j = jnp.argmin(alpha.at[i].set(jnp.inf))
        ai, aj = alpha[i], alpha[j]
        gj = (ai * G[i] + aj * G[j]) / (ai + aj)
        G = G.at[j].set(gj)
        delta = delta.at[j].set((ai * delta[i] + aj * delta[j]) / (ai + aj))
        alpha = alpha.at[j].set(ai + aj).at[i].set(0.0)
        H = _set_gram_row(H, G, j)
        return G, delta, H, alpha, i

    def no_merge(args):
        G, delta, H, alpha = args
        free_slot = jnp.argmax(~active)
        idle_slot = jnp.argmax(jnp.where(evictable, idle, -1))
        return G, delta, H, alpha, jnp.where(full, idle_slot, free_slot)

    G, delta, H, alpha, slot = lax.cond(must_merge, merge, no_merge, (G, delta, H, alpha))
    G = G.at[slot].set(g)
    delta = delta.at[slot].set(dnew)
    alpha = alpha.at[slot].set(0.0)
    H = _set_gram_row(H, G, slot)
    active = active.at[slot].set(True)
    idle = idle.at[slot].set(0)
    return G, delta, H, alpha, active, idle, must_merge.astype(jnp.int32)


def _set_gram_row(H, G, k):
    row = G @ G[k]
    return H.at[k, :].set(row).at[:, k].set(row)


def _qp(H, delta, alpha, active, Cp, gap_tol, max_iter):
    """min 1/2 a^T H a - delta^T a over {a >= 0, sum a <= Cp, a = 0 off the active set} (OP3).

    The slack a_0 = Cp - sum a (gradient 0, zero Hessian row) makes the feasible set a
    scaled simplex. Each inner iteration is
      - a Newton step on the current face F = {a_k > 0} (the equality-constrained QP
        min over sum_F d = 0, from its KKT system by a Cholesky factor of H_FF + tau I,
        tau = sqrt(eps_mach) max H_kk since H = G G^T is only semidefinite), with the exact
        line search of the true objective, stopped at the first bound it hits (that
        constraint leaves the face): a primal active-set method;
      - an SMO pair step (LIBSVM's second-order pair, exact line search): moves mass to
        the steepest coordinate, which brings new constraints into the face and makes
        every iteration a descent step even where the Newton direction is spoiled by
        rounding (float32).
    Stops when the duality gap a^T grad - Cp min(0, min grad) (the Frank-Wolfe gap) is
    <= gap_tol. Returns (alpha, iterations). Warm-started, it typically needs a few.
    """
    dt = alpha.dtype
    K = alpha.shape[0]
    He = jnp.zeros((K + 1, K + 1), dt).at[:K, :K].set(H)  # index K is the slack
    act = jnp.concatenate([active, jnp.ones((1,), bool)])
    a = jnp.concatenate([alpha, jnp.reshape(jnp.maximum(Cp - jnp.sum(alpha), 0.0), (1,))])
    grad = jnp.concatenate([H @ alpha - delta, jnp.zeros((1,), dt)])
    diag = jnp.diag(He)
    scale = jnp.maximum(jnp.max(diag), jnp.finfo(dt).tiny)
    tau = jnp.sqrt(jnp.finfo(dt).eps) * scale
    tiny = jnp.finfo(dt).eps * scale

    def gap_of(a, grad):
        return jnp.vdot(a, jnp.where(act, grad, 0.0)) - Cp * jnp.min(jnp.where(act, grad, jnp.inf))

    def newton(a, grad):
        F = act & (a > 0)  # never empty: sum a = Cp > 0
        Ff = F.astype(dt)
        # KKT of min grad.d + 1/2 d^T H d s.t. sum_F d = 0, d = 0 off F, by the Schur
        # complement of the border: M d = -grad - nu 1_F with M = H_FF + tau I (SPD)
        M = jnp.where(F[:, None] & F[None, :], He, 0.0) + jnp.diag(jnp.where(F, tau, 1.0))
        uv = _cho_solve(M, jnp.stack([-jnp.where(F, grad, 0.0), Ff], axis=1))
        u, v = uv[:, 0], uv[:, 1]
        d = jnp.where(F, u - v * jnp.vdot(Ff, u) / jnp.vdot(Ff, v), 0.0)
        d = d - Ff * jnp.sum(d) / jnp.sum(Ff)  # keep sum a = Cp despite rounding
        Hd = He @ d
        slope, curv = jnp.vdot(grad, d), jnp.vdot(d, Hd)
        # exact line search; a zero-curvature descent direction runs to the boundary
        t_star = jnp.where(curv > tiny * jnp.vdot(d, d), -slope / jnp.where(curv > 0, curv, 1.0), jnp.inf)
        ratio = jnp.where(F & (d < 0), -a / jnp.where(d < 0, d, -1.0), jnp.inf)
        b = jnp.argmin(ratio)
        descent = slope < 0
        t = jnp.where(descent, jnp.minimum(t_star, ratio[b]), 0.0)
        t = jnp.where(jnp.isfinite(t), t, 0.0)
        a = jnp.maximum(a + t * d, 0.0)
        a = jnp.where(descent & (ratio[b] <= t_star), a.at[b].set(0.0), a)  # the blocking bound
        return a, grad + t * Hd

    def smo(a, grad):
        i = jnp.argmin(jnp.where(act, grad, jnp.inf))
        diff = grad - grad[i]
        eta = jnp.maximum(diag + diag[i] - 2.0 * He[i], tiny)
        cand = act & (a > 0) & (diff > 0)
        j = jnp.argmax(jnp.where(cand, diff * diff / eta, -1.0))
        t = jnp.where(cand[j], jnp.minimum(a[j], diff[j] / eta[j]), 0.0)  # t = a_j leaves exactly 0
        return a.at[i].add(t).at[j].add(-t), grad + t * (He[i] - He[j])

    def cond(c):
        _, _, k, gap = c
        return (gap > gap_tol) & (k < max_iter)

    def body(c):
        a, grad, k, _ = c
        a, grad = smo(*newton(a, grad))
        return a, grad, k + 1, gap_of(a, grad)

    a, _, k, _ = lax.while_loop(cond, body, (a, grad, jnp.asarray(0), gap_of(a, grad)))
    return a[:K], k


def _cho_solve(M, B):
    """M^{-1} B for SPD M (lax primitives: much cheaper to compile than jnp.linalg)."""
    L = lax.linalg.cholesky(M, symmetrize_input=False)
    Y = lax.linalg.triangular_solve(L, B, left_side=True, lower=True)
    return lax.linalg.triangular_solve(L, Y, left_side=True, lower=True, transpose_a=True)


cutting_plane = CuttingPlane()
"""The 1-slack cutting-plane method (Joachims 2006, SVMperf) with its defaults."""
