import threading
import time

import numpy as np
import pytest

from gnmt_tf.serving.batching_config import BatchingParameters
from gnmt_tf.serving.dynamic_batcher import BatchInputError
from gnmt_tf.serving.dynamic_batcher import BatcherStoppedError
from gnmt_tf.serving.dynamic_batcher import DeadlineExceededError
from gnmt_tf.serving.dynamic_batcher import DynamicBatcher
from gnmt_tf.serving.dynamic_batcher import QueueFullError
from gnmt_tf.serving.dynamic_batcher import TaskTooLargeError


def strings(*values):
    array = np.empty(len(values), dtype=object)
    array[:] = [v.encode() for v in values]
    return array


class Recorder:
    """run_fn that upper-cases `text` and records the batch sizes it saw."""

    def __init__(self, delay=0.0):
        self.sizes, self.delay = [], delay

    def __call__(self, inputs):
        self.sizes.append(len(inputs["text"]))
        time.sleep(self.delay)
        return {"out": np.array([s.upper() for s in inputs["text"]], object),
                "len": np.array([len(s) for s in inputs["text"]], np.int32)}


def params(**kwargs):
    defaults = dict(max_batch_size=8, batch_timeout_micros=100_000,
                    max_enqueued_batches=10, num_batch_threads=1)
    defaults.update(kwargs)
    return BatchingParameters(**defaults)


def test_concurrent_tasks_are_merged():
    run = Recorder()
    batcher = DynamicBatcher(run, params())
    try:
        handles = [batcher.submit({"text": strings(f"s{i}")}) for i in range(6)]
        results = [h.result(timeout=5)["out"][0] for h in handles]
    finally:
        batcher.stop()
    assert results == [f"S{i}".encode() for i in range(6)]
    assert run.sizes == [6]
    assert batcher.stats["batches"] == 1 and batcher.stats["tasks"] == 6


def test_full_batch_runs_without_waiting_and_splits_large_tasks():
    run = Recorder()
    batcher = DynamicBatcher(run, params(max_batch_size=4,
                                         batch_timeout_micros=10_000_000))
    try:
        start = time.monotonic()
        out = batcher.submit({"text": strings(*"abcdefgh")}).result(timeout=5)
        assert time.monotonic() - start < 5
    finally:
        batcher.stop()
    assert list(out["out"]) == [c.upper().encode() for c in "abcdefgh"]
    assert run.sizes == [4, 4]


def test_padding_to_allowed_batch_sizes():
    run = Recorder()
    batcher = DynamicBatcher(run, params(allowed_batch_sizes=(2, 4, 8),
                                         batch_timeout_micros=0))
    try:
        out = batcher.submit({"text": strings("x", "y", "z")}).result(timeout=5)
    finally:
        batcher.stop()
    assert run.sizes == [4]
    assert list(out["len"]) == [1, 1, 1]
    assert batcher.stats["padded_rows"] == 1


def test_pad_variable_length_inputs():
    def run(inputs):
        return {"sum": inputs["ids"].sum(axis=1)}

    batcher = DynamicBatcher(run, params(pad_variable_length_inputs=True))
    try:
        a = batcher.submit({"ids": np.ones((1, 2), np.int32)})
        b = batcher.submit({"ids": np.ones((2, 5), np.int32)})
        assert list(a.result(5)["sum"]) == [2]
        assert list(b.result(5)["sum"]) == [5, 5]
    finally:
        batcher.stop()
    assert batcher.stats["batches"] == 1


def test_different_shapes_are_not_merged_without_padding():
    def run(inputs):
        return {"sum": inputs["ids"].sum(axis=1)}

    batcher = DynamicBatcher(run, params())
    try:
        a = batcher.submit({"ids": np.ones((1, 2), np.int32)})
        b = batcher.submit({"ids": np.ones((1, 3), np.int32)})
        assert a.result(5)["sum"][0] == 2 and b.result(5)["sum"][0] == 3
    finally:
        batcher.stop()
    assert batcher.stats["batches"] == 2


def test_queue_full_cancel_errors_and_stop():
    gate = threading.Event()

    def run(inputs):
        gate.wait(5)
        if b"bad" in list(inputs["text"]):
            raise RuntimeError("model failed")
        return {"out": inputs["text"]}

    batcher = DynamicBatcher(run, params(max_batch_size=1,
                                         max_enqueued_batches=2,
                                         batch_timeout_micros=0))
    first = batcher.submit({"text": strings("a")})
    time.sleep(0.1)  # the worker is now blocked in run() on "a"
    bad = batcher.submit({"text": strings("bad")})
    cancelled = batcher.submit({"text": strings("c")})
    with pytest.raises(QueueFullError):
        batcher.submit({"text": strings("d")})
    cancelled.cancel()
    with pytest.raises(BatcherStoppedError):
        cancelled.result(1)
    gate.set()
    assert first.result(5)["out"][0] == b"a"
    with pytest.raises(RuntimeError, match="model failed"):
        bad.result(5)
    batcher.stop()
    assert batcher.stats["cancelled"] == 1 and batcher.stats["rejected"] == 1
    with pytest.raises(BatcherStoppedError):
        batcher.submit({"text": strings("e")})


def test_bad_inputs():
    batcher = DynamicBatcher(Recorder(), params())
    try:
        with pytest.raises(BatchInputError):
            batcher.submit({"a": strings("x"), "b": strings("x", "y")})
        with pytest.raises(BatchInputError):
            batcher.submit({"a": np.array(3)})
        with pytest.raises(BatchInputError):
            batcher.submit({"text": strings()})
    finally:
        batcher.stop()


def _blocked_batcher(**kwargs):
    """A batcher whose only worker is stuck in run() on "block" until the
    returned gate is set; run() records every text it sees."""
    gate, seen = threading.Event(), []

    def run(inputs):
        texts = list(inputs["text"])
        if b"block" in texts:
            gate.wait(10)
        if b"bad" in texts:
            raise ValueError("bad input")
        seen.extend(texts)
        return {"out": np.array([t.upper() for t in texts], object)}

    batcher = DynamicBatcher(run, params(**kwargs))
    blocker = batcher.submit({"text": strings("block")})
    deadline = time.monotonic() + 5
    while batcher.queue_state()["batches"]:  # the worker took it
        assert time.monotonic() < deadline
        time.sleep(0.005)
    return batcher, gate, seen, blocker


def test_too_large_task_is_rejected_whole_and_queue_stays_usable():
    batcher, gate, seen, blocker = _blocked_batcher(
        max_batch_size=2, max_enqueued_batches=3, batch_timeout_micros=0)
    try:
        # 7 rows can never fit into 3 batches of 2: rejected, nothing queued.
        with pytest.raises(TaskTooLargeError, match="at most 6"):
            batcher.submit({"text": strings(*"abcdefg")})
        assert batcher.queue_state()["batches"] == 0
        # 4 rows fit in principle; with 2 of 3 batches waiting they do not.
        queued = batcher.submit({"text": strings("w", "x", "y", "z")})
        with pytest.raises(QueueFullError, match="needs 2"):
            batcher.submit({"text": strings("p", "q", "r")})
        assert batcher.queue_state() == {"batches": 2, "tasks": 2,
                                         "cancelled": 0}
        gate.set()
        assert list(queued.result(5)["out"]) == [b"W", b"X", b"Y", b"Z"]
        # the queue drained and takes (and runs) a full-size request again
        out = batcher.submit({"text": strings(*"abcdef")}).result(5)
        assert list(out["out"]) == [c.upper().encode() for c in "abcdef"]
        assert blocker.result(5)["out"][0] == b"BLOCK"
    finally:
        gate.set()
        batcher.stop()
    assert b"p" not in seen


def test_queue_drains_after_a_rejected_request_with_idle_workers():
    """The issue-18 wedge: a rejected over-large request left batches that
    idle workers were never woken up for."""
    batcher = DynamicBatcher(Recorder(), params(
        max_batch_size=2, max_enqueued_batches=3, batch_timeout_micros=0))
    try:
        time.sleep(0.05)  # the worker is idle, waiting for work
        with pytest.raises(TaskTooLargeError):
            batcher.submit({"text": strings(*"abcdefg")})
        out = batcher.submit({"text": strings("a")}).result(5)
        assert list(out["out"]) == [b"A"]
        assert batcher.queue_state()["batches"] == 0
    finally:
        batcher.stop()


def test_expired_tasks_are_dropped_before_running():
    batcher, gate, seen, _ = _blocked_batcher(batch_timeout_micros=0)
    try:
        late = batcher.submit({"text": strings("late")},
                              deadline=time.monotonic() + 0.05)
        on_time = batcher.submit({"text": strings("on time")},
                                 deadline=time.monotonic() + 30)
        time.sleep(0.1)
        gate.set()
        with pytest.raises(DeadlineExceededError):
            late.result(5)
        assert on_time.result(5)["out"][0] == b"ON TIME"
    finally:
        gate.set()
        batcher.stop()
    assert b"late" not in seen
    assert batcher.stats["expired"] == 1


def test_a_bad_task_fails_alone_in_a_merged_batch():
    batcher, gate, seen, _ = _blocked_batcher(max_batch_size=8,
                                              batch_timeout_micros=0)
    try:
        handles = [batcher.submit({"text": strings(t)})
                   for t in ("a", "bad", "c", "d")]
        assert batcher.queue_state()["batches"] == 1
        gate.set()
        assert handles[0].result(5)["out"][0] == b"A"
        with pytest.raises(ValueError, match="bad input"):
            handles[1].result(5)
        assert [h.result(5)["out"][0] for h in handles[2:]] == [b"C", b"D"]
    finally:
        gate.set()
        batcher.stop()
    assert batcher.stats["failed_batches"] == 1
