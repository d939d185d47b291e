"""pmz's many-chain HMC (:mod:`pmz.runners.posterior_hmc`) in chunks of chains, here or on an executor.

The default's chains warm up together: one metric estimated from all of them and one trajectory length from
their median step size. Chains that share their adaptation at every iteration cannot be spread over workers, so a
run with ``n_chunks`` cuts the chains into that many consecutive groups, and each group is a whole run of its own
(:func:`~pmz.runners.posterior_hmc.sample_posterior`: its own warm-up, metric, trajectory length and random
stream, spawned from the call's generator before any group runs). The draws therefore depend on the seed and on
``n_chunks`` (one chunk: every chain adapts with every other, the run without an executor), never on the executor,
its number of workers or the order in which the groups finish.

:class:`ChainChunks` runs the first pass (warm-up and draws) and later draws (:meth:`ChainChunks.more`) of every
group through a :class:`~pmz.execution.executors.ChunkRunner`; the merged :class:`PosteriorDraws` remember each
chain's group (``group``) and each group's frozen sampler (``parts``), so that more draws continue every chain
with its own group's metric, step sizes and trajectory length.

A deadline crosses processes as a wall-clock time (:mod:`pmz.auto.clock`): each group turns it into its own
``time.perf_counter()`` deadline when it starts.
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from ..execution.executors import Task
from ..interrupts import interrupts_as_keyboard
from ..runners.pooling import split
from ..runners.posterior_hmc import PosteriorDraws, continue_sampling, max_split_rhat, sample_posterior
from .clock import local_deadline, wall_until

__all__ = ["ChainChunks", "merge_draws", "append_draws"]

_INTERRUPTED_CHAINS = "pmz: interrupted (Ctrl-C) while the default's chains ran"


def _first_pass(target, starts, rng, n_draws, n_warmup, until, progress=None, progressbar=False):
    """One group's warm-up and first draws (a chunk's work; ``progress``: the warm-up's own report, when the one
    group runs here)."""
    with interrupts_as_keyboard(_INTERRUPTED_CHAINS):  # Ctrl-C inside a compiled function: the runner keeps count
        return sample_posterior(target, rng, starts=starts, n_chains=starts.shape[0], n_draws=n_draws,
                                n_warmup=n_warmup, progress=progress, deadline=local_deadline(until))


def _more_draws(target, part, start, rng, n_more, until, min_draws, progressbar=False):
    """``n_more`` further draws of one group's chains from their states ``start`` (a chunk's work): the new draws
    only."""
    with interrupts_as_keyboard(_INTERRUPTED_CHAINS):
        return continue_sampling(target, part, rng, n_more, deadline=local_deadline(until), min_draws=min_draws,
                                 start=start)


def _header(draws: PosteriorDraws) -> PosteriorDraws:
    """A group's frozen sampler without its draws: what continuing its chains needs (small to ship)."""
    n = draws.n_chains
    return replace(draws, x=np.empty((n, 0, draws.x.shape[2])), log_posterior=np.empty((n, 0)), acceptance=0.0,
                   divergences=0, divergences_by_chain=None, rhat=np.inf, n_grad_evals=0, seconds=0.0,
                   group=None, parts=())


def merge_draws(parts, seconds: float) -> PosteriorDraws:
    """The draws of consecutive groups of chains (each a :func:`sample_posterior` run) as one
    :class:`PosteriorDraws`: chains concatenated in group order, ``group`` (each chain's group) and ``parts`` (each
    group's sampler, without draws) kept for :meth:`ChainChunks.more`. The metric and trajectory length shown are
    the first group's; the warm-up's flags say whether any group was cut and how far the shortest got."""
    if len(parts) == 1:
        return replace(parts[0], seconds=seconds)
    n_draws = min(p.n_draws for p in parts)  # a deadline can stop groups at different draws: keep the common ones
    x = np.concatenate([p.x[:, :n_draws] for p in parts])
    log_post = np.concatenate([p.log_posterior[:, :n_draws] for p in parts])
    by_chain = [p.divergences_by_chain if p.divergences_by_chain is not None else np.zeros(p.n_chains, int)
                for p in parts]
    sizes = np.array([p.n_chains for p in parts])
    info = replace(
        parts[0].info,
        n_warmup_done=min(p.info.n_warmup_done or 0 for p in parts),
        warmup_cut=any(p.info.warmup_cut for p in parts),
        warmup_settled_at=None if any(p.info.warmup_settled_at is None for p in parts)
        else max(p.info.warmup_settled_at for p in parts),
        n_chunks=len(parts),
    )
    return replace(
        parts[0],
        x=x,
        log_posterior=log_post,
        step_size=np.concatenate([np.asarray(p.step_size) for p in parts]),
        acceptance=float(np.average([p.acceptance for p in parts], weights=sizes)),
        divergences=int(sum(b.sum() for b in by_chain)),
        divergences_by_chain=np.concatenate(by_chain),
        rhat=max_split_rhat(x, log_post),
        n_grad_evals=int(sum(p.n_grad_evals for p in parts)),
        seconds=seconds,
        info=info,
        group=np.repeat(np.arange(len(parts)), sizes),
        parts=tuple(_header(p) for p in parts),
    )


def append_draws(draws: PosteriorDraws, new: list, chains: list, seconds: float) -> PosteriorDraws:
    """``draws`` with the new draws of its groups appended: ``new[g]`` holds the draws of the chains
    ``chains[g]`` (indices into ``draws``), as many per chain in every group (the fewest any group made)."""
    n_new = min(d.n_draws for d in new)
    if n_new == 0:
        return replace(draws, seconds=draws.seconds + seconds)
    dim = draws.x.shape[2]
    x_new = np.empty((draws.n_chains, n_new, dim))
    v_new = np.empty((draws.n_chains, n_new))
    by_chain = np.zeros(draws.n_chains, dtype=int)
    accept = 0.0
    for d, rows in zip(new, chains):
        x_new[rows], v_new[rows] = d.x[:, :n_new], d.log_posterior[:, :n_new]
        by_chain[rows] = 0 if d.divergences_by_chain is None else d.divergences_by_chain
        accept += d.acceptance * rows.size
    x = np.concatenate([draws.x, x_new], axis=1)
    log_post = np.concatenate([draws.log_posterior, v_new], axis=1)
    old = draws.divergences_by_chain if draws.divergences_by_chain is not None else np.zeros(draws.n_chains, int)
    n_old = draws.n_draws
    return replace(
        draws,
        x=x,
        log_posterior=log_post,
        acceptance=(draws.acceptance * n_old + accept / draws.n_chains * n_new) / (n_old + n_new),
        divergences=int((old + by_chain).sum()),
        divergences_by_chain=old + by_chain,
        rhat=max_split_rhat(x, log_post),
        n_grad_evals=draws.n_grad_evals + int(sum(d.n_grad_evals for d in new)),
        seconds=draws.seconds + seconds,
    )


class ChainChunks:
    """The chains of one call in ``n_chunks`` groups, run through ``runner`` (a
    :class:`~pmz.execution.executors.ChunkRunner`).

    Parameters
    ----------
    runner : ChunkRunner
    target : CompiledModel
    n_chunks : int
        Groups of consecutive chains; one: all chains adapt together (and the warm-up's own ``progress`` is shown
        when the group runs here).
    """

    def __init__(self, runner, target, n_chunks: int):
        self.runner, self.target, self.n_chunks = runner, target, int(n_chunks)
        self._calls = 0

    def _key(self, what):
        self._calls += 1
        return f"chains-{self._calls:02d}-{what}"

    def sample(self, rng, starts, *, n_draws, n_warmup, deadline=None, progress=None) -> PosteriorDraws:
        """Warm up and draw every group (:func:`sample_posterior`); ``starts (n_chains, dim)``."""
        starts = np.asarray(starts, dtype=float)
        sizes = split(starts.shape[0], self.n_chunks)
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        rngs = rng.spawn(len(sizes))
        own = progress if self.runner.own_bar(len(sizes)) else None
        key = self._key("warm-up")
        tasks = [
            Task(f"{key}-{g:04d}", dict(starts=starts[a:b], rng=r, n_draws=int(n_draws), n_warmup=int(n_warmup),
                                        until=wall_until(deadline), progress=own), work=float(b - a))
            for g, (a, b, r) in enumerate(zip(bounds[:-1], bounds[1:], rngs))
        ]
        t0 = time.perf_counter()
        done = self._run(_first_pass, tasks, own is not None, "auto: chains")
        return merge_draws([done[t.key] for t in tasks], time.perf_counter() - t0)

    def more(self, draws: PosteriorDraws, rng, n_more: int, *, deadline=None, min_draws: int = 0) -> PosteriorDraws:
        """``n_more`` further draws of every chain, each group with its own frozen sampler."""
        if draws.group is None:  # one group: the chains as they are
            groups, parts = [np.arange(draws.n_chains)], [_header(draws)]
        else:
            groups = [np.flatnonzero(draws.group == g) for g in range(len(draws.parts))]
            parts = list(draws.parts)
        rngs = rng.spawn(len(groups))
        key = self._key("draws")
        tasks, rows = [], []
        for g, (members, part, r) in enumerate(zip(groups, parts, rngs)):
            if members.size == 0:  # every chain of the group was dropped
                continue
            part = replace(part, x=np.empty((members.size, 0, draws.x.shape[2])),
                           log_posterior=np.empty((members.size, 0)), step_size=np.asarray(draws.step_size)[members])
            tasks.append(Task(f"{key}-{g:04d}", dict(part=part, start=draws.x[members, -1], rng=r,
                                                     n_more=int(n_more), until=wall_until(deadline),
                                                     min_draws=int(min_draws)), work=float(members.size)))
            rows.append(members)
        t0 = time.perf_counter()
        done = self._run(_more_draws, tasks, False, "auto: more draws")
        return append_draws(draws, [done[t.key] for t in tasks], rows, time.perf_counter() - t0)

    def _run(self, fn, tasks, own_bar, desc):
        context = {"target": self.target, "progressbar": bool(own_bar)}  # the warm-up's own bar, or the runner's
        done = self.runner.run(fn, self.target, context, tasks, desc=desc)
        if len(done) < len(tasks):
            raise KeyboardInterrupt(
                f"pmz: interrupted with {len(done)} of {len(tasks)} groups of chains finished; nothing to estimate from"
            )
        return done
