"""Pipeline with protection, markup projection and quality estimation."""

import warnings

import numpy as np
import pytest

from gnmt_tf.pipeline.cache import TranslationCache
from gnmt_tf.pipeline.documents import DocumentError
from gnmt_tf.pipeline.glossary import GlossaryError
from gnmt_tf.pipeline.language_id import UnsupportedLanguageError
from gnmt_tf.pipeline.pipeline import LowQualityWarning, Pipeline
from gnmt_tf.pipeline.quality import QualityModel
from gnmt_tf.pipeline.results import SentenceResult

LANGUAGES = ["en", "de", "fr", "cs"]


class Reverser:
    """Reverses the words of each sentence (final punctuation stays last)
    and aligns them: a translation whose alignment is known exactly."""

    def __init__(self, with_alignment=True):
        self.with_alignment = with_alignment
        self.calls = []

    def __call__(self, sentences, src_lang, tgt_lang, tags):
        self.calls.append((list(sentences), src_lang, tgt_lang))
        out = []
        for sentence in sentences:
            words = sentence.split()
            end = ""
            if words and words[-1][-1] in ".!?":
                end, words[-1] = words[-1][-1], words[-1][:-1] or "_"
            target = list(reversed(words))
            text = " ".join(target) + end
            if not self.with_alignment:
                out.append(text)
                continue
            n = len(words)
            matrix = np.zeros((n, n + 1))
            for t in range(n):
                matrix[t, n - 1 - t] = 1.0
            pieces = tuple("▁" + w for w in words)
            out.append(SentenceResult(
                text, -0.2, pieces[:-1] + (pieces[-1] + end, "</s>"),
                tuple("▁" + w for w in target[:-1]) + (
                    "▁" + target[-1] + end,), matrix))
        return out


def test_markup_follows_the_aligned_words():
    out = Pipeline(Reverser(), LANGUAGES).translate_document(
        '<p>one <b>two</b> <a href="x">three</a> four.</p>', "en", "de",
        format="html")
    assert out == '<p>four <a href="x">three</a> <b>two</b> one.</p>'


def test_without_alignment_markup_is_kept_well_formed():
    result = Pipeline(Reverser(False), LANGUAGES).translate_document_detailed(
        "<p>one <b>two</b> three. <i>Four</i> five.</p>", "en", "de",
        format="html")
    assert result.output.count("<b>") == result.output.count("</b>") == 1
    assert result.output.count("<i>") == 1
    assert result.output.startswith("<p>") and result.output.endswith("</p>")


def test_markup_across_sentences_and_images():
    out = Pipeline(Reverser(), LANGUAGES).translate_document(
        '<p><i>One two. Three</i> four. <img src="a.png"> Five six.</p>',
        "en", "de", format="html")
    assert out.count("<i>") == out.count("</i>") == 1
    assert out.count('<img src="a.png">') == 1
    assert out.replace("<i>", "").replace("</i>", "").replace(
        '<img src="a.png">', "").split() == [
        "<p>two", "One.", "four", "Three.", "six", "Five.</p>"]


def test_entities_and_glossary_terms_survive(tmp_path):
    path = tmp_path / "terms.tsv"
    path.write_text("cat\tKatze\ten-de\ncat\tchat\ten-fr\n",
                    encoding="utf-8")

    def forgetful(sentences, src, tgt, tags):
        return [s.replace("555", "").replace("cat", "Mieze")
                for s in sentences]

    result = Pipeline(forgetful, LANGUAGES).translate_document_detailed(
        "Call 555 for the cat.", "en", "de", glossary=path)
    assert "555" in result.output and "Katze" in result.output
    assert result.repaired == {"entity": 1, "term": 1}
    assert Pipeline(forgetful, LANGUAGES).translate_document(
        "The cat.", "en", "fr", glossary=str(path)).count("chat") == 1
    bad = tmp_path / "bad.tsv"
    bad.write_text("cat\n", encoding="utf-8")
    with pytest.raises(GlossaryError, match=r"bad\.tsv:1: expected 2 to 4"):
        Pipeline(forgetful, LANGUAGES).translate_document(
            "The cat.", "en", "de", glossary=bad)


def test_quality_scores_flags_and_round_trip():
    model = Reverser()
    pipeline = Pipeline(model, LANGUAGES, round_trip=True)
    result = pipeline.translate_document_detailed(
        "One two three. Four five six seven.", "auto", "de", qe=True)
    assert result.source_language == "en" and result.target_language == "de"
    assert len(result.sentences) == 2
    for report in result.sentences:
        assert 0.0 <= report.quality <= 1.0
        assert report.features["logprob"] == -0.2
        assert report.features["coverage"] == pytest.approx(
            len(report.source.split()) / (len(report.source.split()) + 1))
        # Reversing twice gives the source back.
        assert report.features["round_trip"] == 1.0
    assert model.calls[-1][1:] == ("de", "en")
    assert result.quality == pytest.approx(
        (result.sentences[0].quality * 14 + result.sentences[1].quality * 20)
        / 34)
    assert not result.flagged
    pipeline.quality_model = QualityModel(0.3, {}, {})
    with pytest.warns(LowQualityWarning, match="2 of 2"):
        pipeline.translate_document("One two three. Four five six seven.",
                                    "en", "de", min_quality=0.5)
    flagged = pipeline.translate_document_detailed(
        "One two.", "en", "de", min_quality=0.5)
    assert flagged.flagged == [0]
    with pytest.raises(ValueError, match="min_quality"):
        pipeline.translate_document("x", "en", "de", min_quality=1.5)


def test_cache_keeps_the_alignment():
    model = Reverser()
    pipeline = Pipeline(model, LANGUAGES, cache=TranslationCache(1))
    document = "<p>one <b>two</b> three.</p>"
    first = pipeline.translate_document(document, "en", "de", format="html")
    second = pipeline.translate_document(document, "en", "de", format="html")
    assert first == second == "<p>three <b>two</b> one.</p>"
    assert len(model.calls) == 1


def test_bad_input():
    pipeline = Pipeline(Reverser(), LANGUAGES)
    assert pipeline.translate_document("", "en", "de") == ""
    assert pipeline.translate_document(b"", "auto", "de") == b""
    assert pipeline.translate_document_detailed(
        "", "en", "de", qe=True).quality is None
    with pytest.raises(DocumentError, match="line 2: invalid utf-8"):
        pipeline.translate_document(b"ok\n\xff\xfe", "en", "de")
    with pytest.raises(UnsupportedLanguageError, match="supported"):
        pipeline.translate_document("Hallo.", "xx", "de")
    with pytest.raises(UnsupportedLanguageError):
        pipeline.translate_document("1234", "auto", "de")
    with pytest.raises(DocumentError, match="over the limit"):
        Pipeline(Reverser(), LANGUAGES, max_bytes=100).translate_document(
            "word " * 100, "en", "de")
    with pytest.raises(ValueError, match="protection mode"):
        Pipeline(Reverser(), LANGUAGES, protection="nope")


def test_malformed_html_is_repaired_and_translated():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = Pipeline(Reverser(), LANGUAGES).translate_document(
            "<p>one <b>two three.</p><p>four five.", "en", "de",
            format="html")
    assert any("malformed HTML" in str(w.message) for w in caught)
    assert "five four." in out and out.count("<b>") == 1


def test_huge_document_keeps_every_entity():
    sentences = [f"Room {k} is free." for k in range(2000)]
    document = "\n\n".join(sentences)

    def drop_numbers(batch, src, tgt, tags):
        return ["".join(c for c in s if not c.isdigit()) for s in batch]

    result = Pipeline(drop_numbers, LANGUAGES).translate_document_detailed(
        document, "en", "de")
    paragraphs = result.output.split("\n\n")
    assert len(paragraphs) == 2000
    assert all(str(k) in p for k, p in enumerate(paragraphs))
    assert result.repaired == {"entity": 2000}


def _pieces(word):
    """SentencePiece-like pieces: a placeholder token is a user symbol
    after a bare word-start piece."""
    return ["▁", word] if word.startswith("⟦") else ["▁" + word]


def test_tokens_mode_restores_entities_through_the_alignment():
    """A model trained with placeholders: it reverses the words, carrying
    the tokens; the alignment says which token is which number."""
    def model(sentences, src, tgt, tags):
        out = []
        for sentence in sentences:
            words = sentence.split()
            target = list(reversed(words))
            source_pieces = [p for w in words for p in _pieces(w)] + ["</s>"]
            target_pieces = [p for w in target for p in _pieces(w)]
            source_word = [k for k, w in enumerate(words)
                           for _ in _pieces(w)] + [None]
            target_word = [len(words) - 1 - k for k, w in enumerate(target)
                           for _ in _pieces(w)]
            matrix = np.array([[1.0 if s == t else 0.0
                                for s in source_word] for t in target_word])
            out.append(SentenceResult(" ".join(target), -0.3,
                                      tuple(source_pieces),
                                      tuple(target_pieces), matrix))
        return out

    calls = []

    def recording(sentences, src, tgt, tags):
        calls.extend(sentences)
        return model(sentences, src, tgt, tags)

    result = Pipeline(recording, LANGUAGES,
                      protection="tokens").translate_document_detailed(
        "Rooms 12 and 34", "en", "de")
    assert calls == ["Rooms ⟦NUM⟧ and ⟦NUM⟧"]
    assert result.output == "34 and 12 Rooms"
    assert result.kept == {"entity": 2} and result.repaired == {}
