"""Solvers: each a ``Method`` (init / step / check / finalize) run by ``svmopt.driver``."""
from ._base import Method
from .alm import ALM, alm

__all__ = ["Method", "ALM", "alm"]
