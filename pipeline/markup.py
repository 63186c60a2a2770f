"""Inline markup around translation: take it out, put it back where aligned.

`pipeline.documents` turns inline HTML elements into XLIFF-like
placeholders (`<g1>text</g1>`, `<x2/>`). A model that never saw them in
training mangles them, so they do not reach it: `strip_markup` returns the
plain text and the elements as a tree of character ranges over it, and
after translation `restore_markup` puts each element around the target
words aligned with its source range (`pipeline.projection`; Hanneman and
Dinu 2020, "How should markup tags be translated?", found such projection
as good as teaching the model tags).

The output is always well-formed and keeps every element (a production
guarantee): projected ranges are made to nest like the source tree
(a child is clipped to its parent), siblings that the translation reorders
are reordered (the placeholders' order is free), and a sibling that
overlaps the one before it starts where that one ends. An element whose
range comes out empty (no word linked, or clipped away) is kept, empty,
at its projected position, and counted in `repairs`.
"""

import dataclasses
import re
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
    events: List[Tuple[int, str]] = []

    def emit(element: Element) -> None:
        a, b = where[id(element)]
        if element.empty:
            events.append((a, f"<x{element.number}/>"))
            return
        events.append((a, f"<g{element.number}>"))
        for child in sorted(element.children, key=lambda c: order[id(c)]):
            emit(child)
        events.append((b, f"</g{element.number}>"))

    for element in sorted(elements, key=lambda e: order[id(e)]):
        emit(element)
    pieces, last = [], 0
    for position, tag in events:  # positions never decrease
        pieces += [target[last:position], tag]
        last = position
    pieces.append(target[last:])
    return "".join(pieces), repairs
