"""From a PyMC model to batched log densities on one flat unconstrained vector."""

from .parts import LogDensityParts
from .points import FlatLayout, VarBlock, layout_from_model
from .pymc import CompiledModel, ModelSpecificationError, compile_model
from .reference import GaussianReference, PriorReference, find_map, laplace_reference
from .target import Target, count_evaluations

__all__ = [
    "LogDensityParts",
    "Target",
    "count_evaluations",
    "FlatLayout",
    "VarBlock",
    "layout_from_model",
    "CompiledModel",
    "ModelSpecificationError",
    "compile_model",
    "GaussianReference",
    "PriorReference",
    "find_map",
    "laplace_reference",
]
