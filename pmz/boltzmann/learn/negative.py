"""Negative phases: the chains whose states estimate the model moments ``E_model[x h']`` of a bipartite machine.

Each sampler has ``init(rng, params, X0) -> state``, ``sample(rng, state, params, X_data) -> (state, X)`` (model
states ``X (n_chains, nx)`` for the current parameters ``params``, a
:class:`~pmz.boltzmann.learn.gradients.Bipartite`) and ``after_update(state, grad, lr) -> state``;
``diagnostics(state)`` summarises a run. The parameters change after every update; all samplers are NumPy, so the
chains simply use the new parameters at their next step (nothing is compiled, nothing is cached across updates):

* :class:`ContrastiveDivergence` (CD-k; Hinton 2002): ``k`` block-Gibbs sweeps from the data batch itself;
* :class:`PersistentGibbs` (PCD, Tieleman 2008 = SAP, Salakhutdinov 2010): ``k`` sweeps of persistent chains;
* :class:`FastWeightsGibbs` (FPCD, Tieleman & Hinton 2009): persistent chains that sample ``theta + theta_fast``;
  the fast weights follow :func:`pmz.boltzmann.learn.updates.fast_weight_step` after every update;
* :class:`CASTChains` (Salakhutdinov 2010): the slow chains of :mod:`pmz.runners.cast`, driven by its
  :func:`~pmz.runners.cast.cast_step`: slow chains at ``beta = 1`` and adaptive simulated-tempering fast chains with
  Wang-Landau weights on ``[beta_min, 1]``, in the joint space ``(x, h)`` with the block Gibbs kernel
  (:class:`~pmz.boltzmann.rbm_gibbs.RBMBlockGibbs`, the DBM's layer Gibbs in its bipartite view), so ``f_beta ∝
  exp(-beta E(x, h))`` as in the paper. At every update the family and kernel are rebuilt from the current
  parameters (a few small arrays); a Gibbs kernel recomputes the log-density parts of the states it moves, so the
  level draws use energies under the new parameters (stale cached energies are never read), and the Wang-Landau
  weights keep adapting to the moving ``log Z_k``.

Block Gibbs is :meth:`pmz.boltzmann.rbm_gibbs.RBMBlockGibbs.sweep` at ``beta = 1`` everywhere (:func:`block_gibbs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...families.energy import EnergyFamily
from ..rbm_gibbs import RBMBlockGibbs
from ...runners.cast import cast_init, cast_step, uniform_ladder
from ...runners.tempering_settings import CASTSettings
from ..rbm import RBM
from ..rbm import energy_model as rbm_energy_model
from .gradients import Bipartite
from .updates import fast_weight_step

__all__ = [
    "block_gibbs",
    "ContrastiveDivergence",
    "PersistentGibbs",
    "FastWeightsGibbs",
    "CASTChains",
    "negative_phase",
]


def _kernel(params: Bipartite) -> RBMBlockGibbs:
    return RBMBlockGibbs(params.W, params.a, params.b, np.full(params.a.size, 0.5))


def block_gibbs(rng, params: Bipartite, X, k: int) -> np.ndarray:
    """``k`` block-Gibbs sweeps ``h ~ Bern(sigmoid(b + x W))``, ``x ~ Bern(sigmoid(a + W h))`` of ``X (n, nx)``."""
    kernel = _kernel(params)
    for _ in range(k):
        X, _ = kernel.sweep(rng, X, 1.0)
    return X


class ContrastiveDivergence:
    """CD-k: ``k`` sweeps started at the data batch (no state; RBMs only)."""

    name = "cd"

    def __init__(self, k: int = 1):
        self.k = int(k)

    def init(self, rng, params, X0):
        return None

    def sample(self, rng, state, params, X_data):
        return state, block_gibbs(rng, params, X_data, self.k)

    def after_update(self, state, grad, lr):
        return state

    def diagnostics(self, state) -> dict:
        return {}


class PersistentGibbs(ContrastiveDivergence):
    """PCD / SAP: ``k`` sweeps of persistent chains (the state is their ``X``)."""

    name = "pcd"

    def init(self, rng, params, X0):
        return np.array(X0, dtype=np.float64)

    def sample(self, rng, state, params, X_data):
        X = block_gibbs(rng, params, state, self.k)
        return X, X


@dataclass(frozen=True)
class FastState:
    """FPCD's chains and fast weights."""

    X: np.ndarray
    fast: Bipartite


class FastWeightsGibbs(ContrastiveDivergence):
    """FPCD: persistent chains that sample the model ``theta + theta_fast``."""

    name = "fpcd"

    def __init__(self, k: int = 1, *, fast_learning_rate: float, fast_decay: float = 0.95):
        super().__init__(k)
        self.fast_learning_rate, self.fast_decay = float(fast_learning_rate), float(fast_decay)

    def init(self, rng, params, X0):
        return FastState(np.array(X0, dtype=np.float64), params.zeros_like())

    def sample(self, rng, state, params, X_data):
        X = block_gibbs(rng, params + state.fast, state.X, self.k)
        return FastState(X, state.fast), X

    def after_update(self, state, grad, lr):
        fast = fast_weight_step(state.fast, grad, lr=self.fast_learning_rate, decay=self.fast_decay)
        return FastState(state.X, fast)

    def diagnostics(self, state) -> dict:
        return {"fast_weight_rms": float(np.sqrt(np.mean(state.fast.W**2)))}


@dataclass(frozen=True)
class CASTChainsState:
    """The CAST pairs (:class:`pmz.runners.cast.CASTState`) and running counts."""

    cast: object
    swaps: int
    swap_steps: int
    visits: np.ndarray


class CASTChains:
    """CAST's slow chains as the negative phase (module docstring); ``n_chains`` pairs of slow and fast chains."""

    name = "cast"

    def __init__(self, k: int = 1, *, beta_min: float = 0.9, n_temps: int = 19, swap_interval: int = 50,
                 swap: str = "last", wl_gamma0: float = 1.0, wl_flatness: float = 0.2):
        self.k = int(k)
        self.betas = uniform_ladder(beta_min, n_temps)
        self.settings = CASTSettings(
            swap_interval=swap_interval, swap=swap, wl_gamma0=wl_gamma0, wl_flatness=wl_flatness,
            n_steps_per_temp=self.k,
        )

    def _family_kernel(self, params: Bipartite):
        """The joint-space energy model of the current parameters (uniform base: ``f_beta ∝ exp(-beta E)``)."""
        model = rbm_energy_model(RBM(params.W, params.a, params.b), np.full(params.a.size, 0.5), space="joint")
        return EnergyFamily(model), model.kernel

    def init(self, rng, params, X0):
        X0 = np.asarray(X0, dtype=np.float64)
        joint = np.concatenate([X0, np.zeros((X0.shape[0], params.b.size))], axis=1)
        family, kernel = self._family_kernel(params)
        cast = cast_init(rng, family, kernel, self.betas, X0.shape[0], wl_gamma0=self.settings.wl_gamma0,
                         start_x=joint, start_fast_x=joint)
        return CASTChainsState(cast, 0, 0, np.zeros(self.betas.size))

    def sample(self, rng, state, params, X_data):
        family, kernel = self._family_kernel(params)
        level_params = [kernel.default_params(family.dim)] * self.betas.size
        cast, info = cast_step(
            rng, state.cast, family=family, kernel=kernel, betas=self.betas, params=level_params,
            settings=self.settings,
        )
        swap_step = cast.t % self.settings.swap_interval == 0
        visits = state.visits + np.bincount(cast.fast.levels, minlength=self.betas.size)
        new = CASTChainsState(cast, state.swaps + int(info.swapped.sum()), state.swap_steps + int(swap_step), visits)
        return new, cast.slow.x[:, : params.a.size]

    def after_update(self, state, grad, lr):
        return state

    def diagnostics(self, state) -> dict:
        n = state.cast.has_top.size
        return {
            "swap_fraction": state.swaps / max(state.swap_steps * n, 1),
            "level_visits": state.visits / max(state.visits.sum(), 1.0),
            "log_g": state.cast.wl.log_g.copy(),
            "wl_gamma": float(state.cast.wl.gamma),
        }


def negative_phase(options):
    """The sampler that ``options.method`` names, with its options."""
    if options.method == "cd":
        return ContrastiveDivergence(options.k)
    if options.method == "pcd":
        return PersistentGibbs(options.k)
    if options.method == "fpcd":
        fast_lr = options.learning_rate if options.fast_learning_rate is None else options.fast_learning_rate
        return FastWeightsGibbs(options.k, fast_learning_rate=fast_lr, fast_decay=options.fast_decay)
    return CASTChains(
        options.k, beta_min=options.beta_min, n_temps=options.n_temps, swap_interval=options.swap_interval,
        swap=options.swap, wl_gamma0=options.wl_gamma0, wl_flatness=options.wl_flatness,
    )
