"""Translating with a TFLite model: a NumPy beam search on the host.

It lives in `gnmt_tf` (not `export`): translating needs no TensorFlow and
none of the exporter, only NumPy, SentencePiece and LiteRT.

`TFLiteTranslator` needs only the files `export.tflite.export_tflite` writes
(the `.tflite`, `spm.model` and `model.json`): it tokenises with
`sentencepiece`, checks the task arguments against the `TaskInput`s in
`model.json` (languages and scene tags for a task-space model, none for
GNMT) and puts the model's source prefix (`<2xx>`) before the subwords, runs
the model's `encode` signature once per sentence and its `decode_step`
signature once per output position (on all live hypotheses of the sentence
at once), and detokenises. No TensorFlow is imported; the interpreter is
`ai_edge_litert` (LiteRT), or `tf.lite` where LiteRT is not installed.

The search mirrors `gnmt_tf.decoding.beam_search` (and `greedy_search` for
beam size 1): GNMT length and coverage penalties, the `"gnmt"` early stopping
rule, at most `ceil(max_length_ratio * source_length)` output subwords, and
at most the model's cache length. With a float32 model it gives the same
translations as the SavedModel up to float rounding differences between the
two runtimes.

`decode_step` takes some state tensors at a fixed length where `encode`
returns them at the source's length (see `export.tflite.StepModule`); which
ones, and to what length, is read from the two signatures' shapes, and
`encode`'s outputs are zero-padded to it.
"""

import dataclasses
import json
import pathlib

import numpy as np

from gnmt_tf.seq2seq_model import TaskInput, check_task, prefix_ids

NEG_INF = np.float32(-np.inf)
COVERAGE_FLOOR = np.float32(1e-10)  # as gnmt_tf.decoding.penalties
METADATA_FILE = "model.json"  # as export.tflite


def interpreter_class():
    """LiteRT's `Interpreter`, or TensorFlow's copy where it is missing."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:  # LiteRT not installed: TensorFlow's copy
        import tensorflow as tf

        Interpreter = tf.lite.Interpreter
    return Interpreter


@dataclasses.dataclass(frozen=True)
class Hypothesis:
    """One translation: its text and its search score."""

    text: str
    score: float


class TFLiteTranslator:
    """Translates raw sentences with a TFLite `encode` + `decode_step` model.

    Example:
      >>> translator = TFLiteTranslator.from_export_dir("out")
      >>> translator = TFLiteTranslator("out/model_float32.tflite")
      >>> translator.translate(["A dog runs."], beam_size=4)
      >>> task_space = TFLiteTranslator("ts/model_float32.tflite")
      >>> task_space.translate(["A dog runs."], src_lang="en", tgt_lang="fr",
      ...                      tags="caption")

    Args:
      model_path: str or Path. A `.tflite` file from `export_tflite`.
      vocabulary_path: str or Path or None. Its SentencePiece model (default:
        ``spm.model`` next to it).
      num_threads: int or None. Interpreter threads.
      metadata_path: str or Path or None. Its ``model.json`` (default: next
        to it; without one, a model without task inputs is assumed).

    Attributes:
      default_task, trained_tasks, fixed_task: as a `Seq2SeqModel`'s, read
        from `model.json` (with `task_inputs()`: the task arguments it
        takes).
      max_source_length: int or None. Longest source in subwords, end token
        and source prefix included (`decode_step`'s fixed memory length).
      max_output_length: int or None. Longest output in subwords, end token
        included, where the state has a fixed-size cache (None for GNMT);
        a hypothesis cut there has no end token.

    Raises:
      ValueError: the model lacks the `encode` / `decode_step` signatures,
        or its `encode` takes inputs `model.json` does not describe.
    """

    def __init__(self, model_path, vocabulary_path=None, num_threads=None,
                 metadata_path=None):
        import sentencepiece as spm

        model_path = pathlib.Path(model_path)
        metadata_path = pathlib.Path(metadata_path
                                     or model_path.parent / METADATA_FILE)
        metadata = (json.loads(metadata_path.read_text(encoding="utf-8"))
                    if metadata_path.exists() else {})
        self._task_inputs = tuple(TaskInput.from_json(t)
                                  for t in metadata.get("task_inputs", ()))
        self.trained_tasks = metadata.get("trained_tasks")
        self.fixed_task = metadata.get("fixed_task") or {}
        self.default_task = metadata.get("default_task", {})
        prefix = metadata.get("source_prefix")
        self.source_prefix = (None if prefix is None
                              else (prefix["input"], tuple(prefix["ids"])))
        self.sentencepiece = spm.SentencePieceProcessor(model_file=str(
            vocabulary_path or model_path.parent / "spm.model"))
        self.bos_id = self.sentencepiece.bos_id()
        self.eos_id = self.sentencepiece.eos_id()
        self.interpreter = interpreter_class()(
            model_path=str(model_path), num_threads=num_threads)
        signatures = self.interpreter.get_signature_list()
        if not {"encode", "decode_step"} <= set(signatures):
            raise ValueError(f"{model_path} has signatures {sorted(signatures)}, "
                             "not encode and decode_step")
        self._encode = self.interpreter.get_signature_runner("encode")
        self._step = self.interpreter.get_signature_runner("decode_step")
        self.encode_inputs = tuple(sorted(self._encode.get_input_details()))
        known = {"source_ids"} | {t.name for t in self._task_inputs}
        if not set(self.encode_inputs) <= known:
            raise ValueError(
                f"{model_path}'s encode takes {list(self.encode_inputs)}, but "
                f"{metadata_path} describes "
                f"{sorted(known - {'source_ids'}) or 'no task inputs'}"
                + ("" if metadata else
                   " (it is missing: export_tflite writes it next to the "
                   "model)"))
        step_inputs = self._step.get_input_details()
        self._step_dtypes = {name: detail["dtype"]
                             for name, detail in step_inputs.items()}
        self._padded_shapes = _padded_shapes(
            self._encode.get_output_details(), step_inputs)
        lengths = [shape[1] for shape in self._padded_shapes.values()]
        self.max_source_length = min(lengths) if lengths else None
        # The cache length, or the model's own limit if shorter (written
        # by the exporter, which knows both).
        self.max_output_length = metadata.get("max_output_length")
        self._warm_up()

    @classmethod
    def from_export_dir(cls, path, **kwargs):
        """Opens an `export_tflite` output folder (its one `.tflite`, with
        `spm.model` and `model.json` beside it), or a `.tflite` file.

        Raises:
          FileNotFoundError: no `.tflite` file in the folder.
          ValueError: several; pass the one to use.
        """
        path = pathlib.Path(path)
        if path.is_dir():
            models = sorted(path.glob("*.tflite"))
            if not models:
                raise FileNotFoundError(f"no .tflite file in {path}")
            if len(models) > 1:
                raise ValueError(
                    f"{path} holds {len(models)} .tflite files "
                    f"({', '.join(m.name for m in models)}); pass one")
            path = models[0]
        return cls(path, **kwargs)

    def _warm_up(self):
        """Runs `encode` and one `decode_step` on a one-token source.

        Works around a clash seen with ai-edge-litert 2.3 and
        tensorflow-text 2.21 in one process: an interpreter whose first
        `decode_step` runs after `tensorflow_text` was imported (as the
        in-process translators do) returns wrong log-probs, one that ran
        before keeps working. Running it here closes that window.
        """
        details = self._encode.get_input_details()
        task = {name: np.zeros([max(int(d), 1) for d in
                                detail["shape_signature"]], detail["dtype"])
                for name, detail in details.items() if name != "source_ids"}
        state = self._encode_state([self.eos_id], task)
        self._step(ids=np.asarray([self.bos_id], np.int32), **state)

    def _encode_state(self, source_ids, task=None):
        """`source_ids [S]` (+ `task`, the other `encode` inputs as arrays of
        batch 1) -> decoding state of batch 1, memory padded."""
        if (self.max_source_length is not None
                and len(source_ids) > self.max_source_length):
            raise ValueError(f"{len(source_ids)} source ids (end token "
                             f"included); this model takes at most "
                             f"{self.max_source_length}")
        state = self._encode(source_ids=np.asarray([source_ids], np.int32),
                             **(task or {}))
        padded = {}
        for name, value in state.items():
            if name in self._padded_shapes:
                pad = [(0, full - have) for have, full in
                       zip(value.shape, self._padded_shapes[name])]
                value = np.pad(value, pad)  # zeros; masks False
            padded[name] = value.astype(self._step_dtypes[name], copy=False)
        return padded

    def search(self, source_ids, beam_size=5, length_penalty=0.6,
               coverage_penalty=0.0, num_hypotheses=1, max_length_ratio=2.0,
               beam_width=None, task=None):
        """Searches one sentence; returns its best `(ids, score)` pairs.

        Args:
          source_ids: list of int, ending with the end token.
          beam_size: int `K`. 1 is greedy search (the penalties are ignored
            and the score is the log-probability, as in `greedy_search`).
          length_penalty, coverage_penalty: GNMT's alpha and beta.
          num_hypotheses: int `N` in `[1, K]`.
          max_length_ratio: float. Output at most this times the source
            length (with its end token), in subwords.
          beam_width: float or None. GNMT's score-space pruning width.
          task: dict or None. The `encode` inputs besides ``source_ids``
            (NumPy arrays of batch 1), for models that take more.

        Returns:
          `N` pairs `(ids, score)`, best first; `ids` exclude the end token.
        """
        k, n = int(beam_size), int(num_hypotheses)
        if k < 1 or not 1 <= n <= k:
            raise ValueError(f"need beam_size >= 1 and 1 <= num_hypotheses <= "
                             f"beam_size, got {beam_size}, {num_hypotheses}")
        alpha = np.float32(0.0 if k == 1 else length_penalty)
        beta = np.float32(0.0 if k == 1 else coverage_penalty)
        source_length = len(source_ids)
        # float32 as in Translator.search: ceil(ratio * length).
        max_length = max(int(np.ceil(np.float32(max_length_ratio)
                                     * np.float32(source_length))), 1)
        if self.max_output_length is not None:
            max_length = min(max_length, self.max_output_length)

        state = {name: np.repeat(value, k, axis=0) for name, value in
                 self._encode_state(source_ids, task).items()}
        last = np.full([k], self.bos_id, np.int32)
        alive_ids = np.zeros([k, max_length], np.int32)
        alive_log_probs = np.full([k], NEG_INF, np.float32)
        alive_log_probs[0] = 0.0
        coverage = np.zeros([k, source_length], np.float32)
        finished_ids = np.zeros([n, max_length], np.int32)
        finished_scores = np.full([n], NEG_INF, np.float32)
        finished_lengths = np.zeros([n], np.int32)

        for t in range(max_length):
            out = self._step(ids=last, **state)
            log_probs = out.pop("log_probs").astype(np.float32)      # [K, V]
            attention = out.pop("attention", None)
            vocab_size = log_probs.shape[1]
            length = t + 1
            cand_log_probs = alive_log_probs[:, None] + log_probs    # [K, V]
            lp = np.power(np.float32((5.0 + length) / 6.0), alpha,
                          dtype=np.float32)
            cand_scores = cand_log_probs / lp
            if attention is not None:
                coverage = coverage + attention[:, :source_length]
                if beta != 0:
                    log_coverage = np.log(np.maximum(
                        np.minimum(coverage, np.float32(1.0)), COVERAGE_FLOOR))
                    cand_scores = cand_scores + (
                        beta * log_coverage.sum(axis=1, dtype=np.float32)
                    )[:, None]
            if beam_width is not None:
                best = cand_scores.max()
                cand_scores = np.where(cand_scores < best - beam_width,
                                       NEG_INF, cand_scores)
            flat_scores = cand_scores.reshape(-1)
            # Stable: on ties the lower index wins, as tf.math.top_k.
            top = np.argsort(-flat_scores, kind="stable")[:k]
            top_scores = flat_scores[top]
            beam, token = top // vocab_size, (top % vocab_size).astype(np.int32)
            top_log_probs = cand_log_probs.reshape(-1)[top]
            valid = top_scores > NEG_INF
            ends = (token == self.eos_id) | (length >= max_length)
            cand_ids = alive_ids[beam]
            cand_ids[:, t] = token

            # Ending candidates join the N best finished (old ones first).
            merged_scores = np.concatenate(
                [finished_scores, np.where(ends & valid, top_scores, NEG_INF)])
            merged_ids = np.concatenate([finished_ids, cand_ids])
            merged_lengths = np.concatenate(
                [finished_lengths, np.full([k], length, np.int32)])
            best = np.argsort(-merged_scores, kind="stable")[:n]
            finished_scores = merged_scores[best]
            finished_ids = merged_ids[best]
            finished_lengths = merged_lengths[best]

            keep = valid & ~ends
            if not keep.any():
                break
            if finished_scores[n - 1] > np.where(keep, top_scores,
                                                 NEG_INF).max():
                break  # GNMT early stopping
            last = token
            alive_ids = cand_ids
            alive_log_probs = np.where(keep, top_log_probs, NEG_INF)
            coverage = coverage[beam]
            state.update({name: value[beam] for name, value in out.items()})

        results = []
        for ids, score, length in zip(finished_ids, finished_scores,
                                      finished_lengths):
            ids = ids[:length].tolist()
            if ids and ids[-1] == self.eos_id:
                ids.pop()
            results.append((ids, float(score)))
        return results

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


def _padded_shapes(encode_outputs, step_inputs):
    """`{name: shape}` of the state tensors `decode_step` takes at a fixed
    size where `encode` gives a variable one (its `-1` dimensions), read
    from the signature details; the host pads those to `shape`."""
    shapes = {}
    for name, detail in step_inputs.items():
        if name not in encode_outputs:
            continue
        have = encode_outputs[name]["shape_signature"]
        want = detail["shape_signature"]
        if len(have) != len(want):
            continue
        if any(h < 0 <= w for h, w in zip(have[1:], want[1:])):
            shapes[name] = (1,) + tuple(int(w) for w in want[1:])
    return shapes
