import re
import subprocess
import sys

import pytest

from gnmt_tf.pipeline.cache import TranslationCache
from gnmt_tf.pipeline.documents import DocumentError
from gnmt_tf.pipeline.language_id import UnsupportedLanguageError
from gnmt_tf.pipeline.pipeline import Pipeline

_TOKEN = re.compile(r"(</?g\d+>|<x\d+/>)")
LANGUAGES = ["en", "de", "fr", "cs"]


class FakeModel:
    """Upper-cases each sentence (placeholders kept) and records calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, sentences, src_lang, tgt_lang, tags):
        self.calls.append((list(sentences), src_lang, tgt_lang, tuple(tags)))
        return ["".join(p if _TOKEN.fullmatch(p) else p.upper()
                        for p in _TOKEN.split(s)) for s in sentences]


def test_text_document_is_split_translated_and_reassembled():
    model = FakeModel()
    out = Pipeline(model, LANGUAGES).translate_document(
        "Das Haus Nr. 5 ist rot.  Wir kamen.\n\nEnde.\n", "de", "en",
        tags=["news"])
    assert out == "DAS HAUS NR. 5 IST ROT. WIR KAMEN.\n\nENDE.\n"
    assert model.calls == [(["Das Haus Nr. 5 ist rot.", "Wir kamen.",
                             "Ende."], "de", "en", ("news",))]


def test_auto_detects_the_source_language():
    model = FakeModel()
    Pipeline(model, LANGUAGES).translate_document(
        "Ein Mann fährt Fahrrad auf der Straße.", "auto", "fr")
    assert model.calls[0][1] == "de"


def test_html_document_keeps_markup_and_normalises():
    model = FakeModel()
    out = Pipeline(model, LANGUAGES).translate_document(
        "<p>„Ein  <b>fetter</b> Satz“. Noch einer.</p><pre>„x“</pre>",
        "de", "en", format="html")
    assert out == "<p>„EIN <b>FETTER</b> SATZ“. NOCH EINER.</p><pre>„x“</pre>"
    # The model reads no markup; it is projected back.
    assert model.calls[0][0] == ['"Ein fetter Satz".', "Noch einer."]


def test_cache_sends_each_sentence_once():
    model = FakeModel()
    pipeline = Pipeline(model, LANGUAGES, cache=TranslationCache(1),
                        model_version="v1")
    pipeline.translate_document("Hallo. Hallo. Tschüss.", "de", "en")
    pipeline.translate_document("Hallo.\n\nNeu.", "de", "en")
    assert [c[0] for c in model.calls] == [["Hallo.", "Tschüss."], ["Neu."]]
    assert pipeline.cache.hits == 1


def test_unknown_languages():
    pipeline = Pipeline(FakeModel(), LANGUAGES)
    with pytest.raises(UnsupportedLanguageError, match="'ja'.*cs, de, en, fr"):
        pipeline.translate_document("Hallo.", "de", "ja")
    with pytest.raises(UnsupportedLanguageError, match="'xx'"):
        pipeline.translate_document("Hallo.", "xx", "en")
    with pytest.raises(UnsupportedLanguageError, match="'und'"):
        pipeline.translate_document("12345", "auto", "en")


@pytest.mark.parametrize("data", ["", b"", "  \n\n"])
def test_empty_documents(data):
    model = FakeModel()
    assert Pipeline(model, LANGUAGES).translate_document(
        data, "auto", "en") == data
    assert model.calls == []


def test_bad_documents():
    pipeline = Pipeline(FakeModel(), LANGUAGES, max_bytes=1000)
    with pytest.raises(DocumentError, match="line 1: invalid utf-8"):
        pipeline.translate_document(b"\xffx", "de", "en")
    with pytest.raises(DocumentError, match="over the limit"):
        pipeline.translate_document("x" * 1001, "de", "en")


def test_translate_returning_the_wrong_count():
    pipeline = Pipeline(lambda s, *_: s[:-1], LANGUAGES)
    with pytest.raises(ValueError, match="1 translations for 2 sentences"):
        pipeline.translate_document("Eins. Zwei.", "de", "en")


def test_no_tensorflow_is_imported():
    code = ("import sys, gnmt_tf.pipeline.pipeline, gnmt_tf.pipeline.cli; "
            "bad = [m for m in ('tensorflow', 'gnmt_tf.translator', "
            "'gnmt_tf.serving', 'grpc') "
            "if m in sys.modules]; print(bad); sys.exit(bool(bad))")
    result = subprocess.run([sys.executable, "-c", code],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("element", ["<code>ls</code>", '<img src="a.png">'])
def test_spaces_around_an_inline_element_are_kept(element):
    def model(sentences, src_lang, tgt_lang, tags):
        return ["Ein Mann tippt auf einem Computer." for _ in sentences]

    out = Pipeline(model, LANGUAGES).translate_document(
        f"<p>A man types {element} on a computer.</p>", "en", "de",
        format="html")
    assert out == f"<p>Ein Mann tippt {element} auf einem Computer.</p>"


def test_mixed_languages_are_translated_each_from_its_own():
    model = FakeModel()
    en = "A man rides his bicycle along the river on a sunny morning."
    de = "Ein Mann fährt an einem sonnigen Morgen mit dem Fahrrad am Fluss."
    fr = "Un homme fait du vélo le long de la rivière un matin ensoleillé."
    result = Pipeline(model, LANGUAGES).translate_document_detailed(
        f"{en}\n\n{de}\n\n{fr}", "auto", "de")
    assert result.output == f"{en.upper()}\n\n{de}\n\n{fr.upper()}"
    assert [c[1:3] for c in model.calls] == [("en", "de"), ("fr", "de")]
    assert [s.language for s in result.sentences] == ["en", "fr"]
    # A document all in the target language passes through.
    model.calls.clear()
    assert Pipeline(model, LANGUAGES).translate_document(
        de, "auto", "de") == de
    assert model.calls == []


def test_unknown_script_is_left_alone_or_flagged():
    from gnmt_tf.pipeline.pipeline import UnknownScriptWarning

    model = FakeModel()
    arabic = "رجل يركب دراجته على طول النهر."
    pipeline = Pipeline(model, LANGUAGES)
    result = pipeline.translate_document_detailed(
        f"A man rides his bicycle along the river.\n\n{arabic}", "auto",
        "de")
    assert result.output.endswith(f"\n\n{arabic}")
    assert result.warnings == [
        "segment 2: written in a script none of the model's languages "
        "(cs, de, en, fr) use; left untranslated"]
    with pytest.warns(UnknownScriptWarning, match="translation is "
                                                  "unreliable"):
        assert pipeline.translate_document(arabic, "en", "de") == \
            arabic.upper()


def test_sentences_too_long_are_refused_before_any_work():
    from gnmt_tf.pipeline.limits import SentenceTooLongError

    model = FakeModel()
    pipeline = Pipeline(model, LANGUAGES, max_sentence_length=5)
    with pytest.raises(SentenceTooLongError, match="^segment 2: a sentence "
                       "of 6 or more words; the model reads at most 5 "):
        pipeline.translate_document("Kurz.\n\nein zwei drei vier fünf "
                                    "sechs", "de", "en")
    with pytest.raises(SentenceTooLongError, match="of 7 or more words"):
        pipeline.translate_document("ein, zwei, drei, vier, fünf, sechs, "
                                    "sieben.", "de", "en")
    assert model.calls == []
    assert pipeline.translate_document(
        "Ein zwei drei. Vier fünf sechs. Sieben!", "de", "en") == \
        "EIN ZWEI DREI. VIER FÜNF SECHS. SIEBEN!"


def test_cancellation_stops_between_calls():
    from gnmt_tf.pipeline.cancellation import Cancellation
    from gnmt_tf.pipeline.cancellation import Cancelled

    cancellation = Cancellation()
    model = FakeModel()

    def translate(sentences, *args):
        if len(model.calls) == 1:
            cancellation.cancel()  # the client goes away after two calls
        return model(sentences, *args)

    pipeline = Pipeline(translate, LANGUAGES, chunk_sentences=2)
    with pytest.raises(Cancelled, match="the client went away"):
        pipeline.translate_document(
            " ".join(f"Der Hund {i} läuft." for i in range(10)), "de", "en",
            cancellation=cancellation)
    assert len(model.calls) == 2
    with pytest.raises(ValueError, match="chunk_sentences must be an "
                                         "integer >= 1, got 0"):
        Pipeline(FakeModel(), LANGUAGES, chunk_sentences=0)
    with pytest.raises(ValueError, match="timeout_s must be > 0"):
        Cancellation(0)
