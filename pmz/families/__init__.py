"""Tempered families (power posterior, geometric path) and annealing schedules."""

from .base import LogDensityParts, TemperedFamily
from .geometric import GeometricPath
from .power import PowerPosterior
from .schedules import SCHEDULES, make_schedule, validate_schedule

__all__ = [
    "LogDensityParts",
    "TemperedFamily",
    "PowerPosterior",
    "GeometricPath",
    "SCHEDULES",
    "make_schedule",
    "validate_schedule",
]
