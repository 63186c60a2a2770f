"""BLEU and chrF through sacreBLEU, on detokenised cased text, with signatures."""

import dataclasses


@dataclasses.dataclass(frozen=True)
class Scores:
    """Corpus scores with the sacreBLEU signatures that make them comparable."""

    bleu: float
    chrf: float
    bleu_signature: str
    chrf_signature: str
    bleu_details: str

    def format(self) -> str:
        return (f"BLEU = {self.bleu:.2f}  ({self.bleu_signature})\n"
                f"  {self.bleu_details}\n"
                f"chrF2 = {self.chrf:.2f}  ({self.chrf_signature})")

    def to_json(self) -> dict:
        """The scores as a JSON-ready dict."""
        return dataclasses.asdict(self)


def score_corpus(hypotheses, references) -> Scores:
    """Scores detokenised hypotheses against one reference per line.

    Raises:
      ValueError: hypothesis and reference counts differ, or there are none
        (sacreBLEU would fail with an IndexError).
    """
    return score_references(hypotheses, [references])


def score_references(hypotheses, reference_sets) -> Scores:
    """Scores detokenised hypotheses against several references per line.

    Args:
      hypotheses: list of str.
      reference_sets: list of reference lists (sacreBLEU's "streams"), each
        with one line per hypothesis.

    Raises:
      ValueError: no reference set, a set whose line count differs from the
        hypotheses', or nothing to score.
    """
    import sacrebleu

    hypotheses = list(hypotheses)
    reference_sets = [list(references) for references in reference_sets]
    if not reference_sets:
        raise ValueError("no references")
    for references in reference_sets:
        if len(hypotheses) != len(references):
            raise ValueError(f"{len(hypotheses)} hypotheses but "
                             f"{len(references)} references")
    if not hypotheses:
        raise ValueError("nothing to score: no hypotheses and no references")
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, reference_sets)
    chrf_score = chrf.corpus_score(hypotheses, reference_sets)
    return Scores(
        bleu=bleu_score.score, chrf=chrf_score.score,
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        bleu_details=str(bleu_score))
