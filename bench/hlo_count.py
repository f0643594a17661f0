"""Kernels and passes over X per iteration, counted in the compiled HLO of each default method.

    python -m bench.hlo_count [--backend cpu|gpu] [--paths cpu|gpu] [--rows 50000] [--details] [--out FILE.md]
    python -m bench.hlo_count --smoke            # tiny problems (tests/test_bench_smoke.py)
    python -m bench.hlo_count --backend gpu --methods alm,newton --rows 581012 --sparse-rows 677399 \
        --time 20 --details --out bench/results/<date>-hlo-count-h100.md      # on a GPU: counts and time/step

For each method that ``svmopt.solvers.auto`` picks or hands over to (dual_cd: its compiled CPU pass,
the pure-XLA serial pass and the block pass; newton; dual_newton; newglmnet;
alm(precondition=True, adapt_mu=True)) on scaled-down ``bench.data`` problems (dense-gen 50k x 54,
sparse-gen 50k x 47,236 with ~74 stored entries per row; LIBLINEAR's bias feature, C = 1, float32),
one iteration is compiled exactly as the loop runs it,
``jax.jit(lambda m, pb, st: m.step(pb, st)).lower(m, pb, m.init(...)).compile()``, and so is one
certificate, ``svmopt.loop.certify`` with a claimed convergence (``loop.objectives`` for the generic
methods, the method's ``objectives`` for those that measure their own). The optimized HLO text
(``compiled.as_text()``) is parsed, without running anything:

  kernels   top-level instructions that launch work: fusions, custom calls, dots, copies, sorts,
            scatters, gathers, ... (not parameters, tuples, get-tuple-element, bitcasts, constants);
            a while loop's body and condition are counted per trip, apart; a conditional's branches apart
  X reads   kernels with an X-sized operand: the operator's arrays (dense X; CSR data / indices /
            row ids) and X-sized copies a method keeps or makes (dual_cd's padded row table, newglmnet's
            columns, newton's active-row CSR): an array of at least a quarter of X's elements that is
            not a length-n or length-d vector. Bytes: what the kernel touches (a slice or gather of X
            inside a fusion reads only its output's size; a custom call counts as one read, at most
            bytes(X)), as a multiple of bytes(X) = the operator's own bytes (dense: n d 4; CSR: nnz x
            (4 + 4); the XLA CSR path also reads the row ids: 1.5 X per product)
  chain     the longest dependency chain of X reads among the kernels of one computation: what is
            left if every set of reads that do not depend on each other were one multi-output pass
            (reads - chain is what a sibling fusion could remove; a row-local X^T g(X v) chain is one
            pass only blocked, as ``DenseOperator.fused`` / ``SparseOperator.hvp`` do on the CPU)

Loops with a known trip count (``fori_loop``: the dense fused pass over row blocks) are folded into
their parent's figures; the others (CG, line searches, passes, coordinate loops) are listed per trip.
The counts hardly depend on n (the ~8192-row blocks of the CPU's fused dense pass aside).

``--time STEPS`` also runs STEPS iterations from the cold start in one compiled loop on the device and
reports the time per step against bytes(X) / the device's read bandwidth (a jitted sum over a large
buffer, same run).

``--backend`` is the device the programs are compiled for; ``--paths`` the backend svmopt's code sees
while it traces (``jax.default_backend()`` patched, CSR products forced onto the XLA path when it is
not "cpu"), so that ``--backend cpu --paths gpu`` counts the program a GPU would run (which kernels
XLA's GPU compiler fuses differs: run ``--backend gpu`` on the GPU for those). Both default to the
machine's default backend.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import platform as _platform
import re
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import jax
import jax.numpy as jnp

__all__ = ["parse_hlo", "analyze", "count", "main", "METHODS"]

# ------------------------------------------------------------------------------------------ HLO text
_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4,
                "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_ARRAY = re.compile(r"\b(pred|[suf]\d+|bf16|c64|c128)\[([\d,]*)\]")
_HEADER = re.compile(r"^(ENTRY )?%(\S+) \(.*\{$")
_INSTR = re.compile(r"^\s+(ROOT )?%(\S+) = (.*)$")
# work-free instructions: not kernels
_FREE = {"parameter", "constant", "get-tuple-element", "tuple", "bitcast", "after-all", "partition-id",
         "replica-id", "opt-barrier", "add-dependency", "domain"}
_SLICES = {"slice", "dynamic-slice", "gather"}
_UPDATES = {"dynamic-update-slice", "scatter"}
_PASSTHROUGH = {"bitcast", "reshape"}


@dataclasses.dataclass
class Instr:
    name: str
    arrays: list  # [(dtype, dims)] of the result (several for a tuple)
    opcode: str
    operands: list
    attrs: str
    inner: str = ""  # the text inside the opcode's parentheses (a parameter's number)

    def attr(self, key):
        m = re.search(rf"\b{key}=%([\w.\-]+)", self.attrs)
        return m.group(1) if m else None

    @property
    def frame(self):
        m = re.search(r"stack_frame_id=(\d+)", self.attrs)
        return int(m.group(1)) if m else None

    @property
    def trips(self):
        m = re.search(r'"known_trip_count":\{"n":"(\d+)"', self.attrs)
        return int(m.group(1)) if m else None

    @property
    def branches(self):
        m = re.search(r"branch_computations=\{([^}]*)\}", self.attrs)
        if m:
            return [b.strip().lstrip("%") for b in m.group(1).split(",") if b.strip()]
        return [b for b in (self.attr("true_computation"), self.attr("false_computation")) if b]

    @property
    def target(self):
        m = re.search(r'custom_call_target="([^"]+)"', self.attrs)
        return m.group(1) if m else None


def _split_top(s):
    """Top-level comma-separated parts of s (parentheses and braces nest)."""
    out, depth, cur = [], 0, []
    for ch in s:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out


def _balanced(s, i):
    """Index just past the bracket group that opens at s[i]."""
    depth = 0
    for j in range(i, len(s)):
        if s[j] in "([{":
            depth += 1
        elif s[j] in ")]}":
            depth -= 1
            if depth == 0:
                return j + 1
    return len(s)


def _parse_instr(name, rest):
    if rest.startswith("("):
        end = _balanced(rest, 0)
        shape, rest = rest[:end], rest[end:].lstrip()
    else:
        shape, _, rest = rest.partition(" ")
    m = re.match(r"([\w\-]+)\(", rest)
    if not m:
        return None
    opcode = m.group(1)
    end = _balanced(rest, m.end() - 1)
    ops = []
    for part in _split_top(rest[m.end():end - 1]):
        toks = re.findall(r"%([\w.\-]+)", re.sub(r"/\*.*?\*/", "", part))
        if toks:
            ops.append(toks[-1])
    arrays = [(dt, tuple(int(x) for x in dims.split(",") if x)) for dt, dims in _ARRAY.findall(shape)]
    return Instr(name, arrays, opcode, ops, rest[end:], rest[m.end():end - 1])


def parse_hlo(text):
    """(computations {name: [Instr]}, entry name, frames {id: (file, function, line, parent)})."""
    comps, entry, cur = {}, None, None
    tables = {"FileNames": {}, "FunctionNames": {}, "FileLocations": {}, "StackFrames": {}}
    table = None
    for line in text.splitlines():
        if line in tables:
            table = tables[line]
            continue
        if table is not None:
            m = re.match(r"^(\d+) (.*)$", line)
            if m:
                table[int(m.group(1))] = m.group(2)
                continue
            table = None
        h = _HEADER.match(line)
        if h:
            cur = comps.setdefault(h.group(2), [])
            if h.group(1):
                entry = h.group(2)
            continue
        if line.startswith("}"):
            cur = None
            continue
        if cur is not None:
            m = _INSTR.match(line)
            if m:
                ins = _parse_instr(m.group(2), m.group(3))
                if ins is not None:
                    cur.append(ins)
    frames = {}
    for fid, s in tables["StackFrames"].items():
        loc = int(re.search(r"file_location_id=(\d+)", s).group(1))
        parent = int(re.search(r"parent_frame_id=(\d+)", s).group(1)) - 1  # printed one past the parent's id
        ls = tables["FileLocations"].get(loc, "")
        fn = re.search(r"file_name_id=(\d+)", ls)
        fu = re.search(r"function_name_id=(\d+)", ls)
        ln = re.search(r"\bline=(\d+)", ls)
        file = tables["FileNames"].get(int(fn.group(1)), "?").strip('"') if fn else "?"
        func = tables["FunctionNames"].get(int(fu.group(1)), "?").strip('"') if fu else "?"
        frames[fid] = (file, func, int(ln.group(1)) if ln else 0, parent)
    return comps, entry, frames


def where(frames, fid, depth=3):
    """The innermost svmopt frames of a stack, e.g. 'newton._pcg:617 < Newton.step:292'."""
    out, seen = [], set()
    while fid and fid in frames and fid not in seen and len(out) < depth:
        seen.add(fid)
        file, func, line, parent = frames[fid]
        if "/svmopt/" in file:
            out.append(f"{Path(file).stem}.{func.split('.')[-1]}:{line}")
        fid = parent
    return " < ".join(out) if out else "(no source)"


# ------------------------------------------------------------------------------------------ analysis
def _size(dims):
    return int(np.prod(dims)) if dims else 1


def _bytes(arrays):
    return sum(_size(d) * _DTYPE_BYTES.get(t, 4) for t, d in arrays)


@dataclasses.dataclass
class Region:
    """A computation executed as one unit: the step, a loop body (per trip) or a conditional's branch."""

    label: str
    kind: str  # "step" | "loop" | "branch"
    trips: int | None = None  # known trip count of a loop
    kernels: int = 0
    reads: int = 0  # kernels that read X (known-trip loops folded in, x trips)
    xbytes: float = 0.0  # bytes of X read, in multiples of bytes(X)
    wbytes: float = 0.0  # X-sized bytes written (copies of X), in multiples of bytes(X)
    chain: int = 0  # longest dependency chain of X reads among this computation's own kernels
    sites: list = dataclasses.field(default_factory=list)  # (where, opcode, X multiple) of each X read
    by_source: dict = dataclasses.field(default_factory=dict)  # kernels per innermost svmopt function
    children: list = dataclasses.field(default_factory=list)  # loops without a known trip count, branches
    group: str = ""  # a branch: the conditional it belongs to


class _Analyzer:
    def __init__(self, comps, frames, xlike, xbytes):
        self.comps, self.frames, self.xlike, self.xbytes = comps, frames, xlike, xbytes

    def _is_x(self, arrays):
        return len(arrays) == 1 and self.xlike(arrays[0][1])

    def _fused_param_bytes(self, comp, index, full):
        """Bytes a fusion touches of its operand ``index``: a slice's / gather's output when that is
        all it does with it, 0 for an in-place update, else all of it."""
        body = self.comps.get(comp, [])
        pname = next((i.name for i in body if i.opcode == "parameter" and i.inner.strip() == str(index)), None)
        if pname is None:
            return full
        names, total = {pname}, 0
        frontier = [pname]
        while frontier:
            cur = frontier.pop()
            for u in body:
                if cur not in u.operands:
                    continue
                if u.opcode in _PASSTHROUGH:
                    if u.name not in names:
                        names.add(u.name)
                        frontier.append(u.name)
                elif u.opcode in _SLICES and u.operands[0] == cur:
                    total += _bytes(u.arrays)
                elif u.opcode in _UPDATES and u.operands[0] == cur:
                    continue
                else:
                    return full
        return min(total, full)

    def kernel_bytes(self, ins, table):
        """(bytes of X read, X-sized bytes written) by one kernel."""
        read = 0
        for k, op in enumerate(ins.operands):
            arrays = table.get(op)
            if not arrays or not self._is_x(arrays):
                continue
            full = _bytes(arrays)
            if ins.opcode == "fusion":
                read += self._fused_param_bytes(ins.attr("calls"), k, full)
            elif ins.opcode in _SLICES and k == 0:
                read += _bytes(ins.arrays)
            elif ins.opcode in _UPDATES and k == 0:
                continue
            else:
                read += full
        if ins.opcode == "custom-call" and read:
            read = min(read, self.xbytes)  # one pass of a compiled kernel
        written = sum(_bytes([a]) for a in ins.arrays if self.xlike(a[1]))
        if ins.opcode in _UPDATES and written and len(ins.operands) > 1:
            written = _bytes(table.get(ins.operands[1], []))
        return read, written

    def region(self, comp, label, kind, trips=None, extra=()):
        reg = Region(label, kind, trips)
        table = {}
        names = list(self.comps.get(comp, [])) + [i for c in extra for i in self.comps.get(c, [])]
        depth = {}
        for ins in names:
            table[ins.name] = ins.arrays
        for ins in names:
            up = max((depth.get(o, 0) for o in ins.operands), default=0)
            if ins.opcode in _FREE:
                depth[ins.name] = up
                continue
            if ins.opcode == "while":
                body, cond = ins.attr("body"), ins.attr("condition")
                sub = self.region(body, where(self.frames, ins.frame, 1), "loop", ins.trips, extra=(cond,))
                self._attach(reg, sub)
                depth[ins.name] = up
                continue
            if ins.opcode == "conditional":
                for j, br in enumerate(ins.branches):
                    sub = self.region(br, f"{where(self.frames, ins.frame, 1)}[{j}]", "branch")
                    sub.group = ins.name
                    reg.children.append(sub)
                depth[ins.name] = up
                continue
            if ins.opcode == "call":  # (a command buffer on the GPU): its kernels count here
                sub = self.region(ins.attr("to_apply"), "call", "branch")
                for f in ("kernels", "reads", "xbytes", "wbytes"):
                    setattr(reg, f, getattr(reg, f) + getattr(sub, f))
                for k, v in sub.by_source.items():
                    reg.by_source[k] = reg.by_source.get(k, 0) + v
                reg.sites += sub.sites
                reg.children += sub.children
                depth[ins.name] = up + sub.chain
                continue
            reg.kernels += 1
            src = where(self.frames, ins.frame, 1).split(":")[0]
            reg.by_source[src] = reg.by_source.get(src, 0) + 1
            read, written = self.kernel_bytes(ins, table)
            reg.wbytes += written / self.xbytes
            if read:
                reg.reads += 1
                reg.xbytes += read / self.xbytes
                what = ins.target or ins.opcode
                reg.sites.append((where(self.frames, ins.frame), what, read / self.xbytes))
                depth[ins.name] = up + 1
            else:
                depth[ins.name] = up
        reg.chain = max([depth.get(i.name, 0) for i in names] + [0])
        return reg

    @staticmethod
    def _attach(reg, sub):
        if sub.trips is not None and not sub.children:  # fold a fixed loop (row blocks) into its parent
            t = sub.trips
            reg.kernels += sub.kernels * t
            reg.reads += sub.reads * t
            reg.xbytes += sub.xbytes * t
            reg.wbytes += sub.wbytes * t
            for k, v in sub.by_source.items():
                reg.by_source[k] = reg.by_source.get(k, 0) + v * t
            reg.sites += [(f"{w} (x{t} trips)", o, b * t) for w, o, b in sub.sites]
        else:
            reg.children.append(sub)


def analyze(text, xlike, xbytes):
    """The Region tree of a compiled program's entry computation."""
    comps, entry, frames = parse_hlo(text)
    return _Analyzer(comps, frames, xlike, xbytes).region(entry, "step", "step")


# ------------------------------------------------------------------------------------------ methods
def _methods(paths):
    from svmopt.solvers import alm, dual_cd, dual_newton, newglmnet, newton

    from svmopt import _dcd

    gpu = paths != "cpu"
    block = dual_cd() if gpu else dual_cd(variant="block", block_size=256)  # the accelerators' default
    out = [("dual_cd (compiled pass)", "L1", dual_cd(impl="ffi")) if not gpu and _dcd.available() else None,
           ("dual_cd (xla serial)", "L1", dual_cd(variant="serial", impl="xla")),
           ("dual_cd (block)", "L1", block),
           ("newton", "L2", newton()),
           ("dual_newton", "L1", dual_newton()),
           ("newglmnet", "logistic+l1", newglmnet()),
           ("alm(precondition, adapt_mu)", "L1", alm(precondition=True, adapt_mu=True))]
    return [m for m in out if m is not None]


METHODS = ["dual_cd (compiled pass)", "dual_cd (xla serial)", "dual_cd (block)", "newton", "dual_newton",
           "newglmnet", "alm(precondition, adapt_mu)"]

# where the fusions would go and what they would save, from the counts and the code (see the results note)
FUSIONS = {
    "dual_cd (compiled pass)": "pass: none (one kernel, X once). Certificate 3 -> 1: tighten's w = X^T(alpha y) is "
                               "D's product again (loop.certify forms it even when the gap certifies); X w of the "
                               "old w and X^T(alpha y) are independent: one pass",
    "dual_cd (xla serial)": "a coordinate trip is ~10-20 kernels: one kernel per trip (a compiled row loop, as "
                            "the CPU pass); the records gather copies X every pass",
    "dual_cd (block)": "a block trip is ~20-30 kernels: the rows' gather, the B x B curvature and the update in one",
    "newton": "CG trip: X v and X^T(D q) one blocked hvp (the CPU path does; the GPU path reads 2); dense, d small: "
              "X^T D X once per step, CG trips then read nothing. Outside: (X o X)^T D with the last step's "
              "X^T u (3 -> 2)",
    "dual_newton": "box_table's row norms once per solve, not per step (3 -> 2 dense, 5 -> 3.5 sparse); "
                   "_scale's 40 golden-section steps (~450 small kernels) as one kernel",
    "newglmnet": "X w after the step and X^T u of the new gradient: a row-local X^T g(X w) chain, one blocked "
                 "pass (3 -> 2)",
    "alm(precondition, adapt_mu)": "X^T(alpha y) of the gap one step late, with X^T r as one two-row X^T U "
                                   "(3 -> 2); dense, d small: X^T X once, s without X g, then X g, the "
                                   "row updates and X^T [r, alpha y] one blocked pass (-> 1)",
}


def _problems(rows, sparse_rows, sparse_features, terms, which):
    from bench import data

    out = []
    if "dense-gen" in which:
        X, y = data.make_dense(rows, 54, seed=0)
        out.append((f"dense-gen {rows} x 54", X, y))
    if "sparse-gen" in which:
        X, y = data.make_sparse(sparse_rows, d=sparse_features, terms_per_row=terms, seed=0)
        out.append((f"sparse-gen {sparse_rows} x {sparse_features} ({X.nnz / sparse_rows:.0f} nnz/row)", X, y))
    return out


@contextlib.contextmanager
def code_paths(paths):
    """svmopt's code sees ``jax.default_backend() == paths`` while it traces (CSR products then take
    the XLA path too: the custom calls are CPU-only)."""
    real = jax.default_backend
    if paths == real():
        yield
        return
    jax.default_backend = lambda: paths
    try:
        yield
    finally:
        jax.default_backend = real


def _problem(X, y, loss_name, device, paths):
    from svmopt import plan
    from svmopt.losses import hinge, logistic, squared_hinge
    from svmopt.regularizers import l1, l2

    loss, reg = {"L1": (hinge, l2), "L2": (squared_hinge, l2), "logistic+l1": (logistic, l1)}[loss_name]
    with jax.default_device(device):
        pb, _, _ = plan.prepare(X, y, loss=loss, reg=reg, intercept_scaling=1.0, bucket=False)
    if paths != "cpu" and pb.op.layout == "sparse":  # the CSR custom calls are CPU-only
        op = pb.op
        pb = pb.replace(op=type(op)(op.data, op.indices, op.row_ids, op.indptr, op.shape, "xla"))
    return pb


def _xlike(pb):
    n, d = pb.op.shape
    elems = pb.op.nnz if pb.op.layout == "sparse" else n * d
    vec = {n, d, n + 1, d + 1, n - 1, d - 1}

    def xlike(dims):
        s = _size(dims)
        return 4 * s >= elems and not (len([x for x in dims if x > 1]) <= 1 and s in vec)
    return xlike


def _options(pb):
    """XLA options for the compiles: on the CPU, LLVM's code generation at its cheapest (the optimized
    HLO, all this script reads, is the same: checked on every method; ~35% less compile time)."""
    leaf = jax.tree_util.tree_leaves(pb.op)[0]
    if next(iter(leaf.devices())).platform != "cpu":
        return {}
    return {"xla_llvm_disable_expensive_passes": True, "xla_backend_optimization_level": 0}


def count(method, pb, paths, certificate=True):
    """(step Region, certificate Region or None, compile seconds) of ``method`` on problem ``pb``."""
    from svmopt import loop
    from svmopt.result import Status

    xl, xb = _xlike(pb), pb.op.nbytes
    t0 = time.perf_counter()
    with code_paths(paths), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        method.validate(pb)
        m = method.canonical(pb.dtype)
        start = loop.zero_start(m, pb)
        # states by shape only (nothing runs); donated, as the loop carries them: a field the step
        # passes through is then not copied (an artefact of a stand-alone program, not of the loop)
        st = jax.eval_shape(lambda m, pb, s: m.init(pb, s), m, pb, start)
        step = jax.jit(lambda m, pb, st: m.step(pb, st), donate_argnums=2).lower(m, pb, st).compile(_options(pb))
        cert = None
        if certificate:
            lp = jax.eval_shape(lambda m, pb, s: loop.init(m, pb, s), m, pb, start)
            code = jnp.asarray(Status.CONVERGED, jnp.int32)
            cert = jax.jit(lambda m, pb, lp, c: loop.certify(m, pb, lp, c, jnp.asarray(1, jnp.int32)),
                           donate_argnums=2).lower(m, pb, lp, code).compile(_options(pb))
    secs = time.perf_counter() - t0
    return analyze(step.as_text(), xl, xb), cert and analyze(cert.as_text(), xl, xb), secs


def bandwidth(device, nbytes):
    """Read bandwidth of ``device`` in bytes/s: the best of 5 jitted sums over an ``nbytes`` buffer."""
    a = jax.device_put(jnp.ones((nbytes // 4,), jnp.float32), device)
    f = jax.jit(jnp.sum)
    f(a).block_until_ready()
    best = np.inf
    for _ in range(5):
        t0 = time.perf_counter()
        f(a).block_until_ready()
        best = min(best, time.perf_counter() - t0)
    del a
    return nbytes / best


def time_steps(method, pb, paths, steps):
    """(seconds per step, extras): ``steps`` iterations from the cold start in one compiled
    ``fori_loop`` (as the loop runs them: on the device, no host round trip per step), less the same
    program run for 0 steps, best of 3 each; extras: newton's CG steps per step."""
    from jax import lax

    from svmopt import loop

    with code_paths(paths), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = method.canonical(pb.dtype)
        st0 = jax.jit(lambda m, pb, s: m.init(pb, s))(m, pb, loop.zero_start(m, pb))
        run = jax.jit(lambda m, pb, st, k: lax.fori_loop(0, k, lambda i, s: m.step(pb, s), st))
        jax.block_until_ready(run(m, pb, st0, 1))  # compiled (k is a runtime number)
        t = {}
        for k in (0, steps):
            best = np.inf
            for _ in range(3):
                t0 = time.perf_counter()
                out = jax.block_until_ready(run(m, pb, st0, k))
                best = min(best, time.perf_counter() - t0)
            t[k] = best
    extra = ""
    if hasattr(out, "cg"):
        extra = f"{int(out.cg) / steps:.1f} CG steps/step"
    return max(t[steps] - t[0], 0.0) / steps, extra


# ------------------------------------------------------------------------------------------ report
def _flat(reg, prefix=""):
    """Loops and branches below ``reg``, depth first: (path, Region)."""
    out = []
    for c in reg.children:
        name = f"{prefix}{c.label}"
        out.append((name, c))
        out += _flat(c, prefix=name + " / ")
    return out


def _fmt(x):
    return f"{x:.2f}".rstrip("0").rstrip(".") if x else "0"


def _certificate(reg):
    """The certificate's work: the heaviest branch of certify's cond (the check), and its own loops."""
    best = max(reg.children, key=lambda c: (c.xbytes, c.kernels), default=None) if reg.children else None
    if best is None or best.kind != "branch":
        return reg
    return best


def _loops(reg):
    """The loops below ``reg`` (in branches too), one per (label, counts): the same loop in two branches
    of a conditional (newton's CG over all rows or over the active ones) once, marked."""
    seen = {}
    for _, c in _flat(reg):
        if c.kind == "loop":
            key = (c.label, c.kernels, c.reads, round(c.xbytes, 3))
            seen[key] = seen.get(key, 0) + 1
    return seen


def _loops_cell(reg):
    parts = [f"{label}: {k} k, {r} X ({_fmt(b)})" + (f" [in {n} branches]" if n > 1 else "")
             for (label, k, r, b), n in _loops(reg).items()]
    return "; ".join(parts) if parts else "none"


def _branches_cell(reg):
    parts = []
    for name, c in _flat(reg):
        if c.kind == "branch" and (c.kernels or c.reads):
            parts.append(f"{c.label}: {c.kernels} k, {c.reads} X ({_fmt(c.xbytes)})")
    return "; ".join(parts) if parts else "none"


def _per_step(reg):
    """bytes(X) per step as 'a + {b0|b1} + c·k[loop] + ...': the step's own reads, each conditional's
    branches (one of them runs), and the loops without a known trip count per trip (a loop met in
    several branches once, at its largest)."""
    terms = [_fmt(reg.xbytes)]
    groups = {}
    for c in reg.children:
        if c.kind == "branch":
            groups.setdefault(c.group, []).append(c.xbytes)
    terms += ["{" + " \\| ".join(_fmt(b) for b in bs) + "}" for bs in groups.values() if any(bs)]
    loops = {}
    for (label, _, _, b) in _loops(reg):
        if b:
            short = label.split(":")[0].split(".")[-1]
            loops[short] = max(loops.get(short, 0.0), b)
    return " + ".join(terms + [f"{_fmt(b)}·k[{k}]" for k, b in loops.items()])


def row(label, data_name, loss, step, cert, secs):
    r = dict(method=label, data=data_name, loss=loss, kernels=step.kernels, reads=step.reads, xbytes=step.xbytes,
             chain=step.chain, loops=_loops_cell(step), branches=_branches_cell(step), per_step=_per_step(step),
             cert_kernels=None, cert_reads=None, cert_xbytes=None, cert_loops="",
             fusion=FUSIONS.get(label, ""), compile_s=secs, step=step, cert=cert, loop_regions=_flat(step))
    if cert is not None:  # certify's own kernels and its check branch (the heaviest one)
        c = _certificate(cert)
        extra = c is not cert
        base = cert.xbytes + (c.xbytes if extra else 0)
        more = _per_step(c).split(" + ")[1:] if extra else []
        r.update(cert_kernels=cert.kernels + (c.kernels if extra else 0),
                 cert_reads=cert.reads + (c.reads if extra else 0), cert_xbytes=base,
                 cert_per=" + ".join([_fmt(base)] + more), cert_loops=_loops_cell(c))
    return r


COLUMNS = ("| method | data | kernels / step (outside loops) | X reads / step outside loops: kernels (x bytes(X)) "
           "| chain | loops, per trip: kernels, X reads (x bytes(X)) | conditional branches | bytes(X) per step "
           "| certificate: kernels, X reads (x bytes(X)) | certificate loops | a fusion could remove |")


def table(rows):
    lines = [COLUMNS, "|" + "---|" * COLUMNS.count(" | ") + "---|"]
    for r in rows:
        cert = "not compiled | |" if r["cert"] is None else \
            f"{r['cert_kernels']}, {r['cert_reads']} ({r['cert_per']}) | {r['cert_loops']} |"
        lines.append(f"| {r['method']} | {r['data']} | {r['kernels']} | {r['reads']} ({_fmt(r['xbytes'])}) | "
                     f"{r['chain']} | {r['loops']} | {r['branches']} | {r['per_step']} | {cert} {r['fusion']} |")
    timed = [r for r in rows if r.get("step_s") is not None]
    if timed:
        lines += ["", "| method | data | time / step (us) | bytes(X) / bandwidth (us) | ratio | note |",
                  "|---|---|---|---|---|---|"]
        for r in timed:
            lines.append(f"| {r['method']} | {r['data']} | {r['step_s'] * 1e6:.1f} | {r['floor_s'] * 1e6:.1f} | "
                         f"{r['step_s'] / r['floor_s']:.1f} | {r['time_note']} |")
    return "\n".join(lines)


def sites(rows):
    """Where each X read comes from (source of the kernel's root instruction)."""
    out = []
    for r in rows:
        out.append(f"\n**{r['method']}, {r['data']}**\n")
        top = sorted(r["step"].by_source.items(), key=lambda kv: -kv[1])[:8]
        out.append("- step's kernels outside loops by source: " + ", ".join(f"{k} {v}" for k, v in top))
        if r["step"].wbytes:
            out.append(f"- step writes X-sized buffers outside loops: {_fmt(r['step'].wbytes)} x bytes(X)")
        regions = [("step", r["step"])] + r["loop_regions"]
        if r["cert"] is not None:
            regions += [("certificate", r["cert"])] + [("certificate / " + n, c) for n, c in _flat(r["cert"])]
        for title, reg in regions:
            for w, op, b in reg.sites:
                out.append(f"- {title}: `{op}` {_fmt(b)} X at {w}")
    return "\n".join(out)


def _auto_picks(problems, device, paths):
    from svmopt.solvers import auto

    out = []
    for loss in ("L1", "L2", "logistic+l1"):
        name, X, y = problems[0]
        pb = _problem(X, y, loss, device, paths)
        picked = []

        def probe(pb):
            m, _ = auto.choose(pb)
            h = auto.handover(pb, m)
            picked.append(m.name + (f" (hand-over: {h.label})" if h is not None else ""))
            return jnp.zeros(())
        with code_paths(paths):
            jax.eval_shape(probe, pb)  # traced leaves: platform(pb) is the backend the code sees
        out.append(f"{loss}: {picked[0]}")
    return "; ".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench.hlo_count", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default=None, help="device to compile for: cpu or gpu (default: the default backend)")
    ap.add_argument("--paths", default=None, help="the backend svmopt's code sees while tracing (default: --backend)")
    ap.add_argument("--rows", type=int, default=50_000, help="rows of dense-gen (full size: 581012)")
    ap.add_argument("--sparse-rows", type=int, default=None, help="rows of sparse-gen (default --rows; full: 677399)")
    ap.add_argument("--sparse-features", type=int, default=47_236)
    ap.add_argument("--terms", type=float, default=78.0, help="sparse-gen's terms per row (78 -> ~74 stored)")
    ap.add_argument("--datasets", default="dense-gen,sparse-gen")
    ap.add_argument("--methods", default=None, help="comma list of name prefixes (default: all)")
    ap.add_argument("--smoke", action="store_true", help="tiny problems: 400 rows, sparse 300 features")
    ap.add_argument("--details", action="store_true", help="also list where each X read comes from")
    ap.add_argument("--no-certificate", action="store_true", help="compile the steps only")
    ap.add_argument("--time", type=int, default=0, metavar="STEPS",
                    help="also time STEPS iterations from the cold start on the device (one compiled loop) "
                         "against bytes(X) / the device's read bandwidth")
    ap.add_argument("--out", default=None, help="write the markdown here too")
    a = ap.parse_args(argv)
    if a.smoke:
        a.rows, a.sparse_rows, a.sparse_features, a.terms = 400, 400, 300, 12.0
    backend = a.backend or jax.default_backend()
    paths = a.paths or backend
    device = jax.devices(backend)[0]
    with jax.default_device(device):  # every array and program of the run on that device
        return _run(a, argv, backend, paths, device)


def _run(a, argv, backend, paths, device):
    probs = _problems(a.rows, a.sparse_rows or a.rows, a.sparse_features, a.terms, a.datasets.split(","))
    methods = _methods(paths)
    if a.methods:
        keys = [k.strip() for k in a.methods.split(",")]
        methods = [m for m in methods if any(m[0].startswith(k) for k in keys)]
    rows, bw = [], None
    t0 = time.perf_counter()
    for name, X, y in probs:
        cache = {}
        for label, loss, method in methods:
            if loss not in cache:
                cache[loss] = _problem(X, y, loss, device, paths)
            pb = cache[loss]
            step, cert, secs = count(method, pb, paths, certificate=not a.no_certificate)
            rows.append(row(label, name, loss, step, cert, secs))
            if a.time:
                bw = bw or bandwidth(device, (1 << 31) if backend != "cpu" else (1 << 28))
                sec, note = time_steps(method, pb, paths, max(2, a.time))
                rows[-1].update(step_s=sec, floor_s=pb.op.nbytes / bw, time_note=note)
            print(f"# {label} on {name}: {step.kernels} kernels, {step.reads} X reads outside loops "
                  f"({secs:.1f} s to compile)", file=sys.stderr)
    cmd = "python -m bench.hlo_count " + " ".join(argv if argv is not None else sys.argv[1:])
    head = [f"# Kernels and X reads per iteration from the compiled HLO ({datetime.date.today()})", "",
            f"`{cmd.strip()}`  ",
            f"machine: {_platform.node()}, device {device.device_kind} (backend {backend}), code paths traced as "
            f"`{paths}`, jax {jax.__version__}; float32, C = 1, bias feature (intercept_scaling=1)  ",
            f"auto picks here ({paths}): {_auto_picks(probs, device, paths)}  ",
            f"bytes(X): " + ", ".join(f"{n}: {cache_bytes / 1e6:.1f} MB" for n, cache_bytes in
                                      _xbytes(probs, device, paths)),
            (f"  \ndevice read bandwidth (jitted sum): {bw / 1e9:.1f} GB/s" if bw else "") +
            f"  \n{time.perf_counter() - t0:.0f} s in all", "",
            "k = kernels; X = kernels reading X; (x) = bytes of X they read, in multiples of bytes(X); "
            "k[name] = trips of that loop per step (data-dependent); {a \\| b} = the branches of a conditional (one "
            "runs). chain = the longest dependency chain of X reads outside loops (reads - chain could go by "
            "merging independent reads).", ""]
    md = "\n".join(head) + "\n" + table(rows) + "\n"
    if a.details:
        md += "\n## Where each X read comes from\n" + sites(rows) + "\n"
    print(md)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(md)
    return rows


def _xbytes(probs, device, paths):
    out = []
    for name, X, y in probs:
        pb = _problem(X, y, "L1", device, paths)
        out.append((name.split(" ")[0], pb.op.nbytes))
    return out


if __name__ == "__main__":
    main()
