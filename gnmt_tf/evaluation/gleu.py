"""GLEU, the sentence-level reward of GNMT's RL refinement (Wu et al. 2016, §5).

GLEU is the minimum of n-gram recall and precision over all 1- to 4-grams
of the output and the reference (n-gram counts clipped), which equals
`matches / max(hypothesis n-grams, reference n-grams)`. NLTK's
`nltk.translate.gleu_score` implements exactly that definition (its
docstring quotes the paper) and is used here; for a corpus it adds up
`matches` and `max(hypothesis n-grams, reference n-grams)` over the
sentences (Schuster's corpus definition, as NLTK documents), which is not
the mean of the sentence scores.
"""

from nltk.translate import gleu_score

MAX_ORDER = 4


def _tokens(text):
    """A string split on whitespace; token sequences (of any hashable items,
    e.g. subword ids) unchanged."""
    return text.split() if isinstance(text, str) else list(text)


def sentence_gleu(hypothesis, reference, max_order=MAX_ORDER) -> float:
    """GLEU in [0, 1] of one hypothesis against one reference.

    Args:
      hypothesis: a string (split on whitespace) or a sequence of tokens.
      reference: the same.
      max_order: int. The longest n-gram counted.

    Returns:
      0 when either side is empty, 1 for identical non-empty sides.
    """
    return gleu_score.sentence_gleu([_tokens(reference)], _tokens(hypothesis),
                                    min_len=1, max_len=max_order)


def corpus_gleu(hypotheses, references, max_order=MAX_ORDER) -> float:
    """Corpus GLEU: the sum of each pair's n-gram matches over the sum of
    each pair's `max(hypothesis n-grams, reference n-grams)`.

    Raises:
      ValueError: different numbers of hypotheses and references.
    """
    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but "
                         f"{len(references)} references")
    return gleu_score.corpus_gleu([[_tokens(r)] for r in references],
                                  [_tokens(h) for h in hypotheses],
                                  min_len=1, max_len=max_order)
