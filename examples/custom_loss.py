"""A new loss in a few lines, through every solver that can use it.

Rennie and Srebro's smooth hinge is a plain ``jnp`` function of the margin. Declaring its
curvature (1) and its dual (box [0, 1], diagonal 1/2) is optional; with them every linear
solver can use it: ALM through the prox, NESVM through the gradient, dual coordinate descent
through the dual. Each solves the same problem, so their objectives agree, each certified by
its duality gap. A solver that cannot use a loss says what is missing.

    python examples/custom_loss.py
"""
import jax.numpy as jnp

import svmopt
from svmopt.losses import MissingCapability, from_function
from svmopt.solvers import alfpgm, alm, cutting_plane, dual_cd, nesvm

from _data import data


def smooth_hinge(m):  # 1/2 - m below 0, (1 - m)^2 / 2 on [0, 1], 0 above
    return jnp.where(m <= 0, 0.5 - m, 0.5 * jnp.maximum(1.0 - m, 0.0) ** 2)


loss = from_function(smooth_hinge, "smooth_hinge", curvature=1.0, box_diagonal=(0.0, 1.0, 0.5))


def main():
    X, y = svmopt.load_svmlight(data("heart_scale"))
    results = {}
    for method in (alm, nesvm, dual_cd, cutting_plane, alfpgm):
        try:  # the bias-feature intercept (LIBLINEAR's -B 1): the one every linear solver takes
            r = svmopt.solve(X, y, loss=loss, method=method, intercept_scaling=1.0, tol=1e-4)
        except (MissingCapability, ValueError) as e:
            print(f"{method.name:14s} cannot: {e}")
            continue
        results[method.name] = float(r.primal_objective)
        print(f"{method.name:14s} {r.status.name:10s} objective {float(r.primal_objective):.6f}  "
              f"relative gap {float(r.relative_gap):.1e}  ({r.iterations} iterations)")
    return results


if __name__ == "__main__":
    main()
