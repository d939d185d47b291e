"""Train the digits RBMs shipped in ``pmz/boltzmann/data`` (and extract the digits once).

Steps (each optional, all reproducible from fixed seeds):

* ``--extract-digits``: scikit-learn's ``load_digits`` (1797 images, 8 x 8 pixels, values 0..16), binarised at
  ``pixel > 7`` and bit-packed into ``pmz/boltzmann/data/digits_binary.npz``. Needs scikit-learn (only here: pmz
  reads the packed file).
* default: train every RBM in ``SETTINGS`` on the training images (``i % 5 != 0``) and write
  ``rbm_digits_<name>.npz`` (W as float32, a, b, the base means = clipped training-set pixel marginals, the
  training settings as JSON, the training time); report the exact log Z and average log-likelihood of the
  20-hidden RBMs on the training and test images, and the base-rate model's. The RBMs:

  - ``h20``: 20 hidden units, CD-10 (``pmz.systems.rbm_digits(20)``, the default 20-hidden system);
  - ``h500``: 500 hidden units, PCD-1 with 100 chains (``rbm_digits(500)``);
  - ``h20_cd1``, ``h20_cd25``, ``h20_pcd``: 20 hidden units trained by CD-1, CD-25 and PCD-1 (100 chains,
    learning rate 0.01), otherwise as ``h20`` (same seed, hence the same initial weights and first data order):
    the RBMs of Kiwaki (2015), Table 1, for the schedule experiments (``rbm_digits(20, training="cd1")``, ...).
* ``--only NAME [NAME ...]``: train only these (e.g. ``--only h20_cd1 h20_cd25 h20_pcd``).

The reference log Z of the 500-hidden RBM (``pmz.boltzmann.rbm.RBM_DIGITS_H500_LOG_Z``) is computed by
``python benchmarks/rbm_ais.py --reference``; rerun it (and update the constant) after retraining.

Usage::

    python benchmarks/train_rbm.py --extract-digits     # once, needs scikit-learn
    python benchmarks/train_rbm.py                      # all RBMs (about 3 minutes)
    python benchmarks/train_rbm.py --only h20_cd1 h20_cd25 h20_pcd
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from dataclasses import replace

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
warnings.filterwarnings("ignore", message=".*ArviZ is undergoing.*")

from pmz.boltzmann.rbm import DATA_DIR, DIGITS_FILE, average_log_likelihood, digits_split, load_rbm  # noqa: E402
from pmz.boltzmann.rbm_training import TrainingSettings, train_rbm  # noqa: E402

_H20_CD10 = TrainingSettings(
    method="cd",
    k=10,
    n_epochs=200,
    batch_size=20,
    learning_rate=0.05,
    final_learning_rate=0.0,
    momentum=0.9,
    weight_decay=1e-4,
    seed=20,
)

# name -> (n_hidden, settings); the file is ``DATA_DIR / f"rbm_digits_{name}.npz"``
SETTINGS = {
    "h20": (20, _H20_CD10),
    "h500": (
        500,
        TrainingSettings(
            method="pcd",
            k=1,
            n_epochs=200,
            batch_size=20,
            learning_rate=0.01,
            final_learning_rate=0.0,
            momentum=0.9,
            weight_decay=1e-4,
            n_chains=100,
            seed=500,
        ),
    ),
    "h20_cd1": (20, replace(_H20_CD10, k=1)),
    "h20_cd25": (20, replace(_H20_CD10, k=25)),
    "h20_pcd": (20, replace(_H20_CD10, method="pcd", k=1, n_chains=100, learning_rate=0.01)),
}
BASE_CLIP = 1e-3


def extract_digits(path=DIGITS_FILE, threshold: int = 7) -> None:
    from sklearn.datasets import load_digits

    digits = load_digits()
    X = (digits.data > threshold).astype(np.uint8)
    np.savez_compressed(
        path,
        packed=np.packbits(X, axis=1),
        labels=digits.target.astype(np.uint8),
        shape=np.array(X.shape),
        threshold=np.array(threshold),
    )
    print(f"wrote {path} ({X.shape[0]} images, {X.shape[1]} pixels, mean {X.mean():.4f})")


def base_rate_log_likelihood(p, V) -> float:
    return float(np.mean(V @ np.log(p) + (1 - V) @ np.log1p(-p)))


def train_one(name: str, log=print) -> None:
    train, test = digits_split()
    n_hidden, settings = SETTINGS[name]
    base_means = np.clip(train.mean(axis=0), BASE_CLIP, 1 - BASE_CLIP)
    t0 = time.perf_counter()
    rbm, history = train_rbm(train, n_hidden, settings)
    seconds = time.perf_counter() - t0
    path = DATA_DIR / f"rbm_digits_{name}.npz"
    rbm.save(path, base_means=base_means, settings=json.dumps(settings.as_dict()), train_seconds=np.array(seconds))
    log(f"{name}: {settings}")
    log(
        f"{name}: trained in {seconds:.1f} s; reconstruction error {history.reconstruction_error[-1]:.3f} "
        f"pixels/image; max |W| {np.abs(rbm.W).max():.2f}; wrote {path} ({path.stat().st_size / 1024:.0f} kB)"
    )
    log(
        f"base-rate model: average log-likelihood train {base_rate_log_likelihood(base_means, train):.3f}, "
        f"test {base_rate_log_likelihood(base_means, test):.3f}"
    )
    if rbm.n_hidden <= 22:
        rbm, _ = load_rbm(path)  # the shipped RBM (W rounded to float32)
        t0 = time.perf_counter()
        log_z = rbm.log_z_exact()
        seconds = time.perf_counter() - t0
        ll_train, ll_test = average_log_likelihood(rbm, train, log_z), average_log_likelihood(rbm, test, log_z)
        log(
            f"{name}: exact log Z = {log_z:.6f} ({seconds:.1f} s); average log-likelihood "
            f"train {ll_train:.3f}, test {ll_test:.3f}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extract-digits", action="store_true", help="write digits_binary.npz (scikit-learn)")
    parser.add_argument(
        "--only", nargs="+", choices=list(SETTINGS), metavar="NAME", help=f"train only these: {', '.join(SETTINGS)}"
    )
    args = parser.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.extract_digits:
        extract_digits()
        return
    for name in SETTINGS:
        if args.only is None or name in args.only:
            train_one(name, log=log)


if __name__ == "__main__":
    main()
