"""Coupled adaptive simulated tempering (CAST; Salakhutdinov 2010, "Learning deep Boltzmann machines using adaptive
MCMC", ICML, sections 4-6), batched over many slow/fast pairs.

Each pair has

* a **slow chain** x_s that targets ``p_1 = f_1 / Z_1`` with the plain kernel at ``beta = 1`` (Gibbs, MH, HMC: the
  chain whose states a learning rule or a user reads), and
* a **fast chain** ``(x_f, k)``: adaptive simulated tempering on a ladder ``b_0 < ... < b_{K-1} = 1``
  (:func:`uniform_ladder`: uniform in ``[beta_min, 1]``; the paper: 20 levels in ``[0.9, 1]``) with Wang-Landau
  weights ``theta_k``, targeting ``q(x, k) ∝ r_k f_{b_k}(x) exp(-theta_k)``; after every step

      theta_k <- theta_k + log(1 + gamma_t) v_k / (c r_k),      v_k = fraction of fast chains at level k,

  (:func:`pmz.runners.level_weights.wang_landau_update`: ``gamma`` halved on flat histograms, then ``c / t``).

One step (:func:`cast_step`) moves all slow and all fast chains with ONE call of the kernel (a batch of ``2 n``
particles: the slow chains sit at the top level and their level draw is discarded), draws the fast chains' levels
from ``q(k | x) ∝ r_k exp(b_k U(x) - theta_k)`` (:func:`pmz.runners.tempering_sweep.tempering_sweep`), updates the
shared Wang-Landau weights, and remembers each fast chain's most recent state at ``beta = 1``. Every ``swap_interval``
steps the pairs swap:

* ``swap="last"`` (the paper's rule): each slow chain takes its fast partner's most recent ``beta = 1`` state, if
  the partner has visited ``beta = 1`` since the last swap (a state is handed over at most once);
* ``swap="exchange"``: pairs whose fast chain is at ``beta = 1`` at the swap step exchange their two states.

With frozen weights ``"exchange"`` leaves ``p_1(x_s) q(x_f, k)`` exactly invariant (at ``k = K-1`` both states
have the density ``p_1``, so exchanging them is a measure-preserving involution), but swaps only ``~1/K`` of the
time. ``"last"`` swaps at almost every swap step; the state it hands over is the fast chain's last state before it
left ``beta = 1``, which (by reversibility) leans towards states that leave the top level easily (lower ``U``), so
the slow chain carries a small bias, which its own kernel steps between swaps partly wash out. Measured
(docs/cast.md): on a 4 x 4 Ising torus at J = 0.6, ``"last"`` with a swap every 10 steps leaves the slow chains'
E[m^2] about 6e-4 (relative 7e-4, 1/100 of the sd of m^2) too low, also with frozen exact weights; ``"exchange"``
shows no error beyond 2 se. On the 2-node MRF and the bimodal posterior of ``tests/runners/test_cast.py`` the moments
agree with the exact ones within 4 MCSE with ``"last"``.

:func:`cast_init` starts the chains; :func:`run_cast` drives the steps and returns a :class:`CASTRun` (draws of
the slow chains, fast levels, visit counts per level, Wang-Landau's ``log g``, swap counts). The PyMC step method
:class:`pmz.step_methods.CAST` calls the same :func:`cast_step` on a batch of one pair. Both take their settings
(pairs, steps, swaps, the sweep's and Wang-Landau's settings) as one
:class:`~pmz.runners.tempering_settings.CASTSettings`, documented and checked once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..kernels.base import Kernel, ParticleState, select
from ..model.target import count_evaluations
from ..progress import progress_bar
from ..validate import positive_number
from .level_weights import WangLandauState, wang_landau_init, wang_landau_update
from .tempering_settings import SWAP_RULES, WL_UPDATES, CASTSettings
from .tempering_sweep import TemperingInfo, TemperingState, tempering_init, tempering_sweep

__all__ = [
    "uniform_ladder",
    "CASTState",
    "CASTInfo",
    "CASTRun",
    "cast_init",
    "cast_step",
    "run_cast",
    "SWAP_RULES",
    "WL_UPDATES",
]


def uniform_ladder(beta_min: float = 0.9, n_temps: int = 19) -> np.ndarray:
    """``n_temps + 1`` inverse temperatures uniform in ``[beta_min, 1]``: ``b_k = beta_min + k (1 - beta_min) /
    n_temps`` (the paper's ladder is ``uniform_ladder(0.9, 19)``: 20 levels).

    >>> uniform_ladder(0.5, 2)
    array([0.5 , 0.75, 1.  ])
    """
    beta_min = float(beta_min)
    if not 0.0 <= beta_min < 1.0:
        raise ValueError(f"pmz: beta_min must lie in [0, 1), got {beta_min!r}")
    if isinstance(n_temps, bool) or int(n_temps) != n_temps or n_temps < 1:
        raise ValueError(f"pmz: n_temps must be an integer >= 1, got {n_temps!r}")
    betas = np.linspace(beta_min, 1.0, int(n_temps) + 1)
    betas[-1] = 1.0
    return betas


@dataclass(frozen=True)
class CASTState:
    """The chains of a batch of CAST pairs (the PyMC step method uses a batch of one).

    Attributes
    ----------
    slow : ParticleState
        The slow chains (n, dim), each at ``beta = 1``.
    fast : TemperingState
        The fast chains' positions and levels (n).
    wl : WangLandauState
        The fast chains' shared Wang-Landau weights (``wl.log_g``: estimates of ``log Z_k - log Z_0``).
    last_top : ParticleState
        Each fast chain's most recent state at ``beta = 1`` (rows with ``has_top`` False are placeholders).
    has_top : ndarray (n,) of bool
        Whether the fast chain has visited ``beta = 1`` since its pair's last swap.
    t : int
        Steps so far (a swap happens after steps ``swap_interval, 2 swap_interval, ...``).
    """

    slow: ParticleState
    fast: TemperingState
    wl: WangLandauState
    last_top: ParticleState
    has_top: np.ndarray
    t: int = 0


@dataclass(frozen=True)
class CASTInfo:
    """What one CAST step did, per pair.

    Attributes
    ----------
    slow_acceptance : ndarray (n,)
        The slow chains' kernel acceptance (averaged over the ``n_steps_per_temp`` kernel steps).
    fast : TemperingInfo
        The fast chains' sweep: levels at which x moved, ``log q(k | x)``, acceptance, level-move acceptance.
    swapped : ndarray (n,) of bool
        The slow chain took a state from its fast partner at this step.
    at_top : ndarray (n,) of bool
        The fast chain is at ``beta = 1`` after the step (before any exchange).
    halved : bool
        Wang-Landau's histogram was flat and ``gamma`` was halved.
    """

    slow_acceptance: np.ndarray
    fast: TemperingInfo
    swapped: np.ndarray
    at_top: np.ndarray
    halved: bool


def cast_init(
    rng,
    family,
    kernel: Kernel,
    betas,
    n_pairs: int,
    *,
    wl_gamma0: float = 1.0,
    log_g=None,
    start_x=None,
    start_fast_x=None,
    start_levels=None,
) -> CASTState:
    """Start ``n_pairs`` pairs: slow chains at exact draws of f0 (or ``start_x``), fast chains from
    :func:`pmz.runners.tempering_sweep.tempering_init` (f0 draws or ``start_fast_x``; uniform levels or
    ``start_levels``),
    Wang-Landau weights ``log_g`` (default zeros) with ``gamma = wl_gamma0``."""
    betas = np.asarray(betas, dtype=float)
    x0 = family.sample_start(rng, n_pairs) if start_x is None else np.asarray(start_x, dtype=float)
    slow = kernel.init_state(family, x0)
    fast = tempering_init(rng, family, kernel, betas, n_pairs, start_x=start_fast_x, start_levels=start_levels)
    wl = wang_landau_init(betas.size, positive_number("wl_gamma0", wl_gamma0), log_g)
    return CASTState(slow, fast, wl, fast.particles, np.zeros(n_pairs, dtype=bool), 0)


def cast_step(
    rng,
    state: CASTState,
    *,
    family,
    kernel: Kernel,
    betas,
    params,
    settings: CASTSettings,
    wl_one_over_t: bool = False,
) -> tuple[CASTState, CASTInfo]:
    """One CAST step for every pair (module docstring): one kernel call for slow and fast chains together (through
    :func:`pmz.runners.tempering_sweep.tempering_sweep`), the fast levels, the Wang-Landau update
    (:func:`pmz.runners.level_weights.wang_landau_update`, skipped when ``settings.adapt`` is False), and the swap
    (every ``settings.swap_interval`` steps, rule ``settings.swap``).

    ``params`` holds one ``KernelParams`` per level (the slow chains use the top level's); ``settings`` is a
    :class:`~pmz.runners.tempering_settings.CASTSettings` (its ``n_pairs``, ``n_steps``, ``keep_draws`` and
    ``n_snapshots`` are :func:`run_cast`'s); ``wl_one_over_t`` switches to the 1/t rule now (the step method does
    when tuning ends).
    """
    betas = np.asarray(betas, dtype=float)
    K, n = betas.size, state.has_top.size
    top = K - 1
    log_prior = settings.log_prior_of(K)
    joint = TemperingState(
        ParticleState.concatenate([state.slow, state.fast.particles]),
        np.concatenate([np.full(n, top), state.fast.levels]),
    )
    moved, info = tempering_sweep(
        rng, joint, family=family, kernel=kernel, betas=betas, params=params, log_zhat=state.wl.log_g,
        settings=settings,
    )
    slow_rows, fast_rows = np.arange(n), np.arange(n, 2 * n)
    slow = moved.particles.take(slow_rows)  # the slow chains' level draw is discarded: they stay at beta = 1
    fast = TemperingState(moved.particles.take(fast_rows), moved.levels[fast_rows])
    fast_info = TemperingInfo(
        info.moved_at[fast_rows], info.log_q[fast_rows], info.acceptance[fast_rows], info.level_accepted[fast_rows]
    )

    wl, halved = state.wl, False
    if settings.adapt:
        occupied = np.bincount(fast.levels, minlength=K)
        visits = np.exp(fast_info.log_q).mean(axis=0) if settings.wl_update == "rb" else occupied / n
        wl, wl_info = wang_landau_update(
            wl, visits, occupied, log_prior=log_prior, flatness=settings.wl_flatness,
            time_unit=settings.wl_time_unit, one_over_t=wl_one_over_t,
        )
        halved = wl_info.halved

    at_top = fast.levels == top
    last_top = select(at_top, fast.particles, state.last_top)
    has_top = state.has_top | at_top
    t = state.t + 1
    swapped = np.zeros(n, dtype=bool)
    if t % settings.swap_interval == 0:
        if settings.swap == "last":
            swapped = has_top
            slow = select(swapped, last_top, slow)
            has_top = np.zeros(n, dtype=bool)
        else:  # "exchange": x_s <-> x_f where the fast chain is at beta = 1 now
            swapped = at_top
            slow, fast_particles = select(at_top, fast.particles, slow), select(at_top, slow, fast.particles)
            fast = TemperingState(fast_particles, fast.levels)
            last_top = select(at_top, fast_particles, last_top)
    new_state = CASTState(slow, fast, wl, last_top, has_top, t)
    return new_state, CASTInfo(info.acceptance[slow_rows], fast_info, swapped, at_top, halved)


@dataclass(frozen=True)
class CASTRun:
    """What :func:`run_cast` records.

    Attributes
    ----------
    betas, log_prior : ndarray (K,)
        The ladder and ``log r_k``.
    slow_draws : ndarray (n_steps, n_pairs, dim) or None
        The slow chains after every step (``keep_draws``): draws of ``p_1``.
    fast_draws : ndarray (n_steps, n_pairs, dim) or None
        The fast chains' positions after every step (``keep_draws``).
    fast_levels : ndarray (n_steps, n_pairs) of int
        The fast chains' levels after every step.
    visits : ndarray (K,)
        Fast-chain visits per level (all steps, all pairs).
    log_g : ndarray (K,)
        The final Wang-Landau weights: estimates of ``log Z_k - log Z_0``.
    log_g_history : ndarray (n_snapshots, K)
        ``log_g`` at evenly spaced steps (``snapshot_steps``).
    snapshot_steps : ndarray (n_snapshots,) of int
    gamma : ndarray (n_steps,)
        Wang-Landau's ``gamma`` after each step.
    halvings : ndarray of int
        Steps at which the histogram was flat.
    one_over_t_from : int
        Step at which the 1/t rule took over, or -1.
    swaps : ndarray (n_pairs,) of int
        Swaps per pair; ``n_swap_steps`` swap steps were offered.
    n_swap_steps : int
    slow_acceptance : float
        Mean kernel acceptance of the slow chains.
    fast_acceptance : ndarray (K,)
        Mean kernel acceptance of the fast chains per level (NaN where never visited).
    final : CASTState
    n_logp_evals, n_grad_evals : int
    settings : dict
        The run's settings (those of its :class:`~pmz.runners.tempering_settings.CASTSettings` but ``log_prior``,
        ``wl_time_unit``, ``keep_draws`` and ``n_snapshots``, with ``wl_update`` as ``update``) and the kernel's name.
    """

    betas: np.ndarray
    log_prior: np.ndarray
    slow_draws: np.ndarray | None
    fast_draws: np.ndarray | None
    fast_levels: np.ndarray
    visits: np.ndarray
    log_g: np.ndarray
    log_g_history: np.ndarray
    snapshot_steps: np.ndarray
    gamma: np.ndarray
    halvings: np.ndarray
    one_over_t_from: int
    swaps: np.ndarray
    n_swap_steps: int
    slow_acceptance: float
    fast_acceptance: np.ndarray
    final: CASTState
    n_logp_evals: int
    n_grad_evals: int
    settings: dict


def run_cast(
    family,
    kernel: Kernel,
    betas,
    params=None,
    settings: CASTSettings | None = None,
    *,
    rng: np.random.Generator,
    log_g=None,
    start_x=None,
    start_fast_x=None,
    progressbar: bool = False,
) -> CASTRun:
    """Run ``settings.n_pairs`` CAST pairs for ``settings.n_steps`` steps (a short driver around :func:`cast_init`
    and :func:`cast_step`).

    ``params``: one ``KernelParams`` per level (default: the kernel's default parameters at every level, right for
    Gibbs kernels; tune HMC with :func:`pmz.runners.pilot.tune_along_schedule`). ``settings``: a
    :class:`~pmz.runners.tempering_settings.CASTSettings` (default: the paper's, 50 pairs and a swap every 50 of
    1000 steps). ``log_g``: initial Wang-Landau weights (default zeros); ``adapt=False`` in ``settings`` keeps them
    there (simulated tempering with fixed weights: with ``swap="exchange"`` the pairs then leave
    ``p_1(x_s) q(x_f, k)`` exactly invariant). ``start_x``, ``start_fast_x``: the slow and fast chains' starts
    (default: exact draws of f0).

    Examples
    --------
    >>> from pmz.families.energy import EnergyFamily
    >>> from pmz.systems import two_node_mrf
    >>> model = two_node_mrf().model
    >>> settings = CASTSettings(n_pairs=20, n_steps=400, swap_interval=10)
    >>> run = run_cast(EnergyFamily(model), model.kernel, uniform_ladder(0.0, 9), settings=settings,
    ...                rng=np.random.default_rng(0))
    >>> run.slow_draws.shape, int(run.swaps.sum()) > 0
    ((400, 20, 2), True)
    """
    settings = CASTSettings() if settings is None else settings
    betas = np.asarray(betas, dtype=float)
    if betas.ndim != 1 or betas.size < 2 or betas[-1] != 1.0 or np.any(np.diff(betas) <= 0):
        raise ValueError("pmz: betas must increase strictly and end at 1")
    K, n_steps, n_pairs = betas.size, settings.n_steps, settings.n_pairs
    params = [kernel.default_params(family.dim)] * K if params is None else list(params)
    if len(params) != K:
        raise ValueError(f"pmz: need one KernelParams per level ({K}), got {len(params)}")
    log_prior = settings.log_prior_of(K)
    keep_draws = settings.keep_draws
    evals = count_evaluations(family)
    state = cast_init(
        rng, family, kernel, betas, n_pairs, wl_gamma0=settings.wl_gamma0, log_g=log_g, start_x=start_x,
        start_fast_x=start_fast_x,
    )
    dim = state.slow.x.shape[1]
    slow_draws = np.empty((n_steps, n_pairs, dim)) if keep_draws else None
    fast_draws = np.empty((n_steps, n_pairs, dim)) if keep_draws else None
    fast_levels = np.empty((n_steps, n_pairs), dtype=int)
    gammas, halvings, swaps = np.empty(n_steps), [], np.zeros(n_pairs, dtype=int)
    snapshot_steps = np.unique(np.linspace(0, n_steps - 1, min(settings.n_snapshots, n_steps)).astype(int))
    history = np.empty((snapshot_steps.size, K))
    slow_accept, accept_sum, accept_n = 0.0, np.zeros(K), np.zeros(K)
    snap = 0
    with progress_bar(total=n_steps, desc="CAST", disable=not progressbar) as bar:
        for i in range(n_steps):
            state, info = cast_step(
                rng, state, family=family, kernel=kernel, betas=betas, params=params, settings=settings,
            )
            if keep_draws:
                slow_draws[i], fast_draws[i] = state.slow.x, state.fast.particles.x
            fast_levels[i] = state.fast.levels
            gammas[i] = state.wl.gamma
            if info.halved:
                halvings.append(i + 1)
            swaps += info.swapped
            slow_accept += float(np.mean(info.slow_acceptance))
            accept_sum += np.bincount(info.fast.moved_at, weights=info.fast.acceptance, minlength=K)
            accept_n += np.bincount(info.fast.moved_at, minlength=K)
            if snap < snapshot_steps.size and i == snapshot_steps[snap]:
                history[snap] = state.wl.log_g
                snap += 1
            bar.update(1)
    with np.errstate(invalid="ignore"):
        fast_acceptance = accept_sum / accept_n
    recorded = dict(
        n_pairs=n_pairs, n_steps=n_steps, swap_interval=settings.swap_interval, swap=settings.swap,
        wl_gamma0=settings.wl_gamma0, wl_flatness=settings.wl_flatness, update=settings.wl_update,
        adapt=settings.adapt, level_move=settings.level_move, n_steps_per_temp=settings.n_steps_per_temp,
        kernel=kernel.name,
    )
    return CASTRun(
        betas=betas,
        log_prior=log_prior,
        slow_draws=slow_draws,
        fast_draws=fast_draws,
        fast_levels=fast_levels,
        visits=np.bincount(fast_levels.ravel(), minlength=K).astype(float),
        log_g=state.wl.log_g,
        log_g_history=history,
        snapshot_steps=snapshot_steps,
        gamma=gammas,
        halvings=np.array(halvings, dtype=int),
        one_over_t_from=int(state.wl.one_over_t_from),
        swaps=swaps,
        n_swap_steps=n_steps // settings.swap_interval,
        slow_acceptance=slow_accept / max(n_steps, 1),
        fast_acceptance=fast_acceptance,
        final=state,
        n_logp_evals=evals.n_logp_evals,
        n_grad_evals=evals.n_grad_evals,
        settings=recorded,
    )
