"""Splitting a paragraph into sentences for translation requests.

Boundaries come from sentencex (Wikimedia's rule-based segmenter: per-language
abbreviation lists for about 300 languages, falling back to related languages
and then English). On top of it, a boundary after a period is dropped when the
next sentence would start with a lower-case letter ("Wir kamen bzw. gingen.",
whatever the language given), or when the word before the period is

- a single letter ("J. Smith", French "M. Dupont"),
- a number ("am 3. Juli", "Nr. 5"), unless what follows starts a sentence
  (`_starts_sentence_after_number`: any capital in English and French,
  which write no ordinals with a period; an article, pronoun or numeral in
  German; never in Czech),
- dotted ("p.m.", "z.B.", "U.S."), or
- in `EXTRA_ABBREVIATIONS` for the language: gaps of sentencex 1.0.32's lists
  that tests found (French titles such as "Mme.", "Dr.", German "Abs.",
  "inkl.", Czech "popř.", ...).

sentencex 1.0.32 never splits before a sentence that starts with a digit in
German, French or Czech ("... Dschungellandschaft. 2 blonde Mädchen ...");
a boundary is added there when the word before the period is an ordinary
word of two letters or more that is not an abbreviation that precedes
numbers (`NUMBER_ABBREVIATIONS`, of any language: "Nr. 5", "ca. 5",
"č. 5"; single letters such as "S. 10" never split).

Limits: this is rule-based. It prefers missing a boundary to inventing one, so
a sentence that really ends in a single letter or a dotted abbreviation
("in the U.S. It ..."), or in a number in German or Czech before a word
that may follow an ordinal ("Es war 1999. Karl kam."), is not split
there, and neither is one that ends in an abbreviation such as "etc." or
"usw." before a capitalised word. An ellipsis ("...", "…") followed by a
capital is left to sentencex (it usually does not split). Unknown language
codes fall back to sentencex's defaults (English rules). Text without spaces
after the period ("end.Next") may be split by sentencex.
"""

import re
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
# Abbreviations (lower case, no period) that stand before a number, so a
# period after them followed by a digit is no sentence end.
NUMBER_ABBREVIATIONS: Dict[str, FrozenSet[str]] = {
    "cs": frozenset({"č", "čl", "odst", "str", "tel", "kap", "obr", "tab",
                     "cca", "max", "min", "písm", "sb", "ul", "tzv", "mj"}),
    "de": frozenset({"nr", "str", "abs", "bd", "kap", "art", "abb", "tab",
                     "ca", "tel", "jh", "hs", "vgl", "ziff", "fax", "max",
                     "min", "mio", "mrd", "bzw", "inkl", "zzgl", "bspw",
                     "ggf", "evtl", "sog", "rd", "nrn"}),
    "en": frozenset({"no", "nos", "vol", "fig", "ch", "sec", "art", "tel",
                     "approx", "ca", "st", "pp", "ed", "op", "max", "min"}),
    "fr": frozenset({"n°", "no", "art", "chap", "fig", "tél", "tel", "vol",
                     "env", "bd", "av", "max", "min", "nos", "éd", "p",
                     "pp"}),
}
# Every language's: "Nr. 5" is no boundary in an English sentence either.
_ANY_NUMBER_ABBREVIATION = frozenset().union(*NUMBER_ABBREVIATIONS.values())
_OPENING = "\"'([{«„“‘"
# "<word>. <digit>": where sentencex leaves a sentence start unsplit.
_PERIOD_BEFORE_DIGIT = re.compile(r"(?<=\w\.)\s+(?=[0-9])")
# "<number>. <Word>": English and French write no ordinals with a period,
# so a capital after a number's period starts a sentence; German writes
# ordinals so ("am 3. Juli"): only words that cannot follow an ordinal
# (articles, pronouns, numerals) start one. Czech ordinals are as German
# ones and take no articles: no boundary is added there.
_NUMBER_PERIOD = re.compile(r"(?<=[0-9]\.)\s+(?=(\w+))")
SENTENCE_STARTERS_AFTER_NUMBERS: Dict[str, FrozenSet[str]] = {
    "de": frozenset({"ein", "eine", "einer", "der", "die", "das", "den",
                     "dem", "zwei", "drei", "vier", "fünf", "sechs", "es",
                     "er", "sie", "wir", "ich", "ihr", "man", "dann",
                     "danach", "dies", "diese", "dieser", "mehrere",
                     "viele", "einige"}),
}


def _ends_in_abbreviation(piece: str, language: str) -> bool:
    """Whether `piece` (a sentencex segment) ends in a period that belongs to
    a single letter, a number, a dotted or a listed abbreviation."""
    words = piece.split()
    if not words or not words[-1].endswith("."):
        return False
    last = words[-1].rstrip(".").lstrip(_OPENING)
    return (len(last) == 1 or last.isdigit() or "." in last
            or last.lower() in EXTRA_ABBREVIATIONS.get(language, ()))


def _split_before_numbers(piece: str, language: str) -> List[str]:
    """`piece` cut after "<word>. " before a digit where <word> is an
    ordinary word (see the module docstring); the parts concatenate back
    to `piece`."""
    parts, start = [], 0
    for match in _PERIOD_BEFORE_DIGIT.finditer(piece):
        words = piece[start:match.start()].split()
        word = words[-1].rstrip(".").lstrip(_OPENING) if words else ""
        if (len(word) >= 2 and word.isalpha()
                and word.lower() not in _ANY_NUMBER_ABBREVIATION
                and word.lower() not in EXTRA_ABBREVIATIONS.get(language, ())):
            parts.append(piece[start:match.end()])
            start = match.end()
    return parts + [piece[start:]]


def _starts_sentence_after_number(word: str, language: str) -> bool:
    """Whether `word`, after "<number>. ", starts a sentence."""
    word = word.lstrip(_OPENING)
    if not word[:1].isupper():
        return False
    if language in ("en", "fr"):
        return True
    return word.lower() in SENTENCE_STARTERS_AFTER_NUMBERS.get(language, ())


def _split_after_numbers(piece: str, language: str) -> List[str]:
    """`piece` cut after "<number>. " where a sentence starts (see
    `_NUMBER_PERIOD`); the parts concatenate back to `piece`."""
    parts, start = [], 0
    for match in _NUMBER_PERIOD.finditer(piece):
        if not _starts_sentence_after_number(match.group(1), language):
            continue
        parts.append(piece[start:match.end()])
        start = match.end()
    return parts + [piece[start:]]


def _starts_lower_case(piece: str) -> bool:
    """Whether the first letter-like character of `piece` is lower case."""
    start = piece.lstrip().lstrip(_OPENING)
    return bool(start) and start[0].islower()


def _no_boundary(before: str, after: str, language: str) -> bool:
    """Whether the sentencex boundary between `before` and `after` is one
    of the known wrong ones (see the module docstring)."""
    if not before.rstrip().endswith("."):
        return False
    words = before.split()
    if (words and words[-1].rstrip(".").isdigit() and after.split()
            and _starts_sentence_after_number(after.split()[0], language)):
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
    pieces = [part for piece in sentencex.segment(language, text)
              for cut in _split_before_numbers(piece, language)
              for part in _split_after_numbers(cut, language)]
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
