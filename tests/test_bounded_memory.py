"""Bounded memory when reading files: a model file cannot make ``load_model`` allocate much
more than the file's own size unless ``max_bytes`` says so, while real saved models (stored or
re-zipped with deflate) still load under the default; ``load_svmlight``'s peak stays within 3x
the text it reads. Peaks are measured in a child process (VmHWM, reset before the load)."""
import io
import json
import lzma
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path

import svmopt
from svmopt import kernels, model_io
from svmopt.model_io import ModelFileError, load_model, save_model
from svmopt.multiclass import MulticlassResult
from svmopt.result import Result, Status

ROOT = Path(__file__).resolve().parents[1]
MiB = 1 << 20

# A child: "model PATH" or "svmlight PATH"; prints the outcome and its memory as JSON.
_CHILD = r"""
import json, resource, sys, time
from svmopt.io import load_svmlight
from svmopt.model_io import ModelFileError, load_model

def status(field):  # MiB
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024

what, path = sys.argv[1:3]
if what == "model":
    try:
        load_model(sys.argv[3])  # warm up: every import a load needs
    except ModelFileError:
        pass
else:
    load_svmlight(sys.argv[3])
try:  # Linux: reset the peak, so that it measures the load alone
    open("/proc/self/clear_refs", "w").write("5")
    start = status("VmRSS")
except OSError:
    start = None  # the parent subtracts an idle child's peak instead
t = time.perf_counter()
out = {}
try:
    if what == "model":
        m = load_model(path)
        out["result"] = "loaded"
    else:
        X, y = load_svmlight(path)
        out["result"] = [list(X.shape), int(X.nnz), X.indices.dtype.str, float(y.sum())]
except ModelFileError as exc:
    out["result"] = exc.reason
out["seconds"] = time.perf_counter() - t
out["peak"] = status("VmHWM") if start is not None else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["start"] = start
print(json.dumps(out))
"""


def _child(what, path, warm):
    """The child's report, with "grown": its peak over its memory before the load (MiB)."""
    run = [sys.executable, "-c", _CHILD, what, str(path), str(warm)]
    out = subprocess.run(run, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.splitlines()[-1])
    if report["start"] is None:  # no peak reset here: compare with a child that loads nothing new
        idle = subprocess.run(run[:4] + [str(warm), str(warm)], cwd=ROOT, capture_output=True, text=True,
                              timeout=600)
        report["start"] = json.loads(idle.stdout.splitlines()[-1])["peak"]
    report["grown"] = report["peak"] - report["start"]
    return report


# ---------------------------------------------------------------- model files


def _linear(w, b, **kw):
    k = np.shape(b)[0] if np.ndim(b) else None
    report = dict(primal_objective=1.0, dual_objective=1.0, gap=0.0, status=Status.CONVERGED, iterations=3)
    if k:
        report = {n: np.full(k, v, np.int32 if n in ("status", "iterations") else np.float64)
                  for n, v in report.items()}
    cls = MulticlassResult if k else Result
    return cls(w=w, b=b, method="alm", loss="hinge", C=1.0, **report, **kw)


def _deflated(path):
    """The file's members re-zipped with deflate, as np.savez_compressed writes them."""
    out = path.with_suffix(".deflated")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    return out


def _declared(path):
    with zipfile.ZipFile(path) as z:
        return sum(i.file_size for i in z.infolist())


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Models of real shapes and sparsity, saved by save_model: {name: path}."""
    d = tmp_path_factory.mktemp("models")
    rng = np.random.default_rng(0)
    Xa, ya = svmopt.load_svmlight(data_path("a1a"), n_features=123)
    Xp, yp = svmopt.load_svmlight(data_path("pendigits"), n_features=16)
    # one-vs-rest on news20's shape with l1's sparsity (97% of the weights exactly zero)
    w = np.where(rng.random((20, 62061)) < 0.03, rng.normal(size=(20, 62061)), 0).astype(np.float32)
    out = {
        "binary": _linear(rng.normal(size=123), np.float64(0.1), classes=np.array([-1.0, 1.0])),
        "ovr l1": _linear(w, rng.normal(size=20).astype(np.float32), classes=np.arange(20.0)),
        # kernel models: support vectors are training rows (pendigits' are small integers)
        "kernel sparse": Result(w=None, b=np.float64(-0.2), primal_objective=1.0, dual_objective=1.0, gap=0.0,
                                status=Status.MAX_ITER, iterations=9, method="alfpgm", loss="hinge", C=1.0,
                                classes=np.array([-1.0, 1.0]), kernel=kernels.rbf(0.05), support_vectors=Xa[:500],
                                dual_coef=rng.normal(size=500)),
        "kernel ovr dense": MulticlassResult(
            w=None, b=rng.normal(size=10), primal_objective=np.ones(10), dual_objective=np.ones(10),
            gap=np.zeros(10), status=np.zeros(10, np.int32), iterations=np.ones(10, np.int32), method="alfpgm",
            loss="hinge", C=1.0, classes=np.unique(yp), kernel=kernels.rbf(1e-4),
            support_vectors=Xp[:4000].toarray(), dual_coef=rng.normal(size=(10, 4000))),
    }
    return {name: save_model(m, d / f"{name.replace(' ', '_')}.model") for name, m in out.items()}


@pytest.mark.parametrize("name", ["binary", "ovr l1", "kernel sparse", "kernel ovr dense"])
def test_saved_models_load_under_the_default_limit(models, name):
    """Stored as save_model writes them, and deflated: the default max_bytes admits both."""
    stored = models[name]
    assert _declared(stored) <= stored.stat().st_size  # save_model stores: no larger inside than outside
    deflated = _deflated(stored)
    ref = load_model(stored)
    m = load_model(deflated)
    for k in ("w", "b", "dual_coef"):
        np.testing.assert_array_equal(getattr(m, k), getattr(ref, k))
    ratio = _declared(deflated) / deflated.stat().st_size
    print(f"{name}: {stored.stat().st_size} bytes stored, {deflated.stat().st_size} deflated, ratio {ratio:.1f}")
    if name != "binary":  # these compress: the default must leave room for that
        assert ratio > 2


def _patch_directory(raw: bytes, member: str, file_size: int) -> bytes:
    """The zip with ``member``'s uncompressed size in the central directory set to ``file_size``."""
    data = bytearray(raw)
    at = int.from_bytes(data[-6:-2], "little")  # the end record's central directory offset
    while data[at:at + 4] == b"PK\x01\x02":
        n, m, k = (int.from_bytes(data[at + o:at + o + 2], "little") for o in (28, 30, 32))
        if data[at + 46:at + 46 + n].decode() == member:
            data[at + 24:at + 28] = file_size.to_bytes(4, "little")
            return bytes(data)
        at += 46 + n + m + k
    raise AssertionError(f"no member {member}")


def _forged_header(raw: bytes, shape) -> bytes:
    """The model with w declared as ``shape`` in its header and a valid checksum; w.npy unchanged."""
    with np.load(io.BytesIO(raw)) as z:
        a = {k: z[k] for k in z.files}
    h = json.loads(a.pop("header").tobytes())
    del a["checksum"]
    h["arrays"] = {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in sorted(a.items())}
    h["arrays"]["w"]["shape"], h["n_features"] = list(shape), shape[-1]
    hb = json.dumps(h, sort_keys=True).encode()
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(hb, np.uint8),
             checksum=np.frombuffer(model_io._digest(hb, a, None).encode(), np.uint8), **a)
    return buf.getvalue()


def test_small_files_declaring_huge_arrays_are_refused_at_once(models, tmp_path):
    """1 GiB declared by a file of a few KB, in its header or in its zip directory: refused before
    anything is decompressed or allocated, the message giving the rule and the way out."""
    raw = models["binary"].read_bytes()
    header = tmp_path / "header.model"
    header.write_bytes(_forged_header(raw, (1 << 27,)))  # float64: 1 GiB
    directory = tmp_path / "directory.model"
    directory.write_bytes(_patch_directory(raw, "w.npy", 1 << 30))
    with np.load(io.BytesIO(raw)) as z:
        rest = sum(z[k].nbytes for k in z.files if k not in ("w", "header", "checksum"))
    for path, says in ((header, f"its arrays declare {(1 << 30) + rest} bytes"),
                       (directory, "its zip directory declares at least ")):
        size = path.stat().st_size
        assert size < 8192
        report = _child("model", path, models["binary"])
        reason = report["result"]
        assert reason.startswith(says), reason
        assert (f"more than max_bytes={16 << 20} (the default for a file of {size} bytes: 64 times its size, "
                f"at least {16 << 20}, at most {1 << 31}); pass a larger max_bytes= to load_model") in reason
        assert report["seconds"] < 1 and report["grown"] < 16, report
        with pytest.raises(ModelFileError, match="more than max_bytes=1000;"):  # no rule: the caller's
            load_model(path, max_bytes=1000)
    # Allowed explicitly, each gets as far as its inconsistency.
    with pytest.raises(ModelFileError, match=r"member 'w\.npy' declares \d+ bytes; <f8 \(134217728,\) needs"):
        load_model(header, max_bytes=2 << 30)
    with pytest.raises(ModelFileError, match=r"member 'w\.npy' declares 1073741824 bytes; <f8 \(123,\) needs"):
        load_model(directory, max_bytes=2 << 30)


def test_the_default_limit_grows_with_the_file(models, tmp_path):
    """64 times the file's size once that passes 16 MiB: a file of ~512 KiB (its header padded)
    may declare 28 MiB, not 40 MiB."""
    raw = models["binary"].read_bytes()
    path = tmp_path / "padded.model"
    for n_features, allowed in ((28 * MiB // 8, True), (40 * MiB // 8, False)):
        path.write_bytes(_pad_header(_forged_header(raw, (n_features,)), 512 << 10))
        assert (8 * n_features <= 64 * path.stat().st_size) == allowed
        with pytest.raises(ModelFileError) as e:
            load_model(path)
        if allowed:  # past the size limit, stopped by w.npy's real size
            assert e.value.reason.startswith("tampered or corrupted (member 'w.npy' declares"), e.value.reason
        else:
            assert f"more than max_bytes={64 * path.stat().st_size} (the default" in e.value.reason, e.value.reason


def _pad_header(raw: bytes, size: int) -> bytes:
    """The model with spaces after its header's JSON (valid JSON still, checksum recomputed),
    about ``size`` bytes in all."""
    with np.load(io.BytesIO(raw)) as z:
        a = {k: z[k] for k in z.files}
    hb = a.pop("header").tobytes() + b" " * max(size - len(raw), 0)
    del a["checksum"]
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(hb, np.uint8),
             checksum=np.frombuffer(model_io._digest(hb, a, None).encode(), np.uint8), **a)
    return buf.getvalue()


# ---------------------------------------------------------------- LIBSVM text

# Two rows as real files have them: a9a's binary features, and a row of scaled values.
LINES = (b"-1 3:1 11:1 14:1 19:1 39:1 42:1 55:1 64:1 67:1 73:1 75:1 76:1 80:1 83:1\n"
         b"+1 5:0.25 18:-0.5 33:1.5e-3 101:7 2044:0.125\n")


def _big_xz(path, text_bytes):
    """An .xz of about ``text_bytes`` of LINES repeated (a few KB on disk); returns its text size."""
    block = LINES * (MiB // len(LINES))
    with lzma.open(path, "wb", preset=1) as f:
        for _ in range(-(-text_bytes // len(block))):
            f.write(block)
    return -(-text_bytes // len(block)) * len(block)


def _check_svmlight_peak(tmp_path, text_bytes):
    path = tmp_path / "big.xz"
    size = _big_xz(path, text_bytes)
    small = tmp_path / "small.xz"
    _big_xz(small, 1)
    report = _child("svmlight", path, small)
    pairs = size // len(LINES)
    assert report["result"] == [[2 * pairs, 2044], 19 * pairs, "<i4", 0.0], report
    assert report["grown"] <= 3 * size / MiB, (report, size / MiB)
    return report


def test_svmlight_peak_within_3x_the_text(tmp_path):
    _check_svmlight_peak(tmp_path, 30 * MiB)


@pytest.mark.slow
def test_svmlight_peak_within_3x_the_text_300mb(tmp_path):
    _check_svmlight_peak(tmp_path, 300 * MiB)


def test_svmlight_int64_past_int32_entries(monkeypatch):
    """Past 2**31 - 1 entries the row pointers widen to int64 (once, mid-file), the indices with
    them; shown with a small threshold, over many chunks. (scipy narrows both back to int32 here,
    where the values fit.)"""
    from svmopt.io import libsvm

    text = LINES * 500
    X32, y32 = svmopt.load_svmlight(io.BytesIO(text))
    given, real = [], sp.csr_matrix

    def csr(parts, shape):
        given.append([a.dtype for a in parts])
        return real(parts, shape=shape)

    monkeypatch.setattr(libsvm, "_MAX_INT32", 5000)
    monkeypatch.setattr(libsvm, "_CHUNK", 4096)
    monkeypatch.setattr(libsvm.sp, "csr_matrix", csr)
    X, y = svmopt.load_svmlight(io.BytesIO(text))
    assert given == [[np.float64, np.int64, np.int64]] and X32.indptr.dtype == np.int32
    assert X.nnz == 19 * 500 and (X != X32).nnz == 0 and np.array_equal(y, y32)
    assert X.has_sorted_indices and np.array_equal(X.indptr, X32.indptr)
