"""The one loop driver every solver runs under; it alone decides the status.

A method (``svmopt.solvers._base.Method``) only says how to start, step, check and
finish. The driver owns:

* the loop: ``lax.while_loop`` of ``step`` until ``check`` stops it or ``max_iter``;
* the **status contract** (SPEC section 6): when a method's own criterion is met, the
  driver computes the relative duality gap (P - D)/|P| of the problem as asked (the
  true loss, with D from a feasible dual point). At most ``tol``: CONVERGED. Above:
  the method's ``tighten`` makes its inner tolerance stricter and the loop goes on; a
  method that cannot tighten (or a problem without a dual) ends UNCERTIFIED. MAX_ITER,
  STALLED, DIVERGED and NONFINITE are decided here too;
* the summary: primal / dual objectives, gap, the resume point (``Start``);
* execution. ``core`` is one pure function (used inside a user's ``jit`` / ``vmap`` /
  ``grad``). ``run`` executes eagerly in *chunks* of iterations, each a call of one
  compiled program whose iteration bound is a runtime number: between chunks the host
  sees Ctrl-C (a solve stops within a fraction of a second and the process stays
  usable), prints progress (``verbose``) and records history. ``run_batch`` solves
  many problems (one-vs-rest, a C grid): as separate lanes spread over devices
  ("loop") or as vmapped batches whose finished lanes leave ("vmap").

Compiled programs are cached by (structure, shapes, dtypes): runtime numbers of the
method (tol, seeds, caps), C, labels, weights and the start are arguments, never
part of the key.
"""
from __future__ import annotations

import logging
import math
import time
from typing import Any, Callable, NamedTuple, Optional

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .problem import Problem, dual_objective, primal_objective, project_dual
from .result import Status
from .solvers._base import COLD, Start

__all__ = ["core", "summarize", "run", "run_batch", "cold_start", "Summary", "RUNNING", "compile_count"]

RUNNING = -1
log = logging.getLogger("svmopt")


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


def objectives(method, pb: Problem, st):
    """(iterate, primal, dual, best dual alpha) of the method's state (jittable)."""
    it = method.finalize(pb, st)
    if method.own_objectives(pb):
        primal, dual, alpha = method.objectives(pb, st, it)
        return it, primal, dual, alpha
    f = pb.op.matvec(it.w) + it.b
    primal = primal_objective(pb, it.w, it.b, f)
    nan = jnp.asarray(jnp.nan, primal.dtype)
    if not (pb.loss.has_dual and pb.reg.has_conjugate):
        return it, primal, nan, it.alpha
    # dual candidates: the method's own (if any) and -l'(margin) (exact for smooth losses)
    cands = [pb.cs * -pb.loss.derivative(pb.y * f)]
    if it.alpha is not None:
        cands.append(it.alpha)
    best, best_alpha = -jnp.inf, None
    for a in cands:
        a = project_dual(pb, a)
        dval, _ = dual_objective(pb, a)
        dval = jnp.where(jnp.isfinite(dval), dval, -jnp.inf)
        take = dval > best
        best = jnp.where(take, dval, best)
        best_alpha = a if best_alpha is None else jnp.where(take, a, best_alpha)
    bound = method.dual_bound(pb, st)
    if bound is not None:  # e.g. the cutting plane's working-set dual: a valid lower bound too
        best = jnp.maximum(best, bound)
    return it, primal, jnp.where(jnp.isfinite(best), best, nan), best_alpha


def relative_gap(primal, dual):
    tiny = jnp.finfo(jnp.result_type(primal)).tiny
    return (primal - dual) / jnp.maximum(jnp.abs(primal), tiny)


def final_status(code, primal, start, finite):
    status = jnp.where(code == RUNNING, Status.MAX_ITER, code)
    status = jnp.where(primal > 1e3 * (jnp.abs(start) + 1.0), Status.DIVERGED, status)
    return jnp.where(finite, status, Status.NONFINITE).astype(jnp.int32)


def summarize(method, pb: Problem, st, k, code) -> Summary:
    """Final w, b, objectives, gap, status and resume point from a state (jittable)."""
    it, primal, dual, alpha = objectives(method, pb, st)
    extras = dict(it.extras)
    if alpha is not None:
        extras["alpha"] = alpha
    gap = primal - dual
    finite = jnp.all(jnp.isfinite(it.w)) & jnp.isfinite(it.b) & jnp.isfinite(primal)
    status = final_status(code, primal, method.start_objective(pb), finite)
    # a CONVERGED code was certified in the loop; re-check on the reported numbers
    ok = relative_gap(primal, dual) <= method.gap_tol() * (1 + 1e-6) + 4 * jnp.finfo(primal.dtype).eps
    status = jnp.where((status == Status.CONVERGED) & ~ok, Status.UNCERTIFIED, status).astype(jnp.int32)
    return Summary(it.w, it.b, primal, dual, gap, status, k, extras, method.carry(pb, st))


# ---------------------------------------------------------------------------------- the loop
def _certify(method, pb, st, code, k):
    """The method says CONVERGED (or a periodic check is due): CONVERGED only with a certified
    gap; a method whose own rule fired but whose gap is above tol tightens and goes on."""
    if not has_dual(method, pb):
        return st, jnp.where(code == Status.CONVERGED, Status.UNCERTIFIED, code).astype(jnp.int32)
    every = method.certify_every
    claimed = code == Status.CONVERGED
    due = claimed if every is None else claimed | ((code == RUNNING) & (k % every == 0))

    def check(st):
        _, primal, dual, _ = objectives(method, pb, st)
        ok = relative_gap(primal, dual) <= method.gap_tol()
        tight = method.tighten(pb, st)
        if tight is None:
            fail = jnp.where(claimed, Status.UNCERTIFIED, code)
            return st, jnp.where(ok, Status.CONVERGED, fail).astype(jnp.int32)
        st = jax.tree_util.tree_map(lambda a, t: jnp.where(ok | ~claimed, a, t), st, tight)
        return st, jnp.where(ok, Status.CONVERGED, RUNNING).astype(jnp.int32)

    return lax.cond(due, check, lambda s: (s, code), st)


def _loop(method, pb: Problem, state, k0, code0, until):
    def cond(c):
        k, _, code = c
        return (k < until) & (code == RUNNING)

    def body(c):
        k, st, _ = c
        st = method.step(pb, st)
        code = jnp.asarray(method.check(pb, st), jnp.int32)
        st, code = _certify(method, pb, st, code, k + 1)
        return k + 1, st, code

    return lax.while_loop(cond, body, (k0, state, code0))


def core(method, pb: Problem, start: Start, max_iter) -> Summary:
    """init -> while_loop(step, check, certify) -> summarize; pure, jittable, vmappable."""
    state = method.init(pb, start)
    k, state, code = _loop(method, pb, state, jnp.asarray(0, jnp.int32), jnp.asarray(RUNNING, jnp.int32),
                           jnp.asarray(max_iter, jnp.int32))
    return summarize(method, pb, state, k, code)


def cold_start(method, pb: Problem) -> Start:
    """The zero start (same structure as every warm start: one compiled program for both)."""
    dt = pb.dtype
    return Start(jnp.zeros((pb.d,), dt), jnp.zeros((), dt), jnp.zeros((pb.n,), dt),
                 jnp.asarray(COLD, jnp.int32), method.aux_template(pb))


# ---------------------------------------------------------------------------------- compiled pieces
_compiled: dict = {}
_counts = {"compiles": 0}


def compile_count() -> int:
    """How many programs svmopt has compiled in this process (tests count recompiles with it)."""
    return _counts["compiles"]


def _signature(args):
    leaves, tree = jax.tree_util.tree_flatten(args)
    sig = []
    for x in leaves:
        sharding = getattr(x, "sharding", None)
        dt = x.dtype if isinstance(x, jax.Array) else jnp.result_type(x)  # (a jax array: already canonical)
        sig.append((jnp.shape(x), dt, getattr(x, "weak_type", False),
                    None if sharding is None else repr(sharding)))
    return tree, tuple(sig)


def _compile(name, fn, args, donate=()):
    """AOT-compile ``fn`` once per (name, pytree structure incl. static fields, shapes, dtypes)."""
    key = (name, _signature(args))
    hit = _compiled.get(key)
    if hit is not None:
        return hit, 0.0
    t0 = time.perf_counter()
    exe = jax.jit(fn, donate_argnums=donate).lower(*args).compile()
    dt = time.perf_counter() - t0
    _compiled[key] = exe
    _counts["compiles"] += 1
    return exe, dt


def _init_fn(method, pb, start):
    return method.init(pb, start)


def _chunk_fn(method, pb, state, k, code, until):
    k, state, code = _loop(method, pb, state, k, code, until)
    return state, k, code


def _chunk_summary_fn(method, pb, state, k, code, until):
    k, state, code = _loop(method, pb, state, k, code, until)
    return state, k, code, summarize(method, pb, state, k, code)


def _summary_fn(method, pb, state, k, code):
    return summarize(method, pb, state, k, code)


def _core_fn(method, pb, start, max_iter):
    return core(method, pb, start, max_iter)


class Progress:
    """Chunk sizing, progress lines and history for one eager run.

    verbose: False/0 (quiet), True (a line about every second), an int k (every k
    iterations), or a callable ``f(info: dict)`` called with iteration, objective, gap,
    relative_gap, elapsed after every chunk.
    """

    TARGET = 0.2  # seconds per chunk: Ctrl-C and progress lines are seen about this often

    def __init__(self, verbose=False, history=False, record_every=1, label=""):
        self.verbose, self.history, self.record_every, self.label = verbose, history, int(record_every), label
        self.rows: list = []
        self.last_print = -math.inf
        self.last_k = 0

    def next_until(self, k, max_iter, per_iter):
        if self.history:
            step = self.record_every
        else:
            step = 16 if per_iter is None else int(max(16, self.TARGET / max(per_iter, 1e-9)))
            every = self.every()
            if every:
                step = min(step, every - k % every)
        return int(min(max_iter, k + max(1, step)))

    def every(self):
        """Iterations between progress lines (verbose=k, or a callable with an ``every`` attribute)."""
        v = self.verbose
        if isinstance(v, int) and not isinstance(v, bool) and v > 1:
            return v
        return int(getattr(v, "every", 0) or 0) if callable(v) else 0

    def report(self, k, primal, dual, elapsed, force=False):
        primal, dual = float(primal), float(dual)
        gap = primal - dual
        rel = gap / max(abs(primal), 1e-300)
        if self.history:
            self.rows.append((k, primal, gap, elapsed))
        v = self.verbose
        if not v:
            return
        info = dict(iteration=k, objective=primal, gap=gap, relative_gap=rel, elapsed=elapsed, label=self.label)
        if callable(v) and not isinstance(v, bool):
            v(info)
            return
        every_k = isinstance(v, int) and not isinstance(v, bool) and v > 1
        due = (k // v > self.last_k // v) if every_k else (elapsed - self.last_print >= 1.0)
        if due or force:
            self.last_print, self.last_k = elapsed, k
            log.info("%siter %7d  objective %.10g  gap %.3g  rel.gap %.3g  %.2f s", self.label, k, primal, gap,
                     rel, elapsed)

    def table(self, dtype=np.float64):
        if not self.rows:
            return None
        it, obj, gap, t = map(np.asarray, zip(*self.rows))
        return {"iteration": it.astype(np.int64), "objective": obj.astype(dtype), "gap": gap.astype(dtype),
                "time": t}


def _ensure_logging(verbose):
    """verbose=True with no logging configured: show svmopt's lines on stderr."""
    if verbose and not callable(verbose) and not log.handlers and not logging.getLogger().handlers:
        h = logging.StreamHandler()
        h.setFormatter(logging.Formatter("svmopt: %(message)s"))
        log.addHandler(h)
        log.setLevel(logging.INFO)
        log.propagate = False


def run(method, pb: Problem, start: Start, *, max_iter: int, history: bool = False, record_every: int = 1,
        verbose=False, label: str = ""):
    """Run ``method`` on ``pb`` eagerly, in chunks; returns (Summary, history or None, timings)."""
    _ensure_logging(verbose)
    prog = Progress(verbose, history, record_every, label)
    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    tc = 0.0
    init, dt = _compile("init", _init_fn, (method, pb, start))
    tc += dt
    state_shape = jax.eval_shape(_init_fn, method, pb, start)
    k, code = i32(0), i32(RUNNING)
    chunk_args = (method, pb, state_shape, k, code, i32(1))
    if history:
        chunk, dt = _compile("chunk", _chunk_fn, chunk_args, donate=(2,))
        tc += dt
        summ, dt = _compile("summary", _summary_fn, chunk_args[:5])
        tc += dt
    else:
        chunk, dt = _compile("chunk+summary", _chunk_summary_fn, chunk_args, donate=(2,))
        tc += dt
    t0 = time.perf_counter()
    state = jax.block_until_ready(init(method, pb, start))
    elapsed = time.perf_counter() - t0
    s = None
    if history:
        s = summ(method, pb, state, k, code)
        prog.report(0, s.primal, s.dual, elapsed)
    per_iter, kk = None, 0
    while kk < max_iter and int(code) == RUNNING:
        until = prog.next_until(kk, max_iter, per_iter)
        t1 = time.perf_counter()
        if history:
            state, k, code = chunk(method, pb, state, k, code, i32(until))
            jax.block_until_ready(state)
        else:
            state, k, code, s = chunk(method, pb, state, k, code, i32(until))
            jax.block_until_ready(s)
        dt = time.perf_counter() - t1
        elapsed += dt
        done = int(k) - kk
        per_iter = dt / max(done, 1)
        kk = int(k)
        if history:
            s = summ(method, pb, state, k, code)
        if history or verbose:
            prog.report(kk, s.primal, s.dual, elapsed)
    if s is None:  # max_iter reached before any chunk (cannot happen for max_iter >= 1)
        summ, dt = _compile("summary", _summary_fn, (method, pb, state, k, code))
        tc += dt
        s = summ(method, pb, state, k, code)
    if verbose and not history:
        prog.report(kk, s.primal, s.dual, elapsed, force=True)
    return s, prog.table(), {"compile": tc, "run": elapsed}


# ---------------------------------------------------------------------------------- batches
def _stack_fn(outs):
    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *outs)


def _lane_fn(leaves, i):
    return [lax.dynamic_index_in_dim(a, i, keepdims=False) for a in leaves]


class _Lanes:
    """Lane i of a batched pytree (``axes``: 0 for batched leaves, None for shared ones), sliced by
    one compiled call (an eager index per leaf costs a dispatch each). ``compile`` = its seconds."""

    def __init__(self, tree, axes):
        marks = jax.tree_util.tree_leaves(axes, is_leaf=lambda x: x is None)
        self.leaves, self.treedef = jax.tree_util.tree_flatten(tree)
        self.picked = [k for k, ax in enumerate(marks) if ax is not None]
        self.exe, self.compile = None, 0.0

    def __call__(self, i):
        leaves = list(self.leaves)
        args = ([leaves[k] for k in self.picked], np.asarray(i, np.int32))
        if self.exe is None:
            self.exe, self.compile = _compile("lane", _lane_fn, args)
        for k, v in zip(self.picked, self.exe(*args)):
            leaves[k] = v
        return self.treedef.unflatten(leaves)


def run_batch(method, pb: Problem, axes, starts: Start, *, size: int, max_iter: int, mode: str = "auto",
              devices=None, verbose=False, labels=None):
    """Solve ``size`` problems that differ in the leaves ``axes`` marks (e.g. y for one-vs-rest,
    C for a grid). ``starts`` is a batched Start (leading axis ``size``).

    mode "loop": each problem is a lane of the one compiled (unbatched) program; lanes are
         spread over ``devices`` (default: all local devices) and advance in chunks, so
         on every device the next problem starts as soon as one finishes.
    mode "vmap": problems run as one vmapped program; after each chunk the lanes that
         finished leave and the batch shrinks (power-of-two sizes: few compiles), so a
         slow problem does not make the others run as long as it.
    mode "auto": "vmap" on accelerators when the method batches well, else "loop".
    Returns (Summary with a leading batch axis, timings).
    """
    if devices is None:
        devices = jax.local_devices()
    if mode == "auto":
        accel = devices[0].platform != "cpu"
        mode = "vmap" if (accel and method.batchable) else "loop"
    if mode not in ("loop", "vmap"):
        raise ValueError(f"batch mode must be 'auto', 'loop' or 'vmap', got {mode!r}")
    _ensure_logging(verbose)
    sax = jax.tree_util.tree_map(lambda _: 0, starts)
    if mode == "loop":
        return _run_loop(method, pb, axes, starts, sax, size, max_iter, devices, verbose, labels)
    return _run_vmap(method, pb, axes, starts, sax, size, max_iter, verbose, labels)


def _run_loop(method, pb, axes, starts, sax, size, max_iter, devices, verbose, labels):
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731  (a host scalar: no dispatch to make it)
    tc = 0.0
    shared = {}  # the problem with its shared leaves placed on each device once
    exes = {}  # (name, device) -> executable: every lane has the same structure and shapes

    def lane_problem(i, dev):
        if dev not in shared:
            shared[dev] = _Lanes(jax.device_put(pb, dev) if len(devices) > 1 else pb, axes)
        lp = shared[dev](i)
        return lp if len(devices) == 1 else jax.device_put(lp, dev)

    start_lanes = _Lanes(starts, sax)

    out: list = [None] * size
    pending = list(range(size))
    slots = {}  # device -> [lane, problem, state, k, code, per_iter]
    t0, tc0 = time.perf_counter(), tc  # compiles below are not run time
    done_count = 0
    progress = {}
    while pending or slots:
        for dev in devices:  # fill idle devices
            if dev in slots or not pending:
                continue
            i = pending.pop(0)
            lp = lane_problem(i, dev)
            st0 = start_lanes(i)
            if len(devices) > 1:
                st0 = jax.device_put(st0, dev)
            if ("init", dev) not in exes:
                exes["init", dev], dt = _compile("init", _init_fn, (method, lp, st0))
                tc += dt
            state = exes["init", dev](method, lp, st0)
            slots[dev] = [i, lp, state, i32(0), i32(RUNNING), None]
            progress[i] = Progress(verbose, label=f"[{labels[i] if labels is not None else i}] ")
        results = {}
        for dev, (i, lp, state, k, code, per) in slots.items():  # dispatch one chunk per device (async)
            kk = int(k)
            until = progress[i].next_until(kk, max_iter, per)
            if ("chunk", dev) not in exes:
                exes["chunk", dev], dt = _compile("chunk+summary", _chunk_summary_fn,
                                                  (method, lp, state, k, code, i32(until)), donate=(2,))
                tc += dt
            results[dev] = (time.perf_counter(), kk, exes["chunk", dev](method, lp, state, k, code, i32(until)))
        for dev, (t1, kk, res) in results.items():
            state, k, code, s = res
            jax.block_until_ready(s)
            lane = slots[dev]
            lane[2:5] = [state, k, code]
            lane[5] = (time.perf_counter() - t1) / max(int(k) - kk, 1)
            if verbose:
                progress[lane[0]].report(int(k), s.primal, s.dual, time.perf_counter() - t0)
            if int(code) != RUNNING or int(k) >= max_iter:
                out[lane[0]] = s  # stays where it is: stacked there, fetched once below
                del slots[dev]
                done_count += 1
    if len(devices) > 1:
        out = jax.device_get(out)
    stack, dt = _compile("stack", _stack_fn, (out,))  # one call, not one per lane and leaf
    summary = jax.tree_util.tree_map(np.asarray, jax.device_get(stack(out)))
    tc += dt + start_lanes.compile + sum(v.compile for v in shared.values())
    return summary, {"compile": tc, "run": time.perf_counter() - t0 - (tc - tc0)}


def _bucket(n):
    return 1 << max(0, (n - 1).bit_length())


def _run_vmap(method, pb, axes, starts, sax, size, max_iter, verbose, labels):
    i32 = lambda v: jnp.asarray(v, jnp.int32)  # noqa: E731
    tc = 0.0
    vinit = jax.vmap(_init_fn, in_axes=(None, axes, sax))
    vchunk = jax.vmap(_chunk_summary_fn, in_axes=(None, axes, 0, 0, 0, None))
    init, dt = _compile("vinit", vinit, (method, pb, starts))
    tc += dt
    t0, tc0 = time.perf_counter(), tc  # compiles below are not run time
    state = init(method, pb, starts)
    lanes = np.arange(size)  # which problem each batch position holds
    bpb = pb
    k = jnp.zeros((size,), jnp.int32)
    code = jnp.full((size,), RUNNING, jnp.int32)
    out: list = [None] * size
    per, kk = None, 0
    prog = Progress(verbose)
    while lanes.size:
        until = prog.next_until(kk, max_iter, per)
        chunk, dt = _compile("vchunk", vchunk, (method, bpb, state, k, code, i32(until)), donate=(2,))
        tc += dt
        t1 = time.perf_counter()
        state, k, code, s = chunk(method, bpb, state, k, code, i32(until))
        s = jax.device_get(s)
        kmax = int(np.max(s.iterations))
        per = (time.perf_counter() - t1) / max(kmax - kk, 1)
        kk = kmax
        codes = np.asarray(s.status)
        running = (np.asarray(code) == RUNNING) & (np.asarray(k) < max_iter)
        for j in np.flatnonzero(~running):
            if j < lanes.size and out[lanes[j]] is None:
                out[lanes[j]] = jax.tree_util.tree_map(lambda a: a[j], s)
        if verbose:
            log.info("batch: %d of %d problems running, iteration %d, %.2f s", int(running[:lanes.size].sum()),
                     size, kk, time.perf_counter() - t0)
        keep = np.flatnonzero(running[:lanes.size])
        if keep.size == 0:
            break
        new = _bucket(keep.size)
        if new < state_size(k):  # compact: the finished lanes leave the batch
            idx = np.concatenate([keep, np.full(new - keep.size, keep[0])])
            lanes = lanes[keep]
            sel = jnp.asarray(idx)
            state = jax.tree_util.tree_map(lambda a: a[sel], state)
            k, code = k[sel], code[sel]
            bpb = jax.tree_util.tree_map(lambda a, ax: a if ax is None else a[sel], bpb, axes,
                                         is_leaf=lambda x: x is None)
            # duplicated filler lanes are marked finished so they cost nothing to decide
            fill = jnp.arange(new) >= keep.size
            code = jnp.where(fill, Status.MAX_ITER, code).astype(jnp.int32)
        else:
            lanes = lanes  # same batch; finished lanes idle inside it
            code = code
        del codes
    summary = jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(x) for x in a]), *out)
    return summary, {"compile": tc, "run": time.perf_counter() - t0 - (tc - tc0)}


def state_size(k) -> int:
    return int(k.shape[0])


def run_inline(method, pb: Problem, start: Start, max_iter) -> Summary:
    """The whole solve as one traced computation (inside a user's jit / vmap / grad)."""
    return core(method, pb, start, max_iter)
