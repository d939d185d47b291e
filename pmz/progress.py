"""Progress bars for long runs (tqdm); ``progressbar=False`` turns them off."""

from __future__ import annotations

from tqdm.auto import tqdm

__all__ = ["progress_bar"]

# a bar whose total is a continuous span (SMC: inverse temperature, summed over runs): percent and times, no
# "2.8177/4.0" counts; the postfix (e.g. "run 3/4") follows the times
LOG_INTERVAL = 30.0  # seconds between lines of a bar written to a log rather than a terminal
_PERCENT_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]"


def progress_bar(*, total: float, desc: str, disable: bool = False, percent: bool = False):
    """A context-managed tqdm bar with pmz's defaults.

    ``percent=True`` for a total that is not a count (a span of inverse temperature): the bar shows the percentage
    done instead of ``n/total``.
    """
    extra = {"bar_format": _PERCENT_FORMAT} if percent else {}
    if not _terminal():  # a log (CI, nohup): a line at most every 30 s, not every update
        extra["mininterval"] = LOG_INTERVAL
    # smoothing=0: the time left from the average rate so far; the default follows the last few updates, and a
    # run whose first phase is quick to update said 7 h where 24 min was left
    return tqdm(total=total, desc=f"pmz {desc}", disable=disable, leave=False, dynamic_ncols=True, smoothing=0.0,
                **extra)


def _terminal() -> bool:
    """Whether progress goes to a terminal (or a notebook's widget) rather than a log file."""
    import sys

    try:
        return bool(sys.stderr.isatty()) or "ipykernel" in sys.modules
    except (AttributeError, ValueError):
        return False
