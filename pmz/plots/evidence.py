"""Plots of evidence results (matplotlib; each returns its axes, like ArviZ's plots).

Every plot has a title, axis labels with units (log Z, log Bayes factors and work are in nats) and a legend, and
marks the exact value where one is passed as ``truth=``. Numbers are written with as many decimals as their standard
error needs (:func:`~pmz.plots.figures.format_log_z`): an estimate of -301.7043 with se 0.0013 is never rounded to
"-302".

* :func:`plot_work`: forward work ``W_f`` and negated reverse work ``-W_r`` histograms (with forward work alone,
  ``W_f`` and the same works weighted by ``e^{-W}``). By Crooks' theorem ``p_f(W) / p_r(-W) = exp(W + log Z -
  log Z0)``, so the two densities cross at ``W = -(log Z - log Z0)``: the estimate is marked there. Little overlap
  of the two histograms means the error bar is not to be trusted (Habeck 2017, Figure 1). For the default's
  routes without work: the SMC runs' estimates, or the proof of an exact answer.
* :func:`plot_log_z`: for one result, the draws of ``evidence.log_z`` (the histogram method's Gibbs posterior, or
  the normal approximation of the others) with the estimate, its se and the exact value; for several results
  (a dict), one interval per model on the scale of the log Bayes factor against the best model (or any model, or
  log Z itself), so that models tens of nats apart with se of 0.001 still show their error bars as numbers.
* :func:`plot_schedule`: schedules ``b_k`` against the step ``k`` for one or several results (e.g. linear,
  VAROPT, decelerated VAROPT), the pilot's thermodynamic metric ``g(b) = Var_b[U]`` that VAROPT spaces the
  schedule by (constant thermodynamic speed ``sqrt(g) db``), and the on-the-fly ESS of the forward weights
  along the path (VAROPT Figure 4).
* :func:`plot_tempering`: a simulated-tempering result's level marginal ``c_hat_k`` against the prior ``r_k``
  (they agree when the guesses ``Zhat_k`` are good and the ladder mixes), the curve ``log Z(b_k)`` with its
  error band, and the level trajectories of a few chains (they should cross the whole ladder many times).
* :func:`plot_smc`: an SMC / ARM result's position (beta, number of observations or units) by stage, the ESS
  fraction ``R_eff / R_n`` before and after ARM's generate loop, the particle count ``R_n`` by stage (ARM
  grows it where a stage is hard), and each run's log Z with its ideal-condition error bar next to the pooled
  estimate: runs that disagree beyond their error bars show there.
"""

from __future__ import annotations

import numpy as np

from ..inference_data import get_group, group_names
from .figures import NATS, _decimals, _figure_axes, format_log_z

__all__ = ["plot_work", "plot_log_z", "plot_schedule", "plot_tempering", "plot_smc"]


def _plain_ticks(ax, axis="x"):
    """No offset text such as "+3.017e2" on a narrow log Z axis: the tick labels are the values themselves."""
    from matplotlib.ticker import ScalarFormatter

    formatter = ScalarFormatter(useOffset=False)
    formatter.set_scientific(False)
    (ax.xaxis if axis == "x" else ax.yaxis).set_major_formatter(formatter)


# plot_work shows the works within WORK_FENCE interquartile ranges beyond each direction's quartiles (a far fence:
# 6 sd from the mean of normal works, so normal works are all shown); the paths beyond are counted in the legend.
WORK_FENCE = 4.0


def _work_window(series, marks):
    """The x range ``(lo, hi)`` of a work histogram: the data's own range where it has no far tails, else the far
    fences of the directions' quartiles (a few stuck paths with works of 1e6 nats would squeeze the bulk into one
    bin). ``marks`` (the estimate, the exact value) widen the range when they lie near it."""
    values = [v for v in series if v.size]
    if not values:
        finite = [m for m in marks if np.isfinite(m)]
        return (min(finite) - 0.5, max(finite) + 0.5) if finite else (0.0, 1.0)
    q1 = [np.quantile(v, [0.25, 0.75]) for v in values]
    fence_lo = min(a - WORK_FENCE * (b - a) for a, b in q1)
    fence_hi = max(b + WORK_FENCE * (b - a) for a, b in q1)
    lo = max(fence_lo, min(float(v.min()) for v in values))
    hi = min(fence_hi, max(float(v.max()) for v in values))
    width = hi - lo if hi > lo else max(1.0, 1e-6 * abs(lo))
    for m in marks:  # the estimate or the exact value just outside the works: keep it in view
        if np.isfinite(m) and lo - width <= m <= hi + width:
            lo, hi = min(lo, m), max(hi, m)
    if not hi > lo:
        lo, hi = lo - width / 2, hi + width / 2
    pad = 0.02 * (hi - lo)
    return lo - pad, hi + pad


def _outside_note(v, n_infinite, lo, hi) -> str:
    """``"; 6 above the shown range, up to 1.73e+06"``: the paths of a direction the histogram does not show."""
    below, above = v[v < lo], v[v > hi]
    parts = []
    if below.size:
        parts.append(f"{below.size} below the shown range, down to {below.min():.3g}")
    if above.size:
        parts.append(f"{above.size} above the shown range, up to {above.max():.3g}")
    if n_infinite:
        parts.append(f"{n_infinite} with infinite work")
    return "; " + "; ".join(parts) if parts else ""


def _unreliable_note(result, width: int = 70, lines: int = 2) -> str | None:
    """``"UNRELIABLE: <reason>"`` wrapped to at most ``lines`` lines (None for a reliable result)."""
    import textwrap

    if bool(getattr(result, "reliable", True)):
        return None
    reason = str(getattr(result, "reliability_reason", "") or "see result.reliability_reason").replace("$", r"\$")
    wrapped = textwrap.wrap("UNRELIABLE: " + reason, width)
    if len(wrapped) > lines:
        wrapped = wrapped[: lines - 1] + [textwrap.shorten(" ".join(wrapped[lines - 1 :]), width, placeholder=" …")]
    return "\n".join(wrapped)


def plot_work(result, *, bins: int = 40, ax=None, colors=("C0", "C1"), alpha: float = 0.5, truth=None, title=None):
    """The picture behind an estimate: work histograms that cross at ``-(log Z - log Z0)``; for the default's routes
    without work, the runs' estimates or the proof of an exact answer.

    * **Two-way work** (BAR, the bridge and path routes, ...): forward work ``W_f`` and negated reverse work
      ``-W_r``; by Crooks' theorem ``p_f(W) / p_r(-W) = exp(W + log Z - log Z0)``, so they cross at the estimate.
    * **Forward work only** (AIS, importance sampling: the default's importance, latent and modes routes): ``W_f``
      and the same works weighted by ``e^{-W}``, the density ``p_f(W) e^{-W} / Z`` (what the target sees; the
      reverse work of Crooks' theorem): they cross at the estimate too, and a weighted histogram that sits where
      ``W_f`` has few draws says that a few draws carry the estimate.
    * **SMC runs** (the tempered route, the modes route by SMC, methods "smc" and "arm"): each run's log Z with its
      ideal-condition error bar (±2 se) and the pooled estimate (:func:`plot_smc`'s last panel).
    * **An exact answer** (the sum route, the latent route without hyperparameters): log Z and the property of the
      model that makes it exact.

    The x range covers the bulk of the works: where a direction has paths far out (a few paths stuck where the
    kernel cannot move them have works of 1e5-1e6 nats while the others lie within a few nats), the range stops at
    the far fences, ``WORK_FENCE`` interquartile ranges beyond the quartiles, and the legend says how many paths
    of each direction lie outside it and how far. Each histogram is a density of all the finite works of its
    direction, so one with paths outside the range holds less than 1. An unreliable result
    (``result.reliable`` False) says so in red in the title, with its reason shortened.

    Parameters
    ----------
    result : EvidenceResult
    bins : int
        Bins over the shown range (or numpy's bin rule name, or the bin edges themselves).
    ax : matplotlib Axes, optional
    truth : float, optional
        The exact log Z: ``-(truth - log Z0)`` is marked with a dashed line.
    title : str, optional
        Default: "Work distributions (<method>)". An unreliable result adds its notice below it.

    Returns
    -------
    matplotlib Axes
    """
    groups = group_names(result)
    route = result.run_attrs.get("route")
    what = f"{result.method}" + (f", {route} route" if route else "")
    if "work" not in groups:
        ax = _figure_axes() if ax is None else ax
        if "smc" in groups:
            sg = get_group(result, "smc")
            _plot_smc_runs(ax, result, sg, sorted(set(np.asarray(sg["run"]).tolist())), truth)
            return _titled(ax, result, title if title is not None else f"Independent SMC runs ({what})")
        stats = get_group(result, "evidence_stats")
        proof = None if stats is None else stats.attrs.get("proof")
        if proof:
            return _plot_exact(ax, result, proof, truth, title if title is not None else f"An exact answer ({what})")
        reason = None if stats is None else stats.attrs.get("route_reason")
        if route == "sum" and reason:  # a sum over a window whose tail is estimated, not proven: log Z +- se
            return _plot_exact(ax, result, reason, truth, title if title is not None else f"A sum ({what})",
                               exact=False)
        raise ValueError("pmz: this result has no work group (methods 'ais', 'bar', 'bridge', ... have one)")
    work = get_group(result, "work")
    log_z0 = float(work.attrs.get("log_z0", 0.0))
    w_f = np.asarray(work["work_forward"], dtype=float) if "work_forward" in work else None
    w_r = -np.asarray(work["work_reverse"], dtype=float) if "work_reverse" in work else None
    series = [
        (v[np.isfinite(v)], int(np.sum(~np.isfinite(v))), label, c)
        for v, label, c in ((w_f, "forward  $W_f$", colors[0]), (w_r, "reverse  $-W_r$", colors[1]))
        if v is not None
    ]
    crossing = -(float(result.log_z) - log_z0)
    exact = None if truth is None else -(float(truth) - log_z0)
    marks = [crossing] + ([] if exact is None else [exact])
    edges = _work_edges(bins, [v for v, _, _, _ in series], marks)
    lo, hi = float(edges[0]), float(edges[-1])
    ax = _figure_axes() if ax is None else ax
    for v, n_infinite, label, color in series:
        counts, _ = np.histogram(v, bins=edges)
        density = counts / (max(v.size, 1) * np.diff(edges))
        note = _outside_note(v, n_infinite, lo, hi)
        ax.hist(edges[:-1], bins=edges, weights=density, alpha=alpha, color=color,
                label=f"{label} ({v.size + n_infinite} paths{note})")
    if w_r is None and series and series[0][0].size:
        _plot_reweighted(ax, series[0][0], edges, colors[1], alpha)
    off = "" if lo <= crossing <= hi else " (outside the shown range)"
    ax.axvline(crossing, color="k", lw=1.5, label=f"$-\\log Z$ = {format_log_z(crossing, result.log_z_se)}{off}")
    if exact is not None:
        off = "" if lo <= exact <= hi else " (outside the shown range)"
        ax.axvline(exact, color="k", ls="--", lw=1.2, label=f"exact: {exact:.4f}{off}")
    ax.set_xlim(lo, hi)
    _plain_ticks(ax)
    ax.set_xlabel("work  $W = -\\log w$ " + NATS)
    ax.set_ylabel("density (1/nat)")
    return _titled(ax, result, title if title is not None else f"Work distributions ({what})")


def _work_edges(bins, values, marks):
    """The bin edges of a work histogram over its shown range (:func:`_work_window`)."""
    if not (isinstance(bins, str) or np.ndim(bins) == 0):
        return np.asarray(bins, dtype=float)
    lo, hi = _work_window(values, marks)
    if isinstance(bins, str):
        shown = np.concatenate([v[(v >= lo) & (v <= hi)] for v in values])
        return np.histogram_bin_edges(shown, bins=bins, range=(lo, hi))
    return np.linspace(lo, hi, int(bins) + 1)


def _plot_reweighted(ax, w_f, edges, color, alpha):
    """The forward works weighted by ``e^{-W}`` (normalised): the target's work density, with the weights' Kish
    ESS in the legend."""
    log_w = -(w_f - w_f.min())
    weights = np.exp(log_w)
    weights /= weights.sum()
    ess = 1.0 / np.sum(weights**2)
    counts, _ = np.histogram(w_f, bins=edges, weights=weights)
    ax.hist(edges[:-1], bins=edges, weights=counts / np.diff(edges), alpha=alpha, color=color,
            label=f"forward reweighted by $e^{{-W}}$ (what the target sees; ESS {ess:.0f} of {w_f.size})")


def _plot_exact(ax, result, proof, truth, heading, exact=True):
    """An exact answer: log Z (se 0) and why it is exact; with ``exact=False``, a sum whose tail is estimated:
    log Z, its se as a band, and the route's reason."""
    import textwrap

    log_z, se = float(result.log_z), float(result.log_z_se)
    what = "exact, se 0" if exact else f"se {se:.2g}"
    ax.axvline(log_z, color="k", lw=1.5, label=f"$\\log Z$ = {log_z:.6g} ({what})")
    if not exact and se > 0:
        ax.axvspan(log_z - 2 * se, log_z + 2 * se, color="0.85", label="$\\pm$ 2 se")
    if truth is not None:
        ax.axvline(float(truth), color="k", ls="--", lw=1.2, label=f"exact: {float(truth):.6g}")
    text = f"exact: {proof}" if exact else proof
    ax.text(0.02, 0.5, "\n".join(textwrap.wrap(text, 50)), transform=ax.transAxes, va="center", fontsize="small")
    ax.set_yticks([])
    _plain_ticks(ax)
    ax.set_xlabel("$\\log Z$ " + NATS)
    return _titled(ax, result, heading)


def _titled(ax, result, heading):
    """The title, with an unreliable result's notice in red below it; the legend."""
    notice = _unreliable_note(result)
    if notice is None:
        ax.set_title(heading)
    else:
        ax.set_title(f"{heading}\n{notice}", color="C3", fontsize="medium")
    ax.legend(frameon=False, fontsize="small")
    return ax


def _as_dict(results) -> dict:
    if isinstance(results, dict):
        return dict(results)
    return {None: results}


def _truth_of(truth, label):
    if truth is None:
        return None
    if isinstance(truth, dict):
        value = truth.get(label)
        return None if value is None else float(value)
    return float(truth)


def plot_log_z(results, *, truth=None, relative_to="best", ax=None, bins: int = 40, title=None):
    """The log Z of one result (its draws), or of several results as intervals on a log Bayes factor scale.

    Parameters
    ----------
    results : EvidenceResult or dict of name -> EvidenceResult
        One result (or a dict with one entry): a histogram of its ``evidence.log_z`` draws with the estimate, a
        ±1 se band and the exact value. Several: one row per result, best first, with ±1 se (thick) and ±2 se
        (thin) intervals and the value, se and posterior model probability (uniform prior) in the row's label.
    truth : float or dict of name -> float, optional
        Exact log Z (one number for one result; a dict for several), marked with a black ``x`` / dashed line.
    relative_to : "best", a name in ``results``, or None
        Several results: draw ``log Z_m - log Z_ref`` (the log Bayes factor against ``ref``, se
        ``sqrt(se_m^2 + se_ref^2)`` as in :func:`pmz.compare`) with ``ref`` the best model (default) or the model
        named; None draws log Z itself with each result's own se (several estimates of one model), in the order
        given and without model probabilities.
    ax : matplotlib Axes, optional
    bins : int
        Histogram bins (one result).
    title : str, optional

    Returns
    -------
    matplotlib Axes
    """
    results = _as_dict(results)
    if not results:
        raise ValueError("pmz.plot_log_z: no results to plot")
    if len(results) == 1:
        (label, res), = results.items()
        return _plot_one_log_z(label, res, _truth_of(truth, label), ax=ax, bins=bins, title=title)
    return _plot_log_z_intervals(results, truth, relative_to, ax=ax, title=title)


def _plot_one_log_z(label, res, truth, *, ax, bins, title):
    ax = _figure_axes() if ax is None else ax
    evidence = get_group(res, "evidence")
    draws = np.asarray(evidence["log_z"]).ravel() if evidence is not None and "log_z" in evidence else np.array([])
    draws = draws[np.isfinite(draws)]
    log_z, se = float(res.log_z), float(res.log_z_se)
    if draws.size:
        ax.hist(draws, bins=bins, density=True, alpha=0.45, color="C0", label=f"draws of log Z ({draws.size})")
    if np.isfinite(se) and se > 0:
        ax.axvspan(log_z - se, log_z + se, color="C0", alpha=0.15, lw=0, label="estimate ± 1 se")
    ax.axvline(log_z, color="C0", lw=1.8, label=f"estimate: {format_log_z(log_z, se)}")
    if truth is not None:
        d = max(_decimals(se) + 1, 4)
        ax.axvline(truth, color="k", ls="--", lw=1.2, label=f"exact: {truth:.{d}f}")
    _plain_ticks(ax)
    ax.tick_params(axis="x", labelrotation=20)
    ax.set_xlabel("$\\log Z$ " + NATS)
    ax.set_ylabel("density (1/nat)")
    default = f"log Z ({res.method})" if label is None else f"log Z of {label} ({res.method})"
    ax.set_title(title if title is not None else default)
    ax.legend(frameon=False, fontsize="small")
    return ax


def _plot_log_z_intervals(results, truth, relative_to, *, ax, title):
    names = list(results)
    log_z = np.array([float(results[n].log_z) for n in names])
    se = np.array([float(results[n].log_z_se) for n in names])
    reliable = [bool(getattr(results[n], "reliable", True)) for n in names]
    finite = np.isfinite(log_z)
    with np.errstate(invalid="ignore", over="ignore"):
        log_p = np.where(finite, log_z, -np.inf)
        probability = np.exp(log_p - np.max(log_p)) / np.sum(np.exp(log_p - np.max(log_p)))
    order = np.argsort(-np.where(finite, log_z, -np.inf), kind="stable")
    if relative_to is None:  # several estimates of one model: in the order given, no model probabilities
        order = np.arange(len(names))
        ref, shift, diff_se = None, 0.0, se
        xlabel = "$\\log Z$ " + NATS
    else:
        ref = names[int(order[0])] if relative_to == "best" else relative_to
        if ref not in results:
            raise ValueError(f"pmz.plot_log_z: relative_to={relative_to!r} is not one of {names}")
        i_ref = names.index(ref)
        shift = log_z[i_ref]
        diff_se = np.where(np.arange(len(names)) == i_ref, 0.0, np.hypot(se, se[i_ref]))
        xlabel = f"log Bayes factor against {ref!r}:  $\\log Z_m - \\log Z_{{ref}}$ " + NATS
    ax = _figure_axes(figsize=(7.0, 1.0 + 0.75 * len(names))) if ax is None else ax
    truth_ref = _truth_of(truth, ref) if ref is not None else 0.0
    tick_labels, exact_drawn = [], False
    for row, i in enumerate(order):
        y = len(names) - 1 - row
        x, s = log_z[i] - shift, diff_se[i]
        face = "C0" if reliable[i] else "white"
        if np.isfinite(s) and s > 0:
            ax.errorbar(x, y, xerr=2 * s, fmt="none", ecolor="C0", elinewidth=1, capsize=4)
            ax.errorbar(x, y, xerr=s, fmt="none", ecolor="C0", elinewidth=4)
        ax.plot([x], [y], "o", ms=7, mfc=face, mec="C0", zorder=3)
        exact = _truth_of(truth, names[i])
        if exact is not None and truth_ref is not None:
            ax.plot([exact - (truth_ref if ref is not None else 0.0)], [y], "x", color="k", ms=9, mew=2, zorder=4,
                    label=None if exact_drawn else "exact")
            exact_drawn = True
        what = "reference" if names[i] == ref else format_log_z(x, s, signed=ref is not None)
        flag = "" if reliable[i] else "  UNRELIABLE"
        odds = "" if ref is None else f"\np = {probability[i]:.3g}"
        tick_labels.append((y, f"{names[i]}{flag}\n{what}{odds}"))
    if ref is not None:
        ax.axvline(0.0, color="0.6", lw=1, ls=":")
    ys, labels = zip(*tick_labels)
    ax.set_yticks(ys, labels, fontsize="small")
    ax.set_ylim(-0.6, len(names) - 0.4)
    _plain_ticks(ax)
    ax.set_xlabel(xlabel)
    ax.set_title(title if title is not None else "Evidence of each model: ±1 se (thick), ±2 se (thin)")
    from matplotlib.lines import Line2D

    what = "estimate ± 1 se" + ("" if ref is None else " (p: posterior model probability)")
    handles = [Line2D([], [], marker="o", color="C0", lw=4, label=what)]
    if exact_drawn:
        handles.append(Line2D([], [], marker="x", color="k", ls="none", mew=2, label="exact"))
    if not all(reliable):
        handles.append(Line2D([], [], marker="o", mfc="white", mec="C0", ls="none", label="unreliable estimate"))
    ax.margins(x=0.12)
    ax.legend(handles=handles, frameon=False, fontsize="small", loc="best")
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
    if not isinstance(results, dict):
        results = {results.method: results}
    if axes is None:
        axes = _figure_axes(1, 3, figsize=(13, 3.8))
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
    axes[0].set_xlabel("step k / K")
    axes[0].set_ylabel("inverse temperature $\\beta_k$")
    axes[0].set_title("Schedule")
    axes[0].legend(frameon=False, fontsize="small")
    axes[1].set_xlabel("inverse temperature $\\beta$")
    axes[1].set_ylabel("$g(\\beta) = \\mathrm{Var}_\\beta[U]$ (nats$^2$)")
    axes[1].set_title("Thermodynamic metric (pilot)")
    axes[2].set_xlabel("step k / K")
    axes[2].set_ylabel("on-the-fly ESS / paths")
    axes[2].set_title("ESS of the forward weights")
    axes[2].set_ylim(0, 1.05)
    return axes


def plot_tempering(result, *, axes=None, n_traces: int = 3, truth=None):
    """Three panels for a simulated-tempering result ("rts", "ts", "ti", "ti_rb", "mbar", "wang_landau").

    Left: ``c_hat_k`` (Rao-Blackwellised level marginal of the long run) and the prior ``r_k`` against ``b_k``.
    Middle: ``log Z(b_k)`` (RTS) with a 2-se band, Wang-Landau's ``log g`` when it ran, and the exact log Z at
    ``beta = 1`` when ``truth`` is given. Right: the level trajectories of ``n_traces`` chains over the sweeps.

    Returns
    -------
    array of 3 matplotlib Axes
    """
    if "tempering" not in group_names(result):
        raise ValueError("pmz: this result has no tempering group (methods 'rts', 'ts', 'ti', 'ti_rb', 'mbar', ...)")
    tg = get_group(result, "tempering")
    if axes is None:
        axes = _figure_axes(1, 3, figsize=(13, 3.8))
    beta = np.asarray(tg["beta"])
    ax = axes[0]
    ax.plot(beta, np.asarray(tg["c_hat"]), "o-", ms=3, label="$\\hat c_k$ (level marginal)")
    ax.plot(beta, np.asarray(tg["prior"]), "k--", lw=1, label="$r_k$ (prior over levels)")
    ax.set_xlabel("inverse temperature $\\beta_k$")
    ax.set_ylabel("probability of level k")
    ax.set_title("Time spent at each level")
    ax.set_ylim(bottom=0)
    ax.legend(frameon=False, fontsize="small")
    ax = axes[1]
    if "log_z_k" in tg:
        curve, se = np.asarray(tg["log_z_k"]), np.asarray(tg["log_z_k_se"])
        ax.plot(beta, curve, "-", color="C0", label="$\\log Z(\\beta_k)$ (RTS) ± 2 se")
        ax.fill_between(beta, curve - 2 * se, curve + 2 * se, color="C0", alpha=0.3, lw=0)
    if "log_g" in tg:
        ax.plot(beta, np.asarray(tg["log_g"]), ":", color="C3", label="Wang-Landau $\\log g_k$")
    if truth is not None:
        ax.plot([beta[-1]], [float(truth)], "x", color="k", ms=9, mew=2, label=f"exact log Z: {float(truth):.4f}")
    ax.set_xlabel("inverse temperature $\\beta_k$")
    ax.set_ylabel("$\\log Z(\\beta)$ " + NATS)
    ax.set_title(f"log Z along the ladder: {format_log_z(result.log_z, result.log_z_se)} at $\\beta = 1$",
                 fontsize="medium")
    ax.legend(frameon=False, fontsize="small")
    ax = axes[2]
    if "level_trace" in tg:
        traces = np.asarray(tg["level_trace"])
        n_shown = min(n_traces, traces.shape[1])
        for j in range(n_shown):
            ax.plot(traces[:, j], lw=0.8, color=f"C{j}")
        ax.set_title(f"Level trajectories of {n_shown} chains (one colour each)", fontsize="medium")
    else:
        ax.set_title("Level trajectories (not recorded)", fontsize="medium")
    ax.set_xlabel("sweep")
    ax.set_ylabel("level $k$ ($\\beta = 1$ at the top)")
    return axes


def plot_smc(result, *, axes=None, runs=None, truth=None):
    """Four panels for an SMC result (methods "smc" and "arm"), one colour per run.

    Top left: the position reached at each stage (``beta`` for tempering, the number of observations for data
    annealing, the number of units for an RBM). Top right: ``gamma = R_eff / R_n`` after the stage (solid) and
    before ARM generated particles (dotted), with ARM's threshold when the run used one. Bottom left: the particles
    ``R_n`` behind each stage's estimate (the base ``R`` dashed). Bottom right: each run's log Z with its
    ideal-condition error bar (±2 se), the pooled estimate with its reported se, and the exact value when given:
    runs whose bars do not overlap disagree (the moves mix too little), however smooth the other panels look.

    Parameters
    ----------
    result : EvidenceResult
    axes : array of 4 (or 3: no run panel) matplotlib Axes, optional
    runs : list of int, optional
        Which runs to draw (default: all).
    truth : float, optional
        The exact log Z, marked in the run panel.

    Returns
    -------
    array of matplotlib Axes (4, or the 3 given)
    """
    if "smc" not in group_names(result):
        raise ValueError("pmz: this result has no smc group (methods 'smc' and 'arm' have one)")
    sg = get_group(result, "smc")
    if axes is None:
        axes = _figure_axes(2, 2, figsize=(11, 7))
    if len(axes) not in (3, 4):
        raise ValueError(f"pmz.plot_smc: axes must hold 4 (or 3) Axes, got {len(axes)}")
    run = np.asarray(sg["run"])
    label = sg.attrs.get("label", "position")
    algorithm = sg.attrs.get("algorithm", "rm")
    chosen = sorted(set(run.tolist())) if runs is None else list(runs)
    for j in chosen:
        pick = run == j
        stage = np.arange(pick.sum())
        color = f"C{j % 10}"
        axes[0].plot(stage, np.asarray(sg["position"])[pick], "-", color=color, lw=1, label=f"run {j}")
        axes[1].plot(stage, np.asarray(sg["gamma"])[pick], "-", color=color, lw=1)
        if algorithm != "rm":
            axes[1].plot(stage, np.asarray(sg["gamma_initial"])[pick], ":", color=color, lw=1)
        axes[2].plot(stage, np.asarray(sg["n_particles"])[pick], "-", color=color, lw=1)
    threshold = sg.attrs.get("gamma_threshold")
    if threshold is not None and algorithm != "rm":
        axes[1].axhline(threshold, color="k", ls="--", lw=1, label="threshold $\\gamma_{thr}$")
        axes[1].legend(frameon=False, fontsize="small", loc="lower left")
    axes[2].axhline(float(sg.attrs.get("n_base_particles", 0)), color="k", ls="--", lw=1, label="base $R$")
    axes[0].set_xlabel("stage")
    axes[0].set_ylabel(label)
    axes[0].set_title("Position reached by stage")
    axes[0].legend(frameon=False, fontsize="small", ncols=2 if len(chosen) > 4 else 1)
    axes[1].set_xlabel("stage")
    axes[1].set_ylabel("ESS fraction $R_{eff} / R_n$")
    axes[1].set_ylim(0, 1.05)
    axes[1].set_title("ESS after each stage" + (" (dotted: before generating)" if algorithm != "rm" else ""))
    axes[2].set_xlabel("stage")
    axes[2].set_ylabel("particles $R_n$")
    axes[2].set_title("Particles per stage")
    axes[2].set_ylim(bottom=0)
    axes[2].legend(frameon=False, fontsize="small")
    if len(axes) == 4:
        _plot_smc_runs(axes[3], result, sg, chosen, truth)
    return axes


def _plot_smc_runs(ax, result, sg, chosen, truth):
    run_log_z = np.asarray(sg["run_log_z"])
    run_se = np.asarray(sg["run_ideal_se"])
    log_z, se = float(result.log_z), float(result.log_z_se)
    if np.isfinite(se) and se > 0:
        ax.axhspan(log_z - se, log_z + se, color="0.5", alpha=0.25, lw=0)
    ax.axhline(log_z, color="0.3", lw=1.5, label=f"pooled: {format_log_z(log_z, se)}")
    for j in chosen:
        ax.errorbar([j], [run_log_z[j]], yerr=[2 * run_se[j]], fmt="o", color=f"C{j % 10}", capsize=4)
    if truth is not None:
        ax.axhline(float(truth), color="k", ls="--", lw=1.2, label=f"exact: {float(truth):.4f}")
    ax.set_xticks(chosen, [f"run {j}" for j in chosen])
    ax.set_xlim(min(chosen) - 0.6, max(chosen) + 0.6)
    _plain_ticks(ax, "y")
    ax.set_ylabel("$\\log Z$ " + NATS)
    diagnostics = result.diagnostics
    between, ideal = diagnostics.get("se_between"), diagnostics.get("se_ideal")
    extra = ""
    if between is not None and ideal is not None:
        extra = f"\nbetween-run se {float(between):.3g}, ideal se {float(ideal):.3g}"
    ax.set_title("log Z of each run ± 2 ideal se; pooled ± se (band)" + extra, fontsize="medium")
    ax.legend(frameon=False, fontsize="small")
