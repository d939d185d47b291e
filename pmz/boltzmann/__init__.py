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

Public here (``from pmz.boltzmann import RBM``), besides the machines, systems and kernels: the energy models of a
machine, :func:`rbm_energy_model` and :func:`dbm_energy_model` (``energy_model`` of :mod:`~pmz.boltzmann.rbm` and
:mod:`~pmz.boltzmann.dbm`); the digits data, :func:`load_digits_binary` and :func:`digits_split`; the shipped
digits RBMs, :func:`digits_rbm` and the se of the 500-hidden-unit RBM's reference log Z,
:data:`RBM_DIGITS_H500_LOG_Z_SE`; their trainer :func:`train_rbm`; the Ising energy and exact log Z,
:func:`ising_energy` and :func:`ising_log_z_exact`.
"""

from .dbm import DBM, dbm_tiny, random_dbm
from .dbm import energy_model as dbm_energy_model
from .dbm_gibbs import DBMLayerGibbs, DBMState
from .ising import ising, ising_energy, ising_log_z_exact
from .lattice_gibbs import IsingKernel, PottsKernel
from .potts import potts
from .rbm import (
    RBM,
    RBM_DIGITS_H500_LOG_Z_SE,
    digits_rbm,
    digits_split,
    load_digits_binary,
    load_rbm,
    random_rbm,
    rbm_digits,
)
from .rbm import energy_model as rbm_energy_model
from .rbm_gibbs import RBMBlockGibbs, RBMBlockMH, RBMGibbs
from .unit_sequence import RBMUnitSequence
from . import learn  # (after the machines: learning builds on them)
from .rbm_training import train_rbm

__all__ = [
    "RBM",
    "DBM",
    "load_rbm",
    "rbm_digits",
    "random_rbm",
    "dbm_tiny",
    "random_dbm",
    "rbm_energy_model",
    "dbm_energy_model",
    "digits_rbm",
    "RBM_DIGITS_H500_LOG_Z_SE",
    "load_digits_binary",
    "digits_split",
    "train_rbm",
    "ising",
    "ising_energy",
    "ising_log_z_exact",
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
