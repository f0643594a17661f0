"""A kernel SVM: RBF on heart_scale, by AL-FPGM, against LIBSVM (scikit-learn's SVC).

``SVMClassifier(kernel="rbf")`` picks a kernel method (alfpgm, the SVM dual with its
equality constraint, as LIBSVM solves); ``svmopt.solve(..., kernel=rbf(gamma))`` is the
same at the functional level. Kernel rows are computed in blocks on demand.

    python examples/kernel.py
"""
import numpy as np

import svmopt
from svmopt.estimators import SVMClassifier

from _data import data


def main():
    X, y = svmopt.load_svmlight(data("heart_scale"))
    rng = np.random.default_rng(0)
    idx = rng.permutation(X.shape[0])
    tr, te = idx[:180], idx[180:]
    clf = SVMClassifier(kernel="rbf", gamma=0.2, C=1.0).fit(X[tr], y[tr])
    res = clf.result_
    print(f"{res.method}: {res.status.name}, {len(clf.support_)} support vectors, "
          f"relative gap {float(res.relative_gap):.1e}")
    acc = clf.score(X[te], y[te])
    print(f"test accuracy {100 * acc:.2f}% on {len(te)} held-out rows")
    try:
        from sklearn.svm import SVC
    except ImportError:
        return acc, None, None
    svc = SVC(kernel="rbf", gamma=0.2, C=1.0).fit(X[tr], y[tr])
    agree = float(np.mean(svc.predict(X[te]) == clf.predict(X[te])))
    print(f"LIBSVM (SVC): {100 * svc.score(X[te], y[te]):.2f}%; the two agree on {100 * agree:.1f}% of the rows")
    return acc, svc.score(X[te], y[te]), agree


if __name__ == "__main__":
    main()
