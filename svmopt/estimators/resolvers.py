"""From names to svmopt objects: the losses, regularizers, methods and kernels that the estimator
(``svmopt.estimators``) and the command line (``svmopt.cli``) take by name.

Solvers are imported lazily by name from ``svmopt.solvers.<name>``.
"""
from __future__ import annotations

import importlib
import pkgutil

import numpy as np
import scipy.sparse as sp

from .. import kernels
from .. import losses as _losses
from .. import regularizers as _regularizers
from ..kernels import Kernel
from ..losses import Loss
from ..regularizers import Regularizer
from ..solvers import Auto, Method

__all__ = ["REGRESSION_LOSSES", "resolve_loss", "resolve_reg", "resolve_method", "resolve_kernel", "available_methods"]


_LOSS_NAMES = ("hinge", "squared_hinge", "least_squares", "logistic")
REGRESSION_LOSSES = ("epsilon_insensitive", "squared_epsilon_insensitive", "squared_error")
"""The loss names of a regression (losses of the residual t - f), as ``resolve_loss`` takes them."""
_REG_NAMES = ("l2", "l1")


def resolve_loss(loss, epsilon=None) -> Loss:
    """A Loss from itself, a name or p >= 1.

    Classification: hinge, squared_hinge, least_squares, logistic, or a number (or numeric
    string) p, the Lp hinge (1 - m)_+^p (p = 1 and 2 give the hinge and squared hinge).
    Regression (``REGRESSION_LOSSES``): epsilon_insensitive, squared_epsilon_insensitive (each
    with the tube's half-width ``epsilon``; None: the loss's default, 0.1 and 0.0) and
    squared_error. ``epsilon`` is refused with any other name or a Loss (whose epsilon is its own).
    """
    if isinstance(loss, str) and loss.strip().lower() in REGRESSION_LOSSES:
        name = loss.strip().lower()
        if name == "squared_error":
            if epsilon:
                raise ValueError(f"squared_error has no insensitive tube; epsilon={epsilon!r} needs "
                                 "squared_epsilon_insensitive")
            return _losses.squared_error
        family = getattr(_losses, name)
        return family() if epsilon is None else family(epsilon)
    if epsilon is not None:
        raise ValueError(f"epsilon (the insensitive tube) goes with the regression loss names "
                         f"{', '.join(REGRESSION_LOSSES[:2])}, not loss {loss!r}")
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str):
        name = loss.strip().lower()
        if name in _LOSS_NAMES:
            return getattr(_losses, name)
        try:
            loss = float(name)
        except ValueError:
            raise ValueError(f"unknown loss {loss!r}; use one of {', '.join(_LOSS_NAMES + REGRESSION_LOSSES)}, "
                             "a number p >= 1 (Lp hinge) or an svmopt.losses.Loss") from None
    if isinstance(loss, (int, float, np.integer, np.floating)) and not isinstance(loss, bool):
        return _losses.lp_hinge(float(loss))
    raise TypeError(f"loss must be a name, a number p >= 1 or an svmopt.losses.Loss, got {loss!r}")


def resolve_reg(reg) -> Regularizer:
    """A Regularizer from itself or a name (l2, l1); others (elastic_net(r), ...) as objects."""
    if isinstance(reg, Regularizer):
        return reg
    if isinstance(reg, str) and reg.strip().lower() in _REG_NAMES:
        return getattr(_regularizers, reg.strip().lower())
    raise ValueError(f"unknown reg {reg!r}; use 'l2', 'l1' or an svmopt.regularizers.Regularizer")


def available_methods() -> list[str]:
    """Solver modules present in ``svmopt.solvers`` (whether or not they import)."""
    from .. import solvers

    return sorted(m.name for m in pkgutil.iter_modules(solvers.__path__) if not m.name.startswith("_"))


def resolve_method(method) -> Method:
    """A Method from itself or its name: ``svmopt.solvers.<name>`` imported on demand.

    Each solver module exposes a module-level instance of its own name (``alm.alm``).
    """
    if isinstance(method, (Method, Auto)):
        return method
    if not isinstance(method, str):
        raise TypeError(f"method must be an svmopt solver or its name (e.g. 'alm'), got {method!r}")
    name = method.strip().lower()
    module = None
    if name.isidentifier():
        try:
            module = importlib.import_module(f"svmopt.solvers.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"svmopt.solvers.{name}":
                raise  # the solver exists but something it imports is missing: show that
    found = getattr(module, name, None)
    if not isinstance(found, (Method, Auto)):
        raise ValueError(f"unknown method {method!r}; available methods: {', '.join(available_methods())}")
    return found


_KERNELS = ("linear", "rbf", "polynomial", "sigmoid", "precomputed")


def resolve_kernel(kernel, X=None, *, gamma="scale", degree=3, coef0=0.0) -> Kernel | None:
    """None (linear primal), a Kernel, a name with sklearn's SVC parameters, "precomputed" (X is the
    Gram matrix, ``kernels.precomputed``) or a plain Python / NumPy function fn(A, B) -> Gram block
    (``kernels.host_function``: evaluated on the host, as scikit-learn's SVC(kernel=callable)).

    gamma: a number, "scale" = 1 / (d * var(X)) or "auto" = 1 / d (sklearn's SVC rules).
    """
    if kernel is None or isinstance(kernel, Kernel):
        return kernel
    if callable(kernel):
        return kernels.host_function(kernel)
    if not isinstance(kernel, str) or kernel.strip().lower() not in _KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; use one of {', '.join(_KERNELS)}, a function fn(A, B) or an "
                         "svmopt.kernels.Kernel")
    name = kernel.strip().lower()
    if name == "linear":
        return kernels.linear
    if name == "precomputed":
        return kernels.precomputed()
    if gamma == "scale" or gamma == "auto":
        if X is None:
            raise ValueError(f"gamma={gamma!r} needs the training data")
        d = X.shape[1]
        if gamma == "auto":
            gamma = 1.0 / d
        else:
            with np.errstate(over="ignore", invalid="ignore"):
                var = (X.multiply(X).mean() - X.mean() ** 2) if sp.issparse(X) else np.asarray(X, float).var()
            if not np.isfinite(var):
                raise ValueError("gamma='scale' is 1 / (n_features var(X)), and var(X) overflows: X holds values too "
                                 "large to square; scale the features (e.g. to [0, 1]) or pass gamma as a number")
            gamma = 1.0 / (d * var) if var > 0 else 1.0
    try:
        gamma = float(gamma)
    except (TypeError, ValueError):
        raise ValueError(f"gamma must be a number > 0, 'scale' or 'auto', got {gamma!r}") from None
    if name == "rbf":
        return kernels.rbf(gamma)
    if name == "polynomial":
        return kernels.polynomial(degree, gamma, coef0)
    return kernels.sigmoid(gamma, coef0)
