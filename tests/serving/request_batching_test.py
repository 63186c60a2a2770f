import threading
import time

import pytest

from gnmt_tf.serving import request_batching as rb


def test_plan_dedupes_sorts_and_packs():
    sentences = ["bb", "a", "cccc", "a", "bb", "dddddd", "e"]
    plan = rb.plan_requests(sentences, max_sentences=2, max_units=7)
    assert plan.unique == ["bb", "a", "cccc", "dddddd", "e"]
    packed = [[plan.unique[u] for u in r] for r in plan.requests]
    # longest first; at most 2 sentences and 7 chars per request
    assert packed == [["dddddd"], ["cccc", "bb"], ["a", "e"]]
    assert sorted(u for r in plan.requests for u in r) == list(range(5))
    results = plan.reassemble([s.upper() for s in plan.unique])
    assert results == [s.upper() for s in sentences]


def test_plan_long_sentence_alone_and_tokens():
    plan = rb.plan_requests(["x " * 10, "y", "z"], max_sentences=8,
                            max_units=3, unit="tokens")
    assert [len(r) for r in plan.requests] == [1, 2]
    with pytest.raises(ValueError):
        rb.plan_requests(["a"], unit="bytes")
    with pytest.raises(ValueError):
        rb.plan_requests(["a"], max_sentences=0)


def test_execute_plan_order_and_in_flight_bound():
    sentences = [f"s{i % 17}" * (1 + i % 5) for i in range(100)]
    plan = rb.plan_requests(sentences, max_sentences=3, max_units=1000)
    lock, active, peak = threading.Lock(), [0], [0]

    def send(batch):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.002)
        with lock:
            active[0] -= 1
        return [s[::-1] for s in batch]

    results = plan.reassemble(rb.execute_plan(plan, send, max_in_flight=3))
    assert results == [s[::-1] for s in sentences]
    assert 1 <= peak[0] <= 3


def test_execute_plan_propagates_errors():
    plan = rb.plan_requests(["a", "b", "c"], max_sentences=1)

    def send(batch):
        if batch == ["b"]:
            raise KeyError("boom")
        return batch

    with pytest.raises(KeyError):
        rb.execute_plan(plan, send, max_in_flight=2)
