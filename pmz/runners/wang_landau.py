"""Wang-Landau adaptive simulated tempering (Wang & Landau 2001; Atchade & Liu 2010; Salakhutdinov 2010, CAST
sections 4-6; Belardinelli & Pereyra 2007 for the 1/t rule).

Simulated tempering needs ``log Zhat_k ~= log Z_k`` for its levels to mix. Wang-Landau learns them online: the
chains sample ``q(x, k) ∝ r_k f_k(x) exp(-theta_k)`` and after every sweep

    theta_k <- theta_k + log(1 + gamma_t) * v_k / r_k,

where ``v_k`` is the fraction of chains now at level k (``wl_update="counts"``) or the Rao-Blackwellised
``mean_i q(k | x_i)`` (``wl_update="rb"``): the chains act as one walker whose visits are averaged (with one chain
this is the classic update of the visited level, up to the factor ``1 / r_k = K``); occupied levels are
penalised until every level is visited as often as ``r_k`` asks. ``gamma_t`` starts at ``wl_gamma0`` and is halved
whenever the visit histogram since the last halving is flat (every level within ``wl_flatness`` of the mean); when a
halving takes it below ``1 / t`` (t the sweep count) it follows ``gamma_t = 1 / t`` from then on (the 1/t rule of
Belardinelli & Pereyra, which avoids WL's error saturation: their ``ln f = N_levels / steps``; one sweep here moves
the weights as much as K single-walker steps, so in sweeps the rule reads ``1 / t``). ``theta_k - theta_0`` estimates
``log Z_k - log Z_0``: good enough to start RTS, too noisy for a final answer (the chains' moves depend on the
adapting weights). pmz uses it as an initialiser; the reported log Z comes from an RTS run with frozen weights.
The run's settings (:class:`~pmz.runners.tempering_settings.WangLandauSettings`: chains, sweeps, the sweep's and the
rule's settings) are documented and checked once, in :mod:`pmz.runners.tempering_settings`.
"""

from __future__ import annotations

import numpy as np

from ..kernels.base import Kernel
from ..progress import progress_bar
from .level_weights import wang_landau_init, wang_landau_update
from .tempering_settings import WL_UPDATES, WangLandauSettings
from .tempering_sweep import tempering_init, tempering_sweep

__all__ = ["run_wang_landau", "WL_UPDATES"]


def run_wang_landau(
    family,
    kernel: Kernel,
    betas,
    params,
    settings: WangLandauSettings,
    *,
    rng: np.random.Generator,
    log_g=None,
    start_x=None,
    progressbar: bool = True,
):
    """Adapt level weights by Wang-Landau for ``settings.n_sweeps`` sweeps of ``settings.n_chains`` chains: a short
    driver around :func:`pmz.runners.tempering_sweep.tempering_sweep` and
    :func:`pmz.runners.level_weights.wang_landau_update`. ``log_g``: the first weights (default zeros);
    ``start_x``: the chains' start (default: exact draws of f0; levels uniform).

    Returns ``(log_g, x, levels, info)``: the learnt ``theta - theta_0`` (an estimate of ``log Z_k - log Z_0``),
    the chains' last positions and levels, and a dict with ``gamma`` (per sweep), ``halvings`` (sweeps at which
    the histogram was flat), ``one_over_t_from`` (sweep where the 1/t rule took over, or -1), ``histogram``
    (visits since the last halving), ``visits`` (all visits), ``log_g_history`` (``n_snapshots`` x K) and
    ``level_traces``.
    """
    betas = np.asarray(betas, dtype=float)
    K = betas.size
    n_chains, n_sweeps, update = settings.n_chains, settings.n_sweeps, settings.wl_update
    log_prior = settings.log_prior_of(K)
    wl = wang_landau_init(K, settings.wl_gamma0, log_g)
    state = tempering_init(rng, family, kernel, betas, n_chains, start_x=start_x)
    visits = np.zeros(K)
    gammas, halvings = np.empty(n_sweeps), []
    snapshot_at = set(
        np.unique(np.linspace(0, n_sweeps - 1, min(settings.n_snapshots, n_sweeps)).astype(int)).tolist()
    )
    history = []
    n_traces = min(settings.n_traces, n_chains)
    level_traces = np.empty((n_sweeps, n_traces), dtype=int)
    with progress_bar(total=n_sweeps, desc="Wang-Landau", disable=not progressbar) as bar:
        for t in range(1, n_sweeps + 1):
            state, info = tempering_sweep(
                rng, state, family=family, kernel=kernel, betas=betas, params=params, log_zhat=wl.log_g,
                settings=settings,
            )
            occupied = np.bincount(state.levels, minlength=K)
            v = np.exp(info.log_q).mean(axis=0) if update == "rb" else occupied / n_chains
            wl, wl_info = wang_landau_update(
                wl, v, occupied, log_prior=log_prior, flatness=settings.wl_flatness, time_unit=settings.wl_time_unit
            )
            visits += occupied
            if wl_info.halved:
                halvings.append(t)
            gammas[t - 1] = wl.gamma
            level_traces[t - 1] = state.levels[:n_traces]
            if t - 1 in snapshot_at:
                history.append(wl.log_g.copy())
            bar.update(1)
    info = {
        "gamma": gammas,
        "halvings": np.array(halvings, dtype=int),
        "one_over_t_from": int(wl.one_over_t_from),
        "histogram": wl.histogram,
        "visits": visits,
        "log_g_history": np.array(history),
        "level_traces": level_traces,
        "update": update,
    }
    return wl.log_g, state.particles.x, state.levels, info
