"""What every route of the default reads: the model (as written, and with its discrete variables summed out), the
options, the random streams, the clock, the progress bar, the chunk runner, and what earlier steps found (the
chains' draws, the bridge's findings), each computed once, when a route first asks for it."""

from __future__ import annotations

from functools import cached_property

from ..execution.executors import local_runner
from ..progress import progress_bar
from .chain_groups import ChainChunks
from .chains import CHAIN_CHUNKS, ChainsFindings, sample_chains
from .clock import Clock
from .tempered_route import discrete_left_reason

__all__ = ["AutoContext", "Progress", "Streams"]


class Streams:
    """The random streams of one call of the default, spawned from the run's generator in a fixed order, so that
    every route draws the same numbers whichever routes ran before it: ``sample`` (the chains), ``bridge``,
    ``more`` (more draws for the bridge), ``path``, ``smc`` (the tempered and modes routes), ``stuck`` (the masses
    of stuck chains), ``search`` (modes the draws miss). :meth:`spawn` gives further streams, in call order (the
    latent and importance routes' three, the discrete draws' one)."""

    NAMES = ("sample", "bridge", "more", "path", "smc", "stuck", "search")

    def __init__(self, rng):
        self._root = rng
        for name, stream in zip(self.NAMES, rng.spawn(len(self.NAMES))):
            setattr(self, name, stream)

    def spawn(self, n: int) -> list:
        return self._root.spawn(n)


class Progress:
    """The default's one progress bar (percent done), opened at the first report, one line per change of phase or
    of percent (a log gets no repeats); :meth:`close` completes it to 100% when the work it shows is done."""

    def __init__(self, enabled: bool):
        self.enabled, self.bar, self._shown = enabled, None, None

    def report(self, label: str, fraction: float) -> None:
        n = int(100 * min(fraction, 1.0))
        if self._shown == (label, n):
            return
        self._shown = (label, n)
        if self.bar is None:
            self.bar = progress_bar(total=100, desc="auto: posterior draws", disable=not self.enabled, percent=True)
        self.bar.set_description_str(f"pmz auto: {label}", refresh=False)  # (set_description adds ": ")
        self.bar.n = n
        self.bar.refresh()

    def close(self, done: bool = True) -> None:
        if self.bar is None:
            return
        if done and self.bar.n < 100:
            self.bar.n = 100
            self.bar.refresh()
        self.bar.close()
        self.bar = None


class AutoContext:
    """One call of the default (see the module docstring).

    Attributes
    ----------
    full_target, full_kernel : the model as written and its kernel (discrete sites included)
    target, kernel : the model the continuous routes integrate (its discrete variables summed out where there are
        few joint values) and its kernel; ``target`` is None where discrete variables cannot be summed out
    family : the tempered family of the model as written (SMC from the prior)
    discrete_names : list of str; ``has_discrete``, ``all_discrete``
    discrete_left : str
        Why discrete free variables stay in the model ("" where there are none, or they were summed out).
    summed : DiscreteSum or None
    own_chains : bool
        pmz's own chains will provide the draws (no ``posterior=``).
    bridge : BridgeFindings or None
        What the bridge route found, where it handed over to the path route.
    many_modes : str
        Why the modes route handed over to the tempered route (modes that do not settle), "" where it did not.
    """

    def __init__(self, family, kernel, options, rng, progressbar, target, chunks=None):
        from ..model.discrete_sum import discrete_sum

        self.family, self.full_kernel, self.full_target = family, kernel, target
        self.options, self.progressbar = options, progressbar
        self.streams, self.clock, self.progress = Streams(rng), Clock(options.max_time), Progress(progressbar)
        self.chunks = local_runner(progressbar) if chunks is None else chunks
        mask = target.layout.discrete_mask
        self.has_discrete, self.all_discrete = bool(mask.any()), bool(mask.all())
        self.discrete_names = [b.rv_name for b in target.layout.blocks if b.discrete]
        self.summed = discrete_sum(target) if self.has_discrete and options.posterior is None else None
        self.target, self.kernel, self.discrete_left = target, kernel, ""
        if self.has_discrete:
            self.target = self.summed
            self.kernel = getattr(kernel, "continuous", kernel)
            self.discrete_left = "" if self.summed is not None else discrete_left_reason(options.posterior is not None)
        self.own_chains = options.posterior is None
        self.restart, self.bridge, self._chains = None, None, None
        self.many_modes = ""

    @cached_property
    def enumeration(self):
        """Every joint value of an all-discrete model with few of them (the sum route), or None."""
        from ..model.discrete_sum import discrete_enumeration

        return discrete_enumeration(self.full_target) if self.all_discrete else None

    @cached_property
    def latent_split(self):
        """The latents and hyperparameters of the model (:func:`pmz.model.latent_gaussian.latent_split`), or
        None."""
        from ..model.latent_gaussian import latent_split

        return latent_split(self.target)

    @cached_property
    def laplace_split(self):
        """The Laplace route's latents and hyperparameters (up to its own larger number of latents), or None."""
        from ..model.latent_gaussian import latent_split
        from .laplace_route import MAX_LATENT

        return latent_split(self.target, MAX_LATENT)

    @cached_property
    def importance_split(self):
        """Every coordinate as a hyperparameter where the model has few
        (:func:`pmz.model.latent_gaussian.every_coordinate`), or None."""
        from ..model.latent_gaussian import every_coordinate

        return every_coordinate(self.target)

    @cached_property
    def jumps(self) -> str:
        """Where the log density jumps by a finite amount in a continuous free variable
        (:func:`pmz.model.jumps.finite_jumps`), "" where it does not or the model is not a PyMC model."""
        from ..model.jumps import finite_jumps

        model = getattr(self.full_target, "model", None)
        return finite_jumps(model) if getattr(self.full_target, "kind", None) == "pymc" and model is not None else ""

    @cached_property
    def prior(self):
        """The prior of the model as written, for exact draws (:func:`pmz.runners.draw_trust.prior_reference`)."""
        from ..runners.draw_trust import prior_reference

        return prior_reference(self.full_target)

    @cached_property
    def chain_groups(self) -> ChainChunks:
        """The chains in ``n_chunks`` groups on the call's chunk runner (:mod:`pmz.auto.chain_groups`)."""
        n_chunks = self.chunks.count(self.options.n_chunks, self.options.n_chains // 2, CHAIN_CHUNKS)
        return ChainChunks(self.chunks, self.target, n_chunks)

    @cached_property
    def given_flat(self):
        """The draws given as ``posterior=`` read and checked (:func:`pmz.runners.starts.posterior_to_flat`: it
        refuses draws that never moved): ``(X, chain)``, or None. Nothing is compiled for it but the value
        transforms' one-off function."""
        from ..runners.starts import posterior_to_flat

        posterior = self.options.posterior
        return None if posterior is None else posterior_to_flat(self.target, posterior)

    @cached_property
    def given_draws(self):
        """The draws given as ``posterior=`` as chains on the target, with their log densities
        (:func:`pmz.runners.draw_trust.draws_from_posterior`), or None."""
        from ..runners.draw_trust import draws_from_posterior

        posterior = self.options.posterior
        return None if posterior is None else draws_from_posterior(self.target, posterior, flat=self.given_flat)

    @property
    def chains(self) -> ChainsFindings:
        """The posterior draws and what their checks found (:func:`pmz.auto.chains.sample_chains`), made at the
        first question."""
        if self._chains is None:
            self._chains = sample_chains(self)
        return self._chains

    @property
    def chains_ran(self) -> bool:
        return self._chains is not None
