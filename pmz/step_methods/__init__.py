"""PyMC step methods for simulated tempering, and log Z / posterior weights from their traces.

>>> import pymc as pm, pmz                                                   # doctest: +SKIP
>>> with model:                                                              # doctest: +SKIP
...     idata = pm.sample(step=pmz.SimulatedTempering(n_temps=15), random_seed=1)
>>> pmz.tempered_evidence(idata).log_z                                                     # doctest: +SKIP
"""

from .cast_step import CAST
from .from_trace import tempered_evidence, tempered_weights
from .rmhmc_step import GPRMHMC
from .simulated_tempering_step import SimulatedTempering
from .wang_landau_step import WangLandau

__all__ = ["SimulatedTempering", "WangLandau", "CAST", "GPRMHMC", "tempered_evidence", "tempered_weights"]
