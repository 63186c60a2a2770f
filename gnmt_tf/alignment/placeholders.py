"""Training-data augmentation with typed placeholders.

Masking and restoring (`Masker`, `restore`, `default_mapping`, ...) moved to
`gnmt_tf.pipeline.placeholders` (TF-free, shared with the translation pipeline) and
are re-exported here for existing imports.
"""

import random
from typing import Iterable, List, NamedTuple, Optional, Sequence, Tuple

from gnmt_tf.pipeline.placeholders import (PLACEHOLDER_TOKENS, PLACEHOLDER_TYPES,
                                           Entity, Link, Masker, default_mapping,
                                           mapping_from_alignment, mask, placeholder,
                                           placeholder_occurrences, restore)

__all__ = ["PLACEHOLDER_TOKENS", "PLACEHOLDER_TYPES", "Entity", "Link",
           "Masker", "default_mapping", "mapping_from_alignment", "mask",
           "placeholder", "placeholder_occurrences", "restore", "Augmented",
           "augment_with_alignment"]


# --- Training-data augmentation ---------------------------------------------

class Augmented(NamedTuple):
    """A sentence pair with aligned entities replaced by placeholders."""
    source: List[str]
    target: List[str]
    links: List[Link]
    entities: List[Entity]


def _token_entities(masker: Masker, tokens: Sequence[str]
                    ) -> List[Tuple[Entity, int, int]]:
    """Entities of the space-joined tokens that cover whole tokens."""
    starts, position = {}, 0
    ends = {}
    for k, token in enumerate(tokens):
        starts[position] = k
        position += len(token)
        ends[position] = k + 1
        position += 1
    found = []
    for entity in masker.detect(" ".join(tokens)):
        a, b = entity.span
        if a in starts and b in ends:
            found.append((entity, starts[a], ends[b]))
    return found


def augment_with_alignment(source_tokens: Sequence[str],
                           target_tokens: Sequence[str],
                           links: Iterable[Link],
                           masker: Optional[Masker] = None,
                           target_masker: Optional[Masker] = None,
                           rate: float = 1.0,
                           rng: Optional[random.Random] = None,
                           require_target_match: bool = True) -> Augmented:
    """Replaces aligned source/target entity spans by the same placeholder.

    For each entity detected in the source (whole tokens only), the target
    tokens linked to it must form a span consistent with the alignment (no
    link leaves the span pair). With `require_target_match`, that target span
    must also be an entity of the same type, equal the source text, or equal
    the glossary translation. Then both spans become one placeholder token,
    linked to each other.

    Args:
        source_tokens, target_tokens: token lists of one sentence pair.
        links: `(source_index, target_index)` alignment links.
        masker: source-side `Masker` (default: all types).
        target_masker: target-side `Masker` (default: like `masker` but
            without the capitalisation heuristic).
        rate: float. Probability of replacing each eligible entity.
        rng: `random.Random` used with `rate` < 1.
    """
    links = sorted(set(links))
    masker = masker or Masker()
    if target_masker is None:
        target_masker = Masker(types=masker.types, glossary=masker.glossary,
                               capitalized_names=False)
    rng = rng or random.Random(0)
    target_entities = {(a, b): entity for entity, a, b
                       in _token_entities(target_masker, target_tokens)}
    source_of = {}
    for i, j in links:
        source_of.setdefault(j, set()).add(i)
    replaced, taken_target = [], set()
    for entity, a, b in _token_entities(masker, source_tokens):
        targets = sorted({j for i, j in links if a <= i < b})
        if not targets:
            continue
        ta, tb = targets[0], targets[-1] + 1
        if any(not (a <= i < b) for j in range(ta, tb)
               for i in source_of.get(j, ())):
            continue
        if taken_target & set(range(ta, tb)):
            continue
        if require_target_match:
            text = " ".join(target_tokens[ta:tb])
            found = target_entities.get((ta, tb))
            if not ((found is not None and found.type == entity.type)
                    or text == entity.text
                    or (entity.target is not None and text == entity.target)):
                continue
        if rate < 1.0 and rng.random() >= rate:
            continue
        taken_target.update(range(ta, tb))
        replaced.append((entity, a, b, ta, tb))
    return _collapse(source_tokens, target_tokens, links, replaced)


def _collapse(source_tokens, target_tokens, links, replaced) -> Augmented:
    def remap(tokens, spans):
        new_tokens, index = [], []
        starts = {a: (b, token) for a, b, token in spans}
        k = 0
        while k < len(tokens):
            if k in starts:
                b, token = starts[k]
                index += [len(new_tokens)] * (b - k)
                new_tokens.append(token)
                k = b
            else:
                index.append(len(new_tokens))
                new_tokens.append(tokens[k])
                k += 1
        return new_tokens, index

    source, source_index = remap(
        source_tokens, [(a, b, e.token) for e, a, b, _, _ in replaced])
    target, target_index = remap(
        target_tokens, [(ta, tb, e.token) for e, _, _, ta, tb in replaced])
    new_links = {(source_index[i], target_index[j]) for i, j in links}
    new_links.update((source_index[a], target_index[ta])
                     for _, a, _, ta, _ in replaced)
    return Augmented(source, target, sorted(new_links),
                     [e for e, *_ in replaced])
