"""Studies: what calls :func:`pmz.evidence` many times and reads the results together.

A study runs the evidence of one or several models over many data sets, priors or seeds, and reports on the set:

* :mod:`pmz.studies.bayes_factor_calibration`: simulation-based calibration of Bayes factors
  (:func:`calibrate_bayes_factors`, :class:`BayesFactorCalibration`): evidence on data simulated from each model's
  prior predictive, and whether the posterior model probabilities are calibrated;
* :mod:`pmz.studies.prior_sensitivity`: log Z and log Bayes factors under other priors from one run, by reweighting
  its posterior draws (:func:`prior_sensitivity`, :func:`bayes_factor_sensitivity`);
* :mod:`pmz.studies.hazard_matrix`: every method on every hazard of :mod:`pmz.systems.hazards`, each cell sorted
  into answered, flagged, error, wrong or crash (``run_cell``; used by ``tests/studies/test_hazards.py`` and
  ``benchmarks/hazards.py``, not imported here).

Studies sit above :func:`pmz.evidence` (``pmz.api``, ``pmz.registry``, ``pmz.methods``) and below the package's
public surface; their plots are in :mod:`pmz.plots`, which reads their results without importing them.
"""

from .bayes_factor_calibration import BayesFactorCalibration, calibrate_bayes_factors
from .prior_sensitivity import bayes_factor_sensitivity, prior_sensitivity

__all__ = ["calibrate_bayes_factors", "BayesFactorCalibration", "prior_sensitivity", "bayes_factor_sensitivity"]
