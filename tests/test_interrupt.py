"""Ctrl-C (SIGINT) stops a solve promptly and leaves no harm (issue 12, item 5).

Each case runs in a subprocess (a signal to the test process itself would hit pytest) on
generated data whose solve would run for minutes: tol far below what the data allow and an
iteration cap in the millions. The signal is sent once the solve reports its first progress
(so compilation is over and the loop runs). The bounds on the time to stop are generous
(the driver checks for the interrupt between chunks of about 0.2 s; before the fix an
interrupt waited out the whole solve, 13-30 s on these machines).
"""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _env():
    path = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=str(ROOT) + (os.pathsep + path if path else ""), PYTHONUNBUFFERED="1")


def _write_data(path, n=20000, d=60, seed=0):
    """A noisy, non-separable problem in LIBSVM format (dense rows)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ rng.normal(size=d) + 2.0 * rng.normal(size=n) > 0, 1, -1)
    with open(path, "w") as f:
        for yi, row in zip(y, X):
            f.write(f"{yi:+d} " + " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(row)) + "\n")


def _default_sigint():
    """In the child, before exec: SIGINT back to its default. A test run started as a background job
    (``cmd &`` in a script, nohup) inherits SIGINT ignored, and Python then installs no
    KeyboardInterrupt handler in its children: the interrupt tests would wait on a solve that never
    sees the signal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for(proc, word, limit=300):
    """Read the child's merged output until a line containing ``word``; returns the lines read."""
    lines, t0 = [], time.monotonic()
    while time.monotonic() - t0 < limit:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
        if word in line:
            return lines
    raise AssertionError(f"no {word!r} line from the child: {''.join(lines)[-2000:]}")


def test_svmopt_train_exits_130_promptly(tmp_path):
    data, model = tmp_path / "long.txt", tmp_path / "long.model"
    _write_data(data)
    cmd = [sys.executable, "-c", "import sys; from svmopt.cli import train_main; sys.exit(train_main(sys.argv[1:]))",
           "--method", "nesvm", "--loss", "hinge", "-e", "1e-12", "--max-iter", "5000000", "--progress", "1",
           str(data), str(model)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
                            preexec_fn=_default_sigint)
    try:
        _wait_for(proc, "iter")  # the loop runs: compilation is over
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, (proc.returncode, err[-2000:])
    assert err.strip().splitlines() == ["svmopt-train: interrupted"], err[-2000:]  # one line, no traceback
    assert not model.exists() and not any(tmp_path.glob("*.model*"))  # no model, no partial file
    assert took < 10.0, f"svmopt-train took {took:.1f} s to stop after SIGINT"


CHILD = r"""
import json, os, signal, sys, threading, time
import numpy as np
import svmopt
rng = np.random.default_rng(0)
X = rng.normal(size=(20000, 60))
y = np.where(X @ rng.normal(size=60) + 2.0 * rng.normal(size=20000) > 0, 1, -1)
fired = []

def interrupt():
    fired.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)

def progress(info):
    if not fired and not timer.is_alive():  # the loop runs: interrupt it from another thread, mid-chunk
        timer.start()

timer = threading.Timer(0.5, interrupt)

out = {}
try:
    svmopt.solve(X, y, method=svmopt.solvers.nesvm, tol=1e-12, max_iter=5_000_000, verbose=progress)
    out["interrupted"] = False
except KeyboardInterrupt:
    out["interrupted"] = True
    out["latency"] = time.monotonic() - fired[0]
# the process is usable afterwards: the CPU is not kept busy, and the interrupted program runs
# again (the same shapes and method: no new compile) and certifies the default tol
t0, c0 = time.monotonic(), time.process_time()
time.sleep(1.0)
out["busy_after"] = (time.process_time() - c0) / (time.monotonic() - t0)
r = svmopt.solve(X, y, method=svmopt.solvers.nesvm)
out["status"] = int(r.status)
print("RESULT " + json.dumps(out))
"""


def test_library_keyboard_interrupt_and_usable_after():
    p = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, env=_env(), timeout=600,
                       preexec_fn=_default_sigint)
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert p.returncode == 0 and lines, (p.stdout[-2000:], p.stderr[-3000:])
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["interrupted"], out
    assert out["latency"] < 3.0, out  # KeyboardInterrupt within about a chunk, not the whole solve
    assert out["busy_after"] < 0.5, out  # no XLA loop left running on a core
    assert out["status"] == 0, out  # CONVERGED: the process is usable


def test_the_installed_command_exits_within_a_second_of_sigint(tmp_path):
    """The installed svmopt-train (``svmopt.cli.train_script``) ends the process as soon as the
    interrupt is seen: JAX's interpreter teardown (~0.5 s) is skipped. Measured here from the signal
    to the exit; the bound is generous for a loaded machine (the goal is 1 s)."""
    data, model = tmp_path / "long.txt", tmp_path / "long.model"
    _write_data(data)
    cmd = [sys.executable, "-c", "import sys; sys.argv[0] = 'svmopt-train'; from svmopt.cli import train_script; "
           "train_script()", "--method", "nesvm", "--loss", "hinge", "-e", "1e-12", "--max-iter", "5000000",
           "--progress", "1", str(data), str(model)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_env(), cwd=tmp_path,
                            preexec_fn=_default_sigint)
    try:
        _wait_for(proc, "iter")
        time.sleep(0.5)  # well into the loop
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        took = time.monotonic() - t0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "svmopt-train: interrupted" in err, (proc.returncode, err[-2000:])
    assert not model.exists()
    assert took < 3.0, f"svmopt-train took {took:.2f} s to exit after SIGINT"
