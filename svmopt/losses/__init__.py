"""Losses as pure functions of the margin m = y (w.x + b); see ``Loss``."""
from . import library
from .base import DualDescription, Loss, LossFamily, MissingCapability, prox_newton
from .library import from_function, hinge, least_squares, logistic, lp_hinge, smoothed_hinge, squared_hinge

__all__ = ["Loss", "LossFamily", "DualDescription", "MissingCapability", "prox_newton", *library.__all__]
