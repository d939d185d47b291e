"""Simulated tempering as PyMC step methods: ``pm.sample(step=pmz.SimulatedTempering())``.

Both samplers run ONE simulated-tempering chain per PyMC chain on the power-posterior ladder
``0 = b_0 < ... < b_{K-1} = 1`` (``K = n_temps + 1`` levels; ``f_b(x) = prior(x) likelihood(x)^b`` on pmz's flat
unconstrained space) and target the joint (Marinari & Parisi 1992; Geyer & Thompson 1995)

    q(x, k) ∝ r_k f_{b_k}(x) / Zhat_k,          r_k = 1 / K (uniform prior over levels).

One ``astep`` (one PyMC draw) is one sweep of RTS Algorithm 1 (Carlson et al. 2016):

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
  2008): ``log eps_k <- log eps_k + eta_n (a - 0.8)`` with ``a`` the HMC acceptance probability,
  ``eta_n = 0.5 (1 + n)^-0.6`` and ``n`` the tuning visits of level k so far;
* :class:`SimulatedTempering` (``adapt_weights=True``): the Rao-Blackwellised stochastic-approximation update of
  SAMC (Liang, Liu & Carroll 2007; Atchade & Liu 2010) with the indicator of the visited level replaced by
  ``q(. | x)``:

      log Zhat_k <- log Zhat_k + gamma_t (q(k | x_t) / r_k - 1),      gamma_t = min(0.1, 1 / t),

  t the step count of the chain. Its mean field ``d log Zhat_k / dt = q_k / r_k - 1`` has, near the solution
  ``Zhat = Z``, the Jacobian ``-(I - 1 r')``: every direction that matters relaxes at rate 1, which makes the gain
  ``1 / t`` the efficient one (any ``c / t`` with ``c > 1/2`` converges at the ``1/sqrt(t)`` rate; ``c = 1`` gives the
  smallest asymptotic variance), and the cap 0.1 keeps the first steps from throwing away the pilot's guess
  (``|q_k / r_k - 1| <= K - 1``). The guesses are renormalised to ``log Zhat_0 = 0`` after every update.
* :class:`WangLandau`: the level weights ``theta_k = log Zhat_k`` adapt during tuning AND sampling (Wang & Landau
  2001; Atchade & Liu 2010; Belardinelli & Pereyra 2007), see its docstring.

After tuning, :class:`SimulatedTempering` is a fixed Markov kernel leaving ``q`` invariant, and the RTS estimate
(RTS eq 10) from the post-tuning draws is consistent; :class:`WangLandau` keeps adapting with a vanishing gain, and
:func:`pmz.step_methods.rts` combines its draws (with their different guesses) through the multinomial likelihood
of RTS Appendix A.

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
from ..kernels.base import KernelParams
from ..kernels.hmc import HamiltonianMC
from ..runners.pilot import tune_along_schedule
from ..model.pymc import ModelSpecificationError
from ..runners.levels import LEVEL_MOVES, level_log_probs, move_levels
from ..runners.tempering import uniform_log_prior
from .base import PowerPosteriorStep

__all__ = ["SimulatedTempering", "WangLandau"]

_TARGET_ACCEPT = 0.8
_LOG_EPS_BOUNDS = (-12.0, 3.0)  # the pilot's bounds (pmz.kernels.tuning)
_VECTOR_STATS = ("rb_probs", "log_zhat", "log_prior")


def _checked_value_vars(model, vars, blocked: bool, who: str):
    """The value variables the step updates: all free variables of the model, all continuous."""
    discrete = [model.values_to_rvs[v].name for v in model.value_vars if v.type.dtype in discrete_dtypes]
    if discrete:
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
        if level_move not in LEVEL_MOVES:
            raise ValueError(f"pmz: level_move must be one of {LEVEL_MOVES}, got {level_move!r}")
        if isinstance(n_pilot, bool) or int(n_pilot) != n_pilot or n_pilot < 2:
            raise ValueError(f"pmz: n_pilot must be an integer >= 2, got {n_pilot!r}")
        self.model = model
        self.betas = make_schedule(schedule, n_temps)
        K = self.betas.size
        self.n_levels = K
        self.log_prior = uniform_log_prior(K)
        if log_zhat is not None:
            log_zhat = np.asarray(log_zhat, dtype=float)
            if log_zhat.shape != (K,) or not np.all(np.isfinite(log_zhat)):
                raise ValueError(f"pmz: log_zhat must hold {K} finite guesses of log Z_k (one per level)")
            log_zhat = log_zhat - log_zhat[0]
        self.initial_log_zhat = log_zhat
        self.level_move = level_move
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
        }
        self.stats_dtypes_shapes = shapes
        self.stats_dtypes = [
            {name: np.dtype((dtype, tuple(shape))) if shape else dtype for name, (dtype, shape) in shapes.items()}
        ]
        self.tune = True
        super().__init__(value_vars, {}, blocked, rng=rng)
        self._reset_chain()

    # ------------------------------------------------------------------ PyMC hooks
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

    # ------------------------------------------------------------------ one draw
    def astep(self, q0: RaveledVars):
        x = self.layout.from_point(DictToArrayBijection.rmap(q0))
        if self._level is None:
            self._start_chain(x)
        state = self._state_at(x)
        k = self._level
        tuning = bool(self.tune)
        step_size = float(np.exp(self._log_eps[k]))
        params = KernelParams(step_size, self._scales[k], self.kernel.n_leapfrog)
        state, info = self.kernel.step(self.rng, state, self.family, self.betas[k], params)
        accept = float(info.acceptance[0])
        log_zhat = self.log_zhat.copy()
        log_q = level_log_probs(state.parts.U, self.betas, log_zhat, self.log_prior)
        new_level = int(move_levels(self.rng, np.array([k]), log_q, self.level_move)[0][0])

        self._t += 1
        if tuning:
            n = self._tune_visits[k]
            eta = 0.5 * (1.0 + n) ** -0.6
            self._log_eps[k] = np.clip(self._log_eps[k] + eta * (accept - _TARGET_ACCEPT), *_LOG_EPS_BOUNDS)
            self._tune_visits[k] = n + 1
        self._adapt_weights(np.exp(log_q[0]), new_level, tuning)
        self._state, self._level = state, new_level

        point = self.layout.to_point(state.x[0])
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
        }
        return q, [stats]

    def _adapt_weights(self, q, new_level, tuning):
        raise NotImplementedError


class SimulatedTempering(_TemperingStep):
    """Simulated tempering over the power-posterior ladder, one chain per PyMC chain (RTS Algorithm 1).

    Use ``pm.sample(step=pmz.SimulatedTempering(...))`` on a continuous model, then ``pmz.rts(idata)`` for
    log p(y) and ``pmz.tempered_weights(idata)`` for posterior expectations from all draws. See
    :mod:`pmz.step_methods.tempering` for the algorithm, the adaptation during tuning and the stats.

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
        if not (tuning and self.adapt_weights):
            return
        gamma = min(0.1, 1.0 / self._t)
        log_zhat = self.log_zhat + gamma * (q / np.exp(self.log_prior) - 1.0)
        self.log_zhat = log_zhat - log_zhat[0]


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
    :func:`pmz.step_methods.rts` treats each draw with the guesses it was made with (RTS Appendix A), which is
    what makes the draws usable. pmz's many-chain runner (:mod:`pmz.runners.wang_landau`) applies
    ``log(1 + gamma) v_k / r_k`` per sweep (``v_k``: the fraction of chains at level k), i.e. one sweep moves the
    weights as much as K single-chain steps, and its 1/t rule in sweeps is ``gamma_t = 1 / t``: the same schedule.

    Parameters
    ----------
    vars, n_temps, schedule, log_zhat, level_move, n_leapfrog, n_pilot, model, rng, blocked
        As for :class:`SimulatedTempering`. ``log_zhat`` (default: the pilot's estimate) starts ``theta``.
    gamma0 : float
        Initial modification factor ``log(1 + gamma0)``.
    flatness : float in (0, 1)
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
        gamma0: float = 1.0,
        flatness: float = 0.2,
        n_pilot: int = 256,
        compile_mode=None,
        model=None,
        rng=None,
        blocked: bool = True,
    ):
        if not gamma0 > 0:
            raise ValueError(f"pmz: gamma0 must be positive, got {gamma0!r}")
        if not 0 < flatness < 1:
            raise ValueError(f"pmz: flatness must lie in (0, 1), got {flatness!r}")
        self.gamma0 = float(gamma0)
        self.flatness = float(flatness)
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

    def _reset_chain(self):
        super()._reset_chain()
        self.gamma = self.gamma0
        self.one_over_t_from = -1  # step where the 1/t rule took over
        self.halvings = []
        self._histogram = np.zeros(self.n_levels)

    def _adapt_weights(self, q, new_level, tuning):
        K, t = self.n_levels, self._t
        prior = np.exp(self.log_prior)
        if self.one_over_t_from < 0 and not tuning:
            self.one_over_t_from = t
        if self.one_over_t_from >= 0:
            self.gamma = K / t
        theta = self.log_zhat.copy()
        theta[new_level] += np.log1p(self.gamma) / (K * prior[new_level])
        self.log_zhat = theta - theta[0]
        if self.one_over_t_from >= 0:
            return
        self._histogram[new_level] += 1
        h = self._histogram / prior
        if np.all(h >= (1 - self.flatness) * np.mean(h)):
            self.gamma /= 2.0
            self.halvings.append(t)
            self._histogram = np.zeros(K)
            if self.gamma < K / t:
                self.one_over_t_from, self.gamma = t, K / t
