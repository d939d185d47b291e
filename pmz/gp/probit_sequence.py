"""Probit GP classification by data annealing in the z-representation (ARM eq 10 and Appendix A).

Probit GP classification (``f ~ N(0, K)``, ``p(y_i | f_i) = Phi(y_i f_i)``) is the threshold model
``y_i = sign(z_i)`` with ``z = f + eps ~ N(0, C)``, ``C = K + I``. With the points taken in an order
``pi(1), ..., pi(n)`` and ``z_[t]`` the latents of the first ``t`` of them, the sequence is

    p_t(z_[t]) ∝ N(z_[t] | 0, C_[t]) prod_{k <= t} 1[y_k z_k > 0],        Z_t = P(y_k z_k > 0, k <= t),

so ``Z_0 = 1`` and ``Z_n = p(y)``, the evidence. The space grows by one latent per stage. Adding point ``t + 1``
(0-based position ``t``) with the conditional Gaussian ``z_t | z_[t] ~ N(m, s^2)``,

    m = a_t' z_[t],    a_t = C_[t]^{-1} c_t,    s^2 = C_tt - c_t' a_t,    c_t = C_[t], t,

integrates the new latent out of the incremental weight,

    W(z_[t]) = Z_{t+1}-density / Z_t-density = P(y_t z_t > 0 | z_[t]) = Phi(y_t m / s),

and :meth:`ProbitGPSequence.augment` draws ``z_t`` from ``N(m, s^2)`` truncated to ``y_t z_t > 0`` (exactly, by
the inverse CDF in log space). The move is one Gibbs sweep over the included sites, each drawn from its exact
truncated-normal full conditional under ``N(0, C_[t])`` (with ``S = C_[t]^{-1}``; :mod:`pmz.gp.probit_gibbs`):

    z_i | z_-i ~ N(z_i - (S z)_i / S_ii, 1 / S_ii) restricted to y_i z_i > 0.

The paper updated each site with a two-uniform slice sampler; exact conditionals give a Gibbs kernel for the
same target that mixes at least as fast per sweep. ``S`` grows with ``t`` by the block-inverse (Schur complement)
update in O(t^2) per stage (ARM Appendix A):

    S_{t+1} = [[S_t + a_t a_t' / s^2, -a_t / s^2], [-a_t' / s^2, 1 / s^2]].

Cost: a weight increment or augment is O(R t) for R particles, a Gibbs sweep O(R t^2); the coefficients
``a_t, s_t`` of all stages are computed once in O(n^3) when the sequence is built.

Reference: Fraccaro, Paquet & Winther, "An adaptive resample-move algorithm for estimating normalizing
constants" (ARM), eq 10 and Appendix A; docs/methods.md, section 10.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr

from ..kernels.base import KernelInfo, ParticleState
from .probit_gibbs import ProbitGibbs, positive_truncated_normal
from ..model.parts import LogDensityParts
from ..sequences.base import SMCSequence, resolve_order

__all__ = ["ProbitGPSequence", "positive_truncated_normal"]  # (the kernel's exact draw, used by augment too)


class ProbitGPSequence(SMCSequence):
    """SMC sequence adding one data point per stage to a probit GP classifier in the z-representation.

    See the module docstring for the formulas. Position ``t`` = number of points included (``0..n``);
    ``log Z_0 = 0`` and ``log Z_n = log p(y)``, the log evidence of the probit GP classifier with prior
    covariance ``K``.

    Parameters
    ----------
    K : array (n, n)
        Prior covariance of the latent function values f (e.g. :func:`pmz.gp.classification.
        squared_exponential`); the sequence uses ``C = K + I``.
    y : array (n,)
        Labels in {-1, +1}.
    order : None, "random" or array of int
        Order in which the points are added: as given, a random permutation (from ``seed``), or an explicit
        permutation of ``0..n-1``. Particle column ``k`` holds the latent of point ``order[k]``.
    seed : int or None
        Seed of the random order.

    Attributes
    ----------
    order : ndarray (n,)
        The order used (reported by :meth:`describe`).
    kernel : pmz.gp.probit_gibbs.ProbitGibbs

    Notes
    -----
    Particles are ``ParticleState(x, parts)`` with ``x (R, n)``: columns ``< t`` hold ``z`` of the included
    points, the others 0; ``parts`` is a placeholder of zeros (nothing in this sequence reads it).

    >>> from pmz.gp.classification import digits_gp_problem
    >>> problem = digits_gp_problem(6)
    >>> sequence = ProbitGPSequence(problem.K, problem.y)
    >>> rng = np.random.default_rng(1)
    >>> state, total = sequence.start(rng, 4000), np.zeros(4000)
    >>> for t in range(sequence.dim):
    ...     log_w, state = sequence.log_increment(state, t, t + 1)
    ...     total += log_w
    ...     state = sequence.augment(rng, state, t, t + 1)
    >>> w = np.exp(total)
    >>> log_z, se = np.log(w.mean()), w.std() / w.mean() / np.sqrt(w.size)   # delta-method se, about 0.005
    >>> bool(abs(log_z - (-4.1503)) < 4 * se and se < 0.01)                # exact: -4.1503
    True
    """

    name = "probit_gp"
    label = "n_points"
    log_z0 = 0.0
    t_start = 0

    def __init__(self, K, y, *, order=None, seed=None):
        K = np.asarray(K, dtype=np.float64)
        y = np.asarray(y)
        if K.ndim != 2 or K.shape[0] != K.shape[1] or y.shape != (K.shape[0],):
            raise ValueError(f"K must be (n, n) and y (n,), got {K.shape} and {y.shape}")
        if not np.all(np.isin(y, (-1, 1))):
            raise ValueError("labels must be -1 or +1")
        n = K.shape[0]
        self._order_rule = "given" if order is None else order if isinstance(order, str) else "custom"
        self.order = resolve_order("given" if order is None else order, n, np.random.default_rng(seed))
        self._seed = seed
        self.dim = n
        self.t_end = n
        self.C = K[np.ix_(self.order, self.order)] + np.eye(n)
        self.y = y[self.order].astype(np.float64)
        self.kernel = ProbitGibbs()
        self._coef, self._cond_sd = self._conditionals()
        self._precision_t = 0
        self._precision = np.zeros((0, 0))

    # ------------------------------------------------------------------ linear algebra of the growing space

    def _conditionals(self):
        """Regression coefficients ``a_t`` (row t of a lower-triangular array, first t entries) and
        conditional sds ``s_t`` of ``z_t | z_[t]`` for every stage, by growing ``S = C_[t]^{-1}``."""
        n = self.dim
        coef = np.zeros((n, n))
        cond_sd = np.zeros(n)
        S = np.zeros((0, 0))
        for t in range(n):
            c = self.C[:t, t]
            a = S @ c
            var = self.C[t, t] - c @ a
            if not var > 0:
                raise ValueError(f"K + I is not positive definite (conditional variance {var} at stage {t})")
            coef[t, :t] = a
            cond_sd[t] = np.sqrt(var)
            S = _grow_precision(S, a, var)
        return coef, cond_sd

    def precision(self, t: int) -> np.ndarray:
        """``S_t = C_[t]^{-1}``, grown from the cached one by block-inverse updates (O(t^2) per stage); a
        smaller ``t`` than the cached one (a new run) restarts from the empty matrix."""
        t = int(t)
        if t < self._precision_t:
            self._precision_t, self._precision = 0, np.zeros((0, 0))
        S = self._precision
        for k in range(self._precision_t, t):
            S = _grow_precision(S, self._coef[k, :k], self._cond_sd[k] ** 2)
        self._precision_t, self._precision = t, S
        return S

    def conditional(self, z_included: np.ndarray, t: int) -> tuple[np.ndarray, float]:
        """Mean ``a_t' z_[t]`` (one per particle) and sd ``s_t`` of the next latent ``z_t`` given ``z_[t]``."""
        return z_included[:, :t] @ self._coef[t, :t], float(self._cond_sd[t])

    # -------------------------------------------------------------------------------- sequence contract

    def _state(self, x: np.ndarray) -> ParticleState:
        zeros = np.zeros(x.shape[0])
        return ParticleState(x, LogDensityParts(zeros, zeros.copy()))

    def start(self, rng: np.random.Generator, n: int) -> ParticleState:
        """The empty space (no points included): all zeros."""
        return self._state(np.zeros((int(n), self.dim)))

    def next_position(self, t, state, log_w):
        """One point per stage: ``t + 1``."""
        return _stage(t) + 1

    def log_increment(self, state: ParticleState, t, t_new) -> tuple[np.ndarray, ParticleState]:
        """``log W = log Phi(y_t m / s)`` per particle (``log_ndtr``: no underflow); the state is unchanged."""
        t = _check_step(t, t_new, self.dim)
        mean, sd = self.conditional(state.x, t)
        return log_ndtr(self.y[t] * mean / sd), state

    def augment(self, rng: np.random.Generator, state: ParticleState, t, t_new) -> ParticleState:
        """Draw the new latent ``z_t ~ N(m, s^2)`` restricted to ``y_t z_t > 0`` (exact, all particles at once)."""
        t = _check_step(t, t_new, self.dim)
        mean, sd = self.conditional(state.x, t)
        x = state.x.copy()
        x[:, t] = self.y[t] * positive_truncated_normal(rng, self.y[t] * mean, sd)
        return self._state(x)

    def move(self, rng: np.random.Generator, state: ParticleState, t, params=None) -> tuple[ParticleState, KernelInfo]:
        """One systematic-scan Gibbs sweep over the ``t`` included sites, each drawn from its exact
        truncated-normal full conditional under ``S_t = C_[t]^{-1}`` (:meth:`ProbitGibbs.sweep
        <pmz.gp.probit_gibbs.ProbitGibbs.sweep>`)."""
        t = _stage(t)
        S = self.precision(t) if t > 0 else np.zeros((0, 0))
        x, info = self.kernel.sweep(rng, state.x, self.y, S)
        return self._state(x), info

    def fresh(self, rng: np.random.Generator, n: int, t) -> ParticleState:
        """Independent starting points in the support of ``p_t``: ``z_i = y_i |N(0, C_ii)|`` for the included
        points (not draws of ``p_t``; the runner burns them in with :meth:`move`)."""
        t = _stage(t)
        x = np.zeros((int(n), self.dim))
        x[:, :t] = self.y[:t] * np.abs(rng.standard_normal((int(n), t))) * np.sqrt(np.diag(self.C)[:t])
        return self._state(x)

    def to_data_order(self, x: np.ndarray) -> np.ndarray:
        """Particles with columns in the original order of the data (column ``order[k]`` = column ``k``)."""
        out = np.empty_like(x)
        out[:, self.order] = x
        return out

    def describe(self) -> dict:
        return {
            "sequence": self.name,
            "n_points": self.dim,
            "order_rule": self._order_rule,
            "order_seed": self._seed,
            "order": self.order.tolist(),
            "noise_variance": 1.0,
            "kernel": self.kernel.name,
        }


def _grow_precision(S: np.ndarray, a: np.ndarray, var: float) -> np.ndarray:
    """Block inverse of ``[[C, c], [c', d]]`` from ``S = C^{-1}``, ``a = S c`` and ``var = d - c'a`` (Schur)."""
    t = S.shape[0]
    out = np.empty((t + 1, t + 1))
    out[:t, :t] = S + np.outer(a, a) / var
    out[:t, t] = out[t, :t] = -a / var
    out[t, t] = 1.0 / var
    return out


def _stage(t) -> int:
    stage = int(round(float(t)))
    if abs(float(t) - stage) > 1e-9:
        raise ValueError(f"positions of the probit GP sequence are whole numbers of points, got {t}")
    return stage


def _check_step(t, t_new, n: int) -> int:
    t, t_new = _stage(t), _stage(t_new)
    if t_new != t + 1 or not 0 <= t < n:
        raise ValueError(f"the probit GP sequence adds one point per stage (0 <= t < {n}), got {t} -> {t_new}")
    return t
