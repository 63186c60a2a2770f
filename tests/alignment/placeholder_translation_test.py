"""Tests for gnmt_tf.alignment.placeholder_translation."""

import numpy as np
import pytest

from gnmt_tf.alignment.placeholder_translation import (HashPlaceholderMasker,
                                                       PlaceholderTranslator,
                                                       map_placeholders,
                                                       preserved_fraction,
                                                       repair_missing)
from gnmt_tf.alignment.placeholders import PLACEHOLDER_TOKENS, Entity, Masker

N = "⟦NUM⟧"
P = "⟦PERSON⟧"


def test_mapping_with_several_placeholders_of_one_type():
    source = ["▁between", "▁", N, "▁and", "▁", N, "▁or", "▁", N]
    target = ["▁zwischen", "▁", N, "▁oder", "▁", N, "▁und", "▁", N]
    # Target placeholder rows 2, 5, 8; source placeholder columns 2, 5, 8.
    # Gold: target #0 -> entity 1, #1 -> entity 2, #2 -> entity 0.
    scores = np.full([9, 9], 0.01)
    scores[2, 5], scores[2, 2] = 0.9, 0.3
    scores[5, 8], scores[5, 5] = 0.6, 0.7    # argmax alone picks entity 1
    scores[8, 2], scores[8, 5] = 0.8, 0.5
    assert map_placeholders(scores, source, target, "conv_head") == [1, 2, 0]
    assert map_placeholders(scores, source, target,
                            "attention_argmax") == [1, 1, 0]
    assert map_placeholders(None, source, target, "order") == [0, 1, 2]


def test_mapping_respects_types_and_extra_placeholders():
    source = ["▁", P, "▁", N, "▁", P]
    target = ["▁", N, "▁", P, "▁", P, "▁", P, "▁", "⟦URL⟧"]
    scores = np.zeros([10, 6])
    scores[1, 1] = 0.99  # a NUM row preferring a PERSON column is ignored
    scores[3, 5], scores[5, 1], scores[7, 1] = 0.9, 0.8, 0.7
    mapping = map_placeholders(scores, source, target, "conv_head")
    assert mapping == [1, 2, 0, None, None]
    with pytest.raises(ValueError, match="unknown method"):
        map_placeholders(scores, source, target, "magic")


def test_hash_masker_round_trip_and_preservation():
    masker = HashPlaceholderMasker()
    text = "Hallo #NAME#, rufen Sie #PHONENUMBER# an oder #NAME#."
    masked, entities = masker.mask(text)
    assert masked == "Hallo ⟦NAME⟧, rufen Sie ⟦NUM⟧ an oder ⟦NAME⟧."
    assert [e.text for e in entities] == ["#NAME#", "#PHONENUMBER#", "#NAME#"]
    assert preserved_fraction([text], ["Bonjour #NAME#, #NAME# !"]) == (
        pytest.approx(2 / 3))
    assert preserved_fraction(["no tags"], ["x"]) == 1.0


def test_repair_inserts_missing_entities():
    entities = [Entity("NUM", "5", (0, 1)), Entity("NUM", "7", (2, 3)),
                Entity("NAME", "Bob", (4, 7))]
    text, mapping = repair_missing(f"a {N} b c", [1], entities,
                                   {0: 2, 2: -1})
    assert text == f"⟦NAME⟧ a {N} b {N} c"
    assert mapping == [2, 1, 0]


class _FakeSubwords:
    """Whitespace 'subwords': each word is one `▁word` piece."""

    def __init__(self):
        self.vocab = {}

    def pieces(self, text):
        out = []
        for word in text.split():
            out += ["▁", word] if word in PLACEHOLDER_TOKENS else ["▁" + word]
        return out

    def encode(self, sentences):
        return [[self.vocab.setdefault(p, len(self.vocab) + 4)
                 for p in self.pieces(s)] for s in sentences]


class _FakeTranslator:
    """'Translates' by swapping the two words around 'and' (word reordering)
    and by dropping the last placeholder when asked to."""

    def __init__(self, drop_last=False):
        self.subwords = _FakeSubwords()
        self.drop_last = drop_last

    def task_ids(self, **task):
        return {}

    def translate(self, sentences, options=None, batch_size=32):
        out = []
        for s in sentences:
            words = s.split()
            k = words.index("and")
            words = words[k + 1:] + ["und"] + words[:k]
            if self.drop_last:
                words = words[:-1]
            out.append(" ".join(words))
        return out


class _FakeModel:
    """Forced alignment that knows the swap: target word w came from source
    word perm[w]; every piece pair of aligned words gets 0.9."""

    source_prefix = None

    def __init__(self, subwords):
        self.subwords = subwords

    def forced_alignment(self, source_ids, target_ids, task_inputs=None):
        from gnmt_tf.alignment.aligned_model import word_index_of_pieces
        piece = {i: p for p, i in self.subwords.vocab.items()}
        probabilities = []
        for s, t in zip(source_ids, target_ids):
            s_words = word_index_of_pieces([piece[i] for i in s])
            t_words = word_index_of_pieces([piece[i] for i in t])
            k = [piece[i] for i in s].index("▁and")
            k = s_words[k]
            n = s_words[-1] + 1
            perm = list(range(k + 1, n)) + [k] + list(range(k))
            p = np.zeros([len(t) + 1, len(s) + 1])
            for a, w in enumerate(t_words):
                for b, v in enumerate(s_words):
                    if perm[w] == v:
                        p[a, b] = 0.9
            probabilities.append(p)
        return probabilities, probabilities


def _pair(drop_last=False):
    translator = _FakeTranslator(drop_last)
    return translator, _FakeModel(translator.subwords)


def test_end_to_end_restore_round_trip():
    masker = Masker(types=["NUM"], capitalized_names=False)
    sentence = "rooms 12 14 and floors 3 5"
    expected = "floors 3 5 und rooms 12 14"
    translator = PlaceholderTranslator(*_pair(), masker, method="conv_head")
    result = translator.translate_detailed([sentence])[0]
    assert result.masked_source == f"rooms {N} {N} and floors {N} {N}"
    assert result.mapping == [2, 3, 0, 1]
    assert result.translation == expected
    order = PlaceholderTranslator(*_pair(), masker, method="order",
                                  repair=False)
    assert order.translate([sentence]) == ["floors 12 14 und rooms 3 5"]
    # A dropped placeholder comes back (after the word most aligned with
    # it; this fake aligns nothing to it, so after the first word).
    repaired = PlaceholderTranslator(*_pair(drop_last=True), masker)
    assert repaired.translate([sentence]) == ["floors 14 3 5 und rooms 12"]
    unrepaired = PlaceholderTranslator(*_pair(drop_last=True), masker,
                                       repair=False)
    assert unrepaired.translate([sentence]) == ["floors 3 5 und rooms 12"]
    # No entities: the text passes through.
    assert repaired.translate(["a and b"]) == ["b und"]


def test_placeholders_are_sentencepiece_symbols(tmp_path):
    from gnmt_tf.text.subword import Subwords, train_sentencepiece
    from gnmt_tf.alignment.aligned_model import word_index_of_pieces

    sentences = [f"a dog number {t} runs" for t in PLACEHOLDER_TOKENS] * 20
    path = train_sentencepiece(sentences, tmp_path / "spm", 40,
                               user_defined_symbols=PLACEHOLDER_TOKENS)
    pieces = Subwords(path).pieces(f"rooms {N} and {N}{N}.")
    assert pieces.count(N) == 3
    words = word_index_of_pieces(pieces)
    assert words[pieces.index(N)] == words[pieces.index(N) - 1]


def test_real_model_path_keeps_every_tag(tmp_path):
    """GNMT + Translator + head end to end: even an untrained model's
    output gets every `#TAG#` back (repair), restored verbatim."""
    import gnmt_tf  # noqa: F401
    import tf_keras as keras

    from gnmt_tf.alignment.aligned_model import AlignedTranslationModel
    from gnmt_tf.config import apply_overrides
    from gnmt_tf.models.gnmt.model import GNMT
    from gnmt_tf.models.gnmt.presets import get_preset
    from gnmt_tf.text.subword import Subwords, train_sentencepiece
    from gnmt_tf.translator import Translator

    sentences = [f"call {t} or {t} at home" for t in PLACEHOLDER_TOKENS] * 10
    path = train_sentencepiece(sentences, tmp_path / "spm", 40,
                               user_defined_symbols=PLACEHOLDER_TOKENS)
    subwords = Subwords(path)
    keras.utils.set_random_seed(0)
    config = apply_overrides(get_preset("gnmt_tiny")[0],
                             [f"vocabulary_size={subwords.vocabulary_size}"])
    aligned = AlignedTranslationModel(GNMT(config))
    aligned(aligned.dummy_inputs())
    translator = PlaceholderTranslator(Translator(aligned, subwords),
                                       aligned, HashPlaceholderMasker())
    sources = ["call #NAME# or #NAME# at #NUMBER#", "no tags here", ""]
    results = translator.translate_detailed(sources)
    assert preserved_fraction(sources, [r.translation for r in results]) == 1
    assert results[0].translation.count("#NAME#") >= 2
    assert "⟦" not in " ".join(r.translation for r in results)
    assert results[2].translation == ""
