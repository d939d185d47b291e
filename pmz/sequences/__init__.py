"""Sequences of distributions for sequential Monte Carlo (the contract is in :mod:`pmz.sequences.base`): the generic
sequences (by temperature, by observation); the RBM and probit GP sequences are in :mod:`pmz.boltzmann` and
:mod:`pmz.gp`."""

from ..families.partial_likelihood import PartialLikelihood  # (re-exported: the family that data annealing moves)
from .base import SMCSequence, resolve_order
from .by_observation import DataAnnealingSequence
from .by_temperature import TemperingSequence

__all__ = [
    "SMCSequence",
    "resolve_order",
    "TemperingSequence",
    "DataAnnealingSequence",
    "PartialLikelihood",
]
