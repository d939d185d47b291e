"""Finite jumps of the log density read from the graph (pmz.model.jumps): what the user wrote that steps up or down
by a finite amount in a continuous variable is found; PyMC's own distributions (their support bounds, their
switches between formulas of one function, parameter checks) are not jumps. Graph reading only, no sampling."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pmz.model.jumps import finite_jumps


def _bump():
    with pm.Model() as m:
        x = pm.Normal("x", 0, 1, shape=4)
        pm.Normal("y", x, 1.0, observed=np.zeros(4))
        pm.Potential("bump", pt.switch(x[0] > 3, 8.0, 0.0))
    return m


def _cast():
    with pm.Model() as m:
        x = pm.Normal("x", 0, 1)
        pm.Potential("step", 8.0 * (x > 3))
    return m


def _change_point():
    with pm.Model() as m:
        tau = pm.Uniform("tau", 0, 100)
        early, late = pm.Exponential("early", 1.0), pm.Exponential("late", 1.0)
        pm.Poisson("y", pm.math.switch(np.arange(100) < tau, early, late), observed=np.ones(100, dtype=int))
    return m


def _rounded():
    with pm.Model() as m:
        x = pm.Normal("x", 0, 3)
        pm.Normal("y", pt.floor(x), 1.0, observed=[1.0])
    return m


@pytest.mark.parametrize("build, where", [
    (_bump, "a switch on `gt` in the Potential bump"),
    (_cast, "`gt` of a continuous variable used as a number in the Potential step"),
    (_change_point, "a switch on `gt` in a parameter of y"),
    (_rounded, "`floor` of a continuous variable in a parameter of y"),
])
def test_a_finite_jump_is_found_and_named(build, where):
    assert finite_jumps(build()) == f"the log density jumps by a finite amount ({where})"


def _many_distributions():
    with pm.Model() as m:
        s = pm.HalfNormal("s", 1.0)
        u, t = pm.Uniform("u", 0, 1), pm.TruncatedNormal("t", 0, 1, lower=0)
        b, e, c, g = pm.Beta("b", 2, 2), pm.Exponential("e", 1.0), pm.Cauchy("c", 0, 1), pm.Gamma("g", 2, 1)
        w, st = pm.Dirichlet("w", np.ones(3)), pm.StudentT("st", nu=3, mu=0, sigma=s)
        pm.Normal("y", u + t + b + e + c + g + st, s, observed=np.zeros(5))
        pm.Censored("cy", pm.Normal.dist(u, s), lower=None, upper=1.0, observed=np.array([0.2, 1.0]))
        pm.NormalMixture("mix", w=w, mu=pt.stack([u, t, b]), sigma=1.0, observed=np.zeros(3))
    return m


def _smooth_potentials():
    with pm.Model() as m:
        x = pm.Normal("x", 0, 1, shape=3)
        mu = pm.Normal("mu", 0, 10, shape=2, transform=pm.distributions.transforms.ordered, initval=[-1.0, 1.0])
        pm.Normal("y", pt.abs(x), 0.1, observed=np.zeros(3))
        pm.Potential("smooth", -pt.sum(pt.maximum(x, 0.0) ** 2) + pm.math.logsumexp(mu))
        pm.Potential("at_a_point", pt.switch(pt.eq(x[1], 0.0), 0.0, -0.5 * x[1] ** 2))
    return m


def _discrete_switch():
    with pm.Model() as m:
        k = pm.Poisson("k", 3.0)
        pm.Normal("y", pm.math.switch(k > 2, 1.0, -1.0), 1.0, observed=[0.5])
    return m


@pytest.mark.parametrize("build", [_many_distributions, _smooth_potentials, _discrete_switch])
def test_no_jump_where_the_density_is_continuous_or_the_choice_is_discrete(build):
    """Support bounds (a step down to -inf), PyMC's formulas, kinks (``abs``, ``maximum``), a choice at a single
    point and switches on discrete variables are not finite jumps in a continuous variable."""
    assert finite_jumps(build()) == ""


def test_the_answer_is_cached_per_model_and_terms():
    model = _smooth_potentials()
    assert finite_jumps(model) == ""
    with model:
        pm.Potential("step", pt.switch(model["x"][2] > 1.0, 3.0, 0.0))
    assert "Potential step" in finite_jumps(model)


def test_a_step_to_plus_inf_or_nan_is_not_a_finite_jump():
    """No density there at all (log Z is +inf, or undefined): pmz's checks for non-finite values speak for it."""
    for value in (np.inf, np.nan):
        with pm.Model() as m:
            mu = pm.Normal("mu", 0, 1)
            pm.Potential("p", pt.switch(mu > 3.0, value, 0.0))
        assert finite_jumps(m) == ""
