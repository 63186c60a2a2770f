"""Builds lexical translation tables with our fast_align over subword pieces.

The table (format: `gnmt_tf.text.lexical_table`) feeds vocabulary
shortlists (`gnmt_tf.decoding.shortlist`) and UNK replacement
(`gnmt_tf.unk_replacement`). Sentences are split into SentencePiece pieces
as strings, so an `<unk>` piece appears as its surface text (what UNK
replacement looks up) and every other piece as the vocabulary spells it.

Example:

    >>> table = build_lexical_table(sources, targets, subwords.pieces,
    ...                             top_k=50)
    >>> with open("lex.tsv", "w") as out:
    ...     write_lexical_table(out, table.translations, table.frequencies)
"""

import collections
import dataclasses
from typing import Callable, List, Sequence, Tuple

from gnmt_tf.alignment.fast_align import FastAlign


@dataclasses.dataclass
class BuiltTable:
    """`translations`: `(source, target, t(target | source))`, the `top_k`
    most probable per source token; `frequencies`: `(target, count)`, most
    frequent first."""

    translations: List[Tuple[str, str, float]]
    frequencies: List[Tuple[str, int]]


def build_lexical_table(sources: Sequence[str], targets: Sequence[str],
                        tokenize: Callable[[str], Sequence[str]],
                        top_k: int = 50, iterations: int = 5,
                        variational_bayes: bool = True) -> BuiltTable:
    """Fits fast_align (`-d -o`, and `-v` by default: the Dirichlet prior
    keeps rare pieces from soaking up probability) on the tokenised pairs.

    Args:
      sources, targets: parallel sentences (same length).
      tokenize: str -> list of tokens (e.g. `Subwords.pieces`).
      top_k: int. Translations kept per source token.
      iterations: int. fast_align's `-I`.
      variational_bayes: bool. fast_align's `-v`.

    Raises:
      ValueError: corpora of different lengths, or no non-empty pair.
    """
    if len(sources) != len(targets):
        raise ValueError(f"{len(sources)} source lines but {len(targets)} "
                         "target lines")
    pairs, counts = [], collections.Counter()
    for source, target in zip(sources, targets):
        source_tokens, target_tokens = tokenize(source), tokenize(target)
        counts.update(target_tokens)
        if source_tokens and target_tokens:
            pairs.append((source_tokens, target_tokens))
    if not pairs:
        raise ValueError("no non-empty sentence pair")
    aligner = FastAlign(favor_diagonal=True, optimize_tension=True,
                        variational_bayes=variational_bayes,
                        iterations=iterations).fit(pairs)
    translations = list(aligner.lexical_table(top_k=top_k))
    frequencies = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return BuiltTable(translations, frequencies)
