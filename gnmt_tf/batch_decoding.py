"""Batch decoding as a three-thread pipeline (SGNMT's batch decoder, Stahlberg
et al. 2018, §3.1): a scheduler builds batches, one compute thread runs the
model, a post-processing thread handles results and hands unfinished work
back to the scheduler.

    input lines --> [scheduler] --work--> [compute] --results--> [post] --> output
                        ^                                          |
                        +------------- unfinished work ------------+

- The scheduler reads the input lazily, a window of lines at a time,
  prepares them (`Stages.prepare`: tokenisation), sorts each window's
  non-empty lines by length and cuts it into batches of `batch_size` (the
  same batches as `gnmt_tf.translator.Translator.translate_nbest`); work
  handed back goes out again in batches of its own.
- The compute thread runs `Stages.compute` on one batch at a time.
- The post-processing thread makes each result final (`Stages.finish`,
  e.g. detokenisation) or hands it back. One that is not final (say, a translation cut at its length limit) is
  handed back to the scheduler with its attempt number raised; a batch whose
  compute ran out of memory is handed back one sentence at a time. Final
  results leave in input order, as soon as all earlier lines are done, so
  output streams while input is still read.

Memory stays bounded: the work and result queues hold at most `queue_size`
batches each, the output queue `queue_size` windows of lines, and the
scheduler reads no further while they are full. Work handed back goes
through an unbounded queue (a bounded one could deadlock the cycle), but
it only ever holds lines already read, so it is bounded by the others.

An exception in any thread stops all three (every wait checks a shared
stop flag) and `BatchPipeline.run` raises that exception, once, in the
caller's thread; so does Ctrl-C (`KeyboardInterrupt` in the caller), after
the threads have stopped. Threads are joined before `run` returns.
"""

import dataclasses
import queue
import threading
import typing

_DONE = object()  # end-of-stream marker on every queue
_WAIT_SECONDS = 0.05  # how often a blocked thread checks the stop flag


class OutOfMemory(Exception):
    """What `Stages.compute` raises for a batch too large to run; the
    pipeline retries its sentences one at a time."""


@dataclasses.dataclass
class Work:
    """One input line on its way through the pipeline.

    Attributes:
      index: int. 0-based position in the input.
      length: int. Sort key (e.g. subwords); ignored for empty lines.
      data: what `Stages.prepare` made of the line (e.g. its ids).
      empty: bool. True: never computed, `Stages.empty_result` is its result.
      attempt: int. 0, then 1, 2, ... each time the work is handed back.
      alone: bool. True: its batch ran out of memory; it runs on its own.
    """

    index: int
    length: int = 0
    data: typing.Any = None
    empty: bool = False
    attempt: int = 0
    alone: bool = False


class Stages(typing.Protocol):
    """What a `BatchPipeline` runs; each method runs on one thread."""

    def prepare(self, lines: typing.List[str], first: int
                ) -> typing.List[Work]:
        """Scheduler thread: a window of lines (the first at input index
        `first`) -> one `Work` each. May raise (e.g. an over-long line)."""

    def compute(self, batch: typing.List[Work]) -> list:
        """Compute thread: one result per work item. All items of a batch
        share one `attempt`. Raises `OutOfMemory` for a batch too large."""

    def finish(self, work: Work, result):
        """Post-processing thread: the final result made of `result`, or
        None to hand `work` back (it comes back with `attempt + 1`)."""

    def empty_result(self, work: Work):
        """The result of an empty line."""


class _Stop(Exception):
    """Raised inside a thread that must stop because another failed."""


class BatchPipeline:
    """Runs `Stages` over an input with three threads (see the module doc).

    Args:
      stages: `Stages`.
      batch_size: int. Lines per compute batch.
      window: int. Lines read, prepared and sorted together (a multiple of
        `batch_size` keeps batches full).
      queue_size: int. Batches the work and result queues hold.

    Example:
    ```python
    pipeline = BatchPipeline(TranslationStages(translator, options),
                             batch_size=32, window=512)
    for index, hypotheses in pipeline.run(lines):
        print(hypotheses[0].text)
    ```
    """

    def __init__(self, stages, batch_size, window, queue_size=4):
        if batch_size < 1 or window < 1 or queue_size < 1:
            raise ValueError("batch_size, window and queue_size must be >= 1")
        self.stages = stages
        self.batch_size = batch_size
        self.window = window
        self.queue_size = queue_size

    def run(self, lines):
        """Yields `(index, result)` for each input line, in input order.

        Raises:
          Whatever a stage raised (the first error of any thread), or
          `KeyboardInterrupt`; the threads have stopped by then.
        """
        run = _Run(self, iter(lines))
        try:
            yield from run.outputs()
        finally:
            run.stop_and_join()


class _Run:
    """The threads and queues of one `BatchPipeline.run`."""

    def __init__(self, pipeline, lines):
        self.p = pipeline
        self.lines = lines
        self.work = queue.Queue(pipeline.queue_size)      # batches to compute
        self.results = queue.Queue(pipeline.queue_size)   # computed batches
        self.handed_back = queue.Queue()                  # work to redo
        self.output = queue.Queue(pipeline.queue_size
                                  * max(1, pipeline.window))  # in order
        self.stop = threading.Event()
        self.all_done = threading.Event()
        self.error = None
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._guard, args=(body,),
                                         name=f"batch-pipeline-{name}",
                                         daemon=True)
                        for name, body in (("scheduler", self._schedule),
                                           ("compute", self._compute),
                                           ("post", self._post_process))]
        for thread in self.threads:
            thread.start()

    # --- plumbing ---------------------------------------------------------

    def _guard(self, body):
        try:
            body()
        except _Stop:
            pass
        except BaseException as e:  # noqa: B902 (handed to the caller)
            with self.lock:
                if self.error is None:
                    self.error = e
            self.stop.set()

    def _put(self, q, item):
        while not self.stop.is_set():
            try:
                q.put(item, timeout=_WAIT_SECONDS)
                return
            except queue.Full:
                pass
        raise _Stop

    def _get(self, q):
        while not self.stop.is_set():
            try:
                return q.get(timeout=_WAIT_SECONDS)
            except queue.Empty:
                pass
        raise _Stop

    def stop_and_join(self):
        self.stop.set()
        for thread in self.threads:
            thread.join()

    # --- the caller's thread ------------------------------------------------

    def outputs(self):
        while True:
            try:
                item = self._get(self.output)
            except _Stop:
                break
            if item is _DONE:
                break
            yield item
        self.stop_and_join()
        if self.error is not None:
            raise self.error

    # --- scheduler ----------------------------------------------------------

    def _schedule(self):
        total = 0
        while True:
            window = []
            for line in self.lines:
                window.append(line)
                if len(window) == self.p.window:
                    break
            if not window:
                break
            works = self.p.stages.prepare(window, total)
            total += len(window)
            self._send([w for w in works if w.empty])
            full = sorted((w for w in works if not w.empty),
                          key=lambda w: w.length)
            for start in range(0, len(full), self.p.batch_size):
                self._send(full[start:start + self.p.batch_size])
                self._send_handed_back(wait=False)
        self._put(self.work, ("total", total))
        while not self.all_done.is_set():
            self._send_handed_back(wait=True)
        self._put(self.work, _DONE)

    def _send(self, batch):
        if batch:
            self._put(self.work, ("batch", batch))

    def _send_handed_back(self, wait):
        """Sends the work handed back so far, grouped by attempt and sorted
        by length; with `wait`, waits a moment for some first."""
        works = []
        try:
            if wait:
                works.append(self.handed_back.get(timeout=_WAIT_SECONDS))
            while True:
                works.append(self.handed_back.get_nowait())
        except queue.Empty:
            pass
        if self.stop.is_set():
            raise _Stop
        for work in works:
            if work.alone:
                self._send([work])
        rest = sorted((w for w in works if not w.alone),
                      key=lambda w: (w.attempt, w.length))
        for attempt in sorted({w.attempt for w in rest}):
            same = [w for w in rest if w.attempt == attempt]
            for start in range(0, len(same), self.p.batch_size):
                self._send(same[start:start + self.p.batch_size])

    # --- compute ------------------------------------------------------------

    def _compute(self):
        while True:
            message = self._get(self.work)
            if message is _DONE:
                return
            kind, batch = message
            if kind == "batch" and not batch[0].empty:
                try:
                    message = ("batch", batch, self.p.stages.compute(batch))
                except OutOfMemory:
                    if len(batch) == 1:
                        raise
                    message = ("split", batch, None)
            else:
                message = (kind, batch, None)
            self._put(self.results, message)

    # --- post-processing ----------------------------------------------------

    def _post_process(self):
        total = None
        ready = {}  # index -> result, waiting for earlier lines
        emitted = 0
        while total is None or emitted < total:
            kind, batch, results = self._get(self.results)
            if kind == "total":
                total = batch
            elif kind == "split":
                for work in batch:  # handed back, one sentence each
                    work.alone = True
                    self.handed_back.put(work)
            else:
                for i, work in enumerate(batch):
                    if work.empty:
                        ready[work.index] = self.p.stages.empty_result(work)
                        continue
                    final = self.p.stages.finish(work, results[i])
                    if final is None:
                        work.attempt += 1
                        self.handed_back.put(work)
                    else:
                        ready[work.index] = final
            while emitted in ready:
                self._put(self.output, (emitted, ready.pop(emitted)))
                emitted += 1
        self.all_done.set()
        self._put(self.output, _DONE)
