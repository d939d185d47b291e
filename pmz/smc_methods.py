"""Glue between ``pmz.evidence`` and the SMC runner: methods ``"smc"`` (resample-move) and ``"arm"`` (adaptive
resample-move, Fraccaro, Paquet & Winther), over the sequence named by ``sequence``:

* ``"tempering"``: the model's tempered family (power posterior, or a geometric path from ``reference``), beta
  chosen adaptively by conditional ESS (``schedule="adaptive"``, ``cess_target``) or a fixed schedule (a named
  rule with ``n_temps``, or an array);
* ``"data"`` (PyMC models): data annealing, the likelihood terms entering in ``order`` (``obs_per_stage`` at a
  time or adaptively);
* ``"units"`` (RBM energy models): the unit-by-unit sequence with the hidden units summed out (``unit_order``);
* an :class:`~pmz.sequences.base.SMCSequence` object (e.g. :class:`~pmz.sequences.probit_gp.ProbitGPSequence`).
"""

from __future__ import annotations

from dataclasses import replace

from .estimators.smc import smc_estimate
from .families.schedules import SCHEDULES, make_schedule
from .runners.smc import run_smc
from .sequences.base import SMCSequence
from .sequences.data import DataAnnealingSequence
from .sequences.rbm_units import RBMUnitSequence
from .sequences.tempering import TemperingSequence

__all__ = ["SMC_DEFAULTS", "ARM_DEFAULTS", "SEQUENCES", "ARM_VARIANTS", "run_smc_method", "estimate_smc_method"]

SEQUENCES = ("tempering", "data", "units")
ARM_VARIANTS = {"standard": "arm", "anticipate": "arm_anticipate", "reseed": "arm_reseed"}

SMC_DEFAULTS = {
    "sequence": "tempering",  # "tempering", "data", "units" (RBM energy models) or an SMCSequence
    "n_particles": 1000,  # R: particles per run after each resampling
    "n_runs": 4,  # independent runs in one call (between-run se)
    "n_steps": 5,  # kernel steps per stage
    "schedule": "adaptive",  # tempering: "adaptive" (conditional ESS) or a named rule / array (n_temps)
    "n_temps": 100,
    "cess_target": 0.9,  # adaptive tempering / data batches: conditional ESS kept per stage
    "order": "random",  # data annealing: "random", "given" or a permutation of the likelihood terms
    "obs_per_stage": "adaptive",  # data annealing: terms per stage, or "adaptive"
    "unit_order": "variance",  # RBM units: "variance" (most variable first), "given", "random" or an array
    "resampling": "systematic",  # "systematic", "residual", "stratified", "multinomial"
    "resample_threshold": 0.8,  # "smc": resample when ESS < threshold * particles
    "tune": True,  # tune the kernel's scale and step size from the particle cloud
}

ARM_DEFAULTS = {
    **SMC_DEFAULTS,
    "schedule": "linear",  # ARM grows the particle set where a fixed schedule is hard
    "n_temps": 50,
    "variant": "standard",  # "standard", "anticipate" or "reseed"
    "gamma_threshold": 0.7,
    "gamma_relative_to": "pool",  # gamma = R_eff / R_n ("pool") or R_eff / R ("base")
    "max_generate": 10,
    "min_reseed": 100,
    "reseed_steps": 20,
}


def _tempering_schedule(options):
    rule = options["schedule"]
    if isinstance(rule, str):
        if rule == "adaptive":
            return None
        if rule not in SCHEDULES:
            raise ValueError(
                f"pmz: SMC takes schedule='adaptive' (conditional ESS), one of {sorted(SCHEDULES)} or an array; "
                f"got {rule!r}"
            )
    return make_schedule(rule, options["n_temps"])


def build_sequence(family, kernel, options, rng, target) -> SMCSequence:
    """The SMC sequence that ``options["sequence"]`` names, for ``target`` (CompiledModel or EnergyModel)."""
    name = options["sequence"]
    if isinstance(name, SMCSequence):
        return name
    if name not in SEQUENCES:
        raise ValueError(f"pmz: sequence must be one of {SEQUENCES} or an SMCSequence object, got {name!r}")
    if name == "tempering":
        return TemperingSequence(
            family, kernel, schedule=_tempering_schedule(options), cess_target=options["cess_target"]
        )
    if name == "data":
        if target.kind != "pymc":
            raise ValueError(
                "pmz: sequence='data' anneals in the observations of a PyMC model; this target has none "
                "(use sequence='tempering', or 'units' for an RBM)"
            )
        if options["reference"] != "prior":
            raise ValueError("pmz: data annealing starts from the prior; leave reference='prior'")
        return DataAnnealingSequence(
            target,
            kernel,
            order=options["order"],
            obs_per_stage=options["obs_per_stage"],
            cess_target=options["cess_target"],
            rng=rng,
        )
    return RBMUnitSequence.from_energy_model(target, order=options["unit_order"], rng=rng)


def _check(options, method):
    for name in ("resample_threshold", "cess_target") + (("gamma_threshold",) if method == "arm" else ()):
        value = options[name]
        if isinstance(value, bool) or not isinstance(value, float | int) or not 0 < value <= 1:
            raise ValueError(f"pmz: {name} must be a number in (0, 1], got {value!r}")
    if method == "arm" and options["variant"] not in ARM_VARIANTS:
        raise ValueError(f"pmz: variant must be one of {sorted(ARM_VARIANTS)}, got {options['variant']!r}")


def run_smc_method(family, kernel, options, rng, progressbar, target, *, method):
    """Build the sequence and run ``n_runs`` SMC (``method="smc"``) or ARM runs; returns the SMCRecord."""
    _check(options, method)
    order_rng, run_rng = rng.spawn(2)
    sequence = build_sequence(family, kernel, options, order_rng, target)
    algorithm = "rm" if method == "smc" else ARM_VARIANTS[options["variant"]]
    arm = {}
    if method == "arm":
        arm = {
            k: options[k] for k in ("gamma_threshold", "gamma_relative_to", "max_generate", "min_reseed", "reseed_steps")
        }
    return run_smc(
        sequence,
        rng=run_rng,
        n_particles=options["n_particles"],
        n_runs=options["n_runs"],
        algorithm=algorithm,
        n_steps=options["n_steps"],
        resampling=options["resampling"],
        resample_threshold=options["resample_threshold"],
        tune=options["tune"],
        keep_final=options["keep_particles"],
        progressbar=progressbar,
        **arm,
    )


def estimate_smc_method(method):
    def estimate(record, options, rng):
        return replace(smc_estimate(record), method=method)

    return estimate


def smc_description(method) -> str:
    if method == "smc":
        return "resample-move sequential Monte Carlo (tempering, data annealing or RBM units), several runs"
    return "adaptive resample-move SMC (ARM, Fraccaro, Paquet & Winther): more particles where a stage is hard"

