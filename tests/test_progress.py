"""Progress (verbose=) and history in Python: solve, C grids, one-vs-rest, paths, the estimator.

Every number a progress line or a history row reports is checked against the result the
solve returns and against an independent float64 numpy objective of the returned (w, b)."""
import logging

import numpy as np
import pytest
from references import load, objective

import svmopt
from svmopt.estimators import SVMClassifier
from svmopt.losses import squared_hinge
from svmopt.solvers import alm


class Recorder:
    """A verbose callback that keeps every call (``every``: the driver reports on those iterations)."""

    def __init__(self, every=None):
        self.calls = []
        if every:
            self.every = every

    def __call__(self, info):
        self.calls.append(dict(info))


@pytest.fixture(scope="module")
def heart():
    return load("heart_scale")


def test_verbose_callback_and_history_agree(heart):
    X, y = heart
    cb = Recorder(every=5)
    r = svmopt.solve(X, y, loss=squared_hinge, dtype="float64", verbose=cb, tol=1e-5)
    ks = [c["iteration"] for c in cb.calls]
    assert ks[:-1] == list(range(5, 5 * len(ks), 5)) and ks[-1] == r.iterations  # every 5, then the end
    assert {"objective", "gap", "relative_gap", "elapsed", "label"} <= set(cb.calls[0])
    last = cb.calls[-1]
    assert last["objective"] == pytest.approx(float(r.primal_objective), rel=1e-12)
    assert last["gap"] == pytest.approx(float(r.gap), rel=1e-9, abs=1e-12)
    assert last["objective"] == pytest.approx(objective(X, y, np.asarray(r.w), float(r.b), 1.0, 2), rel=1e-10)
    assert all(c["gap"] >= -1e-9 for c in cb.calls) and last["relative_gap"] <= 1e-5

    h = svmopt.solve(X, y, loss=squared_hinge, dtype="float64", history=True, record_every=5, tol=1e-5).history
    assert h["iteration"][0] == 0 and list(h["iteration"][1:6]) == [5, 10, 15, 20, 25]
    for c in cb.calls[:-1]:  # the same iterates: the callback saw what history recorded
        i = int(np.flatnonzero(h["iteration"] == c["iteration"])[0])
        assert h["objective"][i] == pytest.approx(c["objective"], rel=1e-12)
        assert h["gap"][i] == pytest.approx(c["gap"], rel=1e-9, abs=1e-12)
    assert np.all(np.diff(h["time"]) >= 0)


def test_verbose_true_logs_through_logging(heart, caplog):
    X, y = heart
    with caplog.at_level(logging.INFO, logger="svmopt"):
        r = svmopt.solve(X, y, dtype="float64", verbose=10)
    lines = [rec.getMessage() for rec in caplog.records if rec.name == "svmopt"]
    assert len(lines) >= 2 and all("objective" in s and "rel.gap" in s for s in lines)
    assert f"iter {r.iterations:7d}" in lines[-1]  # the last line is the end of the run


def test_history_for_a_C_grid(heart):
    """A batched solve records one table per C, the same as solving each C alone."""
    X, y = heart
    grid = [0.1, 1.0, 10.0]
    r = svmopt.solve(X, y, C=grid, loss=squared_hinge, dtype="float64", history=True, record_every=4,
                     max_iter=400)
    assert isinstance(r.history, list) and len(r.history) == 3
    for i, C in enumerate(grid):
        h = r.history[i]
        assert h["objective"][-1] == pytest.approx(float(r.primal_objective[i]), rel=1e-12)
        assert h["gap"][-1] == pytest.approx(float(r.gap[i]), rel=1e-9, abs=1e-12)
        assert h["objective"][-1] == pytest.approx(objective(X, y, r.w[i], float(r.b[i]), C, 2), rel=1e-10)
        one = svmopt.solve(X, y, C=C, loss=squared_hinge, dtype="float64", history=True, record_every=4,
                           max_iter=400).history
        m = len(h["iteration"])  # one device: each C runs alone (from iteration 0); lanes skip iteration 0
        assert m >= len(one["iteration"]) - 1
        np.testing.assert_array_equal(h["iteration"], one["iteration"][-m:])
        np.testing.assert_allclose(h["objective"], one["objective"][-m:], rtol=1e-12)
        np.testing.assert_allclose(h["gap"], one["gap"][-m:], rtol=1e-9, atol=1e-12)
    v = svmopt.solve(X, y, C=grid, loss=squared_hinge, dtype="float64", history=True, record_every=4,
                     max_iter=400, batch="vmap")  # the vmapped batch (finished lanes leave) records the same
    for i, C in enumerate(grid):
        h = v.history[i]
        assert h["iteration"][-1] == v.iterations[i] and np.all(np.diff(h["time"]) >= 0)
        assert h["objective"][-1] == pytest.approx(float(v.primal_objective[i]), rel=1e-12)
        assert h["objective"][-1] == pytest.approx(objective(X, y, v.w[i], float(v.b[i]), C, 2), rel=1e-10)


def test_one_vs_rest_and_path_progress(heart):
    X, y = heart
    y3 = np.where(X[:, 0].toarray().ravel() > 0.3, 2, y)
    cb = Recorder()
    r = svmopt.solve_multiclass(X, y3, loss=squared_hinge, dtype="float64", verbose=cb, history=True)
    assert {c["label"] for c in cb.calls} == {"[-1] ", "[1] ", "[2] "}
    for k in range(3):
        assert r.history[k]["objective"][-1] == pytest.approx(float(r.primal_objective[k]), rel=1e-12)
        assert r.history[k]["iteration"][-1] == r.iterations[k]

    cb = Recorder()
    p = svmopt.path(X, y, C=[0.5, 2.0], loss=squared_hinge, dtype="float64", verbose=cb, history=True)
    assert {c["label"] for c in cb.calls} == {"[C=0.5] ", "[C=2] "}
    for i, C in enumerate((0.5, 2.0)):
        assert p.history[i]["objective"][-1] == pytest.approx(objective(X, y, p.w[i], float(p.b[i]), C, 2),
                                                              rel=1e-10)


def test_estimator_verbose_default_loss_and_kernel(heart):
    """verbose reaches the solve; the default loss is LinearSVC's (the same model as LinearSVC);
    kernel="rbf" picks a kernel method and agrees with SVC."""
    from sklearn.svm import SVC, LinearSVC

    X, y = heart
    cb = Recorder()
    clf = SVMClassifier(intercept_scaling=1.0, dtype="float64", tol=1e-6, verbose=cb, method=alm).fit(X, y)
    assert cb.calls and clf.result_.loss == "squared_hinge"
    ref = LinearSVC(C=1.0, tol=1e-8, max_iter=100000, intercept_scaling=1.0).fit(X, y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=2e-3)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=2e-3)

    k = SVMClassifier(kernel="rbf", gamma=0.2, dtype="float64").fit(X, y)
    assert k.result_.method == "alfpgm" and k.result_.converged and k.result_.loss == "hinge"
    svc = SVC(kernel="rbf", gamma=0.2, C=1.0, tol=1e-6).fit(X, y)
    assert np.mean(k.predict(X) == svc.predict(X)) >= 0.99
