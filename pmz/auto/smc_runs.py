"""pmz's ``"smc"`` as a step of the default: independent resample-move SMC runs with adaptive tempering along a
family, from the prior (the tempered route) or from a mixture over the modes (the modes route)."""

from __future__ import annotations

import numpy as np

from ..interrupts import interrupts_as_keyboard
from ..weights import systematic_resample

__all__ = ["smc_runs", "equally_weighted_runs"]


def smc_runs(context, family, kernel, reference, run_rng, est_rng, target):
    """pmz's ``"smc"`` (its default particles, runs and adaptive tempering) along ``family`` from ``reference``:
    the record, its estimate (its runs on the call's chunk runner) and, where ``max_time`` stopped the runs early
    (no run starts after it once two are done) or Ctrl-C kept only the finished runs, why the result is unreliable.
    Ctrl-C before any run finished raises ``KeyboardInterrupt``, also where it arrived inside a compiled function
    (:mod:`pmz.interrupts`)."""
    from ..methods.options import SMCOptions
    from ..methods.smc import estimate_smc_method, run_smc_method

    smc_options = SMCOptions(keep_particles=context.options.keep_particles, reference=reference)
    with interrupts_as_keyboard("pmz: interrupted (Ctrl-C) during the default's SMC; nothing to estimate from"):
        record = run_smc_method(family, kernel, smc_options, run_rng, context.progressbar, target, method="smc",
                                chunks=context.chunks, until=context.clock.wall_deadline())
    cut = ""
    interrupted = getattr(record.notes, "interrupted", "")
    if interrupted:  # Ctrl-C after some runs finished: they give the result, flagged partial
        cut = f"PARTIAL RESULT: {interrupted}; log Z and its se come from those"
    elif record.n_runs < smc_options.n_runs:
        cut = f"max_time was spent during SMC: {record.n_runs} of {smc_options.n_runs} runs (the se rests on them)"
    return record, estimate_smc_method("smc")(record, smc_options, est_rng), cut


def equally_weighted_runs(record, rng):
    """Each SMC run's final particles, systematically resampled by their weights within the run: (run, n, dim).

    None when the particles were not kept or the runs' particle counts differ (ARM)."""
    if record.final_x is None or record.final_x.shape[0] % record.n_runs:
        return None
    n = record.final_x.shape[0] // record.n_runs
    x = record.final_x.reshape(record.n_runs, n, -1)
    if record.final_log_weights is None:
        return x
    log_w = record.final_log_weights.reshape(record.n_runs, n)
    return np.stack([x[j, systematic_resample(rng, log_w[j])] for j in range(record.n_runs)])
