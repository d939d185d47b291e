"""Can these posterior draws be trusted? One room for every check of posterior draws, and for where chains start.

``method="bridge"`` and the default (:mod:`pmz.auto`) both read posterior draws: the user's (``posterior=``), a
``pm.sample`` run's, or pmz's own many-chain HMC. The checks they share live here, below both:

* **divergent transitions** (:func:`divergent`, :func:`pmz.runners.starts.divergences_reason`): the sampler could
  not follow the posterior everywhere (a funnel's neck);
* **the Stein identities** (:func:`pmz.runners.draws_check.check_draws`): draws of another model with the same
  variable names;
* **a missed mode** (:func:`missed_mode`, :func:`missed_peaks`): prior draws climb to a peak where the draws never
  go, or a branch of a mixture in the log density leads to one (:mod:`pmz.runners.branch_search`);
* **chains that disagree** (:func:`untrusted_chains_reason`): split R-hat and divergences together;
* the user's draws as chains (:func:`draws_from_posterior`, :func:`chains_from_flat`), and the verdict on them
  as one typed record (:func:`given_draws_trust`, :class:`pmz.records.DrawsTrust`);
* **where chains start**: the prior of the model as written (:func:`prior_reference`), its exact draws
  (:func:`prior_starts`) and the dispersed starts of pmz's chains (:func:`finite_starts`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model.pymc import ModelSpecificationError
from ..records import DrawsTrust
from .branch_search import BranchPeaks, branch_peaks, has_branches
from .modes import climb, cluster_chains, laplace_log_masses, new_modes, outside_clusters
from .posterior_hmc import PosteriorDraws, WarmupNotes, dispersed_starts, log_posterior_and_grad, max_split_rhat
from .draws_check import mismatch_reason
from .starts import divergences_in, divergences_reason, posterior_to_flat, too_many_divergences

__all__ = [
    "branch_modes",
    "MISSED_MASS",
    "N_MISSED_SEARCH",
    "chains_from_flat",
    "divergent",
    "draws_from_posterior",
    "finite_starts",
    "given_draws_trust",
    "missed_mode",
    "missed_peaks",
    "particles_miss_a_component",
    "MissedPeaks",
    "peak_census",
    "peaks_outside",
    "prior_reference",
    "prior_starts",
    "trust_reason",
    "untrusted_chains_reason",
]

FAR_BELOW = 100.0  # starts this far (+ dim) below the best one climb before HMC starts
CLIMB_STEPS = 50  # ... for this many steps
SEARCH_DROP = 50.0  # peaks more than this + dim nats below the draws' highest density are not searched further
N_MISSED_SEARCH = 32  # prior draws climbed in search of a mode that given draws miss (cheap: ~3% of pm.sample)
MISSED_MASS = 1e-3  # a mode the draws miss with more than this share of the mass: they cannot be trusted
PEAK_DECREMENT = 2.0  # a climbed point counts as a peak when g' Sigma g is at most this (its top within a nat)


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


def draws_from_posterior(compiled, posterior, flat=None) -> PosteriorDraws:
    """The user's ``pm.sample`` result as chains, with the divergences its sampler recorded. ``flat``: the draws
    already read and checked (:func:`pmz.runners.starts.posterior_to_flat`'s ``(X, chain)``)."""
    X, chain = posterior_to_flat(compiled, posterior) if flat is None else flat
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
        info=WarmupNotes(source="posterior"),
    )


def peaks_outside(target, prior, draws, rng, n, scale, n_steps=100):
    """Peaks that ``n`` exact prior draws climb to (:func:`pmz.runners.modes.climb`, lengths ``scale``) in none of
    the draws' clusters and not far below their highest density (``SEARCH_DROP + dim`` nats), one per group
    (:func:`pmz.runners.modes.new_modes`); None where the prior cannot be drawn from."""
    census = peak_census(target, prior, draws, rng, n, scale, n_steps)
    return None if census is None else census[0]


def peak_census(target, prior, draws, rng, n, scale, n_steps=100):
    """:func:`peaks_outside` with a census of the climbs: ``(peaks, climbs in each peak's group, climbs that
    reached a peak not far below the draws' highest density)``, or None where the prior cannot be drawn from."""
    starts = prior_starts(target, prior, rng, n)
    if starts is None:
        return None
    points, values = climb(target, starts, scale, n_steps=n_steps)
    floor = float(np.max(draws.log_posterior)) - SEARCH_DROP - target.dim
    found, sizes = new_modes(draws.x, cluster_chains(draws.x), points, values, min_log_density=floor, counts=True)
    return found, sizes, int(np.sum(np.isfinite(values) & (values > floor)))


@dataclass(frozen=True)
class MissedPeaks:
    """Peaks in none of the draws' clusters (:func:`missed_peaks`), the largest Laplace mass first: ``points (n,
    dim)``, ``log_masses (n,)`` and ``covs (n, dim, dim)``, the inverse curvature where the search measured it (a
    mixture branch's peak; NaN otherwise), and the draws' covariance ``draws_cov``."""

    points: np.ndarray
    log_masses: np.ndarray
    covs: np.ndarray
    draws_cov: np.ndarray


def missed_peaks(target, prior, draws, rng) -> MissedPeaks:
    """Peaks in none of the draws' clusters, and their Laplace log masses (:class:`MissedPeaks`). Two searches,
    independent of the draws but for where they start:

    * :data:`N_MISSED_SEARCH` exact prior draws climb the log density (:func:`peaks_outside`, 50 steps); a climbed
      point gets a Laplace mass ``log p~(peak) + log det(2 pi Sigma) / 2``, ``Sigma`` its inverse curvature
      (:func:`pmz.runners.modes.laplace_log_masses`; ``-inf``, dropped, where it is no peak: the curvature not
      positive definite, or a Newton decrement ``g' Sigma g`` above :data:`PEAK_DECREMENT`. A climb stopped on a
      slope, a funnel's neck, is no mode: on a bambi model with a group-level intercept it gave "about 97% of the
      mass" at points of gradient 10-160);
    * the peaks of every branch of a mixture in the log density, from the draws' highest point
      (:func:`pmz.runners.branch_search.branch_peaks`): a component far narrower than the bulk, whose basin no
      climb reaches."""
    X = draws.x.reshape(-1, draws.x.shape[2])
    dim = X.shape[1]
    cov = np.atleast_2d(np.cov(X, rowvar=False)) + 1e-10 * np.eye(dim)
    points, log_masses, covs = [np.zeros((0, dim))], [np.zeros(0)], [np.zeros((0, dim, dim))]
    found = peaks_outside(target, prior, draws, rng, N_MISSED_SEARCH, np.sqrt(np.diag(cov)), n_steps=50)
    if found is not None and found.shape[0]:
        points.append(found)
        log_masses.append(laplace_log_masses(target, found, cov, max_decrement=PEAK_DECREMENT))
        covs.append(np.full((found.shape[0], dim, dim), np.nan))
    branches = branch_modes(target, draws, cov)
    points.append(branches.points)
    log_masses.append(branches.log_masses)
    covs.append(branches.covs)
    points, log_masses, covs = np.concatenate(points), np.concatenate(log_masses), np.concatenate(covs)
    keep = np.flatnonzero(np.isfinite(log_masses))
    keep = keep[np.argsort(-log_masses[keep], kind="stable")]
    return MissedPeaks(points[keep], log_masses[keep], covs[keep], cov)


def branch_modes(target, draws, cov) -> BranchPeaks:
    """The peaks that the branches of a mixture in the log density lead to from the draws' highest point
    (:func:`pmz.runners.branch_search.branch_peaks`, first stencils scaled by ``cov``), in none of the draws'
    clusters."""
    X = draws.x.reshape(-1, draws.x.shape[2])
    found = branch_peaks(target, X[np.argmax(draws.log_posterior.reshape(-1))], cov)
    if not found.points.shape[0]:
        return found
    outside = outside_clusters(draws.x, cluster_chains(draws.x), found.points)
    return BranchPeaks(found.points[outside], found.heights[outside], found.covs[outside], found.log_masses[outside])


def missed_mode(target, prior, draws, rng, log_z) -> str:
    """Why posterior draws that did not come from pmz's own dispersed chains (``posterior=``, or bridge sampling's
    ``pm.sample``) cannot be trusted because they miss a mode ("" when the search finds none that matters).

    Every peak :func:`missed_peaks` finds outside the draws gets a share ``m / (Z + m)`` of the mass, ``m`` its
    Laplace mass, against the draws' estimate ``log_z``. Above :data:`MISSED_MASS` the draws miss part of the
    posterior: a symmetric bimodal posterior whose draws all sit in one mode is log 2 short (-14.116 +- 0.000
    where the truth is -13.422)."""
    if not np.isfinite(log_z):
        return ""
    log_mass = missed_peaks(target, prior, draws, rng).log_masses
    if not log_mass.size:
        return ""
    shares = np.exp(log_mass - np.logaddexp(log_z, log_mass))
    best = int(np.argmax(shares))
    if not shares[best] > MISSED_MASS:
        return ""
    return (f"the draws miss a mode: a search from prior draws and the model's mixture components found a peak "
            f"where they never go, holding about {shares[best]:.0%} of the posterior mass by a Laplace "
            "approximation; use method='auto' without posterior= (its chains start all over the prior and its "
            "modes route weighs every mode)")


def particles_miss_a_component(target, particles, log_z) -> str:
    """Why the final particles of SMC from the prior cannot be trusted because they miss a narrow component of a
    mixture in the log density ("" when none is missed or the log density has no mixture pmz can read): the peaks
    of its branches (:func:`pmz.runners.branch_search.branch_peaks`, from the highest particle) that no particle
    comes within 3 of their own Laplace sd of, with a Laplace share ``m / (Z + m)`` above :data:`MISSED_MASS`
    against the particles' estimate ``log_z``. A component 30 times narrower than the bulk and 10 sd from it, with
    30% of the mass, was missed by every particle (0.33 nats low, reliable): the tempered mass in its basin stays
    negligible until late, when no particle is near it."""
    if not np.isfinite(log_z) or particles is None or not has_branches(target):
        return ""  # nothing to look for: no mixture pmz can read (the particles are not evaluated)
    X = np.asarray(particles, dtype=float).reshape(-1, target.dim)
    lp, ll = target.log_densities(X)
    with np.errstate(invalid="ignore"):
        best = int(np.nanargmax(np.where(np.isfinite(lp + ll), lp + ll, -np.inf)))
    cov = np.atleast_2d(np.cov(X, rowvar=False)) + 1e-10 * np.eye(target.dim)
    found = branch_peaks(target, X[best], cov)
    shares = np.exp(found.log_masses - np.logaddexp(log_z, found.log_masses))
    for point, c, share in zip(found.points, found.covs, shares):
        if not share > MISSED_MASS:
            continue
        gap = X - point
        if np.min(np.einsum("ij,ij->i", gap @ np.linalg.inv(c), gap)) > 9.0:
            return (f"the particles miss a mode: a narrow component of a mixture in the log density peaks where no "
                    f"particle went, holding about {share:.0%} of the posterior mass by a Laplace approximation")
    return ""


def given_draws_trust(check, divergences, n_draws: int, option: str, missed: str | None = None) -> DrawsTrust:
    """The verdict on draws pmz did not make itself: the Stein check's numbers (``check``, a
    :class:`pmz.records.DrawsCheck` or None), the sampler's divergent transitions (``divergences`` out of
    ``n_draws``, None where the draws carry no record; ``option``: the argument they came in, or ``"pm.sample"``)
    and a mode they miss (``missed``, :func:`missed_mode`; None where no search ran)."""
    why_divergent = "" if divergences is None else divergences_reason(divergences, n_draws, option=option)
    return DrawsTrust(check=check, divergences=divergences, divergent=why_divergent, missed_mode=missed)


def trust_reason(trust: DrawsTrust, source: str) -> str:
    """Why draws with this verdict cannot be trusted ("" when they can): the Stein check's mismatch with advice
    (:func:`pmz.runners.draws_check.mismatch_reason`; ``source``: where the draws came from, "posterior" for the
    user's), else the sampler's divergences, else a missed mode."""
    if trust.mismatch:
        return mismatch_reason(trust.mismatch, source)
    return trust.divergent or trust.missed_mode or ""


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
    not finite). Prior draws more than :data:`FAR_BELOW` ``+ dim`` nats below the best start climb the log
    density for :data:`CLIMB_STEPS` steps first. A clear error names the non-finite terms when the log density
    is finite at none of them."""
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
        far = np.isfinite(value) & (value < np.nanmax(value) - FAR_BELOW - compiled.dim)
        if far.any():
            X[far], value[far] = climb(compiled, X[far], np.ones(compiled.dim), n_steps=CLIMB_STEPS)
    if not np.isfinite(value).any():
        per_var = compiled.point_logps(X[0])
        culprits = [name for name, v in per_var.items() if not np.isfinite(v)]
        raise ModelSpecificationError(
            f"pmz: the log density is {value[0]} at the initial particles (PyMC's initial point, with and without "
            f"jitter); non-finite terms: {culprits or 'none per variable (check pm.Potential terms)'}. "
            "Check the priors' supports, the observed data (NaN?) and any pm.Potential."
        )
    return X
