"""A SavedModel exported with a vocabulary shortlist searches in the graph
as the Translator with that shortlist does, with allowlisted ops only."""

import pytest
import tensorflow as tf

from gnmt_tf.export.ops import disallowed_ops
from gnmt_tf.export.savedmodel import export_savedmodel
from gnmt_tf.decoding.shortlist import Shortlist
from gnmt_tf.text.lexical_table import read_lexical_table
from gnmt_tf.translator import SearchOptions, Translator


@pytest.mark.slow
def test_shortlisted_export_matches_translator(tiny_model_dir, toy_corpus,
                                               tmp_path):
    translator = Translator.from_model_dir(tiny_model_dir)
    subwords = translator.subwords
    pieces = [subwords.id_pieces([i])[0] for i in range(4, 40)]
    table = tmp_path / "lex.tsv"
    table.write_text("".join(f"{a}\t{b}\t0.5\n" for a, b in
                             zip(pieces, pieces[1:] + pieces[:1]))
                     + "".join(f"\t{p}\t3\n" for p in pieces[:10]),
                     encoding="utf-8")
    options = SearchOptions(beam_size=2)
    path = export_savedmodel(tiny_model_dir, tmp_path / "exp" / "m" / "1",
                             options, warmup_sentences=[],
                             shortlist=(str(table), 2, 5))
    assert disallowed_ops(path) == []
    translator.shortlist = Shortlist.from_table(
        read_lexical_table(table), subwords, top_k=2, frequent=5)
    sentences = [en for en, _ in toy_corpus[:4]]
    expected = translator.translate(sentences, options)
    served = tf.saved_model.load(str(path)).signatures["serving_default"](
        text=tf.constant(sentences))
    assert [t.decode() for t in served["translations"].numpy()] == expected
