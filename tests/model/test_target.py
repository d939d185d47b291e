"""The Target protocol (pmz.model.target): every kind of target says what it is, and count_evaluations counts a
run's share of the evaluations."""

import numpy as np

import pmz
from pmz.model import CompiledModel, Target, count_evaluations
from pmz.model.energy_model import EnergyModel, UniformSpins
from pmz.model.target import TARGET_KINDS
from pmz.gp import ProbitGPSequence
from pmz.gp.classification import digits_gp_problem


def test_every_target_says_its_kind():
    compiled = CompiledModel(pmz.systems.normal_mean().model)
    energy = EnergyModel(lambda X: X.sum(axis=1), UniformSpins(3))
    problem = digits_gp_problem(4)
    sequence = ProbitGPSequence(problem.K, problem.y)
    for target, kind in ((compiled, "pymc"), (energy, "energy"), (sequence, "sequence")):
        assert isinstance(target, Target)
        assert target.kind == kind and kind in TARGET_KINDS


def test_count_evaluations_live_and_fixed_after_the_block():
    compiled = CompiledModel(pmz.systems.normal_mean().model)
    X = np.zeros((7, compiled.dim))
    compiled.log_densities(X)
    counts = count_evaluations(compiled)
    assert (counts.n_logp_evals, counts.n_grad_evals) == (0, 0)
    compiled.log_densities_and_grads(X)
    assert (counts.n_logp_evals, counts.n_grad_evals) == (0, 7)
    with count_evaluations(compiled) as block:
        compiled.log_densities(X[:3])
    compiled.log_densities(X)
    assert (block.n_logp_evals, block.n_grad_evals) == (3, 0)
    assert (counts.n_logp_evals, counts.n_grad_evals) == (10, 7)
