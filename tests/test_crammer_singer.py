"""Crammer-Singer multiclass (LIBLINEAR -s 4, ``svmopt.solvers.crammer_singer``) against LIBLINEAR itself:
its optimum on real data in float64 and float32, the certificate (D below LIBLINEAR's optimum, P above
it, both recomputed in numpy from W and alpha), the compiled pass against the pure-JAX pass, the estimator
against scikit-learn's LinearSVC(multi_class="crammer_singer"), and the command line's -s 4 both ways."""
import numpy as np
import pytest
import scipy.sparse as sp

import jax
import jax.numpy as jnp

import svmopt
from svmopt import _mcsvm, plan
from svmopt.cli import predict_main, train_main
from svmopt.estimators import SVMClassifier
from svmopt.result import Status
from svmopt.solvers import crammer_singer
from conftest import data_path
from references import load

ll = pytest.importorskip("liblinear.liblinearutil")


def objective(X, y, W, b, C, classes, bias=None, s=None):
    """1/2 sum_m ||w_m||^2 (+ 1/2 ||b / bias||^2 with LIBLINEAR's bias feature) + C sum_i s_i max_m
    (e_i^m + f_im - f_iy) in float64 numpy: the problem of SPEC section 7."""
    F = np.asarray(X @ W.T, np.float64) + b
    code = np.searchsorted(classes, y)
    n = len(y)
    loss = (F + (np.arange(len(classes))[None, :] != code[:, None])).max(axis=1) - F[np.arange(n), code]
    reg = 0.5 * np.sum(W * W) + (0.5 * np.sum((b / bias) ** 2) if bias else 0.0)
    return reg + C * np.sum(loss * (1.0 if s is None else s))


def dual(X, y, alpha, C, classes, bias=None, s=None):
    """D(alpha) = sum_i alpha_i^{y_i} - 1/2 ||X~^T alpha||^2 (X~ with the bias column), after checking
    that alpha (K, n) is feasible: sum over classes 0, alpha_i^m <= C s_i delta(m, y_i)."""
    A = np.asarray(alpha, np.float64).T
    code = np.searchsorted(classes, y)
    n, K = A.shape
    cs = C * (np.ones(n) if s is None else s)
    on_y = np.arange(K)[None, :] == code[:, None]
    assert np.all(np.abs(A.sum(axis=1)) <= 1e-9 * (cs + 1))
    assert np.all(A[~on_y] <= 0) and np.all(A[on_y] <= cs * (1 + 1e-12))
    Xt = sp.hstack([X, np.full((n, 1), bias)]).tocsr() if bias else X
    V = np.asarray(Xt.T @ A)
    return np.sum(A[on_y]) - 0.5 * np.sum(V * V)


def liblinear(X, y, C=1.0, bias=1.0, eps=1e-5):
    """LIBLINEAR -s 4's (W (K, d), b (K,)) in sorted-label order."""
    opts = f"-s 4 -c {C} -e {eps} -q" + (f" -B {bias}" if bias else "")
    m = ll.train(ll.problem(y, X, bias=bias if bias else -1), opts)
    K, d = m.get_nr_class(), m.get_nr_feature()
    rows = d + (1 if bias else 0)
    w = np.ctypeslib.as_array(m.w, shape=(rows * K,)).reshape(rows, K).T[np.argsort(m.get_labels())]
    return (w[:, :d], w[:, d] * bias) if bias else (w, np.zeros(K))


def dataset(name, rows=None):
    X, y = load(name)
    X = sp.csr_matrix(X, dtype=np.float64)
    if name == "pendigits":
        X = X / 100.0  # raw 0..100 coordinates, scaled as letter.scale
    return (X, y) if rows is None else (X[:rows], y[:rows])


CASES = {"pendigits": 4000, "letter.scale": 2000}


@pytest.mark.parametrize("name", list(CASES))
def test_float64_matches_liblinear_optimum(name):
    """float64, tol 1e-8: P equals the objective of LIBLINEAR -s 4's W (-e 1e-5, evaluated here) to
    1e-6 relative; P recomputed in numpy from W, D from the returned alpha (feasible); D below LIBLINEAR's
    objective, P not below it by more than LIBLINEAR's own accuracy (1e-6)."""
    X, y = dataset(name, CASES[name])
    classes = np.unique(y)
    W, b = liblinear(X, y)
    ref = objective(X, y, W, b, 1.0, classes, bias=1.0)
    r = svmopt.solve_multiclass(X, y, strategy="crammer_singer", intercept_scaling=1.0, dtype="float64", tol=1e-8)
    assert r.status == Status.CONVERGED and r.w.shape == (classes.size, X.shape[1]) and r.b.shape == (classes.size,)
    P, D = float(r.primal_objective), float(r.dual_objective)
    assert abs(P - ref) <= 1e-6 * ref
    assert objective(X, y, np.asarray(r.w), np.asarray(r.b), 1.0, classes, bias=1.0) == pytest.approx(P, rel=1e-12)
    assert dual(X, y, r.extras["alpha"], 1.0, classes, bias=1.0) == pytest.approx(D, rel=1e-10)
    assert D <= ref and P >= ref * (1 - 1e-6)  # D below LIBLINEAR's optimum, P not below it (to its accuracy)


def test_float32_default_tol():
    """float32 at the default tol (1e-3): CONVERGED, its W within 1e-3 of LIBLINEAR's optimum (both
    evaluated in float64 here), its D below that optimum."""
    X, y = dataset("pendigits")
    classes = np.unique(y)
    ref = objective(X, y, *liblinear(X, y), 1.0, classes, bias=1.0)
    r = svmopt.solve_multiclass(X, y, strategy="crammer_singer", intercept_scaling=1.0)
    assert r.status == Status.CONVERGED and np.asarray(r.w).dtype == np.float32
    P = objective(X, y, np.asarray(r.w, np.float64), np.asarray(r.b, np.float64), 1.0, classes, bias=1.0)
    assert -1e-6 <= (P - ref) / ref <= 1e-3
    assert float(r.dual_objective) <= ref * (1 + 1e-6)
    assert r.relative_gap <= 1e-3


def test_no_intercept_weights_and_empty_rows():
    """fit_intercept=False (LIBLINEAR -B -1) with sample weights: weight 2 on a row is that row twice
    (same optimum), rows x_i = 0 (never visited by a pass) still certify, and the optimum is
    LIBLINEAR's without a bias."""
    X, y = dataset("letter.scale", 800)
    X = sp.vstack([X, sp.csr_matrix((3, X.shape[1]))]).tocsr()  # three empty rows
    y = np.concatenate([y, y[:3]])
    classes = np.unique(y)
    s = np.ones(len(y))
    s[:50] = 2.0
    kw = dict(strategy="crammer_singer", fit_intercept=False, dtype="float64", tol=1e-8)
    r = svmopt.solve_multiclass(X, y, sample_weight=s, **kw)
    twice = svmopt.solve_multiclass(sp.vstack([X, X[:50]]).tocsr(), np.concatenate([y, y[:50]]), **kw)
    assert r.status == twice.status == Status.CONVERGED
    assert float(r.primal_objective) == pytest.approx(float(twice.primal_objective), rel=2e-8)
    assert np.all(np.asarray(r.b) == 0)
    assert dual(X, y, r.extras["alpha"], 1.0, classes, s=s) == pytest.approx(float(r.dual_objective), rel=1e-10)
    W, _ = liblinear(X[:-3], y[:-3], bias=None)
    ref = objective(X[:-3], y[:-3], W, 0.0, 1.0, classes) + 3.0  # LIBLINEAR's, each empty row's loss is 1
    plain = svmopt.solve_multiclass(X, y, **kw)
    assert abs(float(plain.primal_objective) - ref) <= 1e-6 * ref


def test_refusals_and_warnings():
    """A free intercept is refused naming intercept_scaling; a run stopped by max_iter warns where the user
    called, or raises with throw=True."""
    X, y = dataset("letter.scale", 200)
    with pytest.raises(ValueError, match="intercept_scaling"):
        svmopt.solve_multiclass(X, y, strategy="crammer_singer")
    with pytest.warns(svmopt.ConvergenceWarning, match="max_iter") as caught:
        r = svmopt.solve_multiclass(X, y, strategy="crammer_singer", fit_intercept=False, max_iter=2)
    assert r.status == Status.MAX_ITER and caught[0].filename == __file__
    with pytest.raises(svmopt.SolverError, match="Crammer-Singer"):
        svmopt.solve_multiclass(X, y, strategy="crammer_singer", fit_intercept=False, max_iter=2, throw=True)
    with pytest.raises(ValueError, match="crammer_singer"):
        svmopt.solve_multiclass(X, y, strategy="crammer_singer", intercept_scaling=1.0,
                                loss=svmopt.losses.squared_hinge)


@pytest.mark.parametrize("layout", ["dense", "sparse"])
def test_compiled_pass_equals_jax_pass(layout):
    """Three passes of the compiled kernel and of ``xla_pass`` from the same state, the latter walking the
    rows in the order the kernel reports: the same weights, duals, active sets (in the same order: both
    partitions are stable) and statistics (float64); from the cold start and after 20 more passes, when
    shrinking has set most classes aside."""
    if not _mcsvm.available():
        pytest.skip("the compiled pass (svmopt._mcsvm_ffi) is not built")
    X, y = dataset("letter.scale", 300)
    p = plan.crammer_singer(X, y, method=crammer_singer, intercept_scaling=1.0, dtype="float64", layout=layout)
    st = jax.jit(p.method.init)(p.pb, p.start)
    ffi = jax.jit(lambda st, bits: _mcsvm.ffi_pass(st.wt, st.alpha, st.info, st.rows, st.y, st.index, st.act, bits))
    xla = jax.jit(lambda st, order, count: _mcsvm.xla_pass(st.wt, st.alpha, st.info, st.rows, st.y, st.index,
                                                           st.act, order, count))

    def advance(s, out):
        return s._replace(wt=out[0], alpha=out[1], index=out[2], act=out[3])

    for segment in range(2):
        a, b = st, st
        for k in range(3):
            out_a = ffi(a, jnp.asarray([segment, k], jnp.uint32))
            order = out_a[4]
            count = int(jnp.sum(order >= 0))
            assert count == int(jnp.sum(b.act > 1)) and count > 0
            out_b = xla(b, order, jnp.int32(count))
            for u, v in zip(out_b[:2], out_a[:2]):
                np.testing.assert_allclose(u, v, rtol=1e-11, atol=1e-12)
            np.testing.assert_array_equal(out_b[2], out_a[2])
            np.testing.assert_array_equal(out_b[3], out_a[3])
            np.testing.assert_allclose(out_b[4], out_a[5], rtol=1e-10)
            a, b = advance(a, out_a), advance(b, out_b)
        for k in range(20):
            st = advance(st, ffi(st, jnp.asarray([9, k], jnp.uint32)))
    assert int(jnp.sum(st.act > 1)) < 300 and int(jnp.sum(st.act)) < 300 * 26 // 4


@pytest.mark.parametrize("rows", [400, pytest.param(3000, marks=pytest.mark.slow)])
def test_jax_path_solves(rows):
    """impl="xla" (the pure-JAX pass, which accelerators run) certifies the compiled pass's optimum."""
    X, y = dataset("pendigits", rows)
    kw = dict(strategy="crammer_singer", intercept_scaling=1.0, dtype="float64", tol=1e-5)
    a = svmopt.solve_multiclass(X, y, impl="xla", **kw)
    assert a.status == Status.CONVERGED
    if _mcsvm.available():
        b = svmopt.solve_multiclass(X, y, impl="ffi", **kw)
        assert b.status == Status.CONVERGED
        assert float(a.primal_objective) == pytest.approx(float(b.primal_objective), rel=2e-5)


def test_estimator_matches_linearsvc():
    """SVMClassifier(multi_class="crammer_singer") and LinearSVC(multi_class="crammer_singer") (LIBLINEAR
    inside) on letter: the same test accuracy within 1 %, the same labels on 98 %; with two classes
    coef_ (1, d) = w_1 - w_0 as LinearSVC's."""
    from sklearn.svm import LinearSVC
    import warnings

    X, y = dataset("letter.scale", 2500)
    Xt, yt = dataset("letter.scale.t", 2000)
    ours = SVMClassifier(multi_class="crammer_singer").fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = LinearSVC(multi_class="crammer_singer", random_state=0).fit(X, y)
    assert ours.coef_.shape == theirs.coef_.shape and ours.intercept_.shape == theirs.intercept_.shape
    assert abs(ours.score(Xt, yt) - theirs.score(Xt, yt)) <= 0.01
    assert np.mean(ours.predict(Xt) == theirs.predict(Xt)) >= 0.98
    two = y <= 2
    ours2 = SVMClassifier(multi_class="crammer_singer", tol=1e-6, dtype="float64").fit(X[two], y[two])
    theirs2 = LinearSVC(multi_class="crammer_singer", random_state=0, tol=1e-6, max_iter=20000).fit(X[two], y[two])
    assert ours2.coef_.shape == (1, X.shape[1]) and ours2.decision_function(Xt).shape == (Xt.shape[0],)
    np.testing.assert_allclose(ours2.coef_, theirs2.coef_, atol=5e-3 * np.abs(theirs2.coef_).max())
    np.testing.assert_array_equal(ours2.predict(Xt), np.where(ours2.decision_function(Xt) > 0, 2.0, 1.0))


def test_cli_round_trip(tmp_path):
    """svmopt-train -s 4 -B 1 on letter.scale.t (5,000 rows): the svmopt model predicts through
    svmopt-predict what the Result predicts; the LIBLINEAR-format model predicts the same labels through
    LIBLINEAR's own predict, and LIBLINEAR's own -s 4 model agrees on 98 % of letter.scale's rows."""
    train, test = str(data_path("letter.scale.t")), str(data_path("letter.scale"))
    npz, txt = tmp_path / "cs.npz", tmp_path / "cs.ll"
    assert train_main(["-q", "-s", "4", "-B", "1", train, str(npz)]) == 0
    assert train_main(["-q", "-s", "4", "-B", "1", "--model-format", "liblinear", train, str(txt)]) == 0
    assert txt.read_text().startswith("solver_type MCSVM_CS\nnr_class 26\n")
    model = svmopt.load_model(npz)
    assert model.loss == "crammer_singer" and model.status == Status.CONVERGED and np.shape(model.w) == (26, 16)
    assert predict_main(["-q", test, str(npz), str(tmp_path / "a.txt")]) == 0
    assert predict_main(["-q", test, str(txt), str(tmp_path / "b.txt")]) == 0
    Xt, yt = load("letter.scale")
    a, b = np.loadtxt(tmp_path / "a.txt"), np.loadtxt(tmp_path / "b.txt")
    np.testing.assert_array_equal(a, model.predict(Xt))
    assert np.mean(a == b) >= 0.999  # float32 weights written with 17 digits: ties aside, the same
    theirs, _, _ = ll.predict(yt, Xt, ll.load_model(str(txt)), "-q")
    np.testing.assert_array_equal(b, theirs)
    X, y = load("letter.scale.t")
    own, _, _ = ll.predict(yt, Xt, ll.train(ll.problem(y, X), "-s 4 -B 1 -q"), "-q")
    assert np.mean(a == np.asarray(own)) >= 0.98 and np.mean(a == yt) > 0.65


def test_cli_cross_validation(capsys):
    """-s 4 -v 3 on heart_scale (two classes: Crammer-Singer with K = 2) prints LIBLINEAR's line."""
    assert train_main(["-q", "-s", "4", "-v", "3", str(data_path("heart_scale"))]) == 0
    acc = float(capsys.readouterr().out.split("Cross Validation Accuracy = ")[1].split("%")[0])
    assert 75 < acc < 90


def test_exact_resume():
    """40 passes, then 60 more from the carried state (``Start`` with RESUME), end where 100 passes in
    one run end: the carry holds everything a pass and the rules between passes read."""
    from svmopt import driver
    from svmopt.solvers.base import RESUME

    X, y = dataset("pendigits", 1200)
    p = plan.crammer_singer(X, y, method=crammer_singer(tol=1e-12), intercept_scaling=1.0, dtype="float64")
    whole, _, _ = driver.run(p.method, p.pb, p.start, max_iter=100)
    first, _, _ = driver.run(p.method, p.pb, p.start, max_iter=40)
    rest, _, _ = driver.run(p.method, p.pb, first.state._replace(level=first.state.level | RESUME), max_iter=60)
    assert int(whole.iterations) == 100 and int(first.iterations) + int(rest.iterations) == 100
    np.testing.assert_array_equal(np.asarray(rest.w), np.asarray(whole.w))
    np.testing.assert_array_equal(np.asarray(rest.extras["alpha"]), np.asarray(whole.extras["alpha"]))
