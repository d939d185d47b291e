"""The contract of a sequence of distributions for sequential Monte Carlo (resample-move SMC and ARM).

A sequence is a chain of unnormalised densities ``f_t`` indexed by a *position* ``t`` running from
``t_start`` to ``t_end`` (ARM section 2; docs/methods.md, section 10):

* tempering: ``t = beta`` in ``[0, 1]``, ``f_beta = f0 f1^beta`` on one space;
* data annealing: ``t = m``, the number of observations included, ``f_m = prior x prod_{i <= m} p(y_i | x)``;
* unit-by-unit RBM: ``t = n``, the number of visible units included; the space grows by one unit per stage;
* probit GP in the z-representation: ``t = n`` data points, the space grows by one latent ``z_i`` per stage.

SMC estimates ``log Z_{t_end} = log Z_{t_start} + sum_n log E_{p_n}[W_n]`` with the incremental weight

    W_n(x) = f_{t_{n+1}}(x) / f_{t_n}(x)        (the new components summed or integrated out when the space grows)

estimated by the weighted particle mean at each stage. A sequence supplies exactly what the runner needs:

``start(rng, n)``
    ``n`` exact draws of ``p_{t_start}`` as a :class:`~pmz.kernels.base.ParticleState` (with log-density parts
    cached when the moves need them); ``log_z0`` is ``log Z_{t_start}``.
``next_position(t, state, log_w)``
    The next position ``t' > t`` (a fixed grid, or chosen from the weighted particles, e.g. by conditional ESS).
``log_increment(state, t, t_new) -> (log_W, state_new)``
    ``log W(x)`` for each particle and the state with its cached parts valid at ``t_new`` (before augmenting).
``augment(rng, state, t, t_new)``
    Draw the components that ``p_{t_new}`` adds, from their exact conditional given the old ones (identity when
    the space does not grow); the weights do not change because ``W`` already summed them out.
``move(rng, state, t, params) -> (state, info)``
    One Markov kernel step that leaves ``p_t`` invariant (``params``: the runner's tuned
    :class:`~pmz.kernels.base.KernelParams`, ignored by untunable kernels).
``fresh(rng, n, t)``
    ``n`` starting points in the space of ``p_t`` for an independent sampler (ARM-reseed), which the runner burns
    in with ``move`` before use.

``kernel`` names the Markov kernel and says whether it is tunable (its ``default_params``, ``target_acceptance``).
``label`` names the position for tables and plots (``"beta"``, ``"n_obs"``, ``"n_units"``, ``"n_points"``).
"""

from __future__ import annotations

import numpy as np

from ..kernels.base import Kernel, KernelInfo, ParticleState

__all__ = ["SMCSequence", "resolve_order"]


class SMCSequence:
    """Interface of an SMC sequence (see the module docstring). Subclasses implement the methods.

    Attributes
    ----------
    kind : "sequence"
        The :class:`~pmz.model.target.Target` kind of a sequence given to ``pmz.evidence`` on its own.
    name : str
        ``"tempering"``, ``"data"``, ``"units"``, ...
    label : str
        What the position ``t`` counts: ``"beta"``, ``"n_obs"``, ``"n_units"``, ...
    dim : int
        Dimension of the (largest) particle space.
    log_z0 : float
        ``log Z`` of the first distribution ``p_{t_start}`` (exact).
    t_start, t_end : float
        First and last positions.
    kernel : Kernel
        The Markov kernel behind :meth:`move`.
    """

    kind = "sequence"  # the target kind when pmz.evidence runs a sequence on its own (pmz.model.target.Target)
    name: str = "sequence"
    label: str = "t"
    dim: int
    log_z0: float = 0.0
    t_start: float = 0.0
    t_end: float = 1.0
    kernel: Kernel

    def start(self, rng: np.random.Generator, n: int) -> ParticleState:
        raise NotImplementedError

    def next_position(self, t: float, state: ParticleState, log_w: np.ndarray) -> float:
        raise NotImplementedError

    def log_increment(self, state: ParticleState, t: float, t_new: float) -> tuple[np.ndarray, ParticleState]:
        raise NotImplementedError

    def augment(self, rng: np.random.Generator, state: ParticleState, t: float, t_new: float) -> ParticleState:
        return state

    def move(self, rng: np.random.Generator, state: ParticleState, t: float, params) -> tuple[ParticleState, KernelInfo]:
        raise NotImplementedError

    def fresh(self, rng: np.random.Generator, n: int, t: float) -> ParticleState:
        raise NotImplementedError

    #: the object whose evaluation counters the sequence reports (a family or compiled model), if any
    evaluator = None

    @property
    def n_logp_evals(self) -> int:
        """Particle log-density evaluations (value only) so far, where the sequence counts them."""
        return 0 if self.evaluator is None else self.evaluator.n_logp_evals

    @property
    def n_grad_evals(self) -> int:
        return 0 if self.evaluator is None else self.evaluator.n_grad_evals

    def describe(self) -> dict:
        """Settings of the sequence stored with the result (order of data or units, schedule rule, ...)."""
        return {}


def resolve_order(order, n: int, rng=None, *, named=None, what: str = "order") -> np.ndarray:
    """An order of ``n`` items: ``"given"`` (0..n-1), ``"random"`` (a permutation drawn from ``rng``), a name in
    ``named`` (``{name: array}``), or a permutation array (validated)."""
    choices = {"given": None, "random": None, **(named or {})}
    if isinstance(order, str):
        if order not in choices:
            raise ValueError(f"pmz: {what} must be one of {sorted(choices)} or a permutation array, got {order!r}")
        if order == "given":
            order = np.arange(n)
        elif order == "random":
            order = (rng if rng is not None else np.random.default_rng()).permutation(n)
        else:
            order = choices[order]
    order = np.asarray(order)
    if order.shape != (n,) or not np.array_equal(np.sort(order), np.arange(n)):
        raise ValueError(f"pmz: {what} must be a permutation of range({n})")
    return order.astype(np.int64)
