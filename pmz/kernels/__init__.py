"""Batched Markov kernels that leave a tempered density invariant, and their tuning."""

from .base import Kernel, KernelInfo, KernelParams, ParticleState
from .hmc import HamiltonianMC
from .probit_gibbs import ProbitGibbs
from .rmhmc import GPRiemannianHMC
from .rwmh import RandomWalkMetropolis
from .tuning import TuningResult

KERNELS = {"hmc": HamiltonianMC, "rwmh": RandomWalkMetropolis}

__all__ = [
    "Kernel",
    "KernelInfo",
    "KernelParams",
    "ParticleState",
    "HamiltonianMC",
    "GPRiemannianHMC",
    "ProbitGibbs",
    "RandomWalkMetropolis",
    "TuningResult",
    "KERNELS",
]
