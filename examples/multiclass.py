"""Multiclass: one-vs-rest as one batched solve, against scikit-learn's LinearSVC.

pendigits (10 digits, 16 features scaled to [0, 1]): the 10 problems "digit k against the
rest" share X, so svmopt builds the problem once and runs them as lanes of one compiled
program (``svmopt.solve_multiclass``); each class reports its own status and gap.

    python examples/multiclass.py
"""
import numpy as np

import svmopt
from svmopt.losses import squared_hinge

from _data import data


def main(n=2000):
    X, y = svmopt.load_svmlight(data("pendigits"), n_features=16)
    Xt, yt = svmopt.load_svmlight(data("pendigits.t"), n_features=16)
    X, y, Xt = X[:n] / 100.0, y[:n], Xt / 100.0  # raw features are 0..100
    r = svmopt.solve_multiclass(X, y, loss=squared_hinge, C=1.0, intercept_scaling=1.0)
    print(r)
    for c, st, gap in zip(r.classes, r.status, r.relative_gap):
        print(f"  digit {int(c)}: {svmopt.Status(int(st)).name}, relative gap {gap:.1e}")
    acc = r.score(Xt, yt) if hasattr(r, "score") else float(np.mean(r.predict(Xt) == yt))
    print(f"test accuracy {100 * acc:.2f}% on {Xt.shape[0]} digits "
          f"(compile {r.timings['compile']:.2f} s, run {r.timings['run']:.2f} s)")
    try:
        from sklearn.svm import LinearSVC
    except ImportError:
        return acc, None
    ref = LinearSVC(C=1.0, intercept_scaling=1.0).fit(X, y)
    ref_acc = ref.score(Xt, yt)
    print(f"scikit-learn LinearSVC (same problem): {100 * ref_acc:.2f}%")
    return acc, ref_acc


if __name__ == "__main__":
    main()
