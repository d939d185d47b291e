"""Riemannian-manifold HMC for Gaussian-process models as a PyMC step method: ``pm.sample(step=pmz.GPRMHMC())``.

One ``astep`` (one PyMC draw) is one transition of :class:`pmz.gp.riemannian_hmc.GPRiemannianHMC` on a batch of ONE
particle at beta = 1: momentum ``p ~ N(0, G(v))`` with the Fisher metric ``G(v) = Sigma_v^{-1} + A' Lambda(f) A``,
``n_leapfrog`` generalised leapfrog steps (implicit momentum and position updates by fixed-point iteration),
acceptance by the Hamiltonian (Girolami & Calderhead 2011; Fraccaro, Paquet & Winther, ARM section 4). The model
must have the structure :func:`pmz.gp.structure.gp_structure` detects (one latent vector with a multivariate normal
prior of fixed mean and covariance, ``pm.gp.Latent`` whitened or not, or ``pm.MvNormal``; one factorised Normal /
Bernoulli probit or logit / Poisson likelihood); anything else raises ``ModelSpecificationError``.

Step size, while ``pm.sample`` tunes: dual averaging (Nesterov 2009; Hoffman & Gelman 2014, section 3.2;
:mod:`pmz.kernels.adaptation`) of ``log eps`` towards acceptance ``target_accept``,

    h_m = (1 - 1/(m + t0)) h_{m-1} + (target - a_m) / (m + t0),     log eps_m = mu - sqrt(m) h_m / gamma,
    log eps_bar_m = m^-kappa log eps_m + (1 - m^-kappa) log eps_bar_{m-1},

with ``mu = log(10 eps_0)``, ``gamma = 0.05``, ``t0 = 10``, ``kappa = 0.75``, ``a_m`` the acceptance probability
(0 for a proposal whose fixed-point iterations did not converge); after tuning ``eps = eps_bar``, frozen. The
kernel jitters the step by +-20% per transition.

Stats (one value per draw)
--------------------------
accept : float
    Acceptance probability of the draw's proposal.
accepted : bool
step_size : float
    Step size of the transition (before the jitter).
n_fixed_point : int
    Fixed-point iterations of the trajectory (momentum and position updates together).
diverging : bool
    The trajectory failed: a fixed-point iteration did not converge, a value was not finite, or the energy error
    exceeded ``max_energy_error`` (PyMC counts these after tuning, as for NUTS).
energy_error : float
    ``H(end) - H(start)``.
tune : bool

Reproducibility: the step's random generator is replaced by ``pm.sample`` with a per-chain generator derived from
``random_seed``, and a new generator starts a new chain (step size and dual averaging reset), so ``cores=1`` and
``cores=2`` give the same draws. Pickling (``cores > 1``) drops the compiled model; each process compiles it again.
"""

from __future__ import annotations

import numpy as np
import pymc as pm
from pymc.blocking import DictToArrayBijection, RaveledVars
from pymc.util import get_value_vars_from_user_vars

from ..kernels.adaptation import dual_averaging_init, dual_averaging_step_size, dual_averaging_update
from ..kernels.base import KernelParams
from ..gp.riemannian_hmc import GPRiemannianHMC
from ..gp.structure import gp_structure
from .base import PowerPosteriorStep

__all__ = ["GPRMHMC"]


class GPRMHMC(PowerPosteriorStep):
    """Riemannian-manifold HMC for a PyMC Gaussian-process model (see :mod:`pmz.step_methods.rmhmc_step`).

    Parameters
    ----------
    vars : list, optional
        Must be the model's latent vector (its only free variable; the default).
    step_size : float
        Initial step size (dual averaging starts from it during tuning; used as is without tuning).
    n_leapfrog : int
        Generalised leapfrog steps per draw (paper: 10, with eps = 0.1).
    target_accept : float
        Acceptance rate aimed at while tuning.
    fixed_point_tol, max_fixed_point : float, int
        Tolerance and iteration limit of the implicit updates (see :class:`pmz.gp.riemannian_hmc.GPRiemannianHMC`).
    max_energy_error : float
        Energy error above which a draw is flagged as diverging.
    compile_mode : str or pytensor Mode, optional
        PyTensor backend of the batched log density (default: the stack's own, see :mod:`pmz.model.backend`).
    model : pymc.Model, optional
    rng : seed or numpy Generator, optional
        Replaced by ``pm.sample`` with a per-chain generator derived from ``random_seed``.
    blocked : bool
        Must be True.

    Examples
    --------
    >>> import numpy as np, pymc as pm, pmz
    >>> with pm.Model() as model:
    ...     gp = pm.gp.Latent(cov_func=pm.gp.cov.ExpQuad(1, ls=0.5))
    ...     f = gp.prior("f", np.linspace(0, 1, 5)[:, None])
    ...     _ = pm.Bernoulli("y", p=pm.math.invprobit(f), observed=[0, 1, 1, 0, 1])
    ...     idata = pm.sample(step=pmz.GPRMHMC(), random_seed=1)                  # doctest: +SKIP
    """

    name = "gp_rmhmc"
    default_blocked = True
    _transient = ("_compiled", "_family", "_state")
    stats_dtypes_shapes = {
        "accept": (np.float64, []),
        "accepted": (bool, []),
        "step_size": (np.float64, []),
        "n_fixed_point": (np.int64, []),
        "diverging": (bool, []),
        "energy_error": (np.float64, []),
        "tune": (bool, []),
    }

    def __init__(
        self,
        vars=None,
        *,
        step_size: float = 0.5,
        n_leapfrog: int = 10,
        target_accept: float = 0.8,
        fixed_point_tol: float = 1e-6,
        max_fixed_point: int = 50,
        max_energy_error: float = 1000.0,
        compile_mode=None,
        model=None,
        rng=None,
        blocked: bool = True,
    ):
        model = pm.modelcontext(model)
        structure = gp_structure(model)  # raises ModelSpecificationError when the model is not a supported GP
        value_vars = list(model.value_vars) if vars is None else get_value_vars_from_user_vars(vars, model)
        if [v.name for v in value_vars] != [structure.value_name] or not blocked:
            raise ValueError(
                f"pmz: GPRMHMC samples the latent {structure.latent!r} (the model's only free variable) in one "
                f"block; got vars={[v.name for v in value_vars]}, blocked={blocked}. Pass vars=None."
            )
        if not step_size > 0:
            raise ValueError(f"pmz: step_size must be positive, got {step_size!r}")
        if not 0 < target_accept < 1:
            raise ValueError(f"pmz: target_accept must lie in (0, 1), got {target_accept!r}")
        self.model = model
        self.structure = structure
        self.kernel = GPRiemannianHMC(
            structure, n_leapfrog=n_leapfrog, fixed_point_tol=fixed_point_tol, max_fixed_point=max_fixed_point
        )
        self.initial_step_size = float(step_size)
        self.target_accept = float(target_accept)
        self.max_energy_error = float(max_energy_error)
        self.compile_mode = compile_mode
        self._compiled = self._family = None
        self.family  # noqa: B018  (compiled now, by the base class: refuses improper priors early)
        self.layout = self._compiled.layout
        self.tune = True
        super().__init__(value_vars, {}, blocked, rng=rng)
        self._reset_chain()

    # ------------------------------------------------------------------ PyMC hooks
    def stop_tuning(self):
        super().stop_tuning()
        self.step_size = dual_averaging_step_size(self._adapt)

    def _reset_chain(self):
        self.step_size = self.initial_step_size
        self._adapt = dual_averaging_init(self.initial_step_size)
        self._state = None

    # ------------------------------------------------------------------ one draw
    def astep(self, q0: RaveledVars):
        x = self.layout.from_point(DictToArrayBijection.rmap(q0))
        if self._state is None or not np.array_equal(self._state.x[0], x):
            self._state = self.kernel.init_state(self.family, x[None, :])  # first draw, or moved elsewhere
        tuning = bool(self.tune)
        step_size = float(np.exp(self._adapt.log_step_size)) if tuning else self.step_size
        params = KernelParams(step_size, np.ones(self.layout.dim), self.kernel.n_leapfrog)
        state, info = self.kernel.step(self.rng, self._state, self.family, 1.0, params)
        accept = float(info.acceptance[0])
        if tuning:
            self._adapt = dual_averaging_update(self._adapt, accept, self.target_accept)
        self._state = state
        energy_error = float(info.energy_error[0])
        diverging = not bool(info.converged[0]) or not abs(energy_error) <= self.max_energy_error

        point = self.layout.to_point(state.x[0])
        q = DictToArrayBijection.map(
            {name: np.asarray(point[name], dtype=dtype).reshape(shape) for name, shape, _, dtype in q0.point_map_info}
        )
        stats = {
            "accept": accept,
            "accepted": bool(info.accepted[0]),
            "step_size": step_size,
            "n_fixed_point": int(info.n_fixed_point[0]),
            "diverging": diverging,
            "energy_error": energy_error,
            "tune": tuning,
        }
        return q, [stats]
