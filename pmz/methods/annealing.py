"""Annealing methods: forward AIS (``"ais"``, Jarzynski) and the two-way methods (``"bar"``, ``"raise"``,
``"cumulant"``, ``"bounds"``, ``"histogram"``), which anneal both ways along one schedule and differ in the
estimator applied to the forward and reverse work (Habeck 2017; Hummer 2001; Neal 2001).

The schedule and the frozen kernel parameters come from :func:`pmz.methods.schedule.setup_schedule` (a pilot on its
own random stream); the runners record the work (:mod:`pmz.runners.ais`, :mod:`pmz.runners.bidirectional`);
every two-way result also carries the bounds, both Jarzynski values, BAR's overlap and where the reverse paths
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
from ..runners.ais import run_ais
from ..runners.bidirectional import reverse_start_states, run_bidirectional, starts_need_forward
from ..runners.pooling import merge_work, split
from ..weights import ess
from ..execution.executors import Task
from .schedule import setup_schedule

__all__ = ["run_forward_ais", "estimate_jarzynski", "run_two_way", "two_way_estimator", "TWO_WAY_DESCRIPTIONS"]


def _annealing_setup(family, kernel, options, rng, progressbar):
    """Schedule, frozen kernel parameters (pilot on its own stream), their description, and the run's stream."""
    tune_rng, run_rng = rng.spawn(2)
    schedule, params, tuning, _ = setup_schedule(
        family, kernel, options, tune_rng, progressbar, n_pilot=min(options.n_pilot, options.n_paths)
    )
    return schedule, params, tuning, run_rng


def _ais_context(family, kernel, schedule, params, options, tuning) -> dict:
    """What every chunk of an annealing run shares (keyword arguments of :func:`pmz.runners.ais.run_ais`)."""
    return dict(
        family=family,
        kernel=kernel,
        schedule=schedule,
        params=params,
        n_steps_per_temp=options.n_steps_per_temp,
        chunk_size=options.chunk_size,
        progressbar=False,
        tuning=tuning,
    )


def _ais_tasks(direction, n_paths, n_chunks, rng, *, starts=None, **arguments) -> list[Task]:
    """The chunks of ``n_paths`` paths of one direction: consecutive groups of paths (and of their ``starts``),
    chunk ``c`` on the ``c``-th stream spawned from ``rng``."""
    sizes = split(n_paths, n_chunks)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    tasks = []
    for c, (m, stream) in enumerate(zip(sizes, rng.spawn(len(sizes)))):
        chunk = dict(n_paths=m, rng=stream, direction=direction, **arguments)
        if starts is not None:
            chunk["starts"] = starts[offsets[c] : offsets[c + 1]]
        tasks.append(Task(f"{direction}-{c:04d}", chunk, work=float(m)))
    return tasks


def _pooled(done, tasks, tuning):
    """The finished chunks of ``tasks`` pooled in chunk order (None when none finished)."""
    records = [done[t.key] for t in tasks if t.key in done]
    return merge_work(records, tuning=tuning) if records else None


def _interleave(first, second):
    """``first[0], second[0], first[1], ...``: chunks of both directions finish side by side (an interrupted run
    then has some of each)."""
    out = []
    for i in range(max(len(first), len(second))):
        out += first[i : i + 1] + second[i : i + 1]
    return out


def _nothing_finished(what: str):
    raise KeyboardInterrupt(f"pmz: interrupted before any {what} chunk finished; nothing to estimate from")


def run_forward_ais(family, kernel, options, rng, progressbar, target=None, chunks=None):
    schedule, params, tuning, run_rng = _annealing_setup(family, kernel, options, rng, progressbar)
    if chunks is not None:  # pmz.execution.executors: groups of paths, each on its own stream
        n_chunks = chunks.count(options.n_chunks, options.n_paths)
        tasks = _ais_tasks("forward", options.n_paths, n_chunks, run_rng, keep_particles=options.keep_particles)
        context = _ais_context(family, kernel, schedule, params, options, tuning)
        forward = _pooled(chunks.run(run_ais, target, context, tasks, desc="AIS"), tasks, tuning)
        return forward if forward is not None else _nothing_finished("forward")
    return run_ais(
        family,
        kernel,
        schedule,
        params,
        n_paths=options.n_paths,
        n_steps_per_temp=options.n_steps_per_temp,
        rng=run_rng,
        chunk_size=options.chunk_size,
        keep_particles=options.keep_particles,
        progressbar=progressbar,
        tuning=tuning,
    )


def _with_schedule_diagnostics(estimate, forward):
    """The observed variance of the forward log weights next to the pilot's perfect-transition prediction
    (VAROPT: ``K Var[log w] -> J``; real kernels that do not equilibrate do worse than predicted)."""
    extra = {"var_log_w": float(np.var(forward.log_weights[np.isfinite(forward.log_weights)]))}
    if "predicted_var_log_w" in forward.tuning:
        extra["var_log_w_predicted"] = float(forward.tuning["predicted_var_log_w"])
    return replace(estimate, diagnostics={**estimate.diagnostics, **extra})


def estimate_jarzynski(record, options, rng):
    return _with_schedule_diagnostics(jarzynski(record, rng=rng, n_bootstrap=options.n_bootstrap), record)


def _run_two_way_chunked(family, kernel, options, schedule, params, tuning, run_rng, progressbar, target, chunks):
    """Forward and reverse paths in chunks (:func:`_ais_tasks`). Reverse starts that do not come from the forward
    run (exact, HMC or the user's draws) are drawn first, so both directions' chunks run side by side; resampled
    starts wait for the whole forward run."""
    forward_rng, start_rng, reverse_rng = run_rng.spawn(3)
    reverse_start = options.reverse_start if options.posterior is None else options.posterior
    keep_forward = options.keep_particles or (isinstance(reverse_start, str) and reverse_start in ("resample", "auto"))
    n_chunks = chunks.count(options.n_chunks, options.n_paths)
    n_reverse = options.n_reverse or options.n_paths
    context = _ais_context(family, kernel, schedule, params, options, tuning)
    forward_tasks = _ais_tasks("forward", options.n_paths, n_chunks, forward_rng, keep_particles=keep_forward)
    forward, two_phase = None, starts_need_forward(reverse_start, target)
    if two_phase:
        forward = _pooled(chunks.run(run_ais, target, context, forward_tasks, desc="forward"), forward_tasks, tuning)
        if chunks.interrupted:
            _nothing_finished("reverse")
    starts, label, start_info = reverse_start_states(
        reverse_start, target, forward, family, kernel, params, n_reverse, start_rng, progressbar,
        options.nuts_tune, options.reverse_burn,
    )
    reverse_tasks = _ais_tasks(
        "reverse", starts.shape[0], min(n_chunks, starts.shape[0]), reverse_rng, starts=starts, keep_particles=False,
        start_info=start_info,
    )
    if two_phase:
        done = chunks.run(run_ais, target, context, reverse_tasks, desc="reverse")
    else:
        done = chunks.run(run_ais, target, context, _interleave(forward_tasks, reverse_tasks), desc="two-way")
        forward = _pooled(done, forward_tasks, tuning)
    reverse = _pooled(done, reverse_tasks, {**tuning, **start_info})
    if forward is None:
        _nothing_finished("forward")
    if reverse is None:
        _nothing_finished("reverse")
    return BidirectionalRecord(forward, reverse, reverse_start=label)


def run_two_way(family, kernel, options, rng, progressbar, target, chunks=None):
    schedule, params, tuning, run_rng = _annealing_setup(family, kernel, options, rng, progressbar)
    if chunks is not None:
        return _run_two_way_chunked(
            family, kernel, options, schedule, params, tuning, run_rng, progressbar, target, chunks
        )
    return run_bidirectional(
        family,
        kernel,
        schedule,
        params,
        target=target,
        n_forward=options.n_paths,
        n_reverse=options.n_reverse or options.n_paths,
        reverse_start=options.reverse_start if options.posterior is None else options.posterior,
        rng=run_rng,
        n_steps_per_temp=options.n_steps_per_temp,
        chunk_size=options.chunk_size,
        keep_particles=options.keep_particles,
        progressbar=progressbar,
        tuning=tuning,
        nuts_tune=options.nuts_tune,
        reverse_burn=options.reverse_burn,
    )


def _two_way_diagnostics(estimate, record, options):
    """Every two-way result carries the bounds, both Jarzynski values, BAR's overlap and where reverse started."""
    if estimate.method == "bar":  # BAR's own estimate already holds them
        ref = estimate
    else:
        ref = bar(record.forward, record.reverse, n_bootstrap=0, n_eff_r=record.n_eff_reverse)
    keys = ("lower", "upper", "gap", "jarzynski_forward", "jarzynski_reverse", "overlap")
    extra = {k: ref.diagnostics[k] for k in keys if k in ref.diagnostics}
    if estimate.method != "bar":  # BAR of the same paths, with Bennett's asymptotic se
        bar_pair = (ref.log_z, ref.diagnostics.get("se_bennett", np.nan))
        extra["estimates"] = {**estimate.diagnostics.get("estimates", {}), "bar": bar_pair}
    extra["reverse_start"] = record.reverse_start
    user_start = getattr(options, "reverse_start", None)  # bridge's options have none
    if user_start is not None and options.posterior is not None:  # the user's draws
        user_start = options.posterior
    extra["reverse_start_option"] = user_start if isinstance(user_start, str) else f"<{type(user_start).__name__}>"
    if record.reverse_start == "resample":
        extra["reverse_burn"] = int(getattr(options, "reverse_burn", 0))
    warnings = list(estimate.warnings)
    if estimate.method != "bar":
        warnings += [w for w in ref.warnings if w not in warnings]
    ess_fraction = _ess_fraction(record.forward.log_weights)
    extra["forward_ess_fraction"] = ess_fraction
    if record.reverse_start == "resample" and (ess_fraction < 0.1 or getattr(options, "reverse_burn", 0) == 0):
        why = f"the forward ESS is {100 * ess_fraction:.1f}% of the paths" if ess_fraction < 0.1 else "reverse_burn=0"
        chosen = reverse_start_phrase(extra["reverse_start_option"])
        warnings.append(
            f"pmz: the reverse paths started at resampled forward end states ({chosen}) while {why}: they inherit "
            "the forward run's bias, and the upper bound and RAISE are not guaranteed. "
            + ("Add temperatures (n_temps)" if ess_fraction < 0.1 else "Set reverse_burn > 0")
            + " or pass draws of the target (posterior=idata or an array of states)."
        )
    estimate = _with_schedule_diagnostics(estimate, record.forward)
    diagnostics = {**extra, **estimate.diagnostics}
    if "estimates" in extra:  # the estimator's own table (e.g. the histogram's ML value) and BAR of the same paths
        diagnostics["estimates"] = extra["estimates"]
    return replace(estimate, diagnostics=diagnostics, warnings=warnings)


def _ess_fraction(log_w) -> float:
    return float(ess(log_w) / max(len(log_w), 1))


def two_way_estimator(name):
    """``estimate(record, options, rng)`` for the two-way method ``name``, with the two-way diagnostics."""
    estimator = _TWO_WAY_ESTIMATORS[name]

    def estimate(record, options, rng):
        return _two_way_diagnostics(estimator(record, options, rng), record, options)

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
