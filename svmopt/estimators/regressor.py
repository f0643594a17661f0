"""``SVMRegressor``: scikit-learn's ``LinearSVR`` conventions on ``svmopt.solve`` with a loss of the residual."""
from __future__ import annotations

import math

import numpy as np

from ..checks import check_targets
from ..losses import Loss, MissingCapability
from ..solve import solve
from .base import Params, check_X, given_y, not_fitted
from .resolvers import resolve_kernel, resolve_loss, resolve_method

__all__ = ["SVMRegressor", "r2_score"]

_LOSSES = ("epsilon_insensitive", "squared_epsilon_insensitive")


def r2_score(y, f, sample_weight=None) -> float:
    """The coefficient of determination 1 - sum s (y - f)^2 / sum s (y - ybar_s)^2, ybar_s the
    s-weighted mean of y (scikit-learn's ``r2_score``, including its ``force_finite`` ends: 1.0 for
    constant y predicted exactly, 0.0 for constant y predicted otherwise)."""
    y = np.asarray(y, np.float64).ravel()
    f = np.asarray(f, np.float64).ravel()
    if y.shape != f.shape:
        raise ValueError(f"shape mismatch: {f.shape[0]} predictions but y has {y.shape[0]} values")
    s = np.ones_like(y) if sample_weight is None else np.asarray(sample_weight, np.float64).ravel()
    num = float(np.sum(s * (y - f) ** 2))
    den = float(np.sum(s * (y - np.average(y, weights=s)) ** 2))
    if den == 0.0:
        return 1.0 if num == 0.0 else 0.0
    return 1.0 - num / den


def _check_targets(y, n):
    y = given_y(y, "SVMRegressor")
    if y.dtype.kind in "OUS":
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError):
            raise ValueError("SVMRegressor needs real-valued targets y; got values that are not numbers") from None
    return check_targets(y, n, "y")


class SVMRegressor(Params):
    """Linear support vector regression: min 1/2 |w|^2 + C sum_i s_i loss(t_i - (w.x_i + b)) solved by
    an svmopt method, certified to a relative duality gap (scikit-learn's ``LinearSVR``; LIBLINEAR's
    ``-s 11 / 12 / 13``).

    Parameters
    ----------
    epsilon : float >= 0, the half-width of the insensitive tube (default 0.0, as ``LinearSVR``;
        LIBLINEAR's ``-p`` defaults to 0.1).
    C : float > 0, weight of the loss (default 1.0).
    loss : "epsilon_insensitive" (default, as ``LinearSVR``: (|r| - epsilon)_+, LIBLINEAR's -s 13),
        "squared_epsilon_insensitive" ((|r| - epsilon)_+^2, -s 11 / 12), or a loss of the residual
        from ``svmopt.losses`` (``squared_error``, ``epsilon_insensitive(0.5)``, ...; ``epsilon`` is
        then the loss's own).
    fit_intercept : learn an intercept b (default True); False: b = 0.
    intercept_scaling : 1.0 (default, as ``LinearSVR``): LIBLINEAR's bias feature of this value
        (b = s * w_bias is regularized with w; the model is ``LinearSVR``'s); None: a free
        (unregularized) intercept.
    tol, max_iter : the relative duality gap (P - D)/|P| to certify and the iteration cap
        (None: the method's defaults). ``LinearSVR``'s tol is LIBLINEAR's own stopping rule instead.
    dtype : None (float32, or float64 for float64 data when jax_enable_x64 is on), "float32" or
        "float64".
    method : "auto" (default: ``svmopt.solvers.auto``'s pick; dual_cd for the L1 loss with a bias
        feature or none, newton for the L2 loss), None (the same), a solver's name or a Method.
    kernel : None (default) or "linear": the linear model. Other kernels (rbf, ...) go to
        ``svmopt.solve``; while it has no kernel regression, fit raises NotImplementedError.
    gamma, degree, coef0 : kernel parameters (sklearn's SVR conventions).
    method_params : dict of further keyword parameters of the method.
    verbose : False (default), True, an int k or a callable (as ``SVMClassifier``).

    Fitted attributes: ``coef_`` (d,), ``intercept_`` (1,) (the float 0.0 with
    ``fit_intercept=False``; both as ``LinearSVR``), ``n_iter_``, ``n_features_in_``, ``result_``
    (the ``RegressionResult``: objective, gap, status).
    """

    _estimator_type = "regressor"  # sklearn < 1.6 reads this

    def __init__(self, epsilon=0.0, C=1.0, loss="epsilon_insensitive", fit_intercept=True, intercept_scaling=1.0,
                 tol=None, max_iter=None, dtype=None, method="auto", kernel=None, gamma="scale", degree=3,
                 coef0=0.0, method_params=None, verbose=False):
        self.epsilon = epsilon
        self.C = C
        self.loss = loss
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.tol = tol
        self.max_iter = max_iter
        self.dtype = dtype
        self.method = method
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.method_params = method_params
        self.verbose = verbose

    def __sklearn_tags__(self):  # sklearn >= 1.6
        from sklearn.utils import InputTags, RegressorTags, Tags, TargetTags

        return Tags(estimator_type="regressor", target_tags=TargetTags(required=True, single_output=True),
                    regressor_tags=RegressorTags(), input_tags=InputTags(sparse=True))

    def _more_tags(self):  # sklearn < 1.6
        return {"requires_y": True}

    def __sklearn_is_fitted__(self):
        return hasattr(self, "result_")

    def _loss(self) -> Loss:
        if isinstance(self.loss, Loss):
            if not self.loss.needs_targets:
                raise ValueError(f"SVMRegressor needs a loss of the residual (epsilon_insensitive, "
                                 f"squared_epsilon_insensitive, squared_error), got {self.loss!r}")
            return self.loss
        if not (isinstance(self.loss, str) and self.loss in _LOSSES):
            raise ValueError(f"loss must be one of {', '.join(_LOSSES)} or an svmopt.losses loss of the residual, "
                             f"got {self.loss!r}")
        e = self.epsilon
        if isinstance(e, bool) or not isinstance(e, (int, float, np.integer, np.floating)) \
                or not (math.isfinite(e) and e >= 0):
            raise ValueError(f"epsilon must be a finite number >= 0, got {e!r}")
        return resolve_loss(self.loss, epsilon=float(e))

    def fit(self, X, y, sample_weight=None):
        """Fit on X (n, d) dense or sparse and real targets y (n,); sample_weight (n,) >= 0 scales C per row."""
        X = check_X(X, who="SVMRegressor")
        y = _check_targets(y, X.shape[0])
        if not (isinstance(self.C, (int, float, np.integer, np.floating)) and math.isfinite(self.C) and self.C > 0):
            raise ValueError(f"C must be a finite number > 0, got {self.C!r}")
        s = self.intercept_scaling
        if self.fit_intercept and s is not None and not (isinstance(s, (int, float, np.integer, np.floating))
                                                         and math.isfinite(s) and s > 0):
            raise ValueError(f"intercept_scaling must be None (a free intercept) or a number > 0, got {s!r}")
        if sample_weight is not None:
            sample_weight = np.asarray(sample_weight, dtype=float)
            if sample_weight.shape != (X.shape[0],):
                raise ValueError(f"sample_weight has shape {sample_weight.shape}, expected ({X.shape[0]},)")
        linear = self.kernel is None or (isinstance(self.kernel, str) and self.kernel.strip().lower() == "linear")
        kernel = None if linear else resolve_kernel(self.kernel, X, gamma=self.gamma, degree=self.degree,
                                                    coef0=self.coef0)
        kw = dict(loss=self._loss(), C=float(self.C), fit_intercept=bool(self.fit_intercept),
                  intercept_scaling=float(s) if self.fit_intercept and s is not None else None,
                  sample_weight=sample_weight, tol=self.tol, max_iter=self.max_iter, dtype=self.dtype,
                  verbose=self.verbose, **(self.method_params or {}))
        if kernel is not None:
            kw["kernel"] = kernel
        if self.method is not None and not (isinstance(self.method, str) and self.method == "auto"):
            kw["method"] = resolve_method(self.method)
        try:
            res = solve(X, y, **kw)
        except MissingCapability as exc:
            if kernel is None:
                raise
            raise NotImplementedError(f"kernel regression (kernel={self.kernel!r}) is not in svmopt yet ({exc}); "
                                      "use kernel=None for linear regression") from exc
        self._set_fitted(res, X.shape[1])
        return self

    def _set_fitted(self, res, n_features):
        for stale in ("coef_", "support_vectors_", "dual_coef_"):
            self.__dict__.pop(stale, None)
        self.result_ = res
        self.n_features_in_ = int(n_features)
        self.n_iter_ = int(np.asarray(res.iterations))
        self.intercept_ = np.atleast_1d(np.asarray(res.b, np.float64)) if self.fit_intercept else 0.0
        if res.kernel is None:
            self.coef_ = np.asarray(res.w)
        else:
            self.support_vectors_ = res.support_vectors
            self.dual_coef_ = np.asarray(res.dual_coef)

    def predict(self, X):
        """w.x + b for the rows of X (n,)."""
        if not hasattr(self, "result_"):
            raise not_fitted(f"This {type(self).__name__} instance is not fitted yet; call 'fit' first")
        return self.result_.predict(check_X(X, self.n_features_in_, who="SVMRegressor"))

    def score(self, X, y, sample_weight=None) -> float:
        """R^2 of ``predict(X)`` against y (weighted by sample_weight if given), scikit-learn's regressor score."""
        return r2_score(y, self.predict(X), sample_weight)
