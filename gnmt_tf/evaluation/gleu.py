"""GLEU, the sentence-level reward of GNMT's RL refinement (Wu et al. 2016, §5).

GLEU is the minimum of n-gram recall and precision over all 1- to 4-grams of the
output and the reference (n-gram counts clipped). sacreBLEU has no GLEU and
NLTK's would be a dependency for twenty lines, so it is written here.
"""

import collections


def _ngrams(tokens, max_order):
    counts = collections.Counter()
    for n in range(1, max_order + 1):
        for i in range(len(tokens) - n + 1):
            counts[tuple(tokens[i:i + n])] += 1
    return counts


def gleu_statistics(hypothesis, reference, max_order=4):
    """Returns (matches, hypothesis n-grams, reference n-grams) for token lists."""
    hyp = _ngrams(hypothesis, max_order)
    ref = _ngrams(reference, max_order)
    matches = sum((hyp & ref).values())
    return matches, sum(hyp.values()), sum(ref.values())


def sentence_gleu(hypothesis, reference, max_order=4) -> float:
    """GLEU in [0, 1] of one tokenised hypothesis against one reference.

    Strings are split on whitespace. Returns 0 when either side has no n-gram.
    """
    if isinstance(hypothesis, str):
        hypothesis = hypothesis.split()
    if isinstance(reference, str):
        reference = reference.split()
    matches, hyp_total, ref_total = gleu_statistics(hypothesis, reference, max_order)
    if hyp_total == 0 or ref_total == 0:
        return 0.0
    return min(matches / hyp_total, matches / ref_total)


def corpus_gleu(hypotheses, references, max_order=4) -> float:
    """Corpus GLEU: min(precision, recall) of n-gram counts summed over pairs."""
    matches = hyp_total = ref_total = 0
    for hyp, ref in zip(hypotheses, references):
        m, h, r = gleu_statistics(hyp.split(), ref.split(), max_order)
        matches, hyp_total, ref_total = matches + m, hyp_total + h, ref_total + r
    if hyp_total == 0 or ref_total == 0:
        return 0.0
    return min(matches / hyp_total, matches / ref_total)
