"""Check the exact evidence of pmz.systems.hierarchical against independent computations."""

import numpy as np
import pytest
from scipy import stats

from pmz.model.points import layout_from_model
from pmz.model.pymc import CompiledModel
from pmz.systems.conjugate import KnownTruth
from pmz.systems.hierarchical import hierarchical_normal, hierarchical_normal_log_evidence


def observed_data(model):
    """The observed (n_groups, n_per_group) array of the model."""
    (obs,) = model.observed_RVs
    return np.asarray(model.rvs_to_values[obs].eval())


def dense_log_evidence(y, group, mu_scale, tau, sigma):
    """log N(y; 0, sigma^2 I + tau^2 [same group] + mu_scale^2 1 1') with the full N x N covariance."""
    same_group = (group[:, None] == group[None, :]).astype(float)
    cov = sigma**2 * np.eye(y.size) + tau**2 * same_group + mu_scale**2
    return stats.multivariate_normal(np.zeros(y.size), cov).logpdf(y)


# --------------------------------------------------------------------------
# (1) closed form vs the dense multivariate normal density of y
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        dict(n_groups=4, n_per_group=3, mu_scale=5.0, tau=1.0, sigma=2.0, seed=0),
        dict(n_groups=7, n_per_group=2, mu_scale=0.6, tau=3.0, sigma=0.4, seed=5),
        dict(n_groups=1, n_per_group=6, mu_scale=2.0, tau=0.1, sigma=1.5, seed=2),
        dict(n_groups=10, n_per_group=1, mu_scale=8.0, tau=0.5, sigma=1.0, seed=9),
    ],
)
def test_closed_form_matches_dense_mvn(options):
    system = hierarchical_normal(**options)
    y = observed_data(system.model)
    assert y.shape == (options["n_groups"], options["n_per_group"])
    group = np.repeat(np.arange(y.shape[0]), y.shape[1])
    scales = options["mu_scale"], options["tau"], options["sigma"]
    dense = dense_log_evidence(y.ravel(), group, *scales)
    assert system.log_z == pytest.approx(dense, abs=1e-9)
    assert hierarchical_normal_log_evidence(y, *scales) == system.log_z


def test_ragged_groups_with_index_match_dense_mvn():
    rng = np.random.default_rng(4)
    group = np.array([2, 0, 0, 3, 2, 2, 0, 5, 3, 2])  # sizes 3, 0, 4, 2, 0, 1: labels 1 and 4 are empty
    y = rng.normal(1.0, 2.0, size=group.size)
    dense = dense_log_evidence(y, group, 3.0, 0.7, 1.2)
    assert hierarchical_normal_log_evidence(y, 3.0, 0.7, 1.2, group=group) == pytest.approx(dense, abs=1e-10)


def test_wide_mu_prior_approaches_flat_prior_limit():
    # As mu_scale -> infinity, log p(y) + log(mu_scale) tends to a finite limit (flat prior on mu) with a
    # correction of order 1 / mu_scale^2; a dense N x N covariance would be numerically singular here.
    y = observed_data(hierarchical_normal(n_groups=6, n_per_group=3, seed=1).model)
    shifted = [hierarchical_normal_log_evidence(y, m, 1.0, 2.0) + np.log(m) for m in (1e5, 1e7, 1e9)]
    assert np.all(np.isfinite(shifted)) and np.ptp(shifted) < 1e-9


def test_evidence_function_rejects_bad_input():
    with pytest.raises(ValueError):
        hierarchical_normal_log_evidence(np.zeros(5), 1.0, 1.0, 1.0)  # 1-D without a group index
    with pytest.raises(ValueError):
        hierarchical_normal_log_evidence(np.zeros((2, 2)), 1.0, 0.0, 1.0)
    with pytest.raises(ValueError):
        hierarchical_normal(sigma=-1.0)


# --------------------------------------------------------------------------
# (2) Chib's identity on the PyMC model, both parameterisations:
#     log p(y) = log p(y | x) + log p(x) - log p(x | y) at any x, with the exact Gaussian posterior
# --------------------------------------------------------------------------


def gaussian_posterior(y, mu_scale, tau, sigma, centered):
    """Posterior precision Q and mean m of x = (mu, theta) or (mu, eta), written out independently.

    theta = A x; the prior of x has precision Q0; y_ij ~ N(theta_j, sigma^2), so
    Q = Q0 + A' diag(n / sigma^2) A and m = Q^{-1} A' (sum_i y_ij / sigma^2).
    """
    n_groups, n_per_group = y.shape
    dim = n_groups + 1
    prior_precision = np.zeros((dim, dim))
    if centered:  # p(mu) prod_j N(theta_j; mu, tau^2)
        a = np.hstack([np.zeros((n_groups, 1)), np.eye(n_groups)])
        prior_precision[0, 0] = 1 / mu_scale**2 + n_groups / tau**2
        prior_precision[0, 1:] = prior_precision[1:, 0] = -1 / tau**2
        prior_precision[1:, 1:] = np.eye(n_groups) / tau**2
    else:  # p(mu) prod_j N(eta_j; 0, 1), theta = mu + tau eta
        a = np.hstack([np.ones((n_groups, 1)), tau * np.eye(n_groups)])
        prior_precision[0, 0] = 1 / mu_scale**2
        prior_precision[1:, 1:] = np.eye(n_groups)
    precision = prior_precision + a.T @ (n_per_group / sigma**2 * a)
    mean = np.linalg.solve(precision, a.T @ (y.sum(axis=1) / sigma**2))
    return precision, mean


def gaussian_log_density(x, mean, precision):
    """log N(x; mean, precision^{-1}) through a Cholesky factor of the precision."""
    chol = np.linalg.cholesky(precision)
    white = chol.T @ (x - mean)
    return -0.5 * (x.size * np.log(2 * np.pi) + white @ white) + np.sum(np.log(np.diag(chol)))


CHIB_CASES = [
    dict(),  # the default 50-dimensional system
    dict(n_groups=12, n_per_group=3, mu_scale=2.0, tau=0.2, sigma=1.5, seed=7),  # strong mu-theta coupling
]


@pytest.mark.parametrize("centered", [True, False], ids=["centred", "non_centred"])
@pytest.mark.parametrize("options", CHIB_CASES, ids=["default", "small_tau"])
def test_chib_identity_on_pymc_model(options, centered):
    system = hierarchical_normal(**options, centered=centered)
    model = system.model
    layout = layout_from_model(model)
    y = observed_data(model)
    scales = [options.get(k, d) for k, d in (("mu_scale", 5.0), ("tau", 1.0), ("sigma", 2.0))]
    precision, mean = gaussian_posterior(y, *scales, centered=centered)
    assert layout.value_names == ["mu", "theta" if centered else "eta"]  # no transforms

    log_joint = model.compile_logp()  # log p(x) + log p(y | x) at the (untransformed) point
    rng = np.random.default_rng(3)
    points = [mean, mean + 0.5, np.zeros(mean.size), rng.normal(0.0, 3.0, size=mean.size)]
    gaps = [log_joint(layout.to_point(x)) - gaussian_log_density(x, mean, precision) - system.log_z for x in points]
    np.testing.assert_allclose(gaps, 0.0, atol=1e-8)


def test_compiled_model_agrees_with_chib():
    # pmz's own batched log prior + log likelihood reproduce the same identity (non-centred, flat particles)
    system = hierarchical_normal(centered=False)
    cm = CompiledModel(system.model)
    precision, mean = gaussian_posterior(observed_data(system.model), 5.0, 1.0, 2.0, centered=False)
    X = mean + np.random.default_rng(0).normal(0.0, 0.3, size=(3, mean.size))
    log_prior, log_lik = cm.log_densities(X)
    log_post = [gaussian_log_density(x, mean, precision) for x in X]
    np.testing.assert_allclose(log_prior + log_lik - log_post, system.log_z, rtol=0, atol=1e-8)


# --------------------------------------------------------------------------
# (3) dimension and names, (4) reproducibility
# --------------------------------------------------------------------------


@pytest.mark.parametrize("centered", [True, False], ids=["centred", "non_centred"])
def test_default_dimension_is_50(centered):
    system = hierarchical_normal(centered=centered)
    assert isinstance(system, KnownTruth) and system.name == "hierarchical_normal"
    assert isinstance(system.log_z, float) and np.isfinite(system.log_z)
    point = system.model.initial_point()
    assert sum(np.size(v) for v in point.values()) == 50
    assert [rv.name for rv in system.model.free_RVs] == ["mu", "theta" if centered else "eta"]
    assert [rv.name for rv in system.model.observed_RVs] == ["y"]
    assert observed_data(system.model).shape == (49, 5)
    if not centered:
        assert [d.name for d in system.model.deterministics] == ["theta"]


def test_same_seed_same_data():
    first, again, other = hierarchical_normal(seed=11), hierarchical_normal(seed=11), hierarchical_normal(seed=12)
    non_centred = hierarchical_normal(seed=11, centered=False)
    np.testing.assert_array_equal(observed_data(first.model), observed_data(again.model))
    np.testing.assert_array_equal(observed_data(first.model), observed_data(non_centred.model))
    assert first.log_z == again.log_z == non_centred.log_z
    assert not np.array_equal(observed_data(first.model), observed_data(other.model))
    assert first.log_z != other.log_z
