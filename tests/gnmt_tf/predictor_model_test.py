"""`PredictorModel` (models and predictors as one Seq2SeqModel) on the tiny
trained GNMT model: identities against the single model, the combined step
against its members, the CLI's ensemble and rescoring flags, errors."""

import shutil

import numpy as np
import pytest

import gnmt_tf  # noqa: F401

import tensorflow as tf

from gnmt_tf.cli.main import main
from gnmt_tf.decoding.ensemble import WordCountPredictor
from gnmt_tf.model_dir import load_model
from gnmt_tf.predictor_model import PredictorModel
from gnmt_tf.predictor_model import load_predictors
from gnmt_tf.rescoring import score_pairs
from gnmt_tf.translator import SearchOptions
from gnmt_tf.translator import Translator

SENTENCES = ["A big dog runs.", "A small cat eats.", "A young girl plays."]
BEAM = SearchOptions(beam_size=3, length_penalty=0.6, coverage_penalty=0.2,
                     num_hypotheses=2)


@pytest.fixture(scope="module")
def loaded(tiny_model_dir):
    """The tiny model, its vocabulary, and a second model: the same
    architecture with perturbed weights (another model of one vocabulary)."""
    model, subwords, _ = load_model(tiny_model_dir)
    other, _, _ = load_model(tiny_model_dir)
    rng = np.random.default_rng(0)
    for v in other.variables:
        v.assign(v + 0.3 * rng.standard_normal(v.shape).astype(
            v.dtype.as_numpy_dtype))
    return model, other, subwords


@pytest.fixture(scope="module")
def single(loaded):
    model, _, subwords = loaded
    return Translator(model, subwords)


def _nbest(translator, options=BEAM):
    return [[(h.text, h.score) for h in hyps]
            for hyps in translator.translate_nbest(SENTENCES, options)]


def test_weight_zero_reproduces_the_single_model(loaded, single):
    model, other, subwords = loaded
    wc = WordCountPredictor(subwords.vocabulary_size, model.config.eos_id)
    combined = Translator(PredictorModel([model, other, wc], [1, 0, 0]),
                          subwords)
    assert _nbest(combined) == _nbest(single)
    greedy = SearchOptions(beam_size=1)
    assert _nbest(combined, greedy) == _nbest(single, greedy)


def test_model_with_itself(loaded, single):
    """Log-linear weights 1, 1: the same translations, scores doubled
    (exactly); average mode: the same translations and scores."""
    model, _, subwords = loaded
    loglinear = Translator(PredictorModel([model, model]), subwords)
    average = Translator(PredictorModel([model, model], [1, 3], "average"),
                         subwords)
    options = SearchOptions(beam_size=3, num_hypotheses=2)
    expected = _nbest(single, options)
    got = _nbest(loglinear, options)
    assert [[t for t, _ in h] for h in got] == [[t for t, _ in h]
                                               for h in expected]
    np.testing.assert_array_equal([[s for _, s in h] for h in got],
                                  [[2 * s for _, s in h] for h in expected])
    got = _nbest(average, options)
    assert [[t for t, _ in h] for h in got] == [[t for t, _ in h]
                                               for h in expected]
    np.testing.assert_allclose([[s for _, s in h] for h in got],
                               [[s for _, s in h] for h in expected],
                               rtol=1e-5)


def test_step_is_the_weighted_sum(loaded):
    model, other, subwords = loaded
    wc = WordCountPredictor(subwords.vocabulary_size, model.config.eos_id)
    combined = PredictorModel([model, other, wc], [0.7, 1.3, 0.2])
    source = tf.constant(subwords.encode(["A big dog runs."])[0]
                         + [model.config.eos_id])[tf.newaxis]
    state = combined.initial_state(combined.encode(source))
    ids = tf.constant([model.config.bos_id])
    scores, attention, new = combined.step(ids, state)
    lp_a, att_a, _ = model.step(ids, model.initial_state(model.encode(source)))
    lp_b, att_b, _ = other.step(ids, other.initial_state(other.encode(source)))
    bonus = 1.0 - tf.one_hot(model.config.eos_id, subwords.vocabulary_size)
    np.testing.assert_allclose(scores, 0.7 * lp_a + 1.3 * lp_b + 0.2 * bonus,
                               rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(attention, (0.7 * att_a + 1.3 * att_b) / 2.0,
                               rtol=1e-5, atol=1e-6)
    assert sorted(new) == ["p0", "p1", "p2"] and new["p2"] == {}
    assert combined.max_step_score == pytest.approx(0.2)


def test_forced_decoding_scores_the_search_output(loaded):
    """The n-best of a log-linear ensemble, scored again by forced
    decoding (`score_pairs`), get the scores the search gave them."""
    model, other, subwords = loaded
    translator = Translator(PredictorModel([model, other], [1.0, 0.5]),
                            subwords)
    # More sentences than the other tests: how many hypotheses are clean
    # (below) depends on the trained tiny model.
    sentences = SENTENCES + ["A old man sleeps.", "A small boy jumps.",
                             "A big horse eats.", "A young woman runs."]
    nbest = translator.translate_nbest(sentences, BEAM)
    # Texts whose pieces come back from the text (no doubled or edge
    # spaces, which SentencePiece normalises away).
    pairs = [(s, h) for s, hyps in zip(sentences, nbest) for h in hyps
             if h.text == " ".join(h.text.split())]
    assert len(pairs) >= 3
    scores = score_pairs(translator, [s for s, _ in pairs],
                         [h.text for _, h in pairs], 0.6, 0.2, batch_size=4)
    np.testing.assert_allclose(scores, [h.score for _, h in pairs],
                               rtol=1e-4, atol=1e-4)


def test_exact_search_refuses_positive_step_scores(loaded):
    from gnmt_tf.decoding.exact_search import exact_translate

    model, _, subwords = loaded
    wc = WordCountPredictor(subwords.vocabulary_size, model.config.eos_id)
    translator = Translator(PredictorModel([model, wc], [1, 0.5]), subwords)
    with pytest.raises(ValueError, match="scores <= 0"):
        exact_translate(translator, SENTENCES[0])
    # A weight of 0 keeps the bound at 0: allowed.
    zero = Translator(PredictorModel([model, wc], [1, 0]), subwords)
    assert exact_translate(zero, SENTENCES[0], max_length=3).optimal


@pytest.fixture(scope="module")
def other_vocab_dir(tiny_model_dir, toy_corpus, tmp_path_factory):
    """A copy of the tiny model directory with another SentencePiece
    model."""
    from gnmt_tf.text.subword import train_sentencepiece

    path = tmp_path_factory.mktemp("other_vocab") / "model"
    shutil.copytree(tiny_model_dir, path)
    train_sentencepiece([de for _, de in toy_corpus] * 2,
                        path / "spm", vocabulary_size=60)
    return path


@pytest.mark.parametrize("kwargs,match", [
    (dict(predictors=["nmt"]), "1 nmt predictor"),
    (dict(predictors=["nmt", "nmt", "nmt"]), "3 nmt predictor"),
    (dict(weights=[1.0]), "1 weights for 2 predictors"),
    (dict(weights=[1.0, -1.0]), ">= 0"),
    (dict(weights=[1.0, float("nan")]), ">= 0"),
    (dict(predictors=["nmt", "nmt", "lm"]), "needs a language model"),
    (dict(predictors=["nmt", "nmt", "bogus"]), "unknown predictor"),
    (dict(ensemble_mode="max"), "ensemble mode must be one of"),
])
def test_load_predictors_errors(tiny_model_dir, kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_predictors([tiny_model_dir, tiny_model_dir], **kwargs)


def test_mismatched_vocabularies_are_refused(tiny_model_dir, other_vocab_dir):
    with pytest.raises(ValueError, match="another SentencePiece vocabulary"):
        load_predictors([tiny_model_dir, other_vocab_dir])


def _cli(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_ensemble_and_rescore(tiny_model_dir, tmp_path, capsys, single):
    source = tmp_path / "src.txt"
    source.write_text("".join(s + "\n" for s in SENTENCES))
    code, alone, _ = _cli(capsys, "translate", "--model", tiny_model_dir,
                          "--input", source, "--n-best", "2", "--beam-size",
                          "3")
    assert code == 0
    config = tmp_path / "predictors.yaml"
    config.write_text(f"model: [{tiny_model_dir}, {tiny_model_dir}]\n"
                      "predictors: nmt,nmt,wc\nweights: [1, 0, 0]\n")
    code, ensemble, _ = _cli(capsys, "translate", "--predictor-config",
                             config, "--input", source, "--n-best", "2",
                             "--beam-size", "3")
    assert code == 0 and ensemble == alone
    # Rescoring the n-best under the model itself with --alpha 0.6: the
    # scores the search printed, in the same order.
    nbest = tmp_path / "nbest.txt"
    nbest.write_text(alone)
    code, rescored, err = _cli(capsys, "translate", "--model", tiny_model_dir,
                               "--model", tiny_model_dir, "--weights", "1,0",
                               "--rescore", nbest, "--input", source,
                               "--alpha", "0.6")
    assert code == 0, err
    old = [line.rsplit(" ||| ", 1) for line in alone.splitlines()]
    new = [line.rsplit(" ||| ", 1) for line in rescored.splitlines()]
    assert [t for t, _ in new] == [t for t, _ in old]
    np.testing.assert_allclose([float(s) for _, s in new],
                               [float(s) for _, s in old], atol=2e-4)


@pytest.mark.parametrize("flags,message", [
    (["--weights", "1"], "got 1 weights for 2 predictors"),
    (["--weights", "1,-2"], "weights must be finite and >= 0"),
    (["--weights", "1,nan"], "weights must be finite and >= 0"),
    (["--weights", "1,x"], "weights must be comma-separated numbers"),
    (["--predictors", "nmt,nmt,lm"], "the lm predictor needs a language "
                                     "model file"),
])
def test_cli_errors_are_one_line(tiny_model_dir, capsys, flags, message):
    code, out, err = _cli(capsys, "translate", "--model", tiny_model_dir,
                          "--model", tiny_model_dir, *flags)
    assert code == 2 and message in err and len(err.splitlines()) == 1


def test_cli_mismatched_vocabularies(tiny_model_dir, other_vocab_dir, capsys):
    code, _, err = _cli(capsys, "translate", "--model", tiny_model_dir,
                        "--model", other_vocab_dir)
    assert code == 2 and "another SentencePiece vocabulary" in err


@pytest.fixture(scope="module")
def lm_file(tiny_model_dir, toy_corpus, tmp_path_factory):
    """A 3-gram LM over the tiny model's pieces, through `gnmt-tf lm`."""
    pytest.importorskip("kenlm")
    path = tmp_path_factory.mktemp("lm")
    (path / "de.txt").write_text("".join(de + "\n" for _, de in toy_corpus))
    assert main(["lm", "--model", str(tiny_model_dir), "--text",
                 str(path / "de.txt"), "--order", "3", "--out",
                 str(path / "lm.arpa")]) == 0
    return path / "lm.arpa"


def test_lm_predictor_in_search_and_forced_decoding(loaded, single, lm_file):
    """Weight 0 reproduces the model; with weight 0.5 forced decoding
    scores the search's outputs as the search did."""
    from gnmt_tf.lm.predictor import NgramLMPredictor

    model, _, subwords = loaded
    lm = NgramLMPredictor(lm_file, subwords, model.config.bos_id,
                          model.config.eos_id)
    zero = Translator(PredictorModel([model, lm], [1, 0]), subwords)
    assert _nbest(zero) == _nbest(single)
    translator = Translator(PredictorModel([model, lm], [1, 0.5]), subwords)
    assert not translator.model.servable
    options = SearchOptions(beam_size=3, num_hypotheses=2, length_penalty=0.6)
    nbest = translator.translate_nbest(SENTENCES, options)
    pairs = [(s, h) for s, hyps in zip(SENTENCES, nbest) for h in hyps
             if h.text == " ".join(h.text.split())]
    assert len(pairs) >= 3
    scores = score_pairs(translator, [s for s, _ in pairs],
                         [h.text for _, h in pairs], 0.6)
    np.testing.assert_allclose(scores, [h.score for _, h in pairs],
                               rtol=1e-4, atol=1e-4)


def test_cli_lm_predictor(tiny_model_dir, lm_file, tmp_path, capsys):
    source = tmp_path / "src.txt"
    source.write_text("".join(s + "\n" for s in SENTENCES))
    code, out, err = _cli(capsys, "translate", "--model", tiny_model_dir,
                          "--predictors", "nmt,lm,wc", "--weights",
                          "1,0.3,0.1", "--lm", lm_file, "--input", source)
    assert code == 0, err
    assert len(out.splitlines()) == len(SENTENCES)
