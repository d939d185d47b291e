"""The thermodynamic metric of a tempered path, its length and action, and the AIS variance they predict.

Notation (docs/methods.md, sections 0 and 9). The path is ``log f_b = log f0 + b U`` and the thermodynamic metric is

    g(b) = d^2 log Z(b) / db^2 = Var_b[U],        U = log f1 - log f0.

With perfect transitions (an independent exact draw ``x_{k-1} ~ p_{b_{k-1}}`` at every step) the AIS log weight
``log w = sum_k (b_k - b_{k-1}) U(x_{k-1})`` is a sum of independent terms, so

    Var[log w] = sum_k (b_k - b_{k-1})^2 g(b_{k-1}).

Writing ``b_k = beta(k / K)`` for a smooth increasing ``beta: [0, 1] -> [0, 1]``, ``K Var[log w]`` tends to the
action ``J[beta] = int_0^1 g(beta(t)) beta'(t)^2 dt``, and by Cauchy-Schwarz ``J >= Lambda^2`` with the
thermodynamic length of the path (Crooks 2007)

    Lambda = int_0^1 sqrt(g(b)) db.

Everything here works on a metric tabulated on a grid ``0 = grid[0] < ... < grid[-1] = 1`` (made from pilot
estimates by :func:`thermodynamic_metric`); between grid points ``g`` is interpolated log-linearly in ``b``
(``log g`` piecewise linear), the same rule :func:`thermodynamic_metric` uses. Pure NumPy; no sampling. The
schedules that attain ``J = Lambda^2`` are in :mod:`pmz.families.optimal`.

References
----------
Kiwaki, T. (2015). Variational optimization of annealing schedules. arXiv:1502.05313.
Crooks, G. E. (2007). Measuring thermodynamic length. Physical Review Letters 99, 100602.
Gelman, A. and Meng, X.-L. (1998). Simulating normalizing constants: from importance sampling to bridge sampling
to path sampling. Statistical Science 13, 163-185.
"""

from __future__ import annotations

import numpy as np

from .schedules import validate_schedule

__all__ = [
    "thermodynamic_metric",
    "thermodynamic_length",
    "schedule_action",
    "predicted_log_weight_variance",
    "check_metric",
    "cumulative_length",
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


def check_metric(grid, g):
    """``(grid, g)`` as float arrays, checked: a grid rising strictly from 0 to 1, ``g`` positive and finite."""
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


def cumulative_length(grid, g):
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
    grid, g = check_metric(grid, g)
    return float(cumulative_length(grid, g)[-1])


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
    grid, g = check_metric(grid, g)
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
