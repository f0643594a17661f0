"""What a user's first call costs before its loop runs, measured honestly.

Inside one benchmark process every svmopt program is compiled once and then reused (and the
persistent compilation cache would hand a later process the programs of an earlier one), so
the compile time a second call reports (~0.01 s) says nothing about what a user pays. Here a
fresh Python process, with svmopt's persistent compilation cache off, makes the same call a
trace makes (same data, loss, method, intercept, dtype, history) and reports

    first-call overhead = wall time of the call - the run time it reports

i.e. validation, tracing, XLA compilation and transfers: what the first call of a session
costs on top of the iterations. ``max_iter`` is small: the iterations are subtracted anyway.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

__all__ = ["first_call_overhead"]

_CODE = r"""
import json, sys, time, importlib
import numpy as np, scipy.sparse as sp
spec = json.loads(sys.argv[1])
if spec["dtype"] == "float64":
    import jax; jax.config.update("jax_enable_x64", True)
import svmopt
from svmopt.losses import hinge, lp_hinge, squared_hinge
X = sp.load_npz(spec["X"]) if spec["sparse"] else np.load(spec["X"])
y = np.load(spec["y"])
loss = {"L1": hinge, "L2": squared_hinge}.get(spec["loss"]) or lp_hinge(spec["p"])
method = getattr(importlib.import_module("svmopt.solvers." + spec["solver"]), spec["solver"])(**spec["params"])
import warnings; warnings.simplefilter("ignore")
t0 = time.perf_counter()
r = svmopt.solve(X, y, loss=loss, method=method, C=spec["C"], fit_intercept=False,
                 intercept_scaling=1.0 if spec["bias"] else None, dtype=spec["dtype"], max_iter=spec["max_iter"],
                 history=True, record_every=1)
wall = time.perf_counter() - t0
print(json.dumps({"wall": wall, "run": r.timings["run"], "compile": r.timings["compile"]}))
"""


def _save(task, cache: Path):
    X = task.data.X
    key = hashlib.sha1(repr((task.data.name, X.shape, getattr(X, "nnz", None))).encode()).hexdigest()[:12]
    cache.mkdir(parents=True, exist_ok=True)
    xp, yp = cache / f"{key}-X.npz", cache / f"{key}-y0.npy"
    if not xp.exists():
        if sp.issparse(X):
            sp.save_npz(xp, sp.csr_matrix(X))
        else:
            np.save(xp.with_suffix(".npy"), np.asarray(X))
            xp = xp.with_suffix(".npy")
    elif not sp.issparse(X):
        xp = xp.with_suffix(".npy")
    if not yp.exists():
        np.save(yp, np.asarray(task.labels(0)))
    return xp, yp


def first_call_overhead(task, solver: str, params: dict, dtype, cache: Path, max_iter: int = 2,
                        timeout: float = 600.0) -> float:
    """Seconds of the first ``svmopt.solve`` call's overhead (mostly compilation) in a fresh
    process without the persistent cache; nan when the probe fails (the reason goes to stderr)."""
    if not sp.issparse(task.data.X) and not isinstance(task.data.X, np.ndarray):
        return math.nan
    xp, yp = _save(task, cache)
    spec = dict(X=str(xp), y=str(yp), sparse=sp.issparse(task.data.X), loss=task.loss, p=getattr(task, "p", 1.5),
                solver=solver, params=params, C=task.C, bias=task.bias, dtype=np.dtype(dtype).name,
                max_iter=max_iter)
    env = dict(os.environ, SVMOPT_COMPILATION_CACHE="0")
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1]) + os.pathsep + env.get("PYTHONPATH", "")
    try:
        out = subprocess.run([sys.executable, "-c", _CODE, json.dumps(spec)], env=env, capture_output=True,
                             text=True, timeout=timeout, check=True).stdout
        r = json.loads(out.strip().splitlines()[-1])
    except (subprocess.SubprocessError, ValueError, IndexError) as e:
        print(f"compile probe for {solver} failed: {e}", file=sys.stderr)
        return math.nan
    return max(0.0, float(r["wall"]) - float(r["run"]))
