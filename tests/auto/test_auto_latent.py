"""The latent route of method="auto": Gaussian latents integrated out exactly, importance sampling over the
hyperparameters; and the precision structures it factors (pmz.model.precision)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pymc as pm
import pytest

import pmz
from pmz import systems
from pmz.model.precision import BorderedBandPrecision, DensePrecision, structure_from_pattern
from pmz.systems.hierarchical import hierarchical_normal, hierarchical_normal_log_evidence
from pmz.systems.state_space import ar1_log_evidence, ar1_state_space

TOL = 0.01  # nats, on top of 4 reported se


def _evidence(model, seed, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pmz.evidence(model, random_seed=seed, progressbar=False, **options)


@pytest.mark.parametrize("dim", [100, 400])
def test_gaussian_posterior_is_the_gaussian_integral(dim):
    """A 100-D and a 400-D Gaussian posterior (condition number 1e4): no hyperparameters, so log Z is the Gaussian
    integral, exact to round-off, and the posterior draws are exact (their mean within Monte Carlo error of the
    posterior mean)."""
    system = systems.correlated_gaussian(dim=dim)
    res = _evidence(system.model, 0)
    ev = res["evidence_stats"].attrs
    assert ev["route"] == "latent", ev["route_reason"]
    assert abs(res.log_z - system.log_z) < 1e-6 and res.log_z_se == 0.0 and res.reliable
    # the exact posterior (the system's construction, seed 0): precision I / prior_sigma^2 + C^-1, mean P^-1 C^-1 y
    rng = np.random.default_rng(0)
    rotation, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
    C = (rotation * np.logspace(-0.5, 0.5, dim) ** 4) @ rotation.T
    C = 0.5 * (C + C.T)
    y = rng.multivariate_normal(np.zeros(dim), C + 100.0 * np.eye(dim))
    precision = np.eye(dim) / 100.0 + np.linalg.inv(C)
    mean = np.linalg.solve(precision, np.linalg.solve(C, y))
    x = res.posterior["x"].values.reshape(-1, dim)
    mc_se = np.sqrt(np.diag(np.linalg.inv(precision)) / x.shape[0])
    assert np.max(np.abs(x.mean(0) - mean) / mc_se) < 5


def test_hierarchical_model_with_known_scales_is_exact():
    """50 group effects and their mean, all Gaussian with known scales: one Gaussian integral, exact."""
    system = hierarchical_normal()
    res = _evidence(system.model, 1)
    assert res["evidence_stats"].attrs["route"] == "latent"
    assert abs(res.log_z - system.log_z) < 1e-6 and res.log_z_se == 0.0


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
@pytest.mark.parametrize("seed", [0, 1])
def test_state_space_model_of_400_states(seed):
    """AR(1) states (400) with two unknown scales: the states are integrated out exactly (a band of P: four
    gradient points per hyperparameter value), the scales by importance sampling; within 4 se of the exact log Z
    (Kalman filter and quadrature), se at most the default target, reliable. Before this route the default took
    the path route (30 s, se 0.03)."""
    system = ar1_state_space(T=400)
    res = _evidence(system.model, seed)
    ev = res["evidence_stats"].attrs
    assert ev["route"] == "latent", ev["route_reason"]
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + TOL
    assert 0 < res.log_z_se <= 0.03 and res.reliable
    assert {"is_latent", "is_a", "is_b"} <= set(res.estimates.index)
    assert res.posterior["lat"].shape[-1] == 400 and res.posterior["sigma_obs"].values.min() > 0


def test_hierarchical_model_with_an_unknown_scale():
    """Non-centred group effects with an unknown group scale (one hyperparameter, the effects and their mean
    latent: a diagonal with a border of one column); log Z by 1-D quadrature over the scale of the exact
    Gaussian marginal. The route's trapezoid rule over the scale agrees with it to far below the sampling se."""
    from scipy import integrate, stats

    rng = np.random.default_rng(4)
    groups, per = 60, 5
    effect = rng.normal(1.0, 0.7, groups)
    y = effect[:, None] + rng.normal(0, 1.0, (groups, per))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        z = pm.Normal("z", 0.0, 1.0, shape=groups)
        pm.Normal("y", mu=(mu + tau * z)[:, None], sigma=1.0, observed=y)

    def log_p_y_given_tau(t):  # the centred model's closed form: the same p(y | tau)
        return hierarchical_normal_log_evidence(y, mu_scale=5.0, tau=t, sigma=1.0)

    peak = max(np.linspace(0.05, 3, 60), key=log_p_y_given_tau)
    ref = log_p_y_given_tau(peak)
    value, _ = integrate.quad(lambda t: np.exp(log_p_y_given_tau(t) - ref) * stats.halfnorm(scale=2.0).pdf(t),
                              0, 6, points=[peak], limit=200, epsabs=1e-12)
    truth = ref + np.log(value)
    res = _evidence(model, 2)
    assert res["evidence_stats"].attrs["route"] == "latent"
    assert "trapezoid rule" in res["evidence_stats"].attrs["route_reason"]  # one hyperparameter: a rule, not draws
    assert {"quadrature", "quadrature_h", "quadrature_2h"} <= set(res.estimates.index)
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 1e-5
    assert res.log_z_se < 1e-3 and res.reliable


def test_latents_that_are_not_gaussian_are_refused_by_the_latent_route():
    """40 group effects under a Poisson likelihood: not quadratic, so the latent route does not apply (the graph
    reaches `exp` of the latents: the routes tried say so); another route answers (the Laplace route, whose
    concavity proof holds here)."""
    rng = np.random.default_rng(0)
    counts = rng.poisson(3.0, 40)
    with pm.Model() as model:
        tau = pm.HalfNormal("tau", 1.0)
        z = pm.Normal("z", 0.0, 1.0, shape=40)
        pm.Poisson("y", mu=pm.math.exp(1.0 + tau * z), observed=counts)
    res = _evidence(model, 0)
    ev = res["evidence_stats"].attrs
    assert ev["route"] != "latent"
    assert any(line.startswith("latent: does not apply (not proven quadratic") and "`exp`" in line
               for line in res.routes_tried), res.routes_tried
    assert res.reliable


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_latent_false_keeps_the_chains():
    """latent=False: the latent route is not asked (the routes asked say why), the chains answer; which route reads
    them is not asserted (8 chains over 62 coordinates sit near the split R-hat limit, so a release that changes
    the draws' last bits may send them to the modes route): within 4 se (+0.01) of the exact log Z."""
    system = ar1_state_space(T=60)
    res = _evidence(system.model, 0, latent=False, n_chains=8)
    assert res["evidence_stats"].attrs["route"] not in ("latent", "importance")
    assert "latent: does not apply (latent=False)" in res.routes_tried
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + TOL and res.log_z_se < 0.1


def test_draws_given_as_posterior_do_not_slow_the_latent_route():
    """Draws given as posterior= never make the default slower than without them: where the latent route answers
    without draws it answers with them too, with the same estimate (within 4 se, +0.01, of the exact log Z), and its
    reason says the draws were not needed."""
    system = hierarchical_normal()
    with system.model:
        idata = pm.sample(draws=300, tune=300, chains=2, random_seed=1, progressbar=False,
                          compute_convergence_checks=False)
    without, res = _evidence(system.model, 0), _evidence(system.model, 0, posterior=idata)
    assert res["evidence_stats"].attrs["route"] == without["evidence_stats"].attrs["route"] == "latent"
    assert res.log_z == without.log_z and res.log_z_se == without.log_z_se
    assert "the draws given as posterior= are not needed" in res["evidence_stats"].attrs["route_reason"]
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + TOL


def test_ar1_quadrature_is_converged():
    model = ar1_state_space(T=80).model
    _, error = ar1_log_evidence(np.asarray(model.rvs_to_values[model["y"]].data))
    assert error < 1e-8


# ------------------------------------------------------------------------------------------- precision structures
def _random_structure(rng, m, b, border):
    s = BorderedBandPrecision(m, b, border)
    A = np.zeros((m, m))
    rest = s.rest
    for k in range(b + 1):
        for p in range(len(rest) - k):
            A[rest[p], rest[p + k]] = A[rest[p + k], rest[p]] = rng.normal()
    for q in border:
        A[q, :] = A[:, q] = rng.normal(size=m)
    return s, A + np.diag(np.abs(A).sum(1) + 1.0)  # diagonally dominant: positive definite


@pytest.mark.parametrize("m, b, border", [(40, 0, [0]), (60, 1, []), (50, 2, [3, 17]), (45, 1, [44])])
def test_bordered_band_factor_matches_dense(m, b, border):
    """Log determinant, solve, product and the covariance of the draws of a bordered band against dense algebra;
    the pattern gives back the structure (or a cheaper one)."""
    rng = np.random.default_rng(m + b)
    s, P = _random_structure(rng, m, b, border)
    found = structure_from_pattern(P != 0)
    assert isinstance(found, BorderedBandPrecision) and 2 * found.b + found.r <= 2 * b + len(border)
    g0 = rng.normal(size=m)
    d = (s.steps() @ (-P).T)[1:]  # the gradient differences a quadratic with precision P gives
    reps, asym, _ = s.assemble(d[None])
    assert asym[0] < 1e-12
    fac, log_det = s.factor(reps[0])
    assert log_det == pytest.approx(np.linalg.slogdet(P)[1], abs=1e-9)
    np.testing.assert_allclose(s.solve(fac, g0), np.linalg.solve(P, g0), atol=1e-10)
    np.testing.assert_allclose(s.times(reps[0], g0), P @ g0, atol=1e-10)
    draws = s.draw(fac, rng.standard_normal((40000, m)))
    cov = np.linalg.inv(P)
    assert np.max(np.abs(np.cov(draws.T) - cov)) < 8 * np.sqrt(2.0 / 40000) * np.max(np.diag(cov))


def test_dense_pattern_stays_dense():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(40, 40))
    assert isinstance(structure_from_pattern(A @ A.T != 0), DensePrecision)


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_second_peak_of_the_hyperparameters_hands_over_to_the_chains():
    """Gaussian latents whose scale enters as (a - 2): the marginal of a has two peaks (a = 0.5 and 3.5, masses
    0.47 / 0.53). One Student-t would serve one of them and miss half the mass; the scan along the peak's axis or
    the search from prior draws finds the second peak, the route stops (the timeline says why) and the modes route
    answers within 4 se of the quadrature."""
    from scipy import integrate, stats

    rng = np.random.default_rng(1)
    y = rng.normal(0, np.sqrt(1 + 1.5**2), 60)
    with pm.Model() as model:
        a = pm.HalfNormal("a", 5.0)
        x = pm.Normal("x", 0.0, 1.0, shape=60)
        pm.Normal("y", mu=(a - 2.0) * x, sigma=1.0, observed=y)

    def log_p(t):
        return stats.norm(0, np.sqrt(1 + (t - 2) ** 2)).logpdf(y).sum() + stats.halfnorm(scale=5).logpdf(t)

    ref = log_p(0.5)
    value, _ = integrate.quad(lambda t: np.exp(log_p(t) - ref), 0, 30, points=[0.5, 2, 3.5], limit=400)
    truth = ref + np.log(value)
    res = _evidence(model, 1)
    assert res["evidence_stats"].attrs["route"] != "latent"
    timeline = json.loads(res.evidence_stats.attrs["timeline"])
    assert any("second peak" in step or "rises again" in step for step in timeline), timeline
    assert abs(res.log_z - truth) < 4 * res.log_z_se + TOL and res.log_z_se < 0.1


@pytest.mark.parametrize("seed", [0, 1])
def test_few_coordinates_take_the_importance_route(seed):
    """Normal-Inverse-Gamma regression (closed form; 3 coordinates): importance sampling from a Student-t at the
    peak, within 4 se of the exact log Z, se at most the default target, with its two halves as the check."""
    system = systems.nig_regression()
    res = _evidence(system.model, seed)
    ev = res["evidence_stats"].attrs
    assert ev["route"] == "importance", ev["route_reason"]
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + TOL
    assert 0 < res.log_z_se <= 0.03 and res.reliable
    assert {"is_laplace", "is_a", "is_b"} <= set(res.estimates.index)


@pytest.mark.parametrize("n_rates, seed", [(12, 0), (30, 1)])
def test_up_to_thirty_coordinates_take_the_importance_route(n_rates, seed):
    """Independent Poisson rates under Gamma priors (closed form; 12 and 30 log-transformed coordinates, nothing to
    integrate out): importance sampling from a Student-t at the peak over every coordinate, within 4 se of the
    exact log Z with an se at most the default target."""
    from scipy.special import gammaln

    rng = np.random.default_rng(seed)
    alpha, beta, per = 2.0, 1.0, 6
    y = rng.poisson(rng.gamma(alpha, 1.0 / beta, size=n_rates)[:, None], size=(n_rates, per))
    with pm.Model() as model:
        lam = pm.Gamma("lam", alpha=alpha, beta=beta, shape=n_rates)
        pm.Poisson("y", lam[:, None], observed=y)
    total = y.sum(1)
    truth = float(np.sum(alpha * np.log(beta) - gammaln(alpha) + gammaln(alpha + total)
                         - (alpha + total) * np.log(beta + per)) - gammaln(y + 1.0).sum())
    res = _evidence(model, seed)
    ev = res["evidence_stats"].attrs
    assert ev["route"] == "importance", ev["route_reason"]
    assert f"{n_rates} coordinates" in ev["route_reason"]
    assert abs(res.log_z - truth) < 4 * res.log_z_se + TOL
    assert 0 < res.log_z_se <= 0.03 and res.reliable


@pytest.mark.parametrize("seed", [1, 19])
def test_cauchy_tails_are_served_by_the_defensive_component(seed):
    """A Cauchy prior and a Cauchy observation (posterior tails |mu|^-4): against a Student-t_7 alone the weights
    have infinite variance (seed 19 came out 5.5 se low, reliable); the reference's Cauchy component bounds them,
    and the answer is within 4 se of the quadrature with a meaningful se."""
    from scipy import integrate, stats

    with pm.Model() as model:
        mu = pm.Cauchy("mu", 0.0, 1.0)
        pm.Cauchy("y", mu, 1.0, observed=[0.5])
    truth = np.log(integrate.quad(lambda t: stats.cauchy.pdf(t) * stats.cauchy.pdf(0.5, t), -np.inf, np.inf)[0])
    res = _evidence(model, seed)
    assert res["evidence_stats"].attrs["route"] == "importance"
    assert abs(res.log_z - truth) < 4 * res.log_z_se + TOL and res.log_z_se < 0.03


@pytest.mark.parametrize("system_name", ["nig_regression", "ar1"])
def test_max_time_spent_flags_the_route(system_name):
    """A budget spent before the search for a second peak: no search, a small pilot, an estimate that is still
    finite with its se, and a result flagged unreliable that says why (importance and latent routes)."""
    system = systems.nig_regression() if system_name == "nig_regression" else ar1_state_space(T=60)
    res = _evidence(system.model, 0, max_time=1e-3)
    assert res["evidence_stats"].attrs["route"] in ("importance", "latent")
    assert np.isfinite(res.log_z) and res.log_z_se > 0
    assert not res.reliable and "max_time was spent" in res.reliability_reason


def test_the_split_stays_within_its_sizes():
    """Fewer than MIN_LATENT latents, or more than MAX_HYPER others, or more than MAX_LATENT latents (whose first
    dense probe would not fit in memory): no latent split. A model of at most MAX_IMPORTANCE coordinates has every
    coordinate importance sampled (the importance route's split), a larger one not."""
    from pmz.model.latent_gaussian import MAX_IMPORTANCE, MAX_LATENT, MIN_LATENT, every_coordinate, latent_split
    from pmz.model.pymc import CompiledModel

    with pm.Model() as many:
        pm.Normal("x", 0.0, 1.0, shape=MAX_LATENT + 1)
    with pm.Model() as many_hyper:
        pm.HalfNormal("s", 1.0, shape=7)
        pm.Normal("x", 0.0, 1.0, shape=10)
    with pm.Model() as small:
        pm.HalfNormal("s", 1.0)
        pm.Normal("x", 0.0, 1.0, shape=MIN_LATENT - 1)
    with pm.Model() as wide:
        pm.HalfNormal("s", 1.0, shape=MAX_IMPORTANCE + 1)
    assert latent_split(CompiledModel(many)) is None
    assert latent_split(CompiledModel(many_hyper)) is None
    assert latent_split(CompiledModel(small)) is None
    split = every_coordinate(CompiledModel(small))  # all of them importance sampled
    assert split.latent.size == 0 and split.hyper.size == MIN_LATENT
    assert every_coordinate(CompiledModel(many_hyper)).hyper.size == 17
    assert every_coordinate(CompiledModel(wide)) is None and latent_split(CompiledModel(wide)) is None


@pytest.mark.parametrize("seed", [0, 1])
def test_a_summed_out_switch_point_leaves_the_importance_route_its_rates(seed):
    """A clear change point: a DiscreteUniform switch point summed out exactly (41 values), two Gamma rates left. The
    importance route integrates the summed model's two coordinates (the switch point no longer sends it to the
    chains); log Z against the exact sum over switch points of the Gamma-Poisson marginals, and every draw carries a
    switch point drawn from its exact conditional."""
    from scipy.special import gammaln, logsumexp

    rng = np.random.default_rng(seed)
    T, a, b = 40, 2.0, 1.0
    counts = np.concatenate([rng.poisson(4.0, 15), rng.poisson(1.0, T - 15)])
    t = np.arange(T)
    with pm.Model() as model:
        tau = pm.DiscreteUniform("tau", lower=0, upper=T)
        early = pm.Gamma("early", alpha=a, beta=b)
        late = pm.Gamma("late", alpha=a, beta=b)
        pm.Poisson("y", mu=pm.math.switch(t < tau, early, late), observed=counts)

    def log_marginal(y):  # Gamma(a, b) prior, Poisson counts y: the rate integrated out
        n, s = len(y), y.sum()
        return a * np.log(b) - gammaln(a) + gammaln(a + s) - (a + s) * np.log(b + n) - gammaln(y + 1.0).sum()

    truth = float(logsumexp([log_marginal(counts[:k]) + log_marginal(counts[k:]) for k in range(T + 1)])
                  - np.log(T + 1))
    res = _evidence(model, seed)
    ev = res["evidence_stats"].attrs
    assert ev["route"] == "importance", ev["route_reason"]
    assert abs(res.log_z - truth) < 4 * res.log_z_se + TOL
    assert 0 < res.log_z_se <= 0.03 and res.reliable
    switch = res.posterior["tau"].values
    assert np.issubdtype(switch.dtype, np.integer) and switch.min() >= 0 and switch.max() <= T
