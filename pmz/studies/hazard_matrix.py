"""The hazard matrix: every evidence method (rows) on every hazard of :mod:`pmz.systems.hazards` (columns).

A cell runs one method on one hazard with one seed and sorts the outcome into one of five kinds:

* ``"answered"``: reliable, finite, and within ``4 se + TOLERANCE`` of the exact log Z;
* ``"flagged"``: the result says it is not to be trusted (``reliable=False``);
* ``"error"``: a clear error, raised by pmz (a ``pmz:`` message from pmz's own code) or PyMC's refusal to start
  from a point where the model cannot be evaluated;
* ``"wrong"``: reliable, and more than ``4 se + TOLERANCE`` from the truth (or finite where log Z is infinite or
  undefined): confidently wrong, the outcome the matrix exists to catch;
* ``"crash"``: any other exception (an error message from inside NumPy, PyTensor, ...).

``"wrong"`` and ``"crash"`` are defects. A 4-se bound is crossed with probability about 6e-5 when the se is right.

Rows are the methods of ``pmz.evidence`` and the two PyMC step methods read by ``pmz.tempered_evidence`` after
``pm.sample`` (``"st_step"``: :class:`~pmz.step_methods.SimulatedTempering`, ``"wl_step"``:
:class:`~pmz.step_methods.WangLandau`). The columns about given draws (``draws_miss_mode``,
``draws_other_model``) apply to the methods that take ``posterior=``; elsewhere the cell is not applicable.

Each method runs with :data:`OPTIONS` (its defaults, trimmed where a default costs minutes on these small models)
and, in the ``tiny_budget`` column, with :data:`TINY`.

Examples
--------
>>> from pmz.studies.hazard_matrix import run_cell
>>> cell = run_cell("bar", "peaked", seed=1)   # doctest: +SKIP
>>> cell.kind                                    # doctest: +SKIP
'answered'
"""

from __future__ import annotations

import time
import traceback
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..systems.hazards import hazards

__all__ = ["Cell", "ROWS", "OPTIONS", "TINY", "TOLERANCE", "applies", "run_cell", "classify"]

TOLERANCE = 0.02

_TWO_WAY = ("bar", "raise", "cumulant", "bounds", "histogram")
_TEMPERING = ("rts", "ts", "ti", "ti_rb", "mbar", "wang_landau")
ROWS = ("auto", "bridge", "ais", *_TWO_WAY, *_TEMPERING, "smc", "arm", "st_step", "wl_step")
"""The methods, in the matrix's order."""

_TAKES_DRAWS = ("auto", "bridge", *_TWO_WAY)

OPTIONS: dict[str, dict] = {name: {} for name in ROWS}
OPTIONS["mbar"] = dict(n_sweeps=500)
OPTIONS["st_step"] = OPTIONS["wl_step"] = dict(draws=500, tune=500)
"""Options of each row on the ordinary columns: the method's defaults, except MBAR (half the sweeps: it stores
every draw and costs 12-25 s a cell with the default 1000) and the step methods (two chains of 500 tuning and 500
kept draws)."""

TINY: dict[str, dict] = {
    "auto": dict(n_chains=4, n_warmup=50, n_draws=50),
    "bridge": dict(n_draws=100, nuts_tune=100),
    "ais": dict(n_paths=8, n_temps=20),
    **{name: dict(n_paths=8, n_temps=20) for name in _TWO_WAY},
    **{name: dict(n_chains=8, n_sweeps=20) for name in _TEMPERING},
    "wang_landau": dict(n_chains=8, n_sweeps=20, wl_sweeps=20),
    "smc": dict(n_particles=32, n_runs=2),
    "arm": dict(n_particles=32, n_runs=2),
    "st_step": dict(draws=50, tune=50),
    "wl_step": dict(draws=50, tune=50),
}
"""The ``tiny_budget`` column's options: a few paths, chains, sweeps or particles."""

_STEP_LEVELS = 15


@dataclass(frozen=True)
class Cell:
    """One run of the matrix: the method, the hazard, the seed, the outcome's kind and what the run reported."""

    method: str
    hazard: str
    seed: int
    kind: str
    log_z: float = np.nan
    log_z_se: float = np.nan
    truth: float = np.nan
    reliable: bool | None = None
    reason: str = ""
    seconds: float = np.nan

    @property
    def z(self) -> float:
        """(estimate - truth) / se."""
        return (self.log_z - self.truth) / self.log_z_se if self.log_z_se > 0 else np.nan

    def as_dict(self) -> dict:
        return asdict(self)


def applies(method: str, hazard: str) -> bool:
    """Whether the cell exists: the given-draws columns apply to the methods that take ``posterior=``; a column
    about the default's shortcuts to the rows it names (``Hazard.methods``)."""
    column = hazards()[hazard]
    if column.methods is not None and method not in column.methods:
        return False
    return column.draws is None or method in _TAKES_DRAWS


def classify(log_z: float, se: float, reliable: bool, truth: float) -> str:
    """``"answered"``, ``"flagged"`` or ``"wrong"`` for a result (see the module's docstring)."""
    if not reliable:
        return "flagged"
    if not np.isfinite(truth) or not np.isfinite(log_z):
        return "wrong"
    return "answered" if abs(log_z - truth) <= 4 * se + TOLERANCE else "wrong"


def _clear_error(err: BaseException) -> bool:
    """Raised by pmz's own code with a pmz message, or PyMC's refusal to start where the model is not finite."""
    if type(err).__name__ == "SamplingError":
        return True
    frames = traceback.extract_tb(err.__traceback__)
    pmz_root = str(Path(__file__).resolve().parents[1])  # the package (this module is in pmz/studies/)
    raised_in_pmz = bool(frames) and str(Path(frames[-1].filename).resolve()).startswith(pmz_root)
    return raised_in_pmz and "pmz" in str(err)


def _step_method_result(method, model, options, seed):
    import pymc as pm

    from ..step_methods import SimulatedTempering, WangLandau, tempered_evidence

    step_class = SimulatedTempering if method == "st_step" else WangLandau
    with model:
        step = step_class(n_temps=_STEP_LEVELS)
        idata = pm.sample(step=step, chains=2, cores=1, random_seed=seed, progressbar=False,
                          compute_convergence_checks=False, **options)
    return tempered_evidence(idata)


def run_cell(method: str, hazard: str, seed: int) -> Cell:
    """Run one cell and classify its outcome (warnings are kept on the result, not issued)."""
    from ..api import evidence

    column = hazards()[hazard]
    if not applies(method, hazard):
        raise ValueError(f"pmz: the {hazard!r} column does not apply to {method!r} (it takes no posterior= draws, or "
                         "the column is about another method)")
    options = dict((TINY if column.tiny else OPTIONS)[method])
    model = column.build()
    start = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if method in ("st_step", "wl_step"):
                result = _step_method_result(method, model, options, seed)
            else:
                if column.draws is not None:
                    options["posterior"] = column.draws(seed)
                result = evidence(model, method=method, random_seed=seed, progressbar=False, **options)
    except Exception as err:  # noqa: BLE001 - every exception is an outcome here
        kind = "error" if _clear_error(err) else "crash"
        return Cell(method, hazard, seed, kind, truth=column.log_z, reason=f"{type(err).__name__}: {err}"[:400],
                    seconds=time.perf_counter() - start)
    seconds = time.perf_counter() - start
    log_z, se, reliable = float(result.log_z), float(result.log_z_se), bool(result.reliable)
    return Cell(method, hazard, seed, classify(log_z, se, reliable, column.log_z), log_z, se, column.log_z,
                reliable, "" if reliable else result.reliability_reason[:400], seconds)
