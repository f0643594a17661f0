"""The one loop driver every solver runs under.

A solver ("method") only says how to start, step, check and finish:

    init(pb)              -> state          (a pytree; shapes fixed)
    step(pb, state)       -> state
    check(pb, state)      -> int32: -1 to go on, else a ``Status`` code it stops with
    finalize(pb, state)   -> (w, b, alpha or None, extras)   alpha: a dual candidate

The driver owns the ``lax.while_loop``, the iteration cap, the final objective,
dual objective and gap, and the non-finite / divergence checks. ``core`` is a
pure function of the problem pytree, so ``jax.vmap`` over C or labels works
for every method. ``run`` adds compile/run timings and an optional history
(the loop is then advanced in jitted chunks and timed from the host).
"""
from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
from jax import lax

from .problem import Problem, dual_objective, primal_objective, project_dual
from .result import Status

__all__ = ["core", "summarize", "final_status", "run", "RUNNING"]

RUNNING = -1


def _loop(method, pb: Problem, state, k0, code0, max_iter):
    def cond(c):
        k, _, code = c
        return (k < max_iter) & (code == RUNNING)

    def body(c):
        k, st, _ = c
        st = method.step(pb, st)
        return k + 1, st, jnp.asarray(method.check(pb, st), jnp.int32)

    return lax.while_loop(cond, body, (k0, state, code0))


def summarize(method, pb: Problem, state, k, code):
    """Final w, b, objectives, gap and status from a method's state (jittable)."""
    w, b, alpha, extras = method.finalize(pb, state)
    f = pb.op.matvec(w) + b
    primal = primal_objective(pb, w, b, f)
    nan = jnp.asarray(jnp.nan, primal.dtype)
    dual = nan
    if pb.loss.has_dual and pb.reg.has_conjugate:
        # two dual candidates: the solver's own (if any) and -l'(margin) (exact for smooth losses)
        cands = [pb.cs * -pb.loss.derivative(pb.y * f)]
        if alpha is not None:
            cands.append(alpha)
        best, best_alpha = -jnp.inf, None
        for a in cands:
            a = project_dual(pb, a)
            dval, _ = dual_objective(pb, a)
            dval = jnp.where(jnp.isfinite(dval), dval, -jnp.inf)
            take = dval > best
            best = jnp.where(take, dval, best)
            best_alpha = a if best_alpha is None else jnp.where(take, a, best_alpha)
        dual = jnp.where(jnp.isfinite(best), best, nan)
        extras = {**extras, "alpha": best_alpha}
    gap = primal - dual
    # the objective at w = 0, b = 0 bounds any sensible run: far above it means divergence
    start = pb.reg.value(jnp.zeros_like(w)) + jnp.sum(pb.cs * pb.loss.value(jnp.zeros_like(pb.y)))
    finite = jnp.all(jnp.isfinite(w)) & jnp.isfinite(b) & jnp.isfinite(primal)
    return dict(w=w, b=b, primal=primal, dual=dual, gap=gap, status=final_status(code, primal, start, finite),
                iterations=k, extras=extras)


def final_status(code, primal, start, finite):
    """The Status a run ends with: the method's code, or MAX_ITER, DIVERGED (objective far above
    its value at the start), NONFINITE."""
    status = jnp.where(code == RUNNING, Status.MAX_ITER, code)
    status = jnp.where(primal > 1e3 * (jnp.abs(start) + 1.0), Status.DIVERGED, status)
    return jnp.where(finite, status, Status.NONFINITE).astype(jnp.int32)


def core(method, pb: Problem, max_iter: int):
    """init -> while_loop(step, check) -> summarize; pure and vmappable."""
    state = method.init(pb)
    k, state, code = _loop(method, pb, state, jnp.asarray(0), jnp.asarray(RUNNING, jnp.int32), max_iter)
    return _summarizer(method)(method, pb, state, k, code)


def _summarizer(method):
    """A method may bring its own ``summarize`` (kernel methods: objectives from alpha)."""
    own = getattr(type(method), "summarize", None)
    return (lambda m, *a: own(m, *a)) if own is not None else summarize


_batched = {}
_compiled: dict = {}


def _signature(args):
    leaves, tree = jax.tree_util.tree_flatten(args)
    return tree, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves)


def _compile(fn, key, *args):
    """AOT-compile once per (function, static args, pytree structure, shapes, dtypes)."""
    sig = (key, _signature(args))
    hit = _compiled.get(sig)
    if hit is not None:
        return hit, 0.0
    t0 = time.perf_counter()
    exe = fn.lower(*args).compile()
    dt = time.perf_counter() - t0
    _compiled[sig] = exe
    return exe, dt


def run(method, pb: Problem, *, max_iter: int, history: bool = False, record_every: int = 1,
        batch_axes=None):
    """Run ``method`` on ``pb``; returns (summary dict, history or None, timings).

    ``batch_axes`` (a Problem-shaped pytree of vmap in_axes) solves a batch in one call.
    """
    if batch_axes is not None:
        if history:
            raise ValueError("history is not available for batched (vmapped) solves")
        axes_leaves, axes_tree = jax.tree_util.tree_flatten(batch_axes, is_leaf=lambda x: x is None)
        key = ("batch", method, max_iter, axes_tree, tuple(axes_leaves))
        fn = _batched.get(key)
        if fn is None:
            fn = jax.jit(jax.vmap(lambda p: core(method, p, max_iter), in_axes=(batch_axes,)))
            _batched[key] = fn
        exe, tc = _compile(fn, key, pb)
        t0 = time.perf_counter()
        out = jax.block_until_ready(exe(pb))
        return out, None, {"compile": tc, "run": time.perf_counter() - t0}

    if not history:
        exe, tc = _compile_core(method, pb, max_iter)
        t0 = time.perf_counter()
        out = jax.block_until_ready(exe(pb))
        return out, None, {"compile": tc, "run": time.perf_counter() - t0}

    return _run_with_history(method, pb, max_iter, record_every)


def _compile_core(method, pb, max_iter):
    fn = jax.jit(lambda p: core(method, p, max_iter))
    return _compile(fn, ("core", method, max_iter), pb)


_history_fns: dict = {}


def _history_pieces(method):
    """The jitted pieces of a history run, built once per method (jit then caches per shape)."""
    fns = _history_fns.get(method)
    if fns is None:
        summ = _summarizer(method)
        fns = (jax.jit(method.init),
               jax.jit(lambda p, st, k, code, until: _loop(method, p, st, k, code, until)),
               jax.jit(lambda p, st: summ(method, p, st, 0, RUNNING)["primal"]),
               jax.jit(lambda p, st, k, code: summ(method, p, st, k, code)))
        _history_fns[method] = fns
    return fns


def _run_with_history(method, pb, max_iter, record_every):
    init, chunk, obj, summ = _history_pieces(method)

    t0 = time.perf_counter()
    state = jax.block_until_ready(init(pb))
    k = jnp.asarray(0)
    code = jnp.asarray(RUNNING, jnp.int32)
    # one warm-up call per jitted piece so the history times exclude compilation
    jax.block_until_ready(chunk(pb, state, k, code, jnp.asarray(0)))
    jax.block_until_ready(obj(pb, state))
    jax.block_until_ready(summ(pb, state, k, code))
    tc = time.perf_counter() - t0

    its, objs, times = [0], [float(obj(pb, state))], [0.0]
    elapsed = 0.0
    while int(k) < max_iter and int(code) == RUNNING:
        until = jnp.asarray(min(int(k) + record_every, max_iter))  # outside the timed region
        t1 = time.perf_counter()
        k, state, code = jax.block_until_ready(chunk(pb, state, k, code, until))
        elapsed += time.perf_counter() - t1
        its.append(int(k))
        objs.append(float(obj(pb, state)))
        times.append(elapsed)
    out = jax.block_until_ready(summ(pb, state, k, code))
    hist = {"iteration": jnp.asarray(its), "objective": jnp.asarray(objs), "time": jnp.asarray(times)}
    return out, hist, {"compile": tc, "run": elapsed}
