"""What both commands share: argument parsing that raises, one readable error line, label text."""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

from ..io import LibsvmFormatError
from ..result import SolverError

__all__ = ["Usage", "parser", "run", "check_writable", "label", "regression_stats", "COMPRESSED"]

COMPRESSED = (".xz", ".lzma", ".bz2", ".gz")
"""File name endings the LIBSVM reader decompresses."""


class Usage(Exception):
    """A command-line usage error (exit code 2)."""


def parser(prog, description, usage=None):
    """An ArgumentParser whose errors raise ``Usage`` instead of exiting."""
    p = argparse.ArgumentParser(prog=prog, description=description, allow_abbrev=False, usage=usage,
                                formatter_class=argparse.RawDescriptionHelpFormatter)

    def error(message):  # raise instead of exiting: the caller turns it into exit code 2
        raise Usage(f"{prog}: error: {message}\n{p.format_usage().strip()}")

    p.error = error
    return p


def run(main, argv, prog):
    """Call ``main``: expected failures become one line on stderr and exit code 1."""
    try:
        return main(argv)
    except Usage as exc:
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


def check_writable(path: Path, what: str):
    """Fail now, not after the work, if ``path`` cannot be created (its folder is missing)."""
    folder = path.parent
    if path.is_dir():
        raise ValueError(f"cannot write the {what} to '{path}': it is a directory")
    if not folder.is_dir():
        raise ValueError(f"cannot write the {what} to '{path}': directory '{folder}' does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"cannot write the {what} to '{path}': directory '{folder}' is not writable")


def label(v) -> str:
    """A label as LIBLINEAR writes it: integers without a decimal point, else %.17g."""
    if isinstance(v, (float, np.floating)):
        return str(int(v)) if float(v).is_integer() else "%.17g" % v
    return str(v)


def regression_stats(pred, t) -> tuple[float, float]:
    """(mean squared error, squared correlation coefficient) of predictions against targets, as LIBLINEAR's
    predict and train -v print them: (n S_pt - S_p S_t)^2 / ((n S_pp - S_p^2)(n S_tt - S_t^2)) (nan when a
    side is constant, as C's 0/0)."""
    p, t = np.asarray(pred, np.float64), np.asarray(t, np.float64)
    n = float(p.size)
    sp_, st, spp, stt, spt = p.sum(), t.sum(), p @ p, t @ t, p @ t
    with np.errstate(divide="ignore", invalid="ignore"):
        scc = np.float64((n * spt - sp_ * st) ** 2) / np.float64((n * spp - sp_ * sp_) * (n * stt - st * st))
    return float(np.sum((p - t) ** 2) / max(n, 1.0)), float(scc)
