"""Cutting plane (SVMperf, Joachims 2006): classification (Algorithm 1), ordinal regression and
ROC area (Algorithm 2), on real data against LIBLINEAR / scikit-learn and brute force.

The solver's guarantee (module doc of svmopt.solvers.cutting_plane): at the stop
P(w) - P* <= (1 + qp_tol) * C * n * tol, and the reported dual is a lower bound on P*.
"""
import functools

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path

import jax
import jax.numpy as jnp

import svmopt
from svmopt.losses import MissingCapability, hinge, smoothed_hinge, squared_hinge
from svmopt.regularizers import l1, l2
from svmopt.solvers.cutting_plane import CuttingPlane, _oracle, cutting_plane, most_violated_ordinal
from svmopt.ranking import RankingResult, count_pairs, solve_ordinal, solve_roc_area
from svmopt.result import Status
from svmopt.plan import prepare

QP_TOL = CuttingPlane.qp_tol


# ------------------------------------------------------------------ data and references
@functools.lru_cache(maxsize=None)
def _load(name, n_features=None):
    return svmopt.load_svmlight(data_path(name), n_features=n_features)


def _hinge_objective(w, X, y, C, b=0.0, bias_scale=None):
    """SPEC section 1 with the bias-feature convention when bias_scale is set (b regularized)."""
    reg = 0.5 * float(w @ w) + (0.5 * (b / bias_scale) ** 2 if bias_scale else 0.0)
    return reg + C * float(np.maximum(0.0, 1.0 - y * (X @ w + b)).sum())


@functools.lru_cache(maxsize=None)
def _liblinear_a9a(C, eps, bias):
    """_liblinear on the whole of a9a (the bias test and the ROC test share the C = 0.05 solve)."""
    X, y = _load("a9a", 123)
    return _liblinear(X, y, C, eps, bias=bias)


def _liblinear(X, y, C, eps, bias=False):
    """LIBLINEAR -s 3 (L1-loss dual CD); returns (w, b) oriented so that +1 is the positive class."""
    from liblinear.liblinearutil import parameter, problem, train

    m = train(problem(y, X), parameter(f"-s 3 -c {C} -e {eps} {'-B 1' if bias else ''} -q"))
    w, b = m.get_decfun()
    sign = 1.0 if m.get_labels()[0] == 1 else -1.0
    return sign * np.asarray(w), sign * (b if bias else 0.0)


def _check_against(r, ref_obj, C, n, tol, slack=1e-9):
    """The eps guarantee (or, when the run stopped earlier on its certificate, the certified gap),
    the dual bound, and the certificate itself."""
    P, D = float(r.primal_objective), float(r.dual_objective)
    assert r.status == Status.CONVERGED, r.message
    assert float(r.relative_gap) <= r.tol  # what CONVERGED stands for
    bound = max((1 + QP_TOL) * C * n * tol, float(r.gap))
    assert P - ref_obj <= bound + slack * abs(ref_obj), (P, ref_obj)
    assert D <= ref_obj + slack * abs(ref_obj), (D, ref_obj)  # a true lower bound
    assert D <= P


# ------------------------------------------------------------------ classification
def _heart_scale_bias(dtype):
    """heart_scale, intercept_scaling=1 (LIBLINEAR -B 1), eps = 1e-4: <= 1e-3 relative."""
    X, y = _load("heart_scale")
    C, tol = 1.0, 1e-4
    r = svmopt.solve(X, y, method=cutting_plane, C=C, intercept_scaling=1.0, eps=tol, dtype=dtype)
    assert r.w.dtype == dtype
    w, b = np.asarray(r.w, np.float64), float(r.b)
    assert w.shape == (13,) and b != 0.0
    mine = _hinge_objective(w, X, y, C, b, bias_scale=1.0)
    rel = 1e-10 if dtype == jnp.float64 else 1e-5
    assert mine == pytest.approx(float(r.primal_objective), rel=rel)  # the Result's objective is SPEC's
    wl, bl = _liblinear(X, y, C, 1e-8, bias=True)
    ref = _hinge_objective(wl, X, y, C, bl, bias_scale=1.0)
    print(f"heart_scale -B 1 {jnp.dtype(dtype).name}: cutting plane {mine:.6f} ({r.iterations} its), "
          f"LIBLINEAR {ref:.6f}")
    assert abs(mine - ref) / ref <= 1e-3
    _check_against(r, ref, C, X.shape[0], tol, slack=rel)
    _check_traces(r)


# slow, both: the fast siblings are test_a9a_bias_matches_liblinear (the same checks in float64, the
# traces included) and test_status_contract.py::test_contract_float32[cutting_plane] (the cutting
# plane in float32 with the bias feature, against LIBLINEAR, its gap and dual checked)
@pytest.mark.slow
def test_heart_scale_bias_matches_liblinear_float32():
    _heart_scale_bias(jnp.float32)


@pytest.mark.slow
def test_heart_scale_bias_matches_liblinear_float64():
    _heart_scale_bias(jnp.float64)


def _check_traces(r):
    """The traces are filled for the iterations run, and only for them; the run stopped on
    line 9 (eps, possibly tightened) or earlier on its certified gap."""
    k = r.iterations
    loss = np.asarray(r.extras["trace_loss"])
    assert 0 < k < loss.size
    assert np.all(np.isfinite(loss[:k])) and np.all(np.isnan(loss[k:]))
    assert (loss[k - 1] <= float(np.asarray(r.extras["trace_xi"])[k - 1]) + float(r.extras["eps"])
            or float(r.relative_gap) <= r.tol)


@pytest.mark.slow
def test_heart_scale_float32_bounded_working_set():
    """float32, dense X, no bias, a working set of 5 slots (so cuts get aggregated): same optimum."""
    X, y = _load("heart_scale")
    Xd = X.toarray().astype(np.float32)
    C, tol, K = 1.0, 1e-3, 5
    r = svmopt.solve(Xd, y, method=cutting_plane(max_constraints=K), C=C, fit_intercept=False, eps=tol)
    assert r.w.dtype == jnp.float32
    ws = np.asarray(r.extras["trace_working_set"])[: r.iterations]
    assert ws.max() <= K and int(r.extras["merges"]) > 0  # the buffer bound held and was hit
    wl, _ = _liblinear(X, y, C, 1e-8)
    ref = _hinge_objective(wl, X.toarray(), y, C)
    mine = _hinge_objective(np.asarray(r.w, np.float64), X.toarray(), y, C)
    print(f"heart_scale float32 K={K}: {mine:.5f} ({r.iterations} its, {int(r.extras['merges'])} merges), "
          f"LIBLINEAR {ref:.5f}")
    _check_against(r, ref, C, X.shape[0], tol, slack=1e-5)


@functools.lru_cache(maxsize=None)
def _a9a_bias_solve(C=0.05, tol=1e-4):
    X, y = _load("a9a", 123)
    return svmopt.solve(X, y, method=cutting_plane, C=C, intercept_scaling=1.0, eps=tol, dtype=jnp.float64)


def test_a9a_bias_matches_liblinear():
    """a9a (sparse: 11% dense, "auto" keeps it sparse), C = 0.05 (Platt's value), -B 1
    convention, float64, eps = 1e-4: <= 1e-3 relative."""
    X, y = _load("a9a", 123)
    C, tol = 0.05, 1e-4
    r = _a9a_bias_solve(C, tol)
    assert r.w.dtype == jnp.float64 and np.asarray(r.w).shape == (123,) and float(r.b) != 0.0
    mine = _hinge_objective(np.asarray(r.w), X, y, C, float(r.b), bias_scale=1.0)
    assert mine == pytest.approx(float(r.primal_objective), rel=1e-10)  # the Result's objective is SPEC's
    wl, bl = _liblinear_a9a(C, 1e-4, True)
    ref = _hinge_objective(wl, X, y, C, bl, bias_scale=1.0)
    print(f"a9a C={C} -B 1: cutting plane {mine:.4f} ({r.iterations} its), LIBLINEAR {ref:.4f}")
    assert abs(mine - ref) / ref <= 1e-3
    # LIBLINEAR itself stops at an iteration cap here, so its objective gets a small slack
    _check_against(r, ref, C, X.shape[0], tol, slack=1e-5)
    _check_traces(r)


@pytest.mark.slow
def test_a9a_no_bias_matches_linearsvc_C1():
    """a9a, C = 1, no bias, eps = 1e-4 against LinearSVC at tol 1e-10 (about 11433.8077)."""
    from sklearn.svm import LinearSVC

    X, y = _load("a9a", 123)
    C, tol = 1.0, 1e-4
    r = svmopt.solve(X, y, method=cutting_plane, C=C, fit_intercept=False, eps=tol, dtype=jnp.float64)
    m = LinearSVC(loss="hinge", dual=True, tol=1e-10, max_iter=200000, fit_intercept=False, C=C).fit(X, y)
    ref = _hinge_objective(m.coef_.ravel(), X, y, C)
    mine = float(r.primal_objective)
    print(f"a9a C=1: cutting plane {mine:.4f} ({r.iterations} its), LinearSVC {ref:.4f}")
    assert abs(mine - ref) / ref <= 1e-3
    _check_against(r, ref, C, X.shape[0], tol, slack=1e-7)


@pytest.mark.parametrize("layout", ["sparse", "dense"])
def test_classification_oracle_is_condensed_most_violated_constraint(layout):
    """(g, delta) at a random w equal (1/S) sum c_i s_i y_i x_i and (1/S) sum c_i s_i with
    c_i = [y_i w.x_i < 1], and delta - w.g is the weighted mean hinge loss (Theorem 1)."""
    X, y = _load("heart_scale")
    rng = np.random.default_rng(0)
    s = rng.uniform(0.0, 2.0, X.shape[0])
    pb, _, _ = prepare(X, y, loss=hinge, reg=l2, C=1.0, fit_intercept=False, sample_weight=s, dtype=jnp.float64,
                       layout=layout, bucket=False)
    w = rng.standard_normal(X.shape[1])
    g, delta = jax.jit(lambda p, w: _oracle(cutting_plane, p, w, jnp.sum(p.s)))(pb, jnp.asarray(w))
    m = y * (X @ w)
    c = (m < 1).astype(float)
    np.testing.assert_allclose(g, X.T @ (c * s * y) / s.sum(), rtol=1e-12, atol=1e-14)
    assert float(delta) == pytest.approx((c * s).sum() / s.sum(), rel=1e-12)
    assert float(delta - g @ w) == pytest.approx((s * np.maximum(0, 1 - m)).sum() / s.sum(), rel=1e-10)


def _ijcnn1_iterations(sizes, tol, Cp, subsample):
    X, y = _load("ijcnn1", 22)
    perm = np.random.default_rng(0).permutation(X.shape[0])
    its, results = [], []
    for n in sizes:
        idx = perm[:n]
        if subsample:  # the real subsample (one compilation per size)
            r = svmopt.solve(X[idx], y[idx], method=cutting_plane, C=Cp / n, fit_intercept=False, eps=tol,
                             dtype=jnp.float64)
        else:  # the same problem as 0/1 sample weights on the full matrix: one compilation for all sizes
            s = np.zeros(X.shape[0])
            s[idx] = 1.0
            r = svmopt.solve(X, y, method=cutting_plane, C=Cp / n, fit_intercept=False, eps=tol, sample_weight=s,
                             dtype=jnp.float64)
        assert r.status == Status.CONVERGED, r.message
        its.append(r.iterations)
        results.append(r)
    return its, results, X, y, perm


def _assert_flat(sizes, its):
    print(f"ijcnn1 iterations vs n {dict(zip(sizes, its))}")
    assert max(its) <= 1.5 * min(its), its  # a small band ...
    assert its[-1] <= 1.5 * its[0], its  # ... and no growth from the smallest to the largest n


def test_iterations_do_not_grow_with_n_ijcnn1():
    """Paper Fig. 2 / Lemma 2: at a fixed paper C (C_p = C n = 10^4) and eps the number of
    iterations stays flat for n = 5k .. 40k. Subsamples as 0/1 weights (identical problems)."""
    sizes, Cp, tol = (5000, 10000, 20000, 40000), 1e4, 1e-3
    its, results, X, y, perm = _ijcnn1_iterations(sizes, tol, Cp, subsample=False)
    _assert_flat(sizes, its)
    # the weighted solve is the subsample's problem: compare with LIBLINEAR on the real subsample
    idx = perm[: sizes[0]]
    wl, _ = _liblinear(X[idx], y[idx], Cp / sizes[0], 1e-6)
    ref = _hinge_objective(wl, X[idx], y[idx], Cp / sizes[0])
    _check_against(results[0], ref, Cp / sizes[0], sizes[0], tol, slack=1e-6)


@pytest.mark.slow
def test_iterations_do_not_grow_with_n_ijcnn1_subsamples():
    sizes = (5000, 10000, 20000, 40000)
    its, *_ = _ijcnn1_iterations(sizes, 1e-3, 1e4, subsample=True)
    _assert_flat(sizes, its)


# ------------------------------------------------------------------ ordinal regression / ROC area
@functools.lru_cache(maxsize=None)
def _pendigits_ordinal(n, seed=0):
    """pendigits restricted to digits 1, 3, 5, 7 taken as ordered ranks; a random subset of n rows."""
    X, y = _load("pendigits", 16)
    keep = np.isin(y, [1, 3, 5, 7])
    X, y = X[keep].toarray() / 100.0, y[keep]
    idx = np.random.default_rng(seed).choice(y.size, n, replace=False)
    return X[idx], y[idx]


def _brute_force_counts(z, r):
    viol = (r[:, None] > r[None, :]) & (z[:, None] - z[None, :] < 1.0)  # c_ij over P
    return viol.sum(axis=1), viol.sum(axis=0), viol


def test_ordinal_most_violated_matches_brute_force():
    """Theorem 5's counts from one sort equal the O(n^2) enumeration exactly, for random w,
    for integer w (exact ties z_i - z_j = 1 and equal scores) and for w = 0."""
    X, y = _pendigits_ordinal(300)
    ranks = np.searchsorted([1, 3, 5, 7], y)
    f = jax.jit(most_violated_ordinal, static_argnums=2)
    rng = np.random.default_rng(1)
    ws = [rng.standard_normal(16) * sc for sc in (0.1, 1.0, 10.0) for _ in range(5)]
    ws += [rng.integers(-2, 3, 16) * 100.0 for _ in range(5)] + [np.zeros(16)]
    Xi = np.round(X * 100.0)  # integer features: with integer w the scores tie exactly
    ties = False
    for k, w in enumerate(ws):
        Xk = Xi if k >= 15 else X
        z = Xk @ w / (100.0 if k >= 15 else 1.0)
        cp, cm = (np.asarray(a) for a in f(jnp.asarray(z), jnp.asarray(ranks, jnp.int32), 4))
        bp, bm, viol = _brute_force_counts(z, ranks)
        np.testing.assert_array_equal(cp, bp)
        np.testing.assert_array_equal(cm, bm)
        # the condensed constraint is the sum over the violated pairs (OP5)
        I, J = np.nonzero(viol)
        np.testing.assert_allclose(Xk.T @ (cp - cm), (Xk[I] - Xk[J]).sum(axis=0), rtol=1e-12, atol=1e-9)
        assert (cp + cm).sum() == 2 * viol.sum()
        ties |= bool(np.any(np.subtract.outer(z, z)[ranks[:, None] > ranks[None, :]] == 1.0))
    assert ties  # the boundary case z_i - z_j = 1 (not violated) really occurred


def _op4_objective(w, X, r, C):
    z = X @ w
    d = z[:, None] - z[None, :]
    return 0.5 * float(w @ w) + C * float(np.maximum(0.0, 1.0 - d[r[:, None] > r[None, :]]).sum())


def test_ordinal_matches_liblinear_on_explicit_pairs():
    """OP4 on 150 pendigits rows with 4 ranks (about 8.4k pairs): the cutting plane's objective
    equals LIBLINEAR on the explicit pairwise differences (both signs, labels +-1), also with a
    working set of only 5 slots (the buffer bound holds; aggregation keeps convergence)."""
    X, y = _pendigits_ordinal(150)  # dense X
    C, tol, K = 0.01, 1e-4, 5
    r = solve_ordinal(X, y, C=C, eps=tol, max_constraints=K, dtype=jnp.float64)  # small buffer: cuts aggregated
    assert isinstance(r, RankingResult) and list(r.ranks) == [1, 3, 5, 7]
    assert np.asarray(r.extras["trace_working_set"]).max() <= K and int(r.extras["merges"]) > 0
    m = count_pairs(y)
    assert r.extras["pairs"] == m == int((y[:, None] > y[None, :]).sum())
    mine = _op4_objective(np.asarray(r.w), X, y, C)
    assert mine == pytest.approx(float(r.primal_objective), rel=1e-10)
    I, J = np.nonzero(y[:, None] > y[None, :])
    D = X[I] - X[J]
    flip = np.random.default_rng(0).random(I.size) < 0.5  # LIBLINEAR needs two classes
    D[flip] *= -1.0
    wl, _ = _liblinear(D, np.where(flip, -1.0, 1.0), C, 1e-8)
    ref = _op4_objective(wl, X, y, C)
    print(f"ordinal n=150 m={m}: cutting plane {mine:.6f} ({r.iterations} its), LIBLINEAR pairs {ref:.6f}")
    assert abs(mine - ref) / ref <= 1e-3
    _check_against(r, ref, C, m, tol)
    with pytest.raises(TypeError, match="decision_function"):
        r.predict(X)


def _roc_vs_error_rate(Ce, tol_roc):
    from sklearn.metrics import roc_auc_score

    X, y = _load("a9a", 123)
    n, m = X.shape[0], count_pairs(y)
    roc = solve_roc_area(X, y, C=Ce * n / m, eps=tol_roc)  # float32; the same paper C: C_p = Ce n = C m
    assert roc.status == Status.CONVERGED, roc.message
    auc_roc = roc_auc_score(y, roc.decision_function(X))
    err = _a9a_bias_solve(Ce, 1e-4) if Ce == 0.05 else svmopt.solve(
        X, y, method=cutting_plane, C=Ce, intercept_scaling=1.0, eps=1e-4, dtype=jnp.float64)
    auc_err = roc_auc_score(y, err.decision_function(X))
    wl, bl = _liblinear_a9a(Ce, 1e-4, True)
    auc_ll = roc_auc_score(y, X @ wl + bl)
    print(f"a9a AUC at C_p = {Ce * n:g}: ROC-area SVM {auc_roc:.5f} ({roc.iterations} its), "
          f"error-rate SVM {auc_err:.5f} (LIBLINEAR {auc_ll:.5f})")
    # the mean pairwise hinge bounds the fraction of swapped pairs, 1 - AUC
    assert 1.0 - auc_roc <= float(roc.extras["loss"])
    assert auc_roc >= auc_err and auc_roc >= auc_ll


def test_roc_area_beats_error_rate_auc_a9a():
    _roc_vs_error_rate(0.05, 1e-2)


@pytest.mark.slow
def test_roc_area_beats_error_rate_auc_a9a_C1():
    _roc_vs_error_rate(1.0, 1e-3)


# ------------------------------------------------------------------ bad input
def test_bad_input_errors():
    X, y = _load("heart_scale")
    with pytest.raises(MissingCapability, match="intercept_scaling"):
        svmopt.solve(X, y, method=cutting_plane)  # fit_intercept=True is the solve default
    with pytest.raises(MissingCapability, match="hinge"):
        svmopt.solve(X, y, loss=squared_hinge, method=cutting_plane, fit_intercept=False)
    # the smoothed hinge's box has the hinge's ends but a diagonal per sample (an array): refused by
    # name, not by a TypeError from converting the array to a float
    with pytest.raises(MissingCapability, match=r"hinge loss \(OP2\) only, got loss=smoothed_hinge"):
        svmopt.solve(X, y, loss=smoothed_hinge(0.5), method=cutting_plane, fit_intercept=False)
    with pytest.raises(MissingCapability, match="l2"):
        svmopt.solve(X, y, reg=l1, method=cutting_plane, fit_intercept=False)
    with pytest.raises(ValueError, match="tol"):
        svmopt.solve(X, y, method=cutting_plane, fit_intercept=False, tol=0.0)
    with pytest.raises(ValueError, match="max_constraints"):
        svmopt.solve(X, y, method=cutting_plane(max_constraints=1), fit_intercept=False)
    with pytest.raises(TypeError, match="max_constraint"):
        cutting_plane(max_constraint=10)  # a typo names the parameters
    from svmopt.kernels import rbf
    with pytest.raises(ValueError, match="linear"):
        svmopt.solve(X, y, method=cutting_plane, fit_intercept=False, kernel=rbf(0.1))


def test_ranking_bad_input_errors():
    X, y = _pendigits_ordinal(150)
    with pytest.raises(ValueError, match="single value"):
        solve_ordinal(X, np.ones(150))
    with pytest.raises(ValueError, match="shape mismatch"):
        solve_ordinal(X, y[:-1])
    with pytest.raises(ValueError, match="NaN"):
        solve_ordinal(X, np.where(np.arange(150) == 7, np.nan, y))
    with pytest.raises(ValueError, match="NaN"):
        solve_ordinal(np.where(np.arange(150)[:, None] == 3, np.inf, X), y)
    with pytest.raises(ValueError, match="C must be"):
        solve_ordinal(X, y, C=0.0)
    with pytest.raises(ValueError, match="scalar C"):
        solve_ordinal(X, y, C=[0.1, 1.0])
    with pytest.raises(TypeError, match="numeric"):
        solve_ordinal(X, np.array(["a", "b", "c"] * 50))
    with pytest.raises(ValueError, match="exactly two labels"):
        solve_roc_area(X, np.searchsorted([1, 3, 5, 7], y) % 3)
    with pytest.raises(ValueError, match="2-D"):
        solve_roc_area(X[0], y[:1])
    assert count_pairs([1, 1, 2, 3]) == 5
    assert sp.issparse(_load("heart_scale")[0])  # loader sanity for the tests above
