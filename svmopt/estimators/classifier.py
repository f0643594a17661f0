"""``SVMClassifier``: scikit-learn's LinearSVC / SVC conventions on ``svmopt.solve`` / ``solve_multiclass``
(the package docstring); ``load_estimator`` for a saved model."""
from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from .. import probability as _probability
from .base import Params, check_X, check_y, not_fitted, sample_weights
from ..kernels import predict_kernel
from ..multiclass import solve_multiclass
from ..multiclass_kernel import class_pairs, ovr_scores, votes
from .resolvers import resolve_kernel, resolve_loss, resolve_method, resolve_reg
from ..solve import solve

__all__ = ["SVMClassifier", "load_estimator"]


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
    kernel : None (linear, primal w), "linear", "rbf", "polynomial", "sigmoid", "precomputed"
        (X is the Gram matrix K(train, train) at fit, K(test, train) after; LIBSVM's -t 4), a
        plain Python / NumPy function fn(A, B) -> (len(A), len(B)) Gram block (evaluated on the
        host: ``svmopt.kernels.host_function``), or an ``svmopt.kernels.Kernel``; with
        ``method="auto"`` a kernel method is picked, an explicit method must support kernels
        (alfpgm, nesvm).
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
    probability : False (default). True: ``fit`` also cross-validates (5 stratified folds,
        ``svmopt.probability``) and fits Platt's sigmoids, so that ``predict_proba`` /
        ``predict_log_proba`` exist (LIBSVM's -b 1): pairwise coupling for one-vs-one kernel
        models, normalized one-vs-rest sigmoids for linear models with more than two classes.
    break_ties : False (default). True, with ``decision_function_shape="ovr"`` and a one-vs-one
        model of more than two classes: ``predict`` is the arg-max of ``decision_function`` (votes,
        ties broken by the pairwise values) instead of the first class with most votes (LIBSVM).
    warm_start : False (default). True: ``fit`` starts from the previous fit's solution
        (``svmopt.solve``'s ``init``) when the classes and features are the same: ``coef_`` and
        ``intercept_`` for linear models, the dual alpha of a binary kernel model fitted on as many
        rows. One-vs-one models start cold.
    random_state : seed of the probability folds (None: 0, so fits repeat).
    verbose : False (default), True (a progress line about every second through the
        ``logging`` logger "svmopt"), an int k (every k iterations) or a callable receiving
        a dict (iteration, objective, gap, relative_gap, elapsed, label) per progress step.

    Fitted attributes: ``classes_`` (K,), ``coef_`` (1, d) for two classes / (K, d),
    ``intercept_`` (1,) / (K,), ``n_iter_`` (largest over the one-vs-rest problems),
    ``n_features_in_``, ``result_`` (the ``Result`` / ``MulticlassResult``: objective, gap,
    status); kernel models have ``support_vectors_``, ``support_``, ``dual_coef_`` and an
    ``n_iter_`` array (one entry per pair, as SVC); with kernel="linear" also a read-only
    ``coef_`` = ``dual_coef_ @ support_vectors_``. Kernel models with K > 2 classes are
    one-vs-one (as SVC): ``intercept_`` and ``dual_coef_`` have one row per pair of classes
    (P = K(K-1)/2, LIBSVM's order) and ``decision_function`` is (n, K) per-class scores, or the
    (n, P) pairwise values with ``decision_function_shape="ovo"`` (as SVC). With
    ``probability=True``: ``probA_``, ``probB_``, the sigmoids' A and B per pair (per class for
    one-vs-rest).
    """

    _estimator_type = "classifier"  # sklearn < 1.6 reads this

    def __init__(self, loss=None, reg="l2", method="auto", C=1.0, fit_intercept=True,
                 intercept_scaling=None, class_weight=None, tol=None, max_iter=None, dtype=None,
                 kernel=None, gamma="scale", degree=3, coef0=0.0, method_params=None, verbose=False,
                 decision_function_shape="ovr", probability=False, break_ties=False, warm_start=False,
                 random_state=None, multi_class="ovr"):
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
        self.probability = probability
        self.break_ties = break_ties
        self.warm_start = warm_start
        self.random_state = random_state
        self.multi_class = multi_class

    # sklearn >= 1.6 asks for tags; imported only then, sklearn being optional
    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, InputTags, Tags, TargetTags

        return Tags(estimator_type="classifier", target_tags=TargetTags(required=True),
                    classifier_tags=ClassifierTags(), input_tags=InputTags(sparse=True, pairwise=self._gram()))

    def _more_tags(self):  # sklearn < 1.6
        return {"requires_y": True, "pairwise": self._gram()}

    def _gram(self) -> bool:
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def __sklearn_is_fitted__(self):
        return hasattr(self, "result_")

    # ------------------------------------------------------------------ fit
    def _host_kernel(self) -> bool:
        """A plain function as kernel: X is whatever it takes (scikit-learn validates nothing then)."""
        from ..kernels import Kernel
        return callable(self.kernel) and not isinstance(self.kernel, Kernel)

    def _input(self, X, n_features=None):
        if not self._host_kernel():
            return check_X(X, n_features)
        if X is None:
            raise ValueError("SVMClassifier needs data X, got None")
        return X if hasattr(X, "shape") else np.asarray(X)

    def fit(self, X, y, sample_weight=None):
        """Fit on X (n, d) dense or sparse and y (n,) with >= 2 labels of any kind."""
        X = self._input(X)
        n = X.shape[0]
        y = check_y(y, n)
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
                  sample_weight=sample_weights(self.class_weight, sample_weight, y, classes, n),
                  tol=self.tol, max_iter=self.max_iter, dtype=self.dtype, kernel=kernel, verbose=self.verbose,
                  **(self.method_params or {}))
        if self.method is not None and not (isinstance(self.method, str) and self.method == "auto"):
            kw["method"] = resolve_method(self.method)
        if kernel is not None and classes.size > 2:  # one-vs-one, as SVC
            if "method" in kw and not getattr(kw["method"], "supports_kernel", False):  # as solve() says
                raise ValueError(f"method {kw['method'].name} is linear; for kernel={kernel!r} use method='alfpgm'")
            strategy = "ovo"
        else:
            strategy = "binary" if classes.size == 2 else "ovr"
        init = self._warm_start(X, classes, kernel is None, strategy)
        if strategy == "binary":
            res = solve(X, y, init=init, **kw)
        else:
            res = solve_multiclass(X, y, strategy=strategy, **({} if init is None else {"init": init}), **kw)
        if self.probability:
            cv = dict(kw, verbose=False)
            weights = cv.pop("sample_weight")
            res.extras["platt"] = _probability.fit(X, y, strategy, seed=self.random_state or 0,
                                                   sample_weight=weights, **cv)
        self._set_fitted(res, _n_features(res, X))
        return self

    def _fit_crammer_singer(self, X, y, classes, sample_weight):
        if self.kernel is not None or self.loss is not None or resolve_reg(self.reg) is not resolve_reg("l2"):
            raise ValueError("multi_class='crammer_singer' is its own linear l2 problem (LIBLINEAR -s 4): leave "
                             f"loss=None, reg='l2', kernel=None (got loss={self.loss!r}, reg={self.reg!r}, "
                             f"kernel={self.kernel!r})")
        if self.probability:
            raise ValueError("probability=True is for one-vs-rest and kernel models; multi_class='crammer_singer' "
                             "has no probability estimates (LinearSVC has none either)")
        scaling = self.intercept_scaling
        if scaling is None and self.fit_intercept:  # LinearSVC's intercept: a bias feature of 1
            scaling = 1.0
        kw = dict(C=float(self.C), fit_intercept=bool(self.fit_intercept), intercept_scaling=scaling,
                  sample_weight=sample_weights(self.class_weight, sample_weight, y, classes, X.shape[0]),
                  tol=self.tol, max_iter=self.max_iter, dtype=self.dtype, verbose=self.verbose,
                  **(self.method_params or {}))
        if self.method is not None and not (isinstance(self.method, str) and self.method == "auto"):
            kw["method"] = resolve_method(self.method)
        res = solve_multiclass(X, y, strategy="crammer_singer", **kw)
        self._set_fitted(res, _n_features(res, X))
        if classes.size == 2:  # one score, as LinearSVC: w_1 - w_0
            self._coef = self._coef[1:] - self._coef[:1]
            self.intercept_ = self.intercept_[1:] - self.intercept_[:1]
        return self

    def _warm_start(self, X, classes, linear: bool, strategy: str):
        """``init`` for solve / solve_multiclass from the previous fit, or None (see ``warm_start``)."""
        if not (self.warm_start and hasattr(self, "result_") and strategy != "ovo"
                and np.array_equal(self.classes_, classes) and self.n_features_in_ == _width(X)
                and (self.result_.kernel is None) == linear):
            return None
        if linear:
            w, b = np.asarray(self.coef_), np.asarray(self.intercept_)
            return {"w": w[0], "b": b[0]} if strategy == "binary" else {"w": w, "b": b}
        alpha = self.result_.extras.get("alpha")
        return {"alpha": np.asarray(alpha)} if alpha is not None and np.shape(alpha) == (X.shape[0],) else None

    def _set_fitted(self, res, n_features):
        """Fitted attributes from a Result / MulticlassResult / OvOModel."""
        for stale in ("_coef", "support_vectors_", "support_", "dual_coef_", "probA_", "probB_"):
            self.__dict__.pop(stale, None)
        self.result_ = res
        self.classes_ = np.asarray(res.classes)
        self.n_features_in_ = n_features
        iterations = np.asarray(res.iterations)
        self.intercept_ = np.array(np.atleast_1d(np.asarray(res.b)), dtype=float)
        if res.kernel is None:
            self.n_iter_ = int(np.max(iterations))
            self._coef = np.array(np.atleast_2d(np.asarray(res.w)))
        else:
            self.n_iter_ = np.atleast_1d(iterations).astype(np.int32)  # one per pair, as SVC
            self.support_vectors_ = res.support_vectors
            self.dual_coef_ = np.array(np.atleast_2d(np.asarray(res.dual_coef)), dtype=float)
            self.support_ = res.extras.get("support")
        platt = res.extras.get("platt") if isinstance(res.extras, dict) else None
        if platt is not None:
            self.probA_, self.probB_ = np.atleast_1d(platt.A), np.atleast_1d(platt.B)

    @classmethod
    def from_model(cls, model, **params):
        """A fitted estimator around a model of ``solve``, ``solve_multiclass`` or ``load_model``.

        Parameters are ``params``, over those a model file stores (its header's "estimator"; values
        that were objects come back as their names, which a refit resolves where it can)."""
        header = model.extras.get("header") if isinstance(model.extras, dict) else None
        valid = set(cls._param_names())
        stored = {k: v for k, v in ((header or {}).get("estimator") or {}).items() if k in valid}
        est = cls(**{**stored, **params})
        est._set_fitted(model, (header or {}).get("n_features") or _n_features(model, None))
        return est

    # ------------------------------------------------------------------ predict
    def _fitted(self):
        if not hasattr(self, "result_"):
            raise not_fitted(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first")
        return self.result_

    @property
    def coef_(self):
        """(1, d) / (K, d) weights of a linear model (settable: predictions follow); for kernel="linear",
        the read-only dual_coef_ @ support_vectors_ (one row per pair of classes)."""
        if "_coef" in self.__dict__:
            return self._coef
        res = self._fitted()
        if getattr(res.kernel, "name", None) != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        sv = self.support_vectors_
        coef = np.asarray((sv.T @ self.dual_coef_.T).T) if sp.issparse(sv) else self.dual_coef_ @ np.asarray(sv)
        coef.flags.writeable = False
        return coef

    @coef_.setter
    def coef_(self, value):
        if "_coef" not in self.__dict__:
            raise AttributeError("coef_ of a kernel model is dual_coef_ @ support_vectors_; set dual_coef_ instead")
        self._coef = np.atleast_2d(np.asarray(value, dtype=float))

    def _scores(self, X):
        """Raw decision values from the fitted attributes: (n,) binary, (n, K) one-vs-rest, (n, P) pairs."""
        res = self._fitted()
        X = self._input(X, self.n_features_in_)
        if res.kernel is None:
            f = np.asarray(X @ np.asarray(self.coef_).T) + self.intercept_
        else:
            f = predict_kernel(res.kernel, self.support_vectors_, np.asarray(self.dual_coef_).T, X) + self.intercept_
        f = np.asarray(f, dtype=float)
        return f[:, 0] if self.classes_.size == 2 else f

    def _ovo(self) -> bool:
        return self.result_.kernel is not None and self.classes_.size > 2

    def decision_function(self, X):
        """(n,) for two classes (> 0 means classes_[1]); (n, K) one-vs-rest scores for a linear
        model. A kernel model with K > 2 classes (one-vs-one): with ``decision_function_shape="ovr"``
        (default, as SVC) (n, K) per-class scores, each class's votes plus its summed pairwise
        values squashed into (-1/3, 1/3) (so the largest score is the class with most votes, ties
        going to the more confident; scikit-learn's rule); with "ovo" the (n, P) pairwise values."""
        if self.decision_function_shape not in ("ovr", "ovo"):
            raise ValueError(f"decision_function_shape must be 'ovr' or 'ovo', got {self.decision_function_shape!r}")
        f = self._scores(X)
        if not self._ovo() or self.decision_function_shape == "ovo":
            return f
        return ovr_scores(f, class_pairs(self.classes_.size), self.classes_.size)

    def predict(self, X):
        """Labels: the sign for two classes, the arg-max of one-vs-rest scores, one-vs-one votes (ties to
        the class listed first, or with ``break_ties`` to the larger ``decision_function``)."""
        if self.break_ties and self.decision_function_shape == "ovo":
            raise ValueError("break_ties must be False when decision_function_shape is 'ovo'")
        f = self._scores(X)
        if not np.isfinite(f).all():
            row = int(np.argwhere(~np.isfinite(f))[0][0])
            raise ValueError(f"the decision value of row {row} is not finite (NaN or inf in X?): no label to give")
        k = self.classes_.size
        if k == 2:
            return self.classes_[(f > 0).astype(int)]
        if self._ovo():
            pairs = class_pairs(k)
            scores = ovr_scores(f, pairs, k) if self.break_ties and self.decision_function_shape == "ovr" \
                else votes(f, pairs, k)
            return self.classes_[np.argmax(scores, axis=1)]
        return self.classes_[np.argmax(f, axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Mean accuracy (weighted by sample_weight if given)."""
        pred, y = self.predict(X), np.asarray(y).ravel()
        if y.shape != pred.shape:
            raise ValueError(f"shape mismatch: X has {pred.shape[0]} rows but y has {y.shape[0]} labels")
        return float(np.average(pred == y, weights=sample_weight))

    # ------------------------------------------------------------------ probabilities
    @property
    def predict_proba(self):
        """(n, K) class probabilities, columns in ``classes_`` order (``probability=True`` only;
        ``svmopt.probability``). A method only while ``probability`` is True, as SVC's."""
        self._check_proba()
        return self._predict_proba

    @property
    def predict_log_proba(self):
        """log of ``predict_proba`` (``probability=True`` only)."""
        self._check_proba()
        return self._predict_log_proba

    def _check_proba(self):
        if not self.probability:
            raise AttributeError("predict_proba is not available when probability=False")

    def _predict_proba(self, X):
        res = self._fitted()
        if "platt" not in res.extras:
            raise not_fitted("predict_proba is not available when fitted with probability=False")
        return _probability.predict_proba(res, res.extras["platt"], None, decision=self._scores(X))

    def _predict_log_proba(self, X):
        return np.log(self._predict_proba(X))


def load_estimator(path, **kw) -> SVMClassifier:
    """A fitted ``SVMClassifier`` from a model file (``svmopt.save_model``): ``load_model(path, **kw)``
    wrapped by ``SVMClassifier.from_model``."""
    from ..model_io import load_model

    return SVMClassifier.from_model(load_model(path, **kw))


def _width(X) -> int | None:
    return X.shape[1] if hasattr(X, "shape") and len(X.shape) == 2 else None


def _n_features(model, X) -> int | None:
    """n_features_in_: X's columns (a Gram matrix: the training rows), else what the model shows."""
    if X is not None:
        return _width(X)
    kernel = model.kernel
    if kernel is None:
        return int(np.shape(model.w)[-1])
    if kernel.name == "precomputed" and "n" in kernel.params:
        return int(kernel.params["n"])
    return _width(model.support_vectors)
