"""Translating with placeholders restored through the alignment head.

The path of the Ctrip MT platform: mask key information in the source with
typed placeholder tokens (`gnmt_tf.alignment.placeholders.Masker`), translate the
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

from typing import Dict, List, NamedTuple, Optional

import numpy as np

from gnmt_tf.alignment.placeholders import (Entity, default_mapping,
                                            placeholder_occurrences, restore)
from gnmt_tf.seq2seq_model import prefix_ids
from gnmt_tf.pipeline.placeholder_mapping import (HASH_TYPES, METHODS,
                                                  HashPlaceholderMasker,
                                                  map_placeholders,
                                                  placeholder_positions,
                                                  preserved_fraction, repair_missing,
                                                  word_index_of_pieces)

__all__ = ["HASH_TYPES", "METHODS", "HashPlaceholderMasker",
           "PlaceholderTranslation", "PlaceholderTranslator",
           "map_placeholders", "placeholder_positions", "preserved_fraction",
           "repair_missing"]


class PlaceholderTranslation(NamedTuple):
    """One sentence through the placeholder path."""
    source: str
    masked_source: str
    entities: List[Entity]
    masked_translation: str
    mapping: List[Optional[int]]
    translation: str
    repaired: int = 0  # entities inserted because the output lost them


class PlaceholderTranslator:
    """Mask -> translate -> map placeholders -> restore.

    Args:
        translator: a `gnmt_tf.translator.Translator` of `model`.
        model: the `AlignedTranslationModel` the translator drives (for the
            teacher-forced pass that feeds the head).
        masker: object with `mask(text) -> (masked, entities)`
            (`gnmt_tf.alignment.placeholders.Masker`, `HashPlaceholderMasker`).
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


