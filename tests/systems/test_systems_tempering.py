"""Known-truth systems for simulated tempering: the Gaussian mixture energy model and the bimodal PyMC posterior.

Each truth is checked against a computation that does not reuse the system's own formulas (scipy densities,
numerical integration, importance sampling with independently coded likelihoods).
"""

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.special import logsumexp

import pmz
from pmz.model.energy_model import EnergyModel
from pmz.model.reference import GaussianReference
from pmz.systems import KnownTruth, bimodal_posterior, gaussian_mixture
from pmz.systems.bimodal import (
    MODE_MASSES,
    bimodal_data,
    bimodal_log_evidence,
    bimodal_log_joint,
    mode_label,
)
from pmz.systems.mixture import mode_of


def log_mean_exp_with_se(log_w):
    """log of the mean of exp(log_w) and its delta-method standard error."""
    log_w = np.asarray(log_w)
    n = log_w.size
    estimate = logsumexp(log_w) - np.log(n)
    w = np.exp(log_w - log_w.max())
    se = w.std(ddof=1) / (np.sqrt(n) * w.mean())
    return estimate, se


def scipy_mixture_logpdf(X, mean, sd, weight, log_z):
    """log f1 from scipy's multivariate normal densities (independent of pmz's closed form)."""
    cov = sd**2 * np.eye(mean.size)
    a = np.log(weight) + stats.multivariate_normal(mean, cov).logpdf(X)
    b = np.log1p(-weight) + stats.multivariate_normal(-mean, cov).logpdf(X)
    return log_z + np.logaddexp(a, b)


# --------------------------------------------------------------------------
# Gaussian mixture energy model
# --------------------------------------------------------------------------


def test_mixture_is_a_known_truth_energy_model():
    truth = gaussian_mixture()
    assert isinstance(truth, KnownTruth)
    model, log_z, name = truth
    assert isinstance(model, EnergyModel) and model.dim == 10 and not model.discrete
    assert log_z == 5.0 and model.target.log_z == 5.0 and name.startswith("gaussian_mixture")
    assert model.has_grad
    assert isinstance(model.base, GaussianReference) and model.base.log_z == 0.0
    np.testing.assert_allclose(model.base.cov, 25.0 * np.eye(10))
    # means +-m along the diagonal, separation 10 apart
    m = model.target.mean
    np.testing.assert_allclose(m, np.full(10, 5.0 / np.sqrt(10.0)))
    assert np.linalg.norm(2 * m) == pytest.approx(10.0)
    with pytest.raises(ValueError):
        gaussian_mixture(weight=1.0)
    with pytest.raises(ValueError):
        gaussian_mixture(base_sd=0.0)


def test_mixture_log_density_matches_scipy(rng):
    truth = gaussian_mixture(dim=10, separation=8.0, sd=1.5, weight=0.3, log_z=-2.0)
    target = truth.model.target
    X = np.concatenate([target.sample(rng, 50), 4.0 * rng.standard_normal((50, 10)), [np.full(10, 30.0)]])
    expected = scipy_mixture_logpdf(X, target.mean, 1.5, 0.3, -2.0)
    np.testing.assert_allclose(truth.model.log_f1(X), expected, rtol=1e-12, atol=1e-10)


def test_mixture_log_z_by_quadrature_in_one_dimension():
    truth = gaussian_mixture(dim=1, separation=10.0, sd=1.0, base_sd=5.0, weight=0.3, log_z=5.0)
    f = truth.model.target.log_density

    def scaled_density(x):
        return np.exp(f(np.array([[x]]))[0] - 5.0)

    # pieces split at the modes (+-5) so that quad sees both peaks
    value = sum(
        integrate.quad(scaled_density, a, b, epsabs=0.0, epsrel=1e-12)[0]
        for a, b in [(-40, -5), (-5, 0), (0, 5), (5, 40)]
    )
    assert np.log(value) + 5.0 == pytest.approx(truth.log_z, abs=1e-10)


def test_mixture_log_z_by_grid_in_two_dimensions():
    truth = gaussian_mixture(dim=2, separation=9.0, sd=0.8, weight=0.7, log_z=3.0)
    g = np.arange(-12.0, 12.0, 0.05)
    A, B = np.meshgrid(g, g, indexing="ij")
    log_f = truth.model.target.log_density(np.column_stack([A.ravel(), B.ravel()]))
    assert logsumexp(log_f) + 2 * np.log(0.05) == pytest.approx(3.0, abs=1e-9)


def test_mixture_log_z_by_importance_sampling(rng):
    """Two 4-se bounds: together they fail with probability about 1.3e-4 if the delta-method se are right."""
    # dim 2: straight from the base f0, importance weights f1 / f0 (AIS with a single step)
    truth = gaussian_mixture(dim=2)
    X = truth.model.base.sample(rng, 200_000)
    est, se = log_mean_exp_with_se(truth.model.log_f1(X) - truth.model.base.log_density(X))
    assert abs(est - truth.log_z) < 4 * se and se < 0.02
    # dim 10: from a wider equal-weight mixture (scipy densities); weights f1 / q are at most 1.4 * 1.3^10
    truth = gaussian_mixture(dim=10, weight=0.3)
    m = truth.model.target.mean
    sign = np.where(rng.random(200_000) < 0.5, 1.0, -1.0)
    X = sign[:, None] * m + 1.3 * rng.standard_normal((200_000, 10))
    log_q = scipy_mixture_logpdf(X, m, 1.3, 0.5, 0.0)
    est, se = log_mean_exp_with_se(truth.model.log_f1(X) - log_q)
    assert abs(est - truth.log_z) < 4 * se and se < 0.01


def test_mixture_gradient_matches_finite_differences(rng):
    truth = gaussian_mixture(dim=10, separation=10.0, sd=1.2, weight=0.3)
    model = truth.model
    X = np.concatenate([model.target.sample(rng, 5), 5.0 * rng.standard_normal((5, 10)), np.zeros((1, 10))])
    grad = model.grad_log_f1(X)
    h = 1e-5
    fd = np.empty_like(X)
    for j in range(10):
        E = np.zeros(10)
        E[j] = h
        fd[:, j] = (model.log_f1(X + E) - model.log_f1(X - E)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-6)


def test_mixture_target_draws_moments_and_modes(rng):
    """Ten means at 4.5 se (at most 7e-5 together), 55 covariances at atol 0.05 (6 sd of each entry or more: 1e-7)
    and the mode fraction at 4 binomial sd (6e-5): about 1.3e-4 in all for exact draws."""
    w, sd = 0.3, 1.0
    truth = gaussian_mixture(dim=10, separation=10.0, sd=sd, weight=w)
    target = truth.model.target
    n = 200_000
    X = truth.model.sample_target(rng, n)
    m = target.mean
    mean = (2 * w - 1) * m
    cov = sd**2 * np.eye(10) + 4 * w * (1 - w) * np.outer(m, m)
    se_mean = np.sqrt(np.diag(cov) / n)
    assert np.all(np.abs(X.mean(axis=0) - mean) < 4.5 * se_mean)
    np.testing.assert_allclose(np.cov(X.T), cov, atol=0.05)
    labels = mode_of(X)
    assert set(np.unique(labels)) == {-1, 1}
    p_plus, p_minus = target.mode_masses
    assert p_plus + p_minus == pytest.approx(1.0)
    assert p_plus == pytest.approx(w, abs=1e-6)
    assert abs((labels == 1).mean() - p_plus) < 4 * np.sqrt(p_plus * (1 - p_plus) / n)
    # the label is the nearer mean
    nearer = np.where(np.sum((X - m) ** 2, 1) <= np.sum((X + m) ** 2, 1), 1, -1)
    np.testing.assert_array_equal(labels, nearer)


def test_mixture_ais_runs_with_hmc():
    """The 5-se bound (or 0.15) fails with probability about 6e-7 if the se is right; se 0.049-0.067 over seeds 3-22
    against the cap 0.15 (without it a huge se would pass anything)."""
    truth = gaussian_mixture(dim=2)
    res = pmz.evidence(truth.model, method="ais", n_temps=100, n_paths=128, random_seed=3, progressbar=False)
    assert abs(res.log_z - truth.log_z) < max(5 * res.log_z_se, 0.15)
    assert res.log_z_se < 0.15


# --------------------------------------------------------------------------
# Bimodal PyMC posterior
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bimodal():
    return bimodal_posterior()


def independent_log_likelihood(mu, y, sd=1.0):
    """sum_i log(1/2 N(y_i; mu1, sd^2) + 1/2 N(y_i; mu2, sd^2)) for mu (n, 2), written out in numpy.

    The two component densities share the constant, so log(N1 + N2) = const + logaddexp of the exponents.
    """
    y = np.asarray(y, dtype=np.float64)
    e1 = -0.5 * ((y - mu[:, :1]) / sd) ** 2
    e2 = -0.5 * ((y - mu[:, 1:]) / sd) ** 2
    const = -0.5 * np.log(2 * np.pi * sd**2) - np.log(2.0)
    return y.size * const + np.logaddexp(e1, e2).sum(axis=1)


def test_bimodal_model_logp_matches_integrand(bimodal):
    model, log_z, name = bimodal
    assert name.startswith("bimodal_posterior")
    assert [v.name for v in model.value_vars] == ["mu"]
    y = bimodal_data()
    np.testing.assert_array_equal(np.asarray(model.rvs_to_values[model.observed_RVs[0]].eval()), y)
    logp = model.compile_logp()
    points = np.array([[-2.5, 2.5], [2.6, -2.7], [0.3, -1.2], [4.0, 4.0], [-9.0, 11.0]])
    ours = bimodal_log_joint(points, y)
    for point, value in zip(points, ours):
        assert float(logp({"mu": point})) == pytest.approx(value, abs=1e-9)
    independent = independent_log_likelihood(points, y) + stats.norm.logpdf(points, 0, 5).sum(axis=1)
    np.testing.assert_allclose(ours, independent, rtol=1e-12)


def test_bimodal_quadrature_is_converged(bimodal):
    y = bimodal_data()
    assert bimodal_log_evidence(y) == bimodal.log_z
    assert bimodal_log_evidence(y, step=0.08, pad=3.0) == pytest.approx(bimodal.log_z, abs=1e-9)
    assert bimodal_log_evidence(y, step=0.03, pad=6.0) == pytest.approx(bimodal.log_z, abs=1e-9)
    assert bimodal.log_z == pytest.approx(-82.3647771, abs=1e-6)


def test_bimodal_log_evidence_by_importance_sampling(bimodal):
    """Two 4-se bounds (6e-5 each if the delta-method se are right: z over 100 seeds has sd 0.96) and the mode share
    within 0.01, 7 sd of its spread (ESS 1.3e5): about 1.3e-4 in all."""
    rng = np.random.default_rng(7)
    y = bimodal_data()
    # from the prior: 10^6 draws in chunks
    log_w = np.concatenate([independent_log_likelihood(rng.normal(0.0, 5.0, size=(100_000, 2)), y) for _ in range(10)])
    est, se = log_mean_exp_with_se(log_w)
    assert abs(est - bimodal.log_z) < 4 * se and se < 0.1
    # from a two-bump proposal at the cluster means (sharper check)
    c1, c2 = y[: y.size // 2].mean(), y[y.size // 2 :].mean()
    n = 200_000
    centres = np.where((rng.random(n) < 0.5)[:, None], [c1, c2], [c2, c1])
    mu = centres + 0.35 * rng.standard_normal((n, 2))
    log_q = np.logaddexp(
        stats.norm.logpdf(mu, [c1, c2], 0.35).sum(axis=1), stats.norm.logpdf(mu, [c2, c1], 0.35).sum(axis=1)
    ) - np.log(2.0)
    log_prior = stats.norm.logpdf(mu, 0.0, 5.0).sum(axis=1)
    log_w = independent_log_likelihood(mu, y) + log_prior - log_q
    est, se = log_mean_exp_with_se(log_w)
    assert abs(est - bimodal.log_z) < 4 * se and se < 0.005
    # each mode carries half of the posterior mass
    w = np.exp(log_w - log_w.max())
    share = np.sum(w * (mode_label(mu) == 0)) / w.sum()
    assert MODE_MASSES == (0.5, 0.5)
    assert abs(share - 0.5) < 0.01


def test_mode_label_shapes():
    draws = np.array([[[-2.5, 2.5], [2.5, -2.5]], [[0.0, 1.0], [1.0, 0.0]]])  # (chain, draw, 2)
    np.testing.assert_array_equal(mode_label(draws), [[0, 1], [0, 1]])
    np.testing.assert_array_equal(mode_label(draws.reshape(-1, 2)), [0, 1, 0, 1])
