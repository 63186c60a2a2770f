"""Whole-word, longest-first term matching and user glossaries.

A term matches only as whole words: it must not be preceded or followed by a
letter, digit or underscore, so the term "cat" does not match inside
"concatenate". When matches overlap, the longest wins, then the leftmost.

Example:

    >>> g = Glossary({"New York": "New York", "York": "Yorck"})
    >>> [(m.start, m.end, m.target) for m in g.find("New York and York")]
    [(0, 8, 'New York'), (13, 17, 'Yorck')]
"""

import collections
import csv
import re
from typing import Iterable, List, Mapping, NamedTuple, Optional, Tuple, Union

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
    def from_tsv(cls, path, case_sensitive: bool = False) -> "Glossary":
        """Reads `source<TAB>target` lines; ValueError names a bad line."""
        entries = []
        with open(path, encoding="utf-8", newline="") as f:
            for number, row in enumerate(csv.reader(f, delimiter="\t",
                                                    quoting=csv.QUOTE_NONE), 1):
                if not row or (len(row) == 1 and not row[0].strip()):
                    continue
                if len(row) != 2 or not row[0].strip() or not row[1].strip():
                    raise ValueError(f"{path}: line {number}: expected "
                                     "'source<TAB>target'")
                entries.append((row[0], row[1]))
        return cls(entries, case_sensitive=case_sensitive)
