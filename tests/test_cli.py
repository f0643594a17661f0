"""svmopt-train / svmopt-predict run in-process: accuracies on heart_scale and a9a.t,
progress output, one-vs-rest, and readable errors (exit code, stderr, no traceback)."""
import re

import numpy as np
import pytest
from conftest import data_path

import svmopt
from svmopt.cli import predict_main, train_main
from svmopt.losses import lp_hinge
from svmopt.model_io import load_model
from svmopt.multiclass import solve_multiclass

ACCURACY = re.compile(r"Accuracy = ([0-9.]+)% \((\d+)/(\d+)\)")


def _accuracy(out):
    m = ACCURACY.search(out)
    assert m, f"no accuracy line in {out!r}"
    return float(m.group(1)), int(m.group(2)), int(m.group(3))


def test_heart_train_predict_with_progress(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = data_path("heart_scale")
    assert train_main(["-c", "1", "-B", "1", "--progress", "20", "--dtype", "float64", str(data)]) == 0
    out = capsys.readouterr().out
    model = tmp_path / "heart_scale.model"  # LIBLINEAR's default name, compression suffix dropped
    assert model.exists() and "model written to heart_scale.model" in out
    assert "read " in out and "270 rows, 13 features" in out and "converged after" in out
    assert "bias feature 1" in out and "float64" in out
    objs = [float(v) for v in re.findall(r"iter +\d+ +objective ([0-9.e+-]+)", out)]
    assert len(objs) >= 3 and objs[0] >= objs[-1]  # one line per 20 iterations, going down
    m = load_model(model)
    assert objs[-1] >= float(m.primal_objective) * (1 - 1e-3)  # the run ends at or below what it printed
    assert m.intercept_scaling == 1.0 and m.w.dtype == np.float64 and m.w.shape == (13,)

    assert predict_main([str(data), str(model), "out.txt"]) == 0
    acc, correct, total = _accuracy(capsys.readouterr().out)
    X, y = svmopt.load_svmlight(data)
    pred = np.loadtxt(tmp_path / "out.txt")
    assert total == 270 and correct == int(np.sum(pred == y)) and abs(acc - 100 * correct / 270) < 1e-3
    np.testing.assert_array_equal(pred, m.predict(X))
    assert acc > 80.0
    assert (tmp_path / "out.txt").read_text().splitlines()[0] in ("1", "-1")  # labels as LIBLINEAR writes them


def test_a9a_accuracy(tmp_path, capsys):
    """LIBLINEAR reaches 84-85% on a9a.t with C = 1; so must we (float32, free intercept)."""
    model = tmp_path / "a9a.model"
    assert train_main(["-q", str(data_path("a9a")), str(model)]) == 0
    assert capsys.readouterr().out == ""  # -q: quiet
    assert predict_main([str(data_path("a9a.t")), str(model), str(tmp_path / "a9a.out")]) == 0
    acc, correct, total = _accuracy(capsys.readouterr().out)
    assert total == 16281 and 84.0 <= acc <= 85.5
    # a9a.t has 122 features (the model 123): predict took n_features from the model
    assert load_model(model).extras["header"]["n_features"] == 123


def test_one_vs_rest_and_options(tmp_path, capsys):
    """Three classes, --loss 1.5 (Lp hinge), an iteration cap: the problem of test_multiclass's
    cap test (its compilation is reused), so the cap warning shows on stderr."""
    X, y = svmopt.load_svmlight(data_path("heart_scale"))
    y3 = np.where(X[:, 0].toarray().ravel() > 0.3, 2, y)
    data = tmp_path / "three.txt"
    svmopt.dump_svmlight(X, y3, data)
    model = tmp_path / "three.model"
    assert train_main(["--loss", "1.5", "--max-iter", "2", "-c", "1", str(data), str(model)]) == 0
    out, err = capsys.readouterr()
    assert "one-vs-rest over 3 classes" in out and "class 2: max_iter after 2 iterations" in out
    assert "svmopt-train: warning: alm one-vs-rest: MAX_ITER for class(es) -1.0, 1.0, 2.0" in err
    m = load_model(model)
    assert m.w.shape == (3, 13) and m.w.dtype == np.float32 and m.loss == "lp_hinge(p=1.5)"
    with pytest.warns(svmopt.ConvergenceWarning):
        ref = solve_multiclass(X, y3, loss=lp_hinge(1.5), max_iter=2, dtype="float32")
    np.testing.assert_array_equal(m.w, np.asarray(ref.w))
    assert predict_main(["-q", str(data), str(model), str(tmp_path / "o.txt")]) == 0
    assert capsys.readouterr().out == ""
    pred = np.loadtxt(tmp_path / "o.txt")
    np.testing.assert_array_equal(pred, ref.predict(X))


# ---------------------------------------------------------------- errors


def _fails(main, argv, capsys, code=1):
    assert main(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err and err.count("\n") <= 6
    return err


def test_missing_data_file(tmp_path, capsys):
    err = _fails(train_main, [str(tmp_path / "nope.txt")], capsys)
    assert "svmopt-train: error: cannot open" in err and "nope.txt" in err and "No such file" in err
    err = _fails(predict_main, [str(tmp_path / "nope.txt"), str(tmp_path / "m"), str(tmp_path / "o")], capsys)
    assert "svmopt-predict: error: model file" in err and "cannot read it" in err


def test_malformed_data_file(tmp_path, capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text("+1 1:0.5 2:0.25\n-1 1:0.1\n+1 3:0.2 2:0.4\n")
    err = _fails(train_main, [str(bad)], capsys)
    assert "malformed LIBSVM file: bad.txt, line 3:" in err and "must increase" in err
    bad.write_text("+1 1:0.5 2:\n")
    err = _fails(train_main, [str(bad)], capsys)
    assert "bad.txt, line 1: missing value" in err


def test_bad_model_file(tmp_path, capsys):
    data = data_path("heart_scale")
    fake = tmp_path / "fake.model"
    fake.write_text("solver_type L2R_L2LOSS_SVC_DUAL\n")
    err = _fails(predict_main, [str(data), str(fake), str(tmp_path / "o.txt")], capsys)
    assert "fake.model': truncated LIBLINEAR model" in err  # LIBLINEAR's format is recognised
    fake.write_text("not a model\n")
    err = _fails(predict_main, [str(data), str(fake), str(tmp_path / "o.txt")], capsys)
    assert "fake.model': not an svmopt model file" in err


def test_bad_options(tmp_path, capsys):
    data = str(data_path("heart_scale"))
    err = _fails(train_main, ["--loss", "cubic", data], capsys)
    assert "unknown loss 'cubic'" in err
    err = _fails(train_main, ["-s", "cubic", data], capsys, code=2)
    assert "invalid int value: 'cubic'" in err  # -s is LIBLINEAR's solver number
    err = _fails(train_main, ["--method", "nope", data], capsys)
    assert "unknown method 'nope'; available methods:" in err and "alm" in err
    err = _fails(train_main, ["-c", "0", data], capsys)
    assert "-c must be > 0" in err
    err = _fails(train_main, ["-c", "abc", data], capsys, code=2)
    assert "invalid float value: 'abc'" in err and "usage: svmopt-train" in err
    err = _fails(predict_main, [data], capsys, code=2)
    assert "usage: svmopt-predict" in err
    one = tmp_path / "one.txt"
    one.write_text("1 1:0.5\n1 2:0.5\n")
    err = _fails(train_main, [str(one)], capsys)
    assert "only one class" in err
    assert not list(tmp_path.glob("*.model"))
