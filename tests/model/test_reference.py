"""pmz.model.reference: exact prior draws in the value space, the Laplace reference and the Gaussian reference."""

import numpy as np
import pymc as pm
import pytest
from scipy import stats
from scipy.special import expit

import pmz
from pmz.model import CompiledModel, GaussianReference, PriorReference, find_map, laplace_reference

N_DRAWS = 20000


@pytest.fixture(scope="module")
def prior_cm():
    # numpy float64 hyperparameters: pytensor would turn the Python floats 2.0 and 3.0 into float32 constants
    # and evaluate the Beta normaliser in single precision (errors ~2e-8)
    f64 = np.float64
    with pm.Model() as m:
        s = pm.HalfNormal("s", f64(1.0))
        pm.Beta("p", f64(2.0), f64(3.0))
        pm.Normal("c", 0.0, s)
        pm.Normal("y", 0.0, 1.0, observed=[0.0])  # a likelihood, irrelevant to the prior
    return CompiledModel(m)


@pytest.fixture(scope="module")
def prior_draws(prior_cm):
    return PriorReference(prior_cm).sample(np.random.default_rng(123), N_DRAWS)


def zscore_mean(x, expected):
    return (np.mean(x) - expected) / (np.std(x, ddof=1) / np.sqrt(x.size))


def zscore_var(x, expected):
    """z-score of the sample variance, with the standard error from the sample's fourth central moment."""
    c = x - np.mean(x)
    m2, m4 = np.mean(c**2), np.mean(c**4)
    return (np.var(x, ddof=1) - expected) / np.sqrt((m4 - m2**2) / x.size)


# --------------------------------------------------------------------------
# PriorReference
# --------------------------------------------------------------------------


def test_prior_reference_shape_and_layout(prior_cm, prior_draws):
    assert prior_cm.layout.value_names == ["s_log__", "p_logodds__", "c"]
    assert prior_draws.shape == (N_DRAWS, 3)
    assert np.all(np.isfinite(prior_draws))
    assert len(np.unique(prior_draws[:, 0])) == N_DRAWS  # every call is a new draw
    ref = PriorReference(prior_cm)
    assert ref.dim == 3 and ref.log_z == 0.0
    assert ref.sample(np.random.default_rng(0), 1).shape == (1, 3)


def test_prior_reference_reproducible(prior_cm):
    ref = PriorReference(prior_cm)
    a = ref.sample(np.random.default_rng(99), 50)
    b = ref.sample(np.random.default_rng(99), 50)
    np.testing.assert_array_equal(a, b)
    # a second reference object with the same seed gives the same draws too
    np.testing.assert_array_equal(PriorReference(prior_cm).sample(np.random.default_rng(99), 50), a)
    c = ref.sample(np.random.default_rng(100), 50)
    assert not np.any(a == c)
    # consecutive calls with one Generator continue the stream
    gen = np.random.default_rng(99)
    first, second = ref.sample(gen, 50), ref.sample(gen, 50)
    assert not np.any(first == second)


def test_prior_reference_moments(prior_draws):
    """Six moment z-scores within 4 (each fails with probability 6e-5, about 4e-4 together); the slope of c^2 on s^2
    has an sd of about 0.045 at 20000 draws, so 1 +- 0.2 is a 4.5-sd bound (about 1e-5)."""
    s = np.exp(prior_draws[:, 0])
    p = expit(prior_draws[:, 1])
    c = prior_draws[:, 2]
    checks = [
        zscore_mean(s, np.sqrt(2 / np.pi)),  # HalfNormal(1)
        zscore_var(s, 1 - 2 / np.pi),
        zscore_mean(p, 0.4),  # Beta(2, 3)
        zscore_var(p, 2 * 3 / (5**2 * 6)),
        zscore_mean(c, 0.0),  # Normal(0, s): var = E[s^2] = 1
        zscore_var(c, 1.0),
    ]
    assert np.all(np.abs(checks) < 4), checks
    # the child really depends on its parent draw: E[c^2 | s] = s^2
    slope = np.polyfit(s**2, c**2, 1)[0]
    assert 0.8 < slope < 1.2


def test_prior_reference_ks(prior_draws):
    """Two KS tests at p > 0.001: each fails with probability 1e-3 when the draws are exact."""
    assert stats.kstest(expit(prior_draws[:, 1]), stats.beta(2, 3).cdf).pvalue > 0.001
    assert stats.kstest(np.exp(prior_draws[:, 0]), stats.halfnorm().cdf).pvalue > 0.001


def test_prior_reference_log_density(prior_cm, prior_draws):
    ref = PriorReference(prior_cm)
    X = prior_draws[:50]
    log_q = ref.log_density(X)
    zs, zp, c = X.T
    s, p = np.exp(zs), expit(zp)
    expected = (
        stats.halfnorm.logpdf(s)
        + zs  # log Jacobian of exp
        + stats.beta(2, 3).logpdf(p)
        + np.log(p * (1 - p))  # log Jacobian of expit
        + stats.norm(0, s).logpdf(c)
    )
    np.testing.assert_allclose(log_q, expected, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(log_q, prior_cm.log_densities(X)[0], rtol=1e-12)
    grad = ref.grad_log_density(X)
    assert grad.shape == X.shape
    # d/dc log N(c; 0, s) = -c / s^2
    np.testing.assert_allclose(grad[:, 2], -c / s**2, rtol=1e-10)


# --------------------------------------------------------------------------
# Laplace reference on the conjugate normal-mean model
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def normal_mean():
    system = pmz.systems.normal_mean()  # prior_mu=0, prior_sigma=2, sigma=1, n_obs=20
    model = system.model
    y = np.asarray(model.rvs_to_values[model["y"]].eval())
    precision = 1 / 2.0**2 + y.size / 1.0**2
    mean = (0.0 / 2.0**2 + y.sum() / 1.0**2) / precision
    return CompiledModel(model), mean, 1 / precision


def test_laplace_reference_is_exact_posterior(normal_mean):
    cm, post_mean, post_var = normal_mean
    assert cm.layout.value_names == ["mu"]  # no transform: the posterior is Gaussian in the value space
    ref = laplace_reference(cm)
    assert isinstance(ref, GaussianReference) and ref.name == "laplace" and ref.dim == 1
    np.testing.assert_allclose(ref.mean, [post_mean], atol=1e-5)
    np.testing.assert_allclose(ref.cov, [[post_var]], atol=1e-5, rtol=1e-5)
    x_map, res = find_map(cm)
    np.testing.assert_allclose(x_map, [post_mean], atol=1e-5)
    assert res.success
    # scale widens the covariance by scale^2
    wide = laplace_reference(cm, scale=2.0)
    np.testing.assert_allclose(wide.cov, 4 * ref.cov, rtol=1e-10)
    np.testing.assert_allclose(wide.mean, ref.mean, atol=1e-8)


def test_laplace_reference_start_point_irrelevant(normal_mean):
    cm, post_mean, post_var = normal_mean
    ref = laplace_reference(cm, x0=np.array([7.5]))
    np.testing.assert_allclose(ref.mean, [post_mean], atol=1e-5)
    np.testing.assert_allclose(ref.cov, [[post_var]], atol=1e-5, rtol=1e-5)


# --------------------------------------------------------------------------
# GaussianReference
# --------------------------------------------------------------------------


@pytest.fixture
def gaussian(rng):
    A = rng.standard_normal((3, 3))
    cov = A @ A.T + 0.5 * np.eye(3)
    mean = rng.standard_normal(3)
    return GaussianReference(mean, cov), mean, cov


def test_gaussian_log_density(gaussian, rng):
    ref, mean, cov = gaussian
    X = mean + 2 * rng.standard_normal((25, 3))
    np.testing.assert_allclose(ref.log_density(X), stats.multivariate_normal(mean, cov).logpdf(X), rtol=1e-10)
    assert ref.log_z == 0.0 and ref.dim == 3


def test_gaussian_grad_log_density(gaussian, rng):
    ref, mean, _ = gaussian
    X = mean + rng.standard_normal((10, 3))
    grad = ref.grad_log_density(X)
    assert grad.shape == (10, 3)
    h = 1e-5
    fd = np.empty_like(X)
    for j in range(3):
        e = np.zeros(3)
        e[j] = h
        fd[:, j] = (ref.log_density(X + e) - ref.log_density(X - e)) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-6, atol=1e-7)


def test_gaussian_sample(gaussian):
    """Three 4-se bounds on the mean (about 2e-4 together); the covariance within atol = 5% of the largest variance,
    at least 3.5 se of a sample covariance of 20000 draws (about 5e-4 over the nine entries)."""
    ref, mean, cov = gaussian
    X = ref.sample(np.random.default_rng(4), 20000)
    assert X.shape == (20000, 3)
    se = np.sqrt(np.diag(cov) / X.shape[0])
    assert np.all(np.abs(X.mean(axis=0) - mean) / se < 4)
    np.testing.assert_allclose(np.cov(X.T), cov, rtol=0.1, atol=0.05 * np.max(np.diag(cov)))
    np.testing.assert_array_equal(ref.sample(np.random.default_rng(4), 5), X[:5])


def test_gaussian_reference_validation():
    with pytest.raises(ValueError, match="cov must have shape"):
        GaussianReference(np.zeros(2), np.eye(3))
    with pytest.raises(ValueError, match="not positive definite"):
        GaussianReference(np.zeros(2), np.array([[1.0, 2.0], [2.0, 1.0]]))
    one = GaussianReference([0.5], 4.0)  # a scalar covariance for one dimension
    np.testing.assert_allclose(one.log_density(np.array([[0.5]])), stats.norm(0.5, 2.0).logpdf(0.5))


@pytest.mark.parametrize("dim", [1, 2])
def test_truncated_student_t_is_normalised_and_drawn_inside(dim):
    """The Cauchy cut at 3 scales (the latent and importance routes' defensive component): its density integrates
    to one (quadrature in 1-D, a grid in 2-D), it is -inf outside the ellipsoid, and the share of its draws within
    half the radius is the Student-t's, renormalised (r^2 / d ~ F(d, df)), within 4 binomial se."""
    from scipy import integrate

    from pmz.model.reference import TruncatedStudentTReference

    mean, cov = np.full(dim, 0.5), np.diag(np.arange(1.0, dim + 1.0) * 4.0)
    q = TruncatedStudentTReference(mean, cov, df=1.0, radius=3.0)
    if dim == 1:
        total, _ = integrate.quad(lambda x: np.exp(q.log_density(np.array([[x]])))[0], -6.0, 7.0, points=[-5.5, 6.5],
                                  limit=400)
    else:
        u = np.linspace(-6.0, 7.0, 1301)
        v = np.linspace(-10.0, 11.0, 2101)
        grid = np.stack(np.meshgrid(u, v, indexing="ij"), -1).reshape(-1, 2)
        total = np.exp(q.log_density(grid)).sum() * (u[1] - u[0]) * (v[1] - v[0])
    assert total == pytest.approx(1.0, abs=2e-3)
    outside = mean + 3.01 * np.sqrt(np.diag(cov))[None] * np.eye(dim)[:1]
    assert np.isneginf(q.log_density(outside)).all()
    X = q.sample(np.random.default_rng(0), 40000)
    r2 = np.sum((X - mean) ** 2 / np.diag(cov), axis=1)
    assert r2.max() <= 9.0
    share = stats.f.cdf(1.5**2 / dim, dim, 1.0) / stats.f.cdf(3.0**2 / dim, dim, 1.0)
    assert abs(np.mean(r2 <= 1.5**2) - share) < 4 * np.sqrt(share * (1 - share) / X.shape[0])
