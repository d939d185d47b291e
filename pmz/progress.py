"""Progress bars for long runs (tqdm); ``progressbar=False`` turns them off."""

from __future__ import annotations

from tqdm.auto import tqdm

__all__ = ["progress_bar"]

# a bar whose total is a continuous span (SMC: inverse temperature, summed over runs): percent and times, no
# "2.8177/4.0" counts; the postfix (e.g. "run 3/4") follows the times
_PERCENT_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}{postfix}]"


def progress_bar(*, total: float, desc: str, disable: bool = False, percent: bool = False):
    """A context-managed tqdm bar with pmz's defaults.

    ``percent=True`` for a total that is not a count (a span of inverse temperature): the bar shows the percentage
    done instead of ``n/total``.
    """
    extra = {"bar_format": _PERCENT_FORMAT} if percent else {}
    return tqdm(total=total, desc=f"pmz {desc}", disable=disable, leave=False, dynamic_ncols=True, **extra)
