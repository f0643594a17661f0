"""svmopt-train's options: LIBLINEAR's solver types, the argument parser, and the training problem
(``TrainPlan``) the options describe: loss, regularizer, method, C, tolerance, intercept, task."""
from __future__ import annotations

import dataclasses
import importlib.util
import math
import re

import numpy as np

import jax

from ..estimators.resolvers import REGRESSION_LOSSES, resolve_loss, resolve_method, resolve_reg
from ..io.liblinear_model import SOLVER_TYPES
from ..losses import epsilon_insensitive
from . import family
from .common import Usage, label, parser
from .kernel_options import add_kernel_options

__all__ = ["LiblinearType", "LIBLINEAR", "MISSING", "solver_help", "train_parser", "split_weights", "TrainPlan",
           "plan_of", "devices_of", "class_weights"]


@dataclasses.dataclass(frozen=True)
class LiblinearType:
    """What LIBLINEAR's ``-s number`` is in svmopt: the problem (loss, reg) and the method."""

    number: int
    name: str
    loss: str
    reg: str
    method: str
    note: str = ""


LIBLINEAR = {
    0: LiblinearType(0, "L2R_LR", "logistic", "l2", "newton", "primal Newton"),
    1: LiblinearType(1, "L2R_L2LOSS_SVC_DUAL", "squared_hinge", "l2", "dual_cd", "dual coordinate descent"),
    2: LiblinearType(2, "L2R_L2LOSS_SVC", "squared_hinge", "l2", "newton", "primal Newton"),
    3: LiblinearType(3, "L2R_L1LOSS_SVC_DUAL", "hinge", "l2", "dual_cd", "dual coordinate descent"),
    4: LiblinearType(4, "MCSVM_CS", "crammer_singer", "l2", "crammer_singer",
                     "Crammer and Singer's multiclass SVM, LIBLINEAR's sequential dual method"),
    5: LiblinearType(5, "L1R_L2LOSS_SVC", "squared_hinge", "l1", "auto",
                     "newglmnet, or alm without its compiled kernel; LIBLINEAR uses primal coordinate descent"),
    6: LiblinearType(6, "L1R_LR", "logistic", "l1", "auto", "newglmnet (LIBLINEAR's newGLMNET), or alm without "
                     "its compiled kernel"),
    11: LiblinearType(11, "L2R_L2LOSS_SVR", "squared_epsilon_insensitive", "l2", "newton", "primal Newton"),
    12: LiblinearType(12, "L2R_L2LOSS_SVR_DUAL", "squared_epsilon_insensitive", "l2", "dual_cd",
                      "dual coordinate descent"),
    13: LiblinearType(13, "L2R_L1LOSS_SVR_DUAL", "epsilon_insensitive", "l2", "dual_cd", "dual coordinate descent"),
    21: LiblinearType(21, "ONECLASS_SVM", "one_class", "l2", "alfpgm", "svmopt.solve_oneclass: LIBSVM's dual by "
                      "alfpgm (linear: w kept on working sets); -n nu"),
}
"""LIBLINEAR's ``-s`` numbers that svmopt has, as (problem, method); the others stop with an error."""
MISSING = {
    7: "dual coordinate descent for logistic regression is not in svmopt; the same problem is "
       "-s 0 (primal Newton) or --loss logistic (method alm)",
}
"""LIBLINEAR's types svmopt lacks, each with what to use instead."""
_NEWTON_ALTERNATIVES = {0: "--loss logistic (method alm, or --method nesvm)",
                        2: "-s 1 (dual coordinate descent, same problem) or --loss squared_hinge (method alm)",
                        11: "-s 12 (dual coordinate descent, same problem) or --loss squared_epsilon_insensitive"}
_EPSILON = 0.1  # LIBLINEAR's -p default


def solver_help():
    """The -s table of --help: the types svmopt has, each with its problem and method, and those it lacks."""
    lines = [f"  {k:2d} {t.name:<20} {t.loss}, {t.reg}: {t.method} ({t.note})" for k, t in LIBLINEAR.items()]
    lines += [f"  {k:2d} {SOLVER_TYPES[k]:<20} not in svmopt" for k in MISSING]
    return ("LIBLINEAR solver types (-s):\n" + "\n".join(lines)
            + "\n\n" + family.help_line()
            + "\n\nLIBLINEAR's -wi weight (e.g. -w1 2.5, repeatable) multiplies the C of class i."
            + "\n-s 11, 12, 13 are support vector regression: real targets, -p epsilon.")


def train_parser():
    """svmopt-train's argument parser: LIBLINEAR's options, svmopt's long options, LIBSVM's kernel options."""
    p = parser("svmopt-train", "Train an SVM on a LIBSVM-format file and write a model file.\n\n" + solver_help(),
                usage="svmopt-train [options] data_file [model_file]   (--help lists the options)")
    p.add_argument("data_file")
    p.add_argument("model_file", nargs="?", help="default: <data file name>.model in the current directory")
    g = p.add_argument_group("LIBLINEAR's options")
    g.add_argument("-s", dest="solver_type", type=int, default=None, metavar="type",
                   help="LIBLINEAR solver type (see above; default: svmopt's choice, see --loss and --method)")
    g.add_argument("-c", dest="C", type=float, default=None, metavar="cost", help="C > 0 (default 1)")
    g.add_argument("-e", dest="eps", type=float, default=None, metavar="epsilon",
                   help="stopping tolerance (dual_cd: LIBLINEAR's max PG - min PG, default 0.1; -s 4: LIBLINEAR's "
                        "max G - min G of a pass, default 0.1; other methods: the relative duality gap, default "
                        "the method's)")
    g.add_argument("-B", dest="bias", type=float, default=None, metavar="bias",
                   help="> 0: LIBLINEAR's bias feature of this value (regularized intercept); <= 0: no intercept; "
                        "default: none with -s, else a free intercept")
    g.add_argument("-R", dest="free_bias", action="store_true", help="with -B 1: do not regularize the bias")
    g.add_argument("-v", dest="folds", type=int, default=None, metavar="n", help="n-fold cross validation")
    g.add_argument("-C", dest="find_C", action="store_true", help="find the best C by cross validation")
    g.add_argument("-q", dest="quiet", action="store_true", help="quiet mode (no outputs)")
    family.add_options(g)
    o = p.add_argument_group("svmopt's options")
    o.add_argument("--loss", default=None,
                   help="hinge, squared_hinge (default), logistic, least_squares, or p >= 1 (Lp hinge); "
                        "regression: epsilon_insensitive, squared_epsilon_insensitive (with -p), squared_error")
    o.add_argument("--reg", default=None, help="l2 (default) or l1")
    o.add_argument("--method", default=None,
                   help="solver name (default: auto, the method measured fastest for the problem)")
    o.add_argument("--tol", type=float, default=None, help="relative duality gap to certify (default: the method's)")
    o.add_argument("--max-iter", type=int, default=None, help="iteration cap (default: the method's)")
    o.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    o.add_argument("--n-features", type=int, default=None, help="number of features (default: largest index)")
    o.add_argument("--devices", default=None, metavar="N",
                   help="spread one-vs-rest / one-vs-one problems over N local devices (or 'all')")
    o.add_argument("--progress", type=int, default=None, metavar="K",
                   help="a progress line every K iterations (default: about every second; 0: off)")
    o.add_argument("--seed", type=int, default=1, help="seed of the cross-validation folds (default 1)")
    o.add_argument("--model-format", choices=("svmopt", "liblinear"), default="svmopt",
                   help="svmopt (.npz, default) or liblinear (LIBLINEAR's text format)")
    add_kernel_options(p)
    return p


# --------------------------------------------------------------------------- options

_WEIGHT = re.compile(r"^-w(.+)$")


def split_weights(argv):
    """LIBLINEAR's ``-wi weight`` pairs (the label is glued to the flag), taken out of argv."""
    rest, weights = [], []
    it = iter(argv)
    for a in it:
        m = _WEIGHT.match(a)
        if not m:
            rest.append(a)
            continue
        try:
            label = float(m.group(1))
            value = float(next(it))
        except StopIteration:
            raise Usage(f"svmopt-train: error: {a} needs a weight (LIBLINEAR's -wi weight)") from None
        except ValueError:
            raise Usage(f"svmopt-train: error: {a}: -wi takes a class label i and a number "
                         "(e.g. -w1 2.5)") from None
        if not (math.isfinite(value) and value > 0):
            raise ValueError(f"{a} {value:g}: a class weight must be > 0")
        weights.append((label, value))
    return rest, weights


@dataclasses.dataclass
class TrainPlan:
    """The training problem the options describe."""

    loss: object
    reg: object
    method: object  # a Method, or None for svmopt's default
    kw: dict  # C, tol, intercept, dtype, max_iter, method parameters
    intercept: str
    liblinear_type: LiblinearType | None
    reg_name: str
    task: str = "classify"  # classify | oneclass (-s 21, LIBSVM -s 2) | regression (LIBSVM -s 3)
    nu: float = 0.5

    @property
    def regression(self) -> bool:
        """Real targets: -s 11, 12, 13, a regression --loss, or LIBSVM's -s 3 with a kernel."""
        return self.task == "regression"


def loss_named(name, p):
    """The loss of a name; a regression loss takes -p (default LIBLINEAR's 0.1), a classifier's refuses it."""
    if name.strip().lower() in REGRESSION_LOSSES:
        return resolve_loss(name, epsilon=_EPSILON if p is None and name != "squared_error" else p)
    if p is not None:
        raise ValueError(f"-p sets the epsilon of support vector regression (-s 11, 12, 13 or --loss "
                         f"{' / '.join(REGRESSION_LOSSES[:2])}); loss {name} is a classifier's")
    return resolve_loss(name)


def method_named(name, s=None):
    if name == "newton" and importlib.util.find_spec("svmopt.solvers.newton") is None:
        raise ValueError(f"LIBLINEAR -s {s} ({SOLVER_TYPES[s]}) is primal Newton, and svmopt.solvers.newton is "
                         f"not in this installation; the same problem: {_NEWTON_ALTERNATIVES[s]}")
    return resolve_method(name)


def plan_of(args) -> TrainPlan:
    """The training problem the parsed options describe (checked: clashes and bad values raise ValueError)."""
    lt = None
    task = family.task_of(args)
    if task == "oneclass":
        return TrainPlan("one_class", "l2", None, family.oneclass_options(args), "offset rho",
                     None if family.libsvm(args) else LIBLINEAR[21], "l2", task=task, nu=family.nu_of(args))
    if family.libsvm(args) and args.solver_type is not None:  # LIBSVM's -s 0 / -s 3: the kernel path's options
        plan = plan_of(family.without_type(args))
        if task == "classify":
            return plan
        loss = epsilon_insensitive(family.epsilon_of(args))
        return dataclasses.replace(plan, loss=loss, kw=dict(plan.kw, loss=loss), task=task)
    if args.solver_type is not None:
        s = args.solver_type
        if s in MISSING:
            raise ValueError(f"LIBLINEAR -s {s} ({SOLVER_TYPES[s]}): {MISSING[s]}")
        if s not in LIBLINEAR:
            raise ValueError(f"unknown solver type -s {s}; LIBLINEAR's are "
                             f"{', '.join(map(str, sorted(SOLVER_TYPES)))} (see --help)")
        clash = [o for o, v in (("--loss", args.loss), ("--reg", args.reg), ("--method", args.method)) if v]
        if clash:
            raise ValueError(f"-s {s} sets the loss, the regularizer and the method; drop {', '.join(clash)} "
                             "or drop -s")
        lt = LIBLINEAR[s]
        # -s 4's problem has its own loss; hinge stands in for it (solve_multiclass's default)
        loss = loss_named("hinge" if lt.loss == "crammer_singer" else lt.loss, args.epsilon)
        reg_name, method = lt.reg, method_named(lt.method, s)
    else:
        loss = loss_named(args.loss or "squared_hinge", args.epsilon)
        reg_name = args.reg or "l2"
        method = resolve_method(args.method) if args.method else None
    reg = resolve_reg(reg_name)
    C = 1.0 if args.C is None else args.C
    if not C > 0:
        raise ValueError(f"-c must be > 0, got {C:g}")
    kw = dict(loss=loss, reg=reg, C=C, dtype=args.dtype)
    if args.max_iter is not None:
        if args.max_iter < 1:
            raise ValueError(f"--max-iter must be >= 1, got {args.max_iter}")
        kw["max_iter"] = args.max_iter
    for flag, v in (("-e", args.eps), ("--tol", args.tol)):
        if v is not None and not (0 < v):
            raise ValueError(f"{flag} must be > 0, got {v:g}")
    if args.tol is not None:
        kw["tol"] = args.tol
    if args.eps is not None:
        name = method.name if method is not None else ""
        has_eps = method is not None and "eps" in {f.name for f in dataclasses.fields(method)}
        if name in ("dual_cd", "newton", "crammer_singer") and has_eps:
            kw["eps"] = args.eps  # LIBLINEAR's own rule; the gap is still certified to tol
        else:
            kw.setdefault("tol", args.eps)
    if method is not None:
        kw["method"] = method
    # the intercept: LIBLINEAR's -B (default -1 with -s), svmopt's free intercept otherwise
    bias = args.bias if args.bias is not None else (-1.0 if lt is not None else None)
    if args.free_bias and (bias is None or bias <= 0):
        raise ValueError("-R (do not regularize the bias) needs -B 1, as in LIBLINEAR")
    if args.free_bias and lt is not None and lt.method in ("dual_cd", "crammer_singer"):
        raise ValueError(f"-R is for LIBLINEAR's primal solvers (-s 0, 2, 5, 6, 11): the dual of -s {lt.number} "
                         "cannot keep an unregularized bias")
    if bias is None or args.free_bias:
        intercept = "free intercept"
    elif bias > 0:
        kw["intercept_scaling"] = bias
        intercept = f"bias feature {bias:g} (regularized)"
    else:
        kw["fit_intercept"] = False
        intercept = "no intercept"
    return TrainPlan(loss, reg, method, kw, intercept, lt, reg_name, task=task)


def devices_of(spec):
    """--devices as local JAX devices: None, "all" or a count checked against what this process sees."""
    if spec is None:
        return None
    devs = jax.local_devices()
    if str(spec).lower() == "all":
        return devs
    try:
        n = int(spec)
    except ValueError:
        raise ValueError(f"--devices takes a count or 'all', got {spec!r}") from None
    if not 1 <= n <= len(devs):
        raise ValueError(f"--devices {n}: this process sees {len(devs)} device(s) ({devs[0].platform}); on a CPU, "
                         "XLA_FLAGS=--xla_force_host_platform_device_count=N makes N")
    return devs[:n]


def class_weights(pairs, y, say):
    """Per-row weights from LIBLINEAR's -wi pairs (None without any); a label not in y is warned about."""
    if not pairs:
        return None
    s = np.ones(y.shape[0])
    for value_of, value in pairs:
        hit = y == value_of
        if not hit.any():  # LIBLINEAR warns and goes on
            say(f"WARNING: class label {label(value_of)} specified in weight is not found")
        s[hit] *= value
    return s


# --------------------------------------------------------------------------- train
