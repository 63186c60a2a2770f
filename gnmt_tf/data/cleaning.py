"""Cleaning rules for parallel corpora, with a count per reason.

`PairCleaner.reason(source, target, src_lang, tgt_lang)` returns why a pair
is dropped (one of `REASONS`) or None to keep it; the rules run in the
order of `REASONS`, and a pair is counted under the first that drops it.
"""

import dataclasses
import hashlib
from typing import Callable, Optional

from gnmt_tf.checks import check_number

EMPTY = "empty"
TOO_LONG = "too_long"
RATIO = "length_ratio"
COPY = "source_is_target"
LANGUAGE = "wrong_language"
DUPLICATE = "duplicate"
REASONS = (EMPTY, TOO_LONG, RATIO, COPY, LANGUAGE, DUPLICATE)

DEFAULT_MAX_LENGTH_CHARS = 1000
DEFAULT_MAX_RATIO = 3.0


def normalize_whitespace(text: str) -> str:
    """`text` trimmed, with every run of whitespace (tabs and line breaks
    included: a prepared shard is tab-separated, one pair a line) made one
    space."""
    return " ".join(text.split())


@dataclasses.dataclass
class PairCleaner:
    """Decides which sentence pairs to keep.

    Args:
        max_length_chars: int >= 1. Longer sides (in characters) drop the
            pair.
        max_ratio: float >= 1. Pairs whose longer side has more than
            `max_ratio` times the characters of the shorter are dropped.
        language_of: optional `text -> language code` (or None when it
            cannot tell); a side detected as another language than the
            declared one drops the pair.

    Duplicates are exact repeats of a (direction, source, target) triple.
    The cleaner keeps an 8-byte BLAKE2b digest of each kept pair in a set,
    never the text: memory grows with the number of distinct pairs, about
    100 bytes each in CPython (about 500 MB for 5M pairs), whatever their
    length. Two different pairs share a digest with probability about
    n^2 / 2^65 (under 1e-6 for 5M pairs); such a pair would be dropped as
    a duplicate.
    """

    max_length_chars: int = DEFAULT_MAX_LENGTH_CHARS
    max_ratio: float = DEFAULT_MAX_RATIO
    language_of: Optional[Callable[[str], Optional[str]]] = None

    def __post_init__(self):
        check_number("max_length_chars", self.max_length_chars, integer=True,
                     minimum=1)
        check_number("max_ratio", self.max_ratio, minimum=1)
        self._seen = set()

    def reason(self, source, target, src_lang, tgt_lang) -> Optional[str]:
        """Why the pair is dropped (a `REASONS` entry), or None to keep it.
        A kept pair is remembered for the duplicate check."""
        if not source or not target:
            return EMPTY
        short, long = sorted((len(source), len(target)))
        if long > self.max_length_chars:
            return TOO_LONG
        if long > self.max_ratio * short:
            return RATIO
        if source == target:
            return COPY
        if self.language_of is not None and (
                _other_language(self.language_of(source), src_lang)
                or _other_language(self.language_of(target), tgt_lang)):
            return LANGUAGE
        key = hashlib.blake2b(
            "\t".join((src_lang, tgt_lang, source, target)).encode("utf-8"),
            digest_size=8).digest()
        if key in self._seen:
            return DUPLICATE
        self._seen.add(key)
        return None


def _other_language(detected, declared) -> bool:
    """True when a detection names a language other than `declared`
    (None: no opinion)."""
    if not detected:
        return False
    return detected.lower().split("-")[0] != declared.lower().split("-")[0]
