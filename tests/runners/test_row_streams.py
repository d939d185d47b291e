"""The random streams of a run's rows (pmz.runners.row_streams): a row's numbers do not depend on its batch, and a
draw the streams do not list is refused instead of falling through to the shared stream."""

import numpy as np
import pytest

from pmz.runners.row_streams import ROWS_PER_STREAM, BlockStreams, RowStreams


def test_rows_draw_the_same_numbers_in_any_batch():
    streams = RowStreams.spawn(np.random.default_rng(3), 2 * ROWS_PER_STREAM + 10)
    whole = streams.generator().standard_normal((streams.n_rows, 2))
    a, b = 100, 2 * ROWS_PER_STREAM + 5
    part = streams.generator(a, b).standard_normal((b - a, 2))
    np.testing.assert_array_equal(part, whole[a:b])
    # a draw that is not one per row comes from the shared stream, the same for every batch
    assert streams.generator(0, 5).uniform(size=3).tolist() == streams.generator(7, 50).uniform(size=3).tolist()


def test_an_unlisted_draw_is_refused():
    streams = RowStreams.spawn(np.random.default_rng(3), 300).generator(0, 300)
    with pytest.raises(AttributeError, match="pmz: BlockStreams has no draw 'gamma'"):
        streams.gamma(1.0, size=300)
    with pytest.raises(AttributeError, match="'spawn'"):
        streams.spawn(2)
    assert sorted(streams.permutation(5).tolist()) == list(range(5))  # a batch-wide order: shared by design
    assert set(BlockStreams.PER_ROW).isdisjoint(BlockStreams.SHARED)
