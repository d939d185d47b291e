"""The Laplace route: concave latents given a few hyperparameters, against the quadrature truths of
pmz.systems.hierarchical_glm."""

import numpy as np
import pymc as pm
import pytest

import pmz
from pmz.systems.hierarchical_glm import hierarchical_logistic, hierarchical_poisson, log_evidence


@pytest.mark.parametrize("build, seed", [(hierarchical_poisson, 0), (hierarchical_logistic, 1)])
def test_random_intercept_glms_are_answered_within_their_error_bar(build, seed):
    system = build(n_groups=60, seed=seed)
    res = pmz.evidence(system.model, random_seed=seed, progressbar=False)
    assert res.run_attrs["route"] == "laplace"
    assert res.reliable
    assert 0 < res.log_z_se < 0.05
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.01


def test_a_likelihood_not_concave_in_the_latents_is_refused_by_name():
    rng = np.random.default_rng(0)
    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        x = pm.Normal("x", 0.0, sigma, shape=40)
        pm.StudentT("y", nu=3, mu=x, sigma=1.0, observed=rng.normal(size=40))
    from pmz.auto.laplace_route import LaplaceRoute

    why_not = LaplaceRoute().applies(_context(model))
    assert "not proven concave" in why_not and "the log density of y" in why_not


def _context(model):
    """What the route's applies() reads of the default's context."""
    from types import SimpleNamespace

    from pmz.model.pymc import CompiledModel

    return SimpleNamespace(options=SimpleNamespace(latent=True, posterior=None), has_discrete=False, jumps="",
                           target=CompiledModel(model))


def test_the_truth_matches_a_brute_force_grid_on_two_groups():
    """Two groups of three counts: the nested quadrature against a 4-D grid in (mu, log sigma, z_1, z_2)."""
    from scipy.special import gammaln, logsumexp

    y = np.array([[0, 2, 1], [3, 1, 4]])
    mu = np.linspace(-5.0, 7.0, 90)
    log_sigma = np.linspace(-16.0, 2.5, 180)
    z = np.linspace(-10.0, 10.0, 201)
    M, L = np.meshgrid(mu, log_sigma, indexing="ij")
    S = np.exp(L)
    total = -0.5 * (M - 1.0) ** 2 - np.log(2 * np.pi) + np.log(2.0) - 0.5 * S**2 + L
    for counts in y:
        X = M[..., None] + S[..., None] * z
        log_lik = counts.sum() * X - len(counts) * np.exp(X) - gammaln(counts + 1.0).sum()
        total += logsumexp(-0.5 * z**2 - 0.5 * np.log(2 * np.pi) + log_lik, axis=-1) + np.log(z[1] - z[0])
    brute = logsumexp(total) + np.log((mu[1] - mu[0]) * (log_sigma[1] - log_sigma[0]))
    assert abs(log_evidence(y, "poisson", 1.0) - brute) < 1e-4


@pytest.mark.slow
@pytest.mark.both_stacks
def test_the_annealed_correction_where_groups_are_not_integrated_one_at_a_time(monkeypatch):
    """The annealed path alone (the groupwise quadrature switched off) against the same truth."""
    from pmz.runners.conditional_laplace import ConditionalLaplace

    monkeypatch.setattr(ConditionalLaplace, "_calibrate_quadrature", lambda self, fit, rng: False)
    system = hierarchical_poisson(n_groups=40, seed=2)
    res = pmz.evidence(system.model, random_seed=2, progressbar=False)
    assert res.run_attrs["route"] == "laplace" and "annealed" in res.run_attrs["route_reason"]
    assert res.reliable and 0 < res.log_z_se < 0.05
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.01
