"""Typed placeholders for key information: mask before, restore after MT.

Numbers, dates, times, money amounts, URLs, e-mail addresses, names and
glossary terms are replaced by typed tokens such as `⟦NUM⟧` so that the model
copies them instead of translating them (Ctrip MT platform, 2020). The same
type may occur several times, so `mask` returns the ordered entities and
`restore` needs a mapping from each placeholder occurrence in the output to a
source entity: from an alignment (`mapping_from_alignment`) or, without one,
left to right per type (`default_mapping`).

`PLACEHOLDER_TOKENS` lists every token; declare them as SentencePiece
`user_defined_symbols` so that they are never split.

Example:

    >>> masker = Masker()
    >>> text, entities = masker.mask("Call 555 before 10:30 on 2024-05-01.")
    >>> text
    'Call ⟦NUM⟧ before ⟦TIME⟧ on ⟦DATE⟧.'
    >>> restore("Rufen Sie ⟦NUM⟧ am ⟦DATE⟧ vor ⟦TIME⟧ an.", entities)
    'Rufen Sie 555 am 2024-05-01 vor 10:30 an.'
"""

import re
from typing import (Callable, Iterable, List, NamedTuple, Optional, Sequence,
                    Tuple)

from gnmt_tf.pipeline.glossary import Glossary, TermMatcher

Link = Tuple[int, int]

PLACEHOLDER_TYPES = ("NUM", "DATE", "TIME", "MONEY", "URL", "EMAIL",
                     "PERSON", "ORG", "NAME", "TERM")


def placeholder(entity_type: str) -> str:
    """The placeholder token of a type, e.g. `⟦NUM⟧`."""
    return f"\u27e6{entity_type}\u27e7"


PLACEHOLDER_TOKENS = tuple(placeholder(t) for t in PLACEHOLDER_TYPES)
_TOKEN_TYPE = {placeholder(t): t for t in PLACEHOLDER_TYPES}
_PLACEHOLDER = re.compile("|".join(re.escape(t) for t in PLACEHOLDER_TOKENS))


class Entity(NamedTuple):
    """One masked span: type, original text, `(start, end)` character span,
    and the glossary translation to restore instead of `text` (or None)."""
    type: str
    text: str
    span: Tuple[int, int]
    target: Optional[str] = None

    @property
    def token(self) -> str:
        return placeholder(self.type)

    @property
    def replacement(self) -> str:
        return self.text if self.target is None else self.target


# --- Detectors ---------------------------------------------------------------

_NUM = r"[+-]?\d+(?:[.,\u00a0\u202f]\d{3})*(?:[.,]\d+)?"
_MONTHS = (
    "January|February|March|April|May|June|July|August|September|October|"
    "November|December|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec|"
    "Januar|Jänner|Februar|März|Mai|Juni|Juli|Oktober|Dezember|"
    "janvier|février|mars|avril|mai|juin|juillet|août|septembre|octobre|"
    "novembre|décembre")
_DAY = r"\d{1,2}(?:st|nd|rd|th|\.|er)?"
_DATE = (
    r"\d{4}-\d{1,2}-\d{1,2}"
    r"|\d{1,2}[./]\d{1,2}[./]\d{2,4}"
    rf"|(?:{_DAY}\s+)?(?:{_MONTHS})\.?\s+{_DAY},?\s+\d{{4}}"
    rf"|{_DAY}\s+(?:{_MONTHS})\.?(?:,?\s+\d{{4}})?"
    rf"|(?:{_MONTHS})\.?\s+(?:{_DAY}|\d{{4}})")
_TIME = (r"\d{1,2}:\d{2}(?::\d{2})?(?:\s?[ap]\.?m\.?)?"
         r"|\d{1,2}\s?[ap]\.m\.|\d{1,2}\s?[ap]m"
         r"|\d{1,2}(?:[.:]\d{2})?\s?Uhr|\d{1,2}h\d{2}")
_CURRENCY_SIGN = r"[$€£¥₹]|US\$|R\$"
_CURRENCY_CODE = r"USD|EUR|GBP|CHF|JPY|CNY|RMB|CAD|AUD|HKD|CZK"
_CURRENCY_WORD = r"dollars?|euros?|Euro|Dollar|pounds?|yuan|Kč"
_SCALE = r"(?:\s?(?:million|billion|Millionen|Milliarden|Mio\.|Mrd\.|bn|m|k))?"
_MONEY = (
    rf"(?:{_CURRENCY_SIGN})\s?{_NUM}{_SCALE}"
    rf"|(?:{_CURRENCY_CODE})\s?{_NUM}{_SCALE}"
    rf"|{_NUM}{_SCALE}\s?"
    rf"(?:{_CURRENCY_SIGN}|{_CURRENCY_CODE}|{_CURRENCY_WORD})")
_URL = r"(?:https?://|ftp://|www\.)[^\s<>\"']+[^\s<>\"'.,;:!?)\]}]"
_EMAIL = r"[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[A-Za-z]{2,}"


def _bounded(pattern: str) -> "re.Pattern":
    # Neither a word character nor a decimal point may touch the match, and
    # "COVID-19" is a name, not a number.
    return re.compile(rf"(?<![\w.])(?<![^\W\d_]-)(?:{pattern})(?!\w)")


_REGEXES = {
    "URL": re.compile(_URL),
    "EMAIL": _bounded(_EMAIL),
    "MONEY": re.compile(rf"(?<![\w.])(?:{_MONEY})(?!\w)"),
    "DATE": _bounded(_DATE),
    "TIME": _bounded(_TIME),
    "NUM": _bounded(_NUM),
}
_WORD = re.compile(r"\w+(?:['’-]\w+)*")
_SENTENCE_END = re.compile(r"[.!?:;\"“”«»]")


class Masker:
    """Detects key information in raw text and replaces it with placeholders.

    Detectors run in priority order (URL, EMAIL, TERM, MONEY, DATE, TIME,
    NUM, PERSON/ORG lists, NAME heuristic); a later detector never takes
    characters an earlier one took.

    Args:
        types: iterable of str or None. Entity types to mask (default: all).
        glossary: `Glossary` or mapping source term -> target term, or None.
            Matches are TERM entities restored as the target term.
        persons: iterable of str. Known person names (PERSON).
        organizations: iterable of str. Known organisation names (ORG).
        capitalized_names: bool. Mask runs of capitalised words that do not
            start a sentence as NAME. Useful for English and French; turn it
            off for German, where every noun is capitalised.
        case_sensitive_names: bool. Match `persons`/`organizations` exactly.
    """

    def __init__(self, types: Optional[Iterable[str]] = None,
                 glossary=None, persons: Iterable[str] = (),
                 organizations: Iterable[str] = (),
                 capitalized_names: bool = True,
                 case_sensitive_names: bool = True):
        self.types = set(PLACEHOLDER_TYPES if types is None else types)
        unknown = self.types - set(PLACEHOLDER_TYPES)
        if unknown:
            raise ValueError(f"unknown placeholder types {sorted(unknown)}; "
                             f"known: {', '.join(PLACEHOLDER_TYPES)}")
        if glossary is not None and not isinstance(glossary, Glossary):
            glossary = Glossary(glossary)
        self.glossary = glossary
        self._persons = TermMatcher(persons, case_sensitive_names)
        self._organizations = TermMatcher(organizations, case_sensitive_names)
        self.capitalized_names = capitalized_names

    def _detectors(self) -> List[Tuple[str, Callable]]:
        def regex(name):
            return lambda text: [(m.start(), m.end(), None)
                                 for m in _REGEXES[name].finditer(text)]

        def terms(matcher):
            return lambda text: [(m.start, m.end, m.target)
                                 for m in matcher.find(text)]

        detectors = [("URL", regex("URL")), ("EMAIL", regex("EMAIL"))]
        if self.glossary is not None:
            detectors.append(("TERM", terms(self.glossary)))
        detectors += [(name, regex(name)) for name in
                      ("MONEY", "DATE", "TIME", "NUM")]
        detectors += [("PERSON", terms(self._persons)),
                      ("ORG", terms(self._organizations))]
        if self.capitalized_names:
            detectors.append(("NAME", _capitalized_runs))
        return [(name, find) for name, find in detectors if name in self.types]

    def detect(self, text: str) -> List[Entity]:
        """Entities in `text`, non-overlapping, ordered by position."""
        taken = [False] * len(text)
        entities = []
        for name, find in self._detectors():
            # Longest first, so that a short match cannot block a long one.
            for start, end, target in sorted(find(text),
                                             key=lambda m: (m[0] - m[1], m[0])):
                if end > start and not any(taken[start:end]):
                    taken[start:end] = [True] * (end - start)
                    entities.append(Entity(name, text[start:end], (start, end),
                                           target))
        return sorted(entities, key=lambda e: e.span)

    def mask(self, text: str) -> Tuple[str, List[Entity]]:
        """Returns the masked text and its entities, left to right."""
        entities = self.detect(text)
        pieces, last = [], 0
        for entity in entities:
            pieces += [text[last:entity.span[0]], entity.token]
            last = entity.span[1]
        pieces.append(text[last:])
        return "".join(pieces), entities


def _capitalized_runs(text: str) -> List[Tuple[int, int, None]]:
    """Spans of consecutive capitalised words, without sentence-initial ones."""
    runs, current, previous_end = [], [], 0
    for word in _WORD.finditer(text):
        gap = text[previous_end:word.start()]
        starts_sentence = previous_end == 0 or bool(_SENTENCE_END.search(gap))
        capital = word.group()[0].isupper() and word.group() != "I"
        joined = current and gap in (" ", "\u00a0")
        if capital and joined:
            current.append(word)
        else:
            if current:
                runs.append(current)
            current = [word] if capital else []
            if capital and starts_sentence:
                current = [None, word]  # None marks a sentence-initial word
        previous_end = word.end()
    if current:
        runs.append(current)
    spans = []
    for run in runs:
        if run[0] is None:
            run = run[2:]  # drop the sentence-initial word
        if run:
            spans.append((run[0].start(), run[-1].end(), None))
    return spans


_DEFAULT_MASKER = None


def mask(text: str, **kwargs) -> Tuple[str, List[Entity]]:
    """`Masker(**kwargs).mask(text)`."""
    global _DEFAULT_MASKER
    if kwargs:
        return Masker(**kwargs).mask(text)
    if _DEFAULT_MASKER is None:
        _DEFAULT_MASKER = Masker()
    return _DEFAULT_MASKER.mask(text)


# --- Restoring ---------------------------------------------------------------

def placeholder_occurrences(text: str) -> List[Tuple[str, Tuple[int, int]]]:
    """`(type, span)` of every placeholder token in `text`, left to right."""
    return [(_TOKEN_TYPE[m.group()], m.span())
            for m in _PLACEHOLDER.finditer(text)]


def default_mapping(translation: str, entities: Sequence[Entity]
                    ) -> List[Optional[int]]:
    """Maps the k-th placeholder of each type to the k-th entity of that type.

    Occurrences beyond the number of source entities of their type map to
    None (dropped by `restore`).
    """
    queues = {}
    for index, entity in enumerate(entities):
        queues.setdefault(entity.type, []).append(index)
    mapping = []
    for entity_type, _ in placeholder_occurrences(translation):
        queue = queues.get(entity_type)
        mapping.append(queue.pop(0) if queue else None)
    return mapping


def mapping_from_alignment(source_tokens: Sequence[str],
                           target_tokens: Sequence[str],
                           links: Iterable[Link]) -> List[Optional[int]]:
    """Maps target placeholders to source entities through word alignment.

    Args:
        source_tokens: tokens of the masked source; its k-th placeholder
            token is entity k.
        target_tokens: tokens of the translation.
        links: `(source_index, target_index)` pairs, e.g. from the alignment
            head or fast_align.

    Each target placeholder takes an unused source placeholder it is linked
    to, preferring one of the same type; unlinked ones fall back to the next
    unused source entity of the same type, else None.
    """
    source_entity = {}
    for i, token in enumerate(source_tokens):
        if token in _TOKEN_TYPE:
            source_entity[i] = (len(source_entity), _TOKEN_TYPE[token])
    linked = {}
    for i, j in links:
        if i in source_entity:
            linked.setdefault(j, []).append(i)
    used, mapping = set(), []
    for j, token in enumerate(target_tokens):
        if token not in _TOKEN_TYPE:
            continue
        entity_type = _TOKEN_TYPE[token]
        candidates = sorted(linked.get(j, ()), key=lambda i: (
            source_entity[i][1] != entity_type, i))
        choice = next((source_entity[i][0] for i in candidates
                       if source_entity[i][0] not in used), None)
        if choice is None:
            choice = next((k for k, t in sorted(source_entity.values())
                           if t == entity_type and k not in used), None)
        if choice is not None:
            used.add(choice)
        mapping.append(choice)
    return mapping


def restore(translation: str, entities: Sequence[Entity],
            mapping: Optional[Sequence[Optional[int]]] = None) -> str:
    """Replaces placeholder tokens in a translation by the source entities.

    Args:
        translation: str. Model output containing placeholder tokens.
        entities: entities returned by `Masker.mask` for the source.
        mapping: for each placeholder occurrence in `translation`, left to
            right, the index of its source entity, or None to drop it.
            Default: `default_mapping`.

    Glossary terms come back as their target term, everything else as the
    original text.
    """
    occurrences = placeholder_occurrences(translation)
    if mapping is None:
        mapping = default_mapping(translation, entities)
    if len(mapping) != len(occurrences):
        raise ValueError(f"mapping has {len(mapping)} entries but the "
                         f"translation has {len(occurrences)} placeholders")
    pieces, last = [], 0
    for (_, (start, end)), index in zip(occurrences, mapping):
        before = translation[last:start]
        if index is None:
            if before.endswith(" ") and translation[end:end + 1] in (" ", ""):
                before = before[:-1]
            pieces.append(before)
        else:
            if not 0 <= index < len(entities):
                raise ValueError(f"mapping refers to entity {index} but there "
                                 f"are {len(entities)} entities")
            pieces += [before, entities[index].replacement]
        last = end
    pieces.append(translation[last:])
    return "".join(pieces)
