"""Shared test fixtures: real LIBSVM data from ../shared/data and x64 control."""
import os
from pathlib import Path

import jax
import pytest

# Precision tests need float64; float32 tests ask for it explicitly via dtype.
jax.config.update("jax_enable_x64", True)

DATA = Path(os.environ.get("SVMOPT_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data")).resolve()


def data_path(name: str) -> Path:
    p = DATA / f"{name}.xz"
    if not p.exists():
        pytest.fail(f"benchmark data file missing: {p} (tests read ../shared/data)")
    return p
