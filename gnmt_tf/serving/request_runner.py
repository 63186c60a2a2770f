"""Running one `Predict` request's inputs through a served signature.

A request's work is bounded and stops when the request does:

- 0 rows: the empty result, built from the signature's outputs, without
  calling the model (models may fail on an empty batch).
- server-side batching: the rows go to the signature's `DynamicBatcher` with
  the RPC's deadline; work still queued when the RPC ends (deadline, client
  gone) is dropped.
- no batching: the rows run in chunks of at most `max_rows_per_run`, and the
  RPC's deadline and liveness are checked between chunks, so an expired
  request stops within one chunk and the model never sees a batch larger
  than a chunk.

Signatures whose inputs or outputs are not all batch-major (a scalar option
such as `beam_size` is fine as an input: it goes to every chunk) run in one
call. The `context` is the gRPC `ServicerContext` (`is_active`,
`time_remaining`, `add_callback`).
"""

import time
from typing import Dict, Optional

import numpy as np

from gnmt_tf.serving import tensor_codec
from gnmt_tf.serving.dynamic_batcher import BatcherStoppedError
from gnmt_tf.serving.dynamic_batcher import DeadlineExceededError

Arrays = Dict[str, np.ndarray]

DEFAULT_MAX_ROWS_PER_RUN = 32
_MAX_WAIT_S = 3600.0  # longest wait for a batch when the RPC has no deadline


class RequestCancelledError(RuntimeError):
    """The RPC ended (client cancelled or disconnected) before its work did."""


def _rows(inputs: Arrays) -> Optional[int]:
    """Dim 0 shared by the non-scalar inputs, or None (none, or it differs)."""
    dims = {v.shape[0] for v in inputs.values() if v.ndim}
    return dims.pop() if len(dims) == 1 else None


def _batch_major(tensor_infos) -> bool:
    return all(not i.tensor_shape.unknown_rank and i.tensor_shape.dim
               and i.tensor_shape.dim[0].size == -1
               for i in tensor_infos.values())


def empty_outputs(signature_def) -> Arrays:
    """The outputs of a 0-row request: `[0, d1, ...]` arrays of each output's
    dtype (unknown inner dims as 0). Needs batch-major outputs."""
    return {key: np.empty([0] + [max(d.size, 0)
                                 for d in info.tensor_shape.dim[1:]],
                          dtype=tensor_codec.numpy_dtype(info.dtype))
            for key, info in signature_def.outputs.items()}


def _deadline(context) -> Optional[float]:
    """The RPC's deadline as a `time.monotonic()` value (None: no deadline)."""
    remaining = context.time_remaining()
    if remaining is None or remaining > _MAX_WAIT_S:
        return None
    return time.monotonic() + remaining


def _check_alive(context, deadline):
    if deadline is not None and time.monotonic() >= deadline:
        raise DeadlineExceededError("deadline exceeded")
    if not context.is_active():
        raise RequestCancelledError("request cancelled")


def run_request(signature, inputs: Arrays, context,
                max_rows_per_run: int = DEFAULT_MAX_ROWS_PER_RUN) -> Arrays:
    """Outputs of `signature` (a `ServedSignature`) for `inputs`.

    Raises:
      DeadlineExceededError: the RPC's deadline passed first.
      RequestCancelledError: the RPC was cancelled first.
      Whatever the model or the batcher raises.
    """
    signature_def = signature.signature_def
    rows = _rows(inputs)
    if rows is None or not _batch_major(signature_def.outputs):
        return signature.run_fn(inputs)
    if rows == 0:
        return empty_outputs(signature_def)
    deadline = _deadline(context)
    _check_alive(context, deadline)
    if signature.batcher is not None:
        return _run_batched(signature.batcher, inputs, context, deadline)
    return _run_in_chunks(signature.run_fn, inputs, rows, context, deadline,
                          max_rows_per_run)


def _run_batched(batcher, inputs, context, deadline):
    handle = batcher.submit(inputs, deadline=deadline)
    if not context.add_callback(handle.cancel):  # runs when the RPC ends
        handle.cancel()  # it has ended already
    wait = _MAX_WAIT_S if deadline is None else max(
        0.0, deadline - time.monotonic())
    try:
        return handle.result(timeout=wait)
    except TimeoutError:
        handle.cancel()
        raise DeadlineExceededError(
            "deadline exceeded while batching") from None
    except BatcherStoppedError:
        if handle.cancelled:
            raise RequestCancelledError("request cancelled") from None
        raise


def _run_in_chunks(run_fn, inputs, rows, context, deadline, max_rows):
    if rows <= max_rows:
        return run_fn(inputs)
    parts = []
    for start in range(0, rows, max_rows):
        if start:
            _check_alive(context, deadline)
        parts.append(run_fn({k: v[start:start + max_rows] if v.ndim else v
                             for k, v in inputs.items()}))
    return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
