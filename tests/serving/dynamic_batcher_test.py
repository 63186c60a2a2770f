import threading
import time

import numpy as np
import pytest

from serving.batching_config import BatchingParameters
from serving.dynamic_batcher import BatchInputError
from serving.dynamic_batcher import BatcherStoppedError
from serving.dynamic_batcher import DynamicBatcher
from serving.dynamic_batcher import QueueFullError


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
