"""One-vs-rest as one vmapped solve: against LIBLINEAR (scikit-learn's LinearSVC) on
pendigits / letter, against K separate binary solves, labels of any kind, and errors."""
import warnings

import numpy as np
import pytest
from conftest import data_path
from sklearn.svm import LinearSVC

import svmopt
from svmopt.losses import hinge, lp_hinge, squared_hinge
from svmopt.multiclass import MulticlassResult, solve_multiclass
from svmopt.result import ConvergenceWarning, SolverError, Status


def _load(name, scale=1.0):
    X, y = svmopt.load_svmlight(data_path(name), n_features=16)
    Xt, yt = svmopt.load_svmlight(data_path(name + ".t"), n_features=16)
    # 16 dense features: a dense array is the natural layout (and much faster than CSR)
    return X.toarray() / scale, y, Xt.toarray() / scale, yt


@pytest.fixture(scope="module")
def pendigits():
    return _load("pendigits", scale=100.0)  # raw features are integers 0..100


def _liblinear_objectives(m, X, y, loss):
    """Section-1 objective of LinearSVC's K problems (its intercept is a bias feature of 1)."""
    Y = np.where(y[None, :] == m.classes_[:, None], 1.0, -1.0)
    r = np.maximum(1.0 - Y * (X @ m.coef_.T + m.intercept_).T, 0.0)
    losses = r if loss == "hinge" else r ** 2
    return 0.5 * (np.sum(m.coef_ ** 2, axis=1) + m.intercept_ ** 2) + losses.sum(axis=1)


@pytest.fixture(scope="module")
def pendigits_ovr(pendigits):
    """float64 hinge OvR with LIBLINEAR's bias convention, so both solve the same problems."""
    X, y, _, _ = pendigits
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        return solve_multiclass(X, y, loss=hinge, C=1.0, intercept_scaling=1.0, dtype="float64")


def test_pendigits_hinge_matches_liblinear(pendigits, pendigits_ovr):
    X, y, Xt, yt = pendigits
    r = pendigits_ovr
    assert isinstance(r, MulticlassResult)
    K, d = 10, 16
    assert np.array_equal(r.classes, np.arange(10.0))
    assert np.asarray(r.w).shape == (K, d) and np.asarray(r.b).shape == (K,)
    assert np.asarray(r.primal_objective).shape == (K,) and r.converged
    assert np.all(r.relative_gap <= 1e-3)  # the certificate behind the comparison below
    m = LinearSVC(loss="hinge", C=1.0, tol=1e-6, max_iter=200000).fit(X, y)
    ref = _liblinear_objectives(m, X, y, "hinge")
    np.testing.assert_allclose(np.asarray(r.primal_objective), ref, rtol=1e-3)
    assert abs(r.score(Xt, yt) - m.score(Xt, yt)) <= 0.01
    f = r.decision_function(Xt)
    assert f.shape == (len(yt), K)
    np.testing.assert_array_equal(r.predict(Xt), r.classes[np.argmax(f, axis=1)])


def test_vmapped_equals_separate_solves(pendigits, pendigits_ovr):
    """Class k of the batch solves the same problem as svmopt.solve on 'k against the rest'.

    The batched matvecs sum in another order, so the iterates are not bit-identical and a
    class may stop a few iterations apart; each run certifies P - P* <= gap, and the
    objective is 1-strongly convex in (w, bias weight), so ||z1 - z2|| <= sqrt(2 gap1) + sqrt(2 gap2).
    """
    X, y, _, _ = pendigits
    r = pendigits_ovr
    for k, c in enumerate(r.classes):
        rk = svmopt.solve(X, np.where(y == c, 1.0, -1.0), loss=hinge, C=1.0, intercept_scaling=1.0,
                          dtype="float64")
        g1, g2 = float(r.gap[k]), float(rk.gap)
        assert abs(float(r.primal_objective[k]) - float(rk.primal_objective)) <= g1 + g2
        z1 = np.append(np.asarray(r.w[k]), float(r.b[k]))
        z2 = np.append(np.asarray(rk.w), float(rk.b))
        assert np.linalg.norm(z1 - z2) <= np.sqrt(2 * g1) + np.sqrt(2 * g2)


@pytest.mark.slow
def test_squared_hinge_float32_accuracy(pendigits):
    X, y, Xt, yt = pendigits
    r = solve_multiclass(X, y, loss=squared_hinge, C=1.0, dtype="float32")  # free intercept
    assert np.asarray(r.w).dtype == np.float32 and r.converged
    m = LinearSVC(loss="squared_hinge", C=1.0, tol=1e-6, max_iter=200000).fit(X, y)
    assert abs(r.score(Xt, yt) - m.score(Xt, yt)) <= 0.01


@pytest.mark.slow
@pytest.mark.parametrize("loss", ["hinge", "squared_hinge"])
def test_letter_matches_liblinear(loss):
    """letter.scale: 26 classes. The hinge optimum has w = 0 for about a third of the classes
    (b near -1: no better than 'never this class'), so test accuracy hinges on how ties among
    those nearly constant scores break: compared only for the squared hinge."""
    X, y, Xt, yt = _load("letter.scale")
    lossf = hinge if loss == "hinge" else squared_hinge
    r = solve_multiclass(X, y, loss=lossf, C=1.0, intercept_scaling=1.0, dtype="float64")
    assert r.converged and np.asarray(r.w).shape == (26, 16)
    m = LinearSVC(loss=loss, C=1.0, tol=1e-6, max_iter=200000).fit(X, y)
    np.testing.assert_allclose(np.asarray(r.primal_objective), _liblinear_objectives(m, X, y, loss), rtol=1e-3)
    if loss == "squared_hinge":
        assert abs(r.score(Xt, yt) - m.score(Xt, yt)) <= 0.01


@pytest.fixture(scope="module")
def heart():
    X, y = svmopt.load_svmlight(data_path("heart_scale"))
    return X, y


def test_two_string_classes_mirror_binary(heart):
    """K = 2 works: two mirrored problems (optimum w_1 = -w_0, b_1 = -b_0) and the binary
    solve's, each within its certified distance sqrt(2 gap) of that optimum (free b: the
    bound holds for w)."""
    X, y = heart
    labels = np.where(y > 0, "sick", "healthy")
    r = solve_multiclass(X, labels, C=1.0, dtype="float64")
    assert list(r.classes) == ["healthy", "sick"] and r.converged
    rb = svmopt.solve(X, labels, C=1.0, dtype="float64")
    w, r0, r1, rg = np.asarray(r.w), *np.sqrt(2 * np.asarray(r.gap)), np.sqrt(2 * float(rb.gap))
    assert np.linalg.norm(w[1] + w[0]) <= r0 + r1
    assert np.linalg.norm(w[1] - np.asarray(rb.w)) <= r1 + rg
    np.testing.assert_allclose(r.primal_objective, float(rb.primal_objective), atol=float(np.max(r.gap) + rb.gap))
    pred = r.predict(X)
    assert pred.dtype.kind == "U" and np.mean(pred == rb.predict(X)) >= 0.98


def test_cap_warns_and_throws(heart):
    """Also: a parameterised loss (lp_hinge) in the batched path, and a second identical
    call reusing the compiled solver."""
    X, y = heart
    y3 = np.where(X[:, 0].toarray().ravel() > 0.3, 2, y)  # a third label for part of the rows
    with pytest.warns(ConvergenceWarning, match="MAX_ITER for class"):
        r = solve_multiclass(X, y3, loss=lp_hinge(1.5), max_iter=2, dtype="float32")
    assert np.asarray(r.w).dtype == np.float32 and list(r.classes) == [-1.0, 1.0, 2.0]
    assert np.all(np.asarray(r.status) == Status.MAX_ITER) and np.all(np.asarray(r.iterations) == 2)
    assert not r.converged and "MAX_ITER" in r.message and r.loss == "lp_hinge(p=1.5)"
    with pytest.raises(SolverError, match="one-vs-rest"):
        solve_multiclass(X, y3, loss=lp_hinge(1.7), max_iter=2, dtype="float32", throw=True)
    with pytest.warns(ConvergenceWarning):
        again = solve_multiclass(X, y3, loss=lp_hinge(1.5), max_iter=2, dtype="float32")
    assert again.timings["compile"] == 0.0
    np.testing.assert_array_equal(np.asarray(again.w), np.asarray(r.w))


@pytest.mark.parametrize("kwargs, match", [
    (dict(strategy="ova"), "strategy must be 'ovr'"),
    (dict(C=[1.0, 2.0]), "scalar C"),
    (dict(C=-1.0), "C must be finite and > 0"),
    (dict(method="alm"), "method must be an svmopt solver"),
    (dict(max_iter=0), "max_iter must be a positive integer"),
])
def test_bad_arguments(heart, kwargs, match):
    X, y = heart
    with pytest.raises((ValueError, TypeError), match=match):
        solve_multiclass(X, y, **kwargs)


def test_bad_labels(heart):
    X, y = heart
    with pytest.raises(ValueError, match="only one class"):
        solve_multiclass(X, np.ones(X.shape[0]))
    with pytest.raises(ValueError, match="shape mismatch"):
        solve_multiclass(X, y[:-1])
    with pytest.raises(ValueError, match="NaN or inf"):
        solve_multiclass(X, np.where(y > 0, np.nan, 1.0))


def test_classes_dual_cd_leaves_uncertified_are_handed_over_to_alm():
    """The hinge at C = 100 on letter's first 1000 rows: dual CD leaves most of the 26 one-vs-rest
    problems uncertified; the default solve hands each over to Jacobi-scaled alm by the rule a single
    solve follows (svmopt.solvers.auto, svmopt.stages): a class uncertified after 300 passes goes
    over at once where its gap is above 0.1, else after 1000 passes if still uncertified. Every
    class alm then certifies is at LIBLINEAR's optimum (LinearSVC to 1e-7 where it stopped before
    its 200,000-pass cap, objective in numpy float64); the others keep their honest status. A
    caller's max_iter keeps dual_cd alone."""
    X, y, _, _ = _load("letter.scale")
    X, y = X[:1000], y[:1000]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        at300 = solve_multiclass(X, y, C=100.0, intercept_scaling=1.0, max_iter=300)
        capped = solve_multiclass(X, y, C=100.0, intercept_scaling=1.0, max_iter=1000)
        r = solve_multiclass(X, y, C=100.0, intercept_scaling=1.0)
    assert capped.method == "dual_cd" and "handover" not in capped.extras
    before, after = np.asarray(capped.status), np.asarray(r.status)
    assert np.sum(before == Status.MAX_ITER) >= 10 and r.method in ("alm", "dual_cd+alm")
    handed = r.extras["handover"]
    s300, rel300 = np.asarray(at300.status), np.abs(np.asarray(at300.relative_gap))
    expected = [str(int(c)) for k, c in enumerate(r.classes)
                if s300[k] == Status.MAX_ITER and (rel300[k] > 0.1 or before[k] == Status.MAX_ITER)]
    assert sorted(handed) == sorted(expected) and len(expected) >= 10
    assert (r.method == "alm") == (len(handed) == len(r.classes) and not any("kept" in v for v in handed.values()))
    assert np.sum(after == Status.CONVERGED) > np.sum(before == Status.CONVERGED) + 10
    checked = 0
    for k, c in enumerate(r.classes):
        yb = np.where(y == c, 1.0, -1.0)
        if after[k] != Status.CONVERGED or str(int(c)) not in handed or checked == 4:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            m = LinearSVC(loss="hinge", dual=True, tol=1e-7, max_iter=200000, C=100.0, intercept_scaling=1.0)
            m.fit(X, yb)
        if m.n_iter_ >= 200000:
            continue
        wl, bl = m.coef_.ravel(), float(m.intercept_[0])
        ref = 0.5 * (wl @ wl + bl * bl) + 100.0 * np.maximum(0.0, 1.0 - yb * (X @ wl + bl)).sum()
        w, b = np.asarray(r.w[k], float), float(r.b[k])
        P = 0.5 * (w @ w + b * b) + 100.0 * np.maximum(0.0, 1.0 - yb * (X @ w + b)).sum()
        assert ref * (1 - 1e-6) <= P <= ref * (1 + 1e-3), (c, P, ref)
        assert float(r.dual_objective[k]) <= ref * (1 + 1e-6)
        checked += 1
    assert checked == 4


def _wide_text(rows=600, vocab=3000, classes=6, seed=0):
    """A small tf-idf-like sparse set (the kind where a batch's problems run on the host's cores at once)."""
    import scipy.sparse as sp
    from sklearn.preprocessing import normalize
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, rows).astype(float)
    topic = rng.integers(0, vocab, (classes, 40))
    cols = [np.r_[rng.integers(0, vocab, 30), topic[int(c)][rng.integers(0, 40, 8)]] for c in y]
    X = sp.csr_matrix((np.ones(sum(map(len, cols))), np.concatenate(cols), np.cumsum([0] + [len(c) for c in cols])),
                      shape=(rows, vocab))
    X.sum_duplicates()
    return normalize(X).tocsr(), y


@pytest.mark.parametrize("loss,extra", [(squared_hinge, {}), (hinge, dict(intercept_scaling=1.0))])
def test_problems_on_host_threads_equal_one_after_another(monkeypatch, loss, extra):
    """The batch's problems run from several host threads at once (svmopt.host_threads); each
    problem's result is bit for bit the one of a run that takes them one after another."""
    from svmopt import driver
    X, y = _wide_text()
    monkeypatch.setenv("SVMOPT_THREADS", "3")
    assert driver.host_threads() == 3
    par = solve_multiclass(X, y, loss=loss, C=1.0, **extra)
    monkeypatch.setenv("SVMOPT_THREADS", "1")
    seq = solve_multiclass(X, y, loss=loss, C=1.0, **extra)
    assert par.converged and seq.converged
    np.testing.assert_array_equal(np.asarray(par.w), np.asarray(seq.w))
    np.testing.assert_array_equal(np.asarray(par.b), np.asarray(seq.b))
    np.testing.assert_array_equal(np.asarray(par.iterations), np.asarray(seq.iterations))
    # and against LIBLINEAR's objective on the bias-feature problem: the same optimum within the certificate
    if extra:
        m = LinearSVC(loss="hinge", C=1.0, tol=1e-8, max_iter=100000).fit(X, y)
        ref = _liblinear_objectives(m, X, y, "hinge")
        got = np.asarray(par.primal_objective)
        assert np.all(got >= ref * (1 - 1e-4)) and np.all(got <= ref * (1 + 1e-3))


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_host_threads_setting_is_checked(monkeypatch, value):
    from svmopt import driver
    monkeypatch.setenv("SVMOPT_THREADS", value)
    with pytest.raises(ValueError, match="SVMOPT_THREADS must be a positive integer"):
        driver.host_threads()


THREADED_CHILD = r"""
import json, os, signal, threading, time
import numpy as np
import svmopt
rng = np.random.default_rng(0)
X = rng.normal(size=(4000, 40))
y = rng.integers(0, 6, 4000).astype(float)
fired = []

def interrupt():
    fired.append(time.monotonic())
    os.kill(os.getpid(), signal.SIGINT)

svmopt.solve_multiclass(X, y, method=svmopt.solvers.nesvm, max_iter=3)  # compiles what the long run needs
timer = threading.Timer(1.0, interrupt)
out = {}
timer.start()
try:
    svmopt.solve_multiclass(X, y, method=svmopt.solvers.nesvm, tol=1e-12, max_iter=5_000_000)
    out["interrupted"] = False
except KeyboardInterrupt:
    out["interrupted"] = True
    out["latency"] = time.monotonic() - fired[0]
out["lanes_left"] = [t.name for t in threading.enumerate() if t.name.startswith("svmopt-lane")]
t0, c0 = time.monotonic(), time.process_time()
time.sleep(1.0)
out["busy_after"] = (time.process_time() - c0) / (time.monotonic() - t0)
r = svmopt.solve_multiclass(X, y, method=svmopt.solvers.nesvm)
out["converged"] = bool(r.converged)
print("RESULT " + json.dumps(out))
"""


def test_interrupt_stops_every_host_thread():
    """Ctrl-C during a batch whose problems run on several host threads: KeyboardInterrupt in the
    caller within about a chunk, no lane thread left, no core kept busy, and the next batch runs."""
    import json
    import os
    import subprocess
    import sys
    from test_interrupt import _default_sigint, _env
    env = dict(_env(), SVMOPT_THREADS="2")
    p = subprocess.run([sys.executable, "-c", THREADED_CHILD], capture_output=True, text=True, env=env, timeout=600,
                       preexec_fn=_default_sigint, cwd=os.getcwd())
    lines = [line for line in p.stdout.splitlines() if line.startswith("RESULT ")]
    assert p.returncode == 0 and lines, (p.stdout[-2000:], p.stderr[-3000:])
    out = json.loads(lines[-1][len("RESULT "):])
    assert out["interrupted"] and out["latency"] < 3.0, out
    assert out["lanes_left"] == [], out
    assert out["busy_after"] < 0.5, out
    assert out["converged"], out


def test_a_progress_callback_is_called_in_the_callers_thread_in_turn():
    """A caller's callback (verbose=f) sees the problems one after another, from the calling thread, as
    before host threads: a callback written for one thread keeps working."""
    import threading
    X, y = _wide_text(rows=200, classes=4)
    calls = []
    r = solve_multiclass(X, y, loss=squared_hinge, verbose=lambda info: calls.append(threading.current_thread()))
    assert r.converged and calls and all(t is threading.main_thread() for t in calls)
