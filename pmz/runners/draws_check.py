"""Do posterior draws belong to this model? A test from two Stein identities, coordinate by coordinate.

Draws given as ``posterior=`` pass every check of names, shapes and supports when they come from another model
with the same variable names: the same model on other data, a reparametrised copy (bambi reports its intercept
for uncentred predictors while the PyMC model it builds has the intercept of centred ones), a sampler that did not
converge. Bridge sampling from them is then confidently wrong. For draws ``x`` of a density ``p`` on the flat
unconstrained space (Jacobians included) with ``g = grad log p(x)``, integration by parts gives, for every
continuous coordinate ``j``,

    E[g_j] = 0                       (location)
    E[(x_j - m_j) g_j] = -1          (scale; any constant m_j, here the draws' mean)

Standardised, these are the two effects the test reads:

    location effect  a_j = sd(x_j) * mean(g_j)                 (-delta / sd for Gaussian draws shifted by delta)
    scale effect     b_j = 1 + mean((x_j - mean x_j) g_j)      (1 - r^2 for Gaussian draws whose sd is r times p's)

Each has its se from the spread of its terms and their effective sample size over chains (ArviZ's bulk ESS). A
coordinate is flagged when an effect is both significant, ``|effect| > z* se`` with ``z*`` Bonferroni's bound for
``2 d`` two-sided tests at family-wise level :data:`ALPHA`, and material, ``|effect| > MIN_EFFECT`` (0.2: a fifth
of a posterior sd, or a spread about 10% off, moves a bridge estimate by about ``effect^2 / 2``, 0.02 nats). Power
(docs, ``benchmarks/draws_check.py``): at 2000 draws, a shift of half a posterior sd (``a_j`` about 0.5) or a
spread 20% off (``b_j`` -0.44 or 0.36) in one coordinate. Cost: the log density and its gradient at every draw,
one call; with ``rng``, one more evaluation per draw probes the draws' neighbourhood (one random step
``N(0, Sigma / d)`` from each, ``Sigma`` the draws' covariance) so that a NaN or +inf density next to the posterior
is met and counted by the run's check of non-finite values (:func:`pmz.api`'s), as the draws alone may not.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from ..inference_data import ess_bulk
from ..records import DrawsCheck

__all__ = ["check_draws", "mismatch_reason", "chain_ess", "ALPHA", "MIN_EFFECT", "critical_z", "MIN_DISTINCT",
           "unmoved_draws_reason", "coordinate_name"]

ALPHA = 1e-3  # family-wise false-alarm level of the 2 d tests for independent draws (Bonferroni)
MIN_EFFECT = 0.2  # an effect below this (a fifth of a posterior sd, a spread ~10% off) is not flagged
MIN_DRAWS = 20
#: a continuous coordinate needs at least this many distinct values among the draws (the Stein check's MIN_DRAWS):
#: fewer is a single draw, a stuck chain, or too few draws to test or to estimate from
MIN_DISTINCT = MIN_DRAWS


def critical_z(dim: int) -> float:
    """``z*``: Bonferroni's bound for ``2 dim`` two-sided tests at family-wise level :data:`ALPHA`
    (3.5 for one coordinate, 4.6 for 100, 5.0 for 1000)."""
    return float(norm.isf(ALPHA / (4 * max(int(dim), 1))))


def chain_ess(values, chain) -> float:
    """Effective sample size of a scalar quantity over MCMC draws grouped by chain (ArviZ's rank-normalised ESS)."""
    values = np.asarray(values, dtype=float)
    chain = np.asarray(chain)
    ids = np.unique(chain)
    length = min(int(np.sum(chain == c)) for c in ids)
    if length < 4:
        return float(values.size)
    stacked = np.stack([values[chain == c][:length] for c in ids])
    ess = ess_bulk(stacked)
    return float(np.clip(ess, 1.0, values.size)) if np.isfinite(ess) else float(values.size)


def _mean_and_se(terms, chain) -> tuple[float, float]:
    """The mean of ``terms`` and its se, ``sd / sqrt(ESS)`` over chains."""
    return float(np.mean(terms)), float(np.std(terms) / np.sqrt(max(chain_ess(terms, chain), 1.0)))


def check_draws(compiled, X, chain, rng: np.random.Generator | None = None, *,
                option: str = "posterior") -> DrawsCheck | None:
    """Test that flat draws ``X (n, dim)`` (chain of each in ``chain``) look like draws of this model's posterior.

    See the module docstring for the two effects and the rule. Returns a :class:`pmz.records.DrawsCheck`: the
    effect of largest ``|z|`` over coordinates and both identities, its se, and ``mismatch`` ("" or a one-line
    reason naming the variable); None when there is nothing to test (fewer than :data:`MIN_DRAWS` draws with a
    finite density, or no continuous coordinate).
    """
    X = np.asarray(X, dtype=float)
    chain = np.asarray(chain)
    cont = np.flatnonzero(~compiled.layout.discrete_mask)
    if X.shape[0] < MIN_DRAWS or not cont.size:
        return None
    if rng is not None:
        _probe_neighbourhood(compiled, X, cont, rng)
    _, _, grad_prior, grad_lik = compiled.log_densities_and_grads(X)
    G = (grad_prior + grad_lik)[:, cont]
    ok = np.all(np.isfinite(G), axis=1)
    if ok.sum() < MIN_DRAWS:
        return None
    Xc, G, chain = X[ok][:, cont], G[ok], chain[ok]
    sd = Xc.std(axis=0)
    rows = []  # (|z|, effect, se, coordinate, kind)
    for j in range(cont.size):
        if not np.ptp(Xc[:, j]) > 0:  # never moved: no posterior of a continuous variable gives that
            rows.append((np.inf, 1.0, 0.0, j, "constant"))
            continue
        loc, loc_se = _mean_and_se(G[:, j] * sd[j], chain)
        scale, scale_se = _mean_and_se((Xc[:, j] - Xc[:, j].mean()) * G[:, j], chain)
        scale += 1.0
        rows.append((abs(loc) / max(loc_se, 1e-300), loc, loc_se, j, "location"))
        rows.append((abs(scale) / max(scale_se, 1e-300), scale, scale_se, j, "scale"))
    if not rows:
        return None
    z_crit = critical_z(cont.size)
    flagged = [r for r in rows if r[0] > z_crit and abs(r[1]) > MIN_EFFECT]
    worst = max(flagged or rows, key=lambda r: r[0])
    mismatch = _reason(compiled, cont, worst, len(flagged), option, z_crit) if flagged else ""
    return DrawsCheck(effect=worst[1], se=worst[2], mismatch=mismatch)


def _probe_neighbourhood(compiled, X, cont, rng) -> None:
    """One random step ``N(0, Sigma / d)`` from each draw (continuous coordinates), evaluated for its side effect:
    the compiled model counts NaN and +inf values (``n_nan_evals``), which make the run unreliable where they lie
    near the posterior draws."""
    d = cont.size
    cov = np.atleast_2d(np.cov(X[:, cont], rowvar=False))
    cov = cov + 1e-9 * max(np.trace(cov) / d, 1e-300) * np.eye(d)
    try:
        chol = np.linalg.cholesky(cov)
    except np.linalg.LinAlgError:
        return
    moved = X.copy()
    moved[:, cont] += rng.standard_normal((X.shape[0], d)) @ chol.T / np.sqrt(d)
    compiled.log_densities_once(moved)


def coordinate_name(compiled, i: int) -> str:
    """``beta[2]`` (the variable and, for a vector, the coordinate's place in it) for flat coordinate ``i``."""
    for block in compiled.layout.blocks:
        if block.start <= i < block.stop:
            name = block.rv_name if block.value_name == block.rv_name else f"{block.rv_name} ({block.value_name})"
            return name if block.size == 1 else f"{name}[{i - block.start}]"
    return f"coordinate {i}"


def _reason(compiled, cont, worst, n_flagged: int, option: str, z_crit: float) -> str:
    z, effect, se, j, kind = worst
    name = coordinate_name(compiled, int(cont[j]))
    if kind == "constant":
        return (f"the {option} draws do not look like draws of this model's posterior: {name} never moves (every "
                "draw holds the same value: a stuck chain)" + (f"; {n_flagged - 1} more test(s) failed"
                                                              if n_flagged > 1 else ""))
    if kind == "location":
        what = (f"{name} sits about {abs(effect):.2f} posterior sd {'below' if effect > 0 else 'above'} where this "
                f"model's posterior puts it (mean gradient of log p times sd: {effect:.3f} +- {se:.3f}, 0 for "
                "this model's draws)")
    else:
        ratio = np.sqrt(max(1.0 - effect, 0.0))
        what = (f"the spread of {name} is about {ratio:.2f} times this model's posterior's (mean of (x - mean) "
                f"d log p/dx: {effect - 1:.3f} +- {se:.3f}, -1 for this model's draws)")
    more = f"; {n_flagged - 1} more test(s) failed" if n_flagged > 1 else ""
    return (f"the {option} draws do not look like draws of this model's posterior: {what}, "
            f"z = {z:.0f} > {z_crit:.1f}{more}")


def mismatch_reason(reason: str, source: str) -> str:
    """A ``posterior_mismatch`` reason of :func:`check_draws` with advice, for the result's reliability reason;
    ``source`` is the record's ``reverse_start`` label ("posterior": the user's draws, "nuts": pm.sample's, ...)."""
    if source == "posterior":
        advice = (
            "are they draws of another model (other data, the same variable names) or of a reparametrised copy "
            "(bambi's fit: pass the bambi model to pmz, which maps them)? Draw from this model (pm.sample inside "
            "`with model:`) or leave posterior= at its default"
        )
    else:
        advice = f"the sampler ({source}) may not have converged: draw longer or check its diagnostics"
    return f"{reason}; {advice}"


def unmoved_draws_reason(compiled, X, chain, option: str = "posterior") -> str:
    """Why flat draws ``X (n, dim)`` (chain of each in ``chain``) cannot be estimated from, "" when they can.

    Draws of a continuous posterior take a new value at every accepted move, so each continuous coordinate of
    healthy draws holds many distinct values. Refused, naming the coordinate and what to pass instead:

    * fewer than :data:`MIN_DISTINCT` draws in all (a single draw);
    * a chain of two or more draws that never changes a continuous coordinate (a stuck chain);
    * a continuous coordinate with fewer than :data:`MIN_DISTINCT` distinct values over all draws (one repeated
      value, chains each stuck at one point, or a handful of values repeated).

    Discrete coordinates repeat by nature and are not read."""
    X = np.asarray(X, dtype=float)
    chain = np.asarray(chain)
    advice = ("pass the draws of a sampler that moved (pm.sample's result, e.g. 1000 draws from each of 2 or more "
              f"chains), or leave {option}= out (pmz then makes its own draws)")
    if X.shape[0] < MIN_DISTINCT:
        return (f"pmz: {X.shape[0]} draw(s) given as {option}= are too few to check or to estimate from (at least "
                f"{MIN_DISTINCT} needed); {advice}")
    cont = np.flatnonzero(~np.asarray(compiled.layout.discrete_mask, dtype=bool))
    if not cont.size:
        return ""
    Xc = X[:, cont]
    ids, first = np.unique(chain, return_index=True)
    for c in ids[np.argsort(first)]:
        rows = Xc[chain == c]
        stuck = np.flatnonzero(np.ptp(rows, axis=0) == 0) if rows.shape[0] > 1 else []
        if len(stuck):
            name = coordinate_name(compiled, int(cont[stuck[0]]))
            which, drop = (f"chain {c} of the draws", "drop that chain (e.g. idata.posterior.sel(chain=[...])) or "
                           ) if ids.size > 1 else ("the draws", "")
            return (f"pmz: {which} given as {option}= never moves: all its {rows.shape[0]} draws of {name} are "
                    f"{rows[0, stuck[0]]:.6g} (a stuck chain; {len(stuck)} of {cont.size} continuous coordinate(s) "
                    f"never move); {drop}{advice}")
    distinct = 1 + (np.diff(np.sort(Xc, axis=0), axis=0) != 0).sum(axis=0)
    few = int(np.argmin(distinct))
    if distinct[few] < MIN_DISTINCT:
        name = coordinate_name(compiled, int(cont[few]))
        return (f"pmz: the {X.shape[0]} draws given as {option}= hold only {distinct[few]} distinct value(s) of "
                f"{name} (at least {MIN_DISTINCT} needed): draws of a continuous posterior that barely moved "
                f"cannot tell where its mass lies; {advice}")
    return ""
