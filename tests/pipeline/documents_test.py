import re
import time
import warnings

import pytest
from lxml import etree
from lxml import html as lxml_html

from gnmt_tf.pipeline.documents import MAX_NESTING_DEPTH
from gnmt_tf.pipeline.documents import DocumentError
from gnmt_tf.pipeline.documents import HtmlDocument
from gnmt_tf.pipeline.documents import MalformedHTMLWarning
from gnmt_tf.pipeline.documents import PlaceholderWarning
from gnmt_tf.pipeline.documents import TextDocument
from gnmt_tf.pipeline.documents import read_document
from gnmt_tf.pipeline.documents import translate_document

_TOKEN = re.compile(r"(</?g\d+>|<x\d+/>)")


def upper(segments):
    """Upper-cases text, leaves placeholders as they are."""
    return ["".join(p if _TOKEN.fullmatch(p) else p.upper()
                    for p in _TOKEN.split(s)) for s in segments]


def identity(segments):
    return list(segments)


def _tree(text, xml=False):
    root = (etree.fromstring(text.encode()) if xml
            else lxml_html.fromstring(text))
    # Tags and attributes; the values of translated ones (alt, title) may
    # differ.
    return [(e.tag, {k: v if k not in ("alt", "title") else "*"
                     for k, v in e.attrib.items()}) for e in root.iter()]


HTML_DOCUMENTS = [
    "<p>Hello <b>bold <i>x</i></b> and<br>more <a href='u' title='T'>"
    "link</a>.</p>",
    "<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>Titel"
    "</title><style>p {color: red}</style></head><body><h1>Kopf</h1>"
    "<div>Text <span class='x'>im</span> Block<p>Absatz</p> danach "
    "<img src='a.png' alt='Bild'></div><ul><li>eins</li><li>zwei <em>"
    "drei</em></li></ul><script>if (a < b) {}</script><pre> x  y </pre>"
    "<p>Run <code>ls -l</code> now.</p><table><tr><td>Zelle</td></tr>"
    "</table></body></html>",
    "<div><p>Caf&eacute; &nbsp;&mdash; &#8212; &amp; &lt;tag&gt;</p>"
    "<!-- a comment --></div>",
    "Just text with <b>bold</b> and no block.",
]


@pytest.mark.parametrize("source", HTML_DOCUMENTS)
def test_identity_keeps_the_element_tree(source):
    document = HtmlDocument(source)
    rebuilt = document.rebuild(identity(document.segments))
    assert _tree(rebuilt) == _tree(source)


@pytest.mark.parametrize("source", HTML_DOCUMENTS)
def test_translation_keeps_the_element_tree(source):
    rebuilt = translate_document(source, "html", upper)
    assert _tree(rebuilt) == _tree(source)


def test_segments_placeholders_attributes_and_untouched():
    document = HtmlDocument(HTML_DOCUMENTS[1])
    segments = document.segments
    assert "Titel" in segments and "Kopf" in segments
    assert "Text <g1>im</g1> Block" in segments
    assert "danach <x1/>" in segments
    assert "Run <x1/> now." in segments
    assert "Bild" in segments and "eins" in segments
    assert "zwei <g1>drei</g1>" in segments
    assert not any("color" in s or "a < b" in s or "x  y" in s
                   for s in segments)
    rebuilt = document.rebuild(upper(segments))
    assert "<style>p {color: red}</style>" in rebuilt
    assert "<script>if (a < b) {}</script>" in rebuilt
    assert "<pre> x  y </pre>" in rebuilt
    assert "<code>ls -l</code>" in rebuilt
    assert 'alt="BILD"' in rebuilt and "<title>TITEL</title>" in rebuilt
    assert "<span class=\"x\">IM</span>" in rebuilt


def test_entities_are_kept():
    rebuilt = translate_document(HTML_DOCUMENTS[2], "html", identity)
    # &mdash; and &#8212; stand for one character: one form is used for both.
    assert re.search(r"Caf&eacute; &nbsp;(&mdash;|&#8212;) \1 &amp; "
                     r"&lt;tag&gt;", rebuilt)
    assert "<!-- a comment -->" in rebuilt


def test_encoding_is_kept():
    source = ("<html><head><meta charset='iso-8859-1'></head><body>"
              "<p>Grüße aus Köln</p></body></html>").encode("iso-8859-1")
    document = HtmlDocument(source)
    assert document.encoding == "iso-8859-1"
    assert document.segments == ["Grüße aus Köln"]
    out = document.rebuild(["Grüße aus Köln – €"])
    assert isinstance(out, bytes)
    assert "Grüße aus Köln".encode("iso-8859-1") in out
    assert b"&#8211;" in out and b"&#8364;" in out


XHTML = ("<?xml version='1.0' encoding='utf-8'?>\n"
         "<html xmlns='http://www.w3.org/1999/xhtml'><body><p>Ein <b>fetter"
         "</b> Satz.<br/>Zweiter.</p><p title='Hinweis'>Drei</p></body>"
         "</html>")


def test_xhtml_round_trip():
    document = HtmlDocument(XHTML.encode())
    assert document.xhtml
    assert document.segments == ["Ein <g1>fetter</g1> Satz.<x2/>Zweiter.",
                                 "Drei", "Hinweis"]
    out = document.rebuild(upper(document.segments)).decode()
    assert out.startswith("<?xml version='1.0' encoding='utf-8'?>")
    assert _tree(out, xml=True) == _tree(XHTML, xml=True)
    assert "EIN <b>FETTER</b> SATZ.<br/>ZWEITER." in out


def test_malformed_xhtml_is_rejected_with_its_line():
    with pytest.raises(DocumentError, match=r"line 2: malformed XHTML"):
        HtmlDocument(XHTML.replace("</b>", ""))


def test_malformed_html_is_repaired_with_a_warning():
    with pytest.warns(MalformedHTMLWarning, match="line 1: malformed HTML"):
        document = HtmlDocument("<div><p>Ein <b>fetter Satz.</p></div>")
    rebuilt = document.rebuild(identity(document.segments))
    assert lxml_html.fromstring(rebuilt) is not None


def test_html5_tags_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HtmlDocument("<section><nav>Menü</nav><article>Text</article>"
                     "</section>")


def test_lost_placeholders_keep_the_text_and_warn():
    document = HtmlDocument("<p>Ein <b>fetter</b> Satz.<br>Ende.</p>")
    with pytest.warns(PlaceholderWarning, match="placeholders missing"):
        out = document.rebuild(["A bold sentence. End."])
    assert out == "<p>A bold sentence. End.<br></p>"
    with pytest.warns(PlaceholderWarning, match="unclosed"):
        document.rebuild(["A <g1>bold sentence.<x2/>End."])


def test_wrong_number_of_segments():
    with pytest.raises(ValueError, match="1 translated segments for 2"):
        HtmlDocument("<p>a</p><p>b</p>").rebuild(["x"])


def test_text_paragraphs_are_kept():
    source = "  Erster Absatz,\nzweite Zeile.\n\n\n\tZweiter.  \n\n"
    document = TextDocument(source)
    assert document.segments == ["Erster Absatz,\nzweite Zeile.",
                                 "Zweiter."]
    assert document.rebuild(document.segments) == source
    assert document.rebuild(["A", "B"]) == "  A\n\n\n\tB  \n\n"
    assert TextDocument(source.encode()).rebuild(["A", "B"]) == \
        b"  A\n\n\n\tB  \n\n"


@pytest.mark.parametrize("format", ["text", "html"])
@pytest.mark.parametrize("source", ["", "   \n\n ", b""])
def test_empty_documents(format, source):
    document = read_document(source, format)
    assert document.segments == []
    assert document.rebuild([]) == source


@pytest.mark.parametrize("format", ["text", "html"])
def test_invalid_utf8_names_the_line(format):
    with pytest.raises(DocumentError, match=r"line 2: invalid utf-8"):
        read_document(b"<p>ok</p>\n<p>\xff</p>", format)


def test_unknown_format():
    with pytest.raises(ValueError, match="unknown format 'pdf'"):
        read_document("x", "pdf")


@pytest.mark.parametrize("format", ["text", "html"])
def test_huge_documents_are_rejected_or_bounded(format):
    with pytest.raises(DocumentError, match="over the limit"):
        read_document("x" * 101, format, max_bytes=100)
    paragraph = "<p>Ein <b>Satz</b> hier.</p>\n" if format == "html" else \
        "Ein Satz hier.\n\n"
    source = paragraph * 20_000  # about 0.5 MB, 20,000 segments
    start = time.perf_counter()
    out = translate_document(source, format, upper)
    assert time.perf_counter() - start < 30
    assert out.count("SATZ") == 20_000


def test_deeply_nested_inline_markup_keeps_its_text():
    source = ("<span>" * 300 + "A dog runs." + "</span>" * 300
              + "<p>Two men sit.</p>")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing repaired
        document = HtmlDocument(source)
    assert [_TOKEN.sub("", s) for s in document.segments] == [
        "A dog runs.", "Two men sit."]
    out = document.rebuild(upper(document.segments))
    assert out == ("<span>" * 300 + "A DOG RUNS." + "</span>" * 300
                   + "<p>TWO MEN SIT.</p>")


@pytest.mark.parametrize("depth", [MAX_NESTING_DEPTH, 3000])
def test_nesting_deeper_than_the_limit_is_an_error(depth):
    with pytest.raises(DocumentError, match=f"nested deeper than "
                                            f"{MAX_NESTING_DEPTH} levels"):
        HtmlDocument("<span>" * depth + "x" + "</span>" * depth)
    HtmlDocument("<span>" * (MAX_NESTING_DEPTH - 1) + "x")  # the root is 1


@pytest.mark.parametrize("source", [
    "<html><body><p>Ein Satz.</p></body></html> Noch einer.",
    "<div><p>Ein <b>fetter Satz.</p></div></html> Noch einer.",
])
def test_text_the_parser_drops_is_an_error(source):
    # libxml2 drops text after </html>, without an error of its own.
    with pytest.raises(DocumentError, match="would drop 9 letter.s. of "
                                            "text, first 'Noch einer.'"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MalformedHTMLWarning)
            HtmlDocument(source)
