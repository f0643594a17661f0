"""Losses, regularizers and smoothing: derivatives, proximal maps, conjugates, NESVM bounds."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp

from svmopt import smoothing
from svmopt.losses import (MissingCapability, from_function, hinge, least_squares, logistic, lp_hinge,
                           smoothed_hinge, squared_hinge)
from svmopt.regularizers import elastic_net, l1, l2, smoothed_l1

RNG = np.random.default_rng(0)
MARGINS = np.concatenate([np.linspace(-3.0, 3.0, 61) + 0.0137, RNG.normal(size=40) * 2])


def _custom():
    # a user's loss: softplus-of-hinge-like, written as a plain jnp function
    return from_function(lambda m: jnp.log1p(jnp.exp(2.0 * (1.0 - m))) / 2.0, name="soft", curvature=1.0)


LOSSES = {
    "hinge": hinge,
    "squared_hinge": squared_hinge,
    "lp1.5": lp_hinge(1.5),
    "lp1.1": lp_hinge(1.1),
    "lp3.7": lp_hinge(3.7),
    "smoothed_hinge": smoothed_hinge(0.7, per_sample=False),
    "least_squares": least_squares,
    "logistic": logistic,
    "custom": _custom(),
}


def _np_value(loss, m):
    return np.asarray(loss.value(jnp.asarray(m)))


@pytest.mark.parametrize("name", LOSSES)
def test_derivative_matches_finite_differences(name):
    loss = LOSSES[name]
    m = MARGINS[np.abs(MARGINS - 1.0) > 1e-3]  # away from the hinge kink
    if name == "smoothed_hinge":
        m = m[np.abs(m - (1.0 - 0.7)) > 1e-3]
    h = 1e-6
    fd = (_np_value(loss, m + h) - _np_value(loss, m - h)) / (2 * h)
    np.testing.assert_allclose(np.asarray(loss.derivative(jnp.asarray(m))), fd, rtol=1e-5, atol=1e-6)


def _grid_min(fn, lo, hi, size=4001, rounds=4):
    """Minimise a vectorised convex fn over [lo, hi] per column by repeated grid refinement."""
    lo, hi = np.asarray(lo, float), np.asarray(hi, float)
    for _ in range(rounds):
        grid = lo[None, :] + (hi - lo)[None, :] * np.linspace(0.0, 1.0, size)[:, None]
        vals = fn(grid)
        k = np.argmin(vals, axis=0)
        step = (hi - lo) / (size - 1)
        best = grid[k, np.arange(grid.shape[1])]
        lo, hi = best - 2 * step, best + 2 * step
    return best, vals[k, np.arange(grid.shape[1])]


@pytest.mark.parametrize("name", LOSSES)
@pytest.mark.parametrize("gamma", [1e-3, 0.3, 1.0, 7.0, 150.0])
def test_prox_minimises_its_objective(name, gamma):
    """prox(v, g) = argmin g*l(m) + (m - v)^2/2: compare with a grid-refined minimiser."""
    loss = LOSSES[name]
    v = np.linspace(-4.0, 3.0, 15) + 0.011
    got = np.asarray(loss.prox(jnp.asarray(v), gamma))
    obj = lambda m: gamma * _np_value(loss, m) + 0.5 * (m - v) ** 2
    # convexity puts the minimiser between v and v - gamma l'(v)
    far = v - gamma * np.asarray(loss.derivative(jnp.asarray(v)))
    ref_x, ref_f = _grid_min(obj, np.minimum(v, far) - 1e-3, np.maximum(v, far) + 1e-3)
    ours = gamma * _np_value(loss, got) + 0.5 * (got - v) ** 2
    assert np.all(ours <= ref_f + 1e-9 * (1 + np.abs(ref_f)))
    assert np.all(np.abs(got - ref_x) <= 1e-4 * (1 + np.abs(far - v))), np.c_[v, got, ref_x]


@pytest.mark.parametrize("name", [n for n in LOSSES if n != "custom"])
def test_dual_value_is_the_conjugate(name):
    """dual_value(a) = -l*(-a) = inf_m l(m) + a m inside the dual box."""
    loss = LOSSES[name]
    d = loss.dual
    lo = max(d.lower, -2.0)
    hi = min(d.upper, 1.0 if name.startswith("lp") else 3.0)  # keep the minimiser inside the grid
    a = np.linspace(lo + 1e-3, hi - 1e-3, 9)
    _, ref = _grid_min(lambda m: _np_value(loss, m) + a * m, np.full(9, -40.0), np.full(9, 40.0))
    np.testing.assert_allclose(np.asarray(loss.dual_value(jnp.asarray(a))), ref, atol=1e-6, rtol=1e-6)


def test_box_diagonal_matches_liblinear_convention():
    assert hinge.box_diagonal() == (0.0, 1.0, 0.0)  # U = C, D = 0
    lo, hi, quad = squared_hinge.box_diagonal()
    assert (lo, hi) == (0.0, np.inf) and 2 * quad == 0.5  # U = inf, D = 1/(2C) for C = 1
    with pytest.raises(MissingCapability, match="box-plus-diagonal"):
        logistic.box_diagonal()
    with pytest.raises(MissingCapability, match="box-plus-diagonal"):
        lp_hinge(1.5).box_diagonal()


def test_missing_capabilities_are_named():
    with pytest.raises(MissingCapability, match="curvature"):
        hinge.curvature()
    with pytest.raises(MissingCapability, match="box-plus-diagonal"):
        _custom().box_diagonal()  # from_function gets a numerical conjugate, not a box-plus-diagonal one
    with pytest.raises(MissingCapability, match="grad"):
        l1.grad(jnp.ones(3))


def test_lp_hinge_p_checks_and_special_cases():
    assert lp_hinge(1) is hinge and lp_hinge(2.0) is squared_hinge
    for bad in (0.5, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="p >= 1"):
            lp_hinge(bad)


def test_from_function_rejects_nonconvex_and_nonelementwise():
    with pytest.raises(ValueError, match="not convex"):
        from_function(lambda m: jnp.sin(m))
    with pytest.raises(ValueError, match="elementwise"):
        from_function(lambda m: jnp.sum(m))


def test_custom_loss_equals_builtin():
    mine = from_function(lambda m: jnp.maximum(1.0 - m, 0.0) ** 2)
    v = jnp.linspace(-3, 3, 31)
    np.testing.assert_allclose(mine.prox(v, 0.8), squared_hinge.prox(v, 0.8), atol=1e-10)
    np.testing.assert_allclose(mine.derivative(v + 0.01), squared_hinge.derivative(v + 0.01), atol=1e-12)


# ------------------------------------------------------------------ smoothing (NESVM Theorems 1-2)
def test_theorem1_smoothed_hinge_bound():
    m = jnp.asarray(RNG.normal(size=500) * 3)
    kappa = jnp.asarray(RNG.uniform(0.1, 3.0, size=500))
    for mu in (0.01, 0.5, 5.0):
        h = hinge.value(m)
        hmu = smoothing.smoothed_hinge_value(m, mu * kappa)
        bound = smoothing.hinge_smoothing_bound(mu, kappa)
        assert bool(jnp.all(hmu <= h + 1e-12))
        assert bool(jnp.all(h <= hmu + bound + 1e-12))
        assert float(jnp.max(h - hmu - bound)) > -1e-9  # the bound is attained (tight)


def test_theorem2_smoothed_l1_bound():
    w = jnp.asarray(RNG.normal(size=300))
    for mu in (0.01, 0.3, 2.0):
        lmu = smoothed_l1(mu).value(w)
        assert float(lmu) <= float(l1.value(w)) + 1e-12
        assert float(l1.value(w)) <= float(lmu) + smoothing.l1_smoothing_bound(mu, w.size) + 1e-12


def test_hinge_smoothed_is_moreau_envelope_and_per_sample():
    m = jnp.linspace(-3, 3, 101)
    sh = smoothed_hinge(0.4, per_sample=False)
    env = smoothing.moreau_value(hinge.value, hinge.prox, m, 0.4)
    np.testing.assert_allclose(sh.value(m), env, atol=1e-12)
    bound = hinge.smoothed(0.4).bind(jnp.full(m.shape, 2.0))  # mu_i = 0.4 * ||x_i||_inf = 0.8
    np.testing.assert_allclose(bound.value(m), smoothing.smoothed_hinge_value(m, 0.8), atol=1e-12)
    assert float(sh.curvature()) == pytest.approx(1 / 0.4)


def test_homotopy_schedule():
    mus = [float(smoothing.homotopy_mu(5.0, t)) for t in range(5)]
    np.testing.assert_allclose(mus, [5.0, 2.5, 5 / 3, 1.25, 1.0])
    T = smoothing.homotopy_num_stages(5.0, 0.01)
    assert smoothing.homotopy_mu(5.0, T - 1) <= 0.01 < smoothing.homotopy_mu(5.0, T - 2)


def test_smoothed_loss_gradient_is_lipschitz():
    for loss in (hinge.smoothed(0.3).bind(jnp.ones(200)), lp_hinge(1.5).smoothed(0.3)):
        m = jnp.sort(jnp.asarray(RNG.normal(size=200) * 2))
        g = loss.derivative(m)
        L = jnp.max(jnp.asarray(loss.curvature()))
        assert float(jnp.max(jnp.abs(jnp.diff(g)) / jnp.diff(m))) <= float(L) * (1 + 1e-6)


# ------------------------------------------------------------------ regularizers
REGS = {"l2": l2, "l1": l1, "smoothed_l1": smoothed_l1(0.3), "elastic_net": elastic_net(0.4)}


@pytest.mark.parametrize("name", REGS)
def test_regularizer_prox_optimality(name):
    reg = REGS[name]
    v = jnp.asarray(RNG.normal(size=7) * 2)
    t = 0.7
    w = reg.prox(v, t)
    obj = lambda z: t * float(reg.value(z)) + 0.5 * float(jnp.sum((z - v) ** 2))
    base = obj(w)
    for _ in range(200):
        assert base <= obj(w + jnp.asarray(RNG.normal(size=7) * 1e-3)) + 1e-12


@pytest.mark.parametrize("name", ["l2", "smoothed_l1"])
def test_regularizer_gradient_and_conjugate(name):
    reg = REGS[name]
    w = jnp.asarray(RNG.normal(size=9))
    g = reg.grad(w)
    np.testing.assert_allclose(g, jax.grad(reg.value)(w), atol=1e-12)
    # Fenchel-Young equality at v = grad R(w): R(w) + R*(v) = <w, v>
    assert float(reg.value(w) + reg.conjugate(g)) == pytest.approx(float(jnp.vdot(w, g)), abs=1e-10)


def test_elastic_net_conjugate_fenchel_young():
    reg = elastic_net(0.4)
    w = jnp.asarray(RNG.normal(size=9))
    v = 0.4 * jnp.sign(w) + 0.6 * w  # a subgradient of R at w (no zero entries)
    assert float(reg.value(w) + reg.conjugate(v)) == pytest.approx(float(jnp.vdot(w, v)), abs=1e-10)


def test_regularizer_parameter_checks():
    with pytest.raises(ValueError, match="mu > 0"):
        smoothed_l1(0.0)
    with pytest.raises(ValueError, match="ratio"):
        elastic_net(1.0)
