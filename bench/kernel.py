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
import re
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from .data import Dataset, load
from .methods import BenchMethod, SvmoptMethod, Trace, _Recorder, svmopt_solver_names

__all__ = ["SETS", "KernelTask", "load_kernel_task", "kernel_reference", "LibsvmMethod", "SVCMethod",
           "SvmoptKernelMethod", "kernel_methods"]

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
