"""Posterior draws from many HMC chains moved together (one compiled log-density + gradient call per leapfrog
step for all chains).

The default evidence route needs genuine posterior draws: they fit the reference q and are the reverse half of
the bridge. pmz's compiled model already evaluates a whole batch in one call, so ``n_chains`` chains cost about
what one costs, and the chains share what they learn during warm-up.

Warm-up (Stan's windowed adaptation, with the metric estimated across all chains):

1. a fast window: per-chain step size by dual averaging (Hoffman & Gelman 2014, eq 6; target acceptance 0.8);
2. slow windows of ``25, 50, 100, ...`` iterations; after each, the metric becomes the pooled within-chain
   covariance of the window's draws (each chain's deviations about its own mean, so that chains in separate modes
   do not stretch it), ``Sigma = n/(n+5) S + 1e-3 * 5/(n+5) I`` (dense when ``dim <= dense_max``, else its
   diagonal), and dual averaging restarts;
3. a final fast window.

Leapfrog in whitened coordinates: ``x = L z`` with ``L L' = Sigma``, momentum ``p ~ N(0, I)``, so
``x <- x + eps L p`` and ``p <- p + eps L' grad log pi(x)``. The trajectory spans about ``trajectory_length``
(1.5) whitened units, ``n_leapfrog = clip(round(1.5 / median eps), 1, max_leapfrog)``, with the step size
jittered by +-20% per chain and iteration. After warm-up the step sizes are frozen at their dual-averaging means
and every iteration is kept.

Default starts (:func:`dispersed_starts`): PyMC's initial point plus uniform(-2, 2) jitter in the unconstrained
space (PyMC's ``jitter+adapt_diag`` start); starts with a non-finite log density are redrawn with less jitter, so
vague priors whose forward draws underflow never block the start. The default evidence route replaces half of
them by exact prior draws (:func:`pmz.runners.draw_trust.finite_starts`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np

from ..sample_diagnostics import split_rhat
from ..kernels.adaptation import dual_averaging_init, dual_averaging_step_size, dual_averaging_update
from ..model.target import count_evaluations

__all__ = ["PosteriorDraws", "WarmupNotes", "sample_posterior", "continue_sampling", "dispersed_starts", "max_split_rhat"]

_TARGET_ACCEPT = 0.8
_DIVERGENCE = 1000.0
_SETTLED_RHAT = 1.05  # the warm-up's chains agree (see _adapted)
_SETTLED_METRIC = 1.5  # successive metric windows agree within this factor in every direction
_MIN_WINDOW = 10  # fewest iterations of a metric window, and of the final step-size window after a deadline


@dataclass(frozen=True)
class WarmupNotes:
    """How the chains behind :class:`PosteriorDraws` were made.

    Attributes
    ----------
    source : {"pmz", "posterior"}
        pmz's own chains (:func:`sample_posterior`) or draws the user gave (``posterior=``).
    dense_metric : bool or None
        Whether the warm-up's metric is dense (None for given draws).
    n_warmup : int or None
        Warm-up iterations asked for.
    n_warmup_done : int or None
        Warm-up iterations run (fewer where ``max_time`` cut the warm-up or the adaptation settled early).
    warmup_cut : bool
        ``max_time`` was spent during the warm-up: the chains may not have converged.
    warmup_settled_at : int or None
        The iteration at which the chains agreed and the metric stopped changing (the remaining metric windows
        were skipped); None where that did not happen.
    n_chunks : int
        Groups of chains that warmed up on their own (:mod:`pmz.auto.chain_groups`).
    """

    source: str = "pmz"
    dense_metric: bool | None = None
    n_warmup: int | None = None
    n_warmup_done: int | None = None
    warmup_cut: bool = False
    warmup_settled_at: int | None = None
    n_chunks: int = 1


@dataclass(frozen=True)
class PosteriorDraws:
    """Equally weighted posterior draws of ``n_chains`` chains in the flat unconstrained space.

    Attributes
    ----------
    x : ndarray (n_chains, n_draws, dim)
    log_posterior : ndarray (n_chains, n_draws)
        log prior + log likelihood at each draw.
    step_size : ndarray (n_chains,)
    n_leapfrog : int
    metric : ndarray (dim, dim) or (dim,)
        The warm-up's covariance estimate (its Cholesky factor whitened the leapfrog), dense or diagonal.
    acceptance : float
        Mean acceptance probability of the sampling iterations.
    divergences : int
        Sampling iterations whose energy error exceeded 1000.
    divergences_by_chain : ndarray (n_chains,) of int or None
        The same, chain by chain (so that dropping chains drops their divergences).
    group : ndarray (n_chains,) of int or None
        Chains run in groups that adapted separately (:mod:`pmz.auto.chain_groups`): each chain's group, and
        ``parts`` each group's frozen sampler (metric, trajectory length; no draws). None: one group, this one.
    rhat : float
        Largest split R-hat over the coordinates and the log posterior.
    n_grad_evals : int
        Batched gradient calls (each for all chains).
    seconds : float
    """

    x: np.ndarray
    log_posterior: np.ndarray
    step_size: np.ndarray
    n_leapfrog: int
    metric: np.ndarray
    acceptance: float
    divergences: int
    rhat: float
    n_grad_evals: int
    seconds: float
    info: WarmupNotes = field(default_factory=WarmupNotes)
    divergences_by_chain: np.ndarray | None = None
    group: np.ndarray | None = None
    parts: tuple = ()

    @property
    def n_chains(self) -> int:
        return self.x.shape[0]

    @property
    def n_draws(self) -> int:
        return self.x.shape[1]

    def keep(self, chains) -> "PosteriorDraws":
        """The draws of the given chains only (boolean mask or indices), with their split R-hat."""
        chains = np.asarray(chains)
        x, log_post = self.x[chains], self.log_posterior[chains]
        by_chain = None if self.divergences_by_chain is None else self.divergences_by_chain[chains]
        group = None if self.group is None else self.group[chains]
        return replace(self, x=x, log_posterior=log_post, step_size=np.asarray(self.step_size)[chains],
                       rhat=max_split_rhat(x, log_post), divergences_by_chain=by_chain, group=group,
                       divergences=self.divergences if by_chain is None else int(by_chain.sum()))

    def flat(self, chains=None):
        """Draws of the given chains (default all) as ``(X (n, dim), chain (n,))``."""
        chains = np.arange(self.n_chains) if chains is None else np.asarray(chains)
        X = self.x[chains].reshape(-1, self.x.shape[2])
        return X, np.repeat(chains, self.n_draws)


def log_posterior_and_grad(compiled, X):
    """``log p~(x)`` and its gradient for a batch; ``-inf`` (and a zero gradient) where either is not finite."""
    lp, ll, glp, gll = compiled.log_densities_and_grads(X)
    value = lp + ll
    grad = glp + gll
    bad = ~np.isfinite(value) | ~np.all(np.isfinite(grad), axis=1)
    value = np.where(bad, -np.inf, value)
    grad = np.where(bad[:, None], 0.0, grad)
    return value, grad


def dispersed_starts(compiled, rng: np.random.Generator, n: int, *, jitter: float = 2.0, tries: int = 20):
    """``n`` starting points ``X (n, dim)`` and their log posterior ``(n,)``: PyMC's initial point plus
    uniform(-jitter, jitter) noise, redrawn with half the jitter where the log density is not finite. Starts that
    are still not finite (the initial point itself may lie where the likelihood is zero) become copies of finite
    ones, and the initial point is the last resort when none is finite."""
    x0 = compiled.initial_point()
    X = x0 + rng.uniform(-jitter, jitter, size=(n, compiled.dim))
    value, _ = log_posterior_and_grad(compiled, X)
    scale = jitter
    for _ in range(tries):
        bad = ~np.isfinite(value)
        if not bad.any():
            break
        scale /= 2
        X[bad] = x0 + rng.uniform(-scale, scale, size=(int(bad.sum()), compiled.dim))
        value[bad] = log_posterior_and_grad(compiled, X[bad])[0]
    bad = ~np.isfinite(value)
    good = np.flatnonzero(~bad)
    if bad.any() and good.size:  # e.g. a likelihood that is zero near the initial point: copies of finite starts
        pick = rng.choice(good, size=int(bad.sum()))
        X[bad], value[bad] = X[pick], value[pick]
    elif bad.any():
        X[bad] = x0
        value[bad] = log_posterior_and_grad(compiled, x0[None, :])[0][0]
    return X, value


def max_split_rhat(x, log_posterior) -> float:
    """The largest split R-hat over the coordinates of ``x (chain, draw, dim)`` and the log posterior."""
    rhat = split_rhat(np.concatenate([x, np.asarray(log_posterior)[:, :, None]], axis=2))
    return float(np.nanmax(rhat)) if np.isfinite(rhat).any() else np.inf


def _hmc_step(compiled, rng, x, value, grad, eps, chol, n_leapfrog):
    """One HMC transition of every chain; ``chol`` is the metric's Cholesky factor (dense) or sd (diagonal)."""
    n, dim = x.shape
    dense = chol.ndim == 2
    to_x = (lambda p: p @ chol.T) if dense else (lambda p: p * chol)
    to_z = (lambda g: g @ chol) if dense else (lambda g: g * chol)
    eps_i = eps[:, None] * rng.uniform(0.8, 1.2, size=(n, 1))
    p0 = rng.standard_normal((n, dim))
    with np.errstate(over="ignore", invalid="ignore"):
        p = p0 + 0.5 * eps_i * to_z(grad)
        x1 = x
        for i in range(n_leapfrog):
            x1 = x1 + eps_i * to_x(p)
            value1, grad1 = log_posterior_and_grad(compiled, x1)
            p = p + (eps_i if i < n_leapfrog - 1 else 0.5 * eps_i) * to_z(grad1)
        log_ratio = value1 - 0.5 * np.sum(p * p, axis=1) - value + 0.5 * np.sum(p0 * p0, axis=1)
    log_ratio = np.where(np.isfinite(log_ratio), log_ratio, -np.inf)
    acceptance = np.exp(np.minimum(log_ratio, 0.0))
    accept = np.log(rng.uniform(size=n)) < log_ratio
    divergent = log_ratio < -_DIVERGENCE
    x = np.where(accept[:, None], x1, x)
    value = np.where(accept, value1, value)
    grad = np.where(accept[:, None], grad1, grad)
    return x, value, grad, acceptance, divergent


def _within_chain_deviations(window):
    """Each chain's draws of a warm-up window ``(iteration, chain, dim)`` minus that chain's mean, pooled
    ``(iteration * chain, dim)`` and scaled by ``sqrt(m / (m - 1))`` (``m`` iterations) so that their covariance
    is the pooled within-chain covariance. Chains in separate modes (or stuck) then do not stretch the metric
    across the gaps between them, which would shrink every chain's step size (Stan's metric is one chain's)."""
    m = window.shape[0]
    deviations = window - window.mean(axis=0, keepdims=True)
    return deviations.reshape(-1, window.shape[2]) * np.sqrt(m / max(m - 1, 1))


def _metric_from(draws, dense: bool):
    """Regularised covariance of pooled draws ``(m, dim)`` and its Cholesky factor (or sd vector)."""
    m, dim = draws.shape
    shrink = m / (m + 5.0)
    if dense:
        cov = np.atleast_2d(np.cov(draws, rowvar=False))
        cov = shrink * cov + 1e-3 * (1 - shrink) * np.eye(dim)
        try:
            return cov, np.linalg.cholesky(cov)
        except np.linalg.LinAlgError:
            dense = False
    var = shrink * np.var(draws, axis=0) + 1e-3 * (1 - shrink)
    return var, np.sqrt(var)


def _adapted(window, previous, metric) -> bool:
    """Whether the warm-up has settled after a metric window ``(iteration, chain, dim)``: the chains agree
    (split R-hat of the window's draws at most :data:`_SETTLED_RHAT`) and the new metric is within a factor
    :data:`_SETTLED_METRIC` of the previous window's in every direction (eigenvalues of ``M_old^-1 M_new``).
    Then more metric windows would not change the sampler much and the warm-up ends with its final step-size
    window. In many dimensions the noise of a metric estimated from a window's draws alone exceeds the factor, so
    the full warm-up runs there."""
    if previous.shape != metric.shape:  # a dense metric that fell back to its diagonal: not settled
        return False
    if split_rhat(np.swapaxes(window, 0, 1)).max() > _SETTLED_RHAT:
        return False
    if metric.ndim == 2:
        ratio = np.linalg.eigvals(np.linalg.solve(previous, metric)).real
    else:
        ratio = metric / previous
    return bool(np.all(np.abs(np.log(np.maximum(ratio, 1e-300))) <= np.log(_SETTLED_METRIC)))


def _warmup_windows(n_warmup: int):
    """Iteration counts: initial fast window, slow windows doubling from 25, final fast window (Stan's scheme)."""
    fast_start, fast_end = max(int(0.15 * n_warmup), 10), max(int(0.1 * n_warmup), 10)
    slow_total = max(n_warmup - fast_start - fast_end, 25)
    windows, size = [], 25
    while slow_total > 0:
        if slow_total < 3 * size:  # the last window takes the remainder
            windows.append(slow_total)
            break
        windows.append(size)
        slow_total -= size
        size *= 2
    return fast_start, windows, fast_end


def sample_posterior(
    compiled,
    rng: np.random.Generator,
    *,
    n_chains: int = 32,
    n_draws: int = 125,
    n_warmup: int = 400,
    starts=None,
    dense_max: int = 400,
    trajectory_length: float = 1.5,
    max_leapfrog: int = 64,
    progress=None,
    deadline: float | None = None,
) -> PosteriorDraws:
    """Warm up and run ``n_chains`` HMC chains on the posterior of ``compiled`` (see the module docstring).

    Parameters
    ----------
    compiled : CompiledModel
    rng : numpy.random.Generator
    n_chains, n_draws, n_warmup : int
    starts : array (n_chains, dim), optional
        Default :func:`dispersed_starts`.
    dense_max : int
        Largest dimension with a dense metric.
    progress : callable(str, float), optional
        Called with a phase label and the fraction done.
    deadline : float, optional
        ``time.perf_counter()`` value after which sampling stops early: a warm-up that reaches it skips its
        remaining metric windows and ends with a final step-size window of ``_MIN_WINDOW`` iterations
        (``info.warmup_cut``, ``info.n_warmup_done``); at least 10 draws are kept. After a cut the
        trajectories are at most 10 leapfrog steps (the metric may not be adapted yet, the step size tiny).
    """
    t0 = time.perf_counter()
    evals = count_evaluations(compiled)
    dim = compiled.dim
    x = dispersed_starts(compiled, rng, n_chains)[0] if starts is None else np.array(starts, dtype=float)
    value, grad = log_posterior_and_grad(compiled, x)
    dense = dim <= dense_max
    metric, chol = (np.eye(dim), np.eye(dim)) if dense else (np.ones(dim), np.ones(dim))
    eps = np.full(n_chains, 0.5 / max(dim, 1) ** 0.25)
    adapt = dual_averaging_init(eps)  # one step size per chain (Hoffman & Gelman 2014, section 3.2)

    def n_leapfrog_for(eps, cap):
        return int(np.clip(round(trajectory_length / np.median(eps)), 1, cap))

    fast_start, slow, fast_end = _warmup_windows(n_warmup)
    schedule = [("fast", fast_start)] + [("slow", w) for w in slow] + [("fast", fast_end)]
    last = len(schedule) - 1
    done, cut_at = 0, None  # cut_at: the warm-up iteration at which the deadline passed or the adaptation settled
    converged_at, out_of_time = None, False
    for phase, (kind, length) in enumerate(schedule):
        if cut_at is not None and phase < last:
            continue  # out of time: skip to the final fast window, shortened, to tune the step size
        out_of_time = cut_at is not None and converged_at is None  # then short trajectories: the metric may be
        if out_of_time:                                            # unadapted and its step size tiny
            length = min(length, _MIN_WINDOW)
        window = []
        for _ in range(length):
            cap = 10 if phase == 0 or out_of_time else max_leapfrog
            eps = np.exp(adapt.log_step_size)
            n_leapfrog = n_leapfrog_for(eps, cap)
            x, value, grad, acc, _ = _hmc_step(compiled, rng, x, value, grad, eps, chol, n_leapfrog)
            adapt = dual_averaging_update(adapt, np.where(np.isfinite(acc), acc, 0.0), _TARGET_ACCEPT)
            if kind == "slow":
                window.append(x)
            done += 1
            if progress is not None and done % 10 == 0:
                progress("warm-up", done / (n_warmup + n_draws))
            if phase < last and cut_at is None and deadline is not None and time.perf_counter() > deadline:
                cut_at = done
                break
        if kind == "slow" and len(window) >= _MIN_WINDOW:
            previous = metric
            metric, chol = _metric_from(_within_chain_deviations(np.stack(window)), dense)
            restart = dual_averaging_step_size(adapt) if adapt.m > 10 else np.exp(adapt.log_step_size)
            adapt = dual_averaging_init(restart)
            if phase >= 2 and cut_at is None and phase < last - 1 and _adapted(np.stack(window), previous, metric):
                converged_at = done  # the remaining metric windows are skipped
                cut_at = done
    empty = PosteriorDraws(
        x=np.empty((n_chains, 0, dim)),
        log_posterior=np.empty((n_chains, 0)),
        step_size=dual_averaging_step_size(adapt),
        n_leapfrog=n_leapfrog_for(dual_averaging_step_size(adapt), 10 if out_of_time else max_leapfrog),
        metric=metric,
        acceptance=0.0,
        divergences=0,
        rhat=np.inf,
        n_grad_evals=evals.n_grad_evals,
        seconds=time.perf_counter() - t0,
        info=WarmupNotes(dense_metric=bool(metric.ndim == 2), n_warmup=n_warmup, n_warmup_done=done,
                         warmup_cut=out_of_time, warmup_settled_at=converged_at),
    )

    def report(kept):
        progress("posterior draws", (n_warmup + kept) / (n_warmup + n_draws))

    report = None if progress is None else report
    return continue_sampling(compiled, empty, rng, n_draws, deadline=deadline, min_draws=10, start=x, report=report)


def continue_sampling(
    compiled, draws: PosteriorDraws, rng, n_more: int, *, deadline=None, min_draws: int = 0, start=None, report=None
) -> PosteriorDraws:
    """``n_more`` further draws of every chain with the frozen warm-up parameters, appended to ``draws``.

    ``start``: the chains' current states when ``draws`` holds none yet (right after warm-up). Stops early after
    ``min_draws`` new draws once ``deadline`` (a ``time.perf_counter()`` value) has passed.
    """
    t0 = time.perf_counter()
    evals = count_evaluations(compiled)
    metric = draws.metric
    chol = np.linalg.cholesky(metric) if metric.ndim == 2 else np.sqrt(metric)
    x = draws.x[:, -1].copy() if start is None else np.asarray(start, dtype=float)
    value, grad = log_posterior_and_grad(compiled, x)
    xs, values, accept_sum = [], [], 0.0
    by_chain = np.zeros(x.shape[0], dtype=int)
    for i in range(n_more):
        x, value, grad, acc, div = _hmc_step(compiled, rng, x, value, grad, draws.step_size, chol, draws.n_leapfrog)
        xs.append(x)
        values.append(value)
        accept_sum += float(np.mean(acc))
        by_chain += div.astype(int)
        if report is not None and (i + 1) % 10 == 0:
            report(i + 1)
        if deadline is not None and i + 1 >= min_draws and time.perf_counter() > deadline:
            break
    if not xs:
        return draws
    new_x = np.concatenate([draws.x, np.stack(xs, axis=1)], axis=1)
    new_v = np.concatenate([draws.log_posterior, np.stack(values, axis=1)], axis=1)
    n_old, n_new = draws.n_draws, len(xs)
    return PosteriorDraws(
        x=new_x,
        log_posterior=new_v,
        step_size=draws.step_size,
        n_leapfrog=draws.n_leapfrog,
        metric=metric,
        acceptance=(draws.acceptance * n_old + accept_sum) / (n_old + n_new),
        divergences=draws.divergences + int(by_chain.sum()),
        divergences_by_chain=by_chain if draws.divergences_by_chain is None or draws.n_draws == 0
        else draws.divergences_by_chain + by_chain,
        rhat=max_split_rhat(new_x, new_v),
        n_grad_evals=draws.n_grad_evals + evals.n_grad_evals,
        seconds=draws.seconds + time.perf_counter() - t0,
        info=draws.info,
    )
