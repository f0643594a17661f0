"""scikit-learn compatible estimators on top of ``svmopt.solve`` / ``solve_multiclass`` / ``solve_oneclass``.

    from svmopt.estimators import SVMClassifier, SVMRegressor, OneClassSVM
    clf = SVMClassifier(loss="squared_hinge", C=0.5).fit(X, y)
    clf.predict(X), clf.decision_function(X), clf.coef_, clf.intercept_, clf.result_.gap
    SVMClassifier(kernel="rbf", probability=True).fit(X, y).predict_proba(X)
    reg = SVMRegressor(epsilon=0.1, C=10.0).fit(X, t)      # t real
    reg.predict(X), reg.score(X, t), reg.coef_, reg.intercept_
    OneClassSVM(nu=0.1, kernel="rbf").fit(X).predict(X)     # +1 inlier, -1 outlier

scikit-learn is not a dependency: the classes follow its conventions themselves (``base``:
``__init__`` stores parameters untouched, ``get_params`` / ``set_params`` read the ``__init__``
signature, fitted attributes end in ``_``), so ``clone``, ``Pipeline`` and ``GridSearchCV``
accept them, and they import sklearn only when sklearn asks for their tags.

``SVMClassifier`` (``classifier``): two labels give one binary problem (``coef_`` (1, d), as
LinearSVC), more give one-vs-rest in one vmapped solve (``coef_`` (K, d)); kernel models with more
than two labels are one-vs-one, as scikit-learn's SVC (LIBSVM). Predictions are computed from the
fitted attributes (``coef_`` / ``intercept_``, or ``dual_coef_`` / ``support_vectors_`` /
``intercept_`` of a kernel model), so attributes a user sets are the ones that predict.
``load_estimator`` turns a model file (``svmopt.save_model``) back into a fitted estimator.
``SVMRegressor`` (``regressor``): support vector regression with scikit-learn's ``LinearSVR``
parameters and shapes (``coef_`` (d,), ``score`` R^2). ``OneClassSVM`` (``oneclass``):
scikit-learn's ``OneClassSVM``.

The resolvers (``resolvers``: ``resolve_loss``, ``resolve_reg``, ``resolve_method``,
``resolve_kernel``) turn the names the command line and estimators take into svmopt objects;
solvers are imported lazily by name from ``svmopt.solvers.<name>``.
"""
from .base import NotFittedError
from .classifier import SVMClassifier, load_estimator
from .oneclass import OneClassSVM
from .regressor import SVMRegressor
from .resolvers import REGRESSION_LOSSES, available_methods, resolve_kernel, resolve_loss, resolve_method, resolve_reg

__all__ = ["SVMClassifier", "SVMRegressor", "OneClassSVM", "NotFittedError", "load_estimator", "REGRESSION_LOSSES",
           "resolve_loss", "resolve_reg", "resolve_method", "resolve_kernel", "available_methods"]
