"""``svmopt-train``: LIBLINEAR's ``train`` options on svmopt's solvers (the package docstring)."""
from __future__ import annotations

import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import jax

from ..estimators.resolvers import resolve_kernel
from ..io import load_svmlight, save_liblinear_model
from ..losses import MissingCapability
from ..model_io import save_model
from ..multiclass import solve_multiclass
from ..oneclass import solve_oneclass
from ..path import path as solve_path
from ..result import Status
from ..solve import solve
from . import family
from .common import COMPRESSED, Usage, check_writable, label, regression_scores, run
from .kernel_options import fit_probability, gamma_value, gram_rows_of_file, kernel_choice
from .options import LIBLINEAR, class_weights, devices_of, plan_of, split_weights, train_parser

__all__ = ["train_main", "LIBLINEAR"]


def train_main(argv=None) -> int:
    """Entry point of ``svmopt-train``; returns the exit code."""
    return run(_train, sys.argv[1:] if argv is None else list(argv), "svmopt-train")


def _default_model_file(data_file) -> Path:
    name = Path(data_file).name
    for suffix in COMPRESSED:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return Path(name + ".model")


def _train(argv) -> int:
    argv, weight_pairs = split_weights(argv)
    args = train_parser().parse_args(argv)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    if args.folds is not None and args.folds < 2:
        raise ValueError("n-fold cross validation: n must >= 2")
    if args.progress is not None and args.progress < 0:
        raise Usage(f"svmopt-train: error: --progress takes K >= 0 (a line every K iterations; 0: off), "
                    f"got {args.progress}")
    if args.model_file is not None and not args.model_file.strip():
        raise Usage("svmopt-train: error: the model file name is empty")
    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    plan = plan_of(args)
    args.task, args.nu = plan.task, plan.nu
    devices = devices_of(args.devices)
    args.kernel_name, kernel_model = kernel_choice(args)
    if kernel_model and args.model_format == "liblinear":
        raise ValueError("a kernel model has no LIBLINEAR form; use --model-format svmopt")
    if args.probability and args.model_format == "liblinear":
        raise ValueError("-b 1: LIBLINEAR's model format has no probability estimates; use --model-format svmopt")
    if args.probability and plan.task != "classify":
        raise ValueError(f"-b 1: probability estimates are for classifiers, not a "
                         f"{'one-class' if plan.task == 'oneclass' else 'regression'} model")
    if plan.task != "classify" and args.find_C:
        raise ValueError(f"-C searches C for classifiers; for a {'one-class' if plan.task == 'oneclass' else 'regression'}"
                         " model, run -v n for each C")
    if plan.task == "oneclass" and args.model_format == "liblinear":
        raise ValueError("the one-class model is written in svmopt's format only; drop --model-format liblinear")
    model_file = None
    if args.folds is None and not args.find_C:
        model_file = Path(args.model_file) if args.model_file else _default_model_file(args.data_file)
        check_writable(model_file, "model")

    t0 = time.perf_counter()
    gram = args.kernel_name == "precomputed"
    X, y = load_svmlight(args.data_file, n_features=args.n_features, zero_based=gram)
    if X.shape[0] == 0:
        raise ValueError(f"{args.data_file} holds no data rows (an empty file?)")
    classes = None if plan.regression else np.unique(y)  # a regression has real targets, no classes
    say(f"read {args.data_file}: {X.shape[0]} rows, {X.shape[1]} features, {X.nnz} non-zeros, "
        + (f"targets in [{y.min():g}, {y.max():g}]" if classes is None else f"{classes.size} classes")
        + f" ({time.perf_counter() - t0:.2f} s)")
    if gram:  # LIBSVM's -t 4 rows: 0:serial, then the kernel values
        X = gram_rows_of_file(X)
    if plan.regression and weight_pairs:
        raise ValueError("a regression has no classes to weight (-wi)")
    if plan.task == "classify" and classes.size < 2:
        raise ValueError(f"the data has only one class ({label(classes[0])}); a classifier needs two")
    if kernel_model and args.find_C:
        raise ValueError("-C searches C on linear paths; with a kernel, use -v n for each C")
    kw = dict(plan.kw, sample_weight=class_weights(weight_pairs, y, say))
    if not args.quiet and args.progress != 0:
        kw["verbose"] = _progress_printer(args.progress)
    problem = "Crammer-Singer multiclass" if _cs(args) else f"loss {plan.loss!r}, reg {plan.reg_name}"
    what = (f"LIBLINEAR -s {plan.liblinear_type.number} ({plan.liblinear_type.name}): " if plan.liblinear_type
            else "") + (f"one-class SVM, nu={plan.nu:g}, {args.dtype}" if plan.task == "oneclass" else
                        f"{problem}, C={kw['C']:g}, {plan.intercept}, {args.dtype}")

    if args.find_C:
        if _cs(args):
            raise ValueError("-C searches C on one-vs-rest paths; with -s 4 (as in LIBLINEAR) use -v n for each C")
        return _find_C(args, X, y, classes, kw, what, say)
    if args.folds is not None:
        return _cross_validate(args, X, y, classes, kw, what, devices, kernel_model, say)

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res, ovr = _fit(args, X, y, classes, kw, what, devices, kernel_model, say)
        if args.probability:
            say("probability estimates: sigmoids on 5-fold cross-validated decision values")
            fit_probability(res, ovr, X, y, _kernel_kw(kw) if kernel_model else kw,
                            res.kernel if kernel_model else None)
    _warn(caught, args.quiet)
    say(_summary(res, ovr, time.perf_counter() - t0))
    _save(res, model_file, args, plan)
    say(f"model written to {model_file} ({model_file.stat().st_size} bytes, {args.model_format} format)")
    return 0


def _fit(args, X, y, classes, kw, what, devices, kernel_model, say, announce=True):
    """One training run on (X, y): binary solve, one-vs-rest, a kernel model, a one-class SVM, a regression."""
    if args.task == "oneclass":
        kernel = _kernel_of(args, X) if kernel_model else None
        if announce:
            say(f"training a one-class SVM: nu={args.nu:g}, {'linear' if kernel is None else repr(kernel)}, "
                f"{args.dtype}; labels are ignored")
        kw = {k: v for k, v in kw.items() if k in family.ONECLASS_KW}
        return solve_oneclass(X, nu=args.nu, kernel=kernel, **kw), False
    if kernel_model:
        return _fit_kernel(args, X, y, classes, kw, devices, say, announce)
    if args.task == "regression":
        if announce:
            say(f"training a regression: {what}")
        return solve(X, y, **kw), False
    if _cs(args):
        if announce:
            say(f"training {what}; one joint problem over {classes.size} classes (compiles on the first run, "
                "cached on disk afterwards)")
        return solve_multiclass(X, y, strategy="crammer_singer", **kw), False
    ovr = classes.size > 2
    if announce:
        say(f"training {what}"
            + (f"; one-vs-rest over {classes.size} classes in one batched solve" if ovr else "")
            + " (compiles on the first run, cached on disk afterwards)")
    if ovr:
        return solve_multiclass(X, y, devices=devices, **kw), True
    return solve(X, y, **kw), False


def _kernel_of(args, X):
    return resolve_kernel(args.kernel_name, X, gamma=gamma_value(args), degree=args.degree, coef0=args.coef0)


def _cs(args) -> bool:
    """LIBLINEAR's -s 4: Crammer and Singer's joint multiclass problem (with a kernel, -s 4 is LIBSVM's nu-SVR)."""
    return args.solver_type == 4 and not family.libsvm(args)


def _fit_kernel(args, X, y, classes, kw, devices, say, announce=True):
    """A kernel SVM: binary solve, or LIBSVM's one-vs-one for more classes; epsilon-SVR (LIBSVM -s 3)."""
    kernel = _kernel_of(args, X)
    loss = kw["loss"]
    kw = _kernel_kw(kw)
    if args.task == "regression":
        if announce:
            say(f"training epsilon-SVR: {kernel!r}, {loss!r}, C={kw['C']:g}, method "
                f"{kw['method'].name if 'method' in kw else 'auto (alfpgm)'}")
        try:
            return solve(X, y, kernel=kernel, loss=loss, **kw), False
        except MissingCapability as exc:
            raise ValueError(f"kernel regression in svmopt is epsilon-SVR (LIBSVM -s 3, loss epsilon_insensitive); "
                             f"{loss!r} needs a linear model: drop the kernel ({exc})") from exc
    ovo = classes.size > 2
    if announce:
        name = kw["method"].name if "method" in kw else "auto (alfpgm for the hinge)"
        say(f"training a kernel SVM: {kernel!r}, C={kw['C']:g}, method {name}"
            + (f"; one-vs-one over {classes.size * (classes.size - 1) // 2} pairs of {classes.size} classes"
               if ovo else ""))
    if ovo:
        return solve_multiclass(X, y, strategy="ovo", kernel=kernel, devices=devices, **kw), "ovo"
    return solve(X, y, kernel=kernel, **kw), False


def _kernel_kw(kw):
    """A kernel model is LIBSVM's C-SVC: the hinge loss, l2 and a free intercept, whatever the options."""
    return {k: v for k, v in kw.items() if k not in ("loss", "reg", "intercept_scaling", "fit_intercept")}


def _warn(caught, quiet):
    for w in caught:
        if not quiet:
            print(f"svmopt-train: warning: {w.message}", file=sys.stderr)


def _save(res, model_file, args, plan):
    if args.model_format == "svmopt":
        save_model(res, model_file)
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        save_liblinear_model(res, model_file, reg=plan.reg_name,
                             solver_type=plan.liblinear_type.name if plan.liblinear_type else None)
    _warn(caught, args.quiet)


def _summary(res, ovr, seconds) -> str:
    t = res.timings
    times = f"{seconds:.2f} s (compile {t.get('compile', 0):.2f} s, run {t.get('run', 0):.2f} s)"
    if ovr == "ovo":  # one line, not one per pair
        return (f"done in {times}; one-vs-one: {res.message}, {int(np.sum(res.iterations))} iterations "
                f"in all, {np.shape(res.support_vectors)[0]} support vectors")
    if not ovr:
        return (f"{res.method}: {res.status.name.lower()} after {res.iterations} iterations: "
                f"primal {float(res.primal_objective):.6g}, relative gap {float(res.relative_gap):.3g}; {times}")
    lines = [f"{res.method}: done in {times}; per class:"]
    for c, st, it, p, g in zip(res.classes, np.asarray(res.status), np.asarray(res.iterations),
                               np.asarray(res.primal_objective), np.asarray(res.relative_gap)):
        lines.append(f"  class {label(c)}: {Status(int(st)).name.lower()} after {int(it)} iterations, "
                     f"primal {float(p):.6g}, relative gap {float(g):.3g}")
    return "\n".join(lines)


def _progress_printer(every=None, prefix=""):
    """A verbose callback: a line every ``every`` iterations, or about every second when None
    (per class for one-vs-rest: the driver labels each problem)."""
    last_k, last_t = {}, {}

    def show(info):
        k, label, t = info["iteration"], info.get("label", ""), info["elapsed"]
        if every:
            due = k // every > last_k.get(label, -1)
        else:
            due = t - last_t.get(label, -math.inf) >= 1.0
        if due:
            last_k[label], last_t[label] = (k // every if every else k), t
            print(f"{show.prefix}{label}iter {int(k):7d}  objective {info['objective']:.8g}  "
                  f"rel.gap {info['relative_gap']:.3g}  {t:.2f} s", flush=True)
    show.prefix = prefix
    if every:
        show.every = every  # the driver ends its chunks on these iterations
    return show


# --------------------------------------------------------------------------- cross validation


def _folds(n, k, seed):
    """LIBLINEAR's folds: a random permutation cut into k consecutive parts."""
    k = min(k, n)
    perm = np.random.default_rng(seed).permutation(n)
    return [perm[i * n // k:(i + 1) * n // k] for i in range(k)]


def _train_rows(n, test, y=None, fold=None, k=None):
    """The training rows of a fold; with ``y``, a fold whose training rows hold one class raises,
    naming the fix (fewer folds or more data)."""
    keep = np.ones(n, bool)
    keep[test] = False
    rows = np.flatnonzero(keep)
    if y is not None and np.unique(y[rows]).size < 2:
        raise ValueError(f"fold {fold + 1} of {k}: its training rows hold only one class ({label(y[rows][0])}), and a "
                         f"classifier needs two: use fewer folds (-v), or more data ({n} rows)")
    return rows


def _fold_kw(kw, rows, i, k):
    out = dict(kw)
    if kw.get("sample_weight") is not None:
        out["sample_weight"] = kw["sample_weight"][rows]
    if callable(kw.get("verbose")):
        out["verbose"] = _progress_printer(getattr(kw["verbose"], "every", None), prefix=f"fold {i + 1}/{k} ")
    return out


def _cross_validate(args, X, y, classes, kw, what, devices, kernel_model, say) -> int:
    folds = _folds(X.shape[0], args.folds, args.seed)
    k = len(folds)
    if k < args.folds:
        say("WARNING: # folds > # data. Will use # folds = # data instead (i.e., leave-one-out cross validation)")
    say(f"{k}-fold cross validation, training {what}")
    pred = np.empty(y.shape[0], dtype=y.dtype)
    gram = args.kernel_name == "precomputed"  # a Gram matrix: the fold's columns too
    t0 = time.perf_counter()
    for i, test in enumerate(folds):
        rows = _train_rows(X.shape[0], test, y if args.task == "classify" else None, i, k)
        ti = time.perf_counter()
        Xtr, Xte = (X[np.ix_(rows, rows)], X[np.ix_(test, rows)]) if gram else (X[rows], X[test])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res, _ = _fit(args, Xtr, y[rows], None if classes is None else np.unique(y[rows]),
                          _fold_kw(kw, rows, i, k), what, devices, kernel_model, say, announce=False)
        _warn(caught, args.quiet)
        pred[test] = res.predict(Xte)
        score = (f"mean squared error on {len(test)} held out {regression_scores(y[test], pred[test])[0]:.6g}"
                 if args.task == "regression" else
                 f"accuracy on {len(test)} held out {100.0 * np.mean(pred[test] == y[test]):.4g}%")
        say(f"fold {i + 1}/{k}: {len(rows)} training rows, {score} ({time.perf_counter() - ti:.2f} s)")
    say(f"cross validation done in {time.perf_counter() - t0:.2f} s")
    # LIBLINEAR's (LIBSVM's) lines, printed even with -q (they are the result)
    if args.task == "regression":
        mse, scc = regression_scores(y, pred)
        print(f"Cross Validation Mean squared error = {mse:g}\nCross Validation Squared correlation coefficient = "
              f"{scc:g}", flush=True)
        return 0
    print("Cross Validation Accuracy = %g%%" % (100.0 * np.mean(pred == y)), flush=True)
    return 0


def _start_C(X, kw):
    """LIBLINEAR's calc_start_C: 2^floor(log2(1 / (f l max ||x_i||^2))), f = 1 (logistic) or 2 (SVMs)."""
    sq = np.asarray(X.multiply(X).sum(axis=1)).ravel()
    s = kw.get("intercept_scaling")
    max_xx = float(sq.max()) + (s * s if s else 0.0)
    f = 1.0 if repr(kw["loss"]).startswith("logistic") else 2.0
    return 2.0 ** math.floor(math.log2(1.0 / (f * X.shape[0] * max(max_xx, 1e-300))))


def _find_C(args, X, y, classes, kw, what, say) -> int:
    """LIBLINEAR's -C: cross-validated accuracy along C = start, 2 start, ... <= 1024 (warm-started paths)."""
    k = args.folds or 5
    max_C = 1024.0
    start = min(args.C if args.C is not None else _start_C(X, kw), max_C)
    grid = start * 2.0 ** np.arange(int(math.floor(math.log2(max_C / start) + 1e-9)) + 1)
    folds = _folds(X.shape[0], k, args.seed)
    k = len(folds)
    say(f"Doing parameter search with {k}-fold cross validation.")
    say(f"training {what}; {grid.size} values of C on a warm-started path per fold"
        + (f" ({classes.size} one-vs-rest problems at each)" if classes.size > 2 else ""))
    kw = {key: v for key, v in kw.items() if key != "C"}
    correct = np.zeros(grid.size)
    t0 = time.perf_counter()
    for i, test in enumerate(folds):
        rows = _train_rows(X.shape[0], test, y, i, k)
        ti = time.perf_counter()
        fkw = _fold_kw(kw, rows, i, k)
        Xtr, ytr = X[rows], y[rows]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pred = solve_path(Xtr, ytr, C=grid, **fkw).predict(X[test])  # (n_C, m), one-vs-rest with K > 2
        _warn(caught, args.quiet)
        correct += np.sum(pred == y[test][None, :], axis=1)
        say(f"fold {i + 1}/{k}: path over {grid.size} values of C in {time.perf_counter() - ti:.2f} s")
    rate = correct / X.shape[0]
    best = int(np.argmax(rate))  # the smallest C among the best, as LIBLINEAR keeps the first
    for c, r in zip(grid, rate):
        say("log2c=%7.2f\trate=%g" % (math.log2(c), 100.0 * r))
    if grid[-1] * 2 > max_C:
        say("WARNING: maximum C reached.")
    say(f"parameter search done in {time.perf_counter() - t0:.2f} s")
    print("Best C = %g  CV accuracy = %g%%" % (grid[best], 100.0 * rate[best]), flush=True)
    return 0


