"""What the JAX-native core costs and saves: recompiles, the persistent cache, grids, paths.

    python -m bench.jax_native [--out bench/results] [--quick]

1. compile seconds of a solve after a first one, per changed argument (tol, max_iter, C, seed,
   init, a row count in the same bucket, a new loss parameter p): 0 means the compiled program
   was reused;
2. a fresh process's first solve with JAX's persistent compilation cache cold vs warm;
3. GridSearchCV(Pipeline(StandardScaler, SVMClassifier)) vs the same grid with LinearSVC;
4. a warm-started path over C vs the same C values solved cold vs LIBLINEAR trained per C.
Ratios are measured in one run on one machine (see ../shared/docs/BENCHMARKS.md).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SVMOPT_DATA", ROOT.parent / "shared" / "data"))


def _load(name, n_features=None):
    import svmopt
    return svmopt.load_svmlight(DATA / f"{name}.xz", n_features=n_features)


def recompiles():
    import jax
    import svmopt
    from svmopt.losses import lp_hinge
    from svmopt.solvers import alm, dual_cd
    X, y = _load("a9a", 123)
    X, y = X[:5000], y[:5000]
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = svmopt.solve(X, y, tol=1e-3)
        rows.append(("first call (compiles)", first.timings["compile"], first.timings["run"]))
        for label, kw in [("tol 1e-3 -> 1e-4", dict(tol=1e-4)), ("max_iter 5000 -> 300", dict(max_iter=300)),
                          ("C 1 -> 0.3", dict(C=0.3)), ("plain alm first call (auto runs alm with other structure)", dict(method=alm)),
                          ("alm mu0, rho", dict(method=alm(mu0=2.0, rho=1.01))),
                          ("init=previous result", dict(init=first)), ("init=(w, b)", dict(init=(first.w, first.b))),
                          ("4990 rows (same bucket)", dict(_rows=4990))]:
            n = kw.pop("_rows", None)
            Xs, ys = (X[:n], y[:n]) if n else (X, y)
            r = svmopt.solve(Xs, ys, **kw)
            rows.append((label, r.timings["compile"], r.timings["run"]))
        a = svmopt.solve(X, y, method=dual_cd(seed=1), intercept_scaling=1.0)
        rows.append(("dual_cd first call", a.timings["compile"], a.timings["run"]))
        b = svmopt.solve(X, y, method=dual_cd(seed=2), intercept_scaling=1.0)
        rows.append(("dual_cd seed 1 -> 2", b.timings["compile"], b.timings["run"]))
        c = svmopt.solve(X, y, method=dual_cd(seed=jax.random.key(7), eps=0.01), intercept_scaling=1.0)
        rows.append(("dual_cd key seed, eps", c.timings["compile"], c.timings["run"]))
        p1 = svmopt.solve(X, y, loss=lp_hinge(1.5))
        p2 = svmopt.solve(X, y, loss=lp_hinge(1.7))
        rows.append(("lp_hinge p first call", p1.timings["compile"], p1.timings["run"]))
        rows.append(("lp_hinge p 1.5 -> 1.7", p2.timings["compile"], p2.timings["run"]))
    return rows


_CHILD = """
import time, warnings, svmopt
t0 = time.perf_counter()
X, y = svmopt.load_svmlight({path!r}, n_features=123)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    r = svmopt.solve(X[:5000], y[:5000])
print("RESULT", r.timings["compile"], r.timings["run"], time.perf_counter() - t0)
"""


def persistent_cache():
    out = []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, SVMOPT_CACHE_DIR=d)
        for label in ("cold cache", "warm cache"):
            p = subprocess.run([sys.executable, "-c", _CHILD.format(path=str(DATA / "a9a.xz"))], env=env,
                               capture_output=True, text=True, cwd=ROOT, check=True)
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][0].split()
            out.append((label, float(line[1]), float(line[2]), float(line[3])))
    return out


def grid_search(n=5000):
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    from svmopt import SVMClassifier
    X, y = _load("a9a", 123)
    X, y = X[:n], y[:n]
    grid = {"C": [0.01, 0.1, 1.0, 10.0]}
    res = []
    for name, est, key in [("svmopt SVMClassifier", SVMClassifier(loss="squared_hinge"), "svmclassifier__C"),
                           ("LinearSVC", LinearSVC(dual=True, max_iter=10000), "linearsvc__C")]:
        pipe = make_pipeline(StandardScaler(with_mean=False), est)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            gs = GridSearchCV(pipe, {key: grid["C"]}, cv=3).fit(X, y)
            res.append((name, time.perf_counter() - t, gs.best_params_[key], gs.best_score_))
    return res


_GRID_CHILD = """
import time, warnings, numpy as np, svmopt
from sklearn.model_selection import GridSearchCV
from sklearn.svm import LinearSVC
X, y = svmopt.load_svmlight({path!r}, n_features=123)
X, y = X[:5000], y[:5000]
warnings.simplefilter("ignore")
est = svmopt.SVMClassifier() if {which!r} == "svmopt" else LinearSVC(dual=True, max_iter=10000)
t = time.perf_counter()
gs = GridSearchCV(est, {{"C": {grid!r}}}, cv=5).fit(X, y)
print("RESULT", time.perf_counter() - t, svmopt.compile_count(), gs.best_params_["C"], gs.best_score_)
"""

GRID = [0.001, 0.01, 0.1, 1.0, 10.0]


def grid_search_fresh():
    """Issue 35's grid: GridSearchCV over 5 C x 5 folds on 5000 a9a rows, each in a new process:
    svmopt's default estimator with an empty program store, then again with it filled by the first
    run, and LinearSVC. (fit time only; the process's imports and data read are outside it.)"""
    out = []
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ, SVMOPT_CACHE_DIR=d)
        for label, which in (("svmopt, empty cache", "svmopt"), ("svmopt, warm cache", "svmopt"),
                             ("LinearSVC", "linearsvc")):
            code = _GRID_CHILD.format(path=str(DATA / "a9a.xz"), which=which, grid=GRID)
            p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd=ROOT,
                               check=True)
            line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT")][0].split()
            out.append((label, float(line[1]), int(line[2]) if which == "svmopt" else 0, float(line[3]),
                        float(line[4])))
    return out


def path_vs_cold(quick=False):
    import svmopt
    from liblinear.liblinearutil import parameter, problem, train
    from svmopt.losses import squared_hinge
    X, y = _load("a9a", 123)
    if quick:
        X, y = X[:8000], y[:8000]
    Cs = np.array([2.0 ** k for k in range(-6, 4)])
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        svmopt.solve(X, y, loss=squared_hinge, C=Cs[0])  # compile once, outside both timings
        t = time.perf_counter()
        p = svmopt.path(X, y, C=Cs, loss=squared_hinge)
        out.append(("svmopt.path (warm)", time.perf_counter() - t, int(np.sum(p.iterations))))
        t = time.perf_counter()
        its = sum(svmopt.solve(X, y, loss=squared_hinge, C=c).iterations for c in Cs)
        out.append(("svmopt cold, per C", time.perf_counter() - t, int(its)))
        prob = problem(np.where(y > 0, 1.0, -1.0), X)
        t = time.perf_counter()
        for c in Cs:
            train(prob, parameter(f"-s 2 -c {c} -q"))
        out.append(("LIBLINEAR -s 2 per C", time.perf_counter() - t, 0))
        t = time.perf_counter()
        train(prob, parameter(f"-s 2 -C -v 5 -q"))
        out.append(("LIBLINEAR -s 2 -C (5-fold CV search)", time.perf_counter() - t, 0))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--grid-only", action="store_true", help="only the fresh-process GridSearchCV table")
    a = ap.parse_args(argv)
    import jax
    stamp = time.strftime("%Y-%m-%d")
    grid = ["## GridSearchCV, 5 C (0.001-10) x 5 folds, a9a 5000 rows, a new process each (fit time)", "",
            "| estimator | seconds | ratio to LinearSVC | svmopt compiles | best C | CV accuracy |", "|---|---|---|---|---|---|"]
    rows = grid_search_fresh()
    ref = rows[-1][1]
    grid += [f"| {a_} | {b:.2f} | {b / ref:.2f} | {c or '-'} | {d:g} | {e:.4f} |" for a_, b, c, d, e in rows]
    if a.grid_only:
        text = "\n".join([f"# GridSearchCV in a new process ({stamp})", "",
                          f"`python -m bench.jax_native --grid-only`; jax {jax.__version__}, {os.cpu_count()} cores.",
                          ""] + grid) + "\n"
        print(text)
        Path(a.out).mkdir(parents=True, exist_ok=True)
        (Path(a.out) / f"{stamp}-grid-search.md").write_text(text)
        return
    lines = [f"# JAX-native core: recompiles, persistent cache, grids, paths ({stamp})", "",
             f"`python -m bench.jax_native{' --quick' if a.quick else ''}`; jax {jax.__version__}, "
             f"{jax.devices()[0].device_kind}, {os.cpu_count()} cores; float32 defaults.", ""]
    lines += ["## Compile per changed argument (a9a, 5000 rows)", "", "| change | compile s | run s |", "|---|---|---|"]
    lines += [f"| {a_} | {b:.3f} | {c:.3f} |" for a_, b, c in recompiles()]
    lines += ["", "## Fresh process, first solve (a9a 5000 rows)", "",
              "| persistent cache | compile s | run s | process total s |", "|---|---|---|---|"]
    lines += [f"| {a_} | {b:.3f} | {c:.3f} | {d:.2f} |" for a_, b, c, d in persistent_cache()]
    lines += ["", "## GridSearchCV, 4 C x 3 folds, a9a 5000 rows, StandardScaler pipeline", "",
              "| estimator | seconds | best C | CV accuracy |", "|---|---|---|---|"]
    lines += [f"| {a_} | {b:.2f} | {c:g} | {d:.4f} |" for a_, b, c, d in grid_search()]
    lines += [""] + grid
    lines += ["", f"## Regularization path, squared hinge, 10 C values 2^-6..2^3 (a9a{' 8000 rows' if a.quick else ''})",
              "", "| how | seconds | iterations |", "|---|---|---|"]
    lines += [f"| {a_} | {b:.2f} | {c or '-'} |" for a_, b, c in path_vs_cold(a.quick)]
    text = "\n".join(lines) + "\n"
    print(text)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{stamp}-jax-native.md").write_text(text)


if __name__ == "__main__":
    main()
