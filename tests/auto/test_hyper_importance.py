"""The importance sampler over the hyperparameters: how many draws a thrifty run takes."""

import numpy as np
import pytest

from pmz.auto.hyper_importance import SE_PRECISION, draws_wanted, normalised_variance


def _thrifty_draws(rng, sigma, target_se=0.05):
    """The draws a thrifty run takes (pmz.auto.hyper_importance._importance) on lognormal weights."""
    log_w = sigma * rng.standard_normal(256)
    wanted = draws_wanted(log_w, target_se, thrifty=True)
    while wanted > len(log_w):
        log_w = np.concatenate([log_w, sigma * rng.standard_normal(wanted - len(log_w))])
        wanted = max(wanted, draws_wanted(log_w, target_se, thrifty=True))
    return len(log_w)


@pytest.mark.parametrize("sigma", [0.3, 0.8, 1.2])
def test_a_thrifty_run_takes_enough_draws_for_its_se_to_mean_something(sigma):
    """Lognormal weights ``exp(sigma Z)``: at the number of draws a thrifty run takes, the delta-method se of log Z
    varies over repeated runs by little more than SE_PRECISION of itself and sits on its large-sample value; heavier
    weights take more draws."""
    rng = np.random.default_rng(1)
    n = int(np.median([_thrifty_draws(rng, sigma) for _ in range(9)]))
    w = np.exp(sigma * rng.standard_normal((2000, n)))
    se = np.std(w, axis=1) / (np.sqrt(n) * np.mean(w, axis=1))
    assert np.std(se) / np.mean(se) < 1.5 * SE_PRECISION
    exact = np.sqrt((np.exp(sigma**2) - 1.0) / n)
    assert abs(np.median(se) / exact - 1.0) < 0.1
    if sigma == 1.2:
        assert n > 4 * int(np.median([_thrifty_draws(rng, 0.3) for _ in range(9)]))


def test_the_normalised_variance_is_the_chi_square_divergence():
    log_w = 0.5 * np.random.default_rng(2).standard_normal(200_000) + 7.0
    assert abs(normalised_variance(log_w) - (np.exp(0.25) - 1.0)) < 0.01


def test_the_trapezoid_rule_stops_where_max_time_is_spent(monkeypatch):
    """One hyperparameter (a group scale, the group effects integrated exactly): the rule starting 1 sd each way
    must widen; with time left it answers, and its two rules agree; with ``max_time`` spent before the widening it
    hands over (None: importance sampling, which watches the budget, runs instead)."""
    import pymc as pm

    from pmz.auto import hyper_quadrature as rule
    from pmz.auto.peak_search import evaluate
    from pmz.model import compile_model
    from pmz.model.latent_gaussian import ConditionalGaussian, latent_split

    rng = np.random.default_rng(4)
    y = rng.normal(1.0, 0.7, 30)[:, None] + rng.normal(0.0, 1.0, (30, 4))
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 5.0)
        tau = pm.HalfNormal("tau", 2.0)
        z = pm.Normal("z", 0.0, 1.0, shape=30)
        pm.Normal("y", mu=(mu + tau * z)[:, None], sigma=1.0, observed=y)
    target = compile_model(model)
    split = latent_split(target)
    cg = ConditionalGaussian(target, split, target.initial_point())
    grid = np.linspace(-4.0, 2.0, 241)
    f = evaluate(cg, grid[:, None], rng).log_marginal
    mode, cov = np.array([grid[np.argmax(f)]]), np.array([[0.05]])
    monkeypatch.setattr(rule, "START_SDS", 1.0)
    answer, check, _, n_nodes = rule.hyper_quadrature(cg, mode, cov, rng)
    assert n_nodes > 9 and abs(check[0].estimate.log_z - check[1].estimate.log_z) <= answer.estimate.log_z_se
    assert rule.hyper_quadrature(cg, mode, cov, rng, out_of_time=lambda: True) is None
