"""Exact Gibbs-type kernels for binary restricted Boltzmann machines (RBMs) on the geometric path.

An RBM with visible ``v in {0,1}^nv``, hidden ``h in {0,1}^nh``, weights ``W (nv, nh)`` and biases ``a``, ``b``
has ``p(v, h) ∝ exp(a'v + b'h + v'W h)``. pmz anneals from a base ``f0`` of independent Bernoulli sites with
means ``p0`` along the geometric path ``log f_beta = (1 - beta) log f0 + beta log f1`` (docs/methods.md, section 0),
in one of two state spaces:

* **visible space** (hidden units summed out): ``log f1(v) = a'v + sum_h softplus(g_h)``, ``g = b + v W``
  (minus the free energy). :class:`RBMGibbs` is a site-by-site heat bath on ``v``; :class:`RBMBlockMH` uses
  the alternating ``h | v``, ``v | h`` draws of the *jointly* tempered RBM as a Metropolis-Hastings proposal
  with an exact acceptance ratio. Both leave ``f_beta(v)`` invariant.
* **joint space** ``x = (v, h)``, base ``Bernoulli(p0) x uniform(h)``: there the geometric path *is* the joint
  tempering of Salakhutdinov & Murray (2008), and :class:`RBMBlockGibbs` (draw ``h | v``, then ``v | h``) is an
  exact Gibbs sampler for it.

The trade-off: in visible space every AIS weight increment ``(b_k - b_{k-1}) U(v)`` has the hidden units summed
out (Rao-Blackwellised, lower variance) but a heat-bath sweep costs ``nv`` small updates; in joint space a move
is two matrix products but ``U(v, h)`` fluctuates with ``h`` as well.

All kernels act on a whole batch ``(n, dim)`` of float64 0/1 states, accept a scalar ``beta`` or one value
per particle ``(n,)``, and return the new states with ``family.parts`` evaluated in one batched call.
"""

from __future__ import annotations

import numpy as np

from ..kernels.base import Kernel, KernelInfo, KernelParams, ParticleState

__all__ = ["RBMBlockGibbs", "RBMBlockMH", "RBMGibbs", "softplus"]


def softplus(x):
    """``log(1 + exp(x))``, elementwise, without overflow.

    ``log1p(exp(x))`` is exact to rounding for ``x <= 36`` and about three times faster than
    ``np.logaddexp(0, x)``; if any entry exceeds 36 the stable form ``max(x, 0) + log1p(exp(-|x|))`` is used.

    >>> softplus(np.array([-800.0, 0.0, 800.0])).tolist() == [0.0, float(np.log(2.0)), 800.0]
    True
    """
    x = np.asarray(x, dtype=np.float64)
    if x.size and np.max(x) > 36.0:
        return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))
    return np.log1p(np.exp(x))


def _logistic_noise(rng, shape):
    """Draws ``L = log(u / (1 - u))``, u uniform: ``L < eta`` has probability ``sigmoid(eta)``."""
    u = rng.uniform(size=shape)
    return np.log(u) - np.log1p(-u)


def _column(beta, n):
    """``beta`` as a scalar or an ``(n, 1)`` column, for broadcasting against ``(n, m)`` arrays."""
    b = np.asarray(beta, dtype=np.float64)
    if b.ndim == 0:
        return b
    if b.shape != (n,):
        raise ValueError(f"beta must be a scalar or have shape ({n},), got {b.shape}")
    return b[:, None]


class _RBMKernel(Kernel):
    """Shared parameter handling: ``W (nv, nh)``, ``a (nv,)``, ``b (nh,)``, visible base means ``p0 (nv,)``."""

    needs_grad = False
    tunable = False
    target_acceptance = 1.0

    def __init__(self, W, a, b, base_means):
        self.W = np.asarray(W, dtype=np.float64)
        self.a = np.asarray(a, dtype=np.float64).ravel()
        self.b = np.asarray(b, dtype=np.float64).ravel()
        p0 = np.asarray(base_means, dtype=np.float64).ravel()
        nv, nh = self.W.shape if self.W.ndim == 2 else (-1, -1)
        if self.W.ndim != 2 or self.a.shape != (nv,) or self.b.shape != (nh,) or p0.shape != (nv,):
            raise ValueError("need W (nv, nh), a (nv,), b (nh,) and base_means (nv,)")
        if not np.all((p0 > 0) & (p0 < 1)):
            raise ValueError("base_means must lie strictly between 0 and 1 (use BernoulliBase(...).means)")
        self.n_visible, self.n_hidden = nv, nh
        self.base_logit = np.log(p0) - np.log1p(-p0)

    def default_params(self, dim):
        return KernelParams(step_size=1.0, scale=np.ones(dim), n_leapfrog=0)

    def _check(self, x, dim):
        if x.ndim != 2 or x.shape[1] != dim:
            raise ValueError(f"{self.name} expects states of shape (n, {dim}), got {x.shape}")


class RBMGibbs(_RBMKernel):
    r"""Site-by-site heat bath on the visible units, hidden units summed out (exact for ``f_beta(v)``).

    With ``g = b + v W`` the hidden pre-activations of the current state and ``l0_i = logit(p0_i)``, the
    conditional log-odds of ``v_i = 1`` against ``v_i = 0`` under ``f_beta = f0^(1-beta) f1^beta`` is

    .. math::

        \eta_i = (1-\beta)\, l_{0i} + \beta \Big(a_i + \sum_h \big[\mathrm{sp}(g^{(1)}_h) -
        \mathrm{sp}(g^{(0)}_h)\big]\Big), \qquad g^{(1)} = g + (1 - v_i) W_i, \quad g^{(0)} = g - v_i W_i,

    ``sp`` = softplus. Only the configuration with ``v_i`` flipped is new (the current one's softplus values
    are cached), so each unit costs one softplus of ``(n, nh)``; ``v_i`` is drawn from
    ``Bernoulli(sigmoid(eta_i))`` and ``g`` and the cache are updated in place for the particles that flipped.
    A sweep visits all ``nv`` units, in a fresh random order each sweep (``order="random"``, the same order
    for all particles) or ``0..nv-1`` (``order="fixed"``): ``O(n nv nh)``, like one block-Gibbs step.

    Parameters
    ----------
    W, a, b : arrays ``(nv, nh)``, ``(nv,)``, ``(nh,)``
        RBM weights, visible and hidden biases.
    base_means : array ``(nv,)``
        Means of the Bernoulli base f0 (take them from the model's ``BernoulliBase.means``, which are clipped).
    order : {"random", "fixed"}
    n_sweeps : int
        Sweeps per ``step`` call.

    Examples
    --------
    >>> import numpy as np
    >>> from pmz.families.energy import EnergyFamily
    >>> from pmz.model.energy_model import BernoulliBase, EnergyModel
    >>> W, a, b = np.array([[1.0, -1.0], [0.5, 2.0]]), np.zeros(2), np.zeros(2)
    >>> log_f1 = lambda V: V @ a + softplus(V @ W + b).sum(axis=1)
    >>> family = EnergyFamily(EnergyModel(log_f1, BernoulliBase([0.3, 0.6])))
    >>> kernel = RBMGibbs(W, a, b, [0.3, 0.6])
    >>> state = kernel.init_state(family, np.zeros((5, 2)))
    >>> new, info = kernel.step(np.random.default_rng(0), state, family, 0.5, kernel.default_params(2))
    >>> new.x.shape, bool(np.all((new.x == 0) | (new.x == 1)))
    ((5, 2), True)
    """

    name = "rbm_gibbs"

    def __init__(self, W, a, b, base_means, *, order: str = "random", n_sweeps: int = 1):
        super().__init__(W, a, b, base_means)
        if order not in ("random", "fixed"):
            raise ValueError(f"order must be 'random' or 'fixed', got {order!r}")
        self.order = order
        self.n_sweeps = int(n_sweeps)

    def sweep(self, rng, v, beta, units=None):
        """One heat-bath sweep of the visible states ``v (n, nv)`` (modified in place and returned).

        ``units``: visit only these visible units (default: all). Units outside it keep their values; with
        those values 0 and ``beta = 1`` this is the heat bath of the RBM restricted to ``units`` (the unit-by-unit
        SMC sequence, :mod:`pmz.boltzmann.unit_sequence`).
        """
        n = v.shape[0]
        bcol = _column(beta, n)
        brow = bcol if bcol.ndim == 0 else bcol[:, 0]
        g = self.b + v @ self.W
        sp = softplus(g)
        noise = _logistic_noise(rng, (n, self.n_visible))
        units = np.arange(self.n_visible) if units is None else np.asarray(units, dtype=np.int64)
        for i in rng.permutation(units) if self.order == "random" else units:
            w = self.W[i]
            on = v[:, i]
            sign = 1.0 - 2.0 * on  # +1: the flip switches v_i on, -1: off
            g_flip = g + sign[:, None] * w
            sp_flip = softplus(g_flip)
            # sum_h sp(g^(1)) - sp(g^(0)) = sign * (flipped - current)
            delta = sign * np.sum(sp_flip - sp, axis=1)
            eta = (1.0 - brow) * self.base_logit[i] + brow * (self.a[i] + delta)
            new = (noise[:, i] < eta).astype(np.float64)
            flip = (new != on)[:, None]
            np.copyto(g, g_flip, where=flip)
            np.copyto(sp, sp_flip, where=flip)
            v[:, i] = new
        return v

    def step(self, rng, state, family, beta, params=None):
        v = np.array(state.x, dtype=np.float64)
        self._check(v, self.n_visible)
        for _ in range(self.n_sweeps):
            v = self.sweep(rng, v, beta)
        n = v.shape[0]
        return ParticleState(v, family.parts(v)), KernelInfo(np.ones(n), np.ones(n, dtype=bool))


class RBMBlockMH(_RBMKernel):
    r"""Block Gibbs of the jointly tempered RBM as a Metropolis-Hastings proposal for ``f_beta(v)``.

    Proposal (two block draws, hidden units first):

    .. math::

        h \sim \mathrm{Bern}\big(\sigma(\beta g)\big),\quad g = b + vW; \qquad
        v' \sim \mathrm{Bern}\big(\sigma((1-\beta)\, l_0 + \beta (a + W h))\big).

    Its marginal kernel ``v -> v'`` is reversible with respect to the visible marginal of the *joint*
    tempering, ``q_beta(v) ∝ f0(v)^(1-beta) exp(beta a'v) prod_h (1 + exp(beta g_h))`` (Salakhutdinov &
    Murray 2008), which differs from our geometric ``f_beta(v) ∝ f0^(1-beta) f1^beta``. Metropolis-Hastings
    with a ``q_beta``-reversible proposal accepts with ``min(1, [f_beta(v') q_beta(v)] / [f_beta(v)
    q_beta(v')])``, that is ``log alpha = phi(v') - phi(v)`` with

    .. math::

        \phi(v) = \sum_h \big[\beta\, \mathrm{sp}(g_h) - \mathrm{sp}(\beta g_h)\big],

    exact and cheap (the proposal density itself, a sum over ``2^nh`` hidden states, is never needed). At
    ``beta = 0`` and ``beta = 1`` every proposal is accepted; in between the acceptance rate falls with the
    number of hidden units whose input ``g_h`` is near 0. Cost: three ``(n, nv) x (nv, nh)`` products per step.

    Parameters
    ----------
    W, a, b, base_means : as in :class:`RBMGibbs`
    n_sweeps : int
        Proposals per ``step`` call.
    """

    name = "rbm_block_mh"
    target_acceptance = 0.5

    def __init__(self, W, a, b, base_means, *, n_sweeps: int = 1):
        super().__init__(W, a, b, base_means)
        self.n_sweeps = int(n_sweeps)

    def _phi(self, g, bcol):
        return np.sum(bcol * softplus(g) - softplus(bcol * g), axis=1)

    def move(self, rng, v, beta):
        """One proposal and accept/reject for ``v (n, nv)``; returns ``(v_new, acceptance, accepted)``."""
        n = v.shape[0]
        bcol = _column(beta, n)
        g = self.b + v @ self.W
        h = (_logistic_noise(rng, g.shape) < bcol * g).astype(np.float64)
        eta = (1.0 - bcol) * self.base_logit + bcol * (self.a + h @ self.W.T)
        v_prop = (_logistic_noise(rng, v.shape) < eta).astype(np.float64)
        g_prop = self.b + v_prop @ self.W
        log_ratio = self._phi(g_prop, bcol) - self._phi(g, bcol)
        acceptance = np.exp(np.minimum(log_ratio, 0.0))
        accepted = np.log(rng.uniform(size=n)) < log_ratio
        return np.where(accepted[:, None], v_prop, v), acceptance, accepted

    def step(self, rng, state, family, beta, params=None):
        v = np.array(state.x, dtype=np.float64)
        self._check(v, self.n_visible)
        acc_sum = np.zeros(v.shape[0])
        for _ in range(self.n_sweeps):
            v, acceptance, accepted = self.move(rng, v, beta)
            acc_sum += acceptance
        return ParticleState(v, family.parts(v)), KernelInfo(acc_sum / max(self.n_sweeps, 1), accepted)


class RBMBlockGibbs(_RBMKernel):
    r"""Alternating block Gibbs ``h | v``, then ``v | h``, on the joint state ``x = (v, h)`` (exact there).

    With the joint base ``f0(v, h) = Bern(v; p0) 2^(-nh)`` and ``log f1(v, h) = a'v + b'h + v'W h``, the
    geometric path ``f0^(1-beta) f1^beta`` has conditionals that factorise over units:

    .. math::

        h \mid v \sim \mathrm{Bern}\big(\sigma(\beta (b + vW))\big), \qquad
        v \mid h \sim \mathrm{Bern}\big(\sigma((1-\beta)\, l_0 + \beta (a + W h))\big),

    so each half-step is an exact Gibbs update and the pair leaves ``f_beta(v, h)`` invariant. This is the
    annealing path and transition operator of Salakhutdinov & Murray (2008), but here the AIS weights use
    ``U(v, h)`` of the joint state rather than the hidden-summed ratio. States are ``(n, nv + nh)``, visible
    units first.

    Parameters
    ----------
    W, a, b, base_means : as in :class:`RBMGibbs` (``base_means`` of the visible units only)
    n_sweeps : int
        ``h | v, v | h`` pairs per ``step`` call.
    """

    name = "rbm_block_gibbs"

    def __init__(self, W, a, b, base_means, *, n_sweeps: int = 1):
        super().__init__(W, a, b, base_means)
        self.n_sweeps = int(n_sweeps)

    def sweep(self, rng, v, beta):
        """One ``h | v``, ``v | h`` pair from visible states ``v (n, nv)``; returns ``(v_new, h_new)``."""
        bcol = _column(beta, v.shape[0])
        g = self.b + v @ self.W
        h = (_logistic_noise(rng, g.shape) < bcol * g).astype(np.float64)
        eta = (1.0 - bcol) * self.base_logit + bcol * (self.a + h @ self.W.T)
        v = (_logistic_noise(rng, v.shape) < eta).astype(np.float64)
        return v, h

    def step(self, rng, state, family, beta, params=None):
        x = np.asarray(state.x, dtype=np.float64)
        self._check(x, self.n_visible + self.n_hidden)
        v, h = x[:, : self.n_visible], x[:, self.n_visible :]
        for _ in range(self.n_sweeps):
            v, h = self.sweep(rng, v, beta)
        x = np.concatenate([v, h], axis=1)
        n = x.shape[0]
        return ParticleState(x, family.parts(x)), KernelInfo(np.ones(n), np.ones(n, dtype=bool))
