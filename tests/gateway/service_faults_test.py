"""The HTTP gateway under bad and abandoned requests, through real HTTP
clients (raw sockets where the request itself is the fault) against the
running service, over a fake multi-language backend (no model: these are
the gateway's and the pipeline's own behaviours)."""

import json
import select
import socket
import time
import urllib.error
import urllib.request

import pytest

from gnmt_tf.gateway.pipelines import Pipeline
from gnmt_tf.gateway.service import GatewayServer

_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
EN = "A man rides his bicycle along the river on a sunny morning."
DE = "Ein Mann fährt an einem sonnigen Morgen mit dem Fahrrad am Fluss."
FR = "Un homme fait du vélo le long de la rivière un matin ensoleillé."
AR = "رجل يركب دراجته على طول النهر في صباح مشمس."


class FakeBackend:
    """Translates to "<src>-><tgt>: SENTENCE", `delay_s` a call (as a
    `gnmt_tf.gateway.backends` backend); records each call's sentences and
    direction."""

    def __init__(self, delay_s=0.0, batch_size=32, max_sentence_length=250):
        self.languages = ("de", "en", "fr")
        self.model_version = "fake"
        self.delay_s = delay_s
        self.batch_size = batch_size
        self.max_sentence_length = max_sentence_length
        self.calls = []

    def __call__(self, sentences, src_lang, tgt_lang, tags=()):
        self.calls.append((list(sentences), src_lang, tgt_lang))
        time.sleep(self.delay_s)
        return [f"{src_lang}->{tgt_lang}: {s.upper()}" for s in sentences]


def _serve(backend, max_bytes=2000, **kwargs):
    pipeline = Pipeline(backend, backend.languages, max_bytes=max_bytes)
    server = GatewayServer(pipeline, port=0, **kwargs)
    server.start()
    return server


@pytest.fixture(scope="module")
def fake():
    backend = FakeBackend()
    server = _serve(backend, max_bytes=1_000_000)
    yield server, backend
    server.stop()


@pytest.fixture(scope="module")
def slow():
    """Two sentences a call, 0.2 s each; requests may run 60 s."""
    backend = FakeBackend(delay_s=0.2, batch_size=2)
    server = _serve(backend, request_timeout_s=60)
    yield server, backend
    server.stop()


def call(url, body):
    request = urllib.request.Request(
        url + "/v1/translate", data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"})
    try:
        with _OPENER.open(request, timeout=60) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _connect(server):
    return socket.create_connection(("127.0.0.1", server.port), timeout=30)


def _response(sock) -> bytes:
    """The response's status line, headers and body."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length: ")[1].split(b"\r")[0])
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


def test_chunked_body_over_the_limit_is_refused_as_it_streams():
    """A chunked body without Content-Length used to be read whole (1.2 GB:
    9 s, +2 GB RSS) before the 413; reading now stops past the limit."""
    server = _serve(FakeBackend())  # limit: 2000 * 6 + 4096 bytes
    sock = _connect(server)
    try:
        sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"%x\r\n%s\r\n" % (65536, b"[" * 65536)
        sent, answered = 0, False
        try:
            while sent < 256 * 65536:  # 16 MB at most
                answered = bool(select.select([sock], [], [], 0)[0])
                if answered:
                    break
                sock.sendall(chunk)
                sent += 65536
        except OSError:  # the gateway answered and closed the connection
            answered = True
        response = _response(sock)
    finally:
        sock.close()
        server.stop()
    assert answered and sent < 128 * 65536, sent
    status, _, rest = response.partition(b"\r\n")
    assert b" 413 " in status
    assert b"request body is over the limit of 16,096 bytes" in rest


def test_deeply_nested_json_is_a_clear_400(fake):
    server, _ = fake
    body = (b'{"text": "A dog.", "tgt_lang": "de", "glossary": '
            + b"[" * 5000 + b"]" * 5000 + b"}")
    request = urllib.request.Request(
        server.url + "/v1/translate", data=body,
        headers={"Content-Type": "application/json"})
    with pytest.raises(urllib.error.HTTPError) as info:
        _OPENER.open(request, timeout=30)
    assert info.value.code == 400
    assert json.loads(info.value.read()) == {
        "error": "malformed JSON: JSON nested deeper than 64 levels"}


def test_a_huge_sentence_is_refused_before_any_work(fake, monkeypatch):
    """One 20,000-word line used to cost ~100 s of CPU (a quadratic
    alignment in normalisation) before the model's length check refused
    it; the word count refuses it first, with nothing normalised."""
    import gnmt_tf.pipeline.pipeline

    server, backend = fake
    normalised = []
    monkeypatch.setattr(gnmt_tf.pipeline.pipeline, "normalize_reversibly",
                        lambda *a: normalised.append(a) or None)
    backend.calls.clear()
    status, out = call(server.url, {"text": "word " * 20_000,
                                    "src_lang": "en", "tgt_lang": "de"})
    assert status == 400
    assert out == {"error": "segment 1: a sentence of 20,000 or more words; "
                            "the model reads at most 250 subwords a "
                            "sentence (split it into sentences)"}
    assert normalised == [] and backend.calls == []


def test_mixed_language_document_is_translated_per_paragraph(fake):
    server, backend = fake
    backend.calls.clear()
    status, out = call(server.url, {"text": f"{EN}\n\n{DE}\n\n{FR}",
                                    "tgt_lang": "de", "qe": True})
    assert status == 200, out
    en, de, fr = out["translation"].split("\n\n")
    assert en == f"en->de: {EN.upper()}"
    assert de == DE  # already German: unchanged
    assert fr == f"fr->de: {FR.upper()}"
    assert [s["language"] for s in out["sentences"]] == ["en", "fr"]
    assert out["warnings"] == []


def test_unknown_script_is_flagged(fake):
    server, _ = fake
    status, out = call(server.url, {"text": f"{EN}\n\n{AR}",
                                    "tgt_lang": "de"})
    assert status == 200, out
    assert out["translation"] == f"en->de: {EN.upper()}\n\n{AR}"
    assert out["warnings"] == [
        "segment 2: written in a script none of the model's languages "
        "(de, en, fr) use; left untranslated"]
    # The user says it is English: translated, and flagged.
    status, out = call(server.url, {"text": AR, "src_lang": "en",
                                    "tgt_lang": "de"})
    assert status == 200, out
    assert out["translation"].startswith("en->de: ")
    assert out["warnings"] == [
        "segment 1: written in a script none of the model's languages "
        "(de, en, fr) use; its translation is unreliable"]


def _document(sentences):
    return " ".join(f"The dog number {i} runs." for i in range(sentences))


def _calls_settle(backend, seconds=1.0):
    """The number of calls once none has come for `seconds`."""
    count = -1
    while count != len(backend.calls):
        count = len(backend.calls)
        time.sleep(seconds)
    return count


def test_a_disconnected_client_stops_the_translation(slow):
    """A client gone (curl -m 4 on a big document) used to leave the
    gateway translating the rest of the document."""
    server, backend = slow
    _calls_settle(backend, 0.3)
    backend.calls.clear()
    body = json.dumps({"text": _document(60), "src_lang": "en",
                       "tgt_lang": "de"}).encode()
    sock = _connect(server)
    sock.sendall(b"POST /v1/translate HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    time.sleep(1.0)  # a few of the 30 calls (6 s in all) ran
    sock.close()
    done = _calls_settle(backend)
    assert 1 <= done <= 10, done  # not 30


def test_a_request_past_its_deadline_gets_504_and_stops():
    backend = FakeBackend(delay_s=0.2, batch_size=2)
    server = _serve(backend, request_timeout_s=1.0)
    try:
        start = time.monotonic()
        status, out = call(server.url, {"text": _document(60),
                                        "src_lang": "en", "tgt_lang": "de"})
        took = time.monotonic() - start
        done = _calls_settle(backend)
    finally:
        server.stop()
    assert status == 504
    assert out == {"error": "the translation took longer than the gateway's "
                            "limit of 1 s a request (gnmt-tf gateway "
                            "--request-timeout)"}
    assert took < 5 and done <= 10, (took, done)

