"""Crammer and Singer's multiclass SVM by the sequential dual method (LIBLINEAR's ``-s 4``).

One joint problem over K classes (SPEC section 7), w (K, d):

    P(W) = 1/2 sum_m ||w_m||^2 + sum_i C s_i max_m (e_i^m + w_m.x_i - w_{y_i}.x_i),   e_i^m = 1 - delta(m, y_i)

and its dual, over alpha (n, K) with sum_m alpha_i^m = 0 and alpha_i^m <= C s_i delta(m, y_i):

    D(alpha) = sum_i alpha_i^{y_i} - 1/2 sum_m ||w_m(alpha)||^2,   w_m(alpha) = sum_i alpha_i^m x_i

(D <= P* <= P). The method is Keerthi, Sundararajan, Chang, Hsieh and Lin (KDD 2008), "A sequential
dual method for large scale multi-class linear SVMs", as LIBLINEAR's Solver_MCSVM_CS runs it: one
driver step is one pass over the rows still active, in a random order, each row's K-variable
sub-problem solved exactly by sorting, with shrinking (a class at its bound whose gradient is below
the row's smallest free one leaves the row; a row with one class left leaves the pass). Between
passes LIBLINEAR's rule: with ``stop`` the largest max G - min G of the pass, ``stop < eps`` after a
pass over every row proposes the stop; ``stop < eps_shrink`` (first max(10 eps, 1), halved each
time down to eps) restores every row and class. ``svmopt._mcsvm`` holds the pass: a compiled CPU
kernel and the same steps in JAX.

LIBLINEAR restores the shrunk rows and classes only once a shrunk pass's largest spread falls below
eps_shrink; where the shrunk problem stays far from solved, that can take thousands of passes while
the dual creeps. So each periodic gap check (below) comes after a pass that visits every row and
class again (``restore``): the primal of W is then measured with no row left stale.

The status contract: when the pass rule fires, the loop certifies the relative gap (P - D)/|P| with
P from X W and D from X^T alpha computed afresh; above ``tol`` (default 1e-3), ``tighten`` divides
eps by 10, restores every row and refreshes W from alpha (float32 drift). The gap is also checked
once the passes since the last check did ``certify_work`` (2) full passes' work, a pass counting the
active classes of the rows it visits plus ``pass_overhead`` (its fixed cost). LIBLINEAR's defaults:
eps = 0.1, at most 100000 passes.

The problem is built by ``svmopt.plan.crammer_singer`` (``svmopt.solve_multiclass(...,
strategy="crammer_singer")``): ``pb.y`` holds the class codes 0..K-1 and ``n_classes`` K. Sample
weights scale C per row. There is no free intercept: LIBLINEAR's bias feature
(``intercept_scaling=s``: a constant column s, so b_m = s w_m,last is regularized) or none.
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any, NamedTuple

import numpy as np

import jax
import jax.numpy as jnp

from .. import _mcsvm
from ..problem import Problem
from ..result import Status
from .base import RESUME, Iterate, Method, Start, check_positive, concrete, platform, require, static
from .dcd_passes import key as make_key, key_words

__all__ = ["CrammerSinger", "crammer_singer", "primal_dual"]


class CSState(NamedTuple):
    wt: Any  # (d, K) the weights, feature-major
    alpha: Any  # (n, K)
    index: Any  # (n, K) int32: each row's classes, active ones first
    act: Any  # (n,) int32: active classes per row (<= 1: out of the pass)
    info: Any  # (n, 2) [C s_i, ||x_i||^2]
    visit: Any  # (n,) int32: K for the rows a pass visits (weight > 0, x_i != 0), else 0
    rows: Any  # the operator's arrays (``_mcsvm.rows``)
    y: Any  # (n,) int32 class codes
    key: Any  # (2,) uint32: the next pass's seed (random words from ``seed``, the second one counts passes)
    eps: Any  # the pass rule's tolerance (tightened by the loop's certificate)
    eps_shrink: Any
    from_all: Any  # the last pass visited every row
    done: Any
    crit: Any  # the last pass's stop value
    work: Any  # passes' work since the last periodic certificate, in full passes
    due: Any  # the periodic gap check follows this pass
    full: Any  # the work of a full pass: sum of visit


@dataclasses.dataclass(frozen=True)
class CrammerSinger(Method):
    """The sequential dual method for Crammer-Singer (Keerthi et al. 2008; LIBLINEAR -s 4).

    tol        relative duality gap certified at the end (default 1e-3)
    eps        LIBLINEAR's -e for -s 4: a pass over every row whose largest max G - min G is below
               it proposes the stop (default 0.1)
    seed       int or ``jax.random`` key of the passes' random orders
    n_classes  K (static; set by ``svmopt.plan.crammer_singer``)
    impl       "auto" (default: the compiled pass of ``svmopt._mcsvm`` on the CPU where it is built),
               "xla" (the pure-JAX pass), "ffi" (the compiled pass; an error where it is missing)
    restore    True (default): each periodic gap check comes after a pass that visits every row and
               class again; False: only LIBLINEAR's rule restores them (its passes exactly)
    """

    tol: float = 1e-3
    eps: float = 0.1
    seed: Any = 0
    n_classes: int = static(0)
    impl: str = static("auto")
    restore: bool = True

    name = "crammer_singer"
    certify_work = 2.0  # check the gap once the passes since the last check did 2 full passes' work
    pass_overhead = 2000  # a pass's fixed cost (a driver step), in active classes of rows visited
    polish_steps = (0, 0)
    batchable = False

    def validate(self, pb: Problem) -> None:
        require(pb.kernel is None, "crammer_singer is a linear solver (LIBLINEAR -s 4); it takes no kernel")
        require(pb.reg.is_l2, f"crammer_singer solves the l2-regularized problem only, got reg={pb.reg!r}")
        require(not pb.fit_intercept,
                "crammer_singer cannot keep a free intercept (its dual has no equality constraint for it); "
                "use LIBLINEAR's bias feature intercept_scaling=1.0 (b regularized, as LIBLINEAR -B 1 and "
                "LinearSVC) or fit_intercept=False")
        if pb.op.layout == "sharded":
            raise ValueError("crammer_singer walks rows on one device; row-sharded X is for the batch solvers")
        if not (isinstance(self.n_classes, (int, np.integer)) and self.n_classes >= 2):
            raise ValueError("crammer_singer needs n_classes >= 2 (the plan sets it): use "
                             "svmopt.solve_multiclass(X, y, strategy='crammer_singer')")
        if self.impl not in ("auto", "xla", "ffi"):
            raise ValueError(f"crammer_singer impl must be 'auto', 'xla' or 'ffi', got {self.impl!r}")
        if self.impl == "ffi" and not self.native(pb):
            raise ValueError("crammer_singer(impl='ffi') needs the compiled pass (svmopt._mcsvm_ffi, built by "
                             "`pip install -e .`) and float32/float64 data on the CPU; here: "
                             f"built={_mcsvm.available()}, dtype={pb.dtype}, platform={platform(pb)!r}")
        if not self.native(pb) and platform(pb) != "cpu":
            warnings.warn(f"crammer_singer on {platform(pb)}: the pure-JAX pass takes a few kernel launches per row "
                          "(slow there); the compiled pass runs on the CPU", UserWarning, stacklevel=3)
        check_positive(self, "eps")
        seed = concrete(self.seed)
        if not (isinstance(self.seed, jax.Array) and jnp.issubdtype(self.seed.dtype, jax.dtypes.prng_key)):
            if seed is not None and (isinstance(seed, bool) or np.ndim(seed) != 0
                                     or not np.issubdtype(np.asarray(seed).dtype, np.integer)):
                raise TypeError(f"crammer_singer seed must be an int or a jax.random key, got {self.seed!r}")

    def native(self, pb) -> bool:
        """Whether the pass runs as the compiled CPU kernel (``svmopt._mcsvm``) on ``pb``."""
        if self.impl == "xla":
            return False
        return (platform(pb) == "cpu" and jax.default_backend() == "cpu" and _mcsvm.supports(pb.dtype)
                and _mcsvm.available())

    def canonical(self, dtype):
        """The seed as the raw words of its key (an int and a key of the same value share a program)."""
        m = super().canonical(dtype)
        seed = m.seed
        if isinstance(seed, jax.core.Tracer) or (isinstance(seed, jax.Array) and seed.dtype == jnp.uint32
                                                 and seed.shape == (2,)):
            return m
        if isinstance(seed, jax.Array) and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key):
            return dataclasses.replace(m, seed=jax.random.key_data(seed))
        return dataclasses.replace(m, seed=key_words(int(np.asarray(seed))))

    def default_max_iter(self, pb) -> int:
        return 100000  # LIBLINEAR's pass cap for -s 4

    def aux_template(self, pb):
        dt, n, d, K = pb.dtype, pb.n, pb.d, self.n_classes
        return dict(wt=jnp.zeros((d, K), dt), alpha=jnp.zeros((n, K), dt), index=jnp.zeros((n, K), jnp.int32),
                    act=jnp.zeros((n,), jnp.int32), key=jnp.zeros((2,), jnp.uint32),
                    eps=jnp.zeros((), dt), eps_shrink=jnp.zeros((), dt), from_all=jnp.asarray(False),
                    work=jnp.zeros((), dt))

    # -- state
    def init(self, pb: Problem, start: Start) -> CSState:
        dt, n, K = pb.dtype, pb.n, self.n_classes
        y = jnp.clip(pb.y.astype(jnp.int32), 0, K - 1)
        cs, qd = pb.cs, pb.op.row_sq_norms()
        info = jnp.stack([cs, qd], axis=1).astype(dt)
        # a row x_i = 0 (no bias feature) is not visited: its optimum is alpha_i^y = C s_i = -alpha_i^m (any m)
        zero = (cs > 0) & ~(qd > 0)
        rows_ = jnp.arange(n)
        alpha = (jnp.zeros((n, K), dt).at[rows_, y].set(jnp.where(zero, cs, 0.0))
                 .at[rows_, jnp.where(y == 0, 1, 0)].add(jnp.where(zero, -cs, 0.0)))
        eps = jnp.asarray(self.eps, dt)
        visit = jnp.where((cs > 0) & (qd > 0), K, 0).astype(jnp.int32)
        cold = dict(wt=jnp.zeros((pb.d, K), dt), alpha=alpha, index=jnp.tile(jnp.arange(K, dtype=jnp.int32), (n, 1)),
                    act=visit, key=jax.random.bits(make_key(self.seed), (2,), jnp.uint32), eps=eps,
                    eps_shrink=jnp.maximum(10.0 * eps, 1.0), from_all=jnp.asarray(True), work=jnp.zeros((), dt))
        resume = (start.level & RESUME) != 0
        st = {k: jnp.where(resume, start.aux[k], v) for k, v in cold.items()}
        return CSState(**st, info=info, visit=visit, rows=_mcsvm.rows(pb.op), y=y, done=jnp.asarray(False),
                       crit=jnp.asarray(jnp.inf, dt), due=jnp.asarray(False), full=jnp.maximum(jnp.sum(visit, dtype=dt), 1.0))

    def step(self, pb: Problem, st: CSState) -> CSState:
        # the passes since the last gap check did their share of work: this pass visits every row (restore),
        # and the check follows it (its primal then has no stale rows)
        fresh = (st.work >= self.certify_work) & self.restore
        act = jnp.where(fresh, st.visit, st.act)
        # (a counter, not a jax.random split per pass: threefry cost half as much as a late pass)
        wt, alpha, index, act, stats = _mcsvm.pass_(st.wt, st.alpha, st.info, st.rows, st.y, st.index, act, st.key,
                                                    self.native(pb))
        stop = stats[0]
        # (the restoring pass does not count: it would bring the next check forward, and the next restore)
        done_work = (stats[1] + self.pass_overhead) / st.full
        work = jnp.where(st.work >= self.certify_work, 0.0, st.work) + jnp.where(fresh, 0.0, done_work)
        # LIBLINEAR's rule between passes
        below = stop < st.eps_shrink
        done = below & (stop < st.eps) & (st.from_all | fresh)
        reset = below & ~done
        due = fresh | (~self.restore & (work >= self.certify_work))
        return st._replace(wt=wt, alpha=alpha, index=index, act=jnp.where(reset, st.visit, act), due=due,
                           key=st.key + jnp.asarray([0, 1], jnp.uint32), crit=stop, done=done, from_all=below,
                           work=work,
                           eps_shrink=jnp.where(reset, jnp.maximum(st.eps_shrink / 2, st.eps), st.eps_shrink))

    def check(self, pb, st: CSState):
        return jnp.where(st.done, Status.CONVERGED, -1)

    def certify_due(self, pb, st: CSState, k):
        """The gap check costs about two passes over every row and class (X W and X^T alpha), while
        shrinking makes late passes visit a few classes of a few rows: check once the passes since
        the last check did ``certify_work`` full passes' work (with ``restore``, after the pass over
        every row that follows them)."""
        return st.due

    def tighten(self, pb, st: CSState):
        # W is refreshed from alpha: the passes' updates drift from X^T alpha by round-off
        return st._replace(eps=st.eps / 10.0, eps_shrink=st.eps, done=jnp.asarray(False), from_all=jnp.asarray(True),
                           act=st.visit, wt=_rmatvec(pb.op, st.alpha))

    def own_objectives(self, pb) -> bool:
        return True

    def section1_objective(self, pb) -> bool:
        return False

    def objectives(self, pb, st: CSState, it: Iterate):
        primal, dual, alpha = primal_dual(pb, st.wt, st.alpha, st.y)
        return primal, dual, alpha.T

    def start_objective(self, pb):
        return jnp.sum(pb.cs)  # P(0): every row's loss is 1

    def finalize(self, pb, st: CSState) -> Iterate:
        return Iterate(st.wt.T, jnp.zeros((), st.wt.dtype), st.alpha.T,
                       {"criterion": st.crit, "eps": st.eps, "active_rows": jnp.sum(st.act > 1, dtype=jnp.int32)})

    def carry(self, pb, st: CSState) -> Start:
        aux = dict(wt=st.wt, alpha=st.alpha, index=st.index, act=st.act, key=st.key, eps=st.eps,
                   eps_shrink=st.eps_shrink, from_all=st.from_all, work=st.work)
        dt = st.wt.dtype
        return Start(jnp.zeros((pb.d,), dt), jnp.zeros((), dt), jnp.zeros((pb.n,), dt), jnp.asarray(0, jnp.int32),
                     aux)

    def advice(self, status):
        if status == Status.MAX_ITER:
            return ("the sequential dual method needs more passes the larger C is; raise max_iter (LIBLINEAR -s 4 "
                    "allows 100000 passes, the default) or ask a larger tol")
        return None


def _matvec(op, wt):
    """X W^T (n, K) from wt (d, K)."""
    if op.layout == "dense":
        return op.dense() @ wt
    return jax.vmap(op.matvec, in_axes=1, out_axes=1)(wt)


def _rmatvec(op, a):
    """X^T a (d, K) from a (n, K)."""
    if op.layout == "dense":
        return (a.T @ op.dense()).T
    return jax.vmap(op.rmatvec, in_axes=1, out_axes=1)(a)


def project(pb: Problem, alpha, y):
    """The feasible dual point nearest alpha's signs: alpha_i^m <= 0 off the label, alpha_i^y the
    negated sum of the others, a row whose alpha_i^y exceeds C s_i scaled down (rows of weight 0: 0)."""
    K = alpha.shape[1]
    cs = pb.cs
    on_y = jnp.arange(K)[None, :] == y[:, None]
    off = jnp.where(on_y, 0.0, jnp.minimum(alpha, 0.0))
    ay = -jnp.sum(off, axis=1)
    scale = jnp.where(ay > cs, cs / jnp.where(ay > 0, ay, 1.0), 1.0)
    return jnp.where(cs[:, None] > 0, (off + jnp.where(on_y, ay[:, None], 0.0)) * scale[:, None], 0.0)


def primal_dual(pb: Problem, wt, alpha, y):
    """(P(W), D(alpha'), alpha') of the module docstring for wt (d, K), alpha (n, K) and codes y:
    P from X W, alpha' = ``project(alpha)`` and D from X^T alpha' computed afresh."""
    F = _matvec(pb.op, wt)
    K = wt.shape[1]
    fy = jnp.take_along_axis(F, y[:, None], axis=1)[:, 0]
    loss = jnp.max(F + (jnp.arange(K)[None, :] != y[:, None]).astype(F.dtype), axis=1) - fy
    primal = 0.5 * jnp.vdot(wt, wt) + jnp.sum(jnp.where(pb.cs > 0, pb.cs * loss, 0.0))
    a = project(pb, alpha, y)
    V = _rmatvec(pb.op, a)
    dual = jnp.sum(jnp.take_along_axis(a, y[:, None], axis=1)) - 0.5 * jnp.vdot(V, V)
    return primal, dual, a


crammer_singer = CrammerSinger()
"""Crammer-Singer's multiclass SVM by the sequential dual method (LIBLINEAR -s 4) with its defaults."""
