"""``method="auto"``: what the chains say and where they start (:mod:`pmz.methods.auto`).

Starting points (half exact prior draws, half PyMC's initial point with jitter), the checks on the chains'
draws (divergences, split R-hat, separate modes, chains stuck where the mass is negligible), the search for
modes the chains missed, and the user's own draws (``posterior=``) as chains.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..model.pymc import ModelSpecificationError
from ..runners.modes import (
    climb,
    cluster_chains,
    fit_mode_components,
    mode_masses,
    new_modes,
)
from ..runners.posterior_hmc import (
    PosteriorDraws,
    continue_sampling,
    dispersed_starts,
    log_posterior_and_grad,
    max_split_rhat,
)
from ..runners.starts import DIVERGENT_FRACTION, divergences_in, posterior_to_flat, too_many_divergences

__all__ = [
    "first_pass_draws",
    "DIVERGENT_FRACTION",
    "NEGLIGIBLE_MASS",
    "N_SEARCH",
    "divergent",
    "draws_from_posterior",
    "finite_starts",
    "missed_mode",
    "prior_reference",
    "prior_starts",
    "search_modes",
    "separate_modes",
    "stuck_chains",
    "untrusted_chains_reason",
]

NEGLIGIBLE_MASS = 1e-8  # a cluster of chains with less mass than this times the largest: chains stuck, dropped
_FAR_BELOW = 100.0  # starts this far (+ dim) below the best one climb before HMC starts
_CLIMB_STEPS = 50
N_SEARCH = 256  # prior draws climbed in search of modes the chains missed
FIRST_DRAWS, FIRST_DRAWS_MAX = 50, 125  # bounds of the first pass's draws per chain (first_pass_draws)
SEARCH_DROP = 50.0  # peaks more than this + dim nats below the chains' highest density are not searched further


def divergent(draws) -> bool:
    """Whether the chains' divergent transitions say the draws miss part of the posterior (a funnel's neck):
    :func:`pmz.runners.starts.too_many_divergences`."""
    return too_many_divergences(draws.divergences, draws.n_chains * draws.n_draws)


def untrusted_chains_reason(draws, max_rhat: float, own_chains: bool = True) -> str:
    """Why the chains' draws cannot be trusted for a reference near the posterior ("" when they can).

    Every rule that holds is named, in this order: split R-hat above ``max_rhat`` (chains in different modes or not
    mixed) and, for pmz's own chains (``own_chains``), divergent transitions (:func:`divergent`). The route does
    not depend on which rule a run meets first, and the reason says all of them.

    >>> from types import SimpleNamespace
    >>> draws = SimpleNamespace(rhat=1.3, divergences=40, n_chains=32, n_draws=1000)
    >>> print(untrusted_chains_reason(draws, 1.05))  # doctest: +NORMALIZE_WHITESPACE
    the chains disagree (split R-hat 1.3 > 1.05); 40 divergent transitions in 32000 posterior draws
    (the chains miss part of the posterior, e.g. a funnel's neck)
    >>> untrusted_chains_reason(SimpleNamespace(rhat=1.01, divergences=1, n_chains=32, n_draws=1000), 1.05)
    ''
    """
    reasons = []
    if not draws.rhat <= max_rhat:
        reasons.append(f"the chains disagree (split R-hat {draws.rhat:.3g} > {max_rhat})")
    if own_chains and divergent(draws):
        reasons.append(
            f"{draws.divergences} divergent transitions in {draws.n_chains * draws.n_draws} posterior draws "
            "(the chains miss part of the posterior, e.g. a funnel's neck)"
        )
    return "; ".join(reasons)


def draws_from_posterior(compiled, posterior) -> PosteriorDraws:
    """The user's ``pm.sample`` result as chains, with the divergences its sampler recorded."""
    X, chain = posterior_to_flat(compiled, posterior)
    recorded = divergences_in(posterior)  # the sampler's own record, where pm.sample kept one
    return chains_from_flat(compiled, X, chain, 0 if recorded is None else recorded[0])


def chains_from_flat(compiled, X, chain, divergences: int = 0) -> PosteriorDraws:
    """Flat draws ``X (n, dim)`` of chains ``chain (n,)`` as :class:`PosteriorDraws` (every chain cut to the
    shortest one's length), with their log posterior and split R-hat."""
    ids = np.unique(chain)
    length = min(int(np.sum(chain == c)) for c in ids)
    x = np.stack([X[chain == c][:length] for c in ids])
    lp, ll = compiled.log_densities_once(x.reshape(-1, compiled.dim))  # no second compile
    log_post = (lp + ll).reshape(x.shape[:2])
    return PosteriorDraws(
        x=x,
        log_posterior=log_post,
        step_size=np.full(ids.size, np.nan),
        n_leapfrog=0,
        metric=np.ones(compiled.dim),
        acceptance=np.nan,
        divergences=int(divergences),
        rhat=max_split_rhat(x, log_post),
        n_grad_evals=0,
        seconds=0.0,
        info={"source": "posterior"},
    )


def separate_modes(draws, max_rhat, labels=None) -> int:
    """How many separate modes the chains sit in: at least two clusters (:func:`pmz.runners.modes.cluster_chains`)
    whose chains agree within each (split R-hat at most ``max_rhat`` in every cluster of two or more chains);
    0 when they do not."""
    labels = cluster_chains(draws.x) if labels is None else labels
    n = int(labels.max()) + 1
    if n < 2:
        return 0
    for c in range(n):
        members = labels == c
        if members.sum() >= 2 and not max_split_rhat(draws.x[members], draws.log_posterior[members]) <= max_rhat:
            return 0
    return n


def stuck_chains(target, draws, rng) -> np.ndarray:
    """Chains stuck where the posterior has negligible mass (boolean, per chain).

    The chains are clustered by location and each cluster's mass is estimated by importance sampling from a
    Gaussian fitted to its draws (:mod:`pmz.runners.modes`); a cluster whose mass is below ``NEGLIGIBLE_MASS``
    times the largest holds chains stuck where they started (e.g. where a term overflows), not a mode. The masses,
    not the chains' log densities, decide: a wide mode of low density can carry much mass."""
    labels = cluster_chains(draws.x)
    if labels.max() == 0:
        return np.zeros(draws.n_chains, bool)
    log_mass, _, _ = mode_masses(target, fit_mode_components(draws.x, labels), rng, 200)
    if not np.isfinite(log_mass).any():
        return np.zeros(draws.n_chains, bool)
    negligible = ~(log_mass - np.max(log_mass[np.isfinite(log_mass)]) > np.log(NEGLIGIBLE_MASS))
    return negligible[labels]


def _peaks_outside(target, prior, draws, rng, n, scale, n_steps=100):
    """Peaks that ``n`` exact prior draws climb to (:func:`pmz.runners.modes.climb`, lengths ``scale``) in none of
    the draws' clusters and not far below their highest density (``SEARCH_DROP + dim`` nats), one per group
    (:func:`pmz.runners.modes.new_modes`); None where the prior cannot be drawn from."""
    starts = prior_starts(target, prior, rng, n)
    if starts is None:
        return None
    points, values = climb(target, starts, scale, n_steps=n_steps)
    floor = float(np.max(draws.log_posterior)) - SEARCH_DROP - target.dim
    return new_modes(draws.x, cluster_chains(draws.x), points, values, min_log_density=floor)


def search_modes(target, prior, draws, rng):
    """Look for modes the chains missed (chains found several already): climb from ``N_SEARCH`` exact prior
    draws (:func:`pmz.runners.modes.climb`), keep the peaks that lie in none of the chains' clusters and are not
    far below the chains' highest density (``SEARCH_DROP + dim`` nats), and run one new chain from each (as many
    draws as the others, the same step size and metric). Returns the draws with the new chains appended and
    how many were added."""
    metric = np.asarray(draws.metric)
    scale = np.sqrt(np.diag(metric) if metric.ndim == 2 else metric)
    found = _peaks_outside(target, prior, draws, rng, N_SEARCH, scale)
    if found is None or found.shape[0] == 0:
        return draws, 0
    found = found[: draws.n_chains]
    k = found.shape[0]
    empty = replace(draws, x=np.empty((k, 0, target.dim)), log_posterior=np.empty((k, 0)),
                    step_size=np.full(k, float(np.median(draws.step_size))), divergences=0, n_grad_evals=0,
                    seconds=0.0, acceptance=0.0)
    more = continue_sampling(target, empty, rng, draws.n_draws, start=found)
    x = np.concatenate([draws.x, more.x])
    log_post = np.concatenate([draws.log_posterior, more.log_posterior])
    by_chain = None
    if draws.divergences_by_chain is not None and more.divergences_by_chain is not None:
        by_chain = np.concatenate([draws.divergences_by_chain, more.divergences_by_chain])
    group = None if draws.group is None else np.concatenate([draws.group, np.zeros(k, dtype=int)])  # group 0's
    merged = replace(draws, x=x, log_posterior=log_post, step_size=np.concatenate([draws.step_size, more.step_size]),
                     divergences=draws.divergences + more.divergences, divergences_by_chain=by_chain, group=group,
                     rhat=max_split_rhat(x, log_post), n_grad_evals=draws.n_grad_evals + more.n_grad_evals,
                     seconds=draws.seconds + more.seconds)
    return merged, k


N_MISSED_SEARCH = 32  # prior draws climbed in search of a mode that given draws miss (cheap: ~3% of pm.sample)
MISSED_MASS = 1e-3  # a mode the draws miss with more than this share of the mass: they cannot be trusted
PEAK_DECREMENT = 2.0  # a climbed point counts as a peak when g' Sigma g is at most this (its top within a nat)


def missed_mode(target, prior, draws, rng, log_z) -> str:
    """Why posterior draws that did not come from pmz's own dispersed chains (``posterior=``, or bridge sampling's
    ``pm.sample``) cannot be trusted because they miss a mode ("" when the search finds none that matters).

    :data:`N_MISSED_SEARCH` exact prior draws climb the log density (:func:`pmz.runners.modes.climb`, 50 steps);
    a peak that lies in none of the draws' clusters (:func:`pmz.runners.modes.new_modes`) gets a Laplace mass
    ``log p~(peak) + log det(2 pi Sigma) / 2``, ``Sigma`` its inverse curvature
    (:func:`pmz.model.reference.curvature_reference`; the draws' covariance where the curvature is not
    positive definite), and a share ``m / (Z + m)`` of the mass against the draws' estimate ``log_z``. Above
    :data:`MISSED_MASS` the draws miss part of the posterior: a symmetric bimodal posterior whose draws all sit
    in one mode is log 2 short (-14.116 +- 0.000 where the truth is -13.422).

    Only a point the climb brought to a peak counts: a concave neighbourhood (the curvature positive definite) and
    a Newton decrement ``g' Sigma g`` of at most :data:`PEAK_DECREMENT` (the quadratic model's top within a nat).
    A climb stopped on a slope (a funnel's neck, where 50 steps keep going towards a small scale) is no mode: on a
    bambi model with a group-level intercept it gave "about 97% of the mass" at points of gradient 10-160."""
    from ..model.reference import curvature_reference

    if not np.isfinite(log_z):
        return ""
    X = draws.x.reshape(-1, draws.x.shape[2])
    cov = np.atleast_2d(np.cov(X, rowvar=False)) + 1e-10 * np.eye(X.shape[1])
    found = _peaks_outside(target, prior, draws, rng, N_MISSED_SEARCH, np.sqrt(np.diag(cov)), n_steps=50)
    if found is None or found.shape[0] == 0:
        return ""
    lp, ll, glp, gll = target.log_densities_and_grads(found)
    shares = []
    for peak, height, grad in zip(found, lp + ll, glp + gll):
        curved = curvature_reference(target, peak, cov)
        if curved is None or not float(grad @ curved.cov @ grad) <= PEAK_DECREMENT:
            continue  # not a peak: a saddle, a ridge or a slope the climb did not finish
        log_mass = float(height) + 0.5 * np.linalg.slogdet(2.0 * np.pi * np.atleast_2d(curved.cov))[1]
        shares.append(np.exp(log_mass - np.logaddexp(log_z, log_mass)))
    if not shares:
        return ""
    best = int(np.argmax(shares))
    if not shares[best] > MISSED_MASS:
        return ""
    return (f"the draws miss a mode: a climb from {N_MISSED_SEARCH} prior draws found a peak where they never "
            f"go, holding about {shares[best]:.0%} of the posterior mass by a Laplace approximation; use "
            "method='auto' without posterior= (its chains start all over the prior and its modes route weighs "
            "every mode)")


def prior_reference(full_target):
    """The prior of the model as written, for a few hundred exact draws (compiled with ``ONE_SHOT_MODE``), or None
    where a prior is improper. One per call of the default, shared by the starts, the mode search and the modes
    route's defensive component (its draw function compiles once)."""
    from ..model.backend import ONE_SHOT_MODE
    from ..model.reference import PriorReference

    if getattr(full_target, "improper_priors", None):
        return None
    return PriorReference(full_target, mode=ONE_SHOT_MODE)


def prior_starts(target, prior, rng, n):
    """``n`` exact draws of ``prior`` (:func:`prior_reference`) in ``target``'s coordinates (the continuous ones
    where the discrete variables are summed out), or None where the prior cannot be drawn from (an improper
    prior, a distribution without a random generator, an ordered transform that its prior does not respect)."""
    if prior is None:
        return None
    try:
        X = prior.sample(rng, n)
    except Exception:  # noqa: BLE001 -- any failure to draw from the prior: start from the initial point alone
        return None
    return X[:, target.continuous] if target is not prior.compiled else X


def finite_starts(compiled, rng, n, prior=None):
    """Dispersed starting points: half of them exact prior draws (:func:`prior_starts`: chains that start all
    over the prior find modes far from PyMC's initial point), the others PyMC's initial point with jitter
    (:func:`pmz.runners.posterior_hmc.dispersed_starts`, which also replaces prior draws where the log density is
    not finite). Prior draws more than ``_FAR_BELOW + dim`` nats below the best start climb the log density for
    ``_CLIMB_STEPS`` steps first. A clear error names the non-finite terms when the log density is finite at none
    of them."""
    jitter_rng, prior_rng = rng.spawn(2)
    X, value = dispersed_starts(compiled, jitter_rng, n)
    drawn = prior_starts(compiled, prior, prior_rng, n // 2)
    if drawn is not None:
        prior_value, _ = log_posterior_and_grad(compiled, drawn)  # -inf where the value or a gradient is not finite
        finite = np.isfinite(prior_value)
        # chains 0, 3, 4, 7, 8, ...: each half of the bridge (even and odd chains) gets starts of both kinds
        rows = np.flatnonzero(np.isin(np.arange(n) % 4, (0, 3)))[: drawn.shape[0]][finite]
        X[rows], value[rows] = drawn[finite], prior_value[finite]
        # a prior draw far in the likelihood's tail (a gradient of size 1e4 and more) leaves HMC no step size that
        # moves: climb such starts first (:func:`pmz.runners.modes.climb`), until they are in the others' range
        far = np.isfinite(value) & (value < np.nanmax(value) - _FAR_BELOW - compiled.dim)
        if far.any():
            X[far], value[far] = climb(compiled, X[far], np.ones(compiled.dim), n_steps=_CLIMB_STEPS)
    if not np.isfinite(value).any():
        per_var = compiled.point_logps(X[0])
        culprits = [name for name, v in per_var.items() if not np.isfinite(v)]
        raise ModelSpecificationError(
            f"pmz: the log density is {value[0]} at the initial particles (PyMC's initial point, with and without "
            f"jitter); non-finite terms: {culprits or 'none per variable (check pm.Potential terms)'}. "
            "Check the priors' supports, the observed data (NaN?) and any pm.Potential."
        )
    return X


def first_pass_draws(dim: int, options) -> int:
    """Draws per chain in the first pass: ``options.n_draws``, or where it is None enough for the Gaussian
    reference in ``dim`` dimensions, ``5 d^2`` draws per half of the chains (a fitted covariance's expected error
    ``d^2 / 4n`` is then 0.05 nats), between :data:`FIRST_DRAWS` (the chains' checks need a few dozen draws
    each) and :data:`FIRST_DRAWS_MAX` (beyond, the curvature reference and more draws for the target se take
    over)."""
    if options.n_draws is not None:
        return int(options.n_draws)
    per_chain = 5.0 * dim * dim / max(options.n_chains // 2, 1)
    return int(np.clip(np.ceil(per_chain), FIRST_DRAWS, FIRST_DRAWS_MAX))
