"""The unit-by-unit sequence of a binary RBM, hidden units summed out (ARM section 5.1, eq 13-14).

For an RBM ``p(v, h) ∝ exp(a'v + b'h + v'W h)`` and an order of the visible units, position ``n`` is the RBM on
the first ``n`` units of the order (the others removed), with the hidden units summed out:

    f_n(v_[n]) = exp(a_[n]' v_[n]) prod_h (1 + exp(b_h + W_[n],h' v_[n])),      f_0 = prod_h (1 + exp(b_h)),

so ``log Z_0 = sum_h softplus(b_h)`` and ``Z_nv`` is the RBM's partition function. Adding unit ``u`` with
``g = b + v_[n] W_[n]`` (the hidden pre-activations of the current units), summing ``v_u`` out gives the
incremental weight (eq 14)

    W(v_[n]) = sum_{v_u in {0,1}} exp(a_u v_u) prod_h (1 + exp(g_h + W_uh v_u)) / (1 + exp(g_h))
             = 1 + exp(eta_u),      eta_u = a_u + sum_h [softplus(g_h + W_uh) - softplus(g_h)],

and the augment step draws ``v_u ~ Bernoulli(sigmoid(eta_u))``, its exact conditional. Moves are heat-bath
sweeps over the included units (:meth:`pmz.boltzmann.rbm_gibbs.RBMGibbs.sweep` at ``beta = 1`` with the other units at
0). ARM adds the most variable units first (``order="variance"``: the base-rate variances ``p0 (1 - p0)`` of
the training data, largest first).

Particles are ``(R, nv)`` 0/1 arrays; the units not yet included hold 0.
"""

from __future__ import annotations

import numpy as np

from ..model.parts import LogDensityParts
from ..kernels.base import KernelInfo, ParticleState
from .rbm_gibbs import RBMGibbs, softplus
from ..sequences.base import SMCSequence, resolve_order

__all__ = ["RBMUnitSequence", "UNIT_ORDERS"]

UNIT_ORDERS = ("variance", "given", "random")


class RBMUnitSequence(SMCSequence):
    """SMC over an RBM's visible units, one unit per stage.

    Parameters
    ----------
    W, a, b : arrays ``(nv, nh)``, ``(nv,)``, ``(nh,)``
    base_means : array ``(nv,)``
        Visible marginals of the data (the base-rate model), for ``order="variance"`` and for fresh
        particles (ARM-reseed).
    order : {"variance", "given", "random"} or array
        Order in which the units are added.
    n_sweeps : int
        Heat-bath sweeps per :meth:`move`.
    rng : numpy.random.Generator, optional
        For ``order="random"``.
    """

    name = "units"
    label = "n_units"

    def __init__(self, W, a, b, base_means, *, order="variance", n_sweeps: int = 1, rng=None):
        self.W = np.asarray(W, dtype=np.float64)
        self.a = np.asarray(a, dtype=np.float64).ravel()
        self.b = np.asarray(b, dtype=np.float64).ravel()
        p0 = np.clip(np.asarray(base_means, dtype=np.float64).ravel(), 1e-3, 1 - 1e-3)
        nv = self.W.shape[0]
        self.kernel = RBMGibbs(self.W, self.a, self.b, p0, order="random", n_sweeps=1)
        self.kernel.name = "rbm_gibbs_units"
        self.base_means = p0
        self.dim = nv
        self.log_z0 = float(np.sum(softplus(self.b)))
        self.t_start, self.t_end = 0.0, float(nv)
        self.n_sweeps = int(n_sweeps)
        most_variable_first = np.argsort(-(p0 * (1 - p0)), kind="stable")
        self.order = resolve_order(order, nv, rng, named={"variance": most_variable_first}, what="unit_order")

    @classmethod
    def from_energy_model(cls, model, **kwargs) -> "RBMUnitSequence":
        """The sequence of an RBM energy model built by :func:`pmz.boltzmann.rbm.energy_model` (visible space)."""
        rbm = getattr(model, "rbm", None)
        if rbm is None:
            raise ValueError(
                "pmz: sequence='units' needs an RBM energy model in visible space (pmz.systems.rbm_digits or "
                "pmz.boltzmann.rbm.energy_model(rbm, base_means))"
            )
        return cls(rbm.W, rbm.a, rbm.b, model.base.means, **kwargs)

    def _state(self, v):
        zeros = np.zeros(v.shape[0])
        return ParticleState(v, LogDensityParts(zeros, zeros))

    def _eta(self, v, unit):
        g = self.b + v @ self.W
        return self.a[unit] + np.sum(softplus(g + self.W[unit]) - softplus(g), axis=1)

    def start(self, rng, n):
        return self._state(np.zeros((int(n), self.dim)))

    def next_position(self, t, state, log_w):
        return float(int(round(t)) + 1)

    def log_increment(self, state, t, t_new):
        return softplus(self._eta(state.x, self.order[int(round(t))])), state

    def augment(self, rng, state, t, t_new):
        unit = self.order[int(round(t))]
        eta = self._eta(state.x, unit)
        v = state.x.copy()
        v[:, unit] = (rng.uniform(size=eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(np.float64)
        return self._state(v)

    def move(self, rng, state, t, params=None):
        units = self.order[: int(round(t))]
        v = np.array(state.x, dtype=np.float64)
        for _ in range(self.n_sweeps):
            v = self.kernel.sweep(rng, v, 1.0, units=units)
        n = v.shape[0]
        return self._state(v), KernelInfo(np.ones(n), np.ones(n, dtype=bool))

    def fresh(self, rng, n, t):
        units = self.order[: int(round(t))]
        v = np.zeros((int(n), self.dim))
        v[:, units] = (rng.uniform(size=(int(n), units.size)) < self.base_means[units]).astype(np.float64)
        return self._state(v)

    def describe(self):
        return {"unit_order": self.order.tolist(), "n_sweeps": self.n_sweeps}
