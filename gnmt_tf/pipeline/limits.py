"""Refusing sentences too long for the model before any work is spent on
them.

A model reads at most `limit` subwords a sentence (its
`max_source_length`). Every word, a whitespace-separated token with a letter
or digit, is at least one subword whatever the tokeniser, so a sentence of
more words than `limit` is refused for certain. Both checks are linear in
the text:

- `check_segment` runs on a segment as given, before normalisation and
  sentence splitting: a sentence boundary needs punctuation (or a line
  break), so a stretch of more than `limit` words without any lies inside
  one sentence;
- `check_sentences` runs on the split sentences.

Sentences within the word count may still be over the subword limit: the
model's own check refuses those.
"""

import re
from typing import Sequence

import regex  # sacremoses' dependency: Unicode properties in patterns

# Unicode punctuation (categories P*) and line breaks.
_BOUNDARY = regex.compile(r"[\n\p{P}]+")
# One per token that holds a letter or digit: from its first one to its end.
_WORD = re.compile(r"[^\W_]\S*")


class SentenceTooLongError(ValueError):
    """A sentence with more words than the model reads subwords."""


def _error(where: str, words: int, limit: int) -> SentenceTooLongError:
    return SentenceTooLongError(
        f"{where}: a sentence of {words:,} or more words; the model reads at "
        f"most {limit:,} subwords a sentence (split it into sentences)")


def check_segment(text: str, limit: int, where: str) -> None:
    """Raises `SentenceTooLongError` when `text` holds a stretch of more
    than `limit` words without punctuation or line break (`where` names
    the segment in the message)."""
    if len(text) <= limit:  # too short to hold limit + 1 words
        return
    for stretch in _BOUNDARY.split(text):
        if len(stretch) > limit:
            words = len(_WORD.findall(stretch))
            if words > limit:
                raise _error(where, words, limit)


def check_sentences(sentences: Sequence[str], limit: int,
                    where: str) -> None:
    """Raises `SentenceTooLongError` for a sentence of more than `limit`
    words."""
    for sentence in sentences:
        if len(sentence) > limit:
            words = len(_WORD.findall(sentence))
            if words > limit:
                raise _error(where, words, limit)
