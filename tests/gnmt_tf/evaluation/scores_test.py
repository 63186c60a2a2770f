import pytest

from gnmt_tf.evaluation import corpus_gleu, score_corpus, sentence_gleu


def test_sacrebleu_identity_and_signature():
    refs = ["Ein Mann läuft.", "Zwei Hunde spielen im Schnee."]
    scores = score_corpus(refs, refs)
    assert scores.bleu == pytest.approx(100.0) and scores.chrf == pytest.approx(100.0)
    assert "tok:13a" in scores.bleu_signature and "nrefs:1" in scores.bleu_signature
    assert score_corpus(["völlig anders"] * 2, refs).bleu < 5
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        score_corpus(refs, refs[:1])


def test_gleu_by_hand():
    # hyp: a b c d (10 n-grams), ref: a b c e (10 n-grams);
    # matches: a b c, ab bc, abc -> 6 -> min(6/10, 6/10) = 0.6
    assert sentence_gleu("a b c d", "a b c e") == pytest.approx(0.6)
    # hyp shorter: "a b" has 3 n-grams, all in the ref of 10 -> min(1, 0.3)
    assert sentence_gleu("a b", "a b c e") == pytest.approx(0.3)
    assert sentence_gleu("a b c e", "a b c e") == 1.0
    assert sentence_gleu("", "a") == 0.0
    assert corpus_gleu(["a b c d", "a b"], ["a b c e", "a b c e"]) == pytest.approx(
        (6 + 3) / (10 + 10))
