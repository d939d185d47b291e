"""The default's posterior chains: warm-up and draws, and what the chains say before any route reads them.

``n_chains`` HMC chains moved together with cross-chain warm-up (:mod:`pmz.runners.posterior_hmc`, in groups
with ``n_chunks``: :mod:`pmz.auto.chain_groups`), half of them started at exact prior draws and half at PyMC's
initial point with jitter (:func:`pmz.runners.draw_trust.finite_starts`); or the user's own ``pm.sample`` result
(``posterior=``). Then, where the split R-hat is above ``max_rhat``:

1. clusters of chains (:func:`pmz.runners.modes.cluster_chains`) whose estimated mass is negligible (below
   :data:`NEGLIGIBLE_MASS` of the largest) are chains stuck where they started: they are dropped (restarted from
   the others' states if a second warm-up follows);
2. when the rest fall into clusters that each mix (within-cluster split R-hat at most ``max_rhat``), they sit in
   separate modes (:func:`separate_modes`) and the modes route takes them;
3. otherwise a second warm-up from where the chains are, twice the draws; and chains that still mix slowly (R-hat
   up to :data:`SLOW_MIXING_RHAT`) run three times longer.

:func:`search_modes` looks for modes every chain missed (the modes route runs it on pmz's own chains).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..runners.draw_trust import (MISSED_MASS, N_MISSED_SEARCH, PEAK_DECREMENT, finite_starts,
                                  missed_peaks, peak_census)
from ..runners.modes import cluster_chains, fit_mode_components, laplace_log_masses, mode_masses
from ..runners.posterior_hmc import PosteriorDraws, continue_sampling, max_split_rhat

__all__ = [
    "CHAIN_CHUNKS",
    "FIRST_DRAWS",
    "FIRST_DRAWS_MAX",
    "N_MODE_SEARCH",
    "NEGLIGIBLE_MASS",
    "ChainsFindings",
    "first_pass_draws",
    "sample_chains",
    "search_modes",
    "ModeSearch",
    "separate_modes",
    "stuck_chains",
]

NEGLIGIBLE_MASS = 1e-8  # a cluster of chains with less mass than this times the largest: chains stuck, dropped
N_MODE_SEARCH = 256  # prior draws climbed in search of modes the chains missed
FIRST_DRAWS, FIRST_DRAWS_MAX = 50, 125  # bounds of the first pass's draws per chain (first_pass_draws)
SLOW_MIXING_RHAT = 1.2  # above max_rhat but below this after a second warm-up: run the chains longer
CHAIN_CHUNKS = 1  # groups of chains that warm up on their own, with an executor and no n_chunks (see run_auto)


@dataclass(frozen=True)
class ChainsFindings:
    """The posterior draws the routes read, and what the chains' checks found.

    Attributes
    ----------
    draws : PosteriorDraws
    own : bool
        pmz's own dispersed chains (False: the user's draws, ``posterior=``).
    n_modes : int
        Separate modes the chains sit in (:func:`separate_modes`); 0 when they do not.
    dropped : int
        Chains dropped (or restarted from the others' states) because they sat where the mass is negligible.
    """

    draws: PosteriorDraws
    own: bool
    n_modes: int = 0
    dropped: int = 0


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


@dataclass(frozen=True)
class ModeSearch:
    """What the modes route's search from prior draws found (:func:`search_modes`).

    Attributes
    ----------
    peaks : ndarray (n_found, dim)
        One point per peak the climbs reached in none of the chains' clusters, the highest first group by group.
    unseen : float
        The Good-Turing estimate of the chance that one more climb reaches a peak that neither the chains nor the
        other climbs reached: the climbs alone in a true peak's group over the climbs that reached a peak (0 where
        none did). Near 1 the modes are far more than were seen (a product of double wells); near 0 the search saw
        every mode a climb can reach.
    n_peaks : int
        Of ``peaks``, those that are true peaks (a concave neighbourhood and a Newton decrement of at most
        :data:`pmz.runners.draw_trust.PEAK_DECREMENT`: :func:`pmz.runners.modes.laplace_log_masses`); a climb
        that stopped on a slope or a ridge of a mixture's posterior is none.
    scattered : float
        The climbs alone at their end point, true peak or not, over the climbs that reached one: near 1 every climb
        ends somewhere no other climb ends (endless ridges or a singular direction: no list of modes describes
        the posterior).
    """

    peaks: np.ndarray
    unseen: float
    n_peaks: int = 0
    scattered: float = 0.0

    @property
    def n_found(self) -> int:
        return int(self.peaks.shape[0])


def search_modes(target, prior, draws, rng) -> ModeSearch:
    """Look for modes the chains missed (chains found several already): climb from :data:`N_MODE_SEARCH` exact
    prior draws (:func:`pmz.runners.draw_trust.peak_census`) in the chains' metric; the peaks in none of the chains'
    clusters and the chance of one more (:class:`ModeSearch`)."""
    metric = np.asarray(draws.metric)
    scale = np.sqrt(np.diag(metric) if metric.ndim == 2 else metric)
    census = peak_census(target, prior, draws, rng, N_MODE_SEARCH, scale)
    if census is None:
        return ModeSearch(np.zeros((0, target.dim)), 0.0)
    found, sizes, n_reached = census
    if not found.shape[0]:
        return ModeSearch(found, 0.0)
    real = np.isfinite(laplace_log_masses(target, found, np.diag(scale**2), max_decrement=PEAK_DECREMENT))
    reached = max(n_reached, 1)
    return ModeSearch(found, float(np.sum(real & (sizes == 1))) / reached, int(real.sum()),
                      float(np.sum(sizes == 1)) / reached)


def chains_at(target, draws, starts, rng, covs=None):
    """``draws`` with one new chain from each row of ``starts`` appended (as many draws as the others, the same
    metric; their group is group 0's): the modes route runs one in each peak its search found, at most as many as
    there are chains. The step size is the others' median, times the peak's smallest sd in the metric's units
    where ``covs (k, dim, dim)`` gives the peak's inverse curvature (NaN where not measured) and that sd is below
    1: a mixture component 1000 times narrower than the bulk, started with the bulk's step, rejected every move,
    and its component, fitted to one repeated point, weighed nothing."""
    k = starts.shape[0]
    step = np.full(k, float(np.median(draws.step_size)))
    if covs is not None:
        measured = np.all(np.isfinite(np.asarray(covs, dtype=float)), axis=(1, 2))  # NaN: not measured
        if measured.any():
            step[measured] *= np.minimum(1.0, _smallest_sd_in_metric(draws.metric, np.asarray(covs)[measured]))
    empty = replace(draws, x=np.empty((k, 0, target.dim)), log_posterior=np.empty((k, 0)), step_size=step,
                    divergences=0, n_grad_evals=0, seconds=0.0, acceptance=0.0)
    more = continue_sampling(target, empty, rng, draws.n_draws, start=starts)
    x = np.concatenate([draws.x, more.x])
    log_post = np.concatenate([draws.log_posterior, more.log_posterior])
    by_chain = None
    if draws.divergences_by_chain is not None and more.divergences_by_chain is not None:
        by_chain = np.concatenate([draws.divergences_by_chain, more.divergences_by_chain])
    group = None if draws.group is None else np.concatenate([draws.group, np.zeros(k, dtype=int)])
    return replace(draws, x=x, log_posterior=log_post, step_size=np.concatenate([draws.step_size, more.step_size]),
                   divergences=draws.divergences + more.divergences, divergences_by_chain=by_chain, group=group,
                   rhat=max_split_rhat(x, log_post), n_grad_evals=draws.n_grad_evals + more.n_grad_evals,
                   seconds=draws.seconds + more.seconds)


def _smallest_sd_in_metric(metric, covs) -> np.ndarray:
    """``sqrt(lambda_min(L^-1 C L^-T))`` for each ``C`` of ``covs``, ``L L' = metric`` (a diagonal as a vector or a
    dense matrix): each peak's narrowest sd in the units the chains' metric measures the bulk in."""
    metric = np.asarray(metric, dtype=float)
    chol = np.linalg.cholesky(metric) if metric.ndim == 2 else np.diag(np.sqrt(metric))
    whitened = np.linalg.solve(chol, np.linalg.solve(chol, np.asarray(covs, dtype=float)).transpose(0, 2, 1))
    lam = np.linalg.eigvalsh(0.5 * (whitened + whitened.transpose(0, 2, 1)))
    return np.sqrt(np.maximum(lam[:, 0], 0.0))


def sample_chains(context) -> ChainsFindings:
    """The posterior draws of ``context`` (:class:`pmz.auto.context.AutoContext`): the user's, or pmz's chains
    with the checks and second passes of the module docstring."""
    target, options, clock = context.target, context.options, context.clock
    if options.posterior is not None:
        draws = context.given_draws
    else:
        start_rng, sample_rng = context.streams.sample.spawn(2)
        context.streams.sample = sample_rng
        starts = finite_starts(target, start_rng, options.n_chains, context.prior)
        draws = _sample(context, starts, first_pass_draws(target.dim, options))
    clock.mark("posterior draws")
    findings = _drop_stuck(context, ChainsFindings(draws, own=options.posterior is None))
    findings = _second_pass(context, findings)
    findings = _missed_by_agreeing_chains(context, findings)
    context.progress.close()
    return findings


def _sample(context, starts, n_draws) -> PosteriorDraws:
    """A warm-up and ``n_draws`` draws per chain of every group from ``starts``."""
    return context.chain_groups.sample(context.streams.sample, starts, n_draws=n_draws,
                                       n_warmup=context.options.n_warmup, progress=context.progress.report,
                                       deadline=context.clock.sampling_deadline)


def _drop_stuck(context, findings) -> ChainsFindings:
    """Chains that disagree: drop those stuck where the mass is negligible (keeping their last states for a restart
    from the others' states), then count the separate modes the rest sit in."""
    draws, max_rhat = findings.draws, context.options.max_rhat
    if draws.rhat <= max_rhat:
        return findings
    stuck = stuck_chains(context.target, draws, context.streams.stuck)
    dropped = 0
    if stuck.any() and (~stuck).sum() >= 4:
        dropped, restart = int(stuck.sum()), draws.x[:, -1].copy()
        restart[stuck] = restart[~stuck][np.arange(dropped) % (~stuck).sum()]
        context.restart = restart
        draws = draws.keep(~stuck)
        context.clock.mark(f"{dropped} chains stuck where the posterior mass is negligible dropped")
    n_modes = separate_modes(draws, max_rhat) if not draws.rhat <= max_rhat else 0
    return replace(findings, draws=draws, n_modes=n_modes, dropped=dropped)


def _second_pass(context, findings) -> ChainsFindings:
    """pmz's own chains that disagree but not in separate modes: a second warm-up from where they are (stuck ones
    restarted from the others' states), twice the draws; chains that then mix slowly run three times longer (the
    tempered route is no cure for that)."""
    draws, options, clock = findings.draws, context.options, context.clock
    max_rhat, n_modes = options.max_rhat, findings.n_modes
    if not findings.own or n_modes:
        return findings
    if not draws.rhat <= max_rhat and clock.left() > draws.seconds:
        first_rhat = draws.rhat
        start = context.restart if findings.dropped else draws.x[:, -1]
        draws = _sample(context, start, 2 * first_pass_draws(context.target.dim, options))
        clock.mark(f"second warm-up and draws (split R-hat was {first_rhat:.3g})")
        if not draws.rhat <= max_rhat:
            n_modes = separate_modes(draws, max_rhat)
    if max_rhat < draws.rhat <= SLOW_MIXING_RHAT and not n_modes and clock.left() > 0:
        draws = context.chain_groups.more(draws, context.streams.sample, 3 * draws.n_draws,
                                          deadline=clock.sampling_deadline)
        clock.mark(f"longer chains (slow mixing, split R-hat {draws.rhat:.3g})")
    return replace(findings, draws=draws, n_modes=n_modes)


def _missed_by_agreeing_chains(context, findings) -> ChainsFindings:
    """pmz's own chains that agree may still all miss a mode (they start over the prior, but a basin few prior draws
    fall in is easily missed, and a narrow mixture component's basin is reached by no climb at all): a peak that
    :func:`pmz.runners.draw_trust.missed_peaks` finds in none of the chains' clusters (climbs from
    :data:`N_MISSED_SEARCH` exact prior draws, and the peaks of the mixture branches) whose Laplace mass is above
    :data:`MISSED_MASS` of the chains' own Laplace mass gets a chain. The chains then disagree and the modes route
    weighs every mode. The same search as for draws given as ``posterior=``
    (:func:`pmz.runners.draw_trust.missed_mode`), independent of the chains' draws."""
    draws, options, clock = findings.draws, context.options, context.clock
    if not findings.own or not draws.rhat <= options.max_rhat or clock.left() <= 0 or context.prior is None:
        return findings
    rng = context.streams.search.spawn(1)[0]
    found = missed_peaks(context.target, context.prior, draws, rng)
    clock.mark(f"search for modes the chains miss ({N_MISSED_SEARCH} climbs from prior draws, mixture components)")
    chains_mass = float(np.max(draws.log_posterior)) + 0.5 * np.linalg.slogdet(2.0 * np.pi * found.draws_cov)[1]
    missed = np.flatnonzero(found.log_masses - chains_mass > np.log(MISSED_MASS))[: options.n_chains]
    if not missed.size:
        return findings
    draws = chains_at(context.target, draws, found.points[missed], rng, covs=found.covs[missed])
    clock.mark(f"chains at {missed.shape[0]} modes the chains missed")
    n_modes = separate_modes(draws, options.max_rhat) if not draws.rhat <= options.max_rhat else 0
    return replace(findings, draws=draws, n_modes=n_modes)
