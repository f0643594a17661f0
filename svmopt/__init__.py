"""svmopt: composable SVM training on JAX.

    import svmopt
    from svmopt.losses import lp_hinge
    from svmopt.regularizers import l2
    from svmopt.solvers import alm

    r = svmopt.solve(X, y, loss=lp_hinge(1.5), reg=l2, method=alm, C=1.0)
    r.w, r.b, r.primal_objective, r.gap, r.status
"""
from . import _cache
from ._cache import disable_compilation_cache, enable_compilation_cache
from . import losses, regularizers, smoothing, solvers
from .io import LibsvmFormatError, dump_svmlight, load_svmlight
from . import estimators, hyper, model_io, multiclass, probability, ranking
from .estimators import OneClassSVM, SVMClassifier, SVMRegressor
from .model_io import ModelFileError, load_model, save_model
from .multiclass import MulticlassResult, solve_multiclass
from .losses import MissingCapability
from .operators import as_operator
from .sharding import ShardedOperator, shard_rows
from .result import OneClassResult, RegressionResult, Result, SolverError, Status
from .solve import solve
from .oneclass import solve_oneclass
from .path import path
from .driver import compile_count

__version__ = "0.1.0"

_cache.enable_default()


ConvergenceWarning: type  # served by __getattr__ below (the annotation names it for documentation tools)
"""The warning a solve that ends without a certified answer emits (``svmopt.result.ConvergenceWarning``);
a subclass of ``sklearn.exceptions.ConvergenceWarning`` too when scikit-learn is installed."""


def __getattr__(name):
    # ConvergenceWarning subclasses scikit-learn's when scikit-learn is installed; resolving it
    # on first use keeps scikit-learn's import out of ``import svmopt``
    if name == "ConvergenceWarning":
        from .result import public_convergence_warning
        return public_convergence_warning()
    raise AttributeError(f"module 'svmopt' has no attribute {name!r}")

__all__ = [
    "solve",
    "solve_oneclass",
    "path",
    "compile_count",
    "enable_compilation_cache",
    "disable_compilation_cache",
    "solve_multiclass",
    "MulticlassResult",
    "SVMClassifier",
    "SVMRegressor",
    "OneClassSVM",
    "save_model",
    "load_model",
    "ModelFileError",
    "Result",
    "RegressionResult",
    "OneClassResult",
    "Status",
    "ConvergenceWarning",
    "SolverError",
    "MissingCapability",
    "LibsvmFormatError",
    "load_svmlight",
    "dump_svmlight",
    "as_operator",
    "shard_rows",
    "ShardedOperator",
    "losses",
    "regularizers",
    "smoothing",
    "solvers",
    "hyper",
]
