"""Dual CD per-epoch cost and time to a relative objective error: serial vs block vs LIBLINEAR.

    python -m bench.dcd_epoch                          # a9a and ijcnn1, L1 and L2, all methods
    python -m bench.dcd_epoch --datasets a9a --losses L1 --block-sizes 8 32 --epochs 60
    python -m bench.dcd_epoch --smoke                  # heart_scale, a few epochs (CI)

Everything runs in one process, one method after the other. The machine is shared and
busy, so times are CPU times of this process (``time.process_time``: all its threads),
which waiting for a core does not inflate; wall times are printed beside them.

  f*          L2: LIBLINEAR -s 1 -e 1e-6; L1: our serial dual CD, float64, tol 1e-4 (M - m),
              certified by its duality gap (printed)
  us/coord    CPU per pass / n (all coordinates, shrunk or not)
  per epoch   svmopt: a run of ``--epochs`` passes (tol 1e-12, so none stops early), its second
              call (compiled), divided by the passes; LIBLINEAR: train time / #iter at -e 0.1
  time to e   svmopt: the epoch k where (P - f*)/f* <= e first holds (from a history run: the
              trajectory is fixed by the seed), then the time of a run of exactly k passes;
              LIBLINEAR: the fastest run among -e 1, 0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01
              whose objective meets it
  late        CPU ms per pass over the second half of the run (shrinking has acted by then)
  active      coordinates still in the pass at the end of the run
  loop cost   HLO ops in the serial loop body (one coordinate step) and us per coordinate
"""
from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
import warnings

import numpy as np

import jax

jax.config.update("jax_enable_x64", True)

import svmopt  # noqa: E402
from svmopt.losses import hinge, squared_hinge  # noqa: E402
from svmopt.solve import prepare  # noqa: E402
from svmopt.solvers.dual_cd import dual_cd  # noqa: E402

DATA = os.environ.get("SVMOPT_DATA", os.path.join(os.path.dirname(__file__), "..", "..", "shared", "data"))
FEATURES = {"a9a": 123, "ijcnn1": 22, "heart_scale": 13}
LOSSES = {"L1": (hinge, 3), "L2": (squared_hinge, 1)}
DTYPE = "float64"


def load(name):
    return svmopt.load_svmlight(os.path.join(DATA, f"{name}.xz"), n_features=FEATURES[name])


def primal(X, y, w, loss):
    r = np.maximum(1.0 - y * (X @ w), 0.0)
    return 0.5 * w @ w + float(np.sum(r if loss == "L1" else r * r))


# ---------------------------------------------------------------- LIBLINEAR
def _quiet_c(fn):
    """Run fn with the C library's stdout captured; returns (result, text)."""
    fd, path = tempfile.mkstemp()
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(fd, 1)
    try:
        res = fn()
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(fd)
    with open(path) as f:
        text = f.read()
    os.remove(path)
    return res, text


def liblinear(X, y, loss, eps):
    """Train LIBLINEAR dual CD (-s 3 / -s 1, no bias); returns (w, cpu s, wall s, passes)."""
    from liblinear.liblinearutil import parameter, problem, train

    prob = problem(y, X)
    param = parameter(f"-s {LOSSES[loss][1]} -c 1 -B -1 -e {eps}")
    c0, t0 = time.process_time(), time.perf_counter()
    model, text = _quiet_c(lambda: train(prob, param))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    it = re.search(r"#iter\s*=\s*(\d+)", text)
    w = np.array([model.w[i] for i in range(X.shape[1])]) * (1.0 if model.label[0] == 1 else -1.0)
    return w, cpu, wall, int(it.group(1)) if it else -1


# ---------------------------------------------------------------- svmopt
def _solve(X, y, loss, method, passes, history=False):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return svmopt.solve(X, y, loss=LOSSES[loss][0], method=method, fit_intercept=False, max_iter=passes,
                            history=history, dtype=DTYPE)


def timed(X, y, loss, method, passes, repeats):
    """(cpu s, wall s) of ``passes`` passes, compiled (best of ``repeats``), and the Result."""
    r = _solve(X, y, loss, method, passes)  # compiles
    best = (np.inf, np.inf)
    for _ in range(repeats):
        c0, t0 = time.process_time(), time.perf_counter()
        r = _solve(X, y, loss, method, passes)
        best = min(best, (time.process_time() - c0, time.perf_counter() - t0))
    return best, r


def trajectory(X, y, loss, method, passes):
    r = _solve(X, y, loss, method, passes, history=True)
    return np.asarray(r.history["objective"]), r.timings["compile"]


def loop_ops(X, y, loss, method):
    """HLO ops of the serial coordinate loop (body + condition): the while loop whose body updates
    the per-pass output in place (dynamic-update-slice) and contains no sort."""
    pb, _, _ = prepare(X, y, loss=LOSSES[loss][0], reg=svmopt.regularizers.l2, fit_intercept=False, dtype=DTYPE)
    from svmopt.driver import cold_start
    st = jax.jit(method.init)(pb, cold_start(method, pb))
    text = jax.jit(method.step).lower(pb, st).compile().as_text()
    comps = {m.group(1): c for c in text.split("\n\n") for m in [re.match(r"(?:ENTRY )?%(\S+) ", c.strip())] if m}
    skip = ("get-tuple-element", "parameter", "constant", "tuple", "bitcast")
    best = None
    for c in comps.values():
        for m in re.finditer(r"while\(.*?condition=%(\S+?), body=%(\S+?)[,\s]", c):
            body, cond = comps[m.group(2)], comps[m.group(1)]
            if "dynamic-update-slice" not in body or " while(" in body:
                continue
            ops = [o for o in re.findall(r" = \S+ ([a-z][\w-]*)\(", body + "\n" + cond) if o not in skip]
            if best is None or len(ops) < len(best):
                best = ops
    return best


def loop_only_us(X, y, loss, repeats):
    """CPU us per coordinate of the serial loop alone (records already in pass order, no shrinking)."""
    import importlib

    from jax import lax

    dcd = importlib.import_module("svmopt.solvers.dual_cd")  # the module (the package exports the method)

    pb, _, _ = prepare(X, y, loss=LOSSES[loss][0], reg=svmopt.regularizers.l2, fit_intercept=False, dtype=DTYPE)
    st = jax.jit(dual_cd.init)(pb)
    order = jax.numpy.asarray(np.random.default_rng(0).permutation(pb.n), jax.numpy.int32)
    width = st["table"].shape[1] - 4
    recs = dcd._records(st, order, 1)
    recs["alpha"] = st["alpha"][order]
    inf = jax.numpy.inf

    def loop(recs, w):
        out = jax.numpy.zeros((pb.n, 3), w.dtype)
        return lax.fori_loop(0, pb.n, dcd._serial_body(recs, width, inf, -inf, tails=False), (w, out))

    f = jax.jit(loop).lower(recs, st["w"]).compile()
    jax.block_until_ready(f(recs, st["w"]))
    best = np.inf
    for _ in range(max(3, repeats)):
        c0 = time.process_time()
        jax.block_until_ready(f(recs, st["w"]))
        best = min(best, time.process_time() - c0)
    return 1e6 * best / pb.n


def first_hit(obj, fstar, level):
    hit = np.flatnonzero((obj - fstar) / abs(fstar) <= level)
    return int(hit[0]) if hit.size else -1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", nargs="+", default=["a9a", "ijcnn1"])
    ap.add_argument("--losses", nargs="+", default=["L1", "L2"])
    ap.add_argument("--block-sizes", nargs="+", type=int, default=[16, 64])
    ap.add_argument("--epochs", type=int, default=200, help="passes per svmopt run (the trajectory length)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--dtype", default="float64", help="svmopt's dtype (LIBLINEAR computes in double)")
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    global DTYPE
    DTYPE = args.dtype
    if args.smoke:
        args.datasets, args.epochs, args.repeats, args.block_sizes = ["heart_scale"], 5, 1, [16]
    print(f"# {time.strftime('%Y-%m-%d %H:%M')}  jax {jax.__version__}  {DTYPE}  cpu x{os.cpu_count()}  "
          f"load {os.getloadavg()[0]:.1f} (shared machine: timings are noisy; ratios are same-run)")
    print("# command: python -m bench.dcd_epoch " + " ".join(argv if argv is not None else sys.argv[1:]))
    rows = []
    for name in args.datasets:
        X, y = load(name)
        n = X.shape[0]
        for loss in args.losses:
            # reference optimum
            if loss == "L2":
                w = liblinear(X, y, loss, 1e-6)[0]
                fstar, how = primal(X, y, w, loss), "liblinear -e 1e-6"
            else:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    r = svmopt.solve(X, y, loss=hinge, method=dual_cd(tol=1e-4), fit_intercept=False,
                                     max_iter=100000, dtype="float64")
                fstar = float(r.primal_objective)
                how = f"dual_cd tol 1e-4, rel gap {float(r.gap) / fstar:.1e}"
            print(f"\n## {name} ({n} x {X.shape[1]}, nnz {X.nnz})  {loss}  f* = {fstar:.6f}  ({how})")
            methods = [("serial", dual_cd), ("serial-noshrink", dual_cd(shrinking=False))]
            methods += [(f"block-{B}", dual_cd(variant="block", block_size=B)) for B in args.block_sizes]
            res = {}
            for label, m in methods:
                m = m(tol=1e-12)  # run every pass asked for
                obj, compile_s = trajectory(X, y, loss, m, args.epochs)
                (cpu, wall), r = timed(X, y, loss, m, args.epochs, args.repeats)
                half = timed(X, y, loss, m, args.epochs // 2, args.repeats)[0][0]
                row = dict(cpu=cpu / args.epochs, wall=wall / args.epochs, compile=compile_s,
                           late=(cpu - half) / (args.epochs - args.epochs // 2), active=int(r.extras["active"]))
                for level, key in ((1e-2, "1%"), (1e-3, "0.1%")):
                    k = first_hit(obj, fstar, level)
                    row["ep" + key] = k
                    row["t" + key] = timed(X, y, loss, m, k, args.repeats)[0] if k > 0 else (np.nan, np.nan)
                res[label] = row
            # LIBLINEAR: per pass at -e 0.1; time to 1% / 0.1% over a sweep of eps
            per, hits = [], {"1%": (np.inf, np.inf), "0.1%": (np.inf, np.inf)}
            for _ in range(args.repeats):
                w, cpu, wall, it = liblinear(X, y, loss, 0.1)
                per.append((cpu / max(it, 1), wall / max(it, 1)))
                for eps in (1, 0.5, 0.3, 0.2, 0.1, 0.05, 0.02, 0.01):
                    w, cpu, wall, it = liblinear(X, y, loss, eps)
                    rel = (primal(X, y, w, loss) - fstar) / fstar
                    for level, key in ((1e-2, "1%"), (1e-3, "0.1%")):
                        if rel <= level:
                            hits[key] = min(hits[key], (cpu, wall))
            cpu, wall = min(per)
            res["liblinear"] = {"cpu": cpu, "wall": wall, "compile": 0.0, "ep1%": -1, "ep0.1%": -1, "late": np.nan,
                                "t1%": hits["1%"], "t0.1%": hits["0.1%"], "active": n}
            ref = res["liblinear"]["cpu"]
            print(f"{'method':16s} {'cpu ms/ep':>9s} {'wall':>7s} {'x LIBLIN':>8s} {'us/coord':>8s} {'late ms':>7s} "
                  f"{'active':>6s} {'ep->1%':>6s} {'cpu s->1%':>9s} {'wall':>7s} {'ep->.1%':>7s} {'cpu s->.1%':>10s} "
                  f"{'wall':>7s} "
                  f"{'compile':>7s}")
            for label, r in res.items():
                print(f"{label:16s} {1e3 * r['cpu']:9.2f} {1e3 * r['wall']:7.2f} {r['cpu'] / ref:8.1f} "
                      f"{1e6 * r['cpu'] / n:8.3f} {1e3 * r['late']:7.2f} {r['active']:6d} {r['ep1%']:6d} "
                      f"{r['t1%'][0]:9.3f} {r['t1%'][1]:7.3f} "
                      f"{r['ep0.1%']:7d} {r['t0.1%'][0]:10.3f} {r['t0.1%'][1]:7.3f} {r['compile']:7.1f}")
                rows.append((name, loss, label, r))
            ops = loop_ops(X, y, loss, dual_cd)
            if ops:
                print(f"serial loop: {len(ops)} HLO ops per coordinate step (body + condition): {ops}")
                try:  # reaches into dual_cd's private layout, which may change
                    print(f"loop alone {loop_only_us(X, y, loss, args.repeats):.3f} us/coordinate (cpu)")
                except AttributeError as exc:
                    print(f"loop-alone timing unavailable ({exc})")
    return rows


if __name__ == "__main__":
    main()
