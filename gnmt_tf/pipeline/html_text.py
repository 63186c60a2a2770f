"""Text lost in parsing HTML: found by a second, independent reading.

libxml2's lenient HTML parser (`gnmt_tf.pipeline.documents`) repairs what it can,
and some repairs drop text, such as elements nested deeper than its limit.
The translation would then come back shorter than the document, with at
most a "malformed HTML repaired" warning. `lost_text` reads the document
again without building a tree: comments and everything between `<` and
`>` taken out, character references resolved (`html.unescape`), and
checks that every letter and digit left is in what the parse kept (the
segments to translate and the untouched elements: `script`, `code`, ...).

The reading errs on the side of less text (a `<` in text hides what
follows it up to the next `>`), so it may miss a loss but never reports
one that did not happen. Only letters and digits are counted: punctuation
and whitespace differ between the two readings (`&nbsp;`, a stray `<` kept
or escaped) without any text being lost.
"""

import collections
import html
import re
from typing import Iterable, Optional, Tuple

# A comment (an unclosed one runs to the end, as in HTML5 and libxml2),
# then any tag, declaration or processing instruction.
_MARKUP = re.compile(r"<!--.*?(?:-->|\Z)|<[^>]*>", re.S)


_NOT_LETTERS = re.compile(r"[\W_]+")  # \w: letters, digits and _


def _letters(text: str) -> collections.Counter:
    return collections.Counter(_NOT_LETTERS.sub("", text))


def lost_text(document: str, kept: Iterable[str]
              ) -> Optional[Tuple[str, int]]:
    """What of `document`'s text is missing from `kept`, or None.

    Args:
      document: str. The HTML as parsed.
      kept: the texts the parse kept (placeholders taken out: their
        letters would stand in for lost ones).

    Returns:
      `(the first stretch of text not found whole, letters and digits
      missing in all)`, or None when nothing is missing.
    """
    chunks = [html.unescape(chunk) for chunk in _MARKUP.split(document)]
    available = _letters("".join(kept))
    missing = _letters("".join(chunks)) - available
    if not missing:
        return None
    first = ""
    for chunk in chunks:  # the first stretch that cannot be paid for
        need = _letters(chunk)
        if need - available:
            first = " ".join(chunk.split())
            break
        available -= need
    return first, sum(missing.values())
