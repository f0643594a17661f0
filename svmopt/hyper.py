"""Hyperparameters by gradient: C learned on a validation split (a bilevel problem).

    C, trace = svmopt.hyper.learn_C(X_train, y_train, X_val, y_val)

The inner problem is the SVM of SPEC section 1 at C = exp(log_C); the outer one is a smooth
validation loss of its solution (w*, b*). ``jax.grad`` of the outer loss reaches log C through
the optimality conditions of the inner solve (``svmopt.implicit``), and an optax optimizer
(Adam by default) steps log C. Each step warm-starts the inner solve from the previous
solution, and the whole step is one jitted program (compiled once).

The same pattern trains anything upstream of an SVM head (features, kernels of a network):
see examples/bilevel_features.py.
"""
from __future__ import annotations

from typing import Any

import numpy as np

import jax
import jax.numpy as jnp
import optax

from .losses import Loss, logistic, squared_hinge
from .solve import solve

__all__ = ["learn_C", "validation_loss"]


def validation_loss(w, b, X_val, y_val, loss: Loss = logistic):
    """Mean of ``loss`` over the validation margins y (X w + b); y in {-1, +1}."""
    m = y_val * (X_val @ w + b)
    return jnp.mean(loss.value(m))


def learn_C(X, y, X_val, y_val, *, C0: float = 1.0, steps: int = 40,
            optimizer: optax.GradientTransformation | None = None, loss: Loss = squared_hinge,
            val_loss: Loss = logistic, dtype=None, tol: float = 1e-6, **solve_kwargs: Any):
    """Learn C by gradient descent on a validation loss; returns (C, trace).

    X, y: the training split (dense; labels any two values mapped as ``solve`` does, the larger
    is +1); X_val, y_val: the validation split. ``optimizer`` defaults to ``optax.adam(0.1)``
    on log C. ``loss`` is the SVM's (differentiable, or the hinge with a stable active set);
    ``val_loss`` the outer objective. ``trace`` is a dict of per-step arrays: "C", "loss".
    """
    classes = np.unique(np.asarray(y))
    if classes.size != 2:
        raise ValueError(f"learn_C is binary: y has {classes.size} classes")
    to_pm = lambda v: jnp.where(jnp.asarray(v) == classes[1], 1.0, -1.0)  # noqa: E731
    dt = jnp.dtype(dtype) if dtype is not None else jnp.dtype(jnp.float32)
    X, X_val = jnp.asarray(X, dt), jnp.asarray(X_val, dt)
    y_pm, yv = to_pm(y).astype(dt), to_pm(y_val).astype(dt)
    opt = optimizer or optax.adam(0.1)

    def outer(log_C, w0, b0):
        r = solve(X, y_pm, C=jnp.exp(log_C), loss=loss, dtype=dt, tol=tol, init={"w": w0, "b": b0},
                  **solve_kwargs)
        return validation_loss(r.w, r.b, X_val, yv, val_loss), (r.w, r.b)

    @jax.jit
    def step(log_C, state, w0, b0):
        (value, (w, b)), g = jax.value_and_grad(outer, has_aux=True)(log_C, w0, b0)
        updates, state = opt.update(g, state, log_C)
        return optax.apply_updates(log_C, updates), state, value, w, b

    log_C = jnp.asarray(np.log(C0), dt)
    state = opt.init(log_C)
    w, b = jnp.zeros((X.shape[1],), dt), jnp.zeros((), dt)
    Cs, values = [], []
    for _ in range(int(steps)):
        Cs.append(float(jnp.exp(log_C)))
        log_C, state, value, w, b = step(log_C, state, w, b)
        values.append(float(value))
    return float(jnp.exp(log_C)), {"C": np.asarray(Cs), "loss": np.asarray(values)}
