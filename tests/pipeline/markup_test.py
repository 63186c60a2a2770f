import random
import re

import pytest

from gnmt_tf.pipeline.markup import (MarkupError, count_elements, restore_markup,
                                     strip_markup)

_TAG = re.compile(r"<(/?)g(\d+)>|<x(\d+)/>")


def _well_nested(text):
    stack, seen = [], []
    for match in _TAG.finditer(text):
        closing, paired, empty = match.groups()
        if empty:
            seen.append(int(empty))
        elif not closing:
            stack.append(int(paired))
            seen.append(int(paired))
        elif not stack or stack.pop() != int(paired):
            return None
    return None if stack else sorted(seen)


def test_strip_markup_gives_plain_text_and_ranges():
    plain, tree = strip_markup("A <g1>big <g2>red</g2></g1> car<x3/>.")
    assert plain == "A big red car."
    assert [(e.number, e.start, e.end) for e in tree] == [(1, 2, 9),
                                                          (3, 13, 13)]
    assert (tree[0].children[0].start, tree[0].children[0].end) == (6, 9)
    assert count_elements(tree) == 3


@pytest.mark.parametrize("bad", ["<g1>a", "a</g1>", "<g1><g2>a</g1></g2>"])
def test_malformed_placeholders_raise(bad):
    with pytest.raises(MarkupError):
        strip_markup(bad)


def test_identity_projection_restores_the_segment_exactly():
    segment = "A <g1>big <g2>red</g2></g1> car<x3/>."
    plain, tree = strip_markup(segment)
    text, repairs = restore_markup(plain, tree, lambda a, b: (a, b),
                                   lambda p: p)
    assert (text, repairs) == (segment, 0)


def test_reordered_siblings_and_clipped_children():
    plain, tree = strip_markup("<g1>red</g1> <g2>car</g2>")
    # The translation swaps them: "car red".
    where = {(0, 3): (4, 7), (4, 7): (0, 3)}
    text, repairs = restore_markup("car red", tree,
                                   lambda a, b: where.get((a, b)),
                                   lambda p: p)
    assert (text, repairs) == ("<g2>car</g2> <g1>red</g1>", 0)
    # A child projected outside its parent is clipped into it.
    plain, tree = strip_markup("<g1>a <g2>b</g2></g1> c")
    where = {(0, 3): (0, 1), (2, 3): (4, 5)}
    text, repairs = restore_markup("A B C", tree,
                                   lambda a, b: where.get((a, b)), lambda p: p)
    assert _well_nested(text) == [1, 2]
    assert repairs == 1  # g2's text could not be placed inside g1


def test_unaligned_element_is_kept_empty_and_counted():
    plain, tree = strip_markup("x <g1>y</g1> z")
    text, repairs = restore_markup("X Y Z", tree, lambda a, b: None,
                                   lambda p: {2: 2}.get(p, 0))
    assert (text, repairs) == ("X <g1></g1>Y Z", 1)


def test_any_projection_gives_well_nested_output_with_every_element():
    rng = random.Random(0)
    segment = ("<g1>One <g2>two</g2> three</g1> <g3>four <x4/>five "
               "<g5>six <g6>seven</g6></g5></g3> eight<x7/>")
    plain, tree = strip_markup(segment)
    target = "uno dos tres cuatro cinco seis siete ocho"
    for _ in range(300):
        def project_range(a, b):
            if rng.random() < 0.2:
                return None
            x, y = sorted(rng.randint(0, len(target)) for _ in range(2))
            return x, y
        text, _ = restore_markup(target, tree, project_range,
                                 lambda p: rng.randint(0, len(target)))
        assert _well_nested(text) == [1, 2, 3, 4, 5, 6, 7]
        # The target's words, whitespace added at most (never in a word).
        plain = _TAG.sub("", text)
        assert "".join(plain.split()) == "".join(target.split())
        assert re.findall(r"\w+", plain) == re.findall(r"\w+", target)


@pytest.mark.parametrize("segment, target, point, expected", [
    # An empty element between words keeps a space on both sides.
    ("A man types <x1/> on a computer.", "Ein Mann tippt auf einem Computer.",
     15, "Ein Mann tippt <x1/> auf einem Computer."),
    ("A man types <x1/> on a computer.", "Ein Mann tippt auf einem Computer.",
     14, "Ein Mann tippt <x1/> auf einem Computer."),
    # Before punctuation: the space before it only, as in the source.
    ("Look at this <x1/>.", "Schau dir das an.", 16,
     "Schau dir das an <x1/>."),
    # No space in the source, none added; never inside a word.
    ("A computer<x1/>.", "Ein Computer.", 12, "Ein Computer<x1/>."),
    ("A man types <x1/> on it.", "Ein Mann tippt darauf.", 17,
     "Ein Mann tippt da<x1/>rauf."),
])
def test_whitespace_around_an_empty_element_is_kept(segment, target, point,
                                                     expected):
    _, tree = strip_markup(segment)
    text, repairs = restore_markup(target, tree, lambda a, b: None,
                                   lambda p: point)
    assert (text, repairs) == (expected, 0)


def test_whitespace_around_a_paired_element_is_kept():
    _, tree = strip_markup("A <g1>man</g1> types.")
    target = "Ein Mann tippt."
    for found, expected in [((4, 8), "Ein <g1>Mann</g1> tippt."),
                            ((4, 9), "Ein <g1>Mann </g1>tippt."),
                            ((3, 8), "Ein<g1> Mann</g1> tippt.")]:
        text, _ = restore_markup(target, tree, lambda a, b: found,
                                 lambda p: found[0])
        assert text == expected
    # Between two letters: no space, though the source had one there.
    text, _ = restore_markup("EinMann tippt.", tree, lambda a, b: (3, 7),
                             lambda p: 3)
    assert text == "Ein<g1>Mann</g1> tippt."
