"""Rows of X spread over devices and hosts: data-parallel solves with JAX's own runtime.

Every linear solver touches X only through the operator interface (``svmopt.operators``).
``ShardedOperator`` implements that interface for X split by rows over a 1-D mesh axis
``"rows"``: with D devices and n = D m rows (zero-weight padding rows make n a multiple
of D), device k holds rows [k m, (k+1) m) as its own dense block or CSR block (the CSR
blocks are padded to a common number of stored entries). Under ``jax.shard_map``:

    matvec(w)        X w      each device its m rows, no communication     (n,) sharded by rows
    rmatvec(u)       X^T u    each device its part, one all-reduce (psum)   (d,) replicated
    fused(w, f, a)   X^T g, sum(s): one all-reduce of d + 1 numbers
    row_sq_norms, row_inf_norms: local;  col_sq_norms: one all-reduce of d numbers

The labels, weights and every other length-n vector of a solve are sharded the same way,
w stays replicated, and the remaining reductions over rows (a loss sum, a dot product of
two n-vectors) are scalar all-reduces that XLA's partitioner inserts. Nothing gathers X.

Several hosts run the same program (SPMD): after ``jax.distributed.initialize(...)`` each
process calls ``shard_rows(X_local, y_local, process_local=True)`` with only its own rows
(``svmopt.load_svmlight(path, shard=(jax.process_index(), jax.process_count()))`` reads
only its share of a file) and then the same ``solve``; every process gets the same w.
On CPU, JAX's collectives across processes need ``jax.config.update(
"jax_cpu_collectives_implementation", "gloo")`` before ``initialize``.
"""
from __future__ import annotations

import math
import numpy as np
import scipy.sparse as sp

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

from .checks import check_devices
from .operators import DenseOperator, SparseOperator

__all__ = ["shard_rows", "ShardedOperator", "row_mesh", "is_sharded", "AXIS", "rows_and_labels", "encode", "one_vs_rest",
           "map_problem", "problem_specs", "replicated_specs", "specs_like"]

AXIS = "rows"
"""Name of the mesh axis the rows are split over (``row_mesh``; ``PartitionSpec(AXIS)`` shards by rows)."""


def row_mesh(devices=None) -> Mesh:
    """A 1-D mesh with axis ``"rows"`` over ``devices`` (default: every device of every process)."""
    devices = check_devices(list(jax.devices()) if devices is None else devices)
    return Mesh(np.array(devices), (AXIS,))


def _local_positions(mesh: Mesh):
    """(mesh position, device) of this process's devices, in mesh order."""
    me = jax.process_index()
    return [(k, d) for k, d in enumerate(mesh.devices.flat) if d.process_index == me]


@jax.tree_util.register_pytree_node_class
class ShardedOperator:
    """X (n x d) split by rows over ``mesh`` (axis ``"rows"``); the operator interface of
    ``svmopt.operators`` with one all-reduce per X^T u. Build it with ``shard_rows``.

    parts (arrays, sharded by rows):
      dense:  X (n, d)
      sparse: data, indices, row_ids (D z,)  each device's CSR block padded to z entries
              (padding: value 0, column 0, last local row); row_ids are local (0..m-1)
              indptr (D (m+1),)                each block's own row pointers
    """

    layout = "sharded"

    def __init__(self, parts: dict, shape, mesh: Mesh, kind: str):
        self.parts = parts
        self._shape = tuple(int(s) for s in shape)
        self.mesh = mesh
        self.kind = kind

    def tree_flatten(self):
        keys = tuple(sorted(self.parts))
        return tuple(self.parts[k] for k in keys), (keys, self._shape, self.mesh, self.kind)

    @classmethod
    def tree_unflatten(cls, aux, children):
        keys, shape, mesh, kind = aux
        return cls(dict(zip(keys, children)), shape, mesh, kind)

    # -- shape and size
    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return (self.parts["X"] if self.kind == "dense" else self.parts["data"]).dtype

    @property
    def n_devices(self) -> int:
        return int(self.mesh.shape[AXIS])

    @property
    def n_local(self) -> int:
        """Rows per device, m."""
        return self._shape[0] // self.n_devices

    @property
    def nnz(self) -> int:
        """Stored entries per device (padded) times devices."""
        return int(self.parts["data"].shape[0]) if self.kind == "sparse" else self._shape[0] * self._shape[1]

    @property
    def nbytes(self) -> int:
        if self.kind == "dense":
            return self._shape[0] * self._shape[1] * self.dtype.itemsize
        return self.nnz * (self.dtype.itemsize + 4)

    def row_sharding(self) -> NamedSharding:
        """The sharding of a length-n vector of this operator's rows."""
        return NamedSharding(self.mesh, P(AXIS))

    def replicated(self) -> NamedSharding:
        return NamedSharding(self.mesh, P())

    # -- the local block (inside shard_map)
    def local(self, parts):
        """The device's own block as a plain operator (call inside ``shard_map``)."""
        if self.kind == "dense":
            return DenseOperator(parts["X"])
        return SparseOperator(parts["data"], parts["indices"], parts["row_ids"], parts["indptr"],
                              (self.n_local, self._shape[1]))

    def map(self, fn, args=(), in_specs=(), out_specs=P()):
        """``fn(local_operator, *args)`` on every device (``shard_map`` over the rows)."""
        body = lambda parts, *a: fn(self.local(parts), *a)  # noqa: E731
        specs = {k: P(AXIS) for k in self.parts}
        return jax.shard_map(body, mesh=self.mesh, in_specs=(specs, *in_specs), out_specs=out_specs,
                             check_vma=False)(self.parts, *args)

    # -- the operator interface
    def matvec(self, w):
        return self.map(lambda op, w: op.matvec(w), (w,), (P(),), P(AXIS))

    def rmatvec(self, u):
        return self.map(lambda op, u: lax.psum(op.rmatvec(u), AXIS), (u,), (P(AXIS),), P())

    def fused(self, w, f, aux=()):
        """X^T g and sum(s) with (g, s) = f(X w, *aux) row by row; ``aux`` are length-n vectors."""
        def body(op, w, *a):
            g, s = op.fused(w, f, a)
            return lax.psum(g, AXIS), lax.psum(s, AXIS)
        return self.map(body, (w, *aux), (P(),) + (P(AXIS),) * len(aux), (P(), P()))

    def row_sq_norms(self):
        return self.map(lambda op: op.row_sq_norms(), (), (), P(AXIS))

    def abs_matvec(self, w):
        return self.map(lambda op, w: op.abs_matvec(w), (w,), (P(),), P(AXIS))

    def row_inf_norms(self):
        return self.map(lambda op: op.row_inf_norms(), (), (), P(AXIS))

    def col_sq_norms(self):
        return self.map(lambda op: lax.psum(op.col_sq_norms(), AXIS), (), (), P())

    def sq_rmatvec(self, D):
        return self.map(lambda op, D: lax.psum(op.sq_rmatvec(D), AXIS), (D,), (P(AXIS),), P())

    def walks_rows(self) -> bool:
        return False

    def dense(self):
        """X as a dense (n, d) array sharded by rows (sparse blocks are scattered on each device)."""
        if self.kind == "dense":
            return self.parts["X"]
        return self.map(lambda op: _local_dense(op), (), (), P(AXIS))

    def rows(self, idx):
        return self.dense()[idx]

    def csr(self):
        raise NotImplementedError("a sharded X has no single CSR; solvers use its blocks inside shard_map")

    # -- conversions
    def astype(self, dtype) -> "ShardedOperator":
        dtype = jnp.dtype(dtype)
        if self.dtype == dtype:
            return self
        key = "X" if self.kind == "dense" else "data"
        return ShardedOperator({**self.parts, key: self.parts[key].astype(dtype)}, self._shape, self.mesh,
                               self.kind)

    def with_column(self, value: float) -> "ShardedOperator":
        """X with a constant column ``value`` appended on every row (LIBLINEAR's bias feature)."""
        n, d = self._shape
        m = self.n_local
        if self.kind == "dense":
            X = self.parts["X"]
            return ShardedOperator({"X": _concat_column(X, value)}, (n, d + 1), self.mesh, "dense")

        def add(parts):  # one entry (column d) at the end of every local row: a new CSR block
            z = parts["data"].shape[0]
            ptr = parts["indptr"]
            new_ptr = ptr + jnp.arange(m + 1, dtype=ptr.dtype)
            # old entry j of row r moves to j + r; the new entry of row r sits at new_ptr[r + 1] - 1
            pos = jnp.arange(z, dtype=ptr.dtype)
            live = pos < ptr[-1]
            dest = jnp.where(live, pos + parts["row_ids"], z + m)  # padding entries go past the end
            size = z + m
            data = jnp.zeros((size,), parts["data"].dtype).at[dest].set(parts["data"], mode="drop")
            idx = jnp.zeros((size,), parts["indices"].dtype).at[dest].set(parts["indices"], mode="drop")
            rid = jnp.full((size,), m - 1, parts["row_ids"].dtype).at[dest].set(parts["row_ids"], mode="drop")
            last = new_ptr[1:] - 1
            data = data.at[last].set(value)
            idx = idx.at[last].set(d)
            rid = rid.at[last].set(jnp.arange(m, dtype=rid.dtype))
            return dict(data=data, indices=idx, row_ids=rid, indptr=new_ptr)

        specs = {k: P(AXIS) for k in self.parts}
        parts = jax.jit(jax.shard_map(add, mesh=self.mesh, in_specs=(specs,), out_specs=specs))(self.parts)
        return ShardedOperator(parts, (n, d + 1), self.mesh, "sparse")


def _concat_column(X, value):
    col = jnp.full((X.shape[0], 1), value, X.dtype)
    return jax.jit(lambda X, c: jnp.concatenate([X, c], axis=1), out_shardings=X.sharding)(X, col)


def _local_dense(op):
    n, d = op.shape
    return jnp.zeros((n, d), op.dtype).at[op.row_ids, op.indices].add(op.data)


def is_sharded(x) -> bool:
    """True for a ShardedOperator and for a jax.Array sharded by rows over several devices."""
    if isinstance(x, ShardedOperator):
        return True
    if isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer):
        s = x.sharding
        return (isinstance(s, NamedSharding) and len(s.device_set) > 1 and len(s.spec) > 0
                and s.spec[0] is not None)
    return False


def as_sharded_operator(X) -> ShardedOperator:
    """A ShardedOperator from itself or from a dense jax.Array sharded by rows (1-D mesh)."""
    if isinstance(X, ShardedOperator):
        return X
    s = X.sharding
    axes = s.spec[0] if isinstance(s.spec[0], tuple) else (s.spec[0],)
    if X.ndim != 2 or len(axes) != 1 or any(a is not None for a in s.spec[1:]):
        raise ValueError(f"a sharded X must be 2-D and split by rows only (PartitionSpec('rows', None)), got "
                         f"shape {X.shape} with {s.spec}")
    mesh = s.mesh
    if mesh.axis_names != (axes[0],) or axes[0] != AXIS:
        # re-express the same device order on our 1-D mesh (same placement: no data moves)
        mesh = Mesh(np.array(s.mesh.devices).reshape(-1), (AXIS,))
        if mesh.size != int(s.mesh.shape[axes[0]]):
            raise ValueError("X must be sharded by rows over a 1-D mesh (every device holds a block of rows)")
        X = jax.device_put(X, NamedSharding(mesh, P(AXIS)))
    return ShardedOperator({"X": X}, X.shape, mesh, "dense")


# ---------------------------------------------------------------------------------- building
def _global_array(mesh, blocks: dict, shape):
    """A global array of ``shape`` from this process's per-device blocks (mesh position -> numpy)."""
    sharding = NamedSharding(mesh, P(AXIS))
    arrays = [jax.device_put(blocks[k], d) for k, d in _local_positions(mesh)]
    return jax.make_array_from_single_device_arrays(shape, sharding, arrays)


def _allgather(values):
    """Stack ``values`` (a 1-D int array, same length everywhere) from every process: (P, len)."""
    values = np.asarray(values, np.int64)
    if jax.process_count() == 1:
        return values[None]
    from jax.experimental import multihost_utils
    return np.asarray(multihost_utils.process_allgather(values)).reshape(jax.process_count(), -1)


def _float_dtype(dtype, src):
    if dtype is not None:
        return jnp.dtype(dtype)
    if np.issubdtype(np.dtype(src), np.floating) and np.dtype(src).itemsize == 8 and jax.config.jax_enable_x64:
        return jnp.dtype(jnp.float64)
    return jnp.dtype(jnp.float32)


def shard_rows(X, y, sample_weight=None, *, devices=None, process_local: bool = False, dtype=None):
    """Split X and y by rows over ``devices`` for a data-parallel solve.

    X: (n, d) numpy / jax array or scipy.sparse matrix; y: (n,) numeric labels;
    sample_weight: optional (n,) weights. Every device gets m = ceil(n / D) rows; the rows
    past n are padding: zero rows of X with label NaN and weight 0, which every solver
    ignores (``solve`` gives a NaN label weight 0).

    devices        the devices to use (default: all devices of all processes)
    process_local  X, y hold only this process's rows (multi-host, after
                   ``jax.distributed.initialize``): the processes agree on m (the largest
                   ceil(n_p / local devices)) and d (the largest d_p: a shard of a LIBSVM file
                   may not see the last column), each pads its own rows, and the global row
                   order is process 0's rows, then process 1's, ... (padding inside)
    dtype          of X (default: float64 for float64 input with x64 enabled, else float32)

    Returns (X, y) or, with ``sample_weight``, (X, y, sample_weight): X is a dense jax.Array
    with a row ``NamedSharding`` (dense input) or a ``ShardedOperator`` (sparse input); y and
    the weights are jax arrays sharded the same way. Pass them to ``svmopt.solve`` /
    ``solve_multiclass`` as X, y (and ``sample_weight``).
    """
    mesh = row_mesh(devices if devices is not None else
                    (jax.devices() if process_local or jax.process_count() > 1 else jax.local_devices()))
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        X.sum_duplicates()
        X.sort_indices()
    elif not isinstance(X, np.ndarray):
        X = np.asarray(X)
    if X.ndim != 2:
        raise ValueError(f"X must be 2-D (n_samples, n_features), got shape {X.shape}")
    y = np.asarray(y)
    if y.ndim != 1 or y.shape[0] != X.shape[0]:
        raise ValueError(f"shape mismatch: X has {X.shape[0]} rows but y has shape {y.shape}")
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise TypeError(f"shard_rows needs numeric labels, got dtype {y.dtype}; map them to numbers first "
                        "(classes, y = np.unique(y, return_inverse=True))")
    if sample_weight is not None:
        sample_weight = np.asarray(sample_weight, float)
        if sample_weight.shape != y.shape:
            raise ValueError(f"shape mismatch: sample_weight has shape {sample_weight.shape}, expected {y.shape}")
    dt = _float_dtype(dtype, X.dtype)
    local = _local_positions(mesh)
    D, L = mesh.size, len(local)
    n, d = X.shape
    if process_local:
        counts = _allgather([n, d, L])
        m = max(1, max(math.ceil(c[0] / max(c[2], 1)) for c in counts))
        d = int(counts[:, 1].max())
        starts = {k: i * m for i, (k, _) in enumerate(local)}  # this process's rows for each device
    else:
        m = max(1, math.ceil(n / D))
        starts = {k: k * m for k, _ in local}
    N = D * m

    def rows(a, k, fill):
        lo = min(starts[k], a.shape[0])
        hi = min(starts[k] + m, a.shape[0])
        part = a[lo:hi]
        if hi - lo < m:
            part = np.concatenate([part, np.full((m - (hi - lo),) + a.shape[1:], fill, part.dtype)])
        return part

    ydt = np.float64 if jax.config.jax_enable_x64 else np.float32
    y_out = _global_array(mesh, {k: rows(y.astype(ydt), k, np.nan) for k, _ in local}, (N,))
    w_out = None
    if sample_weight is not None:
        w_out = _global_array(mesh, {k: rows(sample_weight.astype(ydt), k, 0.0) for k, _ in local}, (N,))
    if sp.issparse(X):
        X_out = _sparse_blocks(X, mesh, local, starts, m, d, dt)
    else:
        Xn = np.asarray(X, dt)
        if Xn.shape[1] < d:
            Xn = np.concatenate([Xn, np.zeros((n, d - Xn.shape[1]), dt)], axis=1)
        X_out = _global_array(mesh, {k: rows(Xn, k, 0) for k, _ in local}, (N, d))
    return (X_out, y_out) if w_out is None else (X_out, y_out, w_out)


def _sparse_blocks(A, mesh, local, starts, m, d, dt) -> ShardedOperator:
    """Per-device CSR blocks of rows [start, start + m) of A, padded to a common entry count."""
    n = A.shape[0]
    blocks = {}
    for k, _ in local:
        lo, hi = min(starts[k], n), min(starts[k] + m, n)
        B = A[lo:hi]
        ptr = np.concatenate([B.indptr, np.full(m - (hi - lo), B.indptr[-1], B.indptr.dtype)]).astype(np.int32)
        blocks[k] = (np.asarray(B.data, dt), B.indices.astype(np.int32), ptr)
    z_local = max([b[0].shape[0] for b in blocks.values()] + [0])
    z = int(max(1, _allgather([z_local]).max()))
    data, idx, rid, ptr = {}, {}, {}, {}
    for k, (v, c, p) in blocks.items():
        pad = z - v.shape[0]
        data[k] = np.concatenate([v, np.zeros(pad, dt)])
        idx[k] = np.concatenate([c, np.zeros(pad, np.int32)])
        r = np.repeat(np.arange(m, dtype=np.int32), np.diff(p))
        rid[k] = np.concatenate([r, np.full(pad, m - 1, np.int32)])
        ptr[k] = p
    D = mesh.size
    parts = dict(data=_global_array(mesh, data, (D * z,)), indices=_global_array(mesh, idx, (D * z,)),
                 row_ids=_global_array(mesh, rid, (D * z,)), indptr=_global_array(mesh, ptr, (D * (m + 1),)))
    return ShardedOperator(parts, (D * m, d), mesh, "sparse")


# ---------------------------------------------------------------------------------- labels and checks
def global_unique(y) -> np.ndarray:
    """The distinct finite labels of a row-sharded y over every process (NaN = padding)."""
    vals = [np.asarray(s.data) for s in y.addressable_shards]
    local = np.unique(np.concatenate(vals)) if vals else np.zeros(0)
    local = local[np.isfinite(local)]
    if jax.process_count() == 1:
        return local
    from jax.experimental import multihost_utils
    size = int(_allgather([local.size]).max())
    pad = np.concatenate([local, np.full(size - local.size, np.nan)])
    allv = np.asarray(multihost_utils.process_allgather(pad)).ravel()
    return np.unique(allv[np.isfinite(allv)])


def put_rows(v, op: ShardedOperator):
    """A length-n vector (numpy or jax) placed with the operator's row sharding."""
    if isinstance(v, jax.Array) and v.sharding == op.row_sharding():
        return v
    if isinstance(v, jax.Array) and not v.is_fully_addressable:
        return jax.jit(lambda a: a, out_shardings=op.row_sharding())(v)
    return jax.device_put(np.asarray(v), op.row_sharding())


@jax.jit
def _finite_report(X, y, s):
    bad_x = jnp.any(~jnp.isfinite(X)) if X is not None else False
    return bad_x, jnp.any(jnp.isinf(y)), jnp.any(~jnp.isfinite(s) | (s < 0)), jnp.sum(s > 0)


def check_rows(op: ShardedOperator, y, s):
    """Eager checks of sharded data, computed where the data lives (no gather)."""
    Xv = op.parts["X"] if op.kind == "dense" else op.parts["data"]
    bad_x, bad_y, bad_s, live = (bool(np.asarray(v)) if i < 3 else int(np.asarray(v))
                                 for i, v in enumerate(_finite_report(Xv, y, s)))
    if bad_x:
        raise ValueError("X contains NaN or inf")
    if bad_y:
        raise ValueError("y contains inf")
    if bad_s:
        raise ValueError("sample_weight must be finite and >= 0")
    if live == 0:
        raise ValueError("every row weighs 0 (sample_weight, or all labels NaN): nothing to train on")


def specs_like(tree, n: int, rows=P(AXIS)):
    """PartitionSpecs for a pytree: leaves whose first axis has length n are rows, others replicated."""
    return jax.tree_util.tree_map(lambda a: rows if (jnp.ndim(a) >= 1 and jnp.shape(a)[0] == n) else P(), tree)



# ---------------------------------------------------------------------------------- problems
def rows_and_labels(X, y, sample_weight, dtype):
    """(operator, y, s, classes) of row-sharded data; y keeps the user's label values (NaN: padding)."""
    op = as_sharded_operator(X).astype(dtype)
    n = op.shape[0]
    if isinstance(y, (list, tuple)) or (not isinstance(y, jax.Array) and np.asarray(y).dtype == object):
        y = np.asarray(y, float)
    if jnp.ndim(y) != 1 or jnp.shape(y)[0] != n:
        raise ValueError(f"shape mismatch: X has {n} rows (padding included) but y has shape {jnp.shape(y)}")
    if not (isinstance(y, jax.Array) or np.issubdtype(np.asarray(y).dtype, np.number)):
        raise TypeError("a sharded solve needs numeric labels (see svmopt.shard_rows)")
    y = put_rows(jnp.asarray(y, dtype) if not isinstance(y, jax.Array) else y.astype(dtype), op)
    if sample_weight is None:
        s = jax.jit(lambda y: jnp.where(jnp.isnan(y), 0.0, 1.0).astype(dtype))(y)
    else:
        if jnp.shape(sample_weight) != (n,):
            raise ValueError(f"shape mismatch: sample_weight has shape {jnp.shape(sample_weight)}, expected ({n},)")
        sw = put_rows(sample_weight, op)
        s = jax.jit(lambda y, w: jnp.where(jnp.isnan(y), 0.0, w).astype(dtype))(y, sw)
    check_rows(op, y, s)
    return op, y, s, global_unique(y)


def encode(y, positive, dtype):
    """+1 where y == positive, -1 elsewhere (a sharded y stays sharded)."""
    return jax.jit(lambda y: jnp.where(y == positive, 1.0, -1.0).astype(dtype))(y)


def problem_specs(pb):
    """PartitionSpecs of a Problem over sharded rows: X's parts, y, s and per-row loss leaves by rows."""
    n = pb.n
    return pb.replace(op=jax.tree_util.tree_map(lambda _: P(AXIS), pb.op), y=P(AXIS), s=P(AXIS), C=P(),
                      loss=specs_like(pb.loss, n), reg=specs_like(pb.reg, n))


def map_problem(fn, pb, args=(), arg_specs=(), out_specs=P()):
    """``fn(local_problem, *args)`` on every device (``shard_map`` over the rows of ``pb``).

    The local problem holds the device's m rows: its operator is the plain local block, so
    a solver's own per-row code runs unchanged; ``fn`` does its cross-device reductions
    (``lax.psum(..., AXIS)``) itself.
    """
    op = pb.op

    def body(pbl, *a):
        return fn(pbl.replace(op=op.local(pbl.op.parts)), *a)

    return jax.shard_map(body, mesh=op.mesh, in_specs=(problem_specs(pb), *arg_specs), out_specs=out_specs,
                         check_vma=False)(pb, *args)


def replicated_specs(tree):
    """PartitionSpecs that replicate every leaf of ``tree``."""
    return jax.tree_util.tree_map(lambda _: P(), tree)


def one_vs_rest(y, classes, dtype, op: ShardedOperator):
    """Y (K, n): row k is +1 where y == classes[k], else -1, sharded by rows like y."""
    return jax.jit(lambda y, c: jnp.where(y[None, :] == c[:, None], 1.0, -1.0).astype(dtype),
                   out_shardings=NamedSharding(op.mesh, P(None, AXIS)))(y, jnp.asarray(classes, y.dtype))
