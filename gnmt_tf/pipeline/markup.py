"""Inline markup around translation: take it out, put it back where aligned.

`gnmt_tf.pipeline.documents` turns inline HTML elements into XLIFF-like
placeholders (`<g1>text</g1>`, `<x2/>`). A model that never saw them in
training mangles them, so they do not reach it: `strip_markup` returns the
plain text and the elements as a tree of character ranges over it, and
after translation `restore_markup` puts each element around the target
words aligned with its source range (`gnmt_tf.pipeline.projection`; Hanneman and
Dinu 2020, "How should markup tags be translated?", found such projection
as good as teaching the model tags).

The output is always well-formed and keeps every element (a production
guarantee): projected ranges are made to nest like the source tree
(a child is clipped to its parent), siblings that the translation reorders
are reordered (the placeholders' order is free), and a sibling that
overlaps the one before it starts where that one ends. An element whose
range comes out empty (no word linked, or clipped away) is kept, empty,
at its projected position, and counted in `repairs`. Whitespace at an
element's edges in the source stays there in the output where the
translation has none ("types <x1/> on" never becomes "tippt <x1/>auf"),
without ever splitting a word.
"""

import dataclasses
import re
import unicodedata
from typing import Callable, List, Optional, Tuple

_TAG = re.compile(r"<(/?)g(\d+)>|<x(\d+)/>")


@dataclasses.dataclass
class Element:
    """One placeholder: `<gN>` (paired; `empty` False) or `<xN/>`, with its
    `[start, end)` range over the plain text and its nested elements."""

    number: int
    empty: bool
    start: int
    end: int = -1
    children: List["Element"] = dataclasses.field(default_factory=list)
    has_text: bool = False  # non-blank plain text inside
    space_before: bool = False  # whitespace just before it in the source
    space_after: bool = False  # and just after it


class MarkupError(ValueError):
    """Placeholders that do not nest (`<g1><g2></g1></g2>`)."""


def strip_markup(segment: str) -> Tuple[str, List[Element]]:
    """`(plain text, top-level elements)` of a segment with placeholders.

    Raises:
      MarkupError: unbalanced or crossing placeholders.

    Example:
      >>> text, tree = strip_markup("a <g1>b <x2/>c</g1>")
      >>> text, (tree[0].start, tree[0].end), tree[0].children[0].start
      ('a b c', (2, 5), 4)
    """
    plain, top, stack, position = [], [], [], 0
    length = 0
    for match in _TAG.finditer(segment):
        piece = segment[position:match.start()]
        plain.append(piece)
        length += len(piece)
        position = match.end()
        closing, paired, empty = match.groups()
        siblings = stack[-1].children if stack else top
        if empty:
            siblings.append(Element(int(empty), True, length, length))
        elif not closing:
            element = Element(int(paired), False, length)
            siblings.append(element)
            stack.append(element)
        else:
            if not stack or stack[-1].number != int(paired):
                raise MarkupError(f"unmatched {match.group(0)} in "
                                  f"{segment[:60]!r}")
            stack.pop().end = length
    if stack:
        raise MarkupError(f"unclosed <g{stack[-1].number}> in "
                          f"{segment[:60]!r}")
    plain.append(segment[position:])
    text = "".join(plain)

    def mark(elements: List[Element]) -> None:
        for element in elements:
            element.has_text = bool(text[element.start:element.end].strip())
            element.space_before = text[element.start - 1:element.start] \
                .isspace()
            element.space_after = text[element.end:element.end + 1] \
                .isspace()
            mark(element.children)

    mark(top)
    return text, top


def count_elements(elements: List[Element]) -> int:
    """The number of elements in a tree."""
    return sum(1 + count_elements(e.children) for e in elements)


Range = Tuple[int, int]


def _place(elements: List[Element], low: int, high: int,
           project_range: Callable[[int, int], Optional[Range]],
           project_point: Callable[[int], int],
           out: List[Tuple[Element, int, int]]) -> int:
    """Target ranges for `elements` (siblings) inside `[low, high]`, made
    to nest and not overlap; returns the number of emptied elements."""
    repairs = 0
    placed = []
    for element in elements:
        lost = False
        if element.empty or not element.has_text:
            point = project_point(element.start)
            target: Optional[Range] = (point, point)
        else:
            target = project_range(element.start, element.end)
            if target is None:
                lost = True
                point = project_point(element.start)
                target = (point, point)
        a, b = (min(max(target[0], low), high),
                min(max(target[1], low), high))
        placed.append((a, max(a, b), element, lost))
    placed.sort(key=lambda p: (p[0], p[2].start))
    previous = low
    for a, b, element, lost in placed:
        if a < previous:
            a = previous
            b = max(a, b)
        if lost or (element.has_text and b == a):
            repairs += 1
        out.append((element, a, b))
        repairs += _place(element.children, a, b, project_range,
                          project_point, out)
        previous = b
    return repairs


def restore_markup(target: str, elements: List[Element],
                   project_range: Callable[[int, int], Optional[Range]],
                   project_point: Callable[[int], int]) -> Tuple[str, int]:
    """`target` with every element put back as a placeholder.

    Args:
      target: str. The translation of the plain text.
      elements: the tree from `strip_markup`.
      project_range: `(start, end)` of the plain text -> target range, or
        None when nothing is aligned.
      project_point: plain-text position -> target position.

    Returns:
      `(text with placeholders, repairs)`: repairs counts elements whose
      content could not be placed (kept empty).
    """
    placed: List[Tuple[Element, int, int]] = []
    repairs = _place(elements, 0, len(target), project_range, project_point,
                     placed)
    where = {id(element): (a, b) for element, a, b in placed}
    order = {id(element): k for k, (element, _, _) in enumerate(placed)}
    events: List[_Tag] = []

    def emit(element: Element) -> None:
        a, b = where[id(element)]
        # An element whose text could not be placed keeps no spacing: the
        # spaces were around its text.
        spaced = element.empty or not element.has_text or b > a
        before = spaced and element.space_before
        after = spaced and element.space_after
        if element.empty:
            events.append(_Tag(a, f"<x{element.number}/>", before, after,
                               True))
            return
        events.append(_Tag(a, f"<g{element.number}>", before, False))
        for child in sorted(element.children, key=lambda c: order[id(c)]):
            emit(child)
        events.append(_Tag(b, f"</g{element.number}>", False, after))

    for element in sorted(elements, key=lambda e: order[id(e)]):
        emit(element)
    pieces, last, k = [], 0, 0
    while k < len(events):  # positions never decrease
        position = events[k].position
        group = []
        while k < len(events) and events[k].position == position:
            group.append(events[k])
            k += 1
        pieces += [target[last:position], _spaced(group, target, position)]
        last = position
    pieces.append(target[last:])
    return "".join(pieces), repairs


@dataclasses.dataclass(frozen=True)
class _Tag:
    """A placeholder at a target position, whether whitespace stood before
    and after its element in the source, and whether it is an `<xN/>`."""

    position: int
    text: str
    space_before: bool
    space_after: bool
    empty: bool = False


def _opens(character: str) -> bool:
    """An opening bracket or quote: it belongs to the word after it."""
    return unicodedata.category(character) in ("Ps", "Pi")


def _spaced(group: List[_Tag], target: str, position: int) -> str:
    """The placeholders at one target position, with a space added where
    the source had whitespace at an element's edge and the target has
    none between the element and the text beside it ("types
    <code>ls</code> on": the space after the code element is kept; for
    `<g1>` and `</g1>`, a space just inside the element counts). Never
    inside a word (between two letters or digits), after an opening
    bracket or quote, or before punctuation that ends a word (".", ",",
    ")")."""
    left = target[position - 1:position]
    right = target[position:position + 1]
    if left.isalnum() and right.isalnum():
        return "".join(tag.text for tag in group)
    # A space goes before the first tag that wants one before it, and after
    # the last that wants one after it (one space where the two meet).
    before = [i for i, tag in enumerate(group) if tag.space_before]
    after = [i for i, tag in enumerate(group) if tag.space_after]
    spaces = set()
    if before and left and not (left.isspace() or _opens(left)) and (
            group[before[0]].empty or not right.isspace()):
        spaces.add(before[0])
    if after and right and (right.isalnum() or _opens(right)) and (
            group[after[-1]].empty or not left.isspace()):
        spaces.add(after[-1] + 1)
    pieces = [(" " if i in spaces else "") + tag.text
              for i, tag in enumerate(group)]
    return "".join(pieces) + (" " if len(group) in spaces else "")
