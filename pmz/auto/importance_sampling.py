"""Importance sampling from a normalised reference, with the checks that say when its error bar holds.

``Z = E_q[p~(x) / q(x)]`` from exact draws of ``q``: the estimate is unbiased for Z whatever ``q``, but its
delta-method se is only right when the weights ``p~ / q`` have a finite variance. So an estimate is only made
where the weights pass two checks (:func:`weights_fail`): a Kish ESS of at least
:data:`pmz.reliability.MIN_ESS_FRACTION` of the draws, and a Pareto k-hat of the largest weights at most a limit
(Vehtari et al., PSIS). Two independent halves of the draws give the check of the answer. Shared by the modes route
(a mixture over the modes the chains found), the importance and latent routes (a Student-t at the peak) and the
choice of the bridge's reference.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..estimators.jarzynski import jarzynski
from ..records import WorkRecord
from ..reliability import MIN_ESS_FRACTION, assess
from ..sample_diagnostics import pareto_khat
from ..weights import ess as kish_ess
from ..weights import systematic_resample
from .contract import Named

__all__ = [
    "N_MIXTURE_DRAWS",
    "N_MIXTURE_PILOT",
    "halves",
    "importance_draws",
    "importance_estimate",
    "importance_from_reference",
    "resampled_quarters",
    "weights_fail",
]

N_MIXTURE_DRAWS = 1 << 16  # the modes route's importance draws: about the gradient evaluations of the chains' warm-up
N_MIXTURE_PILOT = 1 << 12  # ... and its pilot
MAX_STORED = 1 << 24  # numbers of draws x dimension kept at once


def importance_draws(target, q, rng, n, once: bool = False):
    """``n`` exact draws of ``q`` and their log importance weights ``log p~ - log q`` (NaN read as -inf).
    ``once``: a small one-off batch, evaluated through the already compiled gradient function
    (:meth:`pmz.model.pymc.CompiledModel.log_densities_once`) rather than compiling the value function."""
    X = q.sample(rng, n)
    lp, ll = target.log_densities_once(X) if once else target.log_densities(X)
    log_w = np.asarray(lp + ll, dtype=float) - q.log_density(X)
    return np.where(np.isnan(log_w), -np.inf, log_w), X


def weights_fail(log_w, max_khat, what) -> str:
    """Why these importance weights cannot carry an estimate ("" when they can)."""
    if not np.isfinite(log_w).any():
        return f"importance sampling from it: no draw with positive weight among {what} {log_w.size} draws"
    fraction = kish_ess(log_w) / log_w.size
    khat = pareto_khat(log_w)
    if fraction < MIN_ESS_FRACTION:
        return f"importance sampling from it: ESS {fraction:.1%} of {what} {log_w.size} draws < {MIN_ESS_FRACTION:.0%}"
    if not khat <= max_khat:
        return f"importance sampling from it: Pareto k-hat {khat:.2f} > {max_khat} on {what} {log_w.size} draws"
    return ""


def importance_estimate(log_w):
    """Jarzynski's estimator on one-step forward weights (plain importance sampling), with its k-hat, assessed;
    and its record."""
    record = WorkRecord(log_weights=log_w, schedule=np.array([0.0, 1.0]), direction="forward")
    est = jarzynski(record, n_bootstrap=0)
    est = replace(est, method="importance", diagnostics=replace(est.diagnostics, pareto_khat=pareto_khat(log_w)))
    return assess(est, record), record


def halves(pool_name: str, log_w):
    """The pool of the (even number of) weights and its two independent halves as estimates: ``(pool, a, b)``
    (each :class:`Named`: ``pool_name``, ``"is_a"``, ``"is_b"``), and the pool's record."""
    n = log_w.size
    pool, record = importance_estimate(log_w)
    a, _ = importance_estimate(log_w[: n // 2])
    b, _ = importance_estimate(log_w[n // 2 :])
    return (Named(pool_name, pool), Named("is_a", a), Named("is_b", b)), record


def resampled_quarters(X, log_w, rng):
    """Four chains of equally weighted posterior draws: systematic resampling within each quarter of the weighted
    draws ``X`` (at most 1000 per chain)."""
    n = log_w.size
    quarters = np.split(np.arange(n - n % 4), 4)
    size = min(1000, n // 4)
    return np.stack([X[i[systematic_resample(rng, log_w[i], size)]] for i in quarters])


def importance_from_reference(target, q, rng, max_khat, *, n_draws: int = N_MIXTURE_DRAWS,
                              n_pilot: int = N_MIXTURE_PILOT, pilot=None):
    """Importance sampling from a normalised reference ``q``: ``Z = E_q[p~(x) / q(x)]`` from two independent halves
    of ``n_draws`` exact draws of ``q`` (fewer where ``dim`` is large: at most :data:`MAX_STORED` stored numbers),
    each with its delta-method se, and their pool.

    It answers only where its error bar can be trusted: a pilot of ``n_pilot`` draws, then the pool, must pass
    :func:`weights_fail`. The defensive prior component of the modes route's mixture bounds the weights by the
    likelihood.

    Returns ``(estimates, record, posterior, why_not)``: the pool ``is_modes`` and its halves ``is_a``, ``is_b``
    (:func:`halves`), the pool's record (one step from q to the posterior), four chains of equally weighted
    posterior draws (:func:`resampled_quarters`), and ``why_not`` (``(), None, None`` and a reason when the weights
    fail the checks). ``pilot``: the log weights of a pilot already drawn from ``q`` (then none is drawn here)."""
    if pilot is None:
        pilot, _ = importance_draws(target, q, rng, n_pilot)
    why_not = weights_fail(pilot, max_khat, "a pilot of")
    if why_not:
        return (), None, None, why_not
    n = 2 * (min(n_draws, MAX_STORED // max(target.dim, 1)) // 2)
    log_w, X = importance_draws(target, q, rng, n)
    why_not = weights_fail(log_w, max_khat, "all")
    if why_not:
        return (), None, None, why_not
    estimates, record = halves("is_modes", log_w)
    return estimates, record, resampled_quarters(X, log_w, rng), ""
