"""The Gaussian-process stack: evidence of GP models, on pmz's generic core (docs/rmhmc.md, docs/gp_classification.md).

* :mod:`~pmz.gp.structure`: finds a latent GP in a PyMC model (one multivariate normal latent vector with a fixed
  covariance, one factorising likelihood) and the likelihood's Fisher information;
* :mod:`~pmz.gp.fisher_metric`: the metric ``G = K^-1 + beta Lambda`` and its batched algebra;
* :mod:`~pmz.gp.riemannian_hmc`: Riemannian-manifold HMC on that metric (the kernel of ``kernel="rmhmc"`` and of the
  step method :class:`pmz.GPRMHMC`);
* :mod:`~pmz.gp.probit_gibbs`, :mod:`~pmz.gp.probit_sequence`: probit GP classification in the z-representation,
  one data point per SMC stage;
* :mod:`~pmz.gp.probit_evidence`, :mod:`~pmz.gp.classification`: exact (orthant), EP and Laplace evidences, and the
  digits classification problems with known evidence (also in :mod:`pmz.systems`); :data:`EXACT_MAX_POINTS` is the
  largest problem with an exact evidence, :func:`probit_laplace_mode` the mode behind the Laplace evidence.
"""

from .classification import (
    EXACT_MAX_POINTS,
    GPProblem,
    digits_gp_problem,
    gp_classification,
    load_digits_gp,
    probit_gp_model,
)
from .fisher_metric import GPMetric, MetricFactors
from .probit_evidence import (
    probit_laplace_mode,
    probit_log_evidence_ep,
    probit_log_evidence_exact,
    probit_log_evidence_laplace,
)
from .probit_gibbs import ProbitGibbs
from .probit_sequence import ProbitGPSequence
from .riemannian_hmc import GPRiemannianHMC, RMHMCInfo
from .structure import GPStructure, gp_structure

__all__ = [
    "GPStructure",
    "gp_structure",
    "GPMetric",
    "MetricFactors",
    "GPRiemannianHMC",
    "RMHMCInfo",
    "ProbitGibbs",
    "ProbitGPSequence",
    "GPProblem",
    "gp_classification",
    "digits_gp_problem",
    "load_digits_gp",
    "probit_gp_model",
    "probit_log_evidence_exact",
    "probit_log_evidence_ep",
    "probit_log_evidence_laplace",
    "probit_laplace_mode",
    "EXACT_MAX_POINTS",
]
