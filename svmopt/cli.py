"""Command line in the spirit of LIBLINEAR's ``train`` / ``predict``.

    svmopt-train [options] data_file [model_file]
    svmopt-predict [-q] test_file model_file output_file

``train`` reads a LIBSVM file (.xz/.bz2/.gz read as such), fits the Section-1
problem (two labels: one binary solve; more: one-vs-rest, one vmapped solve) and
writes a model file (``svmopt.model_io``; default name: the data file's name without
a compression suffix, plus ".model"). Progress goes to stdout: a line per stage
and, for binary problems, the objective every ``--progress`` iterations.
``predict`` writes one label per line and prints ``Accuracy = 84.9951% (13838/16281)``
as LIBLINEAR does; features beyond the model's are ignored, as LIBLINEAR does.

Differences from LIBLINEAR: ``-s`` takes a loss (hinge, squared_hinge, a p >= 1 for
the Lp hinge), not a solver number; the intercept is free (unregularized) unless
``-B s`` asks for LIBLINEAR's bias feature (``-B -1``: no intercept).

``--kernel rbf --gamma G`` trains LIBSVM's kernel C-SVM instead (method alfpgm unless ``-m``
names another kernel method): one binary model, or one-vs-one over more than two classes.

Both entry points take ``argv`` and return an exit code (0 ok, 1 error, 2 usage), so
they can be called in-process; errors print one readable line on stderr.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np

import jax

from .estimators import resolve_kernel, resolve_loss, resolve_method, resolve_reg
from .io import LibsvmFormatError, load_svmlight
from .model_io import load_model, save_model
from .multiclass import solve_multiclass
from .result import SolverError, Status
from .solve import solve

__all__ = ["train_main", "predict_main"]

_COMPRESSED = (".xz", ".lzma", ".bz2", ".gz")


class _Usage(Exception):
    pass


def _parser(prog, description):
    p = argparse.ArgumentParser(prog=prog, description=description,
                                formatter_class=argparse.RawDescriptionHelpFormatter)

    def error(message):  # raise instead of exiting: the caller turns it into exit code 2
        raise _Usage(f"{prog}: error: {message}\n{p.format_usage().strip()}")

    p.error = error
    return p


def _train_parser():
    p = _parser("svmopt-train", "Train an SVM on a LIBSVM-format file and write a model file.")
    p.add_argument("data_file")
    p.add_argument("model_file", nargs="?", help="default: <data file name>.model in the current directory")
    p.add_argument("-s", "--loss", default="hinge",
                   help="hinge (default), squared_hinge, least_squares, logistic, or a number p >= 1 (Lp hinge)")
    p.add_argument("-r", "--reg", default="l2", help="regularizer: l2 (default) or l1")
    p.add_argument("-m", "--method", default="alm", help="solver name (default alm)")
    p.add_argument("-c", dest="C", type=float, default=1.0, help="cost C > 0 (default 1)")
    p.add_argument("-B", dest="bias", type=float, default=None,
                   help="s > 0: LIBLINEAR's bias feature of value s (regularized intercept); "
                        "s <= 0: no intercept; default: a free intercept")
    p.add_argument("-e", dest="tol", type=float, default=None, help="stopping tolerance (default: the method's)")
    p.add_argument("--max-iter", type=int, default=None, help="iteration cap (default: the method's)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--n-features", type=int, default=None, help="number of features (default: largest index)")
    p.add_argument("--progress", type=int, default=100, metavar="K",
                   help="print the objective every K iterations (binary problems; 0: off; default 100)")
    p.add_argument("-q", dest="quiet", action="store_true", help="quiet mode (no outputs)")
    _add_kernel_options(p)
    return p


def _add_kernel_options(p):
    p.add_argument("--kernel", choices=("linear", "rbf", "polynomial", "sigmoid"), default=None,
                   help="train a kernel model (LIBSVM's C-SVM; more than two classes: one-vs-one); "
                        "the method is alfpgm unless -m names another kernel method")
    p.add_argument("--gamma", default="scale",
                   help="kernel gamma: a number > 0, 'scale' (default: 1 / (d var X)) or 'auto' (1 / d)")


def _kernel_options(args, X, method):
    """(kernel, method) for --kernel / --gamma; (None, method) without --kernel."""
    if args.kernel is None:
        if args.gamma != "scale":
            raise ValueError("--gamma sets a kernel's parameter: give --kernel too")
        return None, method
    gamma = args.gamma
    if gamma not in ("scale", "auto"):
        try:
            gamma = float(gamma)
        except ValueError:
            raise ValueError(f"--gamma must be a number > 0, 'scale' or 'auto', got {args.gamma!r}") from None
    if method.name == "alm" and args.method == "alm":  # the linear default: the kernel method instead
        method = resolve_method("alfpgm")
    return resolve_kernel(args.kernel, X, gamma=gamma), method


def _predict_parser():
    p = _parser("svmopt-predict", "Predict the labels of a LIBSVM-format file with a model from svmopt-train.")
    p.add_argument("test_file")
    p.add_argument("model_file")
    p.add_argument("output_file")
    p.add_argument("-q", dest="quiet", action="store_true", help="quiet mode (no outputs)")
    return p


def _run(main, argv, prog):
    """Call ``main``: expected failures become one line on stderr and exit code 1."""
    try:
        return main(argv)
    except _Usage as exc:
        print(exc, file=sys.stderr)
        return 2
    except SystemExit as exc:  # argparse's --help
        return exc.code if isinstance(exc.code, int) else 0
    except LibsvmFormatError as exc:
        print(f"{prog}: error: malformed LIBSVM file: {exc}", file=sys.stderr)
    except FileNotFoundError as exc:
        print(f"{prog}: error: cannot open '{exc.filename}': {exc.strerror}", file=sys.stderr)
    except (OSError, ValueError, TypeError, SolverError) as exc:  # ModelFileError, MissingCapability included
        print(f"{prog}: error: {exc}", file=sys.stderr)
    except MemoryError:
        print(f"{prog}: error: out of memory", file=sys.stderr)
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    return 1


def _check_writable(path: Path, what: str):
    """Fail now, not after the work, if ``path`` cannot be created (its folder is missing)."""
    folder = path.parent
    if path.is_dir():
        raise ValueError(f"cannot write the {what} to '{path}': it is a directory")
    if not folder.is_dir():
        raise ValueError(f"cannot write the {what} to '{path}': directory '{folder}' does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write the {what} to '{path}': directory '{folder}' is not writable")


def train_main(argv=None) -> int:
    """Entry point of ``svmopt-train``; returns the exit code."""
    return _run(_train, sys.argv[1:] if argv is None else list(argv), "svmopt-train")


def predict_main(argv=None) -> int:
    """Entry point of ``svmopt-predict``; returns the exit code."""
    return _run(_predict, sys.argv[1:] if argv is None else list(argv), "svmopt-predict")


# --------------------------------------------------------------------------- train


def _default_model_file(data_file) -> Path:
    name = Path(data_file).name
    for suffix in _COMPRESSED:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
    return Path(name + ".model")


def _train(argv) -> int:
    args = _train_parser().parse_args(argv)
    say = (lambda *a: None) if args.quiet else (lambda *a: print(*a, flush=True))
    if not args.C > 0:
        raise ValueError(f"-c must be > 0, got {args.C}")
    if args.max_iter is not None and args.max_iter < 1:
        raise ValueError(f"--max-iter must be >= 1, got {args.max_iter}")
    if args.tol is not None and not args.tol > 0:
        raise ValueError(f"-e must be > 0, got {args.tol}")

    if args.dtype == "float64":
        jax.config.update("jax_enable_x64", True)
    loss, reg, method = resolve_loss(args.loss), resolve_reg(args.reg), resolve_method(args.method)
    model_file = Path(args.model_file) if args.model_file else _default_model_file(args.data_file)
    _check_writable(model_file, "model")

    t0 = time.perf_counter()
    X, y = load_svmlight(args.data_file, n_features=args.n_features)
    classes = np.unique(y)
    say(f"read {args.data_file}: {X.shape[0]} rows, {X.shape[1]} features, {X.nnz} non-zeros, "
        f"{classes.size} classes ({time.perf_counter() - t0:.2f} s)")

    kernel, method = _kernel_options(args, X, method)
    kw = dict(loss=loss, reg=reg, C=args.C, tol=args.tol, max_iter=args.max_iter, dtype=args.dtype)
    if args.bias is None:
        intercept = "free intercept"
    elif args.bias > 0:
        kw["intercept_scaling"] = args.bias
        intercept = f"bias feature {args.bias:g}"
    else:
        kw["fit_intercept"] = False
        intercept = "no intercept"
    ovr = classes.size > 2
    if kernel is not None:
        kw.update(kernel=kernel, **({"strategy": "ovo"} if ovr else {}))
        intercept += f", kernel {kernel!r}"
    many = (f"; one-vs-one over {classes.size * (classes.size - 1) // 2} pairs of classes" if kernel is not None
            else f"; one-vs-rest over {classes.size} classes in one batched solve")
    say(f"training {method.name}: loss {loss!r}, reg {reg!r}, C={args.C:g}, {intercept}, {args.dtype}"
        + (many if ovr else "") + " (compiling first)")
    if args.progress > 0 and not args.quiet:
        kw["verbose"] = _progress_printer(args.progress)

    t0 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = (solve_multiclass if ovr else solve)(X, y, method=method, **kw)
    for w in caught:
        if not args.quiet:
            print(f"svmopt-train: warning: {w.message}", file=sys.stderr)
    say(_summary(res, ovr, time.perf_counter() - t0))
    save_model(res, model_file)
    say(f"model written to {model_file}")
    return 0


def _summary(res, ovr, seconds) -> str:
    t = res.timings
    times = f"{seconds:.2f} s (compile {t.get('compile', 0):.2f} s, run {t.get('run', 0):.2f} s)"
    if getattr(res, "pairs", None) is not None:  # one-vs-one: one line, not one per pair
        return (f"done in {times}; one-vs-one: {res.message}, {int(np.sum(res.iterations))} iterations "
                f"in all, {np.shape(res.support_vectors)[0]} support vectors")
    if not ovr:
        return (f"{res.status.name.lower()} after {res.iterations} iterations: "
                f"primal {float(res.primal_objective):.6g}, relative gap {float(res.relative_gap):.3g}; {times}")
    lines = [f"done in {times}; per class:"]
    for c, st, it, p, g in zip(res.classes, np.asarray(res.status), np.asarray(res.iterations),
                               np.asarray(res.primal_objective), np.asarray(res.relative_gap)):
        lines.append(f"  class {_label(c)}: {Status(int(st)).name.lower()} after {int(it)} iterations, "
                     f"primal {float(p):.6g}, relative gap {float(g):.3g}")
    return "\n".join(lines)


def _progress_printer(every):
    """A verbose callback: one line per ``every`` iterations (per class for one-vs-rest)."""
    last = {}

    def show(info):
        k, label = info["iteration"], info.get("label", "")
        if k // every > last.get(label, -1):
            last[label] = k // every
            print(f"{label}iter {int(k):7d}  objective {info['objective']:.8g}  rel.gap {info['relative_gap']:.3g}"
                  f"  {info['elapsed']:.2f} s", flush=True)
    show.every = every  # the driver ends its chunks on these iterations
    return show


# --------------------------------------------------------------------------- predict


def _label(v) -> str:
    """A label as LIBLINEAR writes it: integers without a decimal point, else %.17g."""
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() else "%.17g" % v
    return str(v)


def _predict(argv) -> int:
    args = _predict_parser().parse_args(argv)
    _check_writable(Path(args.output_file), "predictions")
    model = load_model(args.model_file)
    d = int(model.extras["header"]["n_features"])
    X, y = load_svmlight(args.test_file)
    if X.shape[1] > d:  # features the model never saw carry no weight (LIBLINEAR ignores them)
        X = X[:, :d]
    elif X.shape[1] < d:
        X.resize(X.shape[0], d)
    pred = model.predict(X)
    with open(args.output_file, "w") as f:
        f.write("".join(_label(v) + "\n" for v in pred))
    if not args.quiet:
        correct = int(np.sum(pred == y))
        print("Accuracy = %g%% (%d/%d)" % (100.0 * correct / max(len(y), 1), correct, len(y)), flush=True)
    return 0
