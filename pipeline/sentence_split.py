"""Splitting a paragraph into sentences for translation requests.

Boundaries come from sentencex (Wikimedia's rule-based segmenter: per-language
abbreviation lists for about 300 languages, falling back to related languages
and then English). On top of it, a boundary after a period is dropped when the
next sentence would start with a lower-case letter ("Wir kamen bzw. gingen.",
whatever the language given), or when the word before the period is

- a single letter ("J. Smith", French "M. Dupont"),
- a number ("am 3. Juli", "Nr. 5"),
- dotted ("p.m.", "z.B.", "U.S."), or
- in `EXTRA_ABBREVIATIONS` for the language: gaps of sentencex 1.0.32's lists
  that tests found (French titles such as "Mme.", "Dr.", German "Abs.",
  "inkl.", Czech "popř.", ...).

Limits: this is rule-based. It prefers missing a boundary to inventing one, so
a sentence that really ends in a number, a single letter or a dotted
abbreviation ("It was 1999. Then ...", "in the U.S. It ...") is not split
there, and neither is one that ends in an abbreviation such as "etc." or
"usw." before a capitalised word. An ellipsis ("...", "…") followed by a
capital is left to sentencex (it usually does not split). Unknown language
codes fall back to sentencex's defaults (English rules). Text without spaces
after the period ("end.Next") may be split by sentencex.
"""

from typing import Dict, FrozenSet, List

import sentencex

DEFAULT_LANGUAGE = "en"

# Abbreviations (lower case, without the final period) that sentencex 1.0.32
# ends a sentence after, though they rarely end one; found by probing
# "<abbr>. <Capitalised word>" per language.
EXTRA_ABBREVIATIONS: Dict[str, FrozenSet[str]] = {
    "cs": frozenset({"mj", "popř", "pí"}),
    "de": frozenset({"abs", "bd", "bspw", "geb", "gest", "inkl", "jh", "tel",
                     "zzgl"}),
    "en": frozenset({"approx", "ms"}),
    "fr": frozenset({"dr", "m", "me", "mgr", "mlle", "mm", "mme", "n°", "no",
                     "st", "ste"}),
}
_OPENING = "\"'([{«„“‘"


def _ends_in_abbreviation(piece: str, language: str) -> bool:
    """Whether `piece` (a sentencex segment) ends in a period that belongs to
    a single letter, a number, a dotted or a listed abbreviation."""
    words = piece.split()
    if not words or not words[-1].endswith("."):
        return False
    last = words[-1].rstrip(".").lstrip(_OPENING)
    return (len(last) == 1 or last.isdigit() or "." in last
            or last.lower() in EXTRA_ABBREVIATIONS.get(language, ()))


def _starts_lower_case(piece: str) -> bool:
    """Whether the first letter-like character of `piece` is lower case."""
    start = piece.lstrip().lstrip(_OPENING)
    return bool(start) and start[0].islower()


def _no_boundary(before: str, after: str, language: str) -> bool:
    """Whether the sentencex boundary between `before` and `after` is one
    of the known wrong ones (see the module docstring)."""
    if not before.rstrip().endswith("."):
        return False
    return _ends_in_abbreviation(before, language) or _starts_lower_case(after)


def split_sentences(text: str, language: str = DEFAULT_LANGUAGE) -> List[str]:
    """Splits one paragraph into whitespace-trimmed sentences.

    Args:
      text: str. One paragraph (newlines are treated as spaces).
      language: str. ISO 639 code of the text ("en", "de", "fr", "cs", ...);
        it selects the abbreviation lists.

    Returns:
      The sentences, in order; [] for blank text.

    Example:
      >>> split_sentences("Das Haus Nr. 5 ist rot. Wir kamen bzw. gingen.",
      ...                 "de")
      ['Das Haus Nr. 5 ist rot.', 'Wir kamen bzw. gingen.']
    """
    language = (language or DEFAULT_LANGUAGE).lower()
    pieces = list(sentencex.segment(language, text))
    sentences, pending = [], ""
    for i, piece in enumerate(pieces):
        pending += piece  # segments concatenate back to the exact text
        following = pieces[i + 1] if i + 1 < len(pieces) else ""
        if following and _no_boundary(pending, following, language):
            continue
        if pending.strip():
            sentences.append(pending.strip())
        pending = ""
    return sentences


def split_document(text: str,
                   language: str = DEFAULT_LANGUAGE) -> List[List[str]]:
    """Paragraphs (separated by newlines) of sentences; empty lines kept as []."""
    return [split_sentences(line, language) for line in text.split("\n")]
