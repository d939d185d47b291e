"""BAR on a peaked likelihood (a 2000-row Poisson GLM) and what ``pmz.plot_work`` shows of its works (issue 32).

A few forward paths of such a run stick in the prior's tails (works of 1e5-1e6 nats among works within a few nats):
the histogram must still show the bulk, count the paths it leaves out, and say when the result is unreliable.
"""

import numpy as np
import pytest

import pmz
from pmz.records import BidirectionalRecord, EvidenceEstimate, WorkRecord
from pmz.results import make_result

REASON = (
    "Var[log w] 6.37e+09 is 7.81e+08x the perfect-transition prediction 8.16 (the kernels do not keep up with "
    "the schedule)"
)


@pytest.fixture(autouse=True)
def _agg():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    yield
    plt.close("all")


def _result(work_f, work_r, *, log_z, se=0.063, reliable=True, reason="", log_z0=0.0):
    """A two-way result holding these works (``W_f``, ``W_r``), built without a run."""
    forward = WorkRecord(log_weights=-np.asarray(work_f), schedule=[0.0, 1.0], log_z0=log_z0)
    reverse = WorkRecord(log_weights=-np.asarray(work_r), schedule=[0.0, 1.0], direction="reverse", log_z0=log_z0)
    estimate = EvidenceEstimate(log_z=log_z, log_z_se=se, method="bar", reliable=reliable, reliability_reason=reason)
    return make_result(estimate, record=BidirectionalRecord(forward, reverse, reverse_start="hmc"))


def _stuck_works(seed, n=512, n_stuck=6):
    """Works like those of the GLM's bar run: forward ~ 2752 + 3 N(0, 1) with ``n_stuck`` paths at 1e4-1.7e6,
    negated reverse ~ 2748 + 1.5 N(0, 1)."""
    rng = np.random.default_rng(seed)
    work_f = 2752.0 + 3.0 * rng.standard_normal(n)
    work_f[:n_stuck] = np.geomspace(1e4, 1.7e6, n_stuck)
    neg_work_r = 2748.0 + 1.5 * rng.standard_normal(n)
    return work_f, -neg_work_r


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def _shown_mass(ax, n_series):
    """The area under each histogram (its bars are consecutive patches, one per bin)."""
    bars = [p for p in ax.patches if hasattr(p, "get_width")]
    per = len(bars) // n_series
    return [sum(b.get_width() * b.get_height() for b in bars[i * per : (i + 1) * per]) for i in range(n_series)]


@pytest.mark.parametrize("seed", range(5))
def test_plot_work_shows_the_bulk_and_counts_the_stuck_paths(seed):
    work_f, work_r = _stuck_works(seed)
    res = _result(work_f, work_r, log_z=-2749.666, reliable=False, reason=REASON)
    ax = pmz.plot_work(res, truth=-2749.617)
    lo, hi = ax.get_xlim()
    bulk = np.concatenate([work_f[6:], -work_r])
    assert lo <= bulk.min() and hi >= bulk.max()  # every path of the bulk is shown ...
    assert hi - lo < 60  # ... on a scale of nats, not of the 1.7e6 nats of the stuck paths
    legend = _legend(ax)
    assert legend[0] == "forward  $W_f$ (512 paths; 6 above the shown range, up to 1.7e+06)"
    assert legend[1] == "reverse  $-W_r$ (512 paths)"
    assert legend[2].startswith("$-\\log Z$ = 2749.666 ± 0.063") and legend[3] == "exact: 2749.6170"
    # densities of all the paths of a direction: the forward one holds 506 / 512 of its mass in view
    forward_mass, reverse_mass = _shown_mass(ax, 2)
    assert forward_mass == pytest.approx(506 / 512, rel=1e-9) and reverse_mass == pytest.approx(1.0, rel=1e-9)
    title = ax.get_title()
    assert title.startswith("Work distributions (bar)\nUNRELIABLE: Var[log w] 6.37e+09")
    assert len(title.splitlines()) <= 3 and "keep up" in title
    assert ax.title.get_color() == "C3"


def test_plot_work_of_a_reliable_result_shows_every_path():
    rng = np.random.default_rng(3)
    work_f, work_r = 1.0 + rng.standard_normal(400), -(rng.standard_normal(300))
    res = _result(work_f, work_r, log_z=-0.5, se=0.04, log_z0=2.0)
    ax = pmz.plot_work(res)
    lo, hi = ax.get_xlim()
    assert lo <= min(work_f.min(), -work_r.max()) and hi >= max(work_f.max(), -work_r.min())
    assert not any("shown range" in text for text in _legend(ax))
    assert ax.get_title() == "Work distributions (bar)" and "UNRELIABLE" not in ax.get_title()
    assert [round(m, 9) for m in _shown_mass(ax, 2)] == [1.0, 1.0]


def test_plot_work_unreliable_notice_is_short_and_kept_under_a_given_title():
    work_f, work_r = _stuck_works(0)
    reason = "; ".join([REASON, "work distributions barely overlap (overlap 0.01 < 0.03)", "a $ sign " * 20])
    res = _result(work_f, work_r, log_z=-2749.666, reliable=False, reason=reason)
    ax = pmz.plot_work(res, title="my run")
    lines = ax.get_title().splitlines()
    assert lines[0] == "my run" and lines[1].startswith("UNRELIABLE: ") and len(lines) == 3
    assert lines[2].endswith("…") and all(len(line) <= 70 for line in lines[1:])
    # an unreliable result without a reason still says so
    res = _result(work_f, work_r, log_z=-2749.666, reliable=False)
    assert "UNRELIABLE: see result.reliability_reason" in pmz.plot_work(res).get_title()


def test_plot_work_far_estimate_and_other_bins():
    """An estimate far from the works is named in the legend, not drawn by stretching the axis; bin rules and bin
    edges still work; a path of infinite work is counted."""
    work_f, work_r = _stuck_works(1)
    work_f[10] = np.inf
    res = _result(work_f, work_r, log_z=-1e5, reliable=False, reason=REASON)
    ax = pmz.plot_work(res)
    lo, hi = ax.get_xlim()
    assert hi - lo < 60
    legend = _legend(ax)
    assert legend[2].endswith("(outside the shown range)")
    assert legend[0] == "forward  $W_f$ (512 paths; 6 above the shown range, up to 1.7e+06; 1 with infinite work)"
    ax = pmz.plot_work(res, bins="auto")
    assert ax.get_xlim()[1] - ax.get_xlim()[0] < 60
    ax = pmz.plot_work(res, bins=np.linspace(2740.0, 2770.0, 31))
    assert ax.get_xlim() == (2740.0, 2770.0)


# --- a real run -------------------------------------------------------------------------------------------------


def _poisson_glm(n=2000, seed=0):
    """The reported model: 3 coefficients ~ N(0, 1), log link, standard normal covariates, counts simulated with
    seed 0; its log Z by importance sampling from a Student-t (df 5) at the posterior mode (200000 draws, se about
    0.001), independent of pmz."""
    import pymc as pm
    from scipy import optimize, special, stats

    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 3))
    y = rng.poisson(np.exp(X @ rng.normal(0.0, 1.0, 3)))
    with pm.Model() as model:
        b = pm.Normal("b", 0.0, 1.0, shape=3)
        pm.Poisson("y", mu=pm.math.exp(pm.math.dot(X, b)), observed=y)

    def log_post(beta):
        eta = beta @ X.T
        return (y * eta - np.exp(eta)).sum(1) - special.gammaln(y + 1).sum() + stats.norm.logpdf(beta).sum(1)

    mode = optimize.minimize(lambda beta: -log_post(beta[None])[0], np.zeros(3), method="BFGS").x
    precision = (X.T * np.exp(X @ mode)) @ X + np.eye(3)
    proposal = stats.multivariate_t(loc=mode, shape=1.2 * np.linalg.inv(precision), df=5)
    draws = proposal.rvs(200_000, random_state=np.random.default_rng(1))
    log_w = log_post(draws) - proposal.logpdf(draws)
    log_z = float(special.logsumexp(log_w) - np.log(log_w.size))
    w = np.exp(log_w - log_w.max())
    assert np.std(w) / np.mean(w) / np.sqrt(w.size) < 0.003  # the truth is good to a few thousandths
    return model, log_z


@pytest.mark.slow
def test_bar_defaults_on_a_poisson_glm_are_never_confidently_wrong():
    """bar with defaults (about 20 s): BAR's own (Bennett) se is below 0.1 and the reported se covers the error;
    when ~1% of the forward paths stick in the prior's tails the result is flagged (the kernel-lag rule) with the se
    at least BAR's, and the work plot shows the bulk and the flag."""
    model, truth = _poisson_glm()
    res = pmz.evidence(model, method="bar", random_seed=5, progressbar=False)
    assert abs(res.log_z - truth) < 4 * res.log_z_se + 0.02
    se_bar = res.diagnostics.get("se_bennett")
    assert se_bar < 0.1 and res.log_z_se >= se_bar
    ax = pmz.plot_work(res, truth=truth)
    lo, hi = ax.get_xlim()
    assert hi - lo < 100
    assert ("UNRELIABLE" in ax.get_title()) == (not res.reliable)
