"""``svmopt-predict``: labels (or, for a regression model, values) of a LIBSVM file from an svmopt or LIBLINEAR
model, and the accuracy (LIBLINEAR's mean squared error and squared correlation coefficient for a regression)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..io import is_liblinear_model, load_liblinear_model, load_svmlight
from ..model_io import load_model
from ..result import RegressionResult
from .common import check_writable, label, parser, regression_stats, run

__all__ = ["predict_main"]


def predict_main(argv=None) -> int:
    """Entry point of ``svmopt-predict``; returns the exit code."""
    return run(_predict, sys.argv[1:] if argv is None else list(argv), "svmopt-predict")


def _predict_parser():
    p = parser("svmopt-predict", "Predict the labels (the values, for a regression model) of a LIBSVM-format "
                                  "file with a model from svmopt-train or LIBLINEAR's train (either format is "
                                  "recognised).")
    p.add_argument("test_file")
    p.add_argument("model_file")
    p.add_argument("output_file")
    p.add_argument("-q", dest="quiet", action="store_true", help="quiet mode (no outputs)")
    p.add_argument("--max-bytes", type=int, default=None, metavar="N",
                   help="allow an svmopt model file to declare up to N bytes of arrays (default: from the file's "
                        "size, svmopt.load_model's rule)")
    return p


def _predict(argv) -> int:
    args = _predict_parser().parse_args(argv)
    check_writable(Path(args.output_file), "predictions")
    if is_liblinear_model(args.model_file):
        model = load_liblinear_model(args.model_file)
        d = int(np.shape(model.w)[-1])
    else:
        if args.max_bytes is not None and args.max_bytes <= 0:
            raise ValueError(f"--max-bytes must be > 0, got {args.max_bytes}")
        model = load_model(args.model_file, max_bytes=args.max_bytes)
        d = int(model.extras["header"]["n_features"])
    X, y = load_svmlight(args.test_file)
    if X.shape[1] > d:  # features the model never saw carry no weight (LIBLINEAR ignores them)
        X = X[:, :d]
    elif X.shape[1] < d:
        X.resize(X.shape[0], d)
    pred = model.predict(X)
    with open(args.output_file, "w") as f:
        f.write("".join(label(v) + "\n" for v in pred))
    if args.quiet:
        return 0
    if isinstance(model, RegressionResult):  # LIBLINEAR's lines for its -s 11, 12, 13 models
        mse, scc = regression_stats(pred, y)
        print("Mean squared error = %g (regression)\nSquared correlation coefficient = %g (regression)" % (mse, scc),
              flush=True)
    else:
        correct = int(np.sum(pred == y))
        print("Accuracy = %g%% (%d/%d)" % (100.0 * correct / max(len(y), 1), correct, len(y)), flush=True)
    return 0
