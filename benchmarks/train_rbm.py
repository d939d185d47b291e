"""Train the digits RBMs shipped in ``pmz/systems/data`` (and extract the digits once).

Steps (each optional, all reproducible from fixed seeds):

* ``--extract-digits``: scikit-learn's ``load_digits`` (1797 images, 8 x 8 pixels, values 0..16), binarised at
  ``pixel > 7`` and bit-packed into ``pmz/systems/data/digits_binary.npz``. Needs scikit-learn (only here: pmz
  reads the packed file).
* default: train the 20-hidden RBM (CD-10) and the 500-hidden RBM (PCD-1) on the training images
  (``i % 5 != 0``) and write ``rbm_digits_h20.npz`` / ``rbm_digits_h500.npz`` (W as float32, a, b, the base
  means = clipped training-set pixel marginals, the training settings); report the exact average
  log-likelihood of the 20-hidden RBM on the training and test images, and the base-rate model's.
* ``--only h20`` / ``--only h500``: train one of them.

The reference log Z of the 500-hidden RBM (``pmz.systems.rbm.RBM_DIGITS_H500_LOG_Z``) is computed by
``python benchmarks/rbm_ais.py --reference``; rerun it (and update the constant) after retraining.

Usage::

    python benchmarks/train_rbm.py --extract-digits     # once, needs scikit-learn
    python benchmarks/train_rbm.py                      # both RBMs (about 2 minutes)
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore", message=".*could not link to a BLAS.*")
warnings.filterwarnings("ignore", message=".*ArviZ is undergoing.*")

from pmz.systems.rbm import DATA_DIR, DIGITS_FILE, average_log_likelihood, digits_split
from pmz.systems.rbm_training import TrainingSettings, train_rbm

SETTINGS = {
    20: TrainingSettings(
        method="cd",
        k=10,
        n_epochs=200,
        batch_size=20,
        learning_rate=0.05,
        final_learning_rate=0.0,
        momentum=0.9,
        weight_decay=1e-4,
        seed=20,
    ),
    500: TrainingSettings(
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


def train_one(n_hidden: int, log=print) -> None:
    train, test = digits_split()
    settings = SETTINGS[n_hidden]
    base_means = np.clip(train.mean(axis=0), BASE_CLIP, 1 - BASE_CLIP)
    t0 = time.perf_counter()
    rbm, history = train_rbm(train, n_hidden, settings)
    seconds = time.perf_counter() - t0
    path = DATA_DIR / f"rbm_digits_h{n_hidden}.npz"
    rbm.save(path, base_means=base_means, settings=json.dumps(settings.as_dict()), train_seconds=np.array(seconds))
    log(f"h{n_hidden}: {settings}")
    log(
        f"h{n_hidden}: trained in {seconds:.1f} s; reconstruction error {history.reconstruction_error[-1]:.3f} "
        f"pixels/image; max |W| {np.abs(rbm.W).max():.2f}; wrote {path} ({path.stat().st_size / 1024:.0f} kB)"
    )
    log(
        f"base-rate model: average log-likelihood train {base_rate_log_likelihood(base_means, train):.3f}, "
        f"test {base_rate_log_likelihood(base_means, test):.3f}"
    )
    if rbm.n_hidden <= 22:
        t0 = time.perf_counter()
        log_z = rbm.log_z_exact()
        log(
            f"h{n_hidden}: exact log Z = {log_z:.6f} ({time.perf_counter() - t0:.1f} s); average log-likelihood "
            f"train {average_log_likelihood(rbm, train, log_z):.3f}, test {average_log_likelihood(rbm, test, log_z):.3f}"
        )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--extract-digits", action="store_true", help="write digits_binary.npz (scikit-learn)")
    parser.add_argument("--only", choices=["h20", "h500"], help="train one RBM only")
    args = parser.parse_args(argv)

    def log(msg):
        print(msg, file=sys.stderr, flush=True)

    if args.extract_digits:
        extract_digits()
        return
    for n_hidden in (20, 500):
        if args.only in (None, f"h{n_hidden}"):
            train_one(n_hidden, log=log)


if __name__ == "__main__":
    main()
