"""The key of a compiled program: the treedef of its arguments and each leaf's shape, dtype, weak
type and placement (``signature``, used by ``svmopt.driver.compiled``)."""
from __future__ import annotations

from collections import OrderedDict

import jax
import jax.numpy as jnp

from .problem import Problem
from .solvers.base import Method

__all__ = ["signature"]


_sharding_names: dict = {}


def _sharding_name(sharding) -> str:
    """repr(sharding), remembered: a solve looks up ~4 programs of ~20 leaves each, and the repr
    of a sharding was a third of the lookup's time."""
    name = _sharding_names.get(sharding)
    if name is None:
        if len(_sharding_names) > 256:
            _sharding_names.clear()
        name = _sharding_names[sharding] = repr(sharding)
    return name


def _leaf_signature(x):
    if isinstance(x, jax.Array):  # (already canonical)
        return x.shape, x.dtype, x.weak_type, _sharding_name(x.sharding)
    sharding = getattr(x, "sharding", None)
    return (jnp.shape(x), jnp.result_type(x), getattr(x, "weak_type", False),
            None if sharding is None else _sharding_name(sharding))


_part_signatures: OrderedDict = OrderedDict()
PART_SIGNATURES = 16


def _part_signature(part):
    """(treedef, leaf signatures) of one argument. A method or a problem is looked up by identity:
    a solve asks for the programs of the same (method, problem) three or four times (the start,
    the loop, the summary), and walking their ~20 leaves was a fifth of a small solve's Python
    time. Safe: both are immutable pytrees (``dataclasses.replace`` makes a new one), the entry
    holds the object (its id cannot be reused while it is cached), and a leaf's signature is its
    shape, dtype and placement, which an in-place write to a numpy leaf cannot change."""
    memo = isinstance(part, (Problem, Method))
    if memo:
        hit = _part_signatures.get(id(part))
        if hit is not None and hit[0] is part:
            _part_signatures.move_to_end(id(part))
            return hit[1], hit[2]
    leaves, tree = jax.tree_util.tree_flatten(part)
    sig = tuple(_leaf_signature(x) for x in leaves)
    if memo:
        _part_signatures[id(part)] = (part, tree, sig)
        if len(_part_signatures) > PART_SIGNATURES:
            _part_signatures.popitem(last=False)
    return tree, sig


def signature(args):
    """(treedef of the argument tuple, the signatures of its leaves): a compiled program's key."""
    parts = [_part_signature(a) for a in args]
    return jax.tree_util.treedef_tuple([t for t, _ in parts]), tuple(x for _, s in parts for x in s)
