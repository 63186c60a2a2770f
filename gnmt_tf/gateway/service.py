"""The HTTP gateway: documents in, documents out, over a `Pipeline`.

    POST /v1/translate   translate a document (JSON, or the raw document)
    GET  /v1/languages   the languages the model knows
    GET  /healthz        {"status": "ok"}

FastAPI on uvicorn (as `gnmt_tf.serving.rest_server`), bound to 127.0.0.1 unless
told otherwise. The model behind it is a `gateway.Pipeline`: in process
(`from_model_dir`) or a server (`from_server`).

``POST /v1/translate`` takes JSON::

    {"text": "..."} or {"html": "..."}     the document (one of the two)
    "format": "text" | "html"              default: by the key given
    "src_lang": "en" | "auto"              default "auto" (detected)
    "tgt_lang": "de"                       required
    "tags": ["news"] or "news,formal"      scene tags (task-space models)
    "glossary": [{"source": s, "target": t}, ...] or [[s, t], ...]
    "qe": true                             estimate quality per sentence
    "min_quality": 0.4                     flag sentences below it (0-1)

and answers ``{"translation": ..., "format", "src_lang", "tgt_lang",
"detected_language" (the detected code, or null when src_lang was given),
"warnings": [...]}`` (repaired HTML, and segments in a script none of the
model's languages use: left untranslated when the language is detected,
translated but unreliable when it was given); with "qe" or "min_quality"
also ``"quality"`` (the document's, 0-1), ``"sentences"`` (``{"source",
"language", "translation", "quality", "flagged"}`` each) and ``"flagged"``
(their indices). With "src_lang": "auto" each paragraph (segment) long
enough for a reliable answer is translated from its own language, and those
already in the target language are left as they are. A raw document
(`Content-Type: text/plain` or `text/html`, parameters in the query string:
``?tgt_lang=de&src_lang=auto&tags=news``) comes back raw, with
``Content-Language`` and ``X-Source-Language`` headers (and
``X-Translation-Warnings``, a JSON list, when there are warnings).

Errors are ``{"error": "one line"}`` with a 4xx status: 400 bad input
(malformed JSON or JSON nested too deeply, invalid UTF-8, an empty
document, malformed XHTML, an unknown language, naming the supported ones;
a missing field; a sentence too long for the model, refused before any
work), 413 a body over the size limit (refused as soon as the body passes
it, chunked or not), 415 another content type, 422 a glossary while the
pipeline takes none; 502/503/504 when the translation server fails, and
504 when the request runs past its deadline (`request_timeout_s`). A request whose
client disconnects stops translating within one batch.
"""

import asyncio
import inspect
import json
import logging
import threading
import warnings
from typing import Optional
from urllib.parse import parse_qs

import fastapi
from fastapi.concurrency import run_in_threadpool

from gnmt_tf.gateway.backends import BackendError
from gnmt_tf.pipeline.cancellation import Cancellation
from gnmt_tf.pipeline.cancellation import Cancelled
from gnmt_tf.pipeline.cancellation import DeadlineExceeded
from gnmt_tf.pipeline.documents import DocumentError
from gnmt_tf.pipeline.documents import MalformedHTMLWarning
from gnmt_tf.pipeline.documents import read_document
from gnmt_tf.pipeline.language_id import UnsupportedLanguageError
from gnmt_tf.pipeline.language_id import check_language
from gnmt_tf.serving import json_limits
from gnmt_tf.serving.http_body import BodyTooLarge
from gnmt_tf.serving.http_body import read_body

log = logging.getLogger(__name__)

FORMATS = ("text", "html")
_JSON_FIELDS = ("text", "html", "format", "src_lang", "tgt_lang", "tags",
                "glossary", "qe", "min_quality")
_RAW_TYPES = {"text/plain": "text", "text/html": "html",
              "application/xhtml+xml": "html"}
# JSON escaping can make a document's body up to 6 times its size ("\\uXXXX"
# per byte); the document itself is checked against the pipeline's limit.
_JSON_OVERHEAD = 6
# `warnings.catch_warnings` changes process-wide state: one reader at a time.
_WARNINGS_LOCK = threading.Lock()
DEFAULT_REQUEST_TIMEOUT_S = 300.0


class RequestError(ValueError):
    """A bad request; `status` is its HTTP status."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.status = status


def _error(status: int, message: str) -> fastapi.responses.JSONResponse:
    return fastapi.responses.JSONResponse({"error": message},
                                          status_code=status)


def _tags(value) -> tuple:
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return tuple(t.strip() for t in value.split(",") if t.strip())
    if isinstance(value, list) and all(isinstance(t, str) for t in value):
        return tuple(value)
    raise RequestError("tags must be a list of strings or a comma-separated "
                       "string")


def _glossary(value):
    """Glossary entries as `(source, target)` pairs."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise RequestError("glossary must be a list of {source, target} "
                           "entries")
    pairs = []
    for n, entry in enumerate(value, 1):
        if isinstance(entry, dict) and set(entry) == {"source", "target"}:
            pair = (entry["source"], entry["target"])
        elif isinstance(entry, list) and len(entry) == 2:
            pair = tuple(entry)
        else:
            raise RequestError(f"glossary entry {n}: expected "
                               '{"source": ..., "target": ...}')
        if not all(isinstance(p, str) and p.strip() for p in pair):
            raise RequestError(f"glossary entry {n}: source and target must "
                               "be non-empty strings")
        pairs.append(pair)
    return pairs


def _decode_utf8(body: bytes, what: str) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as e:
        raise RequestError(f"{what} is not valid UTF-8 (byte "
                           f"{body[e.start]:#04x} at offset {e.start})") \
            from None


def parse_json_request(body: bytes) -> dict:
    """The request fields of a JSON body; `RequestError` for a bad one."""
    text = _decode_utf8(body, "the request body")
    try:
        fields = json_limits.loads(text)
    except json.JSONDecodeError as e:
        raise RequestError(f"malformed JSON: {e.msg} at line {e.lineno} "
                           f"column {e.colno}") from None
    except json_limits.JsonTooDeep as e:
        raise RequestError(f"malformed JSON: {e}") from None
    if not isinstance(fields, dict):
        raise RequestError("the request must be a JSON object")
    unknown = sorted(set(fields) - set(_JSON_FIELDS))
    if unknown:
        raise RequestError(f"unknown field(s) {', '.join(unknown)}; known: "
                           f"{', '.join(_JSON_FIELDS)}")
    given = [key for key in ("text", "html") if key in fields]
    if len(given) != 1:
        raise RequestError('give the document as "text" or "html" (one of '
                           "them)")
    document = fields[given[0]]
    if not isinstance(document, str):
        raise RequestError(f'"{given[0]}" must be a string')
    fmt = fields.get("format") or given[0]
    if given[0] == "html" and fmt != "html":
        raise RequestError('"html" given with format "text"')
    return {"document": document, "format": fmt,
            "src_lang": fields.get("src_lang"),
            "tgt_lang": fields.get("tgt_lang"),
            "tags": _tags(fields.get("tags")),
            "glossary": _glossary(fields.get("glossary")),
            "qe": _qe(fields.get("qe")),
            "min_quality": _min_quality(fields.get("min_quality")),
            "raw": False}


def _qe(value):
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RequestError('"qe" must be true or false')
    return value


def _min_quality(value):
    if value is None:
        return None
    if (isinstance(value, bool) or not isinstance(value, (int, float))
            or not 0.0 <= value <= 1.0):
        raise RequestError(f'"min_quality" must be a number in [0, 1], got '
                           f"{json.dumps(value)}")
    return float(value)


def parse_raw_request(body: bytes, fmt: str, query: str) -> dict:
    """The request fields of a raw document with query parameters."""
    params = {k: v[-1] for k, v in parse_qs(query).items()}
    unknown = sorted(set(params) - {"src_lang", "tgt_lang", "tags"})
    if unknown:
        raise RequestError(f"unknown parameter(s) {', '.join(unknown)}; "
                           "known: src_lang, tgt_lang, tags")
    return {"document": body, "format": fmt,
            "src_lang": params.get("src_lang"),
            "tgt_lang": params.get("tgt_lang"),
            "tags": _tags(params.get("tags")), "glossary": None,
            "raw": True}


class Gateway:
    """Request handling over a `Pipeline`, apart from HTTP (so it runs on a
    worker thread).

    Args:
      pipeline: a `gateway.Pipeline` (or any `pipeline.Pipeline`).
    """

    def __init__(self, pipeline):
        self.pipeline = pipeline
        parameters = inspect.signature(pipeline.translate_document).parameters
        self.takes_glossary = "glossary" in parameters

    def translate(self, request: dict,
                  cancellation: Optional[Cancellation] = None) -> dict:
        """Translates one parsed request; returns the response fields.

        Raises:
          RequestError, UnsupportedLanguageError, DocumentError, ValueError,
          BackendError, gnmt_tf.pipeline.cancellation.Cancelled.
        """
        fmt = request["format"]
        if fmt not in FORMATS:
            raise RequestError(f"unknown format {fmt!r}; expected text or "
                               "html")
        languages = self.pipeline.languages
        tgt_lang = request["tgt_lang"]
        if not tgt_lang or not isinstance(tgt_lang, str):
            raise RequestError("tgt_lang is required; supported: "
                               f"{', '.join(languages)}")
        tgt_lang = check_language(tgt_lang, languages)
        src_lang = request["src_lang"] or "auto"
        if not isinstance(src_lang, str):
            raise RequestError("src_lang must be a string")
        if src_lang != "auto":
            src_lang = check_language(src_lang, languages)
        document = request["document"]
        if not (document.strip() if isinstance(document, str)
                else document.strip()):
            raise RequestError("the document is empty")
        # A raw document is bytes: UTF-8, unless an HTML document declares
        # its own encoding (gnmt_tf.pipeline.documents reads the declaration).
        repaired = self._read(document, fmt)
        kwargs = {}
        if request.get("glossary") is not None:
            if not self.takes_glossary:
                raise RequestError("glossaries are not available in this "
                                   "version of the pipeline", 422)
            kwargs["glossary"] = request["glossary"]
        quality = request.get("qe") or request.get("min_quality") is not None
        # The detailed result carries the flags: no LowQualityWarning.
        result = self.pipeline.translate_document_detailed(
            document, src_lang=src_lang, tgt_lang=tgt_lang,
            tags=request["tags"], format=fmt, qe=quality,
            min_quality=request.get("min_quality"),
            cancellation=cancellation, **kwargs)
        response = {"translation": result.output, "format": fmt,
                    "src_lang": result.source_language, "tgt_lang": tgt_lang,
                    "detected_language": (result.source_language
                                          if src_lang == "auto" else None),
                    "warnings": repaired + result.warnings}
        if quality:
            response.update(
                quality=result.quality,
                sentences=[{"source": s.source, "language": s.language,
                            "translation": s.translation,
                            "quality": s.quality, "flagged": s.flagged}
                           for s in result.sentences],
                flagged=result.flagged)
        return response

    def _read(self, document, fmt):
        """What the HTML parser repaired (`DocumentError` for unreadable
        input, before any translating)."""
        with _WARNINGS_LOCK, warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", MalformedHTMLWarning)
            read_document(document, fmt, self.pipeline.max_bytes)
        return [str(w.message) for w in caught
                if issubclass(w.category, MalformedHTMLWarning)]


async def _wait_for_disconnect(request: fastapi.Request,
                               cancellation: Cancellation):
    """Cancel the request's work when its client disconnects (the body has
    been read: the next ASGI message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    cancellation.cancel()


def _retrieve(task: asyncio.Future):
    """Done callback of work nobody awaits any more (a request answered
    504): fetch its outcome so asyncio logs no "never retrieved"."""
    if not task.cancelled():
        task.exception()


def make_app(pipeline, max_body_bytes: Optional[int] = None,
             request_timeout_s: Optional[float] = DEFAULT_REQUEST_TIMEOUT_S):
    """The FastAPI app of the gateway over `pipeline`.

    Args:
      pipeline: a `gateway.Pipeline`.
      max_body_bytes: int or None. Larger bodies get 413 (default: room for
        a document of `pipeline.max_bytes` in JSON).
      request_timeout_s: float or None. A request still translating after
        this many seconds gets 504 and its work stops (None: no limit).
    """
    gateway = Gateway(pipeline)
    limit = max_body_bytes or pipeline.max_bytes * _JSON_OVERHEAD + 4096
    Cancellation(request_timeout_s)  # validates
    app = fastapi.FastAPI(title="gnmt-tf gateway", docs_url=None,
                          redoc_url=None, openapi_url=None)

    @app.get("/healthz")
    def healthz():
        return {"status": "ok"}

    @app.get("/v1/languages")
    def languages():
        return {"languages": list(pipeline.languages)}

    @app.post("/v1/translate")
    async def translate(request: fastapi.Request):
        try:
            body = await read_body(request, limit)
        except BodyTooLarge as e:
            return _error(413, str(e))
        if not body:
            return _error(400, "empty request body")
        kind = request.headers.get("content-type", "application/json")
        kind = kind.split(";")[0].strip().lower()
        try:
            if kind in ("application/json", ""):
                parsed = parse_json_request(body)
            elif kind in _RAW_TYPES:
                parsed = parse_raw_request(body, _RAW_TYPES[kind],
                                           request.url.query)
            else:
                return _error(415, f"unsupported content type {kind!r}; "
                                   "send JSON, text/plain or text/html")
            result = await _run(request, parsed)
        except RequestError as e:
            return _error(e.status, str(e))
        except DocumentError as e:
            status = 413 if "over the limit" in str(e) else 400
            return _error(status, str(e))
        except DeadlineExceeded:
            return _deadline_error()
        except Cancelled as e:  # the client is gone: nobody reads this
            return _error(499, str(e))
        except (UnsupportedLanguageError, ValueError, TypeError) as e:
            return _error(400, str(e).splitlines()[0] if str(e) else
                          type(e).__name__)
        except BackendError as e:
            return _error(e.status, str(e))
        except Exception:  # noqa: BLE001  (answer 500, keep serving)
            log.exception("gateway: translating a request failed")
            return _error(500, "internal error (see the gateway's log)")
        if parsed["raw"]:
            return _raw_response(result, parsed["format"])
        return result

    async def _run(request, parsed):
        """`gateway.translate` on a worker thread, cancelled when the client
        disconnects; `DeadlineExceeded` at the deadline (the work stops at
        its next batch)."""
        cancellation = Cancellation(request_timeout_s)
        watcher = asyncio.ensure_future(
            _wait_for_disconnect(request, cancellation))
        work = asyncio.ensure_future(
            run_in_threadpool(gateway.translate, parsed, cancellation))
        try:
            done, _ = await asyncio.wait({work},
                                         timeout=cancellation.time_left())
        finally:
            watcher.cancel()
        if not done:
            cancellation.cancel("past the deadline")
            work.add_done_callback(_retrieve)
            raise DeadlineExceeded()
        return work.result()

    def _deadline_error():
        return _error(504, f"the translation took longer than the "
                           f"gateway's limit of {request_timeout_s:g} s a "
                           "request (gnmt-tf gateway --request-timeout)")

    return app


def _raw_response(result: dict, fmt: str) -> fastapi.Response:
    """A raw document's translation, as raw as it came."""
    translation = result["translation"]
    media = ("text/plain; charset=utf-8" if fmt == "text" else "text/html")
    if isinstance(translation, str):
        translation = translation.encode("utf-8")
        media = f"{media.split(';')[0]}; charset=utf-8"
    headers = {"Content-Language": result["tgt_lang"],
               "X-Source-Language": result["src_lang"]}
    if result["warnings"]:
        headers["X-Translation-Warnings"] = json.dumps(result["warnings"])
    return fastapi.Response(translation, media_type=media, headers=headers)


class GatewayServer:
    """The gateway on a uvicorn thread (`gnmt_tf.serving.rest_server.RestServer`).

    Args:
      pipeline: a `gateway.Pipeline`.
      host: str. Interface to bind (default 127.0.0.1: this machine only).
      port: int. 0 picks a free one (see `port` after `start()`).
      max_body_bytes, request_timeout_s: as `make_app`'s.
    """

    def __init__(self, pipeline, host: str = "127.0.0.1", port: int = 0,
                 max_body_bytes: Optional[int] = None,
                 request_timeout_s: Optional[float] =
                 DEFAULT_REQUEST_TIMEOUT_S):
        from gnmt_tf.serving.rest_server import RestServer

        self._rest = RestServer(
            make_app(pipeline, max_body_bytes, request_timeout_s), host,
            port)

    @property
    def port(self) -> int:
        return self._rest.port

    @property
    def url(self) -> str:
        host = self._rest.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def start(self):
        """Binds (`OSError` when the port is taken) and serves."""
        self._rest.bind()
        self._rest.start()

    def stop(self, grace: float = 5.0):
        self._rest.stop(grace)
