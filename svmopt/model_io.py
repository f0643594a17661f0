"""Save and load trained models: a documented, versioned file format without pickle.

A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays, written by
``np.savez``; never pickled objects, so loading never runs code). It holds these members:

  header     uint8   UTF-8 JSON, see below
  checksum   uint8   ASCII hex SHA-256 (or HMAC-SHA256 with a key) of the payload
  w          float   (d,) binary or regression / (K, d) one-vs-rest    linear models
  b          float   () / (K,) / (P,)
  classes    any     (2,) binary (negative, positive) / (K,)   numbers, booleans or strings; none in a regression
  sv         float   (n_sv, d) dense support vectors          kernel models, or
  sv_data, sv_indices, sv_indptr                              the same as CSR parts
  dual_coef  float   (n_sv,) / (K, n_sv) / (P, n_sv): alpha_i y_i
  primal_objective, dual_objective, gap, status, iterations   () / (K,) / (P,): the solve's report
  prob_A, prob_B  float  () / (K,) / (P,): Platt's sigmoids (``svmopt.probability``), optional,
             both or neither: one per model, class (one-vs-rest) or pair (one-vs-one)

A precomputed-kernel model (kernel "precomputed", LIBSVM's -t 4) stores its support vectors as
their training row indices, sv (n_sv, 1), and n_features is its number of training rows n (the
columns K(test, train) has); its kernel parameter is that n.

A Crammer-Singer model (kind "crammer_singer", ``solve_multiclass(strategy="crammer_singer")``) is
linear with w (K, d) and b (K,) as one-vs-rest, and its report () (one joint problem).

One-vs-one kernel models (kind "ovo", ``svmopt.multiclass_kernel.OvOModel``) have K >= 2 classes
and P = K(K-1)/2 pair problems in LIBSVM's order (0/1, 0/2, ..., 1/2, ...), which the
reader derives from K; pair (i, j) votes classes[i] when its decision value is > 0.
Regression models (kind "regression", a ``RegressionResult``: predict is the decision value) and
one-class models (kind "oneclass", a ``OneClassResult``: predict is +1 / -1, b = -rho) have the
binary model's arrays without classes.

Header (JSON object), format version 1:

  format "svmopt-model", version 1, svmopt_version, kind "binary" | "ovr" | "ovo" | "crammer_singer" |
  "regression" | "oneclass",
  model "linear" | "kernel", n_features, method, loss (its repr, e.g. "lp_hinge(p=1.5)"),
  reg (repr or null), C, intercept_scaling (null: free intercept), kernel
  ({"name", "params"} or null), estimator (an SVMClassifier's parameters or null),
  mac ("sha256" or "hmac-sha256"), arrays ({name: {"dtype", "shape"}}: exactly the
  array members present), sv_shape ([n_sv, d], only with sparse support vectors).

The payload digested by the checksum is the header bytes followed, for each array
in sorted name order, by its name, dtype, shape and C-order bytes. A changed byte,
a dropped or added array fails the check. A plain SHA-256 detects corruption and
careless edits; anyone can recompute it, so for files from untrusted places save
with ``key=`` (HMAC-SHA256, the same key needed to load). Readers accept any
version up to their own and refuse newer ones.

What ``load_model`` guarantees, for any file whatever its bytes: it returns a model
that satisfies the schema above, or raises ``ModelFileError`` saying what is wrong.
Nothing is decompressed before the zip directory has been checked (only the expected
members, stored or deflated, each declaring exactly the size its header entry implies,
all together at most ``max_bytes``: by default 64 times the file's size, see ``load_model``);
the JSON header is size- and depth-limited; the checksum is computed while streaming the
members, before any array is allocated, so memory stays within the size the header declares
(plus one 1 MiB chunk). Only then are the arrays read (and digested again: the file may
change in between) and the schema checked: names from closed sets, status codes, shapes
consistent with each other, finite weights, coefficients and support vectors.
"""
from __future__ import annotations

import hmac
import json
import math
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .io.archive import FORMAT, ModelFileError, check_members, check_size, digest as _digest, \
    least_data_bytes, open_archive, scan, small_member
from .io.archive import hasher as _hasher, tag as _tag  # noqa: F401 - forging tests use model_io's names
from .result import OneClassResult, RegressionResult, Result, Status

__all__ = ["save_model", "load_model", "ModelFileError", "FORMAT", "VERSION", "MAX_BYTES"]

VERSION = 1
"""The format version this svmopt writes (and the newest it reads)."""
MAX_BYTES = 1 << 31
"""The most load_model's default ``max_bytes`` allows, whatever the file's size (2 GiB)."""
# load_model's default max_bytes: this many times the file's size, at least _MIN_BYTES (see load_model)
_RATIO, _MIN_BYTES = 64, 16 << 20
_REPORT = ("primal_objective", "dual_objective", "gap", "status", "iterations")
# Array members and the dtype kinds each may have (never "O": no pickles).
_KINDS = {"w": "f", "b": "f", "sv": "f", "sv_data": "f", "dual_coef": "f", "primal_objective": "f",
          "dual_objective": "f", "gap": "f", "status": "iu", "iterations": "iu", "sv_indices": "iu",
          "sv_indptr": "iu", "classes": "fiubU", "prob_A": "f", "prob_B": "f"}
_HEADER_KEYS = {"format", "version", "svmopt_version", "kind", "model", "n_features", "method", "loss",
                "reg", "C", "intercept_scaling", "kernel", "estimator", "mac", "arrays"}
_KERNEL_PARAMS = {"linear": (), "rbf": ("gamma",), "polynomial": ("coef0", "degree", "gamma"), "precomputed": ("n",),
                  "sigmoid": ("coef0", "gamma")}
_MAX_HEADER = 1 << 20  # JSON header bytes
_MAX_DEPTH = 16  # JSON nesting (save_model writes 4)


def _version() -> str:
    from . import __version__
    return __version__


# --------------------------------------------------------------------------- saving


def _kernel_spec(kernel):
    from . import kernels

    shipped = {k.name: k.block for k in (kernels.linear, kernels.rbf(1.0), kernels.polynomial(), kernels.sigmoid(),
                                         kernels.precomputed())}
    if shipped.get(kernel.name) is not kernel.block:
        raise ValueError(f"cannot save a custom kernel ({kernel!r}): only {sorted(shipped)} are known to "
                         "load_model; save support_vectors and dual_coef yourself")
    return {"name": kernel.name, "params": {k: np.asarray(v).item() for k, v in kernel.params.items()}}


_KINDS_OF_MODEL = ("binary", "ovr", "ovo", "crammer_singer", "regression", "oneclass")


def _single_kind(model) -> str:
    """The kind of a model that is one problem: a regression, a one-class SVM or a binary classifier."""
    return "oneclass" if isinstance(model, OneClassResult) else "regression" if isinstance(model, RegressionResult) \
        else "binary"


def _json_param(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if math.isfinite(v) else repr(v)
    if isinstance(v, (np.integer, np.floating)):
        return v.item()
    if isinstance(v, dict):
        return {str(k): _json_param(x) for k, x in v.items()}
    return repr(v)  # svmopt objects (a Loss, a Method, a Kernel): recorded by name


def save_model(model, path, *, key=None) -> Path:
    """Write a fitted model to ``path`` (any name; written atomically).

    model: a ``Result`` / ``MulticlassResult`` from ``solve`` / ``solve_multiclass``,
    or a fitted estimator (``SVMClassifier``, ``SVMRegressor``). ``key`` (bytes or str) signs it with HMAC-SHA256.
    Raises ``ValueError`` for a model that ``load_model`` would refuse.
    """
    estimator = None
    if hasattr(model, "get_params") and not isinstance(model, Result):
        if not hasattr(model, "result_"):
            raise ValueError(f"{type(model).__name__} is not fitted yet; nothing to save")
        estimator = {k: _json_param(v) for k, v in model.get_params(deep=False).items()}
        model = model.result_
    if not isinstance(model, Result):
        raise TypeError(f"save_model needs a Result, MulticlassResult or fitted estimator, got {type(model)!r}")
    from .multiclass import MulticlassResult
    from .multiclass_kernel import OvOModel

    ovo = isinstance(model, OvOModel)
    ovr = isinstance(model, MulticlassResult)
    cs = ovr and np.ndim(model.status) == 0  # Crammer-Singer: one joint problem
    if not (ovr or ovo) and np.ndim(model.status) != 0:
        raise ValueError("a batched Result (solve over an array of C) holds several models; "
                         "save one, e.g. pick index k of w, b")
    arrays = {name: np.asarray(getattr(model, name)) for name in _REPORT}
    arrays["b"] = np.asarray(model.b)
    if model.classes is not None:
        classes = np.asarray(model.classes)
        if classes.dtype.kind == "O":
            classes = classes.astype(str)
        arrays["classes"] = classes
    if model.kernel is None:
        arrays["w"] = np.asarray(model.w)
        n_features = arrays["w"].shape[-1]
        kernel = None
    else:
        kernel = _kernel_spec(model.kernel)
        sv = model.support_vectors
        if sp.issparse(sv):
            sv = sp.csr_matrix(sv)
            arrays.update(sv_data=sv.data, sv_indices=sv.indices, sv_indptr=sv.indptr)
        else:
            arrays["sv"] = np.asarray(sv)
        arrays["dual_coef"] = np.asarray(model.dual_coef)
        n_features = int(kernel["params"]["n"]) if kernel["name"] == "precomputed" else sv.shape[1]
    platt = model.extras.get("platt") if isinstance(model.extras, dict) else None
    if platt is not None:
        arrays["prob_A"], arrays["prob_B"] = np.asarray(platt.A, np.float64), np.asarray(platt.B, np.float64)
    arrays = {k: np.asarray(v, order="C") for k, v in arrays.items()}  # the reader streams C order
    header = {
        "format": FORMAT, "version": VERSION, "svmopt_version": _version(),
        "kind": "ovo" if ovo else "crammer_singer" if cs else "ovr" if ovr else _single_kind(model),
        "model": "linear" if kernel is None else "kernel",
        "n_features": int(n_features), "method": model.method, "loss": model.loss,
        "reg": None if estimator is None else estimator.get("reg"),
        "C": _json_param(model.C), "intercept_scaling": _json_param(model.intercept_scaling),
        "kernel": kernel, "estimator": estimator, "mac": "sha256" if key is None else "hmac-sha256",
        "arrays": {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in sorted(arrays.items())},
    }
    if "sv_data" in arrays:
        header["sv_shape"] = list(model.support_vectors.shape)
    hb = json.dumps(header, sort_keys=True).encode()
    if isinstance(path, (str, bytes)) and not path:
        raise ModelFileError(path, "no file name given (the name is empty)")
    path = Path(os.fsdecode(path))
    # Refuse now what load_model would refuse later.
    _check_header(path, _parse_header(path, hb))
    _check_model(path, header, arrays)
    checksum = _digest(hb, arrays, key).encode()
    arrays["header"], arrays["checksum"] = np.frombuffer(hb, np.uint8), np.frombuffer(checksum, np.uint8)
    if not path.parent.is_dir():
        raise ModelFileError(path, f"cannot write it: directory '{path.parent}' does not exist")
    if path.is_dir():
        raise ModelFileError(path, "cannot write it: it is a directory")
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)  # a file object: np.savez would append .npz to a name
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make the model private
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# --------------------------------------------------------------------------- loading


def load_model(path, *, key=None, max_bytes: int | None = None) -> Result:
    """Read a model file; returns a ``Result`` (binary), ``MulticlassResult`` (one-vs-rest),
    ``OvOModel`` (one-vs-one) or ``RegressionResult`` (regression).

    All three predict: ``decision_function(X)``, ``predict(X)``, ``score(X, y)``. ``key`` must
    be given for, and only for, a file saved with one. Raises ``ModelFileError`` and nothing
    else for a bad file.

    max_bytes : int or None
        The most bytes the model's arrays may take once loaded; a file declaring more is
        refused before anything is decompressed or allocated. None (default): 64 times the
        file's size, at least 16 MiB, at most ``MAX_BYTES`` (2 GiB).
        ``save_model`` stores its arrays uncompressed, so its files declare less than their
        size; a model file re-zipped with deflate (as ``np.savez_compressed`` writes it)
        declares up to about 15 times its size for real models (mostly-zero one-vs-rest
        weights, smooth support vectors), and 64 leaves a margin over that. Deflate reaches
        about 1000:1, so without this bound a 1 MB file could make a load allocate 1 GB.
        Pass a larger ``max_bytes`` for a trusted file that needs more.
    """
    if isinstance(path, (str, bytes)) and not path:
        raise ModelFileError(path, "no file name given (the name is empty)")
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise ModelFileError(path, f"cannot read it ({exc.strerror or exc})") from None
    with f, open_archive(path, f, len(_KINDS) + 2) as zf:
        size = os.fstat(f.fileno()).st_size
        limit = _default_max_bytes(size) if max_bytes is None else max_bytes
        members = check_members(path, zf, _KINDS)
        # The zip directory alone bounds what the members hold: refuse before decompressing.
        _check_total(path, least_data_bytes(members), limit, max_bytes is None, size,
                     "its zip directory declares at least")
        hb = small_member(path, zf, members, "header", _MAX_HEADER)
        header = _parse_header(path, hb)
        declared = _check_header(path, header)
        _check_total(path, sum(dtype.itemsize * math.prod(shape) for dtype, shape in declared.values()),
                     limit, max_bytes is None, size, "its arrays declare")
        signed = header["mac"] == "hmac-sha256"
        if signed and key is None:
            raise ModelFileError(path, "the file is signed (HMAC-SHA256): pass the key it was saved with")
        if key is not None and not signed:
            raise ModelFileError(path, "a key was given but the file is not signed; refusing it")
        stored = small_member(path, zf, members, "checksum", 64)
        extra = sorted(set(members) - set(declared) - {"header", "checksum"})
        missing = sorted(set(declared) - set(members))
        if extra or missing:
            raise ModelFileError(path, "tampered or corrupted: " + "; ".join(
                ([f"members {extra} are not in the header's list"] if extra else [])
                + ([f"members {missing} listed in the header are missing"] if missing else [])))
        for name, (dtype, shape) in declared.items():
            check_size(path, members[name], dtype.itemsize * math.prod(shape), dtype, shape)
        # Authenticate first, allocating nothing; then read, digesting again.
        for keep in (False, True):
            digest, arrays = scan(path, zf, members, declared, hb, key, keep)
            if not hmac.compare_digest(stored, digest.encode()):
                raise ModelFileError(path, "checksum mismatch: the file was tampered with or corrupted"
                                           + (" (or the key is wrong)" if signed else ""))
    return _to_result(path, header, _check_model(path, header, arrays))


def _default_max_bytes(file_size: int) -> int:
    """load_model's ``max_bytes`` for a file of ``file_size`` bytes when none is given."""
    return min(MAX_BYTES, max(_MIN_BYTES, _RATIO * file_size))


def _check_total(path, total, limit, derived, file_size, what):
    if total <= limit:
        return
    why = (f" (the default for a file of {file_size} bytes: {_RATIO} times its size, at least {_MIN_BYTES}, "
           f"at most {MAX_BYTES})" if derived else "")
    raise ModelFileError(path, f"{what} {total} bytes, more than max_bytes={limit}{why}; "
                               "pass a larger max_bytes= to load_model if the file is trusted")


# --------------------------------------------------------------------------- header


_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)


def _no_duplicates(pairs):
    seen = set()
    for k, _ in pairs:
        if k in seen:
            raise ValueError(f"duplicate key {k!r}")
        seen.add(k)
    return dict(pairs)


def _parse_header(path, hb: bytes) -> dict:
    """The header's JSON object, its nesting depth checked before the (recursive) parser runs."""
    try:
        text = hb.decode("utf-8")
    except UnicodeDecodeError:
        raise ModelFileError(path, "tampered or corrupted (the header is not UTF-8 text)") from None
    # Brackets outside strings, as a JSON lexer reads them (an unterminated string only over-counts).
    b = np.frombuffer(_JSON_STRING.sub("", text).encode(), np.uint8)
    steps = np.isin(b, (91, 123)).astype(np.int64) - np.isin(b, (93, 125))
    depth = int(np.cumsum(steps).max(initial=0))
    if depth > _MAX_DEPTH:
        raise ModelFileError(path, f"tampered or corrupted (the header nests {depth} deep; at most {_MAX_DEPTH})")
    try:
        header = json.loads(text, object_pairs_hook=_no_duplicates)
    except (ValueError, RecursionError) as exc:
        raise ModelFileError(path, f"tampered or corrupted (the header is not valid JSON: {exc})") from None
    found = header.get("format") if isinstance(header, dict) else None
    if found != FORMAT:
        raise ModelFileError(path, f"not an svmopt model file (format {found!r}, expected '{FORMAT}')")
    return header


def _is_int(v) -> bool:
    return type(v) is int  # JSON true / false are Python bools, which are ints too


def _is_number(v) -> bool:
    return type(v) in (int, float)


def _check_header(path, h: dict) -> dict:
    """Check what can be checked before the arrays are read; returns {name: (dtype, shape)}."""
    def bad(msg):
        return ModelFileError(path, f"invalid model: {msg}")

    version = h.get("version")
    if not _is_int(version) or version < 1:
        raise ModelFileError(path, f"tampered or corrupted (bad format version {version!r})")
    if version > VERSION:
        raise ModelFileError(path, f"format version {version} (written by svmopt {h.get('svmopt_version')}) "
                                   f"is newer than this svmopt {_version()} reads (up to {VERSION}); upgrade svmopt")
    sparse = isinstance(h.get("arrays"), dict) and "sv_data" in h["arrays"]
    expected = _HEADER_KEYS | ({"sv_shape"} if sparse else set())
    if set(h) != expected:
        raise bad(f"header fields {sorted(set(h) ^ expected)} are missing or unexpected")
    if h["mac"] not in ("sha256", "hmac-sha256"):
        raise bad(f"mac {h['mac']!r} is not 'sha256' or 'hmac-sha256'")
    for k in ("svmopt_version", "method", "loss"):
        if type(h[k]) is not str:
            raise bad(f"{k} {h[k]!r} is not a string")
    if h["kind"] not in _KINDS_OF_MODEL:
        raise bad(f"kind {h['kind']!r} is not one of {', '.join(map(repr, _KINDS_OF_MODEL))}")
    if h["model"] not in ("linear", "kernel"):
        raise bad(f"model {h['model']!r} is not 'linear' or 'kernel'")
    if h["kind"] == "ovo" and h["model"] != "kernel":
        raise bad(f"a one-vs-one model is a kernel model, not {h['model']!r}")
    if h["kind"] == "crammer_singer" and h["model"] != "linear":
        raise bad(f"a Crammer-Singer model is linear, not {h['model']!r}")
    if not (_is_int(h["n_features"]) and h["n_features"] >= 0):
        raise bad(f"n_features {h['n_features']!r} is not a non-negative integer")
    if not (h["reg"] is None or type(h["reg"]) is str):
        raise bad(f"reg {h['reg']!r} is not a string or null")
    if not (_is_number(h["C"]) or type(h["C"]) is str):
        raise bad(f"C {h['C']!r} is not a number or string")
    s = h["intercept_scaling"]
    if not (s is None or (_is_number(s) and math.isfinite(s) and s > 0)):
        raise bad(f"intercept_scaling {s!r} is not null or a positive number")
    if not (h["estimator"] is None or isinstance(h["estimator"], dict)):
        raise bad("estimator is not an object or null")
    if (h["kernel"] is None) != (h["model"] == "linear"):
        raise bad(f"a {h['model']} model with kernel {h['kernel']!r}")
    if h["kernel"] is not None:
        _build_kernel(path, h["kernel"])
    if "sv_shape" in h and not (isinstance(h["sv_shape"], list) and len(h["sv_shape"]) == 2
                                and all(_is_int(v) and v >= 0 for v in h["sv_shape"])):
        raise bad(f"sv_shape {h['sv_shape']!r} is not two non-negative integers")

    arrays = h["arrays"]
    if not isinstance(arrays, dict):
        raise bad("arrays is not an object")
    declared = {}
    for name, spec in arrays.items():
        if name not in _KINDS:
            raise bad(f"unknown array {name!r}")
        if not (isinstance(spec, dict) and set(spec) == {"dtype", "shape"} and type(spec["dtype"]) is str
                and isinstance(spec["shape"], list) and len(spec["shape"]) <= 2
                and all(_is_int(n) and n >= 0 for n in spec["shape"])):
            raise bad(f"array {name!r}: {spec!r} is not {{'dtype': str, 'shape': [at most 2 sizes]}}")
        dtype = _dtype(spec["dtype"])
        if dtype is None or dtype.kind not in _KINDS[name]:
            raise bad(f"array {name!r} has dtype {spec['dtype']!r}; expected kind {_KINDS[name]!r}"
                      + (" (pickled Python objects are never loaded)" if "O" in spec["dtype"] else ""))
        shape = tuple(spec["shape"])
        declared[name] = dtype, shape
    return declared


def _dtype(s: str):
    """The dtype named by the header, or None; only canonical names of plain dtypes."""
    if len(s) > 16:
        return None
    try:
        dtype = np.dtype(s)
    except Exception:  # numpy raises several types for unparseable names
        return None
    return dtype if dtype.str == s and not dtype.fields and not dtype.subdtype else None


def _build_kernel(path, spec):
    from . import kernels

    name = spec.get("name") if isinstance(spec, dict) else None
    if not (isinstance(spec, dict) and set(spec) == {"name", "params"} and name in _KERNEL_PARAMS
            and isinstance(spec["params"], dict) and sorted(spec["params"]) == list(_KERNEL_PARAMS[name])
            and all(_is_number(v) and math.isfinite(v) for v in spec["params"].values())):
        raise ModelFileError(path, f"invalid model: kernel {spec!r} is not one of {sorted(_KERNEL_PARAMS)} "
                                   "with its finite parameters")
    if name == "linear":
        return kernels.linear
    try:
        return getattr(kernels, name)(**spec["params"])
    except ValueError as exc:
        raise ModelFileError(path, f"invalid model: kernel {spec!r}: {exc}") from None


# --------------------------------------------------------------------------- arrays


def _check_model(path, h, a) -> dict:
    """Which arrays a model of this kind has, their shapes against each other, their values."""
    def bad(msg):
        return ModelFileError(path, f"invalid model: {msg}")

    multi, kernel, d = h["kind"] in ("ovr", "ovo", "crammer_singer"), h["model"] == "kernel", h["n_features"]
    need = {"b", *_REPORT} | ({"classes"} if multi else set())
    if not kernel:
        need |= {"w"}
    elif "sv" in a:
        need |= {"sv", "dual_coef"}
    else:
        need |= {"sv_data", "sv_indices", "sv_indptr", "dual_coef"}
    allowed = need | ({"classes", "prob_A", "prob_B"} if h["kind"] in ("binary", "ovr", "ovo") else set())
    if not need <= set(a) <= allowed or ("prob_A" in a) != ("prob_B" in a):
        raise bad(f"a {h['kind']} {h['model']} model has arrays {sorted(a)}; needs {sorted(need)}"
                  + (" (prob_A and prob_B go together)" if ("prob_A" in a) != ("prob_B" in a) else ""))

    if "classes" in a:
        c = a["classes"]
        if c.ndim != 1 or c.shape[0] < 2 or (not multi and c.shape[0] != 2) or len(np.unique(c)) != c.shape[0]:
            raise bad(f"classes {c!r} are not {'K >= 2' if multi else '2'} distinct labels")
        if c.dtype.kind == "f" and not np.isfinite(c).all():
            raise bad("classes are not finite")
    lead = (a["classes"].shape[0],) if multi else ()
    if h["kind"] == "ovo":  # one problem per pair of classes
        lead = (lead[0] * (lead[0] - 1) // 2,)
    one = () if h["kind"] == "crammer_singer" else lead  # the report's shape: one joint problem
    for name in ("b", *_REPORT, *(("prob_A", "prob_B") if "prob_A" in a else ())):
        want = one if name in _REPORT else lead
        if a[name].shape != want:
            raise bad(f"{name} has shape {a[name].shape}; expected {want}")
    if not np.isin(a["status"], [s.value for s in Status]).all():
        raise bad(f"status {a['status'].tolist()} is not a status code {[s.value for s in Status]}")
    if (a["iterations"] < 0).any():
        raise bad("iterations are negative")

    if not kernel:
        if a["w"].shape != lead + (d,):
            raise bad(f"w has shape {a['w'].shape}; expected {lead + (d,)} (n_features {d})")
        weights = ("w", "b")
    else:
        if "sv" in a:
            n_sv = a["sv"].shape[0] if a["sv"].ndim == 2 else -1
            gram = h["kernel"]["name"] == "precomputed"
            if gram and (h["kernel"]["params"]["n"] != d or a["sv"].shape != (n_sv, 1)
                         or not np.isin(a["sv"], np.arange(d)).all()):
                raise bad(f"a precomputed kernel's sv are (n_sv, 1) training row indices in [0, {d}) (n_features "
                          f"{d}, kernel n {h['kernel']['params']['n']}), got shape {a['sv'].shape}")
            if not gram and a["sv"].shape != (n_sv, d):
                raise bad(f"sv has shape {a['sv'].shape}; expected (n_sv, {d}) (n_features {d})")
            weights = ("sv", "dual_coef", "b")
        else:
            n_sv = h["sv_shape"][0]
            ptr, idx, nnz = a["sv_indptr"], a["sv_indices"], a["sv_data"].shape
            if h["sv_shape"][1] != d or ptr.shape != (n_sv + 1,) or idx.shape != nnz or len(nnz) != 1:
                raise bad(f"sparse support vectors: sv_shape {h['sv_shape']}, indptr {ptr.shape}, indices "
                          f"{idx.shape}, data {nnz} do not fit together (n_features {d})")
            if ptr[0] != 0 or ptr[-1] != nnz[0] or (np.diff(ptr) < 0).any() or ((idx < 0) | (idx >= d)).any():
                raise bad("sparse support vectors: indptr is not 0 .. nnz non-decreasing, "
                          "or a column index is out of range")
            weights = ("sv_data", "dual_coef", "b")
        if a["dual_coef"].shape != lead + (n_sv,):
            raise bad(f"dual_coef has shape {a['dual_coef'].shape}; expected {lead + (n_sv,)}")
    if "prob_A" in a:
        weights += ("prob_A", "prob_B")
    for k in weights:  # whatever the status: predict would blame X for them
        if not np.isfinite(a[k]).all():
            raise bad(f"{k} holds nan or inf")
    return a


def _to_result(path, header, a):
    multi = header["kind"] in ("ovr", "ovo", "crammer_singer")
    single = header["kind"] in ("binary", "crammer_singer")  # one problem's report
    report = {k: a[k].item() if single else a[k] for k in _REPORT}
    if single:
        report["status"] = Status(int(report["status"]))
    kernel = sv = dual_coef = w = None
    if header["model"] == "kernel":
        kernel = _build_kernel(path, header["kernel"])
        sv = a["sv"] if "sv" in a else sp.csr_matrix((a["sv_data"], a["sv_indices"], a["sv_indptr"]),
                                                      shape=tuple(header["sv_shape"]))
        dual_coef = a["dual_coef"]
    else:
        w = a["w"]
    more = {}
    if header["kind"] == "ovo":
        from .multiclass_kernel import OvOModel as cls, class_pairs
        more["pairs"] = class_pairs(a["classes"].shape[0])
    elif multi:
        from .multiclass import MulticlassResult as cls
    else:
        cls = {"regression": RegressionResult, "oneclass": OneClassResult}.get(header["kind"], Result)
    extras = {"header": header}
    if "prob_A" in a:
        from .probability import Platt
        extras["platt"] = Platt(header["kind"], a["prob_A"] if multi else a["prob_A"].item(),
                                a["prob_B"] if multi else a["prob_B"].item())
    return cls(w=w, b=a["b"], method=header["method"], loss=header["loss"],
               C=header["C"], classes=a.get("classes"), intercept_scaling=header["intercept_scaling"],
               kernel=kernel, support_vectors=sv, dual_coef=dual_coef,
               extras=extras, **report, **more)
