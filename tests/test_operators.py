"""Data operators: dense and sparse agree with scipy on real data, in float32 and float64."""
import numpy as np
import pytest
import scipy.sparse as sp

import jax
import jax.numpy as jnp

import svmopt
from svmopt.operators import DenseOperator, SparseOperator, as_operator
from conftest import data_path


@pytest.fixture(scope="module")
def heart():
    X, y = svmopt.load_svmlight(data_path("heart_scale"))
    return X, y


def _ops(X, dtype):
    return {
        "sparse": as_operator(X, dtype, layout="sparse"),
        "dense": as_operator(X, dtype, layout="dense"),
        "dense_blocked": DenseOperator(jnp.asarray(X.toarray(), dtype), block_rows=37),  # 270 rows: ragged tail
    }


@pytest.mark.parametrize("dtype,rtol", [(jnp.float64, 1e-12), (jnp.float32, 1e-5)])
def test_operators_match_scipy(heart, dtype, rtol):
    X, y = heart
    rng = np.random.default_rng(1)
    w = rng.normal(size=X.shape[1])
    u = rng.normal(size=X.shape[0])
    Xd = X.toarray()
    for name, op in _ops(X, dtype).items():
        assert op.dtype == dtype and op.shape == X.shape
        np.testing.assert_allclose(op.matvec(jnp.asarray(w, dtype)), X @ w, rtol=rtol, atol=rtol * 10, err_msg=name)
        np.testing.assert_allclose(op.rmatvec(jnp.asarray(u, dtype)), X.T @ u, rtol=rtol, atol=rtol * 100,
                                   err_msg=name)
        np.testing.assert_allclose(op.row_sq_norms(), (Xd ** 2).sum(1), rtol=rtol, err_msg=name)
        np.testing.assert_allclose(op.row_inf_norms(), np.abs(Xd).max(1), rtol=rtol, err_msg=name)
        # fused pass X^T f(Xw): hinge-gradient coefficients and a loss sum, with a per-row aux array
        yy = jnp.asarray(y, dtype)

        def f(z, yb):
            m = yb * z
            return -yb * (m < 1), jnp.maximum(1 - m, 0)

        g, s = op.fused(jnp.asarray(w, dtype), f, (yy,))
        m = y * (X @ w)
        np.testing.assert_allclose(g, X.T @ (-y * (m < 1)), rtol=rtol, atol=rtol * 100, err_msg=name)
        assert float(s) == pytest.approx(np.maximum(1 - m, 0).sum(), rel=rtol * 10)


def test_operators_are_jittable_pytrees(heart):
    X, _ = heart
    op = as_operator(X, jnp.float64, layout="sparse")
    leaves, tree = jax.tree_util.tree_flatten(op)
    assert all(isinstance(l, jax.Array) for l in leaves)
    f = jax.jit(lambda o, w: o.matvec(w))
    np.testing.assert_allclose(f(op, jnp.ones(13)), X @ np.ones(13), rtol=1e-12)
    assert isinstance(op, SparseOperator) and np.allclose(op.to_scipy().toarray(), X.toarray())


def test_auto_layout_and_bias_column(heart):
    X, _ = heart
    assert isinstance(as_operator(X, jnp.float64), DenseOperator)  # 270 x 13, 96% dense
    wide = sp.random(50, 100_000, density=1e-4, format="csr", random_state=0)
    assert isinstance(as_operator(wide, jnp.float32), SparseOperator)
    op = as_operator(X, jnp.float64, bias_scale=2.5, layout="sparse")
    assert op.shape == (270, 14)
    np.testing.assert_allclose(op.matvec(jnp.eye(14)[13]), np.full(270, 2.5))
    with pytest.raises(ValueError, match="layout"):
        as_operator(X, jnp.float64, layout="diagonal")
