"""A local server speaking TF Serving's gRPC API (`PredictionService.Predict`,
`PredictionService.GetModelMetadata`, `ModelService.GetModelStatus`).

It serves SavedModels from TF Serving's folder layout with hot version reload
(`serving.model_manager`) and optional server-side dynamic batching
(`serving.dynamic_batcher`, configured by a TF Serving
`batching_parameters.txt`). Errors map to gRPC codes: bad inputs (including
a request over the size limits and the model's own input checks, as one
sentence) `INVALID_ARGUMENT` with a message, unknown model / version /
signature `NOT_FOUND`, a full batching queue or shutdown `UNAVAILABLE`, an
expired deadline `DEADLINE_EXCEEDED`; an unexpected exception becomes
`INTERNAL` and is logged, never a crash. A request's work is bounded and
stops when its RPC ends (`serving.request_runner`).

    manager = ModelManager({"gnmt": "/models/gnmt"}, batching=params)
    server = ModelServer(manager, port=8500)
    server.start()
    ...
    server.stop(grace=10)   # drains in-flight requests

Binds 127.0.0.1 unless told otherwise, before loading the models (a port in
use fails at once). Use `gnmt-tf serve` for the command line.
"""

import concurrent.futures
import functools
import logging
import threading
from typing import Optional

import grpc

from serving import tensor_codec
from serving.dynamic_batcher import BatchInputError
from serving.dynamic_batcher import BatcherStoppedError
from serving.dynamic_batcher import DeadlineExceededError
from serving.dynamic_batcher import QueueFullError
from serving.model_errors import describe_model_error
from serving.model_manager import ModelManager
from serving.model_manager import ModelNotFoundError
from serving.protos import get_model_metadata_pb2
from serving.protos import get_model_status_pb2
from serving.protos import model_service_pb2_grpc
from serving.protos import predict_pb2
from serving.protos import prediction_service_pb2_grpc
from serving.request_runner import DEFAULT_MAX_ROWS_PER_RUN
from serving.request_runner import RequestCancelledError
from serving.request_runner import run_request
from serving.validation import InvalidRequest
from serving.validation import RequestLimits
from serving.validation import decode_inputs

log = logging.getLogger("gnmt_tf.serving")

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
_STATE = get_model_status_pb2.ModelVersionStatus.State
_TF_ERROR_UNKNOWN = 2  # tensorflow.error.Code.UNKNOWN


class RpcFailure(Exception):
    """Raised inside a handler to answer with `code` and `message`."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


def _guarded(method):
    """Turn exceptions into gRPC statuses; nothing escapes a handler."""

    @functools.wraps(method)
    def wrapper(self, request, context):
        try:
            return method(self, request, context)
        except RpcFailure as e:
            code, message = e.code, str(e)
        except ModelNotFoundError as e:
            code, message = grpc.StatusCode.NOT_FOUND, str(e)
        except (InvalidRequest, BatchInputError) as e:
            code, message = grpc.StatusCode.INVALID_ARGUMENT, str(e)
        except (QueueFullError, BatcherStoppedError) as e:
            code, message = grpc.StatusCode.UNAVAILABLE, str(e)
        except DeadlineExceededError as e:
            code, message = grpc.StatusCode.DEADLINE_EXCEEDED, str(e)
        except RequestCancelledError as e:
            code, message = grpc.StatusCode.CANCELLED, str(e)
        except Exception as e:  # noqa: BLE001
            code, message = _model_error(e)
        context.abort(code, message)
    return wrapper


def _model_error(e):
    """Status for an exception raised while running the model."""
    name = type(e).__name__
    if name == "InvalidArgumentError":  # tf.errors: the model rejected input
        return (grpc.StatusCode.INVALID_ARGUMENT,
                f"the model rejected the input: {describe_model_error(e)}")
    log.exception("internal error")
    return grpc.StatusCode.INTERNAL, f"{name}: {e}"


def _version_of(spec):
    if spec.version_label:
        raise RpcFailure(grpc.StatusCode.NOT_FOUND,
                         f"version labels are not supported "
                         f"({spec.version_label!r})")
    return spec.version.value if spec.HasField("version") else None


def _model_name(spec):
    if not spec.name:
        raise RpcFailure(grpc.StatusCode.INVALID_ARGUMENT,
                         "model_spec.name is empty")
    return spec.name


class PredictionServicer(prediction_service_pb2_grpc.PredictionServiceServicer):
    """`Predict` and `GetModelMetadata` over a `ModelManager`."""

    def __init__(self, manager: ModelManager, limits: RequestLimits,
                 max_rows_per_run: int = DEFAULT_MAX_ROWS_PER_RUN):
        self.manager = manager
        self.limits = limits
        self.max_rows_per_run = max_rows_per_run

    @_guarded
    def Predict(self, request, context):
        name = _model_name(request.model_spec)
        key = request.model_spec.signature_name or "serving_default"
        with self.manager.acquire(name, _version_of(request.model_spec)) as sv:
            signature = sv.signatures.get(key)
            if signature is None:
                raise RpcFailure(grpc.StatusCode.NOT_FOUND,
                                 f"signature {key!r} not found in {name} "
                                 f"version {sv.version} (has "
                                 f"{sorted(sv.signatures)})")
            outputs_def = signature.signature_def.outputs
            wanted = list(request.output_filter) or list(outputs_def)
            unknown = sorted(set(wanted) - set(outputs_def))
            if unknown:
                raise InvalidRequest(f"output_filter names unknown output(s) "
                                     f"{unknown}; the signature has "
                                     f"{sorted(outputs_def)}")
            inputs = decode_inputs(request.inputs, signature.signature_def,
                                   self.limits)
            outputs = run_request(signature, inputs, context,
                                  self.max_rows_per_run)
            response = predict_pb2.PredictResponse()
            response.model_spec.name = name
            response.model_spec.version.value = sv.version
            response.model_spec.signature_name = key
            for k in wanted:
                response.outputs[k].CopyFrom(tensor_codec.make_tensor(outputs[k]))
            return response

    @_guarded
    def GetModelMetadata(self, request, context):
        name = _model_name(request.model_spec)
        fields = list(request.metadata_field)
        if fields != ["signature_def"]:
            raise InvalidRequest("metadata_field must be ['signature_def'], "
                                 f"got {fields}")
        with self.manager.acquire(name, _version_of(request.model_spec)) as sv:
            response = get_model_metadata_pb2.GetModelMetadataResponse()
            response.model_spec.name = name
            response.model_spec.version.value = sv.version
            sig_map = get_model_metadata_pb2.SignatureDefMap()
            for k, v in sv.signature_defs.items():
                sig_map.signature_def[k].CopyFrom(v)
            response.metadata["signature_def"].Pack(sig_map)
            return response


class ModelServicer(model_service_pb2_grpc.ModelServiceServicer):
    """`GetModelStatus` over a `ModelManager` (`HandleReloadConfigRequest` is
    UNIMPLEMENTED)."""

    def __init__(self, manager: ModelManager):
        self.manager = manager

    @_guarded
    def GetModelStatus(self, request, context):
        name = _model_name(request.model_spec)
        response = get_model_status_pb2.GetModelStatusResponse()
        for version, state, error in self.manager.status(
                name, _version_of(request.model_spec)):
            status = response.model_version_status.add()
            status.version = version
            status.state = _STATE.Value(state)
            if error:
                status.status.error_code = _TF_ERROR_UNKNOWN
                status.status.error_message = error
        return response


def _address(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class ModelServer:
    """gRPC server for a `ModelManager`.

    Args:
      manager: `ModelManager` (started by `start()`, stopped by `stop()`).
      host: str. Interface to bind; 127.0.0.1 by default.
      port: int. 0 picks a free port (see `port` after `start()`).
      max_message_bytes: int. gRPC send/receive message limit.
      num_threads: int. Handler threads (concurrent requests being served).
      max_concurrent_rpcs: int or None. More concurrent RPCs get
        RESOURCE_EXHAUSTED.
      limits: `RequestLimits`.
      max_rows_per_run: int. Without server-side batching, requests run in
        chunks of at most this many rows (deadline checked between chunks).
    """

    def __init__(self, manager: ModelManager, host: str = "127.0.0.1",
                 port: int = 0,
                 max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
                 num_threads: int = 64,
                 max_concurrent_rpcs: Optional[int] = None,
                 limits: RequestLimits = RequestLimits(),
                 max_rows_per_run: int = DEFAULT_MAX_ROWS_PER_RUN):
        self.manager = manager
        self.host = host
        self.port = port
        self._executor = concurrent.futures.ThreadPoolExecutor(
            num_threads, thread_name_prefix="grpc-handler")
        self._server = grpc.server(
            self._executor, maximum_concurrent_rpcs=max_concurrent_rpcs,
            options=[("grpc.max_send_message_length", max_message_bytes),
                     ("grpc.max_receive_message_length", max_message_bytes),
                     ("grpc.so_reuseport", 0)])
        prediction_service_pb2_grpc.add_PredictionServiceServicer_to_server(
            PredictionServicer(manager, limits, max_rows_per_run),
            self._server)
        model_service_pb2_grpc.add_ModelServiceServicer_to_server(
            ModelServicer(manager), self._server)
        self._stop_lock = threading.Lock()
        self._stopping = False
        self._stopped = threading.Event()

    @property
    def target(self) -> str:
        """"host:port" for clients."""
        return _address(self.host, self.port)

    def start(self) -> int:
        """Bind, load the models and start serving; returns the port.

        Raises:
          OSError: the address cannot be bound (checked before loading).
        """
        address = _address(self.host, self.port)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError as e:
            raise OSError(f"cannot bind {address}: {e}") from None
        if not self.port:
            raise OSError(f"cannot bind {address}")
        self.manager.start()
        self._server.start()
        log.info("serving on %s", self.target)
        return self.port

    def stop(self, grace: float = 10.0):
        """Refuse new RPCs, let in-flight ones finish (up to `grace` s), then
        unload the models. Idempotent."""
        with self._stop_lock:
            if self._stopping:
                return
            self._stopping = True
        self._server.stop(grace).wait()
        self.manager.stop()
        self._executor.shutdown(wait=False)
        self._stopped.set()

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Block until `stop()` has finished (True) or `timeout` (False)."""
        return self._stopped.wait(timeout)
