"""A batch searched by single-threaded runtimes side by side.

One TFLite interpreter with two threads splits each op of a step between
them, and at a search's sizes most ops are too small to pay for it. Two
interpreters of one thread each, each searching every other sentence of
the batch in its own Python thread, keep both cores busy instead: LiteRT's
`Invoke` and NumPy's work on large arrays release the GIL. At beam 4,
batch 32, on a 2-core machine (`benchmarks/task_space_decode_speed.py`,
keys ``ours_tflite_*_workers``) this was faster for both the float32 and
the int8 export; CTranslate2 gains the same way from `inter_threads`,
which the benchmark times too (``ctranslate2*_two_workers``).

`concurrent.futures` gives the threads; what it does not give is keeping
one runtime per thread (an interpreter is not thread-safe) and putting
the parts back in order, which is all this module adds.
"""

import concurrent.futures
import threading


class RuntimeWorkers:
    """`count` runtimes, made by `factory` on first use (so that a process
    translating one sentence never loads them), each searched from its own
    thread.

    Args:
      factory: callable returning a new runtime adapter (of one thread).
      count: int >= 2. Runtimes and threads.

    Raises:
      ValueError: `count` < 2.
    """

    def __init__(self, factory, count):
        if int(count) < 2:
            raise ValueError(f"workers must be >= 2, got {count}")
        self.count = int(count)
        self._factory = factory
        self._runtimes = None
        self._pool = None
        # One batch at a time: each runtime serves one thread.
        self._lock = threading.Lock()

    def map(self, search, items):
        """`search(runtime, part)` for the parts `items[i::count]`, each
        on its own runtime, side by side; returns the per-item results in
        `items`' order (`search` returns one result per item of its part).
        Interleaving gives each part the same mix of lengths, as a caller
        sorting by length (`HostTranslator.translate_nbest`) would
        otherwise hand one worker all the long sentences."""
        parts = [items[i::self.count] for i in range(self.count)]
        with self._lock:
            if self._runtimes is None:
                self._runtimes = [self._factory() for _ in range(self.count)]
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    self.count, thread_name_prefix="gnmt_tf_worker")
            futures = [self._pool.submit(search, runtime, part)
                       for runtime, part in zip(self._runtimes, parts)
                       if part]
            found = [future.result() for future in futures]
        results = [None] * len(items)
        for first, part in enumerate(found):
            results[first::self.count] = part
        return results

    def close(self):
        """Stops the threads (the runtimes go with the object)."""
        if self._pool is not None:
            self._pool.shutdown()
