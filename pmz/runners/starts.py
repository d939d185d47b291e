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

from collections.abc import Mapping

import numpy as np
import xarray as xr

from ..inference_data import ess_bulk, group_names, is_inference_data, posterior_group
from ..weights import systematic_resample

__all__ = ["posterior_to_flat", "is_draws", "DRAW_KINDS", "nuts_draws", "hmc_starts", "resampled_starts", "chain_ess"]

DRAW_KINDS = (
    "pm.sample's result (InferenceData or DataTree), its posterior group (an xarray.Dataset with dims chain, draw, "
    "...) or a dict {name: array (n, ...)}"
)


def is_draws(obj) -> bool:
    """Whether ``obj`` is one of the kinds of posterior draws :func:`posterior_to_flat` reads."""
    return is_inference_data(obj) or isinstance(obj, xr.Dataset | Mapping)


def _posterior_group(posterior, option: str):
    if is_inference_data(posterior):  # pm.sample's InferenceData (PyMC 5) or DataTree (PyMC 6), or its node
        try:
            return posterior_group(posterior)
        except ValueError:
            raise ValueError(
                f"pmz: the draws given as {option}= have no 'posterior' group (groups: {group_names(posterior)}); "
                "pass pm.sample's result or its posterior group"
            ) from None
    if not isinstance(posterior, xr.Dataset | Mapping):
        raise TypeError(f"pmz: {option}= must be {DRAW_KINDS}; got {type(posterior).__name__}")
    return posterior  # an xarray Dataset or a dict of arrays


def _draw_shapes(compiled) -> dict[str, tuple]:
    """Shape of one draw of each free variable on its own (constrained) scale, as pm.sample stores it."""
    shapes, unknown = {}, []
    for rv in compiled.model.free_RVs:
        if None in rv.type.shape:  # a symbolic dimension (dims from mutable coords): evaluate it once
            unknown.append(rv.name)
        else:
            shapes[rv.name] = tuple(int(d) for d in rv.type.shape)
    if unknown:
        values = compiled.to_constrained(compiled.initial_point()[None])
        shapes.update({name: tuple(values[name].shape[1:]) for name in unknown})
    return shapes


def _named_draws(compiled, post, option: str):
    """``{name: (n, *shape)}`` for every free variable and the chain of each draw; errors name what is wrong."""
    names = [rv.name for rv in compiled.model.free_RVs]
    missing = [name for name in names if name not in post]
    if missing:
        raise ValueError(
            f"pmz: the draws given as {option}= lack the free variable(s) {missing} of the model "
            f"(they hold {sorted(map(str, post))}); pass draws of this model's variables"
        )
    if not isinstance(post, xr.Dataset):  # a dict (an xarray Dataset is a Mapping too)
        draws = {name: np.asarray(post[name]) for name in names}
        counts = {name: (v.shape[0] if v.ndim else 0) for name, v in draws.items()}
        if len(set(counts.values())) > 1:
            raise ValueError(
                f"pmz: the draws given as {option}= have different numbers of draws per variable {counts}; "
                "a dict holds arrays (n, ...) with the same n, the draw index first"
            )
        chain = np.zeros(next(iter(counts.values())), dtype=int)
        layout = "a dict holds arrays (n, *shape), the draw index first (an xarray Dataset: (chain, draw, *shape))"
        where = "draw {}".format
    else:
        for name in names:
            if post[name].dims[:2] != ("chain", "draw"):
                raise ValueError(
                    f"pmz: the draws of {name!r} given as {option}= have dims {post[name].dims}; pmz reads "
                    "(chain, draw, ...) as pm.sample stores them"
                )
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        draws = {name: np.asarray(post[name]).reshape(n_chain * n_draw, *post[name].shape[2:]) for name in names}
        chain = np.repeat(np.arange(n_chain), n_draw)
        layout = "pmz reads dims (chain, draw, *shape)"

        def where(i):
            return f"chain {i // n_draw}, draw {i % n_draw}"

    if chain.size == 0:
        raise ValueError(f"pmz: no posterior draws given as {option}=")
    shapes = _draw_shapes(compiled)
    for name, values in draws.items():
        if values.dtype.kind not in "biuf":
            raise TypeError(f"pmz: the draws of {name!r} given as {option}= hold {values.dtype} values, not numbers")
        if values.shape[1:] != shapes[name]:
            raise ValueError(
                f"pmz: each draw of {name!r} given as {option}= has shape {values.shape[1:]}, but the model's "
                f"{name!r} has shape {shapes[name]}; {layout}"
            )
        bad = ~np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
        if bad.any():
            raise ValueError(
                f"pmz: {int(bad.sum())} of the {values.shape[0]} draws of {name!r} given as {option}= are NaN or "
                f"inf (the first at {where(int(np.argmax(bad)))}); drop them or check the sampler that made them"
            )
    return draws, chain


def _check_support(compiled, X, draws: dict, option: str):
    """Draws outside their variable's support: the value transform gives NaN / inf (a negative scale, a value
    outside an interval) or does not invert to them (a simplex that does not sum to 1, an unordered vector under
    an ordered transform). The error names the first such variable and shows a value."""
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        name, count = compiled.layout.variable_of_coordinate(int(col)), int(bad.any(axis=1).sum())
    else:
        back = compiled.to_constrained(X)
        for name in draws:
            given = np.asarray(draws[name], dtype=float).reshape(X.shape[0], -1)
            off = ~np.isclose(back[name].reshape(X.shape[0], -1), given, rtol=1e-5, atol=1e-6).all(axis=1)
            if off.any():
                row, count = int(np.argmax(off)), int(off.sum())
                break
        else:
            return
    value = np.array2string(np.asarray(draws[name][row]), threshold=6, precision=4)
    raise ValueError(
        f"pmz: {count} of the {X.shape[0]} draws given as {option}= lie outside the support of {name!r} "
        f"(e.g. {name} = {value}); are they draws of this model?"
    )


def posterior_to_flat(compiled, posterior, n: int | None = None, *, option: str = "posterior"):
    """Flat unconstrained particles from posterior draws, thinned evenly to at most ``n``.

    The draws are checked first: every free variable present, one draw of each with the variable's shape, finite
    values inside the variable's support; the errors name the variable and ``option`` (the argument the draws
    came in, ``"posterior"`` or ``"reverse_start"``).

    Parameters
    ----------
    compiled : CompiledModel
    posterior : pm.sample result (arviz.InferenceData or xarray.DataTree) or its posterior group, an
        xarray.Dataset with dims (chain, draw, ...), or a dict ``name -> (n, ...)``
    n : int, optional
        Keep at most this many draws (evenly spaced, all chains).
    option : str
        The name of the argument the draws were given as, for error messages.

    Returns
    -------
    X : ndarray (m, dim)
    chain : ndarray (m,) of int
        Chain index of each kept draw (for effective sample sizes).
    """
    draws, chain = _named_draws(compiled, _posterior_group(posterior, option), option)
    total = chain.size
    keep = np.arange(total) if n is None or n >= total else np.round(np.linspace(0, total - 1, n)).astype(int)
    kept = {name: v[keep] for name, v in draws.items()}
    X = compiled.from_constrained(kept)
    _check_support(compiled, X, kept, option)
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
