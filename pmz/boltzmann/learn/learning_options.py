"""The options of :func:`pmz.boltzmann.learn.fit_rbm` and :func:`pmz.boltzmann.learn.fit_dbm`: one frozen,
keyword-only dataclass whose fields carry their default, one line of documentation and their check
(:mod:`pmz.validate`), run on construction.

>>> LearningOptions(method="cast").n_temps
19
>>> LearningOptions(momentum=1.5)
Traceback (most recent call last):
...
ValueError: pmz: momentum must be a number in [0.0, 1.0), got 1.5
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from ...runners.cast import SWAP_RULES
from ...validate import (
    CheckedOptions,
    boolean,
    fraction,
    interval,
    non_negative_int,
    one_of,
    option,
    option_values,
    optional,
    optional_int,
    positive_int,
    positive_number,
)

__all__ = ["LEARNING_METHODS", "LEARNING_RATE_SCHEDULES", "LearningOptions", "options_table"]

LEARNING_METHODS = ("pcd", "fpcd", "cast", "cd")
LEARNING_RATE_SCHEDULES = ("linear", "inverse", "constant")
_NON_NEGATIVE = interval(0.0, math.inf)
_METHOD = one_of(
    *LEARNING_METHODS,
    message="pmz: {name} must be one of " + str(list(LEARNING_METHODS)) + " ('sap', Salakhutdinov's name, is 'pcd'), "
    "got {value!r}",
)


def _seed(name, value):
    if value is not None:
        non_negative_int(name, value)
    return value


@dataclass(frozen=True, kw_only=True)
class LearningOptions(CheckedOptions):
    """Settings of a learning run (see docs/learning.md for the formulas and the papers' values)."""

    method: str = option("pcd", "negative phase: 'pcd' (SAP), 'fpcd' (fast weights), 'cast' or 'cd' (RBMs)", _METHOD)
    n_epochs: int = option(
        100, "passes over the shuffled training data (0: return the initial model)", non_negative_int
    )
    batch_size: int = option(20, "data vectors per parameter update", positive_int)
    learning_rate: float = option(0.05, "initial learning rate lr0", positive_number)
    learning_rate_schedule: str = option(
        "linear", "'linear' (lr0 to final_learning_rate), 'inverse' (lr0 / (1 + t / tau)) or 'constant'",
        one_of(*LEARNING_RATE_SCHEDULES),
    )
    final_learning_rate: float = option(0.0, "learning rate at the last update ('linear')", _NON_NEGATIVE)
    learning_rate_tau: object = option(
        None, "'inverse': updates until the rate halves (None: a tenth of the updates)", optional(positive_number)
    )
    momentum: float = option(0.9, "momentum m of the parameter velocities", interval(0.0, 1.0))
    momentum_warmup: int = option(5, "epochs with momentum min(0.5, m) before m", non_negative_int)
    weight_decay: float = option(1e-4, "L2 penalty on the weights (not the biases)", _NON_NEGATIVE)
    k: int = option(1, "Gibbs sweeps of the negative-phase chains per update (CD-k)", positive_int)
    n_chains: object = option(
        None, "persistent chains (CAST: slow chains, as many fast ones); None: batch_size, CAST 50", optional_int(1)
    )
    n_mean_field: int = option(10, "DBMs: mean-field steps of the positive phase", positive_int)
    fast_learning_rate: object = option(
        None, "FPCD: learning rate of the fast weights (None: learning_rate)", optional(positive_number)
    )
    fast_decay: float = option(0.95, "FPCD: fast weights are multiplied by this after every update",
                                interval(0.0, 1.0))
    beta_min: float = option(0.9, "CAST: lowest inverse temperature of the fast chains' ladder", interval(0.0, 1.0))
    n_temps: int = option(19, "CAST: levels above beta_min (n_temps + 1 in all, uniform in [beta_min, 1])",
                           positive_int)
    swap_interval: int = option(50, "CAST: updates between swaps of fast into slow chains", positive_int)
    swap: str = option("last", "CAST: swap rule of pmz.runners.cast ('last' or 'exchange')", one_of(*SWAP_RULES))
    wl_gamma0: float = option(1.0, "CAST: Wang-Landau's first gain", positive_number)
    wl_flatness: float = option(0.2, "CAST: Wang-Landau's flatness criterion for halving the gain", fraction(False))
    init_scale: float = option(0.01, "initial weights N(0, init_scale^2); visible biases at the data logits",
                                _NON_NEGATIVE)
    callback_every: object = option(None, "updates between callback calls (None: once per epoch)", optional_int(1))
    random_seed: object = option(0, "seed of every random stream (same seed, same bits)", _seed)
    progressbar: bool = option(True, "show a progress bar", boolean)

    def as_dict(self) -> dict:
        return option_values(self)

    @property
    def chains(self) -> int:
        """Persistent chains (``n_chains``, or its default)."""
        if self.n_chains is not None:
            return self.n_chains
        return 50 if self.method == "cast" else self.batch_size


def make_options(config: LearningOptions | None, options: dict) -> LearningOptions:
    """``config`` (or the defaults) with the keyword ``options`` replacing its fields; unknown names are an error."""
    names = {f.name for f in fields(LearningOptions)}
    unknown = sorted(set(options) - names)
    if unknown:
        hint = " (the seed is random_seed)" if "seed" in unknown else ""
        raise TypeError(f"pmz: unknown learning option(s) {unknown}{hint}; see pmz.boltzmann.learn.LearningOptions")
    return (config or LearningOptions()).replace(**options) if options else (config or LearningOptions())


def options_table() -> str:
    """A markdown table of the options: name, default, documentation (docs/learning.md)."""
    rows = ["| option | default | meaning |", "| --- | --- | --- |"]
    rows += [f"| `{f.name}` | `{f.default!r}` | {f.metadata['doc']} |" for f in fields(LearningOptions)]
    return "\n".join(rows)
