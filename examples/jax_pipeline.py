"""An SVM inside a JAX training pipeline: learn feature scales and C by gradient descent.

``svmopt.solve`` is JAX code: inside ``jax.jit`` it becomes part of the traced computation,
and ``jax.grad`` of its solution comes from the optimality conditions (implicit
differentiation, never by unrolling the solver). Here the outer problem learns a scale per
feature and log C so that the SVM trained on one half of heart_scale does well on the other
half (a smooth validation loss), with optax's Adam, the whole step jitted.

    python examples/jax_pipeline.py
"""
import numpy as np

import jax
import jax.numpy as jnp
import optax

import svmopt
from svmopt.losses import squared_hinge

from _data import data

jax.config.update("jax_enable_x64", True)


def main(steps=30):
    X, y = svmopt.load_svmlight(data("heart_scale"))
    X, y = jnp.asarray(X.toarray()), jnp.where(jnp.asarray(y) > 0, 1.0, -1.0)
    idx = np.random.default_rng(0).permutation(X.shape[0])
    tr, va = idx[:135], idx[135:]

    def val_loss(params):
        Z = X * jnp.exp(params["log_scale"])  # learned feature scales
        r = svmopt.solve(Z[tr], y[tr], loss=squared_hinge, C=jnp.exp(params["log_C"]), tol=1e-8,
                         dtype=jnp.float64)
        margins = y[va] * (Z[va] @ r.w + r.b)
        return jnp.mean(jnp.logaddexp(0.0, -margins))  # smooth surrogate of validation error

    params = {"log_scale": jnp.zeros(X.shape[1]), "log_C": jnp.asarray(0.0)}
    opt = optax.adam(0.1)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        loss, g = jax.value_and_grad(val_loss)(params)
        updates, state = opt.update(g, state)
        return optax.apply_updates(params, updates), state, loss

    losses = []
    for k in range(steps):
        params, state, loss = step(params, state)
        losses.append(float(loss))
        if k % 10 == 0 or k == steps - 1:
            print(f"step {k:3d}  validation loss {float(loss):.4f}  C = {float(jnp.exp(params['log_C'])):.3f}")
    return losses


if __name__ == "__main__":
    main()
