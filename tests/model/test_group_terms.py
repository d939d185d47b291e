"""The map from the log density's elementwise terms to the latents they read (pmz.model.group_terms), and the
batched precision factors (pmz.model.batched_precision)."""

import numpy as np

from pmz.model.batched_precision import ArrowFactor, DenseFactor
from pmz.model.group_terms import read_group_terms


def _terms(pairs):
    """Terms of a vector x: term i reads the latents pairs[i] (a tuple), the last term none."""

    def terms(X):
        out = [np.cos(X[:, list(p)].sum(axis=1)) + X[:, list(p)].prod(axis=1) for p in pairs]
        return np.stack(out + [np.zeros(len(X))], axis=1)

    return terms


def test_each_term_is_mapped_to_the_latent_it_reads():
    rng = np.random.default_rng(0)
    m = 37
    pairs = [(g,) for g in rng.permutation(m)] + [(g,) for g in range(m)]
    groups = read_group_terms(_terms(pairs), rng.normal(size=m), np.arange(m), np.full(m, 0.3), rng)
    assert not isinstance(groups, str)
    T = _terms(pairs)(rng.normal(size=(3, m)))
    per_group = groups.per_group(T)
    expected = np.zeros((3, m))
    for i, (g,) in enumerate(pairs):
        expected[:, g] += T[:, i]
    assert np.allclose(per_group, expected)
    assert np.allclose(groups.constant_part(T), 0.0)


def test_a_term_reading_two_latents_is_caught():
    rng = np.random.default_rng(1)
    m = 20
    pairs = [(g,) for g in range(m)] + [(3, 11)]
    assert "several" in read_group_terms(_terms(pairs), rng.normal(size=m), np.arange(m), np.full(m, 0.3), rng)


def test_arrow_and_dense_factors_agree_with_the_matrix():
    rng = np.random.default_rng(2)
    B, n, r = 3, 6, 2
    D = rng.uniform(1.0, 3.0, size=(B, n))
    C = 0.2 * rng.normal(size=(B, n, r))
    E = np.stack([np.eye(r) * 5.0] * B)
    factor = ArrowFactor(np.arange(n), np.arange(n, n + r), D, C, E)
    P = np.zeros((B, n + r, n + r))
    for b in range(B):
        P[b, :n, :n] = np.diag(D[b])
        P[b, :n, n:], P[b, n:, :n], P[b, n:, n:] = C[b], C[b].T, E[b]
    g = rng.normal(size=(B, n + r))
    dense = DenseFactor(P)
    for f in (factor, dense):
        assert f.ok.all()
        assert np.allclose(f.solve(g), np.linalg.solve(P, g[..., None])[..., 0])
        assert np.allclose(f.log_det, np.linalg.slogdet(P)[1])
        # whitened coordinates: x = M^{-1} z has covariance P^{-1}, and the gradient maps by M^{-T}
        z = rng.normal(size=(B, n + r))
        x = f.from_white(z)
        assert np.allclose(np.einsum("bi,bij,bj->b", x, P, x), np.sum(z * z, axis=1))
        assert np.allclose(np.einsum("bi,bi->b", f.whiten(g), z), np.einsum("bi,bi->b", g, x))
