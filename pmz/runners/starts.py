"""Where reverse paths start: draws of the target p1 in the flat value space.

Reverse AIS (and the reverse half of BAR and bridge sampling) needs draws of the posterior p1. In order of
preference (Habeck 2017 section 3; docs/methods.md, section 1):

* ``posterior_to_flat``: draws the user already has (an ``InferenceData`` from ``pm.sample``), mapped to the
  flat unconstrained space;
* ``nuts_draws``: a ``pm.sample`` NUTS run made for them;
* ``hmc_starts``: pmz's many-chain HMC (one compiled call per leapfrog step for all chains), the default;
* ``resampled_starts``: forward end states resampled by their weights. Cheap, but the reverse run then
  inherits the forward run's bias (and BAR's two halves are no longer independent); results say so.

``check_draws`` (:mod:`pmz.runners.draws_check`, re-exported here) tests that draws look like this model's
posterior (draws of another model with the same variable names pass every check of names, shapes and supports);
``nuts_draws`` raises ``SamplingInterrupted`` (a
``KeyboardInterrupt``) when ``pm.sample`` was interrupted and returned a fraction of the draws.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import xarray as xr

from ..inference_data import get_group, group_names, is_inference_data, posterior_group
from ..interrupts import is_interrupt
from ..threads import PYTENSOR_LOCK
from ..weights import systematic_resample
from .draws_check import chain_ess, check_draws, mismatch_reason, unmoved_draws_reason

__all__ = [
    "posterior_to_flat",
    "is_draws",
    "DRAW_KINDS",
    "nuts_draws",
    "hmc_starts",
    "resampled_starts",
    "chain_ess",
    "check_draws",
    "mismatch_reason",
    "SamplingInterrupted",
    "evenly_spaced",
]

DRAW_KINDS = (
    "pm.sample's result (InferenceData or DataTree), its posterior group (an xarray.Dataset with dims chain, draw, "
    "...) or a dict {name: array (n, ...)}"
)


def is_draws(obj) -> bool:
    """Whether ``obj`` is one of the kinds of posterior draws :func:`posterior_to_flat` reads."""
    return is_inference_data(obj) or isinstance(obj, xr.Dataset | Mapping)


DIVERGENT_FRACTION = 1e-4  # more divergent transitions than this fraction of the draws (and > 1): draws that miss


def too_many_divergences(divergences: int, n_draws: int) -> bool:
    """Whether divergent transitions say the draws miss part of the posterior (a funnel's neck): more than one
    and more than :data:`DIVERGENT_FRACTION` of the draws. On the centred eight schools, 19-58 divergences in 32000
    draws (R-hat 1.03-1.04) came with path estimates 2-3 se low; a single one is allowed (round-off in a long
    trajectory)."""
    return divergences > max(1.0, DIVERGENT_FRACTION * n_draws)


def divergences_in(posterior) -> tuple[int, int] | None:
    """``(divergent transitions, draws)`` that a ``pm.sample`` result records (``sample_stats.diverging``), or
    None where the draws carry no such record (a bare posterior group, a dict, another sampler's output)."""
    if not is_inference_data(posterior):
        return None
    stats = get_group(posterior, "sample_stats")
    if stats is None or "diverging" not in stats:
        return None
    diverging = np.asarray(stats["diverging"].values)
    return int(diverging.sum()), int(diverging.size)


def divergences_reason(divergences: int, n_draws: int, option: str = "posterior") -> str:
    """Why draws with many divergent transitions cannot be trusted ("" when they are few); ``option``: the
    argument the draws came in, or ``"pm.sample"`` for draws bridge sampling made itself."""
    if not too_many_divergences(divergences, n_draws):
        return ""
    where = f"pm.sample's {n_draws} draws" if option == "pm.sample" else f"the {n_draws} draws given as {option}="
    return (f"{divergences} divergent transitions in {where} (the sampler could not follow the posterior "
            "everywhere, e.g. a funnel's neck: the draws may miss part of it); reparametrise the model (e.g. "
            "non-centred), or use method='auto' without posterior= (where its own chains diverge it takes SMC "
            "from the prior)")


def _posterior_group(posterior, option: str):
    if is_inference_data(posterior):  # pm.sample's InferenceData (PyMC 5) or DataTree (PyMC 6), or its node
        try:
            return posterior_group(posterior)
        except ValueError:
            raise ValueError(
                f"pmz: the draws given as {option}= have no 'posterior' group (groups: {group_names(posterior)}); "
                "pass pm.sample's result or its posterior group"
            ) from None
    if not isinstance(posterior, xr.Dataset | Mapping):
        raise TypeError(f"pmz: {option}= must be {DRAW_KINDS}; got {type(posterior).__name__}")
    return posterior  # an xarray Dataset or a dict of arrays


def _draw_shapes(compiled) -> dict[str, tuple]:
    """Shape of one draw of each free variable on its own (constrained) scale, as pm.sample stores it."""
    shapes, unknown = {}, []
    for rv in compiled.model.free_RVs:
        if None in rv.type.shape:  # a symbolic dimension (dims from mutable coords): evaluate it once
            unknown.append(rv.name)
        else:
            shapes[rv.name] = tuple(int(d) for d in rv.type.shape)
    if unknown:
        values = compiled.to_constrained(compiled.initial_point()[None])
        shapes.update({name: tuple(values[name].shape[1:]) for name in unknown})
    return shapes


def _named_draws(compiled, post, option: str):
    """``{name: (n, *shape)}`` for every free variable and the chain of each draw; errors name what is wrong."""
    names = [rv.name for rv in compiled.model.free_RVs]
    missing = [name for name in names if name not in post]
    if missing:
        raise ValueError(
            f"pmz: the draws given as {option}= lack the free variable(s) {missing} of the model "
            f"(they hold {sorted(map(str, post))}); pass draws of this model's variables"
        )
    if not isinstance(post, xr.Dataset):  # a dict (an xarray Dataset is a Mapping too)
        draws = {name: np.asarray(post[name]) for name in names}
        counts = {name: (v.shape[0] if v.ndim else 0) for name, v in draws.items()}
        if len(set(counts.values())) > 1:
            raise ValueError(
                f"pmz: the draws given as {option}= have different numbers of draws per variable {counts}; "
                "a dict holds arrays (n, ...) with the same n, the draw index first"
            )
        chain = np.zeros(next(iter(counts.values())), dtype=int)
        layout = "a dict holds arrays (n, *shape), the draw index first (an xarray Dataset: (chain, draw, *shape))"
        where = "draw {}".format
    else:
        for name in names:
            if post[name].dims[:2] != ("chain", "draw"):
                raise ValueError(
                    f"pmz: the draws of {name!r} given as {option}= have dims {post[name].dims}; pmz reads "
                    "(chain, draw, ...) as pm.sample stores them"
                )
        n_chain, n_draw = post.sizes["chain"], post.sizes["draw"]
        draws = {name: np.asarray(post[name]).reshape(n_chain * n_draw, *post[name].shape[2:]) for name in names}
        chain = np.repeat(np.arange(n_chain), n_draw)
        layout = "pmz reads dims (chain, draw, *shape)"

        def where(i):
            return f"chain {i // n_draw}, draw {i % n_draw}"

    if chain.size == 0:
        raise ValueError(f"pmz: no posterior draws given as {option}=")
    shapes = _draw_shapes(compiled)
    for name, values in draws.items():
        if values.dtype.kind not in "biuf":
            raise TypeError(f"pmz: the draws of {name!r} given as {option}= hold {values.dtype} values, not numbers")
        if values.shape[1:] != shapes[name]:
            raise ValueError(
                f"pmz: each draw of {name!r} given as {option}= has shape {values.shape[1:]}, but the model's "
                f"{name!r} has shape {shapes[name]}; {layout}"
            )
        bad = ~np.isfinite(values.reshape(values.shape[0], -1)).all(axis=1)
        if bad.any():
            raise ValueError(
                f"pmz: {int(bad.sum())} of the {values.shape[0]} draws of {name!r} given as {option}= are NaN or "
                f"inf (the first at {where(int(np.argmax(bad)))}); drop them or check the sampler that made them"
            )
    return draws, chain


def _check_support(compiled, X, draws: dict, option: str):
    """Draws outside their variable's support: the value transform gives NaN / inf (a negative scale, a value
    outside an interval) or does not invert to them (a simplex that does not sum to 1, an unordered vector under
    an ordered transform). The error names the first such variable and shows a value."""
    bad = ~np.isfinite(X)
    if bad.any():
        row, col = np.argwhere(bad)[0]
        name, count = compiled.layout.variable_of_coordinate(int(col)), int(bad.any(axis=1).sum())
    else:
        back = compiled.to_constrained(X)
        for name in draws:
            given = np.asarray(draws[name], dtype=float).reshape(X.shape[0], -1)
            off = ~np.isclose(back[name].reshape(X.shape[0], -1), given, rtol=1e-5, atol=1e-6).all(axis=1)
            if off.any():
                row, count = int(np.argmax(off)), int(off.sum())
                break
        else:
            return
    value = np.array2string(np.asarray(draws[name][row]), threshold=6, precision=4)
    raise ValueError(
        f"pmz: {count} of the {X.shape[0]} draws given as {option}= lie outside the support of {name!r} "
        f"(e.g. {name} = {value}); are they draws of this model?"
    )


def evenly_spaced(total: int, n: int) -> np.ndarray:
    """``n`` indices spread evenly over ``0 .. total - 1`` (rounded; repeated when ``n > total``)."""
    return np.round(np.linspace(0, total - 1, n)).astype(int)


def posterior_to_flat(compiled, posterior, n: int | None = None, *, option: str = "posterior",
                      check_moved: bool = True):
    """Flat unconstrained particles from posterior draws, thinned evenly to at most ``n``.

    The draws are checked first: every free variable present, one draw of each with the variable's shape, finite
    values inside the variable's support, and (``check_moved``) draws that moved: enough of them, no chain stuck,
    enough distinct values of every continuous coordinate (:func:`pmz.runners.draws_check.unmoved_draws_reason`);
    the errors name the variable and ``option`` (the argument the draws came in, ``"posterior"`` or
    ``"reverse_start"``).

    Parameters
    ----------
    compiled : CompiledModel
    posterior : pm.sample result (arviz.InferenceData or xarray.DataTree) or its posterior group, an
        xarray.Dataset with dims (chain, draw, ...), or a dict ``name -> (n, ...)``
    n : int, optional
        Keep at most this many draws (evenly spaced, all chains).
    option : str
        The name of the argument the draws were given as, for error messages.
    check_moved : bool
        Refuse draws that never moved (False for draws pmz made itself, whose own checks flag them).

    Returns
    -------
    X : ndarray (m, dim)
    chain : ndarray (m,) of int
        Chain index of each kept draw (for effective sample sizes).
    """
    values = _value_space_draws(compiled, posterior, option)
    if values is not None:  # stored in the value space itself: used as they are, no transform round trip
        X, chain = values
        keep = evenly_spaced(chain.size, chain.size if n is None else min(n, chain.size))
        X, chain = X[keep], chain[keep]
    else:
        draws, chain = _named_draws(compiled, _posterior_group(posterior, option), option)
        total = chain.size
        keep = evenly_spaced(total, total if n is None else min(n, total))
        kept = {name: v[keep] for name, v in draws.items()}
        X, chain = compiled.from_constrained(kept), chain[keep]
        _check_support(compiled, X, kept, option)
    if check_moved:
        unmoved = unmoved_draws_reason(compiled, X, chain, option)
        if unmoved:
            raise ValueError(unmoved)
    return X, chain


def _value_space_draws(compiled, posterior, option: str):
    """``(X, chain)`` from draws stored in the model's value space, or None when some variable's are not.

    ``pm.sample(idata_kwargs={"include_transformed": True})`` keeps each transformed variable's unconstrained value
    (``sigma_log__``): in an ``unconstrained_posterior`` group (PyMC 6) or beside the constrained draws in
    ``posterior`` (PyMC 5, and PyMC 6's own sampler). Where every value variable is there (untransformed ones
    under their own name in ``posterior``), the flat particles are those values, exactly as the sampler held
    them."""
    if is_inference_data(posterior):
        groups = [get_group(posterior, g) for g in ("unconstrained_posterior", "posterior")]
        groups = [g for g in groups if g is not None]
    elif isinstance(posterior, xr.Dataset):
        groups = [posterior]
    else:
        return None
    blocks = compiled.layout.blocks
    if not groups or not any(b.value_name != b.rv_name for b in blocks):
        return None  # nothing is transformed: the constrained path reads the same numbers, with its checks
    found = {}
    for b in blocks:
        source = next((g for g in groups if b.value_name in g.data_vars), None)
        if source is None:
            return None
        found[b.value_name] = source[b.value_name]
    sizes = {(int(v.sizes.get("chain", -1)), int(v.sizes.get("draw", -1))) for v in found.values()}
    first = next(iter(found.values()))
    if len(sizes) != 1 or first.dims[:2] != ("chain", "draw"):
        return None
    n_chain, n_draw = next(iter(sizes))
    points = {}
    for b in blocks:
        values = np.asarray(found[b.value_name], dtype=float).reshape(n_chain * n_draw, -1)
        if values.shape[1] != b.size:
            return None
        bad = ~np.isfinite(values).all(axis=1)
        if bad.any():
            raise ValueError(
                f"pmz: {int(bad.sum())} of the {values.shape[0]} draws of {b.value_name!r} given as {option}= are "
                "NaN or inf; drop them or check the sampler that made them"
            )
        points[b.value_name] = values
    return compiled.layout.from_points(points), np.repeat(np.arange(n_chain), n_draw)


class SamplingInterrupted(KeyboardInterrupt):
    """``pm.sample`` inside a pmz method was interrupted (Ctrl-C): PyMC then returns the draws made so far as if
    nothing happened; pmz raises this instead of estimating from a fraction of them. ``.idata`` holds what
    ``pm.sample`` returned (None when it had no draws yet), e.g. to pass as ``posterior=`` after all."""

    def __init__(self, message: str, idata=None):
        super().__init__(message)
        self.idata = idata


def nuts_draws(compiled, n: int, rng: np.random.Generator, *, chains: int = 2, tune: int = 1000, progressbar=False):
    """``n`` posterior draws from PyMC's ``pm.sample`` (NUTS), as flat particles, and the InferenceData.

    Raises :class:`SamplingInterrupted` (a ``KeyboardInterrupt``) when ``pm.sample`` returns fewer chains or draws
    than asked for: it catches Ctrl-C and returns a truncated trace.
    """
    import logging

    import pymc as pm

    draws_per_chain = int(np.ceil(n / chains))
    logger = logging.getLogger("pymc")
    level = logger.level
    if not progressbar:  # quiet runs stay quiet
        logger.setLevel(logging.WARNING)
    try:  # pm.sample builds and compiles its graphs: not while another thread does PyTensor work (pmz.threads)
        with PYTENSOR_LOCK, compiled.model:
            idata = pm.sample(
                draws=draws_per_chain,
                tune=tune,
                chains=chains,
                cores=1,
                random_seed=int(rng.integers(0, 2**31 - 1)),
                progressbar=progressbar,
                compute_convergence_checks=False,
                nuts_sampler="pymc",  # the same sampler (and bits) whether or not nutpie is installed
            )
    except ValueError as err:  # PyMC's answer to Ctrl-C during tuning, before any draw
        if "Not enough samples" in str(err):
            raise SamplingInterrupted(
                "pmz: pm.sample was interrupted (Ctrl-C) before its first draw; nothing was estimated"
            ) from err
        raise
    except SystemError as err:  # Ctrl-C inside a compiled function, which pm.sample does not catch
        if not is_interrupt(err):
            raise
        raise SamplingInterrupted("pmz: pm.sample was interrupted (Ctrl-C); nothing was estimated") from err
    finally:
        logger.setLevel(level)
    post = posterior_group(idata)
    got_chains, got_draws = int(post.sizes.get("chain", 0)), int(post.sizes.get("draw", 0))
    if got_chains < chains or got_draws < draws_per_chain:
        raise SamplingInterrupted(
            f"pmz: pm.sample returned {got_draws} of the {draws_per_chain} draws per chain asked for ({got_chains} of "
            f"{chains} chains): it was interrupted (Ctrl-C). pmz does not estimate from a fraction of the draws; "
            "the exception's .idata holds them (pass them as posterior= to use them anyway)",
            idata,
        )
    X, chain = posterior_to_flat(compiled, idata, check_moved=False)  # the Stein check flags a stuck chain
    return X[:n], chain[:n], idata


def hmc_starts(compiled, n: int, rng: np.random.Generator, *, n_chains: int = 32, thin: int = 4) -> np.ndarray:
    """``n`` posterior draws from pmz's many-chain HMC (:func:`pmz.runners.posterior_hmc.sample_posterior`), every
    ``thin``-th draw of each chain after warm-up, so that the reverse starts are nearly independent.

    Draws where the log posterior is not finite (a chain that started where the likelihood is zero and never left
    it) are dropped: fewer reverse starts, every one a posterior draw. An error when fewer than 10% remain.
    """
    from .posterior_hmc import sample_posterior
    from ..model.pymc import ModelSpecificationError

    per_chain = int(np.ceil(n / n_chains))
    draws = sample_posterior(compiled, rng, n_chains=n_chains, n_draws=per_chain * thin)
    X = draws.x[:, thin - 1 :: thin].transpose(1, 0, 2).reshape(-1, compiled.dim)  # draw-major: all chains early
    ok = np.isfinite(draws.log_posterior[:, thin - 1 :: thin].T.reshape(-1))
    X, ok = X[:n], ok[:n]
    if ok.sum() < max(2, 0.1 * X.shape[0]):
        raise ModelSpecificationError(
            f"pmz: only {int(ok.sum())} of {X.shape[0]} reverse starts from pmz's HMC (reverse_start='hmc') have a "
            "finite log posterior: the chains did not find the region where the likelihood is non-zero. Pass "
            "posterior draws (posterior=idata), or use method='auto' or method='smc'."
        )
    return X[ok]


def resampled_starts(forward, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` forward end states resampled (systematic) by their weights: approximate draws of p1."""
    if forward.final_x is None:
        raise ValueError("pmz: resampled reverse starts need the forward run's final states (keep_particles=True)")
    index = systematic_resample(rng, forward.log_weights, n)
    return forward.final_x[index]
