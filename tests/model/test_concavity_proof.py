"""The proof from the graph that the log density is concave in the latents (pmz.model.concavity_proof)."""

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest

from pmz.model.concavity_proof import concavity_proof
from pmz.model.intervals import REALS, Range, point

Y = np.array([1, 2, 0, 3, 4, 0, 1, 1, 2])
GROUP = np.repeat(np.arange(3), 3)


def _model(likelihood, prior="normal"):
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 2.0)
        sigma = pm.HalfNormal("sigma", 1.0)
        if prior == "normal":
            x = pm.Normal("x", mu, sigma, shape=3)
        elif prior == "non_centred":
            x = mu + sigma * pm.Normal("x", 0.0, 1.0, shape=3)
        elif prior == "mv_normal":
            x = pm.MvNormal("x", mu * np.ones(3), cov=np.eye(3) + 0.5)
        elif prior == "car":
            x = pm.CAR("x", mu=mu * np.ones(3), W=np.ones((3, 3)) - np.eye(3), alpha=0.9, tau=1.0 / sigma**2)
        elif prior == "car_exp_mean":
            x = pm.CAR("x", mu=pm.math.exp(mu) * np.ones(3), W=np.ones((3, 3)) - np.eye(3), alpha=0.9, tau=1.0)
        else:
            x = pm.Cauchy("x", mu, sigma, shape=3)
        likelihood(x)
    return model


CONCAVE = {
    "poisson_log_link": lambda x: pm.Poisson("y", mu=pm.math.exp(x[GROUP]), observed=Y),
    "bernoulli_logit": lambda x: pm.Bernoulli("y", logit_p=x[GROUP], observed=(Y > 1).astype(int)),
    "bernoulli_invlogit": lambda x: pm.Bernoulli("y", p=pm.math.invlogit(x[GROUP]), observed=(Y > 1).astype(int)),
    "binomial_logit": lambda x: pm.Binomial("y", n=4, logit_p=x, observed=[1, 2, 3]),
    "normal": lambda x: pm.Normal("y", x[GROUP], 1.0, observed=Y),
    "exponential_log_link": lambda x: pm.Exponential("y", lam=pm.math.exp(x[GROUP]), observed=Y + 1.0),
    "concave_potential": lambda x: pm.Potential("p", -pt.exp(x).sum() + 2.0 * x.sum()),
    # stochastic volatility: -(y / exp(x / 2))^2 / 2 - x / 2, with data of either sign
    "normal_log_scale": lambda x: pm.Normal("y", 0.0, sigma=pm.math.exp(x[GROUP] / 2.0), observed=Y - 1.5),
}
NOT_CONCAVE = {
    "student_t": (lambda x: pm.StudentT("y", nu=3, mu=x[GROUP], sigma=1.0, observed=Y), "log density of y"),
    "abs": (lambda x: pm.Potential("p", -pt.abs(x).sum()), "`abs` in the Potential p"),
    "convex_potential": (lambda x: pm.Potential("p", pt.exp(x).sum()), "a convex term in the Potential p"),
    "switch_on_latents": (lambda x: pm.Potential("p", pt.switch(x > 0, -x, 2 * x).sum()),
                          "the condition of a `switch`"),
    "product_of_latents": (lambda x: pm.Potential("p", -(x[0] * x[1])), "a product of two terms in the latents"),
    # the latents in both the mean and the scale: (y - x) / exp(x) squared is not convex
    "normal_mean_and_log_scale": (lambda x: pm.Normal("y", x[GROUP], sigma=pm.math.exp(x[GROUP]), observed=Y),
                                  "log density of y"),
    # 1 / (1 + exp(x)) is not log-convex: its square is not convex
    "normal_softplus_scale": (lambda x: pm.Normal("y", 0.0, sigma=1.0 + pm.math.exp(x[GROUP]), observed=Y - 1.5),
                              "log density of y"),
}


@pytest.mark.parametrize("name", sorted(CONCAVE))
def test_likelihoods_of_a_linear_predictor_are_proven_concave(name):
    proof = concavity_proof(_model(CONCAVE[name]), ["mu", "x"])
    assert proof.proven, proof.refusal
    assert "concave in mu, x" in proof.proof


@pytest.mark.parametrize("prior", ["non_centred", "mv_normal", "car"])
def test_other_gaussian_priors_keep_the_proof(prior):
    assert concavity_proof(_model(CONCAVE["poisson_log_link"], prior), ["mu", "x"]).proven


@pytest.mark.parametrize("name", sorted(NOT_CONCAVE))
def test_each_failure_refuses_naming_the_term(name):
    likelihood, words = NOT_CONCAVE[name]
    proof = concavity_proof(_model(likelihood), ["mu", "x"])
    assert not proof.proven
    assert words in proof.refusal


def test_a_car_prior_with_a_mean_not_affine_in_the_latents_is_walked_and_refused():
    proof = concavity_proof(_model(CONCAVE["poisson_log_link"], "car_exp_mean"), ["mu", "x"])
    assert not proof.proven and "the prior of x" in proof.refusal


def test_a_cauchy_prior_on_the_latents_is_refused():
    proof = concavity_proof(_model(CONCAVE["poisson_log_link"], prior="cauchy"), ["mu", "x"])
    assert not proof.proven and "the prior of x" in proof.refusal


def test_a_hyperparameter_may_enter_any_way():
    """Curvature is in the latents only: sigma's own prior and exp(log sigma) are constants to the proof."""
    with pm.Model() as model:
        sigma = pm.HalfCauchy("sigma", 1.0)
        x = pm.Normal("x", 0.0, sigma * sigma + pt.abs(sigma), shape=4)
        pm.Poisson("y", mu=pm.math.exp(x), observed=[0, 1, 2, 3])
    assert concavity_proof(model, ["x"]).proven


def test_ranges_decide_the_comparisons_pymc_makes():
    positive = Range(0.0, np.inf, True, True)
    assert positive.disjoint(point(0.0))  # exp(eta) == 0 is false
    assert not Range(0.0, np.inf, False, True).disjoint(point(0.0))
    unit = Range(0.0, 1.0, True, True)
    assert point(0.0).at_most(unit) and unit.at_most(point(1.0))
    assert (positive * positive).positive() and positive.reciprocal().positive()
    assert (-positive).negative() and not (positive + REALS).positive()
