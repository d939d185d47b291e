"""Simulated tempering over the power-posterior ladder as a PyMC step method (see :mod:`pmz.step_methods.tempered_step`
for the algorithm, the adaptation while tuning and the stats).

During tuning the guesses adapt by the Rao-Blackwellised stochastic approximation of SAMC (Liang, Liu & Carroll
2007; Atchade & Liu 2010), ``log Zhat_k <- log Zhat_k + gamma_t (q(k | x_t) / r_k - 1)``, ``gamma_t = min(0.1, 1/t)``
(:func:`pmz.runners.level_weights.samc_update`); afterwards the chain is a fixed Markov kernel leaving ``q``
invariant.
"""

from __future__ import annotations

from ..runners.level_weights import samc_update
from .tempered_step import _TemperingStep

__all__ = ["SimulatedTempering"]


class SimulatedTempering(_TemperingStep):
    """Simulated tempering over the power-posterior ladder, one chain per PyMC chain (RTS Algorithm 1).

    Use ``pm.sample(step=pmz.SimulatedTempering(...))`` on a continuous model, then ``pmz.tempered_evidence(idata)`` for
    log p(y) and ``pmz.tempered_weights(idata)`` for posterior expectations from all draws. See
    :mod:`pmz.step_methods.tempered_step` for the algorithm, the adaptation during tuning and the stats.

    Parameters
    ----------
    vars : list, optional
        Must be all free variables of the model (the default); anything else raises ``ValueError``.
    n_temps : int
        ``K - 1``: the ladder has ``n_temps + 1`` levels.
    schedule : str or array
        Ladder rule (``pmz.families.schedules.make_schedule``; default ``"power"``, ``b_k = (k/K)^4``) or an array
        from 0 to 1.
    log_zhat : array (K,), optional
        Initial guesses of ``log Z_k - log Z_0``; default: the pilot's estimate.
    level_move : {"gibbs", "metropolis"}
    n_leapfrog : int
        Leapfrog steps per HMC proposal.
    adapt_weights : bool
        Adapt ``log_zhat`` during tuning (Rao-Blackwellised stochastic approximation, gain ``min(0.1, 1/t)``).
    n_pilot : int
        Particles of the pilot that tunes the per-level kernels at each chain's start.
    compile_mode : str or pytensor Mode, optional
        PyTensor backend of the batched log density (default: the stack's own, see :mod:`pmz.model.backend`).
    model : pymc.Model, optional
    rng : seed or numpy Generator, optional
        Replaced by ``pm.sample`` with a per-chain generator derived from ``random_seed``.
    blocked : bool
        Must be True.
    """

    name = "simulated_tempering"

    def __init__(
        self,
        vars=None,
        *,
        n_temps: int = 20,
        schedule="power",
        log_zhat=None,
        level_move: str = "gibbs",
        n_leapfrog: int = 10,
        adapt_weights: bool = True,
        n_pilot: int = 256,
        compile_mode=None,
        model=None,
        rng=None,
        blocked: bool = True,
    ):
        self.adapt_weights = bool(adapt_weights)
        super().__init__(
            vars,
            n_temps=n_temps,
            schedule=schedule,
            log_zhat=log_zhat,
            level_move=level_move,
            n_leapfrog=n_leapfrog,
            n_pilot=n_pilot,
            compile_mode=compile_mode,
            model=model,
            rng=rng,
            blocked=blocked,
        )

    def _adapt_weights(self, q, new_level, tuning):
        if tuning and self.adapt_weights:
            self.log_zhat = samc_update(self.log_zhat, q, self.log_prior, self._t)
