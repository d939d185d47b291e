"""pmz: model evidence (log Z) and Bayes factors for PyMC models.

>>> import pymc as pm, pmz                                           # doctest: +SKIP
>>> with pm.Model() as model:                                        # doctest: +SKIP
...     ...
>>> res = pmz.evidence(model, method="ais", random_seed=1)           # doctest: +SKIP
>>> res.log_z, res.log_z_se                                          # doctest: +SKIP

The public surface is what ``__all__`` lists: the functions and classes below, and the subpackages, each through
the ``__all__`` of its ``__init__`` (``from pmz.systems import normal_mean``, not a module path below it):

* :mod:`pmz.systems`: known-truth systems (models with an exact log Z);
* :mod:`pmz.methods`: the option sets of ``pmz.evidence`` (``config=``) and the ``n_temps`` rule;
* :mod:`pmz.gp`: Gaussian-process models; :mod:`pmz.boltzmann`: Boltzmann machines and lattices, with
  :mod:`pmz.boltzmann.learn` (learning them);
* :mod:`pmz.estimators`, :mod:`pmz.runners`, :mod:`pmz.families`: the estimators, runners and tempered families
  (with their schedules) ``pmz.evidence`` is built from, for research code that calls them directly.
"""

from .version import __version__

from . import boltzmann, estimators, families, gp, methods, runners, systems
from .api import evidence
from .compare import BayesFactor, bayes_factor, compare
from .model.energy_model import BernoulliBase, EnergyModel, UniformCategorical, UniformSpins
from .model.pymc import ModelSpecificationError
from .plots import (
    calibration_curve,
    format_log_z,
    plot_bayes_factor_calibration,
    plot_log_z,
    plot_prior_sensitivity,
    plot_schedule,
    plot_smc,
    plot_tempering,
    plot_work,
)
from .results import EvidenceResult, load
from .step_methods import CAST, GPRMHMC, SimulatedTempering, WangLandau, tempered_evidence, tempered_weights
from .studies import BayesFactorCalibration, bayes_factor_sensitivity, calibrate_bayes_factors, prior_sensitivity

__all__ = [
    "evidence",
    "compare",
    "bayes_factor",
    "BayesFactor",
    "prior_sensitivity",
    "bayes_factor_sensitivity",
    "calibrate_bayes_factors",
    "BayesFactorCalibration",
    "calibration_curve",
    "EvidenceResult",
    "load",
    "ModelSpecificationError",
    "EnergyModel",
    "BernoulliBase",
    "UniformSpins",
    "UniformCategorical",
    "plot_work",
    "plot_log_z",
    "plot_tempering",
    "plot_schedule",
    "plot_smc",
    "plot_prior_sensitivity",
    "plot_bayes_factor_calibration",
    "format_log_z",
    "SimulatedTempering",
    "WangLandau",
    "CAST",
    "GPRMHMC",
    "tempered_evidence",
    "tempered_weights",
    "systems",
    "methods",
    "gp",
    "boltzmann",
    "estimators",
    "runners",
    "families",
    "__version__",
]
