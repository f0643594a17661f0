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
    # every row of one class at weight 0: a one-class problem (it ran 5000 iterations to MAX_ITER)
    label = float(np.max(Y))
    with pytest.raises(ValueError, match=f"zero on every row of class {label!r}"):
        svmopt.solve(X, Y, sample_weight=np.where(Y == label, 0.0, 1.0))


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


# ------------------------------------------------------------ the bad-input matrix, every method
METHODS = ["alm", "nesvm", "homotopy_nesvm", "dual_cd", "cutting_plane", "alfpgm"]


def _with(i, j, v):
    a = X.copy()
    a[i, j] = v
    return a


def _y_none():
    y = Y.astype(object)
    y[5] = None
    return y


# (what, keywords for solve, error type, message) -- each refused before any solver runs
BAD = {
    "nan_X": (dict(X=_with(7, 2, np.nan)), ValueError, r"NaN or inf \(first at row 7\)"),
    "X_beyond_float32": (dict(X=_with(9, 1, 1e39)), ValueError, r"beyond the range of float32.*row 9"),
    "X_beyond_float32_sparse": (dict(X=sp.csr_matrix(_with(9, 1, -1e39))), ValueError, r"float32.*row 9"),
    "complex_X": (dict(X=X + 1j), TypeError, "complex"),
    "complex_y": (dict(y=Y + 1j), TypeError, "complex"),
    "y_none": (dict(y=_y_none()), ValueError, "missing label.*index 5"),
    "C_empty": (dict(C=[]), ValueError, "empty"),
    "C_beyond_float32": (dict(C=1e39), ValueError, "float32"),
    "C_times_weight_beyond_float32": (dict(C=1e20, sample_weight=np.full(30, 1e20)), ValueError, "sample_weight"),
    "tol_zero": (dict(tol=0.0), ValueError, "tol"),
    "tol_negative": (dict(tol=-1.0), ValueError, "tol"),
}


@pytest.mark.parametrize("case", list(BAD))
@pytest.mark.parametrize("method", METHODS)
def test_bad_input_matrix(method, case):
    """Every method refuses every bad input with an error that names it (float32, the default)."""
    kw, err, msg = BAD[case]
    kw = {"X": X, "y": Y, **kw}
    m = getattr(svmopt.solvers, method)
    extra = {} if method in ("alm", "nesvm", "homotopy_nesvm", "alfpgm") else {"intercept_scaling": 1.0}
    with pytest.raises(err, match=msg):
        svmopt.solve(kw.pop("X"), kw.pop("y"), method=m, **extra, **kw)


def test_float64_accepts_what_float32_cannot_hold():
    """1e39 is a float64 number: refused in float32 only; the float64 model is finite."""
    import jax
    if not jax.config.jax_enable_x64:
        pytest.skip("needs x64")
    with pytest.warns(svmopt.ConvergenceWarning):  # 1e39 next to O(1) values: no certificate in 50 iterations
        r = svmopt.solve(_with(9, 1, 1e39), Y, dtype="float64", max_iter=50)
    assert np.all(np.isfinite(np.asarray(r.w))) and np.isfinite(float(r.b))


SPARSE = ["csr", "csc", "coo", "lil", "dok", "dia", "bsr"]


@pytest.mark.parametrize("kind", ["matrix", "array"])
@pytest.mark.parametrize("fmt", SPARSE)
def test_every_sparse_format(fmt, kind):
    """Every scipy sparse format (matrix and *_array classes) gives the dense answer, and a NaN
    is reported at its own row whatever order the format stores its entries in."""
    cls = getattr(sp, f"{fmt}_{kind}")
    dense = svmopt.solve(X, Y, dtype="float64", tol=1e-8)
    r = svmopt.solve(cls(X), Y, dtype="float64", tol=1e-8)
    np.testing.assert_allclose(np.asarray(r.w), np.asarray(dense.w), rtol=0, atol=1e-6)
    for row in (0, 17, 29):
        with pytest.raises(ValueError, match=rf"NaN or inf \(first at row {row}\)"):
            svmopt.solve(cls(_with(row, 3, np.nan)), Y)


@pytest.mark.parametrize("make", [lambda: svmopt.kernels.rbf(float("inf")), lambda: svmopt.kernels.rbf(0.0),
                                  lambda: svmopt.kernels.rbf(-1.0), lambda: svmopt.kernels.rbf(float("nan")),
                                  lambda: svmopt.kernels.polynomial(degree=2.5),
                                  lambda: svmopt.kernels.polynomial(degree=0),
                                  lambda: svmopt.kernels.polynomial(coef0=float("inf")),
                                  lambda: svmopt.kernels.sigmoid(gamma=float("inf"))],
                         ids=["rbf_inf", "rbf_0", "rbf_neg", "rbf_nan", "poly_2.5", "poly_0", "poly_coef0_inf",
                              "sigmoid_inf"])
def test_kernel_parameters_refused(make):
    with pytest.raises(ValueError, match="needs"):
        make()


def test_predict_refuses_nan_rows():
    r = svmopt.solve(X, Y, dtype="float64", tol=1e-8)  # the model test_every_sparse_format solves (no new program)
    with pytest.raises(ValueError, match="row 3"):
        r.predict(_with(3, 0, np.nan))
    with pytest.raises(ValueError, match="row 4"):
        r.predict(sp.csr_matrix(_with(4, 0, np.inf)))


def test_a_width_no_machine_can_hold_is_refused_by_name():
    """One feature index of 2e9 in a two-row file: the solve died allocating 8 GB (a raw traceback from
    svmopt-train). A width whose model vectors exceed this machine's memory is refused, naming it."""
    import scipy.sparse as sp

    X = sp.csr_matrix((np.array([0.5, 1.0, 0.3]), np.array([0, 2_100_000_000 - 1, 1]), np.array([0, 2, 3])),
                      shape=(2, 2_100_000_000))
    with pytest.raises(ValueError, match=r"X has 2,100,000,000 columns: a linear model keeps about"):
        svmopt.solve(X, np.array([1.0, -1.0]))
