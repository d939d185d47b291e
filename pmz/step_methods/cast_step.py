"""CAST as a PyMC step method: ``pm.sample(step=pmz.CAST())`` for multimodal posteriors (Salakhutdinov 2010,
"Learning deep Boltzmann machines using adaptive MCMC", ICML, sections 4-6).

Every PyMC chain runs ONE slow/fast pair of :mod:`pmz.runners.cast` (the same :func:`~pmz.runners.cast.cast_step`
as the many-pair runner, on a batch of one pair):

* the slow chain moves at ``beta = 1`` (the posterior) with the plain kernel: HMC for continuous models, site-by-site
  Gibbs for discrete ones, Gibbs then HMC for mixed ones; its states are the trace's draws;
* the fast chain is Wang-Landau adaptive simulated tempering on a power-posterior ladder (``f_b(x) = prior(x)
  likelihood(x)^b``; CAST's is uniform in ``[beta_min, 1]``, pmz's default the power ladder from 0, which mixes
  better on posteriors): the same kernel at its level's ``beta``, then a level
  draw from ``q(k | x) ∝ r_k exp(b_k U(x) - theta_k)``, then ``theta_k <- theta_k + log(1 + gamma) 1[k_t = k] /
  (K r_k)`` (the rule of :class:`pmz.step_methods.WangLandau`: gamma halved on flat histograms, ``K / t`` at the
  latest when tuning ends);
* every ``swap_interval`` draws the slow chain takes the fast chain's most recent ``beta = 1`` state
  (``swap="last"``, the paper's rule) or exchanges states with it when it is at ``beta = 1`` (``"exchange"``).

The slow chain never leaves ``beta = 1``, so every draw is a posterior draw (no reweighting, unlike the tempering
samplers); the fast chain carries it across the barriers between modes. With ``swap="last"`` the handed-over state
is slightly biased towards states that leave ``beta = 1`` easily (a relative error of E[m^2] below 1e-3 on an
Ising torus, see :mod:`pmz.runners.cast`); ``swap="exchange", swap_interval=1`` is exact once the weights are
frozen and swaps at about ``1/K`` of the draws.

Setup at a chain's first draw, with the step's own generator (seeded per chain by ``pm.sample``): for a tunable
kernel (HMC, Gibbs + HMC) a pilot of ``n_pilot`` particles (:func:`pmz.runners.pilot.tune_along_schedule`, from the
prior up the ladder) sets each level's scale and step size and the first weights ``theta_k`` (its estimate of
``log Z_k - log Z_0``) unless ``log_g`` is given; for Gibbs alone the weights start at ``log_g`` or zero. While
``pm.sample`` tunes, the step sizes of the levels used adapt by Robbins-Monro on their log (the top level from the
slow chain's acceptance, the fast chain's level from its own).

Stats (one value per draw; ``K = n_temps + 1``)
----------------------------------------------
level : int
    The fast chain's level after the step (``K - 1``: ``beta = 1``).
beta : float
    ``b`` of that level.
swapped : bool
    The slow chain took the fast chain's state at this draw.
accept : float
    Acceptance probability of the slow chain's kernel step (1 for Gibbs).
fast_accept : float
    The fast chain's kernel acceptance.
step_size : float
    Step size of the slow chain's kernel (the top level's).
wl_gamma : float
    Wang-Landau's modification factor after the update.
log_g : float (K,)
    The Wang-Landau weights ``theta_k - theta_0`` after the update: estimates of ``log Z_k - log Z_0``.
tune : bool
    Whether the draw was made while tuning.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pymc as pm
from pymc.blocking import DictToArrayBijection, RaveledVars

from ..families.schedules import make_schedule
from ..kernels.adaptation import decreasing_gain, robbins_monro_log_step
from ..kernels.base import Kernel, KernelParams
from ..kernels.gibbs import MixedKernel, SiteGibbs
from ..kernels.hmc import HamiltonianMC
from ..runners.cast import cast_init, cast_step, uniform_ladder
from ..runners.levels import level_log_probs, move_levels
from ..runners.pilot import tune_along_schedule
from ..runners.tempering_settings import CASTSettings
from ..validate import positive_int
from .base import PowerPosteriorStep, declare_stats
from .tempered_step import _checked_value_vars

__all__ = ["CAST"]


def _model_kernel(layout, n_leapfrog: int) -> Kernel:
    """HMC for continuous models, site-by-site Gibbs for discrete ones, Gibbs then HMC for mixed ones (the rule of
    ``pmz.evidence(kernel="auto")``)."""
    hmc = HamiltonianMC(n_leapfrog=n_leapfrog)
    mask = layout.discrete_mask
    if not mask.any():
        return hmc
    sites, values = layout.discrete_sites()
    gibbs = SiteGibbs(sites, values, bounds=layout.discrete_bounds())
    return gibbs if mask.all() else MixedKernel(gibbs, hmc, ~mask)


def _ladder(schedule, n_temps, beta_min) -> np.ndarray:
    """The fast chain's ladder from the ``schedule`` argument (see :class:`CAST`)."""
    if isinstance(schedule, str):
        return uniform_ladder(beta_min, n_temps) if schedule == "uniform" else make_schedule(schedule, n_temps)
    betas = np.asarray(schedule, dtype=float)
    if betas.ndim != 1 or betas.size < 2 or betas[0] < 0 or betas[-1] != 1.0 or np.any(np.diff(betas) <= 0):
        raise ValueError("pmz: a schedule array must increase strictly from a value >= 0 to 1")
    return betas


class CAST(PowerPosteriorStep):
    """Coupled adaptive simulated tempering: a posterior chain helped across modes by a Wang-Landau tempering chain.

    Use ``pm.sample(step=pmz.CAST(...))``; every draw is a posterior draw. See :mod:`pmz.step_methods.cast_step` for the
    algorithm, the tuning and the stats, and :mod:`pmz.runners.cast` for the step it shares with the runner.

    Parameters
    ----------
    vars : list, optional
        Must be all free variables of the model (the default).
    schedule : str or array
        The ladder: ``"uniform"`` (CAST's: uniform in ``[beta_min, 1]``,
        :func:`pmz.runners.cast.uniform_ladder`), a named rule of :func:`pmz.families.schedules.make_schedule`
        (default ``"power"``, ``b_k = (k / n_temps)^4``), or an array (strictly increasing from a value >= 0 to 1).
        On a power posterior the low temperatures need fine steps: on ``pmz.systems.bimodal_posterior()`` the
        fast chain made 15-18 round trips down the ladder and back per 1500 draws with the power ladder (11
        levels), 6-12 with the uniform one on ``[0, 1]`` (11 levels) and 0-9 with 20 uniform levels (docs/cast.md).
    n_temps : int
        ``K - 1``: the ladder has ``n_temps + 1`` levels.
    beta_min : float in [0, 1)
        Lowest inverse temperature of the uniform ladder (``schedule="uniform"``; the paper's 0.9 suits large
        energy models near ``beta = 1``; a posterior whose modes are separated by a barrier of ``B`` nats needs
        ``beta_min B`` of a few nats at most).
    swap_interval : int
        Draws between swaps (the paper: ~50 Gibbs steps; default 10 here, where every draw is a costly HMC step).
    swap : {"last", "exchange"}
        Swap rule (see :mod:`pmz.runners.cast`).
    wl_gamma0, wl_flatness : float
        Wang-Landau's first gain and flat-histogram tolerance (as for :class:`pmz.step_methods.WangLandau`).
    log_g : array (K,), optional
        Initial weights (estimates of ``log Z_k - log Z_0``); default: the pilot's estimate, or zeros for Gibbs.
    level_move : {"gibbs", "metropolis"}
    n_leapfrog : int
        Leapfrog steps per HMC proposal.
    kernel : pmz Kernel, optional
        Overrides the default kernel (HMC / Gibbs / Gibbs + HMC by the variables' types).
    n_pilot : int
        Particles of the pilot that tunes the per-level kernels at each chain's start (tunable kernels only).
    compile_mode, model, rng, blocked
        As for :class:`pmz.step_methods.SimulatedTempering`.
    """

    name = "cast"
    default_blocked = True
    stats_dtypes_shapes = {}  # set per instance: log_g has K entries

    def __init__(
        self,
        vars=None,
        *,
        schedule="power",
        n_temps: int = 10,
        beta_min: float = 0.0,
        swap_interval: int = 10,
        swap: str = "last",
        wl_gamma0: float = 1.0,
        wl_flatness: float = 0.2,
        log_g=None,
        level_move: str = "gibbs",
        n_leapfrog: int = 10,
        kernel: Kernel | None = None,
        n_pilot: int = 256,
        compile_mode=None,
        model=None,
        rng=None,
        blocked: bool = True,
    ):
        model = pm.modelcontext(model)
        value_vars = _checked_value_vars(model, vars, blocked, "CAST", allow_discrete=True)
        settings = CASTSettings(  # checked before the model compiles; one pair per PyMC chain
            swap_interval=swap_interval, swap=swap, wl_gamma0=wl_gamma0, wl_flatness=wl_flatness,
            level_move=level_move, n_pairs=1,
        )
        betas = _ladder(schedule, n_temps, beta_min)
        K = betas.size
        if log_g is not None:
            log_g = np.asarray(log_g, dtype=float)
            if log_g.shape != (K,) or not np.all(np.isfinite(log_g)):
                raise ValueError(f"pmz: log_g must hold {K} finite weights (one per level)")
            log_g = log_g - log_g[0]
        self.model = model
        self.betas, self.n_levels = betas, K
        self.settings = settings.replace(wl_time_unit=K)  # one pair: K steps move the weights as one sweep
        self.log_prior = self.settings.log_prior_of(K)
        self.initial_log_g = log_g
        self.n_pilot = positive_int("n_pilot", n_pilot)
        self.compile_mode = compile_mode
        self._compiled = self._family = None
        self.family  # noqa: B018  (compiled now: refuses improper priors early)
        self.layout = self._compiled.layout
        self.kernel = kernel if kernel is not None else _model_kernel(self.layout, n_leapfrog)

        shapes = {
            "level": (np.int64, []),
            "beta": (np.float64, []),
            "swapped": (bool, []),
            "accept": (np.float64, []),
            "fast_accept": (np.float64, []),
            "step_size": (np.float64, []),
            "wl_gamma": (np.float64, []),
            "log_g": (np.float64, [K]),
            "tune": (bool, []),
        }
        declare_stats(self, shapes)
        self.tune = True
        super().__init__(value_vars, {}, blocked, rng=rng)
        self._reset_chain()

    # ------------------------------------------------------------------ chain state
    def _reset_chain(self):
        self._state = None
        self._log_eps = self._scales = None
        self._tune_visits = np.zeros(self.n_levels)
        self.swaps = 0
        self.pilot = None

    def _start_chain(self, x0):
        betas, K = self.betas, self.n_levels
        log_g = self.initial_log_g
        if self.kernel.tunable:
            offset = int(betas[0] > 0.0)  # the pilot starts at the prior, b = 0
            schedule = np.concatenate([[0.0], betas]) if offset else betas
            self.pilot = tune_along_schedule(self.family, self.kernel, schedule, self.rng, n_pilot=self.n_pilot)
            params = self.pilot.params[offset:]
            if log_g is None:
                log_z = np.asarray(self.pilot.log_z_path, dtype=float)[offset:]
                log_g = log_z - log_z[0]
        else:
            params = [self.kernel.default_params(self.family.dim)] * K
        log_g = np.zeros(K) if log_g is None else log_g.copy()
        self._log_eps = np.log([float(p.step_size) for p in params])
        self._scales = [np.asarray(p.scale, dtype=float) for p in params]
        self._n_leapfrog = params[0].n_leapfrog
        state = cast_init(
            self.rng, self.family, self.kernel, betas, 1, wl_gamma0=self.settings.wl_gamma0, log_g=log_g,
            start_x=x0[None, :], start_fast_x=x0[None, :], start_levels=np.zeros(1, dtype=int),
        )
        log_q = level_log_probs(state.fast.particles.parts.U, betas, log_g, self.log_prior)
        levels = move_levels(self.rng, np.zeros(1, dtype=int), log_q, "gibbs")[0]
        self._state = replace(state, fast=replace(state.fast, levels=levels))

    def _level_params(self):
        """Each level's kernel parameters: its (adapted) step size and the pilot's scale."""
        return [KernelParams(float(np.exp(e)), s, self._n_leapfrog) for e, s in zip(self._log_eps, self._scales)]

    @property
    def log_g(self):
        """The current Wang-Landau weights (None before the chain's first draw)."""
        return None if self._state is None else self._state.wl.log_g

    # ------------------------------------------------------------------ one draw
    def astep(self, q0: RaveledVars):
        x = self.layout.from_point(DictToArrayBijection.rmap(q0))
        if self._state is None:
            self._start_chain(x)
        state = self._state
        if not np.array_equal(state.slow.x[0], x):  # the point was changed elsewhere
            state = replace(state, slow=self.kernel.init_state(self.family, x[None, :]))
        tuning = bool(self.tune)
        top = self.n_levels - 1
        step_size = float(np.exp(self._log_eps[top]))
        state, info = cast_step(
            self.rng,
            state,
            family=self.family,
            kernel=self.kernel,
            betas=self.betas,
            params=self._level_params(),
            settings=self.settings,
            wl_one_over_t=not tuning,
        )
        accept, fast_accept = float(info.slow_acceptance[0]), float(info.fast.acceptance[0])
        if tuning and self.kernel.tunable:
            target = self.kernel.target_acceptance
            for k, a in ((top, accept), (int(info.fast.moved_at[0]), fast_accept)):
                n = self._tune_visits[k]
                self._log_eps[k] = robbins_monro_log_step(self._log_eps[k], a, target, decreasing_gain(n))
                self._tune_visits[k] = n + 1
        self._state = state
        swapped = bool(info.swapped[0])
        self.swaps += swapped
        level = int(state.fast.levels[0])

        point = self.layout.to_point(state.slow.x[0])
        q = DictToArrayBijection.map(
            {name: np.asarray(point[name], dtype=dtype).reshape(shape) for name, shape, _, dtype in q0.point_map_info}
        )
        stats = {
            "level": level,
            "beta": float(self.betas[level]),
            "swapped": swapped,
            "accept": accept,
            "fast_accept": fast_accept,
            "step_size": step_size,
            "wl_gamma": float(state.wl.gamma),
            "log_g": state.wl.log_g.copy(),
            "tune": tuning,
        }
        return q, [stats]
