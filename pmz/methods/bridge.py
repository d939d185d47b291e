"""Bridge sampling (``"bridge"``): BAR with one step, from a reference fitted to posterior draws to the posterior
(Meng & Wong 1996; Gronau et al. 2017). The draws are the user's (``posterior=``) or a ``pm.sample`` run's; the
reference is fitted on one half of each chain and the bridge uses the other (:mod:`pmz.runners.bridge_sampling`).
With ``n_chunks`` or ``executor=`` the ``pm.sample`` chains run in groups, each group one ``pm.sample`` call with its
own seed, wherever the executor puts it.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..estimators.bar import bar
from ..execution.executors import Task
from ..runners.bridge_sampling import run_bridge
from ..runners.pooling import split
from ..model.pymc import ModelSpecificationError
from ..runners.draw_trust import chains_from_flat, given_draws_trust, missed_mode, prior_reference
from ..runners.starts import divergences_in, nuts_draws, posterior_to_flat
from .annealing import two_way_estimator

__all__ = ["run_bridge_method", "estimate_bridge"]


def run_bridge_method(family, kernel, options, rng, progressbar, target, chunks=None):
    if target.kind != "pymc":
        raise ValueError("pmz: method='bridge' needs a PyMC model (posterior draws in its value space)")
    if target.improper_priors:  # the advice must be one that runs: bar from a Laplace reference does
        raise ModelSpecificationError(
            f"pmz: improper prior on {target.improper_priors} (pm.Flat / pm.HalfFlat): its evidence has no "
            "scale, so no Bayes factor can use it. Give these variables proper priors (e.g. pm.Normal(..., 100)); "
            "or, for log Z relative to the improper prior's arbitrary scale, method='bar' with reference='laplace'"
        )
    if target.layout.discrete_mask.any():
        raise ValueError(
            "pmz: method='bridge' fits a continuous reference to the posterior draws: it needs continuous free "
            "variables; method='auto' (the default) handles discrete ones"
        )
    draws_rng, bridge_rng = rng.spawn(2)
    search_rng = bridge_rng.spawn(1)[0]
    if options.posterior is None:
        X, chain, divergences = _nuts_in_chunks(target, options, draws_rng, progressbar, chunks)
        source, option = "nuts", "pm.sample"
    else:
        X, chain = posterior_to_flat(target, options.posterior)
        divergences = divergences_in(options.posterior)
        source, option = "posterior", "posterior"
    # one compiled function for all: the bridge's evaluations go through the gradient function the mode search
    # below needs anyway (CompiledModel.log_densities_once), instead of compiling the value function as well
    target.log_densities_and_grads(X[:1])
    record = run_bridge(
        target,
        X,
        chain,
        bridge_rng,
        reference=options.bridge_reference,
        n_reference=options.n_reference,
        df=options.df,
        split=options.split,
    )
    missed = _missed_mode(target, X, chain, record, search_rng)
    count, n_draws = (None, 0) if divergences is None else divergences
    trust = given_draws_trust(record.reverse.notes.draws.check, count, n_draws, option, missed)
    notes = replace(record.reverse.notes, draws=trust)  # the verdict on the draws, read by with_draws_check
    return replace(record, forward=replace(record.forward, notes=notes), reverse=replace(record.reverse, notes=notes),
                   reverse_start=source)


def _missed_mode(target, X, chain, record, rng) -> str:
    """Whether the draws miss a mode (:func:`pmz.runners.draw_trust.missed_mode`), against the bridge's own
    estimate."""
    log_z = bar(record.forward, record.reverse, n_bootstrap=0, n_eff_r=record.n_eff_reverse).log_z
    return missed_mode(target, prior_reference(target), chains_from_flat(target, X, chain), rng, log_z)


def _nuts_chunk(compiled, n, rng, chains, tune, progressbar=False):
    """One group of ``pm.sample`` chains (a chunk's work): flat draws, their chain numbers and ``(divergent
    transitions, draws)``."""
    X, chain, idata = nuts_draws(compiled, n, rng, chains=chains, tune=tune, progressbar=progressbar)
    return X, chain, divergences_in(idata) or (0, 0)


def _nuts_in_chunks(target, options, rng, progressbar, chunks):
    """``options.n_draws`` draws from ``options.n_chains`` ``pm.sample`` chains, in ``n_chunks`` groups of chains,
    each one ``pm.sample`` call with its own seed (spawned from ``rng``): the same bits wherever the groups run.
    Without a chunk runner the one group runs here directly (Ctrl-C keeps ``pm.sample``'s own message)."""
    per_chain = -(-options.n_draws // options.n_chains)
    n_chunks = 1 if chunks is None else chunks.count(options.n_chunks, options.n_chains, default=options.n_chains)
    sizes = split(options.n_chains, n_chunks)
    rngs = rng.spawn(n_chunks)
    if chunks is None:
        X, chain, divergences = _nuts_chunk(target, per_chain * sizes[0], rngs[0], sizes[0], options.nuts_tune,
                                            progressbar)
        return X[: options.n_draws], chain[: options.n_draws], divergences
    own = chunks.own_bar(n_chunks)
    tasks = [Task(f"nuts-{g:04d}", dict(n=per_chain * k, rng=r, chains=k), work=float(k))
             for g, (k, r) in enumerate(zip(sizes, rngs))]
    done = chunks.run(_nuts_chunk, target, dict(compiled=target, tune=options.nuts_tune, progressbar=own), tasks,
                      desc="bridge: pm.sample")
    if len(done) < len(tasks):
        raise KeyboardInterrupt(
            f"pmz: interrupted with {len(done)} of {len(tasks)} groups of pm.sample chains finished; nothing was "
            "estimated"
        )
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    X = np.concatenate([done[t.key][0] for t in tasks])
    chain = np.concatenate([done[t.key][1] + offsets[g] for g, t in enumerate(tasks)])
    divergences = tuple(int(sum(done[t.key][2][i] for t in tasks)) for i in (0, 1))
    return X[: options.n_draws], chain[: options.n_draws], divergences


def estimate_bridge(record, options, rng):
    """Bridge sampling is BAR with one step (reference -> posterior); the result says "bridge", its evidence group
    names the estimator (``estimator = "bar"``)."""
    estimate = two_way_estimator("bar")(record, options, rng)
    return replace(estimate, method="bridge", diagnostics=replace(estimate.diagnostics, estimator="bar"))
