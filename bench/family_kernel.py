"""The kernel side of the SVM family against scikit-learn (LIBSVM): epsilon-SVR and the one-class SVM.

    python -m bench.family_kernel                          # 10k rows, 3 repeats, every case
    python -m bench.family_kernel --cases csvc-ijcnn1 --rows 10000 --repeats 5 --out FILE

Cases (seeded row picks of real sets from ../shared/data, features as stored, RBF with scikit-learn's
gamma="scale" = 1 / (d var X) passed as a number to both sides):

  svr-ijcnn1, svr-letter   epsilon-SVR, C = 1, epsilon = 0.1: ijcnn1's continuous column 10 regressed
                           on its other 21 features; letter's last feature on its other 15
  ocs-ijcnn1, ocs-a9a      the one-class SVM at nu = 0.1 and 0.5 (a9a densified)
  ocs-linear-a9a, ocs-linear-ijcnn1   the linear one-class SVM (kernel=None: alfpgm keeping w), against
                           LIBLINEAR -s 21 (liblinear-official, its default -e 0.01; sparse input) and
                           scikit-learn's OneClassSVM(kernel="linear"); quality on the primal (w, rho)
  csvc-ijcnn1              C-SVC, C = 1 (the solver's first problem, as a control)

scikit-learn: ``SVR`` / ``OneClassSVM`` / ``SVC`` with their defaults (tol 1e-3 on LIBSVM's violation, a
200 MB cache). svmopt: the default call (``svmopt.solve(X, t, loss=epsilon_insensitive(0.1),
kernel=rbf(g))``, ``svmopt.solve_oneclass(X, nu=nu, kernel=rbf(g))``, ``svmopt.solve(X, y,
kernel=rbf(g))``: float32, a certified relative duality gap of 1e-3). Its first call's compile time is
reported apart; times are medians over --repeats calls, the two sides interleaved, wall clock and
this process's CPU time (every thread counted). Quality: the dual objective of each side's model,
recomputed in float64 from its dual coefficients (the dual is the objective both sides bound), as
relative difference to the better one, and svmopt's certified gap.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import time
from pathlib import Path

import numpy as np

CASES = ("svr-ijcnn1", "svr-letter", "ocs-ijcnn1", "ocs-a9a", "ocs-linear-a9a", "ocs-linear-ijcnn1", "csvc-ijcnn1")
DATA = Path(os.environ.get("SVMOPT_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data")).resolve()


def _rows(name, nf, rows, seed=0):
    import svmopt

    X, y = svmopt.load_svmlight(DATA / f"{name}.xz", n_features=nf)
    idx = np.sort(np.random.default_rng(seed).permutation(X.shape[0])[:rows])
    return X[idx].toarray(), y[idx]


def _gamma(X):
    return float(1.0 / (X.shape[1] * X.var()))


def _quad(X, coef, gamma, block=2048):
    """coef^T K coef for the RBF kernel of X's rows (float64, in row blocks)."""
    sq = (X * X).sum(1)
    out = 0.0
    for i in range(0, X.shape[0], block):
        d = sq[i:i + block, None] + sq[None, :] - 2.0 * X[i:i + block] @ X.T
        out += coef[i:i + block] @ (np.exp(-gamma * np.maximum(d, 0.0)) @ coef)
    return out


def problems(rows):
    """name -> (kind, X, target or labels, parameters)."""
    out = {}
    X, _ = _rows("ijcnn1", 22, rows)
    out["svr-ijcnn1"] = ("svr", np.delete(X, 10, axis=1), X[:, 10], dict(C=1.0, epsilon=0.1))
    X, _ = _rows("letter.scale", 16, rows)
    out["svr-letter"] = ("svr", X[:, :15], X[:, 15], dict(C=1.0, epsilon=0.1))
    X, y = _rows("ijcnn1", 22, rows)
    out["ocs-ijcnn1"] = ("ocs", X, None, dict(nu=(0.1, 0.5)))
    out["csvc-ijcnn1"] = ("csvc", X, y, dict(C=1.0))
    out["ocs-linear-ijcnn1"] = ("ocs-linear", X, None, dict(nu=(0.1, 0.5)))
    X, _ = _rows("a9a", 123, rows)
    out["ocs-a9a"] = ("ocs", X, None, dict(nu=(0.1, 0.5)))
    out["ocs-linear-a9a"] = ("ocs-linear", X, None, dict(nu=(0.1, 0.5)))
    return out


def _timed(fn):
    w, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w, time.process_time() - c


def run_linear_oneclass(X, p, repeats):
    """The linear one-class SVM against LIBLINEAR -s 21 and OneClassSVM(kernel="linear"): a row per peer."""
    import scipy.sparse as sp
    import svmopt
    from liblinear import liblinearutil as ll
    from sklearn.svm import OneClassSVM

    n = X.shape[0]
    Xs = sp.csr_matrix(X)
    rows = []
    for nu in p["nu"]:
        def primal(w, rho):
            return 0.5 * w @ w - rho + np.sum(np.maximum(rho - X @ w, 0.0)) / (nu * n)

        def libl():
            return ll.train(ll.problem([1.0] * n, Xs), f"-s 21 -n {nu} -q")

        ours = lambda: svmopt.solve_oneclass(X, nu=nu)  # noqa: E731
        skl = lambda: OneClassSVM(kernel="linear", nu=nu).fit(X)  # noqa: E731
        _, w0, _ = _timed(ours)
        times = {"svmopt": [], "liblinear": [], "sklearn": []}
        for _ in range(repeats):
            for name, fn in (("svmopt", ours), ("liblinear", libl), ("sklearn", skl)):
                out, w, c = _timed(fn)
                times[name].append((w, c))
                if name == "svmopt":
                    r = out
                elif name == "liblinear":
                    wl, bl = out.get_decfun()  # LIBSVM's scale: nu n times SPEC's
                    P_l = primal(np.asarray(wl) / (nu * n), -bl / (nu * n))
                else:
                    P_s = primal(out.coef_.ravel() / (nu * n), float(out.offset_[0]) / (nu * n))
        P_o = primal(np.asarray(r.w, np.float64), float(r.rho))
        best = min(P_o, P_l, P_s)
        med = {k: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
               for k, vals in times.items()}
        for peer, P_peer in (("liblinear", P_l), ("sklearn", P_s)):
            rows.append(dict(setting=f"nu={nu:g} vs {peer}", n=n, d=X.shape[1], gamma=0.0,
                             compile=max(0.0, w0 - med["svmopt"][0]), ours=med["svmopt"], ref=med[peer],
                             ratio_wall=med["svmopt"][0] / med[peer][0], ratio_cpu=med["svmopt"][1] / med[peer][1],
                             dual_ours=(P_o - best) / abs(best), dual_ref=(P_peer - best) / abs(best),
                             gap=float(r.relative_gap), status=r.status.name, iterations=int(r.iterations),
                             sv=(int(np.sum(np.asarray(r.extras["alpha"]) > 0)), -1)))
    return rows


def run_case(kind, X, t, p, repeats):
    """Rows of the table: one per parameter setting."""
    if kind == "ocs-linear":
        return run_linear_oneclass(X, p, repeats)
    import svmopt
    from sklearn.svm import SVC, SVR, OneClassSVM
    from svmopt.kernels import rbf
    from svmopt.losses import epsilon_insensitive

    g = _gamma(X)
    settings = [dict(nu=nu) for nu in p["nu"]] if kind == "ocs" else [p]
    rows = []
    for s in settings:
        if kind == "svr":
            ours = lambda: svmopt.solve(X, t, loss=epsilon_insensitive(s["epsilon"]), C=s["C"], kernel=rbf(g))  # noqa: E731
            ref = lambda: SVR(C=s["C"], epsilon=s["epsilon"], gamma=g).fit(X, t)  # noqa: E731
        elif kind == "ocs":
            ours = lambda: svmopt.solve_oneclass(X, nu=s["nu"], kernel=rbf(g))  # noqa: E731
            ref = lambda: OneClassSVM(nu=s["nu"], gamma=g).fit(X)  # noqa: E731
        else:
            ours = lambda: svmopt.solve(X, t, C=s["C"], kernel=rbf(g))  # noqa: E731
            ref = lambda: SVC(C=s["C"], gamma=g).fit(X, t)  # noqa: E731
        first, w0, _ = _timed(ours)
        times = {"svmopt": [], "sklearn": []}
        for _ in range(repeats):
            r, w, c = _timed(ours)
            times["svmopt"].append((w, c))
            m, w, c = _timed(ref)
            times["sklearn"].append((w, c))
        D_ours, D_ref = _duals(kind, X, t, s, g, r, m)
        best = max(D_ours, D_ref)
        med = {k: (statistics.median(v[0] for v in vals), statistics.median(v[1] for v in vals))
               for k, vals in times.items()}
        rows.append(dict(setting=", ".join(f"{k}={v:g}" for k, v in s.items()), n=X.shape[0], d=X.shape[1],
                         gamma=g, compile=max(0.0, w0 - med["svmopt"][0]), ours=med["svmopt"], ref=med["sklearn"],
                         ratio_wall=med["svmopt"][0] / med["sklearn"][0], ratio_cpu=med["svmopt"][1] / med["sklearn"][1],
                         dual_ours=(best - D_ours) / abs(best), dual_ref=(best - D_ref) / abs(best),
                         gap=float(r.relative_gap), status=r.status.name, iterations=int(r.iterations),
                         sv=(int(np.size(r.extras["support"])), int(m.support_.size))))
    return rows


def _duals(kind, X, t, s, g, r, m):
    """(svmopt's, scikit-learn's) dual objective in svmopt's scale, float64 from each model's coefficients."""
    sv = r.extras["support"]
    c_ours = np.zeros(X.shape[0])
    c_ours[sv] = np.asarray(r.dual_coef, np.float64)
    c_ref = np.zeros(X.shape[0])
    c_ref[m.support_] = m.dual_coef_.ravel()
    if kind == "ocs":  # LIBSVM's alpha are nu n times SPEC section 7's
        c_ref /= s["nu"] * X.shape[0]
        return -0.5 * _quad(X, c_ours, g), -0.5 * _quad(X, c_ref, g)

    def dual(c):
        if kind == "svr":
            return t @ c - s["epsilon"] * np.abs(c).sum() - 0.5 * _quad(X, c, g)
        return np.abs(c).sum() - 0.5 * _quad(X, c, g)

    return dual(c_ours), dual(c_ref)


def table(results, args) -> str:
    import jax
    import sklearn
    import svmopt

    lines = [f"# Kernel SVM family against scikit-learn ({datetime.date.today()})", "",
             f"`python -m bench.family_kernel {' '.join(args.argv)}` on {platform.node()} "
             f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f} at the end), jax {jax.__version__} "
             f"({jax.default_backend()}), scikit-learn {sklearn.__version__}, svmopt {svmopt.__version__}. "
             f"Medians of {args.repeats} interleaved calls; ratio = svmopt / peer (< 1: svmopt faster); the peer is "
             "scikit-learn (LIBSVM) unless the setting names LIBLINEAR.", "",
             "| case | setting | n x d | svmopt wall s | peer wall s | ratio wall | ratio CPU | svmopt compile s "
             "| error svmopt / peer | svmopt gap | iterations | SVs svmopt / peer |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for case, rows in results.items():
        for r in rows:
            lines.append(f"| {case} | {r['setting']} | {r['n']} x {r['d']} | {r['ours'][0]:.3f} | {r['ref'][0]:.3f} "
                         f"| {r['ratio_wall']:.2f} | {r['ratio_cpu']:.2f} | {r['compile']:.1f} "
                         f"| {r['dual_ours']:.1e} / {r['dual_ref']:.1e} | {r['gap']:.1e} ({r['status']}) "
                         f"| {r['iterations']} | {r['sv'][0]} / {r['sv'][1]} |")
    lines += ["", "Dual error: (D_best - D) / |D_best| over the two models (0 for the better one); for the linear "
              "one-class rows the primal error (P - P_best) / |P_best| over the three (svmopt, LIBLINEAR, "
              "scikit-learn); svmopt's own certificate bounds its objective error by its gap. SVs -1: not reported. "
              "Compile: the first call's time over the median (0 where JAX's persistent cache already held the "
              "programs)."]
    return "\n".join(lines) + "\n"


def main(argv=None):
    import sys

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.argv = sys.argv[1:] if argv is None else list(argv)
    probs = problems(args.rows)
    results = {}
    for case in args.cases.split(","):
        kind, X, t, p = probs[case]
        results[case] = run_case(kind, X, t, p, args.repeats)
        print(table({case: results[case]}, args).splitlines()[-3], flush=True)
    text = table(results, args)
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
