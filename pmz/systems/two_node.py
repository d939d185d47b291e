"""The 2-node binary MRF of CAST (Salakhutdinov 2010, Figure 2): four states, two of them carrying almost all the mass.

Two +-1 units ``s = (s1, s2)`` coupled by a weight ``w``::

    log f1(s) = w s1 s2,        f0 = uniform over the four states (``log f0 = -2 log 2``).

With ``w = +5`` the states ``(+1, +1)`` and ``(-1, -1)`` each have probability ``e^5 / (4 cosh 5) = 0.49998``
and the two mixed states ``e^-5 / (4 cosh 5) = 2.3e-5`` (``w = -5`` swaps the roles: the modes are then
``(+1, -1)`` and ``(-1, +1)``; the "weights +-5" of the paper). A heat-bath (Gibbs) sweep at ``beta = 1`` leaves a
mode only by flipping one unit into a mixed state, with probability ``1 / (1 + e^(2|w|)) = 4.5e-5``: plain Gibbs
stays in the mode it starts in for tens of thousands of sweeps, although both modes have mass 1/2.

Exact values (pmz's geometric path ``f_beta = f0^(1 - beta) f1^beta``, i.e. ``∝ exp(beta w s1 s2)``):

* ``log Z = log sum_s f1(s) = log(4 cosh w)`` (:func:`two_node_log_z`);
* ``log Z(beta) = -(1 - beta) 2 log 2 + log(4 cosh(beta w))`` along the path, so on a ladder
  ``log Z_k - log Z_0`` is known exactly (what Wang-Landau's weights estimate);
* ``E[s1] = E[s2] = 0``, ``E[s1 s2] = tanh(beta w)`` (:func:`two_node_moments`);
* the partitions ``{s1 = +1}`` and ``{s1 = -1}`` (:func:`partition_of`) each have mass exactly 1/2 at every beta.

Examples
--------
>>> system = two_node_mrf()
>>> round(system.log_z, 6), system.name
(5.693193, 'two_node_mrf_w5')
>>> two_node_moments(5.0)["s1s2"] > 0.9999
True
"""

from __future__ import annotations

import numpy as np

from ..kernels.gibbs import SiteGibbs
from ..model.energy_model import EnergyModel, UniformSpins
from ..records import KnownTruth

__all__ = ["two_node_mrf", "two_node_log_z", "two_node_probabilities", "two_node_moments", "partition_of", "STATES"]

LOG4 = float(np.log(4.0))

STATES = np.array([[-1.0, -1.0], [-1.0, 1.0], [1.0, -1.0], [1.0, 1.0]])
"""The four states, in the order of :func:`two_node_probabilities`."""


def _log_cosh(x):
    x = np.abs(np.asarray(x, dtype=np.float64))
    return x + np.log1p(np.exp(-2.0 * x)) - np.log(2.0)


def two_node_log_z(coupling: float = 5.0, beta=1.0):
    """``log Z(beta) = log sum_s f0(s)^(1 - beta) f1(s)^beta = -(1 - beta) 2 log 2 + log(4 cosh(beta w))``
    (scalar or array ``beta``); ``beta = 1`` gives ``log(4 cosh w)``."""
    beta = np.asarray(beta, dtype=np.float64)
    out = -(1.0 - beta) * LOG4 + LOG4 + _log_cosh(beta * coupling)
    return float(out) if out.ndim == 0 else out


def two_node_probabilities(coupling: float = 5.0, beta: float = 1.0) -> np.ndarray:
    """Exact probabilities of :data:`STATES` under ``f_beta ∝ exp(beta w s1 s2)``."""
    log_p = beta * coupling * STATES[:, 0] * STATES[:, 1]
    p = np.exp(log_p - log_p.max())
    return p / p.sum()


def two_node_moments(coupling: float = 5.0, beta: float = 1.0) -> dict:
    """Exact ``E[s1]``, ``E[s2]`` (0 by symmetry), ``E[s1 s2] = tanh(beta w)`` and the mass of ``{s1 = +1}`` (1/2)."""
    return {"s1": 0.0, "s2": 0.0, "s1s2": float(np.tanh(beta * coupling)), "partition_plus": 0.5}


def partition_of(X) -> np.ndarray:
    """The partition of each state (last axis of ``X``): 1 where ``s1 = +1``, else 0. Each has mass 1/2."""
    X = np.asarray(X, dtype=np.float64)
    return (X[..., 0] > 0).astype(int)


class _TwoNodeLogDensity:
    """``log f1(s) = w s1 s2`` for a batch ``X (n, 2)`` (a class, so the model pickles)."""

    def __init__(self, coupling: float):
        self.coupling = float(coupling)

    def __call__(self, X):
        X = np.asarray(X, dtype=np.float64)
        return self.coupling * X[:, 0] * X[:, 1]


def two_node_mrf(coupling: float = 5.0) -> KnownTruth:
    """The 2-node +-1 MRF ``log f1(s) = w s1 s2`` (module docstring) as an energy model with exact log Z.

    Parameters
    ----------
    coupling : float
        The weight ``w`` (CAST's Figure 2: ``|w| = 5``).

    Returns
    -------
    KnownTruth
        ``(model, log_z, name)``: an :class:`~pmz.model.energy_model.EnergyModel` with base
        :class:`~pmz.model.energy_model.UniformSpins` and the site-by-site heat bath
        (:class:`~pmz.kernels.gibbs.SiteGibbs`) as its kernel; ``log_z = log(4 cosh w)``.
    """
    coupling = float(coupling)
    if not np.isfinite(coupling):
        raise ValueError(f"coupling must be finite, got {coupling!r}")
    base = UniformSpins(2)
    name = f"two_node_mrf_w{coupling:g}"
    model = EnergyModel(_TwoNodeLogDensity(coupling), base, kernel=SiteGibbs.for_base(base), name=name)
    model.coupling = coupling
    return KnownTruth(model, two_node_log_z(coupling), name)
