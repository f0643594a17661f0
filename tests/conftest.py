"""Shared test fixtures: real LIBSVM data from ../shared/data and x64 control."""
import atexit
import os
import shutil
import tempfile
from pathlib import Path

# The suite (and the subprocesses it starts) compiles into a persistent cache of its own,
# made fresh per run: a cache left by other runs (another JAX, a process killed mid-write,
# a suite running beside this one) cannot change what is tested.
if "SVMOPT_CACHE_DIR" not in os.environ:
    os.environ["SVMOPT_CACHE_DIR"] = tempfile.mkdtemp(prefix="svmopt-test-cache-")
    atexit.register(shutil.rmtree, os.environ["SVMOPT_CACHE_DIR"], ignore_errors=True)

import jax  # noqa: E402
import pytest  # noqa: E402

# Precision tests need float64; float32 tests ask for it explicitly via dtype.
jax.config.update("jax_enable_x64", True)

DATA = Path(os.environ.get("SVMOPT_DATA", Path(__file__).resolve().parents[1] / ".." / "shared" / "data")).resolve()


def data_path(name: str) -> Path:
    p = DATA / f"{name}.xz"
    if not p.exists():
        pytest.fail(f"benchmark data file missing: {p} (tests read ../shared/data)")
    return p
