"""Command line that a LIBLINEAR user can use as they use ``train`` / ``predict``.

    svmopt-train [options] data_file [model_file]
    svmopt-predict [-b 0|1] [-q] test_file model_file output_file

LIBLINEAR's options mean what they mean there:

  -s type   LIBLINEAR's solver type, the problem and its algorithm (table ``LIBLINEAR`` below):
            0 L2R_LR and 2 L2R_L2LOSS_SVC run ``svmopt.solvers.newton`` (primal Newton) when
            it is installed; 1 and 3 run ``dual_cd`` (LIBLINEAR's dual coordinate descent);
            5 and 6 (l1-regularized) run ``newglmnet`` (LIBLINEAR's -s 6 algorithm; ``alm``
            where its compiled kernel is not built); 11 (``newton``), 12 and 13 (``dual_cd``) are
            support vector regression on real targets; 21 (ONECLASS_SVM, -n nu) runs
            ``svmopt.solve_oneclass``. Types svmopt lacks (4, 7) stop with an error naming what
            solves that problem here. With -t or --kernel, -s is LIBSVM's svm type: 0 C-SVC,
            2 one-class (-n nu), 3 epsilon-SVR (-p epsilon).
            With -s the intercept follows LIBLINEAR: none unless -B.
  -c cost   C (default 1)
  -p eps    the epsilon of the SVR losses (-s 11, 12, 13; default 0.1)
  -e eps    stopping tolerance: for dual_cd (-s 1, -s 3) LIBLINEAR's own rule
            max PG - min PG < eps (default 0.1), after which the duality gap is still
            certified to --tol; for other methods the relative duality gap itself
  -B bias   bias > 0: LIBLINEAR's bias feature (b regularized); -B -1: no intercept
  -R        with -B 1: do not regularize the bias (a free intercept, LIBLINEAR's -R)
  -wi w     weight w on the C of class i (LIBLINEAR's -wi; repeatable)
  -v n      n-fold cross validation: prints "Cross Validation Accuracy = ...%" (no model); for a
            regression "Cross Validation Mean squared error = ..." and "... Squared correlation
            coefficient = ..."
  -C        search C by cross validation on a warm-started path (``svmopt.path``), from
            -c (or LIBLINEAR's data-based start) doubling up to 1024; prints one
            "log2c= ... rate= ..." line per C and "Best C = ...  CV accuracy = ...%" (no model)
  -q        quiet

LIBSVM's kernel options train LIBSVM's C-SVC (hinge loss, free intercept, one-vs-one for more
classes; ``svmopt.cli.kernel_options``):

  -t type   0 linear, 1 polynomial, 2 rbf, 3 sigmoid, 4 precomputed (rows "0:i 1:K(x_i,x_1) ...")
  -g gamma  (default 1/num_features) -d degree (default 3) -r coef0 (default 0)
  -b 1      also fit probability estimates (Platt's sigmoids on 5-fold cross-validated decision
            values, pairwise coupling for one-vs-one); ``svmopt-predict -b 1`` then writes LIBSVM's
            "labels c1 c2 ..." line and "label p1 p2 ..." per row

svmopt's own choices are long options: --loss (hinge, squared_hinge, logistic,
least_squares or p >= 1 for the Lp hinge, e.g. --loss 1.5; regression: epsilon_insensitive,
squared_epsilon_insensitive, squared_error), --reg, --method, --tol,
--max-iter, --dtype, --kernel rbf --gamma G (kernel SVM; one-vs-one for more classes),
--devices, --progress, --model-format svmopt|liblinear. Without -s and --loss the problem
is LIBLINEAR's default one (squared hinge, l2: that of -s 1) solved by svmopt's default
method with a free (unregularized) intercept.

Progress goes to stdout (a line about every second, or every ``--progress K``
iterations, per class for one-vs-rest, per fold for -v, per C for -C). ``--model-format
liblinear`` writes LIBLINEAR's text model, which LIBLINEAR's ``predict`` reads;
``svmopt-predict`` reads both formats. ``predict`` writes one label per line and prints
``Accuracy = 84.9951% (13838/16281)`` as LIBLINEAR does (a regression model: the values and
LIBLINEAR's "Mean squared error = ... (regression)" and "Squared correlation coefficient = ...
(regression)"); features beyond the model's are ignored, as LIBLINEAR does.

Both entry points take ``argv`` and return an exit code (0 ok, 1 error, 2 usage, 130 interrupted),
so they can be called in-process; errors print one readable line on stderr. The installed commands
(``train_script``, ``predict_script``) end the process as soon as the work is done and written: JAX's
own interpreter teardown (about half a second) is skipped, so Ctrl-C ends ``svmopt-train`` within a
chunk of iterations (~0.2 s) and a short run is not charged for it.
"""
import os
import sys

from .predict import predict_main
from .train import LIBLINEAR, train_main

__all__ = ["train_main", "predict_main", "train_script", "predict_script", "LIBLINEAR"]


def _exit(code: int):
    """Flush what was written and end the process now (files and the caches are written when made)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def train_script():
    """The ``svmopt-train`` command: ``train_main`` on the command line, then an immediate exit."""
    try:
        code = train_main()
    except KeyboardInterrupt:  # (between the checks of train_main, e.g. while importing)
        print("svmopt-train: interrupted", file=sys.stderr)
        code = 130
    _exit(code)


def predict_script():
    """The ``svmopt-predict`` command: ``predict_main`` on the command line, then an immediate exit."""
    try:
        code = predict_main()
    except KeyboardInterrupt:
        print("svmopt-predict: interrupted", file=sys.stderr)
        code = 130
    _exit(code)
