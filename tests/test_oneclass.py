"""The one-class SVM (SPEC section 7; LIBSVM -s 2, LIBLINEAR -s 21, scikit-learn's OneClassSVM):
``svmopt.solve_oneclass`` (alfpgm on LIBSVM's dual with sum alpha = 1), the ``OneClassSVM`` estimator, the
command line and model files.

References: LIBSVM at -e 1e-12 (libsvm-official's svmutil and scikit-learn's OneClassSVM), LIBLINEAR -s 21 at
-e 1e-10 (liblinear-official) for the linear model, on real data from ../shared/data. A reference's P and D are
recomputed here in numpy (float64) in SPEC section 7's scale (LIBSVM's alpha and rho are nu n times these),
P with the best rho for its alpha. LIBSVM keeps kernel values in single precision: its dual agrees with ours
to ~1e-10 and its model's primal lies above the optimum by up to ~1e-5, so our P and D are compared with its
D, our D must lie below its P and our P above its D."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp

from conftest import data_path
from sklearn_checks import PROTOCOL_CHECKS, failed_checks, run_check

import svmopt
from svmopt.kernels import linear, rbf
from svmopt.losses import one_class
from svmopt.result import OneClassResult, Status
from svmopt.solvers import alm
from svmopt.solvers.alfpgm import alfpgm

F64 = jnp.float64


def rbf_np(A, B, gamma):
    d = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(d, 0.0))


def load(name, nf, rows):
    X, _ = svmopt.load_svmlight(data_path(name), n_features=nf)
    return X[:rows]


def objectives(K, alpha, rho, nu, s=None):
    """(P, D) of the one-class SVM in SPEC section 7's scale for alpha (n,) with sum 1; rho=None: the rho that
    minimizes P for this alpha (P is convex and piecewise linear in rho, its minimum at a kink (K alpha)_i)."""
    s = np.ones(K.shape[0]) if s is None else s
    f = K @ alpha
    C = 1.0 / (nu * s.sum())

    def P(r):
        return 0.5 * alpha @ f - r + C * np.sum(s * np.maximum(r - f, 0.0))

    if rho is None:
        rho = min(f, key=P)
    return P(rho), -0.5 * alpha @ f


def libsvm_reference(X, nu, gamma):
    """svmutil -s 2 at -e 1e-12: (alpha (n,) in SPEC's scale, rho in SPEC's scale, P, D)."""
    from libsvm import svmutil

    Xd = X.toarray() if hasattr(X, "toarray") else X
    m = svmutil.svm_train(svmutil.svm_problem([1.0] * Xd.shape[0], Xd.tolist()),
                          svmutil.svm_parameter(f"-s 2 -n {nu!r} -t 2 -g {gamma!r} -e 1e-12 -h 0 -q"))
    scale = nu * Xd.shape[0]
    alpha = np.zeros(Xd.shape[0])
    alpha[np.asarray(m.get_sv_indices()) - 1] = np.array([c[0] for c in m.get_sv_coef()]) / scale
    return (alpha, m.rho[0] / scale, *objectives(rbf_np(Xd, Xd, gamma), alpha, None, nu))


CASES = {  # data (name, features, rows), nu, gamma, method, tol
    "heart_scale": (("heart_scale", 13, 270), 0.1, 0.1, alfpgm, 1e-10),
    "diabetes_scale": (("diabetes_scale", 8, 768), 0.5, 0.5, alfpgm, 1e-10),
    "diabetes_scale-nu1": (("diabetes_scale", 8, 768), 1.0, 0.5, alfpgm, 1e-10),
    "a9a-2000-sparse": (("a9a", 123, 2000), 0.3, 0.05, alfpgm, 1e-10),
    # working sets of 64, a cache of 87 of 3000 rows; the dual's last steps no longer move D in float64
    "ijcnn1-3000-decomposed": (("ijcnn1", 22, 3000), 0.1, 0.5, alfpgm(whole=0, pairs=32, cache_size=2.0), 1e-7),
}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c == "a9a-2000-sparse" else c for c in CASES])
def test_kernel_optimum_is_libsvms(case):
    (name, nf, rows), nu, gamma, method, tol = CASES[case]
    X = load(name, nf, rows)
    Xd = X.toarray()
    n = Xd.shape[0]
    _, rho_ref, P_ref, D_ref = libsvm_reference(X, nu, gamma)
    assert D_ref - 1e-12 * abs(D_ref) <= P_ref <= D_ref + 1e-5 * abs(D_ref)

    r = svmopt.solve_oneclass(X, nu=nu, kernel=rbf(gamma), method=method, tol=tol, dtype=F64)
    assert isinstance(r, OneClassResult) and r.status == Status.CONVERGED, r.message
    P, D = float(r.primal_objective), float(r.dual_objective)
    assert D <= P_ref + 1e-12 * abs(P_ref) and P >= D_ref - 1e-12 * abs(D_ref)  # below / above the reference
    assert abs(P - D_ref) <= 1e-6 * abs(D_ref) and abs(D - D_ref) <= 1e-6 * abs(D_ref), (P, D, D_ref)
    # the model it returns: alpha feasible (sum 1, 0 <= alpha <= 1/(nu n)), its P and D the reported ones
    alpha = np.zeros(n)
    alpha[r.extras["support"]] = r.dual_coef
    assert abs(alpha.sum() - 1.0) <= 1e-12 and alpha.min() >= 0 and alpha.max() <= (1 + 1e-12) / (nu * n)
    P_model, D_model = objectives(rbf_np(Xd, Xd, gamma), alpha, float(r.rho), nu)
    assert abs(P_model - P) <= 1e-9 * abs(P) and abs(D_model - D) <= 1e-9 * abs(D)
    assert r.scale == pytest.approx(nu * n) and abs(float(r.rho) - rho_ref) <= 1e-5 * abs(rho_ref)
    # the decision function is w.phi(x) - rho, +1 inside; scikit-learn's (LIBSVM's scale) is scale times it
    from sklearn.svm import OneClassSVM

    if nu == 1.0:  # every alpha at its bound: scikit-learn refuses LIBSVM's rho there ("not finite")
        return

    ref = OneClassSVM(nu=nu, gamma=gamma, tol=1e-12).fit(Xd)
    f, f_ref = r.decision_function(Xd) * r.scale, ref.decision_function(Xd)
    assert np.abs(f - f_ref).max() <= 1e-4 * max(1.0, abs(ref.offset_[0]))
    clear = np.abs(f_ref) > 1e-3  # free support vectors sit on the boundary (f = 0 up to rounding)
    assert np.array_equal(r.predict(Xd)[clear], ref.predict(Xd)[clear]) and r.predict(Xd).dtype == np.intp
    if case.endswith("decomposed"):
        assert int(r.extras["working_set"]) == 64 and int(r.extras["cache_misses"]) > int(r.extras["cache_rows"])


@pytest.mark.parametrize("name, nf, rows, nu, method", [("heart_scale", 13, 270, 0.2, alfpgm),
                                                        ("a9a", 123, 2000, 0.4, alfpgm),
                                                        ("a9a", 123, 2000, 0.1, alfpgm(whole=0, pairs=64))])
def test_linear_optimum_is_liblinears(name, nf, rows, nu, method):
    """kernel=None: the primal w (LIBLINEAR's -s 21; on working sets alfpgm keeps w itself, no kernel rows);
    the same optimum as the linear kernel's expansion."""
    from liblinear import liblinearutil as ll

    X = load(name, nf, rows)
    m = ll.train(ll.problem([1.0] * X.shape[0], X), ll.parameter(f"-s 21 -n {nu!r} -e 1e-10 -q"))
    w_ref, b_ref = m.get_decfun()  # LIBSVM's scale (sum alpha = nu n): w and rho are nu n times SPEC's
    Xd = X.toarray()
    n = Xd.shape[0]
    w_ref, b_ref = np.asarray(w_ref) / (nu * n), b_ref / (nu * n)
    P_ref = 0.5 * w_ref @ w_ref + b_ref + np.sum(np.maximum(-(Xd @ w_ref + b_ref), 0.0)) / (nu * n)

    r = svmopt.solve_oneclass(X, nu=nu, tol=1e-10, dtype=F64, method=method)
    assert r.status == Status.CONVERGED and r.w.shape == (nf,) and r.kernel is None
    P, D = float(r.primal_objective), float(r.dual_objective)
    assert D <= P_ref + 1e-12 * abs(P_ref) and abs(P - P_ref) <= 1e-6 * abs(P_ref), (P, D, P_ref)
    w = np.asarray(r.w)
    rho = float(r.rho)
    assert abs(0.5 * w @ w - rho + np.sum(np.maximum(rho - Xd @ w, 0.0)) / (nu * n) - P) <= 1e-9 * abs(P)
    k = svmopt.solve_oneclass(X, nu=nu, kernel=linear, tol=1e-10, dtype=F64)
    assert abs(float(k.primal_objective) - P) <= 1e-8 * abs(P)
    np.testing.assert_allclose(k.decision_function(Xd), r.decision_function(Xd), atol=1e-7)


def test_sample_weights_match_libsvm():
    """LIBSVM's weights (scikit-learn's sample_weight): C_i = s_i / (nu sum_j s_j), sum alpha = 1; weight 0: absent."""
    from sklearn.svm import OneClassSVM

    X = load("diabetes_scale", 8, 768).toarray()
    s = np.random.default_rng(1).uniform(0.2, 2.0, X.shape[0])
    nu, gamma = 0.3, 0.5
    ref = OneClassSVM(nu=nu, gamma=gamma, tol=1e-12).fit(X, sample_weight=s)
    alpha = np.zeros(X.shape[0])
    alpha[ref.support_] = ref.dual_coef_.ravel() / (nu * s.sum())
    _, D_ref = objectives(rbf_np(X, X, gamma), alpha, None, nu, s)
    r = svmopt.solve_oneclass(X, nu=nu, kernel=rbf(gamma), sample_weight=s, tol=1e-10, dtype=F64)
    assert r.status == Status.CONVERGED and r.scale == pytest.approx(nu * s.sum())
    assert abs(float(r.dual_objective) - D_ref) <= 1e-6 * abs(D_ref)
    s[:50] = 0.0
    zero = svmopt.solve_oneclass(X, nu=nu, kernel=rbf(gamma), sample_weight=s, tol=1e-10, dtype=F64)
    drop = svmopt.solve_oneclass(X[50:], nu=nu, kernel=rbf(gamma), sample_weight=s[50:], tol=1e-10, dtype=F64)
    assert not np.isin(np.arange(50), zero.extras["support"]).any()
    assert abs(float(zero.primal_objective) - float(drop.primal_objective)) <= 1e-8 * abs(float(drop.primal_objective))


def test_float32_default_certifies():
    X = load("ijcnn1", 22, 4000)
    _, _, _, D_ref = libsvm_reference(X, 0.2, 0.5)
    r = svmopt.solve_oneclass(X, nu=0.2, kernel=rbf(0.5))  # float32, tol 1e-3, auto -> alfpgm
    assert r.method == "alfpgm" and r.status == Status.CONVERGED and float(r.relative_gap) <= 1e-3
    assert abs(float(r.primal_objective) - D_ref) <= 2e-3 * abs(D_ref)


def test_linear_working_sets_serve_every_dual():
    """The linear kernel's working-set path (w kept, no kernel rows) on C-SVC and epsilon-SVR: the optimum of
    LIBSVM's linear kernel (scikit-learn's SVC / SVR, -t 0, -e 1e-12) on a9a's first 1500 rows."""
    from sklearn.svm import SVC, SVR

    X = load("a9a", 123, 1500)
    _, y = svmopt.load_svmlight(data_path("a9a"), n_features=123)
    y = y[:1500]
    Xd = X.toarray()
    t = Xd[:, :10] @ np.arange(1.0, 11.0) + y  # a real-valued target from the data
    ws = alfpgm(whole=0, pairs=64)
    ref = SVC(kernel="linear", C=0.5, tol=1e-12).fit(Xd, y)
    w = ref.coef_.ravel()
    D_ref = np.abs(ref.dual_coef_).sum() - 0.5 * w @ w
    r = svmopt.solve(X, y, C=0.5, method=ws, tol=1e-9, dtype=F64)
    assert r.status == Status.CONVERGED and int(r.extras["cache_misses"]) == 0 and r.iterations > 1
    assert abs(float(r.dual_objective) - D_ref) <= 1e-6 * abs(D_ref)
    ref = SVR(kernel="linear", C=0.5, epsilon=0.5, tol=1e-12).fit(Xd, t)
    beta, w = np.zeros(1500), ref.coef_.ravel()
    beta[ref.support_] = ref.dual_coef_.ravel()
    D_ref = t @ beta - 0.5 * np.abs(beta).sum() - 0.5 * w @ w
    r = svmopt.solve(X, t, loss=svmopt.losses.epsilon_insensitive(0.5), C=0.5, method=ws, tol=1e-8, dtype=F64)
    assert r.status == Status.CONVERGED and int(r.extras["cache_misses"]) == 0
    assert abs(float(r.dual_objective) - D_ref) <= 1e-6 * abs(D_ref)
    np.testing.assert_allclose(r.w, w, atol=1e-4 * np.abs(w).max())


# ---------------------------------------------------------------------- the estimator
def test_estimator_matches_sklearns_oneclasssvm():
    from sklearn.svm import OneClassSVM as Reference

    from svmopt.estimators import OneClassSVM

    X = load("diabetes_scale", 8, 768).toarray()
    Xte = load("diabetes_scale", 8, 768).toarray()[::-3] + 0.05
    for kernel in ("rbf", "linear", "poly"):
        ref = Reference(nu=0.25, kernel=kernel, gamma="scale", tol=1e-12).fit(X)
        det = OneClassSVM(nu=0.25, kernel=kernel, gamma="scale", tol=1e-10, dtype="float64").fit(X)
        assert det.fit_status_ == 0 and det.result_.converged
        scale = 0.25 * X.shape[0]
        assert abs(det.dual_coef_.sum() - scale) <= 1e-9 * scale and det.dual_coef_.shape == (1, det.support_.size)
        assert det.offset_ == pytest.approx(float(ref.offset_[0]), rel=1e-4, abs=1e-6)
        np.testing.assert_allclose(det.intercept_, -det.offset_)
        for data in (X, Xte):
            np.testing.assert_allclose(det.decision_function(data), ref.decision_function(data), atol=1e-4 * scale)
            np.testing.assert_allclose(det.score_samples(data), ref.score_samples(data), atol=1e-4 * scale)
            clear = np.abs(ref.decision_function(data)) > 1e-2
            assert np.array_equal(det.predict(data)[clear], ref.predict(data)[clear])
        np.testing.assert_allclose(det.support_vectors_, X[det.support_])
        assert det.n_support_.tolist() == [det.support_.size] and det.shape_fit_ == X.shape
        assert abs(det.support_.size - ref.support_.size) <= max(2, 0.02 * ref.support_.size)
        if kernel == "linear":
            np.testing.assert_allclose(det.coef_, ref.coef_, atol=1e-4 * scale)
        else:
            assert not hasattr(det, "coef_")
    assert np.array_equal(det.fit_predict(X), det.predict(X))
    assert OneClassSVM().get_params()["nu"] == 0.5 and "nu=0.1" in repr(OneClassSVM(nu=0.1))


FAST_CHECKS = PROTOCOL_CHECKS + ["check_fit2d_1sample", "check_fit2d_1feature", "check_outliers_train",
                                 "check_methods_subset_invariance"]


@pytest.mark.parametrize("check", FAST_CHECKS)
def test_sklearn_check_fast(check):
    from svmopt.estimators import OneClassSVM

    run_check(check, OneClassSVM())


@pytest.mark.slow
def test_sklearn_check_estimator_all():
    """Every check, with scikit-learn's OneClassSVM's expected failures (and only those)."""
    from svmopt.estimators import OneClassSVM

    assert not failed_checks(OneClassSVM())


# ---------------------------------------------------------------------- command line and model files
def test_cli_trains_one_class_models_and_predict_prints_plus_minus_one(tmp_path, capsys):
    from libsvm import svmutil

    from svmopt.cli import predict_main, train_main

    X = load("heart_scale", 13, 270)
    y = np.where(np.arange(270) % 3 == 0, -1.0, 1.0)  # labels are ignored by training, scored by predict
    svmopt.dump_svmlight(X, y, tmp_path / "train.txt")
    kernel_args = ["-s", "2", "--kernel", "rbf", "--gamma", "0.1", "-n", "0.2"]
    for argv, nu in ((["-s", "21", "-n", "0.3"], 0.3), (kernel_args, 0.2)):
        model = tmp_path / "m.model"
        assert train_main(argv + ["--dtype", "float64", "--tol", "1e-8", str(tmp_path / "train.txt"), str(model)]) == 0
        assert "one-class SVM" in capsys.readouterr().out
        m = svmopt.load_model(model)
        assert isinstance(m, OneClassResult) and m.extras["header"]["kind"] == "oneclass"
        assert predict_main([str(tmp_path / "train.txt"), str(model), str(tmp_path / "out.txt")]) == 0
        out = np.loadtxt(tmp_path / "out.txt")
        assert set(np.unique(out)) <= {-1.0, 1.0} and "Accuracy = " in capsys.readouterr().out
        direct = svmopt.solve_oneclass(X, nu=nu, kernel=None if "21" in argv else rbf(0.1), tol=1e-8, dtype=F64)
        np.testing.assert_allclose(m.decision_function(X), direct.decision_function(X), atol=1e-9)
        if "2" in argv:  # LIBSVM's own predictions, away from the boundary
            ref = svmutil.svm_train(svmutil.svm_problem(y.tolist(), X.toarray().tolist()),
                                    svmutil.svm_parameter("-s 2 -n 0.2 -t 2 -g 0.1 -e 1e-12 -q"))
            lab, _, dec = svmutil.svm_predict(y.tolist(), X.toarray().tolist(), ref, "-q")
            clear = np.abs(np.asarray(dec).ravel()) > 1e-3
            assert np.array_equal(out[clear], np.asarray(lab)[clear])
    assert train_main(["-s", "2", "-n", "0.2", str(tmp_path / "train.txt")]) == 1  # LIBLINEAR's -s 2 takes no nu
    assert "-n is for the one-class SVM" in capsys.readouterr().err
    assert train_main(["-s", "21", "-c", "2", str(tmp_path / "train.txt")]) == 1
    assert "takes nu (-n), not -c" in capsys.readouterr().err


def test_cli_epsilon_svr_and_regression_model_files(tmp_path, capsys):
    from libsvm import svmutil

    from svmopt.cli import predict_main, train_main

    X, _ = svmopt.load_svmlight(data_path("pendigits"), n_features=16)
    X = X.toarray()[:600] / 100.0
    X, t = X[:, :15], X[:, 15]
    svmopt.dump_svmlight(X, t, tmp_path / "reg.txt")
    args = ["-s", "3", "--kernel", "rbf", "--gamma", "2", "-c", "10", "-p", "0.05"]
    assert train_main(args + ["--dtype", "float64", "--tol", "1e-9", str(tmp_path / "reg.txt"),
                              str(tmp_path / "reg.model")]) == 0
    assert "epsilon-SVR" in capsys.readouterr().out
    m = svmopt.load_model(tmp_path / "reg.model")
    assert m.extras["header"]["kind"] == "regression" and type(m).__name__ == "RegressionResult"
    assert predict_main([str(tmp_path / "reg.txt"), str(tmp_path / "reg.model"), str(tmp_path / "o.txt")]) == 0
    out = capsys.readouterr().out
    ref = svmutil.svm_train(svmutil.svm_problem(t.tolist(), X.tolist()),
                            svmutil.svm_parameter("-s 3 -t 2 -g 2 -c 10 -p 0.05 -e 1e-12 -q"))
    pred_ref, (_, mse_ref, scc_ref), _ = svmutil.svm_predict(t.tolist(), X.tolist(), ref, "-q")
    np.testing.assert_allclose(np.loadtxt(tmp_path / "o.txt"), pred_ref, atol=1e-5)
    assert f"Mean squared error = {mse_ref:.4g}"[:-1] in out and "Squared correlation coefficient" in out
    assert train_main(args + ["-v", "3", "-q", str(tmp_path / "reg.txt")]) == 0
    assert "Cross Validation Mean squared error = " in capsys.readouterr().out
    # LIBSVM's own spelling, -t 2 -g 2: -s is LIBSVM's svm type with -t as with --kernel; the same model
    libsvm_args = ["-s", "3", "-t", "2", "-g", "2", "-c", "10", "-p", "0.05", "--dtype", "float64", "--tol", "1e-9"]
    assert train_main(libsvm_args + ["-q", str(tmp_path / "reg.txt"), str(tmp_path / "t.model")]) == 0
    assert predict_main(["-q", str(tmp_path / "reg.txt"), str(tmp_path / "t.model"), str(tmp_path / "t.txt")]) == 0
    np.testing.assert_allclose(np.loadtxt(tmp_path / "t.txt"), pred_ref, atol=1e-5)
    assert train_main(["-s", "4", "-t", "2", "-q", str(tmp_path / "reg.txt")]) == 1  # LIBSVM's -s 4: nu-SVR
    assert "nu-SVR is not in svmopt" in capsys.readouterr().err
    for bad, msg in ((["-s", "4", "--kernel", "rbf"], "nu-SVR is not in svmopt"), (["-s", "3", "-p", "0.1"], "-p is")):
        assert train_main(bad + [str(tmp_path / "reg.txt")]) == 1
        assert msg in capsys.readouterr().err


# ---------------------------------------------------------------------- errors
def test_bad_input_errors_clearly():
    X = load("heart_scale", 13, 270)
    for nu in (0.0, 1.5, -1.0, float("nan")):
        with pytest.raises(ValueError, match="nu"):
            svmopt.solve_oneclass(X, nu=nu)
    with pytest.raises(ValueError, match="does not solve LIBSVM's dual"):
        svmopt.solve_oneclass(X, method=alm)
    with pytest.raises(ValueError, match="solve_oneclass"):  # its problem has a term in b alone
        svmopt.solve(X, np.ones(270), loss=one_class)
    with pytest.raises(TypeError, match="eagerly"):
        jax.jit(lambda A: svmopt.solve_oneclass(A).b)(jnp.asarray(X.toarray()))
    with pytest.raises(ValueError, match="NaN"):
        Xn = X.toarray()
        Xn[0, 0] = np.nan
        svmopt.solve_oneclass(Xn)
