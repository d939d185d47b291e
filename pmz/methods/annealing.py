"""Annealing methods: forward AIS (``"ais"``, Jarzynski) and the two-way methods (``"bar"``, ``"raise"``,
``"cumulant"``, ``"bounds"``, ``"histogram"``), which anneal both ways along one schedule and differ in the
estimator applied to the forward and reverse work (Habeck 2017; Hummer 2001; Neal 2001).

The schedule and the frozen kernel parameters come from :func:`pmz.methods.schedule.setup_schedule` (a pilot on its
own random stream); the runners record the work (:mod:`pmz.runners.ais`; the reverse starts:
:mod:`pmz.runners.bidirectional`), always through a chunk runner (:mod:`pmz.execution.executors`: one chunk here
unless ``n_chunks``, ``executor=`` or ``checkpoint=`` ask for more; the paths' random numbers do not depend on the
chunks); every two-way result also carries the bounds, both Jarzynski values, BAR's overlap and where the reverse paths
started.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..estimators.bar import bar
from ..estimators.bounds import stochastic_bounds
from ..estimators.cumulant import cumulant
from ..estimators.histogram import histogram_posterior
from ..estimators.jarzynski import jarzynski
from ..estimators.raise_ import raise_estimate
from ..reliability import reverse_start_phrase
from ..records import BidirectionalRecord
from ..execution.executors import KEEP_ON_INTERRUPT, Task, local_runner
from ..runners.ais import run_ais
from ..runners.bidirectional import reverse_start_states, starts_need_forward
from ..runners.pooling import PATH_BLOCKS, block_offsets, chunk_rows, merge_work
from ..runners.row_streams import RowStreams
from ..weights import ess
from .schedule import setup_schedule

__all__ = [
    "run_forward_ais",
    "estimate_jarzynski",
    "anneal_both_ways",
    "run_two_way",
    "two_way_estimator",
    "TWO_WAY_DESCRIPTIONS",
]


def _annealing_setup(family, kernel, options, rng, progressbar):
    """Schedule, frozen kernel parameters (pilot on its own stream), the run's notes, and the run's stream."""
    tune_rng, run_rng = rng.spawn(2)
    schedule, params, notes, _ = setup_schedule(
        family, kernel, options, tune_rng, progressbar, n_pilot=min(options.n_pilot, options.n_paths)
    )
    return schedule, params, notes, run_rng


def _ais_context(family, kernel, schedule, params, *, n_steps_per_temp, chunk_size, progressbar) -> dict:
    """What every chunk of an annealing run shares (keyword arguments of :func:`pmz.runners.ais.run_ais`)."""
    return dict(
        family=family,
        kernel=kernel,
        schedule=schedule,
        params=params,
        n_steps_per_temp=n_steps_per_temp,
        chunk_size=chunk_size,
        progressbar=progressbar,
    )


def _ais_tasks(direction, n_paths, n_chunks, rng, *, starts=None, **arguments) -> list[Task]:
    """The chunks of a direction's ``n_paths`` paths: whole blocks of work (:func:`pmz.runners.pooling.chunk_rows`),
    each with the paths' own streams (those of the whole run, :class:`~pmz.runners.row_streams.RowStreams`) and
    its rows of ``starts``."""
    streams = RowStreams.spawn(rng, n_paths)
    tasks = []
    for c, (a, b) in enumerate(chunk_rows(n_paths, n_chunks, PATH_BLOCKS)):
        chunk = dict(n_paths=n_paths, rows=(a, b), streams=streams, direction=direction, **arguments)
        if starts is not None:
            chunk["starts"] = starts[a:b]
        tasks.append(Task(f"{direction}-{c:04d}", chunk, work=float(b - a)))
    return tasks


def _pooled(done, tasks, notes):
    """The finished chunks of ``tasks`` pooled in chunk order, with the run's ``notes`` (None when none
    finished)."""
    records = [done[t.key] for t in tasks if t.key in done]
    return merge_work(records, notes=notes) if records else None


def _interleave(first, second):
    """``first[0], second[0], first[1], ...``: chunks of both directions finish side by side (an interrupted run
    then has some of each)."""
    out = []
    for i in range(max(len(first), len(second))):
        out += first[i : i + 1] + second[i : i + 1]
    return out


def _nothing_finished(what: str):
    raise KeyboardInterrupt(
        f"pmz: interrupted before any {what} chunk finished; nothing to estimate from ({KEEP_ON_INTERRUPT})"
    )


def run_forward_ais(family, kernel, options, rng, progressbar, target=None, chunks=None):
    """Forward AIS: the schedule and frozen kernels, then ``n_paths`` paths in chunks of whole blocks (one chunk run
    here unless the call asked for more), pooled in path order."""
    schedule, params, notes, run_rng = _annealing_setup(family, kernel, options, rng, progressbar)
    chunks = local_runner(progressbar) if chunks is None else chunks
    n_chunks = chunks.count(options.n_chunks, options.n_paths)
    tasks = _ais_tasks("forward", options.n_paths, n_chunks, run_rng, keep_particles=options.keep_particles)
    context = _ais_context(family, kernel, schedule, params, n_steps_per_temp=options.n_steps_per_temp,
                           chunk_size=options.chunk_size, progressbar=chunks.own_bar(n_chunks))
    forward = _pooled(chunks.run(run_ais, target, context, tasks, desc="AIS"), tasks, notes)
    return forward if forward is not None else _nothing_finished("forward")


def _with_schedule_diagnostics(estimate, forward):
    """The observed variance of the forward log weights (``var_log_w``) next to the pilot's perfect-transition
    prediction (``var_log_w_predicted``; VAROPT: ``K Var[log w] -> J``; real kernels that do not equilibrate do worse
    than predicted)."""
    diagnostics = replace(
        estimate.diagnostics, var_log_w=float(np.var(forward.log_weights[np.isfinite(forward.log_weights)]))
    )
    if forward.notes.predicted_var_log_w is not None:
        diagnostics = replace(diagnostics, var_log_w_predicted=float(forward.notes.predicted_var_log_w))
    return replace(estimate, diagnostics=diagnostics)


def estimate_jarzynski(record, options, rng):
    return _with_schedule_diagnostics(jarzynski(record, rng=rng, n_bootstrap=options.n_bootstrap), record)


def anneal_both_ways(
    family,
    kernel,
    schedule,
    params,
    notes,
    *,
    target,
    n_forward: int,
    n_reverse: int,
    reverse_start,
    rng,
    n_steps_per_temp: int,
    chunk_size=None,
    keep_particles: bool = True,
    nuts_tune: int = 1000,
    reverse_burn: int = 0,
    progressbar: bool = True,
    chunks=None,
    n_chunks: int | None = None,
) -> BidirectionalRecord:
    """Forward and reverse annealing over one schedule with one set of frozen kernels (Habeck 2017): the one
    composition of every two-way run, here or on an executor.

    The run's stream splits into three (forward paths, reverse starts, reverse paths). Reverse starts that do not
    come from the forward run (exact, HMC, NUTS or the user's draws: :func:`pmz.runners.bidirectional.
    reverse_start_states`) are drawn first, so both directions' chunks run side by side; resampled starts wait for
    the whole forward run. Each direction's paths run in chunks of whole blocks (:func:`_ais_tasks`).
    """
    forward_rng, start_rng, reverse_rng = rng.spawn(3)
    chunks = local_runner(progressbar) if chunks is None else chunks
    n_chunks = chunks.count(n_chunks, n_forward)
    keep_forward = keep_particles or (isinstance(reverse_start, str) and reverse_start in ("resample", "auto"))
    context = _ais_context(family, kernel, schedule, params, n_steps_per_temp=n_steps_per_temp,
                           chunk_size=chunk_size, progressbar=chunks.own_bar(n_chunks))
    forward_tasks = _ais_tasks("forward", n_forward, n_chunks, forward_rng, keep_particles=keep_forward)
    forward, two_phase = None, starts_need_forward(reverse_start, target)
    if two_phase:
        forward = _pooled(chunks.run(run_ais, target, context, forward_tasks, desc="forward"), forward_tasks, notes)
        if chunks.interrupted:
            _nothing_finished("reverse")
    starts, label, trust = reverse_start_states(
        reverse_start, target, forward, family, kernel, params, n_reverse, start_rng, progressbar, nuts_tune,
        reverse_burn,
    )
    n_starts = starts.shape[0]
    reverse_tasks = _ais_tasks(
        "reverse", n_starts, min(n_chunks, block_offsets(n_starts, PATH_BLOCKS).size - 1), reverse_rng,
        starts=starts, keep_particles=False,
    )
    if two_phase:
        done = chunks.run(run_ais, target, context, reverse_tasks, desc="reverse")
    else:
        done = chunks.run(run_ais, target, context, _interleave(forward_tasks, reverse_tasks), desc="two-way")
        forward = _pooled(done, forward_tasks, notes)
    reverse = _pooled(done, reverse_tasks, replace(notes, reverse_start=label, draws=trust))
    if forward is None:
        _nothing_finished("forward")
    if reverse is None:
        _nothing_finished("reverse")
    return BidirectionalRecord(forward, reverse, reverse_start=label)


def run_two_way(family, kernel, options, rng, progressbar, target, chunks=None):
    """The two-way methods' run: the schedule and frozen kernels, then :func:`anneal_both_ways`."""
    schedule, params, notes, run_rng = _annealing_setup(family, kernel, options, rng, progressbar)
    return anneal_both_ways(
        family,
        kernel,
        schedule,
        params,
        notes,
        target=target,
        n_forward=options.n_paths,
        n_reverse=options.n_reverse or options.n_paths,
        reverse_start=options.reverse_start if options.posterior is None else options.posterior,
        rng=run_rng,
        n_steps_per_temp=options.n_steps_per_temp,
        chunk_size=options.chunk_size,
        keep_particles=options.keep_particles,
        nuts_tune=options.nuts_tune,
        reverse_burn=options.reverse_burn,
        progressbar=progressbar,
        chunks=chunks,
        n_chunks=options.n_chunks,
    )


def _two_way_diagnostics(estimate, bar_estimate, record, options):
    """Every two-way result carries the bounds, both Jarzynski values and the overlap of BAR of the same paths
    (``bar_estimate``; the estimate itself when it is BAR), BAR's ``(log Z, Bennett se)`` in its ``estimates`` table,
    where the reverse paths started and the forward ESS; the estimator's own values come first."""
    own, ref = estimate.diagnostics, bar_estimate.diagnostics
    resampled = record.reverse_start == "resample"
    diagnostics = replace(
        own,
        lower=_own_or(own.lower, ref.lower),
        upper=_own_or(own.upper, ref.upper),
        gap=_own_or(own.gap, ref.gap),
        jarzynski_forward=_own_or(own.jarzynski_forward, ref.jarzynski_forward),
        jarzynski_reverse=_own_or(own.jarzynski_reverse, ref.jarzynski_reverse),
        overlap=_own_or(own.overlap, ref.overlap),
        reverse_start=record.reverse_start,
        reverse_start_option=_reverse_start_option(options),
        reverse_burn=int(getattr(options, "reverse_burn", 0)) if resampled else None,
        forward_ess_fraction=_ess_fraction(record.forward.log_weights),
    )
    warnings = list(estimate.warnings)
    if bar_estimate is not estimate:  # BAR of the same paths, with Bennett's asymptotic se
        se_bennett = np.nan if ref.se_bennett is None else ref.se_bennett
        diagnostics = replace(diagnostics.with_estimates({"bar": (bar_estimate.log_z, se_bennett)}),
                              bar_same_paths=(bar_estimate.log_z, se_bennett))
        warnings += [w for w in bar_estimate.warnings if w not in warnings]
    ess_fraction = diagnostics.forward_ess_fraction
    if resampled and (ess_fraction < 0.1 or getattr(options, "reverse_burn", 0) == 0):
        why = f"the forward ESS is {100 * ess_fraction:.1f}% of the paths" if ess_fraction < 0.1 else "reverse_burn=0"
        chosen = reverse_start_phrase(diagnostics.reverse_start_option)
        warnings.append(
            f"pmz: the reverse paths started at resampled forward end states ({chosen}) while {why}: they inherit "
            "the forward run's bias, and the upper bound and RAISE are not guaranteed. "
            + ("Add temperatures (n_temps)" if ess_fraction < 0.1 else "Set reverse_burn > 0")
            + " or pass draws of the target (posterior=idata or an array of states)."
        )
    return _with_schedule_diagnostics(replace(estimate, diagnostics=diagnostics, warnings=warnings), record.forward)


def _own_or(own, other):
    """The estimator's own value, else (None) the one of BAR of the same paths."""
    return other if own is None else own


def _reverse_start_option(options) -> str:
    """What the user asked for: ``reverse_start`` or, when given, the ``posterior=`` draws (objects by type)."""
    user_start = getattr(options, "reverse_start", None)  # bridge's options have none
    if user_start is not None and options.posterior is not None:  # the user's draws
        user_start = options.posterior
    return user_start if isinstance(user_start, str) else f"<{type(user_start).__name__}>"


def _ess_fraction(log_w) -> float:
    return float(ess(log_w) / max(len(log_w), 1))


def two_way_estimator(name):
    """``estimate(record, options, rng)`` for the two-way method ``name``, with the two-way diagnostics. BAR of the
    same paths runs once, without a bootstrap, for every method but BAR itself (whose estimate holds its numbers)."""
    estimator = _TWO_WAY_ESTIMATORS[name]

    def estimate(record, options, rng):
        own = estimator(record, options, rng)
        if name == "bar":
            return _two_way_diagnostics(own, own, record, options)
        same_paths = bar(record.forward, record.reverse, n_bootstrap=0, n_eff_r=record.n_eff_reverse)
        return _two_way_diagnostics(own, same_paths, record, options)

    return estimate


_TWO_WAY_ESTIMATORS = {
    "bar": lambda rec, o, rng: bar(
        rec.forward, rec.reverse, rng=rng, n_bootstrap=o.n_bootstrap, n_eff_r=rec.n_eff_reverse
    ),
    "raise": lambda rec, o, rng: raise_estimate(
        rec.reverse, rng=rng, n_bootstrap=o.n_bootstrap, forward_record=rec.forward
    ),
    "cumulant": lambda rec, o, rng: cumulant(rec.forward, rec.reverse, rng=rng, n_bootstrap=o.n_bootstrap),
    "bounds": lambda rec, o, rng: stochastic_bounds(rec.forward, rec.reverse),
    "histogram": lambda rec, o, rng: histogram_posterior(rec.forward, rec.reverse, n_draws=o.n_gibbs_draws, rng=rng),
}


TWO_WAY_DESCRIPTIONS = {
    "bar": "Bennett acceptance ratio from forward and reverse annealing (Habeck 2017)",
    "raise": "reverse annealed importance sampling (RAISE) from posterior draws",
    "cumulant": "combined second-order cumulant estimator from forward and reverse work (Hummer 2001)",
    "bounds": "stochastic lower and upper bounds from forward and reverse work; midpoint and half-gap",
    "histogram": "histogram (WHAM) estimator with a Gibbs-sampled posterior over log Z (Habeck 2017 sec. 5.3)",
}
