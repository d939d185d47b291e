"""Chains grouped into modes, a component per mode, and each mode's mass by importance sampling."""

from __future__ import annotations

import numpy as np
import pymc as pm
from scipy.special import logsumexp

from pmz.model import compile_model
from pmz.runners.modes import climb, cluster_chains, fit_mode_components, mode_masses, mode_reference, new_modes


def test_chains_in_one_mode_form_one_cluster():
    """Chains of one (slowly mixing, autocorrelated) mode: their means differ by far less than 3 within-chain sd."""
    rng = np.random.default_rng(2)
    x = np.cumsum(rng.normal(size=(16, 300, 4)) * 0.3, axis=1) * 0.2 + rng.normal(size=(16, 300, 4))
    assert set(cluster_chains(x).tolist()) == {0}


def test_separate_modes_form_their_own_clusters():
    rng = np.random.default_rng(3)
    centres = np.array([[0, 0], [10, 0], [0, 10]])[np.arange(12) % 3]
    x = rng.normal(size=(12, 200, 2)) + centres[:, None, :]
    labels = cluster_chains(x)
    assert labels.max() == 2
    for c in range(3):  # each cluster is exactly the chains of one centre
        assert len(set(map(tuple, centres[labels == c]))) == 1


def _two_bumps(weight_left):
    """x ~ N(0, 10); a Potential making the posterior 0.x N(-4, 0.5^2) + ... N(4, 0.5^2) exactly (log Z = 0)."""
    with pm.Model() as model:
        x = pm.Normal("x", 0, 10)
        left = pm.logp(pm.Normal.dist(-4.0, 0.5), x) + np.log(weight_left)
        right = pm.logp(pm.Normal.dist(4.0, 0.5), x) + np.log(1 - weight_left)
        pm.Potential("bumps", pm.math.logaddexp(left, right) - pm.logp(pm.Normal.dist(0.0, 10.0), x))
    return compile_model(model)


def test_mode_masses_match_the_exact_masses():
    """Chains' draws 3:1 in the modes whose masses are 0.2 and 0.8: the masses come from importance sampling, not
    the chains' proportions; each within 4 se (+0.005) of the truth, and the mixture reference's log Z = 0 check."""
    compiled = _two_bumps(0.2)
    rng = np.random.default_rng(4)
    centre = np.where(np.arange(8) % 4 == 3, 4.0, -4.0)  # 6 chains left, 2 right
    x = (centre[:, None] + 0.5 * rng.normal(size=(8, 400)))[:, :, None]
    labels = cluster_chains(x)
    log_mass, se, khat = mode_masses(compiled, fit_mode_components(x, labels), rng, 4000)
    masses = np.exp(log_mass - logsumexp(log_mass))
    left = labels[0]
    assert abs(masses[left] - 0.2) < 4 * 0.2 * se[left] + 0.005
    assert np.all(khat < 0.7)
    assert abs(logsumexp(log_mass)) < 4 * np.hypot(*se) + 0.005  # the two masses add up to Z = 1
    q, summary = mode_reference(compiled, x, rng)
    assert summary.n_modes == 2 and abs(q.weights[left] - (0.5 * 0.2 + 0.25)) < 0.02  # half mass, half even
    np.testing.assert_allclose(summary.masses_se, np.abs(summary.masses_se))  # finite, non-negative


def test_climb_reaches_the_nearest_peak_and_new_modes_keeps_only_unseen_ones():
    """Climbing from points on both sides of 0, and in the tails, ends at a peak (-4 or 4, within 0.05; a long
    step may carry a point over the valley, so not always the nearer one); the chains sat at -4 only, so the peak
    at 4 is the one new mode, represented once however many points climbed to it."""
    compiled = _two_bumps(0.5)
    starts = np.array([[-7.0], [-2.5], [1.0], [3.0], [9.0], [12.0]])  # (far out, logaddexp underflows: NaN)
    points, values = climb(compiled, starts, np.ones(1))
    np.testing.assert_allclose(np.abs(points[:, 0]), 4.0, atol=0.05)
    assert (points[:, 0] > 0).sum() >= 2
    rng = np.random.default_rng(5)
    chains = (-4.0 + 0.5 * rng.normal(size=(4, 300)))[:, :, None]
    found = new_modes(chains, cluster_chains(chains), points, values)
    assert found.shape == (1, 1) and abs(found[0, 0] - 4.0) < 0.05


def test_curved_components_follow_rings_and_keep_the_masses():
    """Chains on two thin rings (exact draws, 4 chains on each, the left ring of mass 0.25): the mixture by EM per
    ring (``curved=True``) gives importance weights with an ESS above half their draws where one Student-t per
    ring gives one below a fifth; with both, the masses come out 0.25 / 0.75 within 4 se (+0.01) and the
    importance estimate of log Z = 0 within 4 se."""
    import pytensor.tensor as pt

    from pmz.weights import ess, log_mean_weight, log_mean_weight_se

    centres, radius, width = np.array([[-3.0, 0.0], [3.0, 0.0]]), 1.0, 0.05
    log_ring = [np.log(0.25), np.log(0.75)]
    with pm.Model() as model:
        x = pm.Flat("x", shape=2)
        rings = [w - 0.5 * ((pt.sqrt(pt.sum((x - c) ** 2)) - radius) / width) ** 2
                 - np.log(np.sqrt(2 * np.pi) * width * 2 * np.pi * radius) for c, w in zip(centres, log_ring)]
        pm.Potential("rings", pm.math.logaddexp(*rings))
    compiled = compile_model(model)
    rng = np.random.default_rng(5)
    angle = rng.uniform(0, 2 * np.pi, (8, 400))
    r = radius + width * rng.standard_normal((8, 400))
    x = np.stack([r * np.cos(angle), r * np.sin(angle)], axis=2) + centres[np.arange(8) // 4][:, None, :]
    for curved, low, high in [(False, 0.0, 0.2), (True, 0.5, 1.0)]:
        q, summary = mode_reference(compiled, x, rng, curved=curved)
        assert summary.n_modes == 2
        left = summary.labels[0]
        assert abs(summary.masses[left] - 0.25) < 4 * summary.masses_se[left] + 0.01
        Y = q.sample(rng, 20000)
        log_w = np.sum(compiled.log_densities(Y), axis=0) - q.log_density(Y)
        assert low < ess(log_w) / log_w.size < high
        assert abs(log_mean_weight(log_w)) < 4 * log_mean_weight_se(log_w)
