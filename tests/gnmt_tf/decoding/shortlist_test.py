"""Tests for gnmt_tf.decoding.shortlist: the per-batch output vocabulary,
the search over it, and its exactness when it holds every id."""

import numpy as np
import pytest
import tensorflow as tf

from gnmt_tf.decoding.shortlist import Shortlist, coverage, restrict_to
from gnmt_tf.text.lexical_table import LexicalTable
from gnmt_tf.text.subword import SPECIAL_IDS
from gnmt_tf.translator import SearchOptions, Translator

TASKS = {"gnmt": {}, "ts": {"src_lang": "en", "tgt_lang": "fr", "tags": ()}}


@pytest.fixture(scope="module", params=["gnmt", "ts"])
def family(request):
    """`(translator, task, sentences)` of a tiny trained model of each type."""
    if request.param == "gnmt":
        from tests.conftest import toy_pairs

        model_dir = request.getfixturevalue("tiny_model_dir")
        sentences = [en for en, _ in toy_pairs()[:6]]
    else:
        model_dir = request.getfixturevalue("ts_model_dir")
        multiway = request.getfixturevalue("multiway_dir")
        from gnmt_tf.data.corpus import read_lines

        sentences = read_lines(multiway / "val.en")[:6]
    return Translator.from_model_dir(model_dir), TASKS[request.param], sentences


def _full(vocabulary_size):
    """A shortlist of every id (through the frequent list)."""
    return Shortlist(np.full([vocabulary_size, 1], -1), range(vocabulary_size),
                     SPECIAL_IDS, vocabulary_size)


def test_ids_are_the_sorted_union():
    size = 12
    candidates = np.full([size, 2], -1)
    candidates[4] = [7, 8]
    candidates[5] = [8, -1]
    candidates[6] = [10, 4]
    shortlist = Shortlist(candidates, [9], SPECIAL_IDS, size)
    source = tf.constant([[4, 5, 0], [6, 3, 0]])
    ids = shortlist.ids(source).numpy()
    expected = sorted({7, 8, 10, 4, 9} | set(SPECIAL_IDS))
    np.testing.assert_array_equal(ids, expected)
    # Training-style: the reference's tokens are always in.
    with_reference = shortlist.ids(source, tf.constant([[11, 5], [-1, -1]]))
    np.testing.assert_array_equal(with_reference,
                                  sorted(set(expected) | {11, 5}))
    assert coverage(ids, [7, 11]) == 0.5 and coverage(ids, []) is None


def test_ids_outside_the_vocabulary_are_refused():
    with pytest.raises(ValueError, match="frequent"):
        Shortlist(np.full([4, 1], -1), [4], (0,), 4)


class _Pieces:
    """The `Subwords` surface `from_table` uses."""

    vocabulary_size = 10

    def __init__(self):
        self.ids = {"<unk>": 1, "▁a": 4, "▁b": 5, "▁x": 6, "▁y": 7, "▁z": 8}

    def piece_id(self, piece):
        return self.ids.get(piece, 1)


def test_from_table_keeps_top_k_known_pieces():
    table = LexicalTable(
        translations={"▁a": [("▁x", 0.6), ("Tokio", 0.3), ("▁y", 0.05),
                             ("▁z", 0.05)],
                      "東京": [("▁z", 1.0)],  # an <unk> surface: no row
                      "▁b": [("▁y", 1.0)]},
        frequencies=[("Haus", 9), ("▁z", 5), ("▁y", 3)])
    shortlist = Shortlist.from_table(table, _Pieces(), top_k=2, frequent=1)
    np.testing.assert_array_equal(shortlist.candidates[4], [6, 7])
    np.testing.assert_array_equal(shortlist.candidates[5], [7, -1])
    assert (shortlist.candidates[1] == -1).all()
    np.testing.assert_array_equal(shortlist.base, sorted(SPECIAL_IDS + (8,)))


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_shortlist_of_every_id_is_the_unrestricted_search(family,
                                                            beam_size):
    translator, task, sentences = family
    full = Translator(translator.model, translator.subwords,
                      shortlist=_full(translator.model.config.vocabulary_size))
    options = SearchOptions(beam_size=beam_size,
                            num_hypotheses=min(2, beam_size))
    expected = translator.translate_nbest(sentences, options, **task)
    assert full.translate_nbest(sentences, options, **task) == expected
    assert any(h[0].text for h in expected)


def test_restricted_step_is_the_full_softmax_renormalised(family):
    translator, task, sentences = family
    model = translator.model
    ids = translator.task_ids(**task)
    task_tensors = {k: tf.constant([v]) for k, v in ids.items()}
    source_ids, _ = translator.tokenize(tf.constant(sentences[:1]),
                                        task_tensors)
    state = model.initial_state(model.encode(source_ids, **task_tensors), 4)
    rows = tf.constant(sorted(set(SPECIAL_IDS) | {5, 9, 17, 20}), tf.int32)
    restricted = restrict_to(model, rows, model.config.bos_id,
                             model.config.eos_id)
    assert int(tf.gather(rows, restricted.start_id)) == model.config.bos_id
    assert int(tf.gather(rows, restricted.end_id)) == model.config.eos_id
    log_probs, attention, _ = restricted.step_fn(
        tf.fill([1], restricted.start_id), state)
    full, full_attention, _ = model.step(tf.constant([model.config.bos_id]),
                                         state)
    expected = tf.nn.log_softmax(tf.gather(full, rows, axis=1))
    np.testing.assert_allclose(log_probs, expected, atol=1e-5)
    np.testing.assert_allclose(attention, full_attention, atol=1e-6)


def test_outputs_use_only_shortlist_ids(family):
    translator, task, sentences = family
    size = translator.model.config.vocabulary_size
    candidates = np.full([size, 1], -1)
    shortlist = Shortlist(candidates, [5, 6, 7, 8, 9], SPECIAL_IDS, size)
    restricted = Translator(translator.model, translator.subwords,
                            shortlist=shortlist)
    ids = translator.task_ids(**task)
    task_tensors = [tf.constant([ids[t.name]] * len(sentences))
                    for t in translator.task_inputs]
    out = restricted.search_fn(SearchOptions(beam_size=3, num_hypotheses=3),
                               details=True)(tf.constant(sentences),
                                             *task_tensors)
    lengths = out["lengths"].numpy()
    allowed = set(SPECIAL_IDS) | {5, 6, 7, 8, 9}
    used = {int(i) for b, row in enumerate(out["ids"].numpy())
            for n, hyp in enumerate(row) for i in hyp[:lengths[b, n]]}
    assert used and used <= allowed
    # Padding after each hypothesis stays 0.
    for b, row in enumerate(out["ids"].numpy()):
        for n, hyp in enumerate(row):
            assert (hyp[lengths[b, n]:] == 0).all()
