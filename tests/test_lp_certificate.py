"""The LP-SVM's certificate from a primal point (``svmopt.lp_certificate``). alm, nesvm and
homotopy_nesvm end within ~3e-4 of the LP optimum of hinge + l1 on a1a, but their own dual candidates
never certify it (they ended MAX_ITER at gaps of 1e-2 to 5e-2); the LP dual on the rows near the margin
does. Checked against the LP itself solved by HiGHS in float64 (``references.lp_optimum``) and by a
numpy check that the reported dual point is feasible and gives the reported dual objective."""
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import jax.numpy as jnp

import svmopt
from svmopt.losses import hinge
from svmopt.regularizers import l1
from svmopt.result import Status
from svmopt.solvers import alm, homotopy_nesvm, nesvm
from references import load, lp_optimum, lp_primal, lp_svm, pm

F32, F64 = jnp.float32, jnp.float64


def _check_dual_point(X, y, r, C, ref, fit_intercept=True):
    """The reported alpha is a dual point of the LP-SVM: in the box, in the l_inf ball, y^T alpha = 0,
    its sum the reported dual objective, which lies below the LP optimum."""
    a = np.asarray(r.extras["alpha"], np.float64)
    f32 = np.asarray(r.primal_objective).dtype == np.float32
    slack = 1e-5 if f32 else 1e-12
    assert a.min() >= 0 and a.max() <= C * (1 + slack)
    assert np.abs(X.T @ (a * y)).max() <= 1 + slack
    if fit_intercept:
        assert abs(a @ y) <= slack * a.sum()
    assert a.sum() == pytest.approx(float(r.dual_objective), rel=1e-6 if f32 else 1e-12)
    assert float(r.dual_objective) <= ref * (1 + (1e-6 if f32 else 1e-12))


@pytest.mark.parametrize("method,C,dtype", [
    (alm, 1.0, F64),
    (alm, 1.0, F32),
    (nesvm, 100.0, F64),
    pytest.param(homotopy_nesvm, 1.0, F64, marks=pytest.mark.slow),  # 50,000 iterations: ~20 s
    pytest.param(nesvm, 1.0, F32, marks=pytest.mark.slow),
])
def test_primal_methods_certify_the_lp_svm_on_a1a(method, C, dtype):
    X, y = load("a1a")
    X, yy = sp.csr_matrix(X, dtype=np.float64), pm(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a certified run warns of nothing
        r = svmopt.solve(X, y, loss=hinge, reg=l1, method=method, C=C, dtype=dtype)
    ref = lp_svm("a1a", C)
    assert r.status == Status.CONVERGED, (r.status, float(r.relative_gap))
    cert = r.extras["certificate"]
    assert cert["kind"] == "lp" and 0 < cert["rows"] < X.shape[0] and cert["relative_gap"] <= method.tol
    P = lp_primal(X, yy, np.asarray(r.w, np.float64), float(r.b), C)
    assert float(r.primal_objective) == pytest.approx(P, rel=1e-6)
    assert ref * (1 - 1e-9) <= P <= ref * (1 + method.tol)  # the certificate's promise, against HiGHS
    _check_dual_point(X, yy, r, C, ref)


def test_bias_feature_and_no_intercept():
    """LIBLINEAR's bias feature (b regularized as a weight on a constant column) and no intercept: the
    LP without the equality y^T alpha = 0, on X with the column appended or not."""
    X, y = load("a1a")
    X, yy = sp.csr_matrix(X, dtype=np.float64), pm(y)
    for kw, Xref in [(dict(intercept_scaling=1.0), sp.hstack([X, np.ones((X.shape[0], 1))], format="csr")),
                     (dict(fit_intercept=False), X)]:
        r = svmopt.solve(X, y, loss=hinge, reg=l1, method=alm, C=1.0, dtype=F64, **kw)
        ref = lp_optimum(Xref, yy, 1.0, fit_intercept=False)
        assert r.status == Status.CONVERGED, (kw, r.status, float(r.relative_gap))
        w = np.asarray(r.w, np.float64)
        wfull = np.concatenate([w, [float(r.b)]]) if "intercept_scaling" in kw else w
        P = lp_primal(Xref, yy, wfull, 0.0, 1.0)
        assert ref * (1 - 1e-9) <= P <= ref * (1 + alm.tol)
        _check_dual_point(Xref, yy, r, 1.0, ref, fit_intercept=False)


def test_a_far_point_stays_uncertified_in_a_grid():
    """A C grid (the batch path): C = 1 certifies; at C = 100 alm stalls 20% above the optimum, and the
    LP's dual, although better than alm's own, cannot certify that point: STALLED, with a warning that
    names pdhg and a dual objective still below the optimum."""
    X, y = load("a1a")
    X, yy = sp.csr_matrix(X, dtype=np.float64), pm(y)
    with pytest.warns(svmopt.ConvergenceWarning, match="linear program .*method=pdhg"):
        r = svmopt.solve(X, y, loss=hinge, reg=l1, method=alm, C=np.array([1.0, 100.0]), dtype=F64)
    status = [Status(int(s)) for s in np.asarray(r.status)]
    assert status[0] == Status.CONVERGED and status[1] != Status.CONVERGED
    for k, C in enumerate((1.0, 100.0)):
        ref = lp_svm("a1a", C)
        P = lp_primal(X, yy, np.asarray(r.w[k], np.float64), float(r.b[k]), C)
        assert float(r.dual_objective[k]) <= ref * (1 + 1e-12)
        assert P == pytest.approx(float(r.primal_objective[k]), rel=1e-9)
    assert (float(r.primal_objective[1]) - lp_svm("a1a", 100.0)) / lp_svm("a1a", 100.0) > 0.1


def test_a_named_method_stops_at_the_first_segment_that_certifies():
    """homotopy_nesvm on heart_scale (C = 1): the LP certificate is tried after 1,000 iterations, then
    2,000, ...; the run ends at the first that certifies, far below the method's cap, and its history
    runs on without a repeated row, to the reported iteration."""
    X, y = load("heart_scale")
    X, yy = sp.csr_matrix(X, dtype=np.float64), pm(y)
    r = svmopt.solve(X, y, loss=hinge, reg=l1, method=homotopy_nesvm, C=1.0, history=True, record_every=50)
    assert r.status == Status.CONVERGED and r.iterations % 1000 == 0
    assert r.iterations <= homotopy_nesvm.default_max_iter(None) // 10
    it = np.asarray(r.history["iteration"])
    assert np.all(np.diff(it) > 0) and it[-1] == r.iterations
    ref = lp_svm("heart_scale", 1.0)
    P = lp_primal(X, yy, np.asarray(r.w, np.float64), float(r.b), 1.0)
    assert ref * (1 - 1e-9) <= P <= ref * (1 + homotopy_nesvm.tol)
    _check_dual_point(X, yy, r, 1.0, ref)
