"""Status codes and one-line messages for the errors of a request.

`error_status(error)` is the one mapping from what the request path raises to
a gRPC status code and a message, used by both front ends: the gRPC server
answers with that status, the REST API with the HTTP status TF Serving uses
for it (`gnmt_tf.serving.rest_server`), and the metrics count requests by it. Bad
inputs (including a request over the size limits and the model's own input
checks, as one sentence) are `INVALID_ARGUMENT`; an unknown model / version /
signature `NOT_FOUND`; a full batching queue or shutdown `UNAVAILABLE`; an
expired deadline `DEADLINE_EXCEEDED`; a request whose client went away
`CANCELLED`; anything unexpected `INTERNAL` (and is logged).

TensorFlow's `InvalidArgumentError` from a signature call carries a graph
dump: "Graph execution error:", "Detected at node ...", stack-trace lines, the
failing node (`[[{{node Assert/Assert}}]]`) and the function
(`[Op:__inference_...]`). What the client needs is the reason, e.g. the
export's in-graph check

    assertion failed: [input too long: the limit is 250 subwords, got] [4096]
    [(split it into sentences)]

becomes "input too long: the limit is 250 subwords, got 4096 (split it into
sentences)".
"""

import logging
import re
from typing import Tuple

import grpc

from gnmt_tf.serving.dynamic_batcher import BatchInputError
from gnmt_tf.serving.dynamic_batcher import BatcherStoppedError
from gnmt_tf.serving.dynamic_batcher import DeadlineExceededError
from gnmt_tf.serving.dynamic_batcher import QueueFullError
from gnmt_tf.serving.model_manager import ModelNotFoundError
from gnmt_tf.serving.request_runner import RequestCancelledError
from gnmt_tf.serving.validation import InvalidRequest

log = logging.getLogger("gnmt_tf.serving")

MAX_MESSAGE_CHARS = 500

_NOISE = re.compile(r"^(Graph execution error:|Detected at node |"
                    r"<stack traces unavailable>|File \"|\[\[\{\{node )")
_TRAILER = re.compile(r"\s*(\[\[\{\{node [^}]*\}\}\]\])?\s*(\[Op:[^\]]*\])?\s*$")
_ASSERTION = re.compile(r"assertion failed:\s*(.*)")


def _assertion_text(data: str) -> str:
    """`[a] [b c] [d]` (one bracket group per Assert data tensor) -> `a b c d`."""
    data = data.strip()
    if data.startswith("[") and data.endswith("]"):
        data = data[1:-1]
    return data.replace("] [", " ")


def describe_model_error(error: BaseException) -> str:
    """The reason of a model error on one line (at most `MAX_MESSAGE_CHARS`)."""
    text = getattr(error, "message", None) or str(error)
    lines = [_TRAILER.sub("", line).strip() for line in text.splitlines()]
    lines = [line for line in lines if line and not _NOISE.match(line)]
    reasons = []
    for line in lines:
        match = _ASSERTION.match(line)
        reasons.append(_assertion_text(match.group(1)) if match else line)
    message = "; ".join(reasons) or type(error).__name__
    if len(message) > MAX_MESSAGE_CHARS:
        message = message[:MAX_MESSAGE_CHARS - 3] + "..."
    return message


class ServingError(Exception):
    """Raised on the request path to answer with `code` (a
    `grpc.StatusCode`) and the message."""

    def __init__(self, code: grpc.StatusCode, message: str):
        super().__init__(message)
        self.code = code


_STATUS = (
    (ServingError, None),
    (ModelNotFoundError, grpc.StatusCode.NOT_FOUND),
    ((InvalidRequest, BatchInputError), grpc.StatusCode.INVALID_ARGUMENT),
    ((QueueFullError, BatcherStoppedError), grpc.StatusCode.UNAVAILABLE),
    (DeadlineExceededError, grpc.StatusCode.DEADLINE_EXCEEDED),
    (RequestCancelledError, grpc.StatusCode.CANCELLED),
)


def error_status(error: BaseException) -> Tuple[grpc.StatusCode, str]:
    """The status code and message a request that raised `error` gets."""
    for kinds, code in _STATUS:
        if isinstance(error, kinds):
            return code or error.code, str(error)
    name = type(error).__name__
    if name == "InvalidArgumentError":  # tf.errors: the model rejected input
        return (grpc.StatusCode.INVALID_ARGUMENT,
                f"the model rejected the input: {describe_model_error(error)}")
    log.exception("internal error", exc_info=error)
    return grpc.StatusCode.INTERNAL, f"{name}: {error}"
