"""The Gaussian-toy example (examples/neq_gaussian_toy.py) in its --quick mode: the paper's qualitative claims."""

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "examples" / "neq_gaussian_toy.py"


def load_example():
    spec = importlib.util.spec_from_file_location("neq_gaussian_toy", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example():
    return load_example()


@pytest.fixture(scope="module")
def quick(example):
    """``--quick``: 100 repeats at K = 2, 10, 50 (a few seconds)."""
    return example.main(["--quick"])


def standard_error(summary, name, repeats=100):
    return summary[name][1] / np.sqrt(repeats)


def test_bar_is_nearly_unbiased_at_k10(quick):
    bias, _ = quick[10]["bar"]
    assert abs(bias) < 3 * standard_error(quick[10], "bar") + 0.05


def test_histogram_ml_equals_bar(quick):
    for s in quick.values():
        assert s["histogram_ml"] == pytest.approx(s["bar"], abs=1e-8)


def test_histogram_posterior_agrees_with_bar_at_k10(quick):
    assert "histogram_posterior" in quick[10] and "histogram_posterior" not in quick[2]
    assert abs(quick[10]["histogram_posterior"][0] - quick[10]["bar"][0]) < 0.05


def test_bounds_bracket_on_average(quick):
    for s in quick.values():
        assert s["lower"][0] < 0 < s["upper"][0]


def test_ais_low_raise_high_far_from_equilibrium(quick):
    s = quick[2]
    assert s["ais"][0] < -2 * standard_error(s, "ais")
    assert s["raise"][0] > 2 * standard_error(s, "raise")
    assert quick[10]["raise"][0] > 2 * standard_error(quick[10], "raise")


def test_bar_beats_one_sided_estimators_at_k10(quick):
    s = quick[10]
    assert s["bar"][1] < min(s["ais"][1], s["raise"][1])


def test_cumulants_biased_far_from_equilibrium_only(quick):
    assert quick[10]["cumulant_forward"][0] > 10 and quick[10]["cumulant_combined"][0] > 1
    assert abs(quick[50]["cumulant_combined"][0]) < 0.1


def test_bar_interval_covers_and_shrinks(quick):
    for s in quick.values():
        assert 0.85 <= s["bar_coverage"] <= 1.0
    assert quick[50]["bar"][1] < quick[10]["bar"][1] < quick[2]["bar"][1]


def test_repeats_are_reproducible(example):
    a, b = example.run_toys(5, 3), example.run_toys(5, 3)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_doc_table_and_figure_are_written(example, quick, tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text(f"intro\n{example.TABLE_START}\nold\n{example.TABLE_END}\noutro\n")
    example.write_table_into_doc(example.format_table(quick, 100), doc)
    text = doc.read_text()
    assert text.startswith("intro\n") and text.endswith("outro\n") and "old" not in text
    assert "| 10 |" in text and "BAR 95% cover" in text
    example.plot(quick, tmp_path / "fig.png")
    assert (tmp_path / "fig.png").stat().st_size > 10_000
