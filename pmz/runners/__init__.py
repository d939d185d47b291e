"""Runners move particles and record statistics; they never compute log Z.

The public runners (``from pmz.runners import run_cast``): :func:`run_ais` (forward annealing) and :func:`run_cast`
(coupled adaptive simulated tempering) with its ladder :func:`uniform_ladder`.
"""

from .ais import run_ais
from .cast import run_cast, uniform_ladder

__all__ = ["run_ais", "run_cast", "uniform_ladder"]
