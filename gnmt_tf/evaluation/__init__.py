"""Translation quality metrics: sacreBLEU (BLEU, chrF) and GNMT's GLEU."""

from gnmt_tf.evaluation.gleu import corpus_gleu, sentence_gleu
from gnmt_tf.evaluation.sacrebleu_scores import (Scores, score_corpus,
                                                 score_references)

__all__ = ["Scores", "corpus_gleu", "score_corpus", "score_references",
           "sentence_gleu"]
