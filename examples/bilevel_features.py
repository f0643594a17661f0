"""A JAX training pipeline with an SVM head: features and C learned through the solve.

The SVM head is ``svmopt.solve`` on features phi(X) = [X, tanh(X W)] of the training split. Its
solution (w*, b*) depends on W and C; ``jax.grad`` of a validation loss reaches both through
the optimality conditions of the solve (implicit differentiation, no unrolling), and optax's
Adam updates them. The per-example losses of ``svmopt.losses`` are plain functions of the margin,
so the same objects serve as the SVM's loss and as the validation loss.

    python examples/bilevel_features.py [--steps 25] [--hidden 8]
"""
import argparse

import numpy as np

import jax
import jax.numpy as jnp
import optax

import svmopt
from svmopt.losses import logistic, squared_hinge

from _data import data


def load(n_train=1500, n_val=1500, seed=0):
    X, y = svmopt.load_svmlight(data("a9a"), n_features=123)
    idx = np.random.default_rng(seed).permutation(X.shape[0])
    X = np.asarray(X[idx[: n_train + n_val]].toarray(), np.float32)
    y = np.where(y[idx[: n_train + n_val]] > 0, 1.0, -1.0).astype(np.float32)
    return (X[:n_train], y[:n_train]), (X[n_train:], y[n_train:])


def features(W, X):
    return jnp.concatenate([X, jnp.tanh(X @ W)], axis=1)


def main(steps=25, hidden=8, seed=0, verbose=True, n_train=1500, n_val=1500):
    (X, y), (Xv, yv) = load(n_train, n_val, seed=seed)
    key = jax.random.key(seed)
    params = {"W": 0.1 * jax.random.normal(key, (X.shape[1], hidden)), "log_C": jnp.log(jnp.asarray(0.1))}

    def head(params):
        return svmopt.solve(features(params["W"], X), y, C=jnp.exp(params["log_C"]), loss=squared_hinge, tol=1e-5)

    def val_loss(params):
        r = head(params)
        margins = yv * (features(params["W"], Xv) @ r.w + r.b)
        return jnp.mean(logistic.value(margins))  # an svmopt loss used as a per-example loss

    def accuracy(params):
        r = head(params)
        return float(jnp.mean(jnp.sign(features(params["W"], Xv) @ r.w + r.b) == yv))

    opt = optax.adam(0.05)
    state = opt.init(params)

    @jax.jit
    def step(params, state):
        value, g = jax.value_and_grad(val_loss)(params)
        updates, state = opt.update(g, state, params)
        return optax.apply_updates(params, updates), state, value

    acc0 = accuracy(params)
    losses = []
    for k in range(steps):
        params, state, value = step(params, state)
        losses.append(float(value))
        if verbose and k % 5 == 0:
            print(f"step {k:3d}  validation loss {losses[-1]:.5f}  C {float(jnp.exp(params['log_C'])):.4f}")
    acc1 = accuracy(params)
    if verbose:
        print(f"validation accuracy: {acc0:.4f} with the initial features and C -> {acc1:.4f} learned")
    return losses, acc0, acc1


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=25)
    ap.add_argument("--hidden", type=int, default=8)
    a = ap.parse_args()
    main(a.steps, a.hidden)
