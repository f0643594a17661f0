"""Method registry: every svmopt solver present, and the peers, behind one ``trace`` call.

A ``BenchMethod`` turns a ``Task`` into a ``Trace``: objective P (float64, summed over
one-vs-rest classes) against wall time, plus iterations and the first-call compile
time kept apart. How each kind is traced (all times exclude compilation and data
conversion done once before the clock starts):

  svmopt:<name>   ``svmopt.solve(..., history=True, record_every=k)`` in float32 (the
                  library default); history gives iteration/objective/time, timings
                  give the compile. The test accuracy at a threshold comes from a second
                  solve stopped at the same iteration (max_iter = that iteration).
                  Every module in svmopt/solvers/ is picked up (imported lazily; absent
                  ones are listed with a note): nesvm, dual_cd, cutting_plane, alfpgm, ...
  liblinear -s N  liblinear-official has no iteration cap, so the trace is a sweep of
                  tolerances -e 1, 0.3, 0.1, ... 1e-6, each a fresh timed ``train``
                  (the LIBLINEAR problem is built once, untimed); iterations parsed
                  from LIBLINEAR's own log.
  LinearSVC       scikit-learn's bundled LIBLINEAR, sweep of max_iter = 1, 2, 4, ...
                  at tol 1e-12; each point is a whole ``fit`` (its conversion included,
                  as a user sees it). dual="auto" (sklearn's default).
  SGD             SGDClassifier(loss hinge / squared_hinge, alpha = 1/(C n), the
                  "optimal" (Pegasos-like) schedule), one ``partial_fit`` epoch per point;
                  the bias is a column of X (SGD's own intercept is unregularized).

A sweep stops when the relative error reaches ``Ctx.stop_err`` (1e-4, past the 1e-3
threshold), when the budget is spent, or when the next run would overrun it.
"""
from __future__ import annotations

import dataclasses
import importlib
import math
import pkgutil
import re
import time
import warnings
from typing import Any

import numpy as np
import scipy.sparse as sp

__all__ = ["Trace", "Ctx", "BenchMethod", "SvmoptMethod", "LiblinearMethod", "LinearSVCMethod",
           "SGDMethod", "registry", "select", "svmopt_solver_names", "svmopt_loss"]

THRESHOLDS = (1e-2, 1e-3)
KNOWN_SVMOPT = ("alm", "nesvm", "dual_cd", "cutting_plane", "alfpgm")
# per-solver settings for a trace: run past the 1e-3 threshold (gap <= tol certifies it)
TRACE_PARAMS = {"alm": dict(tol=1e-4)}
DEFAULT_TRACE_TOL = 1e-4
NOT_BATCH = {"dual_cd"}  # coordinate methods: not in the scaling sweep of batch methods
# products with X per iteration, in passes (one pass = X w and X^T u), from each solver's docstring
NOMINAL_PASSES = {"alm": 1.5, "nesvm": 1.0, "dual_cd": 1.0, "cutting_plane": 1.0}


@dataclasses.dataclass
class Ctx:
    """What a trace may spend and how its points are judged."""

    fstar: float
    budget_s: float = 20.0
    stop_err: float = 1e-4
    thresholds: tuple = THRESHOLDS
    dtype: Any = np.float32  # svmopt's working precision (the library default)
    svmopt_accuracy: bool = True  # re-solve svmopt to the threshold iteration for its test accuracy
    probe: bool = True  # probe svmopt's per-iteration time to cap max_iter by the budget
    compile_cache: Any = None  # a folder: measure svmopt's first-call compile in a fresh process (compile_probe)


@dataclasses.dataclass
class Trace:
    method: str
    group: str
    times: list = dataclasses.field(default_factory=list)
    objectives: list = dataclasses.field(default_factory=list)
    iterations: list = dataclasses.field(default_factory=list)
    compile_s: float = math.nan  # first-call compile (svmopt); nan for peers
    compile_total_s: float = math.nan  # all compiles of the trace (one per one-vs-rest class)
    hits: dict = dataclasses.field(default_factory=dict)  # thr -> {time, iterations, accuracy}
    final_W: Any = None
    note: str = ""
    status: str = ""
    sweep: bool = False  # points are independent runs (LIBLINEAR, LinearSVC), not one running solve
    rerun: Any = None  # svmopt: (configured method, max_iter) of an already compiled solve

    def rel_err(self, fstar):
        return (np.asarray(self.objectives, float) - fstar) / abs(fstar)

    def first_hit(self, fstar, thr):
        """Index of the first point with relative error <= thr, or None."""
        idx = np.flatnonzero(self.rel_err(fstar) <= thr)
        return int(idx[0]) if idx.size else None

    @property
    def per_iter_s(self) -> float:
        """Steady-state seconds per iteration (whole trace; last run of a sweep)."""
        if not self.times or not self.iterations or self.iterations[-1] <= 0:
            return math.nan
        return self.times[-1] / self.iterations[-1]


class _Recorder:
    """Evaluates a peer's iterates off the clock: P, and test accuracy at each first crossing."""

    def __init__(self, task, ctx: Ctx, trace: Trace):
        self.task, self.ctx, self.trace = task, ctx, trace

    def add(self, t: float, W, iterations) -> bool:
        tr, ctx = self.trace, self.ctx
        obj = self.task.objective(W)
        tr.times.append(float(t))
        tr.objectives.append(obj)
        tr.iterations.append(int(iterations))
        tr.final_W = W
        err = (obj - ctx.fstar) / abs(ctx.fstar)
        for thr in ctx.thresholds:
            # the fastest point that reaches thr: the first crossing of a running trace, the cheapest
            # run of a sweep (its runs are independent, and a tighter one may time faster)
            if err <= thr and (thr not in tr.hits or t < tr.hits[thr]["time"]):
                tr.hits[thr] = dict(time=float(t), iterations=int(iterations), accuracy=self.task.accuracy(W))
        return err <= ctx.stop_err


class BenchMethod:
    name = "method"
    group = "peer"
    losses = ("L1", "L2")
    batch = False  # full-gradient method: part of the scaling sweep
    kernel = False  # runs on the kernel track (RBF, free intercept) instead of the linear tasks

    def available(self) -> str | None:
        """None when usable, else why it is skipped."""
        return None

    def supports(self, task) -> str | None:
        return None if task.loss in self.losses else f"{self.name} does not solve the {task.loss} loss"

    def trace(self, task, ctx: Ctx) -> Trace:
        raise NotImplementedError

    def timed_solve(self, task, tol=None):
        """(seconds, iterations, compile seconds) of one default-settings solve (scaling sweep)."""
        raise NotImplementedError


# --------------------------------------------------------------------------- svmopt


def svmopt_solver_names():
    """The known solver names, then any other module found in svmopt/solvers/."""
    import svmopt.solvers as pkg

    found = [m.name for m in pkgutil.iter_modules(pkg.__path__) if not m.name.startswith("_")]
    return list(KNOWN_SVMOPT) + sorted(set(found) - set(KNOWN_SVMOPT))


def warm_eager_ops():
    """Compile, once per process, the eager int ops the history loop of ``svmopt.driver`` runs inside
    its timer (``jnp.minimum(k + record_every, max_iter)``): otherwise the first recorded chunk of
    the first history solve carries ~0.3 s of compilation."""
    import jax
    import jax.numpy as jnp

    k = jnp.asarray(0)
    jax.block_until_ready(jnp.minimum(k + 1, 2))


def svmopt_loss(task):
    from svmopt.losses import hinge, lp_hinge, squared_hinge

    return {"L1": hinge, "L2": squared_hinge}.get(task.loss) or lp_hinge(task.p)


class SvmoptMethod(BenchMethod):
    group = "svmopt"
    losses = ("L1", "L2", "Lp")
    batch = True

    def __init__(self, solver: str, params: dict | None = None):
        self.solver_name = solver
        self.name = f"svmopt:{solver}"
        self.params = params
        self.batch = solver not in NOT_BATCH
        self._method, self._why = None, None

    def method(self):
        if self._method is None and self._why is None:
            from svmopt.solvers import Method

            try:
                mod = importlib.import_module(f"svmopt.solvers.{self.solver_name}")
            except ModuleNotFoundError as e:
                self._why = f"svmopt.solvers.{self.solver_name} not present ({e.name})"
                return None
            except Exception as e:  # a solver being written may not import yet: say so, go on
                self._why = f"svmopt.solvers.{self.solver_name} failed to import: {type(e).__name__}: {e}"
                return None
            m = getattr(mod, self.solver_name, None)
            if not isinstance(m, Method):
                m = next((v for v in vars(mod).values() if isinstance(v, Method)), None)
            if m is None:
                self._why = f"svmopt.solvers.{self.solver_name} defines no Method instance"
                return None
            self._method = m
        return self._method

    def available(self):
        self.method()
        return self._why

    def trace_params(self, **over) -> dict:
        m = self.method()
        fields = {f.name for f in dataclasses.fields(m)}
        params = dict(TRACE_PARAMS.get(self.solver_name, {"tol": DEFAULT_TRACE_TOL} if "tol" in fields else {}))
        params.update(self.params or {})
        params.update(over)
        return {k: v for k, v in params.items() if k in fields}

    def configured(self, **over):
        return self.method()(**self.trace_params(**over))

    def _solve(self, task, k, method, dtype, **kw):
        import svmopt

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # MAX_ITER / STALLED are expected in a trace
            return svmopt.solve(task.data.X, task.labels(k), loss=svmopt_loss(task), method=method, C=task.C,
                                fit_intercept=False, intercept_scaling=1.0 if task.bias else None,
                                dtype=dtype, **kw)

    @staticmethod
    def _w(res, task):
        w = np.asarray(res.w, np.float64)
        return np.append(w, float(res.b)) if task.bias else w

    def max_iter(self, task, method, budget_s, dtype, probe=True):
        """The method's default cap, cut to what ``budget_s`` affords. The history loop cannot be
        stopped on time, so the per-iteration time is probed first with a 3-iteration solve (its
        compilation is not counted anywhere); ``probe=False`` keeps the default cap."""
        cap = int(method.default_max_iter(_Shape(task)))
        if not probe:
            return cap
        per = self.per_iteration(task, dtype, method)
        return int(np.clip(budget_s / max(per if math.isfinite(per) else 1.0, 1e-7), 10, max(cap, 10)))

    def trace(self, task, ctx):
        tr = Trace(self.name, self.group)
        K = len(task.classes)
        method = self.configured()
        max_iter = self.max_iter(task, method, ctx.budget_s / K, ctx.dtype, probe=ctx.probe)
        every = max(1, max_iter // 200)
        hists, compiles, W, statuses = [], [], [], []
        for k in range(K):
            res = self._solve(task, k, method, ctx.dtype, history=True, record_every=every, max_iter=max_iter)
            h = res.history
            hists.append((np.asarray(h["iteration"]), np.asarray(h["objective"], float), np.asarray(h["time"])))
            compiles.append(res.timings["compile"])
            W.append(self._w(res, task))
            statuses.append(res.status.name)
        # one-vs-rest: point j is every class at its j-th record (a class that stopped holds its last)
        J = max(len(h[0]) for h in hists)
        at = lambda j: [min(j, len(h[0]) - 1) for h in hists]  # noqa: E731
        for j in range(J):
            idx = at(j)
            tr.iterations.append(int(sum(h[0][i] for h, i in zip(hists, idx))))
            tr.objectives.append(float(sum(h[1][i] for h, i in zip(hists, idx))))
            tr.times.append(float(sum(h[2][i] for h, i in zip(hists, idx))))
        # compiles[0] is ~0 here: the probe solve compiled the programs first. What a user pays on a
        # first call is measured in a fresh process (compile_probe) when the context allows it.
        tr.compile_s, tr.compile_total_s = compiles[0], float(sum(compiles))
        if ctx.compile_cache is not None:
            from .compile_probe import first_call_overhead

            first = first_call_overhead(task, self.solver_name, self.trace_params(), ctx.dtype, ctx.compile_cache)
            if math.isfinite(first):
                tr.compile_s = first
                tr.compile_total_s = first + float(sum(compiles[1:]))
        tr.final_W = np.stack(W, axis=1)
        tr.status = ",".join(sorted(set(statuses)))
        for thr in ctx.thresholds:
            j = tr.first_hit(ctx.fstar, thr)
            if j is None:
                continue
            tr.hits[thr] = dict(time=tr.times[j], iterations=tr.iterations[j], accuracy=math.nan)
            if not ctx.svmopt_accuracy:
                continue
            Wj = []
            for k, i in enumerate(at(j)):
                its = int(hists[k][0][i])
                Wj.append(self._w(self._solve(task, k, method, ctx.dtype, max_iter=its), task) if its > 0
                          else np.zeros_like(W[k]))
            tr.hits[thr]["accuracy"] = task.accuracy(np.stack(Wj, axis=1))
            tr.rerun = (method, int(hists[0][0][at(j)[0]]))  # a compiled solve of class 0, reused by run._breakdown
        return tr

    def timed_solve(self, task, tol=1e-2, dtype=np.float32, max_iter=None):
        res = self._solve(task, 0, self.configured(tol=tol), dtype, max_iter=max_iter)
        return res.timings["run"], int(res.iterations), res.timings["compile"], res.status.name

    def per_iteration(self, task, dtype=np.float32, method=None):
        """Probed seconds per iteration (3-iteration history solve; its compilation is not counted)."""
        res = self._solve(task, 0, method or self.configured(), dtype, history=True, record_every=1, max_iter=3)
        t = np.diff(np.asarray(res.history["time"]))
        return float(np.median(t)) if t.size else math.nan


class _Shape:
    """What ``Method.default_max_iter(pb)`` may look at before a Problem exists: n, d, dtype."""

    def __init__(self, task):
        self.n, self.d = task.X.shape
        self.dtype = np.float32
        self.fit_intercept = False


# --------------------------------------------------------------------------- LIBLINEAR

LIBLINEAR_EPS = (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 1e-4, 3e-5, 1e-5, 1e-6)


class LiblinearMethod(BenchMethod):
    """liblinear-official ``train`` with ``-s N``; w read straight from the model's buffer."""

    group = "liblinear"
    _losses = {3: ("L1",), 1: ("L2",), 2: ("L2",)}

    def __init__(self, s: int):
        self.s = s
        self.name = f"liblinear -s {s}"
        self.losses = self._losses[s]
        self.batch = s == 2  # primal Newton: full passes over X

    def available(self):
        try:
            import liblinear.liblinearutil  # noqa: F401
        except ImportError as e:
            return f"liblinear-official not installed ({e})"
        return None

    def problem(self, task):
        from liblinear.liblinear import problem

        y = task.data.y  # binary +-1, or the class labels (LIBLINEAR does one-vs-rest itself)
        return problem(y, sp.csr_matrix(task.data.X) if not sp.issparse(task.data.X) else task.data.X)

    def run(self, task, prob, eps):
        """One timed train: (seconds, W (d', K) in the task's class order, iterations, log text)."""
        from liblinear.liblinear import PRINT_STRING_FUN, parameter
        from liblinear.liblinearutil import train

        log = []
        param = parameter(f"-s {self.s} -c {task.C} -e {eps} -B {1 if task.bias else -1}")
        cb = PRINT_STRING_FUN(lambda s: log.append(s.decode()))  # keep a reference while training
        param.print_func = cb
        t0 = time.perf_counter()
        m = train(prob, param)
        dt = time.perf_counter() - t0
        text = "".join(log)
        return dt, liblinear_weights(m, task), liblinear_iterations(text, self.s), text

    def trace(self, task, ctx):
        tr = Trace(self.name, self.group, sweep=True)
        rec = _Recorder(task, ctx, tr)
        prob = self.problem(task)
        spent, last = 0.0, 0.0
        for eps in LIBLINEAR_EPS:
            if spent + last > ctx.budget_s:  # the next (tighter) run takes at least as long
                tr.note = f"budget: stopped before -e {eps:g}"
                break
            dt, W, its, _ = self.run(task, prob, eps)
            spent += dt
            last = dt
            if rec.add(dt, W, its):
                break
        return tr

    def timed_solve(self, task, tol=None):
        prob = self.problem(task)
        dt, _, its, text = self.run(task, prob, 0.1 if self.s in (1, 3) else 0.01)
        return dt, its, 0.0, "MAX_ITER" if "reaching max number of iterations" in text else "CONVERGED"


def liblinear_weights(m, task):
    """(d', K) weights from a LIBLINEAR model, columns in the task's one-vs-rest class order."""
    nf = m.nr_feature + (1 if m.bias >= 0 else 0)
    nr_w = 1 if m.nr_class == 2 else m.nr_class
    W = np.ctypeslib.as_array(m.w, shape=(nf * nr_w,)).reshape(nf, nr_w).copy()
    labels = np.asarray(m.get_labels(), float)
    if nr_w == 1:  # binary: w scores labels[0]
        return W if labels[0] == task.classes[-1] else -W
    order = [int(np.flatnonzero(labels == c)[0]) for c in task.classes]
    return W[:, order]


def liblinear_iterations(text, s):
    """Outer iterations from LIBLINEAR's log: '#iter = N' (dual CD) or Newton 'iter N' lines, summed over classes."""
    if s == 2:
        return len(re.findall(r"^iter\s+\d+", text, flags=re.M))
    return sum(int(v) for v in re.findall(r"#iter = (\d+)", text))


def liblinear_dual(text):
    """Dual objective values D printed by LIBLINEAR's dual solvers ('Objective value = -D'), one per class."""
    return [-float(v) for v in re.findall(r"Objective value = (\S+)", text)]


# --------------------------------------------------------------------------- scikit-learn


class LinearSVCMethod(BenchMethod):
    name = "LinearSVC"
    group = "sklearn"

    def available(self):
        try:
            import sklearn  # noqa: F401
        except ImportError as e:
            return f"scikit-learn not installed ({e})"
        return None

    def fit(self, task, max_iter, tol=1e-12):
        from sklearn.svm import LinearSVC

        clf = LinearSVC(loss="hinge" if task.loss == "L1" else "squared_hinge", C=task.C, tol=tol,
                        max_iter=max_iter, fit_intercept=task.bias, intercept_scaling=1.0, random_state=0,
                        dual=True if task.loss == "L1" else "auto")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            clf.fit(task.data.X, task.data.y)
            dt = time.perf_counter() - t0
        W = clf.coef_.T
        if task.bias:
            W = np.vstack([W, np.atleast_1d(clf.intercept_)[None, :]])
        return dt, W, int(np.max(clf.n_iter_))

    def trace(self, task, ctx):
        tr = Trace(self.name, self.group, sweep=True)
        rec = _Recorder(task, ctx, tr)
        spent, last, cap = 0.0, 0.0, 1
        while cap <= 100_000:
            if spent + last > ctx.budget_s:
                tr.note = f"budget: stopped before max_iter={cap}"
                break
            dt, W, its = self.fit(task, cap)
            spent += dt
            last = dt
            if rec.add(dt, W, its) or its < cap:  # converged before the cap: nothing more to see
                break
            cap *= 2
        return tr

    def timed_solve(self, task, tol=None):
        dt, _, its = self.fit(task, 1000, tol=1e-4)
        return dt, its, 0.0, "MAX_ITER" if its >= 1000 else "CONVERGED"


class SGDMethod(BenchMethod):
    name = "SGD"
    group = "sklearn"
    max_epochs = 200

    def available(self):
        return LinearSVCMethod.available(self)

    def trace(self, task, ctx):
        from sklearn.linear_model import SGDClassifier

        tr = Trace(self.name, self.group)
        rec = _Recorder(task, ctx, tr)
        X = task.X  # bias (if any) as a regularized column, like LIBLINEAR -B 1
        clf = SGDClassifier(loss="hinge" if task.loss == "L1" else "squared_hinge", penalty="l2",
                            alpha=1.0 / (task.C * X.shape[0]), fit_intercept=False, random_state=0)
        classes = np.unique(task.data.y)
        start = task.objective(np.zeros((X.shape[1], len(task.classes))))
        elapsed = 0.0
        for epoch in range(1, self.max_epochs + 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                clf.partial_fit(X, task.data.y, classes=classes)
                elapsed += time.perf_counter() - t0
            W = clf.coef_.T.copy()
            if rec.add(elapsed, W, epoch) or elapsed > ctx.budget_s:
                break
            if not tr.objectives[-1] < 1e3 * start:  # SGD's "optimal" step can blow up (squared hinge)
                tr.note = "diverged (objective > 1e3 x its value at w = 0)"
                break
        return tr


# --------------------------------------------------------------------------- registry


def registry():
    """All methods, svmopt solvers first (present or not: absent ones report why)."""
    ms = [SvmoptMethod(n) for n in svmopt_solver_names()]
    ms += [LiblinearMethod(3), LiblinearMethod(1), LiblinearMethod(2), LinearSVCMethod(), SGDMethod()]
    from .kernel import LibsvmMethod, SVCMethod  # kernel-track peers

    return ms + [LibsvmMethod(), SVCMethod()]


def select(spec: str | None):
    """Methods whose name starts with any comma-separated prefix (case-insensitive); None = all."""
    ms = registry()
    if not spec:
        return ms
    keys = [s.strip().lower() for s in spec.split(",") if s.strip()]
    out = [m for m in ms if any(m.name.lower().startswith(k) or m.group == k for k in keys)]
    unknown = [k for k in keys if not any(m.name.lower().startswith(k) or m.group == k for m in ms)]
    if unknown:
        raise SystemExit(f"--methods: no method matches {unknown}; known: {[m.name for m in ms]}")
    return out
