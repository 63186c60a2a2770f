"""The request path shared by the gRPC and the REST front ends.

`RequestHandler` answers TF Serving's three requests over a `ModelManager`:
`predict` (find the served version and signature, check the inputs with
`gnmt_tf.serving.validation` and search options such as ``length_penalty`` with
`gnmt_tf.serving.search_options`, run them with `gnmt_tf.serving.request_runner`: server-side
batching, chunks, deadlines, cancellation), `metadata` and `status`. Both
front ends call it and only translate: `gnmt_tf.serving.server` from and to the gRPC
protos, `gnmt_tf.serving.rest_server` from and to TF Serving's JSON
(`gnmt_tf.serving.json_codec`). Errors are raised as exceptions and mapped to a status
by `gnmt_tf.serving.model_errors.error_status`, the same for both.

    handler = RequestHandler(manager, RequestLimits())
    result = handler.predict("gnmt", None, "", lambda signature_def: inputs,
                             context)
    result.outputs["translations"]
"""

import dataclasses
from typing import Callable, Dict, Mapping, Optional, Sequence

import grpc
import numpy as np

from gnmt_tf.serving.model_errors import ServingError
from gnmt_tf.serving.model_manager import ModelManager
from gnmt_tf.serving.protos import get_model_metadata_pb2
from gnmt_tf.serving.protos import get_model_status_pb2
from gnmt_tf.serving.request_runner import DEFAULT_MAX_ROWS_PER_RUN
from gnmt_tf.serving.request_runner import run_request
from gnmt_tf.serving.search_options import check_search_options
from gnmt_tf.serving.validation import InvalidRequest
from gnmt_tf.serving.validation import RequestLimits
from gnmt_tf.serving.validation import decode_inputs

DEFAULT_SIGNATURE = "serving_default"
_STATE = get_model_status_pb2.ModelVersionStatus.State
_TF_ERROR_UNKNOWN = 2  # tensorflow.error.Code.UNKNOWN

# signature_def -> the request's `{key: TensorProto}`: the gRPC front end has
# them already, the REST one needs the signature's dtypes to read its JSON.
ReadInputs = Callable[[object], Mapping[str, object]]


@dataclasses.dataclass(frozen=True)
class PredictResult:
    """What `RequestHandler.predict` computed: the outputs asked for, by the
    version and signature that ran."""
    name: str
    version: int
    signature_name: str
    outputs: Dict[str, np.ndarray]


def _check_label(label: str):
    if label:
        raise ServingError(grpc.StatusCode.NOT_FOUND,
                           f"version labels are not supported ({label!r})")


class RequestHandler:
    """`predict`, `metadata` and `status` over a `ModelManager`.

    Args:
      manager: `ModelManager`.
      limits: `RequestLimits` for the inputs.
      max_rows_per_run: int. Without server-side batching, requests run in
        chunks of at most this many rows (deadline checked between chunks).
    """

    def __init__(self, manager: ModelManager,
                 limits: RequestLimits = RequestLimits(),
                 max_rows_per_run: int = DEFAULT_MAX_ROWS_PER_RUN):
        self.manager = manager
        self.limits = limits
        self.max_rows_per_run = max_rows_per_run

    def predict(self, name: str, version: Optional[int], signature_name: str,
                read_inputs: ReadInputs, context, label: str = "",
                output_filter: Sequence[str] = ()) -> PredictResult:
        """Run a request's inputs through a served signature.

        Args:
          name: str. Model name.
          version: int or None (the latest served).
          signature_name: str; "" means `serving_default`.
          read_inputs: `signature_def -> {key: TensorProto}`.
          context: the request's deadline and liveness
            (`gnmt_tf.serving.request_runner`).
          label: str. A version label (not supported: NOT_FOUND).
          output_filter: output keys to return (empty: all).

        Raises:
          What `gnmt_tf.serving.model_errors.error_status` maps to a status.
        """
        _check_label(label)
        key = signature_name or DEFAULT_SIGNATURE
        with self.manager.acquire(name, version) as sv:
            signature = sv.signatures.get(key)
            if signature is None:
                raise ServingError(grpc.StatusCode.NOT_FOUND,
                                   f"signature {key!r} not found in {name} "
                                   f"version {sv.version} (has "
                                   f"{sorted(sv.signatures)})")
            signature_def = signature.signature_def
            wanted = list(output_filter) or list(signature_def.outputs)
            unknown = sorted(set(wanted) - set(signature_def.outputs))
            if unknown:
                raise InvalidRequest(f"output_filter names unknown output(s) "
                                     f"{unknown}; the signature has "
                                     f"{sorted(signature_def.outputs)}")
            inputs = decode_inputs(read_inputs(signature_def), signature_def,
                                   self.limits)
            try:
                check_search_options(inputs, require_all=False)
            except ValueError as e:
                raise InvalidRequest(str(e)) from None
            outputs = run_request(signature, inputs, context,
                                  self.max_rows_per_run)
            return PredictResult(name, sv.version, key,
                                 {k: outputs[k] for k in wanted})

    def metadata(self, name: str, version: Optional[int] = None,
                 label: str = ""):
        """`GetModelMetadataResponse` with the `signature_def` metadata."""
        _check_label(label)
        with self.manager.acquire(name, version) as sv:
            response = get_model_metadata_pb2.GetModelMetadataResponse()
            response.model_spec.name = name
            response.model_spec.version.value = sv.version
            sig_map = get_model_metadata_pb2.SignatureDefMap()
            for k, v in sv.signature_defs.items():
                sig_map.signature_def[k].CopyFrom(v)
            response.metadata["signature_def"].Pack(sig_map)
            return response

    def status(self, name: str, version: Optional[int] = None,
               label: str = ""):
        """`GetModelStatusResponse`: the state of each version (or one)."""
        _check_label(label)
        response = get_model_status_pb2.GetModelStatusResponse()
        for v, state, error in self.manager.status(name, version):
            status = response.model_version_status.add()
            status.version = v
            status.state = _STATE.Value(state)
            status.status.SetInParent()  # OK, unless set below (TF Serving)
            if error:
                status.status.error_code = _TF_ERROR_UNKNOWN
                status.status.error_message = error
        return response
