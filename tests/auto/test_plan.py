"""The plan of the default and its route contract (pmz.auto.plan, pmz.auto.contract): a toy route added to the plan
answers through pmz.evidence, or hands over with its reason to the next route; every route asked is in the result;
a plan in which nothing answers is a clear error."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import pmz
from pmz.auto import PLAN, Outcome, Route
from pmz.auto import plan as auto_plan
from pmz.auto.importance_sampling import halves, weights_fail

TOL = 0.01  # nats, on top of 4 reported se


class PriorImportanceRoute:
    """Importance sampling from the prior: ``Z = E_prior[L(x)]`` from exact prior draws, two independent halves as
    the check. The example of CONTRIBUTING.md, "Adding a route to the default"."""

    name = "prior_is"

    def applies(self, context) -> str:
        if context.target is None or context.has_discrete:
            return "discrete free variables"
        if context.prior is None:
            return "an improper prior"
        if context.target.dim > 2:
            return "more than 2 coordinates"
        return ""

    def run(self, context) -> Outcome:
        rng = context.streams.spawn(1)[0]
        X = context.prior.sample(rng, 1 << 14)
        _, log_w = context.target.log_densities(X)  # p~ / prior = the likelihood
        why_not = weights_fail(np.where(np.isnan(log_w), -np.inf, log_w), 0.5, "all")
        if why_not:
            return Outcome(reason=f"prior draws: {why_not}")
        (pool, a, b), record = halves("prior_is", log_w)
        return Outcome(reason=f"{log_w.size} prior draws weighted by the likelihood", answer=pool, check=(a, b),
                       estimates=(pool, a, b), counted=(pool, a, b), result_record=record)


def _evidence(model, seed, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pmz.evidence(model, random_seed=seed, progressbar=False, **options)


def test_a_toy_route_answers_through_pmz_evidence(monkeypatch):
    """One class and one line in the plan: the route answers the default's call, within 4 se (+0.01) of the exact
    log Z with a meaningful se, its halves as the check, and the routes asked are in the result."""
    assert isinstance(PriorImportanceRoute(), Route)
    monkeypatch.setattr(auto_plan, "PLAN", (PriorImportanceRoute(), *PLAN))
    system = pmz.systems.normal_mean()
    res = _evidence(system.model, 1)
    assert res.run_attrs["route"] == "prior_is"
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + TOL and 0 < res.log_z_se < 0.05
    assert res.reliable
    assert list(res.estimates.index) == ["prior_is", "is_a", "is_b"]
    assert res.routes_tried == [f"prior_is: answered ({res.run_attrs['route_reason']})"]
    assert "why this route: 16384 prior draws weighted by the likelihood" in repr(res)


def test_a_route_that_hands_over_leaves_its_reason(monkeypatch):
    """200 observations: the prior's draws are too far from the posterior (ESS about 5%), so the toy route hands
    over with its reason and the next route in the plan answers (within 4 se + 0.01 of the exact log Z)."""
    monkeypatch.setattr(auto_plan, "PLAN", (PriorImportanceRoute(), *PLAN))
    system = pmz.systems.normal_mean(n_obs=200)
    res = _evidence(system.model, 1)
    assert res.run_attrs["route"] != "prior_is"
    first = res.routes_tried[0]
    assert first.startswith("prior_is: handed over (prior draws: importance sampling from it: ESS")
    assert [line.split(":")[0] for line in res.routes_tried[1:3]] == ["sum", "latent"]
    assert abs(res.log_z - system.log_z) < 4 * res.log_z_se + TOL and res.log_z_se < 0.05
    assert "routes asked first: prior_is: handed over" in repr(res)


def test_a_plan_where_no_route_answers_is_an_error(monkeypatch):
    class Never:
        name = "never"

        def applies(self, context):
            return "never applies"

        def run(self, context):  # pragma: no cover - never asked
            raise AssertionError

    monkeypatch.setattr(auto_plan, "PLAN", (Never(),))
    with pytest.raises(RuntimeError, match=r"no route of the default's plan answered \(never: does not apply"):
        _evidence(pmz.systems.normal_mean().model, 0)


def test_the_plan_names_its_routes():
    """Each route once, except the tempered route's second entry right after the modes route (it answers where the
    modes route handed over because the modes do not settle)."""
    names = [route.name for route in PLAN]
    assert names == ["sum", "latent", "laplace", "importance", "non-centred", "tempered", "modes", "tempered", "bridge",
                     "path"]
    assert [getattr(route, "after_modes", False) for route in PLAN].count(True) == 1
    assert all(isinstance(route, Route) for route in PLAN)
