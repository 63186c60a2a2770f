"""The n-gram LM predictor against kenlm's own scores."""

import math

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

kenlm = pytest.importorskip("kenlm")

import tensorflow as tf  # noqa: E402

from gnmt_tf.lm.arpa import estimate_arpa  # noqa: E402
from gnmt_tf.lm.predictor import NgramLMPredictor  # noqa: E402
from gnmt_tf.lm.predictor import lm_tokens  # noqa: E402
from gnmt_tf.text.subword import BOS_ID  # noqa: E402
from gnmt_tf.text.subword import EOS_ID  # noqa: E402
from gnmt_tf.text.subword import Subwords  # noqa: E402
from gnmt_tf.text.subword import train_sentencepiece  # noqa: E402


@pytest.fixture(scope="module")
def lm(toy_corpus, tmp_path_factory):
    """A 3-gram LM over the pieces of a toy German vocabulary."""
    path = tmp_path_factory.mktemp("lm")
    german = [de for _, de in toy_corpus]
    train_sentencepiece(german, path / "spm", vocabulary_size=60)
    subwords = Subwords(path / "spm.model")
    estimate_arpa(lm_tokens(subwords, subwords.encode(german[::2])), 3,
                  path / "lm.arpa")
    return subwords, path / "lm.arpa"


@pytest.mark.parametrize("sentence", [
    "Ein alter Hund schläft.",           # in the LM's half of the corpus
    "Ein junger Mädchen läuft.",
    "Katze Katze Hund springt isst.",    # unseen n-grams: backoff
])
def test_step_scores_equal_kenlm_full_scores(lm, sentence):
    """Stepping through a sentence's pieces, the score of each next piece
    (and of the end token) is kenlm's `full_scores` times ln 10; two rows
    of one batch (the sentence and a prefix of it) do not mix."""
    subwords, path = lm
    predictor = NgramLMPredictor(path, subwords, BOS_ID, EOS_ID)
    assert predictor.order == 3
    ids = subwords.encode([sentence])[0]
    pieces = lm_tokens(subwords, [ids])[0]
    expected = [s * math.log(10) for s, _, _ in kenlm.Model(str(path))
                .full_scores(" ".join(pieces))]
    targets = ids + [EOS_ID]
    state = predictor.initial_state(2)
    inputs = [BOS_ID] + ids
    other = [BOS_ID, ids[0]] + [ids[0]] * len(ids)
    for t, (token, target) in enumerate(zip(inputs, targets)):
        scores, attention, state = predictor.step(
            tf.constant([token, other[t]]), state)
        assert attention is None
        assert scores.shape == (2, subwords.vocabulary_size)
        assert float(scores[0, target]) == pytest.approx(expected[t],
                                                         abs=1e-4)
    np.testing.assert_array_equal(state["context"][0], targets[-3:-1])


def test_every_piece_is_scored(lm):
    """One step scores the whole vocabulary: the end token as </s>,
    control pieces as <unk>, a distribution over the LM's vocabulary."""
    subwords, path = lm
    predictor = NgramLMPredictor(path, subwords, BOS_ID, EOS_ID)
    scores, _, _ = predictor.step(tf.constant([BOS_ID]),
                                  predictor.initial_state(1))
    scores = scores.numpy()[0]
    model = kenlm.Model(str(path))
    unk = next(model.full_scores("<unk>", bos=True, eos=False))[0]
    for i in range(subwords.vocabulary_size):
        if subwords.is_control(i) and i != EOS_ID:
            assert scores[i] == pytest.approx(unk * math.log(10), abs=1e-5)
    # Pieces the LM never saw score as <unk> too: count <unk> once.
    words = {w if w in model else "<unk>": s
             for w, s in zip(predictor.words, scores)}
    assert sum(np.exp(list(words.values()))) == pytest.approx(1.0, abs=1e-4)


def test_missing_model_file(lm, tmp_path):
    subwords, _ = lm
    with pytest.raises(FileNotFoundError, match="not found"):
        NgramLMPredictor(tmp_path / "none.arpa", subwords, BOS_ID, EOS_ID)
