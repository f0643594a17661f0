"""``svmopt-predict``: labels (or, for a regression model, values) of a LIBSVM file from an svmopt or
LIBLINEAR model, and the accuracy (the mean squared error and squared correlation coefficient for a
regression, as LIBLINEAR's and LIBSVM's predict print them).

With ``-b 1`` (a model trained with ``svmopt-train -b 1``) the output file is LIBSVM's: a first line
``labels c1 c2 ...``, then per row the predicted label (the most probable class, as LIBSVM's) and
the class probabilities in that order. A precomputed-kernel model (``-t 4``) reads test rows in
LIBSVM's precomputed format (``0:i 1:K(x, x_1) ...``)."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from ..io import is_liblinear_model, load_liblinear_model, load_svmlight
from ..model_io import load_model
from ..probability import predict_proba
from ..result import RegressionResult
from .common import check_writable, label, parser, regression_scores, run
from .kernel_options import gram_rows_of_file

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
    p.add_argument("-b", dest="probability", type=int, choices=(0, 1), default=0, metavar="probability_estimates",
                   help="1: print probability estimates (a model from svmopt-train -b 1; default 0)")
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
    platt = model.extras.get("platt") if isinstance(model.extras, dict) else None
    if args.probability and platt is None:
        raise ValueError(f"the model {args.model_file} has no probability estimates; train it with svmopt-train -b 1")
    gram = getattr(model.kernel, "name", None) == "precomputed"
    X, y = load_svmlight(args.test_file, zero_based=gram)
    if gram:
        X = gram_rows_of_file(X, d)
    elif X.shape[1] > d:  # features the model never saw carry no weight (LIBLINEAR ignores them)
        X = X[:, :d]
    elif X.shape[1] < d:
        X.resize(X.shape[0], d)
    if args.probability:
        classes = np.asarray(model.classes)
        P = predict_proba(model, platt, X)
        pred = classes[np.argmax(P, axis=1)]  # LIBSVM's -b 1 label: the most probable class
        lines = ["labels " + " ".join(label(c) for c in classes)]
        lines += [label(v) + "".join(" %g" % q for q in row) for v, row in zip(pred, P)]
    else:
        pred = model.predict(X)
        lines = [label(v) for v in pred]
    with open(args.output_file, "w") as f:
        f.write("".join(line + "\n" for line in lines))
    if not args.quiet and isinstance(model, RegressionResult):  # LIBSVM's svm-predict lines
        mse, scc = regression_scores(y, pred)
        print(f"Mean squared error = {mse:g} (regression)\nSquared correlation coefficient = {scc:g} (regression)",
              flush=True)
    elif not args.quiet:
        correct = int(np.sum(pred == y))
        print("Accuracy = %g%% (%d/%d)" % (100.0 * correct / max(len(y), 1), correct, len(y)), flush=True)
    return 0
