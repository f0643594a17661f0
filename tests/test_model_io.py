"""Model files: round trips (binary, one-vs-rest, kernel, estimator) predict the same,
and every kind of bad file fails with a ModelFileError naming the file."""
import json
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path

import svmopt
from svmopt import kernels
from svmopt.estimators import SVMClassifier
from svmopt.model_io import FORMAT, VERSION, ModelFileError, load_model, save_model
from svmopt.multiclass import MulticlassResult
from svmopt.result import Result, Status


@pytest.fixture(scope="module")
def heart():
    return svmopt.load_svmlight(data_path("heart_scale"))


@pytest.fixture(scope="module")
def binary(heart):
    X, y = heart
    return svmopt.solve(X, y, C=0.7, dtype="float64")  # same compilation as test_estimators


@pytest.fixture
def saved(binary, tmp_path):
    return save_model(binary, tmp_path / "heart.model")


def test_binary_round_trip(heart, binary, saved):
    X, y = heart
    assert saved.name == "heart.model"  # the name is kept (np.savez alone would add .npz)
    m = load_model(saved)
    assert type(m) is Result and m.status is Status.CONVERGED and m.iterations == binary.iterations
    np.testing.assert_array_equal(m.decision_function(X), binary.decision_function(X))
    np.testing.assert_array_equal(m.predict(X), binary.predict(X))
    np.testing.assert_array_equal(m.classes, [-1.0, 1.0])
    assert m.primal_objective == float(binary.primal_objective) and m.method == "alm" and m.loss == "hinge"
    h = m.extras["header"]
    assert h["format"] == FORMAT and h["version"] == VERSION and h["n_features"] == 13 and h["kind"] == "binary"
    assert h["svmopt_version"] == svmopt.__version__ and h["C"] == 0.7 and h["kernel"] is None


def test_multiclass_round_trip_float32(tmp_path):
    """A one-vs-rest model with string labels and float32 weights (LinearSVC's, on pendigits)."""
    from sklearn.svm import LinearSVC

    X, y = svmopt.load_svmlight(data_path("pendigits"), n_features=16)
    X, y = X[:2000], y[:2000]
    labels = np.array([f"digit{int(v)}" for v in y])
    ref = LinearSVC(C=1.0).fit(X / 100, labels)
    res = MulticlassResult(w=ref.coef_.astype(np.float32), b=ref.intercept_.astype(np.float32),
                           primal_objective=np.ones(10), dual_objective=np.ones(10), gap=np.zeros(10),
                           status=np.zeros(10, np.int32), iterations=np.full(10, 7), method="liblinear",
                           loss="hinge", C=1.0, classes=ref.classes_)
    m = load_model(save_model(res, tmp_path / "pen.model"))
    assert isinstance(m, MulticlassResult) and m.w.dtype == np.float32 and m.converged
    Xt = X[:500] / 100
    np.testing.assert_array_equal(m.decision_function(Xt), res.decision_function(Xt))
    np.testing.assert_array_equal(m.predict(Xt), res.predict(Xt))
    assert np.mean(m.predict(Xt) == ref.predict(Xt)) == 1.0  # same argmax rule as LinearSVC


@pytest.mark.parametrize("sparse", [False, True])
def test_kernel_round_trip(heart, tmp_path, sparse):
    X, y = heart
    sv = X[:40] if sparse else X[:40].toarray()
    coef = np.random.default_rng(0).normal(size=40)
    res = Result(w=None, b=np.float64(0.25), primal_objective=1.0, dual_objective=1.0, gap=0.0,
                 status=Status.CONVERGED, iterations=3, method="alfpgm", loss="hinge", C=1.0,
                 classes=np.array([-1.0, 1.0]), kernel=kernels.polynomial(degree=2, gamma=0.5, coef0=1.0),
                 support_vectors=sv, dual_coef=coef)
    m = load_model(save_model(res, tmp_path / "k.model"))
    assert repr(m.kernel) == repr(res.kernel) and sp.issparse(m.support_vectors) == sparse
    np.testing.assert_array_equal(m.decision_function(X), res.decision_function(X))
    # an independent evaluation of the same model
    f = (0.5 * (X.toarray() @ X[:40].toarray().T) + 1.0) ** 2 @ coef + 0.25
    np.testing.assert_allclose(m.decision_function(X), f, rtol=1e-10)


def test_estimator_round_trip(heart, tmp_path):
    X, y = heart
    clf = SVMClassifier(C=0.7, dtype="float64").fit(X, np.where(y > 0, "sick", "healthy"))
    m = load_model(save_model(clf, tmp_path / "clf.model"))
    np.testing.assert_array_equal(m.predict(X), clf.predict(X))
    np.testing.assert_array_equal(m.decision_function(X), clf.decision_function(X))
    assert m.extras["header"]["estimator"]["C"] == 0.7 and list(m.classes) == ["healthy", "sick"]


def test_signed_model(binary, heart, tmp_path):
    X, _ = heart
    p = save_model(binary, tmp_path / "signed.model", key=b"secret")
    np.testing.assert_array_equal(load_model(p, key="secret").predict(X), binary.predict(X))
    with pytest.raises(ModelFileError, match="signed.*pass the key"):
        load_model(p)
    with pytest.raises(ModelFileError, match="checksum mismatch.*key is wrong"):
        load_model(p, key=b"guess")


# ---------------------------------------------------------------- bad files


def _members(path):
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def _rewrite(path, arrays):
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def test_missing_file(tmp_path):
    with pytest.raises(ModelFileError, match=r"model file '.*nothing\.model': cannot read it \(No such file"):
        load_model(tmp_path / "nothing.model")


def test_empty_file_name(binary, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # where save_model("") could otherwise leave something
    for name in ("", b""):
        with pytest.raises(ModelFileError, match=r"no file name given \(the name is empty\)"):
            load_model(name)
        with pytest.raises(ModelFileError, match=r"no file name given \(the name is empty\)"):
            save_model(binary, name)
    with pytest.raises(ModelFileError, match=r"cannot write it: it is a directory"):
        save_model(binary, tmp_path)
    assert not list(tmp_path.iterdir())


def test_not_a_model_file(tmp_path):
    p = tmp_path / "liblinear.model"
    p.write_text("solver_type L2R_L2LOSS_SVC_DUAL\nnr_class 2\n")
    with pytest.raises(ModelFileError, match="liblinear.model': not an svmopt model file"):
        load_model(p)
    q = tmp_path / "other.npz"
    np.savez(q, w=np.ones(3))
    with pytest.raises(ModelFileError, match="other.npz': not an svmopt model file"):
        load_model(q)


def test_wrong_format_name(saved):
    a = _members(saved)
    h = json.loads(a["header"].tobytes())
    h["format"] = "someone-else"
    a["header"] = np.frombuffer(json.dumps(h).encode(), np.uint8)
    _rewrite(saved, a)
    with pytest.raises(ModelFileError, match="format 'someone-else', expected 'svmopt-model'"):
        load_model(saved)


def test_newer_version_refused(saved):
    a = _members(saved)
    h = json.loads(a["header"].tobytes())
    h["version"] = VERSION + 1
    a["header"] = np.frombuffer(json.dumps(h).encode(), np.uint8)
    _rewrite(saved, a)
    with pytest.raises(ModelFileError, match=f"format version {VERSION + 1} .* upgrade svmopt"):
        load_model(saved)


@pytest.mark.parametrize("edit, reason", [
    ("weight", "checksum mismatch: the file was tampered with or corrupted"),
    ("classes", "checksum mismatch: the file was tampered with or corrupted"),
    ("header", "checksum mismatch: the file was tampered with or corrupted"),
    ("extra", r"tampered or corrupted \(unexpected member 'backdoor.npy'\)"),
    ("dropped", r"tampered or corrupted: members \['b'\] listed in the header are missing")])
def test_tampering_detected(saved, edit, reason):
    a = _members(saved)
    if edit == "weight":
        a["w"] = a["w"].copy()
        a["w"][3] += 1e-9
    elif edit == "classes":
        a["classes"] = a["classes"][::-1].copy()
    elif edit == "header":
        h = json.loads(a["header"].tobytes())
        h["C"] = 100.0
        a["header"] = np.frombuffer(json.dumps(h, sort_keys=True).encode(), np.uint8)
    elif edit == "extra":
        a["backdoor"] = np.zeros(3)
    else:
        del a["b"]
    _rewrite(saved, a)
    with pytest.raises(ModelFileError, match="heart.model': " + reason):
        load_model(saved)


def test_corrupted_bytes(saved):
    raw = bytearray(saved.read_bytes())
    at = raw.find(_members(saved)["w"].tobytes())  # np.savez stores members uncompressed
    assert at > 0
    raw[at + 21] ^= 0xFF  # one byte inside w's data: the zip CRC catches it
    saved.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match="heart.model': tampered or corrupted"):
        load_model(saved)
    saved.write_bytes(bytes(raw[: len(raw) // 2]))  # truncated
    with pytest.raises(ModelFileError, match="heart.model': tampered or corrupted"):
        load_model(saved)


def test_pickled_member_refused(saved):
    a = _members(saved)
    a["w"] = np.array([{"__reduce__": "os.system"}], dtype=object)
    _rewrite(saved, a)  # np.savez pickles it
    with pytest.raises(ModelFileError, match="tampered or corrupted.*'w.npy'"):
        load_model(saved)
    # the same with the header declaring it (refused before the checksum is looked at)
    h = json.loads(a["header"].tobytes())
    h["arrays"]["w"] = {"dtype": "|O", "shape": [1]}
    a["header"] = np.frombuffer(json.dumps(h).encode(), np.uint8)
    _rewrite(saved, a)
    with pytest.raises(ModelFileError, match="pickled Python objects are never loaded"):
        load_model(saved)


@pytest.mark.parametrize("name, key", [("heart_v1.model", None), ("poly_sparse_signed_v1.model", b"k")])
def test_files_from_the_first_writer_load(heart, name, key):
    """tests/data holds models written by the first save_model (commit 850f8a2): the
    checksum definition and the format did not change."""
    X, _ = heart
    m = load_model(Path(__file__).parent / "data" / name, key=key)
    if key is None:  # solve(X, y, C=0.7, max_iter=50) on heart_scale, float64
        assert m.status is Status.MAX_ITER and m.iterations == 50 and m.w.shape == (13,)
        assert np.mean(m.predict(X) == heart[1]) > 0.8
    else:  # polynomial(degree=2, gamma=0.5, coef0=1) on X[:5], dual_coef 0..4, b 0.25
        f = (0.5 * (X.toarray() @ X[:5].toarray().T) + 1.0) ** 2 @ np.arange(5.0) + 0.25
        np.testing.assert_allclose(m.decision_function(X), f, rtol=1e-12)


def test_unsavable_models(binary, tmp_path):
    custom = Result(w=None, b=0.0, primal_objective=1.0, dual_objective=1.0, gap=0.0, status=Status.CONVERGED,
                    iterations=1, method="alfpgm", loss="hinge", C=1.0, classes=np.array([0, 1]),
                    kernel=kernels.from_function(lambda A, B: A @ B.T, name="mine"),
                    support_vectors=np.ones((2, 3)), dual_coef=np.ones(2))
    with pytest.raises(ValueError, match="cannot save a custom kernel"):
        save_model(custom, tmp_path / "c.model")
    with pytest.raises(ValueError, match="not fitted"):
        save_model(SVMClassifier(), tmp_path / "u.model")
    with pytest.raises(TypeError, match="needs a Result"):
        save_model({"w": [1]}, tmp_path / "d.model")
    assert not list(tmp_path.iterdir())  # nothing half-written left behind
