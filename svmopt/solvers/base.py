"""What every solver shares: a ``Method`` is a pytree module whose *numbers are leaves*.

A solver is a frozen dataclass. Fields declared with ``static(...)`` are its structure
(variant, criterion, shapes such as block sizes): they are part of the compiled
program, so changing one compiles anew. Every other field is a runtime number
(tol, max_iter-like caps, mu0, rho, seed, ...): a pytree leaf, traced by ``jit``, so a
new value reuses the compiled executable. ``alm`` is a method with the paper's
defaults; ``alm(tol=1e-5)`` is the same method with another number.

The loop protocol (run by ``svmopt.driver``, which solvers never import):

    init(pb, start)      -> state   a NamedTuple; ``start`` is a ``Start`` (cold, warm or resume)
    step(pb, state)      -> state
    check(pb, state)     -> int32   RUNNING, CONVERGED (its own criterion met), STALLED
    finalize(pb, state)  -> Iterate(w, b, alpha or None, extras)
    tighten(pb, state)   -> state   its criterion was met but the duality gap was not
                                    certified: tighten its own tolerance and go on
    carry(pb, state)     -> Start   what a later ``solve(init=result)`` resumes from
    objectives(pb, state, it) (optional) -> (primal, dual, alpha): kernel methods, whose
                                    objectives come from alpha rather than (w, b)
"""
from __future__ import annotations

import dataclasses
from collections import OrderedDict
from typing import Any, NamedTuple, Optional

import numpy as np

import jax
import jax.numpy as jnp

from ..checks import concrete, is_traced
from ..losses import MissingCapability
from ..problem import Problem, relative_gap

__all__ = ["golden_min", "Method", "static", "require", "stall_update", "Start", "Iterate", "concrete", "is_traced",
           "COLD", "PRIMAL", "DUAL", "RESUME"]

# Start.level bits: what a start carries
COLD = 0
"""``Start.level`` of a cold start: nothing carried."""
PRIMAL = 1
"""``Start.level`` bit: w and b are meaningful."""
DUAL = 2
"""``Start.level`` bit: alpha is meaningful."""
RESUME = 4
"""``Start.level`` bit: ``aux`` is a previous run's carry (continue exactly where it stopped)."""


class Start(NamedTuple):
    """Where a solve starts. Always present (zeros for a cold start), so cold, warm and
    resumed solves share one compiled program.

    w (d,), b ()       a primal point (d = the operator's width, bias feature included)
    alpha (n,)         a dual point in the library's scale (0 <= alpha_i <= C s_i for the hinge)
    level              int32 bits: PRIMAL (w, b meaningful), DUAL (alpha meaningful), RESUME
                       (``aux`` is a previous run's carry: continue exactly where it stopped)
    aux                the method's own resume data (``Method.aux_template``)
    """

    w: Any
    b: Any
    alpha: Any
    level: Any
    aux: Any = None


class Iterate(NamedTuple):
    """A method's answer: the primal point, a dual candidate (or None) and solver diagnostics."""

    w: Any
    b: Any
    alpha: Optional[Any]
    extras: dict


def static(default=dataclasses.MISSING, **kw):
    """A structural field: part of the compiled program (a change compiles anew)."""
    return dataclasses.field(default=default, metadata={"static": True}, **kw)


def _fields(cls):
    out = ([], [])
    for f in dataclasses.fields(cls):
        out[bool(f.metadata.get("static"))].append(f.name)
    return tuple(out[0]), tuple(out[1])


class Method:
    """Base of all solvers. Subclasses are ``@dataclasses.dataclass(frozen=True)``."""

    name = "method"
    supports_kernel = False
    batchable = True  # runs well under vmap (a batch of problems in one program)
    certify_every = None  # also check the duality gap every k iterations (cheap next to a step)
    polish_steps = (4, 10)  # (ascent, fit) steps on the dual candidate at each certificate (problem.polish_dual)
    rescales = False  # the certificate takes the best multiple s (w, b) of the primal point (loop.rescale)
    solves_libsvm_dual = False  # LIBSVM's dual with any y^T alpha = rhs (the one-class SVM): solvers.libsvm_dual

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)

        def flatten(m):
            dyn, sta = _fields(type(m))
            return tuple(getattr(m, k) for k in dyn), (sta, tuple(_hashable(getattr(m, k)) for k in sta))

        def unflatten(aux, children):
            sta, vals = aux
            m = object.__new__(cls)
            dyn, _ = _fields(cls)
            for k, v in zip(dyn, children):
                object.__setattr__(m, k, v)
            for k, v in zip(sta, vals):
                object.__setattr__(m, k, v)
            return m

        jax.tree_util.register_pytree_node(cls, flatten, unflatten)

    # -- configuration
    def __call__(self, **params) -> "Method":
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise TypeError(f"{self.name} has no parameter(s) {unknown}; it takes {sorted(names)}")
        return dataclasses.replace(self, **params)

    def static_fields(self) -> tuple:
        return _fields(type(self))[1]

    def dynamic_fields(self) -> tuple:
        return _fields(type(self))[0]

    def canonical(self, dtype) -> "Method":
        """Runtime numbers as arrays of fixed dtypes (floats in ``dtype``, ints int32), so the
        same structure always meets the same compiled program whatever Python type a number had."""
        host = []

        def conv(x):
            if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
                return x
            if isinstance(x, jax.core.Tracer):
                return x
            a = np.asarray(x)
            # converted on the host, then transferred: jnp.asarray(a, dtype) compiles a conversion
            # per dtype and shape, a noticeable part of a new process's first solve
            if a.dtype == bool:
                pass
            elif np.issubdtype(a.dtype, np.integer):
                a = a.astype(np.int32) if a.ndim == 0 else a
            elif np.issubdtype(a.dtype, np.floating):
                a = a.astype(dtype)
            else:
                return x
            host.append(a)
            return _Slot(len(host) - 1)

        dyn = self.dynamic_fields()
        if not dyn:
            return self
        key = _canonical_key(self, dyn, dtype)
        hit = _CANONICAL.get(key) if key is not None else None
        if hit is not None:
            _CANONICAL.move_to_end(key)
            return hit
        fields = {k: jax.tree_util.tree_map(conv, getattr(self, k)) for k in dyn}
        if host:  # one transfer for all of them (a device_put each costs more)
            moved = jax.device_put(host)
            if any(isinstance(m, jax.core.Tracer) for m in moved):  # inside a trace: nothing to keep
                key = None
            fields = {k: jax.tree_util.tree_map(lambda v: moved[v.i] if isinstance(v, _Slot) else v, f)
                      for k, f in fields.items()}
        out = dataclasses.replace(self, **fields)
        if key is not None:
            _CANONICAL[key] = out
            while len(_CANONICAL) > _CANONICAL_SIZE:
                _CANONICAL.popitem(last=False)
        return out

    # -- the protocol (defaults)
    def validate(self, pb) -> None:
        """Raise a clear error when the problem is not one this method solves (eager only)."""

    def default_max_iter(self, pb) -> int:
        return 1000

    def aux_template(self, pb):
        """Zeros shaped like the method's resume data (``carry(...).aux``); None: nothing extra."""
        return None

    def tighten(self, pb, st):
        """Called when ``check`` said CONVERGED but the certified gap is above tol. Return the
        state with a tighter inner tolerance, or None when the method cannot do better (the
        run then ends UNCERTIFIED)."""
        return None

    def carry(self, pb, st) -> Start:
        it = self.finalize(pb, st)
        alpha = jnp.zeros((pb.n,), pb.dtype) if it.alpha is None else it.alpha
        level = PRIMAL | (0 if it.alpha is None else DUAL)
        return Start(it.w, it.b, alpha, jnp.asarray(level, jnp.int32), self.aux_template(pb))

    def certify_due(self, pb, st, k):
        """Whether the periodic certificate is due after step k (traced bool), or None for never:
        every ``certify_every`` steps by default."""
        every = self.certify_every
        return None if every is None else k % every == 0

    def own_objectives(self, pb) -> bool:
        """True when ``objectives`` computes primal and dual itself (kernel methods)."""
        return False

    def section1_objective(self, pb) -> bool:
        """Static: is the method's P the Section-1 objective of its (w, b) (``problem.primal_objective``)?
        The summary then bounds P - D's rounding (``problem.rounding_bound``); a method whose objective
        has another form (Crammer-Singer's, the ordinal cutting plane's) says False."""
        return pb.kernel is None

    def objectives(self, pb, st, it):
        """(primal, dual, alpha) computed by the method (only when ``own_objectives``); a method that
        ``rescales`` may add f = X w + b of its iterate, which the rescaling then reuses."""
        raise NotImplementedError

    def progress(self, pb, st):
        """(P, D) the state already holds (a history row without products), or None: computed."""
        return None

    def dual_bound(self, pb, st):
        """An extra valid lower bound on the optimum (e.g. a working-set dual), or None."""
        return None

    def start_objective(self, pb):
        """The objective at w = 0, b = 0 (a run far above it has diverged)."""
        import jax.numpy as jnp  # noqa: F811
        return jnp.sum(pb.cs * pb.loss.value(jnp.zeros_like(pb.y)))

    def gap_tol(self):
        """The relative duality gap the status contract certifies (``tol``)."""
        return self.tol

    def advice(self, status) -> str | None:
        """What to try when a run ends with ``status`` (a ``Status``) short of CONVERGED, for the
        warning or error ``solve`` raises; None: the status's own message says it all."""
        return None


def _hashable(v):
    if isinstance(v, (list, np.ndarray)):
        return tuple(np.ravel(v).tolist())
    return v


_CANONICAL: "OrderedDict" = OrderedDict()
_CANONICAL_SIZE = 64
"""Canonical forms of recently used methods whose runtime numbers are all Python / numpy scalars:
the same settings again reuse the device arrays (no transfer per solve). The arrays
are never donated or written, so sharing them between calls is safe."""


def _canonical_key(method, dyn, dtype):
    """A key for ``_CANONICAL``, or None when a runtime number is an array (or a tracer) or a
    static field is unhashable. Each number's type is part of it (1, 1.0 and True convert differently)."""
    parts = []
    for k in dyn:
        leaves = jax.tree_util.tree_leaves(getattr(method, k))
        if not all(isinstance(v, (bool, int, float, np.generic)) for v in leaves):
            return None
        parts.append((k, tuple((type(v).__name__, v) for v in leaves)))
    try:
        static = tuple((k, getattr(method, k)) for k in method.static_fields())
        key = (type(method), np.dtype(dtype).name, bool(jax.config.jax_enable_x64), static, tuple(parts))
        hash(key)
    except TypeError:
        return None
    return key


class _Slot:
    """Where ``Method.canonical`` will put the i-th transferred array."""

    def __init__(self, i):
        self.i = i


_PROBED: dict = {}


def probe(what: str, fn, obj, dtype) -> None:
    """``fn(obj, v)`` traced abstractly on a (1,) vector of ``dtype``: raises what the call raises
    (``MissingCapability`` naming the missing piece) without running it. ``obj`` is the loss or
    regularizer the call depends on: its pytree structure and leaves' types decide the outcome, so
    a passing probe is remembered under them (rather than traced anew on every solve)."""
    leaves, tree = jax.tree_util.tree_flatten(obj)
    try:
        key = (what, tree, tuple((jnp.shape(x), jnp.result_type(x)) for x in leaves), jnp.dtype(dtype))
        hash(key)
    except TypeError:  # an unhashable static part: probe every time
        key = None
    if key is not None and key in _PROBED:
        return
    try:
        jax.eval_shape(lambda o, v: fn(o, v), obj, jax.ShapeDtypeStruct((1,), dtype))
    except MissingCapability as exc:  # traced, obj printed as "name(traced)": name its values
        traced = f"{getattr(obj, 'name', '')}(traced)"
        if traced in str(exc):
            raise type(exc)(str(exc).replace(traced, repr(obj))) from None
        raise
    if key is not None:
        if len(_PROBED) > 1024:
            _PROBED.clear()
        _PROBED[key] = True


def require(cond: bool, message: str) -> None:
    """Raise ``MissingCapability(message)`` unless ``cond``."""
    if not cond:
        raise MissingCapability(message)


def check_positive(method, *names, integer=False, allow_zero=False):
    """Eager value checks of runtime numbers (skipped when traced)."""
    for k in names:
        v = concrete(getattr(method, k))
        if v is None:
            continue
        v = np.asarray(v)
        bad = (v.ndim != 0 or not np.isfinite(v) or (v < 0 if allow_zero else v <= 0)
               or (integer and (not np.issubdtype(v.dtype, np.integer) or isinstance(getattr(method, k), bool))))
        if bad:
            kind = " (an integer)" if integer else ""
            raise ValueError(f"{method.name} needs {k} {'>=' if allow_zero else '>'} 0{kind}, "
                             f"got {getattr(method, k)!r}")


def stall_update(best, since, obj, obj_tol):
    """Objective-change safeguard: count iterations without a relative improvement of obj_tol."""
    improved = obj < best - obj_tol * jnp.abs(best)
    return jnp.where(improved, obj, jnp.minimum(best, obj)), jnp.where(improved, 0, since + 1)


def start_or(start: Start, bit: int, given, default):
    """``given`` when the start carries ``bit``, else ``default`` (traced select)."""
    has = (start.level & bit) != 0
    return jax.tree_util.tree_map(lambda g, d: jnp.where(has, g, d), given, default)


# ---------------------------------------------------------------------------------- shared by solvers
def require_box_dual(name: str, pb: Problem) -> None:
    """What a method on this dual needs (dual_cd, dual_newton): l2, a linear model, no free
    intercept, a loss whose conjugate is a box plus a diagonal; else MissingCapability naming it."""
    require(pb.reg.is_l2, f"{name} solves l2-regularized problems only (R(w) = ||w||^2/2), got reg={pb.reg!r}; "
                          "use method=alm or nesvm for l1 / elastic net")
    require(pb.kernel is None, f"{name} is a linear solver; for a kernel use method=alfpgm or nesvm")
    require(not pb.fit_intercept,
            f"{name} cannot keep a free intercept (its dual has no y^T alpha = 0 constraint); "
            "use LIBLINEAR's bias feature intercept_scaling=1.0, or fit_intercept=False, "
            "or method=alm for an unregularized intercept")
    pb.loss.box_diagonal()  # raises MissingCapability naming the box-plus-diagonal dual


def box_table(pb: Problem):
    """(n, 6) per row [D_ii, L_i, U_i, 1/Qbar_ii, lin_i, eps]: the dual's diagonal, box and inverse
    curvature (eq. 4, 9), the coefficient of alpha_i (1 for classification, t_i for regression) and
    the weight of |alpha_i| (regression's epsilon), what a coordinate step reads. In alpha = C s a
    the dual is sum_i (lin_i alpha_i - eps |alpha_i|) - 1/2 alpha^T (Q + D) alpha. A zero-weight row
    is fixed at 0."""
    dt, n = pb.dtype, pb.n
    lower, upper, quad = pb.loss.box_diagonal()
    lin, eps = pb.loss.dual_terms()
    cs = pb.cs
    live = cs > 0
    lo = jnp.where(live, -jnp.inf if lower == -np.inf else lower * cs, 0.0)
    hi = jnp.where(live, jnp.inf if upper == np.inf else upper * cs, 0.0)
    D = jnp.where(live, 2.0 * quad / jnp.where(live, cs, 1.0), 0.0) * jnp.ones((n,), dt)
    qbar = pb.op.row_sq_norms() + D
    # Qbar_ii = 0 only when x_i = 0 and D_ii = 0: G = -1 sends alpha_i to its bound (Section 2)
    invq = jnp.where(qbar > 0, 1.0 / jnp.where(qbar > 0, qbar, 1.0), 1.0 / jnp.finfo(dt).tiny)
    one = jnp.ones((n,), dt)
    return jnp.stack([D, lo, hi, invq, lin * one, eps * one], axis=1).astype(dt)


def platform(pb) -> str:
    """Where pb's data lives: "cpu", "gpu", "tpu" (the default backend when traced)."""
    for leaf in jax.tree_util.tree_leaves(pb.op):
        if isinstance(leaf, jax.Array) and not isinstance(leaf, jax.core.Tracer):
            return next(iter(leaf.devices())).platform
    return jax.default_backend()


def box_dual(pb, bounded: bool = False) -> bool:
    """The loss's dual is a box plus a diagonal (hinge, squared hinge, smoothed hinge: what dual
    CD solves), with l2 and no free intercept; ``bounded``: the box's upper end is finite."""
    if pb.fit_intercept or pb.kernel is not None or not pb.reg.is_l2:
        return False
    try:
        _, upper, _ = pb.loss.box_diagonal()
    except (MissingCapability, AttributeError):
        return False
    return bool(np.isfinite(upper)) or not bounded


def bounded_dual(pb) -> bool:
    """The loss's dual is a box with a finite upper end (hinge, smoothed hinge), with l2 and no
    free intercept: there dual CD's shrinking fixes most coordinates at a bound within a few
    passes. (With an unbounded box, the squared hinge, it can crawl, as LIBLINEAR's -s 1 does,
    which hands over to its Newton method after 300 passes.)"""
    return box_dual(pb, bounded=True)


def power_iteration(apply, size: int, dtype, iters: int):
    """Rayleigh estimate (from below) of lambda_max of a symmetric PSD operator ``apply`` on vectors of
    ``size``, by ``iters`` power iterations from a deterministic, positive, uneven start (no RNG:
    threefry is costly to compile). alm's, nesvm's and pdhg's step sizes come from it."""
    v = 1.5 + jnp.cos(0.7071 * jnp.arange(size, dtype=dtype))

    def body(_, v):
        u = apply(v)
        return u / jnp.maximum(jnp.linalg.norm(u), jnp.finfo(u.dtype).tiny)

    v = jax.lax.fori_loop(0, iters, body, v / jnp.linalg.norm(v))
    return jnp.vdot(v, apply(v))


def second(loss, m):
    """l''(m) elementwise: the derivative of ``loss.derivative`` (a generalized one at kinks of l')."""
    return jax.jvp(loss.derivative, (m,), (jnp.ones_like(m),))[1]


def finite_gap(obj, dual):
    """The relative gap, +inf where it is not finite (a method's own stop and stall rules)."""
    crit = relative_gap(obj, dual)
    return jnp.where(jnp.isfinite(crit), crit, jnp.inf)


def golden_min(phi, lo, hi, steps: int):
    """(t, phi(t)): golden-section search for the minimum of a convex scalar ``phi`` on [lo, hi]
    (``steps`` evaluations after the first two; the bracket shrinks by 0.618 per step)."""
    gr = 0.5 * (jnp.sqrt(5.0) - 1.0)
    a, b = lo, hi
    c, d = b - gr * (b - a), a + gr * (b - a)

    def body(_, z):
        a, b, c, d, fc, fd = z
        left = fc <= fd  # the minimum lies in [a, d]
        a, b = jnp.where(left, a, c), jnp.where(left, d, b)
        c2, d2 = b - gr * (b - a), a + gr * (b - a)
        c, d = jnp.where(left, c2, d), jnp.where(left, c, d2)
        fnew = phi(jnp.where(left, c, d))
        fc, fd = jnp.where(left, fnew, fd), jnp.where(left, fc, fnew)
        return a, b, c, d, fc, fd

    _, _, c, d, fc, fd = jax.lax.fori_loop(0, steps, body, (a, b, c, d, phi(c), phi(d)))
    return jnp.where(fc <= fd, c, d), jnp.minimum(fc, fd)
