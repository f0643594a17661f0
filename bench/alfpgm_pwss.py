"""AL-FPGM's working-set selections against each other and against scikit-learn's SVC (LIBSVM's SMO),
the comparison of the paper's Table 2 (Aregbesola & Griva 2022: C = 100, an RBF kernel, its ALFPGM
with pWSS and 50-100 pairs faster than scikit-learn's SMO on 18k-98k rows).

    python -m bench.alfpgm_pwss [--rows 20000] [--C 100] [--gamma 1] [--sets ijcnn1,a9a]

Per set: svmopt's default ``alfpgm`` (FIFO first-order selection, SMO inside 512-variable working
sets), ``alfpgm(selection="pwss", pairs=50)`` (pWSS, SMO inside), the paper's variant
``alfpgm(selection="pwss", inner="alfpgm", pairs=50)``, each in float64 to the default tol 1e-3
(compile timed apart), and ``SVC(C, gamma, tol=1e-3)``; the primal objective of each model in numpy.
"""
from __future__ import annotations

import argparse
import datetime
import os
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SVMOPT_DATA", ROOT.parent / "shared" / "data"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="ijcnn1,a9a")
    ap.add_argument("--rows", type=int, default=20000)
    ap.add_argument("--C", type=float, default=100.0)
    ap.add_argument("--gamma", type=float, default=None, help="RBF gamma (default: 1 / features)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    import jax
    jax.config.update("jax_enable_x64", True)
    import svmopt
    from sklearn.svm import SVC
    from svmopt.kernels import rbf
    from svmopt.solvers import alfpgm

    methods = [("alfpgm (default: fifo, smo)", alfpgm),
               ("alfpgm(selection='pwss', pairs=50)", alfpgm(selection="pwss", pairs=50)),
               ("alfpgm(selection='pwss', inner='alfpgm', pairs=50) (paper)",
                alfpgm(selection="pwss", inner="alfpgm", pairs=50))]
    lines = [f"# AL-FPGM selections against scikit-learn's SVC ({datetime.date.today()})", "",
             f"`python -m bench.alfpgm_pwss --sets {a.sets} --rows {a.rows} --C {a.C:g}"
             f"{'' if a.gamma is None else f' --gamma {a.gamma:g}'}`; {os.cpu_count()} cores, float64, tol 1e-3", "",
             "| set | n x d | solver | status | working sets | compile s | run s | ratio to SVC | primal |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in a.sets.split(","):
        X, y = svmopt.load_svmlight(DATA / f"{name}.xz")
        X, y = X[:a.rows], y[:a.rows]
        yy = np.where(y == y.max(), 1.0, -1.0)
        gamma = a.gamma or 1.0 / X.shape[1]
        Xd = X.toarray()

        def primal(coef, sv, b):  # 1/2 beta^T K beta + C sum hinge, beta on the support vectors
            sv = sv.toarray() if hasattr(sv, "toarray") else np.asarray(sv, np.float64)
            sq = (Xd ** 2).sum(1)
            Kx = np.exp(-gamma * (sq[:, None] + (sv ** 2).sum(1)[None, :] - 2 * Xd @ sv.T))
            Ks = np.exp(-gamma * ((sv ** 2).sum(1)[:, None] + (sv ** 2).sum(1)[None, :] - 2 * sv @ sv.T))
            f = Kx @ coef + b
            return 0.5 * coef @ Ks @ coef + a.C * np.maximum(1 - yy * f, 0).sum()

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            m = SVC(C=a.C, gamma=gamma, tol=1e-3, cache_size=200).fit(Xd, yy)
            tsvc = time.perf_counter() - t
        rows = [("scikit-learn SVC (LIBSVM SMO)", "-", "-", "-", tsvc,
                 primal(m.dual_coef_.ravel(), m.support_vectors_, float(m.intercept_[0])))]
        for label, meth in methods:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = svmopt.solve(X, y, kernel=rbf(gamma), C=a.C, method=meth, dtype="float64")
            rows.append((label, r.status.name, int(r.iterations), f"{r.timings['compile']:.2f}", r.timings["run"],
                         primal(np.asarray(r.dual_coef).ravel(), r.support_vectors, float(r.b))))
        for label, status, its, comp, run, P in rows:
            lines.append(f"| {name} | {X.shape[0]} x {X.shape[1]} | {label} | {status} | {its} | {comp} | {run:.2f} | "
                         f"{run / tsvc:.2f} | {P:.6g} |")
            print(lines[-1], flush=True)
    text = "\n".join(lines) + "\n"
    out = Path(a.out) if a.out else ROOT / "bench" / "results" / f"{datetime.date.today()}-alfpgm-pwss-cpu.md"
    out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
