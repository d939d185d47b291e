"""Gaussian-process classification with a probit likelihood: data, PyMC models and reference evidences.

Model (Rasmussen & Williams 2006, GPML chapter 3; ARM section 4): inputs ``x_i``, labels ``y_i in {-1, +1}``,

    f ~ N(0, K),    K_ij = a^2 exp(-|x_i - x_j|^2 / (2 l^2)),    p(y_i | f_i) = Phi(y_i f_i),

with fixed amplitude ``a`` and length scale ``l``. Writing the probit as a noisy threshold, ``y_i = sign(z_i)``
with ``z = f + eps``, ``eps ~ N(0, I)``, gives the *z-representation* (ARM eq 10): ``z ~ N(0, C)``, ``C = K + I``,
and the evidence is an orthant probability

    p(y) = P(y_i z_i > 0 for all i),    z ~ N(0, K + I).

Reference values of log p(y) (:mod:`pmz.gp.probit_evidence`, re-exported here): the exact orthant
probability for up to ~12 points (:func:`probit_log_evidence_exact`), expectation propagation, pmz's reference
for 100-300 points, accurate to a few tenths there (:func:`probit_log_evidence_ep`), and Laplace's approximation,
which underestimates it more (:func:`probit_log_evidence_laplace`).

Data (:func:`load_digits_gp`): scikit-learn's digits 3 (label +1) versus 8 (label -1), standardised pixels
reduced to principal-component scores, extracted once into ``data/digits_gp.npz`` by
``benchmarks/extract_gp_data.py`` (pmz needs no scikit-learn).

Models and problems: :func:`probit_gp_model` (a PyMC model with latent f, whitened ``pm.gp.Latent`` or an
explicit ``pm.MvNormal``), :func:`digits_gp_problem` (X, y and K for :class:`pmz.gp.probit_sequence.ProbitGPSequence`)
and :func:`gp_classification` (a :class:`~pmz.systems.conjugate.KnownTruth`).

References: Rasmussen & Williams, "Gaussian processes for machine learning", MIT Press 2006 (GPML);
Fraccaro, Paquet & Winther, "An adaptive resample-move algorithm for estimating normalizing constants" (ARM).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

import numpy as np
from scipy import special

from ..records import KnownTruth
from .probit_evidence import (
    _check_labels,
    probit_log_evidence_ep,
    probit_log_evidence_exact,
    probit_log_evidence_laplace,
)

__all__ = [
    "DIGITS_GP_FILE",
    "EXACT_MAX_POINTS",
    "GPProblem",
    "digits_gp_problem",
    "gp_classification",
    "load_digits_gp",
    "probit_gp_model",
    "probit_log_evidence_ep",
    "probit_log_evidence_exact",
    "probit_log_evidence_laplace",
    "squared_exponential",
]

DIGITS_GP_FILE = Path(__file__).resolve().parent / "data" / "digits_gp.npz"
EXACT_MAX_POINTS = 12  # largest n for which gp_classification computes the exact orthant probability
DEFAULT_AMPLITUDE = 2.0
DEFAULT_LENGTH_SCALE = 4.0
DEFAULT_JITTER = 1e-6  # pm.gp.Latent's default; added to K everywhere so that model and reference agree


# --------------------------------------------------------------------------------------------- data


@functools.lru_cache(maxsize=1)
def _digits_gp_arrays():
    with np.load(DIGITS_GP_FILE) as f:
        return f["scores"].astype(np.float64), f["labels"].astype(np.int64)


def load_digits_gp(n_points: int | None = None, n_components: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Digits 3 (``y = +1``) versus 8 (``y = -1``) as principal-component scores.

    The 357 images of the two classes in scikit-learn's ``load_digits`` with standardised pixels, projected on
    their first ``n_components`` (at most 10) principal components, in a fixed random order (see
    ``benchmarks/extract_gp_data.py``); ``n_points`` keeps the first rows of that order (a deterministic
    subsample with both classes).

    Returns
    -------
    X : ndarray (n, n_components), float64
    y : ndarray (n,), int, values in {-1, +1}

    >>> X, y = load_digits_gp(n_points=8)
    >>> X.shape, y.tolist()
    ((8, 5), [-1, 1, 1, -1, -1, -1, 1, -1])
    """
    scores, labels = _digits_gp_arrays()
    if not 1 <= n_components <= scores.shape[1]:
        raise ValueError(f"n_components must be between 1 and {scores.shape[1]}, got {n_components}")
    n = scores.shape[0] if n_points is None else int(n_points)
    if not 1 <= n <= scores.shape[0]:
        raise ValueError(f"n_points must be between 1 and {scores.shape[0]}, got {n_points}")
    return scores[:n, :n_components].copy(), labels[:n].copy()


def squared_exponential(X, amplitude: float = 1.0, length_scale: float = 1.0, *, jitter: float = 0.0) -> np.ndarray:
    """Squared-exponential covariance ``K_ij = a^2 exp(-|x_i - x_j|^2 / (2 l^2)) + jitter * [i == j]``.

    The same function as ``amplitude**2 * pm.gp.cov.ExpQuad(d, ls=length_scale)`` (GPML eq 2.16).

    >>> squared_exponential(np.array([[0.0], [1.0]]), 2.0, 1.0).round(4).tolist()
    [[4.0, 2.4261], [2.4261, 4.0]]
    """
    X = np.asarray(X, dtype=np.float64)
    X = X[:, None] if X.ndim == 1 else X
    sq = np.sum(X**2, axis=1)
    dist2 = np.maximum(sq[:, None] + sq[None, :] - 2.0 * X @ X.T, 0.0)
    K = amplitude**2 * np.exp(-0.5 * dist2 / length_scale**2)
    K[np.diag_indices_from(K)] = amplitude**2 + jitter
    return K


class GPProblem(NamedTuple):
    """A probit GP classification problem with fixed hyperparameters.

    Attributes
    ----------
    X : ndarray (n, d)
        Inputs.
    y : ndarray (n,)
        Labels in {-1, +1}.
    K : ndarray (n, n)
        Prior covariance of the latent f (squared exponential plus jitter); ``C = K + I`` is the covariance of
        the z-representation.
    amplitude, length_scale, jitter : float
    """

    X: np.ndarray
    y: np.ndarray
    K: np.ndarray
    amplitude: float
    length_scale: float
    jitter: float


def digits_gp_problem(
    n_points: int = 100,
    *,
    n_components: int = 5,
    amplitude: float = DEFAULT_AMPLITUDE,
    length_scale: float = DEFAULT_LENGTH_SCALE,
    jitter: float = DEFAULT_JITTER,
) -> GPProblem:
    """The digits problem of :func:`load_digits_gp` with its covariance matrix, e.g. for
    :class:`~pmz.gp.probit_sequence.ProbitGPSequence` (``ProbitGPSequence(problem.K, problem.y)``)."""
    X, y = load_digits_gp(n_points, n_components)
    K = squared_exponential(X, amplitude, length_scale, jitter=jitter)
    return GPProblem(X, y, K, float(amplitude), float(length_scale), float(jitter))


# ----------------------------------------------------------------------------------------- PyMC model


def _log_probit(f):
    """``log Phi(f)`` as a PyTensor graph, stable in both tails and with finite gradients everywhere.

    ``Phi(f) = erfc(-f / sqrt 2) / 2``. For ``f < -1``, ``log Phi(f) = log(erfcx(-f / sqrt 2) / 2) - f^2 / 2``
    (scaled complementary error function, no underflow); otherwise ``log1p(-erfc(f / sqrt 2) / 2)``. Each
    branch sees its input clipped to its own range, so the branch not taken never produces inf or nan (whose
    zero-weighted gradient would still be nan).
    """
    import pytensor.tensor as pt

    one, half, inv_sqrt2 = np.float64(1.0), np.float64(0.5), np.float64(np.sqrt(0.5))
    lower = pt.minimum(f, -one)
    upper = pt.maximum(f, -one)
    lower_tail = pt.log(half * pt.erfcx(-lower * inv_sqrt2)) - half * lower**2
    bulk = pt.log1p(-half * pt.erfc(upper * inv_sqrt2))
    return pt.switch(pt.lt(f, -one), lower_tail, bulk)


def probit_gp_model(
    X,
    y,
    amplitude: float = DEFAULT_AMPLITUDE,
    length_scale: float = DEFAULT_LENGTH_SCALE,
    *,
    latent: str = "gp",
    likelihood: str = "stable",
    jitter: float = DEFAULT_JITTER,
):
    """A PyMC model of probit GP classification with fixed hyperparameters.

    ``f ~ GP(0, a^2 ExpQuad(l))`` at the inputs and ``y_i ~ Bernoulli(Phi(f_i))`` (labels mapped to 0/1).

    With ``likelihood="stable"`` (default) the observed ``y`` is a ``pm.CustomDist`` whose log density is
    ``log Phi((2 y - 1) f)`` computed stably in both tails (:func:`_log_probit`) and whose draws are
    Bernoulli(``Phi(f)``). ``likelihood="bernoulli"`` is PyMC's idiom ``pm.Bernoulli(p=pm.math.invprobit(f))``,
    which :func:`pmz.gp.structure.gp_structure` (the GP RMHMC kernel) recognises, but whose ``log(1 - p)`` rounds to
    ``log 0`` for ``f`` > ~8.3 at a label -1 (value -inf, gradient -inf or nan; already 0.14 off at ``f = 8``).
    (``pm.Bernoulli(logit_p=log Phi(f) - log Phi(-f))``, exactly ``logit(Phi(f))``, has the right values but
    PyTensor differentiates it through a saturated sigmoid: its gradient is nan or silently 0 for ``|f|`` > ~9.)

    Parameters
    ----------
    X : array (n, d)
    y : array (n,)
        Labels in {-1, +1}.
    amplitude, length_scale : float
        Fixed hyperparameters (not random variables).
    latent : {"gp", "mvnormal"}
        ``"gp"``: ``pm.gp.Latent(...).prior("f", reparameterize=True)``, i.e. the whitened free variable
        ``f_rotated_ ~ N(0, I)`` and ``f = L f_rotated_`` (``L L' = K``); ``"mvnormal"``: the explicit
        ``pm.MvNormal("f", 0, K)``.
    likelihood : {"stable", "bernoulli"}
        The observed variable: the stable probit ``pm.CustomDist`` or ``pm.Bernoulli(p=pm.math.invprobit(f))``.
    jitter : float
        Added to the diagonal of K (the same value in both variants).

    Returns
    -------
    pymc.Model
        Free variable ``f_rotated_`` (``"gp"``) or ``f`` (``"mvnormal"``), observed ``y``.
    """
    import pymc as pm

    X = np.asarray(X, dtype=np.float64)
    y = _check_labels(y, X.shape[0])
    amplitude, length_scale, jitter = np.float64(amplitude), np.float64(length_scale), np.float64(jitter)
    with pm.Model() as model:
        if latent == "gp":
            cov = pm.gp.cov.ExpQuad(X.shape[1], ls=length_scale) * amplitude**2
            f = pm.gp.Latent(cov_func=cov).prior("f", X=X, reparameterize=True, jitter=jitter)
        elif latent == "mvnormal":
            K = squared_exponential(X, amplitude, length_scale, jitter=jitter)
            f = pm.MvNormal("f", mu=np.zeros(X.shape[0]), cov=K)
        else:
            raise ValueError(f"latent must be 'gp' or 'mvnormal', got {latent!r}")
        observed = ((y + 1) // 2).astype(np.int64)
        if likelihood == "stable":
            pm.CustomDist(
                "y", f, logp=_probit_bernoulli_logp, random=_probit_bernoulli_random, dtype="int64", observed=observed
            )
        elif likelihood == "bernoulli":
            pm.Bernoulli("y", p=pm.math.invprobit(f), observed=observed)
        else:
            raise ValueError(f"likelihood must be 'stable' or 'bernoulli', got {likelihood!r}")
    return model


def _probit_bernoulli_logp(value, f):
    """``log p(value | f) = log Phi((2 value - 1) f)`` for 0/1 values (the probit Bernoulli)."""
    sign = 2.0 * value.astype("float64") - 1.0
    return _log_probit(sign * f)


def _probit_bernoulli_random(f, rng=None, size=None):
    """0/1 draws with ``P(1) = Phi(f)``."""
    return (rng.uniform(size=size) < special.ndtr(f)).astype(np.int64)


# ----------------------------------------------------------------------------------------- builders


def gp_classification(
    n_points: int = 8,
    *,
    n_components: int = 5,
    amplitude: float = DEFAULT_AMPLITUDE,
    length_scale: float = DEFAULT_LENGTH_SCALE,
    latent: str = "gp",
    likelihood: str = "stable",
    jitter: float = DEFAULT_JITTER,
    reference: str = "auto",
) -> KnownTruth:
    """Probit GP classification of digits 3 versus 8 (:func:`load_digits_gp`) with its log evidence.

    ``reference="exact"`` (the default for ``n_points <= EXACT_MAX_POINTS = 12``): the orthant probability by
    :func:`probit_log_evidence_exact` (Genz, relative error ~1e-5); ``"ep"`` (the default for more points): the
    EP approximation, a documented reference value that lies somewhat below the truth (about 0.1 for 100 points,
    0.2-0.3 for 300 points; see :func:`probit_log_evidence_ep`).

    >>> truth = gp_classification(4)
    >>> truth.name, round(truth.log_z, 4)
    ('gp_classification', -3.0019)
    """
    problem = digits_gp_problem(
        n_points, n_components=n_components, amplitude=amplitude, length_scale=length_scale, jitter=jitter
    )
    if reference == "auto":
        reference = "exact" if n_points <= EXACT_MAX_POINTS else "ep"
    if reference == "exact":
        if n_points > EXACT_MAX_POINTS:
            raise ValueError(f"the exact evidence is computed for at most {EXACT_MAX_POINTS} points")
        log_z = probit_log_evidence_exact(problem.K, problem.y)
    elif reference == "ep":
        log_z = probit_log_evidence_ep(problem.K, problem.y)
    else:
        raise ValueError(f"reference must be 'auto', 'exact' or 'ep', got {reference!r}")
    model = probit_gp_model(
        problem.X, problem.y, amplitude, length_scale, latent=latent, likelihood=likelihood, jitter=jitter
    )
    return KnownTruth(model, log_z, "gp_classification")
