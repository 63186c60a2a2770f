import numpy as np
import pytest

from gnmt_tf.pipeline.edits import apply_edits
from gnmt_tf.pipeline.glossary import Glossary
from gnmt_tf.pipeline.key_information import KeyInformation
from gnmt_tf.pipeline.placeholder_mapping import HashPlaceholderMasker
from gnmt_tf.pipeline.results import SentenceResult


def _restore(ki, source, result):
    protected = ki.protect(source)
    restored = ki.restore(protected, result)
    return apply_edits(result.text, restored.edits)[0], restored


def _diagonal(source_words, target_words, links):
    """A result whose one-piece words are aligned by `links` (t -> s)."""
    matrix = np.zeros((len(target_words), len(source_words) + 1))
    for t, s in links.items():
        matrix[t, s] = 1.0
    return SentenceResult(" ".join(target_words), -0.1,
                          tuple("▁" + w for w in source_words) + ("</s>",),
                          tuple("▁" + w for w in target_words), matrix)


def test_entities_the_model_kept_are_not_touched():
    text, restored = _restore(KeyInformation(), "Call 555 at 10:30.",
                              SentenceResult("Ruf 555 um 10:30 an."))
    assert text == "Ruf 555 um 10:30 an."
    assert restored.kept == {"entity": 2} and restored.repaired == {}


def test_lost_entity_replaces_the_aligned_word():
    # "Call 555 now" -> "Ruf fünf jetzt": fünf is aligned with 555.
    result = _diagonal(["Call", "555", "now"], ["Ruf", "fünf", "jetzt"],
                       {0: 0, 1: 1, 2: 2})
    text, restored = _restore(KeyInformation(), "Call 555 now", result)
    assert (text, restored.repaired) == ("Ruf 555 jetzt", {"entity": 1})


def test_without_alignment_a_lost_entity_is_inserted():
    text, restored = _restore(KeyInformation(), "Call 555 now.",
                              SentenceResult("Ruf jetzt an."))
    assert "555" in text and "Ruf" in text and "jetzt an" in text
    assert restored.repaired == {"entity": 1}


def test_glossary_terms_are_enforced():
    ki = KeyInformation(Glossary({"dog": "Rüde"}))
    result = _diagonal(["A", "dog", "runs"], ["Ein", "Hund", "rennt"],
                       {0: 0, 1: 1, 2: 2})
    text, restored = _restore(ki, "A dog runs", result)
    assert (text, restored.repaired) == ("Ein Rüde rennt", {"term": 1})
    # Copied untranslated: replaced where it stands.
    text, _ = _restore(ki, "A dog runs", SentenceResult("Ein dog rennt"))
    assert text == "Ein Rüde rennt"
    # Already used: kept (case-insensitive).
    text, restored = _restore(ki, "A dog runs",
                              SentenceResult("Ein rüde rennt"))
    assert (text, restored.kept) == ("Ein rüde rennt", {"term": 1})


def test_repeated_entities_need_as_many_occurrences():
    result = SentenceResult("5 und fünf")
    text, restored = _restore(KeyInformation(), "5 and 5", result)
    assert text.count("5") == 2
    assert restored.kept == {"entity": 1} and restored.repaired == {
        "entity": 1}


def test_tokens_mode_maps_placeholders_through_the_alignment():
    ki = KeyInformation(mode="tokens")
    protected = ki.protect("Rooms 12 and 34")
    assert protected.model_input == "Rooms ⟦NUM⟧ and ⟦NUM⟧"
    # The output swaps them: its first ⟦NUM⟧ is aligned with source 34.
    source = ["▁Rooms", "▁", "⟦NUM⟧", "▁and", "▁", "⟦NUM⟧", "</s>"]
    target = ["▁Zimmer", "▁", "⟦NUM⟧", "▁statt", "▁", "⟦NUM⟧"]
    matrix = np.zeros((6, 7))
    matrix[0, 0] = matrix[3, 3] = 1
    matrix[2, 5] = matrix[5, 2] = 1
    matrix[1, 4] = matrix[4, 1] = 1
    result = SentenceResult("Zimmer ⟦NUM⟧ statt ⟦NUM⟧", -0.1,
                            tuple(source), tuple(target), matrix)
    restored = ki.restore(protected, result)
    assert apply_edits(result.text, restored.edits)[0] == \
        "Zimmer 34 statt 12"
    # Without scores: left to right.
    restored = ki.restore(protected, SentenceResult(result.text))
    assert apply_edits(result.text, restored.edits)[0] == \
        "Zimmer 12 statt 34"


def test_tokens_mode_repairs_lost_and_drops_extra_tokens():
    ki = KeyInformation(mode="tokens")
    protected = ki.protect("Call 555 now")
    result = SentenceResult("Ruf jetzt ⟦URL⟧ an")
    restored = ki.restore(protected, result)
    text = apply_edits(result.text, restored.edits)[0]
    assert "⟦" not in text and text.count("555") == 1
    assert restored.repaired == {"entity": 1}


def test_extra_maskers_and_unknown_mode():
    ki = KeyInformation(maskers=[HashPlaceholderMasker()])
    text, restored = _restore(ki, "Hallo #NAME#, 3 Tage",
                              SentenceResult("Hello, 3 days"))
    assert "#NAME#" in text and restored.repaired == {"entity": 1}
    with pytest.raises(ValueError, match="unknown protection mode"):
        KeyInformation(mode="magic")
