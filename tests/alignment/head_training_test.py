"""An alignment head added to a trained model (`gnmt-tf add-alignment-head`,
gnmt_tf.alignment.head_training, gnmt_tf.alignment.head_files): labels, training, storage,
and the head's alignment through the pipeline backend and the SavedModel."""

import json
import shutil

import numpy as np
import pytest

from gnmt_tf.alignment import head_files
from gnmt_tf.alignment import head_training
from gnmt_tf.cli.main import main


def test_subwords_map_to_the_words_fast_align_sees(tiny_model_dir):
    from gnmt_tf.text.subword import Subwords

    subwords = Subwords(tiny_model_dir / "spm.model")
    text = "Ein großer Hund, läuft."
    words = head_training.words(text)
    assert words == ["Ein", "großer", "Hund", ",", "läuft", "."]
    spans = head_training.word_byte_spans(text)
    raw = text.encode("utf-8")
    assert [raw[a:b].decode() for a, b in spans] == words
    pieces = subwords.pieces(text)
    index = head_training.piece_word_index(subwords.piece_offsets(text),
                                           spans)
    assert len(index) == len(pieces)
    for piece, k in zip(pieces, index):
        text_of_piece = piece.lstrip("\u2581")
        if k < 0:
            assert text_of_piece == ""
        else:  # the piece's text lies inside its word
            assert text_of_piece in words[k]
    # "Hund," is one SentencePiece word but two fast_align words.
    assert index[-1] == words.index(".")
    assert set(index) - {-1} == set(range(len(words)))


def test_make_examples_links_the_toy_corpus_word_for_word():
    from tests.conftest import toy_pairs

    pairs = toy_pairs()
    examples = head_training.make_examples(
        "en", "de", [s for s, _ in pairs] + ["", "A dog."],
        [t for _, t in pairs] + ["Ein Hund.", ""])
    assert len(examples) == len(pairs)  # pairs with an empty side dropped
    diagonal = sum((i, i) in e.links for e in examples for i in range(5))
    assert diagonal >= 0.9 * 5 * len(pairs)
    back = examples[0].reversed()
    assert (back.src_lang, back.source) == ("de", examples[0].target)
    assert set(back.links) == {(j, i) for i, j in examples[0].links}


@pytest.fixture(scope="module")
def head_dir(tiny_model_dir, toy_data_dir, tmp_path_factory):
    output = tmp_path_factory.mktemp("head") / "with-head"
    code = main(["add-alignment-head", "--model", str(tiny_model_dir),
                 "--data-dir", str(toy_data_dir), "--output", str(output),
                 "--steps", "60", "--lines", "160", "--score-lines", "16"])
    assert code == 0
    return output


def test_the_command_writes_a_model_directory_with_a_head(
        head_dir, tiny_model_dir):
    from gnmt_tf.model_dir import load_model

    assert {p.name for p in head_dir.iterdir()} == {
        "config.json", "spm.model", "spm.vocab", "weights.npz",
        head_files.HEAD_WEIGHTS, head_files.HEAD_CONFIG}
    info = json.loads((head_dir / head_files.HEAD_CONFIG).read_text())
    assert info["trained_on"]["directions"] == ["en-de"]
    assert info["trained_on"]["pairs"] == 160
    aer = info["scores"]["aer"]["en-de"]
    assert aer["sentences"] == 16
    assert 0.0 <= aer["aer_head"] <= 1.0
    # The translation weights are the input model's, in float16.
    original, _, _ = load_model(tiny_model_dir)
    model, _, _ = head_files.load_model(head_dir)
    assert model.freeze_translation_model
    for before, after in zip(original.weights,
                             model.translation_model.weights):
        np.testing.assert_array_equal(
            np.asarray(before.numpy(), np.float16).astype(np.float32),
            after.numpy())


def test_the_head_learns_the_links(head_dir, tiny_model_dir, toy_data_dir):
    """On the toy corpus (word i <-> word i) the trained head beats the
    prior it starts from: its alignment error is below that of an
    untrained head, scored the same way."""
    from gnmt_tf.model_dir import load_model
    from tests.conftest import toy_pairs

    pairs = toy_pairs()[::10]
    examples = head_training.make_examples(
        "en", "de", [s for s, _ in pairs], [t for _, t in pairs])
    trained, subwords, _ = head_files.load_model(head_dir)
    # The head directory keeps the translation weights in float16: compare
    # with an untrained head on those very weights, or attention argmaxes
    # that float16 rounding flips would differ for that reason alone.
    original = load_model(tiny_model_dir)[0]
    original.set_weights([np.asarray(w, np.float16).astype(np.float32)
                          for w in original.get_weights()])
    untrained = head_files.wrap_with_head(original)
    score = head_training.score_head(trained, subwords, examples)
    before = head_training.score_head(untrained, subwords, examples)
    assert score["aer_head"] < before["aer_head"]
    assert score["aer_attention_argmax"] == pytest.approx(
        before["aer_attention_argmax"], abs=1e-6)


def test_pipeline_backend_aligns_through_the_head(head_dir):
    from gnmt_tf.gateway.backends import ModelBackend
    from gnmt_tf.translator import SearchOptions

    backend = ModelBackend.from_model_dir(head_dir, SearchOptions(beam_size=1))
    model, subwords = backend.model, backend.translator.subwords
    sentences = ["A big dog runs.", "A small cat eats."]
    results = backend(sentences, "en", "de")
    targets = [[subwords.piece_id(p) for p in r.target_pieces]
               for r in results]
    probabilities, attention = model.forced_alignment(
        subwords.encode(sentences), targets)
    for result, expected, raw, target in zip(results, probabilities,
                                             attention, targets):
        shape = (len(target), len(result.source_pieces))
        assert result.alignment.shape == shape
        np.testing.assert_allclose(
            result.alignment, expected[:shape[0], :shape[1]], atol=1e-5)
        assert not np.allclose(result.alignment, raw[:shape[0], :shape[1]],
                               atol=1e-3)


def test_savedmodel_alignment_signature_uses_the_head(head_dir, tmp_path):
    import tensorflow as tf

    from gnmt_tf.export.savedmodel import ALIGNMENT_SIGNATURE, export_savedmodel
    from gnmt_tf.gateway.backends import ModelBackend
    from gnmt_tf.translator import SearchOptions

    options = SearchOptions(beam_size=1)
    export_savedmodel(head_dir, tmp_path / "1", options,
                      warmup_sentences=[], beam_sizes=(1,))
    signature = tf.saved_model.load(
        str(tmp_path / "1")).signatures[ALIGNMENT_SIGNATURE]
    served = signature(text=tf.constant(["A big dog runs."]))
    local = ModelBackend.from_model_dir(head_dir, options)(
        ["A big dog runs."], "en", "de")[0]
    t, s = local.alignment.shape
    np.testing.assert_allclose(served["alignment"].numpy()[0, :t, :s],
                               local.alignment, atol=1e-4)


def test_errors_are_one_line(head_dir, tiny_model_dir, toy_data_dir,
                             tmp_path, capsys):
    base = ["add-alignment-head", "--model", str(tiny_model_dir),
            "--data-dir", str(toy_data_dir)]
    assert main(base + ["--output", str(head_dir)]) == 2
    assert "exists" in capsys.readouterr().err
    assert main(base + ["--output", str(tmp_path / "x"),
                        "--directions", "de-en"]) == 2
    err = capsys.readouterr().err
    assert "translates en-de only" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "x").exists()
    with pytest.raises(SystemExit):
        main(base + ["--output", str(tmp_path / "y"), "--steps", "0"])
    broken = tmp_path / "broken"
    shutil.copytree(head_dir, broken)
    (broken / head_files.HEAD_CONFIG).write_text("{")
    with pytest.raises(ValueError, match="not an alignment head config"):
        head_files.load_model(broken)
