"""The exact log Z of the Laplace route's hazard columns (pmz.systems.latent_hazards) against brute-force grids on
two groups: a trapezoid rule over (mu, log sigma) and each group's standardised effect z (x = mu + sigma z),
summed with logsumexp, with no box search, no shared inner grid and no closed-form tail."""

import numpy as np
import pytest
from scipy import stats
from scipy.special import gammaln, logsumexp

from pmz.systems.latent_hazards import (
    NU_LIKELIHOOD, NU_PRIOR, SCALE_LIKELIHOOD, funnel_log_evidence, heavy_latent_log_evidence,
    student_t_log_evidence,
)


def _brute_force(group_log_integrals, mu_prior, mu, log_sigma):
    """``log int int N(mu; mu_prior, 1) 2 N(sigma; 0, 1) sigma prod_g I_g dmu d(log sigma)`` on the grid, with
    ``group_log_integrals(M, S) -> [log I_g on the grid]``."""
    sigma = np.exp(log_sigma)
    rows = [stats.norm.logpdf(m, mu_prior, 1.0) + np.log(2.0) + stats.norm.logpdf(sigma) + log_sigma
            + sum(group_log_integrals(np.full_like(sigma, m), sigma)) for m in mu]  # one mu at a time (memory)
    return logsumexp(rows) + np.log((mu[1] - mu[0]) * (log_sigma[1] - log_sigma[0]))


def _normal_effects(log_lik, z):
    """``log int N(z; 0, 1) L(mu + sigma z) dz`` on the grid ``z``, for one group's ``log_lik(x)``."""
    def log_integral(M, S):
        X = M[..., None] + S[..., None] * z
        return logsumexp(stats.norm.logpdf(z) + log_lik(X), axis=-1) + np.log(z[1] - z[0])

    return log_integral


def test_student_t_likelihood_truth_matches_a_brute_force_grid_on_two_groups():
    y = np.array([0.3, -0.4, 0.9, 0.1, 7.6, 8.4, 8.1, 7.2])  # two groups far apart: sigma -> 0 is negligible
    group = np.repeat([0, 1], 4)
    z = np.linspace(-10.0, 10.0, 801)

    def log_lik(values):
        return lambda X: sum(stats.t.logpdf(value, NU_LIKELIHOOD, X, SCALE_LIKELIHOOD) for value in values)

    groups = [_normal_effects(log_lik(y[group == g]), z) for g in (0, 1)]
    brute = _brute_force(lambda M, S: [f(M, S) for f in groups], 0.0, np.linspace(-7.0, 9.0, 121),
                         np.linspace(-9.0, 3.0, 121))
    assert abs(student_t_log_evidence(y, group) - brute) < 1e-4


def test_funnel_truth_matches_a_brute_force_grid_on_two_groups():
    """One count a group: sigma's posterior falls only like sigma towards 0 (the grid reaches log sigma = -20)."""
    counts = np.array([[1], [3]])
    z = np.linspace(-10.0, 10.0, 401)
    groups = [_normal_effects(lambda X, c=c: c * X - np.exp(X) - gammaln(c + 1.0), z) for c in counts[:, 0]]
    brute = _brute_force(lambda M, S: [f(M, S) for f in groups], 1.0, np.linspace(-5.0, 7.0, 121),
                         np.linspace(-20.0, 3.0, 231))
    assert abs(funnel_log_evidence(counts) - brute) < 1e-4


def test_heavy_latent_truth_matches_a_brute_force_grid_on_two_groups():
    """Student-t(2) effects: the inner integrals by the midpoint rule in the prior's quantile u (z = F^-1(u)), so
    the heavy tails are integrated to the end, including a group of zeros whose likelihood tends to 1 as x -> -inf."""
    counts = np.array([[0, 0, 0, 0], [30, 25, 35, 28]])  # apart: sigma -> 0 is negligible
    u = (np.arange(4000) + 0.5) / 4000
    z = stats.t.ppf(u, NU_PRIOR)

    def group_log_integral(c):
        def log_integral(M, S):
            X = M[..., None] + S[..., None] * z
            log_lik = c.sum() * X - len(c) * np.exp(X) - gammaln(c + 1.0).sum()
            return logsumexp(log_lik, axis=-1) - np.log(len(u))

        return log_integral

    groups = [group_log_integral(c) for c in counts]
    brute = _brute_force(lambda M, S: [f(M, S) for f in groups], 1.0, np.linspace(-6.0, 8.0, 141),
                         np.linspace(-7.0, 3.0, 121))
    # a finer inner grid than the default: with two groups the outer box reaches sigma = e^-5 (rate 3 towards 0)
    assert abs(heavy_latent_log_evidence(counts, x_step=0.002) - brute) < 1e-4


@pytest.mark.slow
def test_the_column_truths_do_not_move_when_every_rule_is_refined():
    from pmz.systems import latent_hazards as lh

    (y, group), funnel, heavy = lh.student_t_data(), lh.funnel_data(), lh.heavy_latent_data()
    for log_z, change in (lh.student_t_log_evidence(y, group, refine=True), lh.funnel_log_evidence(funnel, refine=True),
                          lh.heavy_latent_log_evidence(heavy, refine=True)):
        assert np.isfinite(log_z) and change < 1e-6
