"""Sending a document's sentences to the model: cached results first, each
other sentence once, in calls of at most `chunk_sentences`, and a
`gnmt_tf.pipeline.cancellation.Cancellation` checked before each call, so an
abandoned or expired request stops within one call.

A document of more sentences than one call takes is sorted by length
first: the calls' batches then pad little, as a backend sorting one big
list would.
"""

import inspect
from typing import Dict, List, Optional, Sequence

from gnmt_tf.pipeline.cache import Task
from gnmt_tf.pipeline.cache import TranslationCache
from gnmt_tf.pipeline.cancellation import Cancellation
from gnmt_tf.pipeline.results import SentenceResult
from gnmt_tf.pipeline.results import as_result


def check_count(name: str, value) -> None:
    """Raises ValueError unless `value` is an integer >= 1."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {value!r}")


def _takes_keyword(function, name: str) -> bool:
    """Whether `function` accepts the keyword argument `name`."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(
        p.kind == p.VAR_KEYWORD for p in parameters.values())


class ModelCalls:
    """A translate callable `(sentences, src_lang, tgt_lang, tags)`, called
    in chunks.

    Args:
      translate: the callable (`pipeline.Pipeline`'s); one that takes a
        `cancellation` keyword argument gets the request's, to check
        within a call (a backend waiting for its model).
      chunk_sentences: int. Most sentences a call.
    """

    def __init__(self, translate, chunk_sentences: int = 32):
        check_count("chunk_sentences", chunk_sentences)
        self.translate = translate
        self.chunk_sentences = chunk_sentences
        self._takes_cancellation = _takes_keyword(translate, "cancellation")

    def __call__(self, sentences: Sequence[str], tasks: Sequence[Task],
                 cache: Optional[TranslationCache] = None,
                 model_version: str = "unversioned",
                 cancellation: Optional[Cancellation] = None
                 ) -> List[SentenceResult]:
        """The results of `sentences`, each with its task (the source
        languages of a mixed document differ), in their order.

        Raises:
          gnmt_tf.pipeline.cancellation.Cancelled: cancelled or past the deadline.
          ValueError: the callable returned the wrong number of results.
        """
        results: List[Optional[SentenceResult]] = [None] * len(sentences)
        for task in dict.fromkeys(tasks):
            rows = [i for i, t in enumerate(tasks) if t == task]
            done = self._task([sentences[i] for i in rows], task, cache,
                              model_version, cancellation)
            for i in rows:
                results[i] = done[sentences[i]]
        return results

    def _task(self, sentences, task, cache, model_version, cancellation
              ) -> Dict[str, SentenceResult]:
        """`{sentence: result}` for sentences of one task."""
        results = {}
        if cache is not None:
            for s in sentences:
                hit = cache.get(s, task, model_version)
                if hit is not None:
                    results[s] = as_result(hit)
        todo = list(dict.fromkeys(s for s in sentences if s not in results))
        if len(todo) > self.chunk_sentences:
            todo.sort(key=len)
        kwargs = ({"cancellation": cancellation}
                  if self._takes_cancellation and cancellation is not None
                  else {})
        for start in range(0, len(todo), self.chunk_sentences):
            if cancellation is not None:
                cancellation.check()
            chunk = todo[start:start + self.chunk_sentences]
            out = [as_result(t) for t in self.translate(
                chunk, task.src_lang, task.tgt_lang, task.tags, **kwargs)]
            if len(out) != len(chunk):
                raise ValueError(f"translate returned {len(out)} "
                                 f"translations for {len(chunk)} sentences")
            for source, target in zip(chunk, out):
                results[source] = target
                if cache is not None:
                    cache.put(source, task, model_version, target)
        return results
