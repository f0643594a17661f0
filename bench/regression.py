"""Support vector regression: svmopt's default solve against LIBLINEAR's -s 11 / 12 / 13.

    python -m bench.regression                           # diabetes, reg-dense (50k x 100), reg-sparse (100k x 10k)
    python -m bench.regression --data diabetes --repeats 3

Per dataset x loss (C = 1, epsilon = 0.1 = LIBLINEAR's -p default, LIBLINEAR's bias feature on both sides:
-B 1 and ``intercept_scaling=1``; the L1 loss is -s 13, the L2 loss -s 11 (primal Newton) and -s 12 (dual CD)):
  * f*: the lowest objective found: a float64 svmopt solve certified to a 1e-9 relative gap (dual_cd for
    the L1 loss, newton for the L2 loss) and every LIBLINEAR run below (in float64 numpy);
  * svmopt: the default solve (float32, tol 1e-3: a certified relative gap <= 1e-3, hence an objective
    within 1e-3 of f*): the method auto picked, its iterations, the first call's compile and run
    time, and the run time of further calls (median of --repeats), whose relative error is shown;
  * LIBLINEAR: -e 0.1 ... 1e-6; its time to 1e-3 is the fastest run whose objective is within 1e-3
    of f* (its own stopping rules certify nothing); also each run's relative error.
ratio = svmopt's run time / LIBLINEAR's time to 1e-3 (below 1: svmopt faster). Times are wall clock
(perf_counter), one process, same machine, same run; LIBLINEAR's problem is built once, outside.

Generated sets (seeded): X standard normal (dense) or sparse with 20 standard-normal entries per row
in uniformly drawn columns; t = X w0 + 1 + 0.3 standard-t(3) noise, w0 scaled so that X w0 has unit
variance. diabetes: scikit-learn's bundled set (442 x 10), columns scaled to [-1, 1] by max |x|.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

THRESH = 1e-3
EPS = (0.1, 0.01, 1e-3, 1e-4, 1e-5, 1e-6)
C, EPSILON = 1.0, 0.1
SETS = {"diabetes": None, "reg-dense": (50_000, 100, None), "reg-sparse": (100_000, 10_000, 20)}


def dataset(name, seed=0):
    """(X, t): diabetes, or a seeded generated set (see the module docstring)."""
    if name == "diabetes":
        from sklearn.datasets import load_diabetes

        X, t = load_diabetes(return_X_y=True)
        return X / np.abs(X).max(axis=0), t
    n, d, per_row = SETS[name]
    rng = np.random.default_rng(seed)
    if per_row is None:
        X = rng.standard_normal((n, d))
        scale = np.sqrt(d)
    else:
        cols = rng.integers(0, d, size=n * per_row)
        X = sp.csr_matrix((rng.standard_normal(n * per_row), cols, np.arange(0, n * per_row + 1, per_row)),
                          shape=(n, d))
        X.sum_duplicates()
        scale = np.sqrt(per_row)
    t = X @ (rng.standard_normal(d) / scale) + 1.0 + 0.3 * rng.standard_t(3, n)
    return X, t


def primal(X, t, w, b, p):
    """1/2 (|w|^2 + b^2) + C sum (|t - X w - b| - epsilon)_+^p in float64 (b: the bias feature's weight)."""
    r = np.maximum(np.abs(t - (X @ w + b)) - EPSILON, 0.0)
    return 0.5 * (w @ w + b * b) + C * np.sum(r ** p)


def run(names, repeats):
    import jax

    jax.config.update("jax_enable_x64", True)  # f* in float64; svmopt's timed runs stay float32
    import svmopt
    from svmopt.losses import epsilon_insensitive, squared_epsilon_insensitive
    from svmopt.solvers import dual_cd, newton
    from liblinear.liblinearutil import parameter, problem, train

    rows = []
    for name in names:
        X, t = dataset(name)
        prob = problem(t, X)
        for p, loss, numbers in ((1, epsilon_insensitive(EPSILON), (13,)),
                                 (2, squared_epsilon_insensitive(EPSILON), (11, 12))):
            kw = dict(loss=loss, C=C, intercept_scaling=1.0)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                ref_method = dual_cd(tol=1e-9) if p == 1 else newton(tol=1e-9)
                ref = svmopt.solve(X, t, method=ref_method, dtype="float64", max_iter=100_000, **kw)
            fs = [primal(X, t, np.asarray(ref.w, float), float(ref.b), p)]
            print(f"{name} L{p}: f* run {ref.method} {ref.status.name} gap {float(ref.relative_gap):.1e}", flush=True)
            ll = []
            for s in numbers:
                for e in EPS:
                    t0 = time.perf_counter()
                    m = train(prob, parameter(f"-s {s} -c {C} -p {EPSILON} -B 1 -e {e} -q"))
                    sec = time.perf_counter() - t0
                    w, b = m.get_decfun()
                    P = primal(X, t, np.asarray(w), float(b), p)
                    fs.append(P)
                    ll.append((s, e, sec, P))
            fstar = min(fs)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                r = svmopt.solve(X, t, **kw)
                first = time.perf_counter() - t0
                comp = r.timings.get("compile", 0.0)
                runs = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    r = svmopt.solve(X, t, **kw)
                    runs.append(time.perf_counter() - t0)
                svmopt.solve(X, t, max_iter=1, **kw)  # (max_iter is a runtime number: nothing compiles)
                ones = []
                for _ in range(repeats):
                    t0 = time.perf_counter()
                    svmopt.solve(X, t, max_iter=1, **kw)
                    ones.append(time.perf_counter() - t0)
            err = (primal(X, t, np.asarray(r.w, float), float(r.b), p) - fstar) / fstar
            best = {s: min((sec for s_, _, sec, P in ll if s_ == s and (P - fstar) / fstar <= THRESH), default=None)
                    for s in numbers}
            auto = r.extras.get("auto")
            rows.append(dict(name=name, shape=X.shape, nnz=X.nnz if sp.issparse(X) else X.size, p=p, numbers=numbers,
                             method=r.method, iterations=int(r.iterations), status=r.status.name, first=first,
                             compile=comp, run=statistics.median(runs), floor=statistics.median(ones), ref_gap=float(ref.relative_gap),
                             gap=float(r.relative_gap), err=err, best=best, ll=ll, fstar=fstar,
                             why=str(auto)[:200] if auto is not None else ""))
            print(rows[-1], flush=True)
    return rows


def report(rows, out, command):
    import jax

    lines = [f"# Support vector regression: default solve against LIBLINEAR -s 11 / 12 / 13 ({datetime.date.today()})",
             "", f"{platform.processor() or platform.machine()}, jax {jax.__version__}, wall clock, C = {C:g}, "
             f"epsilon = {EPSILON:g}, bias feature 1 on both sides; svmopt float32 default tol 1e-3. "
             f"Produced by `{command}`; load average {os.getloadavg()[0]:.1f} when it ended "
             f"({os.cpu_count()} CPUs). One iteration: a warm call with max_iter=1 (about the fixed cost of a call); medians of the repeats.", "",
             "| data (n x d, nnz) | loss | svmopt default: method, iterations, status | compile + run (s) "
             "| run again (s) | one iteration (s) | certified gap | rel. error | LIBLINEAR to 1e-3 (s) "
             "| ratio svmopt / LIBLINEAR |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        n, d = r["shape"]
        lib = " / ".join(f"-s {s}: {r['best'][s]:.3g}" if r["best"][s] is not None else f"-s {s}: none"
                         for s in r["numbers"])
        ratio = " / ".join(f"{r['run'] / r['best'][s]:.2f}" if r["best"][s] else "-" for s in r["numbers"])
        lines.append(f"| {r['name']} ({n} x {d}, {r['nnz']}) | L{r['p']} | {r['method']}, {r['iterations']}, "
                     f"{r['status']} | {r['compile']:.2f} + {r['first'] - r['compile']:.2f} | {r['run']:.3g} | {r['floor']:.3g} | "
                     f"{r['gap']:.1e} | {r['err']:.1e} | {lib} | {ratio} |")
    lines += ["", "f*'s own certified relative gap: " + ", ".join(f"{r['name']} L{r['p']} {r['ref_gap']:.1e}"
                                                              for r in rows) + ".",
              "", "LIBLINEAR's runs (time s, relative error to f*):", ""]
    for r in rows:
        for s in r["numbers"]:
            runs = "; ".join(f"-e {e:g}: {sec:.3g} s, {(P - r['fstar']) / r['fstar']:.1e}"
                             for s_, e, sec, P in r["ll"] if s_ == s)
            lines.append(f"- {r['name']} -s {s}: {runs}")
    Path(out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=",".join(SETS))
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    rows = run(a.data.split(","), a.repeats)
    out = a.out or Path(__file__).parent / "results" / f"{datetime.date.today()}-regression-cpu.md"
    report(rows, out, "python -m bench.regression" + (f" --data {a.data}" if argv else ""))


if __name__ == "__main__":
    main()
