"""The Laplace route: concave latents given a few hyperparameters, against the quadrature truths of
pmz.systems.hierarchical_glm."""

import numpy as np
import pymc as pm
import pytest

import pmz
from pmz.systems.hierarchical_glm import hierarchical_logistic, hierarchical_poisson, log_evidence


@pytest.mark.parametrize("build, seed, n_groups", [(hierarchical_poisson, 0, 60), (hierarchical_logistic, 1, 60),
                                                   (hierarchical_poisson, 2, 12)])
def test_random_intercept_glms_are_answered_within_their_error_bar(build, seed, n_groups):
    """60 groups, and 12 (14 coordinates: fewer latents than the route once needed, more coordinates than
    importance sampling over all of them served well before)."""
    system = build(n_groups=n_groups, seed=seed)
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

    from pmz.auto.laplace_route import MAX_LATENT
    from pmz.model.latent_gaussian import latent_split
    from pmz.model.pymc import CompiledModel

    target = CompiledModel(model)
    return SimpleNamespace(options=SimpleNamespace(latent=True, posterior=None), has_discrete=False, jumps="",
                           target=target, laplace_split=latent_split(target, MAX_LATENT))


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


def test_newton_goes_on_where_a_forward_difference_precision_is_not_positive_definite(monkeypatch):
    """Newton's iterations steer by forward differences of the gradient; where the curvature grows fast (an
    ``exp`` far out) they can lose definiteness, and the step is then taken with central differences instead of
    failing the value (a far hyperparameter draw used to hand over the whole route)."""
    from pmz.model.latent_gaussian import latent_split
    from pmz.model.pymc import CompiledModel
    from pmz.auto.laplace_route import MAX_LATENT
    from pmz.runners.conditional_laplace import ConditionalLaplace

    system = hierarchical_poisson(n_groups=40, seed=3)
    target = CompiledModel(system.model)
    split = latent_split(target, MAX_LATENT)
    base = target.initial_point()
    laplace = ConditionalLaplace(target, split, base)
    rng = np.random.default_rng(3)
    assert not laplace.learn_structure(base[split.hyper][None], rng).failure
    thetas = base[split.hyper] + np.array([[0.0], [1.0]])
    exact = laplace.fit(thetas)
    factor = ConditionalLaplace._factor
    forward_calls = []

    def indefinite_forward(self, thetas, x, h, g=None):
        out = factor(self, thetas, x, h, g)
        if g is not None:
            forward_calls.append(1)
            out.ok = np.zeros_like(out.ok)
        return out

    monkeypatch.setattr(ConditionalLaplace, "_factor", indefinite_forward)
    fit = laplace.fit(thetas)
    assert forward_calls and fit.ok.all()
    assert np.all(np.abs(fit.f_hat - exact.f_hat) <= 1e-8 * (1 + np.abs(exact.f_hat)))


@pytest.mark.parametrize("n_steps", [60, pytest.param(240, marks=pytest.mark.slow)])
def test_a_random_walk_is_held_as_a_band_and_answered_within_its_error_bar(monkeypatch, n_steps):
    """A Gaussian random walk observed with noise, with the exact latent route switched off so that the Laplace
    route answers: its precision is tridiagonal (BandStructure), and log Z is a 1-D quadrature over the step size of
    the exact Gaussian marginal. (60 steps read every column of the Hessian; 240 read random columns.)"""
    from scipy import integrate, stats

    from pmz.auto.latent_route import LatentRoute

    monkeypatch.setattr(LatentRoute, "applies", lambda self, context: "switched off for this test")
    rng = np.random.default_rng(n_steps)
    y = np.cumsum(rng.normal(0.0, 0.3, n_steps)) + rng.normal(0.0, 1.0, n_steps)
    with pm.Model() as model:
        step = pm.Exponential("step", 5.0)
        walk = pm.GaussianRandomWalk("walk", sigma=step, init_dist=pm.Normal.dist(0.0, 2.0), shape=n_steps)
        pm.Normal("y", walk, 1.0, observed=y)
    t = np.arange(n_steps)

    def integrand(s):
        cov = 4.0 + s**2 * np.minimum.outer(t, t) + np.eye(n_steps)
        return np.exp(stats.multivariate_normal(np.zeros(n_steps), cov).logpdf(y) + stats.expon(
            scale=0.2).logpdf(s) + 400.0)

    truth = np.log(integrate.quad(integrand, 0.0, 3.0, epsabs=0, epsrel=1e-10, limit=400)[0]) - 400.0
    res = pmz.evidence(model, random_seed=n_steps, progressbar=False)
    assert res.run_attrs["route"] == "laplace" and "BandStructure(half_width=1)" in res.run_attrs["route_reason"]
    assert res.reliable and 0 < res.log_z_se < 0.05
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.01


def test_a_car_field_with_a_level_is_a_band_beside_a_shared_latent(monkeypatch):
    """A CAR field on an 8x8 grid (a band of half-width 8 in row order) plus a level that every observation reads
    (a shared latent, moved to the hyperparameters), Gaussian noise, the exact latent route switched off: the
    Laplace route answers, and log_z_normalised_prior (PyMC's CAR leaves out its Gaussian constant) is within its
    error bar of a 1-D quadrature over tau of the exact Gaussian marginal."""
    from scipy import integrate, stats

    from pmz.auto.latent_route import LatentRoute

    monkeypatch.setattr(LatentRoute, "applies", lambda self, context: "switched off for this test")
    from pmz.systems.grid import grid_adjacency

    side, alpha = 8, 0.9
    n = side * side
    W = grid_adjacency(side)
    Q = np.diag(W.sum(1)) - alpha * W
    rng = np.random.default_rng(8)
    y = 1.0 + np.linalg.cholesky(np.linalg.inv(2.0 * Q)) @ rng.standard_normal(n) + rng.normal(0.0, 0.5, n)
    with pm.Model() as model:
        level = pm.Normal("level", 0.0, 2.0)
        tau = pm.Gamma("tau", 3.0, 1.5)
        field = pm.CAR("field", mu=np.zeros(n), W=W, alpha=alpha, tau=tau)
        pm.Normal("y", level + field, 0.5, observed=y)

    def integrand(t):
        cov = 4.0 + np.linalg.inv(t * Q) + 0.25 * np.eye(n)
        return np.exp(stats.multivariate_normal(np.zeros(n), cov).logpdf(y) + stats.gamma(3.0, scale=1 / 1.5).logpdf(t)
                      + 100.0)

    truth = np.log(integrate.quad(integrand, 0.0, 30.0, epsabs=0, epsrel=1e-10, limit=400)[0]) - 100.0
    with pytest.warns(UserWarning, match="PyMC's CAR leaves out its Gaussian constant"):
        res = pmz.evidence(model, random_seed=8, progressbar=False)
    assert res.run_attrs["route"] == "laplace" and "BandStructure(half_width=8)" in res.run_attrs["route_reason"]
    assert "given tau, level" in res.run_attrs["route_reason"]
    normalised = float(res.evidence_stats["log_z_normalised_prior"])
    assert res.reliable and 0 < res.log_z_se < 0.05
    assert abs(normalised - truth) < 4 * res.log_z_se + 0.01


def test_the_route_hands_over_where_max_time_cannot_pay_for_it():
    """One value is timed after the compile; where the fewest values the route needs would take longer than
    max_time leaves, it hands over at once (a dense field whose every gradient factors its kernel again used to run
    its peak search for most of an hour past max_time), and what answers instead is held to the promise."""
    system = hierarchical_poisson(n_groups=60, seed=5)
    res = pmz.evidence(system.model, random_seed=5, progressbar=False, max_time=0.05)
    tried = " ".join(res.run_attrs["routes_tried"]) if not isinstance(res.run_attrs["routes_tried"], str) else \
        res.run_attrs["routes_tried"]
    assert "laplace: handed over" in tried and "max_time leaves" in tried
    assert not res.reliable or abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.01


def test_weights_that_fail_once_refit_the_proposal_and_draw_again(monkeypatch):
    """A thrifty run's draws that fail the checks all together (a k-hat just above 1/2 on a few hundred draws is
    often noise) start once more from the proposal refitted to them; the estimate, from the new draws alone, is
    within its error bar of the truth. The first check of all the draws is made to fail here."""
    import json

    import pmz.auto.hyper_importance as hyper_importance

    real = hyper_importance.weights_fail
    calls = []

    def fail_first_on_all(log_w, khat_limit, what):
        if what == "all":
            calls.append(len(log_w))
            if len(calls) == 1:
                return "Pareto k-hat 0.55 > 0.5 on all draws (forced by the test)"
        return real(log_w, khat_limit, what)

    monkeypatch.setattr(hyper_importance, "weights_fail", fail_first_on_all)
    system = hierarchical_poisson(n_groups=12, seed=3)
    res = pmz.evidence(system.model, random_seed=3, progressbar=False)
    assert res.run_attrs["route"] == "laplace" and len(calls) == 2
    assert any("the proposal refitted to them" in step for step in json.loads(res.evidence_stats.attrs["timeline"]))
    assert res.reliable and 0 < res.log_z_se < 0.05
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + 0.01
