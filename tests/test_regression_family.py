"""Regression for users: SVMRegressor against scikit-learn's LinearSVR (same optimum, shapes and
estimator checks), the command line's -s 11 / 12 / 13, -p and -v against LIBLINEAR's own train and
predict, and model files read and written both ways (svmopt's format and LIBLINEAR's)."""
import re

import numpy as np
import pytest
from sklearn.base import clone, is_regressor
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import LinearSVR

import svmopt
from sklearn_checks import PROTOCOL_CHECKS, failed_checks, run_check
from svmopt.cli import predict_main, train_main
from svmopt.estimators import SVMRegressor
from svmopt.io import load_liblinear_model, save_liblinear_model
from svmopt.result import RegressionResult, Status


@pytest.fixture(scope="module")
def diabetes():
    from sklearn.datasets import load_diabetes

    X, t = load_diabetes(return_X_y=True)
    return X / np.abs(X).max(axis=0), t


def _objective(X, t, w, b, p, eps, C, s=1.0):
    """1/2 (|w|^2 + b^2) + C sum s (|t - w.x - b| - eps)_+^p: LIBLINEAR's / LinearSVR's problem (b regularized)."""
    r = np.maximum(np.abs(t - (X @ w + b)) - eps, 0.0)
    return 0.5 * (w @ w + b * b) + C * np.sum(s * r ** p)


# ---------------------------------------------------------------- SVMRegressor: scikit-learn's LinearSVR


@pytest.mark.parametrize("loss, p, eps", [("epsilon_insensitive", 1, 5.0), ("squared_epsilon_insensitive", 2, 2.0)],
                         ids=["l1", "l2"])
@pytest.mark.parametrize("fit_intercept", [True, False], ids=["bias", "none"])
def test_regressor_reaches_linearsvr_optimum(diabetes, loss, p, eps, fit_intercept):
    """The defaults make LinearSVR's problem (bias feature 1, regularized); with sample weights, in
    float64 the objective is LinearSVR's at -e 1e-10, and the shapes are LinearSVR's; float32 at the
    default tol (with the intercept) is within 1e-3 of it."""
    X, t = diabetes
    s = np.random.default_rng(0).uniform(0.2, 2.0, X.shape[0])
    ref = LinearSVR(loss=loss, epsilon=eps, C=1.0, tol=1e-10, max_iter=1_000_000, fit_intercept=fit_intercept,
                    dual=True).fit(X, t, sample_weight=s)
    m = SVMRegressor(loss=loss, epsilon=eps, dtype="float64", tol=1e-9, max_iter=100_000,
                     fit_intercept=fit_intercept).fit(X, t, sample_weight=s)
    assert m.result_.status == Status.CONVERGED and isinstance(m.result_, RegressionResult)
    assert m.coef_.shape == ref.coef_.shape == (X.shape[1],) and isinstance(m.n_iter_, int)
    if fit_intercept:
        assert m.intercept_.shape == ref.intercept_.shape == (1,)
    else:
        assert type(m.intercept_) is type(ref.intercept_) is float and m.intercept_ == 0.0
    b, b_ref = np.ravel(m.intercept_)[0], np.ravel(ref.intercept_)[0]
    P, P_ref = _objective(X, t, m.coef_, b, p, eps, 1.0, s), _objective(X, t, ref.coef_, b_ref, p, eps, 1.0, s)
    assert abs(P - P_ref) <= 1e-8 * P_ref
    f_ref = ref.predict(X)  # (the L2 objective is flat: 1e-8 in P moves predictions by 1e-4 of their range)
    np.testing.assert_allclose(m.predict(X), f_ref, rtol=0, atol=2e-4 * np.abs(f_ref).max())
    if not fit_intercept:
        return
    # float32 at the default tolerance: within it of the optimum
    m32 = SVMRegressor(loss=loss, epsilon=eps, fit_intercept=fit_intercept).fit(X, t, sample_weight=s)
    b32 = float(np.ravel(m32.intercept_)[0])
    assert P_ref * (1 - 1e-5) <= _objective(X, t, m32.coef_.astype(float), b32, p, eps, 1.0, s) <= P_ref * (1 + 1e-3)


def test_regressor_score_is_weighted_r2_and_works_in_sklearn(diabetes):
    X, t = diabetes
    s = np.random.default_rng(1).uniform(0.0, 3.0, X.shape[0])
    m = SVMRegressor(loss="squared_epsilon_insensitive", C=10.0, intercept_scaling=None).fit(X, t)
    f = m.predict(X)
    assert m.score(X, t) == pytest.approx(r2_score(t, f), abs=1e-12)
    assert m.score(X, t, sample_weight=s) == pytest.approx(r2_score(t, f, sample_weight=s), abs=1e-12)
    assert m.score(X, t) > 0.45  # a free intercept: near least squares' R^2 on diabetes (0.52)
    with pytest.raises(ValueError, match="shape mismatch"):
        m.score(X, t[:-1])
    assert is_regressor(m) and clone(m).get_params() == m.get_params()
    pipe = make_pipeline(StandardScaler(), SVMRegressor(loss="squared_epsilon_insensitive", intercept_scaling=None))
    grid = GridSearchCV(pipe, {"svmregressor__C": [0.01, 1.0]}, cv=3).fit(X, t)
    assert grid.best_params_["svmregressor__C"] == 1.0 and grid.best_score_ > 0.4


def test_regressor_kernel_and_bad_parameters(diabetes):
    X, t = diabetes
    with pytest.raises(NotImplementedError, match="kernel regression"):
        SVMRegressor(kernel="rbf").fit(X[:50], t[:50])
    linear = SVMRegressor(kernel="linear").fit(X[:50], t[:50])
    assert linear.coef_.shape == (X.shape[1],)
    for kw, match in [(dict(loss="hinge"), "loss must be one of"), (dict(epsilon=-1.0), "epsilon"),
                      (dict(C=0.0), "C must be"), (dict(intercept_scaling=0.0), "intercept_scaling")]:
        with pytest.raises(ValueError, match=match):
            SVMRegressor(**kw).fit(X[:50], t[:50])
    with pytest.raises(ValueError, match="real-valued"):
        SVMRegressor().fit(X[:3], np.array(["a", "b", "c"]))
    with pytest.raises(ValueError, match="sample_weight has shape"):
        SVMRegressor().fit(X[:50], t[:50], sample_weight=np.ones(3))


# Checks of the protocol that need no fit, or fail before solving, and one that trains.
FAST_CHECKS = PROTOCOL_CHECKS + ["check_requires_y_none", "check_regressors_no_decision_function",
                                 "check_regressors_train"]


@pytest.mark.parametrize("check", FAST_CHECKS)
def test_sklearn_check_fast(check):
    run_check(check, SVMRegressor())


@pytest.mark.slow
def test_sklearn_check_estimator_all():
    """Every check (each new data shape compiles: about a minute); LinearSVR fails the same two."""
    assert not failed_checks(SVMRegressor())


# ---------------------------------------------------------------- the command line: -s 11 / 12 / 13, -p, -v

ll = pytest.importorskip("liblinear.liblinearutil")


@pytest.fixture(scope="module")
def diabetes_files(diabetes, tmp_path_factory):
    """diabetes (scaled) as LIBSVM files: 300 training rows, 142 test rows."""
    X, t = diabetes
    folder = tmp_path_factory.mktemp("diabetes")
    svmopt.dump_svmlight(X[:300], t[:300], folder / "train")
    svmopt.dump_svmlight(X[300:], t[300:], folder / "test")
    return folder / "train", folder / "test"


def _stats_printed(out, prefix=""):
    mse = float(re.search(rf"^{prefix}Mean squared error = (\S+)", out, re.M).group(1))
    scc = float(re.search(rf"^{prefix}Squared correlation coefficient = (\S+)", out, re.M).group(1))
    return mse, scc


def _stats(f, t):  # numpy's: MSE and the squared Pearson correlation
    return np.mean((f - t) ** 2), np.corrcoef(f, t)[0, 1] ** 2


@pytest.mark.parametrize("s", [11, 12, 13])
def test_cli_trains_liblinears_svr_and_predicts_its_lines(diabetes, diabetes_files, tmp_path, capsys, s):
    """svmopt-train -s s -p 5 -B 1 reaches LIBLINEAR's optimum (-e 1e-10: the same test predictions);
    svmopt-predict writes the values and prints LIBLINEAR's two regression lines, equal to numpy's MSE
    and squared correlation of what it wrote, and to what LIBLINEAR's predict says for its own model."""
    train, test = diabetes_files
    X, t = diabetes
    model = tmp_path / "m"
    assert train_main(["-q", "-s", str(s), "-c", "1", "-p", "5", "-B", "1", "--dtype", "float64", "--tol", "1e-9",
                       "--max-iter", "20000", str(train), str(model)]) == 0
    assert predict_main([str(test), str(model), str(tmp_path / "out")]) == 0
    f = np.loadtxt(tmp_path / "out")
    theirs = ll.train(ll.problem(t[:300], X[:300]), f"-s {s} -c 1 -p 5 -B 1 -e 1e-10 -q")
    f_ll, (_, mse_ll, scc_ll), _ = ll.predict(t[300:], X[300:], theirs, "-q")
    np.testing.assert_allclose(f, f_ll, rtol=1e-4)  # (the L2 losses' objective is flat: 1e-9 in P, 2e-5 in f)
    mse, scc = _stats_printed(capsys.readouterr().out, "")
    np.testing.assert_allclose((mse, scc), _stats(f, t[300:]), rtol=1e-5)  # %g: 6 digits
    np.testing.assert_allclose((mse, scc), (mse_ll, scc_ll), rtol=1e-4)


def test_cli_cross_validation_prints_liblinears_regression_lines(diabetes, diabetes_files, capsys):
    """-v 5 on -s 12: the two lines, equal to LIBLINEAR trained on the same folds (at -e 1e-10)."""
    from svmopt.cli.train import _folds

    train, _ = diabetes_files
    X, t = diabetes[0][:300], diabetes[1][:300]
    assert train_main(["-s", "12", "-p", "2", "-B", "1", "-v", "5", "--dtype", "float64", "--tol", "1e-9",
                       str(train)]) == 0
    out = capsys.readouterr().out
    assert out.count("mean squared error on") == 5
    mse, scc = _stats_printed(out, "Cross Validation ")
    f = np.empty_like(t)
    for test in _folds(X.shape[0], 5, 1):
        keep = np.ones(X.shape[0], bool)
        keep[test] = False
        m = ll.train(ll.problem(t[keep], X[keep]), "-s 12 -p 2 -B 1 -e 1e-10 -q")
        f[test] = ll.predict(t[test], X[test], m, "-q")[0]
    np.testing.assert_allclose((mse, scc), _stats(f, t), rtol=1e-4)


def test_cli_regression_errors(diabetes_files, capsys):
    train, _ = diabetes_files
    for argv, words in [(["-s", "3", "-p", "0.5"], "-p sets the epsilon of support vector regression"),
                        (["-s", "13", "-p", "-1"], "epsilon"),
                        (["-s", "12", "-w1", "2"], "no classes to weight"),
                        (["-s", "12", "-C"], "-C searches C for classifiers"),
                        (["-s", "12", "-B", "1", "-R"], "-R is for LIBLINEAR's primal solvers"),
                        (["--loss", "squared_error", "--kernel", "rbf"], "kernel regression in svmopt is epsilon-SVR")]:
        assert train_main([*argv, str(train)]) == 1
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err, (argv, err)


# ---------------------------------------------------------------- model files, both formats, both ways


@pytest.mark.parametrize("intercept", [dict(intercept_scaling=1.0), dict(intercept_scaling=None),
                                       dict(fit_intercept=False)], ids=["bias-feature", "free", "none"])
def test_liblinear_predicts_our_regression_model(diabetes, tmp_path, intercept):
    """Our model in LIBLINEAR's text format: liblinearutil.load_model + predict gives our predictions,
    and svmopt's own format loads back as the same RegressionResult."""
    X, t = diabetes
    res = svmopt.solve(X, t, loss=svmopt.losses.squared_epsilon_insensitive(1.0), C=2.0, dtype="float64",
                       **intercept)
    path = save_liblinear_model(res, tmp_path / "m.ll")
    text = path.read_text()
    assert text.startswith("solver_type L2R_L2LOSS_SVR\nnr_class 2\nnr_feature 10\nbias ") and "label" not in text
    f_ll = np.asarray(ll.predict(t, X, ll.load_model(str(path)), "-q")[0])
    np.testing.assert_allclose(f_ll, res.predict(X), rtol=1e-12, atol=1e-9)
    back = load_liblinear_model(path)
    assert isinstance(back, RegressionResult)
    np.testing.assert_allclose(back.predict(X), f_ll, rtol=1e-12, atol=1e-9)
    saved = svmopt.load_model(svmopt.save_model(res, tmp_path / "m.npz"))
    assert isinstance(saved, RegressionResult) and saved.classes is None
    assert saved.extras["header"]["kind"] == "regression" and saved.status == res.status
    np.testing.assert_array_equal(saved.predict(X), res.predict(X))


@pytest.mark.parametrize("s", [11, 12, 13])
def test_we_predict_liblinears_regression_model(diabetes, tmp_path, capsys, s):
    """LIBLINEAR's own SVR models (with and without -B): svmopt-predict writes LIBLINEAR's predictions."""
    X, t = diabetes
    data = tmp_path / "d"
    svmopt.dump_svmlight(X, t, data)
    for bias in ("-B 1", ""):
        m = ll.train(ll.problem(t, X), f"-s {s} -c 1 -p 3 {bias} -q")
        ll.save_model(str(tmp_path / "m.ll"), m)
        f_ll = np.asarray(ll.predict(t, X, m, "-q")[0])
        assert predict_main([str(data), str(tmp_path / "m.ll"), str(tmp_path / "out")]) == 0
        np.testing.assert_allclose(np.loadtxt(tmp_path / "out"), f_ll, rtol=1e-12, atol=1e-10)
        np.testing.assert_allclose(_stats_printed(capsys.readouterr().out), _stats(f_ll, t), rtol=1e-5)


def test_regression_model_files_refuse_what_they_cannot_be(diabetes, tmp_path):
    X, t = diabetes
    res = svmopt.solve(X[:60], t[:60], loss=svmopt.losses.epsilon_insensitive(1.0), intercept_scaling=1.0)
    with pytest.raises(ValueError, match="not a LIBLINEAR regression type"):
        save_liblinear_model(res, tmp_path / "m.ll", solver_type="L2R_L2LOSS_SVC_DUAL")
    assert save_liblinear_model(res, tmp_path / "m.ll").read_text().startswith("solver_type L2R_L1LOSS_SVR_DUAL\n")
    fitted = SVMRegressor(epsilon=1.0).fit(X[:60], t[:60])
    back = svmopt.load_model(svmopt.save_model(fitted, tmp_path / "est.npz"))
    assert back.extras["header"]["estimator"]["epsilon"] == 1.0
    np.testing.assert_allclose(back.predict(X), fitted.predict(X))


# ---------------------------------------------------------------- the benchmark harness


def test_regression_bench_runs_and_its_objective_is_liblinears(tmp_path):
    """bench.regression on diabetes: its objective formula is svmopt's P, and LIBLINEAR's -s 11 at
    -e 1e-10 meets svmopt's float64 optimum in it within 1e-9; svmopt's default rows certify 1e-3 and
    lie within it of f*, f* is below every LIBLINEAR run, and the table is written."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # `bench` is a top-level folder
    from bench import regression

    X, t = regression.dataset("diabetes")
    w, b = ll.train(ll.problem(t, X), f"-s 11 -c 1 -p {regression.EPSILON} -B 1 -e 1e-10 -q").get_decfun()
    res = svmopt.solve(X, t, loss=svmopt.losses.squared_epsilon_insensitive(regression.EPSILON), C=regression.C,
                       intercept_scaling=1.0, dtype="float64", tol=1e-10)
    P_ll = regression.primal(X, t, np.asarray(w), b, 2)
    assert abs(regression.primal(X, t, np.asarray(res.w), float(res.b), 2) - float(res.primal_objective)) \
        <= 1e-12 * P_ll
    assert abs(float(res.primal_objective) - P_ll) <= 1e-9 * P_ll
    rows = regression.run(["diabetes"], repeats=1)
    assert [r["p"] for r in rows] == [1, 2]
    for r in rows:
        assert r["status"] == "CONVERGED" and r["gap"] <= 1e-3 and -1e-6 <= r["err"] <= 1e-3
        assert all(P >= r["fstar"] for *_, P in r["ll"])
    regression.report(rows, tmp_path / "out.md", "test")
    assert (tmp_path / "out.md").read_text().count("| diabetes (442 x 10") == 2
