"""A finite mixture of references: one component per posterior mode.

``q(x) = sum_c w_c q_c(x)`` with normalised components ``q_c`` (Gaussian or Student-t fits to the draws of one
mode) and weights ``w_c`` summing to one, so ``q`` is normalised (``log_z = 0``). Draws: a component by its weight,
then a draw of that component. Log density and gradient, stable in log space with the responsibilities
``r_c(x) = w_c q_c(x) / q(x)``::

    log q(x)      = logsumexp_c (log w_c + log q_c(x))
    grad log q(x) = sum_c r_c(x) grad log q_c(x)

The weights need not match the posterior masses of the modes for the evidence to be right: a path or importance
sampling from ``q`` is unbiased for ``Z`` whatever they are, as long as ``q`` covers every mode. Weights near the
masses make it efficient (:func:`pmz.runners.modes.mode_masses` estimates them).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

__all__ = ["MixtureReference", "RenormalisedReference"]


class RenormalisedReference:
    """``reference`` with its log density shifted by ``-log_mass``: a normalised density when ``reference``'s log
    density integrates to ``exp(log_mass)`` while its draws follow the normalised one (the prior under an
    ordered transform on K exchangeable entries: ``log_mass = -log K!``)."""

    log_z = 0.0

    def __init__(self, reference, log_mass: float, *, name: str | None = None):
        self.reference = reference
        self.log_mass = float(log_mass)
        self.dim = reference.dim
        self.name = name or getattr(reference, "name", "reference")

    def sample(self, rng, n):
        return self.reference.sample(rng, n)

    def log_density(self, X):
        return self.reference.log_density(X) - self.log_mass

    def grad_log_density(self, X):
        return self.reference.grad_log_density(X)



class MixtureReference:
    """``sum_c w_c q_c`` on the flat value space.

    Parameters
    ----------
    components : sequence of references (``sample``, ``log_density``, ``grad_log_density``, ``dim``), each normalised
    weights : array (n_components,), positive; normalised here
    name : str
    """

    log_z = 0.0

    def __init__(self, components, weights, *, name: str = "mixture"):
        self.components = list(components)
        weights = np.asarray(weights, dtype=float).reshape(-1)
        if len(self.components) == 0 or weights.size != len(self.components):
            raise ValueError("pmz: a mixture reference needs one positive weight per component")
        if not np.all(weights > 0) or not np.all(np.isfinite(weights)):
            raise ValueError(f"pmz: mixture weights must be positive and finite, got {weights}")
        dims = {c.dim for c in self.components}
        if len(dims) != 1:
            raise ValueError(f"pmz: mixture components have different dimensions {sorted(dims)}")
        self.dim = dims.pop()
        self.weights = weights / weights.sum()
        self.log_weights = np.log(self.weights)
        self.name = name

    @property
    def n_components(self) -> int:
        return len(self.components)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        n = int(n)
        which = rng.choice(self.n_components, size=n, p=self.weights)
        X = np.empty((n, self.dim))
        for c, component in enumerate(self.components):
            rows = np.flatnonzero(which == c)
            if rows.size:
                X[rows] = component.sample(rng, rows.size)
        return X

    def component_log_densities(self, X) -> np.ndarray:
        """``log w_c + log q_c(x)`` for every row and component, shape ``(n, n_components)``."""
        return np.stack([lw + c.log_density(X) for lw, c in zip(self.log_weights, self.components)], axis=1)

    def log_density(self, X) -> np.ndarray:
        return logsumexp(self.component_log_densities(X), axis=1)

    def responsibilities(self, X) -> np.ndarray:
        """``r_c(x) = w_c q_c(x) / q(x)``, shape ``(n, n_components)``; rows sum to one."""
        parts = self.component_log_densities(X)
        with np.errstate(invalid="ignore"):
            return np.exp(parts - logsumexp(parts, axis=1, keepdims=True))

    def grad_log_density(self, X) -> np.ndarray:
        r = self.responsibilities(X)
        grads = np.stack([c.grad_log_density(X) for c in self.components], axis=1)  # (n, C, dim)
        return np.einsum("nc,ncd->nd", np.nan_to_num(r), grads)

    def __repr__(self):
        w = ", ".join(f"{v:.3g}" for v in self.weights)
        return f"MixtureReference(name={self.name!r}, dim={self.dim}, weights=[{w}])"
