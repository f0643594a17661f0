"""Kernel functions of two row blocks, with LIBSVM's parameter conventions.

    linear                      K(x, z) = x.z
    rbf(gamma)                  K(x, z) = exp(-gamma ||x - z||^2)
    polynomial(degree, gamma, coef0)  (gamma x.z + coef0)^degree
    sigmoid(gamma, coef0)       tanh(gamma x.z + coef0)
    from_function(fn)           a user's pure fn(A, B) -> (len(A), len(B)) block

A kernel is a pytree (gamma, coef0 are leaves), so solvers jit once per kind.
``kernel_rows`` computes rows K(X[idx], X) block by block so memory stays
O(len(idx) * n), never n x n.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import jax
import jax.numpy as jnp
from jax import lax

__all__ = ["check_block", "Kernel", "linear", "rbf", "polynomial", "sigmoid", "from_function", "kernel_rows", "kernel_diag"]


@jax.tree_util.register_pytree_node_class
@dataclass(frozen=True, eq=False)
class Kernel:
    """A kernel: ``block(params, A, B)`` the (len(A), len(B)) matrix, ``diag(params, A)`` its diagonal.

    ``psd`` (static): positive semidefinite for every data set. Where it is False (the sigmoid kernel,
    a polynomial with coef0 < 0) the problem is not convex: the dual is no lower bound on the
    optimum, no duality gap certifies anything, and a run whose gap closes ends UNCERTIFIED.
    """

    name: str
    block: Callable  # (params, A, B) -> (a, b)
    diag: Callable  # (params, A) -> (a,)   K(x_i, x_i)
    params: Any = field(default_factory=dict)
    psd: bool = True

    def tree_flatten(self):
        return (self.params,), (self.name, self.block, self.diag, self.psd)

    @classmethod
    def tree_unflatten(cls, aux, children):
        name, block, diag, psd = aux
        return cls(name, block, diag, children[0], psd)

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
    is not positive semidefinite (no run certifies then, ``Kernel.psd``)."""
    if not callable(fn):
        raise TypeError(f"kernel must be callable fn(A, B), got {fn!r}")
    check_block(fn, 2, name)
    return Kernel(name or getattr(fn, "__name__", "custom"), lambda p, A, B: fn(A, B),
                  lambda p, A: jax.vmap(lambda a: fn(a[None, :], a[None, :])[0, 0])(A), {}, bool(psd))


def check_block(fn, d: int, name=None) -> None:
    """Trace ``fn`` on (2, d) x (3, d) blocks: it must be written with jax.numpy and return the (2, 3)
    block, or a TypeError / ValueError says what to write instead."""
    a, b = jax.ShapeDtypeStruct((2, d), jnp.float32), jax.ShapeDtypeStruct((3, d), jnp.float32)
    try:
        out = jax.eval_shape(fn, a, b)
    except (jax.errors.TracerArrayConversionError, jax.errors.ConcretizationTypeError,
            jax.errors.TracerBoolConversionError) as exc:
        raise TypeError(f"kernel function {name or getattr(fn, '__name__', fn)} must be written with jax.numpy "
                        "(jnp): svmopt evaluates it inside compiled programs; e.g. "
                        "from_function(lambda A, B: (A @ B.T + 1.0) ** 2). A numpy kernel of a scikit-learn "
                        f"habit can be given as a precomputed Gram matrix instead. ({type(exc).__name__})") from None
    if getattr(out, "shape", None) != (2, 3):
        raise ValueError(f"kernel function {name or getattr(fn, '__name__', fn)} returned shape "
                         f"{getattr(out, 'shape', type(out).__name__)} for blocks of 2 and 3 rows: fn(A, B) must return "
                         "the (len(A), len(B)) block of kernel values")


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
    """sum_j dual_coef_j K(x, sv_j) for the rows of X, in row blocks (numpy out)."""
    import numpy as np
    import scipy.sparse as sp

    sv = jnp.asarray(support_vectors.toarray() if sp.issparse(support_vectors) else support_vectors)
    coef = jnp.asarray(dual_coef, sv.dtype)
    f = jax.jit(lambda A: kernel(A, sv) @ coef)
    out = []
    for i in range(0, X.shape[0], block):
        A = X[i:i + block]
        A = A.toarray() if sp.issparse(A) else np.asarray(A)
        out.append(np.asarray(f(jnp.asarray(A, sv.dtype))))
    return np.concatenate(out) if out else np.zeros(0)
