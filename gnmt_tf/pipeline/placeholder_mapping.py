"""Which source entity each placeholder of a translation stands for.

TF-free parts of the placeholder path (moved here from
`gnmt_tf.alignment.placeholder_translation`, which re-exports them): mapping output
placeholders to source entities from a `[T, S]` score map over subwords
(`map_placeholders`: conv-head assignment, attention argmax or order),
inserting entities the output lost (`repair_missing`), WMT-style `#NAME#`
tags as entities (`HashPlaceholderMasker`) and how many of them an output
kept (`preserved_fraction`).

- `"conv_head"`: the alignment-head probabilities, with a one-to-one
  assignment per type (Hungarian algorithm, `scipy.optimize`), so two
  placeholders of one type never both take the same source entity;
- `"attention_argmax"`: raw cross-attention, each output placeholder taking
  its highest-attention source placeholder independently;
- `"order"`: no scores; the k-th output placeholder of a type takes the k-th
  source entity of that type (`default_mapping`).
"""

import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from gnmt_tf.pipeline.placeholders import (PLACEHOLDER_TOKENS, Entity, placeholder,
                                           placeholder_occurrences)

METHODS = ("order", "attention_argmax", "conv_head")
_TOKEN_TYPE = {token: token[1:-1] for token in PLACEHOLDER_TOKENS}


def word_index_of_pieces(pieces: Sequence[str]) -> List[int]:
    """Word index of each SentencePiece piece (a `▁` piece opens a word).

    Placeholder user symbols come as `▁`, `⟦NUM⟧`: the bare `▁` opens the
    word and the symbol continues it.
    """
    index, word = [], -1
    for k, piece in enumerate(pieces):
        if piece.startswith("\u2581") or k == 0:
            word += 1
        index.append(word)
    return index


def placeholder_positions(tokens: Sequence[str]) -> List[Tuple[int, str]]:
    """`(position, type)` of every token (subword) that is a placeholder."""
    return [(k, _TOKEN_TYPE[t]) for k, t in enumerate(tokens)
            if t in _TOKEN_TYPE]


def map_placeholders(scores: Optional[np.ndarray],
                     source_tokens: Sequence[str],
                     target_tokens: Sequence[str],
                     method: str = "conv_head") -> List[Optional[int]]:
    """Maps each output placeholder to a source entity.

    Args:
        scores: `[T, S]` array, row = target token, column = source token
            (head probabilities or attention); unused by `"order"`. May be
            larger than the token lists (e.g. EOS rows/columns).
        source_tokens: the masked source as subwords; its k-th placeholder
            is entity k.
        target_tokens: the output as subwords.
        method: one of `METHODS`.

    Returns:
        For each placeholder of `target_tokens`, left to right, the index of
        its source entity or None.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose from "
                         f"{', '.join(METHODS)}")
    source = placeholder_positions(source_tokens)
    target = placeholder_positions(target_tokens)
    if method == "order":
        queues = {}
        for k, (_, kind) in enumerate(source):
            queues.setdefault(kind, []).append(k)
        return [queues[kind].pop(0) if queues.get(kind) else None
                for _, kind in target]
    if scores is None:
        raise ValueError(f"method {method!r} needs a score map")
    scores = np.asarray(scores, np.float64)
    mapping: List[Optional[int]] = [None] * len(target)
    for kind in {kind for _, kind in target}:
        rows = [n for n, (_, k) in enumerate(target) if k == kind]
        cols = [k for k, (_, t) in enumerate(source) if t == kind]
        if not cols:
            continue
        block = scores[np.ix_([target[n][0] for n in rows],
                              [source[k][0] for k in cols])]
        if method == "attention_argmax":
            for r, n in enumerate(rows):
                mapping[n] = cols[int(np.argmax(block[r]))]
        else:
            from scipy.optimize import linear_sum_assignment

            assigned_rows, assigned_cols = linear_sum_assignment(-block)
            for r, c in zip(assigned_rows, assigned_cols):
                mapping[rows[r]] = cols[c]
    return mapping


_HASH_PLACEHOLDER = re.compile(r"#[A-Z][A-Z_]*#")
HASH_TYPES = {"NAME": "NAME", "PRS_ORG": "ORG", "NUMBER": "NUM",
              "PHONENUMBER": "NUM", "EMAIL": "EMAIL", "URL": "URL",
              "DATE": "DATE", "ADDRESS": "NAME", "CREDITCARD": "NUM"}


class HashPlaceholderMasker:
    """Masks WMT-style anonymisation tags (`#NAME#`, `#PRS_ORG#`, ...).

    Each tag becomes an `Entity` whose text is the tag itself, typed by
    `types` (tag name -> placeholder type; unknown tags are NAME), so the
    tags come back verbatim after translation. Same interface as
    `Masker.mask`.
    """

    def __init__(self, types: Optional[Dict[str, str]] = None):
        self.types = dict(HASH_TYPES if types is None else types)

    def mask(self, text: str) -> Tuple[str, List[Entity]]:
        pieces, entities, last = [], [], 0
        for m in _HASH_PLACEHOLDER.finditer(text):
            kind = self.types.get(m.group()[1:-1], "NAME")
            entities.append(Entity(kind, m.group(), m.span()))
            pieces += [text[last:m.start()], placeholder(kind)]
            last = m.end()
        pieces.append(text[last:])
        return "".join(pieces), entities


def repair_missing(masked_translation: str, mapping: Sequence[Optional[int]],
                   entities: Sequence[Entity],
                   anchor_words: Dict[int, int]) -> Tuple[str, List]:
    """Inserts entities that no output placeholder took.

    Args:
        masked_translation: the output with placeholder tokens.
        mapping: per output placeholder, its entity or None.
        entities: the source entities.
        anchor_words: entity index -> output word (space-separated, 0-based)
            after which it goes; entities without one go at the end.

    Returns:
        `(masked_translation, mapping)` with one new placeholder per missing
        entity.
    """
    missing = [k for k in range(len(entities)) if k not in set(mapping)]
    if not missing:
        return masked_translation, list(mapping)
    words = masked_translation.split(" ") if masked_translation else []
    # Assign each existing occurrence to its word, then add the new ones.
    slots: List[List[Tuple[str, Optional[int]]]] = [[] for _ in words]
    occurrence = 0
    for w, word in enumerate(words):
        for _ in placeholder_occurrences(word):
            slots[w].append(("old", mapping[occurrence]
                             if occurrence < len(mapping) else None))
            occurrence += 1
    inserts: Dict[int, List[int]] = {}
    for k in missing:
        w = anchor_words.get(k, len(words) - 1)
        inserts.setdefault(min(max(w, -1), len(words) - 1), []).append(k)
    out_words, out_mapping = [], []
    for k in inserts.get(-1, []):
        out_words.append(entities[k].token)
        out_mapping.append(k)
    for w, word in enumerate(words):
        out_words.append(word)
        out_mapping += [index for _, index in slots[w]]
        for k in inserts.get(w, []):
            out_words.append(entities[k].token)
            out_mapping.append(k)
    return " ".join(out_words), out_mapping


def preserved_fraction(sources: Sequence[str], outputs: Sequence[str],
                       pattern: str = _HASH_PLACEHOLDER.pattern) -> float:
    """Fraction of `pattern` matches (e.g. `#NAME#`) of each source that
    appear (as often) in its output; 1.0 when there are none."""
    total = kept = 0
    for source, output in zip(sources, outputs):
        wanted: Dict[str, int] = {}
        for m in re.findall(pattern, source):
            wanted[m] = wanted.get(m, 0) + 1
        for tag, count in wanted.items():
            total += count
            kept += min(count, len(re.findall(re.escape(tag), output)))
    return kept / total if total else 1.0
