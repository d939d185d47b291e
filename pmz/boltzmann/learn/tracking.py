"""Tracking log Z, and the train / validation log-likelihood, while a Boltzmann machine learns (RTS section 4.4).

The average log-likelihood of data ``v_1..v_N`` under an RBM ``p(v) = f1(v) / Z`` is

    mean_n log p(v_n) = mean_n log f1(v_n) - log Z,      log f1(v) = -F(v)  (hidden units summed out),

whose data term is exact and cheap; only ``log Z`` is hard. Carlson et al. (RTS, ICML 2016, section 4.4) track it
during training by simulated tempering on a **fixed ladder** ``0 = b_0 < ... < b_{K-1} = 1``: the parameters move
a little between two estimates, so the previous estimate's ladder log-weights ``log Zhat_k`` and the chains' last
states are an excellent start for the next one, which then needs few sweeps. At each checkpoint
:class:`LogZTracker`

1. builds the energy model of the current parameters (:class:`TrackedSystem`; geometric path from a fixed base f0,
   e.g. the base-rate model of the training data, so that ``log Zhat_k`` keeps its meaning across checkpoints);
2. *warm start*: takes the previous checkpoint's ``log Z_k`` curve as the guesses and its chains' last positions
   (a *cold start*, the first checkpoint, starts from ``log Zhat_k = 0`` and exact draws of f0);
3. runs RTS's initial iterations (:func:`pmz.runners.tempering_sweep.adapt_log_zhat`: runs of ``adapt_sweeps`` sweeps,
   each followed by the RTS update ``log Zhat_k <- log Zhat_k + log(c_k / r_k) - log(c_0 / r_0)``) until
   ``max_k |c_k - r_k| < tol / K``; warm, one or two iterations usually suffice (they also burn the chains in for
   the new parameters), cold a few more;
4. runs the production chains with frozen guesses (:func:`pmz.runners.tempering_sweep.run_tempering`) for ``n_sweeps``
   sweeps, extended by ``n_sweeps`` at a time while the se is above ``target_se`` (up to ``max_sweeps``), and
   estimates ``log Z`` with :func:`pmz.estimators.rts.rts` (RTS eq 10) and its batch-means se (eq 15-16, with the
   series' autocorrelation);
5. keeps the production's RTS curve and chain states for the next checkpoint.

Between checkpoints (every callback that is not one), ``follow_sweeps > 0`` keeps the chains moving with the
**partial update** of RTS section 4.4, ``log Zhat <- log Zhat + alpha (log Zhat^RTS - log Zhat)`` with
``alpha = 0.2``: while the parameters change, a short run's RTS estimate is noisy and already out of date, so the
guesses only move part of the way towards it.

A checkpoint is **unreliable** (``reliable = False``, with the reasons) when the ladder does not mix: the initial
iterations did not bring ``max_k |c_k - r_k|`` below ``tol / K``; the production's level marginal or its visit
fractions are far from the prior (``max_k |c_k - r_k|`` or ``max_k |n_k / N - r_k|`` above ``0.5 / K``, the
threshold of RTS's own warning); its chains made fewer than ``min_trips`` one-way trips
between the ladder's ends (the levels do not decorrelate, so the batch-means se cannot be trusted); or the se is not
finite. The log-likelihoods' se is ``log Z``'s (the data term is exact).

Each algorithm is the existing one: the sweep and its record (:mod:`pmz.runners.tempering_sweep`), the RTS update
(:mod:`pmz.runners.level_weights`) and estimator (:mod:`pmz.estimators.rts`); this module only schedules them.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from ...estimators.rts import rts
from ...families.energy import EnergyFamily
from ...families.schedules import make_schedule
from ...progress import progress_bar
from ...runners.level_weights import rts_update
from ...runners.tempering_settings import TemperingSettings
from ...runners.tempering_sweep import adapt_log_zhat, run_tempering
from ...validate import fraction, non_negative_int, optional, positive_int, positive_number

__all__ = [
    "Checkpoint",
    "LogZTracker",
    "TrackedSystem",
    "dbm_system",
    "ladder_trips",
    "rbm_system",
]


@dataclass(frozen=True)
class TrackedSystem:
    """What the tracker needs to know about the model being trained.

    Attributes
    ----------
    energy_model : callable
        ``params -> EnergyModel`` on binary states with an exact, normalised base that does not change with the
        parameters (so that the ladder's ``log Zhat_k`` carry over) and a kernel without tuning parameters
        (Gibbs-type), e.g. :func:`pmz.boltzmann.rbm.energy_model` with fixed base means.
    data_log_f1 : callable
        ``(params, V (n, nv)) -> (n,)``: ``log f1(v)`` of data rows with every latent unit summed out, so that
        ``mean log p(v) = mean data_log_f1 - log Z`` (RBM: minus the free energy).
    name : str
    """

    energy_model: Callable
    data_log_f1: Callable
    name: str = "model"


def rbm_system(base_means, *, kernel="gibbs") -> TrackedSystem:
    """A binary RBM (:class:`pmz.boltzmann.rbm.RBM` parameters) in visible space, hidden units summed out: base
    ``Bern(base_means)``, kernel ``"gibbs"`` (site-by-site heat bath, default) or ``"block_mh"``."""
    from ..rbm import energy_model

    base_means = np.asarray(base_means, dtype=float).copy()
    return TrackedSystem(
        energy_model=lambda rbm: energy_model(rbm, base_means, kernel=kernel),
        data_log_f1=lambda rbm, V: rbm.log_f1(V),
        name="rbm",
    )


def dbm_system(base_means=None) -> TrackedSystem:
    """A two-hidden-layer DBM (:class:`pmz.boltzmann.dbm.DBM` parameters) in its even space ``(v, h2)`` (``h1``
    summed out); the data term ``log sum_{h1,h2} exp(-E(v, h1, h2))`` enumerates the smaller hidden layer
    (:meth:`pmz.boltzmann.dbm.DBM.log_z_given_v`)."""
    from ..dbm import energy_model

    return TrackedSystem(
        energy_model=lambda dbm: energy_model(dbm, base_means),
        data_log_f1=lambda dbm, V: dbm.log_z_given_v(V),
        name="dbm",
    )


def ladder_trips(level_traces, n_levels: int) -> int:
    """One-way trips between the ladder's ends: for every chain, the number of times it reaches one end (level 0
    or ``K - 1``) after last touching the other, summed over chains. ``level_traces (n_sweeps, n_chains)``.

    >>> ladder_trips(np.array([[0, 2], [1, 2], [2, 1], [1, 0], [0, 1]]), 3)
    3
    """
    L = np.asarray(level_traces)
    if L.size == 0:
        return 0
    ends = np.where(L == 0, -1, np.where(L == n_levels - 1, 1, 0))
    rows = np.arange(L.shape[0])[:, None]
    last_hit = np.maximum.accumulate(np.where(ends != 0, rows, 0), axis=0)
    filled = np.take_along_axis(ends, last_hit, axis=0)  # the last end touched (0: none yet)
    return int(np.sum((filled[1:] != filled[:-1]) & (filled[:-1] != 0)))


def _concatenate_runs(runs):
    """One trace from consecutive runs with the same guesses (batches, level traces and counts appended)."""
    if len(runs) == 1:
        return runs[0]
    cat = {name: np.concatenate([getattr(r, name) for r in runs]) for name in (
        "batch_q", "batch_qU", "batch_qU2", "batch_counts", "batch_U", "batch_U2", "batch_size", "batch_inf",
        "batch_q_inf", "level_traces",
    )}
    weights = np.array([r.n_sweeps for r in runs], dtype=float)
    with np.errstate(invalid="ignore"):
        acceptance = np.nansum([w * r.acceptance for w, r in zip(weights, runs)], axis=0) / weights.sum()
    last = runs[-1]
    return replace(
        last,
        **cat,
        acceptance=acceptance,
        n_sweeps=int(sum(r.n_sweeps for r in runs)),
        n_logp_evals=int(sum(r.n_logp_evals for r in runs)),
        n_grad_evals=int(sum(r.n_grad_evals for r in runs)),
    )


@dataclass(frozen=True)
class Checkpoint:
    """One tracked estimate.

    Attributes
    ----------
    epoch : int
        The callback's epoch (0-based), or -1 for a direct :meth:`LogZTracker.checkpoint` call.
    update : int
        Parameter updates so far (``(epoch + 1) * updates_per_epoch``; ``epoch + 1`` without it).
    log_z, log_z_se : float
        RTS estimate of log Z and its batch-means standard error.
    log_likelihood, log_likelihood_se : dict
        Per data set: ``mean log f1(v) - log Z`` and its se (``log_z_se``: the data term is exact).
    reliable : bool
    reasons : tuple of str
        Why the checkpoint is unreliable (empty when reliable).
    warnings : tuple of str
        Other remarks (the se target was not reached, the estimator's own warnings).
    warm : bool
        Started from the previous checkpoint's guesses and chains.
    n_sweeps : int
        Sweeps per chain spent on this checkpoint: follow-up runs since the previous one, initial iterations and
        production (every chain moves once per sweep; ``n_chains`` chains).
    n_adapt : int
        Initial iterations run.
    n_production_sweeps : int
    max_gap : float
        ``max_k |c_k - r_k|`` of the production run (``c_k``: the Rao-Blackwellised level marginal).
    visit_gap : float
        ``max_k |n_k / N - r_k|``: the same for the visit fractions.
    n_trips : int
        One-way trips between the ladder's ends in the production run (:func:`ladder_trips`).
    seconds : float
        Wall time of the checkpoint (follow-up runs excluded).
    log_z_k : ndarray (K,)
        The RTS curve along the ladder (the next checkpoint's guesses).
    params : object
        The parameters it was computed for (a copy is not made: pass fresh objects).
    """

    epoch: int
    update: int
    log_z: float
    log_z_se: float
    log_likelihood: dict
    log_likelihood_se: dict
    reliable: bool
    reasons: tuple
    warnings: tuple
    warm: bool
    n_sweeps: int
    n_adapt: int
    n_production_sweeps: int
    max_gap: float
    visit_gap: float
    n_trips: int
    seconds: float
    log_z_k: np.ndarray = field(repr=False)
    params: object = field(default=None, repr=False)


_NAMED_PRIORS = ("uniform",)


class LogZTracker:
    """Estimate log Z by warm-started RTS at checkpoints of a training run (see the module docstring).

    Use it as the ``callback(epoch, params)`` of :func:`pmz.boltzmann.rbm_training.train_rbm`: every ``every``-th
    epoch is a checkpoint (its :class:`Checkpoint` is returned and kept in :attr:`checkpoints`); pass
    ``tracker.on_update`` as the ``callback`` of :func:`pmz.boltzmann.learn.fit_rbm` (a checkpoint at every call,
    labelled by update); or call :meth:`checkpoint` directly.

    Parameters
    ----------
    system : TrackedSystem, optional
        Default: :func:`rbm_system` with ``base_means``.
    data : dict of name -> array (n, nv), optional
        Data sets whose average log-likelihood is reported, e.g. ``{"train": X, "validation": Y}``.
    base_means : array (nv,), optional
        Means of the RBM's Bernoulli base (default: the pixel means of the first data set).
    every : int
        Checkpoint every ``every`` callbacks (epochs).
    updates_per_epoch : int, optional
        Parameter updates per epoch, to label checkpoints by update.
    schedule : str or array
        The fixed ladder: a named rule (``"linear"``, ``"geometric"``, ``"power"``, ``"sigmoidal"``) with
        ``n_temps`` steps (``n_temps + 1`` levels), or an array from 0 to 1.
    n_temps : int
    n_chains : int
        Tempering chains (all moved by one batched kernel call per sweep).
    n_sweeps : int
        Production sweeps per checkpoint (and the size of each extension while ``target_se`` is not met).
    target_se : float, optional
        Extend the production until ``log_z_se <= target_se`` (or ``max_sweeps``).
    max_sweeps : int
        Cap on production sweeps per checkpoint.
    adapt_sweeps : int
        Sweeps of each initial iteration.
    max_adapt : int
        Initial iterations at most per checkpoint.
    tol : float
        The initial iterations stop once ``max_k |c_k - r_k| < tol / K``.
    follow_sweeps : int
        Sweeps at every callback that is not a checkpoint, with the partial update (0: off).
    alpha : float in (0, 1]
        Gain of the partial update (RTS section 4.4: 0.2).
    log_prior : array (K,), optional
        ``log r_k`` (normalised here); default uniform. RTS section 4.4 takes ``r_k ∝ exp(2 b_k)`` when the
        tempered chains also supply PCD's negative samples; here they are separate from the trainer's chains.
    level_move : {"gibbs", "metropolis"}
    min_trips : int
        Fewer one-way trips between the ladder's ends in a production run flag the checkpoint unreliable.
    random_seed : int or numpy.random.Generator, optional
        One Generator; every run gets a stream spawned from it, in order: same seed, same bits.
    keep_params : bool
        Keep each checkpoint's parameters (for later checks against exact values).
    progressbar : bool

    Examples
    --------
    >>> from pmz.boltzmann.rbm import random_rbm
    >>> rbm = random_rbm(8, 4, seed=1)
    >>> V = (np.random.default_rng(0).uniform(size=(50, 8)) < 0.4).astype(float)
    >>> tracker = LogZTracker(data={"train": V}, n_temps=10, n_chains=50, n_sweeps=100, random_seed=1)
    >>> first, second = tracker.checkpoint(rbm), tracker.checkpoint(rbm)
    >>> first.warm, second.warm   # the second checkpoint starts from the first one's curve and chains
    (False, True)
    >>> bool(abs(second.log_z - rbm.log_z_exact()) < 4 * second.log_z_se + 0.01)
    True
    """

    def __init__(
        self,
        system: TrackedSystem | None = None,
        *,
        data: dict | None = None,
        base_means=None,
        every: int = 1,
        updates_per_epoch: int | None = None,
        schedule="linear",
        n_temps: int = 49,
        n_chains: int = 100,
        n_sweeps: int = 200,
        target_se: float | None = None,
        max_sweeps: int = 2000,
        adapt_sweeps: int = 50,
        max_adapt: int = 10,
        tol: float = 0.3,
        follow_sweeps: int = 0,
        alpha: float = 0.2,
        log_prior=None,
        level_move: str = "gibbs",
        min_trips: int = 10,
        random_seed=None,
        keep_params: bool = True,
        progressbar: bool = False,
    ):
        self.data = {} if data is None else {str(k): np.asarray(v, dtype=float) for k, v in dict(data).items()}
        for name, V in self.data.items():
            if V.ndim != 2 or V.shape[0] == 0:
                raise ValueError(f"pmz: data[{name!r}] must be a non-empty 2-d array (n, n_visible), got {V.shape}")
        if system is None:
            if base_means is None:
                if not self.data:
                    raise ValueError("pmz: LogZTracker needs a system, base_means, or data to take base means from")
                base_means = next(iter(self.data.values())).mean(axis=0)
            system = rbm_system(base_means)
        elif not isinstance(system, TrackedSystem):
            raise TypeError(f"pmz: system must be a TrackedSystem (see rbm_system), got {type(system).__name__}")
        self.system = system
        self.every = positive_int("every", every)
        self.updates_per_epoch = optional(positive_int)("updates_per_epoch", updates_per_epoch)
        self.betas = make_schedule(schedule, n_temps if isinstance(schedule, str) else None)
        K = self.betas.size
        self.n_chains = positive_int("n_chains", n_chains)
        self.n_sweeps = positive_int("n_sweeps", n_sweeps)
        if self.n_sweeps < 4:
            raise ValueError(f"pmz: n_sweeps must be at least 4 (the se needs a series of batches), got {n_sweeps}")
        self.target_se = optional(positive_number)("target_se", target_se)
        self.max_sweeps = positive_int("max_sweeps", max_sweeps)
        if self.max_sweeps < self.n_sweeps:
            raise ValueError(f"pmz: max_sweeps ({max_sweeps}) must be at least n_sweeps ({n_sweeps})")
        self.adapt_sweeps = positive_int("adapt_sweeps", adapt_sweeps)
        self.max_adapt = positive_int("max_adapt", max_adapt)
        self.tol = positive_number("tol", tol)
        self.follow_sweeps = non_negative_int("follow_sweeps", follow_sweeps)
        self.alpha = fraction(closed_right=True)("alpha", alpha)
        if log_prior is None:
            log_prior = np.zeros(K)
        log_prior = np.asarray(log_prior, dtype=float)
        if log_prior.shape != (K,) or not np.all(np.isfinite(log_prior)):
            raise ValueError(f"pmz: log_prior must hold {K} finite values (one per level), got shape {log_prior.shape}")
        self.log_prior = log_prior - np.log(np.sum(np.exp(log_prior - log_prior.max()))) - log_prior.max()
        # the production runs' settings (checks level_move); the other runs replace the sweeps and what is kept
        self.settings = TemperingSettings(
            n_chains=self.n_chains, n_sweeps=self.n_sweeps, n_batches=self.n_sweeps, n_traces=self.n_chains,
            log_prior=self.log_prior, level_move=level_move,
        )
        self.level_move = level_move
        self.min_trips = non_negative_int("min_trips", min_trips)
        self.keep_params = bool(keep_params)
        self.progressbar = bool(progressbar)
        self._rng = random_seed if isinstance(random_seed, np.random.Generator) else np.random.default_rng(random_seed)
        self.checkpoints: list[Checkpoint] = []
        self._warm = None  # (log_zhat, x, levels) after the last run
        self._pending_sweeps = 0  # follow-up sweeps since the last checkpoint

    # ------------------------------------------------------------------ pieces

    def _setup(self, params):
        model = self.system.energy_model(params)
        kernel = model.kernel
        if kernel is None or getattr(kernel, "tunable", True):
            raise ValueError(
                "pmz: LogZTracker needs an energy model with a Gibbs-type kernel (no step size to tune); "
                f"got {getattr(kernel, 'name', kernel)!r}"
            )
        family = EnergyFamily(model)
        params_k = [kernel.default_params(model.dim)] * self.betas.size
        return family, kernel, params_k

    def _run(self, family, kernel, params_k, log_zhat, x, levels, n_sweeps, *, n_traces=0, desc="tracking"):
        settings = self.settings.replace(n_sweeps=n_sweeps, n_batches=n_sweeps, n_traces=n_traces)
        return run_tempering(
            family, kernel, self.betas, params_k, settings, log_zhat=log_zhat, rng=self._rng.spawn(1)[0],
            start_x=x, start_levels=levels, progressbar=self.progressbar, desc=desc,
        )

    def follow(self, params) -> None:
        """``follow_sweeps`` sweeps at the current parameters and the partial update
        ``log Zhat <- log Zhat + alpha (rts_update(log Zhat) - log Zhat)`` (RTS section 4.4). No-op before the first
        checkpoint or with ``follow_sweeps = 0``."""
        if self._warm is None or self.follow_sweeps == 0:
            return
        family, kernel, params_k = self._setup(params)
        log_zhat, x, levels = self._warm
        trace = self._run(family, kernel, params_k, log_zhat, x, levels, self.follow_sweeps, desc="tracking follow")
        full = rts_update(log_zhat, trace.c_hat, self.log_prior)
        partial = log_zhat + self.alpha * (full - log_zhat)
        self._warm = (partial - partial[0], trace.final_x, trace.final_levels)
        self._pending_sweeps += self.follow_sweeps

    def _production(self, family, kernel, params_k, log_zhat, x, levels):
        """Runs of ``n_sweeps`` with frozen guesses, appended while the se is above ``target_se`` (at most
        ``max_sweeps``); returns the concatenated trace and its RTS estimate."""
        runs = []
        with progress_bar(total=self.max_sweeps, desc="tracking production", disable=not self.progressbar) as bar:
            while True:
                runs.append(self._run(family, kernel, params_k, log_zhat, x, levels, self.n_sweeps,
                                      n_traces=self.n_chains, desc="tracking production"))
                x, levels = runs[-1].final_x, runs[-1].final_levels
                bar.update(self.n_sweeps)
                trace = _concatenate_runs(runs)
                estimate = rts(trace)
                se = estimate.log_z_se
                if self.target_se is None or (np.isfinite(se) and se <= self.target_se):
                    break
                if trace.n_sweeps + self.n_sweeps > self.max_sweeps:
                    break
        return trace, estimate

    def estimate(self, params, *, warm: bool = True):
        """RTS estimate of log Z at ``params`` (steps 2-4 of the module docstring) without recording a checkpoint.

        Returns ``(estimate, info)``: the :class:`~pmz.records.EvidenceEstimate` of the production run and a dict
        with ``reliable``, ``reasons``, ``warnings``, ``warm``, ``n_sweeps``, ``n_adapt``, ``n_production_sweeps``,
        ``max_gap``, ``visit_gap``, ``n_trips``, ``seconds``, ``log_zhat``, ``final_x``, ``final_levels``.
        ``warm=False`` (or no previous checkpoint) starts cold; either way the guesses and chains kept for the next
        checkpoint stay as they were (the random stream moves on).
        """
        start = time.perf_counter()
        family, kernel, params_k = self._setup(params)
        K = self.betas.size
        warm = bool(warm and self._warm is not None)
        log_zhat, x, levels = self._warm if warm else (np.zeros(K), None, None)
        log_zhat, x, levels, stages, converged = adapt_log_zhat(
            family, kernel, self.betas, params_k, self.settings.replace(n_sweeps=self.adapt_sweeps),
            log_zhat=log_zhat, rng=self._rng.spawn(1)[0], max_iterations=self.max_adapt, tol=self.tol, start_x=x,
            progressbar=self.progressbar,
        )
        spent = len(stages) * self.adapt_sweeps
        trace, estimate = self._production(family, kernel, params_k, log_zhat, x, levels)
        gap = trace.max_gap
        visit_gap = float(np.max(np.abs(trace.prior - trace.counts / trace.n_samples)))
        trips = ladder_trips(trace.level_traces, K)
        reasons, warnings = [], list(estimate.warnings)
        if not converged:
            last_gap = float(np.max(np.abs(stages[-1].prior - stages[-1].c_hat)))
            reasons.append(
                f"the ladder did not mix: after {len(stages)} initial iterations max_k |c_k - r_k| = {last_gap:.3g} "
                f"> tol / K = {self.tol / K:.3g}"
            )
        if max(gap, visit_gap) > 0.5 / K:
            reasons.append(
                f"the production's level marginal is far from the prior r_k: max_k |c_k - r_k| = {gap:.3g}, visit "
                f"fractions max_k |n_k / N - r_k| = {visit_gap:.3g} (> 0.5 / K = {0.5 / K:.3g})"
            )
        if trips < self.min_trips:
            reasons.append(
                f"the chains made {trips} one-way trips between the ladder's ends (< min_trips = {self.min_trips}): "
                "the levels do not mix, so the batch-means se is not trustworthy"
            )
        if not np.isfinite(estimate.log_z_se) or not np.isfinite(estimate.log_z):
            reasons.append("log Z or its se is not finite")
        if self.target_se is not None and not estimate.log_z_se <= self.target_se:
            warnings.append(f"se {estimate.log_z_se:.3g} above target_se = {self.target_se} after max_sweeps")
        info = dict(
            reliable=not reasons,
            reasons=tuple(reasons),
            warnings=tuple(warnings),
            warm=warm,
            n_sweeps=spent + trace.n_sweeps,
            n_adapt=len(stages),
            n_production_sweeps=trace.n_sweeps,
            max_gap=gap,
            visit_gap=visit_gap,
            n_trips=trips,
            seconds=time.perf_counter() - start,
            log_zhat=rts_update(log_zhat, trace.c_hat, self.log_prior),
            final_x=trace.final_x,
            final_levels=trace.final_levels,
        )
        return estimate, info

    def checkpoint(self, params, *, epoch: int = -1, update: int | None = None) -> Checkpoint:
        """Estimate log Z at ``params`` (warm when a previous checkpoint exists), record and return the
        :class:`Checkpoint`, and keep its guesses and chains for the next one."""
        estimate, info = self.estimate(params)
        self._warm = (info["log_zhat"], info["final_x"], info["final_levels"])
        log_likelihood, log_likelihood_se = {}, {}
        for name, V in self.data.items():
            log_likelihood[name] = float(np.mean(self.system.data_log_f1(params, V)) - estimate.log_z)
            log_likelihood_se[name] = float(estimate.log_z_se)
        if update is None:
            update = epoch + 1 if self.updates_per_epoch is None else (epoch + 1) * self.updates_per_epoch
        point = Checkpoint(
            epoch=int(epoch),
            update=int(update),
            log_z=float(estimate.log_z),
            log_z_se=float(estimate.log_z_se),
            log_likelihood=log_likelihood,
            log_likelihood_se=log_likelihood_se,
            reliable=info["reliable"],
            reasons=info["reasons"],
            warnings=info["warnings"],
            warm=info["warm"],
            n_sweeps=int(info["n_sweeps"] + self._pending_sweeps),
            n_adapt=int(info["n_adapt"]),
            n_production_sweeps=int(info["n_production_sweeps"]),
            max_gap=info["max_gap"],
            visit_gap=info["visit_gap"],
            n_trips=info["n_trips"],
            seconds=info["seconds"],
            log_z_k=np.asarray(estimate.diagnostics.log_z_k, dtype=float),
            params=params if self.keep_params else None,
        )
        self._pending_sweeps = 0
        self.checkpoints.append(point)
        return point

    def __call__(self, epoch: int, params):
        """The training callback: a :class:`Checkpoint` every ``every`` epochs, else a follow-up run (or nothing)."""
        if (int(epoch) + 1) % self.every != 0:
            self.follow(params)
            return None
        return self.checkpoint(params, epoch=int(epoch))

    def on_update(self, update: int, params):
        """The ``callback(update, model)`` of :func:`pmz.boltzmann.learn.fit_rbm` /
        :func:`pmz.boltzmann.learn.fit_dbm`: a :class:`Checkpoint` labelled by the update count at every call (their
        ``callback_every`` sets the spacing).
        For a DBM, build the tracker with ``system=dbm_system(...)``."""
        return self.checkpoint(params, update=int(update))

    # ------------------------------------------------------------------ output

    def table(self) -> dict:
        """The checkpoints as columns: ``epoch``, ``update``, ``log_z``, ``log_z_se``, ``reliable``, ``n_sweeps``,
        ``seconds`` and, per data set ``name``, ``<name>_log_likelihood`` and ``<name>_log_likelihood_se``."""
        cols = {k: np.array([getattr(c, k) for c in self.checkpoints]) for k in (
            "epoch", "update", "log_z", "log_z_se", "reliable", "n_sweeps", "seconds")}
        for name in self.data:
            cols[f"{name}_log_likelihood"] = np.array([c.log_likelihood[name] for c in self.checkpoints])
            cols[f"{name}_log_likelihood_se"] = np.array([c.log_likelihood_se[name] for c in self.checkpoints])
        return cols

    def plot(self, ax=None, *, exact=None, n_se: float = 2.0):
        """Average log-likelihood per data set against updates, with ``n_se`` se error bars; ``exact``: optional
        dict of name -> exact values at the checkpoints, drawn as lines. Unreliable checkpoints are drawn hollow."""
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(7, 4))
        cols = self.table()
        x, reliable = cols["update"], cols["reliable"].astype(bool)
        for i, name in enumerate(self.data):
            color = f"C{i}"
            y, se = cols[f"{name}_log_likelihood"], cols[f"{name}_log_likelihood_se"]
            ax.errorbar(x[reliable], y[reliable], yerr=n_se * se[reliable], fmt="o", color=color, capsize=3,
                        label=f"{name} (RTS, ±{n_se:g} se)")
            if np.any(~reliable):
                ax.errorbar(x[~reliable], y[~reliable], yerr=n_se * se[~reliable], fmt="o", mfc="none", color=color,
                            capsize=3, label=f"{name} (RTS, unreliable)")
            if exact is not None and name in exact:
                ax.plot(x, exact[name], "-", color=color, lw=1, label=f"{name} (exact)")
        ax.set_xlabel("parameter updates")
        ax.set_ylabel("average log-likelihood (nats per example)")
        ax.legend()
        return ax
