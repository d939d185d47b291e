"""Check the closed-form evidences of pmz.systems against independent computations."""

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from pmz.systems import (
    ALL_SYSTEMS,
    KnownTruth,
    beta_binomial,
    linear_regression,
    nig_regression,
    normal_mean,
    poisson_gamma,
)


def observed_data(model):
    """The observed values of the (single) observed variable of a model."""
    (obs,) = model.observed_RVs
    return np.asarray(model.rvs_to_values[obs].eval())


def design_matrix(n_obs, n_coef, seed):
    """The design the regression builders draw first from default_rng(seed)."""
    return np.random.default_rng(seed).standard_normal((n_obs, n_coef))


# --------------------------------------------------------------------------
# One-parameter systems: quadrature of prior x likelihood from PyMC itself
# --------------------------------------------------------------------------


def log_evidence_by_quadrature(model):
    """log of the integral of p(theta) p(y | theta) over the unconstrained value z.

    Both terms come from PyMC's own log densities; the prior is compiled with
    jacobian=True so the integrand is a density in z.
    """
    (value_var,) = model.value_vars
    name = value_var.name
    log_prior = model.compile_logp(vars=model.free_RVs, jacobian=True)
    log_lik = model.compile_logp(vars=model.observed_RVs)

    def log_joint(z):
        point = {name: np.asarray(z, dtype=value_var.dtype)}
        return float(log_prior(point) + log_lik(point))

    mode = optimize.minimize_scalar(lambda z: -log_joint(z), bracket=(-1.0, 1.0)).x
    h = 1e-3
    curvature = -(log_joint(mode + h) - 2 * log_joint(mode) + log_joint(mode - h)) / h**2
    sd = 1.0 / np.sqrt(curvature)
    shift = log_joint(mode)
    value, _ = integrate.quad(
        lambda z: np.exp(log_joint(z) - shift),
        mode - 40 * sd,
        mode + 40 * sd,
        points=[mode],
        epsabs=0.0,
        epsrel=1e-11,
        limit=200,
    )
    return shift + np.log(value)


@pytest.mark.parametrize(
    "system",
    [
        normal_mean(),
        normal_mean(n_obs=5, prior_mu=1.5, prior_sigma=0.7, sigma=2.0, seed=3),
        beta_binomial(),
        beta_binomial(n_groups=4, n_trials=7, a=0.8, b=1.3, seed=5),
        poisson_gamma(),
        poisson_gamma(n_obs=8, alpha=0.5, beta=3.0, seed=2),
    ],
    ids=lambda s: s.name,
)
def test_one_parameter_systems_match_quadrature(system):
    # quadrature reaches ~1e-12; 1e-9 also catches float32 hyperparameter constants
    assert abs(system.log_z - log_evidence_by_quadrature(system.model)) < 1e-9


def test_normal_mean_matches_dense_mvn():
    n, prior_mu, prior_sigma, sigma = 6, -0.5, 1.7, 0.8
    system = normal_mean(n_obs=n, prior_mu=prior_mu, prior_sigma=prior_sigma, sigma=sigma, seed=4)
    y = observed_data(system.model)
    cov = sigma**2 * np.eye(n) + prior_sigma**2 * np.ones((n, n))
    dense = stats.multivariate_normal(np.full(n, prior_mu), cov).logpdf(y)
    assert system.log_z == pytest.approx(dense, abs=1e-8)


# --------------------------------------------------------------------------
# Regressions: dense marginal densities of y
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        dict(n_obs=7, n_coef=3, prior_sigma=1.0, sigma=0.5, seed=0),
        dict(n_obs=12, n_coef=4, prior_sigma=2.5, sigma=1.3, seed=9),
        dict(n_obs=3, n_coef=5, prior_sigma=0.7, sigma=0.2, seed=1),  # p > n
    ],
)
def test_linear_regression_matches_dense_mvn(options):
    system = linear_regression(**options)
    n, p = options["n_obs"], options["n_coef"]
    X = design_matrix(n, p, options["seed"])
    y = observed_data(system.model)
    cov = options["sigma"] ** 2 * np.eye(n) + options["prior_sigma"] ** 2 * X @ X.T
    dense = stats.multivariate_normal(np.zeros(n), cov).logpdf(y)
    assert system.log_z == pytest.approx(dense, abs=1e-8)


def test_linear_regression_large_is_fast_and_right():
    system = linear_regression(n_obs=1000, n_coef=10, seed=2)
    X = design_matrix(1000, 10, 2)
    y = observed_data(system.model)
    cov = 0.5**2 * np.eye(1000) + X @ X.T
    dense = stats.multivariate_normal(np.zeros(1000), cov).logpdf(y)
    assert system.log_z == pytest.approx(dense, rel=1e-10)


@pytest.mark.parametrize(
    "options",
    [
        dict(n_obs=8, n_coef=2, a0=3.0, b0=2.0, prior_scale=1.0, seed=0),
        dict(n_obs=15, n_coef=3, a0=1.5, b0=0.4, prior_scale=2.0, seed=7),
    ],
)
def test_nig_regression_matches_dense_multivariate_t(options):
    system = nig_regression(**options)
    n, p = options["n_obs"], options["n_coef"]
    a0, b0, c = options["a0"], options["b0"], options["prior_scale"]
    X = design_matrix(n, p, options["seed"])
    y = observed_data(system.model)
    shape = (b0 / a0) * (np.eye(n) + c**2 * X @ X.T)
    dense = stats.multivariate_t(np.zeros(n), shape, df=2 * a0).logpdf(y)
    assert system.log_z == pytest.approx(dense, abs=1e-8)


# --------------------------------------------------------------------------
# Regressions: the PyMC model itself agrees with the formula
# (Bayes' identity log p(y) = log p(theta, y) - log p(theta | y) at any theta)
# --------------------------------------------------------------------------


def test_linear_regression_model_agrees_with_log_z():
    n, p, tau, sigma = 10, 3, 1.4, 0.6
    system = linear_regression(n_obs=n, n_coef=p, prior_sigma=tau, sigma=sigma, seed=5)
    X, y = design_matrix(n, p, 5), observed_data(system.model)
    precision = X.T @ X / sigma**2 + np.eye(p) / tau**2
    cov = np.linalg.inv(precision)
    mean = cov @ X.T @ y / sigma**2
    log_joint = system.model.compile_logp()
    for beta in (mean, mean + 0.3, np.zeros(p)):
        log_post = stats.multivariate_normal(mean, cov).logpdf(beta)
        assert log_joint({"beta": beta}) - log_post == pytest.approx(system.log_z, abs=1e-8)


def test_nig_regression_model_agrees_with_log_z():
    n, p, a0, b0, c = 12, 2, 2.5, 1.5, 0.8
    system = nig_regression(n_obs=n, n_coef=p, a0=a0, b0=b0, prior_scale=c, seed=6)
    X, y = design_matrix(n, p, 6), observed_data(system.model)
    precision_n = X.T @ X + np.eye(p) / c**2
    v_n = np.linalg.inv(precision_n)
    m_n = v_n @ X.T @ y
    a_n = a0 + n / 2
    b_n = b0 + 0.5 * (y @ y - m_n @ precision_n @ m_n)
    # jacobian=False: density in (sigma2, beta), matching the posterior below
    log_joint = system.model.compile_logp(jacobian=False)
    for sigma2, beta in ((b_n / a_n, m_n), (0.7, m_n - 0.2), (2.0, np.zeros(p))):
        log_post = stats.invgamma(a_n, scale=b_n).logpdf(sigma2) + stats.multivariate_normal(m_n, sigma2 * v_n).logpdf(
            beta
        )
        point = {"sigma2_log__": np.log(sigma2), "beta": beta}
        assert log_joint(point) - log_post == pytest.approx(system.log_z, abs=1e-8)


# --------------------------------------------------------------------------
# Registry, naming and reproducibility
# --------------------------------------------------------------------------


EXPECTED_FREE = {
    "normal_mean": {"mu"},
    "linear_regression": {"beta"},
    "nig_regression": {"sigma2", "beta"},
    "beta_binomial": {"p"},
    "poisson_gamma": {"lam"},
}


@pytest.mark.parametrize("name", sorted(ALL_SYSTEMS))
def test_registry_and_variable_names(name):
    system = ALL_SYSTEMS[name]()
    assert isinstance(system, KnownTruth)
    assert system.name == name
    assert np.isfinite(system.log_z) and isinstance(system.log_z, float)
    assert {rv.name for rv in system.model.free_RVs} == EXPECTED_FREE[name]
    assert [rv.name for rv in system.model.observed_RVs] == ["k" if name == "beta_binomial" else "y"]
    model, log_z, _ = system
    assert model is system.model and log_z == system.log_z


@pytest.mark.parametrize("name", sorted(ALL_SYSTEMS))
def test_same_seed_same_data_different_seed_different_data(name):
    build = ALL_SYSTEMS[name]
    first, again, other = build(seed=11), build(seed=11), build(seed=12)
    assert first.log_z == again.log_z
    np.testing.assert_array_equal(observed_data(first.model), observed_data(again.model))
    assert not np.array_equal(observed_data(first.model), observed_data(other.model))
    assert first.log_z != other.log_z


def test_linear_regression_beta_is_one_vector():
    system = linear_regression(n_coef=4)
    assert [rv.name for rv in system.model.free_RVs] == ["beta"]
    assert system.model.initial_point()["beta"].shape == (4,)


def test_invalid_options_raise():
    with pytest.raises(ValueError):
        normal_mean(sigma=0.0)
    with pytest.raises(ValueError):
        nig_regression(b0=-1.0)


def test_correlated_gaussian_truth_by_the_candidate_formula():
    """log Z = log p(x) + log p(y | x) - log p(x | y) at any x, the posterior from the precision form
    (independent of the marginal formula the builder uses); the condition number is as asked."""
    from scipy import stats

    from pmz.systems import correlated_gaussian

    system = correlated_gaussian(dim=6, condition=100.0, prior_sigma=3.0, seed=2)
    y = observed_data(system.model)
    rng = np.random.default_rng(2)
    rotation, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    eigenvalues = np.logspace(-0.5, 0.5, 6) ** 2.0
    cov = (rotation * eigenvalues) @ rotation.T
    assert np.isclose(np.linalg.cond(cov), 100.0)
    precision = np.eye(6) / 9.0 + np.linalg.inv(cov)
    post_cov = np.linalg.inv(precision)
    post_mean = post_cov @ np.linalg.solve(cov, y)
    x = np.linspace(-1, 1, 6)
    log_z = (stats.multivariate_normal(np.zeros(6), 9.0 * np.eye(6)).logpdf(x)
             + stats.multivariate_normal(x, cov).logpdf(y)
             - stats.multivariate_normal(post_mean, post_cov).logpdf(x))
    assert abs(log_z - system.log_z) < 1e-8
    assert system.name == "correlated_gaussian_6"
