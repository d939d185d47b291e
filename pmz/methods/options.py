"""Option sets: one frozen dataclass per family of methods, each option documented and validated once.

``pmz.evidence(model, method=..., **options)`` builds the method's option set from the keywords
(:func:`pmz.api.build_options`); a ready option set may be passed as ``config=`` instead, with keywords overriding
its fields. Every field is declared with :func:`option`: its default, one line of documentation (from which the
options table of ``pmz.evidence``'s docstring is generated, :func:`options_table`) and its check
(:mod:`pmz.validate`), run in ``__post_init__``. A family that changes a default re-declares the field with
:func:`override`, which keeps the documentation and the check. The number of temperature steps ``n_temps`` takes its
default from one rule, :func:`default_n_temps`, by the kind of run.

Families (a subclass accepts its parent's options):

* :class:`CommonOptions`: compilation, reference, kernel and result options, accepted by every method;
* :class:`ScheduleOptions`: the schedule and the pilot that tunes the kernels (annealing and tempering);
* :class:`AnnealingOptions` (``"ais"``), :class:`TwoWayOptions` (``"bar"``, ``"raise"``, ``"cumulant"``,
  ``"bounds"``), :class:`HistogramOptions` (``"histogram"``);
* :class:`BridgeOptions` (``"bridge"``);
* :class:`TemperingOptions` (``"rts"``, ``"ts"``, ``"ti"``, ``"ti_rb"``, ``"mbar"``, ``"wang_landau"``);
* :class:`SMCOptions` (``"smc"``), :class:`ARMOptions` (``"arm"``);
* :class:`AutoOptions` (``"auto"``).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from ..estimators.ti import TI_RULES
from ..families.schedules import SCHEDULES, validate_schedule
from ..kernels import KERNELS
from ..runners.bidirectional import REVERSE_STARTS
from ..runners.levels import LEVEL_MOVES
from ..runners.resampling import RESAMPLING_SCHEMES
from ..runners.wang_landau import WL_UPDATES
from ..execution.executors import DEFAULT_CHUNKS
from ..threads import DEFAULT_BLAS_THREADS, check_blas_threads
from ..validate import (
    CheckedOptions,
    at_least_two,
    boolean,
    fraction,
    non_negative_int,
    one_of,
    option,
    option_values,
    optional,
    optional_int,
    positive_int,
    positive_number,
)

__all__ = [
    "option",
    "option_values",
    "override",
    "options_table",
    "N_TEMPS_BY_RUN",
    "default_n_temps",
    "CommonOptions",
    "ScheduleOptions",
    "AnnealingOptions",
    "TwoWayOptions",
    "HistogramOptions",
    "BridgeOptions",
    "TemperingOptions",
    "SMCOptions",
    "ARMOptions",
    "AutoOptions",
    "DEFAULT_CHUNKS",
]


# --------------------------------------------------------------------------
# declaring options
# --------------------------------------------------------------------------


def override(cls, name: str, default, doc: str | None = None):
    """Re-declare ``cls``'s option ``name`` with a new default (same check; same doc unless given)."""
    base = cls.__dataclass_fields__[name]
    return option(default, doc or base.metadata["doc"], base.metadata["check"])


def options_table(cls, *, exclude: type | None = None, width: int = 112, indent: str = "") -> str:
    """One bullet per option of ``cls``: ``name`` (default): doc, wrapped to ``width``. Options of ``exclude`` (a
    parent set) are left out unless ``cls`` changes their default."""
    import textwrap

    inherited = {} if exclude is None else {f.name: f.default for f in fields(exclude)}
    lines = []
    for f in fields(cls):
        if f.name in inherited and inherited[f.name] == f.default:
            continue
        text = f"- ``{f.name}`` ({f.default!r}): {f.metadata['doc']}"
        lines += textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent + "  ")
    return "\n".join(lines)


N_TEMPS_BY_RUN = {"annealing": 600, "two_way": 300, "tempering": 50, "smc": 100, "arm": 50}
"""The default ``n_temps`` of each kind of run; :func:`default_n_temps` says why."""


def default_n_temps(run: str) -> int:
    """The default number of temperature steps ``n_temps`` (``n_temps + 1`` temperatures) of a kind of run: the one
    rule every option set takes its ``n_temps`` default from.

    Paths need many small steps, a ladder or a resampled sequence far fewer:

    ``"annealing"``: 600 (``"ais"``; :class:`AnnealingOptions`, :class:`ScheduleOptions`)
        A path moves one short HMC step per temperature, so it follows the schedule only where the schedule
        changes slowly; the variance of the log weights falls like ``1 / n_temps`` when the kernels keep up. At
        equal cost many temperatures with short trajectories beat few with long ones (600-1000 temperatures with
        2-3 leapfrog steps gave a 1.7x smaller se than 200 with 10 on the regression systems, docs/user_guide.md).
    ``"two_way"``: 300 (``"bar"``, ``"raise"``, ``"cumulant"``, ``"bounds"``, ``"histogram"``)
        The same 600 kernel steps per path, split over the forward and the reverse direction: BAR needs the two
        work distributions to overlap, not the weights of one direction to be nearly even, which a half-length
        schedule gives at the cost of one-way annealing.
    ``"tempering"``: 50 (``"rts"``, ``"ts"``, ``"ti"``, ``"ti_rb"``, ``"mbar"``, ``"wang_landau"``)
        A ladder, not a path: the chains move between levels, whose neighbours need only overlap, and every level
        must be visited often; the ``n_chains x n_sweeps`` draws are shared by ``n_temps + 1`` levels, and a chain
        takes longer to cross a longer ladder.
    ``"smc"``: 100 (``"smc"`` with a fixed rule; its default, ``schedule="adaptive"``, places the stages itself)
        Every stage moves every particle ``n_steps_per_temp`` (5) times and resamples when the weights degenerate,
        so a stage does the work of several annealing temperatures and the weights never pile up along the path.
    ``"arm"``: 50 (``"arm"``, linear schedule)
        ARM adds particles at the stages that are hard, so it runs on a coarse fixed schedule: that is what it
        repairs (with an adaptive schedule every stage is equally hard and ARM has little to add).

    Parameters
    ----------
    run : {"annealing", "two_way", "tempering", "smc", "arm"}
        The kind of run (the keys of :data:`N_TEMPS_BY_RUN`).

    Returns
    -------
    int
    """
    if run not in N_TEMPS_BY_RUN:
        raise ValueError(f"pmz: unknown kind of run {run!r}; choose one of {sorted(N_TEMPS_BY_RUN)}")
    return N_TEMPS_BY_RUN[run]


def n_steps_per_temp(default: int):
    """The one option for kernel steps between two reweightings, with a family's own default."""
    return option(
        default,
        "kernel steps at each temperature (annealing: per path; tempering: per sweep at the chain's level; SMC: per "
        "stage and per ARM block)",
        positive_int,
    )




def n_chunks(units: str, default_note: str = f"{DEFAULT_CHUNKS} with them"):
    """The one option that splits a run into independent chunks (pmz.execution.executors), per family of methods."""
    return option(
        None,
        f"split the run into this many chunks of {units}; every path, chain or run keeps its own random stream, so "
        f"the result depends neither on n_chunks nor on the executor or its workers (None: one chunk without "
        f"executor= or checkpoint=, {default_note})",
        optional_int(1),
    )


def chunk_timeout():
    return option(
        None, "executor=: seconds to wait for the next chunk to finish before giving up (None: no limit)",
        optional(positive_number),
    )


# --------------------------------------------------------------------------
# the option sets
# --------------------------------------------------------------------------


def _reference(name, value):
    """a reference object (with .sample, .log_density, .grad_log_density and .dim)"""
    for member in ("sample", "log_density", "grad_log_density", "dim"):
        if not hasattr(value, member):
            raise TypeError(f"pmz: a reference object needs .{member} (see pmz.model.GaussianReference)")
    return value


def _kernel(name, value):
    """a pmz Kernel"""
    from ..kernels import Kernel

    if not isinstance(value, Kernel):
        raise ValueError(f"pmz: kernel must be a name or a pmz Kernel, got {value!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class CommonOptions(CheckedOptions):
    """Options every method accepts: compilation, reference, kernel and what the result keeps."""

    reference: object = option(
        "prior",
        "'prior' (anneal from the prior: the power posterior prior x likelihood^beta), 'laplace' (a geometric path "
        "from a Gaussian fitted at the mode) or a reference object",
        one_of("prior", "laplace", other=_reference,
               message="pmz: unknown reference {value!r}; use 'prior', 'laplace' or a reference object"),
    )
    potentials: str = option(  # checked where the model is compiled (pmz.model.pymc)
        "likelihood", "'likelihood' tempers pm.Potential terms with the likelihood; 'prior' keeps them whole"
    )
    kernel: object = option(
        "auto",
        "'auto' (HMC; Gibbs + HMC with discrete variables; an energy model's own kernel), 'hmc', 'rwmh', 'gibbs', "
        "'rmhmc' (Gaussian-process models) or a pmz Kernel",
        one_of("auto", "gibbs", "rmhmc", *KERNELS, other=_kernel, message="pmz: unknown kernel {value!r}; choose "
               f"'auto', one of {sorted(KERNELS)} or pass a pmz Kernel"),
    )
    n_leapfrog: int = option(3, "leapfrog steps per HMC move", positive_int)
    compile_mode: object = option(  # checked where the model is compiled (pmz.model.backend.resolve_mode)
        None, "PyTensor mode: None (Numba on PyMC 6, C on PyMC 5) or e.g. 'NUMBA', 'CVM', 'FAST_COMPILE'"
    )
    blas_threads: object = option(
        DEFAULT_BLAS_THREADS,
        "BLAS threads inside the run (pmz.threads); None leaves BLAS as the process has it",
        lambda name, value: check_blas_threads(value),
    )
    keep_particles: bool = option(True, "keep the final particles in the result's particles group", boolean)


OPTIMAL_RULES = ("varopt", "adaptive")  # schedules built by a pilot (pmz.methods.schedule)


def _schedule(rules):
    """A named rule of pmz.families.schedules, one of ``rules`` (built by a pilot), or an array of temperatures."""

    def check(name, value):
        if isinstance(value, str):
            if value not in SCHEDULES and value not in rules:
                choices = sorted(SCHEDULES) + list(rules)
                raise ValueError(f"pmz: unknown schedule {value!r}; choose one of {choices} or pass an array")
            return value
        validate_schedule(value)
        return value

    return check


@dataclass(frozen=True, kw_only=True)
class ScheduleOptions(CommonOptions):
    """The schedule (or tempering ladder) and the pilot that tunes the kernels along it (pmz.methods.schedule)."""

    n_temps: int = option(
        default_n_temps("annealing"),
        "temperatures after beta = 0 (n_temps + 1 in all; default by kind of run: pmz.methods.default_n_temps)",
        positive_int,
    )
    schedule: object = option(
        "power",
        "'power' (b_k = (k/K)^4), 'linear', 'geometric', 'sigmoidal', 'varopt' (constant thermodynamic speed from a "
        "pilot), 'adaptive' (a pilot keeping the conditional ESS at cess_target) or an array",
        _schedule(OPTIMAL_RULES),
    )
    delta_max: object = option(None, "cap on every increment of the schedule (None: no cap)", optional(fraction(True)))
    cess_target: float = option(
        0.99, "schedule='adaptive': conditional ESS fraction kept per pilot step", fraction(False)
    )
    varopt_pilot: str = option("power", "schedule='varopt': the reference schedule the pilot walks")
    varopt_pilot_temps: int = option(100, "schedule='varopt': the pilot's temperatures", positive_int)
    tune: bool = option(True, "tune the kernels' step sizes and scales by a pilot run (then frozen)", boolean)
    n_pilot: int = option(256, "particles of the pilot run", positive_int)
    n_adapt: int = option(4, "adaptation rounds per pilot temperature", positive_int)
    n_tune_temps: int = option(40, "pilot temperatures at which the kernels are tuned", positive_int)


@dataclass(frozen=True, kw_only=True)
class AnnealingOptions(ScheduleOptions):
    """Forward annealed importance sampling (``"ais"``; Neal 2001, Jarzynski 1997)."""

    n_paths: int = option(512, "independent annealing paths", at_least_two(" (an error bar needs several paths)"))
    n_steps_per_temp: int = n_steps_per_temp(1)
    chunk_size: object = option(
        None, "paths held in memory at once (rounded up to blocks of 128; does not change a seeded result)",
        optional_int(1),
    )
    n_bootstrap: int = option(1000, "bootstrap resamples of the paths for the error bar", non_negative_int)
    n_chunks: object = n_chunks("whole blocks of paths (each direction; at most 64)")
    chunk_timeout: object = chunk_timeout()


def _strategy_only(name, value):
    """draws given the old way: a clear error naming the option that takes them now"""
    raise TypeError(
        f"pmz: reverse_start names how the reverse paths start ({list(REVERSE_STARTS)}); pass posterior draws or "
        f"an array of flat states as posterior= (got {type(value).__name__} as reverse_start)"
    )


@dataclass(frozen=True, kw_only=True)
class TwoWayOptions(AnnealingOptions):
    """Forward and reverse annealing (``"bar"``, ``"raise"``, ``"cumulant"``, ``"bounds"``; Habeck 2017)."""

    n_temps: int = override(AnnealingOptions, "n_temps", default_n_temps("two_way"))
    n_bootstrap: int = override(AnnealingOptions, "n_bootstrap", 200)
    n_reverse: object = option(None, "reverse paths (None: n_paths)", optional_int(2))
    posterior: object = option(
        None,
        "posterior draws (pm.sample's result, its posterior group or a dict) or an array (n, dim) of flat states: "
        "the reverse paths start there (None: as reverse_start says)",
    )
    reverse_start: str = option(
        "auto",
        "where the reverse paths start without posterior=: 'auto' (an energy model's exact draws, pmz's "
        "many-chain HMC for a continuous PyMC model, else resampled forward end states), 'hmc', 'nuts' "
        "(pm.sample) or 'resample'",
        one_of(*REVERSE_STARTS, other=_strategy_only),
    )
    nuts_tune: int = option(1000, "reverse_start='nuts': pm.sample's tuning steps", non_negative_int)
    reverse_burn: int = option(
        20, "reverse_start='resample': kernel steps at beta = 1 before the reverse paths start", non_negative_int
    )


    def _check_together(self):
        if self.posterior is not None and self.reverse_start != "auto":
            raise ValueError(
                f"pmz: posterior= gives the reverse starts; leave reverse_start at 'auto' (got {self.reverse_start!r})"
            )


@dataclass(frozen=True, kw_only=True)
class HistogramOptions(TwoWayOptions):
    """The histogram (WHAM) estimator with a Gibbs-sampled posterior over log Z (``"histogram"``; Habeck 2017)."""

    n_gibbs_draws: int = option(2000, "Gibbs draws of the posterior over log Z", positive_int)


@dataclass(frozen=True, kw_only=True)
class BridgeOptions(CommonOptions):
    """Bridge sampling from posterior draws with a fitted reference (``"bridge"``; Meng & Wong 1996)."""

    posterior: object = option(None, "posterior draws (InferenceData); None: run pm.sample")
    n_draws: int = option(2000, "pm.sample draws in all (over the chains) when posterior is None", positive_int)
    n_chains: int = option(2, "pm.sample chains when posterior is None", positive_int)
    nuts_tune: int = option(1000, "pm.sample's tuning steps", non_negative_int)
    bridge_reference: object = option(
        "gaussian", "'gaussian', 'student_t' or a reference object", one_of("gaussian", "student_t", other=_reference)
    )
    n_reference: object = option(None, "reference draws (None: as many as posterior draws)", optional_int(2))
    df: float = option(5.0, "bridge_reference='student_t': degrees of freedom", positive_number)
    split: bool = option(True, "fit the reference on the first half of each chain, bridge with the second", boolean)
    n_bootstrap: int = option(200, "bootstrap resamples for the error bar", non_negative_int)
    n_chunks: object = option(
        None,
        "split pm.sample's chains into this many groups, each a pm.sample call here one after the other or on the "
        "executor; the result depends on n_chunks but not on the executor or its workers (None: one call without "
        "executor=, one per chain with it)",
        optional_int(1),
    )
    chunk_timeout: object = chunk_timeout()

    def _check_together(self):
        if self.n_chunks is not None and self.n_chunks > self.n_chains:
            raise ValueError(f"pmz: n_chunks must be at most n_chains = {self.n_chains}, got {self.n_chunks}")


def _init(name, value):
    """an array of log Zhat_k guesses"""
    return value


@dataclass(frozen=True, kw_only=True)
class TemperingOptions(ScheduleOptions):
    """Simulated tempering over a ladder (``"rts"``, ``"ts"``, ``"ti"``, ``"ti_rb"``, ``"mbar"``,
    ``"wang_landau"``; Carlson et al. 2016, Salakhutdinov 2010): one pipeline, different estimators."""

    n_temps: int = override(
        ScheduleOptions, "n_temps", default_n_temps("tempering"),
        "ladder steps (n_temps + 1 levels; default by kind of run: pmz.methods.default_n_temps)",
    )
    n_chains: int = option(100, "tempering chains run side by side", positive_int)
    n_sweeps: int = option(1000, "sweeps of the long run (a level move and kernel steps each)", positive_int)
    n_steps_per_temp: int = n_steps_per_temp(1)
    n_initial: int = option(10, "RTS initial iterations that adapt the level weights", non_negative_int)
    initial_sweeps: int = option(50, "sweeps per initial iteration", positive_int)
    init: object = option(
        "pilot", "first guess of log Zhat_k: 'pilot', 'ones', 'wang_landau' or an array",
        one_of("pilot", "ones", "wang_landau", other=_init),
    )
    level_move: str = option("gibbs", "'gibbs' (from q(beta_k | x)) or 'metropolis' (to a neighbour)",
                             one_of(*LEVEL_MOVES))
    n_batches: int = option(1000, "batches of consecutive sweeps kept for the error bars", positive_int)
    combine_stages: bool = option(False, "RTS also from the initial iterations after the first", boolean)
    store_draws: bool = option(False, "keep every sweep's states and levels (MBAR always does)", boolean)
    ti_rule: str = option("trapezoid", "TI quadrature: 'trapezoid', 'riemann' or 'corrected'",
                          one_of(*TI_RULES))
    wl_sweeps: int = option(1000, "Wang-Landau sweeps (init='wang_landau')", positive_int)
    wl_gamma0: float = option(1.0, "Wang-Landau's first gain", positive_number)
    wl_flatness: float = option(0.2, "Wang-Landau's flatness criterion for halving the gain", fraction(False))
    wl_update: str = option("rb", "Wang-Landau update from 'rb' (q(beta_k | x)) or 'counts'", one_of(*WL_UPDATES))
    n_chunks: object = n_chunks(
        "whole blocks of chains (the long run, after the initial iterations, with frozen level weights; at most 8)"
    )
    chunk_timeout: object = chunk_timeout()


@dataclass(frozen=True, kw_only=True)
class SMCOptions(CommonOptions):
    """Resample-move sequential Monte Carlo, several independent runs (``"smc"``; Del Moral et al. 2006)."""

    sequence: object = option(
        "tempering", "'tempering', 'data' (data annealing), 'units' (RBM units) or an SMCSequence",
        one_of("tempering", "data", "units", other=lambda name, value: _sequence(value)),
    )
    n_particles: int = option(1000, "particles per run after each resampling", at_least_two(""))
    n_runs: int = option(4, "independent runs (between-run se)", positive_int)
    n_steps_per_temp: int = n_steps_per_temp(5)
    schedule: object = option(
        "adaptive", "tempering: 'adaptive' (conditional ESS) or a named rule / array with n_temps",
        _schedule(("adaptive",)),
    )
    n_temps: int = option(
        default_n_temps("smc"),
        "tempering with a fixed rule: steps (default by kind of run: pmz.methods.default_n_temps)",
        positive_int,
    )
    cess_target: float = option(
        0.9, "adaptive tempering / data batches: conditional ESS kept per stage", fraction(False)
    )
    order: object = option("random", "data annealing: 'random', 'given' or a permutation of the likelihood terms")
    obs_per_stage: object = option("adaptive", "data annealing: terms per stage, or 'adaptive'")
    unit_order: object = option("variance", "RBM units: 'variance', 'given', 'random' or an array")
    resampling: str = option(
        "systematic", "'systematic', 'residual', 'stratified' or 'multinomial'",
        one_of(*RESAMPLING_SCHEMES, message="pmz: unknown resampling scheme {value!r}; choose one of "
               f"{sorted(RESAMPLING_SCHEMES)}"),
    )
    resample_threshold: float = option(0.8, "resample when ESS < threshold x particles", fraction(True))
    tune: bool = option(True, "tune the kernel's scale and step size from the particle cloud", boolean)
    n_chunks: object = n_chunks("consecutive runs", "one run per chunk with them")
    chunk_timeout: object = chunk_timeout()


def _sequence(value):
    from ..sequences.base import SMCSequence

    if not isinstance(value, SMCSequence):
        raise ValueError(
            f"pmz: sequence must be one of ('tempering', 'data', 'units') or an SMCSequence object, got {value!r}"
        )
    return value


@dataclass(frozen=True, kw_only=True)
class ARMOptions(SMCOptions):
    """Adaptive resample-move (``"arm"``; Fraccaro, Paquet & Winther): more particles where a stage is hard."""

    schedule: object = override(SMCOptions, "schedule", "linear")
    n_temps: int = override(SMCOptions, "n_temps", default_n_temps("arm"))
    variant: str = option("standard", "'standard', 'anticipate' or 'reseed'",
                          one_of("standard", "anticipate", "reseed"))
    gamma_threshold: float = option(0.7, "grow the particle set while R_eff / R_n < gamma_threshold",
                                    fraction(True))
    gamma_relative_to: str = option("pool", "gamma = R_eff / R_n ('pool') or R_eff / R ('base')",
                                    one_of("pool", "base"))
    max_generate: int = option(10, "at most this many times R particles per stage", non_negative_int)
    min_reseed: int = option(100, "variant='reseed': fewest distinct particles before reseeding", positive_int)
    reseed_steps: int = option(20, "variant='reseed': kernel steps of a reseeded particle", non_negative_int)


def _seconds(name, value):
    try:
        return positive_number(name, value)
    except ValueError:
        raise ValueError(f"pmz: {name} must be a positive number of seconds or None, got {value!r}") from None


@dataclass(frozen=True, kw_only=True)
class AutoOptions(CommonOptions):
    """The default (``"auto"``): many-chain HMC, cross-fitted bridge sampling, a path from the fitted reference
    where the overlap is poor, importance sampling or SMC from a mixture over the modes where the chains sit in
    separate modes, SMC from the prior where they diverge, the exact sum over a small all-discrete support
    (pmz.auto)."""

    posterior: object = option(None, "a pm.sample result to use instead of pmz's own chains")
    latent: bool = option(True, "before any chain: integrate Gaussian latent variables out exactly where the "
                                "density is quadratic in the untransformed ones given at most 6 other coordinates "
                                "(the latent route), or importance sample a model of at most 30 coordinates from a "
                                "Student-t at its peak (the importance route); False: the chains first", boolean)
    n_chains: int = option(32, "HMC chains (at least 4: two halves of two)", positive_int)
    n_draws: object = option(None, "draws per chain in the first pass (None: enough for a Gaussian reference in "
                                    "this dimension, 5 d^2 per half of the chains, between 50 and 125)",
                             optional(positive_int))
    n_warmup: int = option(400, "warm-up iterations per chain", positive_int)
    target_se: float = option(0.03, "draw more (up to 8x) until the se is below this", positive_number)
    max_time: object = option(None, "time budget in seconds: once spent, the warm-up is cut short, no further route "
                                    "starts and the result is flagged unreliable (None: none)", optional(_seconds))
    max_rhat: float = option(1.05, "split R-hat above this: the chains disagree (modes route)", positive_number)
    max_khat: float = option(0.7, "Pareto k-hat above this: the reference's tails are too light", positive_number)
    min_overlap: float = option(0.2, "bridge overlap below this: add a path from the reference", positive_number)
    n_bootstrap: int = option(0, "bootstrap resamples (0: the two halves' agreement checks the se)",
                              non_negative_int)
    fallback: str = option("smc", "the tempered route's method", one_of("smc"))
    n_chunks: object = option(
        None,
        "split the chains into this many groups that warm up on their own, here one after the other or on the "
        "executor; the result depends on n_chunks but not on the executor or its workers (None: one group, "
        "all chains adapting together; with executor= the path and SMC routes still split their paths and runs). "
        "Worth it for few dimensions and much data; groups of few chains adapt worse in many dimensions",
        optional_int(1),
    )
    chunk_timeout: object = chunk_timeout()

    def _check_together(self):
        if self.n_chains < 4:
            raise ValueError(
                f"pmz: n_chains must be at least 4 (two halves of at least two chains), got {self.n_chains}"
            )
        if self.n_chunks is not None and self.n_chunks > self.n_chains // 2:
            raise ValueError(
                f"pmz: n_chunks must be at most n_chains // 2 = {self.n_chains // 2} (groups of at least two chains), "
                f"got {self.n_chunks}"
            )
