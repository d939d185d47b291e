"""A hierarchical normal model (partial pooling of group means) with exact log evidence.

Model, for groups ``j = 1..J`` with ``n_j`` observations each; ``tau`` and ``sigma`` are known::

    mu      ~ Normal(0, mu_scale^2)
    theta_j ~ Normal(mu, tau^2)
    y_ij    ~ Normal(theta_j, sigma^2),   i = 1..n_j

The free parameters are ``mu`` and ``theta_1..theta_J`` (dimension ``J + 1``; 50 with the defaults of
:func:`hierarchical_normal`). Marginally ``y`` is Gaussian with mean 0 and covariance
``sigma^2 I + tau^2 (one block of ones per group) + mu_scale^2 (all ones)``, so log p(y) is exact.

:func:`hierarchical_normal_log_evidence` does not factor that ``N x N`` matrix; it uses the group means
as sufficient statistics (cost O(N), see its docstring).

In the centred form, the posterior couples ``mu`` with every ``theta_j``; the coupling, and with it the
advantage of the non-centred form, grows as ``tau`` shrinks relative to ``sigma / sqrt(n_j)``.

Reference: A. Gelman, J. B. Carlin, H. S. Stern, D. B. Dunson, A. Vehtari, D. B. Rubin,
*Bayesian Data Analysis*, 3rd ed., CRC Press (2013), section 5.4 (the normal hierarchical model with
known variances, whose marginal distribution of the group means is used below).

Examples
--------
>>> from pmz.systems.hierarchical import hierarchical_normal
>>> system = hierarchical_normal()
>>> system.model.initial_point()["theta"].shape
(49,)
>>> round(system.log_z, 5)
-546.26788
"""

from __future__ import annotations

import numpy as np
import pymc as pm

from ..records import KnownTruth
from .conjugate import _check_positive, _float64

__all__ = ["hierarchical_normal", "hierarchical_normal_log_evidence"]

LOG_2PI = float(np.log(2.0 * np.pi))


def _group_statistics(y, group) -> tuple[np.ndarray, np.ndarray, float]:
    """Group sizes ``n_j``, group means ``ybar_j`` and the pooled within-group sum of squares ``W``."""
    y = np.asarray(y, dtype=np.float64)
    if group is None:
        if y.ndim != 2 or y.size == 0:
            raise ValueError(f"y must have shape (n_groups, n_per_group) when group is None, got {y.shape}")
        sizes = np.full(y.shape[0], y.shape[1], dtype=np.float64)
        means = y.mean(axis=1)
        within = float(np.sum((y - means[:, None]) ** 2))
        return sizes, means, within
    group = np.asarray(group)
    if y.ndim != 1 or group.shape != y.shape or y.size == 0:
        raise ValueError(f"with a group index, y and group must be 1-D of equal length, got {y.shape}, {group.shape}")
    if not np.issubdtype(group.dtype, np.integer) or group.min() < 0:
        raise ValueError("group must hold non-negative integer labels")
    counts = np.bincount(group)
    sums = np.bincount(group, weights=y)
    present = counts > 0  # a label without observations contributes nothing (its theta integrates to 1)
    means_all = np.divide(sums, counts, out=np.zeros_like(sums), where=present)
    within = float(np.sum((y - means_all[group]) ** 2))
    return counts[present].astype(np.float64), means_all[present], within


def hierarchical_normal_log_evidence(y, mu_scale: float, tau: float, sigma: float, *, group=None) -> float:
    r"""Exact log p(y) of the hierarchical normal model with known ``tau`` and ``sigma``.

    Write ``s2 = sigma^2``, ``t2 = tau^2``, ``m2 = mu_scale^2``, ``N = sum_j n_j``, ``ybar_j`` for the
    group means and ``W = sum_ij (y_ij - ybar_j)^2``. Within a group, the residuals ``y_ij - ybar_j``
    are independent of ``ybar_j`` and do not depend on ``theta_j``; the group means are, after integrating
    out ``theta``, ``ybar ~ MVN(0, D + m2 1 1')`` with ``D = diag(d_j)``, ``d_j = t2 + s2 / n_j``
    (Gelman et al. 2013, section 5.4). With the precision-weighted mean
    ``mhat = (sum_j ybar_j / d_j) / P``, ``P = sum_j 1 / d_j``, the matrix determinant lemma and
    Sherman-Morrison give::

        log p(y) = -N/2 log(2 pi) - (N - J)/2 log s2 - 1/2 sum_j log n_j - W / (2 s2)
                   - 1/2 [ sum_j log d_j + log(1 + m2 P)
                           + sum_j (ybar_j - mhat)^2 / d_j + mhat^2 / (m2 + 1/P) ]

    Every term is a sum of non-negative pieces (no cancellation, even for a very wide ``mu_scale``); the
    cost is O(N), whereas a Cholesky factor of the ``N x N`` covariance costs O(N^3).

    Parameters
    ----------
    y : array_like
        Observations: shape ``(n_groups, n_per_group)`` (balanced groups, row j is group j), or, with
        ``group``, a 1-D array of any length.
    mu_scale, tau, sigma : float
        Prior standard deviation of ``mu``, spread ``tau`` of the group means, observation standard
        deviation ``sigma``; all positive.
    group : array_like of int, optional
        Group label (0, 1, ...) of each entry of a 1-D ``y``; groups may have different sizes. Labels
        with no observations are ignored.

    Returns
    -------
    float
        log p(y).

    Examples
    --------
    >>> import numpy as np
    >>> y = np.array([[0.3, -1.2, 0.8], [2.1, 1.7, 2.9]])
    >>> round(hierarchical_normal_log_evidence(y, 5.0, 1.0, 2.0), 10)
    -12.7250617749
    >>> flat = hierarchical_normal_log_evidence(y.ravel(), 5.0, 1.0, 2.0, group=np.repeat([0, 1], 3))
    >>> round(flat, 10)
    -12.7250617749
    """
    _check_positive(mu_scale=mu_scale, tau=tau, sigma=sigma)
    sizes, means, within = _group_statistics(y, group)
    s2, t2, m2 = float(sigma) ** 2, float(tau) ** 2, float(mu_scale) ** 2
    n_total, n_groups = float(sizes.sum()), sizes.size
    d = t2 + s2 / sizes
    precision = float(np.sum(1.0 / d))
    m_hat = float(np.sum(means / d)) / precision
    log_residuals = -0.5 * ((n_total - n_groups) * np.log(s2) + np.sum(np.log(sizes)) + within / s2)
    log_means = -0.5 * (
        np.sum(np.log(d))
        + np.log1p(m2 * precision)
        + np.sum((means - m_hat) ** 2 / d)
        + m_hat**2 / (m2 + 1.0 / precision)
    )
    return float(-0.5 * n_total * LOG_2PI + log_residuals + log_means)


def hierarchical_normal(
    n_groups: int = 49,
    n_per_group: int = 5,
    *,
    mu_scale: float = 5.0,
    tau: float = 1.0,
    sigma: float = 2.0,
    centered: bool = True,
    seed: int = 0,
) -> KnownTruth:
    r"""Hierarchical normal model with ``n_groups + 1`` free parameters and exact log evidence.

    Model (``tau`` and ``sigma`` known)::

        mu      ~ Normal(0, mu_scale^2)
        theta_j ~ Normal(mu, tau^2),           j = 1..J = n_groups
        y_ij    ~ Normal(theta_j, sigma^2),    i = 1..n_per_group

    The data are one draw from the prior predictive (``numpy.random.default_rng(seed)``: first ``mu``,
    then ``theta`` (J,), then ``y`` (J, n_per_group)). The PyMC model holds ``y`` as one observed
    array ``"y"`` of shape ``(n_groups, n_per_group)``, row j being group j (likelihood
    ``Normal(theta[:, None], sigma)``).

    Parameterisations (same joint density of ``(mu, theta, y)``, hence the same evidence):

    * ``centered=True`` (default, how the model is usually written): free ``mu`` and ``theta`` (J,),
      ``theta ~ Normal(mu, tau)``;
    * ``centered=False``: free ``mu`` and ``eta`` (J,), ``eta ~ Normal(0, 1)``, and
      ``theta = mu + tau * eta`` as a ``pm.Deterministic``.

    There are no transforms, so the unconstrained space is the parameter space itself. The exact
    ``log_z`` is :func:`hierarchical_normal_log_evidence` of the simulated ``y`` (O(N) closed form via
    the group means; Gelman et al. 2013, section 5.4).

    Parameters
    ----------
    n_groups : int
        Number of groups J; the dimension is J + 1 (50 by default).
    n_per_group : int
        Observations per group.
    mu_scale : float
        Prior standard deviation of the population mean ``mu``.
    tau : float
        Known standard deviation of the group means around ``mu``.
    sigma : float
        Known observation standard deviation.
    centered : bool
        Centred (``theta`` free) or non-centred (``eta`` free) PyMC model.
    seed : int
        Seed for ``numpy.random.default_rng``; same seed, same data (for either parameterisation).

    Returns
    -------
    KnownTruth
        Model, exact log p(y), and name ``"hierarchical_normal"``.

    Examples
    --------
    >>> centred = hierarchical_normal(n_groups=9, n_per_group=4, seed=3)
    >>> non_centred = hierarchical_normal(n_groups=9, n_per_group=4, seed=3, centered=False)
    >>> [rv.name for rv in non_centred.model.free_RVs], centred.log_z == non_centred.log_z
    (['mu', 'eta'], True)
    """
    _check_positive(n_groups=n_groups, n_per_group=n_per_group, mu_scale=mu_scale, tau=tau, sigma=sigma)
    n_groups, n_per_group = int(n_groups), int(n_per_group)
    mu_scale, tau, sigma = _float64(mu_scale, tau, sigma)
    rng = np.random.default_rng(seed)
    mu_true = rng.normal(0.0, mu_scale)
    theta_true = rng.normal(mu_true, tau, size=n_groups)
    y = rng.normal(theta_true[:, None], sigma, size=(n_groups, n_per_group))

    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, mu_scale)
        if centered:
            theta = pm.Normal("theta", mu, tau, shape=n_groups)
        else:
            eta = pm.Normal("eta", 0.0, 1.0, shape=n_groups)
            theta = pm.Deterministic("theta", mu + tau * eta)
        pm.Normal("y", theta[:, None], sigma, observed=y)

    log_z = hierarchical_normal_log_evidence(y, mu_scale, tau, sigma)
    return KnownTruth(model, log_z, "hierarchical_normal")
