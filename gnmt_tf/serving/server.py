"""The local model server: TF Serving's gRPC API (`PredictionService.Predict`,
`PredictionService.GetModelMetadata`, `ModelService.GetModelStatus`), its REST
API, Prometheus metrics and the standard gRPC health service.

It serves SavedModels from TF Serving's folder layout with hot version reload
(`gnmt_tf.serving.model_manager`) and optional server-side dynamic batching
(`gnmt_tf.serving.dynamic_batcher`, configured by a TF Serving
`batching_parameters.txt`). gRPC and REST requests take the same path
(`gnmt_tf.serving.request_handler`) and get the same errors
(`gnmt_tf.serving.model_errors.error_status`): bad inputs `INVALID_ARGUMENT` (HTTP
400) with a message, unknown model / version / signature `NOT_FOUND` (404), a
full batching queue or shutdown `UNAVAILABLE` (503), an expired deadline
`DEADLINE_EXCEEDED` (504); an unexpected exception becomes `INTERNAL` and is
logged, never a crash. A request's work is bounded and stops when its request
ends (`gnmt_tf.serving.request_runner`).

    manager = ModelManager({"gnmt": "/models/gnmt"}, batching=params)
    server = ModelServer(manager, port=8500, rest_port=8501,
                         monitoring_path="/monitoring/prometheus/metrics")
    server.start()
    ...
    server.stop(grace=10)   # drains in-flight requests

The health service (`grpc.health.v1.Health`, on the gRPC port) reports each
model by its name, SERVING while a version of it is served, and the server as
a whole (service "") SERVING once every model has a version loaded; all turn
NOT_SERVING when the server stops.

Binds 127.0.0.1 unless told otherwise, before loading the models (a port in
use fails at once). Use `gnmt-tf serve` for the command line.
"""

import concurrent.futures
import functools
import logging
import threading
import time
from typing import Optional

import grpc
from grpc_health.v1 import health
from grpc_health.v1 import health_pb2
from grpc_health.v1 import health_pb2_grpc

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.metrics import ServingMetrics
from gnmt_tf.serving.model_errors import ServingError
from gnmt_tf.serving.model_errors import error_status
from gnmt_tf.serving.model_manager import ModelManager
from gnmt_tf.serving.protos import model_service_pb2_grpc
from gnmt_tf.serving.protos import predict_pb2
from gnmt_tf.serving.protos import prediction_service_pb2_grpc
from gnmt_tf.serving.request_handler import RequestHandler
from gnmt_tf.serving.request_runner import DEFAULT_MAX_ROWS_PER_RUN
from gnmt_tf.serving.validation import InvalidRequest
from gnmt_tf.serving.validation import RequestLimits

log = logging.getLogger("gnmt_tf.serving")

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_SERVING = health_pb2.HealthCheckResponse.SERVING
_NOT_SERVING = health_pb2.HealthCheckResponse.NOT_SERVING


def _guarded(method_name):
    """Answer errors with their gRPC status (nothing escapes a handler) and
    count every request in the servicer's `metrics`."""

    def decorate(method):
        @functools.wraps(method)
        def wrapper(self, request, context):
            start = time.monotonic()
            code = grpc.StatusCode.OK
            try:
                return method(self, request, context)
            except Exception as e:  # noqa: BLE001
                code, message = error_status(e)
                context.abort(code, message)
            finally:
                self.metrics.observe_request(
                    "grpc", method_name, request.model_spec.name, code,
                    time.monotonic() - start)
        return wrapper
    return decorate


def _version_of(spec):
    return spec.version.value if spec.HasField("version") else None


def _model_name(spec):
    if not spec.name:
        raise ServingError(grpc.StatusCode.INVALID_ARGUMENT,
                           "model_spec.name is empty")
    return spec.name


class PredictionServicer(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`Predict` and `GetModelMetadata` over a `RequestHandler`."""

    def __init__(self, handler: RequestHandler, metrics: ServingMetrics):
        self.handler = handler
        self.metrics = metrics

    @_guarded("predict")
    def Predict(self, request, context):
        spec = request.model_spec
        result = self.handler.predict(
            _model_name(spec), _version_of(spec), spec.signature_name,
            lambda signature_def: request.inputs, context,
            label=spec.version_label, output_filter=request.output_filter)
        response = predict_pb2.PredictResponse()
        response.model_spec.name = result.name
        response.model_spec.version.value = result.version
        response.model_spec.signature_name = result.signature_name
        for k, v in result.outputs.items():
            response.outputs[k].CopyFrom(tensor_codec.make_tensor(v))
        return response

    @_guarded("get_model_metadata")
    def GetModelMetadata(self, request, context):
        spec = request.model_spec
        name = _model_name(spec)
        fields = list(request.metadata_field)
        if fields != ["signature_def"]:
            raise InvalidRequest("metadata_field must be ['signature_def'], "
                                 f"got {fields}")
        return self.handler.metadata(name, _version_of(spec),
                                     spec.version_label)


class ModelServicer(model_service_pb2_grpc.ModelServiceServicer):
    """`GetModelStatus` over a `RequestHandler` (`HandleReloadConfigRequest`
    is UNIMPLEMENTED)."""

    def __init__(self, handler: RequestHandler, metrics: ServingMetrics):
        self.handler = handler
        self.metrics = metrics

    @_guarded("get_model_status")
    def GetModelStatus(self, request, context):
        spec = request.model_spec
        return self.handler.status(_model_name(spec), _version_of(spec),
                                   spec.version_label)


def _address(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ModelServer:
    """The gRPC server (and, with `rest_port`, the REST API) of a
    `ModelManager`.

    Args:
      manager: `ModelManager` (started by `start()`, stopped by `stop()`).
      host: str. Interface to bind; 127.0.0.1 by default.
      port: int. gRPC port; 0 picks a free port (see `port` after `start()`).
      max_message_bytes: int. gRPC send/receive message limit, and the
        longest REST request body.
      num_threads: int. gRPC handler threads (concurrent requests served).
      max_concurrent_rpcs: int or None. More concurrent RPCs get
        RESOURCE_EXHAUSTED.
      limits: `RequestLimits`.
      max_rows_per_run: int. Without server-side batching, requests run in
        chunks of at most this many rows (deadline checked between chunks).
      rest_port: int or None. Port of TF Serving's REST API; None: no REST
        API, 0: a free port (see `rest_port` after `start()`).
      rest_threads: int. REST handler threads.
      rest_timeout_s: float or None. Deadline of each REST request.
      monitoring_path: str or None. Where the REST port serves the
        Prometheus metrics (needs `rest_port`).
    """

    def __init__(self, manager: ModelManager, host: str = "127.0.0.1",
                 port: int = 0,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 num_threads: int = 64,
                 max_concurrent_rpcs: Optional[int] = None,
                 limits: RequestLimits = RequestLimits(),
                 max_rows_per_run: int = DEFAULT_MAX_ROWS_PER_RUN,
                 rest_port: Optional[int] = None,
                 rest_threads: int = 16,
                 rest_timeout_s: Optional[float] = 30.0,
                 monitoring_path: Optional[str] = None):
        if monitoring_path and rest_port is None:
            raise ValueError("the metrics are served on the REST port: "
                             "monitoring_path needs rest_port")
        self.manager = manager
        self.host = host
        self.port = port
        self.metrics = ServingMetrics(manager.models)
        manager.observe_runs(self.metrics.observe_batch)
        self.handler = RequestHandler(manager, limits, max_rows_per_run)
        self._executor = concurrent.futures.ThreadPoolExecutor(
            num_threads, thread_name_prefix="grpc-handler")
        self._server = grpc.server(
            self._executor, maximum_concurrent_rpcs=max_concurrent_rpcs,
            options=[("grpc.max_send_message_length", max_message_bytes),
                     ("grpc.max_receive_message_length", max_message_bytes),
                     ("grpc.so_reuseport", 0)])
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionServicer(self.handler, self.metrics), self._server)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(
            ModelServicer(self.handler, self.metrics), self._server)
        self.health = health.HealthServicer()
        health_pb2_grpc.add_HealthServicer_to_server(self.health, self._server)
        self._health_lock = threading.Lock()
        self._health_states = {}
        self._update_health()  # NOT_SERVING until the models are loaded
        manager.add_listener(self._update_health)
        self._rest = self._rest_executor = None
        if rest_port is not None:
            from gnmt_tf.serving.rest_server import RestServer
            from gnmt_tf.serving.rest_server import make_app

            self._rest_executor = concurrent.futures.ThreadPoolExecutor(
                rest_threads, thread_name_prefix="rest-handler")
            app = make_app(self.handler, self.metrics, self._rest_executor,
                           timeout_s=rest_timeout_s,
                           max_body_bytes=max_message_bytes,
                           monitoring_path=monitoring_path)
            self._rest = RestServer(app, host, rest_port)
        self._stop_lock = threading.Lock()
        self._stopping = False
        self._stopped = threading.Event()

    @property
    def target(self) -> str:
        """"host:port" for gRPC clients."""
        return _address(self.host, self.port)

    @property
    def rest_port(self) -> Optional[int]:
        """The REST API's port (None without one)."""
        return None if self._rest is None else self._rest.port

    @property
    def rest_url(self) -> Optional[str]:
        """"http://host:port" of the REST API (None without one)."""
        if self._rest is None:
            return None
        return f"http://{_address(self.host, self._rest.port)}"

    def _update_health(self):
        """Set each model's health service (and "") from what is served."""
        served = {name: bool(self.manager.served_versions(name))
                  for name in self.manager.models}
        states = {name: _SERVING if ok else _NOT_SERVING
                  for name, ok in served.items()}
        states[""] = _SERVING if all(served.values()) else _NOT_SERVING
        with self._health_lock:
            for service, state in states.items():
                if self._health_states.get(service) != state:
                    self._health_states[service] = state
                    self.health.set(service, state)

    def start(self) -> int:
        """Bind, load the models and start serving; returns the gRPC port.

        Raises:
          OSError: an address cannot be bound (checked before loading).
        """
        address = _address(self.host, self.port)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError as e:
            raise OSError(f"cannot bind {address}: {e}") from None
        if not self.port:
            raise OSError(f"cannot bind {address}")
        if self._rest is not None:
            self._rest.bind()
        self.manager.start()
        self._server.start()
        if self._rest is not None:
            self._rest.start()
            log.info("REST API on %s", self.rest_url)
        log.info("serving on %s", self.target)
        return self.port

    def stop(self, grace: float = 10.0):
        """Turn the health services NOT_SERVING, refuse new requests, let
        in-flight ones finish (up to `grace` s), then unload the models.
        Idempotent."""
        with self._stop_lock:
            if self._stopping:
                return
            self._stopping = True
        self.health.enter_graceful_shutdown()
        grpc_stopped = self._server.stop(grace)
        if self._rest is not None:
            self._rest.stop(grace)
        grpc_stopped.wait()
        self.manager.stop()
        self._executor.shutdown(wait=False)
        if self._rest_executor is not None:
            self._rest_executor.shutdown(wait=False)
        self._stopped.set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until `stop()` has finished (True) or `timeout` (False)."""
        return self._stopped.wait(timeout)
