"""Progress bars for long runs (tqdm); ``progressbar=False`` turns them off."""

from __future__ import annotations

from tqdm.auto import tqdm

__all__ = ["progress_bar"]


def progress_bar(*, total: int, desc: str, disable: bool = False):
    """A context-managed tqdm bar with pmz's defaults."""
    return tqdm(total=total, desc=f"pmz {desc}", disable=disable, leave=False, dynamic_ncols=True)
