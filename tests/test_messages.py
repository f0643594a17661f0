"""Bad arguments get an error that names the argument and the fix, checked by text: the cases a
battery of 371 bad inputs found unclear, raw or silently accepted."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp

import svmopt
from svmopt.cli import predict_main, train_main
from svmopt.kernels import from_function as kernel_function
from svmopt.losses import from_function
from svmopt.solvers import alfpgm, cutting_plane

from references import load


@pytest.fixture(scope="module")
def heart():
    return load("heart_scale")


@pytest.mark.parametrize("kwargs, error, match", [
    (dict(tol="x"), TypeError, "tol .* must be a number in \\(0, 1\\)"),
    (dict(intercept_scaling="1"), TypeError, "intercept_scaling must be a number"),
    (dict(sample_weight="a"), TypeError, "sample_weight must be numbers"),
    (dict(dtype="bogus"), TypeError, "dtype must be float32 or float64"),
    (dict(devices="cpu"), TypeError, "devices must be a list of jax devices"),
    (dict(kernel="rbf"), TypeError, "svmopt.kernels.rbf\\(gamma=0.1\\).*SVMClassifier\\(kernel='rbf'\\)"),
    (dict(verbose="loud"), TypeError, "verbose must be True/False"),
    (dict(history=True, record_every=0), ValueError, "record_every must be a positive integer"),
    (dict(layout="csr"), ValueError, "layout must be one of"),
    (dict(batch="fast"), ValueError, "batch must be one of"),
    (dict(throw="yes"), TypeError, "throw must be True or False"),
    (dict(max_iter=2.5), TypeError, "max_iter must be an integer"),
])
def test_solve_names_the_bad_argument(heart, kwargs, error, match):
    X, y = heart
    with pytest.raises(error, match=match):
        svmopt.solve(X, y, **kwargs)


@pytest.mark.parametrize("X", [3.0, None, "data"])
def test_X_that_is_no_matrix(heart, X):
    _, y = heart
    with pytest.raises(TypeError, match="X must be a 2-D matrix"):
        svmopt.solve(X, y)


def test_numpy_losses_are_refused_with_what_to_write_numpy_kernels_run_on_the_host(heart):
    X, y = heart
    with pytest.raises(TypeError, match="must be written with jax.numpy .*jnp.maximum"):
        from_function(lambda m: np.maximum(0.0, 1.0 - m) ** 2)
    # a NumPy kernel is not refused: it runs on the host, on its Gram matrix (tests/test_kernels_given.py)
    assert kernel_function(lambda A, B: np.asarray(A) @ np.asarray(B).T).host
    with pytest.raises(ValueError, match="returned shape \\(2,\\).*\\(len\\(A\\), len\\(B\\)\\) block"):
        kernel_function(lambda A, B: jnp.sum(A, axis=1))


def test_a_loss_a_dual_method_cannot_take_names_the_methods_that_can(heart):
    X, y = heart
    smooth = from_function(lambda m: jnp.logaddexp(0.0, -m), name="soft")
    with pytest.raises(svmopt.MissingCapability, match="method=newton"):
        svmopt.solve(X, y, loss=smooth, method=cutting_plane, intercept_scaling=1.0)
    with pytest.raises(svmopt.MissingCapability, match="method=newton|alfpgm"):
        svmopt.solve(X, y, loss=smooth, method=alfpgm, kernel=svmopt.kernels.rbf(0.1))


def test_io_and_estimator_arguments(heart, tmp_path):
    X, y = heart
    from conftest import DATA

    for bad in ("5", 5.5, True):
        with pytest.raises(TypeError, match="n_features must be an integer"):
            svmopt.load_svmlight(DATA / "heart_scale.xz", n_features=bad)
    with pytest.raises(ValueError, match="gamma must be a number > 0, 'scale' or 'auto', got 'huge'"):
        svmopt.SVMClassifier(kernel="rbf", gamma="huge").fit(X, y)
    with pytest.raises(ValueError, match="var\\(X\\) overflows"):
        big = np.full((20, 3), 1e200) * np.arange(1, 21)[:, None]
        svmopt.SVMClassifier(kernel="rbf").fit(big, np.arange(20) % 2)
    clf = svmopt.SVMClassifier().fit(X, y)
    with pytest.raises(ValueError, match="X has 270 rows but y has 10 labels"):
        clf.score(X, y[:10])


def test_command_line_cases(tmp_path, capsys):
    from conftest import DATA

    empty = tmp_path / "empty.txt"
    empty.write_text("")
    two = tmp_path / "two.txt"
    two.write_text("1 1:0.5\n-1 1:-0.5\n")
    heart = str(DATA / "heart_scale.xz")
    cases = [([str(empty)], 1, "holds no data rows"),
             (["-C", str(two)], 1, "fold 1 of 2: its training rows hold only one class .* fewer folds"),
             (["--progress", "-1", heart, str(tmp_path / "m")], 2, "--progress takes K >= 0"),
             ([heart, ""], 2, "the model file name is empty"),
             (["--kernel", "rbf", "--gamma", "abc", heart, str(tmp_path / "m")], 2, "--gamma takes a number")]
    for argv, code, match in cases:
        assert train_main(argv) == code, argv
        err = capsys.readouterr().err
        assert __import__("re").search(match, err), (argv, err)
    assert train_main(["-q", heart, str(tmp_path / "ok.model")]) == 0
    assert predict_main(["--max-bytes", "0", heart, str(tmp_path / "ok.model"), str(tmp_path / "out")]) == 1
    assert "--max-bytes must be > 0" in capsys.readouterr().err
