"""Translating with a TFLite model: a NumPy beam search on the host.

`TFLiteTranslator` needs only the `.tflite` file written by
`export.tflite.export_tflite` and the SentencePiece model: it tokenises with
`sentencepiece`, runs the model's `encode` signature once per sentence and its
`decode_step` signature once per output position (on all live hypotheses of
the sentence at once), and detokenises. No TensorFlow is imported; the
interpreter is `ai_edge_litert` (LiteRT), or `tf.lite` where LiteRT is not
installed.

The search mirrors `gnmt_tf.decoding.beam_search` (and `greedy_search` for
beam size 1): GNMT length and coverage penalties, the `"gnmt"` early stopping
rule, at most `ceil(max_length_ratio * source_length)` output subwords. With a
float32 model it gives the same translations as the SavedModel up to float
rounding differences between the two runtimes.

`decode_step` takes some state tensors at a fixed length where `encode`
returns them at the source's length (the attention memory, see
`export.tflite.StepModule`); which ones, and to what length, is read from
the two signatures' shapes, and `encode`'s outputs are zero-padded to it.

Task-space Transformer exports (`export.task_space_tflite`) need the task as
well: `export.task_space_tflite_translator.TaskSpaceTFLiteTranslator`
extends this class with it; `open_translator` picks the class for a file.
"""

import dataclasses
import pathlib

import numpy as np

NEG_INF = np.float32(-np.inf)
COVERAGE_FLOOR = np.float32(1e-10)  # as gnmt_tf.decoding.penalties


def _interpreter_class():
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
      >>> translator = TFLiteTranslator("out/model_float32.tflite",
      ...                               "out/spm.model")
      >>> translator.translate(["A dog runs."], beam_size=4)

    Args:
      model_path: str or Path. A `.tflite` file from `export_tflite`.
      vocabulary_path: str or Path. Its SentencePiece model (`spm.model`).
      num_threads: int or None. Interpreter threads.

    Attributes:
      max_source_length: int or None. Longest source in subwords, end token
        included (`decode_step`'s fixed memory length).
      max_output_length: int or None. Longest output in subwords, end token
        included, where the state has a fixed-size cache (None for GNMT).

    Raises:
      ValueError: the model lacks the `encode` / `decode_step` signatures,
        or its `encode` takes other inputs than `ENCODE_INPUTS`.
    """

    ENCODE_INPUTS = ("source_ids",)

    def __init__(self, model_path, vocabulary_path, num_threads=None):
        import sentencepiece as spm

        self.sentencepiece = spm.SentencePieceProcessor(
            model_file=str(vocabulary_path))
        self.bos_id = self.sentencepiece.bos_id()
        self.eos_id = self.sentencepiece.eos_id()
        self.interpreter = _interpreter_class()(
            model_path=str(pathlib.Path(model_path)), num_threads=num_threads)
        signatures = self.interpreter.get_signature_list()
        if not {"encode", "decode_step"} <= set(signatures):
            raise ValueError(f"{model_path} has signatures {sorted(signatures)}, "
                             "not encode and decode_step")
        self._encode = self.interpreter.get_signature_runner("encode")
        self._step = self.interpreter.get_signature_runner("decode_step")
        self.encode_inputs = tuple(sorted(self._encode.get_input_details()))
        if set(self.encode_inputs) != set(self.ENCODE_INPUTS):
            raise ValueError(
                f"{model_path}'s encode takes {list(self.encode_inputs)}, "
                f"not {list(self.ENCODE_INPUTS)}"
                + self._other_class_hint())
        step_inputs = self._step.get_input_details()
        self._step_dtypes = {name: detail["dtype"]
                             for name, detail in step_inputs.items()}
        self._padded_shapes = _padded_shapes(
            self._encode.get_output_details(), step_inputs)
        lengths = [shape[1] for shape in self._padded_shapes.values()]
        self.max_source_length = min(lengths) if lengths else None
        self.max_output_length = None
        self._warm_up()

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

    def _other_class_hint(self):
        if "src_lang" in self.encode_inputs:
            return (" (a task-space model: use export.tflite_translator."
                    "open_translator or TaskSpaceTFLiteTranslator)")
        return ""

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

    def translate_nbest(self, sentences, beam_size=5, length_penalty=0.6,
                        coverage_penalty=0.0, num_hypotheses=1,
                        max_length_ratio=2.0, beam_width=None):
        """Translates `sentences`, giving `num_hypotheses` `Hypothesis` each.

        Blank inputs give one empty hypothesis with score 0 and never reach
        the model.

        Raises:
          TypeError: `sentences` is a str, or an input is not a `str`.
          ValueError: an input is longer than the model's source length.
        """
        return self._translate_nbest(
            sentences, [], None,
            dict(beam_size=beam_size, length_penalty=length_penalty,
                 coverage_penalty=coverage_penalty,
                 num_hypotheses=num_hypotheses,
                 max_length_ratio=max_length_ratio, beam_width=beam_width))

    def _translate_nbest(self, sentences, prefix, task, search_args):
        """`translate_nbest` with `prefix` (ids put before each sentence's
        subwords) and `task` (see `search`)."""
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
            pairs = self.search(source_ids, task=task, **search_args)
            results.append([Hypothesis(self.sentencepiece.decode(ids), score)
                            for ids, score in pairs])
        return results

    def translate(self, sentences, beam_size=5, length_penalty=0.6,
                  coverage_penalty=0.0, max_length_ratio=2.0):
        """Translates `sentences` (list of str) to their best translations."""
        return [hyps[0].text for hyps in self.translate_nbest(
            sentences, beam_size, length_penalty, coverage_penalty, 1,
            max_length_ratio)]


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


def open_translator(model_path, vocabulary_path=None, num_threads=None):
    """A `TFLiteTranslator` for a GNMT `.tflite`, or a
    `TaskSpaceTFLiteTranslator` where a `task.json` lies next to the file.

    Args:
      model_path: str or Path. A `.tflite` file from `export_tflite`.
      vocabulary_path: str or Path or None. Default: ``spm.model`` next to
        the model.
      num_threads: int or None. Interpreter threads.
    """
    from export.task_space_tflite_translator import TASK_FILE

    model_path = pathlib.Path(model_path)
    vocabulary_path = vocabulary_path or model_path.parent / "spm.model"
    if (model_path.parent / TASK_FILE).exists():
        from export.task_space_tflite_translator import (
            TaskSpaceTFLiteTranslator)

        return TaskSpaceTFLiteTranslator(model_path, vocabulary_path,
                                         num_threads=num_threads)
    return TFLiteTranslator(model_path, vocabulary_path, num_threads)
