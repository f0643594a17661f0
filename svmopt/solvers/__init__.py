"""Solvers: each a ``Method`` (init / step / check / finalize) run by ``svmopt.driver``."""
from ._base import Method
from .alm import ALM, alm
from .cutting_plane import CuttingPlane, cutting_plane

__all__ = ["Method", "ALM", "alm", "CuttingPlane", "cutting_plane"]
