"""Losses as pure functions of the margin m = y (w.x + b) (or, for regression, of the score against
a target); see ``Loss``."""
from . import library
from .base import DualDescription, Loss, LossFamily, MissingCapability, prox_newton
from .library import *  # noqa: F401,F403  (the shipped losses: library.__all__)

__all__ = ["Loss", "LossFamily", "DualDescription", "MissingCapability", "prox_newton", *library.__all__]
