"""Tests for gnmt_tf.alignment.placeholders and gnmt_tf.alignment.glossary."""

import random

import pytest

from gnmt_tf.alignment.glossary import Glossary, TermMatcher
from gnmt_tf.alignment.placeholders import (PLACEHOLDER_TOKENS, Entity, Masker,
                                            augment_with_alignment, default_mapping,
                                            mapping_from_alignment, mask, placeholder,
                                            restore)


def _types(entities):
    return [e.type for e in entities]


@pytest.mark.parametrize("text, expected", [
    ("Pay $5.99 or 20 EUR.", [("MONEY", "$5.99"), ("MONEY", "20 EUR")]),
    ("It cost 3 million dollars", [("MONEY", "3 million dollars")]),
    ("Meet at 10:30 or 2 p.m. on 2024-05-01", [
        ("TIME", "10:30"), ("TIME", "2 p.m."), ("DATE", "2024-05-01")]),
    ("Born 5 May 2021, died on 12.05.2023.", [
        ("DATE", "5 May 2021"), ("DATE", "12.05.2023")]),
    ("See https://ex.com/a?b=1. Or www.ex.org!", [
        ("URL", "https://ex.com/a?b=1"), ("URL", "www.ex.org")]),
    ("Mail bob.smith+x@mail.example.org today", [
        ("EMAIL", "bob.smith+x@mail.example.org")]),
    ("Pages 10-20, 1,000,000 people and 3.14", [
        ("NUM", "10"), ("NUM", "20"), ("NUM", "1,000,000"), ("NUM", "3.14")]),
    ("No digits in A4 or 3D or 2nd.", []),
])
def test_detectors(text, expected):
    entities = Masker(capitalized_names=False).detect(text)
    assert [(e.type, e.text) for e in entities] == expected
    for e in entities:
        assert text[e.span[0]:e.span[1]] == e.text


def test_capitalisation_heuristic_skips_sentence_starts():
    text = "Yesterday John Smith met Mary in Paris. The dog barked at IBM."
    masked, entities = Masker().mask(text)
    assert [e.text for e in entities] == ["John Smith", "Mary", "Paris", "IBM"]
    assert masked == ("Yesterday ⟦NAME⟧ met ⟦NAME⟧ in ⟦NAME⟧. "
                      "The dog barked at ⟦NAME⟧.")
    # A run that starts the sentence keeps its later words.
    assert [e.text for e in Masker().detect("Anna Maria Schmidt sang.")] == [
        "Maria Schmidt"]
    assert Masker().detect("I think so.") == []


def test_supplied_person_and_organisation_lists():
    masker = Masker(persons=["Anna Schmidt"], organizations=["Deutsche Bahn"],
                    capitalized_names=False)
    masked, entities = masker.mask("Anna Schmidt works for Deutsche Bahn.")
    assert masked == "⟦PERSON⟧ works for ⟦ORG⟧."
    assert _types(entities) == ["PERSON", "ORG"]


def test_mask_restore_round_trip_with_repeated_types():
    text = "Rooms 12 and 14 cost 80 EUR and 95 EUR on 2024-06-01."
    masked, entities = mask(text)
    assert masked == ("Rooms ⟦NUM⟧ and ⟦NUM⟧ cost ⟦MONEY⟧ and ⟦MONEY⟧ "
                      "on ⟦DATE⟧.")
    assert [(e.type, e.text) for e in entities] == [
        ("NUM", "12"), ("NUM", "14"), ("MONEY", "80 EUR"),
        ("MONEY", "95 EUR"), ("DATE", "2024-06-01")]
    assert restore(masked, entities) == text
    # Reordered output with an explicit mapping (e.g. from the alignment).
    translation = "Am ⟦DATE⟧ kosten die Zimmer ⟦NUM⟧ und ⟦NUM⟧ ⟦MONEY⟧ bzw. ⟦MONEY⟧."
    assert restore(translation, entities, [4, 1, 0, 3, 2]) == (
        "Am 2024-06-01 kosten die Zimmer 14 und 12 95 EUR bzw. 80 EUR.")


def test_adjacent_placeholders():
    entities = [Entity("NUM", "7", (0, 1)), Entity("URL", "www.a.de", (2, 10))]
    assert restore("⟦NUM⟧⟦URL⟧⟦NUM⟧", entities) == "7www.a.de"
    assert restore("x ⟦URL⟧⟦NUM⟧ y", entities) == "x www.a.de7 y"


def test_default_mapping_and_unmatched_placeholders():
    entities = [Entity("NUM", "1", (0, 1)), Entity("NUM", "2", (2, 3))]
    assert default_mapping("⟦NUM⟧ ⟦NUM⟧ ⟦NUM⟧ ⟦URL⟧", entities) == [
        0, 1, None, None]
    assert restore("a ⟦NUM⟧ b ⟦URL⟧ c", entities) == "a 1 b c"
    with pytest.raises(ValueError, match="mapping has 1 entries"):
        restore("⟦NUM⟧ ⟦NUM⟧", entities, [0])
    with pytest.raises(ValueError, match="entity 5"):
        restore("⟦NUM⟧", entities, [5])


def test_glossary_whole_words_and_longest_first():
    glossary = Glossary({"New York": "New York City", "York": "Yorck",
                         "cat": "Katze", "C++": "C++"})
    masker = Masker(glossary=glossary, capitalized_names=False)
    masked, entities = masker.mask(
        "A cat in New York, not concatenate or bobcat; York and C++.")
    assert masked == ("A ⟦TERM⟧ in ⟦TERM⟧, not concatenate or bobcat; "
                      "⟦TERM⟧ and ⟦TERM⟧.")
    assert [e.text for e in entities] == ["cat", "New York", "York", "C++"]
    assert restore(masked, entities) == (
        "A Katze in New York City, not concatenate or bobcat; Yorck and C++.")
    # Case-insensitive by default; keeps the surface form as `text`.
    assert [(m.text, m.target) for m in glossary.find("CAT!")] == [
        ("CAT", "Katze")]


def test_glossary_beats_number_detection():
    masker = Masker(glossary={"Windows 10": "Windows 10"},
                    capitalized_names=False)
    assert masker.mask("Install Windows 10 on 3 PCs")[0] == (
        "Install ⟦TERM⟧ on ⟦NUM⟧ PCs")


def test_term_matcher_prefers_longest_overlap():
    matcher = TermMatcher(["a b", "b c d"])
    assert [(m.start, m.end) for m in matcher.find("a b c d")] == [(2, 7)]


def test_glossary_from_tsv(tmp_path):
    path = tmp_path / "g.tsv"
    path.write_text("Haus\thouse\n\nBuch\tbook\n")
    assert Glossary.from_tsv(path).target("haus") == "house"
    path.write_text("Haus\thouse\nBuch\n")
    with pytest.raises(ValueError, match=r"g\.tsv:2: expected 2 to 4"):
        Glossary.from_tsv(path)


def test_mapping_from_alignment():
    source = ["Zimmer", "⟦NUM⟧", "und", "⟦NUM⟧", "am", "⟦DATE⟧"]
    target = ["on", "⟦DATE⟧", "rooms", "⟦NUM⟧", "and", "⟦NUM⟧"]
    links = [(0, 2), (1, 5), (3, 3), (5, 1)]
    assert mapping_from_alignment(source, target, links) == [2, 1, 0]
    # Without links: next unused entity of the same type.
    assert mapping_from_alignment(source, target, []) == [2, 0, 1]


def test_augment_with_alignment():
    source = "er zahlte 25 euro am 3 . mai".split()
    target = "he paid 25 euros on may 3".split()
    links = [(0, 0), (1, 1), (2, 2), (3, 3), (4, 4), (7, 5), (5, 6)]
    result = augment_with_alignment(source, target, links)
    # Multi-token spans collapse to one placeholder; links follow.
    assert result.source == ["er", "zahlte", "⟦MONEY⟧", "am", "⟦NUM⟧", ".",
                             "mai"]
    assert result.target == ["he", "paid", "⟦MONEY⟧", "on", "may", "⟦NUM⟧"]
    assert result.links == [(0, 0), (1, 1), (2, 2), (3, 3), (4, 5), (6, 4)]
    assert [(e.type, e.text) for e in result.entities] == [
        ("MONEY", "25 euro"), ("NUM", "3")]


def test_augment_skips_inconsistent_or_mismatched_spans():
    source = ["about", "20", "people"]
    target = ["etwa", "zwanzig", "Leute"]
    # Aligned, but the target is not the same number: left alone.
    result = augment_with_alignment(source, target, [(0, 0), (1, 1), (2, 2)])
    assert result.source == source and result.target == target
    # Consistent spans are needed: "20" is also linked outside its span.
    result = augment_with_alignment(["20", "x"], ["20", "y"],
                                    [(0, 0), (1, 0), (1, 1)])
    assert result.source == ["20", "x"]
    # rate=0 never replaces.
    result = augment_with_alignment(["20"], ["20"], [(0, 0)], rate=0.0,
                                    rng=random.Random(1))
    assert result.source == ["20"]
    result = augment_with_alignment(["20"], ["20"], [(0, 0)])
    assert (result.source, result.target, result.links) == (
        ["⟦NUM⟧"], ["⟦NUM⟧"], [(0, 0)])


def test_placeholder_tokens_are_atomic_sentencepiece_symbols(tmp_path):
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(
        ["the house is small", "a book costs ⟦MONEY⟧ today",
         "rooms ⟦NUM⟧ and ⟦NUM⟧⟦NUM⟧ are free", "see ⟦URL⟧."] * 20))
    spm.SentencePieceTrainer.train(
        input=str(corpus), model_prefix=str(tmp_path / "sp"), vocab_size=60,
        user_defined_symbols=list(PLACEHOLDER_TOKENS), minloglevel=2,
        hard_vocab_limit=False)
    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "sp.model"))
    text = "the book costs ⟦MONEY⟧ at ⟦NAME⟧⟦NUM⟧."
    pieces = sp.encode(text, out_type=str)
    assert placeholder("MONEY") in pieces
    assert placeholder("NAME") in pieces and placeholder("NUM") in pieces
    assert sp.decode(sp.encode(text)) == text


def test_unknown_type_is_rejected():
    with pytest.raises(ValueError, match="unknown placeholder types"):
        Masker(types=["NUM", "PHONE"])
