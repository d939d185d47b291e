"""Plot of a prior-sensitivity table: log Z or log Bayes factor against a prior's parameter (matplotlib).

Reliable rows are drawn with ±1 se (thick) and ±2 se (thin) error bars; unreliable rows
(:mod:`pmz.studies.prior_sensitivity`: Pareto k-hat above the limit, too few effective draws, an unreliable run) as
hollow red circles without an error bar, labelled with their k-hat: the reweighted value there is not an estimate to
read.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from .figures import NATS, _figure_axes, format_log_z

__all__ = ["plot_prior_sensitivity"]


def _x_of(table, x):
    """One x value per row (NaN: the row is not drawn), and whether the axis is categorical."""
    if x is None:
        return np.arange(len(table), dtype=float), True
    if isinstance(x, Mapping):
        return np.array([float(x.get(label, np.nan)) for label in table.index]), False
    values = np.asarray(x, dtype=float)
    if values.shape != (len(table),):
        raise ValueError(f"pmz.plot_prior_sensitivity: x has {values.size} values for the table's {len(table)} rows "
                         "(give one per row, or a dict {label: value})")
    return values, False


def plot_prior_sensitivity(table, x=None, *, y=None, truth=None, ax=None, xlabel=None, xscale=None, title=None):
    """log Z (or log Bayes factor) under each prior of a sensitivity table, against a parameter of the prior.

    Parameters
    ----------
    table : pandas.DataFrame
        From :func:`pmz.prior_sensitivity` (columns ``log_z``, ``log_z_se``) or
        :func:`pmz.bayes_factor_sensitivity` (``log_bf``, ``log_bf_se``).
    x : dict of label -> number, or a sequence with one number per row, optional
        The prior's parameter of each row (e.g. the prior sd of a coefficient); rows without one are left out.
        Default: the rows side by side, labelled by their names.
    y : str, optional
        The column to draw (its se in ``y + "_se"``); default ``log_bf`` when the table has it, else ``log_z``.
    truth : dict of label -> number, or a sequence with one number per row, optional
        Exact values, marked with a black ``x``.
    ax : matplotlib Axes, optional
    xlabel, title : str, optional
    xscale : {"linear", "log"}, optional
        Default: ``"log"`` when every x is positive and they span a factor of 10 or more.

    Returns
    -------
    matplotlib Axes
    """
    y = y or ("log_bf" if "log_bf" in table.columns else "log_z")
    if y not in table.columns or f"{y}_se" not in table.columns:
        raise ValueError(f"pmz.plot_prior_sensitivity: the table has no columns {y!r} and {y + '_se'!r}")
    xs, categorical = _x_of(table, x)
    values = table[y].to_numpy(dtype=float)
    ses = table[f"{y}_se"].to_numpy(dtype=float)
    reliable = table["reliable"].to_numpy(dtype=bool) if "reliable" in table.columns else np.ones(len(table), bool)
    khat = table["pareto_k"].to_numpy(dtype=float) if "pareto_k" in table.columns else np.full(len(table), np.nan)
    shown = np.isfinite(xs) & np.isfinite(values)
    ax = _figure_axes() if ax is None else ax
    order = np.flatnonzero(shown)[np.argsort(xs[shown], kind="stable")]
    good = [i for i in order if reliable[i]]
    if good:
        ax.plot(xs[good], values[good], "-", color="C0", lw=1, alpha=0.5)
    for i in order:
        if reliable[i]:
            if np.isfinite(ses[i]) and ses[i] > 0:
                ax.errorbar(xs[i], values[i], yerr=2 * ses[i], fmt="none", ecolor="C0", elinewidth=1, capsize=3)
                ax.errorbar(xs[i], values[i], yerr=ses[i], fmt="none", ecolor="C0", elinewidth=4)
            ax.plot([xs[i]], [values[i]], "o", color="C0", ms=6, zorder=3)
        else:
            ax.plot([xs[i]], [values[i]], "o", mfc="white", mec="C3", mew=1.5, ms=8, zorder=3)
            if np.isfinite(khat[i]) or np.isinf(khat[i]):
                ax.annotate(f"k̂ = {khat[i]:.2g}", (xs[i], values[i]), textcoords="offset points", xytext=(6, 6),
                            fontsize="small", color="C3")
    if truth is not None:
        exact, _ = _x_of(table, truth) if not isinstance(truth, Mapping) else (
            np.array([float(truth.get(label, np.nan)) for label in table.index]), False)
        keep = shown & np.isfinite(exact)
        ax.plot(xs[keep], exact[keep], "x", color="k", ms=8, mew=2, zorder=4, label="exact")
    if "as fitted" in table.index:
        i = table.index.get_loc("as fitted")
        if shown[i]:
            ax.plot([xs[i]], [values[i]], "s", mfc="none", mec="k", ms=12, zorder=5,
                    label=f"as fitted: {format_log_z(values[i], ses[i], signed=y == 'log_bf')}")
    if y == "log_bf":
        ax.axhline(0.0, color="0.6", lw=1, ls=":")
    if categorical:
        ax.set_xticks(xs, [str(label) for label in table.index], rotation=20)
    elif xscale is not None or (np.all(xs[shown] > 0) and xs[shown].max() >= 10 * xs[shown].min()):
        ax.set_xscale(xscale or "log")
    ax.set_xlabel(xlabel or ("prior" if categorical else "prior parameter"))
    ax.set_ylabel(("log Bayes factor" if y == "log_bf" else "$\\log Z$") + " " + NATS)
    ax.set_title(title if title is not None else f"Prior sensitivity: {y.replace('_', ' ')} ±1 se (thick), ±2 se")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", color="C0", lw=4, label="reweighted estimate ± 1 se")]
    if not reliable[shown].all():
        handles.append(Line2D([], [], marker="o", mfc="white", mec="C3", ls="none",
                              label="unreliable (see the table's reason)"))
    handles += ax.get_legend_handles_labels()[0]
    ax.legend(handles=handles, frameon=False, fontsize="small", loc="best")
    return ax
