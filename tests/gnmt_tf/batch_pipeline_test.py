"""The three-thread batch pipeline with scripted stages (no model)."""

import itertools
import threading
import time

import pytest

from gnmt_tf.batch_decoding import BatchPipeline, OutOfMemory, Work


class ScriptedStages:
    """Upper-cases lines. `cut` lines are handed back once; batches holding
    a `big` line run out of memory unless alone, those with a `huge` one
    always; `fail_in` names a stage
    that raises on the line `boom`."""

    def __init__(self, fail_in=None, error=RuntimeError("boom failed")):
        self.batches = []  # [(attempt, [lines])] as computed
        self.fail_in = fail_in
        self.error = error

    def _maybe_fail(self, stage, lines):
        if self.fail_in == stage and "boom" in lines:
            raise self.error

    def prepare(self, lines, first):
        self._maybe_fail("prepare", lines)
        return [Work(index=first + i, length=len(line), data=line,
                     empty=not line.strip()) for i, line in enumerate(lines)]

    def compute(self, batch):
        lines = [w.data for w in batch]
        self._maybe_fail("compute", lines)
        if "huge" in lines or ("big" in lines and len(lines) > 1):
            raise OutOfMemory("too big")
        self.batches.append((batch[0].attempt, lines))
        return [f"{w.data.upper()}/{w.attempt}" for w in batch]

    def finish(self, work, result):
        self._maybe_fail("finish", [work.data])
        if work.data.startswith("cut") and work.attempt == 0:
            return None
        return result

    def empty_result(self, work):
        return ""


def _run(stages, lines, batch_size=2, window=4, queue_size=2):
    return list(BatchPipeline(stages, batch_size, window, queue_size).run(
        lines))


def _pipeline_threads():
    return [t for t in threading.enumerate()
            if t.name.startswith("batch-pipeline-")]


def test_order_batches_and_empty_lines():
    lines = ["ccc", "a", "", "bbbb", "dd", "  ", "eeeee", "f"]
    stages = ScriptedStages()
    out = _run(stages, lines)
    assert [i for i, _ in out] == list(range(len(lines)))
    assert [r for _, r in out] == [
        "CCC/0", "A/0", "", "BBBB/0", "DD/0", "", "EEEEE/0", "F/0"]
    # Windows of 4 lines, non-empty ones sorted by length, batches of 2.
    assert stages.batches == [(0, ["a", "ccc"]), (0, ["bbbb"]),
                              (0, ["f", "dd"]), (0, ["eeeee"])]


def test_unfinished_work_is_handed_back():
    lines = ["cut-1", "x", "cut-22", "yy", "zzz"]
    stages = ScriptedStages()
    out = [r for _, r in _run(stages, lines)]
    assert out == ["CUT-1/1", "X/0", "CUT-22/1", "YY/0", "ZZZ/0"]
    retried = [b for b in stages.batches if b[0] == 1]
    assert sorted(line for _, b in retried for line in b) == ["cut-1",
                                                              "cut-22"]
    assert all(len(b) <= 2 for _, b in stages.batches)


def test_out_of_memory_batch_is_redone_one_line_at_a_time():
    stages = ScriptedStages()
    out = [r for _, r in _run(stages, ["big", "a", "b", "c"], batch_size=4)]
    assert out == ["BIG/0", "A/0", "B/0", "C/0"]
    assert sorted(stages.batches) == [(0, ["a"]), (0, ["b"]), (0, ["big"]),
                                      (0, ["c"])]


def test_out_of_memory_alone_is_an_error():
    with pytest.raises(OutOfMemory):
        _run(ScriptedStages(), ["a", "huge"])


def _run_guarded(stages, lines):
    """`_run` in a thread, so a hang fails the test instead of blocking
    it; returns the exception raised."""
    caught = []

    def target():
        try:
            _run(stages, lines)
        except BaseException as e:  # noqa: B902
            caught.append(e)

    thread = threading.Thread(target=target)
    thread.start()
    thread.join(120)
    assert not thread.is_alive(), "the pipeline hung"
    return caught


@pytest.mark.parametrize("stage", ["prepare", "compute", "finish"])
def test_an_error_in_any_thread_ends_the_run_with_that_error(stage):
    error = ValueError(f"input 7 is bad ({stage})")
    lines = [f"line {i}" for i in range(40)]
    lines[6] = "boom"
    caught = _run_guarded(ScriptedStages(stage, error), lines)
    assert caught == [error]
    assert not _pipeline_threads()


def test_keyboard_interrupt_in_a_thread_reaches_the_caller():
    caught = _run_guarded(ScriptedStages("compute", KeyboardInterrupt()),
                          ["a", "boom", "c"])
    assert len(caught) == 1 and isinstance(caught[0], KeyboardInterrupt)
    assert not _pipeline_threads()


def test_queues_bound_what_is_read_ahead():
    pulled = []

    def endless():
        for i in itertools.count():
            pulled.append(i)
            yield f"line {i}"

    batch_size, window, queue_size = 2, 4, 2
    run = BatchPipeline(ScriptedStages(), batch_size, window,
                        queue_size).run(endless())
    assert next(run) == (0, "LINE 0/0")  # then the consumer stops reading
    count = -1
    while count != len(pulled):  # until the pipeline is blocked
        count = len(pulled)
        time.sleep(0.5)
    # Output queue + the post thread's reorder buffer + the two batch
    # queues + what each thread holds: a fixed bound, not the input size.
    bound = (queue_size + 3) * window + (2 * queue_size + 3) * batch_size
    assert count <= bound
    run.close()  # the consumer leaves early: the threads stop
    assert not _pipeline_threads()


def test_arguments_are_checked():
    with pytest.raises(ValueError):
        BatchPipeline(ScriptedStages(), 0, 4)
