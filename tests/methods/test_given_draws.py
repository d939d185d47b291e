"""Draws given as ``posterior=`` that never moved: a single draw, one repeated value (a stuck chain), one stuck
chain among moving ones, a handful of distinct values. Each is a clear pmz error naming the variable and what to
pass instead, for the default and for bridge sampling, never a result: before, a constant InferenceData gave the
default 11.7 nats low, reliable, and a single draw failed inside SMC ("no particle has a finite weight and a finite
U"). prior_sensitivity, which reweights them, flags every row instead (unreliable, se inf, the same reason).

Model: ``pmz.systems.normal_mean`` (mu ~ N(0, 2^2), 20 observations ~ N(mu, 1)), exact log Z; exact posterior
draws of it pass the same checks and give log Z within 4 se (the control). pm.sample is not needed: the draws are
built here.
"""

from __future__ import annotations

import re

import numpy as np
import pymc as pm
import pytest
import xarray as xr

import pmz
from pmz.model.pymc import CompiledModel
from pmz.runners.draws_check import MIN_DISTINCT, check_draws
from pmz.studies import prior_sensitivity


@pytest.fixture(scope="module")
def system():
    return pmz.systems.normal_mean(n_obs=20, prior_sigma=2.0, seed=4)


def _posterior(system):
    """Mean and sd of mu's exact posterior."""
    y = np.asarray(system.model.rvs_to_values[system.model["y"]].data)
    precision = 1 / 2.0**2 + y.size
    return y.sum() / precision, precision**-0.5


def _chains(values):
    """``(chain, draw)`` values of mu as pm.sample's posterior group."""
    return xr.Dataset({"mu": (("chain", "draw"), np.asarray(values, dtype=float))})


def _exact(system, n_chain=4, n_draw=500, seed=1):
    mean, sd = _posterior(system)
    return mean + sd * np.random.default_rng(seed).standard_normal((n_chain, n_draw))


def _cases(system):
    mean, sd = _posterior(system)
    exact = _exact(system)
    one_stuck = exact.copy()
    one_stuck[2] = exact[2, 0]
    return {
        "single-draw": ({"mu": np.array([mean])}, r"1 draw\(s\) given as posterior= are too few"),
        "one-repeated-value": (_chains(np.full((4, 500), mean)), r"chain 0 of the draws given as posterior= never "
                               r"moves: all its 500 draws of mu are"),
        "constant-dict": ({"mu": np.full(2000, mean)}, r"the draws given as posterior= never moves: all its 2000 "
                          r"draws of mu"),
        "one-stuck-chain": (_chains(one_stuck), r"chain 2 of the draws given as posterior= never moves.*drop that "
                            r"chain"),
        "chains-stuck-apart": (_chains(np.repeat(mean + sd * np.array([[-1.0], [0.0], [0.5], [1.0]]), 500, axis=1)),
                               r"chain 0 of the draws given as posterior= never moves"),
        "three-values": ({"mu": np.tile(mean + sd * np.array([-1.0, 0.0, 1.0]), 700)},
                         rf"hold only 3 distinct value\(s\) of mu \(at least {MIN_DISTINCT} needed\)"),
    }


CASES = ["single-draw", "one-repeated-value", "constant-dict", "one-stuck-chain", "chains-stuck-apart", "three-values"]


@pytest.mark.parametrize("method", ["auto", "bridge"])
@pytest.mark.parametrize("case", CASES)
def test_draws_that_never_moved_are_refused(system, case, method):
    draws, match = _cases(system)[case]
    with pytest.raises(ValueError, match=match) as info:
        pmz.evidence(system.model, method=method, posterior=draws, random_seed=1, progressbar=False)
    message = str(info.value)
    assert message.startswith("pmz:") and "leave posterior= out" in message and "pm.sample" in message


@pytest.mark.parametrize("case", CASES)
def test_prior_sensitivity_flags_them(system, case):
    """Reweighting one repeated value would give every alternative prior's ratio with se 0: each row is flagged
    unreliable with an infinite se and the reason."""
    draws, match = _cases(system)[case]
    table = prior_sensitivity((system.log_z, 0.0), system.model, {"wide": {"mu": pm.Normal.dist(0.0, 5.0)}},
                              posterior=draws)
    row = table.loc["wide"]
    assert not row["reliable"] and row["log_z_se"] == np.inf
    assert re.search(match.removeprefix("pmz: "), row["reason"]) and "leave posterior= out" in row["reason"]


def test_a_stuck_coordinate_beside_moving_ones_is_named():
    """Two coordinates; the second never moves: the error names mu[1]."""
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0, shape=2)
        pm.Normal("y", mu, 1.0, observed=np.array([[0.2, -0.4]] * 5))
    draws = np.random.default_rng(2).normal(0.0, 0.4, size=(2, 300, 2))
    draws[..., 1] = -0.3
    with pytest.raises(ValueError, match=r"never moves: all its 300 draws of mu\[1\] are -0\.3 .*1 of 2 continuous"):
        pmz.evidence(m, posterior=xr.Dataset({"mu": (("chain", "draw", "mu_dim_0"), draws)}), random_seed=1,
                     progressbar=False)


def test_the_stein_check_flags_a_constant_coordinate(system):
    """Draws pmz does not refuse up front (pm.sample's inside bridge sampling) meet the Stein check, which flags a
    coordinate that never moves instead of skipping it."""
    compiled = CompiledModel(system.model)
    mean, _ = _posterior(system)
    X = np.full((400, 1), mean)
    check = check_draws(compiled, X, np.repeat(np.arange(4), 100), option="pm.sample")
    assert check is not None and "mu never moves" in check.mismatch


@pytest.mark.parametrize("method", ["auto", "bridge"])
def test_exact_draws_pass_and_are_right(system, method):
    """The control: exact posterior draws in four chains pass, and log Z is within 4 se of the truth."""
    res = pmz.evidence(system.model, method=method, posterior=_chains(_exact(system)), random_seed=1,
                       progressbar=False)
    assert res.reliable, res.reliability_reason
    assert res.log_z_se < 0.05
    assert abs(res.log_z - system.log_z) <= 4 * res.log_z_se + 0.01
