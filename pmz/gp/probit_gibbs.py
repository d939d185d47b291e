"""Exact Gibbs sweeps for a Gaussian restricted to an orthant: the latents of probit GP classification (ARM eq 10).

In the z-representation of probit GP classification (:mod:`pmz.gp.probit_sequence`) the included latents
``z = z_[t]`` follow ``N(0, C_[t])`` restricted to ``y_i z_i > 0``. With the precision ``S = C_[t]^{-1}`` the full
conditional of one site is a truncated normal,

    z_i | z_-i ~ N(z_i - (S z)_i / S_ii, 1 / S_ii) restricted to y_i z_i > 0,

drawn exactly by :func:`positive_truncated_normal`. :meth:`ProbitGibbs.sweep` visits the sites in order and
updates ``(S z)`` of the later sites after each one: O(R t) per site, O(R t^2) per sweep for R particles. The
paper updated each site with a two-uniform slice sampler; exact conditionals give a Gibbs kernel for the same
target that mixes at least as fast per sweep.

Reference: Fraccaro, Paquet & Winther, "An adaptive resample-move algorithm for estimating normalizing
constants" (ARM), eq 10 and Appendix A; docs/methods.md, section 10.
"""

from __future__ import annotations

import numpy as np
from scipy.special import log_ndtr, ndtri_exp

from ..kernels.base import Kernel, KernelInfo, KernelParams

__all__ = ["ProbitGibbs", "positive_truncated_normal"]


def positive_truncated_normal(rng: np.random.Generator, mean, sd) -> np.ndarray:
    """Exact draws of ``N(mean, sd^2)`` restricted to ``(0, inf)``, elementwise (inverse CDF in log space).

    With ``alpha = -mean / sd`` and ``E ~ Exp(1)`` (so that ``exp(-E)`` is uniform),

        u = mean + sd w,    w = -Phi^{-1}(exp(log Phi(mean / sd) - E))

    is the standard normal ``w`` conditioned on ``w > alpha``: ``-w`` is drawn below ``-alpha`` by inverting its
    CDF scaled by ``Phi(-alpha)``. ``log Phi`` (``log_ndtr``) and ``Phi^{-1}(exp(.))`` (``ndtri_exp``) are accurate
    in both tails, and drawing ``E`` instead of a uniform keeps full precision near the truncation point, so the
    draws are exact to rounding also for ``mean / sd`` of -200 or +40 (the result is floored at the smallest
    positive float to keep the sign strict).

    >>> u = positive_truncated_normal(np.random.default_rng(0), np.array([-30.0, 0.0, 30.0]), 1.0)
    >>> bool(np.all(u > 0)), bool(u[0] < 0.5), bool(25 < u[2] < 35)
    (True, True, True)
    """
    mean = np.asarray(mean, dtype=np.float64)
    sd = np.asarray(sd, dtype=np.float64)
    shape = np.broadcast_shapes(mean.shape, sd.shape)
    log_mass = log_ndtr(mean / sd)
    w = -ndtri_exp(log_mass - rng.standard_exponential(shape))
    return np.maximum(mean + sd * w, np.finfo(np.float64).tiny)


class ProbitGibbs(Kernel):
    """The Gibbs sweep of :class:`~pmz.gp.probit_sequence.ProbitGPSequence` (exact truncated-normal site
    conditionals; no step size).

    :meth:`sweep` needs the sequence's growing ``C_[t]^{-1}``, so runners call it through
    ``ProbitGPSequence.move(rng, state, t, params)``; to them this object describes the kernel: untunable, no
    gradients, acceptance 1.
    """

    name = "probit_gibbs"
    needs_grad = False
    target_acceptance = 1.0
    tunable = False

    def default_params(self, dim: int) -> KernelParams:
        return KernelParams(1.0, np.ones(dim), 0)

    def step(self, rng, state, family, beta, params):
        raise NotImplementedError("the probit Gibbs sweep acts through ProbitGPSequence.move(rng, state, t, params)")

    @staticmethod
    def sweep(rng, x, y, S) -> tuple[np.ndarray, KernelInfo]:
        """One systematic-scan sweep over the first ``t = len(S)`` sites of every particle (see module docstring).

        ``x (R, n)`` holds the latents (columns ``< t`` included; the others are returned unchanged), ``y`` the
        labels in {-1, +1} in the same column order and ``S = C_[t]^{-1}``. Returns a new ``x`` and the info of an
        always-accepted move.
        """
        x = x.copy()
        t = S.shape[0]
        if t > 0:
            z = x[:, :t]
            Sz = z @ S
            for i in range(t):
                sd = 1.0 / np.sqrt(S[i, i])
                mean = z[:, i] - Sz[:, i] / S[i, i]
                new = y[i] * positive_truncated_normal(rng, y[i] * mean, sd)
                Sz[:, i + 1 :] += np.outer(new - z[:, i], S[i, i + 1 :])  # only later sites still need S z
                z[:, i] = new
        ones = np.ones(x.shape[0])
        return x, KernelInfo(acceptance=ones, accepted=ones.astype(bool))
