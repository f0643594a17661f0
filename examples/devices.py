"""Spreading work over devices: a C grid and one-vs-rest over several (CPU) devices.

On a CPU, XLA can present several host devices (set before JAX starts, as below); on GPUs
each is a device. ``solve(C=[...], devices=...)`` and ``solve_multiclass(devices=...)``
spread their problems over the devices: each problem is a lane of one compiled program,
and a device takes the next problem as soon as it finishes one.

TODO(merge with the devices branch): row sharding of one problem (``svmopt.shard_rows(X, y)``
and ``solve(X, y, devices=...)`` for a single C) is not in this branch; add it here.

    python examples/devices.py
"""
import os

os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=2")

import jax  # noqa: E402  (after XLA_FLAGS)
import numpy as np  # noqa: E402

import svmopt  # noqa: E402
from svmopt.losses import squared_hinge  # noqa: E402

from _data import data  # noqa: E402


def main():
    devices = jax.devices()
    print(f"{len(devices)} devices: {devices}")
    X, y = svmopt.load_svmlight(data("heart_scale"))
    Cs = [0.25, 0.5, 1.0, 2.0]
    spread = svmopt.solve(X, y, C=Cs, loss=squared_hinge, devices=devices, batch="loop")
    one = svmopt.solve(X, y, C=Cs, loss=squared_hinge, devices=devices[:1], batch="loop")
    diff = float(np.max(np.abs(np.asarray(spread.primal_objective) - np.asarray(one.primal_objective))
                        / np.asarray(one.primal_objective)))
    print(f"C grid on {len(devices)} devices: {spread.timings['run']:.2f} s; on one: {one.timings['run']:.2f} s; "
          f"objectives agree to {diff:.1e}")
    Xp, yp = svmopt.load_svmlight(data("pendigits"), n_features=16)
    r = svmopt.solve_multiclass(Xp[:500] / 100.0, yp[:500], loss=squared_hinge, devices=devices)
    print(f"one-vs-rest, {len(r.classes)} classes on {len(devices)} devices: {r.timings['run']:.2f} s, "
          f"all converged: {r.converged}")
    return len(devices), diff, r


if __name__ == "__main__":
    main()
