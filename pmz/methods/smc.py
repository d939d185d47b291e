"""Glue between ``pmz.evidence`` and the SMC runner: methods ``"smc"`` (resample-move) and ``"arm"`` (adaptive
resample-move, Fraccaro, Paquet & Winther), over the sequence named by ``sequence``:

* ``"tempering"``: the model's tempered family (power posterior, or a geometric path from ``reference``), beta
  chosen adaptively by conditional ESS (``schedule="adaptive"``, ``cess_target``) or a fixed schedule (a named
  rule with ``n_temps``, or an array);
* ``"data"`` (PyMC models): data annealing, the likelihood terms entering in ``order`` (``obs_per_stage`` at a
  time or adaptively);
* ``"units"`` (RBM energy models): the unit-by-unit sequence with the hidden units summed out (``unit_order``);
* an :class:`~pmz.sequences.base.SMCSequence` object (e.g. :class:`~pmz.gp.probit_sequence.ProbitGPSequence`).

With ``n_chunks`` (or ``executor=`` / ``checkpoint=``, :mod:`pmz.execution.executors`) the runs are split into
chunks of consecutive runs, each run on the stream the unsplit call gives it: the pooled record is the same bits as
without chunks, however the runs are grouped.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..estimators.smc_evidence import smc_estimate
from ..families.schedules import make_schedule
from ..runners.pooling import merge_smc, split
from ..runners.resample_move import smc_runs, smc_settings
from ..sequences.base import SMCSequence
from ..sequences.by_observation import DataAnnealingSequence
from ..boltzmann.unit_sequence import RBMUnitSequence
from ..sequences.by_temperature import TemperingSequence
from ..execution.executors import KEEP_ON_INTERRUPT, Task, local_runner

__all__ = ["ARM_VARIANTS", "build_sequence", "run_smc_method", "estimate_smc_method"]

ARM_VARIANTS = {"standard": "arm", "anticipate": "arm_anticipate", "reseed": "arm_reseed"}

def _tempering_schedule(options):
    """None for ``schedule="adaptive"`` (the sequence chooses each beta), else the schedule's temperatures."""
    rule = options.schedule
    if isinstance(rule, str) and rule == "adaptive":
        return None
    return make_schedule(rule, options.n_temps)


def build_sequence(family, kernel, options, rng, target) -> SMCSequence:
    """The SMC sequence that ``options.sequence`` names, for ``target`` (CompiledModel or EnergyModel)."""
    name = options.sequence
    if isinstance(name, SMCSequence):
        return name
    if name == "tempering":
        return TemperingSequence(
            family, kernel, schedule=_tempering_schedule(options), cess_target=options.cess_target
        )
    if name == "data":
        if target.kind != "pymc":
            raise ValueError(
                "pmz: sequence='data' anneals in the observations of a PyMC model; this target has none "
                "(use sequence='tempering', or 'units' for an RBM)"
            )
        if options.reference != "prior":
            raise ValueError("pmz: data annealing starts from the prior; leave reference='prior'")
        return DataAnnealingSequence(
            target,
            kernel,
            order=options.order,
            obs_per_stage=options.obs_per_stage,
            cess_target=options.cess_target,
            rng=rng,
        )
    return RBMUnitSequence.from_energy_model(target, order=options.unit_order, rng=rng)


def _runs(sequence, settings, options, run_rng, target, chunks, method, until=None):
    """The ``n_runs`` runs, each on its own stream (``run_rng.spawn(n_runs)``, as :func:`pmz.runners.resample_move.
    run_smc` gives them), in chunks of consecutive runs (one chunk here unless the call asked for more: then one
    run per chunk by default); pooled in run order."""
    streams = run_rng.spawn(options.n_runs)
    n_chunks = chunks.count(options.n_chunks, options.n_runs, default=options.n_runs)
    sizes = split(options.n_runs, n_chunks)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    tasks = [
        Task(f"runs-{c:04d}", dict(streams=streams[offsets[c] : offsets[c + 1]], first_run=int(offsets[c])), float(m))
        for c, m in enumerate(sizes)
    ]
    context = dict(sequence=sequence, settings=settings, keep_particles=options.keep_particles,
                   progressbar=chunks.own_bar(n_chunks), until=until, keep_on_interrupt=chunks.whole_here(n_chunks))
    done = chunks.run(smc_runs, target, context, tasks, desc=method.upper())
    records = [done[t.key] for t in tasks if t.key in done]
    if not records:
        raise KeyboardInterrupt(
            f"pmz: interrupted before any SMC run finished; nothing to estimate from ({KEEP_ON_INTERRUPT})"
        )
    return merge_smc(records)


def run_smc_method(family, kernel, options, rng, progressbar, target, *, method, chunks=None, until=None):
    """Build the sequence and run ``n_runs`` SMC (``method="smc"``) or ARM runs; returns the SMCRecord.

    ``until`` (a ``time.time()`` value, the default's ``max_time``): no further run starts after it once two runs
    of a chunk are done (:func:`pmz.runners.resample_move.smc_runs`)."""
    order_rng, run_rng = rng.spawn(2)
    sequence = build_sequence(family, kernel, options, order_rng, target)
    algorithm = "rm" if method == "smc" else ARM_VARIANTS[options.variant]
    arm = {}
    if method == "arm":
        arm = {
            k: getattr(options, k)
            for k in ("gamma_threshold", "gamma_relative_to", "max_generate", "min_reseed", "reseed_steps")
        }
    settings = smc_settings(
        n_particles=options.n_particles,
        algorithm=algorithm,
        n_steps_per_temp=options.n_steps_per_temp,
        resampling=options.resampling,
        resample_threshold=options.resample_threshold,
        tune=options.tune,
        **arm,
    )
    chunks = local_runner(progressbar) if chunks is None else chunks
    return _runs(sequence, settings, options, run_rng, target, chunks, method, until)


def estimate_smc_method(method):
    def estimate(record, options, rng):
        return replace(smc_estimate(record), method=method)

    return estimate


def smc_description(method) -> str:
    if method == "smc":
        return "resample-move sequential Monte Carlo (tempering, data annealing or RBM units), several runs"
    return "adaptive resample-move SMC (ARM, Fraccaro, Paquet & Winther): more particles where a stage is hard"

