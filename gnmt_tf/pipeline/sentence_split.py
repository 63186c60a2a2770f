"""Splitting a paragraph into sentences for translation requests.

Boundaries come from sentencex (Wikimedia's rule-based segmenter: per-language
abbreviation lists for about 300 languages, falling back to related languages
and then English; Czech runs with its Slovak rules). sentencex 1.0.32 can be
configured only by its language code, so what it gets wrong is mended here.

A boundary after a period is dropped when the next sentence would start with
a lower-case letter ("Wir kamen bzw. gingen.", whatever the language given;
sentencex itself keeps an ASCII lower-case letter after a period in the
sentence; after an opening bracket or quote it is left to sentencex, which
splits there in English and French but not in German or Czech), or when the
word before the period is

- a single letter ("J. Smith", French "M. Dupont"),
- a number ("am 3. Juli", "Nr. 5"), unless what follows starts a sentence
  (`_starts_sentence_after_number`: any capital in English, French and
  Czech; an article, pronoun or numeral in German),
- a dotted abbreviation of short letter groups ("p.m.", "z.B.", "U.S.",
  "n.Chr."; not "2.52", "avrovulcan.com" or "C.D's"), or
- in `EXTRA_ABBREVIATIONS` for the language: gaps of sentencex 1.0.32's lists
  that tests found (French titles such as "Mme.", "Dr.", German "Abs.",
  "inkl.", Czech "popř.", ...).

Boundaries are added where sentencex misses them:

- before a sentence that starts with a digit ("... Dschungellandschaft. 2
  blonde Mädchen ..."; sentencex never splits there in German, French or
  Czech), when the word before the period is an ordinary word of two
  letters or more that is not an abbreviation that precedes numbers
  (`NUMBER_ABBREVIATIONS`, of any language: "Nr. 5", "ca. 5", "č. 5";
  single letters such as "S. 10" never split);
- after a number's period where a sentence starts (see above; sentencex
  splits there, but the number rule would take it back);
- before a capitalised word after one of `ORDINARY_WORDS`: words that
  sentencex's lists hold as abbreviations but are ordinary words of the
  language ("wall art. A woman", "auf dem Bart. Ein Mann", "au vol. Un
  homme", "mnoha kol. Stará žena").

Limits: this is rule-based. It prefers missing a boundary to inventing one, so
a sentence that really ends in a single letter or a dotted abbreviation
("in the U.S. It ..."), or in a number in German before a word that may
follow an ordinal ("Es war 1999. Karl kam."), is not split there, and
neither is one that ends in an abbreviation such as "etc." or "usw." (or an
ambiguous one such as "St.", Saint or Street) before a capitalised word. A
sentence that starts with a lower-case letter ("... ulicí. žena se směje.")
is taken as the same sentence going on. An ellipsis ("...", "…") followed
by a capital is left to sentencex (it usually does not split). Unknown
language codes fall back to sentencex's defaults (English rules). Text
without spaces after the period ("end.Next") may be split by sentencex.
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
# Words that sentencex 1.0.32's lists hold as abbreviations (matched in any
# case: "art." for article, "vol." for volume, "Bart." for baronet, Slovak
# "kol." and "hod." in its Czech rules) but that are ordinary words of the
# language, which often end a sentence. sentencex cannot be told to drop
# list entries, hence this list: its words, sentencex's abbreviations met as
# ordinary words in Multi30k train captions, reviewed by hand (names and
# acronyms such as "LA", "Penn" or "OP" left out, and Czech "nám", also the
# abbreviation of "náměstí" before a street name). After one of them, a
# period before a capitalised word ends the sentence; before a digit or a
# lower-case word it stays an abbreviation's ("Art. 5", "vol. 2").
ORDINARY_WORDS: Dict[str, FrozenSet[str]] = {
    "cs": frozenset({"co", "hod", "kol", "pod", "tu"}),
    "de": frozenset({"art", "bart", "mag", "mich"}),
    "en": frozenset({"art", "fed", "may", "me", "no", "ref"}),
    "fr": frozenset({"art", "sec", "vol"}),
}
# Every language's: "Nr. 5" is no boundary in an English sentence either.
_ANY_NUMBER_ABBREVIATION = frozenset().union(*NUMBER_ABBREVIATIONS.values())
_OPENING = "\"'([{«„“‘"
# The space after a period, and the word after it.
_AFTER_PERIOD = re.compile(r"(?<=\.)\s+(?=(\S+))")
# "<number>. <Word>": English and French write no ordinals with a period,
# so a capital after a number's period starts a sentence. Czech writes
# ordinals so ("10. května") but capitalises only names and sentence
# starts, so a capital after one starts a sentence there too (a name after
# an ordinal, "1. FC Brno", is taken as one). German capitalises every noun
# ("am 3. Juli", "die 2. Klasse"): only words that cannot follow an ordinal
# (articles, pronouns, numerals) start one.
_CAPITAL_AFTER_NUMBER_STARTS = frozenset({"cs", "en", "fr"})
SENTENCE_STARTERS_AFTER_NUMBERS: Dict[str, FrozenSet[str]] = {
    "de": frozenset({"ein", "eine", "einer", "der", "die", "das", "den",
                     "dem", "zwei", "drei", "vier", "fünf", "sechs", "es",
                     "er", "sie", "wir", "ich", "ihr", "man", "dann",
                     "danach", "dies", "diese", "dieser", "mehrere",
                     "viele", "einige"}),
}


def _is_dotted_abbreviation(word: str) -> bool:
    """Whether `word` (its final period removed) is letter groups of one to
    three letters joined by periods ("p.m", "z.B", "Ph.D", "n.Chr"), not a
    decimal, a domain or "C.D's"."""
    parts = word.split(".")
    return len(parts) > 1 and all(
        part.isalpha() and len(part) <= 3 for part in parts)


def _ends_in_abbreviation(piece: str, language: str) -> bool:
    """Whether `piece` (a sentencex segment) ends in a period that belongs to
    a single letter, a number, a dotted or a listed abbreviation."""
    words = piece.split()
    if not words or not words[-1].endswith("."):
        return False
    last = words[-1].rstrip(".").lstrip(_OPENING)
    return ((len(last) == 1 and last.isalpha()) or last.isdigit()
            or _is_dotted_abbreviation(last)
            or last.lower() in EXTRA_ABBREVIATIONS.get(language, ()))


def _starts_sentence_after_number(word: str, language: str) -> bool:
    """Whether `word`, after "<number>. ", starts a sentence."""
    word = word.lstrip(_OPENING)
    if not word[:1].isupper():
        return False
    if language in _CAPITAL_AFTER_NUMBER_STARTS:
        return True
    return word.lower() in SENTENCE_STARTERS_AFTER_NUMBERS.get(language, ())


def _starts_sentence(word: str, following: str, language: str) -> bool:
    """Whether a sentence starts at `following` after "`word`. ", where
    sentencex may not split (see the module docstring)."""
    word = word.rstrip(".").lstrip(_OPENING)
    if word.isdigit():
        return _starts_sentence_after_number(following, language)
    if following[:1].isdigit():
        return (len(word) >= 2 and word.isalpha()
                and word.lower() not in _ANY_NUMBER_ABBREVIATION
                and word.lower() not in EXTRA_ABBREVIATIONS.get(language, ()))
    return (word.lower() in ORDINARY_WORDS.get(language, ())
            and following.lstrip(_OPENING)[:1].isupper())


def _split_where_sentences_start(piece: str, language: str) -> List[str]:
    """`piece` (a sentencex segment) cut after each "<word>. " where
    `_starts_sentence`; the parts concatenate back to `piece`."""
    parts, start = [], 0
    for match in _AFTER_PERIOD.finditer(piece):
        words = piece[start:match.start()].split()
        if words and _starts_sentence(words[-1], match.group(1), language):
            parts.append(piece[start:match.end()])
            start = match.end()
    return parts + [piece[start:]]


def _starts_lower_case(piece: str) -> bool:
    """Whether `piece` starts with a lower-case letter. One after an opening
    bracket or quote ("(wind surfing ...) Une personne") is left to
    sentencex: a parenthesis or quotation may start in lower case, while a
    lower-case word right after a period is the mark of an abbreviation."""
    start = piece.lstrip()
    return bool(start) and start[0].islower()


def _no_boundary(before: str, after: str, language: str) -> bool:
    """Whether the sentencex boundary between `before` and `after` is one
    of the known wrong ones (see the module docstring)."""
    if not before.rstrip().endswith("."):
        return False
    words, following = before.split(), after.split()
    if not words or not following:
        return False
    last = words[-1].rstrip(".").lstrip(_OPENING)
    if last.isdigit() and _starts_sentence_after_number(following[0],
                                                       language):
        return False
    # sentencex splits "vol. 2." at the end of a paragraph.
    if last.lower() in _ANY_NUMBER_ABBREVIATION and following[0][0].isdigit():
        return True
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
              for part in _split_where_sentences_start(piece, language)]
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
