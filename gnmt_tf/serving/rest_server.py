"""TF Serving's REST API for the local server: FastAPI on uvicorn.

    POST /v1/models/NAME[/versions/V]:predict    {"instances": [...]} or
                                                 {"inputs": ...} (JSON)
    GET  /v1/models/NAME[/versions/V]            the versions' states
    GET  /v1/models/NAME[/versions/V]/metadata   model spec + signature_defs
    GET  MONITORING_PATH                         Prometheus metrics, if set

The JSON formats are TF Serving's (`gnmt_tf.serving.json_codec`). A request goes
through the same `RequestHandler` as a gRPC one (model manager, batcher,
validation, chunks), on one of `num_threads` handler threads, with a deadline
of `timeout_s` (TF Serving's `--rest_api_timeout_in_ms`); a request whose
client disconnects stops as a cancelled RPC does (`gnmt_tf.serving.request_runner`).
Errors come back as `{"error": "message"}` with the HTTP status TF Serving
gives the error's code (`HTTP_STATUS`: 400 INVALID_ARGUMENT, 404 NOT_FOUND,
503 UNAVAILABLE, 504 DEADLINE_EXCEEDED, 500 INTERNAL, ...); a body over
`max_body_bytes` gets 413.

    app = make_app(handler, metrics, timeout_s=30.0, max_body_bytes=1 << 26,
                   executor=pool, monitoring_path="/monitoring/prometheus/metrics")
    rest = RestServer(app, "127.0.0.1", 8501)
    rest.bind(); rest.start(); ...; rest.stop(grace=10)
"""

import asyncio
import json
import socket
import threading
import time
from typing import Optional

import fastapi
import grpc
import uvicorn

from gnmt_tf.serving import json_codec
from gnmt_tf.serving.http_body import BodyTooLarge
from gnmt_tf.serving.http_body import read_body
from gnmt_tf.serving.metrics import CONTENT_TYPE
from gnmt_tf.serving.metrics import ServingMetrics
from gnmt_tf.serving.model_errors import ServingError
from gnmt_tf.serving.model_errors import error_status
from gnmt_tf.serving.request_handler import RequestHandler

_CODE = grpc.StatusCode
# tensorflow_serving/model_servers/http_server.cc, ToHTTPStatusCode.
HTTP_STATUS = {
    _CODE.OK: 200, _CODE.CANCELLED: 499, _CODE.UNKNOWN: 500,
    _CODE.INVALID_ARGUMENT: 400, _CODE.DEADLINE_EXCEEDED: 504,
    _CODE.NOT_FOUND: 404, _CODE.ALREADY_EXISTS: 409,
    _CODE.PERMISSION_DENIED: 403, _CODE.RESOURCE_EXHAUSTED: 429,
    _CODE.FAILED_PRECONDITION: 400, _CODE.ABORTED: 409,
    _CODE.OUT_OF_RANGE: 400, _CODE.UNIMPLEMENTED: 501, _CODE.INTERNAL: 500,
    _CODE.UNAVAILABLE: 503, _CODE.DATA_LOSS: 500,
    _CODE.UNAUTHENTICATED: 401,
}
_MODEL = "/v1/models/{name}"
_VERSIONS = ("", "/versions/{version:int}", "/labels/{label}")


class _BodyTooLarge(ServingError):
    """The request body is over the limit (HTTP 413)."""


class _RequestContext:
    """What `gnmt_tf.serving.request_runner` needs of a request, as a gRPC
    `ServicerContext` offers it: the time left before its deadline, whether
    it is still wanted, and callbacks for when it ends (client gone or
    answered)."""

    def __init__(self, timeout_s: Optional[float]):
        self._deadline = (time.monotonic() + timeout_s) if timeout_s else None
        self._lock = threading.Lock()
        self._callbacks = []
        self._ended = False

    def time_remaining(self) -> Optional[float]:
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - time.monotonic())

    def is_active(self) -> bool:
        return not self._ended

    def add_callback(self, callback) -> bool:
        with self._lock:
            if self._ended:
                return False
            self._callbacks.append(callback)
            return True

    def end(self):
        with self._lock:
            if self._ended:
                return
            self._ended = True
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


async def _wait_for_disconnect(request: fastapi.Request, context):
    """End `context` when the client disconnects (the body has been read:
    the next ASGI message is the disconnect)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass
    context.end()


async def _read_body(request: fastapi.Request, limit: int) -> bytes:
    try:
        return await read_body(request, limit)
    except BodyTooLarge as e:
        raise _BodyTooLarge(_CODE.RESOURCE_EXHAUSTED,
                            f"{e} (--max_message_bytes)") from None


def _json_response(content: bytes, status: int) -> fastapi.Response:
    return fastapi.Response(content, status_code=status,
                            media_type="application/json")


def _dumps(content) -> bytes:
    # NaN and Infinity are written as TF Serving writes them.
    return json.dumps(content, ensure_ascii=False,
                      separators=(",", ":")).encode("utf-8")


def _target(request: fastapi.Request):
    params = request.path_params
    return params["name"], params.get("version"), params.get("label", "")


def make_app(handler: RequestHandler, metrics: ServingMetrics,
             executor, timeout_s: Optional[float] = 30.0,
             max_body_bytes: int = 64 * 1024 * 1024,
             monitoring_path: Optional[str] = None) -> fastapi.FastAPI:
    """The FastAPI app of TF Serving's REST API over `handler`.

    Args:
      handler: `RequestHandler` (shared with the gRPC server).
      metrics: `ServingMetrics` (requests are counted as `protocol="rest"`).
      executor: `concurrent.futures.Executor` running the requests.
      timeout_s: float or None. Deadline of each request.
      max_body_bytes: int. Longest request body.
      monitoring_path: str or None. Where to serve the Prometheus metrics.
    """

    async def answer(request, method, model, work, with_body=False):
        """Run `work(context, body)` on the executor; its result as JSON, or
        the error; count the request."""
        start = time.monotonic()
        context = _RequestContext(timeout_s)
        watcher = None
        try:
            body = await _read_body(request, max_body_bytes) if with_body \
                else None
            watcher = asyncio.ensure_future(
                _wait_for_disconnect(request, context))
            content = await asyncio.get_running_loop().run_in_executor(
                executor, lambda: _dumps(work(context, body)))
            code, status = _CODE.OK, 200
        except Exception as e:  # noqa: BLE001  (every error is an answer)
            code, message = error_status(e)
            status = 413 if isinstance(e, _BodyTooLarge) else \
                HTTP_STATUS.get(code, 500)
            content = _dumps({"error": message})
        finally:
            if watcher is not None:
                watcher.cancel()
            context.end()
        metrics.observe_request("rest", method, model, code,
                                time.monotonic() - start)
        return _json_response(content, status)

    async def predict(request: fastapi.Request):
        name, version, label = _target(request)

        def work(context, body):
            if request.path_params["method"] != "predict":
                raise ServingError(
                    _CODE.UNIMPLEMENTED,
                    f"only :predict is served, not "
                    f":{request.path_params['method']}")
            parsed = json_codec.parse_predict_request(body)
            result = handler.predict(
                name, version, parsed.signature_name,
                lambda signature_def: json_codec.request_tensors(
                    parsed, signature_def), context, label=label)
            return json_codec.predict_response(result.outputs,
                                               parsed.row_format)
        return await answer(request, "predict", name, work, with_body=True)

    async def status(request: fastapi.Request):
        name, version, label = _target(request)
        return await answer(
            request, "get_model_status", name,
            lambda context, body: json_codec.status_json(
                handler.status(name, version, label)))

    async def metadata(request: fastapi.Request):
        name, version, label = _target(request)
        return await answer(
            request, "get_model_metadata", name,
            lambda context, body: json_codec.metadata_json(
                handler.metadata(name, version, label)))

    async def prometheus(request: fastapi.Request):
        return fastapi.Response(metrics.exposition(), media_type=CONTENT_TYPE)

    async def no_route(request: fastapi.Request, exc):
        message = f"Malformed request: {request.method} {request.url.path}"
        return _json_response(_dumps({"error": message}), exc.status_code)

    app = fastapi.FastAPI(title="gnmt-tf serve", openapi_url=None,
                          docs_url=None, redoc_url=None,
                          exception_handlers={404: no_route, 405: no_route})
    for version in _VERSIONS:
        app.add_api_route(f"{_MODEL}{version}:{{method}}", predict,
                          methods=["POST"])
        app.add_api_route(f"{_MODEL}{version}", status, methods=["GET"])
        app.add_api_route(f"{_MODEL}{version}/metadata", metadata,
                          methods=["GET"])
    if monitoring_path:
        app.add_api_route(monitoring_path, prometheus, methods=["GET"])
    return app


class RestServer:
    """uvicorn serving `app` on a thread of its own.

    Args:
      app: the ASGI app (`make_app`).
      host: str. Interface to bind.
      port: int. 0 picks a free port (see `port` after `bind()`).
    """

    def __init__(self, app, host: str = "127.0.0.1", port: int = 0):
        self.host = host
        self.port = port
        # log_config=None: uvicorn logs through the root logger, as the rest
        # of the server does, and only warnings and errors.
        self._config = uvicorn.Config(app, log_config=None,
                                      log_level="warning", access_log=False,
                                      lifespan="off")
        self._server = uvicorn.Server(self._config)
        self._socket = None
        self._thread = None

    def bind(self) -> int:
        """Bind and listen (connections wait until `start()`); returns the
        port. Raises `OSError`."""
        family, kind, proto, _, address = socket.getaddrinfo(
            self.host, self.port, type=socket.SOCK_STREAM,
            flags=socket.AI_PASSIVE)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
            sock.listen(self._config.backlog)
        except OSError as e:
            sock.close()
            raise OSError(f"cannot bind {self.host}:{self.port} for the REST "
                          f"API: {e.strerror}") from None
        self._socket = sock
        self.port = sock.getsockname()[1]
        return self.port

    def start(self, timeout: float = 30.0):
        """Serve on the bound socket (binds first if needed)."""
        if self._socket is None:
            self.bind()
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]},
            name="rest-server", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the REST server did not start")
            time.sleep(0.01)

    def stop(self, grace: float = 10.0):
        """Refuse new connections, let requests in flight finish (up to
        `grace` s), then stop."""
        self._config.timeout_graceful_shutdown = grace
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(grace + 5.0)
        if self._socket is not None:
            self._socket.close()
