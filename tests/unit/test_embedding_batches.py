"""Length-sorted embedding batches, capped in rows and in padded tokens."""

from __future__ import annotations

from cems_cli.embedding.base import batches_by_length


def test_batches_sorted_by_length_and_capped_in_rows():
    items = ["x" * n for n in (5, 1, 3, 2, 4)]
    assert batches_by_length(items, 2) == [[1, 3], [2, 4], [0]]


def test_batches_capped_in_padded_cells():
    items = [[0] * n for n in (10, 10, 10, 40, 40, 100)]
    # 3 × 10 = 30 fits 80; adding a 40 would make 4 × 40 = 160; two 40s make 80; 100 goes alone (over the
    # cap itself, but a batch always takes at least one item).
    assert batches_by_length(items, 64, max_cells=80) == [[0, 1, 2], [3, 4], [5]]
    assert batches_by_length(items, 64) == [[0, 1, 2, 3, 4, 5]]
    assert batches_by_length([], 4, max_cells=10) == []
