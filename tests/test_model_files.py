"""Reliability battery for model files: whatever its bytes, a file either loads as exactly
the model that was saved or raises ModelFileError (never another exception), and
svmopt-predict then prints one line on stderr. Byte flips, truncations, members added or
replaced, schema violations under a valid recomputed checksum, and zip bombs, whose load
must stay in bounded memory (peak RSS measured in a child process).

The fast run samples flip and truncation positions and uses a 256 MiB bomb; the
``slow`` tests try every position and a 2 GiB bomb (the size first measured to cost
6.45 GB and 24 s)."""
import io
import json
import random
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import data_path

import svmopt
from svmopt import kernels, model_io
from svmopt.cli import predict_main
from svmopt.model_io import ModelFileError, load_model, save_model
from svmopt.result import Result, Status

KEY = b"battery key"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def heart():
    return svmopt.load_svmlight(data_path("heart_scale"))


@pytest.fixture(scope="module")
def targets(heart, tmp_path_factory):
    """Two real files: a linear model trained on heart_scale, and a signed kernel model with
    sparse support vectors (heart rows). {name: (bytes, key, the loaded model)}."""
    X, y = heart
    d = tmp_path_factory.mktemp("targets")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        linear = svmopt.solve(X, y, C=0.7, dtype="float64")  # the compilation test_model_io uses
    kernel = Result(w=None, b=np.float64(-0.1), primal_objective=2.0, dual_objective=1.5, gap=0.5,
                    status=Status.MAX_ITER, iterations=9, method="alfpgm", loss="hinge", C=1.0,
                    classes=np.array([-1.0, 1.0]), kernel=kernels.rbf(0.3), support_vectors=X[:12],
                    dual_coef=np.random.default_rng(1).normal(size=12))
    out = {}
    for name, model, key in (("linear", linear, None), ("kernel", kernel, KEY)):
        p = save_model(model, d / f"{name}.model", key=key)
        out[name] = p.read_bytes(), key, load_model(p, key=key)
    return out


def _same(m, ref):
    """m is the model ref is: same type, header, arrays (values and dtypes)."""
    if type(m) is not type(ref) or m.extras["header"] != ref.extras["header"]:
        return False
    for k in ("w", "b", "classes", "dual_coef", *model_io._REPORT):
        a, b = getattr(m, k), getattr(ref, k)
        if (a is None) != (b is None):
            return False
        if a is not None and not (np.asarray(a).dtype == np.asarray(b).dtype and np.array_equal(a, b)):
            return False
    sa, sb = m.support_vectors, ref.support_vectors
    if sa is None or sb is None:
        return sa is sb
    return sp.issparse(sa) == sp.issparse(sb) and np.array_equal(sp.csr_matrix(sa).toarray(),
                                                                  sp.csr_matrix(sb).toarray())


def _outcome(path, data, key, ref):
    """'same' (loaded, identical to ref), 'refused' (ModelFileError) or 'CRASH ...'."""
    path.write_bytes(data)
    try:
        m = load_model(path, key=key)
    except ModelFileError:
        return "refused"
    except Exception as exc:  # noqa: BLE001 - that is what the battery looks for
        return f"CRASH {type(exc).__name__}: {exc}"
    return "same" if _same(m, ref) else "CRASH: loaded a different model"


def _predict_says_one_line(path, heart_file, tmp_path, capsys):
    assert predict_main([str(heart_file), str(path), str(tmp_path / "out.txt")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("svmopt-predict: error: model file") and err.count("\n") == 1, err


# ---------------------------------------------------------------- byte flips, truncations


def _flip_positions(n, sample):
    """All positions, or a deterministic sample that always covers the zip end record."""
    if sample is None:
        return range(n)
    return sorted(set(random.Random(n).sample(range(n), sample)) | set(range(n - 22, n)))


def _data_bytes(raw):
    """Positions of the members' stored bytes (where the model's content lives)."""
    inside = set()
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        for info in zf.infolist():
            at = info.header_offset
            start = at + 30 + sum(int.from_bytes(raw[at + k:at + k + 2], "little") for k in (26, 28))
            inside.update(range(start, start + info.compress_size))
    return inside


def _run_flips(targets, tmp_path, sample):
    """Every flip loads the same model or is refused; flips in the members' data always are.
    (Flips that load hit fields zipfile does not use: times, zip64 placeholders, attributes.)"""
    counts, crashes = {}, []
    for name, (raw, key, ref) in targets.items():
        content = _data_bytes(raw)
        for pos in _flip_positions(len(raw), sample):
            for mask in (0x01, 0x80, 0xFF):
                data = bytearray(raw)
                data[pos] ^= mask
                got = _outcome(tmp_path / "flip.model", bytes(data), key, ref)
                counts[got] = counts.get(got, 0) + 1
                if got.startswith("CRASH") or (pos in content and got != "refused"):
                    crashes.append((name, pos, mask, got))
    assert not crashes, crashes[:10]
    assert counts["refused"] > counts.get("same", 0)
    return counts


def test_byte_flips_sample(targets, tmp_path, heart, capsys):
    _run_flips(targets, tmp_path, sample=60)
    raw = bytearray(targets["linear"][0])
    raw[len(raw) // 2] ^= 0xFF
    (tmp_path / "flip.model").write_bytes(bytes(raw))
    _predict_says_one_line(tmp_path / "flip.model", data_path("heart_scale"), tmp_path, capsys)


@pytest.mark.slow
def test_byte_flips_every_position(targets, tmp_path):
    _run_flips(targets, tmp_path, sample=None)


def _run_truncations(targets, tmp_path, step):
    for name, (raw, key, ref) in targets.items():
        for n in sorted(set(range(0, len(raw), step)) | set(range(len(raw) - 30, len(raw)))):
            assert _outcome(tmp_path / "cut.model", raw[:n], key, ref) == "refused", (name, n)


def test_truncations_sample(targets, tmp_path, capsys):
    _run_truncations(targets, tmp_path, step=23)
    (tmp_path / "cut.model").write_bytes(targets["linear"][0][:1000])
    _predict_says_one_line(tmp_path / "cut.model", data_path("heart_scale"), tmp_path, capsys)


@pytest.mark.slow
def test_truncations_every_length(targets, tmp_path):
    _run_truncations(targets, tmp_path, step=1)


# ---------------------------------------------------------------- members added or replaced


def _members(raw):
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        return [(i.filename, zf.read(i)) for i in zf.infolist()]


def _zip(members, method=zipfile.ZIP_STORED, comment=b""):
    """A zip of (name, bytes) or (name, bytes, compression method) members."""
    buf = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buf, "w") as zf:
        warnings.simplefilter("ignore")  # "Duplicate name": wanted here
        for name, data, *how in members:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = how[0] if how else method
            zf.writestr(info, data)
        zf.comment = comment
    return buf.getvalue()


def _npy(array=None, header=None, data=b""):
    """.npy bytes of an array, or of a hand-made header dict followed by ``data``."""
    buf = io.BytesIO()
    if array is not None:
        np.lib.format.write_array(buf, array, allow_pickle=True)
    else:
        np.lib.format.write_array_header_1_0(buf, header)
        buf.write(data)
    return buf.getvalue()


def _replace(raw, name, data, method=None):
    return _zip([(n, data if n == name else d, *([method] if method and n == name else []))
                 for n, d in _members(raw)])


def _set_flags(raw, name, flags):
    """Set the general-purpose flag bits of member ``name`` (local and central headers)."""
    data = bytearray(raw)
    with zipfile.ZipFile(io.BytesIO(raw)) as zf:
        local = zf.getinfo(name).header_offset
    central = int.from_bytes(data[-6:-2], "little")  # the end record's directory offset
    while data[central + 46:central + 46 + len(name) + 1] != name.encode() + b"P":  # name, then next entry
        sizes = [int.from_bytes(data[central + k:central + k + 2], "little") for k in (28, 30, 32)]
        central += 46 + sum(sizes)
    data[local + 6:local + 8] = flags.to_bytes(2, "little")
    data[central + 8:central + 10] = flags.to_bytes(2, "little")
    return bytes(data)


def _many_members(raw, n):
    return _zip(_members(raw) + [(f"x{i}.npy", b"") for i in range(n)])


W_SIZE = 13 * 8  # heart: w is 13 float64


INJECTIONS = {
    # name: (make(raw, members) -> bytes, expected reason)
    "extra member": (lambda raw, m: _zip(m + [("payload.npy", _npy(np.zeros(3)))]),
                     r"unexpected member 'payload.npy'"),
    "extra known member": (lambda raw, m: _zip(m + [("sv.npy", _npy(np.zeros((2, 13))))]),
                           r"members \['sv'\] are not in the header's list"),
    "duplicate w": (lambda raw, m: _zip(m + [("w.npy", _npy(np.ones(13)))]), r"member 'w.npy' appears twice"),
    "directory entry": (lambda raw, m: _zip(m + [("w.npy/", b"")]), r"unexpected member 'w.npy/'"),
    "path member": (lambda raw, m: _zip(m + [("../w.npy", _npy(np.ones(13)))]), r"unexpected member '../w.npy'"),
    "no header": (lambda raw, m: _zip([x for x in m if x[0] != "header.npy"]), r"not an svmopt model file"),
    "no checksum": (lambda raw, m: _zip([x for x in m if x[0] != "checksum.npy"]), r"no checksum member"),
    "b dropped": (lambda raw, m: _zip([x for x in m if x[0] != "b.npy"]), r"members \['b'\] listed .* missing"),
    "bzip2 member": (lambda raw, m: _replace(raw, "w.npy", dict(m)["w.npy"], zipfile.ZIP_BZIP2),
                     r"member 'w.npy' uses zip compression method 12"),
    "lzma member": (lambda raw, m: _replace(raw, "w.npy", dict(m)["w.npy"], zipfile.ZIP_LZMA),
                    r"compression method 14"),
    "encrypted flag": (lambda raw, m: _set_flags(raw, "w.npy", 0x1), r"zip flags 0x1 \(encrypted"),
    "w as float32": (lambda raw, m: _replace(raw, "w.npy", _npy(np.ones(13, np.float32))),
                     r"member 'w.npy' holds <f4 \(13,\), the header says <f8 \(13,\)"),
    "w as 2000 floats": (lambda raw, m: _replace(raw, "w.npy", _npy(np.ones(2000))),
                         r"member 'w.npy' declares 16128 bytes; <f8 \(13,\) needs 104"),
    "w pickled": (lambda raw, m: _replace(raw, "w.npy", _npy(np.array([{"x": 1}] * 13, dtype=object))),
                  r"member 'w.npy'"),
    "w huge npy shape": (lambda raw, m: _replace(raw, "w.npy", _npy(
        header={"descr": "<f8", "fortran_order": False, "shape": (10**12,)}, data=bytes(W_SIZE))),
        r"member 'w.npy': .npy header <f8 \(1000000000000,\) does not match"),
    "w other shape": (lambda raw, m: _replace(raw, "w.npy", _npy(
        header={"descr": "<f8", "fortran_order": False, "shape": (1, 13)}, data=bytes(W_SIZE))),
        r"member 'w.npy' holds <f8 \(1, 13\), the header says <f8 \(13,\)"),
    "w fortran": (lambda raw, m: _replace(raw, "w.npy", _npy(
        header={"descr": "<f8", "fortran_order": True, "shape": (13,)}, data=bytes(W_SIZE))), r"Fortran order"),
    "w bad npy header": (lambda raw, m: _replace(raw, "w.npy", _npy(
        header={"descr": "<f8", "fortran_order": False, "shape": (13,)}, data=bytes(W_SIZE)).replace(
            b"'shape'", b"'shapf'")), r"ValueError: Header does not contain the correct keys"),
    "w npy header 2 GiB": (lambda raw, m: _replace(raw, "w.npy", dict(m)["w.npy"][:6] + b"\x02\x00"
                                                + (2**31).to_bytes(4, "little") + dict(m)["w.npy"][12:]),
                           r"member 'w.npy' states a .npy header of 2147483648 bytes"),
    "w npy version 3": (lambda raw, m: _replace(raw, "w.npy", dict(m)["w.npy"].replace(
        b"NUMPY\x01\x00", b"NUMPY\x03\x00", 1)), r"\.npy version \(3, 0\)"),
    "w changed": (lambda raw, m: _replace(raw, "w.npy", _npy(np.ones(13))), r"checksum mismatch"),
    "header float": (lambda raw, m: _replace(raw, "header.npy", _npy(np.ones(5))), r"expected a uint8 vector"),
    "header 2 MB": (lambda raw, m: _replace(raw, "header.npy", _npy(np.full(2 << 20, 32, np.uint8))),
                    r"member 'header.npy' declares \d+ bytes; at most 1048576"),
    "zip comment": (lambda raw, m: _zip(m, comment=b"hello"), r"does not end with a zip end record"),
    "trailing bytes": (lambda raw, m: raw + b"\0" * 10, r"does not end with a zip end record"),
    "leading bytes": (lambda raw, m: b"#!/bin/sh\n" + raw, r"not an svmopt model file"),
    "10000 entries": (lambda raw, m: _many_members(raw, 10000), r"zip directory lists 100\d\d entries"),
    "empty zip": (lambda raw, m: _zip([]), r"not an svmopt model file"),
}


@pytest.mark.parametrize("case", INJECTIONS, ids=list(INJECTIONS))
def test_member_injection_and_replacement(targets, tmp_path, capsys, case):
    raw, key, ref = targets["linear"]
    make, reason = INJECTIONS[case]
    p = tmp_path / "m.model"
    p.write_bytes(make(raw, _members(raw)))
    with pytest.raises(ModelFileError, match=r"m\.model': .*" + reason):
        load_model(p)
    _predict_says_one_line(p, data_path("heart_scale"), tmp_path, capsys)


def test_rezipped_members_still_load(targets, tmp_path):
    """Controls for the cases above: the same members re-zipped (stored, or deflated as
    np.savez_compressed would) are the same model."""
    for name, (raw, key, ref) in targets.items():
        for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            assert _outcome(tmp_path / "z.model", _zip(_members(raw), method), key, ref) == "same"


# ---------------------------------------------------------------- schema forgeries


def _forge(raw, key=None, header=None, arrays=None, text=None):
    """The file with edits and a checksum recomputed by svmopt's own digest (so valid: anyone
    can do this to a plain-SHA-256 file). The header's array list follows the arrays, then
    ``header(h)`` may edit it; ``text(h)`` may replace the JSON serialization."""
    with np.load(io.BytesIO(raw)) as z:
        a = {k: z[k] for k in z.files}
    h = json.loads(a.pop("header").tobytes())
    del a["checksum"]
    if arrays:
        arrays(a)
    h["arrays"] = {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in sorted(a.items())}
    if header:
        header(h)
    hb = text(h) if text else json.dumps(h, sort_keys=True).encode()
    checksum = model_io._digest(hb, a, key).encode()
    buf = io.BytesIO()
    np.savez(buf, header=np.frombuffer(hb, np.uint8), checksum=np.frombuffer(checksum, np.uint8), **a)
    return buf.getvalue()


def _set(**kv):
    return lambda h: h.update(kv)


def _drop(k):
    return lambda h: h.pop(k)


def _put(name, value):
    def edit(a):
        a[name] = np.asarray(value)
    return edit


def _nested(depth):
    return lambda h: json.dumps(dict(h, estimator=None), sort_keys=True).replace(
        '"estimator": null', '"estimator": ' + "[" * depth + "]" * depth).encode()


def _as_ovr(a):
    """A consistent two-class one-vs-rest model made of the binary one (a valid control)."""
    a["w"] = np.stack([-a["w"], a["w"]])
    for k in ("b", *model_io._REPORT):
        a[k] = np.stack([a[k], a[k]])


FORGERIES = {
    # name: (target, header edit, arrays edit, text, expected reason); "" = must load
    "control": ("linear", None, None, None, ""),
    "control ovr": ("linear", _set(kind="ovr"), _as_ovr, None, ""),
    "control big-endian w": ("linear", None, lambda a: a.update(w=a["w"].astype(">f8")), None, ""),
    "control kernel": ("kernel", None, None, None, ""),
    "kind missing": ("linear", _drop("kind"), None, None, r"header fields \['kind'\] are missing or unexpected"),
    "extra field": ("linear", _set(exec="rm -rf /"), None, None, r"header fields \['exec'\]"),
    "kind ovr": ("linear", _set(kind="ovr"), None, None, r"b has shape \(\); expected \(2,\)"),
    "kind other": ("linear", _set(kind="ovx"), None, None,
                   r"kind 'ovx' is not one of 'binary', 'ovr', 'ovo', 'crammer_singer', 'regression', 'oneclass'"),
    "kind regression with classes": ("linear", _set(kind="regression"), None, None,
                                     r"a regression linear model has arrays"),
    "kind ovo linear": ("linear", _set(kind="ovo"), None, None, r"a one-vs-one model is a kernel model, not 'linear'"),
    "model kernel": ("linear", _set(model="kernel"), None, None, r"a kernel model with kernel None"),
    "kernel os.system": ("kernel", lambda h: h["kernel"].update(name="os.system"), None, None,
                         r"kernel \{'name': 'os.system'.* is not one of"),
    "kernel gamma < 0": ("kernel", lambda h: h["kernel"]["params"].update(gamma=-1.0), None, None,
                         r"rbf needs a finite gamma > 0"),
    "kernel gamma text": ("kernel", lambda h: h["kernel"]["params"].update(gamma="1"), None, None,
                          r"finite parameters"),
    "kernel extra param": ("kernel", lambda h: h["kernel"]["params"].update(degree=2), None, None,
                           r"finite parameters"),
    "status 99": ("linear", None, _put("status", 99), None, r"status 99 is not a status code"),
    "status float": ("linear", None, _put("status", 0.0), None, r"array 'status' has dtype '<f8'"),
    "iterations < 0": ("linear", None, _put("iterations", -5), None, r"iterations are negative"),
    "nested header": ("linear", None, None, _nested(100_000), r"the header nests 100001 deep"),
    "nested header 17": ("linear", None, None, _nested(16), r"the header nests 17 deep; at most 16"),
    "header not object": ("linear", None, None, lambda h: b"[1, 2]", r"not an svmopt model file \(format None"),
    "header not utf-8": ("linear", None, None, lambda h: json.dumps(h).encode().replace(b"hinge", b"hing\xff"),
                         r"the header is not UTF-8"),
    "header bad JSON": ("linear", None, None, lambda h: json.dumps(h).encode()[:-1], r"not valid JSON"),
    "duplicate key": ("linear", None, None, lambda h: json.dumps(h).encode()[:-1] + b', "kind": "ovr"}',
                      r"duplicate key 'kind'"),
    "version true": ("linear", _set(version=True), None, None, r"bad format version True"),
    "version 1.0": ("linear", _set(version=1.0), None, None, r"bad format version 1.0"),
    "version 0": ("linear", _set(version=0), None, None, r"bad format version 0"),
    "version 2": ("linear", _set(version=2), None, None, r"format version 2 .* upgrade svmopt"),
    "mac none": ("linear", _set(mac="none"), None, None, r"mac 'none' is not"),
    "format other": ("linear", _set(format="npz"), None, None, r"not an svmopt model file \(format 'npz'"),
    "n_features bool": ("linear", _set(n_features=True), None, None, r"n_features True is not"),
    "n_features 14": ("linear", _set(n_features=14), None, None, r"w has shape \(13,\); expected \(14,\)"),
    "w shape": ("linear", None, lambda a: a.update(w=a["w"][:12]), None, r"w has shape \(12,\); expected \(13,\)"),
    "w 2-d binary": ("linear", None, lambda a: a.update(w=a["w"][None]), None, r"w has shape \(1, 13\)"),
    "w int": ("linear", None, lambda a: a.update(w=a["w"].astype(np.int64)), None, r"array 'w' has dtype '<i8'"),
    "w nan converged": ("linear", None, lambda a: a.update(w=np.full(13, np.nan)), None, r"w holds nan or inf"),
    # whatever the status: a model with nan weights would make predict blame X
    "w nan nonfinite": ("linear", None, lambda a: (a["w"].__setitem__(4, np.nan), _put("status", 3)(a)), None,
                        r"invalid model: w holds nan or inf"),
    "b inf max_iter": ("linear", None, lambda a: (_put("b", np.inf)(a), _put("status", 1)(a)), None,
                       r"invalid model: b holds nan or inf"),
    "dual_coef nan": ("kernel", None, lambda a: a["dual_coef"].__setitem__(3, np.nan), None,
                      r"invalid model: dual_coef holds nan or inf"),
    "sv_data -inf": ("kernel", None, lambda a: a["sv_data"].__setitem__(0, -np.inf), None,
                     r"invalid model: sv_data holds nan or inf"),
    "b 1-d": ("linear", None, lambda a: a.update(b=a["b"][None]), None, r"b has shape \(1,\); expected \(\)"),
    "classes equal": ("linear", None, _put("classes", [1.0, 1.0]), None, r"are not 2 distinct labels"),
    "classes three": ("linear", None, _put("classes", [1.0, 2.0, 3.0]), None, r"are not 2 distinct labels"),
    "classes inf": ("linear", None, _put("classes", [1.0, np.inf]), None, r"classes are not finite"),
    "ovr classes mismatch": ("linear", _set(kind="ovr"), lambda a: (_as_ovr(a), _put("classes", [1, 2, 3])(a)),
                             None, r"b has shape \(2,\); expected \(3,\)"),
    "linear with sv": ("linear", None, _put("sv", np.zeros((2, 13))), None, r"a binary linear model has arrays"),
    "unknown array": ("linear", None, _put("backdoor", [1.0]), None, r"unexpected member 'backdoor.npy'"),
    "unknown array declared": ("linear", lambda h: h["arrays"].update(backdoor=h["arrays"]["b"]), None, None,
                               r"unknown array 'backdoor'"),
    "object dtype declared": ("linear", lambda h: h["arrays"]["w"].update(dtype="|O"), None, None,
                              r"pickled Python objects are never loaded"),
    "odd dtype": ("linear", lambda h: h["arrays"]["w"].update(dtype="(2,)<f8"), None, None,
                  r"array 'w' has dtype"),
    "negative shape": ("linear", lambda h: h["arrays"]["w"].update(shape=[-1]), None, None,
                       r"array 'w': .* is not"),
    "3-d shape": ("linear", lambda h: h["arrays"]["w"].update(shape=[1, 1, 13]), None, None,
                  r"array 'w': .* is not"),
    "huge shape": ("linear", lambda h: (h.update(n_features=2**40), h["arrays"]["w"].update(shape=[2**40])),
                   None, None, r"declare 8796093022\d+ bytes, more than max_bytes"),
    "intercept_scaling < 0": ("linear", _set(intercept_scaling=-1), None, None, r"intercept_scaling -1 is not"),
    "C list": ("linear", _set(C=[1, 2]), None, None, r"C \[1, 2\] is not a number or string"),
    "reg number": ("linear", _set(reg=5), None, None, r"reg 5 is not a string"),
    "method null": ("linear", _set(method=None), None, None, r"method None is not a string"),
    "estimator list": ("linear", _set(estimator=[1]), None, None, r"estimator is not an object"),
    "sv_indptr decreasing": ("kernel", None, lambda a: a["sv_indptr"].__setitem__(3, 10**6), None,
                             r"indptr is not 0 \.\. nnz non-decreasing"),
    "sv_indices out of range": ("kernel", None, lambda a: a["sv_indices"].__setitem__(0, 13), None,
                                r"column index is out of range"),
    "sv_shape missing": ("kernel", _drop("sv_shape"), None, None, r"header fields \['sv_shape'\]"),
    "sv_shape wrong": ("kernel", _set(sv_shape=[12, 14]), None, None, r"sparse support vectors: sv_shape"),
    "dual_coef shape": ("kernel", None, lambda a: a.update(dual_coef=a["dual_coef"][:5]), None,
                        r"dual_coef has shape \(5,\); expected \(12,\)"),
}


@pytest.mark.parametrize("case", FORGERIES, ids=list(FORGERIES))
def test_schema_forgeries_with_valid_checksum(targets, tmp_path, capsys, case):
    target, header, arrays, text, reason = FORGERIES[case]
    raw, key, ref = targets[target]
    p = tmp_path / "forged.model"
    p.write_bytes(_forge(raw, key, header, arrays, text))
    if not reason:  # controls: the forging itself yields loadable files
        X, _ = svmopt.load_svmlight(data_path("heart_scale"))
        f = load_model(p, key=key).decision_function(X)
        np.testing.assert_allclose(f[:, -1] if f.ndim == 2 else f, ref.decision_function(X), rtol=1e-12)
        return
    with pytest.raises(ModelFileError, match=r"forged\.model': .*" + reason):
        load_model(p, key=key)
    if key is None:
        _predict_says_one_line(p, data_path("heart_scale"), tmp_path, capsys)


def test_save_refuses_what_load_would_refuse(targets, tmp_path):
    ref = targets["linear"][2]
    bad = Result(w=np.ones(3), b=0.0, primal_objective=1.0, dual_objective=1.0, gap=0.0, status=Status.CONVERGED,
                 iterations=1, method="m", loss="hinge", C=1.0, classes=np.array([1.0, 1.0]))
    with pytest.raises(ModelFileError, match="are not 2 distinct labels"):
        save_model(bad, tmp_path / "bad.model")
    assert not list(tmp_path.iterdir())
    assert _same(load_model(save_model(ref, tmp_path / "again.model")), ref)


# ---------------------------------------------------------------- zip bombs


_CHILD = r"""
import json, resource, sys, time
from svmopt.model_io import ModelFileError, load_model

def rss(field):  # MiB; VmHWM is the peak since the last reset
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field)) / 1024

try:  # Linux: reset the peak before each load, so a load below the import-time peak shows too
    open("/proc/self/clear_refs", "w").write("5")
    rss("VmHWM")
    def start():
        open("/proc/self/clear_refs", "w").write("5")
        return rss("VmRSS")
    def peak():
        return rss("VmHWM")
except OSError:  # elsewhere: getrusage's lifetime peak, which the imports may already have raised
    def peak():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB
    start = peak

load_model(sys.argv[1])  # warm up: every import a load needs
cases = []
for arg in sys.argv[2:]:
    path, max_bytes = arg.rsplit(":", 1)
    base, t = start(), time.perf_counter()
    try:
        load_model(path, max_bytes=None if max_bytes == "default" else int(max_bytes))
        reason = "loaded"
    except ModelFileError as exc:
        reason = exc.reason
    cases.append({"reason": reason, "seconds": time.perf_counter() - t, "grown": peak() - base})
print(json.dumps(cases))
"""


def _write_bombs(raw, folder, n):
    """Model files carrying ``n`` zero bytes deflated (about n/230 on disk), written streaming.

    extra:    a valid model plus a member "bomb.npy"
    w:        w.npy replaced by a float64 (n/8,) member, the header unchanged
    declared: the header also declares w (n/8,) (checksum left stale: found only by reading)
    forged:   as declared, with a valid recomputed checksum, loaded with max_bytes < n
    """
    members = _members(raw)
    with np.load(io.BytesIO(raw)) as z:
        arrays = {k: z[k] for k in z.files}
    h = json.loads(arrays.pop("header").tobytes())
    del arrays["checksum"]
    h["arrays"]["w"]["shape"], h["n_features"] = [n // 8], n // 8
    big = json.dumps(h, sort_keys=True).encode()
    hasher = model_io._hasher(None)
    hasher.update(big)
    for name in sorted(arrays):  # the forged checksum, streaming n zero bytes through SHA-256
        shape = (n // 8,) if name == "w" else arrays[name].shape
        hasher.update(model_io._tag(name, arrays[name].dtype.str, shape))
        if name != "w":
            hasher.update(arrays[name].tobytes())
        else:
            for _ in range(n >> 20):
                hasher.update(bytes(1 << 20))
    replace = {
        "extra": {},
        "w": {"w.npy": None},
        "declared": {"w.npy": None, "header.npy": _npy(np.frombuffer(big, np.uint8))},
        "forged": {"w.npy": None, "header.npy": _npy(np.frombuffer(big, np.uint8)),
                   "checksum.npy": _npy(np.frombuffer(hasher.hexdigest().encode(), np.uint8))},
    }
    paths = {}
    for case, swap in replace.items():
        paths[case] = folder / f"bomb_{case}.model"
        with zipfile.ZipFile(paths[case], "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
            for name, data in members:
                if swap.get(name, data) is not None:  # None: replaced by the bomb
                    zf.writestr(name, swap.get(name, data))
            with zf.open("bomb.npy" if case == "extra" else "w.npy", "w", force_zip64=True) as f:
                f.write(BOMB_HEADER(n))
                zero = bytes(1 << 20)
                for _ in range(n >> 20):
                    f.write(zero)
    return paths


def BOMB_HEADER(n):
    return _npy(header={"descr": "<f8", "fortran_order": False, "shape": (n // 8,)})


def _bomb_battery(targets, tmp_path, n):
    raw = targets["linear"][0]
    paths = _write_bombs(raw, tmp_path, n)
    honest = tmp_path / "honest.model"
    honest.write_bytes(raw)
    assert max(p.stat().st_size for p in paths.values()) < n // 100  # they are bombs
    caps = {"extra": model_io.MAX_BYTES, "w": model_io.MAX_BYTES, "declared": model_io.MAX_BYTES, "forged": n // 2}
    cases = [f"{paths[c]}:{caps[c]}" for c in paths] + [f"{paths['forged']}:default"]
    out = subprocess.run([sys.executable, "-c", _CHILD, str(honest), *cases],
                         cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout)
    reasons = [c["reason"] for c in report]
    assert "unexpected member 'bomb.npy'" in reasons[0]
    assert f"member 'w.npy' declares {n + len(BOMB_HEADER(n))} bytes; <f8 (13,) needs 104" in reasons[1]
    assert reasons[2] == "checksum mismatch: the file was tampered with or corrupted"  # read all n bytes, streaming
    assert f"more than max_bytes={n // 2}" in reasons[3]
    # The same forged file, valid checksum and all, under the default max_bytes: refused from
    # its size on disk (~n/230) by its zip directory alone, before anything is decompressed.
    size = paths["forged"].stat().st_size
    assert reasons[4].startswith("its zip directory declares at least "), reasons[4]
    assert (f"bytes, more than max_bytes={max(64 * size, 16 << 20)} (the default for a file of {size} bytes: "
            "64 times its size") in reasons[4], reasons[4]
    assert "pass a larger max_bytes= to load_model" in reasons[4]
    assert report[4]["seconds"] < 1 and report[4]["grown"] < 20, report[4]
    assert max(c["grown"] for c in report) < 200, report  # MiB: the n bytes were never held in memory
    return report


def test_zip_bombs_load_in_bounded_memory(targets, tmp_path):
    _bomb_battery(targets, tmp_path, 256 << 20)


@pytest.mark.slow
def test_zip_bombs_2gib(targets, tmp_path):
    _bomb_battery(targets, tmp_path, (2 << 30) - (64 << 20))  # declared w stays under MAX_BYTES
