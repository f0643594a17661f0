"""A seeded suite of binary problems: svmopt's default solve against LIBLINEAR's best, per problem.

    python -m bench.suite --size small --limit 12          # quick: rows <= 20k, the first 12 problems
    python -m bench.suite --size full --seed 3              # 40 generated problems (rows 1k-500k) + the shared sets
    python -m bench.suite --list --seed 1                   # the problem list of a seed, nothing run
    python -m bench.suite --only 'sparse-raw|a9a' --losses L1

Problems (``problems(seed, size)``): ``--count`` (default 40) generated problems drawn by a Latin
hypercube over rows (1k to 500k; ``--size small``: 1k to 20k), features (10 to 100k), density
(0.1 % to 100 %), positive share (1 % to 50 %), C (0.01 to 100) and label noise, every factor
stratified so that each seed covers its whole range (and different seeds give different shapes),
with the feature scale (raw: columns of magnitudes 1e-2 to 1e2 and offsets; [0, 1]; unit variance)
and the storage (a third dense ndarrays of density 30-100 %, the rest CSR of 0.1-30 %) balanced over
the list. Where the stored entries would pass the size's cap (small 3M, full 30M) a dense problem is
made narrower, a sparse one sparser, then narrower.
Labels come from a hidden linear rule on the unscaled features plus Gaussian noise (0.1 to 1.5 x the
rule's spread), thresholded at the drawn positive share, with up to 2 % of each class flipped:
learnable, not separable (but for wide problems, as real wide data). The shared LIBSVM binary sets
(a9a, ijcnn1, news20-bin as ``bench.data`` builds it, a1a, a5a, heart_scale, breast-cancer raw,
diabetes_scale; C = 1) are interleaved, one after every fourth generated problem; ``--size small``
takes a seeded 20k-row subsample of the larger ones.

Per problem x loss (L1 = hinge, L2 = squared hinge; LIBLINEAR's bias feature ``-B 1`` against
``intercept_scaling=1.0``, or ``--intercept none``: ``-B -1`` against ``fit_intercept=False``):
  * f*: a float64 svmopt solve certified to a relative gap <= 1e-6 (hinge: Jacobi-scaled alm, or
    dual_newton on wide data, then the other; squared hinge: the method auto picks, then alm), run in
    resumed segments within ``--ref-budget``; the gap is checked again in numpy (float64) from the
    solution's w and its dual point. Cross-check: LIBLINEAR at a tiny -e (L1 ``-s 3 -e 1e-6``, L2
    ``-s 2 -e 1e-8``) where the problem has at most ``--xcheck-nnz`` entries; its objective below
    f* by more than the certified gap is a disagreement (flagged in the table);
  * svmopt: the default ``solve(X, y, loss=..., C=C, intercept_scaling=1.0)`` (float32, tol 1e-3):
    a first call (its compile time reported apart), then ``--repeats`` timed calls; it counts when its
    objective is within ``--thresh`` of f*. The path, as ``bench.goal``: the same call cut at
    ``max_iter=k`` for the first k (doubling, then bisection) within the threshold;
  * LIBLINEAR's best: L1 ``-s 3``, L2 ``-s 1`` and ``-s 2``, each over an -e sweep from loose to tight
    (``bench.goal.EPS``), the fastest run within the threshold;
  * ratio = svmopt / LIBLINEAR (> 1: svmopt slower). Every solver run is capped at ``--budget``
    seconds (wall; svmopt's solve is interrupted between its chunks, a LIBLINEAR sweep stops at
    its first run past it); a side that misses the threshold within it counts the budget: ">"
    marks a ratio that is a lower bound (svmopt missed), "<" an upper bound (LIBLINEAR missed).
Each problem runs in its own process (``--no-isolate``: in this one), killed at
``--problem-timeout`` (its unfinished losses are reported as such). Errors are relative objective
errors (f(w) - f*)/|f*| on the training objective in float64 (``bench.objective``). Times are this
process's CPU time (``--clock cpu``, default, as ``bench.goal``) or wall time.

Output: ``--out`` (default ``bench/results/<date>-suite-<size>-seed<seed>.md``) and the CSV beside
it, stamped with the machine, versions, the command and the seed, rewritten after every problem.
"""
from __future__ import annotations

import argparse
import csv
import dataclasses
import datetime
import json
import math
import os
import platform
import re
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from bench.goal import EPS, clock

ROOT = Path(__file__).resolve().parents[1]
REF_RTOL = 1e-6  # the certified relative gap of f*
SIZES = {  # rows and features drawn log-uniformly in [lo, hi]; nnz_cap bounds the stored entries
    "small": dict(rows=(1_000, 20_000), features=(10, 100_000), nnz_cap=3_000_000),
    "full": dict(rows=(1_000, 500_000), features=(10, 100_000), nnz_cap=30_000_000),
    "smoke": dict(rows=(300, 600), features=(10, 60), nnz_cap=40_000),  # CI only (tests/test_bench_smoke.py)
}
SMALL_ROWS = 20_000
DENSE_AT = 0.3  # density from which a generated matrix is a dense ndarray
SCALES = ("raw", "01", "std")
# name, bench.data name or (file stem, n_features), interleave order
SHARED = (("a9a", "a9a"), ("ijcnn1", "ijcnn1"), ("news20-bin", "news20-bin"), ("a1a", ("a1a", 123)),
          ("a5a", ("a5a", 123)), ("heart_scale", ("heart_scale", 13)), ("breast-cancer", ("breast-cancer", 10)),
          ("diabetes_scale", ("diabetes_scale", 8)))
LOSSES = {"L1": 1, "L2": 2}
PEERS = {1: (3,), 2: (1, 2)}
XCHECK = {1: (3, 1e-6), 2: (2, 1e-8)}

COLUMNS = ["problem", "kind", "loss", "intercept", "rows", "features", "nnz", "density", "pos_frac", "scale", "storage",
           "C", "noise", "fstar", "ref_method", "ref_gap", "ref_gap_numpy", "ref_certified", "ref_s",
           "xcheck", "xcheck_P", "xcheck_rel_diff", "xcheck_flag", "auto_method", "auto_stages", "status",
           "svmopt_s", "svmopt_wall_s", "svmopt_err", "svmopt_reached", "compile_s", "path_s", "path_k",
           "path_err", "path_reached", "liblinear_flags", "liblinear_s", "liblinear_err", "liblinear_reached",
           "liblinear_runs", "ratio", "ratio_mark", "path_ratio", "path_ratio_mark", "below_fstar", "note"]


# ------------------------------------------------------------------------------------------ problems
@dataclasses.dataclass(frozen=True)
class Spec:
    """One problem: generated from (rows, features, density, ...) and ``gen_seed``, or a shared set."""

    name: str
    kind: str  # "gen" | "shared"
    rows: int = 0
    features: int = 0
    density: float = 1.0
    pos_frac: float = 0.5
    scale: str = "raw"
    C: float = 1.0
    noise: float = 0.0
    flip: float = 0.0
    dense: bool = False
    gen_seed: int = 0
    source: object = None  # shared: bench.data name or (file stem, n_features)
    max_rows: int = 0  # shared: subsample above this many rows (0: all)

    def describe(self) -> str:
        if self.kind == "shared":
            return f"{self.name}: shared LIBSVM set, C = {self.C:g}"
        return (f"{self.name}: {self.rows} x {self.features}, density {self.density:.3g}, "
                f"positives {self.pos_frac:.1%}, scale {self.scale}, C = {self.C:.3g}, noise {self.noise:.2f}, "
                f"flip {self.flip:.1%}, {'dense' if self.dense else 'CSR'}")


def _strata(rng, n):
    """One point in each of n equal strata of [0, 1), in random order (a Latin hypercube column)."""
    return (rng.permutation(n) + rng.random(n)) / n


def _logu(u, lo, hi):
    return lo * (hi / lo) ** u


def problems(seed: int = 0, size: str = "small", count: int = 40, shared: bool = True) -> list[Spec]:
    """The problem list: a deterministic function of (seed, size, count)."""
    cfg = SIZES[size]
    rng = np.random.default_rng([seed, 20261126])
    u_rows, u_feat, u_dens, u_pos, u_C, u_noise, u_flip = (_strata(rng, count) for _ in range(7))
    scales = [SCALES[i % 3] for i in rng.permutation(count)]
    dense = [i % 3 == 0 for i in rng.permutation(count)]  # a third dense (density 30-100 %), the rest CSR
    specs = []
    cap = cfg["nnz_cap"]
    for i in range(count):
        rows = int(round(_logu(u_rows[i], *cfg["rows"])))
        feats = int(round(_logu(u_feat[i], *cfg["features"])))
        if dense[i]:
            feats = max(10, min(feats, int(cap / rows)))  # stored entries = rows x features
            dens = _logu(u_dens[i], DENSE_AT, 1.0)
        else:
            lo = min(DENSE_AT / 3, max(1e-3, 3.0 / feats))  # at least ~3 entries per row
            dens = _logu(u_dens[i], lo, DENSE_AT)
            if rows * feats * dens > cap:  # too many entries: sparser first, then narrower
                dens = max(lo, cap / (rows * feats))
                if rows * feats * dens > cap:
                    feats = max(10, int(cap / (rows * dens)))
        specs.append(Spec(name=f"g{i:02d}-{'dense' if dense[i] else 'sparse'}-{scales[i]}", kind="gen", rows=rows,
                          features=feats, density=float(dens), pos_frac=float(_logu(u_pos[i], 0.01, 0.5)),
                          scale=scales[i], C=float(10 ** (-2 + 4 * u_C[i])), noise=float(_logu(u_noise[i], 0.1, 1.5)),
                          flip=float(0.02 * u_flip[i]), dense=bool(dense[i]), gen_seed=int(rng.integers(2**31))))
    if not shared or size == "smoke":
        return specs
    out, rest = [], [Spec(name=n, kind="shared", source=src, max_rows=SMALL_ROWS if size == "small" else 0,
                          gen_seed=seed) for n, src in SHARED]
    for i, s in enumerate(specs):
        out.append(s)
        if i % 4 == 3 and rest:
            out.append(rest.pop(0))
    return out + rest


def select(specs, only=None, limit=None):
    if only:
        pat = re.compile(only)
        specs = [s for s in specs if pat.search(s.name)]
    return specs[:limit] if limit else specs


def _column_values(rng, n_entries, base="lognormal"):
    return rng.lognormal(0.0, 0.7, n_entries) if base == "lognormal" else rng.standard_normal(n_entries)


def make(spec: Spec):
    """(X float64 CSR or C-contiguous ndarray, y in {-1, +1}) of a generated problem."""
    rng = np.random.default_rng(spec.gen_seed)
    n, d = spec.rows, spec.features
    w_true = rng.standard_normal(d)
    if spec.dense:
        r = min(5, d)
        Z = rng.standard_normal((n, d))
        Z += 0.8 * (rng.standard_normal((n, r)) @ (rng.standard_normal((r, d)) / np.sqrt(r)))  # correlated columns
        if spec.density < 1.0:
            Z *= rng.random((n, d)) < spec.density
        score = Z @ w_true
        X = Z
        if spec.scale == "raw":  # magnitudes 1e-2..1e2 and offsets, zeros kept
            mag = 10.0 ** rng.uniform(-2, 2, d)
            off = rng.uniform(0.0, 3.0, d)
            X = np.where(Z != 0, (Z + off) * mag, 0.0)
        elif spec.scale == "01":
            lo_, hi_ = X.min(axis=0), X.max(axis=0)
            X = (X - lo_) / np.where(hi_ > lo_, hi_ - lo_, 1.0)
        else:
            sd = X.std(axis=0)
            X = (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0)
        X = np.ascontiguousarray(X)
    else:
        k = max(1.0, spec.density * d)
        pop = 1.0 / np.arange(1, d + 1) ** 0.5  # mildly Zipf-like column popularity, columns shuffled
        pop = pop[rng.permutation(d)]
        cdf = np.cumsum(pop / pop.sum())
        parts = []
        for start in range(0, n, 100_000):  # blocks: bounded temporary memory
            m = min(100_000, n - start)
            counts = np.clip(rng.poisson(k, m), 1, d)
            cols = np.minimum(np.searchsorted(cdf, rng.random(int(counts.sum()))), d - 1).astype(np.int32)
            A = sp.csr_matrix((_column_values(rng, cols.size), cols, np.r_[0, np.cumsum(counts)]), shape=(m, d))
            A.sum_duplicates()
            parts.append(A)
        X = sp.vstack(parts, format="csr")
        score = X @ w_true
        col = X.indices
        if spec.scale == "raw":  # count-like values times column magnitudes 1e-2..1e2
            X.data = np.round(X.data * 3.0 + 1.0) * (10.0 ** rng.uniform(-2, 2, d))[col]
        else:
            sq = np.bincount(col, X.data ** 2, d)
            if spec.scale == "01":
                mx = np.zeros(d)
                np.maximum.at(mx, col, np.abs(X.data))
                X.data /= np.where(mx > 0, mx, 1.0)[col]
            else:  # unit variance per column, not centred (keeps the zeros)
                mean = np.bincount(col, X.data, d) / n
                sd = np.sqrt(np.maximum(sq / n - mean ** 2, 0.0))
                X.data /= np.where(sd > 0, sd, 1.0)[col]
    s = score + spec.noise * max(score.std(), 1e-12) * rng.standard_normal(n)
    y = np.where(s > np.quantile(s, 1.0 - spec.pos_frac), 1.0, -1.0)
    pos, neg = np.flatnonzero(y > 0), np.flatnonzero(y < 0)
    nf = int(round(spec.flip * pos.size))
    if nf:  # flip as many of each class: the positive share stays
        y[rng.choice(pos, nf, replace=False)] = -1.0
        y[rng.choice(neg, nf, replace=False)] = 1.0
    return X, y


def load(spec: Spec):
    """(X, y) of any spec: generated, or a shared set (as float64 CSR, labels +-1 with the larger +1)."""
    if spec.kind == "gen":
        return make(spec)
    from bench import data

    if isinstance(spec.source, str):
        ds = data.load(spec.source)
        X, y = sp.csr_matrix(ds.X, dtype=np.float64), np.asarray(ds.y, float)
    else:
        X, y = data._read(*spec.source)
        y = data._pm(y)
    if spec.max_rows and X.shape[0] > spec.max_rows:
        idx = np.sort(np.random.default_rng(spec.gen_seed).permutation(X.shape[0])[:spec.max_rows])
        X, y = X[idx], y[idx]
    return X, y


def shape_info(X, y):
    n, d = X.shape
    nnz = int(X.nnz) if sp.issparse(X) else int(np.count_nonzero(X))
    return dict(rows=n, features=d, nnz=nnz, density=nnz / (n * d), pos_frac=float(np.mean(y > 0)),
                storage="CSR" if sp.issparse(X) else "dense")


# ------------------------------------------------------------------------------------------ budgets
class OverBudget(BaseException):
    """Raised by the alarm of ``budgeted`` (a BaseException: no ``except Exception`` swallows it)."""


def budgeted(fn, seconds):
    """(fn(), wall seconds, over) with fn interrupted after ``seconds`` (svmopt's driver returns to
    Python between chunks of ~0.2 s, where the alarm lands); over=True and None when it was."""
    armed = [True]

    def handler(signum, frame):
        if armed[0]:
            raise OverBudget()

    t0 = time.perf_counter()
    try:
        old = signal.signal(signal.SIGALRM, handler)
    except ValueError:  # not the main thread: no alarm, the time is only measured
        out = fn()
        dt = time.perf_counter() - t0
        return out, dt, dt > seconds
    try:
        signal.setitimer(signal.ITIMER_REAL, max(float(seconds), 1e-3))
        try:
            out = fn()
        finally:
            armed[0] = False
            signal.setitimer(signal.ITIMER_REAL, 0)
        return out, time.perf_counter() - t0, False
    except OverBudget:
        return None, time.perf_counter() - t0, True
    finally:
        signal.signal(signal.SIGALRM, old)


# ------------------------------------------------------------------------------------------ one case
class Case:
    """One problem x loss: the float64 objective, svmopt's keyword arguments and LIBLINEAR's flags."""

    def __init__(self, X, y, p, C, bias):
        from bench.objective import add_bias

        self.X, self.y, self.p, self.C, self.bias = X, y, p, C, bias
        self.Xa = add_bias(X) if bias else X  # what P is evaluated on (LIBLINEAR's problem)
        self.fstar = math.nan

    def kw(self, **extra):
        import svmopt

        loss = svmopt.losses.hinge if self.p == 1 else svmopt.losses.squared_hinge
        side = dict(intercept_scaling=1.0) if self.bias else dict(fit_intercept=False)
        return dict(loss=loss, C=self.C, **side, **extra)

    def wvec(self, w, b):
        w = np.asarray(w, np.float64).ravel()
        return np.r_[w, float(np.asarray(b))] if self.bias else w

    def P(self, w, b=0.0):
        from bench.objective import primal

        return primal(self.Xa, self.y, self.wvec(w, b), self.p, self.C)

    def err(self, P):
        return (P - self.fstar) / abs(self.fstar)

    def numpy_gap(self, r, within: float = REF_RTOL):
        """(P - D)/|P| in float64 numpy from r's w and its dual point (clipped to the feasible set),
        or the KKT completion of w where that is tighter, tried only where the dual point's gap is
        above ``within`` (the completion of a hinge point with thousands of margin rows is a bounded
        least-squares solve of minutes); nan without a dual point."""
        from bench.objective import complete_dual, dual

        wv = self.wvec(r.w, r.b)
        P = self.P(r.w, r.b)
        D = -math.inf
        a = r.extras.get("alpha")
        if a is not None and np.shape(a) == (self.X.shape[0],):
            a = np.clip(np.asarray(a, np.float64), 0.0, self.C if self.p == 1 else np.inf)
            D = dual(self.Xa, self.y, a, self.p, self.C)
        if (P - D) / abs(P) > within and (self.p != 1 or self.X.shape[0] <= 200_000):
            D = max(D, complete_dual(self.Xa, self.y, wv, self.p, self.C))
        return (P - D) / abs(P)


def _quiet(fn):
    def run():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return fn()
    return run


def reference(case: Case, budget, log):
    """f* by a float64 svmopt solve to a relative gap <= 1e-6, in resumed segments (the last segment's
    result is kept when the budget runs out); candidates in order until one certifies, each but the
    last with 60 % of the budget left; the smallest gap is kept."""
    import jax.numpy as jnp

    import svmopt
    from svmopt.solvers import alm, dual_cd, dual_newton, newton

    n, d = case.X.shape
    wide = d + case.bias > n
    alm_pa = ("alm(precondition, adapt_mu)", alm(precondition=True, adapt_mu=True))
    if case.p == 1:
        cands = [("dual_newton", dual_newton()), alm_pa] if wide else [alm_pa, ("dual_cd", dual_cd())]
    else:
        cands = [("newton(warm=dual_cd)", newton(warm="dual_cd", warm_passes=300)) if wide else ("newton", newton()),
                 alm_pa]
    t_all = time.perf_counter() + budget
    best, tried = None, []
    for i, (label, method) in enumerate(cands):
        # every candidate but the last gets 60 % of what is left: a stalled first one leaves the next a chance
        t_end = t_all if i == len(cands) - 1 else time.perf_counter() + 0.6 * (t_all - time.perf_counter())
        r, k, its = None, 50, 0
        while True:
            left = t_end - time.perf_counter()
            if left <= 0:
                break
            out, _, over = budgeted(_quiet(lambda: svmopt.solve(case.X, case.y, method=method, dtype=jnp.float64,
                                                                tol=REF_RTOL, max_iter=k, init=r, **case.kw())),
                                    left)
            if over:
                break
            r = out
            its += int(r.iterations)
            if r.status != svmopt.Status.MAX_ITER:
                break
            k = min(2 * k, 100_000)
        if r is None:
            tried.append(f"{label}: nothing within the budget")
            continue
        gap = float(r.relative_gap)
        tried.append(f"{label}: {r.status.name} {its} it. gap {gap:.1e}")
        if best is None or gap < best[1]:
            best = (r, gap, f"{label} {its} it.")
        if gap <= REF_RTOL:
            break
    if best is None:
        return None
    r, gap, how = best
    log(f"    f*: {'; '.join(tried)}")
    return dict(P=case.P(r.w, r.b), gap=gap, gap_numpy=case.numpy_gap(r), method=how,
                certified=gap <= REF_RTOL)


def _liblinear():
    try:
        from liblinear import liblinearutil as ll
    except ImportError:
        return None
    return ll


def liblinear_run(case: Case, prob, s, eps):
    """One LIBLINEAR train (the model)."""
    ll = _liblinear()
    param = ll.parameter(f"-s {s} -c {case.C:.17g} -B {1 if case.bias else -1} -e {eps:g} -q")
    return ll.train(prob, param)


def liblinear_P(case: Case, m):
    from bench.methods import liblinear_weights

    class _T:
        classes = np.array([-1.0, 1.0])

    W = liblinear_weights(m, _T)[:, 0]
    nf = m.nr_feature
    w = np.zeros(case.X.shape[1])
    w[:nf] = W[:nf]
    b = W[nf] * m.bias if case.bias else 0.0
    return case.P(w, b)


def liblinear_best(case: Case, prob, thresh, budget, tick, repeats, log):
    """The fastest LIBLINEAR run within ``thresh``: per solver of the loss, an -e sweep from loose to
    tight, stopped at its first run within the threshold, at a run past the budget, or when the
    sweep has spent 3 budgets."""
    best, runs, low = None, [], math.inf
    for s in PEERS[case.p]:
        spent = 0.0
        for eps in EPS[s]:
            times, walls = [], []
            for _ in range(repeats):
                c0, w0 = tick(), time.perf_counter()
                m = liblinear_run(case, prob, s, eps)
                times.append(tick() - c0)
                walls.append(time.perf_counter() - w0)
            t, wall = statistics.median(times), max(walls)
            P = liblinear_P(case, m)
            e = case.err(P)
            low = min(low, e)
            runs.append(f"-s {s} -e {eps:g}: {t:.3g}s {e:.1e}")
            if e <= thresh and (best is None or t < best[0]):
                best = (t, f"-s {s} -e {eps:g}", e)
            spent += wall
            if e <= thresh or wall > budget or spent > 3 * budget:
                break
    return best, runs, low


def svmopt_default(case: Case, thresh, budget, compile_budget, tick, repeats):
    """The default solve: a first call (compile apart), then timed calls; all capped by the budget."""
    import svmopt

    fn = _quiet(lambda: svmopt.solve(case.X, case.y, **case.kw()))
    first, wall, over = budgeted(fn, budget + compile_budget)
    out = dict(compile=math.nan, method="", stages="", status="BUDGET", time=math.nan, wall=math.nan,
               err=math.nan, reached=False)
    if over:
        out["note"] = f"first call past {budget + compile_budget:.0f}s (budget + compile allowance)"
        return out
    out.update(compile=first.timings["compile"], method=first.method,
               stages=" > ".join(f"{s['method']} {s['iterations']}" for s in first.extras.get("stages", [])))
    if first.timings["run"] > budget:
        out["note"] = f"first call's run {first.timings['run']:.1f}s past the budget"
        return out
    times, walls, r = [], [], None
    for _ in range(repeats):
        c0 = tick()
        r, wall, over = budgeted(fn, budget)
        if over:
            out["note"] = f"timed call past the {budget:g}s budget"
            return out
        times.append(tick() - c0)
        walls.append(wall)
    out.update(time=statistics.median(times), wall=statistics.median(walls), status=r.status.name, method=r.method,
               err=case.err(case.P(r.w, r.b)), iterations=int(r.iterations))
    out["reached"] = out["err"] <= thresh
    return out


def svmopt_path(case: Case, thresh, budget, tick, repeats):
    """The default solve cut at max_iter=k: the first k within the threshold (doubling, then bisection,
    as bench.goal.path_rows), each call capped by the budget and the search by 6 budgets. Returns
    dict(time, k, err) or None (not reached: a call past the budget, or a run that ended by itself)."""
    import svmopt

    evals = {}
    t_end = time.perf_counter() + 6 * budget

    def at(k):
        if k not in evals:
            c0 = tick()
            r, _, over = budgeted(_quiet(lambda: svmopt.solve(case.X, case.y, max_iter=k, **case.kw())), budget)
            t = tick() - c0
            evals[k] = None if over else (case.err(case.P(r.w, r.b)), t, int(r.iterations))
        return evals[k]

    lo, hi = 0, 1
    while True:
        e = at(hi)
        if e is None:
            return None
        if e[0] <= thresh:
            break
        if e[2] < hi or hi >= 1 << 20 or time.perf_counter() > t_end:  # ended by itself / search spent
            return None
        lo, hi = hi, 2 * hi
    while hi - lo > 1 and time.perf_counter() < t_end:
        mid = (lo + hi) // 2
        e = at(mid)
        lo, hi = (lo, mid) if e is not None and e[0] <= thresh else (mid, hi)
    times = [evals[hi][1]]
    for _ in range(repeats - 1):
        c0 = tick()
        _, _, over = budgeted(_quiet(lambda: svmopt.solve(case.X, case.y, max_iter=hi, **case.kw())), budget)
        if not over:
            times.append(tick() - c0)
    return dict(time=statistics.median(times), k=hi, err=evals[hi][0])


def _ratio(ours, ours_ok, peer, peer_ok, budget):
    """(ratio, mark): '' both reached, '>' svmopt missed (its budget counted), '<' LIBLINEAR missed."""
    if ours_ok and peer_ok:
        return ours / peer if peer > 0 else math.nan, ""
    if not ours_ok and peer_ok:
        return budget / peer if peer > 0 else math.nan, ">"
    if ours_ok and not peer_ok:
        return ours / budget, "<"
    return math.nan, "?"


def run_case(spec, X, y, info, lname, args, log):

    p = LOSSES[lname]
    C = spec.C
    case = Case(X, y, p, C, args.intercept == "bias")
    tick = clock(args.clock)
    row = dict(problem=spec.name, kind=spec.kind, loss=lname, intercept=args.intercept, C=C,
               scale=spec.scale if spec.kind == "gen" else "as shipped", noise=spec.noise if spec.kind == "gen" else "",
               **info)
    t0 = time.perf_counter()
    ref = reference(case, args.ref_budget, log)
    if ref is None:
        row.update(note="no reference within --ref-budget", status="NO-REF")
        return row
    row.update(ref_method=ref["method"], ref_gap=ref["gap"], ref_gap_numpy=ref["gap_numpy"],
               ref_certified=ref["certified"])
    fstar = ref["P"]
    ll = _liblinear()
    prob = None
    if ll is not None:
        prob = ll.problem(y, X if sp.issparse(X) else sp.csr_matrix(X))
    # cross-check: LIBLINEAR at a tiny -e
    notes = []
    if prob is not None and info["nnz"] <= args.xcheck_nnz:
        s, eps = XCHECK[p]
        m, wall, over = budgeted(lambda: liblinear_run(case, prob, s, eps), args.budget * 3)
        if not over:
            Pll = liblinear_P(case, m)
            diff = (Pll - fstar) / abs(fstar)
            row.update(xcheck=f"-s {s} -e {eps:g} ({wall:.2g}s)", xcheck_P=Pll, xcheck_rel_diff=diff)
            if ref["certified"]:
                # below the certified lower bound: one of the two is wrong
                row["xcheck_flag"] = ("DISAGREE" if diff < -ref["gap"] * 1.01 - 1e-12 else
                                      "liblinear not converged" if diff > 1e-4 else "agree")
            else:  # nothing certified: LIBLINEAR's point may be the better one, and f* is then its P
                row["xcheck_flag"] = ("liblinear lower (f* from it)" if diff < -1e-6 else
                                      "liblinear higher" if diff > 1e-4 else "agree (f* uncertified)")
                fstar = min(fstar, Pll)
        else:
            row.update(xcheck=f"-s {s} -e {eps:g} past {args.budget * 3:g}s")
    else:
        row.update(xcheck="skipped" if prob is not None else "liblinear absent")
    case.fstar = fstar
    row.update(fstar=fstar, ref_s=time.perf_counter() - t0)
    log(f"    f* = {fstar:.10g} ({ref['method']}, gap {ref['gap']:.1e}, numpy {ref['gap_numpy']:.1e}; "
        f"cross-check {row.get('xcheck_flag', row.get('xcheck'))})")
    lowest = math.inf
    ours = svmopt_default(case, args.thresh, args.budget, args.compile_budget, tick, args.repeats)
    if ours.get("note"):
        notes.append(ours["note"])
    if ours["status"] == "CONVERGED" and ours["err"] > args.thresh + (ref["gap"] if ref["certified"] else 0.0):
        # the float32 certificate holds for X rounded to float32; the error is measured on the float64 problem
        notes.append(f"CONVERGED (float32 gap <= tol) but float64 error {ours['err']:.2g} > {args.thresh:g}")
    row.update(auto_method=ours["method"], auto_stages=ours["stages"], status=ours["status"], svmopt_s=ours["time"],
               svmopt_wall_s=ours["wall"], svmopt_err=ours["err"], svmopt_reached=ours["reached"],
               compile_s=ours["compile"])
    if math.isfinite(ours["err"]):
        lowest = min(lowest, ours["err"])
    path = svmopt_path(case, args.thresh, args.budget, tick, args.repeats)
    if path is not None:
        row.update(path_s=path["time"], path_k=path["k"], path_err=path["err"], path_reached=True)
        lowest = min(lowest, path["err"])
    else:
        row.update(path_reached=False)
    if prob is not None:
        best, runs, low = liblinear_best(case, prob, args.thresh, args.budget, tick, args.peer_repeats or args.repeats,
                                         log)
        lowest = min(lowest, low)
        row.update(liblinear_runs="; ".join(runs), liblinear_reached=best is not None)
        if best is not None:
            row.update(liblinear_s=best[0], liblinear_flags=best[1], liblinear_err=best[2])
    peer_ok = bool(row.get("liblinear_reached"))
    peer = row.get("liblinear_s", math.nan)
    if prob is not None:
        row["ratio"], row["ratio_mark"] = _ratio(ours["time"], ours["reached"], peer, peer_ok, args.budget)
        row["path_ratio"], row["path_ratio_mark"] = _ratio(row.get("path_s", math.nan), row["path_reached"], peer,
                                                           peer_ok, args.budget)
    gap = ref["gap"] if ref["certified"] else 0.0
    if lowest < -(gap + 1e-9):  # a run below f* beyond the certified gap
        row["below_fstar"] = f"{lowest:.1e}"
        notes.append("a run's objective is below f* by more than the certified gap")
    row["note"] = "; ".join(notes)
    return row


def run_problem(spec, args, emit, log=print):
    """Every loss of one problem; ``emit(row)`` after each."""
    import jax

    jax.config.update("jax_enable_x64", True)  # the float64 reference; svmopt's default stays float32
    t0 = time.perf_counter()
    X, y = load(spec)
    info = shape_info(X, y)
    log(f"{spec.describe()} -> {info['rows']} x {info['features']}, nnz {info['nnz']}, "
        f"density {info['density']:.3g}, positives {info['pos_frac']:.1%} ({time.perf_counter() - t0:.1f}s to make)")
    for lname in args.losses.split(","):
        try:
            row = run_case(spec, X, y, info, lname, args, log)
        except Exception as exc:  # noqa: BLE001  (one failing case must not end the suite)
            row = dict(problem=spec.name, kind=spec.kind, loss=lname, intercept=args.intercept, C=spec.C, **info,
                       status="ERROR", note=f"{type(exc).__name__}: {str(exc)[:200]}")
        log(f"  {lname}: " + _brief(row))
        emit(row)


def _brief(row):
    return (f"auto {row.get('auto_method', '')} {row.get('status', '')}, svmopt {_fmt(row.get('svmopt_s'))}s "
            f"(err {_fmt(row.get('svmopt_err'), '.1e')}), path {_fmt(row.get('path_s'))}s, LIBLINEAR "
            f"{row.get('liblinear_flags', '-')} {_fmt(row.get('liblinear_s'))}s, ratio "
            f"{row.get('ratio_mark', '')}{_fmt(row.get('ratio'), '.2f')} path {row.get('path_ratio_mark', '')}"
            f"{_fmt(row.get('path_ratio'), '.2f')} {row.get('note', '')}")


# ------------------------------------------------------------------------------------------ output
def _fmt(v, f=".3g"):
    if v is None or v == "" or (isinstance(v, float) and not math.isfinite(v)):
        return "—"
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return str(v)
    return format(v, f) if isinstance(v, (float, np.floating)) else str(v)


def _picked(r):
    """auto's method, with the stages of a hand-over ('dual_cd 300 > alm 2473') where there were any."""
    m, st = r.get("auto_method", ""), r.get("auto_stages", "")
    return f"{m} ({st})" if st else m


def _num(v):
    try:
        v = float(v)
    except (TypeError, ValueError):
        return math.nan
    return v


def _badness(r):
    """Sort key of the worst cases: svmopt missing the threshold (or no result) first, then the ratio."""
    v = _num(r.get("ratio"))
    if r.get("ratio_mark") == ">" or not r.get("svmopt_reached"):
        return math.inf if not math.isfinite(v) else 1e300 + v
    return v if math.isfinite(v) else -math.inf


def summary(rows, losses):
    """Per loss: cases, reached counts, median / worst of the default and the path ratios (finite ratios,
    marked ones included as the bounds they are), the five worst (svmopt's misses first)."""
    out = {}
    for lname in losses:
        rs = [r for r in rows if r.get("loss") == lname]
        ok = [r for r in rs if math.isfinite(_num(r.get("ratio")))]
        pk = [r for r in rs if math.isfinite(_num(r.get("path_ratio")))]
        out[lname] = dict(
            cases=len(rs), svmopt_reached=sum(bool(r.get("svmopt_reached")) for r in rs),
            path_reached=sum(bool(r.get("path_reached")) for r in rs),
            liblinear_reached=sum(bool(r.get("liblinear_reached")) for r in rs),
            uncertified=[r["problem"] for r in rs if r.get("ref_certified") is False],
            median=statistics.median(_num(r["ratio"]) for r in ok) if ok else math.nan,
            median_both=statistics.median([_num(r["ratio"]) for r in both]) if (both := [
                r for r in ok if not r.get("ratio_mark")]) else math.nan,
            worst=max(ok, key=lambda r: _num(r["ratio"])) if ok else None,
            path_median=statistics.median(_num(r["path_ratio"]) for r in pk) if pk else math.nan,
            path_worst=max(pk, key=lambda r: _num(r["path_ratio"])) if pk else None,
            five=sorted(rs, key=_badness, reverse=True)[:5])
    return out


def stamp(args, argv):
    import importlib.metadata as md

    import jax

    def ver(pkg):
        try:
            return md.version(pkg)
        except md.PackageNotFoundError:
            return "absent"

    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
        commit += " (uncommitted changes)" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        commit = "unknown"
    cpu = platform.processor()
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    import svmopt

    return dict(date=datetime.datetime.now().isoformat(timespec="seconds"),
                command="python -m bench.suite " + " ".join(shlex.quote(a) for a in argv),
                machine=f"{platform.node()}, {cpu}, {os.cpu_count()} cores, {platform.system()} {platform.release()}",
                versions=f"svmopt {getattr(svmopt, '__version__', '?')} (commit {commit}), jax {jax.__version__}, "
                         f"jaxlib {ver('jaxlib')}, numpy {np.__version__}, scipy {ver('scipy')}, liblinear-official "
                         f"{ver('liblinear-official')}, python {platform.python_version()}; backend "
                         f"{jax.default_backend()}",
                seed=args.seed, size=args.size, clock=args.clock, budget=args.budget, thresh=args.thresh,
                intercept=args.intercept, load_start=f"{os.getloadavg()[0]:.1f}")


def write(path_md: Path, meta, rows, losses, specs_done, pending):
    path_md.parent.mkdir(parents=True, exist_ok=True)
    bias = meta["intercept"] == "bias"
    L = [f"# svmopt default solve vs LIBLINEAR's best: seeded suite (seed {meta['seed']}, size {meta['size']})", "",
         f"`{meta['command']}`  ",
         f"date {meta['date']}; machine: {meta['machine']}; load average at start {meta['load_start']}"
         + (f", at end {meta['load_end']}" if "load_end" in meta else "") + "  ",
         f"versions: {meta['versions']}  ",
         f"threshold: relative objective error <= {meta['thresh']:g} against a float64 f* certified to 1e-6; times: "
         f"{meta['clock']} clock (median of the repeats), compile apart; budget {meta['budget']:g}s per solver run; "
         f"intercept: {'bias feature (-B 1 / intercept_scaling=1.0)' if bias else 'none (-B -1 / fit_intercept=False)'}. "
         "ratio = svmopt / LIBLINEAR (> 1: svmopt slower); '>' svmopt missed the threshold within the budget "
         "(the budget counted: a lower bound), '<' LIBLINEAR missed it (an upper bound).", ""]
    S = summary(rows, losses)
    L += ["## Summary", "", "| loss | cases | svmopt default reached | path reached | LIBLINEAR reached | median ratio "
          "| median, both reached | worst ratio | median path ratio | worst path ratio | f* uncertified |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for lname, s in S.items():
        w, pw = s["worst"], s["path_worst"]
        L.append(f"| {lname} | {s['cases']} | {s['svmopt_reached']} | {s['path_reached']} | {s['liblinear_reached']} | "
                 f"{_fmt(s['median'], '.3g')} | {_fmt(s['median_both'], '.3g')} | "
                 + (f"{w.get('ratio_mark', '')}{_num(w['ratio']):.3g} ({w['problem']})" if w else "—") + " | "
                 f"{_fmt(s['path_median'], '.3g')} | "
                 + (f"{pw.get('path_ratio_mark', '')}{_num(pw['path_ratio']):.3g} ({pw['problem']})" if pw else "—")
                 + f" | {', '.join(s['uncertified']) or 'none'} |")
    L += ["", "Five worst per loss (svmopt's misses first, then the default ratio):", "",
          "| loss | problem | rows x features | density | positives | scale | C | auto picked (stages) | status | "
          "ratio | path ratio |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for lname, s in S.items():
        for r in s["five"]:
            L.append(f"| {lname} | {r['problem']} | {r.get('rows')} x {r.get('features')} | "
                     f"{_num(r.get('density')):.2g} | {_num(r.get('pos_frac')):.1%} | {r.get('scale', '')} | "
                     f"{_num(r.get('C')):.3g} | {_picked(r)} | "
                     f"{r.get('status', '')} | {r.get('ratio_mark', '')}{_fmt(r.get('ratio'), '.3g')} | "
                     f"{r.get('path_ratio_mark', '')}{_fmt(r.get('path_ratio'), '.3g')} |")
    L += ["", "## Per problem", "",
          "| problem | loss | rows x features | density | pos. | scale | C | auto picked (stages) | status | svmopt s "
          "(err) | compile s | path s (k) | LIBLINEAR best | ratio | path ratio |",
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['problem']} | {r['loss']} | {r.get('rows')} x {r.get('features')} | "
                 f"{_num(r.get('density')):.2g} | {_num(r.get('pos_frac')):.1%} | {r.get('scale', '')} | "
                 f"{_num(r.get('C')):.3g} | {_picked(r)} | "
                 f"{r.get('status', '')} | {_fmt(r.get('svmopt_s'))} ({_fmt(r.get('svmopt_err'), '.1e')}) | "
                 f"{_fmt(r.get('compile_s'), '.2f')} | {_fmt(r.get('path_s'))} ({_fmt(r.get('path_k'))}) | "
                 + (f"{r['liblinear_flags']} {_fmt(r.get('liblinear_s'))}" if r.get("liblinear_reached")
                    else "not reached") + " | "
                 f"{r.get('ratio_mark', '')}{_fmt(r.get('ratio'), '.3g')} | "
                 f"{r.get('path_ratio_mark', '')}{_fmt(r.get('path_ratio'), '.3g')} |")
    L += ["", "## References and cross-checks", "",
          "| problem | loss | f* | by | svmopt gap | numpy gap | LIBLINEAR tiny -e | (P_ll - f*)/f* | verdict | "
          "below f* | note |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        L.append(f"| {r['problem']} | {r['loss']} | {_fmt(r.get('fstar'), '.10g')} | {r.get('ref_method', '')} | "
                 f"{_fmt(r.get('ref_gap'), '.1e')} | {_fmt(r.get('ref_gap_numpy'), '.1e')} | {r.get('xcheck', '')} | "
                 f"{_fmt(r.get('xcheck_rel_diff'), '.1e')} | {r.get('xcheck_flag', '')} | {r.get('below_fstar', '')} | "
                 f"{r.get('note', '')} |")
    L += ["", "## Problems", ""] + [f"- {s.describe()}" for s in specs_done]
    if pending:
        L += ["", f"Not run (yet): {', '.join(s.name for s in pending)}"]
    path_md.write_text("\n".join(L) + "\n")
    path_csv = path_md.with_suffix(".csv")
    with open(path_csv, "w", newline="") as f:
        for k in ("date", "command", "machine", "versions", "seed", "size", "clock", "budget", "thresh", "intercept"):
            f.write(f"# {k}: {meta[k]}\n")
        wr = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        wr.writeheader()
        for r in rows:
            wr.writerow({k: r.get(k, "") for k in COLUMNS})
    return path_md, path_csv


# ------------------------------------------------------------------------------------------ driver
def _parser():
    ap = argparse.ArgumentParser(prog="python -m bench.suite", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=0, help="the problem list is a function of it (default 0)")
    ap.add_argument("--size", choices=("small", "full", "smoke"), default="small",
                    help="small: rows <= 20k (quick); full: rows 1k-500k; smoke: tiny, for CI")
    ap.add_argument("--count", type=int, default=40, help="generated problems (default 40)")
    ap.add_argument("--no-shared", action="store_true", help="generated problems only")
    ap.add_argument("--only", default=None, help="regex on problem names (e.g. 'sparse-raw|a9a')")
    ap.add_argument("--limit", type=int, default=None, help="the first N problems (after --only)")
    ap.add_argument("--list", action="store_true", help="print the selected problems and exit")
    ap.add_argument("--losses", default="L1,L2")
    ap.add_argument("--intercept", choices=("bias", "none"), default="bias")
    ap.add_argument("--thresh", type=float, default=1e-3, help="relative objective error to reach (default 1e-3)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--repeats", type=int, default=1, help="timed calls per measurement (median)")
    ap.add_argument("--peer-repeats", type=int, default=None)
    ap.add_argument("--budget", type=float, default=None,
                    help="seconds per solver run (default: small 10, full 60, smoke 5)")
    ap.add_argument("--compile-budget", type=float, default=120.0, help="extra seconds for svmopt's first call")
    ap.add_argument("--ref-budget", type=float, default=None, help="seconds for f* (default: 6 x --budget)")
    ap.add_argument("--xcheck-nnz", type=float, default=5e6,
                    help="LIBLINEAR tiny -e cross-check on problems with at most this many entries")
    ap.add_argument("--no-isolate", dest="isolate", action="store_false",
                    help="run the problems in this process (no hard kill)")
    ap.add_argument("--problem-timeout", type=float, default=None,
                    help="seconds before a problem's process is killed (default from the budgets)")
    ap.add_argument("--out", default=None, help="markdown file; the CSV goes beside it (default bench/results/...)")
    ap.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--worker-out", default=None, help=argparse.SUPPRESS)
    return ap


def _defaults(a):
    if a.budget is None:
        a.budget = {"small": 10.0, "full": 60.0, "smoke": 5.0}[a.size]
    if a.ref_budget is None:
        a.ref_budget = 6 * a.budget
    if a.problem_timeout is None:
        per_loss = a.ref_budget + 3 * a.budget + (a.budget + a.compile_budget) + a.budget * a.repeats \
            + 6 * a.budget + 3 * 3 * a.budget + 60
        a.problem_timeout = len(a.losses.split(",")) * per_loss + 120
    for lname in a.losses.split(","):
        if lname not in LOSSES:
            raise SystemExit(f"unknown loss {lname!r}: choose from {', '.join(LOSSES)}")
    return a


def _worker(a, argv):
    spec = next(s for s in problems(a.seed, a.size, a.count, not a.no_shared) if s.name == a.worker)
    with open(a.worker_out, "a") as f:
        def emit(row):
            f.write(json.dumps(row, default=_json) + "\n")
            f.flush()

        run_problem(spec, a, emit, log=lambda s: print(s, flush=True))


def _json(v):
    if isinstance(v, (np.floating, np.integer, np.bool_)):
        return v.item()
    return str(v)


def _isolated(spec, a, argv, log):
    """The problem in a child process (its own session: killed as a group at the timeout)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.jsonl"
        env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
                   PYTHONUNBUFFERED="1")
        cmd = [sys.executable, "-m", "bench.suite", *argv, "--worker", spec.name, "--worker-out", str(out)]
        proc = subprocess.Popen(cmd, cwd=str(ROOT), env=env, start_new_session=True)
        killed = False
        try:
            rc = proc.wait(timeout=a.problem_timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            rc, killed = -9, True
        rows = [json.loads(line) for line in out.read_text().splitlines()] if out.exists() else []
    done = {r["loss"] for r in rows}
    for lname in a.losses.split(","):
        if lname not in done:
            why = f"killed at --problem-timeout {a.problem_timeout:.0f}s" if killed else f"worker exited {rc}"
            shape = dict(rows=spec.rows, features=spec.features, density=spec.density, pos_frac=spec.pos_frac,
                         scale=spec.scale) if spec.kind == "gen" else {}
            rows.append(dict(problem=spec.name, kind=spec.kind, loss=lname, intercept=a.intercept, C=spec.C, **shape,
                             status="TIMEOUT" if killed else "ERROR", note=why))
            log(f"  {lname}: {why}")
    return rows


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    a = _defaults(_parser().parse_args(argv))
    if a.worker:
        return _worker(a, argv)
    specs = select(problems(a.seed, a.size, a.count, not a.no_shared), a.only, a.limit)
    if a.list:
        for s in specs:
            print(s.describe())
        return specs
    if not specs:
        raise SystemExit("no problem matches --only / --limit")
    out = Path(a.out) if a.out else ROOT / "bench" / "results" / f"{datetime.date.today()}-suite-{a.size}-seed{a.seed}.md"
    if out.suffix != ".md":
        out = out.with_suffix(".md")
    meta = stamp(a, argv)
    losses = a.losses.split(",")
    print(f"{len(specs)} problems x {len(losses)} losses -> {out}", flush=True)
    rows = []
    for i, spec in enumerate(specs):
        print(f"[{i + 1}/{len(specs)}] {spec.name}", flush=True)
        if a.isolate:
            rows += _isolated(spec, a, argv, print)
        else:
            run_problem(spec, a, rows.append)
        write(out, meta, rows, losses, specs[:i + 1], specs[i + 1:])
    meta["load_end"] = f"{os.getloadavg()[0]:.1f}"
    paths = write(out, meta, rows, losses, specs, [])
    S = summary(rows, losses)
    for lname, s in S.items():
        print(f"{lname}: median ratio {_fmt(s['median'], '.2f')}, worst "
              f"{_fmt(_num(s['worst']['ratio']) if s['worst'] else None, '.2f')}"
              f"{' (' + s['worst']['problem'] + ')' if s['worst'] else ''}; path median "
              f"{_fmt(s['path_median'], '.2f')}", flush=True)
    print(f"wrote {paths[0]} and {paths[1]}", flush=True)
    return dict(rows=rows, summary=S, paths=dict(md=paths[0], csv=paths[1]), meta=meta)


if __name__ == "__main__":
    main()
