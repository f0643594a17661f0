"""One plan for every entry point: what to solve, validated, and how to run it.

Every entry point (``solve`` with one C or a grid, ``path``, ``solve_multiclass`` one-vs-rest,
one-vs-one and Crammer-Singer, the ranking SVMs, the estimators and the command line through them,
and a solve traced inside a user's ``jit`` / ``vmap`` / ``grad``) builds a ``Plan`` here, hands it to
the one stage runner (``svmopt.stages.run``) and turns what comes back into a Result
(``svmopt.finish``). A plan holds:

* the validated data as an operator, the targets and their mapping back (``classes``),
* the ``Problem`` (its batched leaves carry a leading axis of ``size``: C for a grid, the labels
  for one-vs-rest, the data for one-vs-one; ``axes`` marks them),
* the method, or auto's first method and its ``Handover`` (``svmopt.solvers.auto``),
* the start, the iteration cap, row buckets, devices and the batch mode.

The data become a Problem in ``svmopt.prepare`` (targets mapped in one step, rows bucketed, the
working dtype); nothing in the plan assumes labels in {-1, +1}.
"""
from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import scipy.sparse as sp

import jax
import jax.numpy as jnp

from . import driver, sharding
from .checks import (as_matrix, check_bool, check_C, check_choice, check_devices, check_finite_X, check_int,
                     check_labels, check_number, check_verbose, check_weights, concrete, is_operator, resolve_dtype)
from .kernels import Kernel, gram_rows, is_gram
from .prepare import (bucket_rows, build_problem, cast, check_pieces, kernel_input, label_name, prepare, problem_data,
                      targets)
from .losses import Loss
from .operators import as_operator
from .problem import Problem
from .result import Result
from .solvers.auto import Auto, auto
from .solvers.base import DUAL, PRIMAL, RESUME, Method, Start

__all__ = ["Plan", "configure", "check_run_args", "prepare", "binary", "one_vs_rest", "crammer_singer", "one_vs_one",
           "oneclass", "ordinal", "traced", "make_start", "bucket_rows", "batch_axes", "targets", "label_name"]


@dataclasses.dataclass
class Plan:
    """A validated problem (or batch of problems) and how to run it (module docstring)."""

    pb: Problem
    method: Method
    start: Start
    max_iter: int
    handover: Any = None  # svmopt.solvers.auto.Handover, or None
    axes: Any = None  # vmap axes of pb's batched leaves (a Problem of 0 / None); None: one problem
    size: int = 1
    labels: tuple = ()  # a name per problem, for progress lines and notes
    n: int = 0  # the user's rows (pb.n is a bucket >= n)
    classes: Any = None
    intercept_scaling: float | None = None
    C: Any = 1.0  # as the Result reports it
    why: str | None = None  # auto's reason
    devices: Any = None
    batch: str = "auto"
    traced: bool = False
    X: Any = None  # the rows a kernel model keeps as support vectors (kernel_input)
    task: str = "binary"  # binary | grid | ovr | ovo | ordinal | regression | oneclass | crammer_singer
    extra: dict = dataclasses.field(default_factory=dict)  # what a task's finish needs (pairs, Y, ...)
    model_kernel: Any = None  # the kernel the model predicts with, where it differs from pb.kernel

    @property
    def kernel(self):
        """The kernel of the trained model (None: a linear primal model)."""
        return self.model_kernel if self.model_kernel is not None else self.pb.kernel

    def problem(self, k: int) -> Problem:
        """The k-th problem of a batch (the plan's problem when it holds one)."""
        return self.pb if self.axes is None else driver.take(self.pb, self.axes, k)


# ---------------------------------------------------------------------------------- arguments
def configure(method, tol, method_params) -> Method | Auto:
    """``method`` (a solver, its name "auto", or auto) with ``tol`` and extra keywords applied."""
    if isinstance(method, str) and method == "auto":
        method = auto
    if isinstance(method, Auto):
        if method_params:
            raise TypeError(f"method='auto' takes only tol; {sorted(method_params)} are parameters of a specific "
                            "method: pass it, e.g. method=svmopt.solvers.alm(rho=1.1)")
        return method if tol is None else method(tol=_tol(tol))
    if not isinstance(method, Method):
        raise TypeError(f"method must be an svmopt solver (e.g. svmopt.solvers.alm) or 'auto', got {method!r:.60}")
    if tol is not None:
        method_params = {**method_params, "tol": _tol(tol)}
    method = method(**method_params) if method_params else method
    _tol(method.tol)
    return method


def _tol(t):
    c = concrete(t)
    if c is not None and not (np.ndim(c) == 0 and not isinstance(c, (bool, np.bool_, str))
                              and np.issubdtype(np.asarray(c).dtype, np.number) and 0 < float(c) < 1):
        raise (TypeError if isinstance(c, str) else ValueError)(
            f"tol (the relative duality gap to certify) must be a number in (0, 1), got {t!r}")
    return t


def check_run_args(*, history=False, record_every=1, verbose=False, throw=False, fit_intercept=True,
                   intercept_scaling=None, layout="auto", bucket=True, max_iter=None, batch="auto", devices=None):
    """The switches every entry point takes, checked once (their values come back normalized)."""
    check_bool(history, "history")
    check_bool(throw, "throw")
    check_bool(fit_intercept, "fit_intercept")
    check_bool(bucket, "bucket")
    check_choice(layout, "layout", ("auto", "sparse", "dense"))
    check_choice(batch, "batch", ("auto", "loop", "vmap"))
    check_number(intercept_scaling, "intercept_scaling", low=0, allow_none=True)
    return dict(record_every=check_int(record_every, "record_every"), verbose=check_verbose(verbose),
                max_iter=check_int(max_iter, "max_iter", allow_none=True), devices=check_devices(devices))


# ---------------------------------------------------------------------------------- targets
def choose(method, pb: Problem, kernel=None, rows=None):
    """(method to run, hand-over or None, why): ``auto`` picks one for this problem
    (``svmopt.solvers.auto``; ``rows``: the user's, before the bucket's padding); any other method
    runs as given."""
    if not isinstance(method, Auto):
        return method, None, None
    probe = pb if kernel is None else pb.replace(kernel=cast(kernel, pb.dtype))
    chosen, why = method.choose(probe, rows)
    return chosen, method.handover(probe, chosen, rows), why


def bind(pb: Problem, method: Method, kernel, max_iter):
    """Attach a kernel, let the method validate the problem, resolve max_iter."""
    if kernel is not None:
        if not isinstance(kernel, Kernel):
            raise TypeError(f"kernel must be an svmopt.kernels.Kernel (e.g. rbf(gamma=0.1)), got {kernel!r:.60}")
        if not getattr(method, "supports_kernel", False):
            raise ValueError(f"method {method.name} is linear; for kernel={kernel!r} use method=alfpgm or nesvm")
        pb = pb.replace(kernel=cast(kernel, pb.dtype))
    method.validate(pb)
    if max_iter is None:
        max_iter = method.default_max_iter(pb)
    mi = concrete(max_iter)
    if mi is not None and not (isinstance(mi, (int, np.integer)) and not isinstance(mi, bool) and mi >= 1):
        raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
    return pb, (int(mi) if mi is not None else max_iter)


def batch_axes(pb: Problem, **batched):
    """vmap in_axes for a Problem: 0 for the named fields, None elsewhere."""
    none = jax.tree_util.tree_map(lambda _: None, pb)
    return none.replace(**batched)


def make_start(init, method: Method, pb: Problem, intercept_scaling=None, n_user=None) -> Start:
    """A ``Start`` from ``init``: None, an earlier Result, (w, b), or {"w", "b", "alpha"}.

    A Result of the same method on a problem of the same shape resumes exactly (its carried
    state); otherwise its w, b and dual alpha are a warm start.
    """
    cold = driver.cold_start(method, pb)
    if init is None:
        return cold
    dt = pb.dtype
    if isinstance(init, Result):
        st = init.state
        if st is not None and init.method == method.name and _same_shapes(st, cold):
            return Start(*(cast(v, dt) for v in st[:3]), jnp.asarray(st.level | RESUME, jnp.int32),
                         cast(st.aux, dt))
        alpha = init.extras.get("alpha") if isinstance(init.extras, dict) else None
        init = {"w": init.w, "b": init.b, "alpha": alpha}
    if isinstance(init, tuple) and len(init) == 2:
        init = {"w": init[0], "b": init[1]}
    if not isinstance(init, dict):
        raise TypeError("init must be a Result, a (w, b) pair or a dict with 'w', 'b' and/or 'alpha', "
                        f"got {type(init).__name__}")
    unknown = set(init) - {"w", "b", "alpha"}
    if unknown:
        raise TypeError(f"init has unknown keys {sorted(unknown)}; it takes 'w', 'b', 'alpha'")
    w, b, alpha, level = cold.w, cold.b, cold.alpha, 0
    if init.get("w") is not None:
        wv = jnp.asarray(init["w"], dt).ravel()
        bv = jnp.asarray(0.0 if init.get("b") is None else init["b"], dt).reshape(())
        d_user = pb.d - (1 if intercept_scaling is not None else 0)
        if pb.kernel is None and wv.shape[0] != d_user:
            raise ValueError(f"init w has {wv.shape[0]} entries; the problem has {d_user} features")
        if intercept_scaling is not None:
            wv, bv = jnp.concatenate([wv, (bv / intercept_scaling)[None]]), jnp.zeros((), dt)
        if pb.kernel is None:
            w, b, level = wv, bv, level | PRIMAL
    if init.get("alpha") is not None:
        a = jnp.asarray(init["alpha"], dt).ravel()
        if a.shape[0] not in (pb.n, n_user):
            raise ValueError(f"init alpha has {a.shape[0]} entries; the problem has {n_user or pb.n} rows")
        alpha = jnp.zeros((pb.n,), dt).at[: a.shape[0]].set(a) * (pb.s > 0)
        level |= DUAL
    return Start(w, b, alpha, jnp.asarray(level, jnp.int32), cold.aux)


def _same_shapes(a, b) -> bool:
    la, ta = jax.tree_util.tree_flatten(a)
    lb, tb = jax.tree_util.tree_flatten(b)
    return ta == tb and all(np.shape(x) == np.shape(z) for x, z in zip(la, lb))


def _broadcast(start: Start, size: int) -> Start:
    return jax.tree_util.tree_map(lambda a: jnp.broadcast_to(a, (size,) + jnp.shape(a)), start)


def _ready(method, pb, kernel, max_iter, *, allow_handover: bool, rows=None):
    """(problem with its kernel, canonical method, hand-over, why, cap) for a configured method."""
    chosen, handover, why = choose(method, pb, kernel, rows)
    if not allow_handover or max_iter is not None:  # a caller's max_iter keeps the first method alone
        handover = None
    pb, cap = bind(pb, chosen, kernel, max_iter)
    return pb, chosen.canonical(pb.dtype), handover, why, cap


# ---------------------------------------------------------------------------------- plans
def binary(X, y, *, loss, reg, method, C=1.0, fit_intercept=True, intercept_scaling=None, sample_weight=None,
           max_iter=None, dtype=None, layout="auto", bucket=True, kernel=None, init=None, devices=None,
           batch="auto") -> Plan:
    """One binary problem, or a grid over C (``C`` 1-D): the plan of ``svmopt.solve``. A loss of the
    residual (``Loss.needs_targets``) makes it a regression on real targets y."""
    task = "regression" if isinstance(loss, Loss) and loss.needs_targets else "binary"
    X, keep, kernel, model_kernel = kernel_input(X, kernel)
    if not sharding.is_sharded(X):
        X = as_matrix(X)
    n = X.shape[0]
    if devices is not None and np.ndim(C) == 0 and kernel is None and task == "binary":  # rows over devices
        X, y, sample_weight = sharding.shard_rows(X, y, np.ones(n) if sample_weight is None else sample_weight,
                                                  devices=devices, dtype=dtype)
    if task == "regression" and sharding.is_sharded(X):
        raise ValueError("a regression on row-sharded X is not supported yet; pass X on one device")
    pb, _, classes, C_arr, n = problem_data(X, y, task, loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                                     intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype,
                                     layout=layout, bucket=bucket and kernel is None)
    pb, method, handover, why, cap = _ready(method, pb, kernel, max_iter, allow_handover=True, rows=n)
    common = dict(n=n, classes=classes, intercept_scaling=intercept_scaling, why=why, handover=handover,
                  devices=devices, batch=batch, X=keep if kernel is not None else None, model_kernel=model_kernel)
    if C_arr.ndim == 0:
        start = make_start(init, method, pb, intercept_scaling, n)
        return Plan(pb, method, start, cap, C=C, labels=("",), task=task, **common)
    start = make_start(init, method, pb, intercept_scaling, n)
    grid = pb.replace(C=jnp.asarray(C_arr, pb.dtype))
    return Plan(grid, method, _broadcast(start, C_arr.size), cap, axes=batch_axes(pb, C=0), size=C_arr.size,
                labels=tuple(f"C={c:g}" for c in C_arr), C=C_arr, task="grid" if task == "binary" else task,
                **common)


def one_vs_rest(X, y, *, loss, reg, method, C=1.0, fit_intercept=True, intercept_scaling=None, sample_weight=None,
                max_iter=None, dtype=None, layout="auto", kernel=None, devices=None, batch="auto", init=None) -> Plan:
    """K problems "class k against the rest" sharing X, s and C: the labels are the batched leaf.
    ``init``: a MulticlassResult or {"w": (K, d), "b": (K,), "alpha": (K, n)}, a warm start per class."""
    if np.ndim(C) != 0:
        raise ValueError(f"solve_multiclass takes a scalar C, got shape {np.shape(C)}; "
                         "loop over C or use svmopt.solve for a binary grid")
    if kernel is not None and sharding.is_sharded(X):
        raise ValueError("a kernel one-vs-rest needs X on one device; row-sharded X is for linear methods")
    X, keep, kernel, model_kernel = kernel_input(X, kernel)
    pb, Y, classes, _, n = problem_data(X, y, "ovr", loss=loss, reg=reg, C=C, fit_intercept=fit_intercept,
                                 intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype,
                                 layout=layout, bucket=kernel is None)
    pb, method, handover, why, cap = _ready(method, pb, kernel, max_iter,
                                            allow_handover=not sharding.is_sharded(X), rows=n)
    K = len(classes)
    if init is None:
        start = _broadcast(make_start(None, method, pb), K)
    else:
        start = _per_class_start(init, method, pb, intercept_scaling, n, K)
    batched = pb.replace(y=Y if isinstance(Y, jax.Array) else jnp.asarray(Y, pb.dtype))
    return Plan(batched, method, start, cap, handover=handover, axes=batch_axes(pb, y=0), size=K,
                labels=tuple(label_name(c) for c in classes), n=n, classes=classes,
                intercept_scaling=intercept_scaling, C=C, why=why, devices=devices, batch=batch,
                X=keep if kernel is not None else None, task="ovr", extra=dict(Y=Y), model_kernel=model_kernel)


def _per_class_start(init, method, pb, intercept_scaling, n, K) -> Start:
    """K warm starts stacked (one per class) from a MulticlassResult or a dict of (K, ...) arrays."""
    if isinstance(init, Result):
        alpha = init.extras.get("alpha") if isinstance(init.extras, dict) else None
        init = {"w": init.w, "b": init.b, "alpha": alpha}
    if not isinstance(init, dict) or set(init) - {"w", "b", "alpha"}:
        raise TypeError("a one-vs-rest init is a MulticlassResult or a dict with 'w' (K, d), 'b' (K,) and/or "
                        f"'alpha' (K, n), got {init!r:.60}")
    init = {k: v for k, v in init.items() if v is not None}
    for k, v in init.items():
        if np.shape(v)[:1] != (K,):
            raise ValueError(f"init {k!r} has shape {np.shape(v)}; one-vs-rest over {K} classes needs {K} rows")
    starts = [make_start({k: np.asarray(v)[c] for k, v in init.items()}, method, pb, intercept_scaling, n)
              for c in range(K)]
    return jax.tree_util.tree_map(lambda *a: jnp.stack(a), *starts)


def crammer_singer(X, y, *, method, C=1.0, fit_intercept=True, intercept_scaling=None, sample_weight=None,
                   max_iter=None, dtype=None, layout="auto") -> Plan:
    """Crammer and Singer's joint multiclass problem (LIBLINEAR -s 4): one problem whose ``y`` holds the
    class codes 0..K-1 and whose method (``svmopt.solvers.crammer_singer``) is told K."""
    from .losses import hinge
    from .regularizers import l2

    if np.ndim(C) != 0:
        raise ValueError(f"strategy='crammer_singer' takes a scalar C, got shape {np.shape(C)}")
    if fit_intercept and intercept_scaling is None:
        raise ValueError("Crammer-Singer cannot fit a free (unregularized) intercept; pass intercept_scaling=1.0 "
                         "for LIBLINEAR's bias feature (b regularized, as LIBLINEAR -B 1 and LinearSVC), or "
                         "fit_intercept=False")
    if sharding.is_sharded(X):
        raise ValueError("strategy='crammer_singer' walks rows on one device; row-sharded X is for one-vs-rest")
    pb, Y, classes, _, n = problem_data(X, y, "ovr", loss=hinge, reg=l2, C=C, fit_intercept=False,
                                 intercept_scaling=intercept_scaling, sample_weight=sample_weight, dtype=dtype,
                                 layout=layout, bucket=True)
    pb = pb.replace(y=jnp.asarray(np.argmax(np.asarray(Y) > 0, axis=0), pb.dtype))  # padding rows: class 0
    pb, method, _, _, cap = _ready(method(n_classes=int(classes.size)), pb, None, max_iter, allow_handover=False)
    return Plan(pb, method, make_start(None, method, pb), cap, labels=("",), n=n, classes=classes,
                intercept_scaling=intercept_scaling, C=C, task="crammer_singer")


def one_vs_one(X, y, *, method, kernel, C=1.0, sample_weight=None, max_iter=None, dtype=None, batch="auto",
               devices=None) -> Plan:
    """LIBSVM's one-vs-one kernel SVM: a problem per pair of classes on its rows, padded to one size
    (padding rows weigh 0), the data the batched leaf."""
    from .losses import hinge
    from .regularizers import l2

    if not isinstance(method, Method) or not getattr(method, "supports_kernel", False):
        raise TypeError(f"method must be a kernel solver such as svmopt.solvers.alfpgm, got {method!r:.60}")
    if kernel is None:
        raise TypeError("one-vs-one needs a kernel (e.g. svmopt.kernels.rbf(gamma=0.1))")
    X, keep, kernel, model_kernel = kernel_input(X, kernel)
    G = X[:, :-1] if is_gram(kernel) else None  # a Gram matrix: each pair solves on its own block
    X = as_matrix(X)
    n, d = X.shape
    if n == 0 or d == 0:
        raise ValueError(f"X is empty (shape {X.shape})")
    check_finite_X(X)
    y, classes = check_labels(y, n, "one-vs-one")
    C_arr = check_C(C)
    if C_arr.ndim != 0:
        raise ValueError(f"C must be a finite scalar > 0, got {C!r}")
    s = check_weights(sample_weight, n)
    x64 = jax.config.jax_enable_x64
    dt = resolve_dtype(dtype if dtype is not None else (jnp.float64 if x64 and X.dtype == np.float64 else None))
    pairs = np.array([(i, j) for i in range(classes.size) for j in range(i + 1, classes.size)],
                     dtype=np.int64).reshape(-1, 2)
    members = [np.flatnonzero(y == c) for c in classes]
    rows = [np.sort(np.concatenate([members[i], members[j]])) for i, j in pairs]  # the data's own order
    # the pairs padded to a row bucket: folds and subsets of nearby sizes share one program
    n_max, P = bucket_rows(max(r.size for r in rows)), len(rows)
    if batch == "vmap":  # the method's cache budget is the whole batch's
        full = n_max * n_max * jnp.dtype(dt).itemsize / 2**20
        method = method(cache_size=float(min(method.cache_size / P, full + 1e-6 * full + 1.0)))
    dense = (lambda A: A.toarray()) if sp.issparse(X) else np.asarray
    Xs, Ys, Ss = np.zeros((P, n_max, d if G is None else n_max + 1)), np.ones((P, n_max)), np.zeros((P, n_max))
    for p, ((i, j), r) in enumerate(zip(pairs, rows)):
        Xs[p, :r.size] = dense(X[r]) if G is None else gram_rows(G[np.ix_(r, r)], n_max)
        Ys[p, :r.size] = np.where(y[r] == classes[i], 1.0, -1.0)
        Ss[p, :r.size] = s[r]

    def problem(Xp, Yp, Sp):
        return Problem(op=as_operator(jnp.asarray(Xp, dt), dt), y=jnp.asarray(Yp, dt), s=jnp.asarray(Sp, dt),
                       C=jnp.asarray(float(C_arr), dt), loss=cast(hinge, dt), reg=cast(l2, dt), fit_intercept=True,
                       kernel=cast(kernel, dt))

    one = problem(Xs[0], Ys[0], Ss[0])
    method.validate(one)
    cap = method.default_max_iter(one) if max_iter is None else max_iter
    method = method.canonical(dt)
    pb = problem(Xs, Ys, Ss)
    axes = batch_axes(pb, op=jax.tree_util.tree_map(lambda _: 0, pb.op), y=0, s=0)
    return Plan(pb, method, _broadcast(driver.cold_start(method, one), P), int(cap), axes=axes, size=P,
                labels=tuple(f"{label_name(classes[i])}/{label_name(classes[j])}" for i, j in pairs), n=n,
                classes=classes, C=float(C_arr), devices=devices, batch=batch, X=keep, task="ovo",
                extra=dict(pairs=pairs, rows=rows, Ys=Ys), model_kernel=model_kernel)


def oneclass(X, *, nu, method, kernel=None, sample_weight=None, max_iter=None, dtype=None, layout="auto") -> Plan:
    """The one-class SVM (SPEC section 7, LIBSVM -s 2): the rows of X with y = 1, the loss ``one_class`` and
    C = 1/(nu sum_i s_i), by a method that solves LIBSVM's dual (auto: alfpgm)."""
    from .losses import one_class
    from .regularizers import l2
    from .solvers.alfpgm import alfpgm

    nu = check_number(nu, "nu", low=0.0, high=1.0, high_open=False)
    if isinstance(method, Auto):
        method = alfpgm(tol=method.tol)
    elif not getattr(method, "solves_libsvm_dual", False):
        raise ValueError(f"method {method.name} does not solve LIBSVM's dual with sum alpha = 1; the one-class SVM "
                         "takes method=alfpgm (or 'auto')")
    X, keep, kernel, model_kernel = kernel_input(X, kernel)
    n = as_matrix(X).shape[0]
    s = check_weights(sample_weight, n)
    C = 1.0 / (float(nu) * float(np.sum(s)))
    pb, _, _, _, n = problem_data(X, None, "oneclass", loss=one_class, reg=l2, C=C, fit_intercept=True, intercept_scaling=None,
                           sample_weight=s, dtype=dtype, layout=layout, bucket=False)
    pb, cap = bind(pb, method, kernel, max_iter)
    method = method.canonical(pb.dtype)
    return Plan(pb, method, make_start(None, method, pb), cap, labels=("",), n=n, C=C,
                X=keep if kernel is not None else None, model_kernel=model_kernel, task="oneclass",
                extra=dict(nu=float(nu), scale=float(nu) * float(np.sum(s))))


def ordinal(X, ranks, *, method, C=1.0, max_iter=None, dtype=None, layout="auto", binary_labels=False) -> Plan:
    """The ranking SVM of OP4 (``svmopt.ranking``): ordered ranks coded 0..R-1, no intercept."""
    from .losses import hinge
    from .regularizers import l2

    X = as_matrix(X)
    n = X.shape[0]
    if n == 0 or X.shape[1] == 0:
        raise ValueError(f"X is empty (shape {X.shape})")
    if binary_labels:  # the ROC-area SVM: two labels, the larger ranks higher
        k = np.unique(np.asarray(ranks)).size if np.asarray(ranks).ndim == 1 else 0
        if k > 2:
            raise ValueError(f"ROC-area optimization needs exactly two labels, y has {k}; "
                             "use solve_ordinal for more ordered ranks")
        coded, values = targets(ranks, n, "binary")
        coded = (coded > 0).astype(np.float64)
    else:
        coded, values = targets(ranks, n, "ordinal")
    C_arr = check_C(C)
    if C_arr.ndim != 0:
        raise ValueError(f"ranking solves take a scalar C, got shape {C_arr.shape}")
    dt = resolve_dtype(dtype)
    check_finite_X(X, dt)
    op = as_operator(X, dt, layout=layout)
    pb = build_problem(op, coded, np.ones(n), float(C_arr), hinge, l2, False, dt)
    method = method(n_ranks=int(values.size))
    pb, cap = bind(pb, method, None, max_iter)
    method = method.canonical(dt)
    return Plan(pb, method, make_start(None, method, pb), cap, labels=("",), n=n, classes=values, C=C,
                task="ordinal", extra=dict(codes=coded))


def traced(X, y, *, loss, reg, method, C, fit_intercept, intercept_scaling, sample_weight, max_iter, dtype,
           kernel, init) -> Plan:
    """The plan of a solve inside a user's jit / vmap / grad: value checks that need concrete numbers
    are skipped; labels must be two numbers (the larger is +1); C may be a 1-D grid (vmapped)."""
    check_pieces(loss, reg)
    if kernel is not None:
        raise TypeError("a kernel solve cannot run inside jax.jit / jax.vmap / jax.grad (traced X, y, C, sample "
                        "weights or kernel parameters): its support vectors are picked on the host from the "
                        "solution; call it eagerly, or trace a linear model (kernel=None)")
    if sp.issparse(X):
        raise TypeError("scipy.sparse X cannot enter a traced solve; pass svmopt.operators.as_operator(X) "
                        "(a pytree) or a dense jax array")
    dt = resolve_dtype(dtype)  # float32 unless asked, as in eager calls
    y = jnp.asarray(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per row, got shape {y.shape}")
    hi, lo = jnp.max(y), jnp.min(y)
    n = y.shape[0]
    s = jnp.ones((n,), dt) if sample_weight is None else jnp.asarray(sample_weight, dt)
    if intercept_scaling is not None:
        fit_intercept = False
    op = X if is_operator(X) else as_operator(jnp.asarray(X, dt), dt, bias_scale=intercept_scaling)
    C = jnp.asarray(C, dt)
    if C.ndim > 1:
        raise ValueError(f"C must be a scalar or 1-D, got shape {C.shape}")
    pb = build_problem(op, jnp.where(y == hi, 1.0, -1.0).astype(dt), s, C if C.ndim == 0 else C[0], loss, reg,
                       fit_intercept, dt)
    method, _, _ = choose(method, pb)
    pb, cap = bind(pb, method, None, max_iter)
    method = method.canonical(dt)
    start = make_start(init, method, pb, intercept_scaling, n)
    return Plan(pb if C.ndim == 0 else pb.replace(C=C), method, start, cap, n=n, classes=jnp.stack([lo, hi]),
                intercept_scaling=intercept_scaling, C=C, traced=True,
                axes=None if C.ndim == 0 else batch_axes(pb, C=0), size=1 if C.ndim == 0 else int(C.shape[0]))
