"""LIBSVM's kernel options for svmopt-train / svmopt-predict: -t, -g, -d, -r, -b, and -t 4's data files.

    -t kernel_type   0 linear u'v, 1 polynomial (gamma u'v + coef0)^degree, 2 rbf exp(-gamma |u - v|^2),
                     3 sigmoid tanh(gamma u'v + coef0), 4 precomputed (the file holds the kernel)
    -g gamma         default with -t: 1 / num_features (LIBSVM's); with --kernel: scikit-learn's "scale"
    -d degree        default 3
    -r coef0         default 0
    -b 0 | 1         1: a probability model (svmopt.probability); svmopt-predict -b 1 prints estimates

-t makes LIBSVM's C-SVC (-s 0): the hinge loss, a free intercept, one-vs-one for more than two
classes; -t 0 is that model with the linear kernel (--kernel linear, or neither, trains LIBLINEAR's
linear model). With -t 4 each row is "label 0:i 1:K(x_i, x_1) ... n:K(x_i, x_n)" (LIBSVM's
precomputed format): training rows numbered i = 1..n in order, test rows with any 0: value.
"""
from __future__ import annotations

import numpy as np

from .. import probability
from .common import Usage

__all__ = ["KERNEL_TYPES", "add_kernel_options", "kernel_choice", "gamma_value", "gram_rows_of_file",
           "fit_probability"]

KERNEL_TYPES = {0: "linear", 1: "polynomial", 2: "rbf", 3: "sigmoid", 4: "precomputed"}
"""LIBSVM's -t numbers and the kernel names svmopt gives them."""


def add_kernel_options(p):
    """LIBSVM's -t -g -d -r -b on svmopt-train's parser (--kernel, --gamma, --degree, --coef0 kept)."""
    k = p.add_argument_group("LIBSVM's kernel options (a kernel SVM: hinge loss, free intercept, one-vs-one)")
    k.add_argument("-t", dest="kernel_type", type=int, default=None, metavar="kernel_type",
                   help="0 linear, 1 polynomial, 2 rbf, 3 sigmoid, 4 precomputed (rows '0:i 1:K(x_i,x_1) ...')")
    k.add_argument("--kernel", default=None, help="linear (LIBLINEAR's linear model), rbf, polynomial or sigmoid")
    k.add_argument("-g", "--gamma", dest="gamma", default=None, metavar="gamma",
                   help="a number, 'scale' or 'auto' (default: 1/num_features with -t, 'scale' with --kernel)")
    k.add_argument("-d", "--degree", dest="degree", type=int, default=3, metavar="degree",
                   help="polynomial degree (default 3)")
    k.add_argument("-r", "--coef0", dest="coef0", type=float, default=0.0, metavar="coef0",
                   help="polynomial / sigmoid coef0 (default 0)")
    k.add_argument("-b", dest="probability", type=int, choices=(0, 1), default=0, metavar="probability_estimates",
                   help="1: also fit probability estimates (5-fold cross-validated Platt sigmoids; default 0)")


def kernel_choice(args):
    """(kernel name or None, whether it is a kernel model) from -t / --kernel."""
    if args.kernel_type is not None:
        if args.kernel:
            raise ValueError("-t and --kernel both name a kernel; give one")
        if args.kernel_type not in KERNEL_TYPES:
            raise ValueError(f"unknown kernel type -t {args.kernel_type}; LIBSVM's are 0-4 (see --help)")
        return KERNEL_TYPES[args.kernel_type], True
    if args.kernel is None:
        return None, False
    name = args.kernel.strip().lower()
    return name, name != "linear"


def gamma_value(args):
    """-g / --gamma as resolve_kernel takes it; the default is LIBSVM's 1/num_features with -t."""
    gamma = args.gamma if args.gamma is not None else ("auto" if args.kernel_type is not None else "scale")
    if gamma in ("scale", "auto"):
        return gamma
    try:
        return float(gamma)
    except ValueError:
        raise Usage(f"svmopt-train: error: -g / --gamma takes a number > 0, 'scale' or 'auto', got {gamma!r}") from None


def gram_rows_of_file(X, n_train: int | None = None) -> np.ndarray:
    """K (m, n) from a precomputed-format file read with zero_based=True: column 0 is the row's serial
    number, columns 1..n K(x, x_1..n). Training files (``n_train`` None) number their rows 1..m in order."""
    serial = np.asarray(X[:, 0].todense()).ravel()
    if n_train is None:
        n_train = X.shape[0]
        if not np.array_equal(serial, np.arange(1, n_train + 1)):
            bad = int(np.flatnonzero(serial != np.arange(1, n_train + 1))[0])
            raise ValueError(f"-t 4 (precomputed kernel): training row {bad + 1} has serial number 0:{serial[bad]:g}; "
                             "LIBSVM's format numbers the rows 0:1 .. 0:n in order")
    K = X[:, 1:].toarray()
    out = np.zeros((X.shape[0], n_train))
    out[:, :min(n_train, K.shape[1])] = K[:, :n_train]
    return out


def fit_probability(res, kind, X, y, kw, kernel):
    """Fit the model's probability sigmoids (``svmopt.probability.fit``) into ``res.extras["platt"]``."""
    strategy = {False: "binary", True: "ovr", "ovo": "ovo"}[kind]
    kw = dict(kw, verbose=False)
    weights = kw.pop("sample_weight", None)
    if kernel is not None:
        kw["kernel"] = kernel
    res.extras["platt"] = probability.fit(X, y, strategy, sample_weight=weights, **kw)
    return res
