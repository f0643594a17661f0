"""svmopt-train / svmopt-predict with LIBSVM's kernel options (-t -g -d -r -b, precomputed -t 4 files),
against LIBSVM itself (libsvm-official's svm_train / svm_predict) on pendigits and heart_scale."""
import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path
from libsvm.svmutil import svm_predict, svm_problem, svm_train

import svmopt
from svmopt.cli import predict_main, train_main
from svmopt.model_io import load_model


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    """pendigits: 600 training and 400 test rows (features / 100) as LIBSVM files."""
    d = tmp_path_factory.mktemp("digits")
    X, y = svmopt.load_svmlight(data_path("pendigits"))
    Xt, yt = svmopt.load_svmlight(data_path("pendigits.t"), n_features=16)
    X, Xt = X[:600] / 100.0, Xt[:400] / 100.0
    svmopt.dump_svmlight(X, y[:600], d / "train")
    svmopt.dump_svmlight(Xt, yt[:400], d / "test")
    return d, X.toarray(), y[:600], Xt.toarray(), yt[:400]


def _log_loss(y, P, classes):
    return float(-np.mean(np.log(P[np.arange(y.size), np.searchsorted(classes, y)])))


def test_b1_prints_libsvm_probability_output(digits, capsys):
    """-t 2 -g -c -b 1 trains an rbf one-vs-one model with sigmoids; predict -b 1 writes LIBSVM's
    "labels ..." header and "label p1 p2 ..." rows; log-loss within 2% of LIBSVM's -b 1 model."""
    d, X, y, Xt, yt = digits
    args = ["-t", "2", "-g", "2", "-c", "10", "-b", "1", "--seed", "0"]
    assert train_main(args + [str(d / "train"), str(d / "m")]) == 0
    assert "probability estimates" in capsys.readouterr().out
    assert predict_main(["-b", "1", str(d / "test"), str(d / "m"), str(d / "out")]) == 0
    acc = float(capsys.readouterr().out.split("Accuracy = ")[1].split("%")[0])
    lines = (d / "out").read_text().splitlines()
    assert lines[0] == "labels " + " ".join(str(c) for c in range(10)) and len(lines) == 401
    rows = np.array([[float(v) for v in line.split()] for line in lines[1:]])
    P = rows[:, 1:]
    np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(rows[:, 0], np.argmax(P, axis=1))  # the label is the most probable class
    assert acc == pytest.approx(100 * np.mean(rows[:, 0] == yt), abs=1e-3)
    ref = svm_train(svm_problem(y, sp.csr_matrix(X)), "-t 2 -g 2 -c 10 -b 1 -q")
    _, ref_acc, ref_P = svm_predict(yt, sp.csr_matrix(Xt), ref, "-b 1 -q")
    order = np.argsort(ref.get_labels())  # LIBSVM's columns follow its label order
    ours, theirs = _log_loss(yt, P, np.arange(10)), _log_loss(yt, np.asarray(ref_P)[:, order], np.arange(10))
    # 600 rows: the folds' randomness alone moves log-loss by ~5% (the 2% comparison, on 1000 rows and
    # averaged in bench/probability.py, is tests/test_probability.py's)
    assert ours <= 1.05 * theirs, (ours, theirs)
    assert abs(acc - ref_acc[0]) <= 1.0
    # -b 1 needs a model that has the sigmoids
    assert train_main(["-q", "-t", "2", "-g", "2", str(d / "train"), str(d / "plain")]) == 0
    assert predict_main(["-b", "1", str(d / "test"), str(d / "plain"), str(d / "out2")]) == 1
    assert "no probability estimates; train it with svmopt-train -b 1" in capsys.readouterr().err


def test_kernel_types_as_libsvm(digits, capsys):
    """-t 0 / 1 / 3 with -g -d -r: LIBSVM's C-SVC with that kernel (accuracy within a point of LIBSVM's);
    the -t default gamma is LIBSVM's 1 / num_features; --gamma / --kernel keep working."""
    d, X, y, Xt, yt = digits
    for t, extra in (("0", []), ("1", ["-d", "2", "-r", "1", "-g", "0.5"]), ("3", ["-g", "0.05", "-r", "-1"])):
        assert train_main(["-q", "-t", t, *extra, str(d / "train"), str(d / "m")]) == 0
        assert predict_main(["-q", str(d / "test"), str(d / "m"), str(d / "out")]) == 0
        pred = np.loadtxt(d / "out")
        ref = svm_train(svm_problem(y, sp.csr_matrix(X)), f"-t {t} {' '.join(extra)} -q")
        ref_pred, _, _ = svm_predict(yt, sp.csr_matrix(Xt), ref, "-q")
        # the sigmoid kernel is not PSD: both end at a stationary point of a non-convex problem
        close = 0.01 if t != "3" else 0.03
        assert abs(np.mean(pred == yt) - np.mean(np.asarray(ref_pred) == yt)) <= close, t
    m = load_model(d / "m")
    assert m.kernel.name == "sigmoid" and float(m.kernel.params["coef0"]) == -1.0
    assert train_main(["-q", "-t", "2", str(d / "train"), str(d / "m")]) == 0
    assert float(load_model(d / "m").kernel.params["gamma"]) == pytest.approx(1 / 16)  # LIBSVM's default
    assert train_main(["-q", "--kernel", "rbf", "--gamma", "0.25", str(d / "train"), str(d / "m")]) == 0
    assert float(load_model(d / "m").kernel.params["gamma"]) == 0.25
    capsys.readouterr()
    for bad, msg in ((["-t", "5"], "unknown kernel type -t 5"), (["-t", "2", "--kernel", "rbf"], "give one"),
                     (["-s", "1", "-t", "2"], "nu-SVC is not in svmopt"), (["-b", "1", "--model-format", "liblinear"],
                                                                       "no probability estimates")):
        assert train_main(["-q", *bad, str(d / "train"), str(d / "m")]) == 1
        assert msg in capsys.readouterr().err


def test_precomputed_kernel_files(digits, capsys):
    """-t 4: LIBSVM's precomputed format ("0:i 1:K(x_i, x_1) ..."), train, cross-validation and predict;
    the same predictions as -t 2 with that gamma, and as LIBSVM's own -t 4 model."""
    d, X, y, Xt, yt = digits

    def gram(A, B):
        return np.exp(-2.0 * ((A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2 * A @ B.T))

    def write(path, K, labels):
        with open(path, "w") as f:
            for i, (row, lab) in enumerate(zip(K, labels)):
                f.write(f"{lab:g} 0:{i + 1} " + " ".join(f"{j + 1}:{v:.17g}" for j, v in enumerate(row)) + "\n")

    K, KT = gram(X, X), gram(Xt, X)
    write(d / "ktrain", K, y)
    write(d / "ktest", KT, yt)
    assert train_main(["-q", "-t", "4", "-c", "10", str(d / "ktrain"), str(d / "km")]) == 0
    assert predict_main(["-q", str(d / "ktest"), str(d / "km"), str(d / "kout")]) == 0
    assert train_main(["-q", "-t", "2", "-g", "2", "-c", "10", str(d / "train"), str(d / "rm")]) == 0
    assert predict_main(["-q", str(d / "test"), str(d / "rm"), str(d / "rout")]) == 0
    pre, rbf = np.loadtxt(d / "kout"), np.loadtxt(d / "rout")
    assert np.mean(pre == rbf) >= 0.995
    serial = np.arange(1, 601)[:, None]
    ref = svm_train(svm_problem(y, np.hstack([serial, K]), isKernel=True), "-t 4 -c 10 -q")
    ref_pred, _, _ = svm_predict(yt, np.hstack([np.arange(1, 401)[:, None], KT]), ref, "-q")
    assert np.mean(pre == np.asarray(ref_pred)) >= 0.995
    assert load_model(d / "km").extras["header"]["n_features"] == 600
    assert train_main(["-t", "4", "-c", "10", "-v", "3", str(d / "ktrain")]) == 0
    cv = float(capsys.readouterr().out.split("Cross Validation Accuracy = ")[1].split("%")[0])
    assert cv > 90.0
    rows = (d / "ktrain").read_text().splitlines()
    (d / "shuffled").write_text("\n".join([rows[1], rows[0], *rows[2:]]) + "\n")
    assert train_main(["-q", "-t", "4", str(d / "shuffled"), str(d / "km")]) == 1
    assert "numbers the rows 0:1 .. 0:n in order" in capsys.readouterr().err
