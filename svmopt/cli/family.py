"""The SVM family on the command line: LIBSVM's svm types with -t / ``--kernel`` (-s 0 C-SVC, -s 2 one-class,
-s 3 epsilon-SVR), LIBLINEAR's support vector regression (-s 11, 12, 13) and -s 21 (the linear one-class
SVM), with their -n nu and -p epsilon."""
from __future__ import annotations

import argparse

from ..estimators.resolvers import REGRESSION_LOSSES, resolve_method

__all__ = ["LIBSVM", "libsvm", "add_options", "help_line", "task_of", "nu_of", "epsilon_of", "oneclass_options",
           "without_type", "ONECLASS_KW"]

LIBSVM = {0: "C_SVC", 2: "ONE_CLASS", 3: "EPSILON_SVR"}
"""LIBSVM's ``-s`` svm types that svmopt has (with ``--kernel``), each by alfpgm on LIBSVM's dual."""
_MISSING = {1: "nu-SVC is not in svmopt; -s 0 (C-SVC) is", 4: "nu-SVR is not in svmopt; -s 3 (epsilon-SVR) is"}
ONECLASS_KW = ("tol", "max_iter", "dtype", "method", "verbose")
"""The keywords of a training run that ``solve_oneclass`` takes."""


def add_options(g):
    """Add -n and -p to the argument group ``g``."""
    g.add_argument("-n", dest="nu", type=float, default=None, metavar="nu",
                   help="nu of the one-class SVM (-s 21, or -s 2 with --kernel), in (0, 1] (default 0.5)")
    g.add_argument("-p", dest="epsilon", type=float, default=None, metavar="epsilon",
                   help="epsilon of support vector regression's loss (-s 11, 12, 13, or -s 3 with a kernel; "
                        "default 0.1)")


def help_line() -> str:
    """What --help says about -s with a kernel."""
    return ("With -t or --kernel, -s is LIBSVM's svm type: " + ", ".join(f"{k} {v}" for k, v in LIBSVM.items())
            + " (-n nu for 2, -p epsilon for 3).")


def libsvm(args) -> bool:
    """A kernel named (-t or --kernel): -s is LIBSVM's svm type then."""
    return bool(args.kernel) or getattr(args, "kernel_type", None) is not None


def task_of(args) -> str:
    """"classify", "oneclass" (-s 21, or -s 2 with a kernel) or "regression" (-s 11 / 12 / 13, a regression
    --loss, or -s 3 with a kernel); checks that -n and -p come with the type that takes them."""
    s = args.solver_type
    if libsvm(args) and s is not None:
        if s in _MISSING:
            raise ValueError(f"LIBSVM -s {s}: {_MISSING[s]}")
        if s not in LIBSVM:
            raise ValueError(f"unknown svm type -s {s} with a kernel; LIBSVM's that svmopt has: "
                             + ", ".join(f"{k} ({v})" for k, v in LIBSVM.items()))
        task = {0: "classify", 2: "oneclass", 3: "regression"}[s]
        if task == "regression" and args.loss:
            raise ValueError("-s 3 sets the loss (epsilon-insensitive, -p); drop --loss")
    elif s == 21:
        task = "oneclass"
    elif s in (11, 12, 13) or (s is None and str(args.loss or "").strip().lower() in REGRESSION_LOSSES):
        task = "regression"
    else:
        task = "classify"
    if args.nu is not None and task != "oneclass":
        raise ValueError("-n is for the one-class SVM (-s 21, or -s 2 with -t / --kernel)")
    if args.epsilon is not None and task != "regression":
        raise ValueError("-p sets the epsilon of support vector regression: -p is for -s 11, 12, 13, a regression "
                         "--loss (epsilon_insensitive, squared_epsilon_insensitive), or -s 3 with -t / --kernel")
    if task == "oneclass":
        clash = [o for o, v in (("--loss", args.loss), ("--reg", args.reg), ("-c", args.C), ("-B", args.bias))
                 if v is not None]
        if clash:
            raise ValueError(f"the one-class SVM takes nu (-n), not {', '.join(clash)}")
    return task


def nu_of(args) -> float:
    """-n, checked (default 0.5, LIBSVM's and LIBLINEAR's)."""
    nu = 0.5 if args.nu is None else args.nu
    if not 0 < nu <= 1:
        raise ValueError(f"-n (nu) must be in (0, 1], got {nu:g}")
    return nu


def epsilon_of(args) -> float:
    """-p, checked (default 0.1, LIBSVM's)."""
    eps = 0.1 if args.epsilon is None else args.epsilon
    if not eps >= 0:
        raise ValueError(f"-p (epsilon) must be >= 0, got {eps:g}")
    return eps


def oneclass_options(args) -> dict:
    """``solve_oneclass``'s keywords from the options: dtype, --max-iter, --tol (or -e), --method."""
    kw = dict(dtype=args.dtype)
    if args.max_iter is not None:
        if args.max_iter < 1:
            raise ValueError(f"--max-iter must be >= 1, got {args.max_iter}")
        kw["max_iter"] = args.max_iter
    tol = args.tol if args.tol is not None else args.eps
    if tol is not None:
        if not tol > 0:
            raise ValueError(f"-e / --tol must be > 0, got {tol:g}")
        kw["tol"] = tol
    if args.method:
        kw["method"] = resolve_method(args.method)
    return kw


def without_type(args):
    """The options with -s (and -n, -p) dropped: LIBSVM's -s 0 / -s 3 train on the kernel path's options."""
    return argparse.Namespace(**{**vars(args), "solver_type": None, "nu": None, "epsilon": None})
