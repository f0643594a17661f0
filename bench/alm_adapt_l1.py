"""alm with l1 / elastic net: mu fixed (``adapt_mu=False``, the default before 2026-11-29) against the
adapted mu (``adapt_mu=None``, now on with every regularizer), per set x pair x C, at alm's defaults.

    python -m bench.alm_adapt_l1 --dtype float64
    python -m bench.alm_adapt_l1 --dtype float32 --sets heart_scale,a5a

Prints one row per case: status (first four letters), iterations, relative gap, wall seconds (the first
call of a shape includes its compile), then the counts of certified runs.
"""
from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

from bench.certify import load  # (enables float64)

import svmopt
from svmopt.losses import hinge, logistic, squared_hinge
from svmopt.regularizers import elastic_net, l1
from svmopt.solvers import alm

PAIRS = [(hinge, l1), (squared_hinge, l1), (logistic, l1), (hinge, elastic_net(0.5))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dtype", default="float64", choices=("float32", "float64"))
    ap.add_argument("--sets", default="heart_scale,diabetes_scale,breast-cancer-std,a5a,a1a")
    ap.add_argument("--C", default="0.01,1,100")
    a = ap.parse_args(argv)
    dt = np.dtype(a.dtype).type
    counts = {False: 0, None: 0}
    n = 0
    for name in a.sets.split(","):
        X, y = load(name)
        for loss, reg in PAIRS:
            for C in (float(c) for c in a.C.split(",")):
                row = []
                for adapt in (False, None):
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        t = time.perf_counter()
                        r = svmopt.solve(X, y, loss=loss, reg=reg, method=alm(adapt_mu=adapt), C=C, dtype=dt)
                        t = time.perf_counter() - t
                    counts[adapt] += int(r.status == svmopt.Status.CONVERGED)
                    row.append(f"{r.status.name[:4]} {r.iterations:5d} {float(r.relative_gap):.1e} {t:5.1f}s")
                n += 1
                print(f"{name:17s} {loss!r:13s} {reg.name:11s} C={C:<5g} | " + " | ".join(row), flush=True)
    print(f"{n} cases: certified with mu fixed {counts[False]}, adapted {counts[None]}")


if __name__ == "__main__":
    main()
