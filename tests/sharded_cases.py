"""Run in a subprocess with two forced host devices (XLA_FLAGS must be set before jax loads).

    python tests/sharded_cases.py <case> [args]   prints one JSON line with the results
    python tests/sharded_cases.py batch '[[case, args...], ...]'   several cases, one process

Used by tests/test_sharding.py; every case solves a problem on rows sharded over both devices
and, where the test's reference is not a float64 peer's optimum, on one device, and reports
what the test compares.
"""
import functools
import importlib.util
import json
import os
import sys
import traceback

os.environ["XLA_FLAGS"] = os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"

import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)

import numpy as np  # noqa: E402

import svmopt  # noqa: E402
from svmopt.losses import hinge, squared_hinge  # noqa: E402
from svmopt.solvers import alm, cutting_plane, dual_cd, nesvm, pdhg  # noqa: E402

DATA = os.environ["SVMOPT_DATA"]
METHODS = {
    # (method, loss, solve keywords): each method on a loss it certifies quickly in float64
    "alm": (alm, hinge, {}),
    "nesvm": (nesvm, squared_hinge, {}),
    "cutting_plane": (cutting_plane, hinge, {"intercept_scaling": 1.0}),
    "dual_cd": (dual_cd, squared_hinge, {"intercept_scaling": 1.0}),
    "pdhg": (pdhg, hinge, {"max_iter": 100_000}),  # (restarted PDHG: ~38,000 iterations to 1e-7 on 2,001 a9a rows)
}
if importlib.util.find_spec("svmopt.solvers.newton") is not None:  # the primal Newton, where it exists
    from svmopt.solvers import newton  # noqa: E402
    METHODS["newton"] = (newton, squared_hinge, {})


@functools.lru_cache(maxsize=None)
def read(name):
    return svmopt.load_svmlight(os.path.join(DATA, name + ".xz"), n_features=123 if name == "a9a" else None)


def load(name, rows, layout):
    X, y = read(name)
    X, y = X[:rows], y[:rows]
    return (X.toarray() if layout == "dense" else X), y


def summary(r):
    return dict(primal=float(r.primal_objective), gap=float(r.gap), status=int(r.status),
                iterations=int(r.iterations), w=np.asarray(r.w).tolist(), b=float(r.b))


def equal(name, rows, layout, methods, tol, dtype="float64", one="all"):
    """Each method on rows over both devices and, for the methods in ``one`` ("all": every one),
    on one device (the others' reference is the caller's: a float64 peer's optimum)."""
    X, y = load(name, rows, layout)
    out = {}
    for m in methods.split(","):
        method, loss, kw = METHODS[m]
        kw = dict(dict(max_iter=20000), **kw, loss=loss, method=method, dtype=dtype, tol=tol)
        res = {"one": summary(svmopt.solve(X, y, **kw))} if one == "all" or m in one.split(",") else {}
        two = svmopt.solve(X, y, devices=jax.devices(), **kw)
        out[m] = dict(res, two=summary(two), sharding=str(two.extras.get("alpha").sharding))
    return out


def layout():
    """shard_rows on 2001 rows of a9a: blocks, padding, labels and weights as stated."""
    X, y = load("a9a", 2001, "sparse")
    w = np.linspace(0.5, 1.5, 2001)
    Xs, ys, ws = svmopt.shard_rows(X, y, w)
    Xd, yd = svmopt.shard_rows(X.toarray(), y)
    dense = np.asarray(Xs.dense())
    return dict(shape=list(Xs.shape), dense_shape=list(Xd.shape), n_local=Xs.n_local,
                x_exact=bool(np.array_equal(dense[:2001], X.toarray()) and not dense[2001:].any()),
                xd_exact=bool(np.array_equal(np.asarray(Xd)[:2001], X.toarray())),
                y_exact=bool(np.array_equal(np.asarray(ys)[:2001], y)), y_pad=np.asarray(ys)[2001:].tolist(),
                w_exact=bool(np.array_equal(np.asarray(ws)[:2001], w)), w_pad=np.asarray(ws)[2001:].tolist(),
                spec=str(Xd.sharding.spec), devices=sorted(str(d) for d in Xd.sharding.device_set),
                blocks=[int(np.count_nonzero(np.asarray(s.data))) for s in Xs.parts["data"].addressable_shards],
                nnz=int(X.nnz))


def ovr(rows, method_name, loss_name):
    """One-vs-rest on letter: classes over both devices (lanes), rows over both devices, and the
    separate binary solves on one device."""
    X, y = svmopt.load_svmlight(os.path.join(DATA, "letter.scale.xz"), n_features=16)
    X, y = X[:rows].toarray(), y[:rows]
    method = {"alm": alm, "dual_cd": dual_cd}[method_name]
    kw = dict(method=method, loss={"hinge": hinge, "squared_hinge": squared_hinge}[loss_name],
              intercept_scaling=1.0, dtype="float64", tol=1e-4)

    def res(r, **extra):
        return dict(primal=np.asarray(r.primal_objective).tolist(), gap=np.asarray(r.gap).tolist(),
                    iterations=np.asarray(r.iterations).tolist(), status=np.asarray(r.status).tolist(),
                    w=np.asarray(r.w).tolist(), b=np.asarray(r.b).tolist(), **extra)

    lanes = svmopt.solve_multiclass(X, y, batch="loop", **kw)
    classes = np.asarray(lanes.classes)
    one = [svmopt.solve(X, np.where(y == c, 1.0, -1.0), **kw) for c in classes]
    Xs, ys = svmopt.shard_rows(X, y)
    rows_ = svmopt.solve_multiclass(Xs, ys, **kw)
    return dict(lanes=res(lanes, chunks=lanes.timings["lanes"]), rows=res(rows_),
                one=dict(primal=[float(r.primal_objective) for r in one], gap=[float(r.gap) for r in one],
                         iterations=[int(r.iterations) for r in one], w=[np.asarray(r.w).tolist() for r in one],
                         b=[float(r.b) for r in one]))


def rows2(name, tol):
    """The whole file, one process, rows over its two devices (the two-process test's reference)."""
    X, y = read(name)
    r = svmopt.solve(*svmopt.shard_rows(X, y), loss=hinge, method=alm, dtype="float64", tol=tol, max_iter=50000)
    return summary(r)


def run(case, *args):
    args = [str(a) for a in args]
    return {"equal": lambda: equal(args[0], int(args[1]), args[2], args[3], float(args[4]), *args[5:]),
            "rows2": lambda: rows2(args[0], float(args[1])),
            "layout": layout,
            "ovr": lambda: ovr(int(args[0]), args[1], args[2])}[case]()


def batch(cases):
    """Several cases in this one process (one JAX start, each file read once): a list of
    {"result": ...} or {"error": traceback}, one per case, in order."""
    out = []
    for case in json.loads(cases):
        try:
            out.append({"result": run(*case)})
        except Exception:  # the others still run; the test of this case shows the traceback
            out.append({"error": traceback.format_exc()})
    return out


if __name__ == "__main__":
    case, *args = sys.argv[1:]
    assert jax.device_count() == 2, jax.devices()
    res = batch(args[0]) if case == "batch" else run(case, *args)
    print("RESULT " + json.dumps(res))
