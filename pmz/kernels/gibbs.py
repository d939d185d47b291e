"""Batched Gibbs kernels for discrete sites, and their composition with a continuous kernel.

:class:`SiteGibbs` updates discrete coordinates one site at a time, for every particle at once:

* a site with a finite value set ``{v_1..v_q}`` (Bernoulli, Categorical, +-1 spins) is drawn from its exact
  conditional ``p(x_j = v | x_-j) ∝ f_beta(x_-j, x_j = v)`` (heat bath): the q candidate states of all particles
  are evaluated in ONE batched log-density call of ``q n`` rows;
* a site with a large or unbounded integer support (Poisson, Binomial with a free n, a Categorical with more than
  64 classes, ...) gets a Metropolis flip ``x_j -> x_j +- 1`` (symmetric; states outside the support have log
  density -inf and are rejected). Where the support's bounds are known, proposals outside them are rejected
  without being evaluated (a variable used as an index, ``mu[k]``, would index out of range there), and a finite
  support also gets a second Metropolis move per sweep, a uniform proposal over all its values (symmetric), so
  that a categorical site with many classes is not left to a random walk.

Both leave ``f_beta`` invariant for a scalar or per-particle beta. The generic sampler costs one batched call per
site and sweep; models with structure (bipartite RBMs, lattices) ship faster exact kernels (block Gibbs,
checkerboard heat bath) in :mod:`pmz.systems`.

:class:`MixedKernel` composes a discrete sweep with a continuous kernel (HMC or random-walk Metropolis) that
moves only the continuous coordinates, for PyMC models with both kinds of free variables. A composition of
kernels that each leave ``f_beta`` invariant leaves it invariant.
"""

from __future__ import annotations

import numpy as np

from .base import Kernel, KernelInfo, KernelParams, ParticleState

__all__ = ["SiteGibbs", "MixedKernel"]


def sample_categorical(rng, log_p):
    """One draw per row of unnormalised log probabilities ``log_p (n, q)`` (inverse CDF, vectorised)."""
    log_p = np.where(np.isnan(log_p), -np.inf, log_p)
    m = np.max(log_p, axis=1, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    cdf = np.cumsum(np.exp(log_p - m), axis=1)
    u = rng.uniform(size=(log_p.shape[0], 1)) * cdf[:, -1:]
    return np.minimum(np.sum(cdf < u, axis=1), log_p.shape[1] - 1)


class SiteGibbs(Kernel):
    """Site-by-site Gibbs (heat bath) on discrete coordinates; Metropolis +-1 flips where the support is unbounded.

    Parameters
    ----------
    sites : sequence of int
        Coordinates of the flat state to update, in this order every sweep.
    values : sequence of (array or None)
        For each site, the values it can take (exact conditional), or None (Metropolis moves).
    bounds : sequence of (low, high), optional
        For each site, the smallest and largest value it can take (``-inf`` / ``inf`` for an unbounded side); used
        by the Metropolis moves of sites without a value set. Default: unbounded.
    needs_grad : bool
        Whether the returned states must carry gradients (when composed with HMC).
    """

    name = "gibbs"
    needs_grad = False
    tunable = False
    target_acceptance = 1.0

    def __init__(self, sites, values, *, bounds=None, needs_grad: bool = False):
        self.sites = [int(s) for s in sites]
        if len(values) != len(self.sites):
            raise ValueError("need one value set (or None) per site")
        self.values = [None if v is None else np.asarray(v, dtype=np.float64) for v in values]
        bounds = [(-np.inf, np.inf)] * len(self.sites) if bounds is None else list(bounds)
        if len(bounds) != len(self.sites):
            raise ValueError("need one (low, high) pair per site")
        self.bounds = [(float(lo), float(hi)) for lo, hi in bounds]
        self.needs_grad = bool(needs_grad)

    @classmethod
    def for_base(cls, base) -> "SiteGibbs":
        """Heat bath on every site of an energy model whose base lists the site ``values``."""
        return cls(range(base.dim), [base.values] * base.dim)

    def default_params(self, dim):
        return KernelParams(step_size=1.0, scale=np.ones(dim), n_leapfrog=0)

    @staticmethod
    def _metropolis(rng, x, log_now, site, value, low, high, family, b):
        """One symmetric Metropolis move of ``site`` to ``value`` (per particle); values outside [low, high] are
        rejected without evaluating them. Returns the new states, their log densities and the acceptance
        probabilities."""
        n = x.shape[0]
        inside = (value >= low) & (value <= high)
        proposal = x.copy()
        proposal[:, site] = np.where(inside, value, x[:, site])
        log_new = family.parts(proposal).log_density(b)
        with np.errstate(invalid="ignore"):
            log_ratio = np.where(inside & np.isfinite(log_new), log_new - log_now, -np.inf)
        acc = np.log(rng.uniform(size=n)) < log_ratio
        x = np.where(acc[:, None], proposal, x)
        log_now = np.where(acc, log_new, log_now)
        return x, log_now, np.exp(np.minimum(log_ratio, 0.0))

    def step(self, rng, state, family, beta, params=None):
        x = state.x.copy()
        n = x.shape[0]
        b = np.asarray(beta, dtype=np.float64)
        accepted_all = np.ones(n, dtype=bool)
        acceptance_sum = np.zeros(n)
        log_now = state.parts.log_density(b)
        for site, vals, (low, high) in zip(self.sites, self.values, self.bounds):
            if vals is None:  # Metropolis: a +-1 flip, and a uniform jump where the support is finite
                moves = [x[:, site] + rng.choice([-1.0, 1.0], size=n)]
                if np.isfinite(low) and np.isfinite(high):
                    moves.append(np.floor(low + rng.uniform(size=n) * (high - low + 1.0)).clip(low, high))
                for value in moves:
                    x, log_now, acc_prob = self._metropolis(rng, x, log_now, site, value, low, high, family, b)
                    acceptance_sum += acc_prob / len(moves)
                continue
            q = vals.size
            candidates = np.repeat(x[None], q, axis=0)  # (q, n, dim)
            candidates[:, :, site] = vals[:, None]
            log_c = family.parts(candidates.reshape(q * n, -1)).log_density(
                np.broadcast_to(b, (q, n)).ravel() if b.ndim else b
            )
            log_c = log_c.reshape(q, n).T  # (n, q)
            pick = sample_categorical(rng, log_c)
            x[:, site] = vals[pick]
            log_now = log_c[np.arange(n), pick]
            acceptance_sum += 1.0
        new = ParticleState(x, family.parts(x, grad=self.needs_grad))
        n_sites = max(len(self.sites), 1)
        return new, KernelInfo(acceptance_sum / n_sites, accepted_all)


class MixedKernel(Kernel):
    """A discrete sweep (:class:`SiteGibbs`) followed by a continuous kernel on the continuous coordinates.

    The continuous kernel's ``scale`` is set to zero on the discrete coordinates, so HMC and random-walk
    Metropolis leave them unchanged; its step size is tuned as usual (``target_acceptance`` is the continuous
    kernel's). ``info`` reports the continuous kernel's acceptance.
    """

    tunable = True

    def __init__(self, discrete: SiteGibbs, continuous: Kernel, continuous_mask):
        self.discrete = discrete
        self.continuous = continuous
        self.mask = np.asarray(continuous_mask, dtype=bool)
        self.name = f"{discrete.name}+{continuous.name}"
        self.needs_grad = continuous.needs_grad
        self.target_acceptance = continuous.target_acceptance
        discrete.needs_grad = continuous.needs_grad

    def default_params(self, dim):
        params = self.continuous.default_params(int(self.mask.sum()))
        return self._embed(params)

    def _embed(self, params):
        s = np.asarray(params.scale, dtype=np.float64)
        if s.ndim == 2:  # one row per particle (particles at different temperatures)
            return KernelParams(params.step_size, np.where(self.mask, s, 0.0), params.n_leapfrog)
        scale = np.zeros(self.mask.size)
        scale[self.mask] = s[self.mask] if s.size == self.mask.size else s
        return KernelParams(params.step_size, scale, params.n_leapfrog)

    def step(self, rng, state, family, beta, params):
        state, _ = self.discrete.step(rng, state, family, beta)
        return self.continuous.step(rng, state, family, beta, self._embed(params))
