"""One process of a two-process jax.distributed solve on 127.0.0.1 (CPU, one device each).

    python tests/distributed_case.py <process_id> <num_processes> <port> <method> <tol> <out.json>

Each process reads only its share of a1a (``load_svmlight(..., shard=(i, P))``), passes
only its own rows (``shard_rows(..., process_local=True)``) and runs the same solve; it
writes what it got (w, b, objective, status) for tests/test_sharding.py to compare.
"""
import json
import os
import sys

pid, nproc, port, method_name, tol, out = sys.argv[1:7]
pid, nproc, tol = int(pid), int(nproc), float(tol)

import jax  # noqa: E402

jax.config.update("jax_cpu_collectives_implementation", "gloo")  # CPU collectives across processes
jax.config.update("jax_enable_x64", True)
jax.distributed.initialize(f"127.0.0.1:{port}", num_processes=nproc, process_id=pid, initialization_timeout=120)

import numpy as np  # noqa: E402

import svmopt  # noqa: E402
from svmopt.losses import hinge, squared_hinge  # noqa: E402
from svmopt.solvers import alm, dual_cd  # noqa: E402

X, y = svmopt.load_svmlight(os.path.join(os.environ["SVMOPT_DATA"], "a1a.xz"), shard=(pid, nproc))
Xs, ys = svmopt.shard_rows(X, y, process_local=True)
kw = {"alm": dict(method=alm, loss=hinge), "dual_cd": dict(method=dual_cd, loss=squared_hinge,
                                                          intercept_scaling=1.0)}[method_name]
r = svmopt.solve(Xs, ys, dtype="float64", tol=tol, max_iter=50000, **kw)
with open(out, "w") as f:
    json.dump(dict(process=jax.process_index(), devices=jax.device_count(), local_rows=X.shape[0],
                   local_features=X.shape[1], w=np.asarray(r.w).tolist(), b=float(r.b),
                   primal=float(r.primal_objective), gap=float(r.gap), status=int(r.status),
                   iterations=int(r.iterations), timings=r.timings), f)
jax.distributed.shutdown()
