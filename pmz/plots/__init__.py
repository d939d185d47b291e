"""Plots (matplotlib; each returns its axes, like ArviZ's plots), one module per kind of picture.

* :mod:`pmz.plots.evidence`: the plots of one evidence result (or a few side by side): :func:`plot_work`,
  :func:`plot_log_z`, :func:`plot_schedule`, :func:`plot_tempering`, :func:`plot_smc`;
* :mod:`pmz.plots.calibration`: the calibration curve of a Bayes-factor calibration and its plot
  (:func:`calibration_curve`, :func:`plot_bayes_factor_calibration`);
* :mod:`pmz.plots.sensitivity`: a prior-sensitivity table against a prior's parameter (:func:`plot_prior_sensitivity`);
* :mod:`pmz.plots.figures`: what they share: :func:`format_log_z` (an estimate with as many decimals as its se needs),
  the unit label ``NATS`` and a new figure's axes.

The plots read results through their groups and columns only: a study's plot takes the study's result without
importing :mod:`pmz.studies`, so the plots sit with the results, below the studies.
"""

from .calibration import calibration_curve, plot_bayes_factor_calibration
from .evidence import plot_log_z, plot_schedule, plot_smc, plot_tempering, plot_work
from .figures import format_log_z
from .sensitivity import plot_prior_sensitivity

__all__ = [
    "plot_work",
    "plot_log_z",
    "plot_schedule",
    "plot_tempering",
    "plot_smc",
    "plot_prior_sensitivity",
    "calibration_curve",
    "plot_bayes_factor_calibration",
    "format_log_z",
]
