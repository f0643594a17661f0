"""Exact vs inexact SVM-ALM (issue 36, item 3): iterations and wall time to CONVERGED.

Hinge + l2, free intercept, float64, tol 1e-3, C in {0.01, 1, 100}: the default inexact ALM
(Algorithm 2, one gradient step per iteration), the exact one (Algorithm 1, eq. 14-15 solved by
the centred Gram matrix's eigendecomposition, solver="factor", or by CG to float64 precision,
solver="cg"), each at the default fixed mu and with schedule="residual", rho=1.05. Time: the
first call (compile included, unless a stored program was found) and the best of two warm calls.

    python -m bench.alm_exact --sets heart_scale,diabetes_scale,a1a   # markdown table on stdout
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from bench.certify import load  # noqa: F401  (enables x64 as it is imported)
import svmopt
from svmopt.losses import hinge
from svmopt.solvers import alm

CONFIGS = {"inexact": alm, "exact-factor": alm(variant="exact", solver="factor"),
           "exact-cg": alm(variant="exact", solver="cg"),
           "inexact+residual1.05": alm(schedule="residual", rho=1.05),
           "exact-factor+residual1.05": alm(variant="exact", solver="factor", schedule="residual", rho=1.05)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default="heart_scale,diabetes_scale,a1a")
    ap.add_argument("--C", default="0.01,1,100")
    a = ap.parse_args(argv)
    print("| set | C | variant | status | iterations | rel. gap | P | first s | warm s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in a.sets.split(","):
        X, y = load(name)
        for C in (float(c) for c in a.C.split(",")):
            for cname, m in CONFIGS.items():
                ts = []
                for _ in range(3):
                    t = time.perf_counter()
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        r = svmopt.solve(X, y, loss=hinge, method=m, C=C, dtype=np.float64)
                        float(r.primal_objective)
                    ts.append(time.perf_counter() - t)
                print(f"| {name} | {C:g} | {cname} | {r.status.name} | {int(r.iterations)} | "
                      f"{float(r.gap) / abs(float(r.primal_objective)):.1e} | {float(r.primal_objective):.8g} | "
                      f"{ts[0]:.2f} | {min(ts[1:]):.3f} |", flush=True)


if __name__ == "__main__":
    main()
