"""Property tests (Hypothesis) of the text codecs: UTF-8 line decoding
(`gnmt_tf.data.corpus.decode_lines`) and the SentencePiece wrappers
(`gnmt_tf.text.subword.Subwords`) on random bytes and Unicode."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gnmt_tf.data.corpus import decode_lines
from gnmt_tf.text.subword import Subwords, train_sentencepiece

any_char = st.characters(blacklist_categories=("Cs",))
sentences = st.lists(st.text(any_char, max_size=30), max_size=8)
# Words made of the training text's letters round-trip exactly.
KNOWN = "abcdefghijklmnopqrstuvwxyz"
known_words = st.lists(st.text(KNOWN, min_size=1, max_size=6), min_size=1,
                       max_size=5).map(" ".join)


@pytest.fixture(scope="module")
def subwords(tmp_path_factory, toy_corpus):
    text = [s for pair in toy_corpus for s in pair] + [KNOWN, KNOWN.upper()]
    prefix = tmp_path_factory.mktemp("codec") / "spm"
    return Subwords(train_sentencepiece(text, prefix, 100))


def _check_decode_lines(raw):
    try:
        lines = decode_lines(raw, "input")
    except ValueError as e:
        assert str(e).startswith("input:") and "invalid UTF-8" in str(e)
        return
    parts = raw.split(b"\n")
    assert len(lines) == len(parts) - (parts[-1] == b"")
    assert all("\n" not in line for line in lines)


@given(raw=st.binary(max_size=200))
def test_decode_lines_one_line_per_newline_or_a_named_error(raw):
    _check_decode_lines(raw)


def _check_subwords(subwords, batch):
    ids = subwords.encode(batch)
    assert len(ids) == len(batch)
    assert all(0 <= i < subwords.vocabulary_size for row in ids for i in row)
    texts = subwords.decode(ids)
    assert len(texts) == len(batch)
    assert all(isinstance(t, str) for t in texts)


@settings(max_examples=40)
@given(batch=sentences)
def test_subwords_encode_decode_any_unicode(subwords, batch):
    _check_subwords(subwords, batch)


@settings(max_examples=40)
@given(sentence=known_words)
def test_subwords_round_trip_known_text(subwords, sentence):
    assert subwords.decode(subwords.encode([sentence])) == [sentence]


@settings(max_examples=15)
@given(batch=sentences)
def test_in_graph_tokenizer_matches_python(subwords, batch):
    import tensorflow as tf

    graph = subwords.tf_tokenizer.tokenize(tf.constant(batch, tf.string))
    assert graph.to_list() == subwords.encode(batch)


@pytest.mark.slow
@settings(settings.get_profile("long"))
@given(raw=st.binary(max_size=2000), batch=sentences)
def test_codecs_long(subwords, raw, batch):
    _check_decode_lines(raw)
    _check_subwords(subwords, batch)
