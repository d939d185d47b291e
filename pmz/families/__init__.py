"""Tempered families (power posterior, geometric path, energy models, data annealing), annealing schedules and
optimal (VAROPT) schedules."""

from ..model.parts import LogDensityParts
from .adaptive import next_beta_by_cess
from .base import TemperedFamily
from .partial_likelihood import PartialLikelihood
from .energy import EnergyFamily
from .geometric import GeometricPath
from .metric import predicted_log_weight_variance, schedule_action, thermodynamic_length, thermodynamic_metric
from .optimal import constant_speed_schedule, decelerate, euler_lagrange_schedule
from .power import PowerPosterior
from .schedules import SCHEDULES, make_schedule, validate_schedule

__all__ = [
    "LogDensityParts",
    "TemperedFamily",
    "PowerPosterior",
    "GeometricPath",
    "EnergyFamily",
    "PartialLikelihood",
    "SCHEDULES",
    "make_schedule",
    "validate_schedule",
    "thermodynamic_metric",
    "thermodynamic_length",
    "schedule_action",
    "predicted_log_weight_variance",
    "constant_speed_schedule",
    "euler_lagrange_schedule",
    "decelerate",
    "next_beta_by_cess",
]
