"""EM mixtures chosen by BIC (pmz.model.mixture_fit): they recover a known mixture, follow a ring, and stay small
where the draws are few."""

from __future__ import annotations

import numpy as np

from pmz.model.mixture_fit import DRAWS_PER_NUMBER, fit_mixture, mixture_by_bic
from pmz.model.mixture_reference import MixtureReference
from pmz.model.reference import GaussianReference


def _ring(rng, n, radius=2.0, width=0.1):
    angle = rng.uniform(0.0, 2.0 * np.pi, n)
    r = radius + width * rng.standard_normal(n)
    return np.column_stack([r * np.cos(angle), r * np.sin(angle)])


def _log_ring(X, radius=2.0, width=0.1):
    """The ring's normalised density in the plane: N(|x|; radius, width) / (2 pi radius) (radius >> width)."""
    r = np.sqrt(np.sum(X**2, axis=1))
    return -0.5 * ((r - radius) / width) ** 2 - np.log(np.sqrt(2 * np.pi) * width * 2 * np.pi * radius)


def test_em_recovers_a_known_mixture():
    """Four well separated Gaussians, 4000 draws: BIC picks 4 components, and EM finds their weights within 0.03,
    their means within 0.1 and their variances within 20%."""
    rng = np.random.default_rng(3)
    means = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0], [6.0, 6.0]])
    weights = np.array([0.1, 0.2, 0.3, 0.4])
    sds = np.array([0.5, 1.0, 0.7, 1.2])
    which = rng.choice(4, size=4000, p=weights)
    X = means[which] + sds[which, None] * rng.standard_normal((4000, 2))
    fit = mixture_by_bic(X, rng)
    assert fit.n_components == 4
    order = [int(np.argmin(np.sum((fit.means - m) ** 2, axis=1))) for m in means]
    assert sorted(order) == [0, 1, 2, 3]
    assert np.all(np.abs(fit.weights[order] - weights) < 0.03)
    assert np.all(np.abs(fit.means[order] - means) < 0.1)
    variances = np.array([np.diag(fit.covs[k]) for k in order])
    assert np.all(np.abs(variances / sds[:, None] ** 2 - 1) < 0.2)


def test_a_mixture_follows_a_thin_ring():
    """Draws on a ring of radius 2 and width 0.1: BIC picks at least 8 components, and importance sampling from
    the fitted mixture (components widened by 1.2) has an ESS above half its draws, where one Gaussian fitted to
    the same draws has one below a fifth; both estimate the ring's mass, 1, within 4 se."""
    rng = np.random.default_rng(0)
    X = _ring(rng, 3000)
    fit = mixture_by_bic(X, rng)
    assert fit.n_components >= 8
    q = MixtureReference([GaussianReference(m, 1.44 * c) for m, c in zip(fit.means, fit.covs)], fit.weights)
    one = GaussianReference(X.mean(axis=0), 1.44 * np.cov(X, rowvar=False))
    for reference, low, high in [(q, 0.5, 1.0), (one, 0.0, 0.2)]:
        Y = reference.sample(rng, 20000)
        log_w = _log_ring(Y) - reference.log_density(Y)
        w = np.exp(log_w - log_w.max())
        assert low < w.sum() ** 2 / np.sum(w**2) / w.size < high
        mass = np.mean(np.exp(log_w))
        assert abs(mass - 1.0) < 4 * np.std(np.exp(log_w)) / np.sqrt(w.size)


def test_few_draws_keep_the_mixture_small():
    """At most one component per DRAWS_PER_NUMBER draws per free number of a component: 120 draws in 2-D (6
    numbers a component) allow 2, and 50 allow only 1, however curved the draws."""
    rng = np.random.default_rng(1)
    assert mixture_by_bic(_ring(rng, 2 * DRAWS_PER_NUMBER * 6), rng).n_components <= 2
    assert mixture_by_bic(_ring(rng, 50), rng).n_components == 1


def test_repeated_draws_do_not_collapse_a_component():
    """A chain stuck at one point gives many equal draws: the covariance floor keeps every component positive
    definite and the fit finite."""
    rng = np.random.default_rng(2)
    X = np.concatenate([np.zeros((500, 3)), rng.standard_normal((500, 3)) + 5.0])
    fit = fit_mixture(X, 4, rng)
    assert np.isfinite(fit.mean_log_density)
    assert np.all(np.linalg.eigvalsh(fit.covs) > 0)


def test_fewer_draws_than_coordinates_give_one_finite_component():
    """30 draws in 40 dimensions (a cluster of one short chain in many dimensions): one component, positive
    definite by its floor, with a finite fit."""
    rng = np.random.default_rng(3)
    fit = mixture_by_bic(rng.standard_normal((30, 40)), rng)
    assert fit.n_components == 1 and np.isfinite(fit.mean_log_density)
    assert np.all(np.linalg.eigvalsh(fit.covs) > 0)
