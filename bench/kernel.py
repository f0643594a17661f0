"""Kernel track: RBF C-SVM (hinge, free unregularized intercept) against LIBSVM.

    P(c, b) = 1/2 c^T K c + C sum_i (1 - y_i (K c + b)_i)_+      c = alpha * y  (n,)
    D(alpha) = sum_i alpha_i - 1/2 (alpha y)^T K (alpha y),  0 <= alpha <= C,  y^T alpha = 0

on a seeded subsample of a binary set (``SETS``), K formed once in float64 numpy, gamma
scikit-learn's "scale" (1 / (d Var X)) passed as a number to everyone. The free intercept
is LIBSVM's convention, and svmopt's with ``fit_intercept=True``.

Methods: every svmopt solver with ``supports_kernel`` (``svmopt.solve(..., kernel=rbf(g),
history=True)``), libsvm-official (``-s 0 -t 2``; a sweep of -e like LIBLINEAR's) and
scikit-learn SVC (a sweep of tol). f*: LIBSVM at -e 1e-7 and SVC at tol 1e-8 (each with its
exact dual value, which certifies), cross-checked against the svmopt kernel solvers in float64.
"""
from __future__ import annotations

import datetime
import json
import math
import os
import re
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .data import Dataset, load
from .methods import BenchMethod, SvmoptMethod, Trace, _Recorder, svmopt_solver_names

__all__ = ["SETS", "KernelTask", "load_kernel_task", "kernel_reference", "LibsvmMethod", "SVCMethod",
           "SvmoptKernelMethod", "kernel_methods", "parity_binary", "parity_ovo", "parity_table", "main"]

# name -> (binary dataset, training rows, test rows)
SETS = {"a9a-rbf": ("a9a", 4000, 5000), "tiny-rbf": ("tiny", 600, 321)}
SWEEP = (1.0, 0.3, 0.1, 0.03, 0.01, 3e-3, 1e-3, 3e-4, 1e-4, 1e-5)


def _dense(X):
    return X.toarray() if sp.issparse(X) else np.asarray(X)


def _rbf(A, B, gamma):
    sq = (A * A).sum(1)[:, None] + (B * B).sum(1)[None, :] - 2.0 * A @ B.T
    return np.exp(-gamma * np.maximum(sq, 0.0))


class KernelTask:
    """A binary RBF problem; iterates are W = [c (n,), b]."""

    loss, p, convention, kernel = "L1", 1.0, "free intercept", True

    def __init__(self, name, data: Dataset, C=1.0):
        self.data, self.C, self.set_name = data, C, name
        self.Xd = Xd = _dense(data.X)
        self.gamma = float(1.0 / (Xd.shape[1] * Xd.var()))
        self.K = _rbf(Xd, Xd, self.gamma)
        self.K_test = _rbf(_dense(data.X_test), Xd, self.gamma)
        self.classes = np.array([1.0])

    @property
    def name(self):
        return f"{self.set_name}/L1"

    @property
    def X(self):
        return self.data.X

    @property
    def n(self):
        return self.data.X.shape[0]

    def labels(self, k=0):
        return self.data.y

    def objective(self, W) -> float:
        W = np.asarray(W, float).ravel()
        c, b = W[:-1], W[-1]
        Kc = self.K @ c
        return float(0.5 * c @ Kc + self.C * np.sum(np.maximum(0.0, 1.0 - self.data.y * (Kc + b))))

    def dual(self, alpha) -> float:
        v = alpha * self.data.y
        return float(alpha.sum() - 0.5 * v @ (self.K @ v))

    def accuracy(self, W) -> float:
        W = np.asarray(W, float).ravel()
        f = self.K_test @ W[:-1] + W[-1]
        return float(np.mean(np.where(f > 0, 1.0, -1.0) == self.data.y_test))

    def coef(self, idx, dual_coef, b):
        """W from support indices and their alpha_i y_i."""
        c = np.zeros(self.n)
        c[np.asarray(idx, int)] = np.asarray(dual_coef, float).ravel()
        return np.append(c, b)


def load_kernel_task(name, cache_dir, C=1.0):
    base, n, n_test = SETS[name]
    ds = load(base, cache_dir)
    rng = np.random.default_rng(0)
    tr = np.sort(rng.permutation(ds.X.shape[0])[:n])
    te = np.sort(rng.permutation(ds.X_test.shape[0])[:n_test])
    sub = Dataset(name, ds.X[tr], ds.y[tr], ds.X_test[te], ds.y_test[te], False, f"{ds.source}, seeded rows")
    return KernelTask(name, sub, C)


class LibsvmMethod(BenchMethod):
    """libsvm-official C-SVC with the RBF kernel; trace = sweep of -e, problem built once."""

    name, group, losses, kernel = "libsvm", "libsvm", ("L1",), True

    def available(self):
        try:
            import libsvm.svmutil  # noqa: F401
        except ImportError as e:
            return f"libsvm-official not installed ({e})"
        return None

    def run(self, task, prob, eps):
        from libsvm.svm import PRINT_STRING_FUN, svm_parameter
        from libsvm.svmutil import svm_train

        log = []
        param = svm_parameter(f"-s 0 -t 2 -g {task.gamma!r} -c {task.C} -e {eps} -m 200")
        cb = PRINT_STRING_FUN(lambda s: log.append(s.decode()))
        param.print_func = cb
        t0 = time.perf_counter()
        m = svm_train(prob, param)
        dt = time.perf_counter() - t0
        text = "".join(log)
        sign = 1.0 if m.get_labels()[0] == 1 else -1.0  # LIBSVM's decision scores its first label
        idx = np.asarray(m.get_sv_indices()) - 1
        coef = sign * np.array([c[0] for c in m.get_sv_coef()])
        W = task.coef(idx, coef, -sign * m.rho[0])
        its = sum(int(v) for v in re.findall(r"#iter = (\d+)", text))
        return dt, W, its

    def problem(self, task):
        from libsvm.svmutil import svm_problem

        return svm_problem(task.data.y, sp.csr_matrix(task.data.X))

    def trace(self, task, ctx):
        tr = Trace(self.name, self.group, sweep=True)
        rec = _Recorder(task, ctx, tr)
        prob = self.problem(task)
        spent = last = 0.0
        for eps in SWEEP:
            if spent + last > ctx.budget_s:
                tr.note = f"budget: stopped before -e {eps:g}"
                break
            dt, W, its = self.run(task, prob, eps)
            spent, last = spent + dt, dt
            if rec.add(dt, W, its):
                break
        return tr


class SVCMethod(LibsvmMethod):
    """scikit-learn SVC (its bundled LIBSVM); trace = sweep of tol, whole fit timed."""

    name, group = "SVC", "libsvm"

    def available(self):
        try:
            import sklearn  # noqa: F401
        except ImportError as e:
            return f"scikit-learn not installed ({e})"
        return None

    def problem(self, task):
        return None

    def run(self, task, prob, eps):
        from sklearn.svm import SVC

        clf = SVC(kernel="rbf", gamma=task.gamma, C=task.C, tol=eps, cache_size=200)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            clf.fit(task.Xd, task.data.y)  # dense: SVC's faster path on this small dense-ish input
            dt = time.perf_counter() - t0
        # binary SVC: decision = dual_coef_ K + intercept_, positive = classes_[1] = +1
        return dt, task.coef(clf.support_, clf.dual_coef_[0], clf.intercept_[0]), int(np.sum(clf.n_iter_))


class SvmoptKernelMethod(SvmoptMethod):
    """An svmopt solver with ``supports_kernel``, on the kernel task."""

    kernel = True
    losses = ("L1",)

    def available(self):
        why = super().available()
        if why is None and not getattr(self.method(), "supports_kernel", False):
            why = f"{self.name} is a linear solver"
        return why

    def _solve(self, task, k, method, dtype, **kw):
        import svmopt
        from svmopt.kernels import rbf

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return svmopt.solve(task.data.X, task.data.y, method=method, C=task.C, fit_intercept=True,
                                kernel=rbf(task.gamma), dtype=dtype, **kw)

    @staticmethod
    def _w(res, task):
        sv = np.asarray(res.extras["support"])
        return task.coef(sv, np.asarray(res.dual_coef, float), float(res.b))


def kernel_methods(selected):
    """For the kernel track: the kernel forms of the selected svmopt solvers, and the selected LIBSVM peers."""
    out = [SvmoptKernelMethod(m.solver_name) for m in selected if m.group == "svmopt"]
    out += [m for m in selected if getattr(m, "kernel", False)]
    return [m for m in out if not m.available()]


def kernel_reference(task, cache_dir, budget_s=120.0, log=print, versions=None):
    """Certified f* of the kernel task (LIBSVM / SVC duals are exact), cached like the linear ones."""
    path = Path(cache_dir) / "refs" / f"{task.set_name}-rbf-g{task.gamma:.6g}-C{task.C:g}-{task.data.fingerprint}.json"
    if path.exists():
        return json.loads(path.read_text())
    t0 = time.perf_counter()
    cands = []
    for m, eps in ((LibsvmMethod(), 1e-7), (SVCMethod(), 1e-8)):
        if m.available():
            continue
        dt, W, its = m.run(task, m.problem(task), eps)
        alpha = np.clip(W[:-1] * task.data.y, 0.0, task.C)
        cands.append(dict(solver=m.name, settings=f"eps={eps:g}", P=task.objective(W), D=task.dual(alpha),
                          D_source="exact dual of its alpha", seconds=round(dt, 3), iterations=its))
    for s in svmopt_solver_names():  # cross-check with svmopt's kernel solvers in float64
        m = SvmoptKernelMethod(s)
        if m.available() or time.perf_counter() - t0 > budget_s:
            continue
        try:
            method = m.configured(tol=1e-6)
            left = max(budget_s - (time.perf_counter() - t0), 5.0)
            res = m._solve(task, 0, method, np.float64, max_iter=m.max_iter(task, method, left, np.float64))
        except Exception as e:
            log(f"    kernel reference: {m.name} skipped ({type(e).__name__}: {str(e)[:100]})")
            continue
        W = m._w(res, task)
        cands.append(dict(solver=m.name, settings="float64 tol=1e-6", P=task.objective(W), D=float(res.dual_objective),
                          D_source="svmopt-dual", seconds=round(res.timings["run"], 3), iterations=int(res.iterations)))
    fstar = min(c["P"] for c in cands)
    lower = max(c["D"] for c in cands if math.isfinite(c["D"]))
    peer = min((c["P"] for c in cands if not c["solver"].startswith("svmopt")), default=None)
    ours = min((c["P"] for c in cands if c["solver"].startswith("svmopt")), default=None)
    prov = dict(fstar=fstar, lower_bound=lower, rel_gap=(fstar - lower) / abs(fstar),
                certified=bool((fstar - lower) / abs(fstar) <= 1e-6), solver=min(cands, key=lambda c: c["P"])["solver"],
                cross_check=dict(liblinear_P=peer, svmopt_P=ours,
                                 rel_diff=None if peer is None or ours is None else abs(peer - ours) / abs(fstar)),
                candidates=cands, task=dict(dataset=task.set_name, gamma=task.gamma, C=task.C,
                                            fingerprint=task.data.fingerprint),
                date=datetime.datetime.now().isoformat(timespec="seconds"),
                seconds=round(time.perf_counter() - t0, 2), versions=versions or {})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(prov, indent=1))
    log(f"    reference {task.name}: f*={fstar:.10g} gap={prov['rel_gap']:.2e} via {prov['solver']}")
    return prov


# ------------------------------------------------------------------------------------------------
# LIBSVM parity: svmopt's kernel solver against scikit-learn's SVC (LIBSVM) at the settings
#
#   python -m bench.kernel                      # a9a, ijcnn1 at 10k / 20k / all rows; pendigits, letter one-vs-one
#   python -m bench.kernel --sets ijcnn1:10000 --ovo pendigits --reps 3
#   python -m bench.kernel --smoke              # seconds: tiny subsets, the same pipeline
#
# Same run, alternating: SVC (tol 1e-3, cache 200 MB) then svmopt (alfpgm defaults, float32,
# tol 1e-3), ``reps`` times after one untimed warm-up call (the first call's compile time is
# reported apart); medians of wall time and of process CPU time (all threads), whose ratio
# says how loaded the machine was. Then, once, svmopt in float64 with tol 1e-6 (a certified
# relative gap, so its dual is within 1e-6 of the optimum; the float32 default stops at a gap
# of 1e-3): its time against SVC's median and its dual objective against SVC's (recomputed in
# float64 from SVC's dual coefficients; per pair for one-vs-one); and the share of test
# predictions on which float32 svmopt and SVC agree.

PARITY_BINARY = {"a9a": (1.0, 0.05), "ijcnn1": (10.0, 0.5)}  # the C, gamma
PARITY_OVO = {"pendigits": 10.0, "letter": 10.0}  # C; gamma "scale" = 1 / (d Var X), X scaled to [0, 1]
PARITY_SETS = ("a9a:10000", "a9a:20000", "a9a", "ijcnn1:10000", "ijcnn1:20000", "ijcnn1")


def _times(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t, time.process_time() - c


def _svc_dual(coef, S, gamma, block=4096):
    quad = 0.0
    for i in range(0, S.shape[0], block):
        quad += coef[i:i + block] @ (_rbf(S[i:i + block], S, gamma) @ coef)
    return float(np.abs(coef).sum() - 0.5 * quad)


def _svc_pair_duals(m, gamma):
    """Dual objective of each one-vs-one pair of a fitted SVC (LIBSVM's dual_coef_ layout)."""
    k, start = m.classes_.size, np.r_[0, np.cumsum(m.n_support_)]
    out = []
    for i in range(k):
        for j in range(i + 1, k):
            si, sj = np.arange(start[i], start[i + 1]), np.arange(start[j], start[j + 1])
            coef = np.r_[m.dual_coef_[j - 1, si], m.dual_coef_[i, sj]]
            out.append(_svc_dual(coef, m.support_vectors_[np.r_[si, sj]], gamma))
    return np.array(out)


def _svc_class():
    try:
        from sklearn.svm import SVC
    except ImportError:
        return None
    return SVC


def _compare(ours, svc_fit, reps, f64):
    """``reps`` alternating timed calls of SVC (None: not installed) and of ours (float32), after an
    untimed first call of ours; then ours in float64 at tol 1e-6 (``f64``: "timed" = a compile call and
    a timed call, "once" = one call, its run time only, "off"). Returns (first, last float32 result,
    fitted SVC or None, svc times, our times, float64 (wall, CPU) or None, float64 result or None)."""
    import jax

    first = ours()
    svc, mine, m = [], [], None
    for _ in range(reps):
        if svc_fit is not None:
            m, w, c = _times(svc_fit)
            svc.append((w, c))
        r, _, c = _times(ours)
        mine.append((r.timings["run"], c))
    r64, t64 = None, None
    if f64 != "off":
        jax.config.update("jax_enable_x64", True)
        try:
            if f64 == "timed":
                ours(np.float64, 1e-6)  # compile
                r64, w64, c64 = _times(lambda: ours(np.float64, 1e-6))
                t64 = (r64.timings["run"], c64)
            else:
                r64 = ours(np.float64, 1e-6)
                t64 = (r64.timings["run"], math.nan)  # its CPU time would include the compile
        finally:
            jax.config.update("jax_enable_x64", False)
    return first, r, m, svc, mine, t64, r64


def parity_binary(name, n, reps, f64="timed", log=print):
    import svmopt
    from svmopt.kernels import rbf
    from svmopt.solvers.alfpgm import alfpgm

    C, gamma = PARITY_BINARY[name]
    ds = load(name)
    X, y = ds.X[:n], ds.y[:n]
    Xd, Xt = _dense(X), _dense(ds.X_test[:10000])
    SVC = _svc_class()

    def ours(dtype=np.float32, tol=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return svmopt.solve(X, y, method=alfpgm, C=C, kernel=rbf(gamma), dtype=dtype, tol=tol)

    fit = None if SVC is None else (lambda: SVC(C=C, gamma=gamma, tol=1e-3, cache_size=200).fit(Xd, y))
    first, r, m, svc, mine, t64, r64 = _compare(ours, fit, reps, f64)
    rel = agree = math.nan
    if m is not None:
        D_svc = _svc_dual(m.dual_coef_.ravel(), Xd[m.support_], gamma)
        agree = float(np.mean(r.predict(Xt) == m.predict(Xt)))
        if r64 is not None:
            rel = abs(float(r64.dual_objective) - D_svc) / abs(D_svc)
    note = f"nSV {int(np.sum(np.asarray(r.extras['alpha']) > 0))}" + ("" if m is None else f" (SVC {m.support_.size})")
    if r64 is not None:
        note += f"; float64 {r64.status.name} in {t64[0]:.2f} s, dual {float(r64.dual_objective):.10g}"
    return _row(f"{name}", X.shape[0], svc, mine, t64, first.timings["compile"], int(r.iterations),
                int(r.extras["inner_iterations"]), r.status.name, rel, agree, note)


def parity_ovo(name, reps, f64="timed", log=print):
    from svmopt.kernels import rbf
    from svmopt.multiclass import solve_multiclass
    from svmopt.solvers.alfpgm import alfpgm

    C = PARITY_OVO[name]
    ds = load(name)
    X, Xt = _dense(ds.X), _dense(ds.X_test)
    gamma = float(1.0 / (X.shape[1] * X.var()))
    SVC = _svc_class()

    def ours(dtype=np.float32, tol=None):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return solve_multiclass(X, ds.y, strategy="ovo", method=alfpgm, C=C, kernel=rbf(gamma), dtype=dtype,
                                    tol=tol)

    fit = None if SVC is None else (lambda: SVC(C=C, gamma=gamma, tol=1e-3, cache_size=200).fit(X, ds.y))
    first, r, m, svc, mine, t64, r64 = _compare(ours, fit, reps, f64)
    rel = agree = math.nan
    if m is not None:
        agree = float(np.mean(r.predict(Xt) == m.predict(Xt)))
        if r64 is not None:
            D = _svc_pair_duals(m, gamma)
            rel = float(np.max(np.abs(np.asarray(r64.dual_objective) - D) / np.abs(D)))
    status = "CONVERGED" if r.converged else r.message
    k = np.unique(ds.y).size
    return _row(f"{name} one-vs-one ({k * (k - 1) // 2} pairs)", X.shape[0], svc, mine, t64, first.timings["compile"],
                int(np.sum(r.iterations)), None, status, rel, agree,
                f"nSV {r.support.size}" + ("" if m is None else f" (SVC {m.support_.size})") + f", gamma {gamma:.4g}")


def _row(name, n, svc, mine, f64, compile_s, steps, inner, status, rel_dual, agree, note):
    nan2 = np.array([math.nan, math.nan])
    s = np.median(np.array(svc), axis=0) if svc else nan2
    o = np.median(np.array(mine), axis=0)
    f = np.asarray(f64, float) if f64 is not None else nan2
    return dict(set=name, n=n, svc_wall=s[0], svc_cpu=s[1], wall=o[0], cpu=o[1], ratio_wall=o[0] / s[0],
                ratio_cpu=o[1] / s[1], compile=compile_s, steps=steps, inner=inner, status=status,
                ratio_wall_f64=f[0] / s[0], ratio_cpu_f64=f[1] / s[1], rel_dual_f64=rel_dual, agree=agree,
                note=note)


def parity_table(rows, command, reps=None, clock=None):
    import platform

    import jax
    try:
        import sklearn
        skv = sklearn.__version__
    except ImportError:
        skv = "not installed (no SVC columns)"

    head = ["| set | n | SVC wall s | SVC CPU s | svmopt run s | svmopt CPU s | wall ratio | CPU ratio | "
            "first-call compile s | working sets | SMO steps | status | float64 tol 1e-6: wall / CPU ratio | "
            "its dual vs SVC's | agreement | notes |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|"]
    lines = [f"| {r['set']} | {r['n']} | {r['svc_wall']:.2f} | {r['svc_cpu']:.2f} | {r['wall']:.2f} | {r['cpu']:.2f} | "
             f"{r['ratio_wall']:.2f}x | {r['ratio_cpu']:.2f}x | {r['compile']:.1f} | {r['steps']} | "
             f"{'' if r['inner'] is None else r['inner']} | {r['status']} | "
             f"{r['ratio_wall_f64']:.2f}x / {r['ratio_cpu_f64']:.2f}x | {r['rel_dual_f64']:.1e} | "
             f"{100 * r['agree']:.2f}% | {r['note']} |" for r in rows]
    load = os.getloadavg()
    dev = jax.devices()[0]
    stamp = [f"- command: `{command}`",
             f"- JAX device: {dev.platform} ({getattr(dev, 'device_kind', '')}); medians of {reps} alternating "
             "runs; wall = svmopt's run time (compile excluded) / SVC's fit; CPU = process CPU time of the "
             "call (all threads)",
             f"- machine: {platform.machine()}, {os.cpu_count()} cores, load average {load[0]:.1f} / {load[1]:.1f} "
             f"/ {load[2]:.1f} at the end; date {datetime.datetime.now().isoformat(timespec='minutes')}",
             f"- versions: jax {jax.__version__}, scikit-learn {skv}, numpy {np.__version__}, python {platform.python_version()}"]
    return "\n".join(["# Kernel SVM: svmopt alfpgm against LIBSVM (scikit-learn SVC)", "", *stamp, "", *head, *lines, ""])


def main(argv=None):
    import argparse
    import sys

    p = argparse.ArgumentParser(prog="python -m bench.kernel", description="svmopt's kernel solver against SVC")
    p.add_argument("--sets", default=",".join(PARITY_SETS), help="binary sets, name[:rows] (default: %(default)s)")
    p.add_argument("--ovo", default="pendigits,letter", help="one-vs-one sets ('' for none)")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--f64", choices=("timed", "once", "off"), default="timed",
                   help="float64 tol 1e-6 solve for the dual check: a compile call and a timed call (default), "
                        "one call (run time only), or none")
    p.add_argument("--data", default=None, metavar="DIR",
                   help="folder of the LIBSVM .xz files (default: $SVMOPT_DATA or ../shared/data)")
    p.add_argument("--out", default=str(Path(__file__).resolve().parent / "results"))
    p.add_argument("--tag", default="kernel-parity")
    p.add_argument("--smoke", action="store_true", help="tiny subsets, one rep, output under bench/cache/smoke")
    a = p.parse_args(argv)
    if a.data is not None:
        from . import data as bench_data

        bench_data.DATA_DIR = Path(a.data).resolve()
    if a.smoke:
        a.sets, a.ovo, a.reps = "ijcnn1:1500", "", 1
        a.out = str(Path(__file__).resolve().parent / "cache" / "smoke")
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = out / f"{datetime.date.today().isoformat()}-{a.tag}"
    command = "python -m bench.kernel " + " ".join(sys.argv[1:] if argv is None else argv)
    rows = []

    def save():  # after every row: a run cut short keeps the rows it finished
        text = parity_table(rows, command, a.reps)
        stem.with_suffix(".md").write_text(text)
        with open(stem.with_suffix(".csv"), "w") as f:
            f.write(",".join(rows[0]) + "\n")
            for r in rows:
                f.write(",".join(str(v).replace(",", ";") for v in r.values()) + "\n")
        return text

    text = ""
    for spec in filter(None, a.sets.split(",")):
        name, _, n = spec.partition(":")
        rows.append(parity_binary(name, int(n) if n else None, a.reps, a.f64))
        print(rows[-1], flush=True)
        text = save()
    for name in filter(None, a.ovo.split(",")):
        rows.append(parity_ovo(name, a.reps, a.f64))
        print(rows[-1], flush=True)
        text = save()
    print(text)
    return rows


if __name__ == "__main__":
    main()
