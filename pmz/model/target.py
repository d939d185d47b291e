"""What ``pmz.evidence`` runs on (a *target*), and one way to count its log-density evaluations.

A target is one of three kinds, told apart by its ``kind`` attribute (never by ``isinstance`` or ``hasattr``):

* ``"pymc"``: a :class:`~pmz.model.pymc.CompiledModel` (batched log prior and log likelihood on the flat value
  space; it has a ``layout``, likelihood terms, ``to_constrained``);
* ``"energy"``: an :class:`~pmz.model.energy_model.EnergyModel` (a user's vectorised log density with an exact base);
* ``"sequence"``: an :class:`~pmz.sequences.base.SMCSequence` given on its own (``pmz.evidence(method="smc",
  sequence=...)``), whose counters are those of the object it evaluates, if any.

Each counts the particles it has evaluated without (``n_logp_evals``) and with gradients (``n_grad_evals``);
families and sequences report the counters of their model. A run reports its own share, the increase
``n(after) - n(before)``, which :func:`count_evaluations` measures:

>>> import numpy as np
>>> from pmz.model.energy_model import EnergyModel, UniformSpins
>>> model = EnergyModel(lambda X: X.sum(axis=1), UniformSpins(3))
>>> model.kind
'energy'
>>> _ = model.log_f1(np.ones((4, 3)))
>>> with count_evaluations(model) as counts:
...     _ = model.log_f1(np.ones((10, 3)))
>>> counts.n_logp_evals, counts.n_grad_evals, model.n_logp_evals
(10, 0, 14)
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

__all__ = ["Target", "TargetKind", "TARGET_KINDS", "EvaluationCount", "count_evaluations"]

TargetKind = Literal["pymc", "energy", "sequence"]
TARGET_KINDS = ("pymc", "energy", "sequence")


@runtime_checkable
class Target(Protocol):
    """What every target offers (see the module docstring); the rest depends on ``kind``.

    Attributes
    ----------
    kind : {"pymc", "energy", "sequence"}
        Which kind of target this is: a compiled PyMC model, an energy model, or a standalone SMC sequence.
    dim : int
        Dimension of the flat particle space (the largest one, for a sequence whose space grows).
    n_logp_evals, n_grad_evals : int
        Particles evaluated so far without and with gradients.

    Optional members, read with a default: ``compile_time`` (seconds spent compiling, 0 for NumPy targets) and
    ``backend`` (``"numpy"`` unless compiled).
    """

    kind: TargetKind
    dim: int
    n_logp_evals: int
    n_grad_evals: int


class EvaluationCount:
    """The evaluations of ``counter`` (a target, family or sequence) since this object was made.

    ``n_logp_evals`` and ``n_grad_evals`` are the increases of the counter's attributes of the same names: live
    while counting, fixed at the end of a ``with`` block (see :func:`count_evaluations`).
    """

    def __init__(self, counter):
        self._counter = counter
        self._start = self._read()
        self._stop = None

    def _read(self) -> tuple[int, int]:
        return self._counter.n_logp_evals, self._counter.n_grad_evals

    def _now(self) -> tuple[int, int]:
        return self._read() if self._stop is None else self._stop

    @property
    def n_logp_evals(self) -> int:
        """Particle evaluations without gradients since the start."""
        return self._now()[0] - self._start[0]

    @property
    def n_grad_evals(self) -> int:
        """Particle evaluations with gradients since the start."""
        return self._now()[1] - self._start[1]

    def __enter__(self) -> EvaluationCount:
        return self

    def __exit__(self, *exc) -> bool:
        self._stop = self._read()
        return False

    def __repr__(self):
        return f"EvaluationCount(n_logp_evals={self.n_logp_evals}, n_grad_evals={self.n_grad_evals})"


def count_evaluations(counter) -> EvaluationCount:
    """Count the log-density evaluations of ``counter`` from now on: ``n_logp_evals``, ``n_grad_evals``.

    As a context manager, ``with count_evaluations(target) as counts: ...`` counts the block's evaluations
    (fixed when it ends); ``counts = count_evaluations(family)`` counts from that line on, read whenever the
    run reports them (a runner reads them when it builds its record).
    """
    return EvaluationCount(counter)
