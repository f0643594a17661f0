"""svmopt as JAX code: jit / vmap / grad around solve, implicit gradients, no recompiles,
exact resumes, warm-started paths, capabilities instead of names (real data, float64)."""
import warnings

from pathlib import Path

import numpy as np
import pytest

import jax
import jax.numpy as jnp

import svmopt
from svmopt import driver
from svmopt.losses import from_function, hinge, logistic, lp_hinge, squared_hinge
from svmopt.regularizers import custom, l1, l2
from svmopt.result import Status
from svmopt.solvers import alfpgm, alm, cutting_plane, dual_cd, homotopy_nesvm, nesvm
from svmopt.kernels import rbf
import references
from references import load, newton, pm

F64 = jnp.float64


@pytest.fixture(scope="module")
def heart():
    X, y = load("heart_scale")
    return np.asarray(X.toarray()), pm(y)


@pytest.fixture(scope="module")
def a9a_small():
    X, y = load("a9a")
    idx = np.random.default_rng(0).choice(X.shape[0], 600, replace=False)
    return np.asarray(X[idx].toarray()), pm(y[idx])


# ---------------------------------------------------------------------------------- jit / vmap
def test_jit_equals_eager(heart):
    X, y = heart
    kw = dict(loss=squared_hinge, tol=1e-7, dtype=F64)  # (auto: newton; see test_newton on tighter tols)
    eager = svmopt.solve(X, y, C=0.5, **kw)
    assert eager.status == Status.CONVERGED
    # X and y traced, and the whole Result leaves jit (it is a pytree); one program (X closed
    # over, as host data inside the trace, with a Result out: test_float32_jit_path)
    r = jax.jit(lambda X, y, C: svmopt.solve(X, y, C=C, **kw))(jnp.asarray(X), jnp.asarray(y), 0.5)
    wj = np.asarray(r.w)
    assert np.linalg.norm(wj - np.asarray(eager.w)) <= 2 * np.sqrt(2 * float(eager.gap)) + 1e-9
    assert int(r.status) == Status.CONVERGED and abs(float(r.primal_objective) - float(eager.primal_objective)) \
        <= float(r.gap) + float(eager.gap)


def test_vmap_over_C_and_p_together(heart):
    """One vmapped program over (C, p) pairs of the Lp hinge, against eager solves (one program:
    C and p are runtime numbers); the slow sibling below vmaps over each alone (four programs)."""
    X, y = heart
    Cs, ps = [0.1, 1.0, 4.0], [1.5, 3.0, 1.5]
    kw = dict(tol=1e-9, dtype=F64)
    v = jax.vmap(lambda C, p: svmopt.solve(X, y, C=C, loss=lp_hinge(p), **kw))(jnp.asarray(Cs), jnp.asarray(ps))
    for i, (C, p) in enumerate(zip(Cs, ps)):
        e = svmopt.solve(X, y, C=C, loss=lp_hinge(p), **kw)
        assert int(v.status[i]) == e.status == Status.CONVERGED
        assert float(v.primal_objective[i]) == pytest.approx(float(e.primal_objective), rel=1e-7)
        # both certified: 1-strong convexity puts each w within sqrt(2 gap) of the optimum
        dw = np.linalg.norm(np.asarray(v.w[i]) - np.asarray(e.w))
        assert dw <= np.sqrt(2 * float(v.gap[i])) + np.sqrt(2 * float(e.gap)) + 1e-9
    assert not np.allclose(np.asarray(v.w[0]), np.asarray(v.w[2]))  # the pairs are different problems


@pytest.mark.slow
def test_vmap_over_C_and_labels_and_p(heart):
    X, y = heart
    Cs = jnp.asarray([0.1, 1.0, 4.0])
    kw = dict(loss=squared_hinge, tol=1e-13, dtype=F64)  # ||w - w*||^2 <= 2 gap: w to ~1e-6
    vw = jax.vmap(lambda C: svmopt.solve(X, y, C=C, **kw).w)(Cs)
    for i, C in enumerate([0.1, 1.0, 4.0]):
        np.testing.assert_allclose(np.asarray(vw[i]), np.asarray(svmopt.solve(X, y, C=C, **kw).w),
                                   rtol=1e-5, atol=1e-7)
    # over loss parameters: the Lp hinge's p
    ps = jnp.asarray([1.5, 3.0])
    obj = jax.vmap(lambda p: svmopt.solve(X, y, loss=lp_hinge(p), tol=1e-9, dtype=F64).primal_objective)(ps)
    for i, p in enumerate([1.5, 3.0]):
        assert float(obj[i]) == pytest.approx(float(svmopt.solve(X, y, loss=lp_hinge(p), tol=1e-9,
                                                                 dtype=F64).primal_objective), rel=1e-7)


def test_vmap_over_labels_and_data_sets(heart):
    """vmap over y (X fixed) and over X, each inside jit: one compiled program per vmap (eagerly,
    every op of the batched solve compiles on its own, ~2x the time; eager vmap through solve is
    test_vmap_over_C_and_p_together)."""
    X, y = heart
    kw = dict(loss=squared_hinge, tol=1e-13, dtype=F64)
    Y = np.stack([y, np.where(np.arange(y.size) % 7 == 0, -y, y)])
    ws = jax.jit(jax.vmap(lambda yy: svmopt.solve(X, yy, **kw).w))(jnp.asarray(Y))
    np.testing.assert_allclose(np.asarray(ws[1]), np.asarray(svmopt.solve(X, Y[1], **kw).w), rtol=1e-5, atol=1e-7)
    Xs = np.stack([X, 0.5 * X])
    ws = jax.jit(jax.vmap(lambda XX: svmopt.solve(XX, y, **kw).w))(jnp.asarray(Xs))
    np.testing.assert_allclose(np.asarray(ws[1]), np.asarray(svmopt.solve(Xs[1], y, **kw).w), rtol=1e-5, atol=1e-7)


# ---------------------------------------------------------------------------------- implicit gradients
# jax.grad through solve (implicit differentiation at our solution) against central finite
# differences of an independent float64 Newton solve (machine precision, so h = 1e-4 is clean)
def _fd(f, x, h):
    return (f(x + h) - f(x - h)) / (2 * h)


CASES = [("squared_hinge", squared_hinge, None), ("lp", lp_hinge(1.5), 1.5), ("logistic", logistic, None)]
KW = dict(tol=1e-12, dtype=F64, max_iter=200000)


def _grad_cases():
    """Every loss on heart; a9a_small is slow (each (set, loss) compiles its own differentiated
    solve, ~5-25 s; a9a_small-squared_hinge takes 12-18 s): its fast sibling for the same loss,
    method and code path is heart-squared_hinge."""
    for data in ("heart", "a9a_small"):
        for case, cid in zip(CASES, ["squared_hinge", "lp1.5", "logistic"]):
            fast = data == "heart"
            yield pytest.param(*case, data, id=f"{data}-{cid}", marks=() if fast else pytest.mark.slow)


@pytest.mark.parametrize("name,loss,p,data", list(_grad_cases()))
def test_grad_wrt_C_matches_finite_differences(name, loss, p, data, request):
    X, y = request.getfixturevalue(data)
    v = np.random.default_rng(1).normal(size=X.shape[1])

    def f(C):
        r = svmopt.solve(X, y, C=C, loss=loss, **KW)
        return jnp.vdot(r.w, v) + 3.0 * r.b, r.primal_objective

    def ref(C):
        w, b = newton(X, y, name, C=C, p=p)
        val, _, _ = references._loss_parts(name, p)
        return w @ v + 3.0 * b, 0.5 * w @ w + C * np.sum(val(y * (X @ w + b)))

    C0 = 0.7
    ad = float(jax.grad(lambda C: f(C)[0])(C0))
    ad_obj = float(jax.grad(lambda C: f(C)[1])(C0))
    assert ad == pytest.approx(_fd(lambda c: ref(c)[0], C0, 1e-4), rel=1e-3, abs=1e-6)
    assert ad_obj == pytest.approx(_fd(lambda c: ref(c)[1], C0, 1e-4), rel=1e-4)


@pytest.mark.parametrize("name,loss,p", CASES[:2], ids=["squared_hinge", "lp1.5"])
def test_grad_wrt_p_and_one_sample_weight(name, loss, p, heart):
    X, y = heart
    v = np.random.default_rng(2).normal(size=X.shape[1])
    i, s0 = 17, np.ones(X.shape[0])

    def f_s(si):
        r = svmopt.solve(X, y, loss=loss, sample_weight=jnp.asarray(s0).at[i].set(si), **KW)
        return jnp.vdot(r.w, v) + r.b

    def ref_s(si):
        w, b = newton(X, y, name, s=np.where(np.arange(X.shape[0]) == i, si, 1.0), p=p)
        return w @ v + b

    assert float(jax.grad(f_s)(1.3)) == pytest.approx(_fd(ref_s, 1.3, 1e-4), rel=1e-3, abs=1e-7)
    if name == "lp":
        def f_p(q):
            r = svmopt.solve(X, y, loss=lp_hinge(q), **KW)
            return jnp.vdot(r.w, v) + r.b

        def ref_p(q):
            w, b = newton(X, y, "lp", p=q)
            return w @ v + b

        assert float(jax.grad(f_p)(1.5)) == pytest.approx(_fd(ref_p, 1.5, 1e-4), rel=1e-3)


def test_grad_wrt_X_entry(heart):
    X, y = heart
    v = np.random.default_rng(3).normal(size=X.shape[1])

    def f(t):
        r = svmopt.solve(jnp.asarray(X).at[5, 2].add(t), y, loss=squared_hinge, **KW)
        return jnp.vdot(r.w, v) + r.b

    def ref(t):
        Xt = X.copy()
        Xt[5, 2] += t
        w, b = newton(Xt, y, "squared_hinge")
        return w @ v + b

    assert float(jax.grad(f)(0.0)) == pytest.approx(_fd(ref, 0.0, 1e-5), rel=1e-3, abs=1e-7)


def test_hinge_grad_where_the_active_set_is_stable(heart):
    """Hinge: the active-set KKT derivative equals finite differences of LIBSVM's (linear kernel,
    float64, tol 1e-12) solutions where no margin crosses 1 between C - h and C + h."""
    from sklearn.svm import SVC
    X, y = heart
    v = np.random.default_rng(4).normal(size=X.shape[1])

    def ref(C):
        m = SVC(kernel="linear", C=C, tol=1e-12).fit(X, y)
        w, b = m.coef_.ravel(), float(m.intercept_[0])
        return w, b

    def f(C):
        r = svmopt.solve(X, y, C=C, loss=hinge, tol=1e-12, dtype=F64, max_iter=400000)
        return jnp.vdot(r.w, v) + r.b

    C0, h = 0.3, 1e-3
    (wm, bm), (wp, bp) = ref(C0 - h), ref(C0 + h)
    E = [np.abs(y * (X @ w + b) - 1) < 1e-6 for w, b in ((wm, bm), (wp, bp))]
    assert np.array_equal(E[0], E[1]) and E[0].sum() > 0  # a stable active set, with free SVs
    fd = ((wp - wm) @ v + (bp - bm)) / (2 * h)
    assert float(jax.grad(f)(C0)) == pytest.approx(fd, rel=1e-3, abs=1e-6)


# ---------------------------------------------------------------------------------- no recompiles
def test_canonical_methods_are_reused_only_when_equal():
    """A method's runtime numbers go to the device once per distinct setting (``Method.canonical``
    keeps recent ones): equal settings share the arrays; 3 (an int: int32) and 3.0 (a float) do
    not; a number given as an array, and any call inside a trace, are converted afresh (a kept
    tracer would leak out of the trace)."""
    a = alm(rho=1.5, cg_iters=3).canonical(jnp.float32)
    assert alm(rho=1.5, cg_iters=3).canonical(jnp.float32) is a
    assert alm(rho=1.5, cg_iters=3).canonical(jnp.float32).rho is a.rho
    b = alm(rho=1.5, cg_iters=3.0).canonical(jnp.float32)
    assert b is not a and a.cg_iters.dtype == jnp.int32 and b.cg_iters.dtype == jnp.float32
    assert alm(rho=1.6, cg_iters=3).canonical(jnp.float32).rho == np.float32(1.6)
    arr = alm(rho=np.array(1.5), cg_iters=3)
    assert arr.canonical(jnp.float32) is not arr.canonical(jnp.float32)
    inside = jax.jit(lambda r: alm(rho=1.25, cg_iters=3).canonical(jnp.float32).rho * r)(2.0)
    after = alm(rho=1.25, cg_iters=3).canonical(jnp.float32)
    assert float(inside) == 2.5 and not isinstance(after.rho, jax.core.Tracer) and float(after.rho) == 1.25


def test_runtime_numbers_do_not_recompile(heart):
    X, y = heart
    svmopt.solve(X, y, tol=1e-3, dtype=F64)
    n0 = driver.compile_count()
    r = svmopt.solve(X, y, tol=1e-5, max_iter=777, C=2.5, dtype=F64)
    r2 = svmopt.solve(X, y, tol=1e-4, dtype=F64, init=r)
    r3 = svmopt.solve(X, y, tol=1e-4, dtype=F64, init=(r.w, r.b), method=alm(precondition=True, adapt_mu=True, mu0=2.0, rho=1.01))  # auto's pick for the hinge
    assert driver.compile_count() == n0 and r.timings["compile"] == 0.0 and r3.timings["compile"] == 0.0
    svmopt.solve(X, y, method=dual_cd(seed=1), intercept_scaling=1.0, dtype=F64)
    n1 = driver.compile_count()
    svmopt.solve(X, y, method=dual_cd(seed=2, eps=0.01), intercept_scaling=1.0, dtype=F64, tol=1e-4)
    svmopt.solve(X, y, method=dual_cd(seed=jax.random.key(5)), intercept_scaling=1.0, dtype=F64)
    assert driver.compile_count() == n1
    # a different number of rows in the same bucket reuses the program too (zero-weight padding)
    svmopt.solve(X[:-3], y[:-3], tol=1e-3, dtype=F64)
    assert driver.compile_count() == n1
    del r2


def test_row_buckets_are_exact(a9a_small):
    """Zero-weight padding rows change nothing: the same certified optimum, alpha of length n."""
    X, y = a9a_small
    a = svmopt.solve(X, y, loss=squared_hinge, tol=1e-9, dtype=F64, bucket=False)
    b = svmopt.solve(X, y, loss=squared_hinge, tol=1e-9, dtype=F64)
    assert a.status == b.status == Status.CONVERGED
    assert abs(float(b.primal_objective) - float(a.primal_objective)) <= float(a.gap) + float(b.gap)
    assert np.asarray(b.extras["alpha"]).shape == (X.shape[0],)
    np.testing.assert_allclose(np.asarray(b.w), np.asarray(a.w), rtol=1e-3, atol=1e-4)


FOLD_METHODS = [("alm", dict(method=alm, loss=squared_hinge)),
                ("dual_cd", dict(method=dual_cd, loss=squared_hinge, intercept_scaling=1.0))]


# the unpadded references compile once per fold (their nnz differ): the default run compares the
# last fold (it runs the program the first fold compiled), the slow one every fold
@pytest.mark.parametrize("name,kw,compare", [pytest.param(*m, (2,), id=f"{m[0]}-last-fold") for m in FOLD_METHODS] + [
    pytest.param(*m, (0, 1, 2), marks=pytest.mark.slow, id=f"{m[0]}-every-fold") for m in FOLD_METHODS])
def test_sparse_cv_folds_share_one_program(name, kw, compare):
    """Three CV folds of sparse a9a rows: their nnz differ, the bucket gives them one set of
    array shapes (explicit zeros in the padding rows), so only the first fold compiles; each
    fold's optimum equals the unpadded solve's (row walks and products ignore the zeros)."""
    X, y = load("a9a")
    X, y = X[:3000], pm(y[:3000])
    folds = np.array_split(np.arange(3000), 3)
    counts = []
    for k, test in enumerate(folds):
        train = np.setdiff1d(np.arange(3000), test)
        Xf, yf = X[train], y[train]
        n0 = driver.compile_count()
        b = svmopt.solve(Xf, yf, dtype=F64, tol=1e-8, layout="sparse", **kw)
        counts.append(driver.compile_count() - n0)
        assert b.status == Status.CONVERGED
        if k not in compare:
            continue
        a = svmopt.solve(Xf, yf, dtype=F64, tol=1e-8, layout="sparse", bucket=False, **kw)
        assert a.status == b.status == Status.CONVERGED
        assert abs(float(b.primal_objective) - float(a.primal_objective)) <= float(a.gap) + float(b.gap) + 1e-9
    assert counts[1:] == [0, 0], counts  # (the first fold may reuse an earlier test's program)


# ---------------------------------------------------------------------------------- resume and paths
RESUMABLE = [
    ("alm", dict(method=alm), 60),
    ("dual_cd", dict(method=dual_cd, fit_intercept=False, tol=1e-6, max_iter=5000), 5),  # ~800-1400 passes
    ("nesvm", dict(method=homotopy_nesvm, loss=squared_hinge), 40),
    ("cutting_plane", dict(method=cutting_plane, intercept_scaling=1.0), 20),
    ("alfpgm", dict(method=alfpgm, kernel=rbf(0.2)), 3),
]


@pytest.mark.parametrize("name,kw,k", RESUMABLE)
def test_resume_reaches_the_uninterrupted_run(name, kw, k, heart):
    X, y = heart
    kw = dict(dict(tol=1e-8, dtype=F64), **kw)
    cap = kw.pop("max_iter", None)
    full = svmopt.solve(X, y, max_iter=cap, **kw)
    assert full.status == Status.CONVERGED
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part = svmopt.solve(X, y, max_iter=k, **kw)
    assert part.status == Status.MAX_ITER
    rest = svmopt.solve(X, y, init=part, max_iter=cap, **kw)
    assert rest.status == Status.CONVERGED
    ref = float(full.primal_objective)
    assert abs(float(rest.primal_objective) - ref) <= 1e-6 * abs(ref)
    # same total work: the resumed run does not start over
    assert part.iterations + rest.iterations <= full.iterations * 1.1 + 5


def test_path_equals_cold_solves_and_is_cheaper(a9a_small):
    X, y = a9a_small
    Cs = np.array([0.01, 0.1, 1.0, 4.0])
    p = svmopt.path(X, y, C=Cs, loss=squared_hinge, tol=1e-5, dtype=F64)
    cold = [svmopt.solve(X, y, C=c, loss=squared_hinge, tol=1e-5, dtype=F64) for c in Cs]
    for i, r in enumerate(cold):
        assert abs(float(np.asarray(p.primal_objective)[i]) - float(r.primal_objective)) <= \
            float(np.asarray(p.gap)[i]) + float(r.gap)
    assert np.all(np.asarray(p.status) == Status.CONVERGED)
    assert int(np.sum(p.iterations)) < sum(r.iterations for r in cold)


# ---------------------------------------------------------------------------------- capabilities
def test_from_function_readme_example_and_custom_regularizer(heart):
    X, y = heart
    my_loss = from_function(lambda m: jnp.log1p(jnp.exp(-m)) ** 2)
    r = svmopt.solve(X, y, loss=my_loss, method=alm, dtype=F64, tol=1e-6)
    assert r.status == Status.CONVERGED
    # against float64 L-BFGS on the same objective
    from scipy.optimize import minimize
    yy = pm(y)

    def fg(z):
        w, b = z[:-1], z[-1]
        m = yy * (X @ w + b)
        sp_ = np.log1p(np.exp(-m))
        sig = 1 / (1 + np.exp(m))
        g = -2 * sp_ * sig * yy
        return 0.5 * w @ w + np.sum(sp_ ** 2), np.concatenate([w + X.T @ g, [g.sum()]])

    ref = minimize(fg, np.zeros(X.shape[1] + 1), jac=True, method="L-BFGS-B", options={"gtol": 1e-10}).fun
    assert float(r.primal_objective) == pytest.approx(ref, rel=2e-6)
    # a declared box-plus-diagonal dual lets dual CD solve it: the squared hinge written by hand,
    # against LIBLINEAR -s 1 -B 1 (the squared hinge with the bias feature, float64, eps 1e-10)
    sq = from_function(lambda m: jnp.maximum(1 - m, 0.0) ** 2, box_diagonal=(0.0, np.inf, 0.25))
    a = svmopt.solve(X, y, loss=sq, method=dual_cd, intercept_scaling=1.0, dtype=F64, tol=1e-8)
    from liblinear.liblinearutil import parameter, problem, train
    m = train(problem(yy, X), parameter("-s 1 -c 1 -B 1 -e 1e-10 -q"))
    wb = np.array([m.w[j] for j in range(X.shape[1] + 1)]) * (1.0 if m.get_labels()[0] == 1 else -1.0)
    ref_sq = 0.5 * wb @ wb + np.sum(np.maximum(1 - yy * (X @ wb[:-1] + wb[-1]), 0.0) ** 2)
    assert a.status == Status.CONVERGED
    assert float(a.primal_objective) == pytest.approx(ref_sq, rel=1e-7)
    # a new regularizer through the public constructor: l1 again, solved by alm's prox step
    my_l1 = custom("my_l1", value=lambda p, w: jnp.sum(jnp.abs(w)),
                   prox=lambda p, v, t: jnp.sign(v) * jnp.maximum(jnp.abs(v) - t, 0.0),
                   conjugate=lambda p, v: jnp.asarray(0.0, v.dtype),
                   dual_scale=lambda p, v: jnp.minimum(1.0, 1.0 / jnp.maximum(jnp.max(jnp.abs(v)), 1e-300)))
    r1 = svmopt.solve(X, y, reg=my_l1, loss=squared_hinge, dtype=F64, tol=1e-6)
    r2 = svmopt.solve(X, y, reg=l1, loss=squared_hinge, dtype=F64, tol=1e-6)
    assert r1.status == r2.status == Status.CONVERGED
    assert float(r1.primal_objective) == pytest.approx(float(r2.primal_objective), rel=3e-6)


def test_float32_jit_path(heart):
    X, y = heart
    r = jax.jit(lambda C: svmopt.solve(X, y, C=C, loss=squared_hinge, tol=1e-4))(1.0)
    e = svmopt.solve(X, y, loss=squared_hinge, tol=1e-4)
    assert r.w.dtype == jnp.float32
    assert float(r.primal_objective) == pytest.approx(float(e.primal_objective), rel=1e-4)


# ---------------------------------------------------------------------------------- bounded programs
MAPS = pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="counts memory maps through /proc")


def _programs_are_released(heart, monkeypatch, more, **kw):
    """XLA's CPU executables map ~250 memory regions each and a process may have 65,530: past
    driver.MAX_PROGRAMS, svmopt releases the least recently used programs so that a process
    solving many shapes does not die in a compile. A released program compiles again and
    gives the same answer. ``more``: the shapes solved after the two that measure one solve;
    ``kw``: the method (the release is the driver's, whatever the method)."""
    def maps():
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)

    X, y = heart
    monkeypatch.setattr(driver, "MAX_PROGRAMS", 4)
    # a table of its own: the releases below must not evict the programs the rest of the suite holds
    monkeypatch.setattr(driver, "_compiled", type(driver._compiled)())
    first = svmopt.solve(X[:40], y[:40], dtype=F64, bucket=False, **kw)
    m0, c0 = maps(), driver.compile_count()
    svmopt.solve(X[:41], y[:41], dtype=F64, bucket=False, **kw)
    per_solve = max(maps() - m0, 50)  # the maps one more solve's programs hold
    for n in range(42, 42 + more):
        svmopt.solve(X[:n], y[:n], dtype=F64, bucket=False, **kw)
    assert driver.compile_count() - c0 >= (1 + more) * 2  # every shape compiled (init + chunk)
    # 1 + more solves' programs kept would hold (1 + more) * per_solve maps: at most a few are held
    assert maps() - m0 < max(2, (1 + more) // 2) * per_solve
    again = svmopt.solve(X[:40], y[:40], dtype=F64, bucket=False, **kw)  # released: compiles anew
    assert again.timings["compile"] > 0
    assert float(again.primal_objective) == float(first.primal_objective)


@MAPS
def test_compiled_programs_are_released(heart, monkeypatch):
    """Five shapes with room for two solves' programs: a solve's worth of maps stays held, not four.
    Dual CD: its programs compile in a quarter of the default method's time (measured 4 s vs 15 s)."""
    _programs_are_released(heart, monkeypatch, more=3, method=dual_cd, intercept_scaling=1.0)


@pytest.mark.slow
@MAPS
def test_compiled_programs_are_released_many_shapes(heart, monkeypatch):
    """Twelve shapes, the default method (the fast sibling above: five, dual CD)."""
    _programs_are_released(heart, monkeypatch, more=10)


def test_a_traced_kernel_solve_is_refused_by_name(heart):
    """jit over C or grad over the rbf gamma of a kernel solve failed deep inside (a host conversion
    of a tracer, a compiled program given tracers); it now says what is not supported."""
    X, y = heart
    X = jnp.asarray(np.asarray(X.todense()) if hasattr(X, "todense") else X)

    def score(C, gamma):
        return jnp.sum(svmopt.solve(X, y, kernel=rbf(gamma), C=C, dtype=F64).decision_function(X[:5]))

    for fn in (jax.jit(lambda C: score(C, 0.2)), jax.grad(lambda g: score(1.0, g))):
        with pytest.raises(TypeError, match="a kernel solve cannot run inside jax.jit"):
            fn(1.0)
    assert np.isfinite(float(score(1.0, 0.2)))  # eager: fine
