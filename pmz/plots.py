"""Plots of evidence results (matplotlib; each returns its axes, like ArviZ's plots).

* :func:`plot_work`: forward work ``W_f`` and negated reverse work ``-W_r`` histograms. By Crooks' theorem
  ``p_f(W) / p_r(-W) = exp(W + log Z - log Z0)``, so the two densities cross at ``W = -(log Z - log Z0)``:
  the estimate is marked there. Little overlap of the two histograms means BAR's error bar is not to be
  trusted (Habeck 2017, Figure 1).
* :func:`plot_log_z`: the draws of ``posterior.log_z`` (the histogram method's Gibbs posterior, or the normal
  approximation of the others) with the estimate and its se, for one result or several side by side.
* :func:`plot_schedule`: schedules ``b_k`` against the step ``k`` for one or several results (e.g. linear,
  VAROPT, decelerated VAROPT), the pilot's thermodynamic metric ``g(b) = Var_b[U]`` that VAROPT spaces the
  schedule by (constant thermodynamic speed ``sqrt(g) db``), and the on-the-fly ESS of the forward weights
  along the path (VAROPT Figure 4).
* :func:`plot_tempering`: a simulated-tempering result's level marginal ``c_hat_k`` against the prior ``r_k``
  (they agree when the guesses ``Zhat_k`` are good and the ladder mixes), the curve ``log Z(b_k)`` with its
  error band, and the level trajectories of a few chains (they should cross the whole ladder many times).
* :func:`plot_smc`: an SMC / ARM result's position (beta, number of observations or units) by stage, the ESS
  fraction ``R_eff / R_n`` before and after ARM's generate loop, and the particle count ``R_n`` by stage (ARM
  grows it where a stage is hard).
"""

from __future__ import annotations

import json

import numpy as np

from .inference_data import get_group, group_names

__all__ = ["plot_work", "plot_log_z", "plot_schedule", "plot_tempering", "plot_smc"]


def _axes(ax, figsize=(6, 3.5)):
    import matplotlib.pyplot as plt

    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def plot_work(result, *, bins: int = 40, ax=None, colors=("C0", "C1"), alpha: float = 0.5):
    """Histograms of forward work and negated reverse work, with ``-(log Z - log Z0)`` marked.

    Parameters
    ----------
    result : EvidenceResult
        A result with a ``work`` group (any annealing method; ``work_reverse`` for two-way methods).
    bins : int
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
    """
    if "work" not in group_names(result):
        raise ValueError("pmz: this result has no work group (methods 'ais', 'bar', 'bridge', ... have one)")
    work = get_group(result, "work")
    log_z0 = float(work.attrs.get("log_z0", 0.0))
    w_f = np.asarray(work["work_forward"]) if "work_forward" in work else None
    w_r = -np.asarray(work["work_reverse"]) if "work_reverse" in work else None
    series = [
        (v[np.isfinite(v)], label, c)
        for v, label, c in ((w_f, "forward  $W_f$", colors[0]), (w_r, "reverse  $-W_r$", colors[1]))
        if v is not None
    ]
    values = np.concatenate([v for v, _, _ in series])
    edges = np.histogram_bin_edges(values, bins=bins)
    ax = _axes(ax)
    for v, label, color in series:
        ax.hist(v, bins=edges, density=True, alpha=alpha, color=color, label=label)
    crossing = -(result.log_z - log_z0)
    ax.axvline(crossing, color="k", lw=1.5, label=f"$-\\log Z$ = {crossing:.3f} ({result.method})")
    ax.set_xlabel("work  $W = -\\log w$")
    ax.set_ylabel("density")
    ax.legend(frameon=False, fontsize="small")
    return ax


def plot_log_z(results, *, ax=None, bins: int = 40):
    """Draws of ``posterior.log_z`` for one result or a dict ``{label: result}``, with estimate +/- se."""
    if not isinstance(results, dict):
        results = {results.method: results}
    ax = _axes(ax)
    for i, (label, res) in enumerate(results.items()):
        draws = np.asarray(res.posterior["log_z"]).ravel()
        color = f"C{i}"
        ax.hist(
            draws,
            bins=bins,
            density=True,
            alpha=0.45,
            color=color,
            label=f"{label}: {res.log_z:.3f} $\\pm$ {res.log_z_se:.3f}",
        )
        ax.axvline(res.log_z, color=color, lw=1.5)
    ax.set_xlabel("$\\log Z$")
    ax.set_ylabel("posterior density")
    ax.legend(frameon=False, fontsize="small")
    return ax


def plot_schedule(results, *, axes=None):
    """Schedules, the thermodynamic metric and the on-the-fly ESS for one result or a dict ``{label: result}``.

    Left: ``b_k`` against ``k / K``. Middle: the pilot's ``g(b)`` (log scale) where the result has one (any
    annealing run with a pilot). Right: the ESS of the forward weights after each temperature, as a fraction of
    the paths.

    Returns
    -------
    array of 3 matplotlib Axes
    """
    import matplotlib.pyplot as plt

    if not isinstance(results, dict):
        results = {results.method: results}
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    for i, (label, res) in enumerate(results.items()):
        if "schedule" not in group_names(res):
            raise ValueError(f"pmz: result {label!r} has no schedule group (annealing methods have one)")
        sg = get_group(res, "schedule")
        beta = np.asarray(sg["beta"])
        rule = sg.attrs.get("schedule_rule", "")
        color = f"C{i}"
        axes[0].plot(np.linspace(0, 1, beta.size), beta, color=color, label=f"{label} ({rule}, K={beta.size - 1})")
        if "g" in sg:
            axes[1].semilogy(np.asarray(sg["pilot_beta"]), np.asarray(sg["g"]), "o-", ms=2, color=color, label=label)
        if "ess" in sg:
            n_paths = get_group(res, "work").sizes.get("path", 1) if "work" in group_names(res) else 1
            axes[2].plot(np.linspace(0, 1, beta.size), np.asarray(sg["ess"]) / n_paths, color=color, label=label)
    axes[0].set_xlabel("k / K")
    axes[0].set_ylabel("$\\beta_k$")
    axes[0].legend(frameon=False, fontsize="small")
    axes[1].set_xlabel("$\\beta$")
    axes[1].set_ylabel("$g(\\beta) = \\mathrm{Var}_\\beta[U]$ (pilot)")
    axes[2].set_xlabel("k / K")
    axes[2].set_ylabel("on-the-fly ESS / paths")
    return axes


def plot_tempering(result, *, axes=None, n_traces: int = 3):
    """Three panels for a simulated-tempering result ("rts", "ts", "ti", "ti_rb", "mbar", "wang_landau").

    Left: ``c_hat_k`` (Rao-Blackwellised level marginal of the long run) and the prior ``r_k`` against ``b_k``.
    Middle: ``log Z(b_k)`` (RTS) with a 2-se band, and Wang-Landau's ``log g`` when it ran.
    Right: the level trajectories of ``n_traces`` chains over the sweeps.

    Returns
    -------
    array of 3 matplotlib Axes
    """
    import matplotlib.pyplot as plt

    if "tempering" not in group_names(result):
        raise ValueError("pmz: this result has no tempering group (methods 'rts', 'ts', 'ti', 'ti_rb', 'mbar', ...)")
    tg = get_group(result, "tempering")
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    beta = np.asarray(tg["beta"])
    ax = axes[0]
    ax.plot(beta, np.asarray(tg["c_hat"]), "o-", ms=3, label="$\\hat c_k$ (level marginal)")
    ax.plot(beta, np.asarray(tg["prior"]), "k--", lw=1, label="$r_k$ (prior over levels)")
    ax.set_xlabel("$\\beta_k$")
    ax.set_ylabel("probability")
    ax.legend(frameon=False, fontsize="small")
    ax = axes[1]
    if "log_z_k" in tg:
        curve, se = np.asarray(tg["log_z_k"]), np.asarray(tg["log_z_k_se"])
        ax.plot(beta, curve, "-", color="C0", label="$\\log Z(\\beta_k)$ (RTS)")
        ax.fill_between(beta, curve - 2 * se, curve + 2 * se, color="C0", alpha=0.3, lw=0)
    if "log_g" in tg:
        ax.plot(beta, np.asarray(tg["log_g"]), ":", color="C3", label="Wang-Landau $\\log g_k$")
    ax.set_xlabel("$\\beta_k$")
    ax.set_ylabel("$\\log Z$")
    ax.legend(frameon=False, fontsize="small")
    ax = axes[2]
    if "level_trace" in tg:
        traces = np.asarray(tg["level_trace"])
        for j in range(min(n_traces, traces.shape[1])):
            ax.plot(traces[:, j], lw=0.8, color=f"C{j}")
    ax.set_xlabel("sweep")
    ax.set_ylabel("level $k$")
    return axes


def plot_smc(result, *, axes=None, runs=None):
    """Three panels for an SMC result (methods "smc" and "arm"), one line per run.

    Left: the position reached at each stage (``beta`` for tempering, the number of observations for data
    annealing, the number of units for an RBM). Middle: ``gamma = R_eff / R_n`` after the stage (solid) and before
    ARM generated particles (dotted), with ARM's threshold when the run used one. Right: the particles ``R_n``
    behind each stage's estimate (the base ``R`` dashed).

    Parameters
    ----------
    result : EvidenceResult
    axes : array of 3 matplotlib Axes, optional
    runs : list of int, optional
        Which runs to draw (default: all).

    Returns
    -------
    array of 3 matplotlib Axes
    """
    import matplotlib.pyplot as plt

    if "smc" not in group_names(result):
        raise ValueError("pmz: this result has no smc group (methods 'smc' and 'arm' have one)")
    sg = get_group(result, "smc")
    if axes is None:
        _, axes = plt.subplots(1, 3, figsize=(13, 3.5))
    run = np.asarray(sg["run"])
    label = sg.attrs.get("label", "position")
    tuning = sg.attrs.get("tuning", "{}")
    for j in sorted(set(run.tolist())) if runs is None else runs:
        pick = run == j
        stage = np.arange(pick.sum())
        color = f"C{j % 10}"
        axes[0].plot(stage, np.asarray(sg["position"])[pick], "-", color=color, lw=1, label=f"run {j}")
        axes[1].plot(stage, np.asarray(sg["gamma"])[pick], "-", color=color, lw=1)
        if sg.attrs.get("algorithm", "rm") != "rm":
            axes[1].plot(stage, np.asarray(sg["gamma_initial"])[pick], ":", color=color, lw=1)
        axes[2].plot(stage, np.asarray(sg["n_particles"])[pick], "-", color=color, lw=1)
    threshold = json.loads(tuning).get("gamma_threshold") if isinstance(tuning, str) else None
    if threshold is not None and sg.attrs.get("algorithm", "rm") != "rm":
        axes[1].axhline(threshold, color="k", ls="--", lw=1, label="$\\gamma_{thr}$")
        axes[1].legend(frameon=False, fontsize="small")
    axes[2].axhline(float(sg.attrs.get("n_base_particles", 0)), color="k", ls="--", lw=1)
    axes[0].set_xlabel("stage")
    axes[0].set_ylabel(label)
    axes[0].legend(frameon=False, fontsize="small")
    axes[1].set_xlabel("stage")
    axes[1].set_ylabel("$R_{eff} / R_n$")
    axes[1].set_ylim(0, 1.05)
    axes[2].set_xlabel("stage")
    axes[2].set_ylabel("particles $R_n$")
    return axes
