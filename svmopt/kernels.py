"""Kernel functions of two row blocks, with LIBSVM's parameter conventions.

    linear                      K(x, z) = x.z
    rbf(gamma)                  K(x, z) = exp(-gamma ||x - z||^2)
    polynomial(degree, gamma, coef0)  (gamma x.z + coef0)^degree
    sigmoid(gamma, coef0)       tanh(gamma x.z + coef0)
    from_function(fn)           a user's pure fn(A, B) -> (len(A), len(B)) block (jax.numpy)
    precomputed()               LIBSVM -t 4: X is the Gram matrix K(train, train), then K(test, train)
    host_function(fn)           a plain Python / NumPy fn(A, B), evaluated on the host (sklearn's
                                SVC(kernel=callable)): the solve trains on its Gram matrix

A kernel is a pytree (gamma, coef0 are leaves), so solvers jit once per kind.
``kernel_rows`` computes rows K(X[idx], X) block by block so memory stays
O(len(idx) * n), never n x n. The last two need the n x n Gram matrix: ``as_kernel`` names
what a solve accepts, ``host_gram`` evaluates a host kernel within a memory budget, and
``gram_rows`` is the form a solver reads a Gram matrix in (each row with its index appended, so
K(a, b) is row a's entry at b's index, and blocks of rows are gathers).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["check_block", "Kernel", "linear", "rbf", "polynomial", "sigmoid", "from_function", "precomputed", "host_function",
           "as_kernel", "host_gram", "gram_rows", "is_gram", "kernel_rows", "kernel_diag", "predict_kernel",
           "GRAM_BUDGET"]


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True, eq=False)
class Kernel:
    """A kernel: ``block(params, A, B)`` the (len(A), len(B)) matrix, ``diag(params, A)`` its diagonal.

    ``psd`` (static): positive semidefinite for every data set. Where it is False (the sigmoid kernel,
    a polynomial with coef0 < 0) the problem is not convex: the dual is no lower bound on the
    optimum, no duality gap certifies anything, and a run whose gap closes ends UNCERTIFIED.
    ``host`` (static): ``block`` is plain Python / NumPy, called on the host only (``host_function``).
    """

    name: str
    block: Callable  # (params, A, B) -> (a, b)
    diag: Callable  # (params, A) -> (a,)   K(x_i, x_i)
    params: Any = field(default_factory=dict)
    psd: bool = True
    host: bool = False

    def tree_flatten(self):
        return (self.params,), (self.name, self.block, self.diag, self.psd, self.host)

    @classmethod
    def tree_unflatten(cls, aux, children):
        name, block, diag, psd, host = aux
        return cls(name, block, diag, children[0], psd, host)

    def __call__(self, A, B):
        return self.block(self.params, A, B)

    def __repr__(self):
        try:
            ps = ", ".join(f"{k}={float(v):g}" for k, v in self.params.items())
        except (TypeError, jax.errors.ConcretizationTypeError):  # traced parameters (a probe, a jit)
            ps = "traced"
        return f"{self.name}({ps})"


def _sqdist(A, B):
    a2 = jnp.sum(A * A, axis=1)[:, None]
    b2 = jnp.sum(B * B, axis=1)[None, :]
    return jnp.maximum(a2 + b2 - 2.0 * (A @ B.T), 0.0)


def _positive(name, **vals):
    """Each value finite and > 0 (traced values, e.g. a gamma being differentiated, pass)."""
    for k, v in vals.items():
        if isinstance(v, jax.core.Tracer):
            continue
        if not (np.ndim(v) == 0 and np.isfinite(v) and v > 0):
            raise ValueError(f"{name} needs a finite {k} > 0, got {v}")


def _linear_block(p, A, B):
    return A @ B.T


def _linear_diag(p, A):
    return jnp.sum(A * A, axis=1)


linear = Kernel("linear", _linear_block, _linear_diag, {})
"""K(x, z) = x.z."""


def _rbf_block(p, A, B):
    return jnp.exp(-p["gamma"] * _sqdist(A, B))


def _rbf_diag(p, A):
    return jnp.ones((A.shape[0],), A.dtype)


def rbf(gamma: float) -> Kernel:
    """exp(-gamma ||x - z||^2) (LIBSVM -t 2 -g gamma)."""
    _positive("rbf", gamma=gamma)
    return Kernel("rbf", _rbf_block, _rbf_diag, {"gamma": jnp.asarray(gamma)})


def _poly_block(p, A, B):
    return (p["gamma"] * (A @ B.T) + p["coef0"]) ** p["degree"]


def _poly_diag(p, A):
    return (p["gamma"] * jnp.sum(A * A, axis=1) + p["coef0"]) ** p["degree"]


def polynomial(degree: int = 3, gamma: float = 1.0, coef0: float = 0.0) -> Kernel:
    """(gamma x.z + coef0)^degree (LIBSVM -t 1 -d degree -g gamma -r coef0)."""
    _positive("polynomial", gamma=gamma, degree=degree)
    if not isinstance(degree, jax.core.Tracer) and float(degree) != int(degree):
        raise ValueError(f"polynomial needs an integer degree (LIBSVM -d), got {degree}")
    if not isinstance(coef0, jax.core.Tracer) and not (np.ndim(coef0) == 0 and np.isfinite(coef0)):
        raise ValueError(f"polynomial needs a finite coef0, got {coef0}")
    # (gamma x.z + coef0)^d with coef0 >= 0: a sum of powers of x.z with nonnegative weights (PSD)
    psd = isinstance(coef0, jax.core.Tracer) or float(coef0) >= 0
    return Kernel("polynomial", _poly_block, _poly_diag,
                  {"degree": jnp.asarray(degree), "gamma": jnp.asarray(gamma), "coef0": jnp.asarray(coef0)}, psd)


def _sig_block(p, A, B):
    return jnp.tanh(p["gamma"] * (A @ B.T) + p["coef0"])


def _sig_diag(p, A):
    return jnp.tanh(p["gamma"] * jnp.sum(A * A, axis=1) + p["coef0"])


def sigmoid(gamma: float = 1.0, coef0: float = 0.0) -> Kernel:
    """tanh(gamma x.z + coef0) (LIBSVM -t 3). Not positive semidefinite in general (breast-cancer,
    gamma = 1/(d var X): smallest eigenvalue -39): the problem is not convex, and a run ends
    UNCERTIFIED at best (``Kernel.psd``), as LIBSVM's run ends at a stationary point."""
    _positive("sigmoid", gamma=gamma)
    return Kernel("sigmoid", _sig_block, _sig_diag, {"gamma": jnp.asarray(gamma), "coef0": jnp.asarray(coef0)},
                  psd=False)


def from_function(fn: Callable, name: str | None = None, psd: bool = True) -> Kernel:
    """A user's pure function fn(A, B) -> (len(A), len(B)) kernel block; ``psd=False`` for one that
    is not positive semidefinite (no run certifies then, ``Kernel.psd``). Written with jax.numpy it
    is evaluated inside the compiled solve, rows on demand; one that calls NumPy on its blocks
    cannot be, and becomes a host kernel (``host_function``: its n x n Gram matrix, once)."""
    if not callable(fn):
        raise TypeError(f"kernel must be callable fn(A, B), got {fn!r}")
    if not check_block(fn, 2, name):
        return host_function(fn, name, psd)
    return Kernel(name or getattr(fn, "__name__", "custom"), lambda p, A, B: fn(A, B),
                  lambda p, A: jax.vmap(lambda a: fn(a[None, :], a[None, :])[0, 0])(A), {}, bool(psd))


def check_block(fn, d: int, name=None) -> bool:
    """Trace ``fn`` on (2, d) x (3, d) blocks: True when it is written with jax.numpy, False when it
    calls NumPy on them (it can only run on the host); a ValueError when the block is not (2, 3)."""
    a, b = jax.ShapeDtypeStruct((2, d), jnp.float32), jax.ShapeDtypeStruct((3, d), jnp.float32)
    try:
        out = jax.eval_shape(fn, a, b)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError):
        return False
    if getattr(out, "shape", None) != (2, 3):
        raise ValueError(f"kernel function {name or getattr(fn, '__name__', fn)} returned shape "
                         f"{getattr(out, 'shape', type(out).__name__)} for blocks of 2 and 3 rows: fn(A, B) must return "
                         "the (len(A), len(B)) block of kernel values")
    return True


# ------------------------------------------------------------------ Gram matrices
GRAM_BUDGET = 2**30
"""Bytes a host kernel's n x n Gram matrix (float64) may take (1 GiB: n <= 11585)."""


def _gram_block(p, A, B):
    # rows of a Gram matrix (train: with their index last) against index rows: a gather
    return jnp.take(A, B[:, -1].astype(jnp.int32), axis=1)


def _gram_diag(p, A):
    return jnp.take_along_axis(A, A[:, -1:].astype(jnp.int32), axis=1)[:, 0]


def precomputed(n: int | None = None) -> Kernel:
    """LIBSVM's -t 4 (scikit-learn's kernel="precomputed"): fit on K(train, train) (n, n), predict on
    K(test, train) (m, n). A model stores its support vectors as their row indices (n_sv, 1); ``n``
    (the training rows, set by the solve) is what prediction checks K(test, train) against. Taken
    as given: a K that is not positive semidefinite gives a non-convex problem nothing certifies."""
    return Kernel("precomputed", _gram_block, _gram_diag, {} if n is None else {"n": jnp.asarray(n)})


def is_gram(kernel) -> bool:
    """A kernel solved on its n x n Gram matrix: precomputed, or evaluated on the host."""
    return isinstance(kernel, Kernel) and (kernel.host or kernel.name == "precomputed")


def host_function(fn: Callable, name: str | None = None, psd: bool = True) -> Kernel:
    """A plain Python / NumPy kernel fn(A, B) -> (len(A), len(B)) array, scikit-learn's convention for
    ``SVC(kernel=callable)``. A solve evaluates K(X, X) once, in row blocks on the host, within
    ``GRAM_BUDGET`` (``host_gram``), and solves on it as on a precomputed kernel; prediction calls
    fn(X, support_vectors). A JAX-traceable fn is better wrapped by ``from_function`` (rows on
    demand, nothing n x n)."""
    if not callable(fn):
        raise TypeError(f"kernel must be callable fn(A, B), got {fn!r}")
    return Kernel(name or getattr(fn, "__name__", "custom"), lambda p, A, B: fn(A, B), None, {}, bool(psd), True)


def as_kernel(kernel) -> Kernel | None:
    """What ``solve(kernel=...)`` accepts: None (linear primal), a Kernel, "precomputed", or a plain
    callable fn(A, B) (``host_function``). A ``from_function`` kernel that cannot be traced by JAX
    (it calls NumPy on its blocks) becomes a host kernel."""
    if kernel is None:
        return None
    if isinstance(kernel, Kernel):
        if kernel.host or kernel.block in _SHIPPED or _traceable(kernel):
            return kernel
        return Kernel(kernel.name, kernel.block, None, kernel.params, kernel.psd, True)
    if isinstance(kernel, str):
        if kernel.strip().lower() == "precomputed":
            return precomputed()
        raise TypeError(f"kernel={kernel!r}: svmopt.solve takes a Kernel object, e.g. svmopt.kernels.rbf(gamma=0.1), "
                        f"'precomputed' or a function fn(A, B) (svmopt.SVMClassifier(kernel={kernel!r}) takes the name)")
    if callable(kernel):
        return host_function(kernel)
    raise TypeError(f"kernel must be an svmopt.kernels.Kernel (e.g. rbf(gamma=0.1)), 'precomputed' or a function "
                    f"fn(A, B) -> (len(A), len(B)) array, got {kernel!r:.60}")


def _traceable(kernel: Kernel) -> bool:
    probe = jax.ShapeDtypeStruct((2, 3), jnp.float32)
    try:
        jax.eval_shape(lambda A, B: kernel.block(kernel.params, A, B), probe, probe)
    except (jax.errors.JAXTypeError, jax.errors.JAXIndexError):  # NumPy called on a tracer
        return False
    except Exception:  # noqa: BLE001  (shape errors and the like: the solve reports them)
        return True
    return True


def host_gram(kernel: Kernel, X, budget: int | None = None, block: int = 1024) -> np.ndarray:
    """K(X, X) (n, n) float64 of a host kernel, evaluated in blocks of ``block`` rows; checked for
    shape and finite values. Raises ValueError when n x n float64 exceeds ``budget`` bytes
    (None: ``GRAM_BUDGET``)."""
    budget = GRAM_BUDGET if budget is None else budget
    n = _rows(X)
    need = 8 * n * n
    if need > budget:
        raise ValueError(f"the kernel {kernel.name} runs on the host (plain Python / NumPy), so the solve needs its "
                         f"{n} x {n} Gram matrix: {need / 2**20:.0f} MiB, over the budget of {budget / 2**20:.0f} MiB. "
                         "Write the kernel with jax.numpy and pass svmopt.kernels.from_function(fn) (rows computed "
                         "on demand, nothing n x n), or raise svmopt.kernels.GRAM_BUDGET")
    G = np.empty((n, n))
    for i in range(0, n, block):
        G[i:i + block] = _host_block(kernel, X[i:i + block], X, min(block, n - i), n)
    if not np.isfinite(G).all():
        raise ValueError(f"the kernel {kernel.name} returned NaN or inf on the training rows")
    return G


def _rows(X) -> int:
    return X.shape[0] if hasattr(X, "shape") else len(X)


def _host_block(kernel, A, B, a, b):
    K = np.asarray(kernel.block(kernel.params, A, B), dtype=np.float64)
    if K.shape != (a, b):
        raise ValueError(f"the kernel {kernel.name} returned an array of shape {K.shape} for blocks of {a} and {b} "
                         f"rows; a kernel returns the ({a}, {b}) matrix K(A, B)")
    return K


def gram_rows(G, width: int | None = None) -> np.ndarray:
    """The Gram matrix G (m, m) as a solver reads it: each row with its index appended, (m, width + 1)
    (columns past m are zero, for problems padded to ``width``)."""
    m = G.shape[0]
    out = np.zeros((m, (width or m) + 1))
    out[:, :m] = G
    out[:, -1] = np.arange(m)
    return out


_SHIPPED = (_linear_block, _rbf_block, _poly_block, _sig_block, _gram_block)


def kernel_diag(kernel: Kernel, X):
    """The diagonal K(x_i, x_i) for the rows of X, shape (n,)."""
    return kernel.diag(kernel.params, X)


def kernel_rows(kernel: Kernel, X, idx, block: int = 4096):
    """K(X[idx], X) as a (len(idx), n) array, computed over column blocks of ``block`` rows of X."""
    A = X[idx]
    n = X.shape[0]
    if n <= block:
        return kernel(A, X)
    nb = -(-n // block)

    def body(i, out):
        start = jnp.minimum(i * block, n - block)  # clamp the last block; overlap is recomputed equally
        Bk = lax.dynamic_slice_in_dim(X, start, block, 0)
        return lax.dynamic_update_slice_in_dim(out, kernel(A, Bk), start, 1)

    return lax.fori_loop(0, nb, body, jnp.zeros((A.shape[0], n), X.dtype))


def predict_kernel(kernel: Kernel, support_vectors, dual_coef, X, block: int = 2048):
    """sum_j dual_coef_j K(x, sv_j) for the rows of X, in row blocks (numpy out). A precomputed kernel
    takes X = K(test, train) (m, n_train); a host kernel calls its function on the host."""
    import scipy.sparse as sp

    if kernel.host:
        coef, sv = np.asarray(dual_coef, np.float64), support_vectors
        X = X if hasattr(X, "shape") else np.asarray(X)
        n_sv = _rows(sv)
        out = [_host_block(kernel, X[i:i + block], sv, min(block, _rows(X) - i), n_sv) @ coef
               for i in range(0, _rows(X), block)]
        return np.concatenate(out) if out else np.zeros((0,) + coef.shape[1:])
    if kernel.block is _gram_block and "n" in kernel.params and X.shape[1] != int(kernel.params["n"]):
        raise ValueError(f"a precomputed-kernel model predicts from K(test, train): X must have one column per "
                         f"training row ({int(kernel.params['n'])}), got shape {X.shape}")
    sv = jnp.asarray(support_vectors.toarray() if sp.issparse(support_vectors) else support_vectors)
    coef = jnp.asarray(dual_coef, sv.dtype)
    f = jax.jit(lambda A: kernel(A, sv) @ coef)
    out = []
    for i in range(0, X.shape[0], block):
        A = X[i:i + block]
        A = A.toarray() if sp.issparse(A) else np.asarray(A)
        out.append(np.asarray(f(jnp.asarray(A, sv.dtype))))
    return np.concatenate(out) if out else np.zeros(0)
