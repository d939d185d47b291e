"""Checkpoints of a chunked run: each finished chunk's record in one netCDF file, so that a call with the same
arguments resumes where the last one stopped (``pmz.evidence(..., checkpoint="run.nc")``).

The file holds one group per finished chunk (named by the chunk's key, e.g. ``forward-0003``), with the record's
arrays as variables and its scalars, strings and dicts (as JSON) as attributes: float64 arrays and JSON floats
round-trip exactly, so a resumed run pools the same bits as an uninterrupted one. The root attributes hold the
call's fingerprint (method, options, seed, model and data: :func:`run_fingerprint`); each
group holds its chunk's digest (the setup it ran with: schedule, frozen kernels, start states, random stream). A
call whose fingerprint or a chunk's digest differs from the file's is an error, never a silent mix of two runs.

Each save writes a copy of the file and renames it over the old one, so an interruption while writing leaves the
previous checkpoint intact.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import socket
from dataclasses import asdict, fields
from numbers import Integral

import numpy as np
import xarray as xr

from ..records import RunNotes, SMCRecord, TemperingTrace, WorkRecord
from ..validate import option_values

__all__ = ["Checkpoint", "record_dataset", "dataset_record", "digest", "run_fingerprint", "target_description"]

FORMAT = "pmz-checkpoint-1"
ENGINE = "h5netcdf"
RECORD_TYPES = {cls.__name__: cls for cls in (WorkRecord, TemperingTrace, SMCRecord)}


def _encode(value):
    """JSON for a record's dict fields: arrays tagged with their dtype, NumPy scalars as Python numbers."""
    if isinstance(value, np.ndarray):
        return {"__ndarray__": value.tolist(), "dtype": str(value.dtype)}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, dict):
        return {str(k): _encode(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return repr(value)


def _decode(value):
    if isinstance(value, dict):
        if "__ndarray__" in value:
            return np.asarray(value["__ndarray__"], dtype=value["dtype"])
        return {k: _decode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


def record_dataset(record, digest: str) -> xr.Dataset:
    """A record (WorkRecord, TemperingTrace or SMCRecord) as an xarray Dataset that round-trips exactly."""
    data, attrs, kinds = {}, {"record_type": type(record).__name__, "digest": digest}, {}
    for f in fields(record):
        value = getattr(record, f.name)
        if value is None:
            kinds[f.name] = "none"
        elif isinstance(value, np.ndarray):
            kinds[f.name] = "array"
            data[f.name] = (tuple(f"{f.name}_dim_{i}" for i in range(value.ndim)), value)
        elif isinstance(value, RunNotes):
            kinds[f.name] = "notes"
            attrs[f.name] = json.dumps(_encode(asdict(value)))
        elif isinstance(value, dict):
            kinds[f.name] = "json"
            attrs[f.name] = json.dumps(_encode(value))
        elif isinstance(value, bool | np.bool_):
            kinds[f.name] = "bool"
            attrs[f.name] = int(value)
        elif isinstance(value, int | np.integer):
            kinds[f.name] = "int"
            attrs[f.name] = int(value)
        elif isinstance(value, float | np.floating):
            kinds[f.name] = "float"
            attrs[f.name] = float(value)
        else:
            kinds[f.name] = "str"
            attrs[f.name] = str(value)
    attrs["field_kinds"] = json.dumps(kinds)
    return xr.Dataset(data, attrs=attrs)


def dataset_record(ds: xr.Dataset):
    """The record a :func:`record_dataset` Dataset holds."""
    cls = RECORD_TYPES[ds.attrs["record_type"]]
    kinds = json.loads(ds.attrs["field_kinds"])
    values = {}
    for name, kind in kinds.items():
        if kind == "none":
            values[name] = None
        elif kind == "array":
            values[name] = np.asarray(ds[name].values)
        elif kind == "notes":
            values[name] = RunNotes.from_dict(_decode(json.loads(ds.attrs[name])))
        elif kind == "json":
            values[name] = _decode(json.loads(ds.attrs[name]))
        elif kind == "bool":
            values[name] = bool(ds.attrs[name])
        elif kind == "int":
            values[name] = int(ds.attrs[name])
        elif kind == "float":
            values[name] = float(ds.attrs[name])
        else:
            values[name] = str(ds.attrs[name])
    return cls(**values)


def _feed(h, value):
    """Feed a canonical, process-independent description of ``value`` to the hash ``h``: numbers, strings and
    arrays by value, random generators by state and seed sequence, seed sequences by entropy and spawn key, containers
    item by item, other objects
    (families, kernels) by type."""
    if value is None or isinstance(value, bool | Integral | float | str | np.generic):
        h.update(repr((type(value).__name__, value.item() if isinstance(value, np.generic) else value)).encode())
    elif isinstance(value, np.ndarray):
        h.update(f"ndarray{value.dtype.str}{value.shape}".encode())
        h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, np.random.Generator):
        seq = value.bit_generator.seed_seq
        h.update(json.dumps(value.bit_generator.state, sort_keys=True, default=str).encode())
        h.update(repr((seq.entropy, seq.spawn_key, seq.n_children_spawned)).encode())
    elif isinstance(value, np.random.SeedSequence):
        h.update(repr(("SeedSequence", value.entropy, value.spawn_key, value.pool_size)).encode())
    elif isinstance(value, dict):
        h.update(b"{")
        for k in sorted(value, key=str):
            _feed(h, str(k))
            _feed(h, value[k])
        h.update(b"}")
    elif isinstance(value, list | tuple):
        h.update(b"[")
        for v in value:
            _feed(h, v)
        h.update(b"]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        h.update(type(value).__qualname__.encode())
        _feed(h, {f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    elif callable(value) and hasattr(value, "__qualname__"):
        h.update(f"{getattr(value, '__module__', '')}.{value.__qualname__}".encode())
    else:
        h.update(type(value).__qualname__.encode())


def digest(*values) -> str:
    """A hex digest of ``values`` (see :func:`_feed`): the same in every process for the same values."""
    h = hashlib.sha256()
    for v in values:
        _feed(h, v)
    return h.hexdigest()


def target_description(target) -> list:
    """What identifies the model without evaluating it: kind, dimension, name or layout; for a PyMC model also its
    observed data, its ``pm.Data`` values and its log-density graphs as PyTensor prints them (variables, operations
    and constants: a changed prior is a different model). An energy model is known by its name, dimension and base
    only: the chunks' own digests (schedule and kernels tuned on it) tell two energy models apart."""
    text = repr(target)
    items = [target.kind, int(target.dim), type(target).__qualname__ if " at 0x" in text else text]
    if target.kind == "pymc":
        import pytensor

        from ..model.inspection import observed_values

        items += [{name: np.asarray(v) for name, v in observed_values(target.model).items()}]
        items += [{v.name: np.asarray(v.get_value()) for v in target.model.data_vars}]
        graphs = [target._log_prior_1, target._log_lik_1]
        items += [target.potentials, repr(target.mode_option), pytensor.printing.debugprint(graphs, file="str")]
    return items


def run_fingerprint(method: str, options, random_seed, target) -> str:
    """The fingerprint a checkpoint is written under: method, options (except ``chunk_timeout``), the seed and
    the model's description."""
    from .streams import seed_label

    labels = {}
    for name, value in option_values(options).items():
        if name == "chunk_timeout":
            continue
        labels[name] = value if isinstance(value, bool | Integral | float | str | np.ndarray) or value is None else (
            f"<{type(value).__name__}>"
        )
    return digest(method, labels, repr(seed_label(random_seed)), target_description(target))


class Checkpoint:
    """The finished chunks of one call, kept in the netCDF file ``path``.

    Parameters
    ----------
    path : str or os.PathLike
    fingerprint : str
        The call's fingerprint; a file written by a call with another fingerprint is an error.
    """

    def __init__(self, path, fingerprint: str):
        self.path = os.fspath(path)
        self.fingerprint = str(fingerprint)
        self._lock = None
        self._acquire()

    def _acquire(self):
        """Hold ``path + ".lock"`` for the call (an advisory ``flock``, released when the call ends or its process
        dies): a second run on the same file, here or in another process, gets a pmz error instead of HDF5's
        "unable to lock file" in the middle of its run. Where ``fcntl`` is missing (Windows) there is no lock."""
        try:
            import fcntl
        except ImportError:  # pragma: no cover -- Windows
            return
        lock_path = f"{self.path}.lock"
        os.makedirs(os.path.dirname(os.path.abspath(lock_path)), exist_ok=True)
        handle = open(lock_path, "a+")
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            handle.close()
            raise ValueError(
                f"pmz: the checkpoint {self.path} is in use by another run ({holder}); wait for it to finish, or "
                "pass another checkpoint path"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}")
        handle.flush()
        self._lock = handle

    def close(self):
        """Release the file's lock (the call is over)."""
        if self._lock is not None:
            self._lock.close()
            self._lock = None

    def _groups(self) -> list[str]:
        import h5netcdf

        with h5netcdf.File(self.path, "r") as f:
            if f.attrs.get("format") != FORMAT:
                raise ValueError(f"pmz: {self.path} is not a pmz checkpoint (no format attribute {FORMAT!r})")
            if f.attrs.get("fingerprint") != self.fingerprint:
                raise ValueError(
                    f"pmz: the checkpoint {self.path} was written by a different call (another method, options, "
                    "random_seed, model or data); a call resumes only with the same arguments. Delete the file or "
                    "pass another checkpoint path."
                )
            return sorted(f.groups)

    def load(self) -> dict:
        """``{chunk key: (digest, record)}`` of the chunks the file holds (empty when there is no file yet)."""
        if not os.path.exists(self.path):
            return {}
        try:
            keys = self._groups()
        except ValueError:
            raise
        except Exception as err:
            raise ValueError(
                f"pmz: cannot read the checkpoint {self.path} ({type(err).__name__}: {err}); delete it to start over"
            ) from err
        out = {}
        for key in keys:
            with xr.open_dataset(self.path, group=key, engine=ENGINE) as ds:
                ds = ds.load()
            out[key] = (str(ds.attrs["digest"]), dataset_record(ds))
        return out

    def save(self, key: str, digest: str, record) -> None:
        """Add a finished chunk (atomically: a new file renamed over the old one)."""
        tmp = f"{self.path}.{os.getpid()}.tmp"
        if os.path.exists(self.path):
            shutil.copyfile(self.path, tmp)
        else:
            directory = os.path.dirname(os.path.abspath(self.path))
            os.makedirs(directory, exist_ok=True)
            root = xr.Dataset(attrs={"format": FORMAT, "fingerprint": self.fingerprint,
                                     "description": "pmz: finished chunks of a run, one group each"})
            root.to_netcdf(tmp, mode="w", engine=ENGINE)
        record_dataset(record, digest).to_netcdf(tmp, mode="a", group=key, engine=ENGINE)
        os.replace(tmp, self.path)
