"""EvidenceResult: the ArviZ container of a log Z estimate, its se and what produced it.

On ArviZ 1 (PyMC 6) an :class:`EvidenceResult` is an ``xarray.DataTree``; on ArviZ 0.2x (PyMC 5) an
``arviz.InferenceData``. Both have the same groups and the same ``.log_z``, ``.log_z_se``, ``.method``,
``.run_attrs``, ``.reliable`` and ``.reliability_reason``; :mod:`pmz.inference_data` is the one module that tells
the two apart.

Reliability
-----------
``res.reliable`` (bool) and ``res.reliability_reason`` (str, one line) are
:func:`pmz.reliability.assess`'s verdict:
False when the method's own diagnostics (bootstrap se, overlap, ESS, bounds, a second estimate) say that the
asymptotic se is meaningless; ``log_z_se`` has then already been raised to what those diagnostics allow, and
``print(res)`` shows a line ``UNRELIABLE: <reason>`` under the log Z line. They are stored in the evidence attrs as
``reliable`` (the integer 0 or 1, for netcdf) and ``reliability_reason``; results read from files written before
these attrs existed read as reliable.

Warnings travel with the result: ``res.warnings`` is the list of warnings the run gave (stored as JSON in the
evidence attr ``warnings``, so ``res.to_netcdf`` and :func:`load` keep them), ``print(res)`` shows a line
``warnings: N (res.warnings); first: ...`` and :func:`pmz.compare` has a ``warnings`` column.

Groups
------
posterior
    Draws a sampler produced, and nothing else: with ``method="auto"`` the model's variables and Deterministics as
    equally weighted posterior draws (chain, draw, ...), under the model's own names, dims and coords, as in
    ``pm.sample``'s posterior; with ``method="histogram"`` also ``log_z``, its Gibbs posterior over log Z. Other
    methods have no posterior group. attrs: the evidence group's.
evidence
    The estimate, in the form ArviZ summarises: ``log_z`` (chain, draw), draws describing its uncertainty, so that
    ``az.summary(res, group="evidence")`` gives the estimate as ``mean`` and its se as ``sd``. For the histogram
    method they are its posterior draws over log Z; for every other method stratified draws of
    ``N(log_z, log_z_se^2)`` (normal quantiles at ``(i + 1/2) / n``) laid out as ``n`` chains of one draw each:
    they are independent numbers, not samples of the run, and this layout makes ArviZ report ``ess_*``, ``r_hat``
    and ``mcse_*`` as NaN instead of diagnostics that would describe the synthetic draws and not the run. The run's
    own diagnostics are in the ``evidence_stats`` group and ``print(res)``. attrs: ``log_z``, ``log_z_se``,
    ``method``, ``reliable`` (0/1), ``reliability_reason``, ``warnings`` and the run's metadata (``res.run_attrs``).
work
    Per-path statistics: ``work_forward`` (path) = ``-log w_f``; for two-way methods also ``work_reverse``
    (reverse_path) = ``-log w_r`` (the forward and reverse counts may differ).
schedule
    Per-temperature statistics: ``beta``, ``acceptance``, ``step_size``, ``ess`` (temperature); for two-way
    methods also ``acceptance_reverse`` and ``ess_reverse``.
evidence_stats
    The estimator's diagnostics, as ``sample_stats`` holds a sampler's: scalars, bootstrap replicates with dim
    ``bootstrap``, the other estimates of the run as ``estimate_log_z`` and ``estimate_log_z_se`` over dim
    ``estimator``; ``res.diagnostics`` is the same as a dict.
    (Results written before 2026-11-28 kept them in ``evidence``; :func:`load` reads those files into this layout.)
tempering
    Simulated-tempering statistics over the ladder (level): ``beta``, ``log_z_k`` and ``log_z_k_se`` (the RTS curve
    ``log Z(b_k)``), ``c_hat`` and ``prior`` (the final Rao-Blackwellised level marginal against ``r_k``),
    ``log_zhat`` (the guesses of the long run), ``counts``, ``acceptance``; ``level_trace`` (sweep, trace_chain)
    for a few chains; the initial iterations' ``stage_c_hat`` (stage, level); Wang-Landau's ``log_g`` and
    ``wl_gamma`` when it ran.
smc
    Sequential Monte Carlo statistics, one entry per stage of every run (dim ``stage``): ``run``, ``position``
    (beta, number of observations or units reached), ``position_from``, ``log_increment``, ``n_particles``
    (``R_n``), ``ess``, ``ess_start``, ``gamma`` and ``gamma_initial`` (``R_eff / R_n`` after and before ARM's
    generate loop), ``n_generate``, ``acceptance``, ``step_size``, ``n_moves``, ``resampled``; per run (dim
    ``run``): ``run_log_z``, ``run_ideal_se``. attrs: algorithm, sequence, label, kernel, base particles, settings.
particles
    Final particles as constrained model variables (path, ...) with their ``log_weight``: weighted draws of
    the posterior (resample by ``exp(log_weight)`` to get equally weighted ones).

ArviZ works on it as on any trace: ``az.summary(res, group="evidence")``, ``az.plot_dist(res, group="evidence")``
(ArviZ 1) or ``az.plot_posterior(res, group="evidence")`` (ArviZ 0.2x); ``az.summary(res)`` summarises the model's
posterior draws of ``method="auto"``; ``res.to_netcdf(path)`` and :func:`load` round-trip it.
"""

from __future__ import annotations

import json
import os
import warnings as _warnings
from numbers import Integral

import numpy as np
import xarray as xr
from scipy import stats

from . import inference_data as _idata
from .records import BidirectionalRecord, EvidenceEstimate, SMCRecord, TemperingTrace, WorkRecord

__all__ = ["EvidenceResult", "make_result", "issue_warnings", "load"]

_SCALAR_TYPES = (int, float, np.integer, np.floating, bool, np.bool_)
_INT64_MIN, _INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


class EvidenceResult(_idata.RESULT_BASE):
    """DataTree (ArviZ 1) or InferenceData (ArviZ 0.2x) with ``.log_z``, ``.log_z_se`` and ``.method``.

    See the module docstring for its groups.
    """

    __slots__ = ()

    @property
    def _run(self):
        """The evidence group's attrs: the estimate and the run's metadata."""
        return self["evidence"].attrs

    @property
    def log_z(self) -> float:
        """The log Z estimate (log evidence)."""
        return float(self._run["log_z"])

    @property
    def log_z_se(self) -> float:
        """Standard error of :attr:`log_z`."""
        return float(self._run["log_z_se"])

    @property
    def method(self) -> str:
        return str(self._run["method"])

    @property
    def reliable(self) -> bool:
        """False when the method's diagnostics say its error bar cannot be trusted
        (see :mod:`pmz.reliability`).

        Results written before this attribute existed read as reliable.
        """
        return bool(int(self._run.get("reliable", 1)))

    @property
    def estimates(self):
        """The other estimates of the same run, one row per estimator (a ``pandas.DataFrame`` with columns
        ``log_z`` and ``log_z_se``; NaN where an estimator has no se): e.g. BAR of a RAISE run's paths, every
        tempering estimator of one trace, auto's bridge halves. Empty when the method computes none."""
        import pandas as pd

        evidence = _idata.get_group(self, "evidence_stats")
        if evidence is None or "estimate_log_z" not in evidence:
            return pd.DataFrame({"log_z": [], "log_z_se": []}, index=pd.Index([], name="estimator"))
        names = [str(n) for n in evidence["estimator"].values]
        return pd.DataFrame(
            {"log_z": evidence["estimate_log_z"].values, "log_z_se": evidence["estimate_log_z_se"].values},
            index=pd.Index(names, name="estimator"),
        )

    @property
    def reliability_reason(self) -> str:
        """Why the result is unreliable, in one line ("" when reliable)."""
        return str(self._run.get("reliability_reason", ""))

    @property
    def warnings(self) -> list[str]:
        """The warnings the run gave (``pmz.evidence`` also issued them as ``UserWarning``), kept with the result
        and in its file; ``print(res)`` shows how many and the first."""
        raw = self._run.get("warnings", "[]")
        try:
            value = json.loads(raw) if isinstance(raw, str) else list(raw)
        except (TypeError, ValueError):
            return [str(raw)]
        return [str(w) for w in value] if isinstance(value, list) else [str(value)]

    @property
    def routes_tried(self) -> list[str]:
        """``method="auto"``: every route the default asked, in order, and what came of it (``"latent: does not
        apply (...)"``, ``"bridge: handed over (...)"``, ``"path: answered (...)"``); empty for other methods."""
        evidence = _idata.get_group(self, "evidence_stats")
        raw = None if evidence is None else evidence.attrs.get("routes_tried")
        if raw is None:
            return []
        value = json.loads(raw) if isinstance(raw, str) else list(raw)
        return [str(line) for line in value]

    @property
    def diagnostics(self) -> dict:
        """The estimator's diagnostics (the ``evidence_stats`` group) as a dict: scalars as floats, arrays as ndarrays,
        the group's attrs as stored."""
        evidence = _idata.get_group(self, "evidence_stats")
        if evidence is None:
            return {}
        out = dict(evidence.attrs)
        for name, var in evidence.data_vars.items():
            values = np.asarray(var.values)
            out[name] = values.item() if values.ndim == 0 else values
        return out

    @property
    def run_attrs(self) -> dict:
        """Metadata of the run: options, seed (an int; a decimal string when it is >= 2**63), versions, wall time,
        log-density evaluations."""
        return dict(self._run)

    def group_names(self) -> list[str]:
        """The result's groups (``posterior``, ``evidence``, ``work``, ...), on either ArviZ."""
        return _idata.group_names(self)

    def __repr__(self) -> str:
        if "evidence" not in _idata.group_names(self):  # a child node of the DataTree
            return super().__repr__()
        a = self._run
        lines = [
            f"EvidenceResult  method={a.get('method')!r}" + (f" route={a['route']!r}" if a.get("route") else ""),
            f"  log Z = {self.log_z:.4f} +/- {self.log_z_se:.4f} (se), log marginal likelihood in nats",
        ]
        normalised = self._normalised_prior_line()
        if normalised:
            lines.append(normalised)
        halving = self._halving_line()
        if halving:
            lines.append(halving)
        if a.get("route_reason"):
            lines.append(_wrapped("  why this route: ", str(a["route_reason"])))
        tried = self.routes_tried
        if len(tried) > 1:  # the routes asked before the one that answered, and why they did not
            lines.append(_wrapped("  routes asked first: ", "; ".join(_shorten(line, 90) for line in tried[:-1])))
        modes = self._modes_line()
        if modes:
            lines.append(modes)
        if not self.reliable:
            lines.append(f"  UNRELIABLE: {self.reliability_reason or 'see the warnings'}")
        warnings = self.warnings
        if warnings:
            lines.append(f"  warnings: {len(warnings)} (res.warnings); first: {_shorten(warnings[0])}")
        if "wall_time" in a:
            compile_note = f" (compile {float(a['compile_time']):.2f} s)" if "compile_time" in a else ""
            counts = [
                f"{int(a.get(key, 0))} {label}"
                for key, label in (("n_logp_evals", "log-density"), ("n_grad_evals", "gradient"))
                if int(a.get(key, 0))
            ]
            evals = f", {' and '.join(counts)} evaluations" if counts else ""
            lines.append(f"  wall time {float(a['wall_time']):.2f} s{compile_note}{evals}")
        lines.append(f"  groups: {', '.join(self.group_names())}")
        return "\n".join(lines)

    def _normalised_prior_line(self) -> str:
        """The evidence with the prior normalised, where the prior as written does not integrate to one."""
        diagnostics = _idata.get_group(self, "evidence_stats")
        if diagnostics is None or "log_z_normalised_prior" not in diagnostics:
            return ""
        value = float(diagnostics["log_z_normalised_prior"])
        names = diagnostics.attrs.get("prior_unnormalised", "")
        return (f"  log Z with the prior of {names} normalised = {value:.4f} (use this one for Bayes factors "
                "against models whose priors are not unnormalised the same way)")

    def _halving_line(self) -> str:
        """``"  to halve the se: about 1.2 s more (four times the draws behind it)"`` where the se is a Monte Carlo
        one whose draws pmz made."""
        diagnostics = _idata.get_group(self, "evidence_stats")
        if diagnostics is None or "seconds_to_halve_se" not in diagnostics:
            return ""
        seconds = float(diagnostics["seconds_to_halve_se"])
        return f"  to halve the se: about {seconds:.2g} s more (four times the draws behind it)"

    def _modes_line(self) -> str:
        """``"  modes: 2 found; posterior mass 0.49 +/- 0.01, 0.51 +/- 0.01"`` when the modes route ran."""
        diagnostics = _idata.get_group(self, "evidence_stats")
        if diagnostics is None or "mode_masses" not in diagnostics:
            return ""
        masses = np.asarray(diagnostics["mode_masses"], dtype=float)
        ses = np.asarray(diagnostics["mode_masses_se"], dtype=float)
        shown = ", ".join(f"{m:.3g} +/- {s:.2g}" for m, s in zip(masses[:6], ses[:6]))
        more = f", ... ({masses.size - 6} more)" if masses.size > 6 else ""
        return f"  modes: {masses.size} found; posterior mass {shown}{more}"

    def __str__(self) -> str:
        return repr(self) if "evidence" in _idata.group_names(self) else super().__str__()

    def _repr_html_(self):  # notebooks: the short text first, then ArviZ's own view
        if "evidence" not in _idata.group_names(self):
            return super()._repr_html_()
        return f"<pre>{self!r}</pre>" + super()._repr_html_()


def issue_warnings(messages, *, stacklevel: int = 2) -> None:
    """Issue a run's warnings (``estimate.warnings``) as ``UserWarning``, as ``pmz.evidence`` and
    ``pmz.tempered_evidence`` do; ``stacklevel`` counts from the function that calls this one, as in
    :func:`warnings.warn` (2: that function's caller)."""
    for message in messages:
        _warnings.warn(message, UserWarning, stacklevel=stacklevel + 1)


def _wrapped(label: str, text: str, width: int = 116) -> str:
    """``label`` and the whole of ``text`` (without a "pmz: " prefix), wrapped at ``width`` columns under it."""
    import textwrap

    text = " ".join(str(text).split())
    text = text[5:] if text.startswith("pmz: ") else text
    return textwrap.fill(text, width=width, initial_indent=label, subsequent_indent=" " * 4)


def _shorten(message: str, width: int = 100) -> str:
    """One line of at most ``width`` characters, without the "pmz: " prefix."""
    text = " ".join(str(message).split())
    text = text[5:] if text.startswith("pmz: ") else text
    return text if len(text) <= width else text[: width - 3].rstrip() + "..."


EVIDENCE_NOTE = (
    "log_z: draws describing the estimate (mean = log_z, sd = log_z_se). {what}"
)
_SYNTHETIC = (
    "Stratified draws of N(log_z, log_z_se^2), independent numbers and not samples of the run: one draw per chain, "
    "so ArviZ's ess, r_hat and mcse come out NaN. The run's diagnostics are in the evidence_stats group."
)
_GIBBS = "The histogram method's Gibbs posterior over log Z (also in the posterior group)."


def _evidence_dataset(draws, own: bool, attrs: dict) -> xr.Dataset:
    """The ``evidence`` group (module docstring): ``log_z`` (chain, draw) with the run's ``attrs``; ``own``: the
    method's posterior over log Z, else the synthetic normal draws, one per chain."""
    draws = np.asarray(draws, dtype=float)
    draws = (draws.reshape(1, -1) if draws.ndim == 1 else draws) if own else draws.reshape(-1, 1)
    return xr.Dataset(
        {"log_z": (("chain", "draw"), draws)},
        coords={"chain": np.arange(draws.shape[0]), "draw": np.arange(draws.shape[1])},
        attrs={**attrs, "description": EVIDENCE_NOTE.format(what=_GIBBS if own else _SYNTHETIC)},
    )


def _normal_draws(log_z, se, n, rng):
    """``n`` stratified draws of ``N(log_z, se^2)``: normal quantiles at ``(i + 1/2) / n``, randomly ordered."""
    quantiles = stats.norm.ppf((np.arange(n) + 0.5) / n)
    return rng.permutation(log_z + se * quantiles)


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, _SCALAR_TYPES + (str, type(None))):
        return value
    return repr(value)


def _netcdf_attr(value):
    """attrs must be numbers or strings for netcdf; everything else becomes JSON. Integers outside int64 (a
    ``random_seed`` >= 2**63) become decimal strings: netcdf has no larger integer attribute."""
    if isinstance(value, bool | np.bool_):
        return int(value)
    if isinstance(value, Integral) and not _INT64_MIN <= value <= _INT64_MAX:
        return str(int(value))
    if isinstance(value, _SCALAR_TYPES + (str,)):
        return value
    return json.dumps(_jsonable(value))


def _diagnostics_dataset(diagnostics: dict) -> xr.Dataset:
    """The ``evidence_stats`` group: scalars as variables, 1-d arrays with their own dim, the ``estimates`` table as
    ``estimate_log_z`` and ``estimate_log_z_se`` over dim ``estimator``, anything else as attrs."""
    data, attrs, coords = {}, {}, {}
    for key, value in diagnostics.items():
        if key == "estimates" and isinstance(value, dict):
            if value:
                coords["estimator"] = list(value)
                data["estimate_log_z"] = (("estimator",), np.array([float(v[0]) for v in value.values()]))
                data["estimate_log_z_se"] = (("estimator",), np.array([float(v[1]) for v in value.values()]))
        elif isinstance(value, _SCALAR_TYPES):
            data[key] = ((), float(value))
        elif isinstance(value, np.ndarray) and value.ndim == 1 and value.dtype.kind in "fiub":
            dim = "bootstrap" if key.startswith("bootstrap") else f"{key}_dim"
            data[key] = ((dim,), value)
        else:
            attrs[key] = _netcdf_attr(value)
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _metric_vars(notes):
    """The pilot's thermodynamic metric ``g(b) = Var_b[U]`` (dim ``pilot_temperature``), when the pilot ran."""
    if notes.metric_beta is None:
        return {}, {}
    beta, g = np.asarray(notes.metric_beta, dtype=float), np.asarray(notes.metric_g, dtype=float)
    n = np.arange(beta.size)
    return {"pilot_beta": (("pilot_temperature",), beta), "g": (("pilot_temperature",), g)}, {"pilot_temperature": n}


def _work_datasets(record):
    """The ``work`` and ``schedule`` groups of a one-way (WorkRecord) or two-way (BidirectionalRecord) run."""
    if isinstance(record, BidirectionalRecord):
        forward, reverse = record.forward, record.reverse
    else:
        forward, reverse = record, None
    data = {f"work_{forward.direction}": (("path",), forward.work)}
    coords = {"path": np.arange(forward.n_paths)}
    attrs = {
        "log_z0": forward.log_z0,
        "n_steps_per_temp": forward.n_steps_per_temp,
        "kernel": forward.kernel,
        "tuning": _netcdf_attr(forward.notes.to_dict()),
    }
    if reverse is not None:
        data["work_reverse"] = (("reverse_path",), reverse.work)
        coords["reverse_path"] = np.arange(reverse.n_paths)
        attrs["reverse_start"] = record.reverse_start
        if record.n_eff_reverse is not None:
            attrs["n_eff_reverse"] = float(record.n_eff_reverse)
    work = xr.Dataset(data, coords=coords, attrs=attrs)
    per_temp = {"beta": (("temperature",), forward.schedule)}
    for name, values in (
        ("acceptance", forward.acceptance),
        ("step_size", forward.step_size),
        ("ess", forward.ess_path),
    ):
        if values is not None:
            per_temp[name] = (("temperature",), np.asarray(values, dtype=float))
    if reverse is not None:
        for name, values in (("acceptance_reverse", reverse.acceptance), ("ess_reverse", reverse.ess_path)):
            if values is not None:
                per_temp[name] = (("temperature",), np.asarray(values, dtype=float))
    metric, metric_coords = _metric_vars(forward.notes)
    schedule_attrs = {
        name: value
        for name, value in (("schedule_rule", forward.notes.schedule_rule),
                            ("thermodynamic_length", forward.notes.thermodynamic_length),
                            ("predicted_var_log_w", forward.notes.predicted_var_log_w))
        if value is not None
    }
    schedule = xr.Dataset(
        {**per_temp, **metric},
        coords={"temperature": np.arange(forward.schedule.size), **metric_coords},
        attrs=schedule_attrs,
    )
    return work, schedule


def _tempering_dataset(trace: TemperingTrace, diagnostics: dict) -> xr.Dataset:
    level = np.arange(trace.n_levels)
    data = {
        "beta": (("level",), trace.betas),
        "c_hat": (("level",), trace.c_hat),
        "prior": (("level",), trace.prior),
        "log_zhat": (("level",), trace.log_zhat + trace.log_z0),
        "counts": (("level",), trace.counts.astype(float)),
        "acceptance": (("level",), np.asarray(trace.acceptance, dtype=float)),
    }
    for name in ("log_z_k", "log_z_k_se"):
        if name in diagnostics:
            data[name] = (("level",), np.asarray(diagnostics[name], dtype=float))
    coords = {"level": level}
    metric, metric_coords = _metric_vars(trace.notes)
    data.update(metric)
    coords.update(metric_coords)
    if trace.level_traces is not None and trace.level_traces.size:
        data["level_trace"] = (("sweep", "trace_chain"), trace.level_traces)
        coords["sweep"] = np.arange(trace.level_traces.shape[0])
    if trace.stage_q is not None:
        data["stage_c_hat"] = (("stage", "level"), trace.stage_q / trace.stage_n[:, None])
        data["stage_log_zhat"] = (("stage", "level"), trace.stage_log_zhat + trace.log_z0)
    if trace.wang_landau:
        data["log_g"] = (("level",), trace.wang_landau["log_g"] + trace.log_z0)
        data["wl_gamma"] = (("wl_sweep",), trace.wang_landau["gamma"])
    attrs = {
        "n_chains": trace.n_chains,
        "n_sweeps": trace.n_sweeps,
        "n_steps_per_temp": trace.n_steps_per_temp,
        "level_move": trace.level_move,
        "level_acceptance": float(trace.level_acceptance),
        "kernel": trace.kernel,
        "log_z0": trace.log_z0,
        "tuning": _netcdf_attr(trace.notes.to_dict()),
    }
    if trace.wang_landau:
        attrs["wang_landau"] = "log_g: Wang-Landau's estimate of log Z_k, an initialiser too noisy for a final answer"
        attrs["wl_one_over_t_from"] = int(trace.wang_landau["one_over_t_from"])
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _smc_dataset(record: SMCRecord) -> xr.Dataset:
    stage = np.arange(record.run.size)
    names = (
        "run", "position", "position_from", "log_increment", "n_particles", "ess", "ess_start", "gamma",
        "gamma_initial", "n_generate", "acceptance", "step_size", "n_moves", "resampled",
    )  # fmt: skip
    data = {name: (("stage",), np.asarray(getattr(record, name))) for name in names}
    data["resampled"] = (("stage",), record.resampled.astype(np.int8))
    data["run_log_z"] = (("run_index",), record.run_log_z())
    data["run_ideal_se"] = (("run_index",), np.sqrt(record.run_ideal_variance()))
    attrs = {
        "algorithm": record.algorithm,
        "sequence": record.sequence,
        "label": record.label,
        "kernel": record.kernel,
        "log_z0": record.log_z0,
        "n_runs": record.n_runs,
        "n_base_particles": record.n_base_particles,
        "mean_particles": float(np.mean(record.n_particles)),
        "tuning": _netcdf_attr(record.notes.to_dict()),
    }
    if record.notes.gamma_threshold is not None:
        attrs["gamma_threshold"] = float(record.notes.gamma_threshold)
    coords = {"stage": stage, "run_index": np.arange(record.n_runs)}
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _particles_dataset(particles: dict, log_weights) -> xr.Dataset:
    data = {"log_weight": (("path",), np.asarray(log_weights, dtype=float))}
    for name, values in particles.items():
        values = np.asarray(values)
        dims = ("path",) + tuple(f"{name}_dim_{i}" for i in range(values.ndim - 1))
        data[name] = (dims, values)
    return xr.Dataset(data)


def make_result(
    estimate: EvidenceEstimate,
    *,
    record: WorkRecord | BidirectionalRecord | TemperingTrace | SMCRecord | None = None,
    particles: dict | None = None,
    attrs: dict | None = None,
    rng: np.random.Generator | None = None,
    n_chains: int = 4,
    n_draws: int = 1000,
    posterior_draws: xr.Dataset | None = None,
) -> EvidenceResult:
    """Assemble an :class:`EvidenceResult` from an estimate, its record and the run's metadata.

    ``posterior_draws``: equally weighted posterior draws of the model's variables (chain, draw, ...), e.g. from
    :func:`pmz.model.posterior_draws.posterior_dataset`: the posterior group. ``n_chains * n_draws`` normal draws
    describe the estimate in the evidence group when the method has no posterior over log Z of its own.
    """
    rng = np.random.default_rng(0) if rng is None else rng
    post_attrs = {
        "log_z": float(estimate.log_z),
        "log_z_se": float(estimate.log_z_se),
        "method": estimate.method,
        "reliable": int(bool(estimate.reliable)),
        "reliability_reason": str(estimate.reliability_reason),
        "inference_library": "pmz",
        "warnings": json.dumps(list(estimate.warnings)),
    }
    for key, value in (attrs or {}).items():
        post_attrs[key] = _netcdf_attr(value)
    own = estimate.log_z_draws is not None
    n = n_chains * n_draws
    draws = estimate.log_z_draws if own else _normal_draws(estimate.log_z, estimate.log_z_se, n, rng)
    evidence = _evidence_dataset(draws, own, post_attrs)
    posterior = None
    if own:  # the method's own posterior over log Z: draws of a sampler
        posterior = xr.Dataset({"log_z": evidence["log_z"].variable}, coords=evidence.coords)
    if posterior_draws is not None:
        same = posterior is not None and all(
            posterior.sizes.get(dim, size) == size for dim, size in posterior_draws.sizes.items()
        )
        posterior = xr.merge([posterior, posterior_draws]) if same else posterior_draws
    if posterior is not None:
        posterior.attrs = post_attrs
    stored = estimate.diagnostics.to_dict()  # the diagnostics under the keys results have always had
    groups = {"posterior": posterior} if posterior is not None else {}
    groups.update(evidence=evidence, evidence_stats=_diagnostics_dataset(stored))
    if isinstance(record, TemperingTrace):
        groups["tempering"] = _tempering_dataset(record, stored)
    elif isinstance(record, SMCRecord):
        groups["smc"] = _smc_dataset(record)
    elif record is not None:
        groups["work"], groups["schedule"] = _work_datasets(record)
    if record is not None and particles is not None:
        groups["particles"] = _particles_dataset(particles, record.log_weights)
    return _idata.build(EvidenceResult, groups)


def load(path) -> EvidenceResult:
    """Read a result written by ``EvidenceResult.to_netcdf(path)``; ``.log_z`` etc. are restored.

    Raises FileNotFoundError when there is no such file, and ValueError when the file is not a complete netcdf
    file (truncated, another format) or does not hold a pmz result (no numeric ``log_z`` and ``log_z_se`` in the
    posterior attrs).
    """
    if isinstance(path, str | os.PathLike) and not os.path.exists(path):
        raise FileNotFoundError(f"pmz: no file {os.fspath(path)!r} (pmz.load reads a file written by res.to_netcdf)")
    try:
        groups = _idata.read_netcdf(path)
    except Exception as err:  # h5py, netCDF4 and scipy each fail their own way on a file that is not netcdf
        first_line = str(err).strip().split("\n")[0].split(". ")[0][:200]
        raise ValueError(
            f"pmz: {path} is not a pmz EvidenceResult file: it cannot be read as netcdf ({type(err).__name__}: "
            f"{first_line}); was it written by res.to_netcdf and copied completely?"
        ) from err
    groups = _upgrade_layout(groups)
    attrs = groups["evidence"].attrs if "evidence" in groups else {}
    missing = [key for key in ("log_z", "log_z_se") if key not in attrs]
    if missing:
        raise ValueError(
            f"pmz: {path} does not hold a pmz EvidenceResult (no evidence attribute(s) {missing}; "
            f"groups: {sorted(groups)}); pmz.load reads files written by res.to_netcdf"
        )
    for key in ("log_z", "log_z_se"):
        try:
            float(attrs[key])
        except (TypeError, ValueError):
            raise ValueError(
                f"pmz: {path} is not a pmz EvidenceResult file: its attribute {key} is {attrs[key]!r}, "
                "not a number"
            ) from None
    return _idata.build(EvidenceResult, groups)


def _upgrade_layout(groups: dict[str, xr.Dataset]) -> dict[str, xr.Dataset]:
    """Files written before 2026-11-28 kept the run's attrs and the estimate's draws (``log_z``) in ``posterior``
    and the diagnostics in ``evidence``: move them to the ``evidence`` and ``evidence_stats`` groups of today's
    layout (the posterior keeps only the model's draws, or the histogram method's own ``log_z``)."""
    if "evidence_stats" in groups or "posterior" not in groups or "log_z" not in groups["posterior"].attrs:
        return groups
    groups = dict(groups)
    if "evidence" in groups:
        groups["evidence_stats"] = groups.pop("evidence")
    posterior = groups.pop("posterior")
    attrs = dict(posterior.attrs)
    own = str(attrs.get("method")) == "histogram"
    if "log_z" in posterior:
        draws = posterior["log_z"].values
    else:
        try:
            draws = np.array([float(attrs["log_z"])])
        except (TypeError, ValueError):
            draws = np.array([np.nan])
    groups["evidence"] = _evidence_dataset(draws, own, attrs)
    model_draws = posterior if own else posterior.drop_vars("log_z", errors="ignore")
    if model_draws.data_vars:
        groups["posterior"] = model_draws.assign_attrs(attrs)
    return groups
