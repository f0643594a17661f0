"""Solvers: each a ``Method`` (init / step / check / finalize) run by ``svmopt.driver``."""
from .base import Method
from .alm import ALM, alm
from .cutting_plane import CuttingPlane, cutting_plane
from .nesvm import NESVM, homotopy_nesvm, nesvm
from .dual_cd import DualCD, dual_cd
from .alfpgm import ALFPGM, alfpgm
from .newton import Newton, newton
from .dual_newton import DualNewton, dual_newton
from .newglmnet import NewGLMNET, newglmnet
from .crammer_singer import CrammerSinger, crammer_singer
from .pdhg import PDHG, pdhg
from .auto import Auto, auto

__all__ = ["Method", "ALM", "alm", "CuttingPlane", "cutting_plane", "NESVM", "nesvm", "homotopy_nesvm",
           "DualCD", "dual_cd", "ALFPGM", "alfpgm", "Newton", "newton", "DualNewton", "dual_newton", "NewGLMNET",
           "newglmnet", "CrammerSinger", "crammer_singer", "PDHG", "pdhg", "Auto", "auto"]
