"""``method="auto"`` (the default): the solver and settings that measured fastest to a certified gap.

``auto`` never runs itself: ``svmopt.solve`` (and ``solve_multiclass``, ``path``, the estimator)
replace it by ``auto.choose(pb)``, the first method of the table below that accepts the
problem, configured with the caller's ``tol``. ``Result.method`` names the method that ran and
``Result.extras["auto"]`` says why it was picked.

The decision table (first match wins; every row certifies the relative duality gap):

  problem                                         method                     why
  ----------------------------------------------  -------------------------  -------------------------
  a kernel                                        alfpgm, else nesvm         the kernel methods; alfpgm
                                                                             where it applies (hinge, l2,
                                                                             free intercept)
  twice-differentiable loss (squared hinge, Lp    newton                     a few Newton steps of a
  with p >= 1.2, logistic, least squares,                                    handful of matvecs each
  smoothed hinge, from_function), l2-type
  regularizer, rows >= features
  the squared hinge (a box dual without an        newton(warm="dual_cd")    LIBLINEAR's -s 1: dual CD
  upper end), l2, no free intercept, more                                    passes, then Newton steps
  features than rows, on the CPU with the                                    from their w
  compiled pass
  a loss whose dual is a bounded box (the         dual_cd                    LIBLINEAR's -s 3 as one
  hinge), l2, no free intercept (the bias                                    compiled call per pass;
  feature or none), on the CPU with the                                      shrinking fixes most of
  compiled pass (svmopt._dcd.available())                                    alpha at a bound early;
                                                                             then dual_newton (wide
                                                                             data) or alm if
                                                                             uncertified (the
                                                                             hand-over, below)
  any other loss with an l2-type regularizer      alm(precondition=True,     Jacobi-scaled ALM steps,
                                                      adapt_mu=True)         penalty adapted on a stall
  (the hinge with a free intercept or off the
  CPU; any loss on wide data)
  l1 or elastic net with a twice-differentiable   newglmnet                  newGLMNET: Newton steps,
  loss (Lp with p >= 1.2), on the CPU with the                               the l1 term exact in the
  compiled inner solve                                                       model, coordinate descent
                                                                             on it (compiled)
  l1, elastic net, smoothed l1, custom           alm (proximal step)        the one prox method
  regularizers (and the above without the
  compiled kernel, or with a kinked loss)

On accelerators every row that runs is matvecs only: dual CD's pass is a per-coordinate loop
(a kernel launch per coordinate under XLA there), so the dual_cd row applies on the CPU only.
The measurements behind it (time to a certified 1e-2 / 1e-3 gap against LIBLINEAR's best, same
run) are in docs/auto.md and bench/results/.

The hand-over (``Auto.handover``). On wide data (more features than rows), where auto picked
dual_cd and the caller gave no ``max_iter``, dual CD runs ``WIDE_PASSES`` (100) passes; if they
did not certify, ``dual_newton`` (projected Newton on the same dual, ``svmopt.solvers.dual_newton``)
goes on from their alpha. There X X^T is nonsingular and the dual strongly convex: news20-bin
(float32, bias feature, one core) C = 1 / 10 / 100: 0.44 / 0.28 / 0.28 s, 16 / 7 / 7 Newton steps,
all certified, against 0.53 / 5.05 / 11.4 s (UNCERTIFIED at C = 100) for dual CD's 1000 passes
followed by alm. 50 passes first left it STALLED at C = 100 (float32), 300 cost 0.2 s more at
C = 1; at C = 1 dual CD alone needed 589 passes. On tall data the text below applies.

On tall data, dual CD's passes to a certified gap grow about in proportion
to C (the hinge, a9a: 126 passes at C = 1, 415 at 3, 1250 at 10, 11137 at 100), while
Jacobi-scaled ALM's iterations hardly depend on C (a9a: 830 to 1630). So where auto picked
dual_cd and the caller gave no ``max_iter``, ``svmopt.solve`` (one C, eager) runs it for 300
passes; if they did not certify, it goes on to dual_cd's 1000 passes where the relative gap is
within 0.1 (or the data are wide: there the gap of dual CD's w says little about its progress,
news20-bin C = 1 is at 0.15 after 300 passes and certified after 589), and otherwise, or if the
1000 did not certify either, hands over to ``alm(precondition=True, adapt_mu=True)``. ALM
starts from dual CD's (w, alpha) on wide data (news20-bin C = 3 / 10, gaps 0.38 / 0.37 after
1000 passes: 354 / 521 ALM iterations, against 1910 / 2368 from zero) and on tall data when the
gap is within 10 tol (a9a C = 10 at 1.3e-3: 5 iterations); further away on tall data it starts
from zero (a9a C = 100 from the point of 300 passes at gap 0.82: 3856 iterations, from zero
1461; ijcnn1 C = 100 at 1.3e-2: 4.2 against 3.0 s). Default solve, float32 + bias feature, wall:
a9a C = 10 / 100 0.9 / 4.0 s, ijcnn1 C = 30 / 100 0.7 / 4.7 s, dense-gen 50k C = 30 / 100 3.5 /
9.5 s, news20-bin C = 3 / 10 2.3 / 3.0 s, all certified (before: MAX_ITER after 1000 passes
except ijcnn1 C = 30). ``Result.method`` then names alm, ``Result.extras["stages"]`` lists what
ran, the timings add up every stage and the history joins them. ``solve_multiclass``
(one-vs-rest), ``solve`` with a C grid and ``svmopt.path`` run their problems to dual_cd's cap,
then hand each uncertified one to the same alm (warm by the same rule), one after another
(letter C = 100: 17 of 26 classes uncertified before, 5 after, none with a larger gap;
``Result.method`` "dual_cd+alm", per problem in ``extras["handover"]``). Where alm ends
uncertified with a larger gap, the first result stays. Not in a traced solve (inside the
caller's jit / vmap): there dual_cd ends at its cap as before (MAX_ITER, its warning names alm).
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
from .dual_cd import dual_cd
from .dual_newton import dual_newton
from .nesvm import nesvm
from .newglmnet import newglmnet
from .newton import newton

__all__ = ["Auto", "Handover", "auto"]

WIDE_PASSES = 100  # dual CD's passes on wide data before dual_newton takes over (module docstring)


class Handover(NamedTuple):
    """What ``svmopt.solve`` does when auto's first method has not certified (module docstring)."""

    method: Any  # the method that takes over
    check: int  # the first method's iterations before its gap is judged
    cap: int  # its iterations in all, where the gap at ``check`` is within ``go_on``
    go_on: float  # relative gap
    warm_within: float  # relative gap within which ``method`` starts from the first one's point
    label: str  # how the note in ``Result.extras["auto"]`` names ``method``
    when: tuple = (Status.MAX_ITER,)  # the first method's statuses that hand over


@dataclasses.dataclass(frozen=True)
class Auto:
    """The default policy, not a method: per problem, the method that measured fastest to a certified
    gap (``choose``) and what follows it where it does not certify (``handover``). It takes only
    ``tol``, which passes on to the methods it picks; to tune a method, name it."""

    tol: float = 1e-3

    name = "auto"

    def __call__(self, **params) -> "Auto":
        unknown = sorted(set(params) - {"tol"})
        if unknown:
            raise TypeError(f"method='auto' takes only tol; {unknown} are parameters of a specific method: pass it, "
                            "e.g. method=svmopt.solvers.alm(rho=1.1)")
        return dataclasses.replace(self, **params)

    def candidates(self, pb):
        """(method, why) in the order of the decision table."""
        tol = dict(tol=self.tol)
        if pb.kernel is not None:
            return [(alfpgm(**tol), "kernel: AL-FPGM decomposition (hinge, l2, free intercept)"),
                    (nesvm(**tol), "kernel: NESVM (alfpgm does not take this problem)")]
        out = []
        # newton on smoothed l1 stalled in float32 just above 1e-3 (heart_scale): l2-type only;
        # on wide data (more features than rows, news20) Jacobi-scaled ALM was 3x faster than newton
        if pb.reg.quadratic is not None and pb.d <= pb.n and not _near_kink(pb):
            out.append((newton(**tol), "twice-differentiable loss, an l2-type regularizer, rows >= features: "
                                       "truncated Newton"))
        # wide data, a box dual with no upper end (the squared hinge on news20-bin): Newton from 0 took
        # 150+ steps, dual CD alone crawled; 300 passes first left Newton 6-14 steps (LIBLINEAR's -s 1)
        if pb.d > pb.n and box_dual(pb) and not bounded_dual(pb) and dual_cd.native(pb):
            out.append((newton(warm="dual_cd", warm_passes=300, **tol),
                        "twice-differentiable loss with a box dual (squared hinge), l2, no free intercept, more "
                        "features than rows, on the CPU: truncated Newton from 300 compiled dual CD passes"))
        if bounded_dual(pb) and dual_cd.native(pb):
            out.append((dual_cd(**tol), "a loss with a bounded dual (the hinge), l2, no free intercept, on the CPU: "
                                        "dual coordinate descent, compiled pass"))
        # l1 / elastic net with a twice-differentiable loss: newglmnet where its compiled inner solve runs
        # (its pure-JAX path is a per-coordinate loop, not measured on accelerators yet)
        if pb.reg.name in ("l1", "elastic_net") and not _near_kink(pb) and newglmnet.native(pb):
            out.append((newglmnet(**tol), "twice-differentiable loss, l1 / elastic net, on the CPU: proximal Newton "
                                            "with a compiled coordinate-descent inner solve (newGLMNET)"))
        if pb.reg.quadratic is not None:
            out.append((alm(precondition=True, adapt_mu=True, **tol),
                        "loss with a kink and an l2-type regularizer: ALM with Jacobi-preconditioned steps and "
                        "a penalty that adapts when the gap stalls"))
        else:
            out.append((alm(**tol), "non-quadratic regularizer: ALM with proximal steps"))
        return out + [(alm(criterion="grad", **tol), "no duality gap for this loss / regularizer: ALM stopped "
                                                     "on the gradient (uncertified)")]

    def choose(self, pb):
        """The method for problem ``pb`` and the reason: the first candidate whose ``validate``
        accepts it. When none does, the first one's error is raised (it names what is missing)."""
        first = None
        for method, why in self.candidates(pb):
            try:
                method.validate(pb)
            except (MissingCapability, ValueError) as exc:
                first = first or exc
                continue
            return method, why
        raise first

    def handover(self, pb, method):
        """The ``Handover`` for ``method`` (as ``choose`` returned it) on ``pb``, or None."""
        if method.name == "dual_cd" and bounded_dual(pb):
            if pb.d > pb.n:  # wide: projected Newton on the dual from dual CD's alpha after 100 passes
                return Handover(dual_newton(tol=self.tol), check=WIDE_PASSES, cap=WIDE_PASSES, go_on=0.0,
                                warm_within=np.inf, label="dual_newton")
            return Handover(alm(precondition=True, adapt_mu=True, tol=self.tol), check=300,
                            cap=method.default_max_iter(pb), go_on=0.1, warm_within=10.0 * float(self.tol),
                            label="alm(precondition=True, adapt_mu=True)")
        if method.name == "newglmnet":  # stalled (or capped) short of tol: alm's proximal steps from its point
            cap = method.default_max_iter(pb)
            return Handover(alm(tol=self.tol), check=cap, cap=cap, go_on=0.0, warm_within=np.inf, label="alm",
                            when=(Status.STALLED, Status.MAX_ITER))
        return None


NEWTON_MIN_P = 1.2
"""Lp hinge losses with p below this go to alm, not newton: l''(m) = p (p - 1) (1 - m)^(p - 2) is
unbounded at the kink for p < 2, and newton STALLED (float32, default tol, C = 1) at p = 1.05 on
standardized breast-cancer, heart_scale and a9a and at p = 1.1 on breast-cancer (a 0.83 gap at p =
1.01), where alm(precondition=True, adapt_mu=True) certified each in 0.01-1.6 s; from p = 1.2 on
newton certified all three in 5-35 steps, 0.01-0.15 s (alm 0.01-1.3 s)."""


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
