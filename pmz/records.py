"""What runners record, and what estimators return.

Runners move particles and *record*; they never compute log Z. Estimators are pure functions of a record
that return an :class:`EvidenceEstimate`. The records are plain frozen dataclasses of NumPy arrays, documented
field by field, so that one record can feed several estimators and can be stored in a result.

Sign convention (everywhere in pmz): we report ``log Z = log Z1 - log Z0 + log_z0``; the log importance
weight of a forward annealing path is ``log w_f = sum_k (b_k - b_{k-1}) U(x_{k-1})`` and its *work* is
``W_f = -log w_f``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import NamedTuple

import numpy as np

from .estimate_diagnostics import Diagnostics

__all__ = [
    "KnownTruth",
    "RunNotes",
    "DrawsCheck",
    "DrawsTrust",
    "WorkRecord",
    "BidirectionalRecord",
    "TemperingTrace",
    "SMCRecord",
    "EvidenceEstimate",
]


@dataclass(frozen=True)
class DrawsCheck:
    """The Stein check of posterior draws (:func:`pmz.runners.draws_check.check_draws`): the effect of largest
    ``|z|`` over the coordinates and both identities.

    Attributes
    ----------
    effect : float
        ``E[g sd]`` (location) or ``E[(x - mean) g] + 1`` (spread) of that test, ``g = d log p / dx``: 0 for draws
        of this model's posterior.
    se : float
        Its standard error (over the chains' effective size).
    mismatch : str
        Why the draws do not look like this model's posterior, naming the variable; "" when they pass.
    """

    effect: float
    se: float
    mismatch: str = ""


@dataclass(frozen=True)
class DrawsTrust:
    """The verdict on posterior draws that pmz did not make with its own dispersed chains (``posterior=``, or
    bridge sampling's ``pm.sample``): :mod:`pmz.runners.draw_trust`.

    Attributes
    ----------
    check : DrawsCheck or None
        The Stein check (None: not run, or nothing to test).
    divergences : int or None
        The sampler's divergent transitions, where its draws record them.
    divergent : str
        Why those divergences make the draws untrustworthy ("" when they are few).
    missed_mode : str or None
        Why the draws miss a mode that a climb from prior draws or a mixture component led to ("" when none that
        matters; None: not searched).
    """

    check: DrawsCheck | None = None
    divergences: int | None = None
    divergent: str = ""
    missed_mode: str | None = None

    @property
    def mismatch(self) -> str:
        return "" if self.check is None else self.check.mismatch

    def to_dict(self) -> dict:
        """The keys a result stores in its ``tuning`` attribute, the notes as JSON (serialisation only)."""
        out = {}
        if self.check is not None:
            out.update(draws_check=self.check.effect, draws_check_se=self.check.se,
                       posterior_mismatch=self.check.mismatch)
        if self.divergences is not None:
            out.update(divergences=self.divergences, draws_divergent=self.divergent)
        if self.missed_mode is not None:
            out["draws_missed_mode"] = self.missed_mode
        return out


@dataclass(frozen=True)
class RunNotes:
    """How a run was set up and what happened on the way: the typed notes every record carries (``notes``).

    Runners and the method layer write them once, when the record is built; nothing changes them afterwards
    (:func:`dataclasses.replace` makes a new record). What pmz reads back has a field of its own; the rest is a
    description for the reader of the result.

    Attributes
    ----------
    description : dict
        Settings and counts for the reader (the pilot's size and evaluations, the schedule rule, SMC's settings,
        the sequence's own description, ...); stored in the result, never read back by pmz.
    nothing_to_anneal : str
        Why the path has no length (no likelihood, ``U = 0``): one step from f0 to f1 = f0, exact.
    metric_beta, metric_g : ndarray or None
        The pilot's thermodynamic metric ``g(b) = Var_b[U]`` on its grid of temperatures.
    thermodynamic_length, predicted_var_log_w : float or None
        What that metric says of the schedule: its length and the variance of the log weights it predicts.
    schedule_rule : str or None
        The schedule's rule (a name, or "array").
    reverse_start : str or None
        Where reverse paths started (:mod:`pmz.runners.bidirectional`).
    gamma_threshold : float or None
        SMC: ARM's threshold of ``R_eff / R_n`` below which a stage generates particles.
    draws : DrawsTrust or None
        The verdict on posterior draws the run started from (the user's, or ``pm.sample``'s).
    interrupted : str
        A run that kept its finished part on Ctrl-C: what it kept; "" when it ran to the end.
    """

    description: dict = field(default_factory=dict)
    nothing_to_anneal: str = ""
    metric_beta: np.ndarray | None = None
    metric_g: np.ndarray | None = None
    thermodynamic_length: float | None = None
    predicted_var_log_w: float | None = None
    schedule_rule: str | None = None
    reverse_start: str | None = None
    gamma_threshold: float | None = None
    draws: DrawsTrust | None = None
    interrupted: str = ""

    @classmethod
    def from_dict(cls, fields_: dict) -> "RunNotes":
        """The notes :func:`dataclasses.asdict` made into a dict (a checkpoint's copy), rebuilt."""
        fields_ = dict(fields_)
        draws = fields_.pop("draws", None)
        if draws is not None:
            check = draws.pop("check", None)
            draws = DrawsTrust(check=None if check is None else DrawsCheck(**check), **draws)
        for name in ("metric_beta", "metric_g"):
            if fields_.get(name) is not None:
                fields_[name] = np.asarray(fields_[name], dtype=float)
        return cls(draws=draws, **fields_)

    def described(self, **more) -> "RunNotes":
        """These notes with ``more`` added to the description."""
        return replace(self, description={**self.description, **more})

    def to_dict(self) -> dict:
        """The flat mapping a result stores (its ``tuning`` attribute, as JSON): the description, then every typed
        field that is set. For serialisation only; code reads the fields."""
        out = dict(self.description)
        if self.nothing_to_anneal:
            out["nothing_to_anneal"] = self.nothing_to_anneal
        for name in ("metric_beta", "metric_g"):
            value = getattr(self, name)
            if value is not None:
                out[name] = np.asarray(value, dtype=float).tolist()
        for name in ("thermodynamic_length", "predicted_var_log_w", "schedule_rule", "reverse_start", "gamma_threshold"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.draws is not None:
            out.update(self.draws.to_dict())
        if self.interrupted:
            out["interrupted"] = self.interrupted
        return out


@dataclass(frozen=True)
class WorkRecord:
    """Per-path record of an annealed importance sampling run (Neal 2001; Habeck 2017 section 2).

    Attributes
    ----------
    log_weights : ndarray, shape (n_paths,)
        ``log w = sum_{k=1}^{K} (b_k - b_{k-1}) U(x_{k-1})`` for each path; for a reverse run
        (``direction == "reverse"``) ``log w_r = -sum_k (b_k - b_{k-1}) U(x_k)``. Work is ``-log_weights``.
    schedule : ndarray, shape (K + 1,)
        The inverse temperatures ``0 = b_0 < ... < b_K = 1``.
    direction : {"forward", "reverse"}
        Forward paths start at exact draws of p_0; reverse paths start at draws of p_1.
    log_z0 : float
        log normalising constant of the start density f0 (0 for a normalised prior or reference).
    n_steps_per_temp : int
        Kernel steps made at each intermediate temperature.
    kernel : str
        Name of the Markov kernel.
    acceptance : ndarray, shape (K + 1,)
        Mean acceptance rate of the kernel at each temperature over all paths and steps (NaN where no move
        was made, i.e. at the start temperature).
    step_size : ndarray, shape (K + 1,)
        The frozen step size used at each temperature.
    ess_path : ndarray, shape (K + 1,)
        Effective sample size ``(sum w)^2 / sum w^2`` of the running weights after each temperature
        ("on-the-fly ESS" along the path); ``ess_path[-1]`` is the ESS of the final weights. Indexed by the
        number of increments made, so for a reverse run ``ess_path[i]`` is after ``b_K .. b_{K-i}``.
    block_log_sum_w, block_log_sum_w2 : ndarray or None, shape (G, K + 1)
        ``log sum w`` and ``log sum w^2`` over the paths of each fixed block of work (:func:`pmz.runners.pooling.
        block_offsets`) at the same points; ``ess_path = exp(2 log sum w - log sum w^2)`` with the blocks added in
        order (:func:`pmz.runners.pooling.pool_work`), so that a run split into chunks of whole blocks pools to the
        same bits as one run.
    block_accept_sum : ndarray or None, shape (G, K + 1)
        Each block's sum of the kernel's acceptance probabilities at each temperature (``acceptance`` is their
        sum in block order over paths x steps).
    final_x : ndarray or None, shape (n_paths, dim)
        Final particle positions in the flat unconstrained space (weighted draws of p_1), if kept.
    n_logp_evals : int
        Particle log-density evaluations (value only) spent by this run.
    n_grad_evals : int
        Particle log-density evaluations with gradients spent by this run.
    notes : RunNotes
        How the kernel parameters and the schedule were chosen (the pilot's size and evaluation counts, its metric),
        where the paths started and what the check of their start draws found.
    """

    log_weights: np.ndarray
    schedule: np.ndarray
    direction: str = "forward"
    log_z0: float = 0.0
    n_steps_per_temp: int = 1
    kernel: str = ""
    acceptance: np.ndarray | None = None
    step_size: np.ndarray | None = None
    ess_path: np.ndarray | None = None
    final_x: np.ndarray | None = None
    n_logp_evals: int = 0
    n_grad_evals: int = 0
    notes: RunNotes = field(default_factory=RunNotes)
    block_log_sum_w: np.ndarray | None = None
    block_log_sum_w2: np.ndarray | None = None
    block_accept_sum: np.ndarray | None = None

    def __post_init__(self):
        lw = np.asarray(self.log_weights, dtype=float)
        if lw.ndim != 1 or lw.size == 0:
            raise ValueError("WorkRecord.log_weights must be a non-empty 1-d array (one entry per path)")
        if self.direction not in ("forward", "reverse"):
            raise ValueError(f"direction must be 'forward' or 'reverse', got {self.direction!r}")
        object.__setattr__(self, "log_weights", lw)
        object.__setattr__(self, "schedule", np.asarray(self.schedule, dtype=float))

    @property
    def n_paths(self) -> int:
        return self.log_weights.size

    @property
    def n_temps(self) -> int:
        """Number of annealing steps K (the schedule has K + 1 points)."""
        return self.schedule.size - 1

    @property
    def work(self) -> np.ndarray:
        """Work ``W = -log w`` of each path."""
        return -self.log_weights


@dataclass(frozen=True)
class BidirectionalRecord:
    """A forward and a reverse run over the same schedule and kernels (Habeck 2017): the input of BAR,
    the histogram estimator, the cumulants and the bounds.

    Attributes
    ----------
    forward : WorkRecord
        Paths from exact draws of p0.
    reverse : WorkRecord
        Paths from draws of p1, kernels in the reverse order.
    reverse_start : str
        Where the reverse paths started: ``"posterior"`` (draws the user passed), ``"nuts"`` (a ``pm.sample``
        run), ``"resample"`` (forward end states resampled by their weights: the reverse run then inherits the
        forward run's bias), or ``"exact"`` (exact draws of p1, e.g. a toy or a system sampler).
    n_eff_reverse : float or None
        Effective size of the reverse sample when its starts are correlated (MCMC draws); None means
        ``reverse.n_paths`` independent starts. Used for the variance of bridge sampling (K = 1).
    """

    forward: WorkRecord
    reverse: WorkRecord
    reverse_start: str = "exact"
    n_eff_reverse: float | None = None

    def __post_init__(self):
        if self.forward.direction != "forward" or self.reverse.direction != "reverse":
            raise ValueError("BidirectionalRecord needs a forward and a reverse WorkRecord, in that order")
        if self.forward.schedule.shape != self.reverse.schedule.shape or not np.allclose(
            self.forward.schedule, self.reverse.schedule
        ):
            raise ValueError("the forward and reverse runs must share one schedule")

    @property
    def final_x(self):
        return self.forward.final_x

    @property
    def log_weights(self):
        return self.forward.log_weights


@dataclass(frozen=True)
class TemperingTrace:
    """What a simulated-tempering run records, without storing samples (Carlson et al. 2016, RTS).

    ``n_chains`` chains sample the joint ``q(x, k) ∝ r_k f_{b_k}(x) / Zhat_k``; every sweep moves x at each chain's
    level, then draws new levels. Each sweep contributes one sample ``(x_i, k_i)`` per chain (x after the move, k the
    level it moved at). Sums are kept per *batch* of consecutive sweeps (all chains pooled), so that the estimators
    get batch-means error bars; totals are the sums over batches.

    Attributes
    ----------
    betas : ndarray (K,)
        The ladder ``0 = b_0 < ... < b_{K-1} = 1``.
    log_zhat : ndarray (K,)
        The guesses ``log Zhat_k`` the run used (fixed during the run).
    log_prior : ndarray (K,)
        ``log r_k``, the prior over levels (normalised).
    log_z0 : float
        log normaliser of f0.
    batch_q : ndarray (B, K)
        ``sum_i q(k | x_i)`` over the samples of each batch (the Rao-Blackwellised visit counts).
    batch_qU, batch_qU2 : ndarray (B, K)
        ``sum_i q(k | x_i) U(x_i)`` and ``sum_i q(k | x_i) U(x_i)^2`` (TI-RB).
    batch_counts : ndarray (B, K)
        Visits: the number of samples whose level was k.
    batch_U, batch_U2 : ndarray (B, K)
        ``sum U`` and ``sum U^2`` over the visits of each level (plain TI).
    batch_size : ndarray (B,)
        Samples per batch (sweeps x chains).
    batch_inf, batch_q_inf : ndarray (B, K) or None
        The visits, and ``sum_i q(k | x_i)``, of the samples whose ``U`` is not finite (``f1(x) = 0``, e.g. a
        likelihood that is zero on part of the prior). Such samples only have weight at ``b_0 = 0``; they enter
        ``batch_q`` and ``batch_counts`` but add 0 to the ``U`` sums. None (read as zeros) for older traces.
    level_traces : ndarray (n_sweeps, n_traces) of int
        The level of the first few chains after every sweep.
    acceptance : ndarray (K,)
        Mean acceptance of the x-kernel at each level (NaN for levels never visited).
    level_acceptance : float
        Fraction of accepted level moves (1 for Gibbs level draws).
    n_chains, n_sweeps, n_steps_per_temp : int
    level_move : {"gibbs", "metropolis"}
    kernel : str
    draws_U, draws_level : ndarray (n_samples,) or None
        Every sample's ``U`` and level, when draws were stored (MBAR). ``log f_k(x) = log f0(x) + b_k U(x)`` and
        the common ``log f0`` cancels in MBAR, so ``U`` is all it needs.
    final_x : ndarray (n_chains, dim) or None
        The chains' last positions; with ``final_log_q`` (n_chains, K) their level probabilities
        (``q(K-1 | x)`` is proportional to each draw's importance weight for the target).
    final_levels : ndarray (n_chains,) of int
    stage_q : ndarray (S, K)
        The ``sum q(k | x)`` of each earlier stage (the initial iterations of RTS section 2.4), for diagnostics
        and for the multinomial combination of RTS Appendix A; ``stage_n`` (S,) their sample counts,
        ``stage_log_zhat`` (S, K) the ``log Zhat`` they used.
    wang_landau : dict
        When Wang-Landau chose ``log_zhat``: its final ``log_g``, gamma history and visit histogram.
    n_logp_evals, n_grad_evals : int
        Particle evaluations of this run of chains (the pilot and the earlier stages are counted in the result's
        attrs, which count every evaluation of a call in one place: ``pmz.evidence``).
    notes : RunNotes
        How the kernel parameters were chosen, RTS's initial iterations, and an interruption the run survived.
    block_sums : ndarray (8, G, B, K) or None
        The batch sums of each fixed block of chains (:func:`pmz.runners.pooling.block_offsets`), in the order
        ``q, qU, qU2, counts, U, U2, inf, q_inf`` (:data:`pmz.runners.pooling.TRACE_SUMS`); the ``batch_*`` sums
        are these added in block order (:func:`pmz.runners.pooling.pool_trace`), so that a run split into chunks
        of whole blocks pools to the same bits as one run.
    block_accept : ndarray (2, G, K) or None
        Each block's sum of x-kernel acceptance probabilities and number of moves, per level.
    block_level_accepted : ndarray (G,) of int or None
        Each block's number of accepted level moves.
    """

    betas: np.ndarray
    log_zhat: np.ndarray
    log_prior: np.ndarray
    batch_q: np.ndarray
    batch_qU: np.ndarray
    batch_qU2: np.ndarray
    batch_counts: np.ndarray
    batch_U: np.ndarray
    batch_U2: np.ndarray
    batch_size: np.ndarray
    log_z0: float = 0.0
    level_traces: np.ndarray | None = None
    acceptance: np.ndarray | None = None
    level_acceptance: float = 1.0
    n_chains: int = 0
    n_sweeps: int = 0
    n_steps_per_temp: int = 1
    level_move: str = "gibbs"
    kernel: str = ""
    draws_U: np.ndarray | None = None
    draws_level: np.ndarray | None = None
    batch_inf: np.ndarray | None = None
    batch_q_inf: np.ndarray | None = None
    final_x: np.ndarray | None = None
    final_levels: np.ndarray | None = None
    final_log_q: np.ndarray | None = None
    stage_q: np.ndarray | None = None
    stage_n: np.ndarray | None = None
    stage_log_zhat: np.ndarray | None = None
    wang_landau: dict = field(default_factory=dict)
    n_logp_evals: int = 0
    n_grad_evals: int = 0
    notes: RunNotes = field(default_factory=RunNotes)
    block_sums: np.ndarray | None = None
    block_accept: np.ndarray | None = None
    block_level_accepted: np.ndarray | None = None

    @property
    def n_levels(self) -> int:
        return self.betas.size

    @property
    def n_samples(self) -> int:
        return int(np.sum(self.batch_size))

    @property
    def c_hat(self) -> np.ndarray:
        """``c_hat_k = (1/N) sum_i q(k | x_i)``: the Rao-Blackwellised level marginal (RTS eq 9)."""
        return np.sum(self.batch_q, axis=0) / self.n_samples

    @property
    def max_gap(self) -> float:
        """``max_k |r_k - c_hat_k|``: how far the level marginal is from the prior over levels (poor guesses
        ``log Zhat``, or chains that did not spread over the ladder)."""
        return float(np.max(np.abs(self.prior - self.c_hat)))

    @property
    def counts(self) -> np.ndarray:
        return np.sum(self.batch_counts, axis=0)

    @property
    def prior(self) -> np.ndarray:
        """``r_k``."""
        return np.exp(self.log_prior)

    @property
    def log_weights(self):
        """Log importance weights of the final positions for the target (``log q(K-1 | x)`` up to a constant)."""
        return None if self.final_log_q is None else self.final_log_q[:, -1]


@dataclass(frozen=True)
class SMCRecord:
    """What sequential Monte Carlo runs record, stage by stage (resample-move SMC and ARM; Fraccaro et al.).

    One call runs ``n_runs`` independent SMC runs over the same sequence ``p_{t_0}, ..., p_{t_N}``; the per-stage
    arrays are in *long format*: one entry per stage of every run, ``run`` saying which run (runs may have
    different numbers of stages when positions are chosen adaptively). At stage ``n`` of a run the particles
    target ``p_{t_n}`` (after the move), carry normalised weights ``Wbar_r`` (uniform right after resampling) and
    get the incremental weights ``W_r = f_{t_{n+1}}(x_r) / f_{t_n}(x_r)``; the stage's estimate of
    ``Z_{t_{n+1}} / Z_{t_n}`` is ``sum_r Wbar_r W_r``, so that ``log Z = log_z0 + sum_n log_increment[n]``.

    Attributes
    ----------
    log_increment : ndarray (S,)
        ``log sum_r Wbar_r W_r`` at each stage.
    run : ndarray (S,) of int
        The run each stage belongs to (``0 .. n_runs - 1``), stages in order within a run.
    position : ndarray (S,)
        ``t_{n+1}``: the position (beta, number of observations or units) reached by the stage's increment.
    position_from : ndarray (S,)
        ``t_n``: the position the particles targeted when they were moved and weighted.
    n_particles : ndarray (S,) of int
        ``R_n``: particles used for the stage's estimate (more than the base ``R`` when ARM generated more).
    ess : ndarray (S,)
        Kish effective sample size of the weights ``Wbar_r W_r`` after the increment.
    ess_start : ndarray (S,)
        Kish effective sample size of the weights at the start of the current resampling block (``R_n`` when the
        stage started from equal weights). The ideal-condition variance of the block's estimate is
        ``1 / ess - 1 / ess_start`` (``v_n / R_n`` of ARM, with ``v_n = R_n / R_eff - 1``), counted at stages
        that end a block (``resampled`` or the run's last stage).
    gamma : ndarray (S,)
        ARM's criterion after the stage's generate loop: ``R_eff / R_n`` (or ``R_eff / R`` with
        ``gamma_relative_to="base"``, see ``notes``).
    gamma_initial : ndarray (S,)
        The same before any particles were generated.
    n_generate : ndarray (S,) of int
        Rounds of the ARM generate loop at this stage (0 for plain resample-move).
    acceptance : ndarray (S,)
        Mean acceptance of the moves made at this stage (NaN where nothing moved).
    step_size : ndarray (S,)
        Kernel step size used at this stage (NaN for untunable kernels).
    n_moves : ndarray (S,) of int
        Particle moves (particles x kernel steps) made at this stage, including those of generated and reseeded
        particles: the cost measure of ARM's comparisons.
    resampled : ndarray (S,) of bool
        Whether the particles were resampled after this stage (ending a block).
    log_z0 : float
        ``log Z_{t_0}`` of the first distribution (exact).
    n_runs, n_base_particles : int
        Independent runs and their base particle count ``R``.
    algorithm : str
        ``"rm"`` (resample-move), ``"arm"``, ``"arm_anticipate"`` or ``"arm_reseed"``.
    sequence : str
        The sequence's name (``"tempering"``, ``"data"``, ``"units"``, ...); ``label`` what its position counts.
    kernel : str
    final_x : ndarray (n_final, dim) or None
        The last run's final particles (equally weighted unless ``final_log_weights`` says otherwise).
    final_log_weights : ndarray (n_final,) or None
    n_logp_evals, n_grad_evals : int
    notes : RunNotes
        Settings of the run (resampling scheme and threshold, steps per stage, ARM thresholds, the sequence's own
        description such as the data or unit order), and an interruption the runs survived.
    """

    log_increment: np.ndarray
    run: np.ndarray
    position: np.ndarray
    position_from: np.ndarray
    n_particles: np.ndarray
    ess: np.ndarray
    ess_start: np.ndarray
    gamma: np.ndarray
    gamma_initial: np.ndarray
    n_generate: np.ndarray
    acceptance: np.ndarray
    step_size: np.ndarray
    n_moves: np.ndarray
    resampled: np.ndarray
    log_z0: float = 0.0
    n_runs: int = 1
    n_base_particles: int = 0
    algorithm: str = "rm"
    sequence: str = ""
    label: str = "t"
    kernel: str = ""
    final_x: np.ndarray | None = None
    final_log_weights: np.ndarray | None = None
    n_logp_evals: int = 0
    n_grad_evals: int = 0
    notes: RunNotes = field(default_factory=RunNotes)

    @property
    def n_stages(self) -> np.ndarray:
        """Stages of each run ``(n_runs,)``."""
        return np.bincount(self.run, minlength=self.n_runs)

    @property
    def log_weights(self):
        return self.final_log_weights

    def run_log_z(self) -> np.ndarray:
        """``log Z`` of each run: ``log_z0 + sum_n log_increment`` over its stages ``(n_runs,)``."""
        return self.log_z0 + np.bincount(self.run, weights=self.log_increment, minlength=self.n_runs)

    def run_ideal_variance(self) -> np.ndarray:
        """Each run's ideal-condition variance of ``log Z`` (ARM: ``sum_n v_n / R_n``) ``(n_runs,)``.

        Summed over resampling blocks: a block's estimate ``log sum_r Wbar_r prod W_r`` has delta-method
        variance ``1 / ESS_end - 1 / ESS_start`` when its particles are independent draws (ideal mixing).
        """
        last = np.r_[self.run[1:] != self.run[:-1], True]
        ends = self.resampled | last
        with np.errstate(divide="ignore"):
            block = np.where(ends, 1.0 / self.ess - 1.0 / self.ess_start, 0.0)
        return np.bincount(self.run, weights=np.maximum(block, 0.0), minlength=self.n_runs)


@dataclass(frozen=True)
class EvidenceEstimate:
    """A log Z estimate with its standard error; what every estimator returns.

    Attributes
    ----------
    log_z : float
        The estimate of log Z (log evidence for a Bayesian model with a normalised prior).
    log_z_se : float
        Its standard error (the method's own: delta method, asymptotic, or posterior sd).
    method : str
        Name of the estimator.
    log_z_draws : ndarray or None
        Draws describing the estimate's uncertainty (a Bayesian posterior where the method has one);
        ``None`` means "normal with sd log_z_se", which the result turns into draws itself.
    diagnostics : Diagnostics
        What the estimator measured besides log Z (ESS, bootstrap se, bounds, ...), a frozen dataclass of its family
        (:mod:`pmz.estimate_diagnostics`: :class:`~pmz.estimate_diagnostics.WorkDiagnostics`,
        :class:`~pmz.estimate_diagnostics.TemperingDiagnostics`, ...); it also says what the estimate is (one-way,
        the bounds' midpoint, a cumulant expansion, ...) for :func:`pmz.reliability.assess`.
    warnings : list of str
        Human-readable warnings (e.g. low ESS) that the result also emits.
    reliable : bool
        False when the method's own diagnostics (bootstrap, overlap, ESS, bounds, a second estimate) say that
        ``log_z_se`` cannot be trusted as an asymptotic error bar; set by
        :func:`pmz.reliability.assess`, which
        then also raises ``log_z_se`` to what those diagnostics allow.
    reliability_reason : str
        One line saying why the estimate is unreliable ("" when reliable).
    """

    log_z: float
    log_z_se: float
    method: str
    log_z_draws: np.ndarray | None = None
    diagnostics: Diagnostics = field(default_factory=Diagnostics)
    warnings: list[str] = field(default_factory=list)
    reliable: bool = True
    reliability_reason: str = ""

    def __post_init__(self):
        if not isinstance(self.diagnostics, Diagnostics):
            raise TypeError(
                "pmz: EvidenceEstimate.diagnostics must be a pmz.estimate_diagnostics.Diagnostics (e.g. "
                f"WorkDiagnostics(overlap=0.5)), got {type(self.diagnostics).__name__}"
            )


class KnownTruth(NamedTuple):
    """A PyMC model together with its exact log evidence.

    Attributes
    ----------
    model : pymc.Model or pmz.EnergyModel
        The model (a PyMC model with the simulated observations inside, or an energy model).
    log_z : float
        Exact log marginal likelihood log p(y) (closed form), or log Z of an energy model (exact, or a
        documented reference value: see the system's docstring).
    name : str
        Short name of the system, e.g. ``"normal_mean"``.
    """

    model: object
    log_z: float
    name: str
