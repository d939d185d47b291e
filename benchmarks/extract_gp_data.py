"""Extract the GP-classification data set shipped as ``pmz/gp/data/digits_gp.npz`` (run once).

Source: scikit-learn's ``load_digits`` (1797 images of 8 x 8 pixels with values 0..16; the UCI optical
recognition of handwritten digits test set). Steps, all deterministic:

1. keep the images of two classes, ``3`` (label ``+1``) and ``8`` (label ``-1``): 357 images. The pair is not
   trivially separable (a linear least-squares classifier on 5 principal components gets about 96% of the
   training images right; 1 versus 7 would get 100%);
2. standardise each pixel over these images (mean 0, sd 1; constant pixels are only centred);
3. principal components by the singular value decomposition of the standardised pixel matrix ``X = U D V'``:
   the scores ``X V[:, :k] = U[:, :k] D[:k]`` of the first ``k = 10`` components, signs fixed so that the largest
   absolute loading of every component is positive;
4. shuffle the images with a fixed seed, so that the first ``n`` rows are a deterministic random subsample with
   both classes (``pmz.gp.classification.load_digits_gp(n_points=n)`` takes the first ``n``).

Stored as float32 scores (357 x 10), int8 labels, the images' indices in ``load_digits``, the component
variances and the settings: about 16 kB. Needs scikit-learn, only here (pmz reads the file).

Usage::

    python benchmarks/extract_gp_data.py
"""

from __future__ import annotations

import argparse

import numpy as np

from pmz.gp.classification import DIGITS_GP_FILE

POSITIVE_CLASS, NEGATIVE_CLASS = 3, 8
N_COMPONENTS = 10
SHUFFLE_SEED = 20170301


def principal_component_scores(pixels: np.ndarray, n_components: int):
    """Scores on the first principal components of the standardised pixels and the components' variances."""
    centred = pixels - pixels.mean(axis=0)
    sd = centred.std(axis=0)
    standardised = centred / np.where(sd > 0, sd, 1.0)
    _, singular_values, components = np.linalg.svd(standardised, full_matrices=False)
    components = components[:n_components]
    signs = np.sign(components[np.arange(n_components), np.argmax(np.abs(components), axis=1)])
    scores = standardised @ (components * signs[:, None]).T
    variances = singular_values[:n_components] ** 2 / pixels.shape[0]
    total_variance = np.sum(singular_values**2) / pixels.shape[0]
    return scores, variances, total_variance


def extract(path=DIGITS_GP_FILE) -> None:
    from sklearn.datasets import load_digits

    digits = load_digits()
    keep = np.flatnonzero((digits.target == POSITIVE_CLASS) | (digits.target == NEGATIVE_CLASS))
    pixels = digits.data[keep].astype(np.float64)
    labels = np.where(digits.target[keep] == POSITIVE_CLASS, 1, -1)
    scores, variances, total_variance = principal_component_scores(pixels, N_COMPONENTS)
    shuffle = np.random.default_rng(SHUFFLE_SEED).permutation(keep.size)
    np.savez_compressed(
        path,
        scores=scores[shuffle].astype(np.float32),
        labels=labels[shuffle].astype(np.int8),
        source_index=keep[shuffle].astype(np.int16),
        component_variance=variances,
        total_variance=np.array(total_variance),
        classes=np.array([POSITIVE_CLASS, NEGATIVE_CLASS]),
        shuffle_seed=np.array(SHUFFLE_SEED),
    )
    share = variances / total_variance
    print(
        f"wrote {path}: {keep.size} images (classes {POSITIVE_CLASS} -> +1: {np.sum(labels > 0)}, "
        f"{NEGATIVE_CLASS} -> -1: {np.sum(labels < 0)}), {N_COMPONENTS} components explaining "
        f"{100 * share.sum():.1f}% of the standardised pixel variance (first: {np.round(variances, 2).tolist()})"
    )


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output", default=str(DIGITS_GP_FILE), help="where to write the .npz file")
    args = parser.parse_args(argv)
    extract(args.output)


if __name__ == "__main__":
    main()
