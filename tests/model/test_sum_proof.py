"""The sum route proves that it summed the whole support, or puts what it may miss into the se (issue 46).

Every model here has every free variable discrete, so only the sum route can answer it (or hand over). The exact
log Z of each is a sum with scipy over a range outside which the mass is bounded analytically (or over the whole
finite support). Each answer is within 4 se (+1e-9) of it, and either exact (se 0) with a proof in the result, or
carries an se > 0 and no proof; where the mass beyond the summed values may be large, the result is flagged.
"""

from __future__ import annotations

import warnings

import numpy as np
import pymc as pm
import pytest
from scipy import special, stats

import pmz
from pmz.systems.shortcut_hazards import two_bumps, two_bumps_np
from pmz.model.discrete_sum import discrete_enumeration, enumeration_refusal
from pmz.model.pymc import CompiledModel

SEED = 46
TOL = 1e-9
F64 = np.float64  # PyTensor stores a Python float constant as float32


def _evidence(model):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pmz.evidence(model, random_seed=SEED, progressbar=False)


def _check(res, truth, *, proven: bool):
    """The sum route's answer: within 4 se (+1e-9) of the truth; se 0 exactly when a proof is given."""
    ev = res["evidence_stats"]
    proof = ev.attrs.get("proof") or ""
    assert res.run_attrs["route"] == "sum", ev.attrs["route_reason"]
    assert abs(res.log_z - truth) <= 4 * res.log_z_se + TOL, (res.log_z, truth, res.log_z_se)
    assert (res.log_z_se == 0.0) == bool(proof), (res.log_z_se, proof)
    assert bool(proof) == proven, (proof, ev.attrs["route_reason"])
    return proof, ev.attrs["route_reason"]


def test_bounded_support_with_a_far_second_mode_is_summed_whole():
    """(a) k ~ DiscreteUniform(0, 5000) under two bumps 2000 values apart: all 5001 values are summed (a window grown
    from the initial point saw one bump: log 2 short), exact with the whole-support proof. PyMC writes the uniform's
    log pmf in float32, so the truth uses the same constant."""
    with pm.Model() as model:
        k = pm.DiscreteUniform("k", 0, 5000)
        pm.Potential("lik", two_bumps(k, 1000.0, 3000.0, 30.0))
    ks = np.arange(5001)
    truth = float(special.logsumexp(two_bumps_np(ks, 1000.0, 3000.0, 30.0)) - np.float32(np.log(5001.0)))
    proof, reason = _check(_evidence(model), truth, proven=True)
    assert "whole support" in proof and "5001 joint values" in reason


def test_categorical_with_5000_classes_is_summed_whole():
    """(b) a Categorical with 5000 equal classes under two bumps: every class summed, exact."""
    p = np.full(5000, 1.0 / 5000)
    with pm.Model() as model:
        k = pm.Categorical("k", p)
        pm.Potential("lik", two_bumps(k, 700.0, 4100.0, 20.0))
    ks = np.arange(5000)
    truth = float(special.logsumexp(np.log(p) + two_bumps_np(ks, 700.0, 4100.0, 20.0)))
    proof, _ = _check(_evidence(model), truth, proven=True)
    assert "whole support" in proof


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_negative_binomial_with_a_far_mode_and_a_slow_tail_is_proven():
    """(c) k ~ NegativeBinomial(mu=2000, alpha=0.2) (a slow tail: the pmf falls by 1e-4 per value) and eight counts
    y ~ 0.5 Poisson(k) + 0.5 Poisson(k / 500), all 12: modes near 12 and 6000, a dip of ~50 nats between them. Both
    are summed, and the rest is proven negligible (counts: the likelihood is at most 1; the prior's ratio at most
    1 - p). The truth sums 0..3e6: beyond, the mass is below the prior's tail P(K > 3e6) < exp(-250)."""
    y = np.full(8, 12)
    with pm.Model() as model:
        k = pm.NegativeBinomial("k", mu=F64(2000.0), alpha=F64(0.2))
        comps = [pm.Poisson.dist(k), pm.Poisson.dist(k / F64(500.0))]
        pm.Mixture("y", w=np.array([0.5, 0.5]), comp_dists=comps, observed=y)
    ks = np.arange(0, 3_000_001)
    n, q = 0.2, 0.2 / 2000.2
    assert stats.nbinom.logsf(ks[-1], n, q) < -250
    lik = sum(np.logaddexp(np.log(0.5) + stats.poisson.logpmf(v, ks), np.log(0.5) + stats.poisson.logpmf(v, ks / 500))
              for v in y)
    log_terms = stats.nbinom.logpmf(ks, n, q) + lik
    truth = float(special.logsumexp(log_terms))
    near = float(special.logsumexp(log_terms[:100]))
    assert truth - near > 0.1  # the far mode holds more than a tenth of the mass
    proof, reason = _check(_evidence(model), truth, proven=True)
    assert "bound on the rest" in proof and "NegativeBinomial" in proof
    assert "1 found" in reason or "far modes: 2 found" in reason


def test_geometric_with_a_far_mode_under_a_potential_carries_an_se():
    """(c) k ~ Geometric(0.01) under a pm.Potential with bumps at 50 and 1500 (the window from the initial point
    sees one: 0.6 nats short before). The far mode is found and summed; a Potential's maximum cannot be read, so
    no bound is proven: se > 0 (the grid's estimate of the rest), no proof, and right within it. The truth sums
    1..1e5 (beyond, the prior's mass is (0.99)^1e5 < e^-1000 and the Potential is at most log 2)."""
    with pm.Model() as model:
        k = pm.Geometric("k", F64(0.01))
        pm.Potential("lik", two_bumps(k, 50.0, 1500.0, 5.0))
    ks = np.arange(1, 100_000)
    truth = float(special.logsumexp(stats.geom.logpmf(ks, 0.01) + two_bumps_np(ks, 50.0, 1500.0, 5.0)))
    res = _evidence(model)
    _, reason = _check(res, truth, proven=False)
    assert 0 < res.log_z_se < 1e-6 and res.reliable
    assert "could not be bounded" in reason and "1 found" in reason


def test_easy_poisson_window_is_fast_and_proven():
    """A Poisson(1000) count observed through y ~ N(k, 1) = 1100: one window, the rest proven negligible (the
    normal density is at most 1/sqrt(2 pi), the Poisson's ratio mu/(k+1) < 1 beyond the window); the posterior
    draws follow the exact posterior mean."""
    with pm.Model() as model:
        k = pm.Poisson("k", F64(1000.0))
        pm.Normal("y", k, F64(1.0), observed=F64(1100.0))
    ks = np.arange(0, 4001)
    log_terms = stats.poisson.logpmf(ks, 1000.0) + stats.norm.logpdf(1100.0, ks, 1.0)
    truth = float(special.logsumexp(log_terms))
    post = np.exp(log_terms - truth)
    mean, sd = float(np.sum(ks * post)), float(np.sqrt(np.sum((ks - np.sum(ks * post)) ** 2 * post)))
    res = _evidence(model)
    proof, _ = _check(res, truth, proven=True)
    assert "Poisson(1000)" in proof and "normal density" in proof
    draws = res["posterior"]["k"].values.ravel()
    assert abs(draws.mean() - mean) < 4 * sd / np.sqrt(draws.size)


@pytest.mark.parametrize("likelihood", ["potential", "student_t"])
def test_unprovable_tail_gets_an_se_and_no_proof(likelihood):
    """The same kind of count where no bound can be proven: a pm.Potential, or an observed Student-t (whose maximum
    pmz does not read): se > 0, no proof, right within the se. Truth: 0..2000 (the Poisson(50)'s mass beyond is
    below e^-1500 and both likelihoods are at most 1)."""
    with pm.Model() as model:
        k = pm.Poisson("k", F64(50.0))
        if likelihood == "potential":
            pm.Potential("lik", -0.5 * ((k - 60.0) / 3.0) ** 2)
        else:
            pm.StudentT("y", nu=F64(4.0), mu=k, sigma=F64(3.0), observed=F64(60.0))
    ks = np.arange(0, 2001)
    lik = -0.5 * ((ks - 60.0) / 3.0) ** 2 if likelihood == "potential" else stats.t.logpdf(60.0, 4.0, ks, 3.0)
    truth = float(special.logsumexp(stats.poisson.logpmf(ks, 50.0) + lik))
    res = _evidence(model)
    _, reason = _check(res, truth, proven=False)
    assert res.log_z_se > 0 and "could not be bounded" in reason


def test_mass_beyond_the_windows_that_may_be_large_is_flagged():
    """A geometric count whose summand, besides a bump at 10, has a plateau 42 nats lower from k = 1e6 on (below
    the window's tolerance, so no far mode, but spread over ~1e17 values): the grid's estimate of the mass beyond
    the window is a large share of the sum, which cannot be summed within 2^20 values: flagged unreliable, se > 0,
    no proof."""
    with pm.Model() as model:
        k = pm.Geometric("k", F64(1e-17), initval=10)
        pm.Potential("lik", pm.math.switch(pm.math.gt(k, 1e6), F64(-42.0), -0.5 * ((k - 10.0) / 2.0) ** 2))
    res = _evidence(model)
    ev = res["evidence_stats"]
    assert res.run_attrs["route"] == "sum", ev.attrs["route_reason"]
    assert res.reliable is False and "estimated at" in res.reliability_reason
    assert res.log_z_se > 0 and not ev.attrs.get("proof")


@pytest.mark.slow  # moved from the quick tier (under 5 minutes); CI runs it on both stacks
@pytest.mark.both_stacks
def test_far_mode_too_wide_to_sum_hands_over_with_a_reason():
    """A Geometric(1e-12) count (nearly flat out to 1e12) under a Potential with a bump at 10 and a broad one (sd
    1e7) at 1e9, nothing between 300 and 1e6: the far mode is found but its window needs more values than the sum
    may take: no enumeration, and the reason says so."""
    with pm.Model() as model:
        k = pm.Geometric("k", F64(1e-12), initval=10)
        broad = pm.math.switch(pm.math.gt(k, 1e6), -0.5 * ((k - 1e9) / 1e7) ** 2, F64(-1e4))
        pm.Potential("lik", pm.math.logaddexp(-0.5 * ((k - 10.0) / 2.0) ** 2, broad))
    compiled = CompiledModel(model)
    assert discrete_enumeration(compiled) is None
    assert "far mode" in enumeration_refusal(compiled)


def test_bounded_support_too_large_to_enumerate_is_not_summed():
    """A DiscreteUniform over 3e6 values: more than the 2^20 joint values the sum may take, so it is not summed
    (no window over a part of a bounded support)."""
    with pm.Model() as model:
        k = pm.DiscreteUniform("k", 0, 3_000_000)
        pm.Potential("lik", -0.5 * ((k - 10.0) / 2.0) ** 2)
    compiled = CompiledModel(model)
    assert discrete_enumeration(compiled) is None
    assert "bounded supports" in enumeration_refusal(compiled)
