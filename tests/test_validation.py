"""Bad input gets a clear error that names the problem."""
import numpy as np
import pytest
import scipy.sparse as sp

import jax.numpy as jnp

import svmopt
from svmopt.losses import hinge, lp_hinge
from svmopt.regularizers import l1, l2
from svmopt.solvers import alm

RNG = np.random.default_rng(0)
X = RNG.normal(size=(30, 4))
Y = np.where(RNG.normal(size=30) > 0, 1.0, -1.0)


def test_nan_and_inf_in_X():
    bad = X.copy()
    bad[7, 2] = np.nan
    with pytest.raises(ValueError, match=r"NaN or inf \(first at row 7\)"):
        svmopt.solve(bad, Y)
    bad_sp = sp.csr_matrix(X)
    bad_sp.data[bad_sp.indptr[11]] = np.inf
    with pytest.raises(ValueError, match="row 11"):
        svmopt.solve(bad_sp, Y)


def test_nan_in_y_and_shape_mismatch():
    y = Y.copy()
    y[3] = np.nan
    with pytest.raises(ValueError, match="y contains NaN"):
        svmopt.solve(X, y)
    with pytest.raises(ValueError, match="X has 30 rows but y has 29"):
        svmopt.solve(X, Y[:-1])
    with pytest.raises(ValueError, match="2-D"):
        svmopt.solve(X[:, 0], Y)
    with pytest.raises(ValueError, match="1-D"):
        svmopt.solve(X, Y[:, None])


def test_class_count():
    with pytest.raises(ValueError, match="only one class"):
        svmopt.solve(X, np.ones(30))
    with pytest.raises(ValueError, match="solve_multiclass"):
        svmopt.solve(X, np.arange(30) % 3)


@pytest.mark.parametrize("C", [0.0, -1.0, np.nan, np.inf, [1.0, -2.0]])
def test_bad_C(C):
    with pytest.raises(ValueError, match="C must be"):
        svmopt.solve(X, Y, C=C)


def test_p_below_one():
    with pytest.raises(ValueError, match="p >= 1"):
        svmopt.solve(X, Y, loss=lp_hinge(0.9))


def test_sample_weights():
    with pytest.raises(ValueError, match=">= 0"):
        svmopt.solve(X, Y, sample_weight=-np.ones(30))
    with pytest.raises(ValueError, match="zero everywhere"):
        svmopt.solve(X, Y, sample_weight=np.zeros(30))
    with pytest.raises(ValueError, match="sample_weight has shape"):
        svmopt.solve(X, Y, sample_weight=np.ones(5))


def test_wrong_building_blocks():
    with pytest.raises(TypeError, match="from_function"):
        svmopt.solve(X, Y, loss=lambda m: m)
    with pytest.raises(TypeError, match="Regularizer"):
        svmopt.solve(X, Y, reg="l2")
    with pytest.raises(TypeError, match="solver"):
        svmopt.solve(X, Y, method="alm")
    from svmopt.solvers import dual_cd
    with pytest.raises(svmopt.MissingCapability, match="l2-regularized"):
        svmopt.solve(X, Y, reg=l1, method=dual_cd, fit_intercept=False)
    with pytest.raises(TypeError, match="no parameter"):
        alm(rhoo=2.0)
    with pytest.raises(ValueError, match="rho >= 1"):
        svmopt.solve(X, Y, method=alm(rho=0.5))
    with pytest.raises(ValueError, match="jax_enable_x64|float32 or float64"):
        svmopt.solve(X, Y, dtype=jnp.int32)
    with pytest.raises(ValueError, match="max_iter"):
        svmopt.solve(X, Y, max_iter=0)
    with pytest.raises(ValueError, match="intercept_scaling"):
        svmopt.solve(X, Y, intercept_scaling=-1.0)
    with pytest.raises(ValueError, match="linear"):
        from svmopt.kernels import rbf

        svmopt.solve(X, Y, method=alm, kernel=rbf(0.5))
