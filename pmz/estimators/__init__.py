"""Estimators: pure functions of a record that return an EvidenceEstimate (log Z with its se).

The estimator functions, each from its module (``from pmz.estimators import bar``):

* :func:`jarzynski` (forward AIS), :func:`raise_estimate` (reverse AIS): one-way work;
* :func:`bar`, :func:`cumulant`, :func:`stochastic_bounds`, :func:`histogram` and :func:`histogram_posterior`
  (WHAM and its Gibbs posterior over log Z): forward and reverse work;
* :func:`rts`, :func:`ts`, :func:`rts_from_draws`, :func:`ti`, :func:`ti_rb`, :func:`mbar_tempering`: a
  simulated-tempering trace (or its draws);
* :func:`smc_estimate`: independent sequential Monte Carlo runs.

Each estimate's ``diagnostics`` is a frozen dataclass of its family (:mod:`pmz.estimate_diagnostics`, exported here):
:class:`WorkDiagnostics` (and :class:`HistogramDiagnostics`, with :class:`LogWeightMoments` for the cumulants),
:class:`TemperingDiagnostics`, :class:`SMCDiagnostics`, :class:`AutoDiagnostics`, all :class:`Diagnostics`.
"""

from ..estimate_diagnostics import (
    AutoDiagnostics,
    Diagnostics,
    HistogramDiagnostics,
    LogWeightMoments,
    SMCDiagnostics,
    TemperingDiagnostics,
    WorkDiagnostics,
)
from .bar import bar
from .bounds import stochastic_bounds
from .cumulant import cumulant
from .histogram import histogram, histogram_posterior
from .jarzynski import jarzynski
from .mbar import mbar_tempering
from .raise_ import raise_estimate
from .rts import rts, rts_from_draws, ts
from .smc_evidence import smc_estimate
from .ti import ti, ti_rb

__all__ = [
    "jarzynski",
    "raise_estimate",
    "bar",
    "cumulant",
    "stochastic_bounds",
    "histogram",
    "histogram_posterior",
    "rts",
    "ts",
    "rts_from_draws",
    "ti",
    "ti_rb",
    "mbar_tempering",
    "smc_estimate",
    # the estimates' diagnostics (pmz.estimate_diagnostics)
    "Diagnostics", "WorkDiagnostics", "HistogramDiagnostics", "LogWeightMoments",
    "TemperingDiagnostics", "SMCDiagnostics", "AutoDiagnostics",
]
