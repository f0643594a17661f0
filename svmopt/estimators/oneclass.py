"""scikit-learn's ``OneClassSVM`` on ``svmopt.solve_oneclass`` (LIBSVM -s 2; SPEC section 7).

    from svmopt.estimators import OneClassSVM
    det = OneClassSVM(nu=0.1, gamma=0.5).fit(X)
    det.predict(X)  # +1 inside the estimated support, -1 outside
    det.decision_function(X), det.score_samples(X), det.offset_, det.result_.gap

The fitted numbers are in LIBSVM's scale, as scikit-learn's: ``dual_coef_`` sums to nu sum_i s_i
(nu n without weights), ``offset_`` is LIBSVM's rho and ``decision_function`` = ``score_samples`` -
``offset_``; ``result_`` (a ``OneClassResult``) holds the solve in SPEC section 7's scale (sum alpha =
1) with its certified gap. Like ``SVMClassifier``, it follows scikit-learn's conventions without
importing scikit-learn (only its tags do).
"""
from __future__ import annotations

import numpy as np

import jax

from .base import Params, check_X, not_fitted
from .resolvers import resolve_kernel, resolve_method
from ..oneclass import solve_oneclass

__all__ = ["OneClassSVM"]

_KERNEL_NAMES = {"poly": "polynomial"}  # scikit-learn's names for svmopt's kernels


class OneClassSVM(Params):
    """Unsupervised outlier detection: the one-class SVM (Schoelkopf et al., 2001), scikit-learn's API.

    Parameters
    ----------
    kernel : "rbf" (default), "linear", "poly" / "polynomial", "sigmoid" or an ``svmopt.kernels.Kernel``.
    degree, gamma, coef0 : kernel parameters with scikit-learn's defaults (3, "scale", 0.0); gamma
        "scale" is 1 / (d var X), "auto" 1 / d.
    tol : the relative duality gap certified (None: the method's, 1e-3).
    nu : in (0, 1] (default 0.5): an upper bound on the fraction of training rows outside the support
        and a lower bound on the fraction of support vectors.
    max_iter : the method's iteration cap (None: its default).
    dtype : None (float32), "float32" or "float64" (with jax_enable_x64).
    method : "auto" (alfpgm) or a method solving LIBSVM's dual with sum alpha = 1; method_params: its
        further keyword parameters (e.g. {"cache_size": 400.0}).
    verbose : as ``SVMClassifier``'s.

    Fitted attributes (scikit-learn's): ``support_``, ``support_vectors_``, ``dual_coef_`` (1, n_SV),
    ``offset_`` (rho), ``intercept_`` (-rho), ``n_support_``, ``fit_status_`` (0: certified, 1: not),
    ``n_iter_``, ``n_features_in_``, ``shape_fit_``, ``coef_`` for the linear kernel; ``result_``.
    """

    _estimator_type = "outlier_detector"  # sklearn < 1.6 reads this

    def __init__(self, kernel="rbf", degree=3, gamma="scale", coef0=0.0, tol=None, nu=0.5, max_iter=None,
                 dtype=None, method="auto", method_params=None, verbose=False):
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.tol = tol
        self.nu = nu
        self.max_iter = max_iter
        self.dtype = dtype
        self.method = method
        self.method_params = method_params
        self.verbose = verbose

    def __sklearn_tags__(self):
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type="outlier_detector", target_tags=TargetTags(required=False),
                    input_tags=InputTags(sparse=True))

    def __sklearn_is_fitted__(self):
        return hasattr(self, "result_")

    def fit(self, X, y=None, sample_weight=None):
        """Fit on the rows of X (n, d), dense or sparse; y is ignored. ``sample_weight`` rescales each
        row's bound (LIBSVM's weights: C_i = s_i / (nu sum_j s_j))."""
        X = check_X(X, who="OneClassSVM")
        nu = self.nu
        if isinstance(nu, (bool, np.bool_)) or not isinstance(nu, (int, float, np.integer, np.floating)) \
                or not 0.0 < float(nu) <= 1.0:
            raise ValueError(f"nu must be a number in (0, 1], got {nu!r}")
        name = _KERNEL_NAMES.get(self.kernel, self.kernel) if isinstance(self.kernel, str) else self.kernel
        kernel = resolve_kernel(name, X, gamma=self.gamma, degree=self.degree, coef0=self.coef0)
        kw = dict(tol=self.tol, max_iter=self.max_iter, dtype=self.dtype, verbose=self.verbose,
                  **(self.method_params or {}))
        if self.method is not None and not (isinstance(self.method, str) and self.method == "auto"):
            kw["method"] = resolve_method(self.method)
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=float)
        res = solve_oneclass(X, nu=float(nu), kernel=kernel, sample_weight=sample_weight, **kw)
        for stale in ("coef_",):
            self.__dict__.pop(stale, None)
        self.result_ = res
        scale = float(res.scale)
        self.support_ = np.asarray(res.extras["support"])
        self.support_vectors_ = res.support_vectors
        self.dual_coef_ = np.atleast_2d(np.asarray(res.dual_coef, np.float64) * scale)
        self.offset_ = float(res.rho) * scale
        self.intercept_ = np.array([-self.offset_])
        self.n_support_ = np.array([self.support_.size], np.int32)
        self.fit_status_ = 0 if res.converged else 1
        self.n_iter_ = int(res.iterations)
        self.n_features_in_ = int(X.shape[1])
        self.shape_fit_ = X.shape
        if kernel is not None and kernel.name == "linear":
            sv = self.support_vectors_
            self.coef_ = np.atleast_2d(np.asarray(sv.T @ self.dual_coef_.ravel()))
        return self

    def _fitted(self):
        if not hasattr(self, "result_"):
            raise not_fitted(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first")
        return self.result_

    def decision_function(self, X):
        """score_samples(X) - offset_ (LIBSVM's scale): > 0 inside the estimated support. (n,)"""
        res = self._fitted()
        X = check_X(X, self.n_features_in_, who="OneClassSVM")
        with jax.enable_x64(True):  # float64 sums: a row's value does not depend on the rows beside it
            f = np.asarray(res.decision_function(X), np.float64)
        return f * float(res.scale)

    def score_samples(self, X):
        """The raw score sum_i dual_coef_i K(x_i, x) (LIBSVM's scale). (n,)"""
        return self.decision_function(X) + self.offset_

    def predict(self, X):
        """+1 (inlier) or -1 (outlier) per row."""
        return np.where(self.decision_function(X) > 0, 1, -1).astype(np.intp)

    def fit_predict(self, X, y=None, **fit_params):
        """fit(X), then predict(X)."""
        return self.fit(X, y, **fit_params).predict(X)
