"""Choosing C: a warm-started path, a batched grid, and cross validation.

``svmopt.path`` solves for each C from the smallest up, each from the previous solution
(every C runs the one compiled program: C is a runtime number). ``svmopt.solve`` with a
list of C solves the grid as one batch. Both give the same models; the path is usually
faster because each solve starts near its answer. Then 3-fold cross validation picks C.

    python examples/c_path.py
"""
import numpy as np

import svmopt
from svmopt.losses import squared_hinge

from _data import data


def main():
    X, y = svmopt.load_svmlight(data("heart_scale"))
    Cs = 2.0 ** np.arange(-4, 3)
    p = svmopt.path(X, y, C=Cs, loss=squared_hinge, tol=1e-3)
    g = svmopt.solve(X, y, C=Cs, loss=squared_hinge, tol=1e-3)
    print(f"path: {p.timings['run']:.2f} s, {int(np.sum(p.iterations))} iterations; "
          f"grid: {g.timings['run']:.2f} s, {int(np.sum(g.iterations))} iterations")
    for C, a, b in zip(Cs, p.primal_objective, g.primal_objective):
        print(f"  C = {C:8.4f}: objective {a:.5f} (path) {b:.5f} (grid)")

    folds = np.array_split(np.random.default_rng(0).permutation(X.shape[0]), 3)
    correct = np.zeros(Cs.size)
    for test in folds:
        train = np.setdiff1d(np.arange(X.shape[0]), test)
        r = svmopt.path(X[train], y[train], C=Cs, loss=squared_hinge, tol=1e-3)
        correct += np.sum(r.predict(X[test]) == y[test][None, :], axis=1)  # (n_C, n_test)
    rate = correct / X.shape[0]
    best = int(np.argmax(rate))
    print(f"3-fold CV: best C = {Cs[best]:g} ({100 * rate[best]:.2f}%)")
    return p, g, Cs[best], rate


if __name__ == "__main__":
    main()
