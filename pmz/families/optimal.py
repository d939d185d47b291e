"""Optimal annealing schedules from the thermodynamic metric (VAROPT: Kiwaki 2015), and their deceleration.

Notation (docs/methods.md, sections 0 and 9; the metric, length and action are in :mod:`pmz.families.metric`). With
the metric ``g(b) = Var_b[U]`` the perfect-transition variance of the AIS log weight on ``b_k = beta(k / K)`` is
``Var[log w] ~ J[beta] / K`` with the action ``J[beta] = int_0^1 g(beta(t)) beta'(t)^2 dt``. Its Euler-Lagrange
equation ``2 g beta'' + g' beta'^2 = 0`` has the first integral ``g(beta) beta'^2 = const``: the optimal schedule
moves at constant thermodynamic speed,

    b_k = Phi^{-1}(k / K * Lambda),      Phi(b) = int_0^b sqrt(g(u)) du,      Lambda = Phi(1),

and by Cauchy-Schwarz ``J >= (int_0^1 sqrt(g) beta' dt)^2 = Lambda^2`` with equality there; ``Lambda`` is the
thermodynamic length of the path (Crooks 2007) and ``Var[log w] ~ Lambda^2 / K`` on the optimal schedule.

The metric is tabulated on a grid over ``[0, 1]`` and interpolated log-linearly (see
:func:`~pmz.families.metric.thermodynamic_metric`). Pure NumPy/SciPy; no sampling. The metric's functions and
:func:`~pmz.families.adaptive.next_beta_by_cess` are importable from here too.

References
----------
Kiwaki, T. (2015). Variational optimization of annealing schedules. arXiv:1502.05313.
Crooks, G. E. (2007). Measuring thermodynamic length. Physical Review Letters 99, 100602.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import solve_banded

from .adaptive import next_beta_by_cess
from .metric import (
    check_metric,
    cumulative_length,
    predicted_log_weight_variance,
    schedule_action,
    thermodynamic_length,
    thermodynamic_metric,
)
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
    grid, g = check_metric(grid, g)
    K = _check_n_temps(n_temps)
    phi = cumulative_length(grid, g)
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
    grid, g = check_metric(grid, g)
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
