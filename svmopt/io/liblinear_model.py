"""LIBLINEAR's text model format, read and written, so models move between the two tools.

A LIBLINEAR model file (``train`` writes it, ``predict`` reads it; ``linear.cpp`` save_model)::

    solver_type L2R_L1LOSS_SVC_DUAL
    nr_class 2
    label 1 -1
    nr_feature 123
    bias 1
    w
    0.123
    ...

``w`` has ``nr_feature`` lines, plus one for the bias weight when ``bias >= 0``; each line
holds ``nr_w`` numbers (1 for two classes, else one per class in ``label`` order). The
decision values are ``w . x + w_bias * bias``; two classes predict ``label[0]`` when the
value is > 0, else ``label[1]``; more predict the label of the first largest value. A support
vector regression model (``L2R_L2LOSS_SVR``, ``L2R_L2LOSS_SVR_DUAL``, ``L2R_L1LOSS_SVR_DUAL``)
has ``nr_class 2``, no ``label`` line and one weight per line; it predicts the decision value.

Mapping to svmopt's ``Result``: a free intercept b is written as ``bias 1`` with
``w_bias = b`` (the decision values are the same; LIBLINEAR's ``-B 1 -R`` trains this
form too), a bias-feature model (``intercept_scaling = s``) as ``bias s`` with
``w_bias = b / s``, no intercept as ``bias -1``. A binary model's classes are written as
``label positive negative``. Reading gives a ``Result`` (two classes, ``classes =
(label[1], label[0])`` so ties at 0 go where LIBLINEAR sends them) or a
``MulticlassResult`` whose predictions are LIBLINEAR's, or a ``RegressionResult`` for a
regression model. LIBLINEAR stores integer labels only; kernel models have no LIBLINEAR form.
"""
from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np

__all__ = ["save_liblinear_model", "load_liblinear_model", "is_liblinear_model", "solver_type_for",
           "SOLVER_TYPES"]

SOLVER_TYPES = {0: "L2R_LR", 1: "L2R_L2LOSS_SVC_DUAL", 2: "L2R_L2LOSS_SVC", 3: "L2R_L1LOSS_SVC_DUAL",
                4: "MCSVM_CS", 5: "L1R_L2LOSS_SVC", 6: "L1R_LR", 7: "L2R_LR_DUAL", 11: "L2R_L2LOSS_SVR",
                12: "L2R_L2LOSS_SVR_DUAL", 13: "L2R_L1LOSS_SVR_DUAL", 21: "ONECLASS_SVM"}
"""LIBLINEAR's solver_type names by ``-s`` number (linear.h)."""
_CLASSIFIERS = {"L2R_LR", "L2R_L2LOSS_SVC_DUAL", "L2R_L2LOSS_SVC", "L2R_L1LOSS_SVC_DUAL", "MCSVM_CS",
                "L1R_L2LOSS_SVC", "L1R_LR", "L2R_LR_DUAL"}
_REGRESSORS = {"L2R_L2LOSS_SVR", "L2R_L2LOSS_SVR_DUAL", "L2R_L1LOSS_SVR_DUAL"}
_HEADER_KEYS = ("solver_type", "nr_class", "label", "nr_feature", "bias", "rho")
MAX_LINE = 1 << 20  # no header or weight line of a real model comes near 1 MiB


def _error(path, reason):
    from ..model_io import ModelFileError  # lazy: svmopt.io is imported before model_io

    return ModelFileError(path, reason)


def solver_type_for(loss: str, reg: str = "l2", method: str = "") -> tuple[str, bool]:
    """The LIBLINEAR solver_type naming a model trained with ``loss`` / ``reg`` (their names).

    Returns (name, exact): ``exact`` is False when LIBLINEAR has no solver for that problem
    (Lp hinge, least squares, elastic net, ...); the name is then a type LIBLINEAR predicts
    with correctly (prediction uses only w, bias and labels): a classifier's, or
    ``L2R_L2LOSS_SVR_DUAL`` for a regression loss (``regression=True``).
    """
    loss, reg = loss.split("(")[0], reg.split("(")[0]
    table = {("hinge", "l2"): "L2R_L1LOSS_SVC_DUAL",
             ("squared_hinge", "l2"): "L2R_L2LOSS_SVC" if method == "newton" else "L2R_L2LOSS_SVC_DUAL",
             ("logistic", "l2"): "L2R_LR", ("squared_hinge", "l1"): "L1R_L2LOSS_SVC", ("logistic", "l1"): "L1R_LR",
             ("epsilon_insensitive", "l2"): "L2R_L1LOSS_SVR_DUAL",
             ("squared_epsilon_insensitive", "l2"): "L2R_L2LOSS_SVR" if method == "newton" else "L2R_L2LOSS_SVR_DUAL"}
    name = table.get((loss, reg))
    regression = loss in ("epsilon_insensitive", "squared_epsilon_insensitive")
    return (name, True) if name else ("L2R_L2LOSS_SVR_DUAL" if regression else "L2R_L2LOSS_SVC_DUAL", False)


def _int_labels(classes, path):
    out = []
    for c in np.asarray(classes).tolist():
        if isinstance(c, bool) or not isinstance(c, (int, float)) or not float(c).is_integer() \
                or abs(c) >= 2 ** 31:
            raise ValueError(f"cannot write '{path}' in LIBLINEAR's format: it stores integer labels only, "
                             f"and {c!r} is not one; use the svmopt format")
        out.append(int(c))
    return out


def save_liblinear_model(result, path, *, solver_type: str | None = None, reg: str = "l2") -> Path:
    """Write a linear ``Result`` / ``MulticlassResult`` / ``RegressionResult`` as a LIBLINEAR model file.

    ``solver_type``: the name written (default: from the result's loss and ``reg`` via
    ``solver_type_for``; a problem LIBLINEAR has no solver for warns and writes a classifier
    type, which LIBLINEAR's ``predict`` uses correctly). Returns the path written.
    """
    path = Path(path)
    if getattr(result, "kernel", None) is not None:
        raise ValueError("a kernel model has no LIBLINEAR form (LIBLINEAR is linear); use the svmopt format")
    from ..result import RegressionResult

    regression = isinstance(result, RegressionResult)
    w = np.asarray(result.w, np.float64)
    b = np.asarray(result.b, np.float64)
    labels = [] if regression else _int_labels(np.asarray(result.classes), path)
    if solver_type is None:
        solver_type, exact = solver_type_for(str(result.loss), reg, str(result.method))
        if not exact:
            warnings.warn(f"LIBLINEAR has no solver for loss {result.loss} with reg {reg}; the model is written "
                          f"as {solver_type} (LIBLINEAR predicts with it correctly: w, bias and labels are exact)",
                          UserWarning, stacklevel=2)
    if solver_type not in (_REGRESSORS if regression else _CLASSIFIERS):
        kind = "regression" if regression else "classifier"
        raise ValueError(f"solver_type {solver_type!r} is not a LIBLINEAR {kind} type")
    if regression and w.ndim != 1:
        raise ValueError("a batched RegressionResult (solve over an array of C) holds several models; save one")
    s = result.intercept_scaling
    if regression:  # nr_class 2 and no label line, as LIBLINEAR writes its SVR models
        W, bvec = w[:, None], b.reshape(1)
    elif w.ndim == 1:  # binary: w scores classes[1], which LIBLINEAR calls label[0]
        labels, W, bvec = [labels[1], labels[0]], w[:, None], b.reshape(1)
    else:
        W, bvec = w.T, b.reshape(-1)
    d = W.shape[0]
    if s is not None:  # bias feature s with weight b / s
        bias, rows = float(s), np.vstack([W, bvec[None, :] / float(s)])
    elif np.any(bvec != 0):
        bias, rows = 1.0, np.vstack([W, bvec[None, :]])  # a free intercept: a bias feature of value 1
    else:  # no intercept (or b = 0: the same decision values)
        bias, rows = -1.0, W
    lines = [f"solver_type {solver_type}", f"nr_class {2 if regression else len(labels)}"]
    lines += [] if regression else ["label " + " ".join(map(str, labels))]
    lines += [f"nr_feature {d}", f"bias {bias:.17g}", "w"]
    lines += ["".join(f"{v:.17g} " for v in row) for row in rows]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)
    return path


def is_liblinear_model(path) -> bool:
    """True when the file starts like a LIBLINEAR model ("solver_type ...")."""
    try:
        with open(path, "rb") as f:
            return f.read(12) == b"solver_type "
    except OSError:
        return False


def load_liblinear_model(path):
    """Read a LIBLINEAR model: a ``Result`` (two classes), a ``MulticlassResult`` or a
    ``RegressionResult`` (-s 11, 12, 13).

    One-class models are refused, as is any malformed file, with ``ModelFileError`` naming
    the file and line.
    """
    from ..multiclass import MulticlassResult
    from ..result import RegressionResult, Result, Status

    path = Path(path)
    try:
        f = open(path, "rb")
    except OSError as exc:
        raise _error(path, f"cannot read it ({exc.strerror})") from None
    with f:
        head, lineno = {}, 0
        while True:
            raw = f.readline(MAX_LINE + 1)
            lineno += 1
            if not raw:
                raise _error(path, "truncated LIBLINEAR model (no 'w' line after the header)")
            if len(raw) > MAX_LINE:
                raise _error(path, f"line {lineno}: header line too long")
            try:
                text = raw.decode("ascii").strip()
            except UnicodeDecodeError:
                raise _error(path, f"line {lineno}: not a LIBLINEAR model (non-ASCII header)") from None
            if text == "w":
                break
            key, _, value = text.partition(" ")
            if key not in _HEADER_KEYS or key in head:
                raise _error(path, f"line {lineno}: unexpected header line {text[:60]!r}")
            head[key] = value.strip()
        for need in ("solver_type", "nr_class", "nr_feature", "bias"):
            if need not in head:
                raise _error(path, f"LIBLINEAR model without a '{need}' line")
        st = head["solver_type"]
        if st not in set(SOLVER_TYPES.values()):
            raise _error(path, f"unknown LIBLINEAR solver_type {st!r}")
        regression = st in _REGRESSORS
        if st not in _CLASSIFIERS and not regression:
            raise _error(path, f"a LIBLINEAR {st} model is not a classifier or a regression; svmopt reads those only")
        try:
            K, d, bias = int(head["nr_class"]), int(head["nr_feature"]), float(head["bias"])
            labels = [int(v) for v in head.get("label", "").split()]
        except ValueError:
            raise _error(path, "nr_class, nr_feature, bias and label must be numbers") from None
        if regression and (K != 2 or labels):
            raise _error(path, f"a {st} model has nr_class 2 and no labels, not nr_class {K} with labels {labels}")
        if not regression and (K < 2 or len(labels) != K):
            raise _error(path, f"nr_class {K} with labels {labels}: a classifier needs two or more labels, "
                         "one per class")
        if not regression and len(set(labels)) != K:
            raise _error(path, f"repeated labels {labels}")
        if not math.isfinite(bias):
            raise _error(path, f"bias {bias} is not finite")
        nr_w = 1 if (K == 2 and st != "MCSVM_CS") else K
        rows = d + (1 if bias >= 0 else 0)
        if d < 1 or rows * nr_w * 2 > os.fstat(f.fileno()).st_size:  # each value takes >= 2 bytes
            raise _error(path, f"nr_feature {d} does not fit the file's size (truncated?)")
        W = np.empty((rows, nr_w))
        for i in range(rows):
            raw = f.readline(MAX_LINE + 1)
            lineno += 1
            try:
                vals = [float(v) for v in raw.split()]
            except ValueError:
                raise _error(path, f"line {lineno}: weights must be numbers") from None
            if len(vals) != nr_w:
                raise _error(path, f"line {lineno}: expected {nr_w} weight(s), found {len(vals)}"
                             + (" (truncated file?)" if not raw else ""))
            W[i] = vals
        if f.read(1).strip():
            raise _error(path, f"line {lineno + 1}: data after the {rows} weight lines")
    if not np.all(np.isfinite(W)):
        raise _error(path, "weights contain NaN or inf")
    wb = W[d] * bias if bias >= 0 else np.zeros(nr_w)  # the bias feature's contribution
    info = {"solver_type": st, "bias": bias, "labels": labels}
    common = dict(primal_objective=np.nan, dual_objective=np.nan, gap=np.nan, method=f"liblinear:{st}",
                  loss=st, C=np.nan, timings={}, extras={"liblinear": info},
                  intercept_scaling=bias if bias > 0 else None)
    if regression:
        return RegressionResult(w=W[:d, 0], b=float(wb[0]), status=Status.UNCERTIFIED, iterations=0, **common)
    if nr_w == 1:
        return Result(w=W[:d, 0], b=float(wb[0]), status=Status.UNCERTIFIED, iterations=0,
                      classes=np.asarray([labels[1], labels[0]]), **common)
    return MulticlassResult(w=W[:d].T.copy(), b=wb, status=np.full(K, int(Status.UNCERTIFIED)),
                            iterations=np.zeros(K, int), classes=np.asarray(labels), **common)
