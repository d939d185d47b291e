"""Where reverse paths start: draws of the target p1 in the flat value space.

Reverse AIS (and the reverse half of BAR and bridge sampling) needs draws of the posterior p1. In order of
preference (Habeck 2017 section 3; METHODS.md section 1):

* ``posterior_to_flat``: draws the user already has (an ``InferenceData`` from ``pm.sample``), mapped to the
  flat unconstrained space;
* ``nuts_draws``: a ``pm.sample`` NUTS run made for them;
* ``hmc_starts``: pmz's many-chain HMC (one compiled call per leapfrog step for all chains), the default;
* ``resampled_starts``: forward end states resampled by their weights. Cheap, but the reverse run then
  inherits the forward run's bias (and BAR's two halves are no longer independent); results say so.
"""

from __future__ import annotations

import numpy as np

from ..inference_data import ess_bulk, is_inference_data, posterior_group
from ..weights import systematic_resample

__all__ = ["posterior_to_flat", "nuts_draws", "hmc_starts", "resampled_starts", "chain_ess"]


def _posterior_group(posterior):
    if is_inference_data(posterior):  # pm.sample's InferenceData (PyMC 5) or DataTree (PyMC 6), or its node
        return posterior_group(posterior)
    return posterior  # an xarray Dataset or a dict of arrays


def posterior_to_flat(compiled, posterior, n: int | None = None):
    """Flat unconstrained particles from posterior draws, thinned evenly to at most ``n``.

    Parameters
    ----------
    compiled : CompiledModel
    posterior : pm.sample result (arviz.InferenceData or xarray.DataTree) or its posterior group, an
        xarray.Dataset with dims (chain, draw, ...), or a dict ``name -> (n, ...)``
    n : int, optional
        Keep at most this many draws (evenly spaced, all chains).

    Returns
    -------
    X : ndarray (m, dim)
    chain : ndarray (m,) of int
        Chain index of each kept draw (for effective sample sizes).
    """
    post = _posterior_group(posterior)
    names = [rv.name for rv in compiled.model.free_RVs]
    if isinstance(post, dict):
        draws = {name: np.asarray(post[name]) for name in names if name in post}
        total = len(next(iter(draws.values()))) if draws else 0
        chain = np.zeros(total, dtype=int)
    else:
        missing = [name for name in names if name not in post]
        if missing:
            raise ValueError(f"pmz: the posterior draws lack the free variable(s) {missing}")
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        draws = {name: np.asarray(post[name]).reshape(n_chain * n_draw, *post[name].shape[2:]) for name in names}
        total = n_chain * n_draw
        chain = np.repeat(np.arange(n_chain), n_draw)
    if total == 0:
        raise ValueError("pmz: no posterior draws given")
    keep = np.arange(total) if n is None or n >= total else np.round(np.linspace(0, total - 1, n)).astype(int)
    X = compiled.from_constrained({name: v[keep] for name, v in draws.items()})
    return X, chain[keep]


def nuts_draws(compiled, n: int, rng: np.random.Generator, *, chains: int = 2, tune: int = 1000, progressbar=False):
    """``n`` posterior draws from PyMC's ``pm.sample`` (NUTS), as flat particles, and the InferenceData."""
    import logging

    import pymc as pm

    draws_per_chain = int(np.ceil(n / chains))
    logger = logging.getLogger("pymc")
    level = logger.level
    if not progressbar:  # quiet runs stay quiet
        logger.setLevel(logging.WARNING)
    try:
        with compiled.model:
            idata = pm.sample(
                draws=draws_per_chain,
                tune=tune,
                chains=chains,
                cores=1,
                random_seed=int(rng.integers(0, 2**31 - 1)),
                progressbar=progressbar,
                compute_convergence_checks=False,
            )
    finally:
        logger.setLevel(level)
    X, chain = posterior_to_flat(compiled, idata)
    return X[:n], chain[:n], idata


def hmc_starts(compiled, n: int, rng: np.random.Generator, *, n_chains: int = 32, thin: int = 4) -> np.ndarray:
    """``n`` posterior draws from pmz's many-chain HMC (:func:`pmz.auto.sampler.sample_posterior`), every
    ``thin``-th draw of each chain after warm-up, so that the reverse starts are nearly independent."""
    from ..auto.sampler import sample_posterior

    per_chain = int(np.ceil(n / n_chains))
    draws = sample_posterior(compiled, rng, n_chains=n_chains, n_draws=per_chain * thin)
    X = draws.x[:, thin - 1 :: thin].transpose(1, 0, 2).reshape(-1, compiled.dim)  # draw-major: all chains early
    return X[:n]


def resampled_starts(forward, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` forward end states resampled (systematic) by their weights: approximate draws of p1."""
    if forward.final_x is None:
        raise ValueError("pmz: resampled reverse starts need the forward run's final states (keep_particles=True)")
    index = systematic_resample(rng, forward.log_weights, n)
    return forward.final_x[index]


def chain_ess(values, chain) -> float:
    """Effective sample size of a scalar quantity over MCMC draws grouped by chain (ArviZ's rank-normalised ESS)."""
    values = np.asarray(values, dtype=float)
    chain = np.asarray(chain)
    ids = np.unique(chain)
    length = min(int(np.sum(chain == c)) for c in ids)
    if length < 4:
        return float(values.size)
    stacked = np.stack([values[chain == c][:length] for c in ids])
    ess = ess_bulk(stacked)
    return float(np.clip(ess, 1.0, values.size)) if np.isfinite(ess) else float(values.size)
