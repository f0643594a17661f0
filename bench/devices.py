"""Devices on one CPU: one device with XLA's intra-op threads vs host devices, and one-vs-rest.

    python -m bench.devices threads [--datasets a9a,news20-bin,dense-gen] [--repeats 5] [--iters 60]
    python -m bench.devices ovr [--datasets letter,pendigits,news20] [--methods alm,dual_cd] [--repeats 2]
    python -m bench.devices both --out bench/results/<date>-devices-cpu.md

threads  a matvec-bound solve (alm, hinge, fixed iteration count: tol 1e-12 never stops it
         early) in three variants, each in its own process because the host device count is
         fixed when jax starts (XLA_FLAGS=--xla_force_host_platform_device_count=N):
           1dev      no flag; one device, XLA's intra-op thread pool (svmopt's default)
           1dev@2    the flag set to 2, the solve still on one device (what the flag costs
                     a user who sets it and does not shard)
           2dev      the flag set to 2, rows split over both (``svmopt.shard_rows``)
         Metric: run time per iteration (compile apart), the median over processes; the
         variants are interleaved (1dev, 1dev@2, 2dev, 1dev, ...) so drifting load hits all.
ovr      one-vs-rest, squared hinge, C = 1, bias feature (intercept_scaling = 1):
           ovr       ``svmopt.solve_multiclass`` (defaults: every local device, batch "auto";
                     ovr-loop / ovr-vmap force the batch mode)
           loop      a Python loop of ``svmopt.solve`` on each class-vs-rest problem
           ovr@2     ``solve_multiclass`` with the flag set to 2 (classes as lanes over two devices)
           LinearSVC scikit-learn's one-vs-rest LIBLINEAR dual CD (skipped when not installed)
         Each variant in its own process, called ``--calls`` times: the first call's compile
         time is reported apart, the time is that of the last call (warm: compile cached).
         Per-class iteration counts and the test accuracy come with each row.
GPU      ``--devices-flag 0`` leaves XLA_FLAGS alone (run on the accelerator); ``--data DIR``
         reads the .xz files from DIR.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------- workers
def _worker(spec):
    import warnings

    import jax

    import svmopt
    from svmopt.losses import hinge, squared_hinge
    from svmopt.solvers import alm, dual_cd

    from . import data

    warnings.simplefilter("ignore")
    ds = data.load(spec["dataset"])
    methods = {"alm": alm, "dual_cd": dual_cd}
    out = dict(spec, devices=[str(d) for d in jax.devices()], load=list(os.getloadavg()),
               shape=list(ds.X.shape), nnz=int(ds.nnz))
    if spec["kind"] == "threads":
        kw = dict(method=alm, loss=hinge, tol=1e-12, max_iter=spec["iters"], dtype=spec.get("dtype"))
        X, y = ds.X, ds.y
        if spec["variant"] == "2dev":
            X, y = svmopt.shard_rows(X, y)
        per, comp = [], None
        for k in range(spec["calls"]):
            r = svmopt.solve(X, y, **kw)
            if k == 0:
                comp = r.timings["compile"]
            else:
                per.append(r.timings["run"] / max(int(r.iterations), 1))
        out.update(per_iter=per, compile=comp, iterations=int(r.iterations), primal=float(r.primal_objective))
        return out
    # one-vs-rest
    method = methods.get(spec["method"])
    kw = dict(loss=squared_hinge, C=1.0, intercept_scaling=1.0, dtype=spec.get("dtype"))
    classes = np.unique(ds.y)
    v = spec["variant"]
    for k in range(spec["calls"]):
        t0 = time.perf_counter()
        if v == "LinearSVC":
            from sklearn.svm import LinearSVC
            m = LinearSVC(C=1.0, loss="squared_hinge", intercept_scaling=1.0, max_iter=1000).fit(ds.X, ds.y)
            wall = time.perf_counter() - t0
            acc = float(np.mean(m.predict(ds.X_test) == ds.y_test))
            its, comp, status = [int(m.n_iter_)], 0.0, []
        elif v.startswith("ovr"):  # ovr-loop / ovr-vmap: batch mode forced
            r = svmopt.solve_multiclass(ds.X, ds.y, method=method, batch=v[4:] if "-" in v else "auto", **kw)
            wall = time.perf_counter() - t0
            acc = float(np.mean(r.predict(ds.X_test) == ds.y_test))
            its, comp = np.asarray(r.iterations).tolist(), r.timings["compile"]
            status = np.asarray(r.status).tolist()
        else:  # loop
            rs = [svmopt.solve(ds.X, np.where(ds.y == c, 1.0, -1.0), method=method, **kw) for c in classes]
            wall = time.perf_counter() - t0
            W = np.stack([np.asarray(r.w) for r in rs])
            b = np.array([float(r.b) for r in rs])
            pred = classes[np.argmax(np.asarray(ds.X_test @ W.T) + b, axis=1)]
            acc = float(np.mean(pred == ds.y_test))
            its, comp = [int(r.iterations) for r in rs], sum(r.timings["compile"] for r in rs)
            status = [int(r.status) for r in rs]
        if k == 0:
            first = dict(wall=wall, compile=comp)
    out.update(first=first, wall=wall, iterations=its, status=status, accuracy=acc, classes=len(classes))
    return out


def _spawn(spec, flag, timeout):
    env = dict(os.environ)
    if flag:
        env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + f" --xla_force_host_platform_device_count={flag}").strip()
    try:
        p = subprocess.run([sys.executable, "-m", "bench.devices", "_worker", json.dumps(spec)], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(spec, error=f"stopped after {timeout} s (--timeout)")
    lines = [s for s in p.stdout.splitlines() if s.startswith("RESULT ")]
    if p.returncode or not lines:
        return dict(spec, error=(p.stderr or p.stdout)[-800:])
    return json.loads(lines[-1][7:])


# ------------------------------------------------------------------------------------- runs
def threads(args, log):
    rows = []
    variants = [("1dev", 0), ("1dev@2", 2), ("2dev", 2)]
    for rep in range(args.repeats):
        for name in args.datasets.split(","):
            for v, flag in variants:
                spec = dict(kind="threads", dataset=name, variant=v, iters=args.iters, calls=3, dtype=args.dtype)
                r = _spawn(spec, flag, args.timeout)
                r["repeat"] = rep
                rows.append(r)
                args.save(rows)
                log(f"threads {name} {v} rep {rep}: " + (r.get("error", "")[-300:] or
                    f"{1e3 * np.median(r['per_iter']):.2f} ms/it, compile {r['compile']:.2f} s, load {r['load'][0]:.1f}"))
    return rows


def ovr(args, log):
    rows = []
    variants = [(v, args.devices_flag if v.endswith("@2") else 0) for v in args.variants.split(",")
                if v and (args.devices_flag or not v.endswith("@2"))]
    for rep in range(args.repeats):
        for name in args.datasets.split(","):
            todo = [(m, v, f) for m in args.methods.split(",") for v, f in variants]
            if rep == 0 and args.sklearn:
                todo.append(("-", "LinearSVC", 0))
            for m, v, flag in todo:
                calls = 1 if v == "LinearSVC" else args.calls  # nothing to compile: one call
                spec = dict(kind="ovr", dataset=name, method=m, variant=v, calls=calls, dtype=args.dtype)
                r = _spawn(spec, flag, args.timeout)
                r["repeat"] = rep
                rows.append(r)
                args.save(rows)
                log(f"ovr {name} {m} {v} rep {rep}: " + (r.get("error", "")[-300:] or
                    f"{r['wall']:.2f} s (first call {r['first']['wall']:.2f} s, compile {r['first']['compile']:.2f})"
                    f" its {r['iterations']} acc {r['accuracy']:.4f} load {r['load'][0]:.1f}"))
    return rows


# ------------------------------------------------------------------------------------- report
def _versions():
    import importlib.metadata as md
    vs = [f"python {platform.python_version()}"]
    for p in ("jax", "jaxlib", "numpy", "scipy", "scikit-learn"):
        try:
            vs.append(f"{p} {md.version(p)}")
        except md.PackageNotFoundError:
            vs.append(f"{p} missing")
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout
    return ", ".join(vs) + f", svmopt {rev.strip()}"


def _med(xs):
    return float(np.median(xs)) if xs else float("nan")


def report(th, ov, args, load0, load1):
    out = [f"# svmopt on several devices, one CPU - {datetime.date.today()}", "",
           f"- machine: {platform.node()}, {os.cpu_count()} cores; {_versions()}",
           f"- command: `python -m bench.devices {' '.join(sys.argv[1:])}`",
           f"- load average (1, 5, 15 min) at start {load0}, at end {load1}; every variant ran in its own process,",
           "  interleaved, so a change of load hits each; medians over repeats", ""]
    if th:
        out += ["## One device (XLA intra-op threads) vs two host devices: alm, hinge, time per iteration", "",
                f"{args.iters} iterations per solve (tol 1e-12), 2 timed solves per process after a first (compile) call, "
                f"{args.repeats} processes per variant; dtype {args.dtype or 'default'}. Ratio = 2dev / 1dev (< 1: two "
                "devices faster).", "",
                "| dataset | n x d, nnz | 1dev ms/it | 1dev@2 ms/it | 2dev ms/it | 2dev / 1dev | per-repeat ratios | compile 1dev / 2dev s |",
                "|---|---|---|---|---|---|---|---|"]
        for name in dict.fromkeys(r["dataset"] for r in th):
            rs = [r for r in th if r["dataset"] == name and "error" not in r]
            if not rs:
                continue
            med = {v: _med([np.median(r["per_iter"]) for r in rs if r["variant"] == v]) for v in ("1dev", "1dev@2", "2dev")}
            pairs = [np.median(a["per_iter"]) / np.median(b["per_iter"]) for a in rs for b in rs
                     if a["variant"] == "2dev" and b["variant"] == "1dev" and a["repeat"] == b["repeat"]]
            comp = {v: _med([r["compile"] for r in rs if r["variant"] == v]) for v in ("1dev", "2dev")}
            out.append(f"| {name} | {rs[0]['shape'][0]:,} x {rs[0]['shape'][1]:,}, {rs[0]['nnz']:,} | "
                       f"{1e3 * med['1dev']:.2f} | {1e3 * med['1dev@2']:.2f} | {1e3 * med['2dev']:.2f} | "
                       f"{med['2dev'] / med['1dev']:.2f} | {', '.join(f'{p:.2f}' for p in pairs)} | "
                       f"{comp['1dev']:.1f} / {comp['2dev']:.1f} |")
        out.append("")
    if ov:
        out += ["## One-vs-rest vs a loop of binary solves vs LinearSVC (squared hinge, C = 1, bias feature)", "",
                f"Warm time = the last of {args.calls} calls in one process (compile cached); compile = the first "
                "call's compile time. Median over repeats. Iterations: per class, in class order (LinearSVC: its "
                "n_iter_, the largest over classes).", "",
                "| dataset | method | variant | warm s | first call s | compile s | test acc | status | iterations per class |",
                "|---|---|---|---|---|---|---|---|---|"]
        for name in dict.fromkeys(r["dataset"] for r in ov):
            for m in args.methods.split(",") + ["-"]:
                for v in ("ovr", "ovr-loop", "ovr-vmap", "loop", "ovr@2", "LinearSVC"):
                    rs = [r for r in ov if r["dataset"] == name and r["method"] == m and r["variant"] == v
                          and "error" not in r]
                    if not rs:
                        continue
                    st = "all converged" if all(s == 0 for s in rs[-1]["status"]) else str(rs[-1]["status"])
                    out.append(f"| {name} | {m} | {v} | {_med([r['wall'] for r in rs]):.2f} | "
                               f"{_med([r['first']['wall'] for r in rs]):.2f} | "
                               f"{_med([r['first']['compile'] for r in rs]):.2f} | {rs[-1]['accuracy']:.4f} | {st} | "
                               f"{' '.join(map(str, rs[-1]['iterations']))} |")
        out.append("")
    errs = [r for r in th + ov if "error" in r]
    if errs:
        out += ["## Failed or skipped runs", ""] + [f"- {r['kind']} {r['dataset']} {r.get('method', '')} "
                                                      f"{r['variant']}: `{r['error'].splitlines()[-1] if r['error'] else ''}`"
                                                      for r in errs] + [""]
    return "\n".join(out)


def main(argv=None):
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "_worker":
        print("RESULT " + json.dumps(_worker(json.loads(argv[1]))), flush=True)
        return
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["threads", "ovr", "both"])
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--methods", default="alm,dual_cd")
    ap.add_argument("--repeats", type=int, default=None)
    ap.add_argument("--iters", type=int, default=60)
    ap.add_argument("--calls", type=int, default=2)
    ap.add_argument("--dtype", default=None)
    ap.add_argument("--devices-flag", type=int, default=2, help="host devices for the @2 variants (0: leave XLA_FLAGS)")
    ap.add_argument("--variants", default="ovr,loop,ovr@2",
                    help="ovr variants: ovr (batch auto), ovr-loop, ovr-vmap, loop, ovr@2 (ovr on the forced host devices)")
    ap.add_argument("--no-sklearn", dest="sklearn", action="store_false")
    ap.add_argument("--data", default=None, help="directory of the .xz files (default: SVMOPT_DATA or ../shared/data)")
    ap.add_argument("--timeout", type=int, default=1800)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    if args.data:
        os.environ["SVMOPT_DATA"] = str(Path(args.data).resolve())
    if args.sklearn:
        try:
            import sklearn  # noqa: F401
        except ImportError:
            print("scikit-learn not installed: LinearSVC skipped", flush=True)
            args.sklearn = False
    load0 = [round(x, 2) for x in os.getloadavg()]
    log = lambda s: print(s, flush=True)  # noqa: E731
    th, ov = [], []

    def save(rows):  # the report so far, after every run (a run stopped from outside keeps its rows)
        if args.out:
            part = (rows, []) if args.what == "threads" or (args.what == "both" and not th) else (th, rows)
            a = argparse.Namespace(**vars(args))
            a.repeats = getattr(args, "th_repeats", args.repeats) or 1
            Path(args.out).write_text(report(*part, a, load0, [round(x, 2) for x in os.getloadavg()]) + "\n")

    args.save = save
    if args.what in ("threads", "both"):
        a = argparse.Namespace(**vars(args))
        a.datasets = args.datasets if args.what == "threads" and args.datasets else "a9a,news20-bin,dense-gen"
        a.repeats = args.repeats or 5
        th = threads(a, log)
        args.th_datasets, args.th_repeats = a.datasets, a.repeats
    if args.what in ("ovr", "both"):
        a = argparse.Namespace(**vars(args))
        a.datasets = args.datasets if args.what == "ovr" and args.datasets else "letter,pendigits,news20"
        a.repeats = args.repeats or 2
        ov = ovr(a, log)
    load1 = [round(x, 2) for x in os.getloadavg()]
    a = argparse.Namespace(**vars(args))
    a.repeats = getattr(args, "th_repeats", args.repeats)
    text = report(th, ov, a, load0, load1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")
        Path(args.out).with_suffix(".json").write_text(json.dumps(dict(threads=th, ovr=ov)))


if __name__ == "__main__":
    main()
