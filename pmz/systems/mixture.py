"""A two-component Gaussian mixture in R^dim with exact log Z: the simulated-tempering toy.

Modelled on the 10-dimensional two-Gaussian mixture of Carlson, Stinson, Pakman & Paninski (ICML 2016,
"Partition functions from Rao-Blackwellized tempered sampling", section 4.1); the constants below are ours
(documented choices, not the paper's). With ``u = (1, ..., 1) / sqrt(dim)`` and ``m = (separation / 2) u``:

* base (normalised): ``f0(x) = N(x; 0, base_sd^2 I)``;
* target: ``f1(x) = exp(log_z) [w N(x; +m, sd^2 I) + (1 - w) N(x; -m, sd^2 I)]``.

The mixture density integrates to one, so ``log Z = log int f1(x) dx = log_z`` exactly, whatever the other
constants. The two component means are ``separation`` apart (in units of x; ``separation / sd`` component
standard deviations), along the diagonal direction ``u``. pmz anneals along ``f0^(1-beta) f1^beta``; with the
defaults (``separation = 10``, ``sd = 1``, ``base_sd = 5``) the base covers both modes (each at distance 5 from
the origin, one base standard deviation), while at ``beta = 1`` the log density midway between the modes is
``separation^2 / (8 sd^2) - log 2 = 11.8`` below its value at a mode (``w = 1/2``), so a local sampler (HMC,
random walk) run on the target alone stays in the mode it starts in. Along the path the barrier on the segment
between the means grows with beta: 0.85 at ``beta = 0.1``, 3.2 at 0.3, 5.7 at 0.5 (unimodal only for
``beta < 0.002``).

In closed form, with ``t(x) = x.m / sd^2`` and ``a(x) = log(w / (1 - w)) + 2 t(x)``::

    log f1(x) = log_z - dim/2 log(2 pi sd^2) - (|x|^2 + |m|^2) / (2 sd^2)
                + logaddexp(log w + t(x), log(1 - w) - t(x))
    grad log f1(x) = (-x + tanh(a(x) / 2) m) / sd^2

(``tanh(a/2) = r+ - r-``, the difference of the two components' responsibilities). Exact target draws: choose
``+m`` with probability ``w`` (else ``-m``) and add ``N(0, sd^2 I)`` noise.

Modes. :func:`mode_of` labels a state by the nearer mean, ``sign(x.u)`` (+1: near ``+m``, -1: near ``-m``);
under the normalised target ``P(label = +1) = w Phi(|m| / sd) + (1 - w) Phi(-|m| / sd)`` exactly
(:attr:`GaussianMixtureTarget.mode_masses`), which is ``w`` to within ``Phi(-5) = 2.9e-7`` with the defaults.

Examples
--------
>>> truth = gaussian_mixture()                 # KnownTruth(model, log_z=5.0, name)
>>> truth.model.target.mode_masses             # w = 0.5: equal by symmetry
(0.5, 0.5)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from ..model.energy_model import EnergyModel
from ..model.reference import GaussianReference
from ..records import KnownTruth

__all__ = ["GaussianMixtureTarget", "gaussian_mixture", "mode_of"]

LOG_2PI = float(np.log(2.0 * np.pi))


def _direction(dim: int) -> np.ndarray:
    return np.full(int(dim), 1.0 / np.sqrt(dim))


def mode_of(X) -> np.ndarray:
    """Which mean each state ``x`` (row of ``X (n, dim)``) is nearer to: ``sign(x.u)``, ``u = 1 / sqrt(dim)``.

    Returns an integer array of ``+1`` (nearer ``+m``, the component of weight ``w``) and ``-1`` (nearer ``-m``).
    The means are ``+-(separation / 2) u`` for every ``separation``, so the label does not depend on it; the
    boundary ``x.u = 0`` (probability zero) is labelled ``+1``.
    """
    X = np.asarray(X, dtype=np.float64)
    if X.ndim == 1:
        X = X[None, :]
    return np.where(X.sum(axis=1) >= 0.0, 1, -1)


@dataclass(frozen=True)
class GaussianMixtureTarget:
    """``f1(x) = exp(log_z) [w N(x; m, sd^2 I) + (1 - w) N(x; -m, sd^2 I)]``, vectorised over a batch ``X``.

    Attributes
    ----------
    mean : array (dim,)
        ``m``, the mean of the component of weight ``weight``; the other component sits at ``-m``.
    sd : float
        Standard deviation of each component (isotropic).
    weight : float
        ``w``, the weight of the component at ``+m``, in (0, 1).
    log_z : float
        ``log int f1(x) dx``, exact by construction.
    """

    mean: np.ndarray
    sd: float
    weight: float
    log_z: float

    @property
    def dim(self) -> int:
        return int(self.mean.size)

    @property
    def mode_masses(self) -> tuple[float, float]:
        """Exact target probabilities of ``mode_of(x) = +1`` and ``-1``.

        ``P(+1) = w Phi(r) + (1 - w) Phi(-r)`` and ``P(-1) = w Phi(-r) + (1 - w) Phi(r)``, ``r = |m| / sd``.
        """
        r = float(np.linalg.norm(self.mean)) / self.sd
        plus = self.weight * ndtr(r) + (1.0 - self.weight) * ndtr(-r)
        minus = self.weight * ndtr(-r) + (1.0 - self.weight) * ndtr(r)
        return float(plus), float(minus)

    def _projection(self, X):
        return X @ self.mean / self.sd**2  # t(x) = x.m / sd^2

    def log_density(self, X) -> np.ndarray:
        """``log f1(x)`` for each row of ``X (n, dim)`` (formula in the module docstring; logaddexp, no overflow)."""
        X = np.asarray(X, dtype=np.float64)
        t = self._projection(X)
        s2 = self.sd**2
        quad = (np.einsum("ij,ij->i", X, X) + self.mean @ self.mean) / (2.0 * s2)
        mix = np.logaddexp(np.log(self.weight) + t, np.log1p(-self.weight) - t)
        return self.log_z - 0.5 * self.dim * (LOG_2PI + np.log(s2)) - quad + mix

    def grad_log_density(self, X) -> np.ndarray:
        """``grad log f1(x) = (-x + tanh(a / 2) m) / sd^2``, ``a = log(w / (1 - w)) + 2 x.m / sd^2``."""
        X = np.asarray(X, dtype=np.float64)
        a = np.log(self.weight) - np.log1p(-self.weight) + 2.0 * self._projection(X)
        return (-X + np.tanh(0.5 * a)[:, None] * self.mean) / self.sd**2

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` exact draws of ``f1 / Z``: ``+m`` with probability ``w`` (else ``-m``) plus ``N(0, sd^2 I)``."""
        n = int(n)
        sign = np.where(rng.random(n) < self.weight, 1.0, -1.0)
        return sign[:, None] * self.mean + self.sd * rng.standard_normal((n, self.dim))


def gaussian_mixture(
    dim: int = 10,
    separation: float = 10.0,
    sd: float = 1.0,
    base_sd: float = 5.0,
    weight: float = 0.5,
    log_z: float = 5.0,
) -> KnownTruth:
    """Two-Gaussian mixture target with a broad Gaussian base, as an :class:`~pmz.model.energy_model.EnergyModel`.

    ``f0 = N(0, base_sd^2 I)`` (normalised), ``f1(x) = exp(log_z) [w N(x; m, sd^2 I) + (1 - w) N(x; -m, sd^2 I)]``
    with ``m = (separation / 2) (1, ..., 1) / sqrt(dim)`` (so ``|2m| = separation``); ``log Z = log_z`` exactly.

    Parameters
    ----------
    dim : int
        Dimension of the state.
    separation : float
        Euclidean distance between the two component means.
    sd : float
        Standard deviation of each component.
    base_sd : float
        Standard deviation of the base f0; it should cover both means (``base_sd >~ separation / 2``).
    weight : float
        Weight ``w`` of the component at ``+m``; strictly between 0 and 1.
    log_z : float
        The exact ``log Z`` of f1 (default 5.0, so an estimator that returns the base's 0 fails).

    Returns
    -------
    KnownTruth
        ``(model, log_z, name)``. ``model`` is an ``EnergyModel`` with base ``GaussianReference(0, base_sd^2 I)``,
        analytic ``grad_log_density`` (HMC) and exact ``sample_target``; ``model.target`` is the
        :class:`GaussianMixtureTarget` (means, ``mode_masses``) and ``model.log_z_source`` says how log Z is known.
    """
    dim = int(dim)
    if dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim!r}")
    for key, value in {"separation": separation, "sd": sd, "base_sd": base_sd}.items():
        if not value > 0:
            raise ValueError(f"{key} must be positive, got {value!r}")
    if not 0.0 < weight < 1.0:
        raise ValueError(f"weight must lie strictly between 0 and 1, got {weight!r}")
    target = GaussianMixtureTarget(
        mean=0.5 * float(separation) * _direction(dim), sd=float(sd), weight=float(weight), log_z=float(log_z)
    )
    base = GaussianReference(np.zeros(dim), float(base_sd) ** 2 * np.eye(dim), name="gaussian base")
    name = f"gaussian_mixture_d{dim}_sep{separation:g}_sd{sd:g}_base{base_sd:g}_w{weight:g}"
    model = EnergyModel(
        target.log_density,
        base,
        grad_log_density=target.grad_log_density,
        sample_target=target.sample,
        name=name,
    )
    model.target = target
    model.log_z_source = "exact (normalised mixture times exp(log_z))"
    return KnownTruth(model, float(log_z), name)
