"""The route contract of the default (``method="auto"``): what a route is, what it returns, what the plan records.

A **route** is one way to the evidence (an exact sum, Gaussian latents integrated out, importance sampling from the
peak, bridge sampling from posterior draws, ...). It has

* ``name``: how results and the timeline call it (``res.run_attrs["route"]``);
* ``applies(context) -> str``: why it does *not* apply to this model and call ("" when it applies). It reads the
  context only (the model, the options, the draws, what earlier routes found); a cheap question, asked in the
  plan's order, like the ``competence`` of PyMC's step methods;
* ``run(context) -> Outcome``: the answer, or a hand-over: an :class:`Outcome` without an estimate, whose
  ``reason`` says why the route could not answer after all (a failed check, a second peak, ...). The next route
  in the plan is then asked.

An answer carries what makes it trustworthy, never a bare number: either the **proof** that makes it exact (an
exact sum, a Gaussian integral: se 0), or the **check**, two independent estimates whose agreement the verdict
reads (:func:`pmz.auto.estimate.estimate_auto`). Its other estimates, records, posterior draws and notes travel
in typed fields; no field is looked up by a string.

:class:`Trial` is one line of the result's route timeline: a route the plan asked, and what came of it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from ..records import EvidenceEstimate

__all__ = ["Named", "Outcome", "Route", "Trial", "NOT_APPLICABLE", "HANDED_OVER", "ANSWERED"]

NOT_APPLICABLE, HANDED_OVER, ANSWERED = "does not apply", "handed over", "answered"


class Named(NamedTuple):
    """An estimate with the name the result's ``estimates`` table shows it under."""

    name: str
    estimate: EvidenceEstimate


@dataclass(frozen=True)
class Outcome:
    """What a route's ``run`` returns: an answer (``answer`` set) or a hand-over (``answer`` None).

    Attributes
    ----------
    reason : str
        One line: why this route answered, or why it hands over.
    answer : Named or None
        The route's estimate of log Z with its se (for two halves: their mean and its se). None: the route hands
        over to the next one in the plan.
    check : (Named, Named) or None
        The two independent estimates the answer rests on; a difference beyond their combined se is a verdict.
    proof : str
        For an exact answer (se 0): the property of the model that makes it exact ("" for an estimate).
    estimates : tuple of Named
        Every estimate computed on the way, in order (the result's ``estimates`` table).
    counted : tuple of Named
        The estimates whose own verdicts (:mod:`pmz.reliability`) decide whether the answer is reliable.
    result_record : record or None
        The record that fills the result's groups (work, smc).
    draws : PosteriorDraws or None
        Equally weighted posterior chains behind the answer (bridge and path routes).
    posterior_x : ndarray (chain, draw, dim) or None
        Equally weighted posterior draws made by the route itself (exact, resampled importance draws, SMC runs).
    on_full_model : bool
        The route ran on the model as written, not on the model with its discrete variables summed out (its
        draws already hold the discrete values).
    rhat, growth : float or None
        The chains' largest split R-hat; their draws at the end over those of the first pass.
    divergences, n_posterior_draws : int or None
        The chains' divergent transitions and draws, where the route ran after chains it did not use.
    modes : ModeSummary or None
        The modes route's clusters, masses and locations (:mod:`pmz.runners.modes`).
    unreliable : str
        Why the answer cannot be trusted, as the route itself found ("" when it can): time spent, draws that are
        not this model's posterior, ...
    sampling_seconds : float or None
        Seconds spent on the draws, paths or runs whose number sets a Monte Carlo se (it falls as one over their
        square root, so four times as many halve it); None where the se does not come from draws (a proof, a
        quadrature rule) or their cost is not pmz's (draws given as ``posterior=``).
    """

    reason: str
    answer: Named | None = None
    check: tuple | None = None
    proof: str = ""
    estimates: tuple = ()
    counted: tuple = ()
    result_record: object = None
    draws: object = None
    posterior_x: np.ndarray | None = None
    on_full_model: bool = False
    rhat: float | None = None
    growth: float | None = None
    divergences: int | None = None
    n_posterior_draws: int | None = None
    modes: object = None
    unreliable: str = ""
    sampling_seconds: float | None = None

    @property
    def answered(self) -> bool:
        return self.answer is not None

    @property
    def first(self) -> Named:
        """The estimate whose diagnostics describe the answer: the check's first half, else the answer itself."""
        return self.check[0] if self.check else self.answer


@dataclass(frozen=True)
class Trial:
    """A route the plan asked: its name, what came of it (:data:`NOT_APPLICABLE`, :data:`HANDED_OVER` or
    :data:`ANSWERED`) and why."""

    route: str
    status: str
    why: str

    def line(self) -> str:
        return f"{self.route}: {self.status}" + (f" ({self.why})" if self.why else "")


@runtime_checkable
class Route(Protocol):
    """One way to the evidence (module docstring)."""

    name: str

    def applies(self, context) -> str:
        """Why the route does not apply ("" when it does)."""

    def run(self, context) -> Outcome:
        """The answer, or a hand-over with its reason."""
