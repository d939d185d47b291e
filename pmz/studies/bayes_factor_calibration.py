"""Simulation-based calibration of Bayes factors (Schad, Nicenboim, Bürkner, Betancourt & Vasishth 2022).

Models ``M_1, ..., M_K`` with prior model probabilities ``pi_k``. Each simulation ``s = 1..S``

1. draws the true model ``m_s ~ Categorical(pi)``,
2. draws parameters and a data set from that model's prior predictive, ``y_s ~ p(y | M_{m_s})``,
3. estimates every model's evidence ``Z_k(y_s) = p(y_s | M_k)`` with :func:`pmz.evidence`, and
4. computes the posterior model probabilities ``p(M_k | y_s) = pi_k Z_k(y_s) / sum_j pi_j Z_j(y_s)``.

If the evidences are right, the posterior model probabilities are calibrated:

* averaged over the data, ``E_y[p(M_k | y)] = pi_k`` for every ``k`` (the law of total probability over the joint
  distribution of model and data): the sample mean ``pbar_k`` over the simulations, with Monte Carlo se
  ``sd_k / sqrt(S)``, has ``z_k = (pbar_k - pi_k) / se_k`` approximately standard normal, so ``|z_k| > 3`` for any
  ``k`` says the Bayes factors (or the models' priors, or the simulations) are wrong;
* among the simulations whose ``p(M_k | y)`` falls near ``p``, the fraction in which ``M_k`` was the true model is
  ``p``: the calibration curve (:func:`pmz.plots.calibration.calibration_curve`) follows the diagonal.

Setting the data. The models share the names of their observed variables, and each observed variable's data are a
``pm.Data`` container, so a simulated data set is set into every model without rebuilding it (the container is the
shared variable ``model.rvs_to_values[observed_rv]``, or a cast of it for integer data). pmz compiles a model once
and its compiled functions read the containers at every call, so the evidence is that of the data set last set
(checked for every method; a data set of another shape compiles the model again, see
:func:`pmz.methods.setup.compiled_model`). The models' own data are set back when the calibration ends, also on an
error or Ctrl-C.

Seeds. ``random_seed`` seeds everything: the true models, one prior predictive run per model (one compiled sampler
for all its simulations) and the evidence of model ``k`` in simulation ``s``, whose seed is
``[seed_base, s, k]`` (``seed_base`` in the attrs): ``pmz.evidence(model, random_seed=[seed_base, s, k])`` on the
stored data set repeats one estimate.
"""

from __future__ import annotations

import json
import time
import warnings
from collections.abc import Mapping

import numpy as np
import pymc as pm
import xarray as xr
from pytensor.compile.sharedvalue import SharedVariable

from .. import inference_data as _idata
from ..api import build_options, evidence
from ..execution.executors import executor_name
from ..execution.streams import seed_label, seeded_streams
from ..interrupts import as_interrupt, is_interrupt
from ..model.pymc import ModelSpecificationError
from ..progress import progress_bar
from ..registry import METHODS
from ..weights import logsumexp

__all__ = ["BayesFactorCalibration", "calibrate_bayes_factors", "posterior_model_probabilities"]

#: the data-averaged test: |pbar_k - pi_k| / se_k above this for any model says the calibration failed
Z_LIMIT = 3.0


class BayesFactorCalibration(_idata.RESULT_BASE):
    """The simulations of :func:`calibrate_bayes_factors`: a DataTree (ArviZ 1) or InferenceData (ArviZ 0.2x).

    Notes
    -----
    The groups:

    simulations
        dims ``(simulation, model)``: ``true_model`` (simulation; the name of the model that made the data set),
        ``log_z``, ``log_z_se`` (each model's evidence on that data set and its se), ``log_bf``, ``log_bf_se``
        (``log Z_k - log Z_first`` against the first model, se ``sqrt(se_k^2 + se_first^2)``), ``probability``
        (``p(M_k | y)``; NaN in a simulation where some log Z is not finite), ``reliable`` (the evidence result's
        verdict, False for a failed run) and ``reason`` (why not, "" when reliable).
    calibration
        dim ``model``: ``prior_probability`` (``pi_k``), ``mean_probability`` (``pbar_k``, the data-averaged
        posterior model probability over the simulations with every log Z finite), ``mean_probability_se`` (its
        Monte Carlo se ``sd_k / sqrt(n_used)``), ``z`` (``(pbar_k - pi_k) / se_k``) and ``n_true`` (how many
        simulations model ``k`` made). attrs: ``method``, ``n_sims``, ``n_used``, ``n_unreliable``, ``n_failed``,
        ``partial``, ``random_seed``, ``seed_base``, ``wall_time``, ``simulation_time`` and ``evidence_time``
        (seconds), ``evidence_options`` (JSON), ``z_limit``.
    simulated_data
        dims ``(simulation, ...)``: every observed variable's simulated data set.
    """

    __slots__ = ()

    @property
    def _summary_attrs(self) -> dict:
        return self["calibration"].attrs

    @property
    def run_attrs(self) -> dict:
        """Metadata of the calibration: method, counts, seeds, wall time (see the class docstring)."""
        return dict(self._summary_attrs)

    @property
    def model_names(self) -> list[str]:
        return [str(name) for name in self["calibration"]["model"].values]

    @property
    def n_sims(self) -> int:
        """Simulations run (fewer than asked when interrupted: ``run_attrs["partial"]``)."""
        return int(self._summary_attrs["n_sims"])

    @property
    def n_unreliable(self) -> int:
        """Evidence results (simulation x model) that were unreliable or failed."""
        return int(self._summary_attrs["n_unreliable"])

    @property
    def summary(self):
        """The data-averaged check as a ``pandas.DataFrame`` indexed by model: ``prior_probability``,
        ``mean_probability``, ``mean_probability_se``, ``z``, ``n_true``."""
        return _idata.get_group(self, "calibration").to_dataframe()

    @property
    def calibrated(self) -> bool:
        """``|z_k| < 3`` for every model (and a finite z): the data-averaged posterior model probabilities agree with
        the prior within their Monte Carlo error."""
        z = np.asarray(self["calibration"]["z"], dtype=float)
        return bool(np.all(np.abs(z) < float(self._summary_attrs.get("z_limit", Z_LIMIT))))

    def __repr__(self) -> str:
        if "calibration" not in _idata.group_names(self):  # a child node of the DataTree
            return super().__repr__()
        a = self._summary_attrs
        lines = [
            f"BayesFactorCalibration  method={a['method']!r}, {a['n_sims']} simulations"
            + (" (PARTIAL: interrupted)" if int(a.get("partial", 0)) else ""),
            f"  {a['n_unreliable']} unreliable or failed evidence results, {a['n_used']} simulations averaged",
            "  model: prior -> data-averaged posterior probability +/- se (z)",
        ]
        s = _idata.get_group(self, "calibration")
        for name in self.model_names:
            row = s.sel(model=name)
            lines.append(f"    {name}: {float(row['prior_probability']):.4f} -> {float(row['mean_probability']):.4f}"
                         f" +/- {float(row['mean_probability_se']):.4f} ({float(row['z']):+.2f})")
        verdict = "calibrated" if self.calibrated else "NOT CALIBRATED"
        lines.append(f"  {verdict} (|z| < {float(a.get('z_limit', Z_LIMIT)):g} for every model); "
                     f"wall time {float(a['wall_time']):.1f} s")
        return "\n".join(lines)

    def __str__(self) -> str:
        return repr(self) if "calibration" in _idata.group_names(self) else super().__str__()

    def _repr_html_(self):
        if "calibration" not in _idata.group_names(self):
            return super()._repr_html_()
        return f"<pre>{self!r}</pre>" + super()._repr_html_()


def calibrate_bayes_factors(
    models,
    *,
    prior_probs=None,
    n_sims: int = 100,
    random_seed=None,
    method: str = "auto",
    executor=None,
    progressbar: bool = True,
    **evidence_options,
) -> BayesFactorCalibration:
    """Check that the posterior model probabilities from pmz's evidences are calibrated, by simulation.

    For ``s = 1..n_sims``: ``m_s ~ Categorical(pi)``, ``y_s ~ p(y | M_{m_s})`` (prior predictive),
    ``log Z_k(y_s)`` by :func:`pmz.evidence` for every model ``k``, and
    ``p(M_k | y_s) = pi_k Z_k(y_s) / sum_j pi_j Z_j(y_s)``. Calibration means ``E_y[p(M_k | y)] = pi_k``: the
    average ``pbar_k`` over the simulations, with Monte Carlo se ``se_k = sd_k / sqrt(S)``, gives
    ``z_k = (pbar_k - pi_k) / se_k``; read ``|z_k| < 3`` for every model as calibrated (``result.calibrated``),
    and look at the calibration curve (:func:`pmz.plots.calibration.plot_bayes_factor_calibration`). Schad,
    Nicenboim, Bürkner, Betancourt & Vasishth (2022), Workflow techniques for the robust use of Bayes factors,
    Psychological Methods.

    Parameters
    ----------
    models : dict of name -> pymc.Model
        Two or more models with the same observed variable names and shapes, each observed variable's data a
        ``pm.Data`` container (``pm.Normal("y", mu, 1, observed=pm.Data("y_data", y))``). Every model needs a free
        variable (pmz.evidence refuses a model without one). Log Bayes factors are against the first model.
    prior_probs : dict of name -> probability, or a sequence in the order of ``models``, optional
        Prior model probabilities ``pi_k`` (positive, summing to one); default uniform.
    n_sims : int
        Simulations ``S``. The se of ``pbar_k`` shrinks as ``1 / sqrt(S)``: 100 detects a miscalibration of about
        0.1 in probability.
    random_seed : int, list of int, numpy SeedSequence or Generator, optional
        The same seed gives the same result (see the module docstring for each simulation's seeds).
    method : str
        The evidence method, as in :func:`pmz.evidence`.
    executor : dask.distributed.Client or concurrent.futures.Executor, optional
        Passed to every :func:`pmz.evidence` call (same bits as without). Workers keep a model under a key that
        includes its data, so each simulated data set is rebuilt there: an executor pays for expensive models.
    progressbar : bool
        One bar over the simulations.
    **evidence_options
        Options of ``method`` (e.g. ``n_chains``), passed to every :func:`pmz.evidence` call; checked first.

    Returns
    -------
    BayesFactorCalibration
        Per simulation and model: ``true_model``, ``log_z``, ``log_z_se``, ``log_bf``, ``log_bf_se``,
        ``probability``, ``reliable``, ``reason``; the summary ``prior_probability``, ``mean_probability``,
        ``mean_probability_se``, ``z``; the simulated data sets. Unreliable or failed evidence results are kept
        and flagged, never dropped: a failed run has NaN log Z, which makes that simulation's probabilities NaN
        and leaves it out of the average (``n_used``); a warning says how many.

    Examples
    --------
    >>> import numpy as np, pymc as pm
    >>> from pmz.studies import calibrate_bayes_factors
    >>> def model(slope):
    ...     with pm.Model() as m:
    ...         y = pm.Data("y_data", np.zeros(20))
    ...         mu = pm.Normal("a", 0, 1) + (pm.Normal("b", 0, 1) * np.linspace(-1, 1, 20) if slope else 0)
    ...         pm.Normal("y", mu, 1, observed=y)
    ...     return m
    >>> cal = calibrate_bayes_factors({"intercept": model(False), "slope": model(True)}, n_sims=20, random_seed=1,
    ...                               progressbar=False)
    >>> cal.calibrated, cal.n_unreliable, cal.summary["z"].round(2).tolist()
    (True, 0, [...])
    """
    t0 = time.perf_counter()
    names, models = _check_models(models)
    prior = _prior_probabilities(prior_probs, names)
    n_sims = _check_n_sims(n_sims)
    if method not in METHODS:
        raise ValueError(f"pmz: unknown method {method!r}; available: {sorted(METHODS)}")
    build_options(method, evidence_options)  # unknown or invalid options: one error now, not one per simulation
    executor_name(executor)
    containers = {name: _data_containers(name, model) for name, model in models.items()}
    _check_shapes(containers)
    originals = [(shared, shared.get_value(borrow=False)) for per in containers.values() for shared in per.values()]
    choice_rng, seed_rng, *predictive_rngs = seeded_streams(random_seed, 2 + len(names))
    true_model = choice_rng.choice(len(names), size=n_sims, p=prior)
    seed_base = int(seed_rng.integers(2**63))
    try:
        t1 = time.perf_counter()
        data = _simulate(models, names, containers, true_model, predictive_rngs)
        simulation_time = time.perf_counter() - t1
        runs = _evidences(models, names, containers, data, method, seed_base, executor, progressbar, evidence_options)
    finally:
        for shared, value in originals:
            shared.set_value(value)
    n_done = runs["n_done"]
    attrs = {
        "method": method,
        "n_sims": n_done,
        "partial": int(n_done < n_sims),
        "random_seed": "None" if random_seed is None else str(seed_label(random_seed)),
        "seed_base": str(seed_base),
        "evidence_options": json.dumps({k: repr(v) for k, v in evidence_options.items()}),
        "simulation_time": simulation_time,
        "evidence_time": runs["time"],
        "wall_time": time.perf_counter() - t0,
        "z_limit": Z_LIMIT,
    }
    result = _result(names, prior, true_model[:n_done], runs, {k: v[:n_done] for k, v in data.items()}, attrs)
    _warn(result, n_sims)
    return result


# ---------------------------------------------------------------- checks


def _check_models(models):
    if not isinstance(models, Mapping) or len(models) < 2:
        raise TypeError("pmz.calibrate_bayes_factors: models must be a dict {name: pm.Model} of two or more models, "
                        f"got {type(models).__name__}" + (f" of {len(models)}" if isinstance(models, Mapping) else ""))
    names = [str(name) for name in models]
    models = {str(name): model for name, model in models.items()}
    for name, model in models.items():
        if not isinstance(model, pm.Model):
            raise TypeError(f"pmz.calibrate_bayes_factors: model {name!r} is a {type(model).__name__}, not a pm.Model")
        if not model.free_RVs:
            raise ModelSpecificationError(
                f"pmz.calibrate_bayes_factors: model {name!r} has no free variable, and pmz.evidence needs one. Its "
                "evidence is its likelihood at the fixed values; give it a parameter (e.g. a nuisance intercept or "
                "scale shared with the other models) so that pmz can integrate over it."
            )
        if not model.observed_RVs:
            raise ModelSpecificationError(f"pmz.calibrate_bayes_factors: model {name!r} has no observed variable")
    return names, models


def _prior_probabilities(prior_probs, names) -> np.ndarray:
    if prior_probs is None:
        return np.full(len(names), 1.0 / len(names))
    if isinstance(prior_probs, Mapping):
        missing = sorted(set(names) - {str(k) for k in prior_probs})
        extra = sorted({str(k) for k in prior_probs} - set(names))
        if missing or extra:
            raise ValueError(f"pmz.calibrate_bayes_factors: prior_probs must name the models {names}; "
                             f"missing {missing}, unknown {extra}")
        given = {str(k): v for k, v in prior_probs.items()}
        p = np.array([float(given[name]) for name in names])
    else:
        p = np.asarray(prior_probs, dtype=float).ravel()
        if p.size != len(names):
            raise ValueError(f"pmz.calibrate_bayes_factors: {p.size} prior probabilities for {len(names)} models")
    if not (np.all(np.isfinite(p)) and np.all(p > 0) and np.isclose(p.sum(), 1.0)):
        raise ValueError(f"pmz.calibrate_bayes_factors: prior_probs must be positive and sum to 1, got {p.tolist()}")
    return p / p.sum()


def _check_n_sims(n_sims) -> int:
    if isinstance(n_sims, bool) or not isinstance(n_sims, int | np.integer) or n_sims < 2:
        raise ValueError(f"pmz.calibrate_bayes_factors: n_sims must be an integer >= 2, got {n_sims!r}")
    return int(n_sims)


def _is_cast(value) -> bool:
    """Whether ``value`` is an elementwise dtype cast (PyMC casts a float container for integer data)."""
    from pytensor.scalar.basic import Cast
    from pytensor.tensor.elemwise import Elemwise

    op = value.owner.op if value.owner is not None else None
    return isinstance(op, Elemwise) and isinstance(op.scalar_op, Cast)


def _data_containers(name, model) -> dict:
    """``{observed variable name: its pm.Data shared variable}``: the observed data must be the container itself
    (or PyMC's dtype cast of it), so that a simulated data set set into the container is the observed data. A
    clear error where the data are a constant, or a transformation of a container (``observed=pt.exp(y_data)``:
    the simulated y would be written where log y belongs, and every evidence computed on the wrong data)."""
    from ..model.graphs import graph_inputs

    out = {}
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        if not isinstance(value, SharedVariable) and _is_cast(value) and isinstance(value.owner.inputs[0],
                                                                                   SharedVariable):
            value = value.owner.inputs[0]  # integer data: PyMC casts the container
        if not isinstance(value, SharedVariable):
            shared = [v for v in graph_inputs([value]) if isinstance(v, SharedVariable)]
            if shared:
                op = type(value.owner.op.scalar_op if hasattr(value.owner.op, "scalar_op") else value.owner.op)
                raise ModelSpecificationError(
                    f"pmz.calibrate_bayes_factors: the observed data of {rv.name!r} in model {name!r} are a "
                    f"transformation ({op.__name__}) of the data container {shared[0].name!r}, not the container "
                    "itself, so a simulated data set cannot be set into the model (it would be written where the "
                    "transformed data belong). Pass the container directly, with the data on the scale the "
                    f"likelihood reads: pm.Normal({rv.name!r}, ..., observed=pm.Data({rv.name + '_data'!r}, y)), "
                    "and move the transformation into the model (e.g. a LogNormal likelihood instead of "
                    "observed=pt.exp(log_y))."
                )
            raise ModelSpecificationError(
                f"pmz.calibrate_bayes_factors: the observed data of {rv.name!r} in model {name!r} are a constant, so "
                "simulated data sets cannot be set into the model. Wrap them in a data container: "
                f"pm.Normal({rv.name!r}, ..., observed=pm.Data({rv.name + '_data'!r}, y))."
            )
        out[rv.name] = value
    return out


def _check_shapes(containers) -> None:
    (first, ref), *rest = containers.items()
    shapes = {obs: np.shape(shared.get_value(borrow=True)) for obs, shared in ref.items()}
    for name, per in rest:
        if set(per) != set(ref):
            raise ModelSpecificationError(
                f"pmz.calibrate_bayes_factors: the models must share their observed variables; {first!r} has "
                f"{sorted(ref)}, {name!r} has {sorted(per)}")
        for obs, shared in per.items():
            if np.shape(shared.get_value(borrow=True)) != shapes[obs]:
                raise ModelSpecificationError(
                    f"pmz.calibrate_bayes_factors: observed {obs!r} has shape {shapes[obs]} in {first!r} but "
                    f"{np.shape(shared.get_value(borrow=True))} in {name!r}")


# ---------------------------------------------------------------- simulation and evidence


def _simulate(models, names, containers, true_model, rngs) -> dict:
    """``{observed name: (n_sims, *shape)}``: simulation ``s``'s data set from model ``true_model[s]``'s prior
    predictive; one ``pm.sample_prior_predictive`` call (one compiled sampler) per model for all its simulations."""
    observed = list(containers[names[0]])
    data = {obs: None for obs in observed}
    for k, name in enumerate(names):
        rows = np.flatnonzero(true_model == k)
        seed = int(rngs[k].integers(2**31))
        if rows.size == 0:
            continue
        draws = pm.sample_prior_predictive(draws=int(rows.size), model=models[name], var_names=observed,
                                           random_seed=seed)
        group = _idata.get_group(draws, "prior_predictive")
        for obs in observed:
            values = np.asarray(group[obs].values)
            values = values.reshape(-1, *values.shape[2:])  # (chain=1, draw, ...) -> (draw, ...)
            if data[obs] is None:
                dtype = containers[name][obs].get_value(borrow=True).dtype
                data[obs] = np.empty((true_model.size, *values.shape[1:]), dtype=np.result_type(dtype, values.dtype))
            data[obs][rows] = values
    return data


def _evidences(models, names, containers, data, method, seed_base, executor, progressbar, options) -> dict:
    """Every model's evidence on every simulated data set; a failed run is recorded (NaN, its error as reason);
    Ctrl-C keeps the finished simulations (at least one, else it is raised)."""
    n_sims, n_models = next(iter(data.values())).shape[0], len(names)
    log_z = np.full((n_sims, n_models), np.nan)
    log_z_se = np.full((n_sims, n_models), np.nan)
    reliable = np.zeros((n_sims, n_models), dtype=bool)
    reason = np.full((n_sims, n_models), "", dtype=object)
    t0, n_done = time.perf_counter(), 0
    with progress_bar(total=n_sims, desc="calibration", disable=not progressbar) as bar:
        try:
            for s in range(n_sims):
                for name in names:
                    for obs, shared in containers[name].items():
                        shared.set_value(np.asarray(data[obs][s], dtype=shared.dtype))
                for k, name in enumerate(names):
                    try:
                        with warnings.catch_warnings():  # flagged per simulation and summed up in one warning
                            warnings.simplefilter("ignore", UserWarning)
                            res = evidence(models[name], method=method, random_seed=[seed_base, s, k],
                                           progressbar=False, executor=executor, **options)
                    except (ModelSpecificationError, ValueError, FloatingPointError, RuntimeError,
                            np.linalg.LinAlgError) as err:
                        reason[s, k] = f"failed: {type(err).__name__}: {' '.join(str(err).split())[:300]}"
                        continue
                    log_z[s, k], log_z_se[s, k] = res.log_z, res.log_z_se
                    finite = np.isfinite(res.log_z) and np.isfinite(res.log_z_se)
                    reliable[s, k] = bool(res.reliable) and finite
                    reason[s, k] = res.reliability_reason or ("" if finite else "log Z or its se is not finite")
                n_done = s + 1
                bar.update(1)
        except (KeyboardInterrupt, SystemError) as err:  # Ctrl-C, also inside a compiled function
            if not is_interrupt(err):
                raise
            if n_done == 0:
                if isinstance(err, KeyboardInterrupt):
                    raise
                raise as_interrupt(err, "pmz.calibrate_bayes_factors: interrupted (Ctrl-C) during the first "
                                        "simulation; nothing to return") from err
    return {"log_z": log_z[:n_done], "log_z_se": log_z_se[:n_done], "reliable": reliable[:n_done],
            "reason": reason[:n_done], "n_done": n_done, "time": time.perf_counter() - t0}


# ---------------------------------------------------------------- the result


def posterior_model_probabilities(log_z, prior) -> np.ndarray:
    """``p(M_k | y) = pi_k Z_k / sum_j pi_j Z_j`` row by row for ``log_z (n, K)``; NaN rows where a log Z is not
    finite."""
    log_post = np.asarray(log_z, dtype=float) + np.log(prior)
    out = np.full(log_post.shape, np.nan)
    ok = np.all(np.isfinite(log_post), axis=1)
    if ok.any():
        rows = log_post[ok]
        out[ok] = np.exp(rows - logsumexp(rows, axis=1)[:, None])
    return out


def _result(names, prior, true_model, runs, data, attrs) -> BayesFactorCalibration:
    log_z, log_z_se = runs["log_z"], runs["log_z_se"]
    probability = posterior_model_probabilities(log_z, prior)
    used = np.all(np.isfinite(probability), axis=1)
    n_used = int(used.sum())
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = probability[used].mean(axis=0) if n_used else np.full(len(names), np.nan)
        se = probability[used].std(axis=0, ddof=1) / np.sqrt(n_used) if n_used > 1 else np.full(len(names), np.nan)
        z = (mean - prior) / se
    sim = np.arange(true_model.size)
    dims = ("simulation", "model")
    coords = {"simulation": sim, "model": names}
    log_bf_se = np.hypot(log_z_se, log_z_se[:, :1])
    log_bf_se[:, 0] = 0.0
    simulations = xr.Dataset(
        {
            "true_model": ("simulation", np.array([names[k] for k in true_model], dtype=str)),
            "log_z": (dims, log_z),
            "log_z_se": (dims, log_z_se),
            "log_bf": (dims, log_z - log_z[:, :1]),
            "log_bf_se": (dims, log_bf_se),
            "probability": (dims, probability),
            "reliable": (dims, runs["reliable"]),
            "reason": (dims, np.asarray(runs["reason"], dtype=str)),
        },
        coords=coords,
    )
    n_unreliable = int((~runs["reliable"]).sum())
    summary = xr.Dataset(
        {
            "prior_probability": ("model", prior),
            "mean_probability": ("model", mean),
            "mean_probability_se": ("model", se),
            "z": ("model", z),
            "n_true": ("model", np.bincount(true_model, minlength=len(names))),
        },
        coords={"model": names},
        attrs={**attrs, "n_used": n_used, "n_unreliable": n_unreliable,
               "n_failed": int(sum(str(r).startswith("failed") for r in np.ravel(runs["reason"])))},
    )
    simulated = xr.Dataset(
        {obs: (("simulation", *(f"{obs}_dim_{i}" for i in range(v.ndim - 1))), v) for obs, v in data.items()},
        coords={"simulation": sim},
    )
    return _idata.build(BayesFactorCalibration,
                        {"simulations": simulations, "calibration": summary, "simulated_data": simulated})


def _warn(result, n_asked) -> None:
    a = result.run_attrs
    notes = []
    if int(a["partial"]):
        notes.append(f"interrupted after {a['n_sims']} of {n_asked} simulations: the result holds those")
    if a["n_unreliable"]:
        total = a["n_sims"] * len(result.model_names)
        notes.append(f"{a['n_unreliable']} of {total} evidence results were unreliable or failed ({a['n_failed']} "
                     "failed); see result['simulations']['reliable'] and ['reason']")
    if a["n_used"] < a["n_sims"]:
        notes.append(f"{a['n_sims'] - a['n_used']} simulations with a non-finite log Z are left out of the average")
    if notes:
        warnings.warn("pmz.calibrate_bayes_factors: " + "; ".join(notes), UserWarning, stacklevel=3)
