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
    # Token sequences of any kind (subword ids): "1 2 2" vs "2 2": n-grams
    # 1, 2, 2, 12, 22, 122 (6) and 2, 2, 22 (3); clipped matches 2, 2, 22.
    assert sentence_gleu([1, 2, 2], [2, 2]) == pytest.approx(3 / 6)
    assert sentence_gleu([], []) == 0.0


def test_gleu_is_min_of_precision_and_recall():
    # "the the the the" vs "the cat": hyp n-grams 4+3+2+1 = 10, ref 3;
    # clipped matches: "the" once -> precision 1/10, recall 1/3.
    assert sentence_gleu("the the the the", "the cat") == pytest.approx(0.1)
    # Symmetric when output and target switch (the paper's remark).
    assert sentence_gleu("the cat", "the the the the") == pytest.approx(0.1)


def test_corpus_gleu_sums_matches_over_max_lengths():
    # Pair 1: "a b c d" vs "a" -> 1 match of max(10, 1) = 10;
    # pair 2: "a" vs "a b c d" -> 1 match of max(1, 10) = 10. Corpus
    # (Wu et al. via NLTK): (1 + 1) / (10 + 10) = 0.1, while min(summed
    # precision, summed recall) would give min(2/11, 2/11) = 0.18.
    assert corpus_gleu(["a b c d", "a"], ["a", "a b c d"]) == pytest.approx(0.1)
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        corpus_gleu(["a", "b"], ["a"])
