"""Never confidently wrong: a reliability verdict and an honest standard error for every estimate.

:func:`assess` takes an :class:`~pmz.records.EvidenceEstimate` (and, when there is one, the record it came from)
and applies the rules below, each a small function of the estimate's own typed diagnostics
(:mod:`pmz.estimate_diagnostics`; the field names are given below). No rule recognises a method by its name: the
diagnostics say what the estimate is (``one_way_side``, ``estimate_is_bounds``, ``is_cumulant``). A rule may

* make the estimate **unreliable**, with a one-line reason: ``reliable = False``, ``reliability_reason`` says why
  (reasons of several rules are joined by "; "), and the reason is added to ``warnings``;
* set a **floor** for ``log_z_se``: the reported se becomes the largest of the estimator's own se and every floor.
  The estimator's own se is then kept in the diagnostics as ``se_estimator`` (and Bayesian draws, where the
  method has them, are rescaled about their mean so that their sd is the reported se).

Every result that carries stochastic bounds (``lower``, ``upper``: ``has_bounds``) also gets ``bounds_valid``: False
when the reverse paths did not start from independent equilibrium draws (``reverse_start == "resample"``) or the
bounds are inverted. The lower bound ``mean(log w_f)`` always holds (forward paths start at exact draws of f0); the
upper bound needs reverse starts that are draws of the target.

Rules and thresholds
--------------------
The thresholds are those at which pmz's estimators already warn that their error bar is not to be trusted, checked
against good runs of the shipped known-truth systems (the five conjugate models, ``hierarchical_normal``, an 8 x 8
Ising torus, ``rbm_digits``; default options and n_paths = 64-512) so that those stay reliable with their se:

``bootstrap_floor``
    ``log_z_se >= se_bootstrap`` whenever a bootstrap over paths exists (every family). Not a verdict.
``bootstrap_excess``
    ``se_bootstrap > 2 x`` the estimator's own (delta-method / asymptotic) se: the weights are heavy-tailed and the
    asymptotic se is meaningless. Good runs: ratio 0.9-1.2 (the bootstrap of 200 replicates is itself good to ~5%).
``poor_overlap``
    ``overlap < 0.03`` between the forward and negated reverse work (BAR's and the histogram's ``min_overlap``), or
    no forward work inside the range of the negated reverse works (or no negated reverse work inside the range of
    the forward works; BAR warns on the former): every estimate with an ``overlap`` (the two-way methods) except
    the bounds' midpoint (``estimate_is_bounds``, whose half-gap se already is the bracket). The second test matters
    when a side has few paths: with one reverse path (a ``reverse_start`` array of one row) the overlap measure
    ``(1/n_f + 1/n_r) sum P_0 P_1`` is near 1 whatever the works are.
    Floor: ``max(se_ml, se_bootstrap, |jarzynski_reverse - jarzynski_forward| / 2)`` (the one-sided Jarzynski values
    bracket log Z in expectation; half their distance makes a 2-se interval as wide as that bracket), and when all
    of these are 0 (identical reverse paths, a degenerate bootstrap) half the bounds' gap or the distance to BAR: a
    zero se with poor overlap cannot be reported. Good runs: overlap 0.35 (hierarchical) to 0.98, both range
    fractions > 0 (0.27-1).
``degenerate_weights``
    one-sided Jarzynski estimates (``one_way_side``: "forward" for AIS, "reverse" for RAISE) with ``ess_fraction < 0.1``
    (their own warning). Floor: ``s_w / sqrt(ESS)``, with ``s_w`` the sd of log w under the normalised weights (the
    spread of the paths that carry the estimate; for lognormal weights it is the sd of log w, and heavy lower tails of
    paths without weight do not inflate it); it needs the record. Good runs: 0.15 (hierarchical) to 0.96.
``kernel_lag``
    ``var_log_w > 1e4 x var_log_w_predicted`` (and ``var_log_w > 1``): Var[log w] is four orders of magnitude
    above the perfect-transition prediction (VAROPT ``K Var[log w] -> J``), the kernels do not keep up with the
    schedule. Good runs: ratio 3-7 on the conjugate models, up to ~4e3 on the 50-d hierarchical model (a long lower
    tail of lagging paths that carry no weight); the logistic-regression failure this module was written for had
    1.8e7. Floor: the ``poor_overlap`` floor (two-way) or the ``degenerate_weights`` floor (one-way).
``resampled_reverse``
    ``reverse_start == "resample"`` (the diagnostics', else the record's): ``bounds_valid = False``; the bounds'
    midpoint (``estimate_is_bounds``) is unreliable (its upper bound is not guaranteed); every other two-way estimate is
    unreliable when ``forward_ess_fraction < 0.1`` or ``reverse_burn == 0`` (the reverse run then inherits the forward
    run's bias; the registry's warning). Default good runs: forward ESS 0.13-0.93 with ``reverse_burn = 20``.
``bounds_inverted``
    ``upper < lower - 3 gap_se``: impossible in expectation for equilibrium reverse starts. ``bounds_valid = False``,
    unreliable, floor ``|gap| / 2``.
``outside_bounds``
    ``log_z < lower - 3 sqrt(se^2 + lower_se^2)``, or, with valid bounds, ``log_z > upper + 3 sqrt(se^2 +
    upper_se^2)``: unreliable, floor the distance to the violated bound (not for the bounds' midpoint itself).
``bar_disagreement``
    a two-way estimate other than BAR and the bounds' midpoint (RAISE, cumulant, histogram) whose log Z differs from BAR
    of the same paths (``bar_of_same_paths``, also in the ``estimates`` table as "bar") by more than 3 combined se: one-sided
    (RAISE) or Gaussian-work (cumulant) estimates are biased where BAR is not. Floor: the difference (BAR is the better
    estimate of the two). Seen: RAISE on a 3-temperature schedule 0.9-1.2 nats high with se 0.13-0.23; good runs differ
    by < 1.5 se.
``cumulant_series``
    cumulant estimates (``is_cumulant``): in either direction (``forward_moments``, ``reverse_moments``) the cumulant
    expansion ``log E[e^X] = k1 + k2/2 + k3/6 + k4/24 + ...`` that
    the estimator truncates after ``k2/2`` does not converge: ``|k3|/6`` or ``|k4|/24`` exceeds ``k2/2``, with the
    sample skewness and excess kurtosis first shrunk towards 0 by three of their standard errors under Gaussian work
    (``sqrt(6/n)``, ``sqrt(24/n)``) so that Gaussian work of any variance passes. A few paths that lag far behind
    (one forward work of 1.7e5 among works near 10: cumulant 4.8e6 +- 4.7e6, BAR right) make all three terms huge.
    With BAR of the same paths (every two-way run) the verdict also needs the cumulant to lie more than 3 BAR se
    from BAR (the cumulant's own se, built on the same moments, is no yardstick then): a non-Gaussian work whose
    cumulant still agrees with BAR (a path 20 sd out among 512: terms 0.2, 0.06, 0.4) is no verdict. Floor:
    ``|log_z - log Z_BAR|`` (the reason quotes BAR). Good runs: the larger neglected term is 0-0.66 of ``k2/2`` on
    the conjugate models and the scale model (``mu ~ N(0, 2)``, ``s ~ HalfNormal(1)``, 5 points; 64 and 512 paths),
    2.1 on one scale-model seed whose cumulant agreed with BAR; lagging paths: 7.9e4-3.6e13 (the 50-d hierarchical
    model's cumulant, 150 nats off: ~1e3).
``work_outliers``
    cumulant estimates and the bounds' midpoint (``is_cumulant``, ``estimate_is_bounds``: built on means and variances
    of the work, where BAR and Jarzynski give a path with a huge work no weight): the ``k <= max(1, 1% of n)`` paths
    farthest from the median work each move the
    mean work of their direction by more than 1.5 standard errors of the other paths (``|mean - mean_rest| / k >
    1.5 sd_rest / sqrt(n)``, i.e. a single path beyond ``1.5 sqrt(n)`` sd of the others). Such a mean, its se and
    the bound or cumulant built on it rest on one or a few paths. Floor: ``|log_z - log Z_BAR|``. Good runs (the
    conjugate models, ``hierarchical_normal``, the scale model below): 0.13-0.37 with 512 paths, 0.27-0.8 with 64;
    lagging paths: 2.2 (64 paths) and 96-8e5 (512). Simulated works (50 draws each): normal <= 0.54, exponential
    <= 1.04 (n = 64) and <= 0.39 (n = 512), lognormal with sd 1 <= 1.75 (n = 64); sd 2 (medians 0.6-1.2) is
    flagged often, rightly: its mean rests on a few draws.
``second_estimate``
    ``independent`` (two independent estimates, e.g. ``method="auto"``'s two halves, with their names):
    the second compared with the first (or with ``log_z`` / ``log_z_se`` when the first is absent). A difference beyond
    3 combined se is unreliable, floor ``|difference| / 2`` (the 2-se interval reaches the other estimate).
``route_flag``
    a non-empty ``unreliable`` (a route that ran out of time, draws that are not the model's posterior, ...):
    unreliable with that reason.
``smc_spread``
    SMC (``SMCDiagnostics.runs``, also on ``method="auto"``'s tempered route): the independent runs' ``log Z_j``
    (``run_log_z``) spread by more than 1 nat (sd): the mean of ``Z_j`` is dominated by the largest run and an se on the
    log scale is meaningless; floor the sd of one run. Good runs: sd 0.003-0.08.
``smc_mixing``
    SMC: ``spread_p_value < 0.01`` and ``se_between > 5 se_ideal``: the runs disagree far beyond their
    ideal-condition error bars (the moves do not mix) and the between-run se rests on a few runs; floor the sd of
    one run. Good runs: ratio up to 2.2 (p down to 0.002).
``level_marginal``
    estimates over a tempering ladder (RTS, TS, TI, MBAR; ``TemperingDiagnostics.max_gap`` with the level marginal
    ``c_hat``): ``max_k |r_k - c_k| > 0.5 / K``, the level marginal far from its target (the threshold of the
    estimators' own warning). The chains did not spread over the ladder: the guesses ``log Zhat`` stayed poor because
    the chains are stuck (a discrete variable whose +-1 moves cannot cross its support at high beta, a run too short
    to adapt), and the se, computed from the same stuck chains, does not see it. No floor (nothing in the run
    measures how far off it is). Seen: ``k ~ Poisson(1000)``, ``y ~ N(k, 1)`` at 1100: RTS, TS and MBAR 43-69 nats
    low with se 0.3-0.5 and ``K max_gap`` 0.92-0.97. Good runs (the conjugate models, default settings): ``K
    max_gap`` 0.01-0.08.
``chain_groups``
    tempering estimates with ``TemperingDiagnostics.group_log_z`` / ``group_log_z_se``: RTS on each fixed block of
    chains alone (up to 8 blocks, each an independent run with the same guesses). Blocks that disagree beyond their
    own se, ``chi2 = sum_g (v_g - vbar_w)^2 / se_g^2`` with a tail probability below 1e-3 on ``G - 1`` degrees of
    freedom, are unreliable: the chains do not mix along the ladder or over a discrete support, and the se of the
    pooled run, from batches of sweeps of the same stuck chains, does not see it. Floor: the sd of one block.
    Milder disagreement, a between-block se ``sd(v) / sqrt(G)`` above 1.5 times the reported se, only raises the
    se to it. Seen: Wang-Landau on ``k ~ Poisson(1000)`` at 1100, whose adapted weights spread the levels although
    ``k`` hardly moved, 2.2-2.4 nats high with se 0.09-0.13 (chi-square 44-141 on 7); RTS with a Cauchy prior 3.9 se
    off (chi-square 73). Good runs (the conjugate normal mean, the symmetric bimodal model, default settings):
    chi-square 4.6-14 on 7 (the 1e-3 point is 24.3).
``ti_discretisation``
    thermodynamic integration (``TemperingDiagnostics.discretisation_error``, :func:`pmz.estimators.ti.
    discretisation_error`): the ladder's quadrature error, estimated by the first term the rule neglects, exceeds the
    sampling se. The error of TI on too coarse a ladder is not sampling noise, and no se from the samples covers
    it; floor: that estimate. Seen: a likelihood ``N(0.4; mu, 1e-4)`` under ``mu ~ N(0, 1)``, TI 6.5-6.8 nats low
    with se 0.23-0.31 and an estimated quadrature error of 24-26. Good runs (the conjugate models, default ladder of
    51 levels): 0.3-0.45 of the sampling se.
``not_finite``
    ``log_z`` or ``log_z_se`` not finite (NaN or inf): e.g. ``method="rts", n_sweeps=1``, whose batch-means se needs
    more than one sweep. The estimate is unreliable; a NaN se stays NaN (no floor can stand in for it), and
    :func:`pmz.compare` then gives NaN probabilities.

Examples
--------
>>> from pmz.estimate_diagnostics import WorkDiagnostics
>>> from pmz.records import EvidenceEstimate
>>> est = EvidenceEstimate(log_z=-642.9, log_z_se=1.0, method="bar",
...                        diagnostics=WorkDiagnostics(overlap=0.004, se_ml=2.0, se_bootstrap=64.0))
>>> out = assess(est)
>>> out.reliable, out.log_z_se
(False, 64.0)
>>> out.reliability_reason
'bootstrap se 64 is 64x the asymptotic se 1; work distributions barely overlap (overlap 0.004 < 0.03)'
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy import stats

from .estimate_diagnostics import AutoDiagnostics, Diagnostics, SMCDiagnostics, WorkDiagnostics
from .estimators.bar import range_fractions
from .records import BidirectionalRecord, EvidenceEstimate, WorkRecord

__all__ = ["assess", "RULES"]

BOOTSTRAP_RATIO_MAX = 2.0
MIN_OVERLAP = 0.03
MIN_ESS_FRACTION = 0.1
VAR_RATIO_MAX = 1e4
VAR_LOG_W_MIN = 1.0
BOUNDS_Z = 3.0
DISAGREEMENT_Z = 3.0
SMC_SPREAD_MAX = 1.0
SMC_MIXING_RATIO = 5.0
SMC_MIXING_P = 0.01
JARZYNSKI_SHARE = 0.5
CUMULANT_TERM_RATIO = 1.0
SHAPE_NOISE_Z = 3.0
OUTLIER_SHARE = 0.01
OUTLIER_INFLUENCE = 1.5
FEW_PATHS = 10
LEVEL_GAP = 0.5  # x 1/K: the tempering estimators' own warning
GROUPS_P = 1e-3  # chain groups: chi-square tail probability below which they disagree
GROUPS_SE_RATIO = 1.5  # chain groups: the between-group se becomes the floor when it is this much above the se


@dataclass(frozen=True)
class _Finding:
    reason: str = ""  # non-empty: the estimate is unreliable
    se_floor: float = 0.0
    bounds_valid: bool | None = None


@dataclass(frozen=True)
class _Context:
    """What the rules read: the estimate, its diagnostics by family (an empty family where it has none), the
    estimator's own se, the record's log weights and where the reverse paths started."""

    estimate: EvidenceEstimate
    diagnostics: Diagnostics  # the fields every family has
    work: WorkDiagnostics  # annealing work, one-way or two-way (empty for the other families)
    smc: SMCDiagnostics  # independent SMC runs, also auto's tempered route (empty for the other families)
    se0: float  # the estimator's own se
    log_w_f: np.ndarray | None
    log_w_r: np.ndarray | None
    reverse_start: str | None  # the diagnostics', else the record's
    reverse_burn: int | None


def _finite(value) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and bool(np.isfinite(value))


def _number(value) -> float | None:
    """``value`` as a float when it is a finite number; None when absent, NaN or infinite."""
    return float(value) if _finite(value) else None


def _pair(estimate) -> tuple[float | None, float | None]:
    """``(log_z, log_z_se)`` of an entry of the ``estimates`` table, each None where absent or not finite."""
    log_z, se = estimate
    return _number(log_z), _number(se)


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _fmt_log_z(x: float, scale: float) -> str:
    """A log Z value with the decimals that show differences of size ``scale`` (two significant digits of it):
    ``-427.073`` and ``-427.177`` where three significant digits would print both as ``-427``."""
    ok = np.isfinite(scale) and scale > 0
    decimals = int(min(8, max(1, 1 - np.floor(np.log10(scale))))) if ok else 3
    return f"{x:.{decimals}f}"


def _largest(*values) -> float:
    return max([0.0] + [float(v) for v in values if v is not None and np.isfinite(v)])


def _weighted_sd(log_w) -> float | None:
    """sd of log w under the normalised weights: the spread of the paths that carry a Jarzynski estimate."""
    lw = np.asarray(log_w, dtype=float)
    lw = lw[np.isfinite(lw)]
    if lw.size < 2:
        return None
    p = np.exp(lw - lw.max())
    p /= p.sum()
    mean = float(np.sum(p * lw))
    return float(np.sqrt(np.sum(p * (lw - mean) ** 2)))


def _spread_floor(ctx: _Context) -> float:
    """The se an unreliable estimate gets at least: bootstrap, ML se, half the Jarzynski bracket (two-way) and the
    ESS-limited spread of the carrying paths (one-way)."""
    work = ctx.work
    j_f, j_r = _number(work.jarzynski_forward), _number(work.jarzynski_reverse)
    bracket = JARZYNSKI_SHARE * abs(j_r - j_f) if j_f is not None and j_r is not None else None
    one_way = None
    if work.one_way_side is not None:
        log_w = ctx.log_w_r if work.one_way_side == "reverse" else ctx.log_w_f
        ess, s_w = _number(work.ess), None if log_w is None else _weighted_sd(log_w)
        if ess is not None and s_w is not None:
            one_way = s_w / np.sqrt(max(ess, 1.0))
    return _largest(_number(work.se_ml), _number(ctx.diagnostics.se_bootstrap), bracket, one_way)


def _bar_distance(ctx: _Context) -> float | None:
    """``|log_z - log Z_BAR|``: how far the estimate lies from BAR of the same paths (None without BAR)."""
    bar_log_z, _ = _pair(ctx.diagnostics.bar_of_same_paths)
    return None if bar_log_z is None else abs(ctx.estimate.log_z - bar_log_z)


def _bar_note(ctx: _Context) -> str:
    bar_log_z, bar_se = _pair(ctx.diagnostics.bar_of_same_paths)
    if bar_log_z is None:
        return ""
    return f"; BAR of the same paths gives {bar_log_z:.6g}" + ("" if bar_se is None else f" +- {bar_se:.3g}")


# --- the rules -----------------------------------------------------------------------------------------------------


def _round_off(log_z) -> float:
    """Differences below this are floating-point round-off, not findings: an exact reference (a Gaussian
    posterior bridged from the Gaussian at its mode) gives weights equal to 1e-16 and a bootstrap se of 4e-16."""
    return 1e-9 * max(1.0, abs(float(log_z))) if np.isfinite(log_z) else 0.0


def bootstrap_floor(ctx: _Context) -> _Finding | None:
    """The reported se is never below the bootstrap se over paths."""
    se_b = _number(ctx.diagnostics.se_bootstrap)
    return None if se_b is None else _Finding(se_floor=se_b)


def bootstrap_excess(ctx: _Context) -> _Finding | None:
    """A bootstrap se far above the asymptotic one: the normal approximation behind the latter fails."""
    se_b = _number(ctx.diagnostics.se_bootstrap)
    if se_b is None or not se_b > BOOTSTRAP_RATIO_MAX * ctx.se0 or se_b <= _round_off(ctx.estimate.log_z):
        return None
    if not ctx.se0 > 0:
        return _Finding(f"bootstrap se {_fmt(se_b)} while the asymptotic se is {_fmt(ctx.se0)}", se_b)
    return _Finding(f"bootstrap se {_fmt(se_b)} is {_fmt(se_b / ctx.se0)}x the asymptotic se {_fmt(ctx.se0)}", se_b)


def _range_fractions(ctx: _Context) -> tuple[float | None, float | None, int | None]:
    """Fraction of forward works inside the range of the negated reverse works, the converse, and n_reverse: from
    BAR's diagnostics, else from the record."""
    f_in_r = _number(ctx.work.fraction_forward_in_reverse_range)
    r_in_f = _number(ctx.work.fraction_reverse_in_forward_range)
    n_r = _number(ctx.work.n_reverse)
    if ctx.log_w_f is not None and ctx.log_w_r is not None:
        work_f = -ctx.log_w_f[np.isfinite(ctx.log_w_f)]
        neg_r = ctx.log_w_r[np.isfinite(ctx.log_w_r)]  # -W_r = log w_r
        n_r = neg_r.size if n_r is None else n_r
        if work_f.size and neg_r.size and (f_in_r is None or r_in_f is None):
            f_in_r, r_in_f = range_fractions(work_f, neg_r)
    return f_in_r, r_in_f, None if n_r is None else int(n_r)


def poor_overlap(ctx: _Context) -> _Finding | None:
    """Forward and reverse work distributions that barely overlap: BAR's (histogram's, cumulants') se is void."""
    overlap = _number(ctx.work.overlap)
    if overlap is None or ctx.work.estimate_is_bounds:
        return None
    f_in_r, r_in_f, n_r = _range_fractions(ctx)
    if overlap < MIN_OVERLAP:
        reason = f"work distributions barely overlap (overlap {_fmt(overlap)} < {MIN_OVERLAP})"
    elif f_in_r == 0 or r_in_f == 0:
        if f_in_r == 0:
            reason = "work distributions barely overlap (no forward work lies inside the range of the negated reverse"
            reason += " works"
        else:
            reason = "work distributions barely overlap (no negated reverse work lies inside the range of the forward"
            reason += " works"
        if n_r is not None and n_r < FEW_PATHS:
            reason += f"; the overlap measure {_fmt(overlap)} means nothing with {n_r} reverse path(s)"
        reason += ")"
    else:
        return None
    floor = _spread_floor(ctx)
    if not floor > 0:  # identical reverse paths, a degenerate bootstrap: still no zero se
        gap = _number(ctx.work.gap)
        floor = _largest(None if gap is None else abs(gap) / 2, _bar_distance(ctx))
    return _Finding(reason, floor)


def degenerate_weights(ctx: _Context) -> _Finding | None:
    """One-sided Jarzynski (AIS, RAISE) whose weights rest on a few paths."""
    side, fraction = ctx.work.one_way_side, _number(ctx.work.ess_fraction)
    if side is None or fraction is None or not fraction < MIN_ESS_FRACTION:
        return None
    return _Finding(
        f"{side} weights are degenerate (ESS {100 * fraction:.2g}% of the paths < {100 * MIN_ESS_FRACTION:.0f}%)",
        _spread_floor(ctx),
    )


def kernel_lag(ctx: _Context) -> _Finding | None:
    """Var[log w] orders of magnitude above the perfect-transition prediction: the kernels do not keep up."""
    var, predicted = _number(ctx.work.var_log_w), _number(ctx.work.var_log_w_predicted)
    if var is None or predicted is None or not predicted > 0:  # no prediction, or a degenerate one: no verdict
        return None
    if not (var > VAR_LOG_W_MIN and var > VAR_RATIO_MAX * predicted):
        return None
    return _Finding(
        f"Var[log w] {_fmt(var)} is {_fmt(var / predicted)}x the perfect-transition "
        f"prediction {_fmt(predicted)} (the kernels do not keep up with the schedule)",
        _spread_floor(ctx),
    )


def reverse_start_phrase(option) -> str:
    """What ran, and what the user set: ``reverse_start='resample'``, or the default 'auto' that chose it."""
    if option in (None, "resample"):
        return "reverse_start='resample'"
    if option == "auto":
        return "the default reverse_start='auto' chose 'resample': this model has no exact or HMC posterior draws"
    return f"reverse_start={option!r} ran as 'resample'"


def resampled_reverse(ctx: _Context) -> _Finding | None:
    """Reverse paths from resampled forward end states: no valid upper bound; biased when the forward ESS is low."""
    if ctx.reverse_start != "resample":
        return None
    chosen = reverse_start_phrase(ctx.work.reverse_start_option)
    if ctx.work.estimate_is_bounds:
        return _Finding(
            f"the reverse paths started from resampled forward states ({chosen}), so the upper bound is not "
            "guaranteed",
            bounds_valid=False,
        )
    fraction, burn = _number(ctx.work.forward_ess_fraction), _number(ctx.reverse_burn)
    low = fraction is not None and fraction < MIN_ESS_FRACTION
    if low or burn == 0:
        what = f"the forward ESS is {100 * fraction:.2g}% of the paths" if low else "reverse_burn=0"
        return _Finding(
            f"the reverse paths started from resampled forward states ({chosen}) while {what}: they inherit the "
            "forward run's bias",
            _spread_floor(ctx),
            bounds_valid=False,
        )
    return _Finding(bounds_valid=False)


def _bound_ses(ctx: _Context) -> tuple[float | None, float | None]:
    lower_se, upper_se = _number(ctx.work.lower_se), _number(ctx.work.upper_se)
    for log_w, name in ((ctx.log_w_f, "lower"), (ctx.log_w_r, "upper")):
        if log_w is not None and np.all(np.isfinite(log_w)) and log_w.size > 1:
            se = float(np.std(log_w, ddof=1) / np.sqrt(log_w.size))
            lower_se = se if name == "lower" and lower_se is None else lower_se
            upper_se = se if name == "upper" and upper_se is None else upper_se
    return lower_se, upper_se


def bounds_inverted(ctx: _Context) -> _Finding | None:
    """An upper bound below the lower bound: the reverse paths did not start at the target."""
    lower, upper = _number(ctx.work.lower), _number(ctx.work.upper)
    if lower is None or upper is None:
        return None
    gap_se = _number(ctx.work.gap_se)
    if gap_se is None:
        lower_se, upper_se = _bound_ses(ctx)
        gap_se = None if lower_se is None or upper_se is None else float(np.hypot(lower_se, upper_se))
    gap = upper - lower
    if gap_se is None or not gap < -BOUNDS_Z * gap_se:
        return None
    return _Finding(
        f"the upper bound lies {_fmt(-gap)} below the lower bound: the reverse paths did not start from the target",
        max(_spread_floor(ctx), abs(gap) / 2),
        bounds_valid=False,
    )


def outside_bounds(ctx: _Context, bounds_valid: bool) -> _Finding | None:
    """An estimate below the (always valid) lower bound, or above a valid upper bound."""
    lower, upper = _number(ctx.work.lower), _number(ctx.work.upper)
    if lower is None or upper is None or ctx.work.estimate_is_bounds:
        return None
    log_z, se = ctx.estimate.log_z, ctx.se0
    lower_se, upper_se = _bound_ses(ctx)
    slack = _round_off(log_z)
    if log_z < lower - BOUNDS_Z * np.hypot(se, lower_se or 0.0) - slack:
        return _Finding(f"log Z lies {_fmt(lower - log_z)} below the stochastic lower bound", lower - log_z)
    if bounds_valid and log_z > upper + BOUNDS_Z * np.hypot(se, upper_se or 0.0) + slack:
        return _Finding(f"log Z lies {_fmt(log_z - upper)} above the stochastic upper bound", log_z - upper)
    return None


def bar_disagreement(ctx: _Context) -> _Finding | None:
    """Another estimator of a two-way run (RAISE, cumulant, histogram) far from BAR of the same works."""
    bar_log_z, bar_se = _pair(ctx.diagnostics.bar_of_same_paths)
    if bar_log_z is None or bar_se is None or ctx.work.estimate_is_bounds:
        return None
    diff, combined = abs(ctx.estimate.log_z - bar_log_z), float(np.hypot(ctx.se0, bar_se))
    if not diff > DISAGREEMENT_Z * combined:
        return None
    return _Finding(
        f"{ctx.estimate.method} and BAR of the same paths disagree by {_fmt(diff)} "
        f"({diff / combined if combined > 0 else np.inf:.1f} combined se)",
        diff,
    )


def _cumulant_terms(var: float, skew: float, kurt: float, n: float | None) -> tuple[float, float, float]:
    """``k2/2``, ``|k3|/6`` and ``|k4|/24`` of one direction's log weights, skewness and excess kurtosis shrunk by
    SHAPE_NOISE_Z of their standard errors under Gaussian work (``sqrt(6/n)``, ``sqrt(24/n)``)."""
    n = 2.0 if n is None else max(float(n), 2.0)
    skew = max(abs(skew) - SHAPE_NOISE_Z * np.sqrt(6.0 / n), 0.0)
    kurt = max(abs(kurt) - SHAPE_NOISE_Z * np.sqrt(24.0 / n), 0.0)
    return var / 2.0, skew * var**1.5 / 6.0, kurt * var**2 / 24.0


def cumulant_series(ctx: _Context) -> _Finding | None:
    """A cumulant estimate whose expansion does not converge: the work is far from Gaussian."""
    if not ctx.work.is_cumulant:
        return None
    found = []
    for side, moments, n_paths in ctx.work.moments():
        var, skew = _number(moments.var_log_w), _number(moments.skewness)
        kurt, n = _number(moments.excess_kurtosis), _number(n_paths)
        if var is None or skew is None or kurt is None or not var > 0:
            continue
        second, third, fourth = _cumulant_terms(var, skew, kurt, n)
        if max(third, fourth) > CUMULANT_TERM_RATIO * second:
            found.append(
                f"{side} work skewness {_fmt(skew)}, excess kurtosis {_fmt(kurt)}: terms k2/2 {_fmt(second)}, "
                f"|k3|/6 {_fmt(third)}, |k4|/24 {_fmt(fourth)}"
            )
    distance, bar_se = _bar_distance(ctx), _pair(ctx.diagnostics.bar_of_same_paths)[1]
    if not found or (distance is not None and bar_se is not None and not distance > DISAGREEMENT_Z * bar_se):
        return None  # Gaussian enough, or (by luck or cancellation) where BAR of the same paths is
    return _Finding(
        "the work is far from Gaussian and the cumulant expansion does not converge (" + "; ".join(found) + ")"
        + _bar_note(ctx),
        _largest(_spread_floor(ctx), distance),
    )


def _outlier_influence(x: np.ndarray) -> tuple[int, float, float] | None:
    """The ``k <= max(1, OUTLIER_SHARE n)`` values farthest from the median whose removal moves the mean the most
    per value, in standard errors of the rest: ``(k, shift of the mean, shift / k / (sd_rest / sqrt(n)))``."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    n = x.size
    if n < 4:
        return None
    median = float(np.median(x))
    d = x - median
    order = np.argsort(np.abs(d))  # nearest first: the first m values are the rest when the n - m farthest go
    ds = d[order]
    s1, s2 = np.cumsum(ds), np.cumsum(ds * ds)
    k_max = min(max(1, int(np.ceil(OUTLIER_SHARE * n))), n - 3)
    k = np.arange(1, k_max + 1)
    m = n - k
    mean_rest = s1[m - 1] / m
    var_rest = np.maximum(s2[m - 1] - m * mean_rest**2, 0.0) / (m - 1)
    shift = np.abs(s1[-1] / n - mean_rest)
    se_rest = np.sqrt(var_rest / n)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(se_rest > 0, shift / k / se_rest, np.where(shift > 0, np.inf, 0.0))
    i = int(np.argmax(ratio))
    return int(k[i]), float(shift[i]), float(ratio[i])


def work_outliers(ctx: _Context) -> _Finding | None:
    """Cumulants and bounds (means and variances of the work) that rest on a few outlying paths."""
    if not (ctx.work.estimate_is_bounds or ctx.work.is_cumulant):
        return None
    found = []
    for side, log_w in (("forward", ctx.log_w_f), ("reverse", ctx.log_w_r)):
        if log_w is None:
            continue
        work = -np.asarray(log_w, dtype=float)
        work = work[np.isfinite(work)]
        influence = _outlier_influence(work)
        if influence is None or not influence[2] > OUTLIER_INFLUENCE:
            continue
        k, shift, ratio = influence
        median = float(np.median(work))
        far = float(work[np.argmax(np.abs(work - median))])
        found.append(
            f"{k} {side} path(s) (work up to {_fmt(far)}, median {_fmt(median)}) move the mean {side} work by "
            f"{_fmt(shift)} ({_fmt(ratio)} se of the other paths per path)"
        )
    if not found:
        return None
    what = "bounds and their midpoint rest" if ctx.work.estimate_is_bounds else "cumulant estimate rests"
    return _Finding(
        f"the {what} on a few outlying paths: " + "; ".join(found) + _bar_note(ctx),
        _largest(_bar_distance(ctx)),
    )


def second_estimate(ctx: _Context) -> _Finding | None:
    """Two independent estimates that disagree beyond their combined se."""
    pair = ctx.diagnostics.independent
    if not pair or len(pair) < 2:
        return None
    (first_name, first, first_se), (second_name, second, second_se) = pair[:2]
    first, first_se = _pair((first, first_se))
    second, second_se = _pair((second, second_se))
    if second is None or second_se is None:
        return None
    if first is None or first_se is None:
        first, first_se, first_name = ctx.estimate.log_z, ctx.se0, "the estimate"
    diff, combined = abs(first - second), float(np.hypot(first_se, second_se))
    if not diff > DISAGREEMENT_Z * combined:
        return None
    z = diff / combined if combined > 0 else np.inf
    return _Finding(
        f"two independent estimates disagree ({first_name} {_fmt_log_z(first, combined)} vs {second_name} "
        f"{_fmt_log_z(second, combined)}, {z:.1f} combined se)", diff / 2
    )


def route_flag(ctx: _Context) -> _Finding | None:
    """A route (method="auto") or a check of the draws that says itself that the answer is unreliable."""
    flag = ctx.diagnostics.unreliable
    return _Finding(flag) if isinstance(flag, str) and flag else None


def smc_spread(ctx: _Context) -> _Finding | None:
    """Independent SMC runs whose log Z spread by more than a nat."""
    runs = ctx.smc.runs
    if runs is None or not np.std(runs, ddof=1) > SMC_SPREAD_MAX:
        return None
    sd = float(np.std(runs, ddof=1))
    return _Finding(f"the {runs.size} independent runs' log Z spread by {_fmt(sd)} nats (sd)", sd)


def smc_mixing(ctx: _Context) -> _Finding | None:
    """SMC runs that disagree far beyond their ideal-condition error bars."""
    runs, p = ctx.smc.runs, _number(ctx.smc.spread_p_value)
    between, ideal = _number(ctx.smc.se_between), _number(ctx.smc.se_ideal)
    if runs is None or p is None or between is None or ideal is None:
        return None
    if not (p < SMC_MIXING_P and between > SMC_MIXING_RATIO * ideal):
        return None
    return _Finding(
        f"the runs disagree {_fmt(between / ideal) if ideal > 0 else 'inf'}x beyond their ideal-condition se "
        "(the moves do not mix)",
        float(np.std(runs, ddof=1)),
    )


def level_marginal(ctx: _Context) -> _Finding | None:
    """Tempering chains whose level marginal stayed far from its target: they did not spread over the ladder."""
    d = ctx.diagnostics
    gap, c_hat = _number(getattr(d, "max_gap", None)), getattr(d, "c_hat", None)
    if gap is None or c_hat is None or np.size(c_hat) < 2:
        return None
    K = int(np.size(c_hat))
    if not gap > LEVEL_GAP / K:
        return None
    return _Finding(
        f"the chains did not spread over the ladder: the level marginal is far from its target (max |r_k - c_k| = "
        f"{_fmt(gap)} > {LEVEL_GAP:g} / K, K = {K} levels), so the chains are stuck (e.g. a discrete variable whose "
        "moves cannot cross its support at high beta) or the run was too short to adapt; run longer (n_sweeps) or "
        'use method="auto", which sums or anneals instead'
    )


def chain_groups(ctx: _Context) -> _Finding | None:
    """Tempering runs whose independent blocks of chains disagree beyond their own error bars."""
    d = ctx.diagnostics
    values, ses = getattr(d, "group_log_z", None), getattr(d, "group_log_z_se", None)
    if values is None or ses is None or np.size(values) < 2:
        return None
    values, ses = np.asarray(values, dtype=float), np.asarray(ses, dtype=float)
    if not (np.all(np.isfinite(values)) and np.all(np.isfinite(ses)) and np.all(ses > 0)):
        return None
    n = values.size
    between = float(np.std(values, ddof=1) / np.sqrt(n))
    floor = between if between > GROUPS_SE_RATIO * ctx.se0 else 0.0
    w = 1.0 / ses**2
    chi2 = float(np.sum(w * (values - np.sum(w * values) / np.sum(w)) ** 2))
    if not stats.chi2.sf(chi2, n - 1) < GROUPS_P:
        return _Finding("", floor) if floor else None
    return _Finding(
        f"the run's {n} independent groups of chains disagree beyond their own se (chi-square {_fmt(chi2)} on "
        f"{n - 1} degrees of freedom, their estimates spread from {_fmt_log_z(values.min(), float(ses.min()))} to "
        f"{_fmt_log_z(values.max(), float(ses.min()))}): "
        "the chains do not mix along the ladder or over the support (a discrete variable whose moves cannot cross "
        'it, separate modes), so the se of one run does not cover the error; use method="auto" or method="smc"',
        max(floor, float(np.std(values, ddof=1))),
    )


def ti_discretisation(ctx: _Context) -> _Finding | None:
    """Thermodynamic integration whose quadrature error over the ladder exceeds its sampling se."""
    d = ctx.diagnostics
    error = _number(getattr(d, "discretisation_error", None))
    if error is None or not error > ctx.se0:
        return None
    return _Finding(
        f"the ladder is too coarse for thermodynamic integration: its quadrature error is about {_fmt(error)} "
        f"nats (the first term the {d.rule} rule neglects), above the sampling se {_fmt(ctx.se0)}; use more "
        'levels (n_temps) or a method that does not integrate over the ladder (method="rts", "bar" or "auto")',
        error,
    )


def mark_unreliable(estimate: EvidenceEstimate, reason: str) -> EvidenceEstimate:
    """``estimate`` made unreliable for ``reason`` (joined to its reasons, and a warning)."""
    reasons = "; ".join(r for r in (reason, estimate.reliability_reason) if r)
    warnings = [*estimate.warnings, f"pmz: {reason}"]
    return replace(estimate, reliable=False, reliability_reason=reasons, warnings=warnings)


def non_finite_reason(nan: int, posinf: int, near: str = "", where: str = "") -> str:
    """Why a run that met NaN or +inf log densities is unreliable (``pmz.evidence``, ``pmz.tempered_evidence``)."""
    parts = [f"{what} at {n} points" for n, what in ((nan, "NaN"), (posinf, "+inf")) if n]
    meaning = [m for n, m in ((nan, "NaN was read as zero density, a guess"), (posinf, "log Z may be infinite")) if n]
    return (f"the log density was {' and '.join(parts)}{near}{where}: {'; '.join(meaning)}, so the estimate is not "
            "the evidence of the model as written. Check pm.Potential terms and distributions evaluated outside "
            "their support")


def not_finite(ctx: _Context) -> _Finding | None:
    est = ctx.estimate
    if np.isfinite(est.log_z) and np.isfinite(est.log_z_se):
        return None
    what = "log Z" if not np.isfinite(est.log_z) else "the standard error"
    return _Finding(f"{what} is not finite (log Z {est.log_z:.6g}, se {est.log_z_se:.6g})")


RULES = (
    route_flag,  # first: a cause the run names itself (draws of another model, time spent) before its symptoms
    bootstrap_floor,
    bootstrap_excess,
    poor_overlap,
    degenerate_weights,
    kernel_lag,
    resampled_reverse,
    bounds_inverted,
    outside_bounds,
    bar_disagreement,
    cumulant_series,
    work_outliers,
    second_estimate,
    smc_spread,
    smc_mixing,
    level_marginal,
    chain_groups,
    ti_discretisation,
    not_finite,
)
"""The rules :func:`assess` applies, in order (see the module docstring)."""


def _log_weights(record):
    if isinstance(record, BidirectionalRecord):
        return record.forward.log_weights, record.reverse.log_weights
    if isinstance(record, WorkRecord):
        return (record.log_weights, None) if record.direction == "forward" else (None, record.log_weights)
    return None, None


def _smc_runs(diagnostics: Diagnostics) -> SMCDiagnostics:
    """The independent SMC runs behind an estimate: its own, or those of auto's tempered route."""
    if isinstance(diagnostics, SMCDiagnostics):
        return diagnostics
    if isinstance(diagnostics, AutoDiagnostics) and diagnostics.smc is not None:
        return diagnostics.smc
    return SMCDiagnostics()


def _context(estimate: EvidenceEstimate, record) -> _Context:
    d = estimate.diagnostics
    work = d if isinstance(d, WorkDiagnostics) else WorkDiagnostics()
    reverse_start, reverse_burn = work.reverse_start, work.reverse_burn
    if isinstance(record, BidirectionalRecord):
        reverse_start = record.reverse_start if reverse_start is None else reverse_start
    se0 = estimate.log_z_se if d.se_estimator is None else d.se_estimator
    log_w_f, log_w_r = _log_weights(record)
    return _Context(estimate, d, work, _smc_runs(d), float(se0), log_w_f, log_w_r, reverse_start, reverse_burn)


def assess(estimate: EvidenceEstimate, record=None) -> EvidenceEstimate:
    """Apply every rule of :data:`RULES` to ``estimate``; return it with ``reliable``, ``reliability_reason``, the
    reported se raised to what its diagnostics allow, ``bounds_valid`` and, when unreliable, a warning.

    Pure: the input is not modified, and assessing an assessed estimate changes nothing.

    Parameters
    ----------
    estimate : EvidenceEstimate
        Any method's estimate.
    record : WorkRecord, BidirectionalRecord, SMCRecord, ..., optional
        The run's record; with a work record the rules can use the log weights themselves (bounds' standard errors,
        the spread of the carrying paths).
    """
    ctx = _context(estimate, record)
    findings, bounds_valid = [], None
    for rule in RULES:
        if rule is outside_bounds:
            finding = rule(ctx, bounds_valid is not False)
        else:
            finding = rule(ctx)
        if finding is None:
            continue
        findings.append(finding)
        if finding.bounds_valid is False:
            bounds_valid = False
    se = max([estimate.log_z_se] + [f.se_floor for f in findings if np.isfinite(f.se_floor)])
    reasons = [r for r in estimate.reliability_reason.split("; ") if r]
    reasons += [f.reason for f in findings if f.reason and f.reason not in reasons]
    reason = "; ".join(reasons)
    diagnostics = estimate.diagnostics
    if ctx.work.has_bounds:
        valid = (diagnostics.bounds_valid is None or bool(diagnostics.bounds_valid)) and bounds_valid is not False
        diagnostics = replace(diagnostics, bounds_valid=valid)
    draws = estimate.log_z_draws
    if se > estimate.log_z_se:
        if diagnostics.se_estimator is None:
            diagnostics = replace(diagnostics, se_estimator=float(estimate.log_z_se))
        draws = _widen(draws, se)
    warnings = list(estimate.warnings)
    if reason:
        note = f"pmz: the {estimate.method} estimate is unreliable: {reason}."
        se_est = se if diagnostics.se_estimator is None else float(diagnostics.se_estimator)
        if se > se_est:
            note += f" Its se was raised from {se_est:.3g} to {se:.3g}."
        if note not in warnings:
            warnings.append(note)
    return replace(
        estimate,
        log_z_se=float(se),
        log_z_draws=draws,
        diagnostics=diagnostics,
        warnings=warnings,
        reliable=estimate.reliable and not reason,
        reliability_reason=reason,
    )


def _widen(draws, se):
    """Draws rescaled about their mean so that their sd (ddof 1) is ``se``."""
    if draws is None:
        return None
    draws = np.asarray(draws, dtype=float)
    sd = float(np.std(draws, ddof=1)) if draws.size > 1 else 0.0
    if not sd > 0:
        return draws
    mean = float(np.mean(draws))
    return mean + (draws - mean) * (se / sd)
