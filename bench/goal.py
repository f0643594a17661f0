"""The goal table of issue 13: the default solve (no method given) against LIBLINEAR's best.

    python -m bench.goal                                  # CPU: the five sets, L1 / L2, 3 repeats
    python -m bench.goal --data .gpudata --dense-rows 581012 --sparse-rows 677399 --dcd-pass a9a
                                                          # on an accelerator (peers skipped if absent)

Per dataset x loss (C = 1, LIBLINEAR's bias feature -B 1 = ``intercept_scaling=1.0``, float32 for
svmopt as a user gets it):
  * f*: a float64 svmopt solve certified to a relative gap of 1e-5 (its gap and method are printed);
  * svmopt: ``solve(X, y, loss=..., intercept_scaling=1.0, tol=t)`` for t = 1e-2 and the default
    (1e-3): a run certifies a relative gap <= t, hence a relative objective error <= t. The first
    call's compile time is reported apart; the times are the median of --repeats further calls;
  * svmopt's path: the default solve stopped after k iterations (``max_iter=k``: uncertified, as
    LIBLINEAR's -e runs are), for the first k whose iterate is within the threshold (doubling, then
    bisection over k: a k within it whose predecessor is not), timed like the rest. The figure of merit of BENCHMARKS.md: the time
    until the default solve's iterate reaches the threshold;
  * LIBLINEAR's best: every solver of the problem (L1: -s 3; L2: -s 1, -s 2) over an -e sweep; the
    time to a threshold is the fastest run whose objective is within it (median of repeats).
Times are this process's CPU time (``--clock cpu``, default: fair on a shared machine; it charges
svmopt every thread it uses) or wall time (``--clock wall``). The relative error is measured in
float64 on the training objective.
"""
from __future__ import annotations

import argparse
import datetime
import math
import os
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

THRESH = (1e-2, 1e-3)
EPS = {3: (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 1e-4), 1: (1.0, 0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 1e-4),
       2: (0.3, 0.1, 0.03, 0.01, 0.003, 0.001, 1e-4)}


def clock(kind):
    return time.process_time if kind == "cpu" else time.perf_counter


def objective(X, y, w, b, p):
    """LIBLINEAR's primal with the bias feature: 1/2 (||w||^2 + b^2) + sum max(0, 1 - y (Xw + b))^p."""
    m = 1.0 - y * (X @ w + b)
    return 0.5 * (w @ w + b * b) + np.sum(np.maximum(m, 0.0) ** p)


def datasets(names, data_dir, dense_rows, sparse_rows):
    if data_dir:
        os.environ["SVMOPT_DATA"] = str(Path(data_dir).resolve())
    from bench import data

    for name in names:
        if name == "dense-gen":
            X, y = data.make_dense(dense_rows, 54, seed=0)
            yield f"dense-gen {dense_rows} x 54", X, y
        elif name == "sparse-gen":
            X, y = data.make_sparse(sparse_rows, 47_236, seed=0)
            yield f"sparse-gen {sparse_rows} x 47236", X, y
        else:
            try:
                ds = data.load(name)
            except FileNotFoundError as exc:
                print(f"skip {name}: {exc}", flush=True)
                continue
            yield name, sp.csr_matrix(ds.X), np.asarray(ds.y, float)


def reference(X, y, loss):
    """f*: a float64 solve certified to a 1e-5 gap by a method other than the one timed for the
    hinge (auto runs dual_cd there): Jacobi-scaled alm; the squared hinge's default (newton)."""
    import jax.numpy as jnp
    import svmopt
    from svmopt.solvers import alm

    method = alm(precondition=True) if loss.name == "hinge" else "auto"
    r = svmopt.solve(X, y, loss=loss, intercept_scaling=1.0, dtype=jnp.float64, tol=1e-5, max_iter=20000,
                     method=method)
    return float(r.primal_objective), float(r.gap) / abs(float(r.primal_objective)), r.method


def svmopt_rows(X, y, loss, p, fstar, repeats, tick):
    import svmopt

    out = {}
    for t in THRESH:
        kw = dict(loss=loss, intercept_scaling=1.0) | ({} if t == 1e-3 else dict(tol=t))
        first = svmopt.solve(X, y, **kw)
        times, walls = [], []
        for _ in range(repeats):
            t0, w0 = tick(), time.perf_counter()
            r = svmopt.solve(X, y, **kw)
            times.append(tick() - t0)
            walls.append(time.perf_counter() - w0)
        w, b = np.asarray(r.w, float), float(np.asarray(r.b))
        err = (objective(X, y, w, b, p) - fstar) / abs(fstar)
        out[t] = dict(time=statistics.median(times), wall=statistics.median(walls), compile=first.timings["compile"],
                      method=r.method, status=r.status.name, iters=int(r.iterations), err=err)
    return out


def path_rows(X, y, loss, p, fstar, full, repeats, tick):
    """Per threshold: (median time, k) of the default solve cut at max_iter=k, the first k within it
    (None when even the full run of ``full`` iterations is not)."""
    import warnings

    import svmopt

    kw = dict(loss=loss, intercept_scaling=1.0)
    errs = {}

    def err_at(k):
        if k not in errs:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                r = svmopt.solve(X, y, max_iter=k, **kw)
            w, b = np.asarray(r.w, float), float(np.asarray(r.b))
            errs[k] = (objective(X, y, w, b, p) - fstar) / abs(fstar)
        return errs[k]

    out = {}
    for t in THRESH:
        lo, hi = 0, 1
        while err_at(hi) > t and hi < full:
            lo, hi = hi, min(2 * hi, full)
        if err_at(hi) > t:
            out[t] = None
            continue
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if err_at(mid) <= t else (mid, hi)
        times = []
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(repeats):
                t0 = tick()
                svmopt.solve(X, y, max_iter=hi, **kw)
                times.append(tick() - t0)
        out[t] = (statistics.median(times), hi)
    return out


def liblinear_rows(X, y, p, fstar, repeats, tick):
    """Per threshold: (median time, settings) of the fastest LIBLINEAR run within it. Per solver
    the -e sweep goes from loose to tight and stops at the first run within the last threshold."""
    try:
        from liblinear import liblinearutil as ll
    except ImportError:
        return None
    prob = ll.problem(y, sp.csr_matrix(X) if not sp.issparse(X) else X)
    best = {t: (math.inf, "") for t in THRESH}
    for s in ((3,) if p == 1 else (1, 2)):
        for eps in EPS[s]:
            times = []
            for _ in range(repeats):
                t0 = tick()
                m = ll.train(prob, ll.parameter(f"-s {s} -c 1 -B 1 -e {eps} -q"))
                times.append(tick() - t0)
            wl, bl = m.get_decfun()  # w over LIBLINEAR's nr_feature (the largest index seen), b = bias * w_B
            sign = 1.0 if m.get_labels()[0] == 1 else -1.0
            w = np.zeros(X.shape[1])
            w[:len(wl)] = sign * np.asarray(wl, float)
            b = sign * bl
            err = (objective(X, y, w, b, p) - fstar) / abs(fstar)
            for t in THRESH:
                if err <= t and statistics.median(times) < best[t][0]:
                    best[t] = (statistics.median(times), f"-s {s} -e {eps:g}")
            if err <= THRESH[-1]:
                break
    return best


def dcd_pass(X, y, platforms, passes, tick):
    """dual_cd's default (variant auto) per pass on a9a, hinge with the bias feature, per platform."""
    import jax
    import svmopt
    from svmopt.solvers import dual_cd

    rows = []
    for plat in platforms:
        try:
            dev = jax.devices(plat)[0]
        except RuntimeError:
            continue
        with jax.default_device(dev):
            kw = dict(loss=svmopt.losses.hinge, method=dual_cd, intercept_scaling=1.0, max_iter=passes)
            first = svmopt.solve(X, y, **kw)
            t0, w0 = tick(), time.perf_counter()
            r = svmopt.solve(X, y, **kw)
            ct, wt = tick() - t0, time.perf_counter() - w0
            from svmopt.solve import prepare

            variant = dual_cd.resolved(prepare(X, y, loss=svmopt.losses.hinge, reg=svmopt.regularizers.l2,
                                               intercept_scaling=1.0)[0])
        it = max(int(r.iterations), 1)
        rows.append(f"| {plat} | {variant} | {it} | "
                    f"{1e3 * r.timings['run'] / it:.2f} | {1e3 * wt / it:.2f} | {1e3 * ct / it:.2f} | "
                    f"{first.timings['compile']:.2f} |")
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="a9a,ijcnn1,news20-bin,dense-gen,sparse-gen")
    ap.add_argument("--losses", default="L1,L2")
    ap.add_argument("--data", default=None, help="folder of the LIBSVM .xz files (default: SVMOPT_DATA / shared)")
    ap.add_argument("--dense-rows", type=int, default=200_000)
    ap.add_argument("--sparse-rows", type=int, default=100_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peer-repeats", type=int, default=None, help="repeats of each LIBLINEAR run (default --repeats)")
    ap.add_argument("--clock", choices=("cpu", "wall"), default="cpu")
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--dcd-pass", default="", help="dataset for dual_cd's per-pass time (e.g. a9a)")
    ap.add_argument("--dcd-platforms", default="gpu,cpu")
    ap.add_argument("--out", default=None, help="markdown file (default: print only)")
    a = ap.parse_args(argv)

    import jax

    jax.config.update("jax_enable_x64", True)  # for the float64 reference; svmopt's default stays float32
    import svmopt
    from svmopt.losses import hinge, squared_hinge

    tick = clock(a.clock)
    load0 = os.getloadavg()
    lines = [f"# Goal table: default solve vs LIBLINEAR's best ({datetime.date.today()})", "",
             f"`python -m bench.goal {' '.join(sys.argv[1:] if argv is None else argv)}`  ",
             f"machine: {platform.node()}, {os.cpu_count()} cores, backend {jax.default_backend()} "
             f"({jax.devices()[0].device_kind}), jax {jax.__version__}; load average at start {load0[0]:.1f}  ",
             f"times: {a.clock} clock, median of {a.repeats}; compile = the first call's, apart; "
             "C = 1, bias feature -B 1; svmopt float32 (default), errors in float64", "",
             "| data | loss | f* (gap) | default picks | svmopt @1e-2 | LIBLINEAR @1e-2 | ratio | svmopt @1e-3 "
             "(default tol) | LIBLINEAR @1e-3 | ratio | svmopt compile | svmopt wall @1e-3 | err @1e-3 | "
             "svmopt path @1e-2 | ratio | svmopt path @1e-3 | ratio |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(lines), flush=True)
    for name, X, y in datasets(a.datasets.split(","), a.data, a.dense_rows, a.sparse_rows):
        for lname in a.losses.split(","):
            p, loss = (1, hinge) if lname == "L1" else (2, squared_hinge)
            fstar, gap, how = reference(X, y, loss)
            ours = svmopt_rows(X, y, loss, p, fstar, a.repeats, tick)
            peer = None if a.no_peers else liblinear_rows(X, y, p, fstar, a.peer_repeats or a.repeats, tick)
            path = path_rows(X, y, loss, p, fstar, ours[1e-3]["iters"], a.repeats, tick)
            cells = []
            for t in THRESH:
                o = ours[t]
                pt, pw = peer[t] if peer else (math.nan, "skipped")
                cells += [f"{o['time']:.3f} ({o['iters']} it., {o['status'].lower()})",
                          f"{pt:.3f} {pw}" if math.isfinite(pt) else (pw or "not reached"),
                          f"{o['time'] / pt:.2f}" if math.isfinite(pt) and pt > 0 else "—"]
            row = (f"| {name} | {lname} | {fstar:.6g} ({gap:.0e}, {how}) | {ours[1e-3]['method']} | "
                   + " | ".join(cells) + f" | {ours[1e-2]['compile']:.2f} | {ours[1e-3]['wall']:.3f} | "
                   f"{ours[1e-3]['err']:.1e} | ")
            pcells = []
            for t in THRESH:
                pt = peer[t][0] if peer else math.nan
                if path[t] is None:
                    pcells += ["not reached", "—"]
                    continue
                pcells += [f"{path[t][0]:.3f} ({path[t][1]} it.)",
                           f"{path[t][0] / pt:.2f}" if math.isfinite(pt) and pt > 0 else "—"]
            row += " | ".join(pcells) + " |"
            lines.append(row)
            print(row, flush=True)
            if a.out:  # as it goes: a run cut short keeps its rows
                Path(a.out).parent.mkdir(parents=True, exist_ok=True)
                Path(a.out).write_text("\n".join(lines) + "\n")
    if a.dcd_pass:
        from bench import data as bdata

        if a.data:
            os.environ["SVMOPT_DATA"] = str(Path(a.data).resolve())
        ds = bdata.load(a.dcd_pass)
        head = ["", f"dual_cd default (variant='auto') per pass on {a.dcd_pass}, hinge, -B 1 (50 passes):", "",
                "| platform | variant | passes | ms / pass (run) | ms / pass (wall) | ms / pass (cpu clock) | compile s |",
                "|---|---|---|---|---|---|---|"]
        rows = dcd_pass(sp.csr_matrix(ds.X), np.asarray(ds.y, float), a.dcd_platforms.split(","), 50, tick)
        lines += head + rows
        print("\n".join(head + rows), flush=True)
    lines.append(f"\nload average at end {os.getloadavg()[0]:.1f}")
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
