"""Issue 13, goal item 6: a new process's first default solve, compile included, against LIBLINEAR.

    python -m bench.first_call                          # a9a, L1 / L2, 5 fresh processes each
    python -m bench.first_call --datasets a9a,ijcnn1 --repeats 7 --out bench/results/<date>-first-call.md

Every measurement is its own fresh Python process that loads the data (not timed), then times
one call:
  * svmopt ``solve(X, y, loss=..., intercept_scaling=1.0)`` (the default method and tol; C = 1),
    from the call until the result is on the host: validation, choosing the method, tracing or
    loading the programs, compiling or loading them, and the iterations. Three cache states:
    ``cold`` (an empty cache folder: what the very first run on a machine pays), ``warm`` (a
    folder an earlier process filled: every later run) and ``jax-only`` (JAX's persistent cache
    warm but svmopt's stored programs removed: what the warm state cost before programs were
    stored, tracing and lowering included). ``import svmopt`` is timed apart;
  * LIBLINEAR (liblinear-official) with its defaults and ``-B 1``: ``problem(y, X)`` + ``train``,
    for L1 ``-s 3`` and for L2 its default ``-s 1`` and the primal Newton ``-s 2``; the ratio is
    taken against the faster.
Times are wall-clock medians over ``--repeats`` processes, run interleaved.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_SVMOPT = r"""
import json, sys, time
t0 = time.perf_counter()
import svmopt
from svmopt.losses import hinge, squared_hinge
t1 = time.perf_counter()
from bench import data
ds = data.load(sys.argv[1])
loss = {"L1": hinge, "L2": squared_hinge}[sys.argv[2]]
t2 = time.perf_counter()
r = svmopt.solve(ds.X, ds.y, loss=loss, intercept_scaling=1.0)
w = r.w.block_until_ready()
t3 = time.perf_counter()
print("RESULT " + json.dumps(dict(imp=t1 - t0, solve=t3 - t2, method=r.method, status=r.status.name,
                                  compile=r.timings["compile"], run=r.timings["run"],
                                  primal=float(r.primal_objective))))
"""

_LIBLINEAR = r"""
import json, sys, time
from liblinear.liblinearutil import problem, parameter, train
from bench import data
ds = data.load(sys.argv[1])
y, X = ds.y.astype(float), ds.X.tocsr()
t0 = time.perf_counter()
m = train(problem(y, X), parameter(f"-s {sys.argv[2]} -c 1 -B 1 -q"))
t1 = time.perf_counter()
print("RESULT " + json.dumps(dict(solve=t1 - t0)))
"""


def _run(code, args, env):
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=ROOT, env=env,
                       timeout=900)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")]
    if p.returncode != 0 or not lines:
        raise RuntimeError(p.stderr[-3000:])
    return json.loads(lines[-1][len("RESULT "):])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--datasets", default="a9a")
    ap.add_argument("--losses", default="L1,L2")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    base = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    base.pop("SVMOPT_COMPILATION_CACHE", None)
    rows = []
    for name in a.datasets.split(","):
        for loss in a.losses.split(","):
            cache = Path(tempfile.mkdtemp(prefix="svmopt-first-call-"))
            env = dict(base, SVMOPT_CACHE_DIR=str(cache))
            try:
                cold = _run(_SVMOPT, [name, loss], env)  # fills the folder
                res = {"warm": [], "jax-only": [], "peer": {}}
                peers = ["3"] if loss == "L1" else ["1", "2"]
                for _ in range(a.repeats):
                    res["warm"].append(_run(_SVMOPT, [name, loss], env))
                    saved = cache.with_name(cache.name + "-programs")
                    shutil.move(str(cache / "svmopt-programs"), saved)
                    res["jax-only"].append(_run(_SVMOPT, [name, loss], env))
                    shutil.rmtree(cache / "svmopt-programs", ignore_errors=True)
                    shutil.move(str(saved), cache / "svmopt-programs")
                    for s in peers:
                        res["peer"].setdefault(s, []).append(_run(_LIBLINEAR, [name, s], base)["solve"])
            finally:
                shutil.rmtree(cache, ignore_errors=True)
            med = lambda rs, k="solve": statistics.median(r[k] for r in rs)  # noqa: E731
            peer = {s: statistics.median(v) for s, v in res["peer"].items()}
            best = min(peer, key=peer.get)
            rows.append(dict(data=name, loss=loss, method=cold["method"], status=cold["status"], cold=cold["solve"],
                             warm=med(res["warm"]), jax_only=med(res["jax-only"]), imp=med(res["warm"], "imp"),
                             run=med(res["warm"], "run"), peer=peer, best=best,
                             ratio=med(res["warm"]) / peer[best], ratio_before=med(res["jax-only"]) / peer[best]))
            print(json.dumps(rows[-1]), flush=True)
    lines = [f"# First call in a new process — {datetime.date.today()}", "",
             f"`python -m bench.first_call {' '.join(argv if argv is not None else sys.argv[1:])}` on "
             f"{platform.node()} ({os.cpu_count()} cores, {platform.machine()}); "
             f"median wall time of {a.repeats} fresh processes each, interleaved. C = 1, bias feature (-B 1), "
             "svmopt's default method and tol (float32, certified 1e-3 gap), LIBLINEAR's defaults (-e 0.1, "
             "uncertified). Data loading is not timed; `import svmopt` is shown apart.", "",
             "| data | loss | auto runs | svmopt warm (s) | of which iterations | jax-only (s) | cold (s) | "
             "LIBLINEAR (s) | ratio warm | ratio jax-only | import svmopt (s) |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        peer = ", ".join(f"-s {s}: {v:.3f}" for s, v in r["peer"].items())
        lines.append(f"| {r['data']} | {r['loss']} | {r['method']} ({r['status']}) | {r['warm']:.3f} | {r['run']:.3f} | "
                     f"{r['jax_only']:.3f} | {r['cold']:.2f} | {peer} | **{r['ratio']:.2f}** | {r['ratio_before']:.2f} | "
                     f"{r['imp']:.2f} |")
    lines += ["", "warm: svmopt's stored programs and JAX's cache both filled by an earlier process (every run "
              "after the first); jax-only: JAX's persistent cache warm, svmopt's stored programs removed (the "
              "programs are traced and lowered again: the warm state before they were stored); cold: empty "
              "folders. Ratios are against the faster LIBLINEAR solver listed."]
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
