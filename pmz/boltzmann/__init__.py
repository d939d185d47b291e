"""The Boltzmann-machine and lattice stack: energy models with a log partition function to estimate, on pmz's generic
core (docs/systems.md, docs/learning.md).

* :mod:`~pmz.boltzmann.rbm`, :mod:`~pmz.boltzmann.dbm`: binary RBMs and two-hidden-layer DBMs (energies, exact
  log Z by enumeration, the shipped digits RBMs with exact or reference log Z);
* :mod:`~pmz.boltzmann.ising`, :mod:`~pmz.boltzmann.potts`: Ising and Potts tori with exact or reference log Z;
* their kernels: :mod:`~pmz.boltzmann.rbm_gibbs`, :mod:`~pmz.boltzmann.dbm_gibbs`,
  :mod:`~pmz.boltzmann.lattice_gibbs`;
* :mod:`~pmz.boltzmann.unit_sequence`: SMC over an RBM's visible units;
* :mod:`pmz.boltzmann.learn`: learning RBMs and DBMs (CD, PCD / SAP, Fast PCD, CAST) and tracking log Z while
  they learn; :mod:`~pmz.boltzmann.rbm_training` trains the shipped digits RBMs on it.
"""

from .dbm import DBM, dbm_tiny, random_dbm
from .dbm_gibbs import DBMLayerGibbs, DBMState
from .ising import ising
from .lattice_gibbs import IsingKernel, PottsKernel
from .potts import potts
from .rbm import RBM, load_rbm, random_rbm, rbm_digits
from .rbm_gibbs import RBMBlockGibbs, RBMBlockMH, RBMGibbs
from .unit_sequence import RBMUnitSequence
from . import learn  # (after the machines: learning builds on them)

__all__ = [
    "RBM",
    "DBM",
    "load_rbm",
    "rbm_digits",
    "random_rbm",
    "dbm_tiny",
    "random_dbm",
    "ising",
    "potts",
    "RBMGibbs",
    "RBMBlockMH",
    "RBMBlockGibbs",
    "DBMLayerGibbs",
    "DBMState",
    "IsingKernel",
    "PottsKernel",
    "RBMUnitSequence",
    "learn",
]
