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


def score_corpus(hypotheses, references) -> Scores:
    """Scores detokenised hypotheses against one reference per line.

    Raises:
      ValueError: hypothesis and reference counts differ, or there are none
        (sacreBLEU would fail with an IndexError).
    """
    import sacrebleu

    hypotheses, references = list(hypotheses), list(references)
    if len(hypotheses) != len(references):
        raise ValueError(f"{len(hypotheses)} hypotheses but {len(references)} references")
    if not hypotheses:
        raise ValueError("nothing to score: no hypotheses and no references")
    bleu = sacrebleu.metrics.BLEU()
    chrf = sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return Scores(
        bleu=bleu_score.score, chrf=chrf_score.score,
        bleu_signature=str(bleu.get_signature()),
        chrf_signature=str(chrf.get_signature()),
        bleu_details=str(bleu_score))
