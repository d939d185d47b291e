"""The calibration curve of posterior model probabilities and its plot (of :func:`pmz.calibrate_bayes_factors`).

Calibration curve of model ``k``: the simulations are grouped by their posterior probability ``p_s = p(M_k | y_s)``
into bins of equal width on [0, 1]; in each bin ``b`` with ``n_b`` simulations, the mean predicted probability
``pbar_b`` is set against the observed frequency ``f_b`` of simulations that model ``k`` made. Calibrated
probabilities give ``f_b = pbar_b`` up to binomial noise: under calibration ``n_b f_b`` is a sum of independent
Bernoulli(``p_s``) outcomes, with standard deviation ``sqrt(sum_s p_s (1 - p_s)) / n_b`` in frequency, the error
bar drawn (it does not vanish in a bin where all or none of the simulations came from model ``k``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .figures import _figure_axes

__all__ = ["calibration_curve", "plot_bayes_factor_calibration"]


def calibration_curve(result, model=None, *, n_bins: int = 10) -> pd.DataFrame:
    """The calibration curve of one model's posterior probability.

    Parameters
    ----------
    result : BayesFactorCalibration
    model : str, optional
        Default: the last model.
    n_bins : int
        Bins of equal width on [0, 1]; empty bins are left out.

    Returns
    -------
    pandas.DataFrame, one row per non-empty bin: ``bin_lower``, ``bin_upper``, ``n`` (simulations in the bin),
    ``mean_probability`` (``pbar_b``), ``frequency`` (``f_b``, how often ``model`` was the true model) and
    ``frequency_se`` (``sqrt(sum p_s (1 - p_s)) / n_b``, the binomial se under calibration).
    """
    sims = result["simulations"]
    names = [str(n) for n in sims["model"].values]
    model = names[-1] if model is None else str(model)
    if model not in names:
        raise ValueError(f"pmz.calibration_curve: model {model!r} is not one of {names}")
    p = np.asarray(sims["probability"].sel(model=model), dtype=float)
    truth = np.asarray(sims["true_model"]).astype(str) == model
    keep = np.isfinite(p)
    p, truth = p[keep], truth[keep]
    edges = np.linspace(0.0, 1.0, int(n_bins) + 1)
    which = np.clip(np.searchsorted(edges, p, side="right") - 1, 0, int(n_bins) - 1)
    rows = []
    for b in range(int(n_bins)):
        inside = which == b
        n = int(inside.sum())
        if n:
            rows.append({"bin_lower": edges[b], "bin_upper": edges[b + 1], "n": n,
                         "mean_probability": float(p[inside].mean()), "frequency": float(truth[inside].mean()),
                         "frequency_se": float(np.sqrt(np.sum(p[inside] * (1 - p[inside]))) / n)})
    return pd.DataFrame(rows, columns=["bin_lower", "bin_upper", "n", "mean_probability", "frequency",
                                       "frequency_se"])


def plot_bayes_factor_calibration(result, *, models=None, n_bins: int = 10, axes=None):
    """Two panels: the calibration curve and the data-averaged posterior model probabilities against the prior.

    Left: for each model, the observed frequency of the model being the true one against the mean posterior
    probability in each bin (:func:`calibration_curve`), ±2 binomial se, and the diagonal that calibrated
    probabilities follow; marker area grows with the simulations in the bin. Right: the data-averaged posterior
    probability ``pbar_k`` of each model with ±2 Monte Carlo se next to its prior probability ``pi_k``, and ``z_k``
    in the label.

    Parameters
    ----------
    result : BayesFactorCalibration
    models : list of str, optional
        Models whose curves are drawn; default every model, only the second of two (the first one's curve is its
        mirror image).
    n_bins : int
    axes : two matplotlib Axes, optional

    Returns
    -------
    array of 2 matplotlib Axes
    """
    summary = result.summary
    names = list(summary.index)
    if models is None:
        models = names[1:] if len(names) == 2 else names
    if axes is None:
        axes = _figure_axes(1, 2, figsize=(11, 4.2))
    ax = axes[0]
    ax.plot([0, 1], [0, 1], color="0.5", ls="--", lw=1, label="calibrated (diagonal)")
    for name in models:
        i = names.index(name)
        curve = calibration_curve(result, name, n_bins=n_bins)
        color = f"C{i}"
        ax.errorbar(curve["mean_probability"], curve["frequency"], yerr=2 * curve["frequency_se"], fmt="none",
                    ecolor=color, elinewidth=1, capsize=3)
        ax.scatter(curve["mean_probability"], curve["frequency"], s=12 + 4 * curve["n"], color=color, zorder=3,
                   label=f"{name}")
    ax.set_xlim(-0.03, 1.03)
    ax.set_ylim(-0.03, 1.03)
    ax.set_aspect("equal")
    ax.set_xlabel("posterior model probability $p(M_k \\mid y)$ (bin mean)")
    ax.set_ylabel("frequency of $M_k$ being the true model")
    ax.set_title(f"Calibration curve ({result.n_sims} simulations, ±2 binomial se)", fontsize="medium")
    ax.legend(frameon=False, fontsize="small", loc="upper left")
    ax = axes[1]
    x = np.arange(len(names))
    mean, se = summary["mean_probability"].to_numpy(), summary["mean_probability_se"].to_numpy()
    ax.errorbar(x, mean, yerr=2 * se, fmt="o", color="C0", capsize=4, label="data-averaged posterior ± 2 se")
    ax.plot(x, summary["prior_probability"], "_", color="k", ms=28, mew=2, label="prior probability")
    ax.set_xticks(x, [f"{n}\nz = {z:+.2f}" for n, z in zip(names, summary["z"])], fontsize="small")
    ax.set_xlim(-0.6, len(names) - 0.4)
    ax.set_ylim(0, max(1.0, float(np.nanmax(mean + 2 * se)) + 0.05) if np.isfinite(mean).any() else 1.0)
    ax.set_ylabel("model probability")
    ax.set_title("Averaged over the data, the posterior equals the prior", fontsize="medium")
    ax.legend(frameon=False, fontsize="small")
    return axes
