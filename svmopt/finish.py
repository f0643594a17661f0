"""From a plan's outcome to what the user gets: the Result of its task, and an honest warning.

``result(plan, outcome)`` maps the solver's answer back to the user's problem (the bias feature's
weight becomes b, padding rows leave alpha, kernel models keep their support vectors) and builds the
task's Result type; ``report`` warns (``ConvergenceWarning``) or raises (``throw=True``) when a
status is not CONVERGED, saying what ran and what would help.
"""
from __future__ import annotations

import dataclasses

import numpy as np

import jax
import jax.numpy as jnp

from . import driver, lp_certificate
from .checks import concrete, is_operator, is_traced
from .plan import Plan
from .problem import Problem
from .result import RegressionResult, Result, SolverError, Status, warn_convergence
from .stages import Outcome

__all__ = ["result", "report", "conditioning_hint", "definiteness_hint", "lp_hint", "rounding_hint"]


def _split(w, scale):
    """w and b of the user's problem from the solver's: the bias feature's weight, times its scale, is b."""
    return w[..., :-1], w[..., -1] * scale


def _first_rows(alpha, n):
    """alpha without the padding rows. Sliced on the host where it lives on one device: an eager
    slice compiles a program per n (a new process pays it at its first solve)."""
    if alpha.shape[-1] == n:
        return alpha
    sharding = getattr(alpha, "sharding", None)
    if is_traced(alpha) or sharding is None or len(sharding.device_set) != 1:
        return alpha[..., :n]
    return jax.device_put(np.asarray(alpha)[..., :n], sharding)


def _float(v):
    c = concrete(v)
    return None if c is None else float(np.asarray(c).ravel()[0])


def result(plan: Plan, outcome: Outcome, cls=Result, **fields) -> Result:
    """The Result (or subclass ``cls``) of a plan's outcome, in the user's terms."""
    out, method = outcome.summary, plan.method
    if plan.task == "regression" and cls is Result:
        cls = RegressionResult
    extras = dict(out.extras)
    w, b = out.w, out.b
    scale = plan.intercept_scaling
    if scale is not None and w is not None:
        if is_traced(scale) or not driver.on_one_device(w):
            w, b = _split(w, scale)
        else:  # one compiled call (cached like the loop's), not an eagerly compiled op per slice
            scale = np.asarray(scale, plan.pb.dtype)
            exe, _ = driver.compiled("split", _split, (w, scale))
            w, b = exe(w, scale)
    if "alpha" in extras and plan.n:
        extras["alpha"] = _first_rows(extras["alpha"], plan.n)
    status, iterations = out.status, out.iterations
    if np.ndim(status) == 0 and not is_traced(status):
        status, iterations = Status(int(status)), int(iterations)
    elif not is_traced(status):
        status, iterations = np.asarray(status), np.asarray(iterations)
    res = cls(w=w, b=b, primal_objective=out.primal, dual_objective=out.dual, gap=out.gap, status=status,
              iterations=iterations, method=outcome.method, loss=repr(plan.pb.loss), C=plan.C, classes=plan.classes,
              history=outcome.history, timings=outcome.timings, extras=extras, intercept_scaling=plan.intercept_scaling,
              state=out.state, tol=_float(method.tol), **fields)
    if outcome.note is not None:
        res.extras["auto"] = outcome.note
    if plan.handover is not None:
        if plan.axes is None:
            res.extras["stages"] = outcome.stages[0]
            res.timings = dict(res.timings, compile=sum(s["compile"] for s in outcome.stages[0]),
                               run=sum(s["run"] for s in outcome.stages[0]))
        else:
            res.extras["stages"] = outcome.stages
            if outcome.handed:
                res.extras["handover"] = outcome.handed
    if plan.pb.kernel is not None and plan.task in ("binary", "ovr", "regression", "oneclass"):
        _support_vectors(res, plan)
    return res


def _support_vectors(res: Result, plan: Plan):
    """A kernel model's support vectors (rows of X with alpha != 0) and alpha_i y_i."""
    alpha = np.asarray(res.extras["alpha"])
    X = plan.X
    if plan.task == "ovr":  # the union over the classes, one coefficient row per class
        Y = np.asarray(plan.extra["Y"])[:, :plan.n]
        sv = np.flatnonzero(np.any(alpha > 0, axis=0))
        res.dual_coef = alpha[:, sv] * Y[:, sv]
    else:
        sv = np.flatnonzero(alpha != 0)  # signed alpha (LS-SVM, epsilon-SVR's alpha - alpha*) counts too
        res.dual_coef = alpha[sv] * np.asarray(plan.pb.y)[sv]
    res.kernel = plan.kernel
    res.support_vectors = X[sv] if X is not None and not is_operator(X) else None
    res.extras["support"] = sv


def report(res: Result, plan: Plan, throw: bool, what: str = "") -> Result:
    """Warn (or raise with ``throw``) when a status is not CONVERGED: what ran, what would help."""
    status = np.asarray(res.status)
    if is_traced(res.status) or np.all(status == Status.CONVERGED):
        return res
    method = plan.method
    msg = f"{res.method}{what}: {res.message}"
    stages = res.extras.get("stages") if isinstance(res.extras, dict) else None
    if plan.axes is None and stages and len(stages) > 1:  # auto's hand-over ran: say what each stage ended with
        msg += ". The default method ran " + " -> ".join(
            f"{st['method']} {st['iterations']} ({Status(int(st['status'])).name}, relative gap "
            f"{st['relative_gap']:.2g})" for st in stages) + f"; the result is {res.method}'s"
    elif np.ndim(status) == 0:
        hint = method.advice(Status(int(status)))
        if hint:
            msg += f". {hint}"
    msg += rounding_hint(res)
    failed = np.asarray(res.C, float)
    if np.ndim(failed) and np.shape(failed) == np.shape(status):
        failed = failed[status != Status.CONVERGED]
    msg += conditioning_hint(plan.pb, np.max(failed)) + definiteness_hint(plan.pb) + lp_hint(plan.pb, res.method)
    if throw:
        raise SolverError(msg)
    warn_convergence(msg, stacklevel=4)
    return res


def rounding_hint(res: Result) -> str:
    """For a gap within tol that rounding could have produced (``problem.rounding_bound``): say so and
    what certifies it. "" otherwise."""
    extras = res.extras if isinstance(res.extras, dict) else {}
    if "rounding" not in extras or res.tol is None:
        return ""
    rounding, rel = np.asarray(extras["rounding"], float), np.asarray(res.relative_gap, float)
    hit = (rel <= res.tol) & (rel + rounding > res.tol) & (np.asarray(res.status) != Status.CONVERGED)
    if not np.any(hit):
        return ""
    worst = float(np.max(np.where(hit, rounding, 0.0)))
    dtype = np.asarray(res.primal_objective).dtype
    return (f". The computed gap is within tol, but {dtype} rounding of P and D could be as large as "
            f"{worst:.2g} |P| on this problem (large C, rows' norms and ||w||), so it certifies nothing; solve in "
            "float64 (jax.config.update('jax_enable_x64', True) and dtype='float64'), scale the features "
            "(e.g. to [0, 1] or unit variance), or loosen tol above that figure")


def lp_hint(pb: Problem, ran: str) -> str:
    """For an LP-SVM (hinge + l1) that a primal method left uncertified, even with the LP's dual from its
    point (``svmopt.lp_certificate``): the method that converges to a dual point too."""
    if "pdhg" in str(ran) or not lp_certificate.applies(pb):
        return ""
    return (f". The hinge with l1 is a linear program (the LP-SVM): {ran}'s point was not close enough for the LP "
            "dual near its margin to certify it; method=pdhg (the default's choice here) converges in the dual "
            "too")


def definiteness_hint(pb: Problem) -> str:
    """For a kernel that is not positive semidefinite (``Kernel.psd``): why no run certifies."""
    if pb.kernel is None or pb.kernel.psd:
        return ""
    return (f". The {pb.kernel.name} kernel is not positive semidefinite, so the problem is not convex: no duality "
            "gap certifies its optimum (the dual is no lower bound), and the answer is a stationary point at best, "
            "as LIBSVM's is; an rbf kernel is")


def conditioning_hint(pb: Problem, C_max) -> str:
    """For a run that did not certify: a note when C max_i s_i ||x_i||^2 exceeds 1e4, where the
    problem is close to a hard margin and every method slows down. "" otherwise, for a kernel, or
    where it cannot be had."""
    if pb.kernel is not None or is_traced(pb):
        return ""
    try:
        q = float(C_max) * float(jnp.max(pb.op.row_sq_norms() * pb.s))
    except (TypeError, ValueError, AttributeError, NotImplementedError):
        return ""
    if not q > 1e4:
        return ""
    return (f". C max_i ||x_i||^2 is {q:.2g}: the problem is close to a hard margin and ill-conditioned; "
            "features scaled to a common range (e.g. [0, 1] or unit variance) or a smaller C make it far easier")


def with_fields(res: Result, cls, **more) -> Result:
    """``res`` as an instance of the Result subclass ``cls`` with ``more`` fields."""
    return cls(**{f.name: getattr(res, f.name) for f in dataclasses.fields(Result)}, **more)
