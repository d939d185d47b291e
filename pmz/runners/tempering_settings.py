"""The settings of the simulated-tempering loops, each documented and checked once (frozen dataclasses).

The loops (:func:`pmz.runners.tempering_sweep.run_tempering` and :func:`~pmz.runners.tempering_sweep.adapt_log_zhat`,
:func:`pmz.runners.wang_landau.run_wang_landau`, :func:`pmz.runners.cast.run_cast`) and the PyMC step methods
(:mod:`pmz.step_methods`) share one sweep (:func:`~pmz.runners.tempering_sweep.tempering_sweep`) and, for the
adaptive ones, one weight rule (:func:`~pmz.runners.level_weights.wang_landau_update`); their settings share the
classes that describe them:

* :class:`SweepSettings`: what every sweep needs besides the ladder, the kernels and the guesses (the level move,
  the kernel steps per sweep, the prior over levels); the step methods :class:`pmz.SimulatedTempering` and
  :class:`pmz.WangLandau` use it alone;
* :class:`WangLandauRule`: the Wang-Landau update of the level weights (first gain, flatness, what counts as a
  visit, time unit);
* :class:`ChainSettings` (a :class:`SweepSettings`): chains, sweeps and the level trajectories kept;
* :class:`TemperingSettings` (a :class:`ChainSettings`): RTS runs with frozen guesses;
* :class:`WangLandauSettings` (a :class:`ChainSettings` and a :class:`WangLandauRule`): Wang-Landau runs;
* :class:`CASTSettings` (a :class:`SweepSettings` and a :class:`WangLandauRule`): CAST pairs and their swaps.

Each check runs once, when the object is made (``__post_init__``, :class:`pmz.validate.CheckedOptions`), with the
error messages of :mod:`pmz.validate`; :meth:`~pmz.validate.CheckedOptions.replace` makes a checked copy. What
changes from call to call (random streams, rows of a chunk, start states, guesses ``log_zhat`` / ``log_g``,
progress bar) stays an argument of the loop.

>>> settings = TemperingSettings(n_chains=100, n_sweeps=1000, level_move="metropolis")
>>> settings.n_batches, settings.log_prior_of(4)
(1000, array([-1.38629436, -1.38629436, -1.38629436, -1.38629436]))
>>> CASTSettings(swap="both")
Traceback (most recent call last):
...
ValueError: pmz: swap must be one of ['last', 'exchange'], got 'both'
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field

import numpy as np

from ..validate import CheckedOptions, fraction, non_negative_int, one_of, positive_int, positive_number
from .levels import LEVEL_MOVES

__all__ = [
    "SweepSettings",
    "WangLandauRule",
    "ChainSettings",
    "TemperingSettings",
    "WangLandauSettings",
    "CASTSettings",
    "uniform_log_prior",
    "SWAP_RULES",
    "WL_UPDATES",
]

SWAP_RULES = ("last", "exchange")
WL_UPDATES = ("counts", "rb")


def uniform_log_prior(n_levels: int) -> np.ndarray:
    """``log r_k = -log K`` for every level: the uniform prior over ``K = n_levels`` levels."""
    return np.full(n_levels, -np.log(n_levels))


# ------------------------------------------------------------------------------------------------ the checks
def _checked(check, default=MISSING):
    """A settings field with its check (run once, by :class:`pmz.validate.CheckedOptions`)."""
    return field(default=default, metadata={"check": check})


def _flag(name, value):
    if not isinstance(value, bool | np.bool_):
        raise ValueError(f"pmz: {name} must be True or False, got {value!r}")
    return bool(value)


def _number(check):
    """``check``, then the value as a float."""
    return lambda name, value: float(check(name, value))


def _log_prior(name, value):
    """None (uniform) or finite ``log r_k``, one per level, kept as a tuple (the settings stay hashable)."""
    if value is None:
        return None
    array = np.asarray(value, dtype=float)
    if array.ndim != 1 or array.size < 2 or not np.all(np.isfinite(array)):
        raise ValueError(f"pmz: {name} must hold finite log r_k, one per level (K >= 2), got shape {array.shape}")
    return tuple(array.tolist())


# ------------------------------------------------------------------------------------------------ the settings
@dataclass(frozen=True, kw_only=True)
class SweepSettings(CheckedOptions):
    """What every simulated-tempering sweep needs besides the ladder, the kernels and the guesses (RTS Algorithm 1,
    :func:`pmz.runners.tempering_sweep.tempering_sweep`).

    Attributes
    ----------
    level_move : {"gibbs", "metropolis"}
        The level move after the kernel steps: an exact draw ``k ~ q(. | x)`` or a +-1 Metropolis move
        (:mod:`pmz.runners.levels`).
    n_steps_per_temp : int
        Kernel steps on x per sweep, at the chain's level.
    log_prior : array (K,), optional
        ``log r_k``, the prior over the K levels (finite; kept as a tuple); default uniform,
        :func:`uniform_log_prior`. :meth:`log_prior_of` gives it as an array.
    """

    level_move: str = _checked(one_of(*LEVEL_MOVES), "gibbs")
    n_steps_per_temp: int = _checked(positive_int, 1)
    log_prior: tuple | None = _checked(_log_prior, None)

    def log_prior_of(self, n_levels: int) -> np.ndarray:
        """``log r_k`` of a ladder of ``n_levels`` levels, as an array (uniform unless :attr:`log_prior` is set)."""
        if self.log_prior is None:
            return uniform_log_prior(n_levels)
        if len(self.log_prior) != n_levels:
            raise ValueError(f"pmz: log_prior must hold {n_levels} values (one per level), got {len(self.log_prior)}")
        return np.array(self.log_prior, dtype=float)


@dataclass(frozen=True, kw_only=True)
class WangLandauRule(CheckedOptions):
    """The Wang-Landau update of the level weights (:func:`pmz.runners.level_weights.wang_landau_update`):
    ``theta_k <- theta_k + log(1 + gamma_t) v_k / (c r_k)``, ``gamma`` halved on flat histograms, then ``c / t``.

    Attributes
    ----------
    wl_gamma0 : float > 0
        The first gain ``gamma_0`` (the weights move by ``log(1 + gamma)``).
    wl_flatness : float in (0, 1)
        Flat-histogram tolerance: ``gamma`` is halved once every ``h_k / r_k`` is at least ``1 - wl_flatness``
        times their mean (0.2: every level within 20% of the mean).
    wl_update : {"counts", "rb"}
        What counts as a visit of level k: the fraction of chains at k after the sweep, or the Rao-Blackwellised
        ``mean_i q(k | x_i)`` (many-chain loops; one chain counts its level).
    wl_time_unit : float > 0
        ``c`` of the rule: the steps that move the weights as much as one sweep of the ladder (1 for many chains,
        K for one chain, as :class:`pmz.step_methods.WangLandau` and :class:`pmz.step_methods.CAST`); the 1/t rule
        is ``gamma_t = c / t``.
    """

    wl_gamma0: float = _checked(_number(positive_number), 1.0)
    wl_flatness: float = _checked(_number(fraction(closed_right=False)), 0.2)
    wl_update: str = _checked(one_of(*WL_UPDATES), "counts")
    wl_time_unit: float = _checked(_number(positive_number), 1.0)


@dataclass(frozen=True, kw_only=True)
class ChainSettings(SweepSettings):
    """Many simulated-tempering chains swept side by side (the fields of :class:`SweepSettings` and these).

    Attributes
    ----------
    n_chains : int
        The chains of the whole run (a chunk of the run moves some of them, ``rows=``).
    n_sweeps : int
        Sweeps of every chain.
    n_traces : int
        Chains whose level trajectories are kept (the first ones; 0: none).
    """

    n_chains: int = _checked(positive_int)
    n_sweeps: int = _checked(positive_int)
    n_traces: int = _checked(non_negative_int, 5)


@dataclass(frozen=True, kw_only=True)
class TemperingSettings(ChainSettings):
    """A simulated-tempering run with frozen guesses (:func:`pmz.runners.tempering_sweep.run_tempering`; the
    initial iterations of :func:`~pmz.runners.tempering_sweep.adapt_log_zhat`): the fields of :class:`ChainSettings`
    and these.

    Attributes
    ----------
    n_batches : int
        The sums are kept per batch of consecutive sweeps (at most ``n_sweeps`` batches: one per sweep for runs up
        to 1000 sweeps); the estimators' error bars come from this series, with its autocorrelation.
    store_draws : bool
        Keep every sample's ``U`` and level (for MBAR): ``n_sweeps * n_chains`` floats.
    """

    n_batches: int = _checked(positive_int, 1000)
    store_draws: bool = _checked(_flag, False)


@dataclass(frozen=True, kw_only=True)
class WangLandauSettings(ChainSettings, WangLandauRule):
    """A Wang-Landau run (:func:`pmz.runners.wang_landau.run_wang_landau`): the fields of :class:`ChainSettings`, of
    :class:`WangLandauRule` and this one.

    Attributes
    ----------
    n_snapshots : int
        ``log g`` is kept at this many evenly spaced sweeps (``log_g_history``).
    """

    n_snapshots: int = _checked(non_negative_int, 50)


@dataclass(frozen=True, kw_only=True)
class CASTSettings(SweepSettings, WangLandauRule):
    """Coupled adaptive simulated tempering (:func:`pmz.runners.cast.run_cast`, :func:`~pmz.runners.cast.cast_step`;
    defaults from the paper: 50 pairs, a swap every 50 steps): the fields of :class:`SweepSettings`, of
    :class:`WangLandauRule` and these.

    Attributes
    ----------
    n_pairs : int
        Slow/fast pairs run side by side (:func:`~pmz.runners.cast.run_cast`).
    n_steps : int
        Steps of every pair (:func:`~pmz.runners.cast.run_cast`).
    swap_interval : int
        Steps between swaps (a swap after steps ``swap_interval, 2 swap_interval, ...``).
    swap : {"last", "exchange"}
        ``"last"`` (the paper's rule): the slow chain takes its fast partner's most recent ``beta = 1`` state, if
        there is one since the last swap; ``"exchange"``: pairs whose fast chain is at ``beta = 1`` exchange their
        states (see :mod:`pmz.runners.cast`).
    adapt : bool
        Update the Wang-Landau weights after every step (False: simulated tempering with fixed weights).
    keep_draws : bool
        Keep the slow and fast chains' positions after every step (:func:`~pmz.runners.cast.run_cast`).
    n_snapshots : int
        ``log g`` is kept at this many evenly spaced steps (:func:`~pmz.runners.cast.run_cast`).
    """

    n_pairs: int = _checked(positive_int, 50)
    n_steps: int = _checked(positive_int, 1000)
    swap_interval: int = _checked(positive_int, 50)
    swap: str = _checked(one_of(*SWAP_RULES), "last")
    adapt: bool = _checked(_flag, True)
    keep_draws: bool = _checked(_flag, True)
    n_snapshots: int = _checked(non_negative_int, 50)
