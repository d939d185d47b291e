"""pmz: model evidence (log Z) and Bayes factors for PyMC models.

>>> import pymc as pm, pmz                                           # doctest: +SKIP
>>> with pm.Model() as model:                                        # doctest: +SKIP
...     ...
>>> res = pmz.evidence(model, method="ais", random_seed=1)           # doctest: +SKIP
>>> res.log_z, res.log_z_se                                          # doctest: +SKIP
"""

__version__ = "0.1.0"

from . import boltzmann, gp, systems
from .boltzmann import learn
from .api import evidence
from .compare import BayesFactor, bayes_factor, compare
from .model.energy_model import EnergyModel
from .model.pymc import ModelSpecificationError
from .plots import plot_log_z, plot_schedule, plot_smc, plot_tempering, plot_work
from .results import EvidenceResult, load
from .step_methods import CAST, GPRMHMC, SimulatedTempering, WangLandau, tempered_evidence, tempered_weights

__all__ = [
    "evidence",
    "compare",
    "bayes_factor",
    "BayesFactor",
    "EvidenceResult",
    "load",
    "ModelSpecificationError",
    "EnergyModel",
    "plot_work",
    "plot_log_z",
    "plot_tempering",
    "plot_schedule",
    "plot_smc",
    "SimulatedTempering",
    "WangLandau",
    "CAST",
    "GPRMHMC",
    "tempered_evidence",
    "tempered_weights",
    "systems",
    "boltzmann",
    "gp",
    "boltzmann",
    "gp",
    "learn",
    "__version__",
]
