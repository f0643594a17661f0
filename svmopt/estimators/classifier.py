"""``SVMClassifier``: scikit-learn's classifier conventions on ``svmopt.solve`` / ``solve_multiclass``."""
from __future__ import annotations

import math
import warnings

import numpy as np

from ..multiclass import solve_multiclass
from ..solve import solve
from .base import Params, check_X, data_conversion_warning, not_fitted
from .resolvers import resolve_kernel, resolve_loss, resolve_method, resolve_reg

__all__ = ["SVMClassifier"]


def _check_y(y, n):
    if y is None:
        raise ValueError("SVMClassifier requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        warnings.warn("A column-vector y was passed when a 1d array was expected; it is raveled",
                      data_conversion_warning(), stacklevel=3)
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



class SVMClassifier(Params):
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
                 decision_function_shape="ovr"):
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
        X = check_X(X)
        y = _check_y(y, X.shape[0])
        classes = np.unique(y)
        if classes.size < 2:
            raise ValueError(f"SVMClassifier needs samples of at least 2 classes in the data, but the data "
                             f"contains only one class: {classes[0]!r}")
        if not (isinstance(self.C, (int, float, np.integer, np.floating)) and math.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a finite number > 0, got {self.C!r}")
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
            raise not_fitted(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first")
        return self.result_

    def decision_function(self, X):
        """(n,) for two classes (> 0 means classes_[1]); (n, K) one-vs-rest scores for a linear
        model. A kernel model with K > 2 classes (one-vs-one): with ``decision_function_shape="ovr"``
        (default, as SVC) (n, K) per-class scores, each class's votes plus its summed pairwise
        values squashed into (-1/3, 1/3) (so the largest score is the class with most votes, ties
        going to the more confident; scikit-learn's rule); with "ovo" the (n, P) pairwise values."""
        res = self._fitted()
        f = res.decision_function(check_X(X, self.n_features_in_))
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
        return res.predict(check_X(X, self.n_features_in_))

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy (weighted by sample_weight if given)."""
        pred, y = self.predict(X), np.asarray(y).ravel()
        if y.shape != pred.shape:
            raise ValueError(f"shape mismatch: X has {pred.shape[0]} rows but y has {y.shape[0]} labels")
        return float(np.average(pred == y, weights=sample_weight))
