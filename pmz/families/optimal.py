"""Optimal annealing schedules from the thermodynamic metric (VAROPT: Kiwaki 2015), and adaptive CESS steps.

Notation (METHODS.md sections 0 and 9). The path is ``log f_b = log f0 + b U`` and the thermodynamic metric is

    g(b) = d^2 log Z(b) / db^2 = Var_b[U],        U = log f1 - log f0.

With perfect transitions (an independent exact draw ``x_{k-1} ~ p_{b_{k-1}}`` at every step) the AIS log weight
``log w = sum_k (b_k - b_{k-1}) U(x_{k-1})`` is a sum of independent terms, so

    Var[log w] = sum_k (b_k - b_{k-1})^2 g(b_{k-1}).

Writing ``b_k = beta(k / K)`` for a smooth increasing ``beta: [0, 1] -> [0, 1]``, ``K Var[log w]`` tends to the
action ``J[beta] = int_0^1 g(beta(t)) beta'(t)^2 dt``. Its Euler-Lagrange equation ``2 g beta'' + g' beta'^2 = 0``
has the first integral ``g(beta) beta'^2 = const``: the optimal schedule moves at constant thermodynamic speed,

    b_k = Phi^{-1}(k / K * Lambda),      Phi(b) = int_0^b sqrt(g(u)) du,      Lambda = Phi(1),

and by Cauchy-Schwarz ``J >= (int_0^1 sqrt(g) beta' dt)^2 = Lambda^2`` with equality there; ``Lambda`` is the
thermodynamic length of the path (Crooks 2007) and ``Var[log w] ~ Lambda^2 / K`` on the optimal schedule.

Everything here works on a metric tabulated on a grid ``0 = grid[0] < ... < grid[-1] = 1`` (made from pilot
estimates by :func:`thermodynamic_metric`); between grid points ``g`` is interpolated log-linearly in ``b``
(``log g`` piecewise linear), the same rule :func:`thermodynamic_metric` uses. Pure NumPy/SciPy; no sampling.

References
----------
Kiwaki, T. (2015). Variational optimization of annealing schedules. arXiv:1502.05313.
Crooks, G. E. (2007). Measuring thermodynamic length. Physical Review Letters 99, 100602.
Gelman, A. and Meng, X.-L. (1998). Simulating normalizing constants: from importance sampling to bridge sampling
to path sampling. Statistical Science 13, 163-185.
Zhou, Y., Johansen, A. M. and Aston, J. A. D. (2016). Toward automatic model comparison: an adaptive sequential
Monte Carlo approach. Journal of Computational and Graphical Statistics 25, 701-726.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import solve_banded

from ..weights import log_cess_fraction, normalized_log_weights
from .schedules import validate_schedule

__all__ = [
    "thermodynamic_metric",
    "thermodynamic_length",
    "schedule_action",
    "predicted_log_weight_variance",
    "constant_speed_schedule",
    "euler_lagrange_schedule",
    "decelerate",
    "next_beta_by_cess",
]

_MEDIAN_HALF_WIDTH = 2  # running median over 5 consecutive pilot points
_SMOOTH_SD = 1.0  # sd (in pilot points) of the Gaussian local-linear smoother
_SMOOTH_HALF_WIDTH = 3  # the smoother's window: +- 3 sd


# --------------------------------------------------------------------------------------------------------------
# the metric on a grid
# --------------------------------------------------------------------------------------------------------------


def thermodynamic_metric(betas, var_U, *, smooth: bool = True, floor: float | None = None, n_grid: int = 1001):
    """A clean, positive thermodynamic metric ``g(b) = Var_b[U]`` on a fine grid over ``[0, 1]``.

    Built from pilot estimates ``var_U[j]`` of ``Var_b[U]`` at increasing ``betas[j]`` (for instance the
    importance-weighted variances of a pilot run, ``TuningResult.walk["var_U"]`` at ``walk["betas"]``):

    1. Points whose ``var_U`` or ``beta`` is NaN or infinite (temperatures the pilot never reached) are dropped.
    2. The rest are floored at ``floor`` and put on the log scale, ``l_j = log max(var_U[j], floor)``.
    3. If ``smooth``: a running median of ``l`` over 5 consecutive pilot points (the window shrinks symmetrically
       near the ends, so the end values are kept and a monotone run passes unchanged), which removes isolated
       outliers (a pilot variance from a collapsed particle set), then a Gaussian-weighted local-linear fit of
       ``l`` against the pilot index (sd 1 point, window +-3 points). The local-linear form reproduces exactly any
       ``l`` that is linear in the index, including at the two ends, where a plain moving average would pull the
       steep end of the metric towards its neighbours. Smoothing works in the pilot's index, not in ``b``, so
       pilots with dense points where ``g`` changes fast (geometric-type schedules) keep their resolution.
    4. ``log g`` is interpolated linearly in ``b`` onto ``grid = linspace(0, 1, n_grid)`` (``g`` is
       log-linear between pilot points: metrics often vary over orders of magnitude, exponentially in ``b``),
       extrapolated flat below the first and above the last pilot point, and floored again.

    The floor matters: the constant-speed schedule advances by ``db = dPhi / sqrt(g)``, so a region where ``g``
    is estimated as zero (a particle set that lost its diversity, an unvisited stretch) would be crossed in a
    single step, and ``1 / sqrt(g)`` is undefined in the Euler-Lagrange solver. A floor that is small relative to
    the typical metric (default ``1e-3 * median`` of the positive pilot values, i.e. local steps at most
    ``sqrt(1000) ~ 32`` times the typical step) keeps every step finite without changing the schedule elsewhere.

    Parameters
    ----------
    betas : array (m,)
        Strictly increasing pilot inverse temperatures in ``[0, 1]`` (need not include 0 or 1).
    var_U : array (m,)
        Pilot estimates of ``Var_b[U]`` (NaN where unknown; zero and negative values are floored).
    smooth : bool
        Apply the running median and the local-linear Gaussian smoother (step 3).
    floor : float, optional
        Smallest allowed metric value (positive). Default ``1e-3 * median`` of the positive finite ``var_U``.
    n_grid : int
        Number of grid points (at least 2).

    Returns
    -------
    grid : ndarray (n_grid,)
        ``linspace(0, 1, n_grid)``.
    g : ndarray (n_grid,)
        The metric on the grid, positive and finite.
    """
    b = np.asarray(betas, dtype=float)
    v = np.asarray(var_U, dtype=float)
    if b.ndim != 1 or b.shape != v.shape:
        raise ValueError(f"betas and var_U must be 1-d arrays of the same length, got {b.shape} and {v.shape}")
    if int(n_grid) != n_grid or n_grid < 2:
        raise ValueError(f"n_grid must be an integer >= 2, got {n_grid}")
    keep = np.isfinite(b) & np.isfinite(v)
    b, v = b[keep], v[keep]
    if b.size == 0:
        raise ValueError("pmz: no finite pilot estimate of Var[U]; cannot build a thermodynamic metric")
    if np.any(b < 0) or np.any(b > 1):
        raise ValueError("pmz: the pilot inverse temperatures must lie in [0, 1]")
    if np.any(np.diff(b) <= 0):
        raise ValueError("pmz: the pilot inverse temperatures must be strictly increasing")
    if floor is None:
        positive = v[v > 0]
        if positive.size == 0:
            raise ValueError("pmz: every pilot estimate of Var[U] is zero; pass an explicit floor")
        floor = 1e-3 * float(np.median(positive))
    elif not (np.isfinite(floor) and floor > 0):
        raise ValueError(f"floor must be positive and finite, got {floor}")
    log_g = np.log(np.maximum(v, floor))
    if smooth and log_g.size > 2:
        log_g = _local_linear_smooth(_running_median(log_g, _MEDIAN_HALF_WIDTH), _SMOOTH_SD, _SMOOTH_HALF_WIDTH)
    grid = np.linspace(0.0, 1.0, int(n_grid))
    g = np.exp(np.interp(grid, b, log_g))  # np.interp extrapolates flat
    return grid, np.maximum(g, floor)


def _running_median(y, half_width):
    """Median of ``y[i - h_i : i + h_i + 1]`` with ``h_i = min(half_width, i, n - 1 - i)`` (symmetric window)."""
    n = y.size
    out = np.empty(n)
    for i in range(n):
        h = min(half_width, i, n - 1 - i)
        out[i] = np.median(y[i - h : i + h + 1])
    return out


def _local_linear_smooth(y, sd, half_width):
    """Gaussian-kernel weighted least-squares line through ``(j, y_j)``, ``|j - i| <= half_width``, at ``i``."""
    n = y.size
    idx = np.arange(n)
    s0 = np.zeros(n)
    s1 = np.zeros(n)
    s2 = np.zeros(n)
    t0 = np.zeros(n)
    t1 = np.zeros(n)
    for offset in range(-half_width, half_width + 1):
        j = idx + offset
        inside = (j >= 0) & (j < n)
        w = np.where(inside, np.exp(-0.5 * (offset / sd) ** 2), 0.0)
        yj = y[np.clip(j, 0, n - 1)]
        s0 += w
        s1 += w * offset
        s2 += w * offset**2
        t0 += w * yj
        t1 += w * offset * yj
    # fit y ~ a + c * offset around i; the smoothed value is the intercept a
    return (s2 * t0 - s1 * t1) / (s0 * s2 - s1**2)


def _check_metric(grid, g):
    grid = np.asarray(grid, dtype=float)
    g = np.asarray(g, dtype=float)
    if grid.ndim != 1 or grid.shape != g.shape or grid.size < 2:
        raise ValueError(f"grid and g must be 1-d arrays of the same length >= 2, got {grid.shape} and {g.shape}")
    if grid[0] != 0.0 or grid[-1] != 1.0 or np.any(np.diff(grid) <= 0):
        raise ValueError("pmz: the metric grid must increase strictly from 0 to 1")
    if not np.all(np.isfinite(g)) or np.any(g <= 0):
        raise ValueError("pmz: the metric must be positive and finite on its grid (see thermodynamic_metric)")
    return grid, g


def _metric_at(b, grid, g):
    """``g`` at ``b`` by log-linear interpolation (the rule of :func:`thermodynamic_metric`)."""
    return np.exp(np.interp(b, grid, np.log(g)))


def _cumulative_length(grid, g):
    """``Phi(grid[i]) = int_0^grid[i] sqrt(g)``, exact for the log-linear interpolant of ``g``.

    On a cell of width ``h`` where ``sqrt(g)`` goes exponentially from ``r0`` to ``r1``, the integral is ``h`` times
    the logarithmic mean ``(r1 - r0) / (log r1 - log r0)`` (``= r0`` when ``r1 = r0``); it lies between the
    geometric and the arithmetic mean, so this is the trapezoid rule corrected for the exponential shape.
    """
    log_root = 0.5 * np.log(g)
    root = np.exp(log_root)
    dlog = np.diff(log_root)
    flat = np.abs(dlog) < 1e-8
    safe = np.where(flat, 1.0, dlog)
    # for a nearly flat cell, the series r0 (1 + x/2 + x^2/6) of the logarithmic mean, x = log(r1 / r0)
    log_mean = np.where(flat, root[:-1] * (1 + dlog / 2 + dlog**2 / 6), (root[1:] - root[:-1]) / safe)
    return np.concatenate([[0.0], np.cumsum(np.diff(grid) * log_mean)])


def _inverse_length(targets, phi, grid, g):
    """``Phi^{-1}(targets)``, inverting the exponential ``sqrt(g)`` of each cell exactly (``Phi`` increasing)."""
    cell = np.clip(np.searchsorted(phi, targets, side="right") - 1, 0, grid.size - 2)
    h = grid[cell + 1] - grid[cell]
    log_root = 0.5 * np.log(g)
    rate = (log_root[cell + 1] - log_root[cell]) / h  # d log sqrt(g) / db on the cell
    root0 = np.exp(log_root[cell])
    x = (targets - phi[cell]) / root0  # Phi - Phi0 = root0 (exp(rate (b - b0)) - 1) / rate
    flat = np.abs(rate * h) < 1e-8
    safe = np.where(flat, 1.0, rate)
    with np.errstate(invalid="ignore"):
        step = np.where(flat, x * (1 - rate * x / 2), np.log1p(np.maximum(safe * x, -1 + 1e-300)) / safe)
    return np.clip(grid[cell] + step, grid[cell], grid[cell + 1])


# --------------------------------------------------------------------------------------------------------------
# length, action and the variance they predict
# --------------------------------------------------------------------------------------------------------------


def thermodynamic_length(grid, g) -> float:
    """Thermodynamic length ``Lambda = int_0^1 sqrt(g(b)) db``.

    The integral is exact for the log-linear interpolant of ``g`` between grid points (cell by cell, ``h`` times
    the logarithmic mean of ``sqrt(g)`` at the two ends: the trapezoid rule corrected for a metric that changes
    by a large factor within a cell, as near ``b = 0``; the two coincide where ``g`` is nearly constant).

    ``Lambda^2`` is the smallest action ``J`` of any schedule, so ``Lambda^2 / K`` is the smallest
    perfect-transition variance of the AIS log weight with ``K`` steps (for large ``K``).
    """
    grid, g = _check_metric(grid, g)
    return float(_cumulative_length(grid, g)[-1])


def schedule_action(schedule, grid, g, *, rule: str = "midpoint") -> float:
    """Discrete action ``A = K sum_k g(b*_k) (b_k - b_{k-1})^2`` of a schedule, a discretisation of ``J[beta]``.

    ``rule="midpoint"`` (default) evaluates ``g`` at ``b*_k = (b_{k-1} + b_k) / 2``; ``rule="left"`` at
    ``b*_k = b_{k-1}``, which makes ``A / K`` exactly the perfect-transition variance
    ``Var[log w] = sum_k (b_k - b_{k-1})^2 g(b_{k-1})`` (:func:`predicted_log_weight_variance`). ``g`` between
    grid points is interpolated log-linearly.

    Both rules tend to ``J[beta]`` as ``K`` grows; they differ by ``K sum_k g'(b_k) (b_k - b_{k-1})^3 / 2``,
    i.e. by ``O(1/K)`` relative to ``J``. The midpoint rule is the default because it is the second-order one:
    ``sqrt(g(b*_k)) (b_k - b_{k-1}) = int_{b_{k-1}}^{b_k} sqrt(g) + O(K^-3)``, so by Cauchy-Schwarz
    ``A >= (sum_k sqrt(g(b*_k)) (b_k - b_{k-1}))^2 = Lambda^2 (1 + O(K^-2))``, with equality for equal midpoint
    speeds (the schedule of :func:`euler_lagrange_schedule`); the constant-speed schedule attains
    ``A = Lambda^2 (1 + O(K^-2))``. The left rule overstates the variance of a schedule that is steep where
    ``g`` decreases (typically near ``b = 0``) by a relative ``O(1/K)``, which is the true finite-``K`` effect
    of evaluating ``U`` at the start of each step.
    """
    b = validate_schedule(schedule)
    grid, g = _check_metric(grid, g)
    if rule == "midpoint":
        at = 0.5 * (b[1:] + b[:-1])
    elif rule == "left":
        at = b[:-1]
    else:
        raise ValueError(f"rule must be 'midpoint' or 'left', got {rule!r}")
    K = b.size - 1
    return float(K * np.sum(_metric_at(at, grid, g) * np.diff(b) ** 2))


def predicted_log_weight_variance(schedule, grid, g) -> float:
    """Perfect-transition variance of the AIS log weight, ``sum_k (b_k - b_{k-1})^2 g(b_{k-1})``.

    Exact when ``g`` is exact and every ``x_{k-1}`` is an independent draw of ``p_{b_{k-1}}`` (the terms
    ``(b_k - b_{k-1}) U(x_{k-1})`` of ``log w`` are then independent with variances ``(b_k - b_{k-1})^2
    g(b_{k-1})``): the left-point rule of :func:`schedule_action`, divided by ``K``. For large ``K`` it is close
    to ``schedule_action(...) / K`` (midpoint rule) and, on the constant-speed schedule, to ``Lambda^2 / K``.
    Real kernels correlate successive states, which adds positive covariances: this is a lower reference.
    """
    b = validate_schedule(schedule)
    return schedule_action(b, grid, g, rule="left") / (b.size - 1)


# --------------------------------------------------------------------------------------------------------------
# optimal schedules
# --------------------------------------------------------------------------------------------------------------


def constant_speed_schedule(grid, g, n_temps: int) -> np.ndarray:
    """The optimal (constant thermodynamic speed) schedule ``b_k = Phi^{-1}(k / K * Phi(1))``, ``K = n_temps``.

    ``Phi(b) = int_0^b sqrt(g)`` is integrated cell by cell exactly for the log-linear interpolant of ``g`` (see
    :func:`thermodynamic_length`) and, being strictly increasing (``g > 0``), inverted exactly within each cell
    (``sqrt(g)`` exponential there), so steps shorter than a grid cell are placed as accurately as long ones.
    Each step then covers the same thermodynamic length
    ``Lambda / K``; the schedule solves the Euler-Lagrange equation ``2 g beta'' + g' beta'^2 = 0`` of the action
    ``J`` with ``beta(0) = 0, beta(1) = 1`` (Kiwaki 2015). Returns an array of ``K + 1`` points from exactly 0 to
    exactly 1, strictly increasing (checked by ``validate_schedule``).
    """
    grid, g = _check_metric(grid, g)
    K = _check_n_temps(n_temps)
    phi = _cumulative_length(grid, g)
    b = _inverse_length(np.arange(K + 1) / K * phi[-1], phi, grid, g)
    b[0], b[-1] = 0.0, 1.0
    return validate_schedule(b)


def euler_lagrange_schedule(grid, g, n_temps: int, *, max_iter: int = 500, tol: float = 1e-10) -> np.ndarray:
    """Solve the discretised Euler-Lagrange equation directly (an independent check of the closed form).

    The first integral ``g(beta) beta'^2 = const`` of ``2 g beta'' + g' beta'^2 = 0`` is discretised with the
    midpoint rule: find ``0 = b_0 < ... < b_K = 1`` whose midpoint speeds

        s_k = sqrt(g(b*_k)) (b_k - b_{k-1}),        b*_k = (b_{k-1} + b_k) / 2,

    are all equal, i.e. ``r_k = log s_{k+1} - log s_k = 0`` for ``k = 1..K-1`` (``K - 1`` equations for the
    interior points; they make the midpoint :func:`schedule_action` stationary up to ``O(K^-2)``). No integral
    of ``sqrt(g)`` is used, unlike :func:`constant_speed_schedule`, and the two agree up to the difference
    between the midpoint rule and the exact integral of ``sqrt(g)``, ``O(K^-2)``.

    Solver, started from the linear schedule: Newton steps on ``r`` (``r_k`` involves only ``b_{k-1}, b_k,
    b_{k+1}``, so the Jacobian is tridiagonal; ``d log g / db`` is the slope of the log-linear interpolant),
    each shortened so that the schedule stays strictly increasing and ``sum r_k^2`` decreases. Where no such
    step exists (``log g`` has a kink at a grid point), one fixed-point step
    ``b_k - b_{k-1} proportional to 1 / sqrt(g(b*_k))`` (normalised to sum to 1) is taken instead; its fixed
    points are exactly the equal-speed schedules. Iteration stops when ``max_k |r_k| < tol``.

    The discrete problem is well posed when ``g`` changes by less than a factor ``~e^4`` within each step
    (``|d log g / db| (b_k - b_{k-1}) < 4``: then each ``s_k`` increases with ``b_k``); for a metric that is
    rough on the scale of the steps it may have no solution, and a ``RuntimeWarning`` reports non-convergence.
    It may also have solutions whose steps straddle peaks of ``g`` (the midpoint rule does not see a peak
    between two midpoints), with a midpoint action below ``Lambda^2``; these differ from the closed form, which
    is the schedule to use. Use this solver as a check on metrics that are resolved by the steps.

    Parameters
    ----------
    grid, g : arrays
        The metric (see :func:`thermodynamic_metric`).
    n_temps : int
        Number of steps ``K``.
    max_iter : int
        Maximum number of (Newton or fixed-point) iterations.
    tol : float
        Tolerance on ``max_k |log s_{k+1} - log s_k|``.
    """
    grid, g = _check_metric(grid, g)
    K = _check_n_temps(n_temps)
    b = np.linspace(0.0, 1.0, K + 1)
    if K == 1:
        return b
    log_g = np.log(g)
    slope = np.diff(log_g) / np.diff(grid)

    def log_speeds(b):
        mid = 0.5 * (b[1:] + b[:-1])
        return 0.5 * np.interp(mid, grid, log_g) + np.log(np.diff(b)), mid

    log_s, mid = log_speeds(b)
    r = np.diff(log_s)
    merit = np.sum(r**2)
    for _ in range(int(max_iter)):
        if np.max(np.abs(r)) < tol:
            return validate_schedule(b)
        step = _newton_step(b, mid, r, grid, slope)
        candidate = None
        if step is not None:
            d, dd = np.diff(b), np.diff(step)
            shrinking = dd < 0
            t = min(1.0, 0.9 * np.min(-d[shrinking] / dd[shrinking])) if shrinking.any() else 1.0
            while t > 1e-4:
                trial = b + t * step
                trial[0], trial[-1] = 0.0, 1.0
                if np.all(np.diff(trial) > 0):
                    trial_log_s, _ = log_speeds(trial)
                    trial_r = np.diff(trial_log_s)
                    if np.sum(trial_r**2) < (1 - 1e-4 * t) * merit:
                        candidate = trial
                        break
                t *= 0.5
        if candidate is None:  # fixed-point step: increments proportional to 1 / sqrt(g(midpoint))
            inc = np.exp(-0.5 * np.interp(mid, grid, log_g))
            candidate = np.concatenate([[0.0], np.cumsum(inc / inc.sum())])
            candidate[-1] = 1.0
        b = candidate
        log_s, mid = log_speeds(b)
        r = np.diff(log_s)
        merit = np.sum(r**2)
    if np.max(np.abs(r)) >= tol:
        warnings.warn(
            f"pmz: euler_lagrange_schedule did not converge in {max_iter} iterations "
            f"(max |log speed ratio| = {np.max(np.abs(r)):.3g}); the metric may be too rough for {K} steps",
            RuntimeWarning,
            stacklevel=2,
        )
    return validate_schedule(b)


def _newton_step(b, mid, r, grid, slope):
    """Newton direction (zero at both ends) for ``r_k = log s_{k+1} - log s_k = 0``; None if singular."""
    d = np.diff(b)
    cell = np.clip(np.searchsorted(grid, mid, side="right") - 1, 0, slope.size - 1)
    half_slope = 0.25 * slope[cell]  # d/db_k of 0.5 log g(midpoint) for either end point
    right = half_slope + 1.0 / d  # d log s_k / d b_k
    left = half_slope - 1.0 / d  # d log s_k / d b_{k-1}
    # r_j = log s_{j+1} - log s_j (j = 0..K-2) depends on b_j, b_{j+1}, b_{j+2}; unknowns b_1..b_{K-1}
    bands = np.zeros((3, r.size))
    bands[0, 1:] = right[1:-1]
    bands[1] = left[1:] - right[:-1]
    bands[2, :-1] = -left[1:-1]
    try:
        inner = solve_banded((1, 1), bands, -r)
    except (np.linalg.LinAlgError, ValueError):
        return None
    if not np.all(np.isfinite(inner)):
        return None
    return np.concatenate([[0.0], inner, [0.0]])


def _check_n_temps(n_temps):
    if isinstance(n_temps, bool) or int(n_temps) != n_temps or n_temps < 1:
        raise ValueError(f"pmz: n_temps must be a positive integer, got {n_temps!r}")
    return int(n_temps)


def decelerate(schedule, delta_max: float) -> np.ndarray:
    """Cap every increment of a schedule at ``delta_max`` and stretch the others (VAROPT's deceleration).

    Repeat until no increment exceeds ``delta_max``: set the increments above ``delta_max`` to ``delta_max``
    and multiply the others by the common factor that makes all increments sum to 1 again. The set of capped
    increments only grows, so at most ``K`` rounds are needed; the stretched increments grow, so the schedule
    stays strictly increasing, keeps its ``K + 1`` points and its end points 0 and 1. A schedule whose
    increments are all at most ``delta_max`` is returned unchanged. Kiwaki (2015) found capped optimal
    schedules (``delta_max`` of 0.003-0.009 for thousands of steps) better than uncapped ones: the metric from
    a pilot is least reliable where it is small and the optimal schedule takes its largest steps.

    Raises ``ValueError`` if ``K * delta_max < 1`` (``K`` increments of at most ``delta_max`` cannot reach 1).
    """
    b = validate_schedule(schedule)
    if not (np.isfinite(delta_max) and delta_max > 0):
        raise ValueError(f"delta_max must be positive, got {delta_max}")
    K = b.size - 1
    if K * delta_max < 1.0 - 1e-12:  # (tolerance: delta_max = 1 / K computed in floating point)
        raise ValueError(
            f"pmz: cannot cap the increments of a {K}-step schedule at delta_max={delta_max}: "
            f"K * delta_max = {K * delta_max:.6g} < 1; use delta_max >= {1.0 / K:.6g} or more steps"
        )
    inc = np.diff(b)
    if np.all(inc <= delta_max):
        return b.copy()
    capped = np.zeros(K, dtype=bool)
    while True:
        capped |= inc > delta_max
        free = ~capped
        inc = np.where(capped, delta_max, inc)
        if not free.any():
            break
        inc[free] *= (1.0 - delta_max * capped.sum()) / inc[free].sum()
        if not np.any(inc[free] > delta_max):
            break
    out = np.concatenate([[0.0], np.cumsum(inc)])
    out[-1] = 1.0
    return validate_schedule(out)


# --------------------------------------------------------------------------------------------------------------
# adaptive step by conditional ESS
# --------------------------------------------------------------------------------------------------------------


def next_beta_by_cess(beta: float, log_w, U, target: float, *, beta_max: float = 1.0, tol: float = 1e-10) -> float:
    """Next inverse temperature of an adaptive schedule: the ``beta'`` whose conditional ESS fraction is ``target``.

    Moving particles with normalised weights ``W_i`` from ``beta`` to ``beta'`` multiplies their weights by
    ``w_i = exp((beta' - beta) U_i)``. The conditional effective sample size (Zhou, Johansen & Aston 2016)

        CESS(beta') = n (sum_i W_i w_i)^2 / sum_i W_i w_i^2

    measures how well the current weighted particles represent ``p_beta'``; ``CESS / n = 1 / (1 + CV_W^2[w])``
    is 1 at ``beta' = beta`` and non-increasing in ``beta'`` (``log E_W[e^{2 d U}] - 2 log E_W[e^{d U}]`` has
    derivative ``2 (K'(2d) - K'(d)) >= 0``, ``K`` the cumulant generating function of ``U`` under ``W``). The
    root of ``CESS(beta') / n = target`` in ``(beta, beta_max]`` is found by bisection to ``tol``; the upper
    end of the final bracket is returned (strictly above ``beta``, with ``CESS / n`` within the bracket's
    tolerance of ``target``). If ``CESS(beta_max) / n >= target``, ``beta_max`` is returned. All sums are
    computed in log space.

    Parameters
    ----------
    beta : float
        Current inverse temperature.
    log_w : array (n,)
        Current particle log weights (normalised or not; ``-inf`` for particles without weight).
    U : array (n,)
        ``U = log f1 - log f0`` at the particles (NaN is treated as ``-inf``: no weight after the move).
    target : float
        Wanted ``CESS / n`` in ``(0, 1)``.
    beta_max : float
        Largest allowed next inverse temperature (default 1).
    tol : float
        Width of the final bisection bracket in ``beta``.
    """
    log_w = np.asarray(log_w, dtype=float)
    U = np.asarray(U, dtype=float)
    if log_w.ndim != 1 or log_w.shape != U.shape:
        raise ValueError(f"log_w and U must be 1-d arrays of the same length, got {log_w.shape} and {U.shape}")
    if not 0 < target < 1:
        raise ValueError(f"target must lie in (0, 1), got {target}")
    if not beta < beta_max:
        raise ValueError(f"beta_max must exceed beta, got beta={beta}, beta_max={beta_max}")
    if not np.any(np.isfinite(log_w) & np.isfinite(U)):
        raise ValueError("pmz: no particle has a finite weight and a finite U")
    U = np.where(np.isnan(U), -np.inf, U)
    log_W = normalized_log_weights(log_w)
    log_target = np.log(target)

    def above_target(b):
        value = log_cess_fraction(log_W, (b - beta) * U)
        return np.isfinite(value) and value >= log_target

    if above_target(beta_max):
        return float(beta_max)
    lo, hi = float(beta), float(beta_max)
    while hi - lo > tol:
        mid = 0.5 * (lo + hi)
        if mid <= lo or mid >= hi:
            break
        if above_target(mid):
            lo = mid
        else:
            hi = mid
    return hi
