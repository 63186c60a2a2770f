"""Translating with an exported model's steps: a NumPy search on the host.

It lives in `gnmt_tf` (not `export`): translating needs no TensorFlow and
none of the exporter, only NumPy, SentencePiece and a runtime.

`HostTranslator` needs only the files an exporter writes: the model's
`encode` and `decode_step` (a TFLite file from `gnmt_tf.export.tflite`, or the two
ONNX graphs from `gnmt_tf.export.onnx_export`), ``spm.model`` and ``model.json``. It
tokenises with `sentencepiece`, checks the task arguments against the
`TaskInput`s in ``model.json`` (languages and scene tags for a task-space
model, none for GNMT) and puts the model's source prefix (``<2xx>``) before
the subwords, runs `encode` once per sentence and `decode_step` once per
output position on all live hypotheses of a batch of sentences at once
(sorted by length, so that a batch holds similar lengths; the sentences'
states zero-padded to common shapes) through
`gnmt_tf.decoding.host_beam_search.beam_search_batch`, and detokenises.

A runtime adapter is all that differs between runtimes
(`gnmt_tf.tflite_runtime.TFLiteRuntime`, `gnmt_tf.onnx_runtime.OnnxRuntime`):

- ``encode(source_ids, task) -> state``: ``source_ids`` int32 `[1, S]`,
  ``task`` the other `encode` inputs (arrays of batch 1), ``state`` a dict
  of arrays that `decode_step` takes;
- ``step(ids, state) -> (log_probs, attention, changed)``: as
  `beam_search`'s ``step_fn`` (``step(ids, state, rows)`` where the runtime
  sets ``step_gathers = True``: it gathers the live rows itself);
- ``path`` (for messages), ``encode_inputs`` (names) and
  ``max_source_length`` (int, or None where the shapes set no limit).

With a float32 model the translations are those of
`gnmt_tf.translator.Translator` up to float rounding differences between
the runtimes.
"""

import errno
import json
import os
import pathlib

import numpy as np

from gnmt_tf import cpu_settings
from gnmt_tf.decoding.host_beam_search import beam_search_batch
from gnmt_tf.host_workers import RuntimeWorkers
from gnmt_tf.seq2seq_model import TaskInput, check_task, prefix_ids
from gnmt_tf.translation import (Hypothesis, SearchOptions,  # noqa: F401
                                 runs_on_host, split_search_arguments)

METADATA_FILE = "model.json"  # written by gnmt_tf.export.tflite / gnmt_tf.export.onnx_export
VOCABULARY_FILE = "spm.model"
MAX_BATCH_SIZE = 32  # sentences searched together, at most
# Decoding state searched together, at most (bytes; all beams). The state
# is read and written several times a step (reorder, the runtime's copies,
# the step itself); measured on the task-space Transformer's TFLite export
# (1.6 MB a hypothesis: a 128-position KV cache), 32 sentences at once took
# 1.7x the CPU time of one at a time, a batch that no longer fits in the
# CPU caches. `auto_batch_size` keeps a batch's state under this. (The
# default exports take the state at the source's own length with a growing
# cache: a few KB a hypothesis at the start, so their batches are full.)
STATE_BUDGET_BYTES = 16 * 2**20


def stack_states(states):
    """One state of batch `B` from `B` states of batch 1: each entry
    zero-padded to the largest shape among them (False for masks; padded
    source positions get exactly zero attention) and concatenated."""
    stacked = {}
    for name in states[0]:
        values = [state[name] for state in states]
        shape = np.max([value.shape for value in values], axis=0)
        stacked[name] = np.concatenate([
            value if tuple(value.shape) == tuple(shape) else
            np.pad(value, [(0, 0)] + [(0, int(full) - have) for have, full
                                      in zip(value.shape[1:], shape[1:])])
            for value in values])
    return stacked


def encode_sources(runtime, sources, task):
    """The stacked decoding state of `sources` (lists of ids): one
    `runtime.encode` call per source length where the runtime encodes any
    batch (`encode_batch_size` None; sentences of one length need no
    padding, so each gets the state it gets alone), else one per sentence.
    `task`: the `encode` task inputs, arrays of batch 1."""
    if getattr(runtime, "encode_batch_size", 1) is not None:
        return stack_states([runtime.encode(np.asarray([ids], np.int32), task)
                             for ids in sources])
    by_length = {}
    for i, ids in enumerate(sources):
        by_length.setdefault(len(ids), []).append(i)
    state = stack_states([
        runtime.encode(np.asarray([sources[i] for i in group], np.int32),
                       task) for group in by_length.values()])
    order = np.argsort([i for group in by_length.values() for i in group])
    return {name: value[order] for name, value in state.items()}


def tflite_worker_pool(path, num_threads=None, workers=None):
    """The `RuntimeWorkers` of single-threaded interpreters of the `.tflite`
    file `path` that a translator splits batches between, or None for
    none: `workers` of them (None: `cpu_settings.tflite_workers`; 1:
    none).

    Raises:
      ValueError: `workers` < 1.
    """
    count = (cpu_settings.tflite_workers(num_threads) if workers is None
             else int(workers))
    if count < 1:
        raise ValueError(f"workers must be >= 1, got {workers}")
    if count == 1:
        return None
    from gnmt_tf.tflite_runtime import TFLiteRuntime

    return RuntimeWorkers(lambda: TFLiteRuntime(path, 1), count)


def _read_metadata(path):
    """An export's ``model.json`` ({} when there is none).

    Raises:
      ValueError: it is not a JSON object.
    """
    if not path.is_file():
        return {}
    try:
        metadata = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}: not valid JSON ({e})") from None
    if not isinstance(metadata, dict):
        raise ValueError(f"{path}: not a JSON object")
    return metadata


def _load_vocabulary(path, model_path):
    """The `SentencePieceProcessor` of the SentencePiece model at `path`,
    the vocabulary of the export at `model_path`.

    Raises:
      FileNotFoundError: `path` is no file.
      ValueError: it is not a SentencePiece model.
    """
    import sentencepiece as spm

    if not path.is_file():
        raise FileNotFoundError(
            f"{path}: no such file: the SentencePiece vocabulary of "
            f"{model_path} (gnmt-tf export writes {VOCABULARY_FILE} next to "
            "the model; copy it there)")
    try:
        return spm.SentencePieceProcessor(model_file=str(path))
    except (RuntimeError, OSError) as e:  # sentencepiece's load errors
        raise ValueError(f"{path} is not a SentencePiece model "
                         f"({' '.join(str(e).split())})") from None


class HostTranslator:
    """Translates raw sentences with an exported `encode` + `decode_step`.

    Example:
      >>> translator = HostTranslator.from_path("out/model_float32.tflite")
      >>> translator.translate(["A dog runs."], beam_size=4)
      >>> task_space = HostTranslator.from_path("exports/ts_onnx")
      >>> task_space.translate(["A dog runs."], src_lang="en", tgt_lang="fr",
      ...                      tags="caption")

    Args:
      runtime: a runtime adapter (see the module docstring).
      vocabulary_path: str or Path or None. The SentencePiece model
        (default: ``spm.model`` in the export: next to a model file, or in
        a model directory).
      metadata_path: str or Path or None. The export's ``model.json``
        (default: in the export, as ``spm.model``; without one, a model
        without task inputs is assumed).

    Attributes:
      runtime: the adapter.
      default_task, trained_tasks, fixed_task: as a `Seq2SeqModel`'s, read
        from ``model.json`` (with `task_inputs()`: the task arguments it
        takes).
      source_prefix: `(input name, ids)` or None, as a `Seq2SeqModel`'s.
      sentencepiece: the `SentencePieceProcessor`; bos_id, eos_id its
        start and end tokens; vocabulary_path its file.
      encode_inputs: tuple of str. `encode`'s input names.
      max_source_length: int or None. Longest source in ids, end token and
        source prefix included (the runtime's fixed length, else
        ``model.json``'s).
      max_output_length: int or None. Longest output in subwords, end token
        included, where the state has a fixed-size cache (None for GNMT);
        a hypothesis cut there has no end token.
      graph_search: bool. Whether a sentence searched alone goes to the
        runtime's whole-search signature where the export has one for the
        beam size (`search_batch`); True by default, False runs every
        search in the host loop.
      workers: a `gnmt_tf.host_workers.RuntimeWorkers` or None. Where
        given, a batch of at least `workers.count` sentences is split
        between its single-threaded runtimes (`search_batch`).

    Raises:
      FileNotFoundError: no SentencePiece model.
      ValueError: the runtime's `encode` takes inputs ``model.json`` does
        not describe; an unreadable ``model.json`` or SentencePiece model.
    """

    def __init__(self, runtime, vocabulary_path=None, metadata_path=None,
                 workers=None):
        self.runtime = runtime
        self.workers = workers
        directory = (runtime.path if runtime.path.is_dir()
                     else runtime.path.parent)
        metadata_path = pathlib.Path(metadata_path
                                     or directory / METADATA_FILE)
        metadata = _read_metadata(metadata_path)
        self._task_inputs = tuple(TaskInput.from_json(t)
                                  for t in metadata.get("task_inputs", ()))
        self.trained_tasks = metadata.get("trained_tasks")
        self.fixed_task = metadata.get("fixed_task") or {}
        self.default_task = metadata.get("default_task", {})
        prefix = metadata.get("source_prefix")
        self.source_prefix = (None if prefix is None
                              else (prefix["input"], tuple(prefix["ids"])))
        self.vocabulary_path = pathlib.Path(vocabulary_path
                                            or directory / VOCABULARY_FILE)
        self.sentencepiece = _load_vocabulary(self.vocabulary_path,
                                              runtime.path)
        self.bos_id = self.sentencepiece.bos_id()
        self.eos_id = self.sentencepiece.eos_id()
        self.encode_inputs = runtime.encode_inputs
        known = {"source_ids"} | {t.name for t in self._task_inputs}
        if not set(self.encode_inputs) <= known:
            raise ValueError(
                f"{runtime.path}'s encode takes {list(self.encode_inputs)}, "
                f"but {metadata_path} describes "
                f"{sorted(known - {'source_ids'}) or 'no task inputs'}"
                + ("" if metadata else
                   " (it is missing: the exporter writes it next to the "
                   "model)"))
        self.max_source_length = (runtime.max_source_length
                                  or metadata.get("max_source_length"))
        # The cache length, or the model's own limit if shorter (written
        # by the exporter, which knows both).
        self.max_output_length = metadata.get("max_output_length")
        self.graph_search = True

    @classmethod
    def from_tflite(cls, model_path, vocabulary_path=None, num_threads=None,
                    metadata_path=None, workers=None):
        """A translator for a `.tflite` file (or a shipped model's name: its
        int8 export, `gnmt_tf.pretrained.locate_tflite`); its ``spm.model``
        and ``model.json`` are read from next to it unless given.

        `workers`: single-threaded interpreters that batches are split
        between (`gnmt_tf.host_workers`); None: one per core
        (`cpu_settings.tflite_workers`) unless `num_threads` is given;
        1: none, every batch on the one interpreter of `num_threads`.

        Raises:
          ValueError: `workers` < 1.
        """
        from gnmt_tf.pretrained import locate_tflite
        from gnmt_tf.tflite_runtime import TFLiteRuntime

        path = locate_tflite(model_path)
        return cls(TFLiteRuntime(path, num_threads), vocabulary_path,
                   metadata_path,
                   workers=tflite_worker_pool(path, num_threads, workers))

    @classmethod
    def from_onnx(cls, export_dir, vocabulary_path=None, num_threads=None,
                  metadata_path=None):
        """A translator for an ONNX export directory (``encode.onnx``,
        ``decode_step.onnx``, ``spm.model``, ``model.json``).

        Raises:
          ImportError: onnxruntime is not installed.
        """
        from gnmt_tf.onnx_runtime import OnnxRuntime

        return cls(OnnxRuntime(export_dir, num_threads), vocabulary_path,
                   metadata_path)

    @classmethod
    def from_path(cls, path, **kwargs):
        """`from_tflite` for a file, `from_onnx` for a directory.

        Raises:
          FileNotFoundError: `path` does not exist.
        """
        path = pathlib.Path(path)
        if path.is_dir():
            return cls.from_onnx(path, **kwargs)
        if not path.exists():
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT),
                                    str(path))
        return cls.from_tflite(path, **kwargs)

    def search(self, source_ids, beam_size=5, length_penalty=0.6,
               coverage_penalty=0.0, num_hypotheses=1, max_length_ratio=2.0,
               beam_width=None, task=None):
        """Searches one sentence; returns its best `(ids, score)` pairs
        (`search_batch` for a batch of one)."""
        return self.search_batch(
            [source_ids], beam_size, length_penalty, coverage_penalty,
            num_hypotheses, max_length_ratio, beam_width, task)[0]

    def search_batch(self, sources, beam_size=5, length_penalty=0.6,
                     coverage_penalty=0.0, num_hypotheses=1,
                     max_length_ratio=2.0, beam_width=None, task=None):
        """Searches sentences together; returns each one's best pairs.

        A single sentence whose search the export holds whole (one best
        hypothesis, a beam size in the runtime's `search_beam_sizes`, no
        pruning) runs in one runtime call
        (`gnmt_tf.export.search_signature`: the same search, up to float
        rounding), unless `graph_search` is False. A batch of at least
        `workers.count` sentences is split between the `workers` (the same
        search per sentence, up to float rounding).

        Args:
          sources: list of lists of int, each ending with the end token.
          beam_size, length_penalty, coverage_penalty, num_hypotheses,
            beam_width: as `gnmt_tf.decoding.host_beam_search.beam_search_batch`'s.
          max_length_ratio: float. Output at most this times the source
            length (with its end token), in subwords, and at most
            `max_output_length`.
          task: dict or None. The `encode` inputs besides ``source_ids``
            (NumPy arrays of batch 1, the same for all sentences), for
            models that take more.

        Returns:
          Per sentence, `N` pairs `(ids, score)`, best first; `ids`
          exclude the end token.

        Raises:
          ValueError: a source longer than `max_source_length`, or bad
            beam settings.
        """
        lengths = [len(source_ids) for source_ids in sources]
        if not lengths:
            return []
        if (self.max_source_length is not None
                and max(lengths) > self.max_source_length):
            raise ValueError(f"{max(lengths)} source ids (end token "
                             f"included); this model takes at most "
                             f"{self.max_source_length}")
        # float32 as in Translator.search: ceil(ratio * length).
        max_lengths = np.maximum(np.ceil(
            np.float32(max_length_ratio)
            * np.asarray(lengths, np.float32)).astype(np.int64), 1)
        if self.max_output_length is not None:
            max_lengths = np.minimum(max_lengths, self.max_output_length)
        options = dict(beam_size=beam_size, length_penalty=length_penalty,
                       coverage_penalty=coverage_penalty,
                       num_hypotheses=num_hypotheses, beam_width=beam_width,
                       task=task or {})
        if self.workers is not None and len(sources) >= self.workers.count:
            return self.workers.map(
                lambda runtime, rows: self._search_on(
                    runtime, [sources[i] for i in rows], max_lengths[rows],
                    **options),
                list(range(len(sources))))
        return self._search_on(self.runtime, sources, max_lengths, **options)

    def _search_on(self, runtime, sources, max_lengths, beam_size,
                   length_penalty, coverage_penalty, num_hypotheses,
                   beam_width, task):
        """`search_batch`'s search of checked `sources`, on `runtime`."""
        if (self.graph_search and len(sources) == 1 and num_hypotheses == 1
                and beam_width is None
                and beam_size in getattr(runtime, "search_beam_sizes", ())):
            ids, score = runtime.search(
                np.asarray(sources, np.int32), task, max_lengths[0],
                beam_size, length_penalty, coverage_penalty)
            if ids and ids[-1] == self.eos_id:
                ids.pop()
            return [[(ids, score)]]
        state = encode_sources(runtime, sources, task)
        return beam_search_batch(
            runtime.step, state, [len(source) for source in sources],
            self.bos_id, self.eos_id, max_lengths, beam_size=beam_size,
            length_penalty=length_penalty, coverage_penalty=coverage_penalty,
            num_hypotheses=num_hypotheses, beam_width=beam_width,
            step_gathers=getattr(runtime, "step_gathers", False))

    def state_bytes(self, task=None):
        """Bytes of one sentence's decoding state (one hypothesis), read
        off one encoded sentence (at its longest where the runtime pads to
        a fixed length); cached."""
        if getattr(self, "_state_bytes", None) is None:
            state = self.runtime.encode(
                np.asarray([[self.eos_id] * 2], np.int32), task or {})
            self._state_bytes = sum(np.asarray(value).nbytes
                                    for value in state.values())
        return self._state_bytes

    def auto_batch_size(self, beam_size, task=None):
        """Sentences to search together: as many as keep their decoding
        state (all `beam_size` hypotheses, `state_bytes` each) within
        `STATE_BUDGET_BYTES`, between 1 and `MAX_BATCH_SIZE`."""
        per_sentence = max(self.state_bytes(task) * int(beam_size), 1)
        return int(min(MAX_BATCH_SIZE,
                       max(1, STATE_BUDGET_BYTES // per_sentence)))

    def task_inputs(self):
        """The `TaskInput`s of the export (as a `Seq2SeqModel`'s)."""
        return self._task_inputs

    def task_arrays(self, **task):
        """Checks task arguments against `task_inputs`; returns `(prefix,
        arrays)`: the ids put before the subwords and the `encode` task
        inputs as arrays of batch 1.

        Raises:
          ValueError: a missing, unexpected or unknown task argument, or
            values that must differ (naming the known ones).
        """
        ids = check_task(self._task_inputs, task)
        prefix = prefix_ids(self.source_prefix, ids)
        arrays = {name: np.asarray([value], np.int32)
                  for name, value in ids.items() if name in self.encode_inputs}
        return prefix, arrays

    def translate_nbest(self, sentences, options=None, batch_size=None,
                        **task):
        """Translates `sentences`, giving `options.num_hypotheses`
        `Hypothesis` each (the `gnmt_tf.translation.TranslationBackend`
        protocol): `search_sentences`' pairs, detokenised."""
        return [[Hypothesis(self.sentencepiece.decode(ids), score)
                 for ids, score in pairs]
                for pairs in self.search_sentences(sentences, options,
                                                   batch_size, **task)]

    def search_sentences(self, sentences, options=None, batch_size=None,
                         **task):
        """Searches `sentences`, giving `options.num_hypotheses` pairs
        `(ids, score)` each, best first (`ids` without the end token).

        `options` is a `SearchOptions` (default: its defaults), or its
        fields come as keywords (`beam_size=4`); the host search runs the
        beam decoder (greedy at beam 1) with GNMT's early stopping.
        `task` holds the model's task arguments by name (e.g. `src_lang="en",
        tgt_lang="fr", tags="caption"`; none for GNMT). Blank inputs give one
        empty pair `([], 0.0)` and never reach the model. Sentences
        are searched `batch_size` at a time (default: `auto_batch_size`),
        longest first (the results are those of one at a time, up to the
        runtime's float rounding).

        Raises:
          TypeError: `sentences` is a str, or an input is not a `str`.
          ValueError: a bad task argument, an input longer than the
            model's source length, `batch_size` < 1, or search options the
            host search does not run (another decoder or early stopping).
        """
        options, task = split_search_arguments(options, **task)
        if not runs_on_host(options):
            raise ValueError(
                "the host search runs the beam and greedy decoders with "
                f"early_stopping 'gnmt' (got decoder {options.decoder!r}, "
                f"early_stopping {options.early_stopping!r})")
        beam_size = 1 if options.decoder == "greedy" else options.beam_size
        prefix, arrays = self.task_arrays(**task)
        search_args = dict(beam_size=beam_size,
                           length_penalty=options.length_penalty,
                           coverage_penalty=options.coverage_penalty,
                           num_hypotheses=options.num_hypotheses,
                           max_length_ratio=options.max_length_ratio,
                           beam_width=options.beam_width)
        if isinstance(sentences, str):
            raise TypeError("sentences must be a list of str, not a str")
        if batch_size is not None and int(batch_size) < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        results = [[([], 0.0)] for _ in sentences]
        sources = {}  # input index -> source ids, blank inputs left out
        for i, sentence in enumerate(sentences):
            if not isinstance(sentence, str):
                raise TypeError(f"input {i + 1} is "
                                f"{type(sentence).__name__}, not str")
            if not sentence.strip():
                continue
            source_ids = (list(prefix) + self.sentencepiece.encode(sentence)
                          + [self.eos_id])
            if (self.max_source_length is not None
                    and len(source_ids) > self.max_source_length):
                extra = len(prefix) + 1
                raise ValueError(
                    f"input {i + 1} has {len(source_ids) - extra} subwords; "
                    f"this model takes at most "
                    f"{self.max_source_length - extra}")
            sources[i] = source_ids
        order = sorted(sources, key=lambda i: -len(sources[i]))
        if not order:
            return results
        if batch_size is None:
            batch_size = self.auto_batch_size(beam_size, arrays)
        for start in range(0, len(order), int(batch_size)):
            batch = order[start:start + int(batch_size)]
            found = self.search_batch([sources[i] for i in batch],
                                      task=arrays, **search_args)
            for i, pairs in zip(batch, found):
                results[i] = pairs
        return results

    def translate(self, sentences, options=None, batch_size=None, **task):
        """Translates `sentences` (list of str) to their best translations
        (`options` and `task` as `translate_nbest`)."""
        return [hyps[0].text for hyps in self.translate_nbest(
            sentences, options, batch_size, **task)]