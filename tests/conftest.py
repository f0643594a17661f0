"""Shared test fixtures: real LIBSVM data from ../shared/data and x64 control."""
import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

# The suite (and the subprocesses it starts) compiles into a persistent cache of its own,
# made fresh per run: a cache left by other runs (another JAX, a process killed mid-write,
# a suite running beside this one) cannot change what is tested.
if "SVMOPT_CACHE_DIR" not in os.environ:
    os.environ["SVMOPT_CACHE_DIR"] = tempfile.mkdtemp(prefix="svmopt-test-cache-")
    atexit.register(shutil.rmtree, os.environ["SVMOPT_CACHE_DIR"], ignore_errors=True)

# The references (numpy/scipy/scikit-learn) solve small dense systems (~124 x 124, hundreds of
# times per Newton reference): OpenBLAS's thread team costs far more than it gives there, and on a
# shared 2-core machine it stalls (measured: 200 solves of 124 x 124, 12.8 s threaded, 0.04 s on
# one thread, under load 3). One BLAS thread for the suite and its subprocesses; XLA keeps its own.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
# The suite runs one pytest worker per core (-n 2): a batch's problems on host threads as well
# (svmopt.host_threads) would put two busy threads on each core. One per process here; the tests of
# the host threads set SVMOPT_THREADS themselves (tests/test_multiclass.py).
os.environ.setdefault("SVMOPT_THREADS", "1")
if "numpy" in sys.modules:  # loaded before this file (a plugin): limit the pool it already started
    try:
        from threadpoolctl import threadpool_limits
        threadpool_limits(1, user_api="blas")
    except ImportError:
        pass

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
