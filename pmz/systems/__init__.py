"""Reference systems with a known log evidence / log partition function (see docs/systems.md).

* conjugate PyMC models with closed-form log p(y) (``normal_mean``, ``linear_regression``, ...);
* energy models: the Ising torus (exact, Kaufman), the q-state Potts torus (exact for small lattices, a documented
  reference value for 32 x 32), binary RBMs trained on scikit-learn's digits (exact by enumeration, or a
  documented reference value);
* the Gaussian toy of Habeck (2017) with exact forward and reverse work;
* for simulated tempering: a two-Gaussian mixture energy model in R^dim with exact log Z
  (``gaussian_mixture``) and a 2-D PyMC mixture model with two exchangeable posterior modes and log p(y) by
  quadrature (``bimodal_posterior``; ``mode_label`` says which mode a draw is in);
* for CAST: the 2-node +-1 MRF of its Figure 2 with exact log Z along the tempering path (``two_node_mrf``;
  ``partition_of`` says which of its two partitions a state is in);
* a 50-dimensional hierarchical normal model with known variances and exact log evidence
  (``hierarchical_normal``);
* an AR(1) state-space model with two unknown scales, exact log evidence by the Kalman filter and quadrature
  (``ar1_state_space``);
* probit GP classification on two digit classes of scikit-learn's digits (``gp_classification``,
  ``digits_gp_problem``): exact evidence (an orthant probability) for up to 12 points, EP beyond;
* a deep Boltzmann machine with two hidden layers (``dbm_tiny``, ``random_dbm``): exact log Z by enumeration.
"""

from .bimodal import bimodal_posterior, mode_label
from ..boltzmann.dbm import dbm_tiny, random_dbm
from .conjugate import (
    ALL_SYSTEMS,
    KnownTruth,
    beta_binomial,
    correlated_gaussian,
    linear_regression,
    nig_regression,
    normal_mean,
    poisson_gamma,
)
from .gaussian_toy import GAUSSIAN_TOY_LOG_Z, gaussian_toy_works
from ..gp.classification import digits_gp_problem, gp_classification, load_digits_gp, probit_gp_model
from ..gp.probit_evidence import probit_log_evidence_ep, probit_log_evidence_exact, probit_log_evidence_laplace
from .hierarchical import hierarchical_normal, hierarchical_normal_log_evidence
from .state_space import ar1_log_evidence, ar1_state_space
from ..boltzmann.ising import ising
from .mixture import gaussian_mixture
from .planted import double_wells, planted_mode
from ..boltzmann.potts import potts
from ..boltzmann.rbm import random_rbm, rbm_digits
from .two_node import partition_of, two_node_mrf

__all__ = [
    "ising",
    "potts",
    "rbm_digits",
    "random_rbm",
    "dbm_tiny",
    "random_dbm",
    "gaussian_mixture",
    "planted_mode",
    "double_wells",
    "bimodal_posterior",
    "mode_label",
    "two_node_mrf",
    "partition_of",
    "gaussian_toy_works",
    "GAUSSIAN_TOY_LOG_Z",
    "KnownTruth",
    "ALL_SYSTEMS",
    "normal_mean",
    "linear_regression",
    "nig_regression",
    "beta_binomial",
    "poisson_gamma",
    "correlated_gaussian",
    "hierarchical_normal",
    "hierarchical_normal_log_evidence",
    "ar1_state_space",
    "ar1_log_evidence",
    "gp_classification",
    "digits_gp_problem",
    "load_digits_gp",
    "probit_gp_model",
    "probit_log_evidence_exact",
    "probit_log_evidence_ep",
    "probit_log_evidence_laplace",
]
