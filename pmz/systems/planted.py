"""Posteriors with a mode planted where a sampler may miss it, and products of double wells; exact log Z.

**A planted mode** (:func:`planted_mode`): in ``dim`` coordinates, prior ``x ~ N(0, tau^2 I)`` and a likelihood
(a ``pm.Potential``) that is a mixture of two Gaussian bumps,

    L(x) = w_1 N(x; 0, I) + w_2 N(x; mu, s^2 I),     mu = separation * u   (u a random unit vector),

a main mode of sd 1 at the origin and a planted one ``1 / s = width_ratio`` times narrower, ``separation`` main sd
away. Each bump integrates against the prior in closed form, ``int N(x; 0, tau^2 I) N(x; m, s^2 I) dx =
N(m; 0, (tau^2 + s^2) I)``, so ``Z = w_1 N(0; 0, (tau^2 + 1) I) + w_2 N(mu; 0, (tau^2 + s^2) I)``; the weights are
chosen so that the planted mode holds exactly ``mass`` of the posterior (and ``log Z = 0``). ``tau`` is 1.5 times the
separation (at least 3): the planted mode lies well inside the prior.

**Double wells** (:func:`double_wells`): ``x ~ N(0, tau^2)`` in ``n_wells + n_flat`` coordinates; each of the first
``n_wells`` has a likelihood ``w N(x; -a, s^2) + (1 - w) N(x; a, s^2)`` (two wells of unequal mass), each of the rest
``exp(-(x - 1)^2 / 2)``. The posterior is a product: ``2^n_wells`` modes of unequal mass, and ``log Z`` is a sum of
one-dimensional closed forms. With 16 wells and 16 flat coordinates it is the 32-D, 65,536-mode product the default
must answer in seconds (no list of modes can).

The likelihoods are written with ``pm.math.logsumexp`` (whose gradient stays finite far from both bumps, where
``logaddexp``'s does not).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
import pytensor.tensor as pt
from scipy.special import logsumexp

from ..records import KnownTruth

__all__ = ["planted_mode", "double_wells"]

_LOG_2PI = float(np.log(2.0 * np.pi))


def _log_normal_at(point, var) -> float:
    """``log N(point; 0, var I)``."""
    point = np.asarray(point, dtype=float)
    return float(-0.5 * (point @ point / var + point.size * (_LOG_2PI + np.log(var))))


def planted_mode(dim: int = 2, mass: float = 0.05, width_ratio: float = 1.0, separation: float = 30.0,
                 seed: int = 0) -> KnownTruth:
    """A main mode and a planted mode holding ``mass`` of the posterior (module docstring); ``log_z`` is 0.

    Parameters
    ----------
    dim : int
        Coordinates.
    mass : float in (0, 1)
        Posterior mass of the planted mode.
    width_ratio : float >= 1
        The main mode's sd (1) over the planted mode's.
    separation : float > 0
        Distance between the modes, in the main mode's sd.
    seed : int
        Seed of the planted mode's direction.

    >>> planted_mode(2, 0.05, 10.0, 30.0).log_z
    0.0
    """
    if not (0.0 < mass < 1.0 and width_ratio >= 1.0 and separation > 0 and dim >= 1):
        raise ValueError("planted_mode needs 0 < mass < 1, width_ratio >= 1, separation > 0 and dim >= 1")
    direction = np.random.default_rng(seed).standard_normal(dim)
    mu = separation * direction / np.linalg.norm(direction)
    s, tau = 1.0 / width_ratio, max(1.5 * separation, 3.0)
    # log w_j = log(posterior mass_j) - log(prior predictive of bump j): then Z = sum_j mass_j = 1
    log_w = (np.log1p(-mass) - _log_normal_at(np.zeros(dim), tau**2 + 1.0),
             np.log(mass) - _log_normal_at(mu, tau**2 + s**2))
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, tau, shape=dim)

        def bump(centre, sd, lw):
            return lw - 0.5 * pt.sum((x - centre) ** 2) / sd**2 - dim * (np.log(sd) + 0.5 * _LOG_2PI)

        pm.Potential("likelihood", pm.math.logsumexp(pt.stack([bump(np.zeros(dim), 1.0, log_w[0]),
                                                               bump(mu, s, log_w[1])])))
    name = f"planted_d{dim}_m{mass:g}_r{width_ratio:g}_s{separation:g}"
    return KnownTruth(model, 0.0, name)


def double_wells(n_wells: int = 16, n_flat: int = 16, *, a: float = 2.0, s: float = 0.3, w: float = 0.7,
                 tau: float = 3.0) -> KnownTruth:
    """A product of ``n_wells`` double wells and ``n_flat`` Gaussian coordinates (module docstring).

    >>> round(double_wells(2, 1).log_z, 6)
    -5.686389
    """
    with pm.Model() as model:
        x = pm.Normal("x", 0.0, tau, shape=n_wells + n_flat)
        wells = x[:n_wells]
        const = np.log(s) + 0.5 * _LOG_2PI
        left = np.log(w) - 0.5 * ((wells + a) / s) ** 2 - const
        right = np.log1p(-w) - 0.5 * ((wells - a) / s) ** 2 - const
        pm.Potential("wells", pt.sum(pm.math.logsumexp(pt.stack([left, right]), axis=0)))
        pm.Potential("flat", -0.5 * pt.sum((x[n_wells:] - 1.0) ** 2))
    var = tau**2 + s**2
    one_well = logsumexp([np.log(w) + _log_normal_at([-a], var), np.log1p(-w) + _log_normal_at([a], var)])
    one_flat = 0.5 * _LOG_2PI + _log_normal_at([1.0], tau**2 + 1.0)
    return KnownTruth(model, float(n_wells * one_well + n_flat * one_flat), f"double_wells_{n_wells}_{n_flat}")
