"""Save and load trained models: a documented, versioned file format without pickle.

A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays, written by
``np.savez`` and read with ``allow_pickle=False``, so loading never runs code).
It holds these members:

  header     uint8   UTF-8 JSON, see below
  checksum   uint8   ASCII hex SHA-256 (or HMAC-SHA256 with a key) of the payload
  w          float   (d,) binary / (K, d) one-vs-rest         linear models
  b          float   () / (K,)
  classes    any     (2,) binary (negative, positive) / (K,)   numbers or strings
  sv         float   (n_sv, d) dense support vectors          kernel models, or
  sv_data, sv_indices, sv_indptr                              the same as CSR parts
  dual_coef  float   (n_sv,) / (K, n_sv): alpha_i y_i
  primal_objective, dual_objective, gap, status, iterations   () / (K,): the solve's report

Header (JSON object), format version 1:

  format "svmopt-model", version 1, svmopt_version, kind "binary" | "ovr",
  model "linear" | "kernel", n_features, method, loss (its repr, e.g. "lp_hinge(p=1.5)"),
  reg (repr or null), C, intercept_scaling (null: free intercept), kernel
  ({"name", "params"} or null), estimator (an SVMClassifier's parameters or null),
  mac ("sha256" or "hmac-sha256"), arrays ({name: {"dtype", "shape"}}: exactly the
  array members present).

The payload digested by the checksum is the header bytes followed, for each array
in sorted name order, by its name, dtype, shape and C-order bytes. A changed byte,
a dropped or added array fails the check. A plain SHA-256 detects corruption and
careless edits; anyone can recompute it, so for files from untrusted places save
with ``key=`` (HMAC-SHA256, the same key needed to load). Readers accept any
version up to their own and refuse newer ones.
"""
from __future__ import annotations

import hashlib
import hmac
import io
import json
import math
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .result import Result, Status

__all__ = ["save_model", "load_model", "ModelFileError", "FORMAT", "VERSION"]

FORMAT = "svmopt-model"
VERSION = 1
_REPORT = ("primal_objective", "dual_objective", "gap", "status", "iterations")


class ModelFileError(ValueError):
    """An unreadable, foreign, too new, tampered or corrupted model file; names the file."""

    def __init__(self, path, reason: str):
        super().__init__(f"model file '{path}': {reason}")
        self.path, self.reason = str(path), reason


def _version() -> str:
    from . import __version__
    return __version__


def _payload(header_bytes: bytes, arrays: dict) -> bytes:
    parts = [header_bytes]
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        parts.append(f"\n{name}|{a.dtype.str}|{a.shape}\n".encode())
        parts.append(a.tobytes())
    return b"".join(parts)


def _digest(payload: bytes, key) -> str:
    if key is None:
        return hashlib.sha256(payload).hexdigest()
    key = key.encode() if isinstance(key, str) else bytes(key)
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def _kernel_spec(kernel):
    from . import kernels

    shipped = {k.name: k.block for k in (kernels.linear, kernels.rbf(1.0), kernels.polynomial(), kernels.sigmoid())}
    if shipped.get(kernel.name) is not kernel.block:
        raise ValueError(f"cannot save a custom kernel ({kernel!r}): only {sorted(shipped)} are known to "
                         "load_model; save support_vectors and dual_coef yourself")
    return {"name": kernel.name, "params": {k: np.asarray(v).item() for k, v in kernel.params.items()}}


def _build_kernel(spec):
    from . import kernels

    name, params = spec["name"], spec["params"]
    if name == "linear":
        return kernels.linear
    return {"rbf": kernels.rbf, "polynomial": kernels.polynomial, "sigmoid": kernels.sigmoid}[name](**params)


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
    or a fitted ``SVMClassifier``. ``key`` (bytes or str) signs it with HMAC-SHA256.
    """
    estimator = None
    if hasattr(model, "get_params") and not isinstance(model, Result):
        if not hasattr(model, "result_"):
            raise ValueError(f"{type(model).__name__} is not fitted yet; nothing to save")
        estimator = {k: _json_param(v) for k, v in model.get_params(deep=False).items()}
        model = model.result_
    if not isinstance(model, Result):
        raise TypeError(f"save_model needs a Result, MulticlassResult or fitted SVMClassifier, got {type(model)!r}")
    from .multiclass import MulticlassResult

    ovr = isinstance(model, MulticlassResult)
    if not ovr and np.ndim(model.status) != 0:
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
        n_features = sv.shape[1]
    header = {
        "format": FORMAT, "version": VERSION, "svmopt_version": _version(),
        "kind": "ovr" if ovr else "binary", "model": "linear" if kernel is None else "kernel",
        "n_features": int(n_features), "method": model.method, "loss": model.loss,
        "reg": None if estimator is None else estimator.get("reg"),
        "C": _json_param(model.C), "intercept_scaling": _json_param(model.intercept_scaling),
        "kernel": kernel, "estimator": estimator, "mac": "sha256" if key is None else "hmac-sha256",
        "arrays": {k: {"dtype": v.dtype.str, "shape": list(v.shape)} for k, v in sorted(arrays.items())},
    }
    if "sv_data" in arrays:
        header["sv_shape"] = list(model.support_vectors.shape)
    hb = json.dumps(header, sort_keys=True).encode()
    checksum = _digest(_payload(hb, arrays), key).encode()
    arrays["header"], arrays["checksum"] = np.frombuffer(hb, np.uint8), np.frombuffer(checksum, np.uint8)
    path = Path(path)
    if not path.parent.is_dir():
        raise ModelFileError(path, f"cannot write it: directory '{path.parent}' does not exist")
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


def _read(path):
    """The archive's arrays, any failure as ModelFileError."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ModelFileError(path, f"cannot read it ({exc.strerror or exc})") from None
    if not raw.startswith(b"PK"):
        raise ModelFileError(path, f"not an svmopt model file (expected a '{FORMAT}' .npz archive)")
    try:
        with np.load(io.BytesIO(raw), allow_pickle=False) as z:
            return {name: z[name] for name in z.files}
    except ValueError as exc:
        if "pickle" in str(exc):
            raise ModelFileError(path, "it holds pickled Python objects, which are never loaded; "
                                       "it was not written by save_model") from None
        raise ModelFileError(path, f"tampered or corrupted ({exc})") from None
    except (zipfile.BadZipFile, OSError, EOFError, KeyError) as exc:
        raise ModelFileError(path, f"tampered or corrupted ({exc})") from None


def load_model(path, *, key=None) -> Result:
    """Read a model file; returns a ``Result`` (binary) or ``MulticlassResult`` (one-vs-rest).

    Both predict: ``decision_function(X)``, ``predict(X)``, ``score(X, y)``. ``key`` must
    be given for, and only for, a file saved with one. Raises ``ModelFileError``.
    """
    arrays = _read(path)
    if "header" not in arrays or "checksum" not in arrays:
        raise ModelFileError(path, f"not an svmopt model file (no header; expected a '{FORMAT}' archive)")
    hb = arrays.pop("header").tobytes()
    stored = arrays.pop("checksum").tobytes().decode("ascii", "replace")
    try:
        header = json.loads(hb)
    except ValueError:
        raise ModelFileError(path, "tampered or corrupted (the header is not valid JSON)") from None
    found = header.get("format") if isinstance(header, dict) else None
    if found != FORMAT:
        raise ModelFileError(path, f"not an svmopt model file (format {found!r}, expected '{FORMAT}')")
    version = header.get("version")
    if not isinstance(version, int) or version < 1:
        raise ModelFileError(path, f"tampered or corrupted (bad format version {version!r})")
    if version > VERSION:
        raise ModelFileError(path, f"format version {version} (written by svmopt {header.get('svmopt_version')}) "
                                   f"is newer than this svmopt {_version()} reads (up to {VERSION}); upgrade svmopt")
    signed = header.get("mac") == "hmac-sha256"
    if signed and key is None:
        raise ModelFileError(path, "the file is signed (HMAC-SHA256): pass the key it was saved with")
    if key is not None and not signed:
        raise ModelFileError(path, "a key was given but the file is not signed; refusing it")
    if not hmac.compare_digest(stored, _digest(_payload(hb, arrays), key)):
        raise ModelFileError(path, "checksum mismatch: the file was tampered with or corrupted"
                                   + (" (or the key is wrong)" if signed else ""))
    if sorted(header.get("arrays", {})) != sorted(arrays):
        raise ModelFileError(path, "tampered or corrupted (its arrays differ from the header's list)")
    return _to_result(path, header, arrays)


def _to_result(path, header, a):
    ovr = header["kind"] == "ovr"
    report = {k: a[k] if ovr else a[k].item() for k in _REPORT}
    if not ovr:
        report["status"] = Status(int(report["status"]))
    kernel = sv = dual_coef = w = None
    if header["model"] == "kernel":
        kernel = _build_kernel(header["kernel"])
        sv = a["sv"] if "sv" in a else sp.csr_matrix((a["sv_data"], a["sv_indices"], a["sv_indptr"]),
                                                      shape=tuple(header["sv_shape"]))
        dual_coef = a["dual_coef"]
    else:
        w = a["w"]
        if w.shape[-1] != header["n_features"] or (ovr and w.shape[0] != a["b"].shape[0]):
            raise ModelFileError(path, f"inconsistent model: w has shape {w.shape}, b {a['b'].shape}, "
                                       f"n_features {header['n_features']}")
    if ovr:
        from .multiclass import MulticlassResult as cls
    else:
        cls = Result
    return cls(w=w, b=a["b"], method=header["method"], loss=header["loss"],
               C=header["C"], classes=a.get("classes"), intercept_scaling=header["intercept_scaling"],
               kernel=kernel, support_vectors=sv, dual_coef=dual_coef,
               extras={"header": header}, **report)
