import random

import pytest

from gnmt_tf.pipeline.edits import apply_edits


def test_replacements_and_insertions():
    new, where = apply_edits("pay 5 now", [(4, 5, "five"), (9, 9, "!")])
    assert new == "pay five now!"
    assert [where(p) for p in range(10)] == [0, 1, 2, 3, 4, 8, 9, 10, 11, 12]


def test_position_map_is_monotone_and_keeps_untouched_text():
    rng = random.Random(0)
    for _ in range(200):
        text = "".join(rng.choice("ab ") for _ in range(rng.randint(0, 12)))
        cuts = sorted(rng.sample(range(len(text) + 1),
                                 min(len(text) + 1, 2 * rng.randint(0, 3))))
        edits = [(cuts[k], cuts[k + 1], rng.choice(["", "X", "YYY"]))
                 for k in range(0, len(cuts) - 1, 2)]
        new, where = apply_edits(text, edits)
        positions = [where(p) for p in range(len(text) + 1)]
        assert positions == sorted(positions)
        assert where(len(text)) == len(new)
        inside = {p for a, b, _ in edits for p in range(a, b)}
        for p, char in enumerate(text):
            if p not in inside and not any(a == p for a, _, _ in edits):
                assert new[where(p)] == char


def test_overlapping_or_outside_edits_raise():
    with pytest.raises(ValueError, match="overlapping"):
        apply_edits("abcdef", [(0, 3, "x"), (2, 4, "y")])
    with pytest.raises(ValueError, match="outside"):
        apply_edits("abc", [(2, 5, "x")])
