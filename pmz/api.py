"""``pmz.evidence``: resolve the target, build the method's option set, run, estimate, judge and make the result."""

from __future__ import annotations

import contextlib
import threading
import time
import weakref
from dataclasses import fields, replace
from numbers import Integral

import numpy as np
import pymc as pm

from .estimate_diagnostics import AutoDiagnostics
from .reliability import assess, mark_unreliable, non_finite_reason
from .methods.draw_checks import check_start, n_start, prior_normalisation_note, with_draws_check
from .execution.checkpoints import run_fingerprint
from .execution.executors import ChunkRunner, executor_name
from .execution.streams import seed_label, seeded_streams
from .methods.inputs import pymc_model
from .methods.options import CommonOptions, option_values, options_table
from .methods.setup import compiled_model, make_family, make_kernel
from .model.energy_model import EnergyModel
from .model.bambi import from_bambi
from .model.posterior_draws import posterior_dataset
from .model.target import count_evaluations
from .records import RunNotes
from .registry import DEFAULT_METHOD, METHODS
from .results import EvidenceResult, issue_warnings, make_result
from .sequences.base import SMCSequence
from .threads import blas_thread_limit

__all__ = ["evidence"]

def build_options(method: str, options: dict, config=None):
    """The option set of ``method`` (a frozen dataclass of :mod:`pmz.methods.options`) from the keywords, on top of
    ``config`` (an option set of the same class) when given; unknown keywords are clear errors."""
    spec = METHODS[method]
    cls = spec.options
    allowed = sorted(f.name for f in fields(cls))
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise TypeError(f"pmz.evidence(method={method!r}) got unknown option(s) {unknown}; valid options are {allowed}")
    if config is None:
        return cls(**options)
    if type(config) is not cls:
        takes = sorted(name for name, m in METHODS.items() if m.options is type(config))
        raise TypeError(
            f"pmz.evidence(method={method!r}) takes {cls.__name__}, got config={type(config).__name__}"
            + (f" (the option set of method {takes})" if takes else "")
        )
    return config.replace(**options)


def evidence(
    model=None,
    *,
    method: str = DEFAULT_METHOD,
    random_seed=None,
    progressbar: bool = True,
    executor=None,
    checkpoint=None,
    config=None,
    **options,
) -> EvidenceResult:
    """Estimate the log evidence (log marginal likelihood) of a PyMC model, or log Z of an energy model.

    Parameters
    ----------
    model : pymc.Model, bambi.Model or pmz.EnergyModel, optional
        The model; default: the model of the current ``with`` context. A bambi model is built when it is not, and
        draws from its ``fit()`` given as ``posterior=`` are mapped onto its PyMC model's own variables
        (:mod:`pmz.model.bambi`).
    method : str
        ``"auto"`` (default): posterior draws from many HMC chains, cross-fitted bridge sampling from a fitted
        Gaussian, a path from that Gaussian where the overlap is poor, importance sampling or SMC from a mixture
        over the modes where the chains sit in separate modes and SMC from the prior where they diverge; small
        discrete supports are summed out, and a model of discrete variables only with few joint values is summed
        exactly (see :mod:`pmz.auto`).
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
    executor : dask.distributed.Client or concurrent.futures.Executor, optional
        Run the method's chunks there (``n_chunks`` independent groups of paths, chains or runs; 8 chunks unless
        ``n_chunks`` says otherwise, one per run for SMC). Every path, chain and run has its own random stream, so
        the result is the same bits for any number of workers and any ``n_chunks``, and the same as
        ``executor=None``. ``"auto"`` and ``"bridge"`` split their posterior chains into ``n_chunks`` groups
        that adapt on their own (auto: one group unless ``n_chunks`` says otherwise, its path and SMC routes
        split on the executor; bridge: one ``pm.sample`` call per chain): their bits follow ``n_chunks``
        (``n_chunks=1`` is the call without an executor) but never the executor or its workers. Each worker
        compiles the model once (:mod:`pmz.execution.executors`). Methods that can be split: ``"auto"``,
        ``"bridge"``, ``"ais"``, the two-way methods, the tempering methods, ``"smc"``, ``"arm"``.
    checkpoint : str or os.PathLike, optional
        A netCDF file that keeps every finished chunk; a call with the same arguments (and ``random_seed``)
        resumes from it (not ``"auto"`` or ``"bridge"``). Ctrl-C during a chunked run returns the finished chunks'
        result, flagged partial (``res.run_attrs["partial"]``) and unreliable.
    config : option set, optional
        The method's options as one object (:mod:`pmz.methods.options`, e.g. ``TwoWayOptions(n_paths=1024)`` for
        ``method="bar"``); keywords given as well override its fields.
    **options
        Method options (keyword only), each checked when the call starts; the table below lists them by
        option set, with defaults. Every method accepts the common options.

{options_table}

    Returns
    -------
    EvidenceResult
        An ``xarray.DataTree`` (ArviZ 1, PyMC 6) or ``arviz.InferenceData`` (ArviZ 0.2x, PyMC 5) with ``.log_z``,
        ``.log_z_se``, the group ``evidence`` (``az.summary(res, group="evidence")``: log Z as mean, se as sd)
        and, for ``method="auto"``, the model's posterior draws in ``posterior``; ``res.run_attrs`` holds
        ``wall_time`` and ``compile_time`` (seconds).

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
    model, options = from_bambi(model, options)  # a bambi model: its PyMC model, its fit's draws mapped onto it
    standalone = model is None and isinstance(options.get("sequence", getattr(config, "sequence", None)), SMCSequence)
    energy = standalone or isinstance(model, EnergyModel)
    model = model if energy else pymc_model(model)
    if method == "auto" and energy:  # an energy model has its own exact base draws: two-way annealing from them
        method = "bar"
    options = build_options(method, options, config)
    spec = METHODS[method]
    with _one_call_at_a_time(options.sequence if standalone else model):
        return _run(model, method, spec, options, random_seed, progressbar, executor, checkpoint, standalone, energy)


_CALL_LOCKS = weakref.WeakKeyDictionary()  # model -> the lock its calls take, one at a time
_CALL_LOCKS_LOCK = threading.Lock()


def _one_call_at_a_time(model):
    """The lock of ``model`` (a PyMC model, energy model or SMC sequence): calls of ``pmz.evidence`` on one model
    object run one at a time. Its compiled functions are not safe to call from two threads at once: four threads on
    one model gave other bits than the same calls one after the other (SMC), or failed inside PyTensor ("'NoneType'
    object has no attribute 'shape'", BAR) or Numba. Calls on different models still run side by side, and may then
    race in PyTensor's process-wide flags while both build graphs (:data:`pmz.threads.PYTENSOR_LOCK` guards pmz's
    chunks and ``pm.sample`` calls; a lock over whole calls would stop a thread-pool executor's chunks, which the
    calling thread waits for): the user guide advises processes, not threads."""
    try:
        with _CALL_LOCKS_LOCK:
            lock = _CALL_LOCKS.setdefault(model, threading.RLock())
    except TypeError:  # an object that cannot be weakly referenced: no lock
        return contextlib.nullcontext()
    return lock


def _run(model, method, spec, options, random_seed, progressbar, executor, checkpoint, standalone, energy):
    """The body of :func:`evidence` once the model and options are resolved (under the model's lock)."""
    executor_name(executor)  # a clear error for anything that is not an executor
    chunked = executor is not None or checkpoint is not None or getattr(options, "n_chunks", None) is not None
    if chunked and not spec.chunked:
        can = sorted(name for name, m in METHODS.items() if m.chunked)
        raise ValueError(
            f"pmz: method {method!r} cannot be split into chunks (executor=, checkpoint=); the methods that can: {can}"
        )
    if checkpoint is not None and spec.chain_groups:
        can = sorted(name for name, m in METHODS.items() if m.chunked and not m.chain_groups)
        raise ValueError(
            f"pmz: method {method!r} takes executor= and n_chunks but not checkpoint= (its chunks are groups of "
            f"posterior chains, not records a file keeps); the methods that keep checkpoints: {can}"
        )
    t0 = time.perf_counter()
    check_rng, run_rng, estimate_rng, result_rng = seeded_streams(random_seed, 4)

    with blas_thread_limit(options.blas_threads):
        target = options.sequence if standalone else model if energy else compiled_model(model, options)
        evals = count_evaluations(target)
        non_finite0 = _non_finite_counts(target)
        compile0 = _compile_seconds(target)
        family = kernel = None
        prior_fields, prior_warning = {}, None
        if spec.needs_kernel and not standalone:
            family = make_family(target, options.reference)
            kernel = make_kernel(options, target)
            if spec.check_start:  # methods that start from the family's draws (not auto, which starts at the posterior)
                check_start(family, kernel, target, check_rng, n_start(options))
                prior_fields, prior_warning = prior_normalisation_note(family, target, check_rng, method)

        chunks = None
        if chunked:
            chunks = ChunkRunner(
                executor=executor,
                checkpoint=checkpoint,
                fingerprint=run_fingerprint(method, options, random_seed, target),
                progressbar=progressbar,
                timeout=options.chunk_timeout,
                blas_threads=options.blas_threads,
            )
            try:
                record = spec.run(family, kernel, options, run_rng, progressbar, target, chunks=chunks)
            finally:
                chunks.close()  # the checkpoint file's lock
        else:
            record = spec.run(family, kernel, options, run_rng, progressbar, target)
        estimate = spec.estimate(record, options, estimate_rng)
        estimate = with_draws_check(estimate, record)
        estimate = assess(estimate, record)  # pmz.reliability: reliable flag, reason and an honest se
        if chunks is not None and chunks.partial:
            estimate = _partial(estimate, chunks)
        interrupted = _interrupted(record)
        if interrupted:  # a run that kept its finished part on Ctrl-C (SMC's runs)
            estimate = mark_unreliable(estimate, f"PARTIAL RESULT: {interrupted}; log Z and its se come from those")
        estimate = _non_finite(estimate, target, non_finite0, record)
    if prior_warning:
        estimate = replace(
            estimate,
            diagnostics=replace(estimate.diagnostics, **prior_fields),
            warnings=[*estimate.warnings, prior_warning],
        )
    issue_warnings(estimate.warnings, stacklevel=3)

    particles = None
    if options.keep_particles and getattr(record, "final_x", None) is not None:
        particles = {"x": record.final_x} if energy else target.to_constrained(record.final_x)
    attrs = {
        "options": {k: _option_label(v) for k, v in option_values(options).items()},
        "random_seed": seed_label(random_seed),
        "family": "none" if family is None else family.name,
        "kernel": "none" if kernel is None else kernel.name,
        "dim": target.dim,
        "n_logp_evals": evals.n_logp_evals + (chunks.outside_logp_evals if chunks else 0),
        "n_grad_evals": evals.n_grad_evals + (chunks.outside_grad_evals if chunks else 0),
        "wall_time": time.perf_counter() - t0,
        "compile_time": _compile_seconds(target) - compile0,
        "backend": getattr(target, "backend", "numpy"),
        **_versions(),
        **(chunks.attrs() if chunks else {}),
    }
    posterior_draws = None
    if getattr(record, "posterior_x", None) is not None:  # auto: its equally weighted posterior draws, model names
        posterior_draws = posterior_dataset(target, record.posterior_x)
    if isinstance(estimate.diagnostics, AutoDiagnostics):  # method="auto": which route ran, why, and what it tried
        attrs["route"], attrs["route_reason"] = estimate.diagnostics.route, estimate.diagnostics.route_reason
        attrs["routes_tried"] = list(estimate.diagnostics.routes_tried or ())
    record = getattr(record, "result_record", record)  # a composite route (auto) shows its main run's groups
    return make_result(
        estimate, record=record, particles=particles, attrs=attrs, rng=result_rng, posterior_draws=posterior_draws
    )


def _non_finite_counts(target) -> tuple[int, int]:
    return int(getattr(target, "n_nan_evals", 0)), int(getattr(target, "n_posinf_evals", 0))


_NEAR_SD = 2.0  # NaN points within this many posterior sd of the draws' 0.5-99.5% range count


def _posterior_rows(record, dim):
    """The run's posterior draws or end states as flat rows (auto's draws, SMC's and AIS's final particles,
    bridge sampling's draws), or None."""
    for rows in (getattr(record, "posterior_x", None), getattr(record, "final_x", None),
                 getattr(getattr(record, "reverse", None), "final_x", None),
                 getattr(getattr(record, "forward", None), "final_x", None)):
        if rows is not None and np.asarray(rows).size and np.asarray(rows).shape[-1] == dim:
            rows = np.asarray(rows, dtype=float).reshape(-1, dim)
            rows = rows[np.all(np.isfinite(rows), axis=1)]
            if rows.shape[0] >= 10:
                return rows
    return None


def _non_finite(estimate, target, before, record):
    """A run that met a log density of +inf anywhere, or of NaN near its posterior draws: unreliable, with the count
    and such a point. +inf on a region makes log Z infinite, wherever it is. The samplers read NaN as zero density,
    a guess, and draws made under that guess stay out of the NaN region; so a NaN point counts where it lies within
    :data:`_NEAR_SD` posterior sd of the 0.5-99.5% range of the run's posterior draws (or end states) in every
    coordinate. A GLM's warm-up from prior draws can overflow to NaN at a dispersion of 1e19 without touching the
    answer; a density NaN where mu > 0 gave -4.85 and -3.73, and a pm.Potential +inf where mu > 3 gave -3.7338
    +- 8e-5, all reliable before. A run without such draws counts every point. Counted where this process
    evaluated the density (:meth:`pmz.model.pymc.CompiledModel._watch`; not on an executor's workers)."""
    nan, posinf = (now - then for now, then in zip(_non_finite_counts(target), before))
    if not (nan or posinf):
        return estimate
    points = [x for count, x in getattr(target, "non_finite_points", ()) if count > sum(before)]
    rows = _posterior_rows(record, target.dim)
    if rows is not None and points and not posinf:
        lo, hi = np.quantile(rows, [0.005, 0.995], axis=0)
        margin = _NEAR_SD * np.std(rows, axis=0)
        points = [x for x in points if np.all((x >= lo - margin) & (x <= hi + margin))]
        if not points:
            return estimate
    where = ""
    if points and hasattr(target, "to_constrained"):
        values = target.to_constrained(points[-1][None])
        where = " (e.g. at " + ", ".join(f"{k}={np.round(np.asarray(v)[0], 4).tolist()}" for k, v in
                                         list(values.items())[:4]) + ")"
    return mark_unreliable(estimate, non_finite_reason(nan, posinf, ", near the posterior draws" if not posinf else "",
                                                       where))


def _interrupted(record) -> str:
    """What a record says about an interruption it survived (``notes.interrupted``), or ""."""
    notes = getattr(record, "notes", None)
    return notes.interrupted if isinstance(notes, RunNotes) else ""


def _partial(estimate, chunks):
    """An interrupted chunked run: the estimate of the finished chunks, unreliable, with a reason and a warning."""
    reason = (
        f"PARTIAL RESULT: interrupted with {chunks.n_done} of {chunks.n_tasks} chunks finished; log Z and its se "
        "come from those chunks only"
    )
    if chunks.checkpoint is not None:
        reason += f" (the same call resumes from the checkpoint {chunks.checkpoint.path})"
    reasons = "; ".join(r for r in (reason, estimate.reliability_reason) if r)
    warnings = [f"pmz: {reason}", *estimate.warnings]
    return replace(estimate, reliable=False, reliability_reason=reasons, warnings=warnings)


def _options_doc() -> str:
    """The options table of ``evidence``'s docstring, generated from the option sets (documented once)."""
    sets = {}
    for name, spec in METHODS.items():
        sets.setdefault(spec.options, []).append(name)
    pad = " " * 8
    blocks = [f"{pad}Common options (every method):\n\n{options_table(CommonOptions, indent=pad)}"]
    for cls, names in sets.items():
        parent = cls.__mro__[1]
        shown = parent if parent in sets else CommonOptions
        adds = f"; adds to or changes {shown.__name__}" if shown is not CommonOptions else ""
        methods = ", ".join(f'"{n}"' for n in names)
        table = options_table(cls, exclude=shown, indent=pad)
        blocks.append(f"{pad}{cls.__name__} ({methods}{adds}):\n\n{table}")
    return "\n\n".join(blocks)


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

    from .version import __version__

    return {
        "pmz_version": __version__,
        "pymc_version": pm.__version__,
        "pytensor_version": pytensor.__version__,
        "arviz_version": arviz.__version__,
    }


evidence.__doc__ = evidence.__doc__.replace("{options_table}", _options_doc())
