"""Translating with an exported model's steps: a NumPy search on the host.

It lives in `gnmt_tf` (not `export`): translating needs no TensorFlow and
none of the exporter, only NumPy, SentencePiece and a runtime.

`HostTranslator` needs only the files an exporter writes: the model's
`encode` and `decode_step` (a TFLite file from `export.tflite`, or the two
ONNX graphs from `export.onnx_export`), ``spm.model`` and ``model.json``. It
tokenises with `sentencepiece`, checks the task arguments against the
`TaskInput`s in ``model.json`` (languages and scene tags for a task-space
model, none for GNMT) and puts the model's source prefix (``<2xx>``) before
the subwords, runs `encode` once per sentence and `decode_step` once per
output position (on all live hypotheses of the sentence at once) through
`gnmt_tf.host_search.beam_search`, and detokenises.

A runtime adapter is all that differs between runtimes
(`gnmt_tf.tflite_runtime.TFLiteRuntime`, `gnmt_tf.onnx_runtime.OnnxRuntime`):

- ``encode(source_ids, task) -> state``: ``source_ids`` int32 `[1, S]`,
  ``task`` the other `encode` inputs (arrays of batch 1), ``state`` a dict
  of arrays that `decode_step` takes;
- ``step(ids, state) -> (log_probs, attention, changed)``: as
  `beam_search`'s ``step_fn``;
- ``path`` (for messages), ``encode_inputs`` (names) and
  ``max_source_length`` (int, or None where the shapes set no limit).

With a float32 model the translations are those of
`gnmt_tf.translator.Translator` up to float rounding differences between
the runtimes.
"""

import dataclasses
import errno
import json
import os
import pathlib

import numpy as np

from gnmt_tf.host_search import beam_search
from gnmt_tf.seq2seq_model import TaskInput, check_task, prefix_ids

METADATA_FILE = "model.json"  # written by export.tflite / export.onnx_export
VOCABULARY_FILE = "spm.model"


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One translation: its text and its search score."""

    text: str
    score: float


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
        start and end tokens.
      encode_inputs: tuple of str. `encode`'s input names.
      max_source_length: int or None. Longest source in ids, end token and
        source prefix included (the runtime's fixed length, else
        ``model.json``'s).
      max_output_length: int or None. Longest output in subwords, end token
        included, where the state has a fixed-size cache (None for GNMT);
        a hypothesis cut there has no end token.

    Raises:
      ValueError: the runtime's `encode` takes inputs ``model.json`` does
        not describe.
    """

    def __init__(self, runtime, vocabulary_path=None, metadata_path=None):
        import sentencepiece as spm

        self.runtime = runtime
        directory = (runtime.path if runtime.path.is_dir()
                     else runtime.path.parent)
        metadata_path = pathlib.Path(metadata_path
                                     or directory / METADATA_FILE)
        metadata = (json.loads(metadata_path.read_text(encoding="utf-8"))
                    if metadata_path.is_file() else {})
        self._task_inputs = tuple(TaskInput.from_json(t)
                                  for t in metadata.get("task_inputs", ()))
        self.trained_tasks = metadata.get("trained_tasks")
        self.fixed_task = metadata.get("fixed_task") or {}
        self.default_task = metadata.get("default_task", {})
        prefix = metadata.get("source_prefix")
        self.source_prefix = (None if prefix is None
                              else (prefix["input"], tuple(prefix["ids"])))
        self.sentencepiece = spm.SentencePieceProcessor(
            model_file=str(vocabulary_path or directory / VOCABULARY_FILE))
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

    @classmethod
    def from_tflite(cls, model_path, vocabulary_path=None, num_threads=None,
                    metadata_path=None):
        """A translator for a `.tflite` file; its ``spm.model`` and
        ``model.json`` are read from next to it unless given."""
        from gnmt_tf.tflite_runtime import TFLiteRuntime

        return cls(TFLiteRuntime(model_path, num_threads), vocabulary_path,
                   metadata_path)

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
        """Searches one sentence; returns its best `(ids, score)` pairs.

        Args:
          source_ids: list of int, ending with the end token.
          beam_size, length_penalty, coverage_penalty, num_hypotheses,
            beam_width: as `gnmt_tf.host_search.beam_search`'s.
          max_length_ratio: float. Output at most this times the source
            length (with its end token), in subwords, and at most
            `max_output_length`.
          task: dict or None. The `encode` inputs besides ``source_ids``
            (NumPy arrays of batch 1), for models that take more.

        Returns:
          `N` pairs `(ids, score)`, best first; `ids` exclude the end token.

        Raises:
          ValueError: a source longer than `max_source_length`, or bad
            beam settings.
        """
        source_length = len(source_ids)
        if (self.max_source_length is not None
                and source_length > self.max_source_length):
            raise ValueError(f"{source_length} source ids (end token "
                             f"included); this model takes at most "
                             f"{self.max_source_length}")
        # float32 as in Translator.search: ceil(ratio * length).
        max_length = max(int(np.ceil(np.float32(max_length_ratio)
                                     * np.float32(source_length))), 1)
        if self.max_output_length is not None:
            max_length = min(max_length, self.max_output_length)
        state = self.runtime.encode(np.asarray([source_ids], np.int32),
                                    task or {})
        return beam_search(
            self.runtime.step, state, source_length, self.bos_id,
            self.eos_id, max_length, beam_size=beam_size,
            length_penalty=length_penalty, coverage_penalty=coverage_penalty,
            num_hypotheses=num_hypotheses, beam_width=beam_width)

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

    def translate_nbest(self, sentences, beam_size=5, length_penalty=0.6,
                        coverage_penalty=0.0, num_hypotheses=1,
                        max_length_ratio=2.0, beam_width=None, **task):
        """Translates `sentences`, giving `num_hypotheses` `Hypothesis` each.

        `task` holds the model's task arguments by name (e.g. `src_lang="en",
        tgt_lang="fr", tags="caption"`; none for GNMT). Blank inputs give one
        empty hypothesis with score 0 and never reach the model.

        Raises:
          TypeError: `sentences` is a str, or an input is not a `str`.
          ValueError: a bad task argument, or an input longer than the
            model's source length.
        """
        prefix, arrays = self.task_arrays(**task)
        search_args = dict(beam_size=beam_size, length_penalty=length_penalty,
                           coverage_penalty=coverage_penalty,
                           num_hypotheses=num_hypotheses,
                           max_length_ratio=max_length_ratio,
                           beam_width=beam_width)
        if isinstance(sentences, str):
            raise TypeError("sentences must be a list of str, not a str")
        results = []
        for i, sentence in enumerate(sentences, 1):
            if not isinstance(sentence, str):
                raise TypeError(f"input {i} is {type(sentence).__name__}, "
                                "not str")
            if not sentence.strip():
                results.append([Hypothesis("", 0.0)])
                continue
            source_ids = (list(prefix) + self.sentencepiece.encode(sentence)
                          + [self.eos_id])
            if (self.max_source_length is not None
                    and len(source_ids) > self.max_source_length):
                extra = len(prefix) + 1
                raise ValueError(
                    f"input {i} has {len(source_ids) - extra} subwords; this "
                    f"model takes at most {self.max_source_length - extra}")
            pairs = self.search(source_ids, task=arrays, **search_args)
            results.append([Hypothesis(self.sentencepiece.decode(ids), score)
                            for ids, score in pairs])
        return results

    def translate(self, sentences, beam_size=5, length_penalty=0.6,
                  coverage_penalty=0.0, max_length_ratio=2.0, **task):
        """Translates `sentences` (list of str) to their best translations."""
        return [hyps[0].text for hyps in self.translate_nbest(
            sentences, beam_size, length_penalty, coverage_penalty, 1,
            max_length_ratio, **task)]
