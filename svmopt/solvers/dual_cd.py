"""Dual coordinate descent for linear SVMs (Hsieh, Chang, Lin, Keerthi, Sundararajan, ICML 2008).

The dual of an l2-regularized loss whose conjugate is box plus diagonal (``Loss.box_diagonal``):

    min_alpha  1/2 alpha^T Qbar alpha - e^T alpha,   L_i <= alpha_i <= U_i,   Qbar = Q + D   (eq. 4)
    Q_ij = y_i y_j x_i.x_j,  U_i = upper C s_i,  L_i = lower C s_i,  D_ii = 2 quad / (C s_i)

hinge: [0, C], D = 0; squared hinge: [0, inf), D_ii = 1/(2C); least squares: (-inf, inf),
D_ii = 1/(2C); smoothed hinge: [0, C], D_ii = mu_i / C. One routine serves every such loss
and sample weights enter only through U_i, L_i and D_ii. With w = sum_i y_i alpha_i x_i kept
up to date (eq. 11, 13), one coordinate step of Algorithm 1 is

    G   = y_i w.x_i - 1 + D_ii alpha_i                          (eq. 12)
    PG  = min(G, 0) at L_i,  max(G, 0) at U_i,  G inside        (eq. 8)
    alpha_i <- clip(alpha_i - G / Qbar_ii, L_i, U_i)           (eq. 9, Qbar_ii precomputed)
    w   += (alpha_i_new - alpha_i_old) y_i x_i                  (eq. 13)

``variant`` (one outer iteration = one driver step = one pass over the coordinates):

  "serial"  Algorithm 1 in a fresh random order each pass (Section 3.1) with shrinking
            (Section 3.2, LIBLINEAR's rule): a coordinate at a bound whose G lies beyond the
            previous pass's extreme projected gradients (Mbar, mbar, eq. 16) leaves the active
            set. Active coordinates are sorted to the front of the pass and the loop runs to
            their (dynamic) count, so shrunk coordinates cost nothing. The pass stops the run
            when M - m < tol over all coordinates; when only the shrunk problem meets it, every
            coordinate is restored (w is maintained, so no gradient is reconstructed).
  "online"  Algorithm 2: n coordinates drawn uniformly with replacement per pass, no
            shrinking; M - m is the exact projected gradient at the end of the pass (one matvec).
  "block"   ``block_size`` coordinates per loop step. Each proposes its own eq.-9 update d_i
            from the same w, and the block moves by t d with t in [0, 1] the exact minimiser of
            the dual along d: the safe step comes from the block's own curvature
            |sum_i d_i y_i x_i|^2 + sum_i D_ii d_i^2 (the ESO bound of mini-batch SDCA bounds it a
            priori, in expectation, by damping each row by how widely its features are shared;
            the exact value is cheaper here and damps less), and the dual never increases
            whatever block is drawn (the monotone safeguard): a coordinate gradient descent with
            exact line search (Tseng & Yun 2009, which gives convergence). Blocks of a stored
            random layout, with shrinking, and a serial fallback once the active rows are few
            (``dcd_passes.block_pass``). Stopping as in "serial".
  "auto"    (default) "serial" on CPU; "block" on accelerators, where the serial loop costs
            one kernel launch per coordinate (``DualCD.resolved``). An explicit "serial" on an
            accelerator warns.

The compiled pass (CPU): ``impl="auto"`` (default) runs the "serial" pass as one XLA custom call
(``svmopt._dcd``, ``svmopt/_dcd_ffi.cc``) where it is built: the same steps in a random order of
its own, over the rows as they are stored (CSR or dense, no padding), with the next rows'
records prefetched. ``impl="xla"`` keeps the pure-JAX passes (``svmopt.solvers.dcd_passes``),
which accelerators, sharded rows, the "online" and "block" variants and builds without the
extension run; every kernel launch in their loop body costs time, more on GPU, so it is kept to a
few kernels (``bench/dcd_epoch.py`` counts the HLO ops).

Intercept: the dual has no equality constraint y^T alpha = 0, so dual CD cannot keep a free
intercept. Use LIBLINEAR's bias feature (``solve(..., intercept_scaling=1.0)``: a constant
column is appended and b = w_last * s is regularized) or ``fit_intercept=False``; ``alm``
fits an unregularized intercept.

Stopping: the pass rule is LIBLINEAR's M - m < eps (eps = 0.1 by default, its -e). When it
holds, the driver computes the duality gap of (w, alpha) (P from X w, D(alpha) from X^T (alpha y)
computed afresh, so both are exact); at most ``tol`` (relative, default 1e-3): CONVERGED,
otherwise ``tighten`` divides eps by 10, restores every coordinate and the passes go on. The
gap is also checked once the passes since the last check visited 2n rows (``certify_due``), so a
loose tol stops before the pass rule fires. At most 1000 passes by default, or 20 C max_i s_i ||x_i||^2
where that is more (``PASSES_PER_CQ``; at most 100,000).
"""
from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
from jax import lax

from .. import _dcd
from ..losses import MissingCapability
from ..sharding import AXIS
from ..problem import Problem, dual_objective, primal_objective, project_dual
from ..result import Status
from .base import DUAL, PRIMAL, RESUME, Iterate, Method, Start, box_table, check_positive, concrete, platform, \
    require_box_dual, start_or, static
from . import dcd_passes as passes
from .dcd_passes import LOCAL, DCDState

__all__ = ["DualCD", "dual_cd"]


PASSES = 1000
"""LIBLINEAR 1.x's pass cap: dual CD's default where C max_i s_i ||x_i||^2 is small (and auto's cap
before its hand-over, ``svmopt.solvers.auto``)."""
PASSES_PER_CQ = 20
"""Default passes per unit of C max_i s_i ||x_i||^2 (its bias feature included). The passes that
certified a 1e-3 gap at C = 10 and 100 (hinge and squared hinge, bias feature) were 4 to 10 times
it: heart_scale 8,488 at C q = 1,181, diabetes_scale 2,984 at 754, a1a 14,702 at 1,500, a9a 11,137
at 1,500, ijcnn1 2,267 at 494; with the 1000-pass cap all of C = 100 on the first three ended
MAX_ITER (bench.certify)."""
MAX_PASSES = 100_000


def _conditioning(pb: Problem):
    """C max_i s_i ||x_i||^2 from the host's view of the problem's arrays, or None where they are traced,
    on an accelerator (the cap is not worth a copy of X) or not a dense / CSR operator."""
    from ..operators import BiasColumn, DenseOperator, SparseOperator

    op, extra = pb.op, 0.0
    if isinstance(op, BiasColumn):
        op, extra = op.base, op.bias
    try:
        if jax.default_backend() != "cpu" or concrete(pb.C) is None:
            return None
        extra = float(np.asarray(extra)) ** 2
        if isinstance(op, DenseOperator):
            X = np.asarray(op.X)
            sq = np.einsum("ij,ij->i", X, X, dtype=np.float64)
        elif isinstance(op, SparseOperator):
            sq = _row_sq_norms(np.asarray(op.data), np.asarray(op.indptr), op.shape[0])
        else:
            return None
        return float(np.max(np.asarray(pb.C, np.float64))) * float(np.max(np.asarray(pb.s, np.float64) * (sq + extra)))
    except (TypeError, ValueError, jax.errors.ConcretizationTypeError, jax.errors.TracerArrayConversionError):
        return None


def _row_sq_norms(data, indptr, n):
    """||x_i||^2 of a CSR matrix's n rows (squares in the data's dtype, sums in float64): a sum over each
    row's slice (np.add.reduceat over the rows that hold entries; reduceat gives an empty slice its next
    entry, so those rows are left out). A weighted np.bincount over the row ids on a float64 copy, as
    before, took 37 ms at 2.2M entries (bench.suite seed 23's g33, a quiet machine), this 7 ms."""
    sq = np.zeros(n, np.float64)
    ptr = indptr[: n + 1].astype(np.int64)
    rows = np.flatnonzero(ptr[1:] > ptr[:-1])
    if rows.size:
        # squares in the data's dtype, summed in float64: no float64 copy of the entries (page faults
        # on a fresh array cost more than the sums here)
        sq[rows] = np.add.reduceat(np.square(data[: ptr[-1]]), ptr[rows], dtype=np.float64)
    return sq


@dataclasses.dataclass(frozen=True)
class DualCD(Method):
    """Dual coordinate descent. Structure (static): ``variant``, ``shrinking``, ``block_size``,
    ``width``. Runtime numbers: ``tol``, ``eps``, ``seed``.

    variant     "auto" (default: "serial" on CPU, "block" on accelerators), "serial" (Algorithm 1 +
                Sections 3.1-3.2), "online" (Algorithm 2), "block" (Jacobi blocks, exact line search)
    tol         relative duality gap certified at the end (default 1e-3)
    eps         LIBLINEAR's -e: a pass stops the run when M - m < eps (0.1), then the gap is checked
    shrinking   Section 3.2 shrinking (serial and block variants)
    seed        int or ``jax.random`` key for the permutations / random indices: the same seed gives
                the same run; a new seed is a new runtime value (no recompilation)
    block_size  coordinates per step of the block variant (None, default: 16 with
                variant="block" on CPU; 256 where "auto" picks the block variant on an accelerator,
                where a step costs the same few kernel launches whatever B)
    width       padded row width for sparse X (None: 1.25 x the mean row length, a multiple of 4);
                rows longer than it stay exact, they only cost more
    sync_rows   X sharded over devices (``svmopt.shard_rows``): the rows each device steps through
                between two all-reduces (see ``_sharded_pass``; every variant then runs those serial
                segments)
    impl        the serial pass on the CPU: "auto" (default: the compiled pass of ``svmopt._dcd``
                where it is built, float32/float64 data on the CPU, else XLA), "xla" (always the
                pure-XLA loop), "ffi" (the compiled pass; an error where it is not available)
    """

    variant: str = static("auto")
    tol: float = 1e-3
    eps: float = 0.1
    shrinking: bool = static(True)
    seed: Any = 0
    block_size: Any = static(None)
    width: Any = static(None)
    sync_rows: int = static(8)
    impl: str = static("auto")

    name = "dual_cd"
    certify_every = 2  # sharded rows: check the gap every 2 passes
    certify_work = 2.0  # otherwise: once the passes since the last check visited 2 n rows (see certify_due)
    polish_steps = (0, 0)  # its alpha is the dual iterate itself (w = X^T (alpha y)); a polish would break that
    # its w = X^T (alpha y): near a hard margin float32 rounding of the margins, times C, floors P - D
    # (loop.rescale); the state's w is untouched, the certificate and the result use s w
    rescales = True
    batchable = False  # a per-coordinate loop: batches of problems run lane by lane

    def validate(self, pb: Problem) -> None:
        require_box_dual(self.name, pb)
        if pb.loss.dual.l1 is not None and (self.resolved(pb) == "block" or _sharded(pb)):
            raise MissingCapability(f"dual_cd takes the regression dual's soft-thresholded step ({pb.loss!r}) in its "
                                    "serial and online passes on one device; the block variant (the default off "
                                    "the CPU) and row-sharded X do not: use variant='serial', or method=newton / alm")
        if self.variant not in ("auto", "serial", "online", "block"):
            raise ValueError(f"dual_cd variant must be 'auto', 'serial', 'online' or 'block', got {self.variant!r}")
        if self.impl not in ("auto", "xla", "ffi"):
            raise ValueError(f"dual_cd impl must be 'auto', 'xla' or 'ffi', got {self.impl!r}")
        if self.impl == "ffi" and not self.native(pb):
            raise ValueError("dual_cd(impl='ffi') needs the compiled pass (svmopt._dcd_ffi, built by "
                             "`pip install -e .`), the serial variant, float32/float64 data on the CPU and "
                             f"unsharded rows; here: built={_dcd.available()}, variant={self.resolved(pb)!r}, "
                             f"dtype={pb.dtype}, platform={platform(pb)!r}, sharded={_sharded(pb)}")
        if self.resolved(pb) == "serial" and platform(pb) != "cpu" and not _sharded(pb):
            warnings.warn(f"dual_cd(variant='serial') on {platform(pb)}: one kernel launch per coordinate, "
                          "a pass takes ~n launches (slow); variant='auto' runs the block variant there",
                          UserWarning, stacklevel=3)
        check_positive(self, "eps")
        seed = self.seed
        is_key = isinstance(seed, jax.Array) and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key)
        if not is_key:
            sv = concrete(seed)
            if sv is not None and (isinstance(sv, bool) or np.ndim(sv) != 0
                                   or not np.issubdtype(np.asarray(sv).dtype, np.integer)):
                raise TypeError(f"dual_cd seed must be an int or a jax.random key, got {seed!r}")
        for field in ("sync_rows",) + tuple(f for f in ("block_size", "width") if getattr(self, f) is not None):
            v = getattr(self, field)
            if not (isinstance(v, (int, np.integer)) and v >= 1):
                raise ValueError(f"dual_cd {field} must be a positive integer, got {v!r}")

    def resolved(self, pb) -> str:
        """The variant that runs on ``pb``: "auto" is "serial" on CPU, "block" on accelerators."""
        if self.variant != "auto":
            return self.variant
        return "serial" if platform(pb) == "cpu" else "block"

    def native(self, pb) -> bool:
        """Whether the serial pass runs as the compiled CPU kernel (``svmopt._dcd``) on ``pb``."""
        if self.impl == "xla" or self.resolved(pb) != "serial" or _sharded(pb):
            return False
        return (platform(pb) == "cpu" and jax.default_backend() == "cpu" and _dcd.supports(pb.dtype)
                and _dcd.available())

    def block(self, pb) -> int:
        """The block size that runs on ``pb`` (see ``block_size``)."""
        if self.block_size is not None:
            return int(self.block_size)
        return 16 if self.variant == "block" or platform(pb) == "cpu" else 256

    def canonical(self, dtype):
        """The seed as the raw words of its key (an int and a key of the same value share a program)."""
        m = super().canonical(dtype)
        seed = m.seed
        if isinstance(seed, jax.core.Tracer):
            return m
        if isinstance(seed, jax.Array) and jnp.issubdtype(seed.dtype, jax.dtypes.prng_key):
            return dataclasses.replace(m, seed=jax.random.key_data(seed))
        if isinstance(seed, jax.Array) and seed.dtype == jnp.uint32 and seed.shape == (2,):
            return m
        return dataclasses.replace(m, seed=passes.key_words(int(np.asarray(seed))))

    def default_max_iter(self, pb) -> int:
        """LIBLINEAR 1.x's 1000 passes, or PASSES_PER_CQ C max_i s_i ||x_i||^2 where that is more (at
        most MAX_PASSES): the passes dual CD takes grow with C and the rows' norms (``PASSES_PER_CQ``)."""
        q = _conditioning(pb)
        return PASSES if q is None else int(min(MAX_PASSES, max(PASSES, PASSES_PER_CQ * q)))

    def aux_template(self, pb):
        dt = pb.dtype
        inf = jnp.asarray(jnp.inf, dt)
        return dict(key=jax.random.key_data(jax.random.key(0)), active=jnp.ones((pb.n,), bool), Mbar=inf, mbar=-inf,
                    eps=jnp.zeros((), dt))

    # -- state: w, alpha, the static row table, the active set and LIBLINEAR's Mbar / mbar
    def init(self, pb: Problem, start: Start) -> DCDState:
        if _sharded(pb):
            return _sharded_init(self, pb, start)
        dt, n = pb.dtype, pb.n
        cs = pb.cs
        live = cs > 0  # a zero-weight sample keeps alpha_i = 0
        coef = box_table(pb)
        lo, hi = coef[:, 1], coef[:, 2]
        if self.native(pb):  # the compiled pass reads the rows as they are (no padding)
            rows = dict(cols=None, tail=None, long=jnp.zeros((n,), bool), rows=_dcd.rows(pb.op, pb.y))
            table = coef
        else:
            rows = passes.row_table(pb, self.width)
            table = jnp.concatenate([rows.pop("vals"), coef], axis=1)
        inf = jnp.asarray(jnp.inf, dt)
        # a warm start: the dual alpha (clipped into the box) or, from a primal w, -C s l'(margin). The
        # products run only where a start needs them (a cold start skips both: two passes over X)
        zeros = jnp.zeros((n,), dt)

        def from_w(_):
            f = pb.op.matvec(start.w)
            return project_dual(pb.replace(fit_intercept=False), -cs * pb.loss.derivative(pb.y * f))

        primal_only = ((start.level & PRIMAL) != 0) & ((start.level & DUAL) == 0)
        alpha = start_or(start, DUAL, start.alpha, lax.cond(primal_only, from_w, lambda _: zeros, None))
        alpha = jnp.where(live, jnp.clip(alpha, lo, hi), 0.0)
        w = lax.cond(jnp.any(alpha != 0), lambda a: pb.op.rmatvec(a * pb.y), lambda a: jnp.zeros((pb.d,), dt), alpha)
        resume = (start.level & RESUME) != 0
        key = passes.key(self.seed)
        aux = start.aux
        key = jnp.where(resume, aux["key"], jax.random.key_data(key))
        st = dict(w=w, alpha=alpha, table=table, **rows,
                  active=jnp.where(resume, aux["active"], True), Mbar=jnp.where(resume, aux["Mbar"], inf),
                  mbar=jnp.where(resume, aux["mbar"], -inf), crit=inf, done=jnp.asarray(False),
                  n_active=jnp.asarray(n, jnp.int32), key=key,
                  eps=jnp.where(resume, aux["eps"], jnp.asarray(self.eps, dt)), layout=None,
                  work=jnp.zeros((), dt))
        if self.resolved(pb) == "block":
            k, sub = jax.random.split(passes.wrap(key))
            st.update(key=jax.random.key_data(k), layout=passes.layout(st, sub, self.block(pb)))
        return DCDState(**st)

    def step(self, pb: Problem, st: DCDState) -> DCDState:
        key, sub = jax.random.split(passes.wrap(st.key))
        d = st._asdict()
        if _sharded(pb):
            w, alpha, M, m, kept = passes.sharded_pass(self, pb, st, sub)
        elif self.resolved(pb) == "online":
            w, alpha = passes.online_pass(pb, d, sub)
            M, m = passes.exact_extremes(pb, d, w, alpha)
            kept = st.active
        elif st.rows is not None:
            Mbar, mbar = passes.bounds(self, d)
            w, alpha, kept, M, m = _dcd.pass_(st.w, st.alpha, st.table, st.rows, st.active, Mbar, mbar,
                                              jax.random.bits(sub, (2,), jnp.uint32))
        elif self.resolved(pb) == "serial":
            w, alpha, M, m, kept = passes.serial_pass(self, pb, d, sub)
        else:
            w, alpha, M, m, kept, layout = passes.block_pass(self, pb, d, sub)
            st = st._replace(layout=layout)
        if st.work is not None:
            visited = jnp.sum(st.active, dtype=st.w.dtype) / st.active.shape[0]
            st = st._replace(work=jnp.where(st.work >= self.certify_work, 0.0, st.work) + visited)
        crit = M - m
        met = crit < st.eps
        full = jnp.all(kept)
        reset = met & ~full  # the shrunk problem is solved: restore every coordinate
        inf = jnp.asarray(jnp.inf, w.dtype)
        return st._replace(w=w, alpha=alpha, key=jax.random.key_data(key), crit=crit, done=met & full,
                           active=kept | reset, n_active=jnp.sum(kept, dtype=jnp.int32),
                           Mbar=jnp.where(reset | (M <= 0), inf, M),  # eq. 16
                           mbar=jnp.where(reset | (m >= 0), -inf, m))

    def certify_due(self, pb, st: DCDState, k):
        """The periodic gap check costs about one full pass (X w and X^T (alpha y)), while shrinking
        makes late passes visit a few percent of the rows: check once the passes since the last
        check have visited ``certify_work`` n rows, so checking costs about a third of the run at
        most, and a met tolerance is seen within about two full passes' work."""
        if st.work is None:
            return super().certify_due(pb, st, k)
        return st.work >= self.certify_work

    def own_objectives(self, pb) -> bool:
        # alpha is the dual iterate itself: the driver's second candidate, -C s l'(margin), would
        # cost one more X^T u per certificate and, at a pass's end, is almost never the better one
        return not _sharded(pb)

    def objectives(self, pb, st: DCDState, it: Iterate):
        """P(w) from X w and D(alpha) from X^T (alpha y) computed afresh (not the w kept up to
        date by the passes, which drifts by round-off): both exact for the iterate returned."""
        f = pb.op.matvec(it.w)
        primal = primal_objective(pb, it.w, it.b, f)
        alpha = project_dual(pb, it.alpha)  # the box clip (a no-op up to round-off)
        return primal, dual_objective(pb, alpha)[0], alpha, f  # (f: for loop.rescale, no second product)

    def check(self, pb, st: DCDState):
        return jnp.where(st.done, Status.CONVERGED, -1)

    def advice(self, status):
        if status == Status.MAX_ITER:
            # no single measure of the data tells beforehand where the passes run out (docs/auto.md)
            return ("dual CD needs more passes the larger C is (the passes it takes grow about in "
                    "proportion to C); raise max_iter, or try method=svmopt.solvers.alm(precondition=True, "
                    "adapt_mu=True), which certified the hinge where 1000 passes did not (a9a at C = 10 "
                    "and 100, ijcnn1 at C = 100), or on wide data (more features than rows) "
                    "method=svmopt.solvers.dual_newton with init=this result (news20-bin C = 100: 7 steps); "
                    "the default method (auto) hands over to them by itself (svmopt.solvers.auto)")
        return None

    def tighten(self, pb, st: DCDState):
        inf = jnp.asarray(jnp.inf, st.w.dtype)
        # the gap is computed from w, which drifts from X^T (alpha y) by round-off: refresh it
        return st._replace(eps=st.eps / 10.0, done=jnp.asarray(False), active=jnp.ones_like(st.active),
                           Mbar=inf, mbar=-inf, w=pb.op.rmatvec(st.alpha * pb.y))

    def finalize(self, pb, st: DCDState) -> Iterate:
        return Iterate(st.w, jnp.zeros((), st.w.dtype), st.alpha,
                       {"criterion": st.crit, "active": st.n_active, "eps": st.eps})

    def carry(self, pb, st: DCDState) -> Start:
        aux = dict(key=st.key, active=st.active, Mbar=st.Mbar, mbar=st.mbar, eps=st.eps)
        return Start(st.w, jnp.zeros((), st.w.dtype), st.alpha, jnp.asarray(PRIMAL | DUAL, jnp.int32), aux)


# ---------------------------------------------------------------- rows over several devices
def _sharded(pb) -> bool:
    return pb.op.layout == "sharded"  # svmopt.sharding.ShardedOperator


def _sharded_init(method, pb: Problem, start: Start) -> DCDState:
    """Each device builds the records of its own rows; w = sum over devices of X_k^T (alpha y)_k.

    The per-device parts travel in ``table`` with a leading device axis (other fields None)."""
    from ..sharding import map_problem, replicated_specs, specs_like

    def local(pbl, method, start):
        st = DualCD.init(dataclasses.replace(method, variant="serial", impl="xla"), pbl, start)
        blob = jax.tree_util.tree_map(lambda a: a[None], {k: getattr(st, k) for k in LOCAL})
        return st._replace(w=lax.psum(st.w, AXIS), n_active=lax.psum(st.n_active, AXIS), table=blob, work=None,
                           **{k: None for k in LOCAL[1:]})

    return map_problem(local, pb, (method, start), (replicated_specs(method), specs_like(start, pb.n)),
                       passes.sharded_specs())


dual_cd = DualCD()
"""Dual coordinate descent (Hsieh et al. 2008, LIBLINEAR's -s 1 / -s 3) with its defaults."""


