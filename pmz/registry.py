"""The method table: ``method name -> Method(options, run, estimate, description)``.

``pmz.evidence`` builds the method's option set (a frozen dataclass of :mod:`pmz.methods.options`), the tempered
family and the kernel (:mod:`pmz.methods.setup`), then calls ``run(family, kernel, options, rng, progressbar,
target) -> record`` (``target``: the CompiledModel or EnergyModel) and ``estimate(record, options, rng) ->
EvidenceEstimate``. Adding a method is one runner or estimator, one option set and one line here.

A method with ``chunked=True`` can be split into independent chunks (``n_chunks``, ``executor=``, ``checkpoint=``:
:mod:`pmz.execution.executors`); its ``run`` then also takes ``chunks=`` (the call's ChunkRunner).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from .methods.annealing import TWO_WAY_DESCRIPTIONS, estimate_jarzynski, run_forward_ais, run_two_way, two_way_estimator
from .auto import estimate_auto, run_auto
from .methods.bridge import estimate_bridge, run_bridge_method
from .methods.options import (
    AnnealingOptions,
    ARMOptions,
    AutoOptions,
    BridgeOptions,
    HistogramOptions,
    SMCOptions,
    TemperingOptions,
    TwoWayOptions,
    option_values,
)
from .methods.smc import estimate_smc_method, run_smc_method, smc_description
from .methods.tempering import TEMPERING_DESCRIPTIONS, run_tempering_method, tempering_estimator

__all__ = ["Method", "METHODS", "DEFAULT_METHOD"]


@dataclass(frozen=True)
class Method:
    """One evidence method: its option set, how to run it, how to estimate from its record."""

    name: str
    options: type
    run: Callable
    estimate: Callable
    description: str = ""
    needs_kernel: bool = True
    check_start: bool = True  # evaluate the family's start draws before running (auto starts from its own points)
    chunked: bool = False  # run(..., chunks=ChunkRunner) splits the run into chunks (pmz.execution.executors)
    # chunks are groups of posterior chains that adapt on their own: the bits follow n_chunks (not the executor or
    # its workers), and no checkpoint keeps them
    chain_groups: bool = False

    @property
    def defaults(self) -> dict:
        """``{option: default}`` of the method's option set."""
        return option_values(self.options())


def _tempering_run(name):
    def run(family, kernel, options, rng, progressbar, target, chunks=None):
        return run_tempering_method(family, kernel, options, rng, progressbar, target, method=name, chunks=chunks)

    return run


def _smc_run(name):
    def run(family, kernel, options, rng, progressbar, target, chunks=None):
        return run_smc_method(family, kernel, options, rng, progressbar, target, method=name, chunks=chunks)

    return run


_AUTO = (
    "the default: posterior draws from many HMC chains, cross-fitted bridge sampling, a path from the fitted "
    "reference where the overlap is poor, importance sampling or SMC from a mixture over the modes where the chains "
    "sit in separate modes, SMC from the prior where they diverge, the exact sum over a small all-discrete support"
)

METHODS: dict[str, Method] = {
    "auto": Method("auto", AutoOptions, run_auto, estimate_auto, _AUTO, check_start=False, chunked=True,
                   chain_groups=True),
    "ais": Method(
        "ais", AnnealingOptions, run_forward_ais, estimate_jarzynski,
        "forward annealed importance sampling (Jarzynski estimator)", chunked=True,
    ),
    **{
        name: Method(
            name, HistogramOptions if name == "histogram" else TwoWayOptions, run_two_way, two_way_estimator(name),
            description, chunked=True,
        )
        for name, description in TWO_WAY_DESCRIPTIONS.items()
    },
    "bridge": Method(
        "bridge", BridgeOptions, run_bridge_method, estimate_bridge,
        "bridge sampling (K = 1 BAR) from posterior draws with a fitted reference (Meng & Wong 1996)",
        needs_kernel=False, chunked=True, chain_groups=True,
    ),
    **{
        name: Method(
            name, TemperingOptions, _tempering_run(name), tempering_estimator(name), description, chunked=True
        )
        for name, description in TEMPERING_DESCRIPTIONS.items()
    },
    "smc": Method(
        "smc", SMCOptions, _smc_run("smc"), estimate_smc_method("smc"), smc_description("smc"), chunked=True
    ),
    "arm": Method(
        "arm", ARMOptions, _smc_run("arm"), estimate_smc_method("arm"), smc_description("arm"), chunked=True
    ),
}

DEFAULT_METHOD = "auto"
