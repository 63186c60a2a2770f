"""Key information (numbers, URLs, dates, ..., glossary terms) through MT.

`KeyInformation.protect` finds the entities of one source sentence with
`gnmt_tf.pipeline.placeholders.Masker` (typed: URL, EMAIL, MONEY, DATE, TIME, NUM;
glossary terms as TERM, whose target is the glossary's translation) and any
extra maskers (e.g. `HashPlaceholderMasker` for WMT's `#NAME#` tags).
`KeyInformation.restore` makes sure each one is in the translation, as the
original text (or, for a term, its glossary translation), at the aligned
position: a production guarantee, with every repair counted.

Two modes, for two kinds of model:

- `"tokens"`: entities become typed placeholder tokens (`⟦NUM⟧`) in the
  model input, for a model trained to carry them (SentencePiece
  user-defined symbols, `gnmt_tf.alignment.placeholders.augment_with_alignment`).
  Output tokens are mapped to source entities through the alignment
  (`map_placeholders`: one-to-one per type when the backend gives scores,
  else left to right per type) and replaced; an unmapped output token is
  dropped, and an entity no token took is inserted next to the target word
  aligned with it (a repair).
- `"text"` (default): the model reads the sentence as it is, since a model
  that never saw placeholder tokens garbles them. An entity (or glossary
  translation) found in the output counts as kept; a missing one replaces
  the output words aligned with it (a term that the model copied
  untranslated is replaced where it stands), or, when none is aligned, is
  inserted at the projected position (both repairs).

Both return edits of the model's output rather than a new string
(`gnmt_tf.pipeline.edits`), so markup projected on the output can follow. Repairs
do not use `repair_missing`, which rebuilds the whole text and loses
positions.
"""

import collections
import dataclasses
import re
from typing import Dict, List, Optional, Sequence, Tuple

from gnmt_tf.pipeline.edits import Edit, apply_edits
from gnmt_tf.pipeline.glossary import Glossary
from gnmt_tf.pipeline.placeholder_mapping import map_placeholders
from gnmt_tf.pipeline.placeholders import (Entity, Masker, default_mapping,
                                           placeholder_occurrences)
from gnmt_tf.pipeline.projection import WordAlignment
from gnmt_tf.pipeline.results import SentenceResult

MODES = ("text", "tokens")
ENTITY_TYPES = ("URL", "EMAIL", "MONEY", "DATE", "TIME", "NUM")


@dataclasses.dataclass
class Protected:
    """One source sentence, protected: what the model reads, the entities
    (spans over `source`), and the edits that made `model_input`."""

    source: str
    model_input: str
    entities: List[Entity]
    edits: List[Edit]


@dataclasses.dataclass
class Restored:
    """Edits of the model output that put every entity back, and what was
    kept and repaired per kind ("entity" or "term")."""

    edits: List[Edit]
    kept: Dict[str, int]
    repaired: Dict[str, int]


def _kind(entity: Entity) -> str:
    return "term" if entity.type == "TERM" else "entity"


def _occurrences(text: str, wanted: str, ignore_case: bool) -> List[
        Tuple[int, int]]:
    """Spans of `wanted` in `text`, not inside a longer word or number."""
    pattern = re.compile(r"(?<![\w.,])" + re.escape(wanted) + r"(?!\w)"
                         r"(?![.,]\d)", re.I if ignore_case else 0)
    return [m.span() for m in pattern.finditer(text)]


class KeyInformation:
    """Protects the key information of sentences for one request.

    Args:
      glossary: `gnmt_tf.pipeline.glossary.Glossary` or None.
      mode: "text" or "tokens" (see the module docstring).
      types: entity types to protect (`ENTITY_TYPES` by default).
      maskers: extra objects with `mask(text) -> (masked, entities)`; their
        entities win over overlapping ones found later.

    Example:
      >>> ki = KeyInformation()
      >>> p = ki.protect("Call 555 now.")
      >>> r = ki.restore(p, SentenceResult("Rufen Sie jetzt an."))
      >>> r.edits, r.repaired
      ([(6, 6, '555 ')], {'entity': 1})
    """

    def __init__(self, glossary: Optional[Glossary] = None,
                 mode: str = "text", types: Sequence[str] = ENTITY_TYPES,
                 maskers: Sequence = ()):
        if mode not in MODES:
            raise ValueError(f"unknown protection mode {mode!r}; choose "
                             f"from {', '.join(MODES)}")
        self.mode = mode
        types = set(types) | ({"TERM"} if glossary is not None else set())
        self._masker = Masker(types=types, glossary=glossary,
                              capitalized_names=False)
        self._maskers = list(maskers)

    def detect(self, sentence: str) -> List[Entity]:
        """Non-overlapping entities, extra maskers first, by position."""
        taken = [False] * len(sentence)
        found = []
        for masker in self._maskers + [self._masker]:
            for entity in masker.mask(sentence)[1]:
                a, b = entity.span
                if b > a and not any(taken[a:b]):
                    taken[a:b] = [True] * (b - a)
                    found.append(entity)
        return sorted(found, key=lambda e: e.span)

    def protect(self, sentence: str) -> Protected:
        """The sentence and its entities; in "tokens" mode the entities are
        replaced by their placeholder tokens in `model_input`."""
        entities = self.detect(sentence)
        if self.mode == "text" or not entities:
            return Protected(sentence, sentence, entities, [])
        edits = [(e.span[0], e.span[1], e.token) for e in entities]
        return Protected(sentence, apply_edits(sentence, edits)[0], entities,
                         edits)

    def restore(self, protected: Protected, result: SentenceResult,
                alignment: Optional[WordAlignment] = None) -> Restored:
        """Edits of `result.text` that restore every entity.

        Args:
          protected: from `protect`.
          result: the backend's translation of `protected.model_input`.
          alignment: `WordAlignment(protected.model_input, result.text,
            result)`; built here when None.
        """
        if alignment is None:
            alignment = WordAlignment(protected.model_input, result.text,
                                      result)
        if self.mode == "tokens" and protected.entities:
            return self._restore_tokens(protected, result, alignment)
        return self._restore_text(protected, result.text, alignment)

    # --- text mode ----------------------------------------------------------

    def _restore_text(self, protected: Protected, output: str,
                      alignment: WordAlignment) -> Restored:
        kept: Dict[str, int] = collections.Counter()
        repaired: Dict[str, int] = collections.Counter()
        edits: List[Edit] = []
        used: List[Tuple[int, int]] = []  # output spans already accounted

        def free(a: int, b: int) -> bool:
            return all(b <= x or a >= y or (a == b and a in (x, y))
                       for x, y in used)

        missing = []
        for entity in protected.entities:
            wanted = entity.replacement
            spans = [s for s in _occurrences(output, wanted,
                                             entity.type == "TERM")
                     if free(*s)]
            if spans:
                used.append(spans[0])
                kept[_kind(entity)] += 1
            else:
                missing.append(entity)
        for entity in missing:
            repaired[_kind(entity)] += 1
            target = None
            if entity.type == "TERM":  # copied untranslated?
                target = next((s for s in _occurrences(
                    output, entity.text, True) if free(*s)), None)
            if target is None and alignment.aligned:
                # Without an alignment the diagonal guess would overwrite
                # good words: insert instead.
                target = alignment.project_range(*entity.span)
                if target is not None and not self._compact(
                        alignment, entity, target):
                    target = None
            if target is not None and free(*target):
                edits.append((target[0], target[1], entity.replacement))
                used.append(target)
                continue
            edits.append(self._insertion(output, alignment.project_point(
                entity.span[0]), entity.replacement, used))
            used.append((edits[-1][0], edits[-1][0]))
        return Restored(sorted(edits, key=lambda e: e[:2]), dict(kept),
                        dict(repaired))

    @staticmethod
    def _compact(alignment: WordAlignment, entity: Entity,
                 target: Tuple[int, int]) -> bool:
        """Whether an aligned output range is small enough to replace (a
        noisy alignment can link an entity to words far apart)."""
        size = len(entity.text.split())
        covered = [w for w in alignment.target_words
                   if w[0] < target[1] and w[1] > target[0]]
        return len(covered) <= 2 * size + 1

    @staticmethod
    def _insertion(output: str, position: int, text: str,
                   used: Sequence[Tuple[int, int]]) -> Edit:
        """An insertion at `position` (moved out of any `used` range), with
        a space on the open side."""
        for x, y in sorted(used):
            if x < position < y:
                position = y
        if position >= len(output.rstrip()):
            position = len(output.rstrip())
            while position > 0 and output[position - 1] in ".!?;:":
                position -= 1  # before the final punctuation
        before = position > 0 and not output[position - 1].isspace()
        after = position < len(output) and not output[position].isspace() \
            and output[position] not in ".,;:!?"
        return (position, position,
                (" " if before else "") + text + (" " if after else ""))

    # --- tokens mode --------------------------------------------------------

    def _restore_tokens(self, protected: Protected, result: SentenceResult,
                        alignment: WordAlignment) -> Restored:
        entities = protected.entities
        output = result.text
        occurrences = placeholder_occurrences(output)
        mapping = None
        if result.alignment is not None and result.source_pieces and \
                result.target_pieces and \
                [p for p in result.target_pieces if "\u27e6" in p]:
            try:
                mapping = map_placeholders(result.alignment,
                                           result.source_pieces,
                                           result.target_pieces)
            except (ValueError, IndexError):
                mapping = None
            if mapping is not None and len(mapping) != len(occurrences):
                mapping = None
        if mapping is None:
            mapping = default_mapping(output, entities)
        kept: Dict[str, int] = collections.Counter()
        repaired: Dict[str, int] = collections.Counter()
        edits: List[Edit] = []
        taken = set()
        for (_, (a, b)), index in zip(occurrences, mapping):
            if index is None or index in taken:
                # An output token no source entity is left for: dropped,
                # with one space around it.
                if a > 0 and output[a - 1] == " " and \
                        output[b:b + 1] in (" ", ""):
                    a -= 1
                edits.append((a, b, ""))
                continue
            taken.add(index)
            kept[_kind(entities[index])] += 1
            edits.append((a, b, entities[index].replacement))
        source_positions = protected.edits
        for index, entity in enumerate(entities):
            if index in taken:
                continue
            repaired[_kind(entity)] += 1
            # The entity's token in the model input, projected.
            start = sum(len(t) - (b - a) for a, b, t in
                        source_positions[:index]) + entity.span[0]
            edits.append(self._insertion(output, alignment.project_point(
                start), entity.replacement, [e[:2] for e in edits]))
        return Restored(sorted(edits, key=lambda e: e[:2]), dict(kept),
                        dict(repaired))
