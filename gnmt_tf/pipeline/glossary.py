"""Whole-word, longest-first term matching and user glossaries.

Glossary files (`read_glossary`, `GlossaryFile`) are UTF-8 TSV, one entry a
line: `source<TAB>target[<TAB>lang-pair[<TAB>tags]]`, where lang-pair is
`en-de` (empty: any pair) and tags a comma-separated list of scene tags
(empty: any request). Blank lines and lines starting with `#` are skipped.
A malformed line raises `GlossaryError` naming the file and the line
("terms.tsv:7: expected 2 to 4 tab-separated fields, got 1").

A term matches only as whole words: it must not be preceded or followed by a
letter, digit or underscore, so the term "cat" does not match inside
"concatenate". When matches overlap, the longest wins, then the leftmost.

Example:

    >>> g = Glossary({"New York": "New York", "York": "Yorck"})
    >>> [(m.start, m.end, m.target) for m in g.find("New York and York")]
    [(0, 8, 'New York'), (13, 17, 'Yorck')]
"""

import collections
import os
import re
from typing import (Iterable, List, Mapping, NamedTuple, Optional, Sequence,
                    Tuple, Union)

_WORD = re.compile(r"\w+")


class TermMatch(NamedTuple):
    """A term found in a text: character span, surface form, entry."""
    start: int
    end: int
    text: str
    term: str
    target: Optional[str] = None


def _is_word_char(text: str, index: int) -> bool:
    return 0 <= index < len(text) and (text[index].isalnum()
                                       or text[index] == "_")


class TermMatcher:
    """Finds non-overlapping whole-word occurrences of a set of terms.

    Args:
        terms: iterable of str. Terms to find; surrounding space is ignored.
        case_sensitive: bool. Whether "paris" matches the term "Paris".
    """

    def __init__(self, terms: Iterable[str], case_sensitive: bool = True):
        self.case_sensitive = case_sensitive
        self._terms = {}  # normalised term -> term as given
        for term in terms:
            term = term.strip()
            if term:
                self._terms.setdefault(self._norm(term), term)
        # Index by first word so that each word start checks few terms.
        self._by_first = collections.defaultdict(list)
        self._other = []  # terms starting with a non-word character
        for norm in self._terms:
            first = _WORD.match(norm)
            bucket = self._by_first[first.group()] if first else self._other
            bucket.append(norm)
        for bucket in self._by_first.values():
            bucket.sort(key=len, reverse=True)

    def _norm(self, text: str) -> str:
        return text if self.case_sensitive else text.lower()

    def __len__(self) -> int:
        return len(self._terms)

    def _candidates(self, text: str) -> List[Tuple[int, int, str]]:
        norm_text = self._norm(text)
        if len(norm_text) != len(text):  # rare case mappings change length
            norm_text = "".join(self._norm(c)[:1] or c for c in text)
        found = []
        for word in _WORD.finditer(norm_text):
            for term in self._by_first.get(word.group(), ()):
                found.append((word.start(), term))
        for term in self._other:
            start = norm_text.find(term)
            while start >= 0:
                found.append((start, term))
                start = norm_text.find(term, start + 1)
        matches = []
        for start, term in found:
            end = start + len(term)
            if (norm_text.startswith(term, start)
                    and not _is_word_char(text, start - 1)
                    and not _is_word_char(text, end)):
                matches.append((start, end, term))
        return matches

    def find(self, text: str, occupied: Optional[List[bool]] = None
             ) -> List[TermMatch]:
        """Returns non-overlapping matches sorted by start.

        Args:
            text: str. Text to search.
            occupied: optional list of bools, one per character; matches that
                touch an occupied character are skipped and the chosen
                matches are marked occupied.
        """
        taken = occupied if occupied is not None else [False] * len(text)
        chosen = []
        for start, end, term in sorted(self._candidates(text),
                                       key=lambda m: (m[0] - m[1], m[0])):
            if not any(taken[start:end]):
                taken[start:end] = [True] * (end - start)
                chosen.append(TermMatch(start, end, text[start:end],
                                        self._terms[term]))
        return sorted(chosen)


class Glossary:
    """User glossary: source terms with their required translations.

    Args:
        entries: mapping or iterable of `(source_term, target_term)`.
        case_sensitive: bool. Match source terms case-sensitively.

    `find(text)` returns `TermMatch`es whose `target` is the translation.
    """

    def __init__(self,
                 entries: Union[Mapping[str, str], Iterable[Tuple[str, str]]],
                 case_sensitive: bool = False):
        items = entries.items() if isinstance(entries, Mapping) else entries
        self._targets = {}
        for source, target in items:
            key = source.strip() if case_sensitive else source.strip().lower()
            self._targets.setdefault(key, target.strip())
        self.case_sensitive = case_sensitive
        self._matcher = TermMatcher(self._targets.keys(),
                                    case_sensitive=case_sensitive)

    def __len__(self) -> int:
        return len(self._targets)

    def target(self, term: str) -> Optional[str]:
        """The translation of a source term, or None."""
        return self._targets.get(term.strip() if self.case_sensitive
                                 else term.strip().lower())

    def find(self, text: str, occupied: Optional[List[bool]] = None
             ) -> List[TermMatch]:
        """Whole-word, longest-first glossary matches in `text`."""
        return [m._replace(target=self.target(m.term))
                for m in self._matcher.find(text, occupied)]

    @classmethod
    def from_tsv(cls, path, src_lang: Optional[str] = None,
                 tgt_lang: Optional[str] = None, tags: Sequence[str] = (),
                 case_sensitive: bool = False) -> "Glossary":
        """The entries of a glossary file (see the module docstring) that
        apply to `src_lang`-`tgt_lang` and `tags`; `GlossaryError` names a
        bad line."""
        return GlossaryFile.read(path).select(src_lang, tgt_lang, tags,
                                              case_sensitive)


class GlossaryError(ValueError):
    """A malformed glossary file; the message starts with `file:line:`."""


class GlossaryEntry(NamedTuple):
    """One line of a glossary file: the terms, the language pair it is for
    (`("en", "de")`, or None for any) and its scene tags (empty: any)."""
    source: str
    target: str
    pair: Optional[Tuple[str, str]] = None
    tags: Tuple[str, ...] = ()

    def applies(self, src_lang: Optional[str], tgt_lang: Optional[str],
                tags: Sequence[str]) -> bool:
        """Whether the entry is for this language pair and these tags (an
        unknown language matches any pair)."""
        if self.pair is not None and src_lang and tgt_lang and \
                self.pair != (src_lang.lower(), tgt_lang.lower()):
            return False
        return not self.tags or bool(set(self.tags) & set(tags))


_PAIR = re.compile(r"^([a-z]{2,3})-([a-z]{2,3})$")


def _parse_line(line: str, where: str) -> Optional[GlossaryEntry]:
    if not line.strip() or line.lstrip().startswith("#"):
        return None
    fields = line.split("\t")
    if not 2 <= len(fields) <= 4:
        raise GlossaryError(f"{where}: expected 2 to 4 tab-separated fields, "
                            f"got {len(fields)}")
    source, target = fields[0].strip(), fields[1].strip()
    if not source or not target:
        raise GlossaryError(f"{where}: empty "
                            f"{'source' if not source else 'target'} term")
    pair = None
    if len(fields) > 2 and fields[2].strip():
        found = _PAIR.match(fields[2].strip().lower())
        if not found:
            raise GlossaryError(f"{where}: language pair {fields[2]!r} is "
                                "not of the form 'en-de'")
        pair = (found.group(1), found.group(2))
    tags = ()
    if len(fields) > 3:
        tags = tuple(sorted({t.strip() for t in fields[3].split(",")
                             if t.strip()}))
    return GlossaryEntry(source, target, pair, tags)


class GlossaryFile:
    """All entries of a glossary file, to select from per request.

    Args:
      entries: iterable of `GlossaryEntry`.

    Example:
      >>> g = GlossaryFile.parse("dog\\tHund\\ten-de\\ndog\\tchien\\ten-fr\\n")
      >>> g.select("en", "de").target("dog")
      'Hund'
    """

    def __init__(self, entries: Iterable[GlossaryEntry]):
        self.entries = list(entries)

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def parse(cls, text: str, name: str = "<glossary>") -> "GlossaryFile":
        """Entries of a glossary's text; `name` starts error messages."""
        return cls(entry for number, line in
                   enumerate(text.split("\n"), 1)
                   for entry in [_parse_line(line.rstrip("\r"),
                                             f"{name}:{number}")]
                   if entry is not None)

    @classmethod
    def read(cls, path) -> "GlossaryFile":
        """Reads a glossary file; `GlossaryError` names a bad line, invalid
        UTF-8 included."""
        name = os.fspath(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError as e:
            raise GlossaryError(f"{name}: {e.strerror}") from None
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            line = data[:e.start].count(b"\n") + 1
            raise GlossaryError(f"{name}:{line}: invalid UTF-8") from None
        return cls.parse(text, name)

    def select(self, src_lang: Optional[str] = None,
               tgt_lang: Optional[str] = None, tags: Sequence[str] = (),
               case_sensitive: bool = False) -> Glossary:
        """A `Glossary` of the entries that apply; an entry for the exact
        language pair wins over one for any pair."""
        chosen = sorted((e for e in self.entries
                         if e.applies(src_lang, tgt_lang, tags)),
                        key=lambda e: e.pair is None)
        return Glossary([(e.source, e.target) for e in chosen],
                        case_sensitive=case_sensitive)


def as_glossary(value, src_lang: Optional[str] = None,
                tgt_lang: Optional[str] = None, tags: Sequence[str] = ()
                ) -> Optional[Glossary]:
    """`value` as a `Glossary` for this request: a `Glossary` as it is, a
    `GlossaryFile` or a path selected by language pair and tags, a mapping
    or `(source, target)` pairs as they are; None stays None."""
    if value is None or isinstance(value, Glossary):
        return value
    if isinstance(value, GlossaryFile):
        return value.select(src_lang, tgt_lang, tags)
    if isinstance(value, (str, os.PathLike)):
        return GlossaryFile.read(value).select(src_lang, tgt_lang, tags)
    return Glossary(value)
