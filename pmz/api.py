"""``pmz.evidence``: argument checking and dispatch to a registered method."""

from __future__ import annotations

import time
import warnings
import weakref
from dataclasses import replace
from numbers import Integral


import pymc as pm

from .checks import check_start, n_start, prior_normalisation_note, with_draws_check
from .families import GeometricPath, PowerPosterior
from .families.energy import EnergyFamily
from .inputs import pymc_model, seed_label, seeded_streams
from .kernels import KERNELS, GPRiemannianHMC, Kernel
from .kernels.gibbs import MixedKernel, SiteGibbs
from .model.energy import EnergyModel
from .model.posterior_draws import posterior_dataset
from .model.pymc import CompiledModel, ModelSpecificationError
from .model.reference import laplace_reference
from .model.target import count_evaluations
from .registry import COMMON_DEFAULTS, DEFAULT_METHOD, METHODS
from .reliability import assess
from .results import EvidenceResult, make_result
from .sequences.base import SMCSequence
from .threads import blas_thread_limit, check_blas_threads

__all__ = ["evidence"]

_POSITIVE_INTS = (
    "n_paths",
    "n_temps",
    "n_steps_per_temp",
    "n_leapfrog",
    "n_pilot",
    "n_adapt",
    "n_tune_temps",
    "n_draws",
    "n_gibbs_draws",
    "n_chains",
    "n_sweeps",
    "n_steps_per_sweep",
    "initial_sweeps",
    "n_batches",
    "wl_sweeps",
    "varopt_pilot_temps",
    "n_particles",
    "n_runs",
    "n_steps",
    "min_reseed",
    "n_warmup",
)
_NON_NEGATIVE_INTS = ("n_bootstrap", "nuts_tune", "reverse_burn", "n_initial", "max_generate", "reseed_steps")
_OPTIONAL_INTS = ("chunk_size", "n_reverse", "n_reference")


def _check_options(method: str, options: dict) -> dict:
    spec = METHODS[method]
    allowed = {**COMMON_DEFAULTS, **spec.defaults}
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(
            f"pmz.evidence(method={method!r}) got unknown option(s) {unknown}; valid options are {sorted(allowed)}"
        )
    merged = {**allowed, **options}
    for name in _POSITIVE_INTS + _NON_NEGATIVE_INTS:
        if name not in merged:
            continue
        value = merged[name]
        low = 1 if name in _POSITIVE_INTS else 0
        if isinstance(value, bool) or not isinstance(value, Integral) or value < low:
            kind = "a positive" if low else "a non-negative"
            raise ValueError(f"pmz: {name} must be {kind} integer, got {value!r}")
    if "n_particles" in merged and merged["n_particles"] < 2:
        raise ValueError(f"pmz: n_particles must be at least 2, got {merged['n_particles']}")
    merged["blas_threads"] = check_blas_threads(merged["blas_threads"])
    if "n_paths" in merged and merged["n_paths"] < 2:
        raise ValueError(f"pmz: n_paths must be at least 2 (an error bar needs several paths), got {merged['n_paths']}")
    for name in _OPTIONAL_INTS:
        c = merged.get(name)
        if c is not None and (isinstance(c, bool) or not isinstance(c, Integral) or c < 2 - (name == "chunk_size")):
            low = "a positive integer" if name == "chunk_size" else "an integer >= 2"
            raise ValueError(f"pmz: {name} must be {low} or None, got {c!r}")
    return merged


_COMPILED = weakref.WeakKeyDictionary()


def _compiled_model(model, options) -> CompiledModel:
    """Compile once per (model, potentials, mode); repeated calls (seeds, methods) reuse the functions.

    The key includes the number of variables, so a model extended after a first call is recompiled.
    """
    key = (options["potentials"], options["compile_mode"], len(model.basic_RVs), len(model.potentials))
    per_model = _COMPILED.setdefault(model, {})
    if key not in per_model:
        per_model[key] = CompiledModel(model, potentials=options["potentials"], mode=options["compile_mode"])
    return per_model[key]


def _continuous_kernel(name, options) -> Kernel:
    if name == "hmc":
        return KERNELS["hmc"](n_leapfrog=options["n_leapfrog"])
    if name in KERNELS:
        return KERNELS[name]()
    raise ValueError(f"pmz: unknown kernel {name!r}; choose 'auto', one of {sorted(KERNELS)} or pass a pmz Kernel")


def _make_kernel(options, target) -> Kernel:
    """The kernel for a compiled PyMC model or an energy model.

    ``"auto"``: HMC for continuous PyMC models; site-by-site Gibbs on the discrete variables composed with HMC
    on the continuous ones for mixed models (Gibbs alone when every free variable is discrete); an energy
    model's own kernel, else Gibbs for discrete states, HMC with gradients, random-walk Metropolis without.
    ``"rmhmc"``: Riemannian-manifold HMC for a PyMC Gaussian-process model (structure detected by
    :func:`pmz.model.gp.gp_structure`, which names what is missing otherwise).
    """
    kernel = options["kernel"]
    if isinstance(kernel, Kernel):
        return kernel
    if kernel == "rmhmc":
        if target.kind == "energy":
            raise ValueError("pmz: kernel 'rmhmc' needs a PyMC Gaussian-process model (pm.gp.Latent or pm.MvNormal)")
        return GPRiemannianHMC.from_model(target.model, n_leapfrog=options["n_leapfrog"])
    if target.kind == "energy":
        if kernel == "auto":
            if target.kernel is not None:
                return target.kernel
            if target.discrete:
                return SiteGibbs.for_base(target.base)
            kernel = "hmc" if target.has_grad else "rwmh"
        if kernel == "gibbs" and target.discrete:
            return SiteGibbs.for_base(target.base)
        if target.discrete:
            raise ValueError(f"pmz: kernel {kernel!r} cannot move discrete states; use 'auto' or 'gibbs'")
        if kernel == "hmc" and not target.has_grad:
            raise ValueError("pmz: kernel 'hmc' needs grad_log_density on the energy model and its base")
        return _continuous_kernel(kernel, options)
    layout = target.layout
    mask = layout.discrete_mask
    if not mask.any():
        return _continuous_kernel("hmc" if kernel == "auto" else kernel, options)
    sites, values = layout.discrete_sites()
    gibbs = SiteGibbs(sites, values, bounds=layout.discrete_bounds())
    if mask.all():
        if kernel not in ("auto", "gibbs"):
            raise ValueError(f"pmz: every free variable is discrete; kernel {kernel!r} cannot move them (use 'auto')")
        return gibbs
    continuous = _continuous_kernel("hmc" if kernel in ("auto", "gibbs") else kernel, options)
    return MixedKernel(gibbs, continuous, ~mask)


def _make_family(compiled, reference):
    if compiled.kind == "energy":
        if reference not in ("prior", None):
            raise ValueError("pmz: an energy model anneals from its own base distribution; leave reference unset")
        return EnergyFamily(compiled)
    if compiled.layout.discrete_mask.any() and not (isinstance(reference, str) and reference == "prior"):
        names = [b.rv_name for b in compiled.layout.blocks if b.discrete]
        raise ModelSpecificationError(
            f"pmz: the model has discrete free variables {names}; only reference='prior' (the power posterior) "
            "can start them from exact draws. A Gaussian reference cannot."
        )
    if isinstance(reference, str):
        if reference == "prior":
            return PowerPosterior(compiled)
        if reference == "laplace":
            return GeometricPath(compiled, laplace_reference(compiled))
        raise ValueError(f"pmz: unknown reference {reference!r}; use 'prior', 'laplace' or a reference object")
    for member in ("sample", "log_density", "grad_log_density", "dim"):
        if not hasattr(reference, member):
            raise TypeError(f"pmz: a reference object needs .{member} (see pmz.model.GaussianReference)")
    return GeometricPath(compiled, reference)


def evidence(
    model=None, *, method: str = DEFAULT_METHOD, random_seed=None, progressbar: bool = True, **options
) -> EvidenceResult:
    """Estimate the log evidence (log marginal likelihood) of a PyMC model, or log Z of an energy model.

    Parameters
    ----------
    model : pymc.Model or pmz.EnergyModel, optional
        The model; default: the model of the current ``with`` context.
    method : str
        ``"auto"`` (default): posterior draws from many HMC chains, cross-fitted bridge sampling from a fitted
        Gaussian, a path from that Gaussian where the overlap is poor and SMC from the prior where the chains
        disagree (``posterior``, ``n_chains`` 32, ``n_draws`` 125, ``n_warmup`` 400, ``target_se`` 0.03,
        ``max_time``, ``max_rhat`` 1.05, ``max_khat`` 0.7, ``min_overlap`` 0.2; see :mod:`pmz.auto.route`).
        ``"bar"``: forward and reverse annealing along the power posterior ``prior x likelihood^beta``
        (or a geometric path from ``reference``), Bennett acceptance ratio (Habeck 2017). ``"ais"``: forward
        only, Jarzynski. ``"raise"``: reverse only. ``"cumulant"``, ``"bounds"``, ``"histogram"`` (posterior over
        log Z by Gibbs sampling): other estimators of the same forward + reverse run. ``"bridge"``: bridge
        sampling (K = 1 BAR) from posterior draws (``posterior=idata``, else a ``pm.sample`` run). ``"rts"``,
        ``"ts"``, ``"ti"``, ``"ti_rb"``, ``"mbar"``, ``"wang_landau"``: simulated tempering over a ladder of
        temperatures, log Z over the whole ladder (result group ``tempering``). ``"smc"``: resample-move
        sequential Monte Carlo over ``sequence`` ("tempering", "data" annealing, "units" of an RBM, or an
        SMCSequence object, then ``model`` may be None), several independent runs; ``"arm"``: the adaptive
        resample-move algorithm (Fraccaro, Paquet & Winther) that adds particles where a stage is hard (result
        group ``smc``).
    random_seed : int, numpy SeedSequence or Generator, optional
        The same seed gives bit-identical results. A non-negative int of any size (or a list of them), a
        ``numpy.random.SeedSequence`` or ``numpy.random.Generator``; not the legacy ``RandomState``.
    progressbar : bool
        Show a progress bar.
    **options
        Method options (keyword only).

        Annealing methods: ``n_paths`` (512), ``n_temps`` (600 for "ais", 300 for two-way methods, which run
        both directions), ``schedule`` ("power": b_k = (k/K)^4; also "linear", "geometric", "sigmoidal", an
        array, "varopt" (constant thermodynamic speed from a pilot's Var_b[U]; ``varopt_pilot`` "power",
        ``varopt_pilot_temps`` 100) or "adaptive" (a pilot keeping the conditional ESS at ``cess_target`` 0.99)),
        ``delta_max`` (None: cap on every schedule increment), ``n_steps_per_temp`` (1), ``kernel`` ("auto":
        HMC, Gibbs + HMC for discrete variables, an energy model's own kernel; or "hmc", "rwmh", "gibbs", a
        Kernel), ``n_leapfrog`` (3), ``reference`` ("prior" or "laplace"), ``potentials`` ("likelihood" tempers
        ``pm.Potential`` terms; "prior" does not), ``tune`` (True), ``n_pilot`` (256), ``n_adapt`` (4),
        ``n_tune_temps`` (40), ``chunk_size``, ``n_bootstrap``, ``keep_particles``, ``compile_mode`` (None: Numba
        on PyMC 6, C on PyMC 5; or "NUMBA", "CVM", "FAST_COMPILE", ...), ``blas_threads`` (1; None leaves BLAS's
        threads as they are, see :mod:`pmz.threads`).

        Two-way methods add ``n_reverse`` (default n_paths), ``reverse_start`` ("auto": an energy model's
        ``sample_target``, pmz's many-chain HMC ("hmc") for a continuous PyMC model, else forward end states
        resampled by their weights and relaxed by ``reverse_burn`` (20) steps of the beta = 1 kernel; or "hmc",
        "nuts" (a ``pm.sample`` run, ``nuts_tune`` 1000), "resample", an InferenceData of posterior draws, an
        array of flat states); "histogram" adds ``n_gibbs_draws`` (2000).

        "bridge": ``posterior`` (InferenceData; default: run ``pm.sample``), ``n_draws`` (2000), ``nuts_tune``,
        ``bridge_reference`` ("gaussian", "student_t" or a reference object), ``df`` (5), ``n_reference``,
        ``split`` (True: fit on the first half of each chain), ``n_bootstrap``.

        Simulated tempering, ``"rts"`` (Carlson et al. 2016), ``"ts"``, ``"ti"``, ``"ti_rb"``, ``"mbar"``,
        ``"wang_landau"`` (one pipeline, different estimators; see docs/tempering.md): ``n_temps`` (50: 51 levels),
        ``schedule`` ("power"), ``n_chains`` (100), ``n_sweeps`` (1000), ``n_steps_per_sweep`` (1), ``n_initial``
        (10 RTS initial iterations of ``initial_sweeps`` = 50 sweeps), ``init`` ("pilot", "ones", "wang_landau" or
        an array of log Zhat_k), ``level_move`` ("gibbs" or "metropolis"), ``n_batches`` (1000), ``combine_stages``
        (False), ``store_draws``, ``ti_rule`` ("trapezoid", "riemann", "corrected"), ``tune``, ``n_pilot``,
        ``n_adapt``, ``n_tune_temps``, ``wl_sweeps`` (1000), ``wl_gamma0`` (1), ``wl_flatness`` (0.2),
        ``wl_update`` ("rb" or "counts").

        SMC, ``"smc"`` and ``"arm"`` (see docs/smc.md): ``sequence`` ("tempering"), ``n_particles`` (1000 per run),
        ``n_runs`` (4), ``n_steps`` (5 kernel steps per stage), ``schedule`` ("adaptive" by conditional ESS
        ``cess_target`` 0.9 for "smc", "linear" with ``n_temps`` 50 for "arm"; or a named rule / array), ``order``
        ("random", "given" or a permutation of the likelihood terms) and ``obs_per_stage`` ("adaptive" or an int)
        for data annealing, ``unit_order`` ("variance") for RBM units, ``resampling`` ("systematic", "residual",
        "stratified", "multinomial"), ``resample_threshold`` (0.8), ``tune``. "arm" adds ``variant``
        ("standard", "anticipate", "reseed"), ``gamma_threshold`` (0.7), ``max_generate`` (10), ``min_reseed``
        (100) and ``reseed_steps`` (20).

    Returns
    -------
    EvidenceResult
        An ``xarray.DataTree`` (ArviZ 1, PyMC 6) or ``arviz.InferenceData`` (ArviZ 0.2x, PyMC 5) with ``.log_z``,
        ``.log_z_se`` and ``posterior.log_z``; its attrs hold ``wall_time`` and ``compile_time`` (seconds).

    Examples
    --------
    >>> import pymc as pm, pmz
    >>> with pm.Model():                                   # doctest: +SKIP
    ...     mu = pm.Normal("mu", 0, 2)
    ...     pm.Normal("y", mu, 1, observed=[0.3, -0.1, 0.8])
    ...     res = pmz.evidence(random_seed=1, progressbar=False)
    >>> res.log_z, res.log_z_se                            # doctest: +SKIP
    (-4.65..., 0.00...)
    """
    if method not in METHODS:
        raise ValueError(f"pmz: unknown method {method!r}; available: {sorted(METHODS)}")
    standalone = model is None and isinstance(options.get("sequence"), SMCSequence)
    energy = standalone or isinstance(model, EnergyModel)
    model = model if energy else pymc_model(model)
    if method == "auto" and energy:  # an energy model has its own exact base draws: two-way annealing from them
        method = "bar"
    options = _check_options(method, options)
    spec = METHODS[method]
    t0 = time.perf_counter()
    check_rng, run_rng, estimate_rng, result_rng = seeded_streams(random_seed, 4)

    with blas_thread_limit(options["blas_threads"]):
        target = options["sequence"] if standalone else model if energy else _compiled_model(model, options)
        evals = count_evaluations(target)
        compile0 = _compile_seconds(target)
        family = kernel = None
        prior_diagnostics, prior_warning = {}, None
        if spec.needs_kernel and not standalone:
            family = _make_family(target, options["reference"])
            kernel = _make_kernel(options, target)
            if spec.check_start:  # methods that start from the family's draws (not auto, which starts at the posterior)
                check_start(family, kernel, target, check_rng, n_start(options))
                prior_diagnostics, prior_warning = prior_normalisation_note(family, target, check_rng, method)

        record = spec.run(family, kernel, options, run_rng, progressbar, target)
        estimate = spec.estimate(record, options, estimate_rng)
        estimate = with_draws_check(estimate, record)
        estimate = assess(estimate, record)  # pmz.reliability: reliable flag, reason and an honest se
    if prior_warning:
        estimate = replace(
            estimate,
            diagnostics={**estimate.diagnostics, **prior_diagnostics},
            warnings=[*estimate.warnings, prior_warning],
        )
    for message in estimate.warnings:
        warnings.warn(message, UserWarning, stacklevel=2)

    particles = None
    if options["keep_particles"] and getattr(record, "final_x", None) is not None:
        particles = {"x": record.final_x} if energy else target.to_constrained(record.final_x)
    attrs = {
        "options": {k: _option_label(v) for k, v in options.items()},
        "random_seed": seed_label(random_seed),
        "family": "none" if family is None else family.name,
        "kernel": "none" if kernel is None else kernel.name,
        "dim": target.dim,
        "n_logp_evals": evals.n_logp_evals,
        "n_grad_evals": evals.n_grad_evals,
        "wall_time": time.perf_counter() - t0,
        "compile_time": _compile_seconds(target) - compile0,
        "backend": getattr(target, "backend", "numpy"),
        **_versions(),
    }
    posterior_draws = None
    if getattr(record, "posterior_x", None) is not None:  # auto: its equally weighted posterior draws, model names
        posterior_draws = posterior_dataset(target, record.posterior_x)
    if "route" in estimate.diagnostics:
        attrs["route"], attrs["route_reason"] = estimate.diagnostics["route"], estimate.diagnostics["route_reason"]
    record = getattr(record, "result_record", record)  # a composite route (auto) shows its main run's groups
    return make_result(
        estimate, record=record, particles=particles, attrs=attrs, rng=result_rng, posterior_draws=posterior_draws
    )


def _compile_seconds(target) -> float:
    """Seconds the target's compiled functions have spent compiling so far (0 for NumPy energy models)."""
    return float(getattr(target, "compile_time", 0.0))


def _option_label(value):
    """Options as stored in the result's attrs: plain values as they are, objects (draws, kernels) by type."""
    if value is None or isinstance(value, str | bool | Integral | float):
        return value
    return f"<{type(value).__name__}>"


def _versions() -> dict:
    import arviz
    import pytensor

    from . import __version__

    return {
        "pmz_version": __version__,
        "pymc_version": pm.__version__,
        "pytensor_version": pytensor.__version__,
        "arviz_version": arviz.__version__,
    }
