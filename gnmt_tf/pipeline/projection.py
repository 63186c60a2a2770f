"""Projecting source positions onto a translation, word by word.

Markup, entities and glossary terms are put back "at the aligned position":
a source character range is mapped to the translation's words that the
backend's `SentenceResult.alignment` links to it. The `[T, S]` subword
alignment (alignment-head probabilities or cross-attention) is first turned
into a word-level matrix (`WordAlignment`): a word is the run of pieces from
one `▁` piece to the next (SentencePiece's word-start mark), and a word
pair's score is the mean over the target word's pieces of the summed
probability on the source word's pieces. A target word is linked to its
highest-scoring source word (row argmax); a source word no target word
picked is linked to its highest-scoring target word (column argmax), so
every source word reaches the output.

When the backend gives no alignment, or its pieces do not match the words
of the texts (a backend that normalises text differently), `WordAlignment`
falls back to the diagonal: source word `i` of `n` goes to target word
`round(i * m / n)` of `m`. `aligned` says which of the two was used.

Positions are character offsets; a range is `(start, end)` with `end`
exclusive, and a projected range always covers whole target words.
"""

import re
from typing import List, Optional, Sequence, Tuple

import numpy as np

from gnmt_tf.pipeline.results import SentenceResult

_WORD = re.compile(r"\S+")
_SPECIAL = re.compile(r"^<[^<>\s]*>$")  # </s>, <2de>, <unk> pieces
_PUNCTUATION = ".,;:!?…)]}»“”\"'"
_OPENING = "([{«„“\"'"


def words(text: str) -> List[Tuple[int, int]]:
    """`(start, end)` of each whitespace-separated word of `text`."""
    return [m.span() for m in _WORD.finditer(text)]


def _piece_words(pieces: Sequence[str]) -> List[Optional[int]]:
    """Word index of each piece (a `▁` piece opens a word); None for
    special pieces (`</s>`, `<2de>`), which belong to no word."""
    index, word = [], -1
    for piece in pieces:
        if _SPECIAL.match(piece):
            index.append(None)
            continue
        if piece.startswith("\u2581") or word < 0:
            # A bare "▁" before a user symbol opens the word by itself.
            word += 1
        index.append(word)
    return index


def word_scores(result: SentenceResult, source_words: int,
                target_words: int) -> Optional[np.ndarray]:
    """The `[target_words, source_words]` word-level score matrix of
    `result`, or None when it has no alignment or its pieces do not match
    the word counts."""
    if (result.alignment is None or not result.source_pieces
            or not result.target_pieces or not source_words
            or not target_words):
        return None
    scores = np.asarray(result.alignment, np.float64)
    if scores.ndim != 2 or scores.shape[0] < len(result.target_pieces) \
            or scores.shape[1] < len(result.source_pieces):
        return None
    rows, cols = _piece_words(result.target_pieces), _piece_words(
        result.source_pieces)
    if max((r for r in rows if r is not None), default=-1) + 1 \
            != target_words or max((c for c in cols if c is not None),
                                   default=-1) + 1 != source_words:
        return None
    summed = np.zeros((len(rows), source_words))
    for c, word in enumerate(cols):
        if word is not None:
            summed[:, word] += scores[:len(rows), c]
    out = np.zeros((target_words, source_words))
    counts = np.zeros(target_words)
    for r, word in enumerate(rows):
        if word is not None:
            out[word] += summed[r]
            counts[word] += 1
    return out / np.maximum(counts, 1)[:, None]


class WordAlignment:
    """Word links between one source sentence and its translation.

    Args:
      source: str. The sentence the backend translated.
      target: str. Its translation (`result.text`).
      result: `SentenceResult` or None. Its `alignment` and pieces, when
        present, give the links; otherwise the diagonal does.

    Example:
      >>> a = WordAlignment("a red car", "une voiture rouge")
      >>> a.aligned, a.project_range(2, 5)  # "red", diagonal fallback
      (False, (4, 11))
    """

    def __init__(self, source: str, target: str,
                 result: Optional[SentenceResult] = None):
        self.source, self.target = source, target
        self.source_words, self.target_words = words(source), words(target)
        n, m = len(self.source_words), len(self.target_words)
        scores = (word_scores(result, n, m) if result is not None else None)
        self.aligned = scores is not None
        self.scores = scores
        # links[i]: the target words linked to source word i.
        self.links: List[List[int]] = [[] for _ in range(n)]
        if not n or not m:
            return
        if scores is None:
            for i in range(n):
                self.links[i].append(min(m - 1, round(i * m / n)))
            return
        for j, i in enumerate(np.argmax(scores, axis=1)):
            self.links[int(i)].append(j)
        for i in range(n):
            if not self.links[i]:
                self.links[i].append(int(np.argmax(scores[:, i])))

    def _source_words_in(self, start: int, end: int) -> List[int]:
        return [i for i, (a, b) in enumerate(self.source_words)
                if a < end and b > start]

    def target_words_of(self, start: int, end: int) -> List[int]:
        """Target words linked to the source words overlapping
        `[start, end)`, sorted."""
        return sorted({j for i in self._source_words_in(start, end)
                       for j in self.links[i]})

    def project_range(self, start: int, end: int) -> Optional[
            Tuple[int, int]]:
        """The target character range covering the words linked to
        `source[start:end]` (their hull; the whole translation when the
        range covers the whole source), or None when no word is linked.

        Punctuation that ends (or starts) the hull's words stays outside
        the range unless the source range itself ends (starts) with
        punctuation, so `<b>dog</b>.` maps to `<b>Hund</b>.`.
        """
        if not self.target_words:
            return None
        covered = self._source_words_in(start, end)
        if covered and len(covered) == len(self.source_words) and \
                self.source[:start].strip() == "" and \
                self.source[end:].strip() == "":
            return self.target_words[0][0], self.target_words[-1][1]
        linked = self.target_words_of(start, end)
        if not linked:
            return None
        a, b = self.target_words[linked[0]][0], \
            self.target_words[linked[-1]][1]
        text = self.source[start:end].strip()
        if text and text[-1] not in _PUNCTUATION:
            while b - 1 > a and self.target[b - 1] in _PUNCTUATION:
                b -= 1
        if text and text[0] not in _OPENING:
            while a + 1 < b and self.target[a] in _OPENING:
                a += 1
        return a, b

    def project_point(self, position: int) -> int:
        """The target position of a zero-width source position (an empty
        element between words): before the target word linked to the next
        source word, else after the one linked to the previous word."""
        if not self.target_words:
            return len(self.target)
        if position >= len(self.source.rstrip()):
            return self.target_words[-1][1]  # the end stays the end
        if not self.source[:position].strip():
            return self.target_words[0][0]
        inside = [i for i, (a, b) in enumerate(self.source_words)
                  if a < position < b]
        if inside and self.links[inside[0]]:
            a, b = self.source_words[inside[0]]
            if self.source[a:position].strip(_OPENING):
                # After the word's letters ("car<x/>."): after the linked
                # word, before its closing punctuation.
                word = self.target_words[max(self.links[inside[0]])]
                end = word[1]
                if not self.source[position:b].strip(_PUNCTUATION):
                    while end - 1 > word[0] and \
                            self.target[end - 1] in _PUNCTUATION:
                        end -= 1
                return end
            word = self.target_words[min(self.links[inside[0]])]
            start = word[0]
            while start + 1 < word[1] and self.target[start] in _OPENING:
                start += 1
            return start
        after = [i for i, (a, _) in enumerate(self.source_words)
                 if a >= position]
        if after and self.links[after[0]]:
            return self.target_words[min(self.links[after[0]])][0]
        before = [i for i, (_, b) in enumerate(self.source_words)
                  if b <= position]
        if before and self.links[before[-1]]:
            return self.target_words[max(self.links[before[-1]])][1]
        return 0 if position == 0 else len(self.target)
