"""Server-side dynamic batching with TF Serving's `BasicBatchScheduler` semantics.

Concurrent requests ("tasks") are queued into batches of at most
`max_batch_size` rows; a batch runs when it is full or when its first task has
waited `batch_timeout_micros`; `num_batch_threads` batches run at once; when
a task would need more than the `max_enqueued_batches` batches allowed to
wait, it is rejected as a whole before anything is queued (`QueueFullError`,
UNAVAILABLE at the server; `TaskTooLargeError`, INVALID_ARGUMENT, when it could
not fit even into an empty queue). Inputs of a batch are the tasks' inputs
concatenated along dim 0, optionally padded up to an `allowed_batch_sizes`
entry with copies of the first row; outputs are split back by rows. A task
larger than `max_batch_size` is split into several (TF Serving's
`enable_large_batch_splitting`). Tasks cancelled or past their deadline when
their batch comes up are dropped without running; when a batch of several
tasks fails, its halves are run again (recursively), so that one bad request
fails alone.

The batcher only sees `run_fn(inputs: {key: ndarray}) -> {key: ndarray}`, so it
is tested without TensorFlow.
"""

import collections
import threading
import time
from typing import Callable, Dict, Optional

import numpy as np

from gnmt_tf.serving.batching_config import BatchingParameters

Arrays = Dict[str, np.ndarray]


class QueueFullError(RuntimeError):
    """Too many batches are waiting; retry later."""


class BatcherStoppedError(RuntimeError):
    """The batcher is shutting down."""


class BatchInputError(ValueError):
    """The inputs cannot be batched (rank 0, or dim 0 differs across keys)."""


class TaskTooLargeError(BatchInputError):
    """The task has more rows than the whole queue holds
    (`max_enqueued_batches` x `max_batch_size`): it can never be batched."""


class DeadlineExceededError(TimeoutError):
    """The task's deadline passed before its batch ran."""


# Idle workers re-check the queue at least this often (a missed notify can
# delay work, never stop it).
_IDLE_WAIT_S = 1.0


class _Task:
    __slots__ = ("inputs", "rows", "shapes", "deadline", "done", "outputs",
                 "error", "cancelled")

    def __init__(self, inputs, rows, shapes, deadline=None):
        self.inputs = inputs
        self.rows = rows
        self.shapes = shapes  # non-batch dims per key, for compatibility
        self.deadline = deadline  # time.monotonic() value, or None
        self.done = threading.Event()
        self.outputs = None
        self.error = None
        self.cancelled = False

    def finish(self, outputs=None, error=None):
        self.outputs, self.error = outputs, error
        self.done.set()


class _Batch:
    __slots__ = ("tasks", "rows", "deadline", "closed", "shapes")

    def __init__(self, deadline, shapes):
        self.tasks, self.rows = [], 0
        self.deadline, self.closed, self.shapes = deadline, False, shapes


class BatchHandle:
    """The pending result of `DynamicBatcher.submit`."""

    def __init__(self, tasks):
        self._tasks = tasks

    def cancel(self):
        """Drop the work if it has not run yet and release `result()`."""
        for t in self._tasks:
            t.cancelled = True
            t.done.set()

    @property
    def cancelled(self) -> bool:
        return any(t.cancelled for t in self._tasks)

    def result(self, timeout: Optional[float] = None) -> Arrays:
        """Block for the outputs; raises the batch's error, `TimeoutError`, or
        `BatcherStoppedError` if cancelled."""
        deadline = None if timeout is None else time.monotonic() + timeout
        for t in self._tasks:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not t.done.wait(left):
                raise TimeoutError("batched request timed out")
            if t.cancelled:
                raise BatcherStoppedError("request cancelled")
            if t.error is not None:
                raise t.error
        if len(self._tasks) == 1:
            return self._tasks[0].outputs
        return {k: np.concatenate([t.outputs[k] for t in self._tasks])
                for k in self._tasks[0].outputs}


def _batch_rows(inputs: Arrays) -> int:
    dims = {k: v.shape[0] if v.ndim else None for k, v in inputs.items()}
    if not dims or None in dims.values() or len(set(dims.values())) != 1:
        raise BatchInputError(
            "batching needs every input to have the same dim 0 (batch size); "
            f"got {dims}")
    return next(iter(dims.values()))


def _pad_to(array, shape):
    pad = [(0, s - d) for d, s in zip(array.shape, shape)]
    if not any(p for _, p in pad):
        return array
    fill = b"" if array.dtype == object else 0
    return np.pad(array, pad, constant_values=fill)


def _concat(arrays, pad_variable_length):
    if pad_variable_length:
        shape = np.max([a.shape for a in arrays], axis=0)
        arrays = [_pad_to(a, (a.shape[0],) + tuple(shape[1:])) for a in arrays]
    return np.concatenate(arrays, axis=0)


class DynamicBatcher:
    """Merge concurrent `run_fn` calls into batches.

    Args:
      run_fn: callable `{key: ndarray [B, ...]} -> {key: ndarray [B, ...]}`.
      params: `BatchingParameters`.
      name: str. For thread names.

    Example:

        batcher = DynamicBatcher(fn, BatchingParameters(max_batch_size=8))
        outputs = batcher.submit({"text": np.array([b"a"], object)}).result()
        batcher.stop()
    """

    def __init__(self, run_fn: Callable[[Arrays], Arrays],
                 params: BatchingParameters, name: str = "batcher"):
        self.run_fn = run_fn
        self.params = params
        self._timeout_s = params.batch_timeout_micros / 1e6
        self._cond = threading.Condition()
        self._queue = collections.deque()  # of _Batch; only the last is open
        self._stopping = False
        self.stats = collections.Counter()
        self.batch_sizes = collections.Counter()  # rows per run -> count
        self._threads = [
            threading.Thread(target=self._worker, name=f"{name}-{i}", daemon=True)
            for i in range(params.num_batch_threads)]
        for t in self._threads:
            t.start()

    def submit(self, inputs: Arrays,
               deadline: Optional[float] = None) -> BatchHandle:
        """Queue `inputs` (every value with the same dim 0) for batching.

        Args:
          inputs: `{key: ndarray [B, ...]}`.
          deadline: a `time.monotonic()` value; work still queued then is
            dropped and `result()` raises `DeadlineExceededError`.

        Raises:
          BatchInputError: inputs of different batch sizes or rank 0.
          TaskTooLargeError: more rows than the whole queue holds.
          QueueFullError: not enough room in the queue now (nothing queued).
          BatcherStoppedError: the batcher is stopping.
        """
        rows = _batch_rows(inputs)
        if rows == 0:
            raise BatchInputError("nothing to batch: the inputs have 0 rows")
        size = self.params.max_batch_size
        capacity = self.params.max_enqueued_batches * size
        if rows > capacity:
            raise TaskTooLargeError(
                f"the request has {rows} rows; server-side batching queues at "
                f"most {capacity} (max_enqueued_batches "
                f"{self.params.max_enqueued_batches} x max_batch_size {size}):"
                f" send fewer rows per request")
        shapes = None if self.params.pad_variable_length_inputs else tuple(
            sorted((k, v.shape[1:]) for k, v in inputs.items()))
        tasks = [_Task({k: v[i:i + size] for k, v in inputs.items()},
                       min(size, rows - i), shapes, deadline)
                 for i in range(0, rows, size)]
        with self._cond:
            if self._stopping:
                raise BatcherStoppedError("server is shutting down")
            waiting = len(self._queue)
            needed = self._batches_needed(tasks)
            if waiting + needed > self.params.max_enqueued_batches:
                self.stats["rejected"] += 1
                raise QueueFullError(
                    f"the batching queue is full ({waiting} of "
                    f"{self.params.max_enqueued_batches} batches waiting, "
                    f"this request needs {needed})")
            for task in tasks:
                self._enqueue(task)
            self.stats["tasks"] += 1
            self._cond.notify_all()
        return BatchHandle(tasks)

    def queue_state(self) -> dict:
        """What is waiting now: `{"batches", "tasks", "cancelled"}` (tasks
        cancelled while queued are dropped when their batch comes up)."""
        with self._cond:
            tasks = [t for b in self._queue for t in b.tasks]
        return {"batches": len(self._queue), "tasks": len(tasks),
                "cancelled": sum(t.cancelled for t in tasks)}

    def _open_rows(self, shapes):
        """Rows in the last batch if `shapes` may join it, else None."""
        last = self._queue[-1] if self._queue else None
        if last is None or last.closed or last.shapes != shapes:
            return None
        return last.rows

    def _batches_needed(self, tasks) -> int:
        """New batches `_enqueue` would open for `tasks` (nothing changes)."""
        size, needed = self.params.max_batch_size, 0
        open_rows = self._open_rows(tasks[0].shapes)
        for task in tasks:
            if open_rows is None or open_rows + task.rows > size:
                needed, open_rows = needed + 1, 0
            open_rows += task.rows
            if open_rows >= size:
                open_rows = None
        return needed

    def _enqueue(self, task):
        """Add `task` to the open batch or a new one (room checked before)."""
        size = self.params.max_batch_size
        open_rows = self._open_rows(task.shapes)
        if open_rows is None or open_rows + task.rows > size:
            if self._queue:
                self._queue[-1].closed = True
            self._queue.append(_Batch(time.monotonic() + self._timeout_s,
                                      task.shapes))
        last = self._queue[-1]
        last.tasks.append(task)
        last.rows += task.rows
        if last.rows >= size:
            last.closed = True

    def _next_batch(self):
        with self._cond:
            while True:
                if self._queue:
                    batch = self._queue[0]
                    wait = batch.deadline - time.monotonic()
                    if batch.closed or wait <= 0 or self._stopping:
                        return self._queue.popleft()
                    self._cond.wait(wait)
                elif self._stopping:
                    return None
                else:
                    self._cond.wait(_IDLE_WAIT_S)

    def _worker(self):
        while True:
            batch = self._next_batch()
            if batch is None:
                return
            self._run(batch)

    def _run(self, batch):
        now = time.monotonic()
        tasks, expired = [], []
        for t in batch.tasks:
            if t.cancelled:
                continue
            if t.deadline is not None and t.deadline <= now:
                expired.append(t)
            else:
                tasks.append(t)
        for t in expired:
            t.finish(error=DeadlineExceededError(
                "the deadline passed while the request waited for a batch"))
        with self._cond:
            self.stats["cancelled"] += (len(batch.tasks) - len(tasks)
                                        - len(expired))
            self.stats["expired"] += len(expired)
        if tasks:
            self._run_tasks(tasks)

    def _run_tasks(self, tasks):
        """Run `tasks` as one batch; if that fails, run each half again, so
        that only the tasks that fail alone get the error."""
        try:
            outputs, padded = self._call(tasks)
        except Exception as e:  # noqa: BLE001  (handed to the waiting task)
            if len(tasks) > 1:
                with self._cond:
                    self.stats["split_batches"] += 1
                half = len(tasks) // 2
                self._run_tasks(tasks[:half])
                self._run_tasks(tasks[half:])
                return
            with self._cond:
                self.stats["failed_batches"] += 1
            tasks[0].finish(error=e)
            return
        self._finish(tasks, outputs, padded)

    def _call(self, tasks):
        """Merge, pad, run; returns (outputs, padded rows)."""
        keys = tasks[0].inputs.keys()
        merged = {k: _concat([t.inputs[k] for t in tasks],
                             self.params.pad_variable_length_inputs)
                  for k in keys}
        rows = sum(t.rows for t in tasks)
        padded = self.params.padded_size(rows)
        if padded > rows:
            merged = {k: np.concatenate(
                [v, np.repeat(v[:1], padded - rows, axis=0)])
                for k, v in merged.items()}
        outputs = self.run_fn(merged)
        for k, v in outputs.items():
            if np.ndim(v) == 0 or len(v) != padded:
                raise RuntimeError(
                    f"output {k!r} is not batch-major (shape "
                    f"{np.shape(v)}, batch {padded}); cannot split it")
        return outputs, padded

    def _finish(self, tasks, outputs, padded):
        rows = sum(t.rows for t in tasks)
        with self._cond:
            self.stats["batches"] += 1
            self.stats["rows"] += rows
            self.stats["padded_rows"] += padded - rows
            self.batch_sizes[padded] += 1
        start = 0
        for t in tasks:
            t.finish({k: v[start:start + t.rows] for k, v in outputs.items()})
            start += t.rows

    def stop(self, drain: bool = True, timeout: float = 30.0):
        """Stop the threads; with `drain`, queued batches run first, otherwise
        their tasks fail with `BatcherStoppedError`."""
        with self._cond:
            self._stopping = True
            if not drain:
                for batch in self._queue:
                    for t in batch.tasks:
                        t.finish(error=BatcherStoppedError("server stopped"))
                self._queue.clear()
            self._cond.notify_all()
        deadline = time.monotonic() + timeout
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
