"""Wang-Landau adaptive simulated tempering as a PyMC step method (see :mod:`pmz.step_methods.tempered_step` for the
moves and the stats, and :class:`WangLandau` for the weight update).
"""

from __future__ import annotations

import numpy as np

from ..runners.level_weights import wang_landau_init, wang_landau_update
from ..runners.tempering_settings import WangLandauRule
from .tempered_step import _TemperingStep

__all__ = ["WangLandau"]


class WangLandau(_TemperingStep):
    """Wang-Landau adaptive simulated tempering, one chain per PyMC chain: a sampler for multimodal posteriors.

    Same moves and stats as :class:`SimulatedTempering`, but the level weights ``theta_k = log Zhat_k`` keep
    adapting during sampling (Wang & Landau 2001; Atchade & Liu 2010; CAST sections 4-6). After each draw, with
    ``k_t`` the level after the level move and ``t`` the chain's step count,

        theta_k <- theta_k + log(1 + gamma_t) 1[k_t = k] / (K r_k),        then theta <- theta - theta_0,

    (the classic update of the visited level for the uniform ``r_k = 1 / K``; the factor ``1 / (K r_k)`` makes the
    visit frequencies approach ``r`` otherwise). ``gamma`` starts at ``gamma0`` and is halved whenever the visit
    histogram since the last halving is flat (every ``h_k / r_k`` at least ``(1 - flatness)`` times their mean);
    when a halving takes it below ``K / t``, and at the latest when tuning ends, it follows the 1/t rule
    ``gamma_t = K / t`` (Belardinelli & Pereyra 2007; ``t / K`` is their Monte Carlo time in sweeps of the ladder,
    and in the stochastic-approximation form ``theta_k += gamma_t (1[k_t = k] / r_k - 1) / K`` this is the gain
    ``1 / t``). Because the 1/t gain vanishes but never stops, the chain is not a fixed Markov kernel;
    :func:`pmz.step_methods.tempered_evidence` treats each draw with the guesses it was made with (RTS Appendix
    A), which is what makes the draws usable. pmz's many-chain runner (:mod:`pmz.runners.wang_landau`) applies
    ``log(1 + gamma) v_k / r_k`` per sweep (``v_k``: the fraction of chains at level k), i.e. one sweep moves the
    weights as much as K single-chain steps, and its 1/t rule in sweeps is ``gamma_t = 1 / t``: the same schedule,
    and the same function (:func:`pmz.runners.level_weights.wang_landau_update`, time unit K here, 1 there).

    Parameters
    ----------
    vars, n_temps, schedule, log_zhat, level_move, n_leapfrog, n_pilot, model, rng, blocked
        As for :class:`SimulatedTempering`. ``log_zhat`` (default: the pilot's estimate) starts ``theta``.
    wl_gamma0 : float
        Initial modification factor ``log(1 + wl_gamma0)`` (``pmz.evidence``'s option of the same name).
    wl_flatness : float in (0, 1)
        Flat-histogram tolerance (0.2: every level within 20% of the mean).
    """

    name = "wang_landau"

    def __init__(
        self,
        vars=None,
        *,
        n_temps: int = 20,
        schedule="power",
        log_zhat=None,
        level_move: str = "gibbs",
        n_leapfrog: int = 10,
        wl_gamma0: float = 1.0,
        wl_flatness: float = 0.2,
        n_pilot: int = 256,
        compile_mode=None,
        model=None,
        rng=None,
        blocked: bool = True,
    ):
        rule = WangLandauRule(wl_gamma0=wl_gamma0, wl_flatness=wl_flatness)  # checked before the model compiles
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
        self.rule = rule.replace(wl_time_unit=self.n_levels)  # one chain: K steps move the weights as one sweep

    def _reset_chain(self):
        super()._reset_chain()
        self._wl = None  # the Wang-Landau state, from the chain's first guesses
        self.halvings = []  # steps at which the histogram was flat

    def _start_chain(self, x0):
        super()._start_chain(x0)
        self._wl = wang_landau_init(self.n_levels, self.rule.wl_gamma0, self.log_zhat)

    @property
    def gamma(self) -> float:
        """The current modification factor."""
        return self.rule.wl_gamma0 if self._wl is None else self._wl.gamma

    @property
    def one_over_t_from(self) -> int:
        """The step where the 1/t rule took over (-1: not yet)."""
        return -1 if self._wl is None else self._wl.one_over_t_from

    def _adapt_weights(self, q, new_level, tuning):
        visit = np.bincount([new_level], minlength=self.n_levels)
        self._wl, info = wang_landau_update(
            self._wl, visit, visit, log_prior=self.log_prior, flatness=self.rule.wl_flatness,
            time_unit=self.rule.wl_time_unit, one_over_t=not tuning,
        )
        if info.halved:
            self.halvings.append(self._wl.t)
        self.log_zhat = self._wl.log_g
