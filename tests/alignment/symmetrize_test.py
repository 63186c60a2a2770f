"""Tests for gnmt_tf.alignment.symmetrize on hand-made alignments."""

import pytest

from gnmt_tf.alignment import symmetrize

# Source "a b c d", target "w x y z".
#   forward: a-w b-x c-x d-z          reverse: a-w b-x b-y d-y
FORWARD = [(0, 0), (1, 1), (2, 1), (3, 3)]
REVERSE = [(0, 0), (1, 1), (1, 2), (3, 2)]


def test_intersect_and_union():
    assert symmetrize.intersect(FORWARD, REVERSE) == [(0, 0), (1, 1)]
    assert symmetrize.union(FORWARD, REVERSE) == [
        (0, 0), (1, 1), (1, 2), (2, 1), (3, 2), (3, 3)]


def test_grow_diag():
    # From the intersection {a-w, b-x}, in (i, j) order: b-y neighbours b-x
    # and y is unaligned; c-x neighbours b-x and c is unaligned; d-y
    # neighbours c-x diagonally and d is unaligned; d-z neighbours d-y and z
    # is unaligned.
    assert symmetrize.grow_diag(FORWARD, REVERSE) == [
        (0, 0), (1, 1), (1, 2), (2, 1), (3, 2), (3, 3)]


def test_grow_diag_stops_at_isolated_links():
    forward = [(0, 0), (3, 3)]
    reverse = [(0, 0), (5, 5)]
    assert symmetrize.grow_diag(forward, reverse) == [(0, 0)]
    # final: links of either direction with an unaligned end.
    assert symmetrize.grow_diag_final(forward, reverse) == [
        (0, 0), (3, 3), (5, 5)]
    assert symmetrize.grow_diag_final_and(forward, reverse) == [
        (0, 0), (3, 3), (5, 5)]


def test_final_and_needs_both_ends_unaligned():
    forward = [(0, 0), (1, 1)]
    reverse = [(0, 0), (1, 1), (3, 0), (1, 3)]
    # 3-0 and 1-3 have no aligned neighbour, so growing adds nothing.
    assert symmetrize.grow_diag(forward, reverse) == [(0, 0), (1, 1)]
    # final: each has one unaligned end (source 3, target 3): both added.
    assert symmetrize.grow_diag_final(forward, reverse) == [
        (0, 0), (1, 1), (1, 3), (3, 0)]
    # final-and: each also has an aligned end, so neither is added.
    assert symmetrize.grow_diag_final_and(forward, reverse) == [(0, 0), (1, 1)]


def test_order_of_growth_follows_atools():
    # Both 1-1 and 1-2 neighbour 0-1; 1-1 comes first in (i, j) order and
    # then 1-2 still qualifies because target 2 is unaligned.
    forward = [(0, 1), (1, 1)]
    reverse = [(0, 1), (1, 2)]
    assert symmetrize.grow_diag(forward, reverse) == [(0, 1), (1, 1), (1, 2)]


def test_dispatch_and_errors():
    for method in symmetrize.METHODS:
        assert symmetrize.symmetrize(FORWARD, REVERSE, method) == \
            symmetrize.METHODS[method](FORWARD, REVERSE)
    assert symmetrize.symmetrize([], []) == []
    with pytest.raises(ValueError, match="unknown symmetrization"):
        symmetrize.symmetrize(FORWARD, REVERSE, "grow")
    with pytest.raises(ValueError, match="mismatched number"):
        symmetrize.symmetrize_corpus([FORWARD], [])
    assert symmetrize.symmetrize_corpus([FORWARD], [REVERSE], "intersect") == [
        [(0, 0), (1, 1)]]
