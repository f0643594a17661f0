"""Reference optimum f* per binary (sub)problem, certified and cached with its provenance.

Candidates (each gives a primal point w, P(w) evaluated in float64 numpy, and lower bounds):

  LIBLINEAR tiny tolerance   L1: -s 3 -e 1e-6; L2: -s 1 -e 1e-6 and -s 2 -e 1e-8. The dual
                             solvers print their dual objective: a lower bound D.
  scipy L-BFGS-B (p > 1)     on the primal in float64: independent of LIBLINEAR and svmopt.
  svmopt float64             every present svmopt solver with a duality gap (alm first),
                             tol 5e-7 (relative gap), D = its dual objective.
  LinearSVC (L1)             scikit-learn's copy of LIBLINEAR's dual CD with a max_iter (the
                             official -s 3 stops at its own iteration cap), raised x4 until
                             its own KKT gap is <= 1e-6 or the budget is spent.

plus, for every w, D from ``objective.complete_dual`` (KKT completion of a dual point).
f* = min P, lower = max D, certified when (f* - lower)/|f*| <= 1e-6. The cross-check
compares LIBLINEAR's and svmopt's P. Stored as JSON under bench/cache/refs/ keyed by the
data fingerprint, loss, p, intercept convention, C and class: which solver, settings,
tolerance, P, D, gap, seconds, date, versions.
"""
from __future__ import annotations

import datetime
import json
import time
import warnings
from pathlib import Path

import numpy as np

from .methods import LiblinearMethod, SvmoptMethod, liblinear_dual, svmopt_loss, svmopt_solver_names
from .objective import complete_dual, primal

__all__ = ["reference", "task_reference", "CERTIFY_RTOL"]

CERTIFY_RTOL = 1e-6


def _key(task, k):
    return (f"{task.data.name}-{task.loss}-p{task.p:g}-{task.convention}-C{task.C:g}-k{k}-"
            f"{task.data.fingerprint}")


def task_reference(task, cache_dir, budget_s=120.0, log=print, versions=None, probe=True):
    """Sum over one-vs-rest classes of ``reference``: (f*, list of per-class provenance dicts)."""
    K = len(task.classes)
    provs = [reference(task, k, cache_dir, budget_s=max(budget_s / K, 5.0), log=log, versions=versions, probe=probe)
             for k in range(K)]
    return float(sum(p["fstar"] for p in provs)), provs


def reference(task, k, cache_dir, budget_s=120.0, log=print, versions=None, probe=True):
    path = Path(cache_dir) / "refs" / f"{_key(task, k)}.json"
    if path.exists():
        return json.loads(path.read_text())
    X, y, p, C = task.X, task.labels(k), task.p, task.C
    t_start = time.perf_counter()
    cands = []

    def add(solver, settings, w, seconds, lower=(), iterations=None):
        P = primal(X, y, w, p, C)
        bounds = {src: float(v) for src, v in lower}
        bounds["kkt-completion"] = complete_dual(X, y, w, p, C)
        src, D = max(bounds.items(), key=lambda kv: kv[1])
        cands.append(dict(solver=solver, settings=settings, P=P, D=D, D_source=src, seconds=round(seconds, 3),
                          iterations=iterations, rel_gap_own=(P - D) / abs(P)))
        return best()

    def best():
        fstar = min(c["P"] for c in cands)
        lower = max(c["D"] for c in cands)
        return (fstar - lower) / abs(fstar)

    gap = np.inf
    # 1. LIBLINEAR with a tiny tolerance (solves the one-vs-rest subproblem k as a binary one)
    if task.loss in ("L1", "L2"):
        bt = _BinaryTask(task, k)
        for s, eps in ((3, 1e-6),) if task.loss == "L1" else ((1, 1e-6), (2, 1e-8)):
            ll = LiblinearMethod(s)
            if ll.available():
                continue
            dt, W, its, text = ll.run(bt, ll.problem(bt), eps)
            gap = add(f"liblinear -s {s}", f"-e {eps:g}", W[:, 0], dt,
                      [("liblinear-printed-dual", v) for v in liblinear_dual(text)], its)
    # 1b. smooth losses (p > 1): scipy L-BFGS on the primal, an optimizer independent of both libraries
    if p > 1:
        w, dt, its = _lbfgs(X, y, p, C, max(budget_s / 4, 5.0))
        gap = add("scipy L-BFGS-B", "gtol=1e-12 ftol=1e-15", w, dt, (), its)
    # 2. L1: official LIBLINEAR stops -s 3 at its own iteration cap; scikit-learn's copy of the same
    #    dual CD takes max_iter, so it is the "LIBLINEAR tiny tolerance" that the cross-check uses
    if task.loss == "L1":
        from .methods import LinearSVCMethod

        bt = _BinaryTask(task, k)
        cap = 2000
        while time.perf_counter() - t_start < budget_s and cap <= 128_000:
            dt, W, its = LinearSVCMethod().fit(bt, cap)
            gap = add("liblinear (sklearn LinearSVC)", f"dual CD tol=1e-12 max_iter={cap}", W[:, 0], dt, (), its)
            if gap <= CERTIFY_RTOL or its < cap or cands[-1]["rel_gap_own"] <= CERTIFY_RTOL:
                break
            cap *= 4
    # 3. svmopt in float64 (certifies with its own duality gap): alm always (the cross-check),
    #    the other solvers only while the gap is still open and the budget lasts
    for name in svmopt_solver_names():
        m = SvmoptMethod(name)
        if m.available():
            continue
        spent = time.perf_counter() - t_start
        if any(c["solver"].startswith("svmopt") for c in cands) and (gap <= CERTIFY_RTOL or spent > budget_s):
            break
        try:
            method = m.configured(tol=5e-7)
            max_iter = m.max_iter(task, method, max(budget_s - spent, 5.0), np.float64, probe=probe)
            import svmopt

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                res = svmopt.solve(task.data.X, y, loss=svmopt_loss(task), method=method, C=C, fit_intercept=False,
                                   intercept_scaling=1.0 if task.bias else None, dtype=np.float64,
                                   max_iter=max_iter)
        except Exception as e:  # a solver that does not take this loss: try the next one
            log(f"    reference: svmopt:{name} skipped ({type(e).__name__}: {str(e)[:100]})")
            continue
        w = SvmoptMethod._w(res, task)
        gap = add(f"svmopt:{name}", f"float64 tol=5e-7 max_iter={max_iter} status={res.status.name}", w,
                  res.timings["run"], [("svmopt-dual", float(res.dual_objective))], int(res.iterations))
    fstar = min(c["P"] for c in cands)
    lower = max(c["D"] for c in cands)
    by_solver = {c["solver"]: c["P"] for c in cands}
    ll_P = min((v for s, v in by_solver.items() if s.startswith("liblinear")), default=None)
    sv_P = min((v for s, v in by_solver.items() if s.startswith("svmopt")), default=None)
    prov = dict(
        fstar=fstar, lower_bound=lower, rel_gap=(fstar - lower) / abs(fstar),
        certified=bool((fstar - lower) / abs(fstar) <= CERTIFY_RTOL),
        solver=min(cands, key=lambda c: c["P"])["solver"],
        cross_check=dict(liblinear_P=ll_P, svmopt_P=sv_P,
                         rel_diff=None if ll_P is None or sv_P is None else abs(ll_P - sv_P) / abs(fstar)),
        candidates=cands, task=dict(dataset=task.data.name, loss=task.loss, p=task.p, convention=task.convention,
                                    C=task.C, cls=float(task.classes[k]), fingerprint=task.data.fingerprint),
        date=datetime.datetime.now().isoformat(timespec="seconds"), seconds=round(time.perf_counter() - t_start, 2),
        versions=versions or {},
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(prov, indent=1))
    log(f"    reference {task.name} class {k}: f*={fstar:.10g} gap={prov['rel_gap']:.2e} via {prov['solver']} "
        f"({prov['seconds']:.1f}s)")
    return prov


def _lbfgs(X, y, p, C, budget_s):
    """argmin P by L-BFGS-B (P is C^1 for p > 1), stopped by its tolerances or the time budget."""
    from scipy.optimize import minimize

    t0 = time.perf_counter()

    def fg(w):
        xi = np.maximum(0.0, 1.0 - y * (X @ w))
        g = w - C * p * (X.T @ (y * xi ** (p - 1)))
        return 0.5 * w @ w + C * np.sum(xi ** p), g

    def stop(_):
        if time.perf_counter() - t0 > budget_s:
            raise StopIteration

    r = minimize(fg, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", callback=stop,
                 options=dict(maxiter=100_000, maxcor=30, gtol=1e-12, ftol=1e-15))
    return r.x, time.perf_counter() - t0, int(r.nit)


class _BinaryTask:
    """Subproblem k of a task seen as a binary task (for the peers' own one-vs-rest-free runs)."""

    def __init__(self, task, k):
        self._t, self._k = task, k
        self.C, self.bias, self.loss, self.p = task.C, task.bias, task.loss, task.p
        self.classes = np.array([1.0])

        class _D:
            X = task.data.X
            y = task.labels(k)

        self.data = _D
