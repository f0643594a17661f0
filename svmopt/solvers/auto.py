"""``method="auto"`` (the default): per problem, a method that certifies the gap, and what follows it where it does not.

``auto`` never runs itself: ``svmopt.solve`` (and ``solve_multiclass``, ``path``, the estimator)
replace it by ``auto.choose(pb)``, the first method of the table below that accepts the problem,
configured with the caller's ``tol``. ``Result.method`` names the method that ran and
``Result.extras["auto"]`` says why it was picked.

Decision table (first match wins; "wide": more features than rows; "CPU": the method's compiled
kernel is built, X unsharded):

  problem                                             method                    why
  a kernel                                            alfpgm, else nesvm        kernel methods (alfpgm: LIBSVM's dual,
                                                                                  hinge / epsilon_insensitive, l2,
                                                                                  free intercept)
  twice-differentiable loss (Lp: p >= NEWTON_MIN_P),  newton                    a few Newton steps, matvecs only
    l2-type regularizer, rows >= features
  squared hinge, l2, no free intercept, wide, CPU     dual_cd                   LIBLINEAR's -s 1, one compiled call
                                                                                  per pass
  squared hinge, l2, free intercept, wide, CPU        dual_newton(              dual CD passes on the bias-feature
                                                        warm="dual_cd")           problem, then projected Newton on
                                                                                  the dual keeping y^T alpha = 0
                                                      (least squares, a dual      (newton(warm="dual_cd") there)
                                                        unbounded below)
  bounded box dual (hinge), l2, no free intercept,    dual_cd                   LIBLINEAR's -s 3, one compiled
    CPU                                                                           call per pass
  bounded box dual (hinge), l2, free intercept,       dual_newton(              as for the squared hinge (its
    wide, CPU                                           warm="dual_cd")           dual is strongly convex there)
  any other loss with an l2-type regularizer          alm(precondition=True,    Jacobi-scaled steps, penalty
                                                        adapt_mu=True)            adapted when the gap stalls
  l1 / elastic net, twice-differentiable loss, CPU    newglmnet                 proximal Newton (LIBLINEAR's -s 6)
  a loss with a kink (hinge, epsilon-insensitive),     pdhg                      restarted Halpern PDHG: its dual
    l1 / elastic net                                                              iterates converge (the LP-SVM)
  l1, elastic net, smoothed l1, custom regularizers   alm (proximal step)       the one proximal method
  no duality gap for the pair                         alm(criterion="grad")     uncertified

Off the CPU only matvec methods run: a dual CD pass is a loop over coordinates, one kernel launch
per coordinate under XLA on an accelerator.

The hand-over (``Auto.handover`` gives a ``Handover`` or None). Where the caller gave no
``max_iter``, the stage runner ``svmopt.stages`` applies it the same way to a single solve and to
every problem of a batch (one-vs-rest, a C grid, a path point): the first method runs ``check``
iterations; one stopped there (MAX_ITER) with a relative gap within ``go_on`` resumes exactly to
``cap`` iterations in all; one whose status is in ``when`` goes on with ``method``, from the first
one's (w, b, alpha) where its gap is within ``warm_within``, else from zero; where that ends
uncertified with a larger gap, the first result stays. The rules:

  * dual_cd, wide data: ``dual_newton`` after ``WIDE_PASSES`` passes, from their alpha (X X^T is
    nonsingular there, the dual strongly convex, while dual CD's passes grow with C); where it has not
    certified in ``DUAL_NEWTON_STEPS`` steps (X X^T nearly singular), dual CD's passes from its alpha;
  * dual_cd, tall data: 300 passes, on to its cap (1000) within a gap of 0.1, then
    ``alm(precondition=True, adapt_mu=True)`` (its iterations hardly depend on C), from dual CD's
    point within 10 tol, else from zero (the better start far from the optimum);
  * newglmnet, STALLED or at its cap: ``alm``'s proximal steps from its point;
  * dual_newton with a free intercept (wide data, squared hinge or hinge): ``alm(precondition=True,
    adapt_mu=True)`` where it has not certified in ``FREE_DUAL_NEWTON_STEPS`` steps (its gap not looked
    at before) or stalled (nearly square data with raw scales), from its point within 10 tol, else
    from zero; then ``pdhg`` after alm as below;
  * alm (auto's first method, a loss with a box dual: the hinge with a free intercept), STALLED or
    at its cap: ``pdhg``, from its point (w, b and the multipliers) where its gap is within
    ``PDHG_WARM``, else from zero;
  * newton (an l2-type regularizer): ``NEWTON_STEPS`` steps, on to its cap within a gap of
    ``NEWTON_GO_ON``, else (or STALLED) ``alm(precondition=True, adapt_mu=True)``, from its point
    where its gap is within 1, else from zero (alm's in-place margins drifted from a far start) (Lp
    1.5 on a1a at C = 100 in float32: newton STALLED at a gap of 7e-3 after 51 steps; alm from there
    certified in 645 iterations). Where dual CD takes the problem (a box dual: the squared hinge, l2,
    no free intercept, CPU) ``dual_cd`` comes first, and alm only after it (``Handover.then``), and
    auto looks after ``NEWTON_DUAL_CD_STEPS`` (20) steps, going on to newton's cap within a gap of 1:
    newton that far from tol meets a hard-margin-like problem, dual CD's ground (bench.suite
    seed 5's g05, 17,445 x 16,079 standardized sparse, C = 30.7: newton's gap 350 after 50 steps,
    then dual CD certified in 42 passes, 0.1 s, where alm took 322 iterations, 0.43 s).

``Result.extras["stages"]`` lists what ran (timings add up, histories join); a batch lists each
problem handed over in ``extras["handover"]``. Not in a traced solve (inside the caller's jit /
vmap): there the first method ends at its cap (MAX_ITER; the warning names alm).

Measurements: docs/auto.md
"""
from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import numpy as np

import jax

from ..losses import MissingCapability
from ..result import Status
from .alfpgm import alfpgm
from .alm import alm
from .base import bounded_dual, box_dual
from .dual_cd import PASSES as DUAL_CD_PASSES, dual_cd
from .dual_newton import dual_newton
from .nesvm import nesvm
from .newglmnet import newglmnet
from .newton import newton
from .pdhg import pdhg

__all__ = ["Auto", "Handover", "auto"]

WIDE_PASSES = 100  # dual CD's passes on wide data before dual_newton takes over (docs/auto.md)
DUAL_NEWTON_STEPS = 30  # dual_newton's steps there before dual CD's passes go on from its alpha (docs/auto.md)


class Handover(NamedTuple):
    """What ``svmopt.solve`` does when auto's first method has not certified (module docstring)."""

    method: Any  # the method that takes over
    check: int  # the first method's iterations before its gap is judged
    cap: int  # its iterations in all, where the gap at ``check`` is within ``go_on``
    go_on: float  # relative gap
    warm_within: float  # relative gap within which ``method`` starts from the first one's point
    label: str  # how the note in ``Result.extras["auto"]`` names ``method``
    when: tuple = (Status.MAX_ITER,)  # the first method's statuses that hand over
    then: Any = None  # a Handover for the problems ``method`` did not certify either (its own statuses)
    limit: Any = None  # ``method``'s iterations (None: its default cap)


@dataclasses.dataclass(frozen=True)
class Auto:
    """The default policy, not a method: per problem, the method of the decision table (``choose``)
    and what follows it where it does not certify (``handover``). It takes only ``tol``, which
    passes on to the methods it picks; to tune a method, name it."""

    tol: float = 1e-3

    name = "auto"

    def __call__(self, **params) -> "Auto":
        unknown = sorted(set(params) - {"tol"})
        if unknown:
            raise TypeError(f"method='auto' takes only tol; {unknown} are parameters of a specific method: pass it, "
                            "e.g. method=svmopt.solvers.alm(rho=1.1)")
        return dataclasses.replace(self, **params)

    def candidates(self, pb, rows=None):
        """(method, why) in the order of the decision table. ``rows``: the user's rows (``pb.n`` counts the
        empty rows that pad it to a bucket, which must not turn wide data into tall)."""
        rows = pb.n if rows is None else int(rows)
        tol = dict(tol=self.tol)
        if pb.kernel is not None:
            return [(alfpgm(**tol), "kernel: AL-FPGM decomposition of LIBSVM's dual (C-SVC: hinge; epsilon-SVR: "
                                    "epsilon_insensitive; l2, free intercept)"),
                    (nesvm(**tol), "kernel: NESVM (alfpgm does not take this problem)")]
        out = []
        # l2-type only: newton on smoothed l1 stalled in float32; on wide data Jacobi-scaled ALM was faster
        if pb.reg.quadratic is not None and pb.d <= rows and not _near_kink(pb):
            out.append((newton(**tol), "twice-differentiable loss, an l2-type regularizer, rows >= features: "
                                       "truncated Newton"))
        # wide data, a box dual with no upper end (the squared hinge): Newton from 0 takes many steps;
        # dual CD certifies most such problems in a few dozen passes, and its wide hand-over (dual_newton)
        # takes the rest. A free intercept (which dual CD cannot keep) runs newton warm-started from the
        # bias-feature problem's passes
        flat = pb.replace(fit_intercept=False)
        wide_box = pb.d > rows and box_dual(flat) and not bounded_dual(flat) and dual_cd.native(pb)
        if wide_box and not pb.fit_intercept:
            out.append((dual_cd(**tol), "twice-differentiable loss with a box dual (squared hinge), l2, no free "
                                        "intercept, more features than rows, on the CPU: dual coordinate descent, "
                                        "then projected Newton on the dual where its passes have not certified"))
        if wide_box:
            out.append((dual_newton(warm="dual_cd", max_cg=FREE_DUAL_NEWTON_CG, **tol),
                        "twice-differentiable loss with a box dual (squared hinge), l2, a free intercept, more "
                        "features than rows, on the CPU: projected Newton on the dual, keeping y^T alpha = 0, from "
                        "compiled dual CD passes on LIBLINEAR's bias-feature problem"))
            out.append((newton(warm="dual_cd", warm_passes=300, **tol),
                        "a box dual without an upper end, l2, a free intercept, more features than rows, on the CPU "
                        "(a dual unbounded below, which dual_newton cannot keep on y^T alpha = 0): truncated Newton "
                        "from 300 compiled dual CD passes on LIBLINEAR's bias-feature problem"))
        if bounded_dual(pb) and dual_cd.native(pb):
            out.append((dual_cd(**tol), "a loss with a bounded dual (the hinge), l2, no free intercept, on the CPU: "
                                        "dual coordinate descent, compiled pass"))
        if pb.fit_intercept and pb.d > rows and bounded_dual(flat) and dual_cd.native(pb):
            out.append((dual_newton(warm="dual_cd", **tol),
                        "a loss with a bounded dual (the hinge), l2, a free intercept, more features than rows, on "
                        "the CPU: projected Newton on the dual, keeping y^T alpha = 0, from compiled dual CD passes "
                        "on LIBLINEAR's bias-feature problem"))
        # l1 / elastic net with a twice-differentiable loss: newglmnet where its compiled inner solve runs
        # (its pure-JAX path is a per-coordinate loop)
        if pb.reg.name in ("l1", "elastic_net") and not _near_kink(pb) and newglmnet.native(pb):
            out.append((newglmnet(**tol), "twice-differentiable loss, l1 / elastic net, on the CPU: proximal Newton "
                                            "with a compiled coordinate-descent inner solve (newGLMNET)"))
        # a loss with a kink (the hinge) and l1 / elastic net: the LP-SVM and its kin, where only the
        # primal-dual iterates of restarted PDHG converge to a dual point that certifies (docs/auto.md)
        if pb.reg.quadratic is None and not pb.loss.is_smooth:
            out.append((pdhg(**tol), "a loss with a kink and a non-quadratic regularizer (hinge + l1: a linear "
                                     "program): restarted Halpern PDHG, whose dual iterates converge too"))
        if pb.reg.quadratic is not None:
            out.append((alm(precondition=True, adapt_mu=True, **tol),
                        "loss with a kink and an l2-type regularizer: ALM with Jacobi-preconditioned steps and "
                        "a penalty that adapts when the gap stalls"))
        else:
            out.append((alm(**tol), "non-quadratic regularizer: ALM with proximal steps"))
        return out + [(alm(criterion="grad", **tol), "no duality gap for this loss / regularizer: ALM stopped "
                                                     "on the gradient (uncertified)")]

    def choose(self, pb, rows=None):
        """The method for problem ``pb`` and the reason: the first candidate whose ``validate``
        accepts it. When none does, the first one's error is raised (it names what is missing).
        ``rows``: the user's rows (``candidates``)."""
        first = None
        for method, why in self.candidates(pb, rows):
            try:
                method.validate(pb)
            except (MissingCapability, ValueError) as exc:
                first = first or exc
                continue
            return method, why
        raise first

    def handover(self, pb, method, rows=None):
        """The ``Handover`` for ``method`` (as ``choose`` returned it) on ``pb``, or None."""
        rows = pb.n if rows is None else int(rows)
        if method.name == "dual_cd" and box_dual(pb):
            smooth_dual = pb.loss.dual.l1 is None and pb.loss.dual.linear is None  # (not regression's)
            if pb.d > rows and smooth_dual:  # wide: projected Newton on the dual from dual CD's alpha
                # where its steps crawl (X X^T nearly singular: about as many features as rows, raw
                # scales), dual CD's passes from its alpha to their cap
                back = Handover(dual_cd(tol=self.tol), check=0, cap=0, go_on=0.0, warm_within=np.inf,
                                label="dual_cd", when=(Status.STALLED, Status.MAX_ITER))
                return Handover(dual_newton(tol=self.tol), check=WIDE_PASSES, cap=WIDE_PASSES, go_on=0.0,
                                warm_within=np.inf, label="dual_newton", then=back, limit=DUAL_NEWTON_STEPS)
            if not bounded_dual(pb):
                return None
            return Handover(alm(precondition=True, adapt_mu=True, tol=self.tol), check=300,
                            cap=DUAL_CD_PASSES, go_on=0.1, warm_within=10.0 * float(self.tol),
                            label="alm(precondition=True, adapt_mu=True)")
        if method.name == "dual_newton" and pb.fit_intercept:  # wide, free intercept: alm where it crawls
            # (its gap is not looked at before FREE_DUAL_NEWTON_STEPS), then pdhg at alm's cap as where alm is first
            to_alm = alm(precondition=True, adapt_mu=True, tol=self.tol)
            return Handover(to_alm, check=FREE_DUAL_NEWTON_STEPS, cap=FREE_DUAL_NEWTON_STEPS, go_on=0.0,
                            warm_within=10.0 * float(self.tol), label="alm(precondition=True, adapt_mu=True)",
                            when=(Status.STALLED, Status.MAX_ITER), then=self.handover(pb, to_alm, rows))
        if method.name == "newton" and pb.reg.quadratic is not None:  # stalled short of tol (float32 near a kink)
            cap = method.default_max_iter(pb)
            to_alm = Handover(alm(precondition=True, adapt_mu=True, tol=self.tol), check=min(cap, NEWTON_STEPS), cap=cap,
                              go_on=NEWTON_GO_ON, warm_within=1.0, label="alm(precondition=True, adapt_mu=True)",
                              when=(Status.STALLED, Status.MAX_ITER))
            if _takes(dual_cd, pb) and dual_cd.native(pb):
                # a box dual (squared hinge, l2, no free intercept): newton far from tol after its steps is a
                # hard-margin-like problem (few support vectors, a Hessian conditioned like C max ||x_i||^2),
                # where dual CD's passes are few; alm where they do not certify either
                then = to_alm._replace(warm_within=10.0 * float(self.tol), when=(Status.STALLED, Status.MAX_ITER))
                return to_alm._replace(method=dual_cd(tol=self.tol), label="dual_cd", then=then,
                                       check=min(cap, NEWTON_DUAL_CD_STEPS), go_on=NEWTON_DUAL_CD_GO_ON)
            return to_alm
        if method.name == "alm" and _takes(pdhg, pb):  # a box dual (the hinge with a free intercept): at alm's cap
            cap = method.default_max_iter(pb)
            return Handover(pdhg(tol=self.tol), check=cap, cap=cap, go_on=0.0, warm_within=PDHG_WARM, label="pdhg",
                            when=(Status.STALLED, Status.MAX_ITER))
        if method.name == "newglmnet":  # stalled (or capped) short of tol: alm's proximal steps from its point
            cap = method.default_max_iter(pb)
            return Handover(alm(tol=self.tol), check=cap, cap=cap, go_on=0.0, warm_within=np.inf, label="alm",
                            when=(Status.STALLED, Status.MAX_ITER))
        return None


FREE_DUAL_NEWTON_STEPS = 100
"""dual_newton with a free intercept (wide data; the squared hinge, the hinge, the smoothed hinge): its steps
before alm takes over, with no look at the gap before then. The gap says little there: on raw-scaled problems
it stays near 1 while the bounded rows are found, then closes in a few steps (the hinge: bench.suite seed 31's
g00 1.0 at step 17, 5e-5 at 23; seed 37's g29 0.97 at step 40, 5e-5 at 49; the squared hinge: seed 59's g13
1.0 at step 60, certified at 80). Read on the hinge (seeds 0, 3, 29, 31, 37, 46 wide problems, float32,
``python -m bench.free_intercept_wide --loss hinge --methods dual-newton-warm``: 43 certified in 1-49 steps;
a cap of 40 left seed 37's g29 and g30 to alm, which ended UNCERTIFIED). For the squared hinge the rule had
been to look after 10 steps and hand over above a gap of 0.5: on seeds 53 and 59 (23 wide problems) that sent
6 raw-scaled problems to alm which dual_newton alone certified in 21-80 steps (seed 59's g20: 0.10 s in 21
steps, against 0.40 s for 10 steps and 873 alm iterations). bench/results/2026-11-29-free-intercept-wide-L2-cpu.md."""

FREE_DUAL_NEWTON_CG = 6000
"""The squared hinge's cap on dual_newton's CG steps there (``DualNewton.max_cg``): where X X^T is nearly
singular (raw scales, about as many features as rows) its steps run CG to ``cg_iters`` one after another and
the gap stays at 1 (seed 19's g05: 33,496 CG steps in 100 Newton steps, seed 23's g35 41,665, 0.4 s a step),
where alm certifies. Of the runs that certified in 10-100 steps on seeds 0, 3, 5, 19, 23, 53, 59, all but one
took 167-5,295 CG steps (seed 59's g13: 12,708 in 80 steps, now alm's). With both caps, on seeds 61, 67, 71
and 73 (37 wide problems, not tuned on): 37 certified, as by the rule before, median time 1.06x (noise: 32 ran
the same stages)."""

NEWTON_STEPS = 50
"""Newton steps before auto looks at a run that has not certified (it certified the shared sets in 7 to
30); one within a relative gap of ``NEWTON_GO_ON`` then goes on to newton's cap, any other hands over
to alm. On bench.suite seed 3's g02 (1,831 x 27,342 sparse, raw scales, squared hinge) newton was at
a gap of 3.9 after 500 steps (16 s) where alm then certified in 89 iterations; now newton stops at 50
(gap 1.3e4) and alm from zero certifies in 96 (1.2 s in all)."""
NEWTON_GO_ON = 0.01

NEWTON_DUAL_CD_STEPS = 20
NEWTON_DUAL_CD_GO_ON = 1.0
"""Where dual CD takes over from newton (a box dual): newton's steps before auto looks, and the relative gap
within which newton goes on to its cap. bench.suite seeds 0, 3, 5, 7, 11 (the first 8 problems each, squared
hinge, bias feature): of the 40, every one newton certified within 50 steps had done so by step 20 or was
at a gap of 0.32 there (certified at 23); the 8 it did not certify in 50 steps were at gaps of 6 to 2e6 at
step 20 (and 0.48 to 2.6e6 at 50): dual CD then takes over 30 steps earlier."""

PDHG_WARM = 1e-2
"""alm's relative gap within which pdhg starts from its point. news20, one class against the rest, hinge,
free intercept: alm ended MAX_ITER after 5000 iterations at C = 1 (gap 1.9e-3) and C = 10 (gap 0.13);
pdhg from its point certified C = 1 in 256 iterations, but at C = 10 it was still at 2.6e-3 after 100,000,
where from zero it certified in 15,360."""

NEWTON_MIN_P = 1.2
"""Lp hinge losses with p below this go to alm, not newton: l''(m) = p (p - 1) (1 - m)^(p - 2) is
unbounded at the kink for p < 2, and newton stalled near p = 1 where alm certified (docs/auto.md)."""


def _takes(method, pb) -> bool:
    """Does ``method`` accept ``pb`` (its ``validate``)?"""
    try:
        method.validate(pb)
    except (MissingCapability, ValueError):
        return False
    return True


def _near_kink(pb) -> bool:
    """The loss is an Lp hinge with a concrete p < ``NEWTON_MIN_P``."""
    if pb.loss.name != "lp_hinge":
        return False
    try:
        return float(pb.loss.params["p"]) < NEWTON_MIN_P
    except (TypeError, KeyError, jax.errors.ConcretizationTypeError):
        return False


auto = Auto()
"""method="auto", the default of ``svmopt.solve``: replaced per problem by ``auto.choose(problem)`` (see the table above)."""
