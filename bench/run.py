"""Run the svmopt benchmark suite (docs/BENCHMARKS.md protocol); see bench/README.md.

    python -m bench.run                       # full suite (all datasets, L1/L2/Lp, kernel track)
    python -m bench.run --quick               # a9a + ijcnn1, L1/L2, one scaling sweep (~5 min)
    python -m bench.run --smoke               # seconds; what tests/test_bench_smoke.py runs
    python -m bench.run --datasets a9a,ijcnn1 --methods svmopt,liblinear --losses L1,L2

For each dataset x loss: the certified float64 reference f* (cached in bench/cache/refs),
every method's objective-vs-time trace, time / test accuracy / iterations at relative
error 1e-2 and 1e-3, compile time apart; then the bandwidth floor and the scaling sweep.
Writes bench/results/<date>-<machine>[-tag].{md,csv} + -traces.csv + PNG plots.
"""
from __future__ import annotations

import argparse
import datetime
import gc
import math
import os
import pickle
import platform
import shlex
import sys
import time
import traceback
from importlib import metadata
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent
PRESETS = {
    # datasets in priority order: if the time limit cuts the run short, the last ones are skipped
    "full": dict(datasets="a9a,ijcnn1,news20-bin,dense-gen,sparse-gen,a9a-rbf,pendigits,letter,news20",
                 losses="L1,L2,Lp", budget=10.0, ref_budget=120.0, scaling="dense-gen", scaling_losses="L1,L2",
                 fractions="1/16,1/8,1/4,1/2,1", bw_mib=512, time_limit=40.0),
    "quick": dict(datasets="a9a,ijcnn1", losses="L1,L2", budget=10.0, ref_budget=60.0, scaling="ijcnn1",
                  scaling_losses="L2", fractions="1/16,1/8,1/4,1/2,1", bw_mib=256, time_limit=15.0),
    # smoke: every stage on a1a-sized input; compilations (seconds each on this CPU) kept to four:
    # no svmopt accuracy re-solves, no loop-overhead probe, LIBLINEAR-only scaling
    "smoke": dict(datasets="tiny", losses="L1", budget=1.0, ref_budget=10.0, scaling="tiny", scaling_losses="L1",
                  fractions="1/4,1/2,1", bw_mib=64, methods="svmopt:alm,liblinear -s 3,LinearSVC,SGD", time_limit=0.0),
}
BIG_NNZ = 10_000_000  # inputs above this get 3x the per-method budget
NOISE = ("This machine has 2 cores shared with other engineers who were running test suites during this run "
         "(load average {l0} at the start, {l1} at the end): absolute seconds are noisy and only the ratios "
         "measured in this same run mean anything; rerun before trusting a ratio within ~1.5x of 1.")
METHOD_NOTES = (
    "svmopt: `svmopt.solve(..., history=True, record_every=k)` (k = max_iter/200) in float32, objective from "
    "its history; compile = the first call's overhead (wall time minus run time, mostly compilation) measured "
    "in a fresh process with the persistent compilation cache off (bench/compile_probe.py): what a user pays "
    "on a first call; it is drawn on the time axis of the objective figure (dotted) and added in the "
    "`+compile` ratios. Accuracy at a threshold: a second solve stopped "
    "at that iteration. LIBLINEAR (liblinear-official) has no iteration cap in its API: its trace is a sweep "
    "of tolerances -e 1, 0.3, 0.1, ..., 1e-6, each a fresh timed `train` on a problem built once (untimed); "
    "the time to a threshold is that of the cheapest run whose w reaches it. LinearSVC: sweep of max_iter "
    "1, 2, 4, ... (tol 1e-12), whole `fit` timed. SGDClassifier: one `partial_fit` epoch per point, "
    "alpha = 1/(C n), bias as a column of X. Every objective is recomputed in float64 numpy on the "
    "convention-adjusted X (svmopt's float32 history objective is used for its own trace and checked against "
    "that at the end). Multiclass sets are one-vs-rest: objective and time summed over the K subproblems.")


def parse(argv):
    ap = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="a9a + ijcnn1, L1/L2, smaller budgets")
    mode.add_argument("--smoke", action="store_true", help="tiny input, seconds; output to bench/cache/smoke")
    ap.add_argument("--datasets", help="comma list from: " + ",".join(_names()))
    ap.add_argument("--methods", help="comma list of name prefixes or groups (svmopt, liblinear, sklearn); "
                                      "e.g. 'svmopt:alm,liblinear,LinearSVC,SGD'")
    ap.add_argument("--losses", help="comma list of L1, L2, Lp (Lp is svmopt only; binary sets only)")
    ap.add_argument("--p", type=float, default=1.5, help="exponent of the Lp loss (default 1.5)")
    ap.add_argument("--C", type=float, default=1.0)
    ap.add_argument("--convention", choices=("bias", "none"), default="bias",
                    help="intercept: 'bias' = regularized bias feature (-B 1 / intercept_scaling=1), 'none'")
    ap.add_argument("--budget", type=float, help="seconds per method per task (3x on inputs > 10M nonzeros)")
    ap.add_argument("--ref-budget", type=float, help="seconds for one reference optimum (split over classes)")
    ap.add_argument("--scaling", help="datasets for the scaling sweep ('' to skip)")
    ap.add_argument("--scaling-losses")
    ap.add_argument("--fractions", help="subsample fractions, e.g. 1/16,1/8,1/4,1/2,1")
    ap.add_argument("--scaling-budget", type=float, help="seconds per scaling solve (default 2 x --budget)")
    ap.add_argument("--time-limit", type=float, help="minutes for the whole run (0 = none; full 40, quick 15): "
                                                      "budgets shrink to fit, and what would start past it is "
                                                      "skipped with a note")
    ap.add_argument("--no-floor", action="store_true", help="skip the bandwidth floor")
    ap.add_argument("--dtype", choices=("float32", "float64"), default="float32", help="svmopt working precision")
    ap.add_argument("--out", help="results folder (default bench/results; smoke: bench/cache/smoke)")
    ap.add_argument("--cache", help="cache folder (default bench/cache)")
    ap.add_argument("--tag", default="", help="suffix of the output file names")
    a = ap.parse_args(argv)
    preset = PRESETS["smoke" if a.smoke else "quick" if a.quick else "full"]
    for k, v in preset.items():
        if getattr(a, k, None) is None:
            setattr(a, k, v)
    a.mode = "smoke" if a.smoke else "quick" if a.quick else "full"
    return a


def _names():
    from .data import NAMES

    return NAMES


def _frac(s):
    num, _, den = s.partition("/")
    return float(num) / float(den or 1)


def versions():
    v = {"python": platform.python_version()}
    for dist in ("svmopt", "jax", "jaxlib", "numpy", "scipy", "scikit-learn", "liblinear-official",
                 "libsvm-official", "matplotlib"):
        try:
            v[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            v[dist] = "absent"
    head = _git_head()
    if head:
        v["svmopt"] += f" ({head})"
    return v


def _git_head():
    """Commit of the working tree, read from .git (no git command)."""
    g = ROOT.parent / ".git"
    try:
        ref = (g / "HEAD").read_text().strip()
        if ref.startswith("ref: "):
            name = ref[5:]
            f = g / name
            if f.exists():
                return f.read_text().strip()[:10]
            for line in (g / "packed-refs").read_text().splitlines():
                if line.endswith(" " + name):
                    return line.split()[0][:10]
        return ref[:10]
    except OSError:
        return ""


def machine():
    cpu = platform.processor() or ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    except (ValueError, OSError):
        mem = math.nan
    return platform.node() or "unknown", cpu, os.cpu_count(), mem


def main(argv=None):
    a = parse(argv)
    import jax

    jax.config.update("jax_enable_x64", True)  # references are float64; timed svmopt runs pass dtype explicitly
    from . import data, floor, kernel, methods, reference, report, scaling
    from .objective import LOSSES, Task
    from svmopt import MissingCapability

    t_run = time.perf_counter()
    cache = Path(a.cache) if a.cache else data.CACHE_DIR
    out = Path(a.out) if a.out else (cache / "smoke" if a.smoke else ROOT / "results")
    host, cpu, cores, mem = machine()
    date = datetime.date.today().isoformat()
    stem = "smoke" if a.smoke and not a.tag else f"{date}-{host}" + (f"-{a.tag}" if a.tag else "")
    dtype = np.float32 if a.dtype == "float32" else np.float64
    vers = versions()
    l0 = os.getloadavg()[0]
    log = lambda *s: print(*s, flush=True)  # noqa: E731
    command = "python -m bench.run " + " ".join(shlex.quote(x) for x in (argv if argv is not None else sys.argv[1:]))
    log(f"[bench] {command}  ({a.mode}; out={out})")

    ms = methods.select(a.methods)
    skipped = []
    for m in ms:
        why = m.available()
        if why:
            skipped.append((m.name, why))
            log(f"[bench] skip {m.name}: {why}")
    ms = [m for m in ms if not m.available()]
    if any(m.group == "svmopt" for m in ms):
        methods.warm_eager_ops()

    res = dict(traces=[], refs=[], floor=[], scaling=[], slopes={}, breakdown=[], skipped=skipped)
    notes = []
    bw = math.nan
    if not a.no_floor:
        bw = floor.bandwidth(a.bw_mib << 20)
        log(f"[bench] read bandwidth {bw / 1e9:.2f} GB/s")

    losses = [s.strip() for s in a.losses.split(",") if s.strip()]
    names = [s.strip() for s in a.datasets.split(",") if s.strip()]
    clock = _Clock(a.time_limit)
    def n_units(name):  # (task, method) pairs a dataset will run (refusals found at run time still count)
        if name in kernel.SETS:
            return len(kernel.kernel_methods(ms))
        return sum(1 for loss in losses for m in ms if not m.kernel and loss in m.losses)

    units = sum(n_units(n) for n in names)  # pairs still to run
    for di, name in enumerate(names):
        if clock.left() <= 0:
            notes.append(f"time limit ({a.time_limit:g} min): skipped {', '.join(names[di:])}")
            log(f"[bench] {notes[-1]}")
            break
        if name in kernel.SETS:
            _kernel_track(name, a, ms, cache, vers, res, log, kernel, methods, dtype, clock, units)
            units -= n_units(name)
            continue
        t0 = time.perf_counter()
        ds = data.load(name, cache)
        log(f"[bench] {name}: {ds.X.shape[0]} x {ds.X.shape[1]}, nnz {ds.nnz}, "
            f"{'multiclass ' + str(len(ds.classes)) if ds.multiclass else 'binary'} ({time.perf_counter() - t0:.1f}s)")
        pass_time = {}
        if not a.no_floor:
            dts = (np.float32,) if a.smoke else (np.float32, np.float64)
            rows = floor.passes(ds, bw, dtypes=dts, repeats=3 if a.smoke else 5)
            res["floor"] += rows
            pass_time = {r["dtype"]: r["seconds"] for r in rows if r["what"] == "svmopt matvec+rmatvec"}
        want = a.budget * (3 if ds.nnz > BIG_NNZ else 1)
        for loss in losses:
            if clock.left() <= 0:
                notes.append(f"time limit ({a.time_limit:g} min): skipped {name}/{loss} and what follows")
                log(f"[bench] {notes[-1]}")
                break
            if loss not in LOSSES:
                raise SystemExit(f"unknown loss {loss!r}; choose from {list(LOSSES)}")
            if loss == "Lp" and ds.multiclass:
                notes.append(f"{name}: Lp skipped (multiclass; Lp runs on the binary sets)")
                continue
            task = Task(ds, loss, a.p if loss == "Lp" else LOSSES[loss], a.convention, a.C)
            fstar, provs, origin = _reference(task, cache, clock.budget(a.ref_budget, units / max(len(ms), 1)),
                                              log, vers, reference, not a.smoke)
            worst = max(provs, key=lambda p: p["rel_gap"])
            crosses = [p["cross_check"]["rel_diff"] for p in provs if p["cross_check"]["rel_diff"] is not None]
            res["refs"].append(dict(task=task.name, fstar=fstar, rel_gap=worst["rel_gap"],
                                    certified=all(p["certified"] for p in provs),
                                    solver=",".join(sorted({p["solver"] for p in provs})),
                                    cross=max(crosses) if crosses else None, origin=origin))
            for m in ms:
                if m.kernel or m.supports(task):
                    continue
                units -= 1
                if clock.left() <= 0:
                    skipped.append((f"{m.name} on {task.name}", f"time limit ({a.time_limit:g} min)"))
                    continue
                ctx = methods.Ctx(fstar=fstar, budget_s=clock.budget(want, units + 1), dtype=dtype,
                                  svmopt_accuracy=not a.smoke, probe=not a.smoke, compile_cache=cache / "compile")
                t1 = time.perf_counter()
                try:
                    tr = m.trace(task, ctx)
                except MissingCapability as e:  # the solver does not take this loss / convention
                    skipped.append((f"{m.name} on {task.name}", str(e)[:140]))
                    log(f"    {m.name:22s} {loss}: unsupported ({str(e)[:100]})")
                    continue
                except Exception as e:
                    tr = methods.Trace(m.name, m.group, note=f"failed: {type(e).__name__}: {str(e)[:160]}")
                    log(traceback.format_exc(limit=3))
                if tr.group == "svmopt" and tr.final_W is not None:
                    # svmopt's own float32 objective (its trace) against float64 numpy on its final w
                    tr.final_check = (task.objective(tr.final_W) - tr.objectives[-1]) / abs(fstar)
                    if abs(tr.final_check) > 1e-4:
                        tr.note = (tr.note + f" objective check off by {tr.final_check:.1e}").strip()
                res["traces"].append(dict(dataset=name, loss=loss, fstar=fstar, trace=tr))
                h = {thr: tr.hits.get(thr, {}).get("time") for thr in ctx.thresholds}
                log(f"    {m.name:22s} {loss}: " + "  ".join(f"t@{k:g}={_fmt(v)}" for k, v in h.items())
                    + f"  compile={_fmt(tr.compile_s)}  points={len(tr.times)}  ({time.perf_counter() - t1:.1f}s)"
                    + (f"  [{tr.note}]" if tr.note else ""))
                if tr.group == "svmopt" and tr.times and not a.smoke:
                    res["breakdown"].append(_breakdown(m, task, tr, pass_time.get(np.dtype(dtype).name), dtype))
            if not a.no_floor:
                res["floor"] += _iteration_rows(res["traces"], name, loss, task, bw, dtype)
        del ds
        gc.collect()

    fr = [_frac(s) for s in a.fractions.split(",")]
    for name in [s.strip() for s in (a.scaling or "").split(",") if s.strip()]:
        ds = data.load(name, cache)
        if not a.no_floor and not any(r["dataset"] == name for r in res["floor"]):
            res["floor"] += floor.passes(ds, bw, repeats=3 if a.smoke else 5)
        batch = [m for m in ms if (m.batch and m.group == "svmopt" and not a.smoke) or m.group == "liblinear"]
        sl = [s.strip() for s in a.scaling_losses.split(",") if s.strip()]
        for li, loss in enumerate(sl):
            if clock.left(main=False) <= 0:
                notes.append(f"time limit ({a.time_limit:g} min): scaling of {name}/{loss} skipped")
                break
            log(f"[bench] scaling {name} {loss}")
            per = clock.budget(a.scaling_budget or 2 * a.budget, (len(sl) - li) * len(batch) * len(fr), main=False)
            res["scaling"] += scaling.sweep(ds, loss, a.p if loss == "Lp" else LOSSES[loss], batch, fr,
                                            a.convention, a.C, per, log)
        del ds
        gc.collect()
    res["slopes"] = scaling.slopes(res["scaling"])

    l1 = os.getloadavg()[0]
    notes.append(f"whole run took {time.perf_counter() - t_run:.0f} s")
    res["meta"] = dict(
        date=datetime.datetime.now().isoformat(timespec="minutes"), machine=host, cpu=cpu, cores=cores,
        mem_gib=mem, versions=vers, command=command, bandwidth_gbps=bw / 1e9, bandwidth_buffer_mib=a.bw_mib,
        thresholds=methods.THRESHOLDS, C=a.C, convention=a.convention, p=a.p, dtype=a.dtype, budget_s=a.budget,
        time_limit_min=a.time_limit,
        convention_text=("bias feature 1 appended, its weight regularized: LIBLINEAR -B 1, svmopt "
                         "intercept_scaling=1, LinearSVC intercept_scaling=1, SGD on [X, 1]"
                         if a.convention == "bias" else "no intercept: -B -1, fit_intercept=False"),
        noise=NOISE.format(l0=f"{l0:.1f}", l1=f"{l1:.1f}"), method_notes=METHOD_NOTES, notes=notes)
    pkl = cache / "results" / f"{stem}.pkl"  # re-render with: python -m bench.report <pkl> [out]
    pkl.parent.mkdir(parents=True, exist_ok=True)
    with pkl.open("wb") as f:
        pickle.dump(res, f)
    paths = report.write(res, out, stem)
    log(f"[bench] wrote " + ", ".join(str(p) for p in paths.values()))
    res["paths"] = paths
    return res


def _kernel_track(name, a, ms, cache, vers, res, log, kernel, methods, dtype, clock, units):
    """RBF C-SVM with a free intercept: svmopt's kernel solvers against LIBSVM and SVC."""
    t0 = time.perf_counter()
    task = kernel.load_kernel_task(name, cache, a.C)
    log(f"[bench] {name}: {task.n} rows, RBF gamma {task.gamma:.4g}, free intercept ({time.perf_counter() - t0:.1f}s)")
    prov = kernel.kernel_reference(task, cache, clock.budget(a.ref_budget, units / max(len(ms), 1)), log, vers)
    fstar = prov["fstar"]
    res["refs"].append(dict(task=task.name, fstar=fstar, rel_gap=prov["rel_gap"], certified=prov["certified"],
                            solver=prov["solver"], cross=prov["cross_check"]["rel_diff"], origin="kernel"))
    km = kernel.kernel_methods(ms)
    for i, m in enumerate(km):
        if clock.left() <= 0:
            res["skipped"].append((f"{m.name} on {task.name}", f"time limit ({a.time_limit:g} min)"))
            continue
        ctx = methods.Ctx(fstar=fstar, budget_s=clock.budget(a.budget, units - i), dtype=dtype,
                          svmopt_accuracy=not a.smoke, probe=not a.smoke)
        t1 = time.perf_counter()
        try:
            tr = m.trace(task, ctx)
        except Exception as e:
            tr = methods.Trace(m.name, m.group, note=f"failed: {type(e).__name__}: {str(e)[:160]}")
        res["traces"].append(dict(dataset=name, loss="L1", fstar=fstar, trace=tr))
        h = {thr: tr.hits.get(thr, {}).get("time") for thr in ctx.thresholds}
        log(f"    {m.name:22s} L1: " + "  ".join(f"t@{k:g}={_fmt(v)}" for k, v in h.items())
            + f"  compile={_fmt(tr.compile_s)}  points={len(tr.times)}  ({time.perf_counter() - t1:.1f}s)"
            + (f"  [{tr.note}]" if tr.note else ""))


class _Clock:
    """The run's time limit. Budgets shrink to an equal share of what is left, leaving half of it as
    slack for the untimed work around each trace (compilation, probes, evaluation); nothing starts
    once the limit is reached. 85 % of the limit is for the tasks, the rest for the scaling sweep."""

    def __init__(self, minutes):
        self.t0 = time.perf_counter()
        self.limit = minutes * 60 if minutes else math.inf

    def left(self, main=True):
        return self.limit * (0.85 if main else 1.0) - (time.perf_counter() - self.t0)

    def budget(self, want, units_left, main=True):
        if math.isinf(self.limit):
            return want
        return max(1.0, min(want, 0.5 * self.left(main) / max(units_left, 1)))


def _fmt(v):
    return "—" if v is None or (isinstance(v, float) and not math.isfinite(v)) else f"{v:.3g}"


def _reference(task, cache, budget, log, vers, reference, probe):
    before = sum(1 for _ in (Path(cache) / "refs").glob("*.json")) if (Path(cache) / "refs").exists() else 0
    fstar, provs = reference.task_reference(task, cache, budget_s=budget, log=log, versions=vers, probe=probe)
    after = sum(1 for _ in (Path(cache) / "refs").glob("*.json"))
    return fstar, provs, "computed" if after > before else "cached"


def _tiny(task, rows=64):
    """A 64-row slice with both labels of subproblem 0 (for the fixed per-iteration overhead)."""
    from .data import Dataset
    from .objective import Task

    y = task.labels(0)
    pos, neg = np.flatnonzero(y > 0)[: rows // 2], np.flatnonzero(y < 0)[: rows // 2]
    idx = np.sort(np.r_[pos, neg])
    d = task.data
    ds = Dataset(d.name + "[tiny]", d.X[idx], y[idx], d.X_test, d.y_test, False, d.source)
    return Task(ds, task.loss, task.p, task.convention, task.C)


def _breakdown(m, task, tr, pass_s, dtype):
    """Compile vs steady state; an iteration split into passes over X, fixed cost (64-row slice), other.

    The iteration and the pass are timed back to back (best of 3 each, alternating) so that the
    machine's load is the same for both: an already compiled solve of ``tr.rerun`` iterations
    against ``matvec + rmatvec`` on the solver's own operator. Without a rerun (no threshold
    reached), the trace's per-iteration time and the floor's pass time are used.
    """
    import jax
    import svmopt

    from . import floor
    from .methods import NOMINAL_PASSES

    per = tr.per_iter_s
    if tr.rerun is not None and tr.rerun[1] > 0:
        method, k = tr.rerun
        op = svmopt.as_operator(task.data.X, dtype, bias_scale=1.0 if task.bias else None)
        w = jax.numpy.full((op.shape[1],), 0.01, dtype)
        two = jax.jit(lambda o, v: o.rmatvec(o.matvec(v)))
        pers, passes = [], []
        for _ in range(3):
            res = m._solve(task, 0, method, dtype, max_iter=k)
            pers.append(res.timings["run"] / max(int(res.iterations), 1))
            passes.append(floor.best_time(lambda: jax.block_until_ready(two(op, w)), repeats=3))
        per, pass_s = min(pers), min(passes)
    over = math.nan
    try:
        tiny = _tiny(task)
        res = m._solve(tiny, 0, m.configured(tol=1e-30), dtype, max_iter=300)
        over = res.timings["run"] / max(int(res.iterations), 1)
    except Exception:
        pass
    t2 = tr.hits.get(1e-2, {}).get("time", math.nan)
    ok = per and math.isfinite(per)
    mv = NOMINAL_PASSES.get(m.solver_name, math.nan) * pass_s / per if ok and pass_s else math.nan
    fixed = over / per if ok and math.isfinite(over) else math.nan
    # the 64-row probe runs 300 iterations: a solver whose n-independent work grows with the iteration
    # count (cutting_plane's working set) can cost more there than per iteration of the real run
    other = max(0.0, 1.0 - np.nansum([mv, fixed])) if math.isfinite(mv) else math.nan
    parts = {"matvec": mv, "fixed per-iteration cost": fixed, "other (element-wise / in-loop)": other}
    parts = {k: v for k, v in parts.items() if math.isfinite(v)}
    steady = max(parts, key=parts.get) if parts else "?"
    if not math.isfinite(t2):
        dom = f"1e-2 not reached; steady state: {steady}"
    elif tr.compile_s > t2:
        dom = f"compile ({tr.compile_s / t2:.1f}x t@1e-2); steady state: {steady}"
    else:
        dom = steady
    return dict(dataset=task.data.name, loss=task.loss, method=m.name, compile_s=tr.compile_s, t2=t2,
                s_per_iter=per, passes_per_iter=per / pass_s if pass_s else math.nan, matvec_share=mv,
                overhead_us=over * 1e6, overhead_share=fixed, other_share=other, dominant=dom)


def _iteration_rows(entries, name, loss, task, bw, dtype):
    """Per-iteration time of every traced method on the floor's scale (bytes of X as that method stores it)."""
    X = task.X
    nnz = X.nnz if hasattr(X, "nnz") else int(np.prod(X.shape))
    n = X.shape[0]
    sparse = hasattr(X, "nnz")
    item = np.dtype(dtype).itemsize
    rows = []
    for e in entries:
        tr = e["trace"]
        if (e["dataset"], e["loss"]) != (name, loss) or not math.isfinite(tr.per_iter_s) or not tr.times:
            continue
        # iterations are per class for svmopt and LIBLINEAR (summed over classes), per epoch over all K
        # classes for SGD and LinearSVC (n_iter_ is the max over classes)
        K = len(task.classes) if tr.method in ("SGD", "LinearSVC") else 1
        if tr.group == "svmopt":
            nb = nnz * (item + 4) if sparse else nnz * item
        elif tr.method.startswith("liblinear") or tr.method == "LinearSVC":
            nb = 16 * (task.data.nnz + n * (2 if task.bias else 1))  # feature_node {int, double} + terminators
        else:
            nb = nnz * 12 + 4 * (n + 1) if sparse else nnz * 8
        sec = tr.per_iter_s / K
        rows.append(dict(dataset=name, kind="sparse" if sparse else "dense", what=f"{tr.method} iteration ({loss})",
                         dtype="float64" if tr.group != "svmopt" else np.dtype(dtype).name, bytes=int(nb),
                         seconds=sec, gbps=nb / sec / 1e9, floor_multiple=sec / (nb / bw)))
    return rows


if __name__ == "__main__":
    main()
