"""A start from dual coordinate descent's passes (``warm="dual_cd"`` of ``newton`` and ``dual_newton``):
LIBLINEAR's -s 1 run for a few passes, on its bias-feature problem where the intercept is free."""
from __future__ import annotations

import jax.numpy as jnp
from jax import lax

from ..losses import MissingCapability
from ..operators import with_bias
from ..problem import Problem
from .base import Start, check_positive, require

__all__ = ["warm_problem", "validate_warm", "warm_passes"]


def validate_warm(method, pb: Problem) -> None:
    """What ``warm="dual_cd"`` (``warm_passes``) needs of ``method`` (its ``warm_eps``, ``warm_passes``)
    and of the problem: dual CD's own checks name it (l2, a box dual); with a free intercept the compiled pass."""
    from .dual_cd import dual_cd
    warm = warm_problem(pb)
    try:
        dual_cd.validate(warm)
        require(not pb.fit_intercept or dual_cd.native(warm),
                "with a free intercept the passes run on the bias-feature problem, in the compiled pass "
                "only (svmopt._dcd_ffi on the CPU)")
    except (MissingCapability, ValueError) as exc:
        raise type(exc)(f"{method.name}(warm='dual_cd'): {exc}") from None
    check_positive(method, "warm_eps")
    check_positive(method, "warm_passes", integer=True, allow_zero=True)


def warm_passes(pb: Problem, start: Start, limit, eps):
    """(w, alpha, passes): dual coordinate descent (``dual_cd``'s default variant, its pass rule
    M - m < ``eps`` over all coordinates) from alpha = 0 for at most ``limit`` passes (a traced
    count) -- LIBLINEAR's -s 1 start. With a free intercept the passes solve LIBLINEAR's bias-feature
    problem (``warm_problem``: a constant column of 1, added by the compiled pass as it reads a row)
    and w has that column's weight last; alpha is that problem's dual point."""
    from .dual_cd import DualCD

    dcd = DualCD(eps=eps)
    warm = warm_problem(pb)
    zero = jnp.zeros((warm.d,), pb.dtype)
    st = dcd.init(warm, start._replace(w=zero, level=jnp.zeros_like(start.level), aux=dcd.aux_template(warm)))

    def cond(c):
        k, st = c
        return (k < limit) & ~st.done

    def body(c):
        k, st = c
        return k + 1, dcd.step(warm, st)

    k, st = lax.while_loop(cond, body, (jnp.asarray(0, jnp.int32), st))
    return st.w, st.alpha, k


def warm_problem(pb: Problem) -> Problem:
    """The problem the warm-start passes solve: ``pb`` itself, or with a free intercept LIBLINEAR's
    bias-feature version of it (a constant column of 1, not stored)."""
    return pb.replace(op=with_bias(pb.op, 1.0), fit_intercept=False) if pb.fit_intercept else pb
