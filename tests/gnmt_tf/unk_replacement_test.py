"""Tests for gnmt_tf.unk_replacement: output `<unk>`s replaced from the
attention, on inputs with characters the vocabulary lacks."""

import numpy as np
import pytest
import tensorflow as tf

from gnmt_tf.text.lexical_table import LexicalTable
from gnmt_tf.text.subword import EOS_ID, UNK_ID, Subwords
from gnmt_tf.translator import SearchOptions, Translator
from gnmt_tf.unk_replacement import UnkReplacer


@pytest.fixture(scope="module")
def subwords(tiny_model_dir):
    return Subwords(tiny_model_dir / "spm.model")


def _one_hot(rows, width):
    attention = np.zeros([len(rows), width])
    attention[np.arange(len(rows)), rows] = 1.0
    return attention


def test_source_unk_surface_is_recovered(subwords):
    sentence = "A dog 東京 runs."
    source = subwords.encode_pieces(sentence)
    unk_at = [i for i, (piece_id, _) in enumerate(source) if piece_id == UNK_ID]
    assert unk_at and source[unk_at[0]][1] == "東京"
    known = next(i for i, _ in source if i != UNK_ID)
    ids = [known, UNK_ID, EOS_ID]
    # Attention on the <unk> piece (after a one-token prefix).
    attention = _one_hot([0, unk_at[0] + 1, 0], len(source) + 2)
    text, replacements = UnkReplacer(subwords).replace_detailed(
        sentence, ids, attention, prefix_length=1)
    assert "東京" in text and "⁇" not in text
    assert [r[1:] for r in replacements] == [(unk_at[0], "東京", "東京", "copy")]
    # The dictionary wins over the copy.
    table = LexicalTable({"東京": [("Tokio", 0.9), ("Tokyo", 0.1)]}, [])
    text, replacements = UnkReplacer(subwords, table).replace_detailed(
        sentence, ids, attention, prefix_length=1)
    assert "Tokio" in text and replacements[0].method == "dictionary"


def test_prefix_and_end_positions_are_never_chosen(subwords):
    sentence = "☃"
    source = subwords.encode_pieces(sentence)
    snowman = [i for i, (_, piece) in enumerate(source) if piece == "☃"][0]
    # Most attention on the prefix and on the end token; a little on ☃.
    attention = np.zeros([2, 1 + len(source) + 1])
    attention[0, 0], attention[0, -1] = 0.5, 0.4
    attention[0, 1 + snowman] = 0.1
    text = UnkReplacer(subwords).replace(sentence, [UNK_ID, EOS_ID],
                                         attention, prefix_length=1)
    assert text.strip() == "☃"


def test_a_source_unk_comes_first(subwords):
    sentence = "A dog 東京 runs."
    source = subwords.encode_pieces(sentence)
    unk = [i for i, (piece_id, _) in enumerate(source) if piece_id == UNK_ID][0]
    attention = np.full([1, len(source)], 0.05)
    attention[0, 0], attention[0, unk] = 0.6, 0.2  # most on the first piece
    assert UnkReplacer(subwords).replace(sentence, [UNK_ID],
                                         attention) == "東京"
    first = UnkReplacer(subwords, source_unk_first=False).replace(
        sentence, [UNK_ID], attention)
    assert first == subwords.decode_pieces([source[0][1]])


def test_a_known_source_piece_is_copied_as_its_piece(subwords):
    sentence = "A dog runs."
    source = subwords.encode_pieces(sentence)
    at = len(source) - 1  # the final "." piece, or part of it
    piece = source[at][1]
    text = UnkReplacer(subwords).replace(
        sentence, [UNK_ID, UNK_ID], _one_hot([at, at], len(source)))
    assert text == subwords.decode_pieces([piece, piece]) and text


def test_translator_replaces_what_the_model_emits(tiny_model_dir):
    translator = Translator.from_model_dir(tiny_model_dir)
    model = translator.model
    # Make this copy of the model say <unk> at every step.
    model.output_bias.assign(
        tf.tensor_scatter_nd_add(model.output_bias, [[UNK_ID]], [100.0]))
    sentences = ["東京 ☃", "A dog 東京 runs."]
    options = SearchOptions(beam_size=2)
    plain = translator.translate(sentences, options)
    assert all("⁇" in text for text in plain)
    translator.unk_replacer = UnkReplacer(translator.subwords)
    replaced = translator.translate(sentences, options)
    assert "⁇" not in "".join(replaced)
    assert set(replaced[0]) <= set("東京☃ ") and replaced[0].strip()
    # Brute force from the search's own ids and attention.
    out = translator.search_fn(options, details=True)(tf.constant(sentences))
    for b, sentence in enumerate(sentences):
        source = translator.subwords.encode_pieces(sentence)
        length = out["lengths"][b, 0]
        pieces = []
        for t, i in enumerate(out["ids"][b, 0, :length].numpy()):
            if i == EOS_ID:
                break
            assert i == UNK_ID
            weights = out["attention"][b, 0, t, :len(source)].numpy()
            # A source <unk> first (both sentences have one).
            weights[[i != UNK_ID for i, _ in source]] = -1.0
            s = np.argmax(weights)
            pieces.append(source[s][1])
        assert replaced[b] == translator.subwords.decode_pieces(pieces)
