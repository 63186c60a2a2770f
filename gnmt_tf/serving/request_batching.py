"""Client-side request batching, after Ctrip's MT platform (2020).

A document becomes sentences (`gnmt_tf.pipeline.sentence_split`, re-exported here
as `split_sentences` / `split_document`); duplicates are sent once; the unique
sentences are sorted by length so that each request holds sentences of similar
length (less padding in the model's batch); requests are packed up to
`max_sentences` sentences and `max_units` characters (or whitespace tokens); a
bounded number of requests run at once; results are put back in input order.

    plan = plan_requests(sentences, max_sentences=32, max_units=2000)
    unique_results = execute_plan(plan, send_fn, max_in_flight=4)
    results = plan.reassemble(unique_results)

No gRPC, no TensorFlow.
"""

import concurrent.futures
import dataclasses
from typing import Callable, List, Sequence

from gnmt_tf.pipeline.sentence_split import DEFAULT_LANGUAGE  # noqa: F401
from gnmt_tf.pipeline.sentence_split import split_document  # noqa: F401
from gnmt_tf.pipeline.sentence_split import split_sentences  # noqa: F401


def length_in(unit: str) -> Callable[[str], int]:
    """Length function for `unit` = "chars" or "tokens" (whitespace tokens)."""
    if unit == "chars":
        return len
    if unit == "tokens":
        return lambda s: len(s.split())
    raise ValueError(f"unit must be 'chars' or 'tokens', got {unit!r}")


@dataclasses.dataclass
class RequestPlan:
    """How a list of sentences is sent.

    Attributes:
      unique: list of str. The distinct sentences, in first-seen order.
      index: list of int. `index[i]` is the position in `unique` of input i.
      requests: list of lists of int. Positions in `unique` for each request,
        requests ordered from the longest sentences to the shortest.
    """
    unique: List[str]
    index: List[int]
    requests: List[List[int]]

    def reassemble(self, unique_results: Sequence) -> list:
        """Results per input sentence, in input order, from per-unique results."""
        if len(unique_results) != len(self.unique):
            raise ValueError(f"expected {len(self.unique)} results, "
                             f"got {len(unique_results)}")
        return [unique_results[u] for u in self.index]


def plan_requests(sentences: Sequence[str], max_sentences: int = 32,
                  max_units: int = 2000, unit: str = "chars") -> RequestPlan:
    """Deduplicate, sort by length and pack `sentences` into requests.

    Args:
      sentences: the inputs.
      max_sentences: int. At most this many sentences per request.
      max_units: int. At most this many characters (or tokens) per request; a
        single longer sentence gets a request of its own.
      unit: "chars" or "tokens".
    """
    if max_sentences < 1 or max_units < 1:
        raise ValueError("max_sentences and max_units must be >= 1")
    length = length_in(unit)
    positions, unique, index = {}, [], []
    for s in sentences:
        if s not in positions:
            positions[s] = len(unique)
            unique.append(s)
        index.append(positions[s])
    order = sorted(range(len(unique)), key=lambda u: (-length(unique[u]), u))
    requests, current, units = [], [], 0
    for u in order:
        n = length(unique[u])
        if current and (len(current) >= max_sentences or units + n > max_units):
            requests.append(current)
            current, units = [], 0
        current.append(u)
        units += n
    if current:
        requests.append(current)
    return RequestPlan(unique=unique, index=index, requests=requests)


def execute_plan(plan: RequestPlan, send: Callable[[List[str]], list],
                 max_in_flight: int = 4) -> list:
    """Send every request of `plan` with at most `max_in_flight` at a time.

    Args:
      plan: a `RequestPlan`.
      send: callable taking a list of sentences and returning one result per
        sentence (it handles its own errors; an exception aborts the call).
      max_in_flight: int. Concurrent requests.

    Returns:
      One result per `plan.unique` sentence.
    """
    if max_in_flight < 1:
        raise ValueError("max_in_flight must be >= 1")
    results = [None] * len(plan.unique)

    def run(request):
        out = send([plan.unique[u] for u in request])
        if len(out) != len(request):
            raise RuntimeError(f"send returned {len(out)} results for "
                               f"{len(request)} sentences")
        for u, r in zip(request, out):
            results[u] = r

    if max_in_flight == 1 or len(plan.requests) <= 1:
        for request in plan.requests:
            run(request)
        return results
    workers = min(max_in_flight, len(plan.requests))
    with concurrent.futures.ThreadPoolExecutor(
            workers, thread_name_prefix="gnmt-tf-request") as pool:
        futures = [pool.submit(run, r) for r in plan.requests]
        try:
            for f in concurrent.futures.as_completed(futures):
                f.result()
        except BaseException:
            for f in futures:
                f.cancel()
            raise
    return results
