"""pmz.boltzmann.learn.tracking: log Z tracked by warm-started RTS while a small RBM learns, checked against
enumeration.

Every comparison with an exact log Z is a 4-se bound (plus 0.01) with a cap on the se: it fails with probability
about 6e-5 per checkpoint if the batch-means se is right. ``reliable`` asks for mixing diagnostics that these
small ladders pass by a wide margin (level-marginal gaps near 0.005 against the 0.045 threshold, about 800 one-way
trips against 10, on several seeds).
"""

import sys
from pathlib import Path

import numpy as np
import pytest

from pmz.boltzmann.learn import LogZTracker, TrackedSystem, dbm_system, ladder_trips, rbm_system
from pmz.boltzmann.dbm import random_dbm
from pmz.boltzmann.rbm import random_rbm
from pmz.boltzmann.rbm_training import train_rbm

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SMALL = dict(n_temps=10, n_chains=50, n_sweeps=200, adapt_sweeps=30)


def _patterns(seed=0, n=60, nv=10):
    """Noisy copies of three binary prototypes: data an RBM can learn something from in a few epochs."""
    rng = np.random.default_rng(seed)
    prototypes = (rng.uniform(size=(3, nv)) < 0.5).astype(float)
    X = prototypes[rng.integers(0, 3, n)]
    flip = rng.uniform(size=X.shape) < 0.1
    return np.where(flip, 1.0 - X, X)


@pytest.fixture(scope="module")
def tracked():
    """A 10 x 6 RBM trained by PCD for 4 epochs (6 updates each) with a checkpoint after every epoch."""
    X = _patterns()
    train, valid = X[:48], X[48:]
    tracker = LogZTracker(data={"train": train, "validation": valid}, updates_per_epoch=6, random_seed=5, **SMALL)
    train_rbm(train, 6, n_epochs=4, batch_size=8, learning_rate=0.2, callback=tracker, seed=1)
    return tracker, train, valid


def test_tracked_log_z_matches_enumeration_at_every_checkpoint(tracked):
    """Four 4-se bounds: about 2.5e-4 together. The model changes between checkpoints by far more than the error
    bars: the spread of the exact values (0.12 to 0.69 for training seeds 1-6) against se near 0.003."""
    tracker, train, valid = tracked
    assert len(tracker.checkpoints) == 4
    exact = np.array([c.params.log_z_exact() for c in tracker.checkpoints])
    # the model really changes between checkpoints: a stale estimate would fail the 4-se bound below
    assert np.ptp(exact) > 10 * max(c.log_z_se for c in tracker.checkpoints) + 0.02
    for c, truth in zip(tracker.checkpoints, exact):
        assert c.reliable, c.reasons
        assert 0 < c.log_z_se < 0.05  # small enough to mean something
        assert abs(c.log_z - truth) < 4 * c.log_z_se + 0.01, (c.update, c.log_z, truth, c.log_z_se)
        # the data term is exact: log-likelihood = mean -F(v) - log Z, with log Z's se
        assert c.log_likelihood["train"] == pytest.approx(np.mean(c.params.log_f1(train)) - c.log_z)
        assert c.log_likelihood["validation"] == pytest.approx(np.mean(c.params.log_f1(valid)) - c.log_z)
        assert c.log_likelihood_se["validation"] == c.log_z_se
    assert [c.update for c in tracker.checkpoints] == [6, 12, 18, 24]
    assert [c.warm for c in tracker.checkpoints] == [False, True, True, True]
    table = tracker.table()
    assert table["validation_log_likelihood"].shape == (4,) and np.all(table["reliable"])


def test_warm_start_needs_fewer_sweeps_than_cold_for_the_same_se(tracked):
    """Warm, the first initial iteration's level-marginal gap is about 0.005, inside tol / K = 0.027, so one iteration
    suffices; cold (guesses 0) it is about 0.55, so at least two are needed: fewer sweeps for every seed. The se
    target 0.02 is met by the first production run (se near 0.003). Two 4-se bounds: about 1.3e-4."""
    tracker, train, _ = tracked
    params = tracker.checkpoints[-1].params
    probe = LogZTracker(base_means=train.mean(axis=0), random_seed=7, target_se=0.02, **{**SMALL, "n_sweeps": 100})
    probe.checkpoint(tracker.checkpoints[-2].params)  # the previous checkpoint: its guesses and chains warm the next
    warm, warm_info = probe.estimate(params)
    cold, cold_info = probe.estimate(params, warm=False)
    assert warm_info["warm"] and not cold_info["warm"]
    assert warm.log_z_se <= 0.02 and cold.log_z_se <= 0.02
    assert warm_info["n_adapt"] < cold_info["n_adapt"]
    assert warm_info["n_sweeps"] < cold_info["n_sweeps"]  # sweeps per chain, all phases counted
    truth = params.log_z_exact()
    for est in (warm, cold):
        assert abs(est.log_z - truth) < 4 * est.log_z_se + 0.01


def test_same_seed_same_bits():
    rbms = [random_rbm(8, 5, seed=s, scale=0.8) for s in (1, 2)]

    def run():
        tracker = LogZTracker(base_means=np.full(8, 0.4), random_seed=11, follow_sweeps=5, every=2, **SMALL)
        for epoch, rbm in enumerate([rbms[0], rbms[0], rbms[1], rbms[1]]):
            tracker(epoch, rbm)
        return [(c.log_z, c.log_z_se, c.n_sweeps, c.n_trips) for c in tracker.checkpoints]

    first, second = run(), run()
    assert first == second and len(first) == 2
    other = LogZTracker(base_means=np.full(8, 0.4), random_seed=12, **SMALL).checkpoint(rbms[0])
    assert other.log_z != first[0][0]


def test_follow_sweeps_are_counted_and_partially_update_the_guesses():
    """Sweep counts are fixed by construction; the damped step of the guesses was 0.003-0.04 on seeds 1-8, far
    inside (0, 0.5)."""
    rbm = random_rbm(8, 5, seed=3, scale=0.8)
    tracker = LogZTracker(base_means=np.full(8, 0.4), random_seed=2, every=3, follow_sweeps=7, alpha=0.2, **SMALL)
    assert tracker(0, rbm) is None and tracker(1, rbm) is None  # before the first checkpoint: nothing to follow
    first = tracker(2, rbm)
    before = tracker._warm[0].copy()
    assert tracker(3, rbm) is None
    after = tracker._warm[0]
    assert 0 < np.max(np.abs(after - before)) < 0.5  # a damped step from good guesses
    tracker(4, rbm)
    second = tracker(5, rbm)
    assert second.n_sweeps == 14 + second.n_adapt * SMALL["adapt_sweeps"] + second.n_production_sweeps
    assert first.n_sweeps == first.n_adapt * SMALL["adapt_sweeps"] + first.n_production_sweeps
    assert second.epoch == 5 and second.update == 6


def test_coarse_ladder_on_a_sharp_model_is_flagged():
    """Three levels on a sharp RBM: the initial iterations end with a gap near 0.6 (tol / K = 0.1) and the chains
    make at most a few one-way trips (min_trips = 10) on seeds 1-8, so a mixing reason (either of the two) is
    certain; which reasons fire besides it is not asserted."""
    rbm = random_rbm(10, 6, seed=4, scale=4.0)
    tracker = LogZTracker(base_means=np.full(10, 0.5), random_seed=3, **{**SMALL, "n_temps": 2, "max_adapt": 4})
    c = tracker.checkpoint(rbm)
    assert not c.reliable
    assert any("mix" in r for r in c.reasons), c.reasons


def test_dbm_plugs_in():
    """A 4-se bound (+0.01): fails with probability about 6e-5; the se is near 0.016."""
    dbm = random_dbm(8, 5, 3, seed=2, scale=0.8)
    V = (np.random.default_rng(1).uniform(size=(20, 8)) < 0.5).astype(float)
    tracker = LogZTracker(dbm_system(np.full(8, 0.5)), data={"train": V}, random_seed=4, **SMALL)
    c = tracker.checkpoint(dbm)
    truth = dbm.exact_log_z()
    assert c.reliable and abs(c.log_z - truth) < 4 * c.log_z_se + 0.01
    assert c.log_z_se < 0.05  # small enough to mean something
    assert c.log_likelihood["train"] == pytest.approx(np.mean(dbm.log_likelihood(V, c.log_z)))


def test_ladder_trips_counts_end_to_end_passages():
    L = np.array([[0, 1], [2, 1], [1, 1], [0, 1], [2, 1]])
    assert ladder_trips(L, 3) == 3  # chain 0: 0 -> 2 -> 0 -> 2; chain 1 never reaches an end
    assert ladder_trips(np.zeros((5, 0), dtype=int), 3) == 0


@pytest.mark.parametrize(
    "options, message",
    [
        (dict(every=0), "every must be a positive integer"),
        (dict(alpha=0.0), "alpha must be a number in (0, 1]"),
        (dict(alpha=1.5), "alpha must be a number in (0, 1]"),
        (dict(n_sweeps=2), "n_sweeps must be at least 4"),
        (dict(n_sweeps=300, max_sweeps=100), "max_sweeps (100) must be at least n_sweeps (300)"),
        (dict(target_se=-1.0), "target_se must be a positive number"),
        (dict(schedule=[0.0, 0.7, 0.5, 1.0]), "strictly increasing"),
        (dict(schedule="cubic"), "unknown schedule"),
        (dict(log_prior=np.zeros(3)), "log_prior must hold 50 finite values"),
        (dict(level_move="swap"), "level_move must be one of"),
        (dict(follow_sweeps=-1), "follow_sweeps must be a non-negative integer"),
        (dict(data={"train": np.zeros(5)}), "data['train'] must be a non-empty 2-d array"),
    ],
)
def test_bad_options_are_rejected(options, message):
    options = {"base_means": np.full(4, 0.5), **options}
    with pytest.raises(ValueError, match=None) as info:
        LogZTracker(**options)
    assert message in str(info.value)


def test_bad_systems_are_rejected():
    with pytest.raises(ValueError, match="needs a system, base_means, or data"):
        LogZTracker()
    with pytest.raises(TypeError, match="system must be a TrackedSystem"):
        LogZTracker(lambda p: p)
    from pmz.model.energy_model import BernoulliBase, EnergyModel

    no_kernel = TrackedSystem(lambda p: EnergyModel(lambda X: X.sum(axis=1), BernoulliBase(np.full(3, 0.5))),
                              lambda p, V: V.sum(axis=1))
    with pytest.raises(ValueError, match="Gibbs-type kernel"):
        LogZTracker(no_kernel).checkpoint(None)
    assert rbm_system(np.full(4, 0.5)).name == "rbm"


@pytest.mark.slow  # the whole example at a reduced size
def test_example_small():
    """Three checkpoints, each within 4 se (+0.02) of enumeration with se below 0.05 (about 0.003): about 2e-4."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        from rts_tracking import main
    finally:
        sys.path.pop(0)
    rows, cold = main(["--small"])
    for row in rows:
        assert row["reliable"] and abs(row["log_z"] - row["exact"]) < 4 * row["log_z_se"] + 0.02
        assert row["log_z_se"] < 0.05
    assert cold and all(c["sweeps"] > 0 for c in cold)


def test_tracks_fit_rbm_and_fit_dbm_through_on_update():
    """``tracker.on_update`` is the callback of pmz.boltzmann.learn's trainers: a checkpoint at every call, labelled
    by update, and each tracked log Z agrees with enumeration of the parameters at that update (three 4-se bounds,
    about 2e-4
    together, with the se capped)."""
    from pmz.boltzmann.learn import fit_dbm, fit_rbm

    X = _patterns(nv=8)
    tracker = LogZTracker(data={"train": X}, keep_params=True, random_seed=3, **SMALL)
    run = fit_rbm(X, 5, method="pcd", n_epochs=2, batch_size=10, learning_rate=0.1, callback_every=6,
                  callback=tracker.on_update, random_seed=2, progressbar=False)
    assert [c.update for c in tracker.checkpoints] == [u for u, _ in run.callback_values] == [6, 12]
    for c in tracker.checkpoints:
        assert c.reliable and abs(c.log_z - c.params.log_z_exact()) < 4 * c.log_z_se + 0.01
        assert c.log_z_se < 0.1

    dbm_tracker = LogZTracker(dbm_system(X.mean(axis=0).clip(0.05, 0.95)), data={"train": X}, keep_params=True,
                              random_seed=4, **SMALL)
    fit_dbm(X, 4, 3, method="pcd", n_epochs=1, batch_size=10, learning_rate=0.05, callback_every=6,
            callback=dbm_tracker.on_update, random_seed=2, progressbar=False)
    (c,) = dbm_tracker.checkpoints
    assert c.update == 6 and c.reliable and abs(c.log_z - c.params.exact_log_z()) < 4 * c.log_z_se + 0.01
    assert c.log_z_se < 0.1
