"""`gnmt_tf.pipeline.html_text.lost_text`: the text of an HTML document that a
parse did not keep, found by a reading without a tree; never a false
alarm on what the parse keeps."""

import warnings

import pytest

from gnmt_tf.pipeline.documents import HtmlDocument
from gnmt_tf.pipeline.documents import MalformedHTMLWarning
from gnmt_tf.pipeline.html_text import lost_text


def test_missing_text_is_named():
    source = "<div><p>A dog runs.</p><p>Two <b>men</b> sit.</p></div>"
    assert lost_text(source, ["Two men sit."]) == ("A dog runs.", 8)
    assert lost_text(source, ["A dog runs.", "Two men sit."]) is None


@pytest.mark.parametrize("source", [
    "<p>Caf&eacute; &nbsp;&mdash; &#8212; &amp; &lt;tag&gt; &foo; x</p>",
    "<p>a < b and c > d</p>",
    "<p>Run <code>ls -l</code> now.</p><pre> x  y </pre>"
    "<script>if (a < b) { x = '</p>'; }</script><style>p {}</style>",
    "<p>x <!-- a comment --> y <!-- left open",
    "<!DOCTYPE html><html><head><title>T</title><meta charset='utf-8'>"
    "</head><body>stray <table>cell text<tr><td>1</td></tr></table>"
    "<img alt='Bild' src='a.png'><svg><text>S</text></svg></body></html>",
    "<div><p>Ein <b>fetter Satz.</p></div> danach",
    "<p>unclosed <b>bold <i>italic</p><p>next</p>",
])
def test_what_the_parse_keeps_is_no_loss(source):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MalformedHTMLWarning)
        HtmlDocument(source)  # raises DocumentError on a loss
