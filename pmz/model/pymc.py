"""Compile a PyMC model into batched log prior / log likelihood functions on the flat value space.

For a PyMC model with free random variables theta (unconstrained value variables z, Jacobians included)
and observed variables y, pmz splits the joint log density into

    log prior(z)      = sum over free RVs of log p(theta(z)) + log |d theta / d z|
    log likelihood(z) = sum over observed RVs of log p(y | theta(z))   (+ pm.Potential terms, by default)

and compiles ONE pytensor function that, for particles ``X`` of shape ``(n, dim)``, returns both parts
``(n,)`` and, optionally, their gradients ``(n, dim)``. The single-point graphs are built on one flat vector
``x`` and batched with ``pytensor.graph.replace.vectorize_graph``; nothing loops over particles in Python.

``pm.Potential`` terms are tempered with the likelihood by default (as PyMC's ``sample_smc`` does); pass
``potentials="prior"`` to keep them in the untempered part (then the prior is no longer normalised and
log Z is relative to it).

What is read off the model before compiling (improper priors, observed data) is in :mod:`pmz.model.inspection`,
the single-point graph helpers (parameter checks, value transforms) in :mod:`pmz.model.graphs`, the choice of
backend in :mod:`pmz.model.backend`.
"""

from __future__ import annotations

from collections import deque

import importlib
from numbers import Integral

import numpy as np
import pytensor
import pytensor.tensor as pt
from pytensor.graph.replace import graph_replace, vectorize_graph

import pymc as pm

from ..interrupts import interrupts_as_keyboard
from .backend import ONE_SHOT_MODE, CompileClock, backend_name, quiet_blas_link_warning, resolve_mode
from .graphs import batchable, constrained_graph, unconstrained_graph
from .inspection import default_block_size, improper_prior_names, non_finite_observed_names, observed_values
from .points import FlatLayout, layout_from_model

try:  # PyMC >= 5.19
    from pymc.pytensorf import compile as _compile_pymc
except ImportError:  # pragma: no cover - older PyMC 5
    from pymc.pytensorf import compile_pymc as _compile_pymc

__all__ = ["CompiledModel", "compile_model", "ModelSpecificationError"]

importlib.import_module(".indexing", __package__)  # registers the batched-take rewrite with PyTensor

_POTENTIAL_PLACES = ("likelihood", "prior")
SMALL_TERMS = 4096  # observed values up to which every term may share the gradient's compiled function


class ModelSpecificationError(ValueError):
    """The model cannot be handled by the requested pmz method (improper prior, discrete variable, ...)."""


class CompiledModel:
    """Batched log prior and log likelihood of a PyMC model on its flat unconstrained value space.

    Parameters
    ----------
    model : pymc.Model
    potentials : {"likelihood", "prior"}
        Which part the ``pm.Potential`` terms join. Default "likelihood": they are tempered.
    mode : str or pytensor Mode, optional
        PyTensor compilation mode; default: the stack's own backend (Numba on PyTensor 3, C on PyTensor 2),
        see :mod:`pmz.model.backend`.
    block_size : int, optional
        Particles per compiled call; larger batches are evaluated block by block. Default: chosen so that
        one block's intermediates stay cache-sized.

    Attributes
    ----------
    kind : "pymc"
        The :class:`~pmz.model.target.Target` kind.
    layout : FlatLayout
        Names and shapes of the value variables in the flat vector.
    dim : int
    n_logp_evals, n_grad_evals : int
        Particle evaluations so far, without and with gradients.
    compile_time : float
        Seconds spent compiling this model's functions so far (graph lowering and JIT code generation).
    backend : str
        The backend the functions are compiled for (``"numba"``, ``"c"``, ...).

    Examples
    --------
    >>> import numpy as np, pmz
    >>> cm = CompiledModel(pmz.systems.normal_mean().model)
    >>> log_prior, log_lik = cm.log_densities(np.zeros((5, cm.dim)))
    >>> log_prior.shape, log_lik.shape
    ((5,), (5,))
    """

    kind = "pymc"  # the target kind (pmz.model.target.Target)

    def __init__(self, model: pm.Model, *, potentials: str = "likelihood", mode=None, block_size=None):
        if potentials not in _POTENTIAL_PLACES:
            raise ValueError(f"potentials must be one of {_POTENTIAL_PLACES}, got {potentials!r}")
        if not model.value_vars:
            raise ModelSpecificationError("pmz: the model has no free random variables")
        observed = observed_values(model)
        bad_data = non_finite_observed_names(observed)
        if bad_data:
            raise ModelSpecificationError(
                f"pmz: the observed data of {bad_data} hold NaN or inf, so the log density is not finite. "
                "Remove or impute the missing values (a plain array with NaN passed to observed= is imputed by PyMC)."
            )
        self.model = model
        self.potentials = potentials
        self.mode_option = mode  # as given: a process that rebuilds this model compiles it the same way
        self.mode = resolve_mode(mode)
        self.backend = backend_name(self.mode)
        self.compile_clock = CompileClock()
        self.layout: FlatLayout = layout_from_model(model)
        self.dim = self.layout.dim
        self.improper_priors = improper_prior_names(model)
        # observed values (inf where some cannot be read without compiling: data that depend on other variables)
        self.n_observed = sum(np.inf if v is None else np.size(v) for v in observed.values())
        if block_size is None:
            block_size = default_block_size(observed, self.dim)
        elif isinstance(block_size, bool) or not isinstance(block_size, Integral) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, got {block_size!r}")
        self.block_size = int(block_size)
        self.n_logp_evals = 0
        self.n_grad_evals = 0
        self.n_nan_evals = 0  # points where log prior + log likelihood was NaN (read as zero density) ...
        self.n_posinf_evals = 0  # ... or +inf (log Z may be infinite): see _watch
        self.non_finite_points = deque(maxlen=512)  # the latest such points: (their count then, flat point)
        self._fn_value = None
        self._fn_grad = None
        self._terms_beside_gradients = False  # terms_beside_gradients: one compiled function for both
        self._build_graphs()

    # ---------------------------------------------------------------- graphs
    def _terms(self):
        """(prior terms, likelihood terms): free RVs | observed RVs, with the potentials where they belong."""
        model = self.model
        prior_terms = list(model.free_RVs)
        lik_terms = list(model.observed_RVs)
        if self.potentials == "likelihood":
            lik_terms += list(model.potentials)
        else:
            prior_terms += list(model.potentials)
        return prior_terms, lik_terms

    def _value_replacements(self, x):
        """Each value variable as a slice of the flat vector ``x`` (cast to its dtype)."""
        replace = {}
        for block, value_var in zip(self.layout.blocks, self.model.value_vars):
            piece = x[block.start : block.stop].reshape(block.shape) if block.shape else x[block.start]
            replace[value_var] = piece.astype(value_var.dtype)
        return replace

    def _single_point_graphs(self):
        model = self.model
        prior_terms, lik_terms = self._terms()
        x = pt.vector("x", dtype="float64")
        replace = self._value_replacements(x)
        log_prior = model.logp(vars=prior_terms, jacobian=True, sum=True)
        log_lik = model.logp(vars=lik_terms, sum=True) if lik_terms else pt.constant(0.0, dtype="float64")
        log_prior, log_lik = graph_replace([log_prior, log_lik], replace, strict=False)
        log_prior, log_lik = batchable([log_prior, log_lik])
        return x, log_prior, log_lik

    def _build_graphs(self):
        x, log_prior, log_lik = self._single_point_graphs()
        self._x = x
        self._log_prior_1, self._log_lik_1 = log_prior, log_lik
        X = pt.matrix("X", dtype="float64")
        lp, ll = vectorize_graph([log_prior, log_lik], replace={x: X})
        zeros = pt.zeros((X.shape[0],), dtype="float64")
        self._X = X
        self._lp, self._ll = lp + zeros, ll + zeros  # constant parts still get one entry per particle

    @property
    def compile_time(self) -> float:
        return self.compile_clock.seconds

    def _compile_inputs(self, inputs, outputs, *, mode=None):
        """One compiled function of ``inputs`` in :attr:`mode` (or ``mode``: e.g. ``"FAST_COMPILE"`` for a function
        called once), its compile time (first call included) clocked."""
        with self.compile_clock.timed(), self.model, quiet_blas_link_warning():
            fn = _compile_pymc(inputs, outputs, mode=self.mode if mode is None else mode, on_unused_input="ignore")
        return self.compile_clock.first_call(fn)

    def _compile(self, outputs):
        return self._compile_inputs([self._X], outputs)

    @property
    def fn_value(self):
        if self._fn_value is None:
            self._fn_value = self._compile([self._lp, self._ll])
        return self._fn_value

    @property
    def fn_value_grad(self):
        if self._fn_grad is None:
            g_lp = pytensor.grad(self._lp.sum(), self._X, disconnected_inputs="ignore")
            g_ll = pytensor.grad(self._ll.sum(), self._X, disconnected_inputs="ignore")
            extra = [self._all_terms_graph()] if self._terms_beside_gradients else []
            self._fn_grad = self._compile([self._lp, self._ll, g_lp, g_ll, *extra])
        return self._fn_grad

    def terms_beside_gradients(self) -> bool:
        """Compile every term of the log density (:meth:`log_density_terms`) into the gradient function, where
        neither is compiled yet and the model has at most :data:`SMALL_TERMS` observed values: a caller that needs
        both (the Laplace route's groupwise quadrature) then pays one JIT compile instead of two (on Numba 4-6 s
        against 7 s for a 24-coordinate Poisson GLMM's first call), at the cost of an ``(n, N)`` copy per gradient
        call, small at that size. Returns whether they are compiled together."""
        if self._fn_grad is None and getattr(self, "_fn_all_terms", None) is None:
            self._terms_beside_gradients = self.n_observed <= SMALL_TERMS
        return self._terms_beside_gradients

    # ---------------------------------------------------------------- observation terms (data annealing)
    def _build_term_graphs(self):
        """The likelihood as a vector of terms ``l(x)`` (every element of every observed RV's elementwise log
        density, then of every tempered ``pm.Potential``, raveled in C order), and the weighted sum
        ``sum_i w_i l_i(x)`` for a weight vector ``w`` (data annealing: ``w`` = 1 on the included terms)."""
        model = self.model
        _, lik_terms = self._terms()
        if not lik_terms:
            raise ModelSpecificationError("pmz: the model has no observed variables (nothing to anneal in)")
        x = pt.vector("x", dtype="float64")
        terms = model.logp(vars=lik_terms, jacobian=True, sum=False)
        terms = graph_replace(terms, self._value_replacements(x), strict=False)
        terms = batchable(terms)
        vector = pt.concatenate([pt.as_tensor(t).astype("float64").ravel() for t in terms])
        sizes = pytensor.function(  # shapes only: the Python linker, nothing to compile
            [x], [pt.as_tensor(t).size for t in terms], on_unused_input="ignore", mode="FAST_COMPILE"
        )(np.zeros(self.dim))
        self.term_names = [t.name or f"term_{i}" for i, t in enumerate(lik_terms)]
        self.term_sizes = [int(n) for n in sizes]
        self.n_terms = int(sum(self.term_sizes))
        X = self._X
        w = pt.vector("w", dtype="float64")
        (L,) = vectorize_graph([vector], replace={x: X})
        self._terms_X, self._w = L, w
        self._lp_w, self._U_w = self._lp, pt.dot(L, w) + pt.zeros((X.shape[0],), dtype="float64")

    def _compile_with_weights(self, outputs):
        return self._compile_inputs([self._X, self._w], outputs)

    def _term_functions(self, which):
        if getattr(self, "_fn_terms", None) is None:
            self._build_term_graphs()
            self._fn_terms = {}
        if which not in self._fn_terms:
            if which == "terms":
                fn = self._compile([self._terms_X])
            elif which == "weighted":
                fn = self._compile_with_weights([self._lp_w, self._U_w])
            else:
                g_lp = pytensor.grad(self._lp_w.sum(), self._X, disconnected_inputs="ignore")
                g_U = pytensor.grad(self._U_w.sum(), self._X, disconnected_inputs="ignore")
                fn = self._compile_with_weights([self._lp_w, self._U_w, g_lp, g_U])
            self._fn_terms[which] = fn
        return self._fn_terms[which]

    def log_likelihood_terms(self, X) -> np.ndarray:
        """The likelihood's terms at a batch: ``X (n, dim) -> (n, n_terms)`` (see :attr:`term_names`,
        :attr:`term_sizes`); their row sums are the log likelihood."""
        (L,) = self._blocked(self._term_functions("terms"), X, 1)
        self.n_logp_evals += L.shape[0]
        return L

    def log_density_terms(self, X) -> np.ndarray:
        """Every term of the log density, elementwise, at a batch: each free variable's prior (with its Jacobian),
        each observed variable's log density and each Potential, raveled in that order: ``X (n, dim) -> (n, N)``.
        Their row sums are log prior + log likelihood. One compiled call per block (the Laplace route's groupwise
        quadrature reads each group's own terms from it)."""
        if self._terms_beside_gradients:
            T = self._blocked(self.fn_value_grad, X, 5)[4]
            self.n_grad_evals += T.shape[0]
            return T
        if getattr(self, "_fn_all_terms", None) is None:
            self._fn_all_terms = self._compile([self._all_terms_graph()])
        (T,) = self._blocked(self._fn_all_terms, X, 1)
        self.n_logp_evals += T.shape[0]
        return T

    def _all_terms_graph(self):
        """The batched vector of every term of the log density (:meth:`log_density_terms`)."""
        model = self.model
        terms = model.logp(vars=list(model.free_RVs) + list(model.observed_RVs) + list(model.potentials),
                           jacobian=True, sum=False)
        terms = graph_replace(terms, self._value_replacements(self._x), strict=False)
        terms = batchable(terms)
        vector = pt.concatenate([pt.as_tensor(t).astype("float64").ravel() for t in terms])
        (batched,) = vectorize_graph([vector], replace={self._x: self._X})
        return batched

    def log_densities_weighted(self, X, weights, *, grad: bool = False):
        """Log prior and the weighted log likelihood ``sum_i w_i l_i(x)`` (and their gradients if ``grad``):
        ``-> (log_prior, U_w[, grad_log_prior, grad_U_w])`` for ``X (n, dim)`` and ``weights (n_terms,)``."""
        w = np.ascontiguousarray(weights, dtype=np.float64)
        fn = self._term_functions("weighted_grad" if grad else "weighted")
        if w.shape != (self.n_terms,):
            raise ValueError(f"weights must have shape ({self.n_terms},), got {w.shape}")
        out = self._blocked(fn, X, 4 if grad else 2, w)
        if grad:
            self.n_grad_evals += out[0].shape[0]
        else:
            self.n_logp_evals += out[0].shape[0]
        return out

    # ---------------------------------------------------------------- evaluation
    def _blocked(self, fn, X, n_out, *extra):
        """``fn(X, *extra)`` evaluated in blocks of :attr:`block_size` rows (each block one vectorised call)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.dim:
            raise ValueError(f"particles must have shape (n, {self.dim}), got {X.shape}")
        n = X.shape[0]
        with interrupts_as_keyboard():  # Ctrl-C inside a Numba-compiled function: a KeyboardInterrupt, not SystemError
            if n <= self.block_size:
                return [np.asarray(o) for o in fn(X, *extra)]
            outs = [[] for _ in range(n_out)]
            for start in range(0, n, self.block_size):
                for store, o in zip(outs, fn(X[start : start + self.block_size], *extra)):
                    store.append(np.array(o))
        return [np.concatenate(o) for o in outs]

    def _watch(self, X, lp, ll):
        """Count the points where ``log p~ = lp + ll`` is NaN or +inf, and keep the latest 512 of them. The samplers
        read NaN as zero density and step away from it, and +inf as any other value; ``pmz.evidence`` makes a run
        unreliable where such points lie among its posterior draws (:func:`pmz.api._non_finite`)."""
        with np.errstate(invalid="ignore"):
            total = np.asarray(lp) + np.asarray(ll)
        bad = np.isnan(total) | (total == np.inf)
        if bad.any():
            rows = np.flatnonzero(bad)
            self.n_nan_evals += int(np.isnan(total[rows]).sum())
            self.n_posinf_evals += int((total[rows] == np.inf).sum())
            count = self.n_nan_evals + self.n_posinf_evals
            for row in rows[-self.non_finite_points.maxlen :]:
                self.non_finite_points.append((count, np.array(X[row], dtype=float)))

    def log_densities(self, X):
        """Log prior and log likelihood of a batch: ``X (n, dim) -> (log_prior (n,), log_lik (n,))``."""
        lp, ll = self._blocked(self.fn_value, X, 2)
        self.n_logp_evals += len(lp)
        self._watch(X, lp, ll)
        return lp, ll

    def log_densities_one_shot(self, X):
        """:meth:`log_densities` compiled with :data:`pmz.model.backend.ONE_SHOT_MODE` (no C or JIT compile): for a
        few large batches, such as an exact sum over a discrete model's joint values, where compiling costs more than
        evaluating."""
        if getattr(self, "_fn_value_one_shot", None) is None:
            self._fn_value_one_shot = self._compile_inputs([self._X], [self._lp, self._ll], mode=ONE_SHOT_MODE)
        lp, ll = self._blocked(self._fn_value_one_shot, X, 2)
        self.n_logp_evals += len(lp)
        self._watch(X, lp, ll)
        return lp, ll

    def log_densities_once(self, X):
        """:meth:`log_densities` for a one-off batch: through the gradient function when only that one is compiled
        (a second compile costs seconds, the gradients on one batch milliseconds)."""
        if self._fn_value is None and self._fn_grad is not None:
            lp, ll, _, _ = self.log_densities_and_grads(X)
            return lp, ll
        return self.log_densities(X)

    def log_densities_and_grads(self, X):
        """Both parts and their gradients: ``-> (log_prior, log_lik, grad_log_prior, grad_log_lik)``."""
        lp, ll, glp, gll = self._blocked(self.fn_value_grad, X, 4)[:4]
        self.n_grad_evals += len(lp)
        self._watch(X, lp, ll)
        return lp, ll, glp, gll

    # ---------------------------------------------------------------- per-variable prior terms (checks)
    def log_prior_terms(self, X, names) -> np.ndarray:
        """Each named free variable's own prior term ``log p(v | parents) + log |Jacobian|`` at a batch:
        ``X (n, dim) -> (n, len(names))``. Compiled once per set of names for the Python linker (a check runs it
        on a few thousand rows once per model; a JIT compile would cost more than the evaluation)."""
        cache = self.__dict__.setdefault("_fn_prior_terms", {})
        key = tuple(names)
        if key not in cache:
            rvs = {rv.name: rv for rv in self.model.free_RVs}
            terms = [self.model.logp(vars=[rvs[name]], jacobian=True, sum=True) for name in key]
            terms = graph_replace(terms, self._value_replacements(self._x), strict=False)
            terms = batchable(terms)
            vector = pt.stack([pt.as_tensor(t).astype("float64") for t in terms])
            (batched,) = vectorize_graph([vector], replace={self._x: self._X})
            cache[key] = self._compile_inputs([self._X], batched, mode=ONE_SHOT_MODE)
        X = np.ascontiguousarray(X, dtype=np.float64)
        out = np.asarray(cache[key](X), dtype=float).reshape(X.shape[0], len(key))
        self.n_logp_evals += X.shape[0]
        return out

    # ---------------------------------------------------------------- single-point helpers
    def hessian_log_posterior(self):
        """Compiled function ``x (dim,) -> Hessian of log prior + log lik`` (dense, by pytensor)."""
        total = self._log_prior_1 + self._log_lik_1
        hess = pytensor.gradient.hessian(total, self._x)
        return self._compile_inputs([self._x], hess)

    def to_constrained(self, X) -> dict[str, np.ndarray]:
        """Flat particles ``(n, dim)`` -> ``{rv_name: constrained values (n, *shape)}`` (one batched call)."""
        if getattr(self, "_fn_constrained", None) is None:
            named = constrained_graph(self.model, self._x)
            self._constrained_names = list(named)
            batched = vectorize_graph([named[n] for n in self._constrained_names], replace={self._x: self._X})
            self._fn_constrained = self._compile_inputs([self._X], batched, mode=ONE_SHOT_MODE)
        X = np.ascontiguousarray(X, dtype=np.float64)
        with interrupts_as_keyboard():
            values = self._fn_constrained(X)
        return {n: np.asarray(v) for n, v in zip(self._constrained_names, values)}

    def from_constrained(self, draws: dict) -> np.ndarray:
        """Named constrained draws ``{rv_name: (n, *shape)}`` -> flat unconstrained particles ``(n, dim)``.

        The inverse of :meth:`to_constrained` (value transforms applied, e.g. ``log`` for a positive variable),
        in one batched compiled call; used to start reverse paths at posterior draws from ``pm.sample``.
        """
        if getattr(self, "_fn_unconstrained", None) is None:
            batched_in, batched = unconstrained_graph(self.model)
            self._unconstrained_inputs = [rv.name for rv in self.model.free_RVs]
            self._fn_unconstrained = self._compile_inputs(batched_in, batched, mode=ONE_SHOT_MODE)
        missing = [name for name in self._unconstrained_inputs if name not in draws]
        if missing:
            raise ValueError(f"pmz: the draws lack the free variable(s) {missing}")
        rvs = {rv.name: rv for rv in self.model.free_RVs}
        values = [np.asarray(draws[name], dtype=rvs[name].type.dtype) for name in self._unconstrained_inputs]
        n = {v.shape[0] for v in values}
        if len(n) != 1:
            raise ValueError(f"pmz: the draws of different variables have different counts {sorted(n)}")
        with interrupts_as_keyboard():
            X = np.asarray(self._fn_unconstrained(*values), dtype=np.float64)
        if X.shape[1:] != (self.dim,):
            raise ValueError(f"pmz: the draws map to shape {X.shape}, expected (n, {self.dim}); check their shapes")
        return X

    def initial_point(self) -> np.ndarray:
        """PyMC's initial point of the model as a flat vector."""
        return self.layout.from_point(self.model.initial_point())

    def point_logps(self, x) -> dict[str, float]:
        """Per-variable log densities at one flat point (used to name the culprit of a NaN/inf)."""
        point = self.layout.to_point(x)
        terms = list(self.model.free_RVs) + list(self.model.observed_RVs) + list(self.model.potentials)
        with self.model:
            fn = self.model.compile_fn(self.model.logp(vars=terms, sum=False), point_fn=True)
        values = fn(point)
        return {t.name: float(np.sum(v)) for t, v in zip(terms, values)}

    def __repr__(self):
        return (
            f"CompiledModel(dim={self.dim}, potentials={self.potentials!r}, block_size={self.block_size}, "
            f"{self.layout!r})"
        )


def compile_model(model=None, **kwargs) -> CompiledModel:
    """Compile ``model`` (or the model of the current ``with`` context) for pmz. See :class:`CompiledModel`."""
    model = pm.modelcontext(model)
    return CompiledModel(model, **kwargs)
