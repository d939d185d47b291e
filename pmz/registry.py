"""Method registry: ``method name -> (run, estimate, defaults)``.

``pmz.evidence`` checks options against ``defaults``, builds the tempered family and the kernel, then calls
``run(family, kernel, options, rng, progressbar) -> record`` and ``estimate(record, options, rng) ->
EvidenceEstimate``. Adding a method is one runner or estimator and one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .estimators.jarzynski import jarzynski
from .families.schedules import make_schedule
from .kernels.tuning import tune_along_schedule
from .runners.ais import run_ais

__all__ = ["Method", "METHODS", "COMMON_DEFAULTS"]

# options every method accepts (model compilation, reference, kernel)
COMMON_DEFAULTS = {
    "reference": "prior",  # "prior" (power posterior), "laplace" (geometric from a Gaussian), or an object
    "potentials": "likelihood",
    "kernel": "hmc",  # "hmc", "rwmh" or a Kernel instance
    "n_leapfrog": 3,
    "compile_mode": None,
    "keep_particles": True,
}


@dataclass(frozen=True)
class Method:
    """One evidence method: how to run it, how to estimate from its record, and its default options."""

    name: str
    run: Callable
    estimate: Callable
    defaults: dict = field(default_factory=dict)
    description: str = ""


def _run_forward_ais(family, kernel, options, rng, progressbar):
    schedule = make_schedule(options["schedule"], options["n_temps"])
    tune_rng, run_rng = rng.spawn(2)
    evals0, grads0 = family.n_logp_evals, family.n_grad_evals
    if options["tune"]:
        tuned = tune_along_schedule(
            family,
            kernel,
            schedule,
            tune_rng,
            n_pilot=min(options["n_pilot"], options["n_paths"]),
            n_adapt=options["n_adapt"],
            n_tune_temps=options["n_tune_temps"],
            progressbar=progressbar,
        )
        params = tuned.params
        tuning = {
            "n_pilot": tuned.n_pilot,
            "n_adapt": tuned.n_adapt,
            "n_tune_temps": options["n_tune_temps"],
            "target_acceptance": kernel.target_acceptance,
            "pilot_logp_evals": family.n_logp_evals - evals0,
            "pilot_grad_evals": family.n_grad_evals - grads0,
        }
    else:
        params = [kernel.default_params(family.dim)] * schedule.size
        tuning = {"n_pilot": 0}
    return run_ais(
        family,
        kernel,
        schedule,
        params,
        n_paths=options["n_paths"],
        n_steps_per_temp=options["n_steps_per_temp"],
        rng=run_rng,
        chunk_size=options["chunk_size"],
        keep_final=options["keep_particles"],
        progressbar=progressbar,
        tuning=tuning,
    )


def _estimate_jarzynski(record, options, rng):
    return jarzynski(record, rng=rng, n_bootstrap=options["n_bootstrap"])


METHODS: dict[str, Method] = {
    "ais": Method(
        name="ais",
        run=_run_forward_ais,
        estimate=_estimate_jarzynski,
        defaults={
            "n_paths": 512,
            "n_temps": 600,
            "schedule": "power",
            "n_steps_per_temp": 1,
            "tune": True,
            "n_pilot": 256,
            "n_adapt": 4,
            "n_tune_temps": 40,
            "chunk_size": None,
            "n_bootstrap": 1000,
        },
        description="forward annealed importance sampling (Jarzynski estimator)",
    ),
}
