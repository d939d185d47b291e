"""Batched Markov kernels that leave a tempered density invariant, and their tuning: the generic kernels only (the
GP and Boltzmann kernels are in :mod:`pmz.gp` and :mod:`pmz.boltzmann`)."""

from .base import Kernel, KernelInfo, KernelParams, ParticleState
from .hmc import HamiltonianMC
from .rwmh import RandomWalkMetropolis
from .tuning import TuningResult

KERNELS = {"hmc": HamiltonianMC, "rwmh": RandomWalkMetropolis}

__all__ = [
    "Kernel",
    "KernelInfo",
    "KernelParams",
    "ParticleState",
    "HamiltonianMC",
    "RandomWalkMetropolis",
    "TuningResult",
    "KERNELS",
]
