import re
import subprocess
import sys

import pytest

from pipeline.cache import TranslationCache
from pipeline.documents import DocumentError
from pipeline.language_id import UnsupportedLanguageError
from pipeline.pipeline import Pipeline

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
    code = ("import sys, pipeline.pipeline, pipeline.cli; "
            "bad = [m for m in ('tensorflow', 'gnmt_tf', 'grpc') "
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
