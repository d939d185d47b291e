"""Sequences of distributions for sequential Monte Carlo (the contract is in :mod:`pmz.sequences.base`)."""

from ..families.data import PartialLikelihood  # (re-exported: the family that data annealing moves)
from .base import SMCSequence, resolve_order
from .data import DataAnnealingSequence
from .probit_gp import ProbitGPSequence
from .rbm_units import RBMUnitSequence
from .tempering import TemperingSequence

__all__ = [
    "SMCSequence",
    "resolve_order",
    "TemperingSequence",
    "DataAnnealingSequence",
    "PartialLikelihood",
    "RBMUnitSequence",
    "ProbitGPSequence",
]
