"""Simulated tempering as PyMC step methods: ``pm.sample(step=pmz.SimulatedTempering())``.

Both samplers run ONE simulated-tempering chain per PyMC chain on the power-posterior ladder
``0 = b_0 < ... < b_{K-1} = 1`` (``K = n_temps + 1`` levels; ``f_b(x) = prior(x) likelihood(x)^b`` on pmz's flat
unconstrained space) and target the joint (Marinari & Parisi 1992; Geyer & Thompson 1995)

    q(x, k) ∝ r_k f_{b_k}(x) / Zhat_k,          r_k = 1 / K (uniform prior over levels).

One ``astep`` (one PyMC draw) is one sweep of RTS Algorithm 1 (Carlson et al. 2016), the same step
(:func:`pmz.runners.tempering_sweep.tempering_sweep`) as pmz's many-chain runners, on a batch of one chain:

1. one HMC transition of x at ``beta = b_k`` with level k's kernel parameters (pmz's :class:`HamiltonianMC`, a
   batch of ONE particle: one log-density + gradient call per leapfrog step);
2. the Rao-Blackwellised level conditional at the new x (``U`` = log likelihood)

       q(k | x) = r_k exp(b_k U(x)) / Zhat_k / sum_j r_j exp(b_j U(x)) / Zhat_j,

   recorded for ALL levels (stat ``rb_probs``);
3. a level move: an exact draw ``k ~ q(. | x)`` (``level_move="gibbs"``) or a +-1 Metropolis move
   (``"metropolis"``), see :mod:`pmz.runners.levels`.

The trace's draw ``x_i`` is the position after step 1 and ``level`` the level after step 3: ``(x_i, level_i)`` is
a draw of ``q``, so the draws with ``level == K - 1`` are posterior draws, and all draws together, reweighted by
:func:`pmz.step_methods.tempered_weights`, estimate posterior expectations.

Setup, lazily at a chain's first ``astep`` and with the step's own random generator (which ``pm.sample`` seeds
per chain from ``random_seed``, so runs are reproducible and ``cores=1`` gives the same bits as ``cores=2``):
a pilot of ``n_pilot`` particles (:func:`pmz.runners.pilot.tune_along_schedule`) sets each level's HMC scale and
step size and a first guess ``log Zhat_k`` (its resample-move estimate of ``log Z_k - log Z_0``), unless
``log_zhat`` is given. The start level is drawn from ``q(. | x_0)`` at PyMC's start point.

Adaptation while ``pm.sample`` tunes (``self.tune``; everything is frozen once ``stop_tuning`` is called):

* step size of the level that was just used, Robbins-Monro on its log (Robbins & Monro 1951; Andrieu & Thoms
  2008; :mod:`pmz.kernels.adaptation`): ``log eps_k <- log eps_k + eta_n (a - 0.8)`` with ``a`` the HMC acceptance
  probability, ``eta_n = 0.5 (1 + n)^-0.6`` and ``n`` the tuning visits of level k so far;
* :class:`SimulatedTempering` (``adapt_weights=True``): the Rao-Blackwellised stochastic-approximation update of
  SAMC (Liang, Liu & Carroll 2007; Atchade & Liu 2010) with the indicator of the visited level replaced by
  ``q(. | x)``:

      log Zhat_k <- log Zhat_k + gamma_t (q(k | x_t) / r_k - 1),      gamma_t = min(0.1, 1 / t),

  t the step count of the chain (:func:`pmz.runners.level_weights.samc_update`, which explains the gain). The
  guesses are renormalised to ``log Zhat_0 = 0`` after every update.
* :class:`WangLandau`: the level weights ``theta_k = log Zhat_k`` adapt during tuning AND sampling (Wang & Landau
  2001; Atchade & Liu 2010; Belardinelli & Pereyra 2007; :func:`pmz.runners.level_weights.wang_landau_update`,
  the runner's rule with a time unit of one chain step), see its docstring.

After tuning, :class:`SimulatedTempering` is a fixed Markov kernel leaving ``q`` invariant, and the RTS estimate
(RTS eq 10) from the post-tuning draws is consistent; :class:`WangLandau` keeps adapting with a vanishing gain, and
:func:`pmz.step_methods.tempered_evidence` combines its draws (with their different guesses) through the multinomial
likelihood of RTS Appendix A.

Stats (one value per draw; ``K = n_temps + 1``)
----------------------------------------------
beta : float
    ``b_k`` of the chain's level after the level move.
level : int
    That level k (``K - 1`` is the posterior).
rb_probs : float (K,)
    ``q(k | x)`` for every level at the draw (rows sum to 1).
log_zhat : float (K,)
    The guesses ``log Zhat_k`` (``log Zhat_0 = 0``) with which ``rb_probs`` and the level move were computed.
log_prior : float (K,)
    ``log r_k`` (constant: uniform).
log_weight : float
    ``log q(K-1 | x) - log r_{K-1} + log Zhat_{K-1}``: the log importance weight of the draw for the beta = 1
    posterior, up to ``log C - log Z_{K-1}`` with ``C = sum_k r_k Z_k / Zhat_k``, a constant per chain while the
    guesses are frozen (it differs between chains: each chain runs its own pilot). Use
    :func:`pmz.step_methods.tempered_weights` to pool chains (and for :class:`WangLandau`).
accept : float
    HMC acceptance probability of the draw's proposal (made at the level before the move).
step_size : float
    HMC step size used for that proposal.
tune : bool
    Whether the draw was made while tuning.

Implementation notes
--------------------
* This module holds the machinery both samplers share; :class:`SimulatedTempering` lives in
  :mod:`pmz.step_methods.simulated_tempering_step`, :class:`WangLandau` in :mod:`pmz.step_methods.wang_landau_step`.
* PyMC's raveled point and pmz's flat vector are converted through point dicts
  (``DictToArrayBijection.rmap`` / ``FlatLayout.from_point`` and back); their orders need not agree.
* The stats' shapes depend on K, so they are set per instance. ``stats_dtypes_shapes`` declares
  ``(float64, [K])`` for the vector stats (used by ZarrTrace and McBackend); PyMC's default NDArray backend
  allocates ``np.zeros(draws, dtype)`` from ``stats_dtypes`` and ignores shapes, so there the vector stats are
  declared with the sub-array dtype ``np.dtype((float64, (K,)))``, which allocates ``(draws, K)``.
* A new chain starts whenever ``pm.sample`` hands the step a new random generator (``set_rng``) or resets its
  tuning (``reset_tuning``): the pilot, the level, the guesses and the adapted step sizes are rebuilt, so that
  chains sampled one after the other (``cores=1``) are as independent as chains in separate processes.
* Pickling (``cores > 1`` with the "spawn" or "forkserver" start methods) drops the compiled model; each process
  compiles it again on first use (pytensor's C cache makes this quick).
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.util import get_value_vars_from_user_vars
from pytensor.tensor.type import discrete_dtypes

from ..families.schedules import make_schedule
from ..kernels.adaptation import decreasing_gain, robbins_monro_log_step
from ..kernels.base import KernelParams
from ..kernels.hmc import HamiltonianMC
from ..model.pymc import ModelSpecificationError
from ..runners.levels import level_log_probs, move_levels
from ..runners.pilot import tune_along_schedule
from ..runners.tempering_settings import SweepSettings
from ..runners.tempering_sweep import TemperingState, tempering_sweep
from .base import PowerPosteriorStep, declare_stats

__all__ = []  # the samplers: pmz.step_methods.simulated_tempering_step, pmz.step_methods.wang_landau_step


def _checked_value_vars(model, vars, blocked: bool, who: str, allow_discrete: bool = False):
    """The value variables the step updates: all free variables of the model, all continuous (unless
    ``allow_discrete``: :class:`pmz.step_methods.CAST` moves discrete sites by Gibbs)."""
    discrete = [model.values_to_rvs[v].name for v in model.value_vars if v.type.dtype in discrete_dtypes]
    if discrete and not allow_discrete:
        raise ModelSpecificationError(
            f"pmz: {who} moves x by Hamiltonian Monte Carlo and needs a continuous model; {discrete} are discrete. "
            "Use pmz.evidence(model, method='rts') (Gibbs + HMC for mixed models) instead."
        )
    value_vars = list(model.value_vars) if vars is None else get_value_vars_from_user_vars(vars, model)
    names = {v.name for v in value_vars}
    missing = [model.values_to_rvs[v].name for v in model.value_vars if v.name not in names]
    if missing or not blocked and len(model.value_vars) > 1:
        reason = "blocked=False splits the variables into separate steps" if not blocked else f"{missing} are missing"
        raise ValueError(
            f"pmz: {who} tempers the whole posterior and must update ALL free variables of the model in one block "
            f"({reason}). Pass vars=None (the default) and blocked=True."
        )
    return value_vars


class _TemperingStep(PowerPosteriorStep):
    """Shared machinery of :class:`SimulatedTempering` and :class:`WangLandau` (see the module docstring)."""

    name = "tempering"
    default_blocked = True
    stats_dtypes_shapes = {}  # set per instance in __init__: the vector stats have K entries

    def __init__(
        self,
        vars=None,
        *,
        n_temps: int = 20,
        schedule="power",
        log_zhat=None,
        level_move: str = "gibbs",
        n_leapfrog: int = 10,
        n_pilot: int = 256,
        compile_mode=None,
        model=None,
        rng=None,
        blocked: bool = True,
    ):
        model = pm.modelcontext(model)
        who = type(self).__name__
        value_vars = _checked_value_vars(model, vars, blocked, who)
        self.settings = SweepSettings(level_move=level_move)  # one sweep of the chain (checks level_move)
        if isinstance(n_pilot, bool) or int(n_pilot) != n_pilot or n_pilot < 2:
            raise ValueError(f"pmz: n_pilot must be an integer >= 2, got {n_pilot!r}")
        self.model = model
        self.betas = make_schedule(schedule, n_temps)
        K = self.betas.size
        self.n_levels = K
        self.log_prior = self.settings.log_prior_of(K)
        if log_zhat is not None:
            log_zhat = np.asarray(log_zhat, dtype=float)
            if log_zhat.shape != (K,) or not np.all(np.isfinite(log_zhat)):
                raise ValueError(f"pmz: log_zhat must hold {K} finite guesses of log Z_k (one per level)")
            log_zhat = log_zhat - log_zhat[0]
        self.initial_log_zhat = log_zhat
        self.n_pilot = int(n_pilot)
        self.kernel = HamiltonianMC(n_leapfrog=n_leapfrog)
        self.compile_mode = compile_mode
        self._compiled = self._family = None
        self.family  # noqa: B018  (compiled now, by the base class: refuses improper priors early)
        self.layout = self._compiled.layout

        shapes = {
            "beta": (np.float64, []),
            "level": (np.int64, []),
            "rb_probs": (np.float64, [K]),
            "log_zhat": (np.float64, [K]),
            "log_prior": (np.float64, [K]),
            "log_weight": (np.float64, []),
            "accept": (np.float64, []),
            "step_size": (np.float64, []),
            "tune": (bool, []),
            "nan_evals": (np.int64, []),
            "posinf_evals": (np.int64, []),
        }
        declare_stats(self, shapes)
        self.tune = True
        super().__init__(value_vars, {}, blocked, rng=rng)
        self._reset_chain()

    # ------------------------------------------------------------------ chain state
    def _reset_chain(self):
        K = self.n_levels
        self._t = 0
        self._level = None
        self._state = None
        self.log_zhat = None
        self._log_eps = None
        self._scales = None
        self._tune_visits = np.zeros(K)
        self.pilot = None

    def _start_chain(self, x0):
        self.pilot = tune_along_schedule(self.family, self.kernel, self.betas, self.rng, n_pilot=self.n_pilot)
        self._log_eps = np.log([p.step_size for p in self.pilot.params])
        self._scales = [np.asarray(p.scale, dtype=float) for p in self.pilot.params]
        if self.initial_log_zhat is not None:
            self.log_zhat = self.initial_log_zhat.copy()
        else:
            self.log_zhat = np.asarray(self.pilot.log_z_path, dtype=float) - self.pilot.log_z_path[0]
        self._state = self.kernel.init_state(self.family, x0[None, :])
        log_q = level_log_probs(self._state.parts.U, self.betas, self.log_zhat, self.log_prior)
        self._level = int(move_levels(self.rng, np.zeros(1, dtype=int), log_q, "gibbs")[0][0])

    def _state_at(self, x):
        if self._state is None or not np.array_equal(self._state.x[0], x):
            self._state = self.kernel.init_state(self.family, x[None, :])  # the point was changed elsewhere
        return self._state

    def _level_params(self):
        """Each level's kernel parameters: its (adapted) step size and the pilot's scale."""
        n_leapfrog = self.kernel.n_leapfrog
        return [KernelParams(float(np.exp(e)), s, n_leapfrog) for e, s in zip(self._log_eps, self._scales)]

    # ------------------------------------------------------------------ one draw
    def astep(self, q0: RaveledVars):
        x = self.layout.from_point(DictToArrayBijection.rmap(q0))
        if self._level is None:
            self._start_chain(x)
        k = self._level
        tuning = bool(self.tune)
        step_size = float(np.exp(self._log_eps[k]))
        log_zhat = self.log_zhat.copy()
        state, info = tempering_sweep(
            self.rng,
            TemperingState(self._state_at(x), np.array([k])),
            family=self.family,
            kernel=self.kernel,
            betas=self.betas,
            params=self._level_params(),
            log_zhat=log_zhat,
            settings=self.settings,
        )
        accept = float(info.acceptance[0])
        log_q = info.log_q
        new_level = int(state.levels[0])

        self._t += 1
        if tuning:
            n = self._tune_visits[k]
            target = self.kernel.target_acceptance
            self._log_eps[k] = robbins_monro_log_step(self._log_eps[k], accept, target, decreasing_gain(n))
            self._tune_visits[k] = n + 1
        self._adapt_weights(np.exp(log_q[0]), new_level, tuning)
        self._state, self._level = state.particles, new_level

        point = self.layout.to_point(state.particles.x[0])
        q = DictToArrayBijection.map(
            {name: np.asarray(point[name], dtype=dtype).reshape(shape) for name, shape, _, dtype in q0.point_map_info}
        )
        with np.errstate(divide="ignore"):
            log_weight = float(log_q[0, -1] - self.log_prior[-1] + log_zhat[-1])
        stats = {
            "beta": float(self.betas[new_level]),
            "level": new_level,
            "rb_probs": np.exp(log_q[0]),
            "log_zhat": log_zhat,
            "log_prior": self.log_prior.copy(),
            "log_weight": log_weight,
            "accept": accept,
            "step_size": step_size,
            "tune": tuning,
            # points where the model's log density was NaN or +inf so far (pmz.tempered_evidence reads them)
            "nan_evals": int(self._compiled.n_nan_evals),
            "posinf_evals": int(self._compiled.n_posinf_evals),
        }
        return q, [stats]

    def _adapt_weights(self, q, new_level, tuning):
        """Adapt ``self.log_zhat`` after a draw whose level conditional is ``q`` and new level ``new_level``."""
        raise NotImplementedError
