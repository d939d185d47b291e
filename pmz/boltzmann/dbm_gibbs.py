"""Block Gibbs by layer for a binary deep Boltzmann machine (DBM) with two hidden layers.

A DBM with layers ``v - h1 - h2`` (Salakhutdinov & Hinton 2009) has

    -E(v, h1, h2) = a'v + b1'h1 + b2'h2 + v'W1 h1 + h1'W2 h2,        W1 (nv, n1), W2 (n1, n2).

The graph is bipartite between the odd layer ``h1`` and the even layers ``(v, h2)``, so each group's units are
conditionally independent given the other group:

    h1 | v, h2   ~ Bern(sigmoid(beta (b1 + v W1 + h2 W2'))),
    v  | h1      ~ Bern(sigmoid((1 - beta) l0 + beta (a + h1 W1'))),
    h2 | h1      ~ Bern(sigmoid(beta (b2 + h1 W2))),

for the geometric path ``f0^(1-beta) f1^beta`` from the base ``f0 = Bern(p0)(v) x Bern(1/2)(h1, h2)``
(``l0 = logit p0``; with ``p0 = 1/2`` this is plain tempering ``exp(-beta E)``) to ``f1 = exp(-E)``. One sweep
is the odd half-step then the even half-step, each one vectorised draw over all chains: an exact Gibbs sampler
for ``f_beta(v, h1, h2)`` (Salakhutdinov 2010, "Learning deep Boltzmann machines using adaptive MCMC": the
"plain Gibbs" transition of the slow chains in CAST and of persistent-chain learning, SAP).

:class:`DBMState` holds the three layers of a batch of chains; :class:`DBMLayerGibbs` is both a function
``sweep(rng, state, beta=1.0) -> state`` on :class:`DBMState` (for samplers and learning) and a pmz kernel on
flat states ``(v, h1, h2)`` (``step(rng, state, family, beta, params)``, for annealing in the DBM's joint space).
It is the block Gibbs sampler of the DBM's bipartite RBM view (:class:`pmz.boltzmann.rbm_gibbs.RBMBlockGibbs` with
visible units ``(v, h2)`` and hidden units ``h1``), written on the DBM's own layer order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.base import Kernel, KernelInfo, KernelParams, ParticleState
from .rbm_gibbs import _column, _logistic_noise

__all__ = ["DBMLayerGibbs", "DBMState"]


@dataclass(frozen=True)
class DBMState:
    """The three layers of a batch of DBM chains (float64 0/1 arrays).

    Attributes
    ----------
    v : ndarray (n, nv)
    h1 : ndarray (n, n1)
    h2 : ndarray (n, n2)

    >>> s = DBMState.from_flat(np.arange(12.0).reshape(2, 6), 3, 2)
    >>> s.h2.tolist(), bool(np.all(s.x == np.arange(12.0).reshape(2, 6)))
    ([[5.0], [11.0]], True)
    """

    v: np.ndarray
    h1: np.ndarray
    h2: np.ndarray

    @property
    def n(self) -> int:
        return self.v.shape[0]

    @property
    def x(self) -> np.ndarray:
        """The flat states ``(n, nv + n1 + n2)``, layers in the order ``v, h1, h2``."""
        return np.concatenate([self.v, self.h1, self.h2], axis=1)

    @staticmethod
    def from_flat(x, n_visible: int, n_hidden1: int) -> "DBMState":
        """Split flat states ``(n, nv + n1 + n2)`` (order ``v, h1, h2``) into the three layers."""
        x = np.asarray(x, dtype=np.float64)
        nv, n1 = int(n_visible), int(n_hidden1)
        return DBMState(x[:, :nv], x[:, nv : nv + n1], x[:, nv + n1 :])


class DBMLayerGibbs(Kernel):
    r"""Block Gibbs by layer for a two-hidden-layer DBM: ``h1 | (v, h2)``, then ``(v, h2) | h1``.

    .. math::

        h_1 \sim \mathrm{Bern}\big(\sigma(\beta (b_1 + v W_1 + h_2 W_2^\top))\big), \qquad
        (v, h_2) \sim \mathrm{Bern}\big(\sigma((1-\beta) (l_0, 0) + \beta ((a, b_2) + h_1 [W_1; W_2^\top]^\top))\big)

    Exact for ``f_beta = f0^(1-beta) f1^beta`` with ``f1 = exp(-E)`` and ``f0 = Bern(p0)(v) 2^-(n1 + n2)``;
    ``beta = 1`` is the DBM itself. ``beta`` is a scalar or one value per chain ``(n,)``.
    Cost per sweep: two ``(n, nv + n2) x (nv + n2, n1)`` products and two draws of uniforms.

    Parameters
    ----------
    W1, W2, a, b1, b2 : arrays ``(nv, n1)``, ``(n1, n2)``, ``(nv,)``, ``(n1,)``, ``(n2,)``
    base_means : array ``(nv,)``, optional
        Means of the Bernoulli base on ``v`` (default 1/2: then ``f_beta ∝ exp(-beta E)``).
    n_sweeps : int
        Sweeps per :meth:`step` call.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> W1, W2 = rng.standard_normal((4, 3)), rng.standard_normal((3, 2))
    >>> gibbs = DBMLayerGibbs(W1, W2, np.zeros(4), np.zeros(3), np.zeros(2))
    >>> state = DBMState(np.zeros((5, 4)), np.zeros((5, 3)), np.zeros((5, 2)))
    >>> new = gibbs.sweep(rng, state)
    >>> new.v.shape, new.h1.shape, new.h2.shape
    ((5, 4), (5, 3), (5, 2))
    """

    name = "dbm_layer_gibbs"
    needs_grad = False
    tunable = False
    target_acceptance = 1.0

    def __init__(self, W1, W2, a, b1, b2, base_means=None, *, n_sweeps: int = 1):
        self.W1 = np.asarray(W1, dtype=np.float64)
        self.W2 = np.asarray(W2, dtype=np.float64)
        self.a, self.b1, self.b2 = (np.asarray(x, dtype=np.float64).ravel() for x in (a, b1, b2))
        if self.W1.ndim != 2 or self.W2.ndim != 2 or self.W2.shape[0] != self.W1.shape[1]:
            raise ValueError(f"need W1 (nv, n1) and W2 (n1, n2), got {self.W1.shape} and {self.W2.shape}")
        nv, n1 = self.W1.shape
        n2 = self.W2.shape[1]
        if self.a.shape != (nv,) or self.b1.shape != (n1,) or self.b2.shape != (n2,):
            raise ValueError(f"need a ({nv},), b1 ({n1},), b2 ({n2},)")
        p0 = np.full(nv, 0.5) if base_means is None else np.asarray(base_means, dtype=np.float64).ravel()
        if p0.shape != (nv,) or not np.all((p0 > 0) & (p0 < 1)):
            raise ValueError(f"base_means must have {nv} entries strictly between 0 and 1")
        self.n_visible, self.n_hidden1, self.n_hidden2 = nv, n1, n2
        self.n_sweeps = int(n_sweeps)
        # the even layers (v, h2) as one block: the bipartite RBM view's visible units
        self._W_even = np.concatenate([self.W1, self.W2.T], axis=0)  # (nv + n2, n1)
        self._c_even = np.concatenate([self.a, self.b2])
        self._base_logit_even = np.concatenate([np.log(p0) - np.log1p(-p0), np.zeros(n2)])

    @property
    def dim(self) -> int:
        return self.n_visible + self.n_hidden1 + self.n_hidden2

    def sweep(self, rng, state: DBMState, beta=1.0) -> DBMState:
        """One sweep from ``state``: the odd layer ``h1 | (v, h2)``, then the even layers ``(v, h2) | h1``."""
        n = state.n
        bcol = _column(beta, n)
        g1 = self.b1 + state.v @ self.W1 + state.h2 @ self.W2.T
        h1 = (_logistic_noise(rng, g1.shape) < bcol * g1).astype(np.float64)
        eta = (1.0 - bcol) * self._base_logit_even + bcol * (self._c_even + h1 @ self._W_even.T)
        even = (_logistic_noise(rng, eta.shape) < eta).astype(np.float64)
        return DBMState(even[:, : self.n_visible], h1, even[:, self.n_visible :])

    def default_params(self, dim):
        return KernelParams(step_size=1.0, scale=np.ones(dim), n_leapfrog=0)

    def step(self, rng, state, family, beta, params=None):
        x = np.asarray(state.x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.dim:
            raise ValueError(f"{self.name} expects states of shape (n, {self.dim}), got {x.shape}")
        layers = DBMState.from_flat(x, self.n_visible, self.n_hidden1)
        for _ in range(self.n_sweeps):
            layers = self.sweep(rng, layers, beta)
        x = layers.x
        n = x.shape[0]
        return ParticleState(x, family.parts(x)), KernelInfo(np.ones(n), np.ones(n, dtype=bool))
