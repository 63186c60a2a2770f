"""gnmt_tf.host_workers: a batch split between runtimes, each searched from
its own thread, the results put back in order."""

import threading

import pytest

from gnmt_tf import cpu_settings
from gnmt_tf.host_workers import RuntimeWorkers


class _Runtime:
    """Counts the searches running on it: never more than one at a time."""

    def __init__(self):
        self.running = 0
        self.most_running = 0
        self.lock = threading.Lock()


def _search(runtime, part):
    with runtime.lock:
        runtime.running += 1
        runtime.most_running = max(runtime.most_running, runtime.running)
    try:
        return [(item, id(runtime)) for item in part]
    finally:
        with runtime.lock:
            runtime.running -= 1


def test_parts_interleave_and_results_come_back_in_order():
    made = []
    workers = RuntimeWorkers(lambda: made.append(_Runtime()) or made[-1], 2)
    assert made == []  # nothing loaded before the first batch
    found = workers.map(_search, list(range(7)))
    assert [item for item, _ in found] == list(range(7))
    assert len(made) == 2
    # every other item on the same runtime: long and short ones mix
    assert {found[i][1] for i in range(0, 7, 2)} == {id(made[0])}
    assert {found[i][1] for i in range(1, 7, 2)} == {id(made[1])}
    assert workers.map(_search, [5]) == [(5, id(made[0]))]
    workers.close()


def test_parts_run_side_by_side():
    both_running = threading.Barrier(2, timeout=10)

    def search(runtime, part):
        both_running.wait()  # raises BrokenBarrierError if run in turn
        return part

    workers = RuntimeWorkers(_Runtime, 2)
    assert workers.map(search, ["a", "b", "c"]) == ["a", "b", "c"]
    workers.close()


def test_batches_from_several_threads_take_turns():
    workers = RuntimeWorkers(_Runtime, 3)
    results = {}

    def translate(first):
        results[first] = workers.map(_search, list(range(first, first + 9)))

    threads = [threading.Thread(target=translate, args=(10 * k,))
               for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for first, found in results.items():
        assert [item for item, _ in found] == list(range(first, first + 9))
    assert all(runtime.most_running == 1
               for runtime in workers._runtimes)  # one search per runtime
    workers.close()


def test_an_error_in_a_part_reaches_the_caller():
    def failing(runtime, part):
        if 3 in part:
            raise ValueError("bad source")
        return part

    workers = RuntimeWorkers(_Runtime, 2)
    with pytest.raises(ValueError, match="bad source"):
        workers.map(failing, [0, 1, 2, 3])
    assert workers.map(failing, [0, 2]) == [0, 2]  # still usable
    workers.close()


def test_fewer_than_two_workers_is_refused():
    with pytest.raises(ValueError, match="workers must be >= 2"):
        RuntimeWorkers(_Runtime, 1)


def test_one_worker_per_core_unless_threads_are_given(monkeypatch):
    monkeypatch.setattr(cpu_settings.os, "sched_getaffinity",
                        lambda pid: {0, 1, 2}, raising=False)
    assert cpu_settings.tflite_workers() == 3
    assert cpu_settings.tflite_workers(threads=2) == 1
