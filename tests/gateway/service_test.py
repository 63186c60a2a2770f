"""The HTTP gateway, through a real HTTP client (urllib) against the
running service: in-process model and local gRPC server behind it."""

import json
import urllib.error
import urllib.request

import pytest
from lxml import html as lxml_html

from gnmt_tf.gateway.pipelines import Pipeline
from gnmt_tf.gateway.service import GatewayServer

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
HTML = ("<html><body><h1>A big dog runs.</h1>"
        "<p>A <b>small</b> cat eats. A young girl plays.</p></body></html>")


def call(url, body=None, content_type="application/json", method=None):
    """`(status, headers, content)`: JSON answers parsed."""
    data = body
    if body is not None and not isinstance(body, bytes):
        data = json.dumps(body).encode()
    request = urllib.request.Request(
        url, data=data, method=method or ("POST" if data is not None
                                          else "GET"))
    if data is not None:
        request.add_header("Content-Type", content_type)
    try:
        with _OPENER.open(request, timeout=120) as response:
            status, headers, raw = (response.status, response.headers,
                                    response.read())
    except urllib.error.HTTPError as e:
        status, headers, raw = e.code, e.headers, e.read()
    if headers.get_content_type() == "application/json":
        return status, headers, json.loads(raw)
    return status, headers, raw


def _serve(pipeline):
    server = GatewayServer(pipeline, port=0)
    server.start()
    return server


@pytest.fixture(scope="module")
def local(model_backend):
    """The gateway over the in-process tiny model (documents up to 2 kB)."""
    server = _serve(Pipeline(model_backend, model_backend.languages,
                             max_bytes=2000))
    yield server.url
    server.stop()


@pytest.fixture(scope="module")
def remote(grpc_server):
    """The gateway over the same model behind the local gRPC server."""
    pipeline = Pipeline.from_server(grpc_server.target, "gnmt", ["en", "de"])
    server = _serve(pipeline)
    yield server.url
    server.stop()
    pipeline.backend.close()


def _expected(model_backend, sentences):
    return [r.text for r in model_backend(sentences, "en", "de")]


def test_health_and_languages(local):
    assert call(local + "/healthz")[::2] == (200, {"status": "ok"})
    assert call(local + "/v1/languages")[::2] == (
        200, {"languages": ["de", "en"]})


def test_text_with_detected_language(local, model_backend):
    status, _, out = call(local + "/v1/translate", {
        "text": "A big dog runs. A small cat eats.\n\nA young girl plays.",
        "tgt_lang": "de"})
    assert status == 200, out
    first, second, third = _expected(
        model_backend, ["A big dog runs.", "A small cat eats.",
                        "A young girl plays."])
    assert out["translation"] == f"{first} {second}\n\n{third}"
    assert out["detected_language"] == "en" and out["src_lang"] == "en"
    assert out["tgt_lang"] == "de" and out["warnings"] == []
    # A given source language is used as is.
    status, _, out = call(local + "/v1/translate", {
        "text": "A big dog runs.", "src_lang": "en", "tgt_lang": "de"})
    assert status == 200 and out["detected_language"] is None
    assert out["translation"] == first


def test_html_keeps_the_markup(local, model_backend):
    status, _, out = call(local + "/v1/translate",
                          {"html": HTML, "tgt_lang": "de"})
    assert status == 200, out
    tree = lxml_html.fromstring(out["translation"])
    (h1,) = tree.findall(".//h1")
    (p,) = tree.findall(".//p")
    assert h1.text_content() == _expected(model_backend,
                                          ["A big dog runs."])[0]
    assert p.text_content().strip()
    # Raw HTML in, raw HTML out.
    status, headers, raw = call(local + "/v1/translate?tgt_lang=de",
                                HTML.encode(), "text/html")
    assert status == 200
    assert headers["Content-Language"] == "de"
    assert headers["X-Source-Language"] == "en"
    assert raw.decode() == out["translation"]


def test_server_backend_answers_as_the_in_process_one(local, remote):
    for body in ({"html": HTML, "tgt_lang": "de"},
                 {"text": "A big dog runs. A small cat eats.",
                  "src_lang": "en", "tgt_lang": "de"}):
        status, _, served = call(remote + "/v1/translate", body)
        assert status == 200, served
        assert served == call(local + "/v1/translate", body)[2]


@pytest.mark.parametrize("body, content_type, status, message", [
    ({"text": "A dog.", "tgt_lang": "fr"}, None, 400,
     "unsupported language 'fr'; supported: de, en"),
    ({"text": "A dog.", "src_lang": "xx", "tgt_lang": "de"}, None, 400,
     "unsupported language 'xx'; supported: de, en"),
    ({"text": "Ein Hund.", "src_lang": "de", "tgt_lang": "en"}, None, 400,
     "en->de only"),
    ({"text": "A dog."}, None, 400, "tgt_lang is required; supported: de, en"),
    ({"text": "", "tgt_lang": "de"}, None, 400, "the document is empty"),
    ({"tgt_lang": "de"}, None, 400, 'as "text" or "html"'),
    ({"text": "A dog.", "tgt_lang": "de", "colour": 1}, None, 400,
     "unknown field(s) colour"),
    ({"text": "A dog.", "tgt_lang": "de", "tags": "news"}, None, 400,
     "no scene tags"),
    ({"html": '<?xml version="1.0"?><html><p>A dog.</html>',
      "tgt_lang": "de"}, None, 400, "malformed XHTML"),
    (b'{"text": "A \xff dog.", "tgt_lang": "de"}', None, 400,
     "not valid UTF-8 (byte 0xff at offset 12)"),
    (b'{"text": "A dog.", ', None, 400, "malformed JSON"),
    (b"", None, 400, "empty request body"),
    (b"A dog.\n\xc3(", "text/plain", 400, "line 2: invalid utf-8"),
    (b"A dog.", "application/pdf", 415, "unsupported content type"),
    ({"text": "A dog runs. " * 200, "tgt_lang": "de"}, None, 413,
     "over the limit of 2000 bytes"),
    (b"x" * 20000, "text/plain", 413, "over the limit"),
])
def test_errors_are_one_clear_message(local, body, content_type, status,
                                      message):
    url = local + "/v1/translate"
    if content_type == "text/plain":
        url += "?tgt_lang=de&src_lang=en"
    got, _, out = call(url, body, content_type or "application/json")
    assert got == status, out
    assert set(out) == {"error"} and message in out["error"]
    assert "\n" not in out["error"]


def test_malformed_html_is_repaired_with_a_warning(local):
    status, _, out = call(local + "/v1/translate", {
        "html": "<p>A big dog <b>runs.</p><p>A cat.", "src_lang": "en",
        "tgt_lang": "de"})
    assert status == 200, out
    assert out["warnings"] and "malformed HTML repaired" in out["warnings"][0]
    assert len(lxml_html.fragment_fromstring(
        out["translation"], create_parent="div").findall(".//p")) == 2


def test_glossary_passes_through(local, model_backend):
    body = {"text": "A big dog runs.", "src_lang": "en", "tgt_lang": "de",
            "glossary": [{"source": "dog", "target": "Hund"}]}
    status, _, out = call(local + "/v1/translate", body)
    assert status == 200 and "Hund" in out["translation"]
    status, _, out = call(local + "/v1/translate", dict(
        body, glossary=[{"source": "dog"}]))
    assert status == 400 and "glossary entry 1" in out["error"]


def test_quality_estimates_and_flags(local):
    url = local + "/v1/translate"
    body = {"text": "A big dog runs. A young girl plays.", "src_lang": "en",
            "tgt_lang": "de"}
    status, _, plain = call(url, body)
    assert status == 200 and "quality" not in plain
    status, _, out = call(url, dict(body, qe=True))
    assert status == 200, out
    assert out["translation"] == plain["translation"]
    assert 0.0 <= out["quality"] <= 1.0
    assert [s["source"] for s in out["sentences"]] == [
        "A big dog runs.", "A young girl plays."]
    assert all(0.0 <= s["quality"] <= 1.0 for s in out["sentences"])
    assert out["flagged"] == []  # nothing flags without min_quality
    low = min(s["quality"] for s in out["sentences"])
    status, _, out = call(url, dict(body, min_quality=low + 1e-6))
    assert status == 200, out
    assert out["flagged"] == [i for i, s in enumerate(out["sentences"])
                              if s["quality"] < low + 1e-6] != []
    assert all(s["flagged"] == (i in out["flagged"])
               for i, s in enumerate(out["sentences"]))


@pytest.mark.parametrize("field, message", [
    ({"min_quality": 1.5}, '"min_quality" must be a number in [0, 1], got 1.5'),
    ({"min_quality": "high"}, '"min_quality" must be a number in [0, 1]'),
    ({"qe": "yes"}, '"qe" must be true or false'),
])
def test_quality_fields_are_checked(local, field, message):
    status, _, out = call(local + "/v1/translate", dict(
        {"text": "A dog runs.", "src_lang": "en", "tgt_lang": "de"}, **field))
    assert status == 400 and message in out["error"]
