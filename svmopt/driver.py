"""How the loop runs: compiled ahead of time and cached, in interruptible chunks, in batches.

The loop itself (``svmopt.loop``) is pure; this module executes it:

* ``compiled(name, fn, args)``: programs are compiled once per (structure, shapes, dtypes,
  shardings) and kept (``MAX_PROGRAMS``); runtime numbers of the method (tol, seeds, caps), C,
  labels, weights and the start are arguments, never part of the key. A program another process
  compiled is loaded from svmopt's program store (``svmopt._programs``) instead of traced.
* ``run``: one problem eagerly, in *chunks* of iterations, each a call of one compiled program
  whose iteration bound is a runtime number: between chunks the host sees Ctrl-C (a solve stops
  within a fraction of a second and the process stays usable), prints progress (``verbose``) and
  records history.
* ``run_batch``: many problems that differ in some leaves (one-vs-rest labels, a C grid, the
  pairs of one-vs-one): as lanes of the one unbatched program spread over devices ("loop") or as
  vmapped batches whose finished lanes leave ("vmap").
* ``run_inline``: the whole solve as one traced computation (inside a user's jit / vmap / grad).
"""
from __future__ import annotations

from collections import OrderedDict
import threading
import time

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from . import _programs
from ._signature import signature
from .host_threads import for_each, host_threads
from . import loop
from .loop import RUNNING, Summary
from .problem import Problem
from .progress import Progress, ensure_logging, log
from .result import Status
from .solvers.base import Start

__all__ = ["run", "run_batch", "run_inline", "cold_start", "compiled", "compile_count", "on_one_device", "take"]


def cold_start(method, pb: Problem) -> Start:
    """The zero start (same structure as every warm start: one compiled program for both).
    Outside a trace it is made by one compiled program (cached like the loop's): built op by
    op, its zeros and the method's template cost a compile each in a new process."""
    if on_one_device((method, pb)):  # (rows over devices: the ops place the zeros as before)
        exe, _ = compiled("cold", loop.zero_start, (method, pb))
        return exe(method, pb)
    return loop.zero_start(method, pb)


def on_one_device(tree) -> bool:
    """No tracer, and every array on one device (the default one)."""
    home = None
    for a in jax.tree_util.tree_leaves(tree):
        if isinstance(a, jax.core.Tracer):
            return False
        sharding = getattr(a, "sharding", None)
        if sharding is not None:
            devs = sharding.device_set
            if len(devs) != 1 or (home is not None and devs != home):
                return False
            home = devs
    return True



# ---------------------------------------------------------------------------------- compiled pieces
MAX_PROGRAMS = 96
"""Compiled programs svmopt keeps per process. XLA's CPU backend maps about 250 memory regions
per executable and Linux allows 65,530 per process (``vm.max_map_count``): a process that
compiled ~250 programs (many shapes: folds, grids, a long notebook) died in the next compile.
Past this many, the least recently used half is released (``_release``)."""
_compiled: OrderedDict = OrderedDict()
_counts = {"compiles": 0, "released": 0}


def _release():
    """Drop the least recently used half of the programs, and the references JAX's own tracing
    and lowering caches keep to them (only ``clear_all_caches`` lets their memory go; the
    user's jitted functions keep their executables and at most trace again)."""
    while len(_compiled) > MAX_PROGRAMS // 2:
        _compiled.popitem(last=False)
    try:
        from jax._src import util as _jax_util
        _jax_util.clear_all_caches()
    except (ImportError, AttributeError):  # a JAX without it: the public, wider reset
        jax.clear_caches()
    _counts["released"] += 1


def compile_count() -> int:
    """How many programs svmopt has compiled in this process, counting those loaded ready-made from
    its program store (``svmopt._programs``): tests count recompiles with it."""
    return _counts["compiles"]


def compiled(name, fn, args, donate=()):
    """AOT-compile ``fn`` once per (name, pytree structure incl. static fields, shapes, dtypes).
    A program another process already compiled is loaded from disk instead, untraced
    (``svmopt._programs``: only where every static part can be written out)."""
    tree, sig = signature(args)
    key = (name, tree, sig)
    hit = _compiled.get(key)
    if hit is not None:
        _compiled.move_to_end(key)
        return hit, 0.0
    if len(_compiled) >= MAX_PROGRAMS:
        _release()
    t0 = time.perf_counter()
    disk = _programs.program_key(name, fn, tree, sig, donate) if _programs.usable(args) else None
    exe = _programs.load(disk, jax.tree_util.tree_structure((tuple(args), {})))
    if exe is None:
        events = _programs.compile_events()
        exe = jax.jit(fn, donate_argnums=donate).lower(*args).compile()
        if _programs.fresh(events, _programs.compile_events()):  # compiled here, not loaded by JAX
            _programs.store(disk, exe)
    dt = time.perf_counter() - t0
    _compiled[key] = exe
    _counts["compiles"] += 1
    return exe, dt


RECORDS = 256
"""History rows a chunk records inside the compiled loop (the chunk is cut to fit them)."""


def _with_shardings(shapes, exe):
    """The shapes of ``exe``'s outputs with the shardings it produces (rows over devices stay there)."""
    return jax.tree_util.tree_map(lambda s, sh: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sh), shapes,
                                  exe.output_shardings)


def _scalar_arg(v, dtype=np.int32):
    """A loop scalar (iteration bound, counter) as a program argument. In one process a numpy scalar:
    a compiled program's own call transfers it (~5 us; ``jax.device_put`` costs ~25 us, and a
    solve passes several). Several processes: a device array, as every process's programs expect."""
    v = np.asarray(v, dtype)
    return v if jax.process_count() == 1 else jax.device_put(v)


def run(method, pb: Problem, start: Start, *, max_iter: int, history: bool = False, record_every: int = 1,
        verbose=False, label: str = ""):
    """Run ``method`` on ``pb`` eagerly, in chunks; returns (Summary, history or None, timings)."""
    ensure_logging(verbose)
    prog = Progress(verbose, history, record_every, label)
    tc = 0.0
    init, dt = compiled("init", loop.init, (method, pb, start))
    tc += dt
    try:  # the program's own output types (not tracing init again for them)
        state_shape = init.out_info
    except AttributeError:  # an older JAX
        state_shape = _with_shardings(jax.eval_shape(loop.init, method, pb, start), init)
    # the loop's scalars: numpy values that the programs' own calls transfer (jnp.asarray would compile a conversion)
    k, code, one, last, report = (_scalar_arg(0), _scalar_arg(RUNNING), _scalar_arg(1), _scalar_arg(max_iter),
                                  _scalar_arg(bool(verbose), np.bool_))
    chunk_args = (method, pb, state_shape, k, code, one)
    if history:  # records made inside the loop (loop.recorded_chunk), at most RECORDS per chunk
        rows, every = jax.device_put([np.zeros((RECORDS, 3), np.dtype(pb.dtype)), np.int32(prog.record_every)])
        chunk, dt = compiled("chunk+record", loop.recorded_chunk, chunk_args + (rows, every), donate=(2, 6))
        tc += dt
        summ, dt = compiled("summary", loop.summary, chunk_args[:5])
        tc += dt
    else:
        chunk, dt = compiled("chunk+summary", loop.chunk_summary, chunk_args + (last, report),
                             donate=(2,))
        tc += dt
    t0 = time.perf_counter()
    state = jax.block_until_ready(init(method, pb, start))
    elapsed = time.perf_counter() - t0
    s = None
    if history:
        s = summ(method, pb, state, k, code)
        prog.report(0, s.primal, s.dual, elapsed)
    per_iter, kk, chunks = None, 0, 0
    while kk < max_iter and int(code) == RUNNING:
        until = prog.next_until(kk, max_iter, per_iter, chunks if jax.process_count() > 1 else None,
                                cap=RECORDS * prog.record_every if history else None)
        chunks += 1
        t1 = time.perf_counter()
        if history:
            state, k, code, rows, count = chunk(method, pb, state, k, code, _scalar_arg(until), rows, every)
            got = np.asarray(rows)[: int(count)]
        else:
            state, k, code, s = chunk(method, pb, state, k, code, _scalar_arg(until), last, report)
            jax.block_until_ready(s)
        dt = time.perf_counter() - t1
        done = int(k) - kk
        per_iter = dt / max(done, 1)
        if history:  # a row's time: the chunk's time shared out by iterations
            for it, primal, dual in got:
                prog.report(int(it), primal, dual, elapsed + dt * (int(it) - kk) / max(done, 1))
        elapsed += dt
        kk = int(k)
        if verbose and not history:
            prog.report(kk, s.primal, s.dual, elapsed)
    if s is None or history:  # the summary once, at the end
        if s is None and not history:  # max_iter reached before any chunk (cannot happen for max_iter >= 1)
            summ, dt = compiled("summary", loop.summary, (method, pb, state, k, code))
            tc += dt
        s = summ(method, pb, state, k, code)
    if verbose and not history:
        prog.report(kk, s.primal, s.dual, elapsed, force=True)
    return s, prog.table(), {"compile": tc, "run": elapsed}


# ---------------------------------------------------------------------------------- batches
def take(tree, axes, i):
    """Lane i of a batched pytree (``axes``: 0 for batched leaves, None for shared ones)."""
    return jax.tree_util.tree_map(lambda a, ax: a if ax is None else a[i], tree, axes,
                                  is_leaf=lambda x: x is None)


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
            self.exe, self.compile = compiled("lane", _lane_fn, args)
        for k, v in zip(self.picked, self.exe(*args)):
            leaves[k] = v
        return self.treedef.unflatten(leaves)


def _row_sharded(pb) -> bool:
    return pb.op.layout == "sharded"  # X's rows spread over devices (svmopt.sharding)


def run_batch(method, pb: Problem, axes, starts: Start, *, size: int, max_iter: int, mode: str = "auto",
              devices=None, verbose=False, labels=None, history: bool = False, record_every: int = 1):
    """Solve ``size`` problems that differ in the leaves ``axes`` marks (e.g. y for one-vs-rest,
    C for a grid). ``starts`` is a batched Start (leading axis ``size``).

    mode "loop": each problem runs the one compiled unbatched program, in chunks, and leaves
         as soon as it is done. One device: the problems run one after another (exactly a
         loop of binary solves, minus the validation). Several devices (default: all local
         ones): one lane per device, all lanes in one SPMD program (``shard_map`` over the
         lanes: compiled once, and on CPU the only way the devices run at the same time); a
         finished lane takes the next problem at the next chunk.
    mode "vmap": problems run as one vmapped program on ``devices[0]``; after each chunk
         the lanes that finished leave and the batch shrinks (power-of-two sizes: few
         compiles), so a slow problem does not make the others run as long as it.
    mode "auto": "vmap" on accelerators when the method batches well, else "loop".
    Rows of X sharded over devices (``svmopt.shard_rows``): every problem uses all of them,
    one after another ("loop").
    ``verbose`` reports each problem under its label; ``history`` records each problem's
    iteration / objective / gap / time every ``record_every`` iterations (time: that
    problem's own run time in "loop", the batch's in "vmap" and across lanes).
    Returns (Summary with a leading batch axis, timings); timings["lanes"] lists the number of
    problems running in each chunk; with ``history``, timings["history"] is a list of one
    table per problem.
    """
    if _row_sharded(pb):
        devices = [None]
    elif devices is None:
        devices = jax.local_devices()
    devices = list(devices)
    if mode == "auto":
        accel = devices[0] is not None and devices[0].platform != "cpu"
        mode = "vmap" if (accel and method.batchable) else "loop"
    if mode not in ("loop", "vmap"):
        raise ValueError(f"batch mode must be 'auto', 'loop' or 'vmap', got {mode!r}")
    if mode == "vmap" and devices[0] is None:
        mode = "loop"
    ensure_logging(verbose)
    sax = jax.tree_util.tree_map(lambda _: 0, starts)
    if labels is None:
        labels = [str(i) for i in range(size)]
    progress = [Progress(verbose, history, record_every, label=f"[{labels[i]}] ") for i in range(size)]
    if mode == "vmap":
        summary, timings = _run_vmap(method, pb, axes, starts, sax, size, max_iter, devices[0], progress)
    elif len(devices) > 1:
        summary, timings = _run_lanes(method, pb, axes, starts, sax, size, max_iter, devices, progress)
    else:
        summary, timings = _run_loop(method, pb, axes, starts, sax, size, max_iter, devices[0], progress)
    tables = timings.pop("tables", {})  # "loop" runs each problem with its own history
    if history:
        timings["history"] = [tables[i] if i in tables else p.table() for i, p in enumerate(progress)]
    return summary, timings


def _stack(out):
    return jax.tree_util.tree_map(lambda *a: np.stack([np.asarray(x) for x in a]), *out)


def _run_loop(method, pb, axes, starts, sax, size, max_iter, device, progress):
    """The problems one after another on one device (or on the mesh of a row-sharded X)."""
    if device is not None:
        return _run_loop_fast(method, pb, axes, starts, sax, size, max_iter, device, progress)
    tc = tr = 0.0
    out, tables = [], {}
    for i in range(size):
        p = progress[i]
        s, table, t = run(method, take(pb, axes, i), take(starts, sax, i), max_iter=max_iter,
                          history=p.history, record_every=p.record_every, verbose=p.verbose, label=p.label)
        tables[i] = table
        out.append(jax.device_get(s) if device is not None else s)
        tc, tr = tc + t["compile"], tr + t["run"]
    timings = {"compile": tc, "run": tr, "lanes": [1] * size, "tables": tables}
    if device is None:  # row-sharded: keep the (replicated / sharded) arrays, stacked on device
        return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *out), timings
    return _stack(out), timings


def _run_loop_fast(method, pb, axes, starts, sax, size, max_iter, device, progress):
    """``_run_loop`` on one device without per-problem Python overhead (one-vs-one runs hundreds
    of small problems): each problem and start is sliced by one compiled call, every problem
    runs the same compiled init / chunk programs (looked up once, not per call), and the
    summaries are stacked by one call. On the CPU, ``host_threads()`` problems run at the same
    time, each from its own host thread (a compiled call releases the GIL; the programs are
    shared): a dual CD pass is serial, so one problem keeps one core busy. Each problem's result
    is the same in any order; Ctrl-C stops every thread at its next chunk."""
    pb, starts = jax.device_put((pb, starts), device)
    i32 = lambda v: np.asarray(v, np.int32)  # noqa: E731  (a host scalar: no dispatch to make it)
    lanes_pb, lanes_st = _Lanes(pb, axes), _Lanes(starts, sax)
    exes, tc = {}, 0.0
    lock = threading.Lock()

    def exe(name, fn, args, donate=()):
        nonlocal tc
        hit = exes.get(name)
        if hit is None:
            with lock:  # every problem has the same structure and shapes: one compile per name
                if name not in exes:
                    exes[name], dt = compiled(name, fn, args, donate=donate)
                    tc += dt
                hit = exes[name]
        return hit

    def lane(what, i):
        with lock:  # (its first call compiles)
            if what.exe is None:
                return what(i)
        return what(i)

    stop = threading.Event()

    def solve_one(i):
        p = progress[i]
        lp, st0 = lane(lanes_pb, i), lane(lanes_st, i)
        t1 = time.perf_counter()
        state = exe("init", loop.init, (method, lp, st0))(method, lp, st0)
        k, code = i32(0), i32(RUNNING)
        per, kk = None, 0  # history starts after the first chunk, as in the other batch modes
        while not stop.is_set():
            until = i32(p.next_until(kk, max_iter, per))
            t2 = time.perf_counter()
            args = (method, lp, state, k, code, until)
            state, k, code, s = exe("chunk+summary", loop.chunk_summary, args, donate=(2,))(*args)
            kh, ch = int(k), int(code)
            per = (time.perf_counter() - t2) / max(kh - kk, 1)
            kk = kh
            finished = ch != RUNNING or kh >= max_iter
            if p.verbose or p.history:
                p.report(kh, s.primal, s.dual, time.perf_counter() - t1, force=finished and not p.history)
            if finished:
                out[i] = s
                return

    t0 = time.perf_counter()
    out: list = [None] * size
    workers = min(size, host_threads()) if device.platform == "cpu" else 1
    if any(callable(p.verbose) for p in progress):  # a caller's callback is called as before: in this thread, in turn
        workers = 1
    for_each(solve_one, size, workers, stop)
    tables = {i: progress[i].table() for i in range(size)}
    stack, dt = compiled("stack", _stack_fn, (out,))  # one call, not one per problem and leaf
    summary = jax.tree_util.tree_map(np.asarray, jax.device_get(stack(out)))
    tc += dt + lanes_pb.compile + lanes_st.compile
    return summary, {"compile": tc, "run": time.perf_counter() - t0 - tc, "lanes": [1] * size, "tables": tables}


def _lane_specs(axes, lane=P("lanes")):
    return jax.tree_util.tree_map(lambda ax: P() if ax is None else lane, axes, is_leaf=lambda x: x is None)


def _run_lanes(method, pb, axes, starts, sax, size, max_iter, devices, progress):
    """One lane per device: a chunk of every lane in one ``shard_map`` program over the lanes."""
    D = len(devices)
    mesh = Mesh(np.array(devices), ("lanes",))
    lane, rep = NamedSharding(mesh, P("lanes")), NamedSharding(mesh, P())
    pspec, sspec = _lane_specs(axes), _lane_specs(sax)
    host_pb = jax.tree_util.tree_map(lambda a, ax: a if ax is None else np.asarray(a), pb, axes,
                                     is_leaf=lambda x: x is None)
    host_st = jax.device_get(starts)
    shared = jax.tree_util.tree_map(lambda a, ax: jax.device_put(a, rep) if ax is None else None, pb, axes,
                                    is_leaf=lambda x: x is None)  # X and the other common leaves: once

    def place(slot):  # the problems (and starts) of the slots, one per device
        idx = np.maximum(slot, 0)
        lp = jax.tree_util.tree_map(lambda a, sh, ax: sh if ax is None else jax.device_put(a[idx], lane),
                                    host_pb, shared, axes, is_leaf=lambda x: x is None)
        return lp, jax.device_put(jax.tree_util.tree_map(lambda a: a[idx], host_st), lane)

    def one(t, sp):  # the device's lane: batched leaves lose their (local, length 1) lane axis
        return jax.tree_util.tree_map(lambda s_, a: a if s_ == P() else jax.tree_util.tree_map(lambda x: x[0], a),
                                      sp, t, is_leaf=lambda x: isinstance(x, P))

    many = lambda t: jax.tree_util.tree_map(lambda a: a[None], t)  # noqa: E731
    smap = lambda f, i, o: jax.shard_map(f, mesh=mesh, in_specs=i, out_specs=o, check_vma=False)  # noqa: E731
    L, R = P("lanes"), P()

    def refill(method, lp, st0, state, k, code, fresh):
        def body(method, lp, st0, state, k, code, fresh):
            new = loop.init(method, one(lp, pspec), one(st0, sspec))
            f = fresh[0]
            state = jax.tree_util.tree_map(lambda a, b: jnp.where(f, b[None], a), state, new)
            return state, jnp.where(fresh, 0, k), jnp.where(fresh, RUNNING, code)
        return smap(body, (R, pspec, sspec, L, L, L, L), (L, L, L))(method, lp, st0, state, k, code, fresh)

    def chunk(method, lp, state, k, code, until):
        def body(method, lp, state, k, code, until):
            st, kk, cc, s = loop.chunk_summary(method, one(lp, pspec), one(state, L), k[0], code[0], until[0])
            return many(st), kk[None], cc[None], many(s)
        return smap(body, (R, pspec, L, L, L, L), (L, L, L, L))(method, lp, state, k, code, until)

    def init(method, lp, st0):
        return smap(lambda m, p, s: many(loop.init(m, one(p, pspec), one(s, sspec))), (R, pspec, sspec), L)(
            method, lp, st0)

    tc = 0.0
    t0 = time.perf_counter()
    slot = np.full(D, -1)
    pending = list(range(size))
    for j in range(min(D, size)):
        slot[j] = pending.pop(0)
    lp, st0 = place(slot)
    tag = str(jax.tree_util.tree_leaves(axes, is_leaf=lambda x: x is None))  # which leaves are batched
    exe, dt = compiled("lanes-init" + tag, init, (method, lp, st0))
    tc += dt
    state = exe(method, lp, st0)
    k = jax.device_put(np.zeros(D, np.int32), lane)
    code = jax.device_put(np.where(slot >= 0, RUNNING, Status.MAX_ITER).astype(np.int32), lane)
    out: list = [None] * size
    per = [None] * D
    kk = np.zeros(D, np.int64)
    counts = []
    while np.any(slot >= 0):
        until = np.array([progress[slot[j]].next_until(int(kk[j]), max_iter, per[j]) if slot[j] >= 0 else 0
                          for j in range(D)], np.int32)
        args = (method, lp, state, k, code, jax.device_put(until, lane))
        exe, dt = compiled("lanes-chunk" + tag, chunk, args, donate=(2,))
        tc += dt
        t1 = time.perf_counter()
        state, k, code, s = exe(*args)
        kh, ch = np.asarray(k), np.asarray(code)
        took = time.perf_counter() - t1
        counts.append(int(np.sum(slot >= 0)))
        fresh = np.zeros(D, bool)
        for j in np.flatnonzero(slot >= 0):
            per[j] = took / max(int(kh[j]) - int(kk[j]), 1)
            p = progress[slot[j]]
            finished = ch[j] != RUNNING or kh[j] >= max_iter
            if p.verbose or p.history:
                sj = jax.device_get(jax.tree_util.tree_map(lambda a: a[j], (s.primal, s.dual)))
                p.report(int(kh[j]), *sj, time.perf_counter() - t0 - tc, force=bool(finished))
            if finished:
                out[slot[j]] = jax.device_get(jax.tree_util.tree_map(lambda a: a[j], s))
                slot[j] = pending.pop(0) if pending else -1
                fresh[j] = slot[j] >= 0
        kk = np.where(fresh, 0, kh)
        if fresh.any():  # the finished lanes take the next problems
            lp, st0 = place(slot)
            args = (method, lp, st0, state, k, code, jax.device_put(fresh, lane))
            exe, dt = compiled("lanes-refill" + tag, refill, args, donate=(3,))
            tc += dt
            state, k, code = exe(*args)
            per = [None if fresh[j] else per[j] for j in range(D)]
    return _stack(out), {"compile": tc, "run": time.perf_counter() - t0 - tc, "lanes": counts}


def _bucket(n):
    return 1 << max(0, (n - 1).bit_length())


def _run_vmap(method, pb, axes, starts, sax, size, max_iter, device, progress):
    tc = 0.0
    pb, starts = jax.device_put((pb, starts), device)
    tag = str(jax.tree_util.tree_leaves(axes, is_leaf=lambda x: x is None))  # which leaves are batched
    vinit = jax.vmap(loop.init, in_axes=(None, axes, sax))
    vchunk = jax.vmap(loop.chunk_summary, in_axes=(None, axes, 0, 0, 0, None))
    t0 = time.perf_counter()
    init, dt = compiled("vinit" + tag, vinit, (method, pb, starts))
    tc += dt
    state = init(method, pb, starts)
    lanes = np.arange(size)  # which problem each batch position holds
    bpb = pb
    k = jnp.zeros((size,), jnp.int32)
    code = jnp.full((size,), RUNNING, jnp.int32)
    out: list = [None] * size
    per, kk = None, 0
    prog = progress[0]  # chunk sizing (the same rule for every lane)
    verbose = prog.verbose
    watch = any(p.history or callable(p.verbose) for p in progress)  # per-lane numbers come to the host
    counts = []
    while lanes.size:
        until = prog.next_until(kk, max_iter, per)
        chunk, dt = compiled("vchunk" + tag, vchunk, (method, bpb, state, k, code, _scalar_arg(until)), donate=(2,))
        tc += dt
        t1 = time.perf_counter()
        counts.append(int(sum(o is None for o in out)))
        state, k, code, s = chunk(method, bpb, state, k, code, _scalar_arg(until))
        kh, ch = np.asarray(k), np.asarray(code)  # only these come to the host every chunk (unless watched)
        kmax = int(np.max(kh))
        per = (time.perf_counter() - t1) / max(kmax - kk, 1)
        kk = kmax
        running = (ch == RUNNING) & (kh < max_iter)
        if watch:
            elapsed = time.perf_counter() - t0 - tc  # the batch's run time (compiles happen in this loop)
            prim, dual = jax.device_get((s.primal, s.dual))
            for j in range(lanes.size):  # per problem: history, and progress for a callback
                p = progress[lanes[j]]
                if out[lanes[j]] is None and (p.history or callable(p.verbose)):
                    p.report(int(kh[j]), prim[j], dual[j], elapsed)
        for j in np.flatnonzero(~running):
            if j < lanes.size and out[lanes[j]] is None:
                out[lanes[j]] = jax.device_get(jax.tree_util.tree_map(lambda a: a[j], s))
        if verbose and not callable(verbose):
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
    return _stack(out), {"compile": tc, "run": time.perf_counter() - t0 - tc, "lanes": counts}


def state_size(k) -> int:
    return int(k.shape[0])


def run_inline(method, pb: Problem, start: Start, max_iter) -> Summary:
    """The whole solve as one traced computation (inside a user's jit / vmap / grad)."""
    return loop.core(method, pb, start, max_iter)
