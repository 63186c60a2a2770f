"""Translating with placeholders restored through the alignment head.

The path of the Ctrip MT platform: mask key information in the source with
typed placeholder tokens (`alignment.placeholders.Masker`), translate the
masked text with a model that learnt to carry placeholders (its training data
went through `augment_with_alignment`, and the placeholders are SentencePiece
user-defined symbols, so each is one subword), then decide which source
entity each placeholder of the output stands for, and `restore`.

The decision (`map_placeholders`) compares each output placeholder only with
source placeholders of the same type, using a `[T, S]` score map over
subwords from a teacher-forced pass of the model over its own output:

- `"conv_head"`: the `ConvAlignmentHead` probabilities, with a one-to-one
  assignment per type (Hungarian algorithm, `scipy.optimize`), so two
  placeholders of one type never both take the same source entity;
- `"attention_argmax"`: the raw cross-attention (mean over layers and
  heads), each output placeholder taking its highest-attention source
  placeholder independently (the usual baseline);
- `"order"`: no scores; the k-th output placeholder of a type takes the k-th
  source entity of that type (`default_mapping`).

Output placeholders beyond the source entities of their type map to None
(dropped). With `repair=True` a source entity no output placeholder took is
inserted after the output word most aligned with it, so every entity of the
source reaches the output (what a production system must guarantee).
"""

import gnmt_tf  # noqa: F401  (sets TF_USE_LEGACY_KERAS before TensorFlow loads)

import re
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from alignment.aligned_model import word_index_of_pieces
from alignment.placeholders import (PLACEHOLDER_TOKENS, Entity,
                                    default_mapping, placeholder,
                                    placeholder_occurrences, restore)
from gnmt_tf.seq2seq_model import prefix_ids

METHODS = ("order", "attention_argmax", "conv_head")
_TOKEN_TYPE = {token: token[1:-1] for token in PLACEHOLDER_TOKENS}


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


class PlaceholderTranslation(NamedTuple):
    """One sentence through the placeholder path."""
    source: str
    masked_source: str
    entities: List[Entity]
    masked_translation: str
    mapping: List[Optional[int]]
    translation: str
    repaired: int = 0  # entities inserted because the output lost them


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


class PlaceholderTranslator:
    """Mask -> translate -> map placeholders -> restore.

    Args:
        translator: a `gnmt_tf.translator.Translator` of `model`.
        model: the `AlignedTranslationModel` the translator drives (for the
            teacher-forced pass that feeds the head).
        masker: object with `mask(text) -> (masked, entities)`
            (`alignment.placeholders.Masker`, `HashPlaceholderMasker`).
        method: one of `METHODS`.
        repair: bool. Insert source entities the output lost.

    Example:
    ```python
    translator = PlaceholderTranslator(Translator(aligned, subwords),
                                       aligned, Masker())
    translator.translate(["Call 555 or 556 before 10:30."])
    ```
    """

    def __init__(self, translator, model, masker, method="conv_head",
                 repair=True):
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; choose from "
                             f"{', '.join(METHODS)}")
        self.translator = translator
        self.model = model
        self.masker = masker
        self.method = method
        self.repair = repair
        self.subwords = translator.subwords

    @staticmethod
    def _task_inputs(n, ids):
        """Task `ids` repeated for `n` rows, or None for a model without."""
        return {name: [value] * n for name, value in ids.items()} or None

    def score_maps(self, masked_sources, masked_translations,
                   translate_kwargs=None):
        """Teacher-forced head probabilities and mean attention per pair,
        each `[T+1, S+1(+prefix)]` over subwords, plus the prefix length."""
        task = self.translator.task_ids(**(translate_kwargs or {}))
        prefix = prefix_ids(self.model.source_prefix, task)
        source_ids = [prefix + ids for ids in
                      self.subwords.encode(masked_sources)]
        target_ids = self.subwords.encode(masked_translations)
        probabilities, attention = self.model.forced_alignment(
            source_ids, target_ids, self._task_inputs(len(source_ids), task))
        return probabilities, attention, len(prefix)

    def translate_detailed(self, sentences, options=None, batch_size=32,
                           **translate_kwargs) -> List[PlaceholderTranslation]:
        """Runs the whole path; `translate_kwargs` go to the translator
        (the model's task inputs: `src_lang`, `tgt_lang`, `tags` for a
        task-space model)."""
        from gnmt_tf.translator import SearchOptions

        options = options or SearchOptions(beam_size=1)
        masked = [self.masker.mask(s) for s in sentences]
        masked_sources = [m for m, _ in masked]
        outputs = self.translator.translate(
            masked_sources, options=options, batch_size=batch_size,
            **translate_kwargs)
        has_entities = [i for i, (_, e) in enumerate(masked) if e]
        maps = {}
        if has_entities and self.method != "order" or self.repair:
            chosen = [i for i in has_entities if outputs[i].strip()]
            if chosen:
                probs, attention, prefix = self.score_maps(
                    [masked_sources[i] for i in chosen],
                    [outputs[i] for i in chosen], translate_kwargs)
                for n, i in enumerate(chosen):
                    scores = (attention[n] if self.method == "attention_argmax"
                              else probs[n])
                    maps[i] = scores[:, prefix:]
        results = []
        for i, (source, (masked_source, entities)) in enumerate(
                zip(sentences, masked)):
            output = outputs[i]
            if not entities:
                results.append(PlaceholderTranslation(
                    source, masked_source, entities, output,
                    [None] * len(placeholder_occurrences(output)),
                    restore(output, entities,
                            [None] * len(placeholder_occurrences(output)))))
                continue
            source_tokens = self.subwords.pieces(masked_source)
            target_tokens = self.subwords.pieces(output)
            scores = maps.get(i)
            if scores is None or self.method == "order":
                mapping = default_mapping(output, entities)
            else:
                mapping = map_placeholders(scores, source_tokens,
                                           target_tokens, self.method)
            repaired = 0
            if self.repair:
                anchors = self._anchors(scores, source_tokens, target_tokens)
                before = len(mapping)
                output, mapping = repair_missing(output, mapping, entities,
                                                 anchors)
                repaired = len(mapping) - before
            results.append(PlaceholderTranslation(
                source, masked_source, entities, output, mapping,
                restore(output, entities, mapping), repaired))
        return results

    @staticmethod
    def _anchors(scores, source_tokens, target_tokens) -> Dict[int, int]:
        """Entity -> output word most aligned with its source placeholder."""
        if scores is None or not target_tokens:
            return {}
        words = word_index_of_pieces(target_tokens)
        anchors = {}
        for k, (position, _) in enumerate(placeholder_positions(
                source_tokens)):
            column = np.asarray(scores)[:len(target_tokens), position]
            anchors[k] = words[int(np.argmax(column))]
        return anchors

    def translate(self, sentences, options=None, batch_size=32,
                  **translate_kwargs) -> List[str]:
        """Translations with every placeholder restored."""
        return [r.translation for r in self.translate_detailed(
            sentences, options, batch_size, **translate_kwargs)]


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
