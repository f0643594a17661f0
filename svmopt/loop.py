"""The one loop every solver runs under; it alone certifies a gap and decides a status.

A method (``svmopt.solvers.base.Method``) only says how to start, step, check and finish; the
functions here are pure (jittable, vmappable) and own:

* the loop: ``lax.while_loop`` of ``step`` until ``check`` stops it or the iteration bound;
* the **status contract** (SPEC section 6): when a method's own criterion is met (or a periodic
  check is due), the loop computes the relative duality gap (P - D)/|P| of the problem as asked
  (the true loss, with D from a feasible dual point: the method's candidate, -C s l'(margin), or
  the method's own (P, D) candidates). At most ``tol``: CONVERGED. Above: the method's
  ``tighten`` makes its inner tolerance stricter and the loop goes on; a method that cannot
  tighten (or a problem without a dual) ends UNCERTIFIED. MAX_ITER, STALLED, DIVERGED and
  NONFINITE are decided here too; a method's ``check`` only proposes;
* the summary: primal / dual objectives, gap, the resume point (``Start``).

How these run (compiled, in chunks, in batches, with progress) is ``svmopt.driver``'s business.
"""
from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax

from .problem import (Problem, can_polish, dual_objective, loss_rounding, margin_rounding, polish_dual, primal_objective,
                      project_dual, relative_gap, rounding_of)
from .result import Status
from .solvers.base import COLD, Start, golden_min

__all__ = ["Summary", "Loop", "RUNNING", "has_dual", "objectives", "certifies", "final_status", "summarize",
           "iterate", "progress", "recorded_chunk", "init", "core", "zero_start", "chunk", "chunk_summary",
           "summary"]

RUNNING = -1
"""The loop's code for "still running" (status codes are ``Status`` values, all >= 0)."""


class Summary(NamedTuple):
    w: Any
    b: Any
    primal: Any
    dual: Any
    gap: Any
    status: Any
    iterations: Any
    extras: dict
    state: Start


# ---------------------------------------------------------------------------------- objectives
def has_dual(method, pb: Problem) -> bool:
    """Static: can a duality gap be computed for this problem?"""
    if method.own_objectives(pb):
        return True
    return pb.loss.has_dual and pb.reg.has_conjugate


POLISH_WITHIN = 10.0  # polish the dual only when the plain candidates' relative gap is below 10 tol
POLISH_BUDGET = 2.0  # the rows near the kink that polish_dual may free cost at most this * tol |P|


SCALE_WITHIN = 100.0
"""The primal point is rescaled (``rescale``) where the gap is within this many tol (and above tol)."""
SCALE_STEPS = 20  # golden-section steps on [0.95, 1.05]: the bracket shrinks to 0.1 * 0.618^20 = 7e-6,
# which costs at most ~1e-5 P where the margins need a lift of a few float32 eps


def rescale(pb: Problem, w, f, primal):
    """(s, P(s w, s b)): the multiple of the primal point with the smallest objective, s in [0.95, 1.05],
    or (1, P) where none is smaller. P(s w, s b) = R(s w) + sum C s_i l(s m_i) is convex in s and each
    golden-section step costs O(n + d), no product with X. Why: near a hard margin (large C, separable
    rows) the support vectors' margins sit at 1 +- rounding and C times their hinge terms is most of
    P - D; s = 1 + O(eps) lifts them past the kink at a cost of O(eps) R(w). A dual method's w =
    X^T (alpha y) in float32 stalled there (bench.suite seed 5's g05, hinge, C = 30.7: 8,006 free
    support vectors, dual CD's gap 1.6e-2 from pass 300 to 1,000; ``dual_newton`` does the same in its
    own certificate)."""
    m = pb.y * f
    one = jnp.ones((), primal.dtype)

    def phi(t):
        return pb.reg.value(t * w) + jnp.sum(pb.cs * pb.loss.value(t * m))

    t, val = golden_min(phi, 0.95 * one, 1.05 * one, SCALE_STEPS)
    better = jnp.isfinite(val) & (val < primal)
    return jnp.where(better, t, one), jnp.where(better, val, primal)


def objectives(method, pb: Problem, st, polish: bool = True):
    """(iterate, primal, dual, best dual alpha) of the method's state (jittable): ``_objectives``
    without the primal point's scale (already applied to the iterate)."""
    return _objectives(method, pb, st, polish)[:4]


def _scales(method, pb: Problem, w) -> bool:
    """Static: is the primal point rescaled in the certificate (``rescale``)? A method that asks
    (``Method.rescales``: dual CD, whose w = X^T (alpha y)), a linear model's w of a Section-1 objective."""
    return method.rescales and pb.kernel is None and jnp.ndim(w) == 1 and method.section1_objective(pb)


LIFT_CANDIDATES = 24  # multiples 1 + 2^k u, k < 24, of the primal point that ``lift`` tries (float32: up to 1 + 0.5)


def lift(pb: Problem, w, m, size, alpha, dual, tol):
    """(s, P(s w, s b), its rounding bound): the multiple s = 1 + 2^k u (u the unit roundoff) within
    [1, 1 + tol / 2] of the primal point whose objective plus the rounding bound of its loss terms is
    smallest. Why: near a hard margin every
    support vector's margin sits at 1 +- rounding, where the hinge's slope jumps from C to 0, so the
    rounding bound (``problem.rounding_bound``) charges C times each one's rounding and no iterate in
    the dtype certifies, while s = 1 + a few u lifts them past the kink (they leave the bound) at a cost
    of about 2 (s - 1) R(w) <= tol P. bench.suite seed 7's g03 (4,357 x 66,142, hinge, C = 83.6, bias
    feature, float32): every row a support vector, margins 1 +- 5e-7; dual_newton's gap 3e-7 with a
    rounding bound above tol (UNCERTIFIED; numpy's float64 gap of its w was 1.8e-3); the multiple taken
    certifies at 1.3e-6 (numpy's float64 gap 1.7e-6).
    m and ``size``: the margins y (X w + b) and their rounding (``problem.margin_rounding``, which the
    bound at s = 1 computed): no product with X, one pass over the rows for every candidate; a check pays
    it only for a gap within tol that its rounding bound pushed above."""
    dt = w.dtype

    def primal_at(t):
        return pb.reg.value(t * w) + jnp.sum(pb.cs * pb.loss.value(t * m))

    def upper(t):  # P(t w, t b) plus its loss terms' share of the rounding bound
        return primal_at(t) + loss_rounding(pb, t * m, t * size)

    # candidates 1 + 2^k u up to 1 + tol / 2, all in one pass over the rows (no loop to compile)
    u = float(jnp.finfo(dt).eps) / 2
    ts = 1.0 + u * 2.0 ** jnp.arange(LIFT_CANDIDATES, dtype=dt)
    ts = jnp.where(ts - 1.0 <= jnp.asarray(tol, dt) / 2, ts, 1.0)
    s = ts[jnp.argmin(jax.vmap(upper)(ts))]
    primal = primal_at(s)  # (the margins of s w are s m, within the rounding s e that the bound counts)
    return s, primal, rounding_of(pb, s * m, s * size, alpha, primal, dual)


def _rescaled(method, pb: Problem, it, primal, dual, f=None):
    """(iterate, primal, scale): ``rescale`` applied where the gap is within SCALE_WITHIN tol and above
    tol (f = X w + b computed there when not given: a method with its own objectives keeps its own)."""
    one = jnp.ones((), primal.dtype)
    if not _scales(method, pb, it.w):
        return it, primal, one
    gap = relative_gap(primal, dual)
    near = (gap > method.gap_tol()) & (gap <= SCALE_WITHIN * method.gap_tol())

    def go(p):
        fx = pb.op.matvec(it.w) + it.b if f is None else f
        return rescale(pb, it.w, fx, p)

    scale, primal = lax.cond(near, go, lambda p: (one, p), primal)
    return it._replace(w=scale * it.w, b=scale * it.b), primal, scale


def _objectives(method, pb: Problem, st, polish: bool = True):
    """(iterate, primal, dual, best dual alpha, scale) of the method's state (jittable).

    D is the best of the method's dual candidate and -C s l'(margin), each projected onto
    the dual's feasible set (``project_dual``); with ``polish``, when that gap is within
    ``POLISH_WITHIN`` times tol, the best one is improved by ``problem.polish_dual`` with the
    method's ``polish_steps`` (a certificate then costs a few more matvecs, paid only near
    the end of a solve). Where the gap is then within ``SCALE_WITHIN`` times tol (and above it),
    the primal point is rescaled (``rescale``): the iterate returned is s (w, b) and P its objective.
    """
    it = method.finalize(pb, st)
    one = jnp.ones((), pb.dtype)
    if method.own_objectives(pb):
        primal, dual, alpha, *f = method.objectives(pb, st, it)  # (a method that rescales may give X w + b)
        it, primal, scale = _rescaled(method, pb, it, primal, dual, *f)
        return it, primal, dual, alpha, scale
    f = pb.op.matvec(it.w) + it.b
    primal = primal_objective(pb, it.w, it.b, f)
    nan = jnp.asarray(jnp.nan, primal.dtype)
    if not (pb.loss.has_dual and pb.reg.has_conjugate):
        return it, primal, nan, it.alpha, one
    # dual candidates: the method's own (if any) and -l'(margin) (exact for smooth losses)
    cands = [pb.cs * -pb.loss.derivative(pb.y * f)]
    if it.alpha is not None:
        cands.append(it.alpha)
    best, best_alpha = -jnp.inf, None

    def consider(a, best, best_alpha):
        dval, _ = dual_objective(pb, a)
        dval = jnp.where(jnp.isfinite(dval), dval, -jnp.inf)
        take = dval > best
        return jnp.where(take, dval, best), (a if best_alpha is None else jnp.where(take, a, best_alpha))

    for a in cands:
        best, best_alpha = consider(project_dual(pb, a), best, best_alpha)
    if polish and any(method.polish_steps) and can_polish(pb):
        budget = POLISH_BUDGET * method.gap_tol() * jnp.abs(primal)

        def improve(ba):
            return consider(polish_dual(pb, ba[1], it.w, f, *method.polish_steps, budget=budget), *ba)

        gap = relative_gap(primal, best)  # (a gap already within tol needs no polish)
        near = (gap > method.gap_tol()) & (gap <= POLISH_WITHIN * method.gap_tol())
        best, best_alpha = lax.cond(near, improve, lambda ba: ba, (best, best_alpha))
    bound = method.dual_bound(pb, st)
    if bound is not None:  # e.g. the cutting plane's working-set dual: a valid lower bound too
        best = jnp.maximum(best, bound)
    it, primal, scale = _rescaled(method, pb, it, primal, best, f)
    return it, primal, jnp.where(jnp.isfinite(best), best, nan), best_alpha, scale


def certifies(gap, tol):
    """A relative gap within tol, and not below -tol: for a convex problem D <= P* <= P, so a gap
    further below 0 than rounding is no certificate (a kernel that is not positive semidefinite made
    nesvm's D exceed its P by 2.3 P, and the run said CONVERGED)."""
    return (gap <= tol) & (gap >= -tol)


def final_status(code, primal, start, finite):
    """The status of a loop that stopped with ``code``: MAX_ITER when still running, DIVERGED far above
    the starting objective, NONFINITE when an iterate is not finite."""
    status = jnp.where(code == RUNNING, Status.MAX_ITER, code)
    status = jnp.where(primal > 1e3 * (jnp.abs(start) + 1.0), Status.DIVERGED, status)
    return jnp.where(finite, status, Status.NONFINITE).astype(jnp.int32)


class Loop(NamedTuple):
    """What the loop carries: the method's state and the best certificate seen so far.

    dual   the largest dual objective of the certificate checks so far (-inf before the first):
           D(alpha) <= P* holds for every feasible alpha, whichever iterate it came from, so the
           best one is kept (the duals of primal methods do not grow monotonically)
    alpha  (n,) its dual point (zeros before the first check)
    primal the primal objective of the last check (+inf before the first): when that check
           certified, the state has not moved since, and the summary reuses it (no products)
    rounding  the bound on P - D's rounding (``problem.rounding_bound``, relative) of the last check
           whose computed gap was within tol (0 before one): it is computed only then
    scale  the multiple s of the state's (w, b) whose objective ``primal`` is (``rescale``)
    """

    st: Any
    dual: Any
    alpha: Any
    primal: Any
    rounding: Any
    scale: Any  # the last check's multiple of the primal point (``rescale``; 1 where none)


ROUNDING_SLACK = 64
"""A tol within this many eps of the gap is met up to rounding: a float64 tol of 1e-14 asks for what a
bound on P - D's rounding (~1e-14 there) cannot promise, and is taken as "to the dtype's precision"."""


def rounding_counts(method, pb: Problem, w) -> bool:
    """Static: is P - D's rounding bounded for this method and problem (a Section-1 objective, one w)?"""
    return method.section1_objective(pb) and jnp.ndim(w) == 1


def within_rounding(method, pb, it, loop: Loop, rel, ok, allowed):
    """(ok, rounding, scale, primal): a gap within tol certifies only when it stays within tol with the
    bound on its rounding added; the bound (one product with X and the rows' norms) is computed only for a
    gap that is within tol, otherwise the loop's last one is kept. Where the bound pushes the gap above
    tol, a multiple s of the primal point may certify instead (``lift``, where ``_lifts``): then s > 1 and
    ``primal`` is its objective (else s = 1 and the loop's primal)."""
    one = jnp.ones((), loop.scale.dtype)
    if not rounding_counts(method, pb, it.w):
        return ok, loop.rounding, one, loop.primal
    slack = ROUNDING_SLACK * jnp.finfo(loop.rounding.dtype).eps
    lifts = _lifts(method, pb, it, loop)

    def bound(_):
        delta, m = margin_rounding(pb, it.w, it.b)
        r = rounding_of(pb, m, delta, loop.alpha, loop.primal, loop.dual).astype(loop.rounding.dtype)
        if not lifts:
            return r, one, loop.primal

        def try_lift(_):
            t, p, r2 = lift(pb, it.w, m, delta, loop.alpha, loop.dual, allowed)
            g = relative_gap(p, loop.dual)
            good = certifies(g, allowed) & (g + r2 <= allowed + slack)
            return (jnp.where(good, r2, r).astype(r.dtype), jnp.where(good, t, 1.0).astype(one.dtype),
                    jnp.where(good, p, loop.primal).astype(loop.primal.dtype))

        return lax.cond(rel + r > allowed + slack, try_lift, lambda _: (r, one, loop.primal), None)

    rounding, s, primal = lax.cond(ok, bound, lambda _: (loop.rounding, one, loop.primal), None)
    rel = jnp.where(s > 1, relative_gap(primal, loop.dual), rel)
    return ok & (rel + rounding <= allowed + slack), rounding, s, primal


def best_certificate(loop: Loop, dual, alpha):
    """The certificate (dual, alpha) or the loop's best, whichever is larger."""
    take = dual >= loop.dual  # the latest wins ties; NaN (no dual) never replaces
    if alpha is None or jnp.shape(alpha) != jnp.shape(loop.alpha):
        return jnp.where(take, dual, loop.dual), None
    return jnp.where(take, dual, loop.dual), jnp.where(take, alpha, loop.alpha)


def summarize(method, pb: Problem, loop: Loop, k, code) -> Summary:
    """Final w, b, objectives, gap, status and resume point from a loop state (jittable).

    D is the better of the final iterate's plain candidates (no polish: a summary is cheap)
    and the best certificate of the loop (which certified a CONVERGED status). A CONVERGED run
    ends on the state its last check certified: that check's primal, dual and alpha are the
    summary's, without the three products of computing them again."""
    st = loop.st
    it, primal, dual, alpha = final_objectives(method, pb, loop, code)
    best, best_alpha = best_certificate(loop, dual, alpha)
    dual = jnp.where(jnp.isfinite(best), best, dual)
    if best_alpha is not None and pb.kernel is None:  # a kernel model's alpha is its expansion: keep the iterate's
        alpha = best_alpha
    extras = dict(it.extras)
    if alpha is not None:
        extras["alpha"] = alpha
    gap = primal - dual
    finite = jnp.all(jnp.isfinite(it.w)) & jnp.isfinite(it.b) & jnp.isfinite(primal)
    status = final_status(code, primal, method.start_objective(pb), finite)
    # a CONVERGED code was certified in the loop; re-check on the reported numbers
    # (the loop certified with its own, equally valid, rounding: allow the rounding of one more pass)
    slack = ROUNDING_SLACK * jnp.finfo(primal.dtype).eps
    rel, allowed = relative_gap(primal, dual), method.gap_tol() * (1 + 1e-6)
    ok = certifies(rel, allowed + slack)
    if rounding_counts(method, pb, it.w):
        # the loop bounded the rounding of P - D at its checks within tol (``within_rounding``)
        extras["rounding"] = loop.rounding
        ok = ok & (rel + loop.rounding <= allowed + slack)
    if pb.kernel is not None and not pb.kernel.psd:  # not convex: no gap certifies (kernels.Kernel.psd)
        ok = False
    status = jnp.where((status == Status.CONVERGED) & ~ok, Status.UNCERTIFIED, status).astype(jnp.int32)
    return Summary(it.w, it.b, primal, dual, gap, status, k, extras, method.carry(pb, st))


def _reuses(method, pb: Problem, it, loop: Loop) -> bool:
    """Static: does the summary take a certified check's (primal, dual, alpha, scale) from the loop?"""
    return (has_dual(method, pb) and it.alpha is not None and jnp.shape(it.alpha) == jnp.shape(loop.alpha)
            and pb.kernel is None)


def _lifts(method, pb: Problem, it, loop: Loop) -> bool:
    """Static: may a check certify a multiple of the primal point past its rounding (``lift``)? A loss
    with a kink (a smooth loss's slope is continuous there: its margins' rounding moves P to second order),
    below float64 (there the bound is ~1e-14 |P|: the lift's code would only cost compile time)."""
    return (not pb.loss.is_smooth and jnp.finfo(pb.dtype).bits < 64 and rounding_counts(method, pb, it.w)
            and _reuses(method, pb, it, loop))


def final_objectives(method, pb: Problem, loop: Loop, code):
    """(iterate, primal, dual, alpha) for the summary: the last check's where it certified."""
    it = method.finalize(pb, loop.st)
    reuse = _reuses(method, pb, it, loop)
    if not reuse:
        return objectives(method, pb, loop.st, polish=False)

    def fresh(_):
        _, primal, dual, alpha, scale = _objectives(method, pb, loop.st, polish=False)
        return primal, dual, alpha.astype(loop.alpha.dtype), scale.astype(loop.scale.dtype)

    def certified(_):
        return loop.primal, loop.dual, loop.alpha, loop.scale

    primal, dual, alpha, scale = lax.cond(code == Status.CONVERGED, certified, fresh, None)
    if _scales(method, pb, it.w) or _lifts(method, pb, it, loop):  # (1 where neither rescaled nor lifted)
        it = it._replace(w=scale * it.w, b=scale * it.b)
    return it, primal, dual, alpha


# ---------------------------------------------------------------------------------- the loop
def certify(method, pb, loop: Loop, code, k):
    """The method says CONVERGED (or a periodic check is due): CONVERGED only with a certified
    gap; a method whose own rule fired but whose gap is above tol tightens and goes on."""
    if not has_dual(method, pb):
        return loop, jnp.where(code == Status.CONVERGED, Status.UNCERTIFIED, code).astype(jnp.int32)
    periodic = method.certify_due(pb, loop.st, k)
    claimed = code == Status.CONVERGED
    due = claimed if periodic is None else claimed | ((code == RUNNING) & periodic)

    def check(loop):
        st = loop.st
        it, primal, dual, alpha, scale = _objectives(method, pb, st)
        dual, alpha = best_certificate(loop, dual, alpha)
        loop = loop._replace(dual=dual, alpha=loop.alpha if alpha is None else alpha, primal=primal,
                             scale=scale.astype(loop.scale.dtype))
        rel, tol = relative_gap(primal, dual), method.gap_tol()
        ok = certifies(rel, tol)
        within, rounding, s, lifted = within_rounding(method, pb, it, loop, rel, ok, tol)
        loop = loop._replace(primal=lifted, scale=s * loop.scale)  # (s = 1 but for a lift)
        loop = loop._replace(rounding=rounding)
        # rounding alone above tol / 2: no iterate in this dtype will certify, so the run ends here
        # (a gap within tol short of its rounding bound goes on: a method that cannot tighten claims
        # again when its gap has shrunk by that much)
        hopeless = ok & ~within & (rounding > tol / 2 + ROUNDING_SLACK * jnp.finfo(rounding.dtype).eps)
        short = ok & ~within & ~hopeless
        ok = within
        tight = method.tighten(pb, st)
        if tight is None:
            fail = jnp.where(hopeless | (claimed & ~short), Status.UNCERTIFIED, jnp.where(short, RUNNING, code))
            return loop, jnp.where(ok, Status.CONVERGED, fail).astype(jnp.int32)
        st = jax.tree_util.tree_map(lambda a, t: jnp.where(ok | ~claimed, a, t), st, tight)
        go_on = jnp.where(hopeless, Status.UNCERTIFIED, RUNNING)
        return loop._replace(st=st), jnp.where(ok, Status.CONVERGED, go_on).astype(jnp.int32)

    return lax.cond(due, check, lambda s: (s, code), loop)


def iterate(method, pb: Problem, loop: Loop, k0, code0, until):
    """``lax.while_loop`` of step, check and certify from iteration k0 until ``until`` or a status."""
    def cond(c):
        k, _, code = c
        return (k < until) & (code == RUNNING)

    def body(c):
        k, loop, _ = c
        loop = loop._replace(st=method.step(pb, loop.st))
        code = jnp.asarray(method.check(pb, loop.st), jnp.int32)
        loop, code = certify(method, pb, loop, code, k + 1)
        return k + 1, loop, code

    return lax.while_loop(cond, body, (k0, loop, code0))


def progress(method, pb: Problem, st):
    """(P, D) of a state for a history row: the method's own figures where it keeps them
    (``Method.progress``, no product with X), else computed (``objectives`` without the polish)."""
    own = method.progress(pb, st)
    if own is not None:
        return own
    _, primal, dual, _ = objectives(method, pb, st, polish=False)
    return primal, dual


def recorded_chunk(method, pb, state, k, code, until, rows, every):
    """A chunk that records (iteration, P, D) every ``every`` iterations (and at its last one) into
    ``rows`` (R, 3), inside the compiled loop: a history costs what P and D cost, not a call of the
    host per record. The caller keeps ``until`` within R records. Returns (state, k, code, rows, count)."""
    def cond(c):
        k, _, code, _, _ = c
        return (k < until) & (code == RUNNING)

    def body(c):
        k, lp, _, rows, count = c
        lp = lp._replace(st=method.step(pb, lp.st))
        code = jnp.asarray(method.check(pb, lp.st), jnp.int32)
        lp, code = certify(method, pb, lp, code, k + 1)
        due = ((k + 1) % every == 0) | (code != RUNNING) | (k + 1 >= until)

        def record(rc):
            rows, count = rc
            primal, dual = progress(method, pb, lp.st)
            row = jnp.stack([(k + 1).astype(rows.dtype), primal, dual]).astype(rows.dtype)
            return lax.dynamic_update_index_in_dim(rows, row, count, 0), count + 1

        rows, count = lax.cond(due, record, lambda rc: rc, (rows, count))
        return k + 1, lp, code, rows, count

    k, state, code, rows, count = lax.while_loop(cond, body, (k, state, code, rows, jnp.zeros((), jnp.int32)))
    return state, k, code, rows, count


def init(method, pb, start):
    """The loop state at the start: the method's state, no certificate yet."""
    dt = pb.dtype
    # alpha computed from the rows' weights (finite): on row-sharded X it lives where the rows live,
    # as the chunks' alpha does (a constant zeros would be replicated, and the chunk's input sharding differ)
    return Loop(method.init(pb, start), jnp.asarray(-jnp.inf, dt), (pb.cs * 0).astype(dt), jnp.asarray(jnp.inf, dt),
                jnp.zeros((), dt), jnp.ones((), dt))


def core(method, pb: Problem, start: Start, max_iter) -> Summary:
    """init -> while_loop(step, check, certify) -> summarize; pure, jittable, vmappable."""
    loop = init(method, pb, start)
    k, loop, code = iterate(method, pb, loop, jnp.asarray(0, jnp.int32), jnp.asarray(RUNNING, jnp.int32),
                          jnp.asarray(max_iter, jnp.int32))
    return summarize(method, pb, loop, k, code)


def zero_start(method, pb: Problem) -> Start:
    """The cold start (zeros; the same structure as every warm start: one program for both)."""
    dt = pb.dtype
    return Start(jnp.zeros((pb.d,), dt), jnp.zeros((), dt), jnp.zeros((pb.n,), dt),
                 jnp.asarray(COLD, jnp.int32), method.aux_template(pb))


# ---------------------------------------------------------------------------------- what is compiled
def chunk(method, pb, state, k, code, until):
    """Iterations k .. until of a loop state (a chunk of an eager run)."""
    k, state, code = iterate(method, pb, state, k, code, until)
    return state, k, code


def chunk_summary(method, pb, state, k, code, until, final=None, report=None):
    """A chunk, and the summary when the run ends here (done, or k reached ``final``) or when
    ``report`` asks for progress; otherwise a placeholder (a summary costs a certificate).
    Without ``final`` and ``report`` (batches over lanes), always the summary."""
    k, state, code = iterate(method, pb, state, k, code, until)
    if final is None or report is None:
        return state, k, code, summarize(method, pb, state, k, code)
    need = report | (code != RUNNING) | (k >= final)
    full = lambda: summarize(method, pb, state, k, code)  # noqa: E731
    empty = lambda: jax.tree_util.tree_map(jnp.zeros_like, jax.eval_shape(full))  # noqa: E731
    return state, k, code, lax.cond(need, full, empty)


def summary(method, pb, state, k, code):
    """``summarize`` with the argument order of the chunks."""
    return summarize(method, pb, state, k, code)

