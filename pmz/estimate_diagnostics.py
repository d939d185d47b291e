"""What an estimate measured besides log Z: one frozen dataclass of diagnostics per family of estimators.

Every :class:`~pmz.records.EvidenceEstimate` carries one of them in ``diagnostics``. The estimator fills it; the
method glue (:mod:`pmz.methods`) extends it with :func:`dataclasses.replace`; :func:`pmz.reliability.assess` reads
its fields. A field that an estimator did not compute is None.

* :class:`Diagnostics`: what any estimate may carry (bootstrap se, other estimates of the same run, prior mass, a
  flag from the method itself); the base of the others;
* :class:`WorkDiagnostics`: annealing work, one-way and two-way (AIS, RAISE, BAR, bounds, cumulants, bridge
  sampling), with :class:`LogWeightMoments` for the cumulants and :class:`HistogramDiagnostics` for the histogram
  (WHAM) estimator's density of states and Gibbs chain;
* :class:`TemperingDiagnostics`: estimates over a ladder of levels (RTS, TS, TI, MBAR, Wang-Landau);
* :class:`SMCDiagnostics`: independent sequential Monte Carlo runs;
* :class:`AutoDiagnostics`: the default route, ``method="auto"``.

Besides what was measured, a diagnostics object says what the estimate *is*, so that no rule has to recognise a
method by its name: :attr:`WorkDiagnostics.one_way_side`, :attr:`WorkDiagnostics.estimate_is_bounds`,
:attr:`WorkDiagnostics.is_cumulant` (set by the estimator that knows) and properties such as
:attr:`WorkDiagnostics.has_bounds` and :attr:`SMCDiagnostics.runs`.

``to_dict()`` gives the flat mapping of string keys that a result stores in its ``evidence`` group
(:mod:`pmz.results`); it is for serialisation only, and its keys are those results have always had.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

__all__ = [
    "Diagnostics",
    "WorkDiagnostics",
    "HistogramDiagnostics",
    "LogWeightMoments",
    "TemperingDiagnostics",
    "SMCDiagnostics",
    "AutoDiagnostics",
]


def _unstored(default=None):
    """A field that results do not store under its own name: a flag saying what the estimate is (for
    :mod:`pmz.reliability`), or a nested object or table that ``to_dict`` flattens itself."""
    return field(default=default, metadata={"stored": False})


@dataclass(frozen=True)
class Diagnostics:
    """What any estimate may carry; the base of every family.

    Attributes
    ----------
    se_estimator : float or None
        The estimator's own standard error, kept by :func:`pmz.reliability.assess` when it raised ``log_z_se`` to
        a floor (the bootstrap se, half the Jarzynski bracket, ...).
    se_bootstrap : float or None
        sd of the bootstrap replicates of log Z over paths (resampling paths with replacement within each
        direction); inf when a replicate has no path with weight.
    bootstrap_log_z : ndarray or None
        Those replicates.
    estimates : dict or None
        Other estimates of the same run, ``{name: (log_z, se)}``: BAR of a two-way run's paths (``"bar"``), every
        cheap estimator of a tempering trace, the histogram's maximum (``"ml"``), auto's halves and routes.
    independent_estimates : list of str or None
        The names of the estimates an answer rests on (the default's two halves; its one estimate where it has no
        second): stored for the reader.
    independent : tuple of (name, log_z, se) or None
        The two independent estimates themselves (the default's check): a difference beyond their combined se is a
        verdict (:func:`pmz.reliability.second_estimate`).
    bar_same_paths : (log_z, se) or None
        BAR of the same forward and reverse paths, for another estimator of a two-way run (RAISE, cumulant,
        histogram, bounds); also in ``estimates`` under "bar".
    unreliable : str or None
        A reason, given by the method itself, why the estimate cannot be trusted (draws given as ``posterior=``
        that do not look like the model's posterior, ...); "" or None: none.
    prior_log_mass, prior_log_mass_se : float or None
        ``sum_v log c_v`` and its se: the measured log mass of prior densities that do not integrate to one
        (:mod:`pmz.model.prior_mass`, e.g. 1/K! for an ordered transform); methods that start from prior draws
        estimate log Z under the normalised prior.
    prior_unnormalised : str or None
        The variables whose prior density does not integrate to one, comma-separated.
    log_support_mass : float or None
        ``log P_0(U > -inf)``: the log mass of f0 (the prior) where the likelihood is positive, when it is below
        one; added to log Z (RAISE: from the forward paths with a finite weight; TI: from the level-0 samples).
    """

    se_estimator: float | None = None
    se_bootstrap: float | None = None
    bootstrap_log_z: np.ndarray | None = None
    estimates: dict | None = None
    independent_estimates: list | None = None
    independent: tuple | None = _unstored()
    bar_same_paths: tuple | None = _unstored()
    unreliable: str | None = None
    prior_log_mass: float | None = None
    prior_log_mass_se: float | None = None
    prior_unnormalised: str | None = None
    log_support_mass: float | None = None

    @property
    def bar_of_same_paths(self) -> tuple:
        """``(log_z, se)`` of BAR of the same forward and reverse paths (Bennett's se); ``(None, None)`` when the
        estimate is BAR itself or no such run exists."""
        return (None, None) if self.bar_same_paths is None else self.bar_same_paths

    def with_estimates(self, more: dict):
        """These diagnostics with ``more`` added to :attr:`estimates` (``more`` wins for a shared name)."""
        return replace(self, estimates={**(self.estimates or {}), **more})

    def to_dict(self) -> dict:
        """The flat ``{key: value}`` mapping a result stores (:mod:`pmz.results`): every stored field that is not
        None, under its own name. For serialisation only; code reads the fields."""
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.metadata.get("stored", True) and value is not None:
                out[f.name] = value
        return out


@dataclass(frozen=True)
class LogWeightMoments:
    """Moments of one direction's log weights ``X = log w = -W`` (the cumulant estimators, Habeck 2017 eq 12-13).

    Attributes
    ----------
    mean_log_w, var_log_w : float
        ``k1 = mean(X)`` and ``k2 = var(X)`` (ddof 1).
    skewness, excess_kurtosis : float
        ``m3 / s^3`` and ``m4 / s^4 - 3`` (central moments ``m3``, ``m4``; 0 when ``s = 0``): both near 0 for
        Gaussian work, where the expansion ``log E[e^X] = k1 + k2/2 + k3/6 + k4/24 + ...`` stops after ``k2/2``.
    third_cumulant_term : float
        ``m3 / 6``, the leading term a one-sided cumulant estimate neglects.
    """

    mean_log_w: float
    var_log_w: float
    skewness: float
    excess_kurtosis: float
    third_cumulant_term: float

    def to_dict(self, side: str) -> dict:
        """Stored as ``mean_log_w_<side>``, ``var_log_w_<side>``, ``skewness_<side>``, ... (``side``: "forward" or
        "reverse")."""
        return {f"{f.name}_{side}": getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class WorkDiagnostics(Diagnostics):
    """Annealing work, one-way (AIS, RAISE) and two-way (BAR, bounds, cumulants, histogram, bridge sampling).

    Forward paths have log weights ``log w_f`` (``E[w_f] = Z``), reverse paths ``log w_r`` (``E[w_r] = 1/Z``); the
    work is ``W = -log w``. Every two-way result also carries the bounds, both Jarzynski values and the overlap of
    BAR of the same paths, and where the reverse paths started.

    Attributes
    ----------
    one_way_side : {"forward", "reverse"} or None
        The side whose weights alone make the estimate: "forward" for AIS (Jarzynski), "reverse" for RAISE; None
        when the estimate uses both sides. Not stored in the result.
    estimate_is_bounds : bool
        The estimate is the midpoint of the stochastic bounds and its se their half-gap
        (:func:`~pmz.estimators.bounds.stochastic_bounds`). Not stored.
    is_cumulant : bool
        The estimate is a truncated cumulant expansion of the work (:func:`~pmz.estimators.cumulant.cumulant`). Not
        stored.
    ess, ess_fraction : float or None
        Kish effective sample size ``(sum w)^2 / sum w^2`` of the one-way weights, and ``ess / n_paths``.
    se_delta : float or None
        Delta-method se: one-way ``sqrt((M / ESS - 1) / (M - 1))``; cumulant ``sqrt(sum (a^2 s^2 + 2 a b m3 + b^2
        (m4 - s^4)) / n)`` for ``a mean + b var`` of each direction.
    n_paths : int or None
        Paths of a one-way estimate.
    mean_log_w : float or None
        AIS: ``log Z0 + mean(log w_f)``, a stochastic lower bound on log Z.
    upper_bound : float or None
        RAISE: ``log Z0 - mean(log w_r)`` (plus ``log_support_mass``), a stochastic upper bound.
    var_log_w : float or None
        ``Var[log w_f]`` of the forward paths with a finite weight (RAISE alone: of its reverse weights).
    var_log_w_predicted : float or None
        The pilot's perfect-transition prediction of ``Var[log w_f]`` (VAROPT: ``K Var[log w] -> J``, the
        thermodynamic divergence); kernels that do not keep up with the schedule do far worse.
    log_support_mass_se : float or None
        RAISE: se of ``log_support_mass``, ``sqrt((1 - p) / (n_f p))`` for the fraction ``p`` of forward paths with
        a finite weight.
    se_raise : float or None
        RAISE: the delta-method se of the reverse weights alone (before ``log_support_mass_se`` is added).
    se_bennett, se_ml : float or None
        BAR's asymptotic se: Bennett's ``sqrt((<f_F^2>/<f_F>^2 - 1)/n_f + (<f_R^2>/<f_R>^2 - 1)/n_r)`` and the
        inverse observed information ``sqrt(1 / (sum f_F (1 - f_F) + sum f_R (1 - f_R)) - 1/n_f - 1/n_r)`` (Fermi
        terms ``f`` at the root; :mod:`pmz.estimators.bar`).
    overlap : float or None
        ``(1/n_f + 1/n_r) sum_n P_0(n) P_1(n)`` of the forward and negated reverse work (0: none, 1: identical).
    fraction_forward_in_reverse_range, fraction_reverse_in_forward_range : float or None
        Fraction of the forward works inside ``[min(-W_r), max(-W_r)]``, and of the negated reverse works inside
        ``[min(W_f), max(W_f)]``.
    jarzynski_forward, jarzynski_reverse : float or None
        ``log Z0 + log mean(w_f)`` (biased low) and ``log Z0 - log mean(w_r)`` (biased high): they bracket log Z in
        expectation.
    n_forward, n_reverse : int or None
        Forward and reverse paths.
    n_eff_reverse : float or None
        Effective size of the reverse sample (correlated posterior draws), used in BAR's ``M`` and variance.
    log_count_ratio : float or None
        BAR's ``M = log(n_f / n_eff_r)``.
    lower, upper : float or None
        Stochastic bounds ``log Z0 + mean(log w_f) <= log Z <= log Z0 - mean(log w_r)`` (when every weight is
        finite).
    gap : float or None
        ``upper - lower = mean(W_f) + mean(W_r)``, the hysteresis.
    lower_se, upper_se, gap_se : float or None
        ``sd / sqrt(n)`` of the bounds, and ``sqrt(lower_se^2 + upper_se^2)``.
    bounds_valid : bool or None
        Set by :func:`pmz.reliability.assess` when the estimate has bounds: False when the upper bound is not
        guaranteed (reverse starts resampled from the forward run, or inverted bounds).
    forward_moments, reverse_moments : LogWeightMoments or None
        Cumulant estimators: moments of each direction's log weights (stored as ``skewness_forward``, ...).
    reverse_start : str or None
        Where the reverse paths started: "posterior", "nuts", "hmc", "resample" or "exact".
    reverse_start_option : str or None
        What the user asked for (``reverse_start`` or ``posterior=``; objects as ``<TypeName>``).
    reverse_burn : int or None
        Kernel steps at b = 1 before resampled reverse paths start (only with ``reverse_start == "resample"``).
    forward_ess_fraction : float or None
        Kish ESS of the forward weights over the number of forward paths.
    estimator : str or None
        The estimator behind a method named otherwise (bridge sampling: "bar").
    pareto_khat : float or None
        Pareto k-hat of the forward log weights (auto's bridge halves): above 0.7 the reference's tails are too
        light for importance sampling.
    draws_check, draws_check_se : float or None
        The check of posterior draws (:func:`pmz.runners.draws_check.check_draws`): the standardised effect (a Stein
        identity's deviation, 0 for this model's draws) of largest z over coordinates, and its se.
    """

    one_way_side: str | None = _unstored(None)
    estimate_is_bounds: bool = _unstored(False)
    is_cumulant: bool = _unstored(False)
    ess: float | None = None
    ess_fraction: float | None = None
    se_delta: float | None = None
    n_paths: int | None = None
    mean_log_w: float | None = None
    upper_bound: float | None = None
    var_log_w: float | None = None
    var_log_w_predicted: float | None = None
    log_support_mass_se: float | None = None
    se_raise: float | None = None
    se_bennett: float | None = None
    se_ml: float | None = None
    overlap: float | None = None
    fraction_forward_in_reverse_range: float | None = None
    fraction_reverse_in_forward_range: float | None = None
    jarzynski_forward: float | None = None
    jarzynski_reverse: float | None = None
    n_forward: int | None = None
    n_reverse: int | None = None
    n_eff_reverse: float | None = None
    log_count_ratio: float | None = None
    lower: float | None = None
    upper: float | None = None
    gap: float | None = None
    lower_se: float | None = None
    upper_se: float | None = None
    gap_se: float | None = None
    bounds_valid: bool | None = None
    forward_moments: LogWeightMoments | None = _unstored()
    reverse_moments: LogWeightMoments | None = _unstored()
    reverse_start: str | None = None
    reverse_start_option: str | None = None
    reverse_burn: int | None = None
    forward_ess_fraction: float | None = None
    estimator: str | None = None
    pareto_khat: float | None = None
    draws_check: float | None = None
    draws_check_se: float | None = None

    @property
    def has_bounds(self) -> bool:
        """Both stochastic bounds are known."""
        return self.lower is not None and self.upper is not None

    def moments(self) -> tuple:
        """``((side, LogWeightMoments, n_paths), ...)`` of each direction the cumulant estimator used."""
        sides = (("forward", self.forward_moments, self.n_forward), ("reverse", self.reverse_moments, self.n_reverse))
        return tuple(side for side in sides if side[1] is not None)

    def to_dict(self) -> dict:
        out = super().to_dict()
        for side, moments, _ in self.moments():
            out.update(moments.to_dict(side))
        return out


@dataclass(frozen=True)
class HistogramDiagnostics(WorkDiagnostics):
    """The histogram (WHAM) estimator and its posterior by Gibbs sampling (Habeck 2017 section 5.3).

    Attributes
    ----------
    work : ndarray
        Pooled work values ``u = (W_f, -W_r)``.
    lam : ndarray
        Their ``lambda``: 0 for forward, 1 for (negated) reverse samples.
    log_dos : ndarray
        Normalised maximum-likelihood density of states ``log g_n`` (``p_f(u) ~= sum_n g_n delta(u - u_n)``).
    dos_posterior_mean : ndarray or None
        Posterior mean of the normalised ``g_n``.
    ess_draws : float or None
        Effective size of the Gibbs chain of log Z (Geyer's initial positive sequence).
    mcse : float or None
        Monte Carlo se of the posterior mean: ``sd / sqrt(ess_draws)``.
    n_draws, n_burn : int or None
        Gibbs sweeps kept and discarded.
    a, b : float or None
        The Gamma(a, b) prior on each ``g_n``.
    """

    work: np.ndarray | None = None
    lam: np.ndarray | None = None
    log_dos: np.ndarray | None = None
    dos_posterior_mean: np.ndarray | None = None
    ess_draws: float | None = None
    mcse: float | None = None
    n_draws: int | None = None
    n_burn: int | None = None
    a: float | None = None
    b: float | None = None


@dataclass(frozen=True)
class TemperingDiagnostics(Diagnostics):
    """Estimates over a ladder ``0 = b_0 < ... < b_{K-1} = 1`` of levels: RTS, TS, TI, MBAR, Wang-Landau, and RTS
    from a PyMC trace (:func:`pmz.tempered_evidence`).

    Attributes
    ----------
    log_z_k, log_z_k_se : ndarray or None
        The whole curve ``log Z(b_k)`` (plus ``log Z0``) and its se (0 at the reference level).
    c_hat : ndarray or None
        The level marginal: ``c_hat_k = (1/N) sum_i q(k | x_i)`` (RTS eq 9) or the visit fractions (TS).
    prior : ndarray or None
        The prior over levels ``r_k``.
    max_gap : float or None
        ``max_k |r_k - c_hat_k|``: how far the level marginal is from the prior (poor guesses ``log Zhat``).
    se_jackknife : float or None
        se from the batch jackknife (RTS), or from deleting one block of sweeps (MBAR).
    n_samples : int or None
        Samples ``(x_i, k_i)`` used.
    n_batches : int or None
        Batches of consecutive sweeps behind the batch-means se.
    n_groups : int or None
        Groups of draws deleted one at a time for the jackknife (RTS from a trace).
    n_chains, n_draws : int or None
        Chains and draws per chain of a PyMC trace.
    n_runs : int or None
        Runs combined by the multinomial likelihood (RTS Appendix A).
    converged : bool or None
        Whether Newton's method (RTS Appendix A, MBAR) converged.
    n_iter : int or None
        MBAR's iterations.
    se_inflation : float or None
        Combined RTS: the ratio of the batch-means se to the multinomial se of the last run, applied to all levels.
    se_asymptotic, se_rts : float or None
        MBAR: its asymptotic se (independent draws) and the RTS se of the same run; the larger of the jackknife and
        RTS se is reported.
    n_blocks : int or None
        MBAR: blocks of sweeps of the jackknife.
    mean_U, var_U : ndarray or None
        TI: ``E_k ~= E_{b_k}[U]`` and ``V_k ~= Var_{b_k}[U]`` at each level.
    rule : str or None
        TI: "riemann", "trapezoid" or "corrected".
    discretisation_error : float or None
        TI: an estimate of the quadrature's error over the ladder, the first neglected Euler-Maclaurin term: the
        distance from the trapezoid to the corrected rule, ``|sum_k (b_k - b_{k-1})^2 (V_k - V_{k-1})| / 12``
        (trapezoid and corrected rules; for the corrected rule a conservative stand-in for its own smaller
        error), or from the right Riemann sum to the trapezoid (Riemann rule). Sampling noise in ``E_k``, ``V_k``
        enters too; :func:`pmz.reliability.assess` compares it with the sampling se.
    support_note : str or None
        TI: why ``log_support_mass`` was added (``U = -inf`` on part of f0).
    wang_landau_note : str or None
        Said when the ``estimates`` table holds Wang-Landau's ``log g`` (an initialiser, not an answer).
    group_log_z, group_log_z_se : ndarray or None
        RTS on each fixed block of chains of the run alone (``TemperingTrace.block_sums``; up to 8 blocks): the
        blocks are independent runs, so their spread measures what the batch-means se of autocorrelated sweeps can
        miss (:func:`pmz.reliability.chain_groups`).
    """

    log_z_k: np.ndarray | None = None
    log_z_k_se: np.ndarray | None = None
    c_hat: np.ndarray | None = None
    prior: np.ndarray | None = None
    max_gap: float | None = None
    se_jackknife: float | None = None
    n_samples: int | None = None
    n_batches: int | None = None
    n_groups: int | None = None
    n_chains: int | None = None
    n_draws: int | None = None
    n_runs: int | None = None
    converged: bool | None = None
    n_iter: int | None = None
    se_inflation: float | None = None
    se_asymptotic: float | None = None
    se_rts: float | None = None
    n_blocks: int | None = None
    group_log_z: np.ndarray | None = None
    group_log_z_se: np.ndarray | None = None
    mean_U: np.ndarray | None = None
    var_U: np.ndarray | None = None
    rule: str | None = None
    discretisation_error: float | None = None
    support_note: str | None = None
    wang_landau_note: str | None = None


@dataclass(frozen=True)
class SMCDiagnostics(Diagnostics):
    """Independent sequential Monte Carlo runs (resample-move, ARM; :mod:`pmz.estimators.smc_evidence`).

    Run ``j`` gives ``log Z_j = log Z_{t_0} + sum_n log(sum_r Wbar_r W_r)``; the runs pool as
    ``log((1/J) sum_j Z_j)``.

    Attributes
    ----------
    run_log_z : ndarray or None
        ``log Z_j`` of each run.
    run_ideal_se : ndarray or None
        Each run's ideal-condition se, ``sqrt(sum_n v_n / R_n)`` (ARM Theorem 1).
    se_ideal : float or None
        ``sqrt(sum_j (Z_j / sum Z)^2 Var_j)``: too small when the moves mix poorly.
    se_between : float or None
        ``c_J sd_j(log Z_j) / sqrt(J)``, ``c_J = t_{J-1}(0.975) / z(0.975)`` (NaN for one run).
    spread_p_value : float or None
        Upper tail of ``chi^2_{J-1}`` at ``(J - 1) s^2 / mean_j Var_j``: small when the runs spread more than their
        ideal se allow.
    variance_estimate : float or None
        ARM's ``sum_n v_n / R_n`` averaged over runs.
    mean_particles : float or None
        Average particles ``R_n`` per stage.
    n_stages : float or None
        Stages per run (mean).
    total_moves : int or None
        Particle moves (particles x kernel steps) of all runs.
    mean_ess_fraction : float or None
        Mean of ``ESS_n / R_n`` over stages.
    n_runs : int or None
        ``J``.
    algorithm : str or None
        "rm", "arm", "arm_anticipate" or "arm_reseed".
    sequence : str or None
        The sequence's name ("tempering", "data", "units", ...).
    """

    run_log_z: np.ndarray | None = None
    run_ideal_se: np.ndarray | None = None
    se_ideal: float | None = None
    se_between: float | None = None
    spread_p_value: float | None = None
    variance_estimate: float | None = None
    mean_particles: float | None = None
    n_stages: float | None = None
    total_moves: int | None = None
    mean_ess_fraction: float | None = None
    n_runs: int | None = None
    algorithm: str | None = None
    sequence: str | None = None

    @property
    def runs(self) -> np.ndarray | None:
        """The finite ``log Z_j`` of the independent runs, None when fewer than two."""
        if self.run_log_z is None:
            return None
        runs = np.asarray(self.run_log_z, dtype=float).ravel()
        runs = runs[np.isfinite(runs)]
        return runs if runs.size >= 2 else None


@dataclass(frozen=True)
class AutoDiagnostics(Diagnostics):
    """The default route, ``method="auto"`` (:mod:`pmz.auto`). Its ``estimates`` table holds every estimate
    computed on the way and ``independent_estimates`` the two it compared.

    Attributes
    ----------
    route : {"sum", "latent", "importance", "bridge", "path", "modes", "tempered"} or None
        The route that gave the estimate.
    route_reason : str or None
        One line: why this route.
    proof : str or None
        For an exact answer (se 0): the property of the model that makes it exact.
    routes_tried : list of str or None
        Every route the plan asked, in order, and what came of it (``"latent: does not apply (...)"``,
        ``"bridge: handed over (...)"``, ``"path: answered (...)"``).
    timeline : list of str or None
        ``"<step>: <seconds> s"`` since the start, one per step.
    rhat : float or None
        Largest split R-hat of the posterior draws.
    growth : float or None
        Draws per chain at the end over those of the first pass (more draws bought a smaller se).
    divergences : int or None
        Divergent transitions of the HMC chains.
    n_posterior_draws : int or None
        Tempered route after untrusted chains: how many posterior draws the chains had.
    n_chains, n_draws : int or None
        Chains, and draws per chain, of the posterior draws.
    acceptance : float or None
        Mean acceptance of the HMC chains.
    disagreement_z : float or None
        ``|log Z_1 - log Z_2| / sqrt(se_1^2 + se_2^2)`` of the two independent estimates.
    pareto_khat_by_estimate, overlap_by_estimate, n_eff_reverse_by_estimate : dict or None
        Each sub-estimate's Pareto k-hat, overlap and reverse effective size by its name (stored as
        ``<name>_pareto_khat``, ``<name>_overlap``, ``<name>_n_eff_reverse``).
    log_z_normalised_prior : float or None
        Where the prior as written does not integrate to one (``prior_log_mass``): ``log Z - prior_log_mass``, the
        evidence with the prior normalised, which Bayes factors between models with K and K' ordered components
        need.
    dropped_chains : int or None
        Chains dropped (or restarted) because they sat where the posterior mass is negligible.
    n_modes : int or None
        Modes route: how many separate modes the chains found (clusters of chains, :mod:`pmz.runners.modes`).
    mode_masses, mode_masses_se : ndarray or None
        Modes route: each mode's share of the posterior mass (importance sampling from its component; they
        double count where two clusters share one mode) and its se; the chains' proportions play no part.
    smc : SMCDiagnostics or None
        Modes and tempered routes: the SMC estimate's diagnostics (the runs' spread, ...), read by
        :mod:`pmz.reliability` and stored under their own keys.
    seconds_to_halve_se : float or None
        About how many more seconds the route would need to halve its se: three times the time of the draws (paths,
        runs) behind a Monte Carlo se, since four times as many halve it. None where the se is not a Monte Carlo
        one (a proof, a quadrature rule), the draws were given as ``posterior=``, or the se covers two estimates
        that disagree. Where it is small, ``target_se=`` at half the se buys it.
    """

    route: str | None = None
    route_reason: str | None = None
    proof: str | None = None
    routes_tried: list | None = None
    timeline: list | None = None
    rhat: float | None = None
    growth: float | None = None
    divergences: int | None = None
    n_posterior_draws: int | None = None
    n_chains: int | None = None
    n_draws: int | None = None
    acceptance: float | None = None
    disagreement_z: float | None = None
    log_z_normalised_prior: float | None = None
    dropped_chains: int | None = None
    n_modes: int | None = None
    mode_masses: np.ndarray | None = None
    mode_masses_se: np.ndarray | None = None
    seconds_to_halve_se: float | None = None
    pareto_khat_by_estimate: dict | None = _unstored()
    overlap_by_estimate: dict | None = _unstored()
    n_eff_reverse_by_estimate: dict | None = _unstored()
    smc: SMCDiagnostics | None = _unstored()

    def to_dict(self) -> dict:
        out = {} if self.smc is None else self.smc.to_dict()
        out.update(super().to_dict())
        for suffix, table in (
            ("pareto_khat", self.pareto_khat_by_estimate),
            ("overlap", self.overlap_by_estimate),
            ("n_eff_reverse", self.n_eff_reverse_by_estimate),
        ):
            out.update({f"{name}_{suffix}": value for name, value in (table or {}).items()})
        return out
