"""Probability estimates against LIBSVM's -b 1 (scikit-learn's SVC(probability=True)).

On a fixed split of each multiclass set (the first ``--train`` training rows, the first ``--test``
rows of its test file), both fit the same rbf C-SVM (gamma scikit-learn's "scale", the same C) on
the same training rows, each with its internal 5-fold cross-validation seeded by ``seed``, for
seeds 0 .. ``--seeds`` - 1; both are scored by log-loss and accuracy on the same test rows. The
table gives each seed and the mean over seeds (the folds' randomness moves log-loss by a few
percent either way, so the means are what compare the methods). Fit times are wall seconds of the
whole fit (model and cross-validation); svmopt's first fit in the process includes compilation,
its later fits reuse the programs.

    python -m bench.probability                                  # pendigits 1000 + letter 2000, 3 seeds
    python -m bench.probability --sets pendigits --train 500 --seeds 1 --out /tmp/p.md
"""
from __future__ import annotations

import argparse
import datetime
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

from .data import load

__all__ = ["run_set", "main"]

SETS = {"pendigits": 1000, "letter": 2000}


def _log_loss(y, P, classes):
    idx = np.searchsorted(classes, y)
    return float(-np.mean(np.log(np.clip(P[np.arange(y.size), idx], 1e-15, 1.0))))


def run_set(name, n_train, n_test, seeds, C=10.0):
    """Rows (seed, method, log-loss, accuracy, fit seconds) for one set."""
    from sklearn.svm import SVC

    from svmopt.estimators import SVMClassifier

    ds = load(name)
    X, y = ds.X[:n_train].toarray(), ds.y[:n_train]
    Xt, yt = ds.X_test[:n_test].toarray(), ds.y_test[:n_test]
    rows = []
    for seed in range(seeds):
        for method, make in (("svmopt", lambda: SVMClassifier(kernel="rbf", C=C, probability=True, random_state=seed)),
                             ("SVC", lambda: SVC(kernel="rbf", C=C, probability=True, random_state=seed))):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # scikit-learn 1.9 deprecates probability=True
                t0 = time.perf_counter()
                est = make().fit(X, y)
                dt = time.perf_counter() - t0
            P = est.predict_proba(Xt)
            rows.append(dict(set=name, seed=seed, method=method, log_loss=_log_loss(yt, P, est.classes_),
                             accuracy=float(np.mean(est.predict(Xt) == yt)), fit_s=dt))
    return rows


def _table(rows):
    out = ["| set | seed | svmopt log-loss | SVC log-loss | ratio | svmopt acc | SVC acc | svmopt fit s | SVC fit s |",
           "|---|---|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["set"] for r in rows):
        mine = [r for r in rows if r["set"] == name and r["method"] == "svmopt"]
        ref = [r for r in rows if r["set"] == name and r["method"] == "SVC"]
        for a, b in zip(mine, ref):
            out.append(f"| {name} | {a['seed']} | {a['log_loss']:.4f} | {b['log_loss']:.4f} | "
                       f"{a['log_loss'] / b['log_loss']:.3f} | {a['accuracy']:.4f} | {b['accuracy']:.4f} | "
                       f"{a['fit_s']:.2f} | {b['fit_s']:.2f} |")
        la, lb = np.mean([r["log_loss"] for r in mine]), np.mean([r["log_loss"] for r in ref])
        out.append(f"| {name} | mean | {la:.4f} | {lb:.4f} | **{la / lb:.3f}** | "
                   f"{np.mean([r['accuracy'] for r in mine]):.4f} | {np.mean([r['accuracy'] for r in ref]):.4f} | "
                   f"{np.mean([r['fit_s'] for r in mine]):.2f} | {np.mean([r['fit_s'] for r in ref]):.2f} |")
    return "\n".join(out)


def main(argv=None):
    import jax
    import sklearn

    import svmopt

    p = argparse.ArgumentParser(prog="python -m bench.probability", description=__doc__.split("\n\n")[0])
    p.add_argument("--sets", default=",".join(SETS), help="comma list of pendigits, letter")
    p.add_argument("--train", type=int, default=None, help="training rows (default: pendigits 1000, letter 2000)")
    p.add_argument("--test", type=int, default=None, help="test rows (default: as many as training rows)")
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--C", type=float, default=10.0)
    p.add_argument("--out", default=None, help="markdown file (default: print only)")
    args = p.parse_args(argv)
    rows = []
    for name in args.sets.split(","):
        n = args.train or SETS[name]
        rows += run_set(name, n, args.test or n, args.seeds, args.C)
    stamp = (f"{datetime.date.today()}, {platform.node()} ({jax.default_backend()}), svmopt {svmopt.__version__}, "
             f"jax {jax.__version__}, scikit-learn {sklearn.__version__}; "
             f"`python -m bench.probability {' '.join(sys.argv[1:] if argv is None else argv)}`".rstrip())
    text = f"# Probability estimates: svmopt against SVC(probability=True)\n\n{stamp}\n\n{_table(rows)}\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)
    return rows


if __name__ == "__main__":
    main()
