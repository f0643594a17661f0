"""Programs kept on disk (svmopt/_programs.py): a new process loads the driver's executables
instead of tracing them, gets bit-for-bit the results of the traced programs, and never loads a
program for something the key cannot vouch for."""
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import svmopt
from svmopt import _programs, driver, loop
from svmopt.losses import from_function, hinge, lp_hinge, squared_hinge
from svmopt.plan import prepare
from svmopt.solvers import alm, newton

from conftest import DATA
from references import load

ROOT = Path(__file__).resolve().parents[1]

_CHILD = textwrap.dedent(r"""
    import json, os, sys
    import numpy as np
    import jax, jax.numpy as jnp
    import svmopt
    from svmopt import _programs
    from svmopt.io import load_svmlight
    from svmopt.losses import from_function, hinge, squared_hinge
    X, y = load_svmlight(os.path.join(sys.argv[1], "a1a.xz"))
    out = {}
    runs = {
        "L1": dict(loss=hinge),                                     # auto: dual_cd
        "L2": dict(loss=squared_hinge),                             # auto: newton
        "L2-alm64": dict(loss=squared_hinge, method=svmopt.solvers.alm(tol=1e-6), dtype=jnp.float64),
        # a loss from the user's own function: never stored, traced in every process
        "user": dict(loss=from_function(lambda m: jnp.maximum(0.0, 1.0 - m) ** 2, name="mine", smooth=True),
                     method=svmopt.solvers.alm(tol=1e-6), dtype=jnp.float64),
    }
    for name, kw in runs.items():
        if sys.argv[2:] and name not in sys.argv[2:]:
            continue
        before = dict(_programs._counts)
        r = svmopt.solve(X, y, fit_intercept=True, intercept_scaling=1.0, **kw)
        after = _programs._counts
        out[name] = dict(w=np.asarray(r.w).tolist(), b=float(r.b), primal=float(r.primal_objective),
                         status=int(r.status), method=r.method,
                         **{k: after[k] - before[k] for k in after})
    print("RESULT " + json.dumps(out))
""")


def _child(cache, *runs, env_extra=None):
    env = dict(os.environ, SVMOPT_CACHE_DIR=str(cache), JAX_ENABLE_X64="1")
    env.pop("XLA_FLAGS", None)
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-c", _CHILD, str(DATA), *runs], capture_output=True, text=True, env=env,
                       cwd=ROOT, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    line = [ln for ln in p.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    return json.loads(line[len("RESULT "):])


@pytest.fixture(scope="module")
def first_and_second(tmp_path_factory):
    """Two processes over one fresh cache folder: the first compiles and stores, the second loads.
    Shared by the two tests below (a new Python and JAX per child: ~8-15 s each)."""
    cache = tmp_path_factory.mktemp("programs")
    first = _child(cache)
    second = _child(cache)
    return cache, first, second


def test_a_new_process_loads_the_programs_and_gets_the_same_results(first_and_second):
    _, first, second = first_and_second
    for name in ("L1", "L2", "L2-alm64"):
        a, b = first[name], second[name]
        assert a["stored"] >= 2 and a["loaded"] == 0, (name, a)  # init and the loop, at least
        assert b["loaded"] >= 2 and b["stored"] == 0, (name, b)  # nothing traced again
        assert a["status"] == b["status"] == int(svmopt.Status.CONVERGED)
        assert a["w"] == b["w"] and a["b"] == b["b"] and a["primal"] == b["primal"]  # bit for bit
    assert first["L1"]["method"] == "dual_cd" and first["L2"]["method"] == "newton"
    # the user's loss: no key, so neither stored nor loaded; its answer is the same all the same
    for run in (first["user"], second["user"]):
        assert run["unkeyed"] >= 1 and run["loaded"] == 0
        assert run["status"] == int(svmopt.Status.CONVERGED)
    assert second["user"]["stored"] == 0
    # and it solves the problem the library's squared hinge solves
    assert first["user"]["primal"] == pytest.approx(first["L2-alm64"]["primal"], rel=2e-6)


def test_an_executable_jax_loaded_from_its_cache_is_not_stored(first_and_second):
    """JAX 0.10 on the CPU: an executable JAX itself loaded from its persistent cache serializes
    without its kernels ("Function wrapped_... not found" when run). With the programs gone and
    JAX's cache warm, nothing may be stored, and a third process must still solve correctly.

    The processes of the fixture filled the folder (the first compiled every program there);
    the test above needs only their results, so this one takes the folder over: the programs
    go, and its processes run only the two runs checked here. (A copy of the folder would not
    do: JAX's cache key holds the folder's path, through XLA's autotuning-cache option.)"""
    cache, first, _ = first_and_second
    programs = list((cache / "svmopt-programs").glob("*.bin"))
    assert programs  # there was something to remove
    for f in programs:
        f.unlink()
    second = _child(cache, "L1", "L2")
    third = _child(cache, "L1", "L2")
    for name in ("L1", "L2"):
        assert second[name]["stored"] == 0 and second[name]["loaded"] == 0, second[name]
        assert third[name]["w"] == first[name]["w"]


def test_a_process_with_several_devices_loads_one_device_programs(tmp_path):
    """Two host devices: the stored one-device programs load onto the default device alone (loaded
    for every device of the backend, as deserialize_and_load does by default, they fail to run)."""
    two = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"}
    first = _child(tmp_path, "L2", env_extra=two)["L2"]
    second = _child(tmp_path, "L2", env_extra=two)["L2"]
    assert first["stored"] >= 2 and second["loaded"] >= 2 and second["stored"] == 0
    assert first["w"] == second["w"] and second["status"] == int(svmopt.Status.CONVERGED)


# ------------------------------------------------------------------------------ the key, in process
def _key(fn, args, name="chunk"):
    tree, sig = driver.signature(args)
    return _programs.program_key(name, fn, tree, sig, ())


@pytest.fixture
def problem():
    X, y = load("heart_scale")
    pb, _, _ = prepare(X, y, loss=squared_hinge, reg=svmopt.regularizers.l2, fit_intercept=False)
    return pb


def test_the_key_tells_apart_what_tracing_can_see(problem):
    pb = problem
    base = _key(loop.init, (newton(), pb, loop.zero_start(newton(), pb)))
    assert base is not None
    # the same structure again (a fresh method object, new runtime numbers): the same key
    assert _key(loop.init, (newton(tol=1e-7, cg_iters=7), pb, loop.zero_start(newton(), pb))) == base
    # a static setting of the method, another program, another dtype, another loss: another key
    assert _key(loop.init, (newton(line_search="armijo"), pb, loop.zero_start(newton(), pb))) != base
    assert _key(loop.summary, (newton(), pb, loop.zero_start(newton(), pb))) != base
    pb64 = jax.tree_util.tree_map(lambda a: a.astype(jnp.float64) if jnp.issubdtype(a.dtype, jnp.floating) else a,
                                  pb)
    assert _key(loop.init, (newton(), pb64, loop.zero_start(newton(), pb64))) != base
    pb_lp = pb.replace(loss=lp_hinge(3.0))
    assert _key(loop.init, (newton(), pb_lp, loop.zero_start(newton(), pb_lp))) != base


def test_no_key_for_what_the_key_cannot_vouch_for(problem):
    pb = problem
    # two users' losses that print alike, and differ
    a = from_function(lambda m: jnp.maximum(0.0, 1.0 - m) ** 2, name="mine", smooth=True)
    b = from_function(lambda m: jnp.maximum(0.0, 1.0 - m) ** 3, name="mine", smooth=True)
    assert repr(a) == repr(b)
    for loss in (a, b):
        p = pb.replace(loss=loss)
        assert _key(loop.init, (alm(), p, loop.zero_start(alm(), p))) is None
    # a program that closes over a user's function
    user = lambda v: v  # noqa: E731
    assert _key(lambda m, p, s: user(s), (alm(), pb, loop.zero_start(alm(), pb))) is None
    # an object of a foreign class among the static parts
    class Foreign:
        pass
    with pytest.raises(_programs._Uncanonical):
        _programs._canon(Foreign())
    with pytest.raises(_programs._Uncanonical):
        _programs._canon(np.sum)  # a function not svmopt's


def test_an_unreadable_file_is_removed_and_the_program_compiled(tmp_path, monkeypatch):
    monkeypatch.setattr(_programs, "folder", lambda: tmp_path)
    monkeypatch.setattr(driver, "_compiled", type(driver._compiled)())
    X, y = load("heart_scale")
    X, y = X[:173], y[:173]  # a shape of this test's own: compiled here, so stored
    kw = dict(loss=hinge, method=alm(tol=1e-8), dtype=jnp.float64, bucket=False)
    ref = svmopt.solve(X, y, **kw)
    files = sorted(tmp_path.glob("*.bin"))
    assert len(files) >= 2, "nothing stored"
    for f in files:
        f.write_bytes(f.read_bytes()[: f.stat().st_size // 2])  # truncated
    monkeypatch.setattr(driver, "_compiled", type(driver._compiled)())
    before = dict(_programs._counts)
    r = svmopt.solve(X, y, **kw)
    assert _programs._counts["loaded"] == before["loaded"]  # none of the halves was used
    assert not any(f.exists() for f in files)  # they were removed
    np.testing.assert_array_equal(np.asarray(r.w), np.asarray(ref.w))
    assert r.status == ref.status == svmopt.Status.CONVERGED


def test_the_folder_stays_under_its_cap(tmp_path, monkeypatch):
    for i in range(6):
        (tmp_path / f"{i:064x}.bin").write_bytes(b"x" * 1000)
        os.utime(tmp_path / f"{i:064x}.bin", (1000 + i, 1000 + i))
    monkeypatch.setattr(_programs, "MAX_BYTES", 3500)
    _programs._evict(tmp_path)
    left = sorted(p.name for p in tmp_path.glob("*.bin"))
    assert left == [f"{i:064x}.bin" for i in (3, 4, 5)]  # the least recently used went


def test_threefry_key_words_made_on_the_host_match_jax():
    from svmopt.solvers.dcd_passes import key_words as _key_words
    for seed in (0, 1, 12345, 2 ** 31 + 5, 2 ** 32 - 1, 2 ** 40, -3):
        np.testing.assert_array_equal(np.asarray(_key_words(seed)),
                                      np.asarray(jax.random.key_data(jax.random.key(seed))))
