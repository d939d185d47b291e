"""Learning Boltzmann machines, and tracking their log-likelihood while they learn."""

from .tracking import Checkpoint, LogZTracker, TrackedSystem, dbm_system, ladder_trips, rbm_system

__all__ = ["Checkpoint", "LogZTracker", "TrackedSystem", "dbm_system", "ladder_trips", "rbm_system"]
