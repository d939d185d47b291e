"""Runners move particles and record statistics; they never compute log Z.

The public runners (``from pmz.runners import run_cast``): :func:`run_ais` (forward annealing) and :func:`run_cast`
(coupled adaptive simulated tempering) with its ladder :func:`uniform_ladder`, and the settings of the tempering
loops (:mod:`pmz.runners.tempering_settings`: :class:`CASTSettings` for :func:`run_cast`, :class:`TemperingSettings`
and :class:`WangLandauSettings` for the simulated-tempering and Wang-Landau runs, and the parts they share,
:class:`SweepSettings`, :class:`ChainSettings` and :class:`WangLandauRule`).
"""

from .ais import run_ais
from .cast import run_cast, uniform_ladder
from .tempering_settings import (
    CASTSettings,
    ChainSettings,
    SweepSettings,
    TemperingSettings,
    WangLandauRule,
    WangLandauSettings,
)

__all__ = [
    "run_ais",
    "run_cast",
    "uniform_ladder",
    "SweepSettings",
    "WangLandauRule",
    "ChainSettings",
    "TemperingSettings",
    "WangLandauSettings",
    "CASTSettings",
]
