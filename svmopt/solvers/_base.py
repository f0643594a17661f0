"""What every solver shares: a frozen, hashable parameter record that is also its own factory.

``alm`` is a method with the paper's defaults; ``alm(rho=1.1)`` is the same method
reconfigured. Methods are static arguments of the jitted core, so they must be hashable.
"""
from __future__ import annotations

import dataclasses

import jax.numpy as jnp

from ..losses import MissingCapability


@dataclasses.dataclass(frozen=True)
class Method:
    name = "method"
    supports_kernel = False

    def __call__(self, **params) -> "Method":
        names = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(params) - names)
        if unknown:
            raise TypeError(f"{self.name} has no parameter(s) {unknown}; it takes {sorted(names)}")
        return dataclasses.replace(self, **params)

    def validate(self, pb) -> None:
        """Raise a clear error when the problem is not one this method solves."""

    def default_max_iter(self, pb) -> int:
        return 1000


def require(cond: bool, message: str) -> None:
    if not cond:
        raise MissingCapability(message)


def stall_update(best, since, obj, obj_tol):
    """Objective-change safeguard: count iterations without a relative improvement of obj_tol."""
    improved = obj < best - obj_tol * jnp.abs(best)
    return jnp.where(improved, obj, jnp.minimum(best, obj)), jnp.where(improved, 0, since + 1)
