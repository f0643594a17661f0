"""Solvers: each a ``Method`` (init / step / check / finalize) run by ``svmopt.driver``."""
from ._base import Method
from .alm import ALM, alm
from .cutting_plane import CuttingPlane, cutting_plane
from .nesvm import NESVM, homotopy_nesvm, nesvm

__all__ = ["Method", "ALM", "alm", "CuttingPlane", "cutting_plane", "NESVM", "nesvm", "homotopy_nesvm"]
