"""Method registry: ``method name -> (run, estimate, defaults)``.

``pmz.evidence`` checks options against ``defaults``, builds the tempered family and the kernel, then calls
``run(family, kernel, options, rng, progressbar, target) -> record`` (``target``: the CompiledModel or
EnergyModel) and ``estimate(record, options, rng) -> EvidenceEstimate``. Adding a method is one runner or
estimator and one entry here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from .auto.route import AUTO_DEFAULTS, estimate_auto, run_auto
from .estimators.bar import bar
from .estimators.bounds import stochastic_bounds
from .estimators.cumulant import cumulant
from .estimators.histogram import histogram_posterior
from .estimators.jarzynski import jarzynski
from .estimators.raise_ import raise_estimate
from .reliability import reverse_start_phrase
from .runners.ais import run_ais
from .runners.bidirectional import run_bidirectional
from .runners.bridge import run_bridge
from .runners.starts import nuts_draws, posterior_to_flat
from .schedule_setup import SCHEDULE_DEFAULTS, setup_schedule
from .smc_methods import ARM_DEFAULTS, SMC_DEFAULTS, estimate_smc_method, run_smc_method, smc_description
from .tempering_methods import TEMPERING_DEFAULTS, TEMPERING_DESCRIPTIONS, run_tempering_method, tempering_estimator
from .threads import DEFAULT_BLAS_THREADS
from .weights import ess

__all__ = ["Method", "METHODS", "COMMON_DEFAULTS", "DEFAULT_METHOD"]

# options every method accepts (model compilation, reference, kernel)
COMMON_DEFAULTS = {
    "reference": "prior",  # "prior" (power posterior), "laplace" (geometric from a Gaussian), or an object
    "potentials": "likelihood",
    "kernel": "auto",  # "auto", "hmc", "rwmh", "gibbs" or a Kernel instance
    "n_leapfrog": 3,
    "compile_mode": None,  # None: the stack's default backend (pmz.model.backend); or a PyTensor mode name
    "blas_threads": DEFAULT_BLAS_THREADS,  # BLAS threads inside the run (pmz.threads); None: leave BLAS as it is
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
    needs_kernel: bool = True
    check_start: bool = True  # evaluate the family's start draws before running (auto starts from its own points)


def _annealing_setup(family, kernel, options, rng, progressbar):
    """Schedule, frozen kernel parameters (pilot on its own stream), their description, and the run's stream."""
    tune_rng, run_rng = rng.spawn(2)
    schedule, params, tuning, _ = setup_schedule(
        family, kernel, options, tune_rng, progressbar, n_pilot=min(options["n_pilot"], options["n_paths"])
    )
    return schedule, params, tuning, run_rng


def _run_forward_ais(family, kernel, options, rng, progressbar, target=None):
    schedule, params, tuning, run_rng = _annealing_setup(family, kernel, options, rng, progressbar)
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


def _with_schedule_diagnostics(estimate, forward):
    """The observed variance of the forward log weights next to the pilot's perfect-transition prediction
    (VAROPT: ``K Var[log w] -> J``; real kernels that do not equilibrate do worse than predicted)."""
    extra = {"var_log_w": float(np.var(forward.log_weights[np.isfinite(forward.log_weights)]))}
    if "predicted_var_log_w" in forward.tuning:
        extra["var_log_w_predicted"] = float(forward.tuning["predicted_var_log_w"])
    return replace(estimate, diagnostics={**estimate.diagnostics, **extra})


def _estimate_jarzynski(record, options, rng):
    return _with_schedule_diagnostics(jarzynski(record, rng=rng, n_bootstrap=options["n_bootstrap"]), record)


def _run_two_way(family, kernel, options, rng, progressbar, target):
    schedule, params, tuning, run_rng = _annealing_setup(family, kernel, options, rng, progressbar)
    return run_bidirectional(
        family,
        kernel,
        schedule,
        params,
        target=target,
        n_forward=options["n_paths"],
        n_reverse=options["n_reverse"] or options["n_paths"],
        reverse_start=options["reverse_start"],
        rng=run_rng,
        n_steps_per_temp=options["n_steps_per_temp"],
        chunk_size=options["chunk_size"],
        keep_final=options["keep_particles"],
        progressbar=progressbar,
        tuning=tuning,
        options=options,
    )


def _run_bridge(family, kernel, options, rng, progressbar, target):
    if target.kind != "pymc":
        raise ValueError("pmz: method='bridge' needs a PyMC model (posterior draws in its value space)")
    if target.layout.discrete_mask.any() or target.improper_priors:
        raise ValueError(
            "pmz: method='bridge' fits a continuous reference to the posterior draws: it needs continuous free "
            "variables and proper priors; use method='bar' for this model"
        )
    draws_rng, bridge_rng = rng.spawn(2)
    if options["posterior"] is None:
        X, chain, _ = nuts_draws(
            target, options["n_draws"], draws_rng, tune=options["nuts_tune"], progressbar=progressbar
        )
        source = "nuts"
    else:
        X, chain = posterior_to_flat(target, options["posterior"])
        source = "posterior"
    record = run_bridge(
        target,
        X,
        chain,
        bridge_rng,
        reference=options["bridge_reference"],
        n_reference=options["n_reference"],
        df=options["df"],
        split=options["split"],
    )
    return replace(record, reverse_start=source)


def _two_way_diagnostics(estimate, record, options):
    """Every two-way result carries the bounds, both Jarzynski values, BAR's overlap and where reverse started."""
    if estimate.method == "bar":  # BAR's own estimate already holds them
        ref = estimate
    else:
        ref = bar(record.forward, record.reverse, n_bootstrap=0, n_eff_r=record.n_eff_reverse)
    keys = ("lower", "upper", "gap", "jarzynski_forward", "jarzynski_reverse", "overlap", "se_bennett")
    extra = {k: ref.diagnostics[k] for k in keys if k in ref.diagnostics}
    extra = {("bar_se" if k == "se_bennett" else k): v for k, v in extra.items()}
    if estimate.method != "bar":
        extra["bar_log_z"] = ref.log_z
    extra["reverse_start"] = record.reverse_start
    user_start = options.get("reverse_start")
    extra["reverse_start_option"] = user_start if isinstance(user_start, str) else f"<{type(user_start).__name__}>"
    if record.reverse_start == "resample":
        extra["reverse_burn"] = int(options.get("reverse_burn", 0))
    warnings = list(estimate.warnings)
    if estimate.method != "bar":
        warnings += [w for w in ref.warnings if w not in warnings]
    ess_fraction = _ess_fraction(record.forward.log_weights)
    extra["forward_ess_fraction"] = ess_fraction
    if record.reverse_start == "resample" and (ess_fraction < 0.1 or options.get("reverse_burn", 0) == 0):
        why = f"the forward ESS is {100 * ess_fraction:.1f}% of the paths" if ess_fraction < 0.1 else "reverse_burn=0"
        chosen = reverse_start_phrase(extra["reverse_start_option"])
        warnings.append(
            f"pmz: the reverse paths started at resampled forward end states ({chosen}) while {why}: they inherit "
            "the forward run's bias, and the upper bound and RAISE are not guaranteed. "
            + ("Add temperatures (n_temps)" if ess_fraction < 0.1 else "Set reverse_burn > 0")
            + " or pass draws of the target (reverse_start=idata or an array of states)."
        )
    estimate = _with_schedule_diagnostics(estimate, record.forward)
    return replace(estimate, diagnostics={**extra, **estimate.diagnostics}, warnings=warnings)


def _ess_fraction(log_w) -> float:
    return float(ess(log_w) / max(len(log_w), 1))


def _two_way(estimator):
    def estimate(record, options, rng):
        return _two_way_diagnostics(estimator(record, options, rng), record, options)

    return estimate


_TWO_WAY_ESTIMATORS = {
    "bar": lambda rec, o, rng: bar(
        rec.forward, rec.reverse, rng=rng, n_bootstrap=o["n_bootstrap"], n_eff_r=rec.n_eff_reverse
    ),
    "raise": lambda rec, o, rng: raise_estimate(
        rec.reverse, rng=rng, n_bootstrap=o["n_bootstrap"], forward_record=rec.forward
    ),
    "cumulant": lambda rec, o, rng: cumulant(rec.forward, rec.reverse, rng=rng, n_bootstrap=o["n_bootstrap"]),
    "bounds": lambda rec, o, rng: stochastic_bounds(rec.forward, rec.reverse),
    "histogram": lambda rec, o, rng: histogram_posterior(rec.forward, rec.reverse, n_draws=o["n_gibbs_draws"], rng=rng),
}


def _estimate_bridge(record, options, rng):
    """Bridge sampling is BAR with one step (reference -> posterior); the result says "bridge", its evidence group
    names the estimator (``estimator = "bar"``)."""
    estimate = _two_way(_TWO_WAY_ESTIMATORS["bar"])(record, options, rng)
    return replace(estimate, method="bridge", diagnostics={**estimate.diagnostics, "estimator": "bar"})


_ANNEALING_DEFAULTS = {
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
    **SCHEDULE_DEFAULTS,
}

_TWO_WAY_DEFAULTS = {
    **_ANNEALING_DEFAULTS,
    "n_temps": 300,  # forward + reverse at 300 temperatures cost what forward AIS costs at 600
    "n_bootstrap": 200,
    "n_reverse": None,  # default: n_paths
    "reverse_start": "auto",  # an energy model's exact draws, else resampled forward end states + reverse_burn
    "nuts_tune": 1000,
    "reverse_burn": 20,
}

_DESCRIPTIONS = {
    "bar": "Bennett acceptance ratio from forward and reverse annealing (Habeck 2017)",
    "raise": "reverse annealed importance sampling (RAISE) from posterior draws",
    "cumulant": "combined second-order cumulant estimator from forward and reverse work (Hummer 2001)",
    "bounds": "stochastic lower and upper bounds from forward and reverse work; midpoint and half-gap",
    "histogram": "histogram (WHAM) estimator with a Gibbs-sampled posterior over log Z (Habeck 2017 sec. 5.3)",
}


METHODS: dict[str, Method] = {
    "auto": Method(
        name="auto",
        run=run_auto,
        estimate=estimate_auto,
        defaults=dict(AUTO_DEFAULTS),
        description="the default: posterior draws from many HMC chains, cross-fitted bridge sampling, a path from "
        "the fitted reference where the overlap is poor, SMC from the prior where the chains disagree",
        check_start=False,
    ),
    "ais": Method(
        name="ais",
        run=_run_forward_ais,
        estimate=_estimate_jarzynski,
        defaults=dict(_ANNEALING_DEFAULTS),
        description="forward annealed importance sampling (Jarzynski estimator)",
    ),
    **{
        name: Method(
            name=name,
            run=_run_two_way,
            estimate=_two_way(estimator),
            defaults={**_TWO_WAY_DEFAULTS, **({"n_gibbs_draws": 2000} if name == "histogram" else {})},
            description=_DESCRIPTIONS[name],
        )
        for name, estimator in _TWO_WAY_ESTIMATORS.items()
    },
    "bridge": Method(
        name="bridge",
        run=_run_bridge,
        estimate=_estimate_bridge,
        defaults={
            "posterior": None,  # InferenceData of posterior draws; default: run pm.sample (NUTS)
            "n_draws": 2000,
            "nuts_tune": 1000,
            "bridge_reference": "gaussian",  # or "student_t", or a reference object
            "n_reference": None,
            "df": 5.0,
            "split": True,
            "n_bootstrap": 200,
        },
        description="bridge sampling (K = 1 BAR) from posterior draws with a fitted reference (Meng & Wong 1996)",
        needs_kernel=False,
    ),
    **{
        name: Method(
            name=name,
            run=lambda f, k, o, rng, pb, target, name=name: run_tempering_method(f, k, o, rng, pb, target, method=name),
            estimate=tempering_estimator(name),
            defaults=dict(TEMPERING_DEFAULTS),
            description=description,
        )
        for name, description in TEMPERING_DESCRIPTIONS.items()
    },
    **{
        name: Method(
            name=name,
            run=lambda f, k, o, rng, pb, target, name=name: run_smc_method(f, k, o, rng, pb, target, method=name),
            estimate=estimate_smc_method(name),
            defaults=dict(defaults),
            description=smc_description(name),
        )
        for name, defaults in (("smc", SMC_DEFAULTS), ("arm", ARM_DEFAULTS))
    },
}

DEFAULT_METHOD = "auto"
