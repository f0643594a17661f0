"""What the estimators share: scikit-learn's parameter protocol without scikit-learn, input checks,
and the not-fitted error (an instance of scikit-learn's when scikit-learn is in use)."""
from __future__ import annotations

import functools
import inspect
import sys

import numpy as np
import scipy.sparse as sp

__all__ = ["NotFittedError", "not_fitted", "Params", "check_X", "data_conversion_warning"]


class NotFittedError(ValueError, AttributeError):
    """predict / decision_function called before fit (same bases as sklearn's)."""


def not_fitted(msg):
    """Our NotFittedError, also an instance of sklearn's when sklearn is in use."""
    skl = sys.modules.get("sklearn.exceptions")
    return NotFittedError(msg) if skl is None else _with_sklearn(skl.NotFittedError)(msg)


@functools.lru_cache(maxsize=None)
def _with_sklearn(skl_error):
    return type("NotFittedError", (NotFittedError, skl_error), {"__module__": __name__})



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



def data_conversion_warning():
    """scikit-learn's DataConversionWarning when scikit-learn is installed (its checks look for it), else UserWarning."""
    try:
        from sklearn.exceptions import DataConversionWarning
        return DataConversionWarning
    except ImportError:
        return UserWarning



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

