"""The log-likelihood gradient of a bipartite Boltzmann machine, written once for RBMs and DBMs.

A binary RBM with "visible" units ``x`` and hidden units ``h`` has ``-E(x, h) = a'x + b'h + x'W h``. A DBM with
layers ``v - h1 - h2`` is such a machine with ``x = (v, h2)``, ``h = h1``, ``W = [W1; W2']``, ``a = (a_v, b2)``,
``b = b1`` (:meth:`pmz.boltzmann.dbm.DBM.as_rbm`), so both share one gradient. For data ``v`` with latent units
``z`` (the RBM's ``h``; the DBM's ``h1, h2``),

    d/dtheta mean_n log p(v_n) = E_{data, q(z|v)}[T] - E_model[T],      T = (x h', x, h)

(``dE/dtheta``: the sufficient statistics). The **positive phase** ``E_data`` uses the exact posterior of an RBM's
hidden units (``E[h | v] = sigmoid(b + v W)``) or the mean-field posterior ``q(h1, h2 | v)`` of a DBM (then the
update climbs the variational lower bound; Salakhutdinov & Hinton 2009), under which ``E_q[x h'] = (v, mu2)' mu1``
because ``q`` factorises. The **negative phase** ``E_model`` averages ``x h`` over model samples ``x`` with the
hidden layer Rao-Blackwellised, ``h -> sigmoid(b + x W)`` (an unbiased, lower-variance estimate of the same
moments). :func:`moments` computes ``(x'h / n, mean x, mean h)`` of a batch and :func:`gradient` their difference.

Reference: Salakhutdinov, "Learning deep Boltzmann machines using adaptive MCMC", ICML 2010, eq. (3)-(4).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Bipartite", "sigmoid", "moments", "gradient", "hidden_means"]


def sigmoid(x):
    """``1 / (1 + exp(-x))`` as ``(1 + tanh(x / 2)) / 2`` (no overflow)."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@dataclass(frozen=True)
class Bipartite:
    """Arrays shaped like a bipartite machine's parameters: weights ``W (nx, nh)``, "visible" biases ``a (nx,)``,
    hidden biases ``b (nh,)``. Used for the parameters, their gradients, velocities and fast weights."""

    W: np.ndarray
    a: np.ndarray
    b: np.ndarray

    def __add__(self, other: "Bipartite") -> "Bipartite":
        return Bipartite(self.W + other.W, self.a + other.a, self.b + other.b)

    def zeros_like(self) -> "Bipartite":
        return Bipartite(np.zeros_like(self.W), np.zeros_like(self.a), np.zeros_like(self.b))

    def copy(self) -> "Bipartite":
        return Bipartite(self.W.copy(), self.a.copy(), self.b.copy())


def hidden_means(params: Bipartite, X) -> np.ndarray:
    """``E[h | x] = sigmoid(b + x W)`` for a batch ``X (n, nx)``."""
    return sigmoid(params.b + X @ params.W)


def moments(X, H) -> Bipartite:
    """``(X'H / n, mean X, mean H)`` of a batch of states ``X (n, nx)`` and hidden values ``H (n, nh)`` (0/1 or
    means)."""
    return Bipartite(X.T @ H / X.shape[0], X.mean(axis=0), H.mean(axis=0))


def gradient(positive: Bipartite, negative: Bipartite) -> Bipartite:
    """``positive - negative``: the data moments minus the model moments (the gradient of the mean log-likelihood,
    or of the mean-field bound, with respect to ``(W, a, b)``)."""
    return Bipartite(positive.W - negative.W, positive.a - negative.a, positive.b - negative.b)
