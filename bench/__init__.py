"""svmopt benchmark suite: ``python -m bench.run`` (see bench/README.md)."""
import os

# LIBSVM (libsvm-official, scikit-learn's SVC) runs OpenMP threads; on a shared, busy machine their
# default spin-waiting costs up to 50x (measured on 600 rows: 0.06 s -> 4 s). Passive waiting keeps
# the measurement about the algorithm. Must be set before libgomp is loaded, hence here.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")
