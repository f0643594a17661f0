"""scikit-learn compatible estimator on top of ``svmopt.solve`` / ``solve_multiclass``.

    from svmopt.estimators import SVMClassifier
    clf = SVMClassifier(loss="squared_hinge", C=0.5).fit(X, y)
    clf.predict(X), clf.decision_function(X), clf.coef_, clf.intercept_, clf.result_.gap

scikit-learn is not a dependency: the class follows its conventions itself
(``__init__`` stores parameters untouched, ``get_params`` / ``set_params`` read the
``__init__`` signature, fitted attributes end in ``_``), so ``clone``, ``Pipeline``
and ``GridSearchCV`` accept it, and it imports sklearn only when sklearn asks it
for its tags. Two labels give one binary problem (``coef_`` (1, d), as LinearSVC),
more give one-vs-rest in one vmapped solve (``coef_`` (K, d)), or with
``multi_class="crammer_singer"`` Crammer and Singer's joint problem (LIBLINEAR -s 4, as
``LinearSVC(multi_class="crammer_singer")``); kernel models with more than two labels are
one-vs-one, as scikit-learn's SVC (LIBSVM).

The parameter resolvers (``resolve_loss``, ``resolve_reg``, ``resolve_method``,
``resolve_kernel``) turn the names the command line and estimator take into svmopt
objects; solvers are imported lazily by name from ``svmopt.solvers.<name>``.
"""
from __future__ import annotations

import functools
import importlib
import inspect
import math
import pkgutil
import sys
import warnings

import numpy as np
import scipy.sparse as sp

from . import losses as _losses
from . import regularizers as _regularizers
from .kernels import Kernel
from .losses import Loss
from .multiclass import solve_multiclass
from .regularizers import Regularizer
from .solve import solve
from .solvers import Auto, Method

__all__ = ["SVMClassifier", "NotFittedError", "resolve_loss", "resolve_reg", "resolve_method",
           "resolve_kernel", "available_methods"]


class NotFittedError(ValueError, AttributeError):
    """predict / decision_function called before fit (same bases as sklearn's)."""


def _not_fitted(msg):
    """Our NotFittedError, also an instance of sklearn's when sklearn is in use."""
    skl = sys.modules.get("sklearn.exceptions")
    return NotFittedError(msg) if skl is None else _with_sklearn(skl.NotFittedError)(msg)


@functools.lru_cache(maxsize=None)
def _with_sklearn(skl_error):
    return type("NotFittedError", (NotFittedError, skl_error), {"__module__": __name__})


# --------------------------------------------------------------------------- resolvers

_LOSS_NAMES = ("hinge", "squared_hinge", "least_squares", "logistic")
_REG_NAMES = ("l2", "l1")


def resolve_loss(loss) -> Loss:
    """A Loss from itself, a name (hinge, squared_hinge, least_squares, logistic) or p >= 1.

    A number (or numeric string) p is the Lp hinge (1 - m)_+^p; p = 1 and 2 give the
    hinge and squared hinge.
    """
    if isinstance(loss, Loss):
        return loss
    if isinstance(loss, str):
        name = loss.strip().lower()
        if name in _LOSS_NAMES:
            return getattr(_losses, name)
        try:
            loss = float(name)
        except ValueError:
            raise ValueError(f"unknown loss {loss!r}; use one of {', '.join(_LOSS_NAMES)}, a number p >= 1 "
                             "(Lp hinge) or an svmopt.losses.Loss") from None
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
    from . import solvers

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


_KERNELS = ("linear", "rbf", "polynomial", "sigmoid")


def resolve_kernel(kernel, X=None, *, gamma="scale", degree=3, coef0=0.0) -> Kernel | None:
    """None (linear primal), a Kernel, or a name with sklearn's SVC parameters.

    gamma: a number, "scale" = 1 / (d * var(X)) or "auto" = 1 / d (sklearn's SVC rules).
    """
    if kernel is None or isinstance(kernel, Kernel):
        return kernel
    from . import kernels

    if not isinstance(kernel, str) or kernel.strip().lower() not in _KERNELS:
        raise ValueError(f"unknown kernel {kernel!r}; use one of {', '.join(_KERNELS)} or an svmopt.kernels.Kernel")
    name = kernel.strip().lower()
    if name == "linear":
        return kernels.linear
    if gamma == "scale" or gamma == "auto":
        if X is None:
            raise ValueError(f"gamma={gamma!r} needs the training data")
        d = X.shape[1]
        if gamma == "auto":
            gamma = 1.0 / d
        else:
            var = (X.multiply(X).mean() - X.mean() ** 2) if sp.issparse(X) else np.asarray(X).var()
            gamma = 1.0 / (d * var) if var > 0 else 1.0
    gamma = float(gamma)
    if name == "rbf":
        return kernels.rbf(gamma)
    if name == "polynomial":
        return kernels.polynomial(degree, gamma, coef0)
    return kernels.sigmoid(gamma, coef0)


# --------------------------------------------------------------------------- input checks


def _check_X(X, n_features=None, who="SVMClassifier"):
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


def _check_y(y, n):
    if y is None:
        raise ValueError("SVMClassifier requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is raveled",
                      _data_conversion_warning(), stacklevel=3)
        y = y.ravel()
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


def _data_conversion_warning():
    try:  # sklearn's class when sklearn is there, so its checks recognize it
        from sklearn.exceptions import DataConversionWarning
        return DataConversionWarning
    except ImportError:
        return UserWarning


def _sample_weight(class_weight, sample_weight, y, classes, n):
    s = np.ones(n) if sample_weight is None else np.asarray(sample_weight, dtype=float).copy()
    if s.shape != (n,):
        raise ValueError(f"shape mismatch: sample_weight has shape {s.shape}, expected ({n},)")
    if class_weight is None:
        return None if sample_weight is None else s
    if class_weight == "balanced":  # n / (K * count_k), as sklearn
        idx = np.searchsorted(classes, y)
        return s * (n / (len(classes) * np.bincount(idx)))[idx]
    if isinstance(class_weight, dict):
        unknown = [k for k in class_weight if k not in set(classes.tolist())]
        if unknown:
            raise ValueError(f"class_weight names classes {unknown} that are not in y (classes: {classes.tolist()})")
        for k, v in class_weight.items():
            s[y == k] *= float(v)
        return s
    raise ValueError(f"class_weight must be None, 'balanced' or a dict {{class: weight}}, got {class_weight!r}")


# --------------------------------------------------------------------------- the estimator


class _Params:
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


class SVMClassifier(_Params):
    """Linear (or kernel) SVM classifier: the Section-1 problem solved by an svmopt method.

    Parameters
    ----------
    loss : None (default: "squared_hinge" for a linear model, as scikit-learn's ``LinearSVC``
        and LIBLINEAR's ``-s 1``; "hinge" for a kernel model, as ``SVC``), "hinge",
        "squared_hinge", "least_squares", "logistic", a number p >= 1 (Lp hinge), or an
        ``svmopt.losses.Loss``. (The squared hinge makes it a drop-in for ``LinearSVC``, whose
        scores it then matches; docs/auto.md.) ``svmopt.solve``'s default loss is the hinge.
    reg : "l2" (default), "l1" or an ``svmopt.regularizers.Regularizer``.
    method : "auto" (default: the solver measured fastest for the problem, see ``svmopt.solvers.auto``;
        a kernel model gets alfpgm with the hinge, nesvm with a smooth loss), None (the same), or a
        solver's name ("newton", "alm", ...) / an ``svmopt.solvers`` Method.
    C : float > 0, weight of the loss (default 1.0).
    fit_intercept : learn a free (unregularized) intercept b (default True).
    intercept_scaling : None (default) or s > 0: LIBLINEAR's bias feature (b regularized);
        overrides ``fit_intercept``.
    class_weight : None, "balanced" (n / (K n_k)) or {label: weight}; multiplies sample weights.
    tol, max_iter : the method's stopping tolerance and iteration cap (None: its defaults).
    dtype : None (float32, or float64 for float64 data when jax_enable_x64 is on),
        "float32" or "float64".
    kernel : None (linear, primal w), "linear", "rbf", "polynomial", "sigmoid" or an
        ``svmopt.kernels.Kernel``; with ``method="auto"`` a kernel method is picked, an
        explicit method must support kernels (alfpgm, nesvm).
    gamma, degree, coef0 : kernel parameters, sklearn's SVC conventions (gamma "scale" /
        "auto" / number).
    method_params : dict of further keyword parameters of the method (e.g. {"rho": 1.1}).
    decision_function_shape : "ovr" (default) or "ovo": what ``decision_function`` of a kernel model
        with more than two classes returns (see ``decision_function``), as SVC's.
    multi_class : "ovr" (default: one-vs-rest, or one binary problem for two classes) or
        "crammer_singer": one joint problem over all classes (Crammer and Singer; LIBLINEAR -s 4,
        ``svmopt.solvers.crammer_singer``), as ``LinearSVC(multi_class="crammer_singer")``: its own loss
        (``loss`` stays None), linear, l2, and LinearSVC's intercept: with ``fit_intercept`` and no
        ``intercept_scaling``, the bias feature 1 (b regularized); two classes give ``coef_`` (1, d) =
        w_1 - w_0, as LinearSVC.
    verbose : False (default), True (a progress line about every second through the
        ``logging`` logger "svmopt"), an int k (every k iterations) or a callable receiving
        a dict (iteration, objective, gap, relative_gap, elapsed, label) per progress step.

    Fitted attributes: ``classes_`` (K,), ``coef_`` (1, d) for two classes / (K, d),
    ``intercept_`` (1,) / (K,), ``n_iter_`` (largest over the one-vs-rest problems),
    ``n_features_in_``, ``result_`` (the ``Result`` / ``MulticlassResult``: objective, gap,
    status); kernel models have ``support_vectors_``, ``support_``, ``dual_coef_`` instead
    of ``coef_``. Kernel models with K > 2 classes are one-vs-one (as SVC): ``intercept_`` and
    ``dual_coef_`` have one row per pair of classes (P = K(K-1)/2, LIBSVM's order) and
    ``decision_function`` is (n, K) per-class scores, or the (n, P) pairwise values with
    ``decision_function_shape="ovo"`` (as SVC).
    """

    _estimator_type = "classifier"  # sklearn < 1.6 reads this

    def __init__(self, loss=None, reg="l2", method="auto", C=1.0, fit_intercept=True,
                 intercept_scaling=None, class_weight=None, tol=None, max_iter=None, dtype=None,
                 kernel=None, gamma="scale", degree=3, coef0=0.0, method_params=None, verbose=False,
                 decision_function_shape="ovr", multi_class="ovr"):
        self.loss = loss
        self.reg = reg
        self.method = method
        self.C = C
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.class_weight = class_weight
        self.tol = tol
        self.max_iter = max_iter
        self.dtype = dtype
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.decision_function_shape = decision_function_shape
        self.multi_class = multi_class
        self.method_params = method_params
        self.verbose = verbose

    # sklearn >= 1.6 asks for tags; imported only then, sklearn being optional
    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(), input_tags=InputTags(sparse=True))

    def _more_tags(self):  # sklearn < 1.6
        return {"requires_y": True}

    def __sklearn_is_fitted__(self):
        return hasattr(self, "result_")

    def fit(self, X, y, sample_weight=None):
        """Fit on X (n, d) dense or sparse and y (n,) with >= 2 labels of any kind."""
        X = _check_X(X)
        y = _check_y(y, X.shape[0])
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"SVMClassifier needs samples of at least 2 classes in the data, but the data "
                             f"contains only one class: {classes[0]!r}")
        if not (isinstance(self.C, (int, float, np.integer, np.floating)) and math.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a finite number > 0, got {self.C!r}")
        if self.multi_class not in ("ovr", "crammer_singer"):
            raise ValueError(f"multi_class must be 'ovr' or 'crammer_singer', got {self.multi_class!r}")
        if self.multi_class == "crammer_singer":
            return self._fit_crammer_singer(X, y, classes, sample_weight)
        kernel = resolve_kernel(self.kernel, X, gamma=self.gamma, degree=self.degree, coef0=self.coef0)
        loss = resolve_loss(self.loss if self.loss is not None else ("hinge" if kernel else "squared_hinge"))
        kw = dict(loss=loss, reg=resolve_reg(self.reg), C=float(self.C),
                  fit_intercept=bool(self.fit_intercept), intercept_scaling=self.intercept_scaling,
                  sample_weight=_sample_weight(self.class_weight, sample_weight, y, classes, X.shape[0]),
                  tol=self.tol, max_iter=self.max_iter, dtype=self.dtype, kernel=kernel, verbose=self.verbose,
                  **(self.method_params or {}))
        if self.method is not None and not (isinstance(self.method, str) and self.method == "auto"):
            kw["method"] = resolve_method(self.method)
        if classes.size == 2:
            res = solve(X, y, **kw)
        elif kernel is None:
            res = solve_multiclass(X, y, **kw)
        else:  # kernel models: one-vs-one, as SVC
            if "method" in kw and not getattr(kw["method"], "supports_kernel", False):  # as solve() says
                raise ValueError(f"method {kw['method'].name} is linear; for kernel={kernel!r} use method='alfpgm'")
            res = solve_multiclass(X, y, strategy="ovo", **kw)
        self._set_fitted(res, X.shape[1])
        return self

    def _fit_crammer_singer(self, X, y, classes, sample_weight):
        if self.kernel is not None or self.loss is not None or resolve_reg(self.reg) is not resolve_reg("l2"):
            raise ValueError("multi_class='crammer_singer' is its own linear l2 problem (LIBLINEAR -s 4): leave "
                             f"loss=None, reg='l2', kernel=None (got loss={self.loss!r}, reg={self.reg!r}, "
                             f"kernel={self.kernel!r})")
        scaling = self.intercept_scaling
        if scaling is None and self.fit_intercept:  # LinearSVC's intercept: a bias feature of 1
            scaling = 1.0
        kw = dict(C=float(self.C), fit_intercept=bool(self.fit_intercept), intercept_scaling=scaling,
                  sample_weight=_sample_weight(self.class_weight, sample_weight, y, classes, X.shape[0]),
                  tol=self.tol, max_iter=self.max_iter, dtype=self.dtype, verbose=self.verbose,
                  **(self.method_params or {}))
        if self.method is not None and not (isinstance(self.method, str) and self.method == "auto"):
            kw["method"] = resolve_method(self.method)
        res = solve_multiclass(X, y, strategy="crammer_singer", **kw)
        self._set_fitted(res, X.shape[1])
        if classes.size == 2:  # one score, as LinearSVC: w_1 - w_0
            self.coef_ = self.coef_[1:] - self.coef_[:1]
            self.intercept_ = self.intercept_[1:] - self.intercept_[:1]
        return self

    def _set_fitted(self, res, n_features):
        """Fitted attributes from a Result / MulticlassResult."""
        for stale in ("coef_", "support_vectors_", "support_", "dual_coef_"):
            self.__dict__.pop(stale, None)
        self.result_ = res
        self.classes_ = np.asarray(res.classes)
        self.n_features_in_ = int(n_features)
        self.n_iter_ = int(np.max(np.asarray(res.iterations)))
        self.intercept_ = np.atleast_1d(np.asarray(res.b))
        if res.kernel is None:
            self.coef_ = np.atleast_2d(np.asarray(res.w))
        else:
            self.support_vectors_ = res.support_vectors
            self.dual_coef_ = np.atleast_2d(np.asarray(res.dual_coef))
            self.support_ = res.extras.get("support")

    def _fitted(self):
        if not hasattr(self, "result_"):
            raise _not_fitted(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first")
        return self.result_

    def decision_function(self, X):
        """(n,) for two classes (> 0 means classes_[1]); (n, K) one-vs-rest scores for a linear
        model. A kernel model with K > 2 classes (one-vs-one): with ``decision_function_shape="ovr"``
        (default, as SVC) (n, K) per-class scores, each class's votes plus its summed pairwise
        values squashed into (-1/3, 1/3) (so the largest score is the class with most votes, ties
        going to the more confident; scikit-learn's rule); with "ovo" the (n, P) pairwise values."""
        res = self._fitted()
        f = res.decision_function(_check_X(X, self.n_features_in_))
        if res.loss == "crammer_singer" and len(self.classes_) == 2:  # one score, as LinearSVC
            return f[:, 1] - f[:, 0]
        pairs = getattr(res, "pairs", None)
        if pairs is None or self.decision_function_shape == "ovo":
            return f
        if self.decision_function_shape != "ovr":
            raise ValueError(f"decision_function_shape must be 'ovr' or 'ovo', got {self.decision_function_shape!r}")
        f, pairs = np.asarray(f), np.asarray(pairs)
        k, rows = len(self.classes_), np.arange(f.shape[0])[:, None]
        votes, conf = np.zeros((f.shape[0], k)), np.zeros((f.shape[0], k))
        np.add.at(votes, (rows, np.where(f > 0, pairs[:, 0], pairs[:, 1])), 1.0)
        np.add.at(conf, (rows, pairs[:, 0]), f)
        np.add.at(conf, (rows, pairs[:, 1]), -f)
        return votes + conf / (3.0 * (np.abs(conf) + 1.0))

    def predict(self, X):
        res = self._fitted()
        return res.predict(_check_X(X, self.n_features_in_))

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy (weighted by sample_weight if given)."""
        return float(np.average(self.predict(X) == np.asarray(y).ravel(), weights=sample_weight))
