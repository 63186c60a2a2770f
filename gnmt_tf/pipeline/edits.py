"""Replacing character ranges of a text while tracking where positions go.

Protection edits texts twice (entities become placeholder tokens in the
source, tokens become entities again in the translation, lost ones are
inserted) while markup positions computed on the unedited text must still
land on the edited one. `apply_edits` returns the new text and a monotone
position map, so markup projected in old coordinates stays well-nested.
"""

from typing import Callable, Sequence, Tuple

Edit = Tuple[int, int, str]  # replace text[start:end] by the string


def apply_edits(text: str, edits: Sequence[Edit]
                ) -> Tuple[str, Callable[[int], int]]:
    """`(new text, position map)`.

    Args:
      text: str.
      edits: `(start, end, replacement)`, non-overlapping (an insertion,
        `start == end`, may touch a neighbour).

    The map sends a position outside every edit to the same place in the new
    text, the end of an edit to the end of its replacement, and a position
    inside (or at the start of) an edit to the start of its replacement; it
    never decreases.

    Example:
      >>> new, where = apply_edits("pay 5 now", [(4, 5, "five")])
      >>> new, where(6)
      ('pay five now', 9)
    """
    edits = sorted(edits, key=lambda e: (e[0], e[1]))
    for (a0, b0, _), (a1, _, _) in zip(edits, edits[1:]):
        if a1 < b0:
            raise ValueError(f"overlapping edits at {a1}")
    pieces, last, length = [], 0, 0
    placed = []  # (old start, old end, new start, new end)
    for a, b, replacement in edits:
        if not 0 <= a <= b <= len(text):
            raise ValueError(f"edit ({a}, {b}) outside a text of "
                             f"{len(text)} characters")
        pieces.append(text[last:a])
        length += a - last
        placed.append((a, b, length, length + len(replacement)))
        pieces.append(replacement)
        length += len(replacement)
        last = b
    pieces.append(text[last:])

    def where(position: int) -> int:
        shift = 0
        for a, b, new_a, new_b in placed:  # few edits per sentence
            if position < a:
                break
            if position == a or position < b:
                return new_a
            shift = new_b - b
        return position + shift

    return "".join(pieces), where
