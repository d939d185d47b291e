"""Annealed importance sampling from N(0, I) in whitened coordinates (pmz.runners.latent_ais)."""

import numpy as np

from pmz.runners.latent_ais import anneal_from_gaussian


def test_the_weights_estimate_each_particles_own_normaliser():
    """Each row's target is a Gaussian of its own mean and scale times a constant: int exp(u) = exp(c)."""
    rng = np.random.default_rng(0)
    n, m = 4000, 3
    mean = np.where(np.arange(n)[:, None] % 2 == 0, 0.7, -0.4) * np.ones((n, m))
    scale = np.where(np.arange(n) % 2 == 0, 0.8, 1.3)[:, None] * np.ones((n, m))
    log_c = 2.5

    def u_grad(z):
        r = (z - mean) / scale
        u = log_c - 0.5 * np.sum(r * r, axis=1) - np.sum(np.log(scale), axis=1) - 0.5 * m * np.log(2 * np.pi)
        return u, -r / scale

    paths = anneal_from_gaussian(u_grad, rng.standard_normal((n, m)), 20, 0.6, rng)
    for rows in (slice(0, None, 2), slice(1, None, 2)):
        w = np.exp(paths.log_weights[rows] - log_c)
        se = w.std() / np.sqrt(w.size)
        assert abs(w.mean() - 1.0) < 4 * se + 1e-3
        assert se < 0.02
    assert 0.3 < paths.acceptance <= 1.0
