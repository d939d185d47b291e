"""What pmz's PyMC step methods share: a lazily compiled power-posterior family and PyMC's chain hooks.

``pm.sample`` pickles step methods to send them to worker processes and calls ``set_rng`` at the start of every
chain; compiled pytensor functions do not pickle, so they are dropped and rebuilt on first use in the receiving
process. A subclass implements ``_reset_chain`` (its per-chain state) and ``astep``.
"""

from __future__ import annotations

import numpy as np
from pymc.step_methods.arraystep import ArrayStepShared
from pymc.step_methods.compound import Competence

from ..families.power import PowerPosterior
from ..model.pymc import CompiledModel

__all__ = ["PowerPosteriorStep", "declare_stats"]


def declare_stats(step, shapes: dict) -> None:
    """Set a step method's stats from ``{name: (dtype, shape)}``: PyMC's ``stats_dtypes_shapes`` and the
    ``stats_dtypes`` it allocates from (vector stats, e.g. one entry per level, as numpy subarray dtypes)."""
    step.stats_dtypes_shapes = shapes
    step.stats_dtypes = [
        {name: np.dtype((dtype, tuple(shape))) if shape else dtype for name, (dtype, shape) in shapes.items()}
    ]


class PowerPosteriorStep(ArrayStepShared):
    """Base of pmz's step methods: ``family`` (the model's power posterior, compiled on first use), never chosen
    automatically by PyMC, a fresh chain state on every new generator, unpicklable parts dropped."""

    #: attributes rebuilt lazily after unpickling
    _transient = ("_compiled", "_family")

    @staticmethod
    def competence(var, has_grad):
        """Never assigned automatically: ask for it with ``pm.sample(step=...)``."""
        return Competence.INCOMPATIBLE

    @property
    def family(self) -> PowerPosterior:
        if self._family is None:
            self._compiled = CompiledModel(self.model, mode=getattr(self, "compile_mode", None))
            self._family = PowerPosterior(self._compiled)
        return self._family

    def set_rng(self, rng):
        """A new generator means a new chain (``pm.sample`` calls this at the start of every chain)."""
        super().set_rng(rng)
        self.tune = True
        self._reset_chain()

    def reset_tuning(self):
        self._reset_chain()

    def _reset_chain(self):
        raise NotImplementedError

    def __getstate__(self):
        state = self.__dict__.copy()
        for name in self._transient:  # compiled pytensor functions: rebuilt lazily in the receiving process
            state[name] = None
        return state
