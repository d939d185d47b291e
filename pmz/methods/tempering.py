"""Glue between ``pmz.evidence`` and the simulated-tempering runners: methods "rts", "ts", "ti", "ti_rb", "mbar"
and "wang_landau" all run the same pipeline and differ only in the estimator applied to the trace.

Pipeline (RTS sections 2.4-2.5; CAST section 5):

1. the ladder ``b_0 = 0 < ... < b_K = 1`` (``schedule``, ``n_temps``: K + 1 levels);
2. a pilot (resample-move along the ladder, its own random stream) tunes each level's kernel parameters, which are
   then frozen, and gives a first guess of the whole curve ``log Z_k`` (``init="pilot"``);
3. for ``"wang_landau"`` (or ``init="wang_landau"``): Wang-Landau adapts the guesses for ``wl_sweeps`` sweeps;
4. the initial iterations of RTS (``n_initial`` short runs of ``initial_sweeps`` sweeps with RTS updates, stopped
   once ``max_k |r_k - c_hat_k| < 0.1 / K``);
5. the long run of ``n_sweeps`` sweeps with frozen guesses, recorded as a TemperingTrace.

Steps 1-4 run here; the long run goes through a chunk runner (:mod:`pmz.execution.executors`: one chunk here unless
``n_chunks``, ``executor=`` or ``checkpoint=`` ask for more): each chunk continues its whole blocks of chains from
the initial iterations' last states with the frozen guesses, every chain on its own stream, and
:func:`pmz.runners.pooling.merge_traces` adds the blocks' batch sums in order (and joins MBAR's samples), so the
trace is the same bits however the chains were grouped.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np


from ..estimators.mbar import mbar_tempering
from ..estimators.rts import rts, rts_combine, ts
from ..estimators.ti import TI_RULES, ti, ti_rb
from ..execution.executors import KEEP_ON_INTERRUPT, Task, local_runner
from ..runners.pooling import CHAIN_BLOCKS, chunk_rows, TRACE_SUMS, merge_traces, pooled_trace_sums
from ..runners.row_streams import RowStreams
from .schedule import setup_schedule
from ..runners.tempering_settings import TemperingSettings, WangLandauSettings
from ..runners.tempering_sweep import adapt_log_zhat, run_tempering
from ..runners.wang_landau import run_wang_landau

__all__ = [
    "TEMPERING_DESCRIPTIONS",
    "TEMPERING_ESTIMATORS",
    "run_tempering_method",
    "tempering_estimator",
]

TEMPERING_DESCRIPTIONS = {
    "rts": "Rao-Blackwellised tempered sampling: log Z_k from the level marginals (Carlson et al. 2016)",
    "ts": "simulated tempering with visit counts (+0.1 pseudo-counts)",
    "ti": "thermodynamic integration from simulated-tempering draws at each level",
    "ti_rb": "Rao-Blackwellised thermodynamic integration from simulated tempering (Carlson et al. 2016)",
    "mbar": "MBAR on the stored simulated-tempering draws (Shirts & Chodera 2008)",
    "wang_landau": "Wang-Landau adaptive tempering as the initialiser, RTS on the frozen weights (Salakhutdinov 2010)",
}


def _initial_guess(init, tuned, betas):
    n_levels = betas.size
    if isinstance(init, str):
        return tuned.log_z_for(betas) if (init == "pilot" and tuned is not None) else np.zeros(n_levels)
    guess = np.asarray(init, dtype=float)
    if guess.shape != (n_levels,) or not np.all(np.isfinite(guess)):
        raise ValueError(f"pmz: init must hold {n_levels} finite log Zhat_k guesses (one per level), got {guess.shape}")
    return guess - guess[0]


def _long_run(chunks, target, context, n_chains, n_chunks, rng, x, levels, method):
    """The long run's chains in chunks of whole blocks of chains (:func:`pmz.runners.pooling.chunk_rows`), their
    start states and levels with them, each chain on its own stream (:class:`~pmz.runners.row_streams.RowStreams`
    of the whole run); the chunks' traces pooled in chain order."""
    streams = RowStreams.spawn(rng, n_chains)
    tasks = []
    for c, (a, b) in enumerate(chunk_rows(n_chains, n_chunks, CHAIN_BLOCKS)):
        chunk = dict(
            streams=streams,
            rows=(a, b),
            start_x=None if x is None else x[a:b],
            start_levels=None if levels is None else levels[a:b],
        )
        tasks.append(Task(f"chains-{c:04d}", chunk, work=float(b - a)))
    done = chunks.run(run_tempering, target, context, tasks, desc=method)
    traces = [done[t.key] for t in tasks if t.key in done]
    if not traces:
        raise KeyboardInterrupt(
            f"pmz: interrupted before any tempering chunk finished; nothing to estimate from ({KEEP_ON_INTERRUPT})"
        )
    return merge_traces(traces)


def run_tempering_method(family, kernel, options, rng, progressbar, target, *, method, chunks=None):
    """Run the pipeline of the module docstring and return the long run's TemperingTrace."""
    init = "wang_landau" if method == "wang_landau" else options.init
    tune_rng, wl_rng, init_rng, run_rng = rng.spawn(4)
    pilot_guess = isinstance(init, str) and init == "pilot"
    betas, params, notes, tuned = setup_schedule(
        family, kernel, options, tune_rng, progressbar, need_pilot=pilot_guess
    )
    log_zhat = _initial_guess(init, tuned, betas)
    common = dict(n_chains=options.n_chains, level_move=options.level_move, n_steps_per_temp=options.n_steps_per_temp)
    x, wang_landau = None, {}
    if isinstance(init, str) and init == "wang_landau":
        wl_settings = WangLandauSettings(
            n_sweeps=options.wl_sweeps, wl_gamma0=options.wl_gamma0, wl_flatness=options.wl_flatness,
            wl_update=options.wl_update, **common,
        )
        log_zhat, x, _, wang_landau = run_wang_landau(
            family, kernel, betas, params, wl_settings, rng=wl_rng, log_g=log_zhat, progressbar=progressbar
        )
        wang_landau = {**wang_landau, "log_g": log_zhat.copy()}
    stages, converged, levels = [], None, None
    if options.n_initial > 0:
        log_zhat, x, levels, stages, converged = adapt_log_zhat(
            family,
            kernel,
            betas,
            params,
            TemperingSettings(n_sweeps=options.initial_sweeps, **common),
            log_zhat=log_zhat,
            rng=init_rng,
            max_iterations=options.n_initial,
            start_x=x,
            progressbar=progressbar,
        )
    settings = TemperingSettings(
        n_sweeps=options.n_sweeps, n_batches=options.n_batches, store_draws=options.store_draws or method == "mbar",
        **common,
    )
    chunks = local_runner(progressbar) if chunks is None else chunks
    n_chunks = chunks.count(options.n_chunks, options.n_chains)
    context = dict(family=family, kernel=kernel, betas=betas, params=params, settings=settings, log_zhat=log_zhat,
                   progressbar=chunks.own_bar(n_chunks), desc=method, keep_on_interrupt=chunks.whole_here(n_chunks))
    trace = _long_run(chunks, target, context, options.n_chains, n_chunks, run_rng, x, levels, method)
    # Ctrl-C during the long run: the finished sweeps, which the trace's notes say (pmz.evidence marks the result)
    notes = replace(notes.described(n_initial_run=len(stages), initial_converged=converged),
                    interrupted=trace.notes.interrupted)
    stage_fields = {}
    if stages:
        stage_fields = dict(
            stage_q=np.stack([s.c_hat * s.n_samples for s in stages]),
            stage_n=np.array([s.n_samples for s in stages]),
            stage_log_zhat=np.stack([s.log_zhat for s in stages]),
        )
    return replace(
        trace,
        wang_landau=wang_landau,
        notes=notes,
        **stage_fields,
    )


def _rts(trace, options):
    """RTS on the long run; with ``combine_stages`` also on the initial iterations after the first (RTS Appendix
    A). The first iteration starts from f0 with poor guesses: it is burn-in and is not combined."""
    if options.combine_stages and trace.stage_q is not None:
        stages = (trace.stage_q[1:], trace.stage_n[1:], trace.stage_log_zhat[1:])
        return rts_combine([trace], stages=stages)
    return rts(trace)


def _with_others(estimate, trace, options):
    """Every tempering result also lists the other cheap estimators of the same trace (one run, many estimates) in
    its ``estimates`` table: ``rts``, ``ts``, ``ti`` / ``ti_rb`` (the chosen ``ti_rule``), every TI rule
    (``ti_riemann``, ``ti_rb_corrected``, ...) and, when it ran, ``wang_landau`` (its ``log g``, no se)."""
    curve = rts(trace)
    others = {"rts": lambda: curve, "ts": lambda: ts(trace)}
    for rule in TI_RULES:
        others[f"ti_{rule}"] = lambda rule=rule: ti(trace, rule)
        others[f"ti_rb_{rule}"] = lambda rule=rule: ti_rb(trace, rule)
    others["ti"] = lambda: ti(trace, options.ti_rule)  # the chosen rule again, under the method's own name
    others["ti_rb"] = lambda: ti_rb(trace, options.ti_rule)
    estimates = {}
    for name, fn in others.items():
        other = fn()
        estimates[name] = (other.log_z, other.log_z_se)
    diagnostics = estimate.diagnostics
    if trace.wang_landau:
        estimates["wang_landau"] = (float(trace.wang_landau["log_g"][-1] + trace.log_z0), np.nan)
        note = "Wang-Landau's log g: an initialiser, too noisy for a final answer"
        diagnostics = replace(diagnostics, wang_landau_note=note)
    diagnostics = diagnostics.with_estimates(estimates)
    if diagnostics.log_z_k is None:  # TI: the curve of RTS
        diagnostics = replace(diagnostics, log_z_k=curve.diagnostics.log_z_k, log_z_k_se=curve.diagnostics.log_z_k_se)
    return replace(estimate, diagnostics=diagnostics)


TEMPERING_ESTIMATORS = {
    "rts": _rts,
    "ts": lambda trace, o: ts(trace),
    "ti": lambda trace, o: ti(trace, o.ti_rule),
    "ti_rb": lambda trace, o: ti_rb(trace, o.ti_rule),
    "mbar": lambda trace, o: mbar_tempering(trace),
    "wang_landau": lambda trace, o: replace(_rts(trace, o), method="wang_landau"),
}


def chain_group_estimates(trace) -> tuple[np.ndarray, np.ndarray] | None:
    """RTS on each fixed block of chains alone (``trace.block_sums``): ``(log_z, log_z_se)`` per block, or None
    for a trace without blocks or with fewer than two. The blocks are independent runs with the same guesses, so
    their spread is what the run's estimate would show over repeated runs, autocorrelation and stuck chains
    included (:func:`pmz.reliability.chain_groups`)."""
    if trace.block_sums is None or trace.block_sums.shape[1] < 2:
        return None
    n_blocks = trace.block_sums.shape[1]
    values, ses = [], []
    for g in range(n_blocks):
        sums = trace.block_sums[:, g : g + 1]
        accept, level = trace.block_accept[:, g : g + 1], trace.block_level_accepted[g : g + 1]
        sizes = sums[TRACE_SUMS.index("counts"), 0].sum(axis=1)  # the block's samples per batch
        block = replace(trace, **pooled_trace_sums(sums, accept, level, int(sizes.sum())), batch_size=sizes,
                        block_sums=sums, block_accept=accept, block_level_accepted=level)
        est = rts(block)
        values.append(est.log_z)
        ses.append(est.log_z_se)
    return np.asarray(values, dtype=float), np.asarray(ses, dtype=float)


def tempering_estimator(name):
    def estimate(record, options, rng):
        result = _with_others(TEMPERING_ESTIMATORS[name](record, options), record, options)
        if record.notes.nothing_to_anneal:  # U = 0: log Z = log Z0 exactly (TS's visit counts are noisy)
            return replace(result, log_z=float(record.log_z0), log_z_se=0.0)
        groups = chain_group_estimates(record)
        if groups is not None:
            result = replace(result, diagnostics=replace(result.diagnostics, group_log_z=groups[0],
                                                         group_log_z_se=groups[1]))
        return result

    return estimate
