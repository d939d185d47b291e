"""Runners move particles and record statistics; they never compute log Z."""

from .ais import run_ais

__all__ = ["run_ais"]
