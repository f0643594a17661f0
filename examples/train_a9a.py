"""Train a linear SVM on a9a with SVM-ALM and test it on a9a.t (the README's first command).

    python examples/train_a9a.py [--loss hinge|squared_hinge|P] [--C 1.0] [--tol 1e-3]

Data come from ../shared/data (the LIBSVM files beside the repository).
"""
import argparse
import time
from pathlib import Path

import numpy as np

import svmopt
from svmopt.losses import lp_hinge
from svmopt.solvers import alm

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--loss", default="hinge", help="hinge, squared_hinge or a real p >= 1 (Lp hinge)")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--tol", type=float, default=1e-3, help="relative duality gap to stop at")
    ap.add_argument("--data", default=str(DATA), help="folder holding a9a.xz and a9a.t.xz")
    args = ap.parse_args()
    p = {"hinge": 1.0, "squared_hinge": 2.0}.get(args.loss)
    loss = lp_hinge(float(args.loss) if p is None else p)

    t0 = time.perf_counter()
    X, y = svmopt.load_svmlight(Path(args.data) / "a9a.xz", n_features=123)
    Xt, yt = svmopt.load_svmlight(Path(args.data) / "a9a.t.xz", n_features=123)
    print(f"a9a: {X.shape[0]} x {X.shape[1]} train, {Xt.shape[0]} test (read in {time.perf_counter() - t0:.2f}s)")

    r = svmopt.solve(X, y, loss=loss, method=alm, C=args.C, tol=args.tol)
    print(f"method      : SVM-ALM (inexact), loss {r.loss}, C = {args.C}, free intercept, float32")
    print(f"status      : {r.status.name} after {r.iterations} iterations ({r.message})")
    print(f"objective   : {float(r.primal_objective):.4f}")
    print(f"dual        : {float(r.dual_objective):.4f}")
    print(f"gap         : {float(r.gap):.4f} (relative {float(r.relative_gap):.2e})")
    print(f"time        : compile {r.timings['compile']:.2f}s, run {r.timings['run']:.2f}s")
    print(f"train acc   : {100 * r.score(X, y):.2f}%")
    print(f"test acc    : {100 * r.score(Xt, yt):.2f}% on a9a.t")
    return 0 if r.converged else 1


if __name__ == "__main__":
    raise SystemExit(main())
