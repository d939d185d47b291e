"""Setting a method up: the compiled model (once per model), the tempered family and the kernel.

* :func:`compiled_model`: a PyMC model compiled once per (model, potentials, compile_mode); repeated calls
  (seeds, methods) reuse its functions;
* :func:`make_family`: the tempered family the options name: the power posterior ``prior x likelihood^beta``
  (``reference="prior"``), a geometric path from a Gaussian fitted at the mode (``"laplace"``) or from a
  reference object, an energy model's own family;
* :func:`make_kernel`: the Markov kernel (``kernel="auto"``: HMC; Gibbs on discrete sites composed with HMC;
  an energy model's own kernel; see its docstring).

The start check (do the family's start draws have a finite density?) is :mod:`pmz.methods.draw_checks`.
"""

from __future__ import annotations

import weakref

import numpy as np

from ..families import GeometricPath, PowerPosterior
from ..families.energy import EnergyFamily
from ..gp.riemannian_hmc import GPRiemannianHMC
from ..kernels import KERNELS, Kernel
from ..kernels.gibbs import MixedKernel, SiteGibbs
from ..model.pymc import CompiledModel, ModelSpecificationError
from ..model.reference import laplace_reference

__all__ = ["compiled_model", "make_family", "make_kernel"]


_COMPILED = weakref.WeakKeyDictionary()


def compiled_model(model, options) -> CompiledModel:
    """Compile once per (model, potentials, mode); repeated calls (seeds, methods) reuse the functions.

    The key includes the number of variables and the shapes of the model's ``pm.Data``, so a model extended after
    a first call, or given data of another size by ``pm.set_data`` (more observations, or a free variable whose
    shape follows the data), is compiled again: its term sizes and flat layout changed, and the old functions
    failed inside PyTensor ("could not broadcast (6,) into (3,)"). New values of the same shape need nothing: the
    compiled functions read the data's shared variables.
    """
    shapes = tuple((v.name, tuple(np.shape(v.get_value()))) for v in model.data_vars)
    key = (options.potentials, options.compile_mode, len(model.basic_RVs), len(model.potentials), shapes)
    per_model = _COMPILED.setdefault(model, {})
    if key not in per_model:
        per_model[key] = CompiledModel(model, potentials=options.potentials, mode=options.compile_mode)
    return per_model[key]


def _continuous_kernel(name, options) -> Kernel:
    if name == "hmc":
        return KERNELS["hmc"](n_leapfrog=options.n_leapfrog)
    return KERNELS[name]()  # a name pmz.methods.options checked


def make_kernel(options, target) -> Kernel:
    """The kernel for a compiled PyMC model or an energy model.

    ``"auto"``: HMC for continuous PyMC models; site-by-site Gibbs on the discrete variables composed with HMC
    on the continuous ones for mixed models (Gibbs alone when every free variable is discrete); an energy
    model's own kernel, else Gibbs for discrete states, HMC with gradients, random-walk Metropolis without.
    ``"rmhmc"``: Riemannian-manifold HMC for a PyMC Gaussian-process model (structure detected by
    :func:`pmz.gp.structure.gp_structure`, which names what is missing otherwise).
    """
    kernel = options.kernel
    if isinstance(kernel, Kernel):
        return kernel
    if kernel == "rmhmc":
        if target.kind == "energy":
            raise ValueError("pmz: kernel 'rmhmc' needs a PyMC Gaussian-process model (pm.gp.Latent or pm.MvNormal)")
        return GPRiemannianHMC.from_model(target.model, n_leapfrog=options.n_leapfrog)
    if target.kind == "energy":
        if kernel == "auto":
            if target.kernel is not None:
                return target.kernel
            if target.discrete:
                return SiteGibbs.for_base(target.base)
            kernel = "hmc" if target.has_grad else "rwmh"
        if kernel == "gibbs" and target.discrete:
            return SiteGibbs.for_base(target.base)
        if target.discrete:
            raise ValueError(f"pmz: kernel {kernel!r} cannot move discrete states; use 'auto' or 'gibbs'")
        if kernel == "hmc" and not target.has_grad:
            raise ValueError("pmz: kernel 'hmc' needs grad_log_density on the energy model and its base")
        return _continuous_kernel(kernel, options)
    layout = target.layout
    mask = layout.discrete_mask
    if not mask.any():
        return _continuous_kernel("hmc" if kernel == "auto" else kernel, options)
    sites, values = layout.discrete_sites()
    gibbs = SiteGibbs(sites, values, bounds=layout.discrete_bounds())
    if mask.all():
        if kernel not in ("auto", "gibbs"):
            raise ValueError(f"pmz: every free variable is discrete; kernel {kernel!r} cannot move them (use 'auto')")
        return gibbs
    continuous = _continuous_kernel("hmc" if kernel in ("auto", "gibbs") else kernel, options)
    return MixedKernel(gibbs, continuous, ~mask)


def make_family(compiled, reference):
    if compiled.kind == "energy":
        if reference not in ("prior", None):
            raise ValueError("pmz: an energy model anneals from its own base distribution; leave reference unset")
        return EnergyFamily(compiled)
    if compiled.layout.discrete_mask.any() and not (isinstance(reference, str) and reference == "prior"):
        names = [b.rv_name for b in compiled.layout.blocks if b.discrete]
        raise ModelSpecificationError(
            f"pmz: the model has discrete free variables {names}; only reference='prior' (the power posterior) "
            "can start them from exact draws. A Gaussian reference cannot."
        )
    if isinstance(reference, str):  # "prior" or "laplace" (checked by pmz.methods.options)
        if reference == "prior":
            return PowerPosterior(compiled)
        return GeometricPath(compiled, laplace_reference(compiled))
    return GeometricPath(compiled, reference)
