"""The method layer: the glue between ``pmz.evidence`` (and its registry) and the runners and estimators.

``pmz.methods`` is the one documented place of the option sets (``config=`` of ``pmz.evidence``):
:class:`CommonOptions`, :class:`ScheduleOptions`, :class:`AnnealingOptions`, :class:`TwoWayOptions`,
:class:`HistogramOptions`, :class:`BridgeOptions`, :class:`TemperingOptions`, :class:`SMCOptions`,
:class:`ARMOptions`, :class:`AutoOptions`; and of the rule for their ``n_temps`` defaults, :func:`default_n_temps`.

* :mod:`~pmz.methods.options`: one frozen option set per family of methods, each option documented and checked once;
* :mod:`~pmz.methods.setup`: the compiled model (once per model), the tempered family and the kernel;
* :mod:`~pmz.methods.draw_checks`, :mod:`~pmz.methods.inputs`: start draws, the prior's normalisation, posterior
  draws, the model argument and ``random_seed``;
* :mod:`~pmz.methods.schedule`: the schedule or ladder and the pilot that tunes the kernels along it;
* :mod:`~pmz.methods.annealing`, :mod:`~pmz.methods.bridge`, :mod:`~pmz.methods.tempering`,
  :mod:`~pmz.methods.smc`: each family's run and estimate (the default, ``"auto"``, composes them in :mod:`pmz.auto`).
"""

from .options import (
    AnnealingOptions,
    ARMOptions,
    AutoOptions,
    BridgeOptions,
    CommonOptions,
    HistogramOptions,
    ScheduleOptions,
    SMCOptions,
    TemperingOptions,
    TwoWayOptions,
    default_n_temps,
)

__all__ = [
    "CommonOptions",
    "ScheduleOptions",
    "AnnealingOptions",
    "TwoWayOptions",
    "HistogramOptions",
    "BridgeOptions",
    "TemperingOptions",
    "SMCOptions",
    "ARMOptions",
    "AutoOptions",
    "default_n_temps",
]
