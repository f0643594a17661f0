"""Benchmark inputs: the real LIBSVM files and two seeded generators.

``load(name)`` -> ``Dataset`` with float64 train/test matrices (scipy CSR, or a
C-contiguous ndarray for the generated dense set) and labels:

  binary       a9a (+a9a.t), ijcnn1 (+ijcnn1.t), news20-bin (news20's largest
               class vs the rest), dense-gen, sparse-gen, tiny (smoke)
  multiclass   news20 (20 classes), letter (26), pendigits (10, features scaled to [0, 1]);
               solved one-vs-rest

Binary labels are +-1 (the larger label is +1, as ``svmopt.solve``); multiclass
labels are the original ones. Sets without a test file (news20, tiny) hold out
a seeded 20 % of the rows.

Generated inputs (``make_dense`` / ``make_sparse``; same seed -> same bytes):

  dense-gen    581,012 x 54 like covtype: 10 continuous features in [0, 1] and two
               one-hot blocks (4 + 40 columns)
  sparse-gen   677,399 x 47,236 like rcv1: Poisson(74) terms per row drawn from a
               Zipf-like column law, tf-idf-like values, rows L2-normalised

labels y = sign(x.w_true - t + noise) with Gaussian w_true, t the median score and
noise of 0.5 x the score's std (~15 % of the labels disagree with the clean rule):
neither separable nor trivial. A test set of n/10 more rows comes from the same rule.
Generated matrices are cached under bench/cache/ (regenerating takes ~half a minute).
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import svmopt

__all__ = ["Dataset", "load", "make_dense", "make_sparse", "NAMES", "DATA_DIR", "CACHE_DIR"]

ROOT = Path(__file__).resolve().parent
CACHE_DIR = ROOT / "cache"
DATA_DIR = Path(os.environ.get("SVMOPT_DATA", ROOT.parent / ".." / "shared" / "data")).resolve()

# name -> (train file, test file or None, n_features, multiclass?)
_FILES = {
    "a9a": ("a9a", "a9a.t", 123, False),
    "ijcnn1": ("ijcnn1", "ijcnn1.t", 22, False),
    "news20": ("news20", None, 62061, True),
    "news20-bin": ("news20", None, 62061, False),
    "letter": ("letter.scale", "letter.scale.t", 16, True),
    "pendigits": ("pendigits", "pendigits.t", 16, True),
    "tiny": ("a1a", None, 123, False),
}
GENERATED = {"dense-gen": (581_012, 54), "sparse-gen": (677_399, 47_236)}
NAMES = list(_FILES) + list(GENERATED)


@dataclasses.dataclass
class Dataset:
    """X: (n, d) float64 CSR or ndarray; y: (n,) +-1 (binary) or class labels."""

    name: str
    X: object
    y: np.ndarray
    X_test: object
    y_test: np.ndarray
    multiclass: bool
    source: str

    @property
    def classes(self) -> np.ndarray:
        return np.unique(self.y) if self.multiclass else np.array([-1.0, 1.0])

    @property
    def shape(self):
        return self.X.shape

    @property
    def sparse(self) -> bool:
        return sp.issparse(self.X)

    @property
    def nnz(self) -> int:
        return int(self.X.nnz) if self.sparse else int(np.prod(self.X.shape))

    @property
    def fingerprint(self) -> str:
        """Hash of shape, labels and a sample of X: the key under which references are cached."""
        h = hashlib.sha1(repr((self.name, self.X.shape, self.nnz)).encode())
        h.update(np.ascontiguousarray(self.y, np.float64).tobytes())
        vals = self.X.data if self.sparse else self.X.ravel()
        h.update(np.ascontiguousarray(vals[:: max(1, vals.size // 100_000)]).tobytes())
        if self.sparse:
            h.update(np.ascontiguousarray(self.X.indices[:: max(1, self.X.nnz // 100_000)]).tobytes())
        return h.hexdigest()[:16]

    def subsample(self, n: int, seed: int = 0) -> "Dataset":
        """The first n rows of a seeded permutation (for the scaling sweep); test set kept."""
        idx = np.sort(np.random.default_rng(seed).permutation(self.X.shape[0])[:n])
        return dataclasses.replace(self, name=f"{self.name}[{n}]", X=self.X[idx], y=self.y[idx])


def _read(stem: str, n_features: int):
    path = DATA_DIR / f"{stem}.xz"
    if not path.exists():
        raise FileNotFoundError(f"benchmark data file missing: {path} (set SVMOPT_DATA to the LIBSVM files)")
    X, y = svmopt.load_svmlight(path, n_features=n_features)
    return sp.csr_matrix(X, dtype=np.float64), np.asarray(y, np.float64)


def _holdout(X, y, frac=0.2, seed=0):
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    k = int(round(frac * X.shape[0]))
    te, tr = np.sort(perm[:k]), np.sort(perm[k:])
    return X[tr], y[tr], X[te], y[te]


def _pm(y, positive=None):
    """+-1 labels; ``positive`` is the class that becomes +1 (default: the larger label)."""
    if positive is None:
        positive = np.unique(y)[-1]
    return np.where(y == positive, 1.0, -1.0)


def load(name: str, cache_dir: Path = CACHE_DIR) -> Dataset:
    if name in GENERATED:
        n, d = GENERATED[name]
        make = make_dense if name == "dense-gen" else make_sparse
        X, y = _cached(name, lambda: make(n + n // 10, d, seed=0), cache_dir)
        return Dataset(name, X[:n], y[:n], X[n:], y[n:], False, f"bench.data.{make.__name__}(seed=0)")
    if name not in _FILES:
        raise ValueError(f"unknown dataset {name!r}; choose from {NAMES}")
    train, test, d, multi = _FILES[name]
    X, y = _read(train, d)
    if test is None:
        X, y, Xt, yt = _holdout(X, y)
        src = f"{train}.xz (seeded 80/20 split)"
    else:
        Xt, yt = _read(test, d)
        src = f"{train}.xz + {test}.xz"
    if name == "pendigits":
        # the LIBSVM file holds raw 0..100 coordinates; scaled to [0, 1] like letter.scale (unscaled, C = 1
        # is so ill-conditioned that neither LIBLINEAR nor svmopt gets within 1e-2 of the optimum)
        X, Xt = X / 100.0, Xt / 100.0
        src += ", features / 100"
    if name == "news20-bin":
        # the largest class (ties -> the larger label) against the 19 others
        labels, counts = np.unique(y, return_counts=True)
        pos = labels[np.flatnonzero(counts == counts.max())[-1]]
        y, yt = _pm(y, pos), _pm(yt, pos)
        src += f", class {pos:g} vs rest"
    elif not multi:
        pos = np.unique(y)[-1]
        y, yt = _pm(y, pos), _pm(yt, pos)
    return Dataset(name, X, y, Xt, yt, multi, src)


def _cached(name, make, cache_dir):
    path = Path(cache_dir) / f"{name}-seed0.npz"
    if path.exists():
        z = np.load(path)
        if "indptr" in z:
            X = sp.csr_matrix((z["data"], z["indices"], z["indptr"]), shape=tuple(z["shape"]))
        else:
            X = z["X"]
        return X, z["y"]
    X, y = make()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npz")
    if sp.issparse(X):
        np.savez(tmp, data=X.data, indices=X.indices, indptr=X.indptr, shape=np.array(X.shape), y=y)
    else:
        np.savez(tmp, X=X, y=y)
    tmp.replace(path)
    return X, y


def _noisy_labels(score, rng, noise=0.5):
    """sign(score - median + noise * std * N(0, 1)): balanced, ~15 % off the clean rule."""
    s = score - np.median(score)
    y = np.sign(s + noise * s.std() * rng.standard_normal(s.shape[0]))
    return np.where(y >= 0, 1.0, -1.0)


def make_dense(n: int, d: int = 54, seed: int = 0):
    """Covtype-like dense (n, d) float64: 10 uniform [0, 1] columns, one-hot blocks of 4 and d-14."""
    if d < 15:
        raise ValueError(f"make_dense needs d >= 15 (10 continuous + 2 one-hot blocks), got {d}")
    rng = np.random.default_rng(seed)
    X = np.zeros((n, d))
    X[:, :10] = rng.random((n, 10))
    rows = np.arange(n)
    X[rows, 10 + rng.integers(0, 4, n)] = 1.0
    X[rows, 14 + rng.integers(0, d - 14, n)] = 1.0
    w = rng.standard_normal(d)
    return X, _noisy_labels(X @ w, rng)


def make_sparse(n: int, d: int = 47_236, terms_per_row: float = 78.0, seed: int = 0, block: int = 100_000):
    """Rcv1-like CSR (n, d) float64; Poisson(terms_per_row) draws per row, repeats merged
    into term counts, leave ~74 stored entries per row at d = 47,236 (rcv1's density)."""
    rng = np.random.default_rng(seed)
    # Zipf-like column popularity (exponent 0.8), columns shuffled so popular ones are spread out
    pop = 1.0 / np.arange(1, d + 1) ** 0.8
    pop = pop[rng.permutation(d)]
    cdf = np.cumsum(pop / pop.sum())
    idf = np.log(pop.max() / pop) + 1.0
    w = rng.standard_normal(d)
    parts = []
    for start in range(0, n, block):  # build in blocks: bounded temporary memory
        m = min(block, n - start)
        counts = np.maximum(rng.poisson(terms_per_row, m), 1)
        # inverse-CDF sampling on sorted uniforms (a merge, not random probes), then shuffled
        cols = np.minimum(np.searchsorted(cdf, np.sort(rng.random(counts.sum()))), d - 1)
        cols = rng.permutation(cols.astype(np.int32))
        A = sp.csr_matrix((np.ones(cols.size), cols, np.r_[0, np.cumsum(counts)]), shape=(m, d))
        A.sum_duplicates()  # repeated terms -> counts
        A.data = (1.0 + np.log(A.data)) * idf[A.indices]
        norms = np.sqrt(np.add.reduceat(A.data ** 2, A.indptr[:-1]))
        A.data /= np.repeat(norms, np.diff(A.indptr))
        parts.append(A)
    X = sp.vstack(parts, format="csr")
    return X, _noisy_labels(X @ w, rng)
