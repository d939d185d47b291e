"""Estimators: pure functions of a record that return an EvidenceEstimate (log Z with its se)."""

from .jarzynski import jarzynski

__all__ = ["jarzynski"]
