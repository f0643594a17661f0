"""scikit-learn's conventions without scikit-learn: parameters, fitted-state errors, input checks.

``Params`` gives a class ``get_params`` / ``set_params`` / ``repr`` read from its ``__init__``
signature; ``NotFittedError`` is also scikit-learn's when scikit-learn is in use; ``check_X`` /
``check_y`` / ``sample_weights`` validate what an estimator's ``fit`` and ``predict`` receive, with
scikit-learn's messages.
"""
from __future__ import annotations

import functools
import inspect
import sys
import warnings

import numpy as np
import scipy.sparse as sp

__all__ = ["Params", "NotFittedError", "not_fitted", "check_X", "given_y", "check_y", "sample_weights",
           "data_conversion_warning"]


class NotFittedError(ValueError, AttributeError):
    """predict / decision_function called before fit (same bases as sklearn's)."""


def not_fitted(msg):
    """Our NotFittedError, also an instance of sklearn's when sklearn is in use."""
    skl = sys.modules.get("sklearn.exceptions")
    return NotFittedError(msg) if skl is None else _with_sklearn(skl.NotFittedError)(msg)


@functools.lru_cache(maxsize=None)
def _with_sklearn(skl_error):
    return type("NotFittedError", (NotFittedError, skl_error), {"__module__": __name__})


# --------------------------------------------------------------------------- input checks


def check_X(X, n_features=None, who="SVMClassifier"):
    """2-D float data: numpy (copied only when needed) or CSR; sklearn-style messages."""
    if X is None:
        raise ValueError(f"{who} needs data X, got None")
    if sp.issparse(X):
        X = sp.csr_matrix(X)
        if X.dtype.kind not in "fiub":
            raise ValueError(f"X must be numeric, got sparse dtype {X.dtype}")
    else:
        X = np.asarray(X)
        if X.dtype.kind == "c":
            raise ValueError("Complex data not supported; X must be real")
        if X.ndim != 2:
            raise ValueError(f"Expected a 2-D array X of shape (n_samples, n_features), got shape {X.shape}. "
                             "Reshape your data with X.reshape(-1, 1) for a single feature or "
                             "X.reshape(1, -1) for a single sample.")
    if X.dtype.kind != "f":
        X = X.astype(np.float64)  # ints, bools, numeric objects; a non-number raises TypeError here
    if X.shape[0] == 0:
        raise ValueError(f"Found array with 0 sample(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.shape[1] == 0:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    data = X.data if sp.issparse(X) else X
    if not np.all(np.isfinite(data)):
        raise ValueError("Input X contains NaN or infinity")
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(f"X has {X.shape[1]} features, but {who} is expecting {n_features} features as input")
    return X


def given_y(y, who):
    """y as an array: None refused naming the estimator, a column vector raveled with scikit-learn's
    warning (the caller's caller is warned)."""
    if y is None:
        raise ValueError(f"{who} requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is raveled",
                      data_conversion_warning(), stacklevel=4)
        y = y.ravel()
    return y


def check_y(y, n):
    """Labels y (n,) as a 1-D array (a column vector is raveled with a warning); continuous or
    non-finite values and a length other than n are refused."""
    y = given_y(y, "SVMClassifier")
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D with one label per row, got shape {y.shape}")
    if y.shape[0] != n:
        raise ValueError(f"shape mismatch: X has {n} rows but y has {y.shape[0]} labels")
    if y.dtype.kind == "f":
        if not np.all(np.isfinite(y)):
            raise ValueError("Input y contains NaN or infinity")
        if np.any(y != np.round(y)):
            raise ValueError("Unknown label type: continuous values; a classifier needs discrete labels "
                             "(use integers or strings)")
    if y.dtype.kind == "O":
        y = y.astype(str) if all(isinstance(v, str) for v in y) else y
    return y


def data_conversion_warning():
    """scikit-learn's DataConversionWarning when scikit-learn is installed (its checks look for it), else UserWarning."""
    try:  # sklearn's class when sklearn is there, so its checks recognize it
        from sklearn.exceptions import DataConversionWarning
        return DataConversionWarning
    except ImportError:
        return UserWarning


def sample_weights(class_weight, sample_weight, y, classes, n):
    """Per-row weights (or None for all ones): sample_weight times class_weight (None, "balanced":
    n / (K n_k), or {label: weight}). Rows weighing <= 0 take no part (scikit-learn's SVC, LIBSVM)."""
    s = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float).copy()
    if s.shape != (n,):
        raise ValueError(f"shape mismatch: sample_weight has shape {s.shape}, expected ({n},)")
    if not np.isfinite(s).all():
        raise ValueError("sample_weight contains NaN or infinity")
    if class_weight is None:
        return None if sample_weight is None else _positive_part(s, y)
    if class_weight == "balanced":  # n / (K * count_k), as sklearn
        idx = np.searchsorted(classes, y)
        return _positive_part(s * (n / (len(classes) * np.bincount(idx)))[idx], y)
    if isinstance(class_weight, dict):
        unknown = [k for k in class_weight if k not in set(classes.tolist())]
        if unknown:
            raise ValueError(f"class_weight names classes {unknown} that are not in y (classes: {classes.tolist()})")
        for k, v in class_weight.items():
            s[y == k] *= float(v)
        return _positive_part(s, y)
    raise ValueError(f"class_weight must be None, 'balanced' or a dict {{class: weight}}, got {class_weight!r}")


def _positive_part(s, y):
    s = np.where(s > 0, s, 0.0)
    if not (s > 0).any():
        raise ValueError("Invalid input - all samples have zero or negative weights.")
    if np.unique(y[s > 0]).size < 2:
        raise ValueError("Invalid input - all samples with positive weights belong to the same class: a classifier "
                         "needs two")
    return s


# --------------------------------------------------------------------------- the estimator


class Params:
    """get_params / set_params / repr following scikit-learn's conventions (no sklearn needed)."""

    @classmethod
    def _param_names(cls):
        sig = inspect.signature(cls.__init__)
        return sorted(p.name for p in sig.parameters.values()
                      if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))

    def get_params(self, deep=True):
        out = {}
        for name in self._param_names():
            value = getattr(self, name)
            out[name] = value
            if deep and hasattr(value, "get_params") and not isinstance(value, type):
                out.update((f"{name}__{k}", v) for k, v in value.get_params().items())
        return out

    def set_params(self, **params):
        valid = self._param_names()
        nested = {}
        for key, value in params.items():
            name, sep, sub = key.partition("__")
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for estimator {type(self).__name__}. "
                                 f"Valid parameters are: {valid!r}.")
            if sep:
                nested.setdefault(name, {})[sub] = value
            else:
                setattr(self, name, value)
        for name, sub in nested.items():
            getattr(self, name).set_params(**sub)
        return self

    def __repr__(self):
        sig = inspect.signature(type(self).__init__)
        changed = []
        for name in self._param_names():
            default, value = sig.parameters[name].default, getattr(self, name)
            same = value is default or (type(value) is type(default) and _safe_eq(value, default))
            if not same:
                changed.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(changed)})"


def _safe_eq(a, b):
    try:
        return bool(a == b)
    except Exception:  # arrays and the like: treat as changed
        return False
