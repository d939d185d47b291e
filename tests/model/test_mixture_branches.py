"""The branches of a mixture read from the graph (pmz.model.mixture_branches) and the peaks they lead to
(pmz.runners.branch_search): each branch equals the log density with the mixture replaced by one component, on both
stacks' spellings of a log-sum-exp; Newton's method on the branches finds a component 1e4 times narrower than the
bulk, with its exact Laplace mass."""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import pmz
from pmz.model.mixture_branches import branch_densities
from pmz.model.pymc import CompiledModel
from pmz.runners.branch_search import branch_peaks

POINTS = np.array([[0.0, 0.0], [1.5, -2.0], [4.0, 3.0]])


def _two_component_model(spelling):
    """``x ~ N(0, 3^2 I)`` in 2-D and a Potential ``log(0.6 N(x; 0, I) + 0.4 N(x; (3, 3), 0.1^2 I))``."""
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, 3.0, shape=2)
        a = np.log(0.6) + pt.sum(pm.logp(pm.Normal.dist(0.0, 1.0), x))
        b = np.log(0.4) + pt.sum(pm.logp(pm.Normal.dist(3.0, 0.1), x))
        if spelling == "logsumexp":
            mix = pm.math.logsumexp(pt.stack([a, b]))
        elif spelling == "logaddexp":
            mix = pt.logaddexp(a, b)
        else:  # as users and PyTensor 2 write it
            mix = pt.log(pt.exp(a) + pt.exp(b))
        pm.Potential("mix", mix)
    return model


def _branches_np(points):
    prior = stats.norm(0, 3).logpdf(points).sum(axis=1)
    a = np.log(0.6) + stats.norm(0, 1).logpdf(points).sum(axis=1)
    b = np.log(0.4) + stats.norm(3, 0.1).logpdf(points).sum(axis=1)
    return np.stack([prior + a, prior + b], axis=1)


@pytest.mark.parametrize("spelling", ["logsumexp", "logaddexp", "log_add_exp"])
def test_each_branch_is_the_density_with_one_component(spelling):
    branches = branch_densities(CompiledModel(_two_component_model(spelling)))
    assert branches is not None and branches.n_branches == 2
    np.testing.assert_allclose(branches(POINTS), _branches_np(POINTS), rtol=1e-7)  # float32 constants


def test_a_mixture_likelihood_has_one_branch_per_component():
    """``pm.NormalMixture`` over 40 observations: branch k puts every observation in component k."""
    y = np.r_[np.full(20, -2.0), np.full(20, 2.0)]
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 5, shape=2)
        pm.NormalMixture("y", w=[0.5, 0.5], mu=mu, sigma=1.0, observed=y)
    branches = branch_densities(CompiledModel(model))
    assert branches is not None and branches.n_branches == 2
    at = np.array([[0.5, -1.0]])
    prior = stats.norm(0, 5).logpdf(at[0]).sum()
    expected = [prior + np.sum(np.log(0.5) + stats.norm(at[0, k], 1.0).logpdf(y)) for k in range(2)]
    np.testing.assert_allclose(branches(at)[0], expected, rtol=1e-7)


def test_no_mixture_no_branches():
    with pm.Model() as model:
        x = pm.Normal("x", 0, 1, shape=2)
        pm.Normal("y", x.sum(), 1.0, observed=[0.3])
    assert branch_densities(CompiledModel(model)) is None


@pytest.mark.parametrize("ratio", [30.0, 1e4])
def test_a_narrow_component_is_found_with_its_laplace_mass(ratio):
    """2-D, a planted mode holding 30% of the mass, ``ratio`` times narrower than the main one and 30 sd from it:
    from the main peak alone, Newton's method on the branches finds both peaks, and their Laplace masses are the
    exact log masses (each branch is Gaussian; the other component adds nothing measurable at either peak)."""
    system = pmz.systems.planted_mode(2, 0.3, ratio, 30.0)
    found = branch_peaks(CompiledModel(system.model), np.zeros((1, 2)), np.eye(2))
    assert found.points.shape[0] == 2
    np.testing.assert_allclose(found.log_masses, np.log([0.7, 0.3]), atol=1e-5)
    assert np.linalg.norm(found.points[1]) == pytest.approx(30.0, rel=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(found.covs[1])), 1.0 / ratio, rtol=1e-3)
