"""Input checks with errors that name the argument and the fix (eager values only).

Every entry point validates through these, once, while it builds its plan (``svmopt.plan``):
the data (``as_matrix``, ``check_finite_X``, ``check_labels``, ``check_targets``), the numbers
(``check_C``, ``check_weights``, ``check_number``, ``check_int``), the switches (``check_bool``,
``check_choice``, ``check_verbose``) and the resources (``resolve_dtype``, ``check_devices``,
``check_width``). Nothing here imports the rest of svmopt.
"""
from __future__ import annotations

import math
import numbers
import os

import numpy as np
import scipy.sparse as sp

import jax
import jax.numpy as jnp

__all__ = ["as_matrix", "check_finite_X", "check_labels", "check_targets", "resolve_dtype", "check_C",
           "check_weights", "check_width", "check_number", "check_int", "check_bool", "check_choice",
           "check_verbose", "check_devices", "is_traced", "concrete", "is_operator"]


def is_traced(x) -> bool:
    """Some leaf of ``x`` is a tracer (inside a user's jit / vmap / grad)."""
    return any(isinstance(v, jax.core.Tracer) for v in jax.tree_util.tree_leaves(x))


def concrete(x):
    """x as a Python/NumPy value, or None when it is traced (checks are then skipped)."""
    if is_traced(x):
        return None
    return np.asarray(x) if isinstance(x, jax.Array) else x


def is_operator(X) -> bool:
    """X is already an svmopt data operator (``svmopt.operators``: dense, sparse or sharded)."""
    return hasattr(X, "matvec") and hasattr(X, "rmatvec") and hasattr(X, "shape")


# ---------------------------------------------------------------------------------- data
def as_matrix(X, what="X"):
    """X as a scipy CSR matrix, a numpy array or a jax array, with clear errors."""
    if is_operator(X):
        return X
    if X is None or isinstance(X, (str, bytes, numbers.Number)):
        raise TypeError(f"{what} must be a 2-D matrix (numpy array, jax array or scipy.sparse), got "
                        f"{type(X).__name__} {X!r:.40}")
    if sp.issparse(X):
        try:
            X = X.tocsr()
        except Exception as exc:  # noqa: BLE001  (any format scipy cannot convert)
            raise TypeError(f"{what}: cannot convert sparse format {type(X).__name__} to CSR: {exc}") from exc
        data = X.data
    elif isinstance(X, jax.Array):
        data = X
    else:
        try:
            X = np.asarray(X)
        except Exception as exc:  # noqa: BLE001
            raise TypeError(f"{what} must be a numeric matrix: {exc}") from exc
        data = X
    dt = np.dtype(data.dtype)
    if dt == bool:
        X = X.astype(np.float32) if not isinstance(X, jax.Array) else X.astype(jnp.float32)
    elif np.issubdtype(dt, np.complexfloating):
        raise TypeError(f"{what} is complex ({dt}); an SVM needs real features")
    elif not (np.issubdtype(dt, np.integer) or np.issubdtype(dt, np.floating)):
        raise TypeError(f"{what} must be numeric, got dtype {dt}")
    if X.ndim != 2:
        raise ValueError(f"{what} must be 2-D (n_samples, n_features), got shape {X.shape}")
    return X


def check_finite_X(X, dtype=None):
    """NaN / inf, and values that overflow ``dtype`` (float32: |x| > 3.4e38), name the first row."""
    if is_operator(X) or is_traced(X):
        return
    data = X.data if sp.issparse(X) else np.asarray(X)
    if data.size == 0:
        return
    if np.issubdtype(data.dtype, np.integer):
        bad = np.zeros(data.shape, bool)
    else:
        bad = ~np.isfinite(data)
    what = "NaN or inf"
    if not bad.any() and dtype is not None and np.dtype(dtype).itemsize < data.dtype.itemsize:
        big = float(np.finfo(np.dtype(dtype)).max)
        bad = np.abs(data) > big
        what = f"a value beyond the range of {np.dtype(dtype).name} (|x| > {big:.3g}; use dtype=float64)"
    if bad.any():
        if sp.issparse(X):
            row = int(np.searchsorted(X.indptr, np.flatnonzero(bad)[0], side="right") - 1)
        else:
            row = int(np.argwhere(bad)[0][0])
        raise ValueError(f"X contains {what} (first at row {row})")


def _vector(y, n: int, what: str):
    if y is None:
        raise TypeError(f"{what} is None; pass one value per row of X")
    try:
        y = np.asarray(y)
    except Exception as exc:  # noqa: BLE001
        raise TypeError(f"{what} must be an array: {exc}") from exc
    if y.ndim != 1:
        raise ValueError(f"{what} must be 1-D with one value per row, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"shape mismatch: X has {n} rows but {what} has {y.shape[0]} values")
    if np.issubdtype(y.dtype, np.complexfloating):
        raise TypeError(f"{what} is complex; it must be real numbers" + (" or strings" if what == "y" else ""))
    return y


def check_labels(y, n: int, what: str = "a binary SVM"):
    """Validate a label vector for n rows; returns (y as an array, its sorted distinct classes)."""
    y = _vector(y, n, "y")
    if np.issubdtype(y.dtype, np.number) and not np.all(np.isfinite(y)):
        raise ValueError(f"y contains NaN or inf (first at index {int(np.flatnonzero(~np.isfinite(y))[0])})")
    if y.dtype == object:
        missing = [i for i, v in enumerate(y) if v is None or (isinstance(v, float) and not math.isfinite(v))]
        if missing:
            raise ValueError(f"y contains a missing label (None or NaN) at index {missing[0]}")
    if np.issubdtype(y.dtype, np.number) and y.size:  # two numeric labels: no sort
        lo, hi = y.min(), y.max()
        if lo != hi and np.all((y == lo) | (y == hi)):
            return y, np.array([lo, hi], dtype=y.dtype)
    try:
        classes = np.unique(y)
    except TypeError as exc:
        raise TypeError(f"y mixes labels that cannot be ordered (e.g. numbers and strings): {exc}") from exc
    if classes.size < 2:
        raise ValueError(f"y has only one class ({classes[0]!r}); {what} needs two")
    return y, classes


def check_targets(t, n: int, what: str = "y"):
    """Real-valued targets (regression) for n rows, finite, as float64."""
    t = _vector(t, n, what)
    if not (np.issubdtype(t.dtype, np.number) or t.dtype == bool):
        raise TypeError(f"{what} must hold numbers (regression targets), got dtype {t.dtype}")
    t = t.astype(np.float64)
    if not np.all(np.isfinite(t)):
        raise ValueError(f"{what} contains NaN or inf (first at index {int(np.flatnonzero(~np.isfinite(t))[0])})")
    return t


def resolve_dtype(dtype):
    """float32 unless asked: it is our default for speed, whatever X's dtype."""
    if dtype is None:
        return jnp.dtype(jnp.float32)
    try:
        dtype = jnp.dtype(dtype)
    except TypeError:
        raise TypeError(f"dtype must be float32 or float64 (a numpy dtype or its name), got {dtype!r}") from None
    if dtype not in (jnp.float32, jnp.float64):
        raise ValueError(f"dtype must be float32 or float64, got {dtype}")
    if dtype == jnp.float64 and not jax.config.jax_enable_x64:
        raise ValueError("dtype=float64 needs jax_enable_x64: call jax.config.update('jax_enable_x64', True) first")
    return dtype


# ---------------------------------------------------------------------------------- numbers
def check_C(C, dtype=None):
    """C > 0, finite: a scalar or a non-empty 1-D grid; returned as a float array."""
    try:
        C_arr = np.asarray(C, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"C must be a number > 0 or a 1-D array of them, got {C!r}") from exc
    if C_arr.ndim > 1:
        raise ValueError(f"C must be a scalar or a 1-D array of values to solve in one batch, got shape {C_arr.shape}")
    if C_arr.size == 0:
        raise ValueError("C must be a number > 0 or a non-empty 1-D array of them, got an empty array")
    if not np.all(np.isfinite(C_arr)) or np.any(C_arr <= 0):
        raise ValueError(f"C must be finite and > 0, got {C}")
    if dtype is not None and np.max(C_arr) > float(np.finfo(np.dtype(dtype)).max) / 1e3:
        raise ValueError(f"C = {np.max(C_arr):g} is beyond what {np.dtype(dtype).name} can solve with; "
                         "use dtype=float64 or a smaller C")
    return C_arr


def check_weights(sample_weight, n):
    """Per-row weights >= 0, finite, not all zero (default: ones)."""
    if sample_weight is None:
        return np.ones(n)
    try:
        s = np.asarray(sample_weight, dtype=float)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sample_weight must be numbers, one per row of X: {exc}") from None
    if s.shape != (n,):
        raise ValueError(f"shape mismatch: sample_weight has shape {s.shape}, expected ({n},)")
    if not np.all(np.isfinite(s)):
        raise ValueError("sample_weight contains NaN or inf")
    if np.any(s < 0):
        raise ValueError(f"sample_weight must be >= 0 (first negative at index {int(np.flatnonzero(s < 0)[0])})")
    if not np.any(s > 0):
        raise ValueError("sample_weight is zero everywhere: nothing to train on")
    return s


def check_number(v, name: str, *, low=None, high=None, low_open=True, high_open=True, allow_none=False):
    """A real number (not bool) within (low, high) (open or closed ends); skipped when traced."""
    if v is None and allow_none:
        return None
    if is_traced(v):
        return v
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.ndarray, jax.Array)) \
            or np.ndim(v) != 0:
        raise TypeError(f"{name} must be a number, got {type(v).__name__} {v!r:.40}")
    x = float(v)
    ok = math.isfinite(x)
    if low is not None:
        ok = ok and (x > low if low_open else x >= low)
    if high is not None:
        ok = ok and (x < high if high_open else x <= high)
    if not ok:
        lo = "" if low is None else f"{'>' if low_open else '>='} {low:g}"
        hi = "" if high is None else f"{'<' if high_open else '<='} {high:g}"
        raise ValueError(f"{name} must be finite{', ' if lo or hi else ''}{' and '.join(p for p in (lo, hi) if p)}"
                         f", got {v!r}")
    return v


def check_int(v, name: str, *, low=1, allow_none=False):
    """An integer (not bool) >= low; skipped when traced."""
    if v is None and allow_none:
        return None
    if is_traced(v):
        return v
    c = np.asarray(v) if isinstance(v, jax.Array) else v
    if isinstance(c, (bool, np.bool_)) or not (isinstance(c, (numbers.Integral, np.integer))
                                                or (isinstance(c, np.ndarray) and c.ndim == 0
                                                    and np.issubdtype(c.dtype, np.integer))):
        raise TypeError(f"{name} must be an integer, got {type(v).__name__} {v!r:.40}")
    if int(c) < low:
        raise ValueError(f"{name} must be a positive integer, got {v!r}" if low == 1 else
                         f"{name} must be an integer >= {low}, got {v!r}")
    return int(c)


def check_bool(v, name: str):
    """True or False (numpy's bool too), else a TypeError naming ``name``."""
    if not isinstance(v, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {v!r:.40}")
    return bool(v)


def check_choice(v, name: str, choices):
    """One of the strings ``choices``, else a ValueError listing them."""
    if not isinstance(v, str) or v not in choices:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {v!r:.40}")
    return v


def check_verbose(v):
    """verbose: False / True, an int k >= 0 (every k iterations) or a callable."""
    if callable(v) or isinstance(v, (bool, np.bool_)):
        return v
    if isinstance(v, (numbers.Integral, np.integer)) and int(v) >= 0:
        return int(v)
    raise TypeError(f"verbose must be True/False, an int k >= 0 (a line every k iterations) or a callable "
                    f"receiving a dict, got {v!r:.40}")


def check_devices(devices):
    """None, or a non-empty list of distinct jax devices."""
    if devices is None:
        return None
    if isinstance(devices, (str, bytes)) or not hasattr(devices, "__iter__"):
        raise TypeError(f"devices must be a list of jax devices (e.g. jax.devices() or jax.devices('cpu')[:2]), "
                        f"got {devices!r:.40}")
    devices = list(devices)
    bad = [d for d in devices if not isinstance(d, jax.Device)]
    if bad:
        raise TypeError(f"devices must be jax devices (e.g. jax.devices()), got {bad[0]!r:.40}")
    if not devices:
        raise ValueError("devices is empty: give at least one jax device")
    if len({d.id for d in devices}) != len(devices):
        raise ValueError("devices lists a device twice")
    return devices


# ---------------------------------------------------------------------------------- resources
WIDTH_VECTORS = 16
"""About how many vectors of the model's length a linear solve keeps (w, its gradient, the
method's state, CG's vectors, the certificate's X^T (alpha y))."""


def check_width(d: int, dtype, what: str = "a linear model") -> None:
    """Refuse a problem whose model vectors alone cannot fit in this machine's memory, naming the
    width (a LIBSVM file with one huge feature index, 2e9, made the solve die allocating 8 GB)."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # not on this platform: no check
        return
    need = WIDTH_VECTORS * int(d) * np.dtype(dtype).itemsize
    if need > memory:
        raise ValueError(f"X has {int(d):,} columns: {what} keeps about {WIDTH_VECTORS} vectors of that "
                         f"length, {need / 2**30:.1f} GiB in {np.dtype(dtype).name}, more than this machine's "
                         f"{memory / 2**30:.1f} GiB. A huge feature index makes X this wide (the largest index "
                         "sets the width); renumber the features that occur, or check the file")
