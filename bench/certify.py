"""The default-settings certification matrix (issue 36): does every method certify at its defaults?

Every method x the losses it takes x C in {0.01, 1, 100} x float32 / float64 x scaled real sets,
each run with the method's defaults (``svmopt.solve(X, y, loss=..., reg=..., method=m, C=C)``,
tol 1e-3) under a wall budget. Per method the table counts

  runs       the cases the method accepts
  certified  status CONVERGED
  warned     any other status (MAX_ITER, STALLED, UNCERTIFIED, ...: the solve warned)
  timeout    still running after the wall budget (counted apart from warned)
  wrong      CONVERGED, but the float64 objective of the returned (w, b), recomputed here in numpy,
             is above the float64 reference by more than tol (the status contract broken)

Cases. Losses: hinge, squared hinge, Lp 1.5, logistic with l2; LP-SVM = hinge + l1 (NESVM's
LP-SVM, smoothed by nesvm, proximal in alm); the differentiable losses with l1 for newglmnet.
Intercept: free (b unregularized) for the primal methods, LIBLINEAR's bias feature
(``intercept_scaling=1``) for dual_cd, dual_newton and cutting_plane, whose duals have no free
intercept. auto runs every pair the others cover, with a free intercept.

Data (``SETS``): heart_scale (270 x 13), diabetes_scale (768 x 8), a1a (1,605 x 123, a9a's
Adult rows), breast-cancer standardized (683 x 10, every column to mean 0, variance 1). Checks
that a change holds beyond them (``CHECK_SETS``): a5a, 5,000 rows of ijcnn1, pendigits' class 0
vs rest scaled to [0, 1], a seeded Gaussian set with 15 % label noise, and ``onehot``, a
mushrooms-like problem (8,124 rows, 112 one-hot columns from a seeded generator; mushrooms is not
in the shared data).

References (float64, cached in bench/cache/certify-refs.json): the lowest numpy objective among
independent solves: scipy L-BFGS-B for differentiable losses (with l1 on w = w+ - w-, bounds >= 0),
scipy's HiGHS linear program for LP-SVM, LIBLINEAR / LIBSVM through scikit-learn for the hinge
with l2, and svmopt in float64 at tol 1e-9 (whose certified dual gives the lower bound).

    python -m bench.certify                          # the whole matrix -> bench/results/<date>-certify-cpu.md
    python -m bench.certify --methods alm,nesvm --sets a1a --dtypes float64 --budget 30
    python -m bench.certify --methods alm,nesvm,pdhg --pairs hinge:l1   # the LP-SVM alone
    python -m bench.certify --methods alm --params "alm:schedule=residual,rho=1.05" --tag=-alm-residual
                                                     # a candidate setting measured against the default
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import signal
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import jax

jax.config.update("jax_enable_x64", True)

import svmopt  # noqa: E402
from svmopt.losses import hinge, logistic, lp_hinge, squared_hinge  # noqa: E402
from svmopt.regularizers import l1, l2  # noqa: E402
from svmopt.result import Status  # noqa: E402
from svmopt import solvers  # noqa: E402

ROOT = Path(__file__).resolve().parent
DATA = (ROOT.parent / ".." / "shared" / "data").resolve()
CACHE = ROOT / "cache" / "certify-refs.json"

CS = (0.01, 1.0, 100.0)
DTYPES = ("float32", "float64")
TOL = 1e-3
SETS = ("heart_scale", "diabetes_scale", "a1a", "breast-cancer-std")
CHECK_SETS = ("a5a", "ijcnn1-5k", "pendigits-0", "gauss", "onehot")

LOSSES = {"hinge": hinge, "squared_hinge": squared_hinge, "lp1.5": lp_hinge(1.5), "logistic": logistic}
P_OF = {"hinge": 1.0, "squared_hinge": 2.0, "lp1.5": 1.5}
L2_LOSSES = ("hinge", "squared_hinge", "lp1.5", "logistic")
SMOOTH = ("squared_hinge", "lp1.5", "logistic")

# method -> (solver, [(loss, reg)], intercept convention)
METHODS = {
    "alm": (solvers.alm, [(l, "l2") for l in L2_LOSSES] + [("hinge", "l1")], "free"),
    "nesvm": (solvers.nesvm, [(l, "l2") for l in L2_LOSSES] + [("hinge", "l1")], "free"),
    "homotopy_nesvm": (solvers.homotopy_nesvm, [(l, "l2") for l in L2_LOSSES] + [("hinge", "l1")], "free"),
    "dual_cd": (solvers.dual_cd, [("hinge", "l2"), ("squared_hinge", "l2")], "bias"),
    "dual_newton": (solvers.dual_newton, [("hinge", "l2"), ("squared_hinge", "l2")], "bias"),
    "newglmnet": (solvers.newglmnet, [(l, "l1") for l in SMOOTH], "free"),
    "newton": (solvers.newton, [(l, "l2") for l in SMOOTH], "free"),
    "cutting_plane": (solvers.cutting_plane, [("hinge", "l2")], "bias"),
    "pdhg": (solvers.pdhg, [("hinge", "l2"), ("squared_hinge", "l2"), ("hinge", "l1"), ("squared_hinge", "l1")],
             "free"),
    "auto": (solvers.auto, [(l, "l2") for l in L2_LOSSES] + [(l, "l1") for l in ("hinge",) + SMOOTH], "free"),
}


# ---------------------------------------------------------------------------------- data
def _svmlight(name, n_features=None):
    X, y = svmopt.load_svmlight(DATA / f"{name}.xz", n_features=n_features)
    return sp.csr_matrix(X, dtype=np.float64), np.asarray(y, dtype=np.float64)


def _pm(y):
    return np.where(y == np.max(y), 1.0, -1.0)


def load(name):
    """(X float64 dense or CSR, y +-1) of a set of SETS / CHECK_SETS."""
    if name in ("heart_scale", "diabetes_scale"):
        X, y = _svmlight(name)
        return X.toarray(), _pm(y)
    if name in ("a1a", "a5a"):
        X, y = _svmlight(name, 123)
        return X, _pm(y)
    if name == "breast-cancer-std":
        X, y = _svmlight("breast-cancer")
        X = X.toarray()
        sd = X.std(axis=0)
        return (X - X.mean(axis=0)) / np.where(sd > 0, sd, 1.0), _pm(y)
    if name == "breast-cancer":  # raw: the sample-id column up to 1.3e7 (hard-margin-like, for the advice check)
        X, y = _svmlight("breast-cancer")
        return X.toarray(), _pm(y)
    if name in ("a9a", "ijcnn1"):  # full sets (the paper-variant measurements)
        X, y = _svmlight(name, 123 if name == "a9a" else None)
        return (X if name == "a9a" else X.toarray()), _pm(y)
    if name == "ijcnn1-5k":
        X, y = _svmlight("ijcnn1")
        idx = np.sort(np.random.default_rng(0).choice(X.shape[0], 5000, replace=False))
        return X[idx].toarray(), _pm(y[idx])
    if name == "pendigits-0":
        X, y = _svmlight("pendigits")
        return X.toarray() / 100.0, np.where(y == 0, 1.0, -1.0)
    if name == "gauss":  # seeded: 2,000 x 30 Gaussian features, 15 % of the labels flipped
        rng = np.random.default_rng(36)
        X = rng.standard_normal((2000, 30)) * rng.uniform(0.2, 3.0, 30)
        y = np.sign(X @ rng.standard_normal(30) + 0.3)
        y[rng.random(2000) < 0.15] *= -1
        return X, y
    if name == "onehot":  # mushrooms-like: 8,124 rows, 22 categorical attributes one-hot into 112 columns
        return onehot()
    raise ValueError(f"unknown set {name!r}")


def onehot(n=8124, seed=0):
    """A seeded mushrooms-like problem: 22 categorical attributes with 2-12 levels (112 one-hot
    columns), labels from a sparse rule on a few levels (nearly separable, as mushrooms is)."""
    rng = np.random.default_rng(seed)
    levels = [2, 3, 4, 6, 10, 9, 2, 2, 12, 2, 5, 4, 4, 9, 9, 1, 4, 3, 5, 9, 6, 7][:22]
    levels[-1] += 112 - sum(levels)
    cols, offset = [], 0
    score = np.zeros(n)
    for k in levels:
        p = rng.dirichlet(np.ones(k))
        v = rng.choice(k, size=n, p=p)
        cols.append(offset + v)
        score += rng.standard_normal(k)[v] * (3.0 if rng.random() < 0.2 else 0.3)
        offset += k
    rows = np.repeat(np.arange(n), len(levels))
    X = sp.csr_matrix((np.ones(n * len(levels)), (rows, np.stack(cols, 1).ravel())), shape=(n, offset))
    y = np.where(score > np.median(score), 1.0, -1.0)
    y[rng.random(n) < 0.005] *= -1
    return X, y


# ---------------------------------------------------------------------------------- the objective
def augment(X, conv):
    """The design the reference sees: [X, 1] for LIBLINEAR's bias feature (its weight regularized)."""
    if conv != "bias":
        return X
    col = np.ones((X.shape[0], 1))
    return sp.hstack([X, col], format="csr") if sp.issparse(X) else np.hstack([X, col])


def loss_value(name, m):
    if name == "logistic":
        return np.logaddexp(0.0, -m)
    r = np.maximum(1.0 - m, 0.0)
    return r if name == "hinge" else r ** P_OF[name]


def objective(X, y, w, b, loss, reg, C):
    """R(w) + C sum loss(y (X w + b)) in float64 numpy (w of the augmented design for the bias feature)."""
    w = np.asarray(w, np.float64)
    m = y * (X @ w + b)
    R = 0.5 * w @ w if reg == "l2" else np.abs(w).sum()
    return float(R + C * np.sum(loss_value(loss, m)))


# ---------------------------------------------------------------------------------- references
def _lbfgs(X, y, loss, reg, C, free):
    from scipy.optimize import minimize
    n, d = X.shape
    p = P_OF.get(loss)

    def lgrad(m):
        if loss == "logistic":
            return -0.5 * (1.0 - np.tanh(0.5 * m))  # d/dm log(1 + e^-m) = -1 / (1 + e^m)
        return -p * np.maximum(1.0 - m, 0.0) ** (p - 1.0)

    def split(z):
        if reg == "l2":
            return z[:d], (z[d] if free else 0.0)
        return z[:d] - z[d:2 * d], (z[2 * d] if free else 0.0)

    def fg(z):
        w, b = split(z)
        m = y * (X @ w + b)
        u = C * y * lgrad(m)
        gw = X.T @ u
        if reg == "l2":
            f = 0.5 * w @ w + C * loss_value(loss, m).sum()
            g = [w + gw]
        else:
            f = z[:2 * d].sum() + C * loss_value(loss, m).sum()
            g = [1.0 + gw, 1.0 - gw]
        return f, np.concatenate(g + ([[u.sum()]] if free else []))

    size = (d if reg == "l2" else 2 * d) + (1 if free else 0)
    bounds = None if reg == "l2" else [(0, None)] * (2 * d) + ([(None, None)] if free else [])
    res = minimize(fg, np.zeros(size), jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 50000, "maxfun": 100000, "maxcor": 30, "ftol": 1e-16, "gtol": 1e-11})
    return split(res.x)


def _lp(X, y, C, free):
    """LP-SVM exactly: min 1^T (w+ + w-) + C 1^T xi, y (X (w+ - w-) + b) + xi >= 1, w+, w-, xi >= 0."""
    from scipy.optimize import linprog
    n, d = X.shape
    Xs = sp.csr_matrix(X).multiply(y[:, None]).tocsr()
    nb = 2 if free else 0
    A = sp.hstack([-Xs, Xs] + ([sp.csr_matrix(-y[:, None]), sp.csr_matrix(y[:, None])] if free else [])
                  + [-sp.eye(n)], format="csr")
    c = np.concatenate([np.ones(2 * d), np.zeros(nb), C * np.ones(n)])
    res = linprog(c, A_ub=A, b_ub=-np.ones(n), bounds=(0, None), method="highs",
                  options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10})
    z = res.x
    return z[:d] - z[d:2 * d], ((z[2 * d] - z[2 * d + 1]) if free else 0.0)


def _sk_hinge(X, y, C, free):
    if free:
        from sklearn.svm import SVC
        m = SVC(kernel="linear", C=C, tol=1e-8, cache_size=500, max_iter=10_000_000).fit(X, y)
        return m.coef_.ravel(), float(m.intercept_[0])
    from sklearn.svm import LinearSVC
    m = LinearSVC(loss="hinge", dual=True, tol=1e-9, max_iter=2_000_000, C=C, fit_intercept=False,
                  random_state=0).fit(X, y)
    return m.coef_.ravel(), 0.0


def _svmopt_ref(X, y, loss, reg, C, free):
    if reg == "l1":
        method = solvers.newglmnet if loss in SMOOTH else solvers.alm
    elif loss in SMOOTH:
        method = solvers.newton
    else:
        method = solvers.dual_cd if not free else solvers.alm
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = svmopt.solve(X, y, loss=LOSSES[loss], reg=l2 if reg == "l2" else l1, method=method, C=C,
                         fit_intercept=free, tol=1e-9, dtype=np.float64, max_iter=200000)
    return np.asarray(r.w, np.float64), float(r.b), float(r.dual_objective), r.status


def reference(name, X, y, loss, reg, conv, C, cache):
    """(P*, lower bound, provenance): the float64 reference of one case (cached)."""
    key = f"{name}|{loss}|{reg}|{conv}|{C:g}"
    if key in cache:
        return cache[key]
    Xa, free = augment(X, conv), conv == "free"
    cands, lower = {}, -np.inf
    try:
        if reg == "l1" and loss == "hinge":
            cands["highs_lp"] = _lp(Xa, y, C, free)
        elif loss in SMOOTH:
            cands["lbfgs"] = _lbfgs(Xa.toarray() if sp.issparse(Xa) else Xa, y, loss, reg, C, free)
        else:
            cands["sklearn"] = _sk_hinge(Xa, y, C, free)
    except Exception as exc:  # a peer's failure leaves svmopt's reference alone
        print(f"  reference peer failed on {key}: {exc}", file=sys.stderr)
    try:
        w, b, D, status = _svmopt_ref(Xa, y, loss, reg, C, free)
        cands["svmopt64"] = (w, b)
        if int(status) == Status.CONVERGED:
            lower = D
    except Exception as exc:
        print(f"  svmopt reference failed on {key}: {exc}", file=sys.stderr)
    vals = {k: objective(Xa, y, w, b, loss, reg, C) for k, (w, b) in cands.items()}
    best = min(vals, key=vals.get)
    out = dict(P=vals[best], lower=lower if np.isfinite(lower) else None, by=best,
               candidates={k: v for k, v in vals.items()})
    cache[key] = out
    return out


# ---------------------------------------------------------------------------------- runs
class Budget(Exception):
    pass


def _alarm(signum, frame):
    raise Budget()


def parse_params(text):
    """{method: {name: value}} from "alm:schedule=residual,rho=1.05;nesvm:restart=none" (numbers as floats)."""
    out = defaultdict(dict)
    for part in filter(None, (t.strip() for t in (text or "").split(";"))):
        method, _, kvs = part.partition(":")
        if method not in METHODS or not kvs:
            raise SystemExit(f"--params: expected 'method:name=value,...' with a method of {list(METHODS)}, got {part!r}")
        for kv in kvs.split(","):
            k, _, v = kv.partition("=")
            try:
                v = float(v)
            except ValueError:
                pass
            out[method][k.strip()] = v
    return out


def run_case(method_name, name, X, y, loss, reg, C, dtype, budget, params=None):
    """One run at the method's defaults (or ``params`` over them): dict(status, gap, seconds, iterations, P64, method)."""
    solver, _, conv = METHODS[method_name]
    if params:
        solver = solver(**params)
    kw = dict(intercept_scaling=1.0) if conv == "bias" else {}
    t0 = time.perf_counter()
    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, budget)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = svmopt.solve(X, y, loss=LOSSES[loss], reg=l2 if reg == "l2" else l1, method=solver, C=C,
                             dtype=getattr(np, dtype), **kw)
        signal.setitimer(signal.ITIMER_REAL, 0)
    except Budget:
        return dict(status="TIMEOUT", seconds=time.perf_counter() - t0)
    except Exception as exc:  # a refusal or a crash: reported as such
        signal.setitimer(signal.ITIMER_REAL, 0)
        return dict(status="ERROR", error=f"{type(exc).__name__}: {str(exc)[:200]}", seconds=time.perf_counter() - t0)
    secs = time.perf_counter() - t0
    w = np.asarray(r.w, np.float64)
    b = float(r.b)
    if conv == "bias":  # the bias feature's weight: b / scale, scale 1
        w, b = np.concatenate([w, [b]]), 0.0
    Xa = augment(X, conv)
    P64 = objective(Xa, y, w, b, loss, reg, C)
    rel = float(r.gap) / max(abs(float(r.primal_objective)), 1e-300)
    return dict(status=Status(int(r.status)).name, gap=rel, seconds=secs, iterations=int(r.iterations),
                P64=P64, ran=r.method + ("+lp" if "certificate" in r.extras else ""),
                stages=[s["method"] for s in r.extras.get("stages", [])])


def cases(methods, sets, dtypes, cs=CS, only=None):
    for m in methods:
        _, pairs, conv = METHODS[m]
        for name in sets:
            for loss, reg in pairs:
                if only and f"{loss}:{reg}" not in only:
                    continue
                for dt in dtypes:
                    for C in cs:
                        yield m, name, loss, reg, conv, dt, C


def judge(row, ref, tol=TOL):
    """certified / warned / timeout / error / wrong for one run against its reference."""
    st = row["status"]
    if st == "TIMEOUT":
        return "timeout"
    if st == "ERROR":
        return "error"
    if st != "CONVERGED":
        return "warned"
    err = (row["P64"] - ref["P"]) / abs(ref["P"])
    row["err"] = err
    return "wrong" if err > tol * (1 + 1e-6) + 1e-6 else "certified"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--sets", default=",".join(SETS), help=f"comma list of {SETS + CHECK_SETS}")
    ap.add_argument("--dtypes", default=",".join(DTYPES))
    ap.add_argument("--C", default=",".join(f"{c:g}" for c in CS))
    ap.add_argument("--budget", type=float, default=60.0, help="wall seconds per run")
    ap.add_argument("--out", default=None, help="markdown table (default bench/results/<date>-certify-cpu.md)")
    ap.add_argument("--jsonl", default=None, help="one JSON row per run (appended)")
    ap.add_argument("--tag", default="", help="suffix of the default --out name (write --tag=-x for one with a dash)")
    ap.add_argument("--pairs", default="", help='only these loss:reg pairs, e.g. "hinge:l1" (the LP-SVM)')
    ap.add_argument("--params", default="", help='settings over the defaults: "alm:schedule=residual,rho=1.05;nesvm:restart=none"')
    a = ap.parse_args(argv)
    methods = [m for m in a.methods.split(",") if m]
    sets = [s for s in a.sets.split(",") if s]
    dtypes = [d for d in a.dtypes.split(",") if d]
    cs = tuple(float(c) for c in a.C.split(","))
    params = parse_params(a.params)
    cache = json.loads(CACHE.read_text()) if CACHE.exists() else {}
    data = {s: load(s) for s in sets}
    counts = defaultdict(lambda: defaultdict(int))
    fails = []
    jl = open(a.jsonl, "a") if a.jsonl else None
    t_all = time.perf_counter()
    only = {p for p in a.pairs.split(",") if p}
    for m, name, loss, reg, conv, dt, C in cases(methods, sets, dtypes, cs, only):
        X, y = data[name]
        ref = reference(name, X, y, loss, reg, conv, C, cache)
        CACHE.parent.mkdir(parents=True, exist_ok=True)
        CACHE.write_text(json.dumps(cache, indent=0, sort_keys=True))
        row = run_case(m, name, X, y, loss, reg, C, dt, a.budget, params.get(m))
        verdict = judge(row, ref)
        row.update(method=m, set=name, loss=loss, reg=reg, conv=conv, dtype=dt, C=C, verdict=verdict,
                   ref=ref["P"])
        counts[m]["runs"] += 1
        counts[m][verdict] += 1
        if verdict != "certified":
            fails.append(row)
        if jl:
            jl.write(json.dumps(row, default=str) + "\n")
            jl.flush()
        print(f"{m:15s} {name:18s} {loss:13s} {reg} {dt} C={C:<6g} {row['status']:12s} "
              f"gap={row.get('gap', float('nan')):.2e} {row['seconds']:6.1f}s {verdict}", flush=True)
    total = time.perf_counter() - t_all
    text = render(counts, fails, a, methods, sets, dtypes, cs, total)
    out = Path(a.out) if a.out else ROOT / "results" / f"{datetime.date.today()}-certify-cpu{a.tag}.md"
    out.write_text(text)
    print(text)


def render(counts, fails, a, methods, sets, dtypes, cs, total):
    lines = [f"# Default-settings certification matrix ({datetime.date.today()}, {platform.node()}, CPU)", "",
             f"`python -m bench.certify {' '.join(sys.argv[1:])}`", "",
             f"sets {', '.join(sets)}; C {', '.join(f'{c:g}' for c in cs)}; {', '.join(dtypes)}; tol {TOL:g}; "
             f"wall budget {a.budget:g} s per run; jax {jax.__version__}; {total / 60:.1f} min in all."
             + (f" Settings over the defaults: `{a.params}`." if a.params else ""), "",
             "| method | runs | certified | warned | timeout | error | wrong |", "|---|---|---|---|---|---|---|"]
    tot = defaultdict(int)
    for m in methods:
        c = counts[m]
        for k in ("runs", "certified", "warned", "timeout", "error", "wrong"):
            tot[k] += c[k]
        lines.append(f"| {m} | {c['runs']} | {c['certified']} | {c['warned']} | {c['timeout']} | {c['error']} "
                     f"| {c['wrong']} |")
    lines.append(f"| all | {tot['runs']} | {tot['certified']} | {tot['warned']} | {tot['timeout']} | "
                 f"{tot['error']} | {tot['wrong']} |")
    lines += ["", "## Runs that did not certify", "",
              "| method | set | loss | reg | dtype | C | status | rel. gap | s | ran | note |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in fails:
        note = r.get("error", "") or (f"P64 {r['P64']:.6g} vs ref {r['ref']:.6g}" if r["verdict"] == "wrong" else "")
        lines.append(f"| {r['method']} | {r['set']} | {r['loss']} | {r['reg']} | {r['dtype']} | {r['C']:g} | "
                     f"{r['status']} | {r.get('gap', float('nan')):.2e} | {r['seconds']:.1f} | "
                     f"{'+'.join(r.get('stages') or [r.get('ran', '')])} | {note} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
